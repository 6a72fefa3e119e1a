//! What runs inside a step: a function, an agent (its events forwarded into the workflow's
//! stream when someone listens) or a nested workflow; each raced against the run's cancel.

use std::sync::Arc;

use agno_core::{RunInput, RunOutput, RunRequirement, RunStatus, StepOutput};
use futures::StreamExt;
use serde_json::{Map, Value, json};

use super::WorkflowRunRequest;
use super::engine::{Ctx, Pos, Start, execute};
use super::primitives::{Executor, Step};
use crate::request::RunRequest;

/// An agent step's message with the reviewer's notes, as Agno words them: the input values as
/// "User preferences", a rejected output and its feedback for a retry.
fn with_review_notes(message: String, extra: &Map<String, Value>) -> String {
    let mut out = message;
    if let Some(Value::Object(input)) = extra.get("user_input") {
        let lines: Vec<String> = input
            .iter()
            .map(|(k, v)| format!("- {k}: {}", v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
            .collect();
        out = format!("{out}\n\nUser preferences:\n{}", lines.join("\n"));
    }
    if let Some(previous) = extra.get("previous_output").and_then(Value::as_str) {
        out = format!("{out}\n\nYour previous output was rejected:\n{previous}");
    }
    if let Some(feedback) = extra.get("rejection_feedback").and_then(Value::as_str) {
        out = format!("{out}\n\nReviewer feedback: {feedback}");
    }
    out
}

/// Why one attempt of a step produced no output.
pub(super) enum StepFailure {
    /// The executor failed; the text says why.
    Error(String),
    /// The run was cancelled.
    Cancelled,
    /// The step's agent paused for a person (a tool needing confirmation, input or an external
    /// result): its paused run.
    Paused(Box<RunOutput>),
}

/// How an agent step's run starts: new on the step's input, or a paused one continued with the
/// reviewer's answers to its requirements.
pub(super) enum AgentStart {
    New,
    Continue(Box<RunOutput>, Vec<RunRequirement>),
}

/// One attempt of a step's executor, raced against the run's cancellation. `extra` is added to
/// the step's `additional_data` (a reviewer's input, a rejection's feedback).
pub(super) async fn execute_step(
    ctx: &Ctx,
    step: &Step,
    previous: Option<&Value>,
    pos: &Pos,
    extra: &Map<String, Value>,
) -> Result<StepOutput, StepFailure> {
    match &step.executor {
        Executor::Unset => Err(StepFailure::Error("the step has no executor".to_owned())),
        Executor::Function(f) => {
            let mut input = ctx.step_input(previous);
            if !extra.is_empty() {
                input.additional_data.get_or_insert_with(Map::new).extend(extra.clone());
            }
            tokio::select! {
                // The function first: one that finishes at once never waits on the token.
                biased;
                result = f(input) => result.map_err(|e| StepFailure::Error(e.0)),
                () = ctx.token.cancelled() => Err(StepFailure::Cancelled),
            }
        }
        Executor::Agent(agent) => run_agent(ctx, step, agent, previous, pos, extra, AgentStart::New).await,
        Executor::Team(team) => run_team(ctx, step, team, previous, pos, extra, AgentStart::New).await,
        Executor::Workflow(nested) => run_nested(ctx, step, nested, previous, None).await,
    }
}

/// A nested workflow step: a new run of the nested workflow, or the continuation of its paused
/// run (`answered`: the reviewer's answers applied). Kept inside the outer run; its pause pauses
/// the step.
pub(super) async fn run_nested(
    ctx: &Ctx,
    step: &Step,
    nested: &super::Workflow,
    previous: Option<&Value>,
    answered: Option<RunOutput>,
) -> Result<StepOutput, StepFailure> {
    let (nested_run_id, start) = match answered {
        Some(run) => (run.id().to_owned(), Start::Continue(Box::new(run))),
        None => {
            let nested_run_id = agno_core::new_id();
            let request = WorkflowRunRequest {
                input: previous.cloned().unwrap_or_else(|| ctx.input.clone()),
                run_id: Some(nested_run_id.clone()),
                session_id: Some(ctx.session_id.clone()),
                user_id: ctx.user_id.clone(),
                session_state: Some(ctx.state.snapshot()),
                additional_data: ctx.additional_data.clone(),
                store_events: (!ctx.keep_events).then_some(false),
                ..WorkflowRunRequest::default()
            };
            (nested_run_id, Start::New(Box::new(request)))
        }
    };
    let run = {
        let fut = execute(Arc::clone(&nested.inner), start, None, ctx.depth + 1, crate::Durable::default());
        tokio::pin!(fut);
        tokio::select! {
            result = &mut fut => result,
            () = ctx.token.cancelled() => {
                crate::cancel::cancel_run(&nested_run_id);
                fut.await
            }
        }
    };
    let mut run = match run {
        Ok(run) => run,
        Err(e) => return Err(StepFailure::Error(e.to_string())),
    };
    run.parent_run_id = Some(ctx.run_id.clone());
    run.extra.insert("workflow_step_id".to_owned(), json!(step.step_id));
    match run.status {
        RunStatus::Cancelled => return Err(StepFailure::Cancelled),
        // Kept by the pause (and continued later), not yet a run of the outer workflow.
        RunStatus::Paused => return Err(StepFailure::Paused(Box::new(run))),
        _ => {}
    }
    if let Some(state) = run.session_state.take() {
        ctx.state.update(|s| s.extend(state));
    }
    let output =
        StepOutput { content: run.content.clone(), step_run_id: Some(run.id().to_owned()), ..StepOutput::default() };
    if let Ok(mut runs) = ctx.executor_runs.lock() {
        runs.push(run);
    }
    Ok(output)
}

/// Passes a team step's event on through the workflow's stream.
fn forward_team(ctx: &Ctx, event: agno_core::TeamStreamEvent, step: &Step, pos: &Pos) {
    match event {
        agno_core::TeamStreamEvent::Team(e) => ctx.forward_team(*e, step, pos),
        agno_core::TeamStreamEvent::Member(e) => ctx.forward(*e, step, pos),
    }
}

/// A team step: a new team run, or the continuation of the paused one (`start`). The team run
/// is kept inside the workflow run (nothing of its own stored); a member's pause pauses the step.
pub(super) async fn run_team(
    ctx: &Ctx,
    step: &Step,
    team: &crate::team::Team,
    previous: Option<&Value>,
    pos: &Pos,
    extra: &Map<String, Value>,
    start: AgentStart,
) -> Result<StepOutput, StepFailure> {
    let (team_run_id, start) = match start {
        AgentStart::New => {
            let message = previous.cloned().unwrap_or_else(|| ctx.input.clone());
            let text = match message {
                Value::String(text) => text,
                other => other.to_string(),
            };
            let team_run_id = agno_core::new_id();
            let request = RunRequest {
                input: RunInput::text(with_review_notes(text, extra)),
                run_id: Some(team_run_id.clone()),
                session_id: Some(ctx.session_id.clone()),
                user_id: ctx.user_id.clone(),
                session_state: Some(ctx.state.snapshot()),
                parent_run_id: Some(ctx.run_id.clone()),
                store_events: (!ctx.keep_events).then_some(false),
                ..RunRequest::default()
            };
            (team_run_id, Ok(request))
        }
        AgentStart::Continue(run, answers) => {
            let id = run.id().to_owned();
            let mut request = crate::request::ContinueRequest::output(*run, answers).store(false);
            request.user_id.clone_from(&ctx.user_id);
            (id, Err(request))
        }
    };
    // As an agent step's: the team's events go through the workflow's stream when someone reads it.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<agno_core::TeamStreamEvent>();
    let tx = ctx.streaming().then_some(tx);
    let fut = team.run_embedded(start, tx);
    tokio::pin!(fut);
    let mut cancel_sent = false;
    let run = loop {
        tokio::select! {
            result = &mut fut => {
                // The run is over: pass on what it sent last.
                while let Ok(event) = rx.try_recv() {
                    forward_team(ctx, event, step, pos);
                }
                break result;
            }
            Some(event) = rx.recv() => forward_team(ctx, event, step, pos),
            () = ctx.token.cancelled(), if !cancel_sent => {
                cancel_sent = true;
                crate::cancel::cancel_run(&team_run_id);
            }
        }
    };
    let mut run = match run {
        Ok(run) => run,
        Err(e) => return Err(StepFailure::Error(e.to_string())),
    };
    run.parent_run_id = Some(ctx.run_id.clone());
    run.extra.insert("workflow_step_id".to_owned(), json!(step.step_id));
    settle(ctx, run, team_run_id)
}

/// An agent step: a new run, or the continuation of the paused one (`start`).
pub(super) async fn run_agent(
    ctx: &Ctx,
    step: &Step,
    agent: &crate::Agent,
    previous: Option<&Value>,
    pos: &Pos,
    extra: &Map<String, Value>,
    start: AgentStart,
) -> Result<StepOutput, StepFailure> {
    let (agent_run_id, continued) = match start {
        AgentStart::New => (agno_core::new_id(), None),
        AgentStart::Continue(run, answers) => {
            let id = run.id().to_owned();
            (id, Some(agno_runtime_continue(*run, answers)))
        }
    };
    let request = || {
        let message = previous.cloned().unwrap_or_else(|| ctx.input.clone());
        let input = match message {
            Value::String(text) => RunInput::text(with_review_notes(text, extra)),
            other => RunInput { input_content: Some(other), ..RunInput::default() },
        };
        RunRequest {
            input,
            run_id: Some(agent_run_id.clone()),
            session_id: Some(ctx.session_id.clone()),
            user_id: ctx.user_id.clone(),
            session_state: Some(ctx.state.snapshot()),
            parent_run_id: Some(ctx.run_id.clone()),
            metadata: Some(Map::new()),
            store: Some(false),
            store_events: (!ctx.keep_events).then_some(false),
            ..RunRequest::default()
        }
    };
    let streamed = ctx.streaming();
    let result = if streamed {
        // As Agno (`stream_executor_events`): the agent's own events go through the workflow's
        // stream.
        let mut stream = match continued {
            Some(cont) => agent.continue_run_stream(cont),
            None => agent.run_stream(request()),
        };
        let mut cancel_sent = false;
        loop {
            tokio::select! {
                event = stream.next() => match event {
                    Some(event) => ctx.forward(event, step, pos),
                    None => break,
                },
                () = ctx.token.cancelled(), if !cancel_sent => {
                    cancel_sent = true;
                    crate::cancel::cancel_run(&agent_run_id);
                }
            }
        }
        stream.output().await
    } else {
        // Inline (not on a task of its own): the step waits for it anyway, also after a cancel.
        let handle = match continued {
            Some(cont) => futures::future::Either::Left(agent.acontinue_run(cont)),
            None => futures::future::Either::Right(agent.arun(request())),
        };
        tokio::pin!(handle);
        tokio::select! {
            result = &mut handle => result,
            () = ctx.token.cancelled() => {
                // Stop the agent where it is (model or tool call) and keep what it stored.
                crate::cancel::cancel_run(&agent_run_id);
                handle.await
            }
        }
    };
    let mut run = match result {
        Ok(run) => run,
        Err(e) => return Err(StepFailure::Error(e.to_string())),
    };
    run.extra.insert("workflow_step_id".to_owned(), json!(step.step_id));
    if run.metadata.is_none() {
        run.metadata = Some(Map::new());
    }
    // As Agno keeps a streamed step's agent run: its events name the step, `tools` only when
    // some ran.
    if streamed {
        if run.tools.as_ref().is_some_and(Vec::is_empty) {
            run.tools = None;
        }
        for event in run.events.get_or_insert_with(Vec::new) {
            ctx.stamp(event, step, pos);
        }
    }
    settle(ctx, run, agent_run_id)
}

/// What an executor's ended run gives its step: the run's session state merged into the
/// workflow's; then the run kept by a pause (continued later, not yet a run of the workflow), or
/// recorded among the step's executor runs with its content as the step's output.
fn settle(ctx: &Ctx, run: RunOutput, run_id: String) -> Result<StepOutput, StepFailure> {
    if let Some(state) = run.session_state.clone() {
        ctx.state.update(|s| s.extend(state));
    }
    let status = run.status;
    if status == RunStatus::Paused {
        return Err(StepFailure::Paused(Box::new(run)));
    }
    let output = StepOutput {
        content: run.content.clone(),
        step_run_id: Some(run_id),
        metrics: run.metrics.clone(),
        ..StepOutput::default()
    };
    if let Ok(mut runs) = ctx.executor_runs.lock() {
        runs.push(run);
    }
    match status {
        RunStatus::Cancelled => Err(StepFailure::Cancelled),
        _ => Ok(output),
    }
}

/// The continuation of a step's paused agent run: not stored on its own, as the run it continues.
fn agno_runtime_continue(run: RunOutput, answers: Vec<RunRequirement>) -> crate::request::ContinueRequest {
    crate::request::ContinueRequest::output(run, answers).store(false)
}
