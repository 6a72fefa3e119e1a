//! Executes a workflow run: walks the primitives, chains each step's content into the next,
//! emits Agno's workflow events, stores progress after each top-level step, and stops at a
//! cancel (also inside a step function or an agent's model or tool call).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use agno_core::{
    RunEvent, RunInput, RunOutput, RunStatus, StepOutput, StepType, WorkflowEvent, WorkflowEventData,
    WorkflowStreamEvent, now_epoch_secs,
};
use futures::StreamExt;
use futures::future::{BoxFuture, join_all};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::input::{SessionState, StepInput};
use super::primitives::{Condition, Evaluator, Executor, Loop, Parallel, Router, Step, StepNode, Steps};
use super::store;
use super::{WorkflowInner, WorkflowRunRequest};
use crate::cancel::Registration;
use crate::error::RunError;
use crate::request::RunRequest;

/// Why a walk stopped early.
#[derive(Debug)]
enum Halt {
    /// A step failed after its retries (without `skip_on_failure`).
    Failed { step: String, message: String },
    /// The run was cancelled.
    Cancelled,
}

/// Where a node sits: its `step_index` (a number at top level, a path inside containers) and
/// the id of the container it is in.
#[derive(Debug, Clone)]
struct Pos {
    index: Value,
    parent_step_id: Option<String>,
}

impl Pos {
    fn top(i: usize) -> Self {
        Self { index: Value::from(i), parent_step_id: None }
    }

    fn child(&self, i: usize, parent_id: Option<&str>) -> Self {
        let mut path = match &self.index {
            Value::Array(items) => items.clone(),
            other => vec![other.clone()],
        };
        path.push(Value::from(i));
        Self { index: Value::Array(path), parent_step_id: parent_id.map(str::to_owned) }
    }

    fn is_top(&self) -> bool {
        self.parent_step_id.is_none()
    }
}

/// Numbers, stamps, streams and (with `store_events`) keeps the run's events.
struct Events {
    tx: Option<mpsc::UnboundedSender<WorkflowStreamEvent>>,
    next_index: u64,
    stored: Option<Vec<WorkflowStreamEvent>>,
    template: WorkflowEvent,
}

impl Events {
    fn listening(&self) -> bool {
        self.tx.as_ref().is_some_and(|tx| !tx.is_closed())
    }

    /// Passes on an agent step's event, numbered in the workflow's sequence.
    fn forward(&mut self, mut event: RunEvent) {
        event.event_index = Some(self.next_index);
        self.next_index += 1;
        // Content deltas are not kept, as for an agent's own stored events.
        let is_delta = matches!(event.data, agno_core::EventData::RunContent { .. });
        let event = WorkflowStreamEvent::Agent(Box::new(event));
        if let Some(stored) = self.stored.as_mut()
            && !is_delta
        {
            stored.push(event.clone());
        }
        if let Some(tx) = &self.tx {
            let _ = tx.send(event);
        }
    }

    fn emit(&mut self, data: WorkflowEventData, node: Option<(&str, Option<&str>, &Pos)>) {
        if !self.listening() && self.stored.is_none() {
            return;
        }
        let mut event = self.template.clone();
        event.created_at = now_epoch_secs();
        event.data = data;
        if let Some((name, id, pos)) = node {
            event.step_name = Some(name.to_owned());
            event.step_id = id.map(str::to_owned);
            event.step_index = Some(pos.index.clone());
            event.parent_step_id.clone_from(&pos.parent_step_id);
        }
        event.event_index = Some(self.next_index);
        self.next_index += 1;
        let event = WorkflowStreamEvent::Workflow(Box::new(event));
        if let Some(stored) = self.stored.as_mut() {
            // As Agno: the streamed-only `StepOutput` event is not kept on the run.
            if !matches!(event.as_workflow().map(|e| &e.data), Some(WorkflowEventData::StepOutput { .. })) {
                stored.push(event.clone());
            }
        }
        if let Some(tx) = &self.tx {
            let _ = tx.send(event);
        }
    }
}

/// One run in progress.
struct Ctx {
    workflow_id: String,
    events: Mutex<Events>,
    state: SessionState,
    token: CancellationToken,
    run_id: String,
    session_id: String,
    user_id: Option<String>,
    input: Value,
    additional_data: Option<Map<String, Value>>,
    /// Outputs completed so far (`previous_step_outputs`), in completion order.
    completed: Mutex<Vec<(String, StepOutput)>>,
    /// Agent and nested-workflow runs of the steps (`step_executor_runs`).
    executor_runs: Mutex<Vec<RunOutput>>,
    depth: u32,
}

impl Ctx {
    fn emit(&self, data: WorkflowEventData, node: Option<(&str, Option<&str>, &Pos)>) {
        if let Ok(mut events) = self.events.lock() {
            events.emit(data, node);
        }
    }

    /// Passes on an event of the agent running `step`, stamped with the step as Agno stamps it.
    fn forward(&self, mut event: RunEvent, step: &Step, pos: &Pos) {
        if let Ok(mut events) = self.events.lock() {
            event.workflow_id.clone_from(&events.template.workflow_id);
            event.workflow_run_id = Some(self.run_id.clone());
            event.step_id.clone_from(&step.step_id);
            event.step_name = Some(step.name.clone());
            event.step_index = Some(pos.index.clone());
            events.forward(event);
        }
    }

    /// True when someone reads the stream (agent steps then stream their events through it).
    fn streaming(&self) -> bool {
        self.events.lock().is_ok_and(|e| e.listening())
    }

    fn step_input(&self, previous: Option<&Value>) -> StepInput {
        StepInput {
            input: Some(self.input.clone()),
            previous_step_content: previous.cloned(),
            previous_step_outputs: self.completed.lock().map(|c| c.clone()).unwrap_or_default(),
            additional_data: self.additional_data.clone(),
            session_state: self.state.clone(),
            run_id: self.run_id.clone(),
            session_id: self.session_id.clone(),
            user_id: self.user_id.clone(),
            cancel: self.token.clone(),
        }
    }

    fn record(&self, name: &str, output: &StepOutput) {
        if let Ok(mut completed) = self.completed.lock() {
            completed.push((name.to_owned(), output.clone()));
        }
    }

    fn check(&self) -> Result<(), Halt> {
        if self.token.is_cancelled() { Err(Halt::Cancelled) } else { Ok(()) }
    }
}

/// Runs one workflow run from start to end: loads the session, stores the run as `RUNNING`,
/// walks the steps (storing progress after each top-level one), then stores the end state.
pub(super) async fn execute(
    wf: Arc<WorkflowInner>,
    request: WorkflowRunRequest,
    tx: Option<mpsc::UnboundedSender<WorkflowStreamEvent>>,
    depth: u32,
) -> Result<RunOutput, RunError> {
    let started = Instant::now();
    let run_id = request.run_id.clone().unwrap_or_else(agno_core::new_id);
    let registration = Registration::new(&run_id);
    let session_id = request.session_id.clone().unwrap_or_else(agno_core::new_id);
    let user_id = request.user_id.clone();
    // Nested workflows run inside their parent's run: nothing of their own is stored.
    let db = if depth == 0 { wf.db.clone() } else { None };

    let mut session = match &db {
        Some(_) => store::load_session(&wf, &session_id, user_id.as_deref()).await?,
        None => agno_core::AgentSession::new(&session_id),
    };
    let mut initial = session.session_state().cloned().unwrap_or_default();
    for (k, v) in &wf.session_state {
        initial.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let mut state = initial.clone();
    if let Some(overrides) = request.session_state.clone() {
        state.extend(overrides);
    }
    let mut record =
        store::new_record(&wf, &run_id, &session_id, user_id.as_deref(), &request.input, request.metadata.clone());
    if let Some(db) = &db {
        store::save(db, &wf, &mut session, &initial, state.clone(), &record).await?;
    }

    let template = WorkflowEvent {
        created_at: 0,
        data: WorkflowEventData::WorkflowStarted {},
        workflow_id: Some(wf.id.clone()),
        workflow_name: wf.name.clone(),
        session_id: Some(session_id.clone()),
        run_id: Some(run_id.clone()),
        step_id: None,
        parent_step_id: None,
        nested_depth: depth,
        step_name: None,
        step_index: None,
        event_index: None,
    };
    let ctx = Ctx {
        workflow_id: wf.id.clone(),
        events: Mutex::new(Events { tx, next_index: 0, stored: wf.store_events.then(Vec::new), template }),
        state: SessionState::new(state),
        token: registration.token().clone(),
        run_id: run_id.clone(),
        session_id: session_id.clone(),
        user_id: user_id.clone(),
        input: request.input.clone(),
        additional_data: request.additional_data.clone(),
        completed: Mutex::new(Vec::new()),
        executor_runs: Mutex::new(Vec::new()),
        depth,
    };
    ctx.emit(WorkflowEventData::WorkflowStarted {}, None);

    // The top-level walk, storing progress after each step.
    let mut results: Vec<StepOutput> = Vec::new();
    let mut previous: Option<Value> = None;
    let mut halt = None;
    for (i, node) in wf.steps.iter().enumerate() {
        match run_node(&ctx, node, previous.clone(), Pos::top(i)).await {
            // A condition that is not met and has no else branch leaves no result, as in Agno.
            Ok(None) => {}
            Ok(Some(output)) => {
                if let Some(content) = output.deepest_content() {
                    previous = Some(content.clone());
                }
                let stop = output.stop;
                results.push(output);
                if let Some(db) = &db {
                    store::set_progress(&mut record, &results, &executor_runs(&ctx));
                    let stored = store::save(db, &wf, &mut session, &initial, ctx.state.snapshot(), &record).await;
                    if let Err(e) = stored {
                        tracing::warn!(run_id, error = %e, "cannot store the workflow run's progress");
                    }
                }
                if stop {
                    break;
                }
            }
            Err(h) => {
                halt = Some(h);
                break;
            }
        }
    }

    let duration = started.elapsed().as_secs_f64();
    store::set_progress(&mut record, &results, &executor_runs(&ctx));
    store::set_metrics(&mut record, &results, duration);
    let metrics_value = record.metrics.as_ref().and_then(|m| serde_json::to_value(m).ok());
    let failure = match halt {
        None => {
            record.status = RunStatus::Completed;
            record.content = results.last().and_then(StepOutput::deepest_content).cloned();
            ctx.emit(
                WorkflowEventData::WorkflowCompleted {
                    content: record.content.clone(),
                    content_type: record.content_type.clone(),
                    metadata: record.metadata.clone(),
                    metrics: metrics_value,
                    step_results: results.clone(),
                    step_executor_runs: Some(executor_runs(&ctx)).filter(|r| !r.is_empty()),
                },
                None,
            );
            None
        }
        Some(Halt::Cancelled) => {
            record.status = RunStatus::Cancelled;
            record.content = Some(Value::String(format!("Run {run_id} was cancelled")));
            ctx.emit(WorkflowEventData::WorkflowCancelled { reason: Some("cancelled".to_owned()) }, None);
            None
        }
        Some(Halt::Failed { step, message }) => {
            record.status = RunStatus::Error;
            record.content = Some(Value::String(message.clone()));
            ctx.emit(
                WorkflowEventData::WorkflowError {
                    error: Some(message.clone()),
                    error_type: Some("StepFailed".to_owned()),
                },
                None,
            );
            Some((step, message))
        }
    };
    if let Some(stored) = ctx.events.lock().ok().and_then(|mut e| e.stored.take()) {
        record.extra.insert("events".to_owned(), serde_json::to_value(stored).unwrap_or_default());
    }
    record.events = None;
    if let Some(db) = &db {
        store::save(db, &wf, &mut session, &initial, ctx.state.snapshot(), &record).await?;
    }
    if depth > 0 {
        // A nested workflow hands its state back to the step that ran it.
        record.session_state = Some(ctx.state.snapshot());
    }
    drop(registration);
    match failure {
        None => Ok(record),
        Some((step, message)) => Err(RunError::StepFailed { step, message, run: Box::new(record) }),
    }
}

fn executor_runs(ctx: &Ctx) -> Vec<RunOutput> {
    ctx.executor_runs.lock().map(|r| r.clone()).unwrap_or_default()
}

/// Runs `nodes` one after the other, each on the content the previous one produced.
fn run_sequence<'a>(
    ctx: &'a Ctx,
    nodes: &'a [StepNode],
    previous: Option<Value>,
    index_of: impl Fn(usize) -> Pos + Send + 'a,
) -> BoxFuture<'a, Result<Vec<StepOutput>, Halt>> {
    Box::pin(async move {
        let mut previous = previous;
        let mut outputs = Vec::with_capacity(nodes.len());
        for (i, node) in nodes.iter().enumerate() {
            let Some(output) = run_node(ctx, node, previous.clone(), index_of(i)).await? else {
                continue;
            };
            if let Some(content) = output.deepest_content() {
                previous = Some(content.clone());
            }
            let stop = output.stop;
            outputs.push(output);
            if stop {
                break;
            }
        }
        Ok(outputs)
    })
}

fn run_node<'a>(
    ctx: &'a Ctx,
    node: &'a StepNode,
    previous: Option<Value>,
    pos: Pos,
) -> BoxFuture<'a, Result<Option<StepOutput>, Halt>> {
    Box::pin(async move {
        ctx.check()?;
        let output = match node {
            StepNode::Step(step) => run_step(ctx, step, previous, &pos).await?,
            StepNode::Steps(group) => run_steps(ctx, group, previous, &pos).await?,
            StepNode::Loop(lp) => run_loop(ctx, lp, previous, &pos).await?,
            StepNode::Condition(cond) => match run_condition(ctx, cond, previous, &pos).await? {
                Some(output) => output,
                None => return Ok(None),
            },
            StepNode::Router(router) => run_router(ctx, router, previous, &pos).await?,
            StepNode::Parallel(par) => run_parallel(ctx, par, previous, &pos).await?,
        };
        if !matches!(node, StepNode::Step(_)) {
            ctx.record(node.name(), &output);
        }
        Ok(Some(output))
    })
}

/// The output of a container: its summary text, and its inner outputs in `steps`.
fn container_output(
    node_name: &str,
    id: Option<&str>,
    kind: StepType,
    content: String,
    steps: Vec<StepOutput>,
) -> StepOutput {
    let success = steps.iter().all(|s| s.success);
    StepOutput {
        content: Some(Value::String(content)),
        step_name: Some(node_name.to_owned()),
        step_id: id.map(str::to_owned),
        step_type: Some(kind),
        success,
        steps: Some(steps),
        ..StepOutput::default()
    }
}

async fn run_step(ctx: &Ctx, step: &Step, previous: Option<Value>, pos: &Pos) -> Result<StepOutput, Halt> {
    let node = Some((step.name.as_str(), step.step_id.as_deref(), pos));
    ctx.emit(WorkflowEventData::StepStarted {}, node);
    let mut last_error = String::new();
    let mut produced = None;
    for _attempt in 0..=step.max_retries {
        ctx.check()?;
        match execute_step(ctx, step, previous.as_ref(), pos).await {
            Ok(output) => {
                produced = Some(output);
                break;
            }
            Err(StepFailure::Cancelled) => return Err(Halt::Cancelled),
            Err(StepFailure::Error(message)) => {
                tracing::debug!(step = step.name, error = message, "workflow step attempt failed");
                last_error = message;
            }
        }
    }
    let mut output = match produced {
        Some(output) => output,
        None if step.skip_on_failure => StepOutput {
            content: Some(Value::String(format!("Step {} failed but skipped: {last_error}", step.name))),
            success: false,
            error: Some(last_error),
            ..StepOutput::default()
        },
        None => {
            ctx.emit(WorkflowEventData::StepError { error: Some(last_error.clone()) }, node);
            return Err(Halt::Failed {
                step: step.name.clone(),
                message: format!("step {:?} failed: {last_error}", step.name),
            });
        }
    };
    output.step_name = Some(step.name.clone());
    output.step_id.clone_from(&step.step_id);
    output.step_type = Some(StepType::Step);
    output.executor_type = Some(step.executor.kind().to_owned());
    if output.executor_name.is_none() {
        output.executor_name = Some(match &step.executor {
            Executor::Agent(agent) => agent.name().unwrap_or(agent.id()).to_owned(),
            Executor::Workflow(wf) => wf.name().unwrap_or(wf.id()).to_owned(),
            _ => step.name.clone(),
        });
    }
    ctx.record(&step.name, &output);
    if pos.is_top() && matches!(step.executor, Executor::Function(_)) {
        ctx.emit(WorkflowEventData::StepOutput { step_output: output.clone() }, Some((step.name.as_str(), None, pos)));
    }
    ctx.emit(
        WorkflowEventData::StepCompleted {
            content: output.content.clone(),
            content_type: "str".to_owned(),
            step_response: output.clone(),
        },
        node,
    );
    Ok(output)
}

enum StepFailure {
    Error(String),
    Cancelled,
}

/// One attempt of a step's executor, raced against the run's cancellation.
async fn execute_step(ctx: &Ctx, step: &Step, previous: Option<&Value>, pos: &Pos) -> Result<StepOutput, StepFailure> {
    match &step.executor {
        Executor::Unset => Err(StepFailure::Error("the step has no executor".to_owned())),
        Executor::Function(f) => {
            let input = ctx.step_input(previous);
            tokio::select! {
                biased;
                () = ctx.token.cancelled() => Err(StepFailure::Cancelled),
                result = f(input) => result.map_err(|e| StepFailure::Error(e.0)),
            }
        }
        Executor::Agent(agent) => run_agent(ctx, step, agent, previous, pos).await,
        Executor::Workflow(nested) => {
            let request = WorkflowRunRequest {
                input: previous.cloned().unwrap_or_else(|| ctx.input.clone()),
                session_id: Some(ctx.session_id.clone()),
                user_id: ctx.user_id.clone(),
                session_state: Some(ctx.state.snapshot()),
                additional_data: ctx.additional_data.clone(),
                ..WorkflowRunRequest::default()
            };
            let nested_run_id = agno_core::new_id();
            let run = {
                let fut = execute(
                    Arc::clone(&nested.inner),
                    WorkflowRunRequest { run_id: Some(nested_run_id.clone()), ..request },
                    None,
                    ctx.depth + 1,
                );
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
            if run.status == RunStatus::Cancelled {
                return Err(StepFailure::Cancelled);
            }
            if let Some(state) = run.session_state.take() {
                ctx.state.update(|s| s.extend(state));
            }
            run.parent_run_id = Some(ctx.run_id.clone());
            run.extra.insert("workflow_step_id".to_owned(), json!(step.step_id));
            let output = StepOutput {
                content: run.content.clone(),
                step_run_id: Some(run.id().to_owned()),
                ..StepOutput::default()
            };
            if let Ok(mut runs) = ctx.executor_runs.lock() {
                runs.push(run);
            }
            Ok(output)
        }
    }
}

async fn run_agent(
    ctx: &Ctx,
    step: &Step,
    agent: &crate::Agent,
    previous: Option<&Value>,
    pos: &Pos,
) -> Result<StepOutput, StepFailure> {
    let message = previous.cloned().unwrap_or_else(|| ctx.input.clone());
    let input = match message {
        Value::String(text) => RunInput::text(text),
        other => RunInput { input_content: Some(other), ..RunInput::default() },
    };
    let agent_run_id = agno_core::new_id();
    let request = RunRequest {
        input,
        run_id: Some(agent_run_id.clone()),
        session_id: Some(ctx.session_id.clone()),
        user_id: ctx.user_id.clone(),
        session_state: Some(ctx.state.snapshot()),
        parent_run_id: Some(ctx.run_id.clone()),
        metadata: Some(Map::new()),
        store: Some(false),
        ..RunRequest::default()
    };
    let streamed = ctx.streaming();
    let result = if streamed {
        // As Agno (`stream_executor_events`): the agent's own events go through the workflow's
        // stream.
        let mut stream = agent.run_stream(request);
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
        let handle = agent.spawn_run(request);
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
            event.workflow_id = Some(ctx.workflow_id.clone());
            event.workflow_run_id = Some(ctx.run_id.clone());
            event.step_id.clone_from(&step.step_id);
            event.step_name = Some(step.name.clone());
            event.step_index = Some(pos.index.clone());
        }
    }
    let status = run.status;
    if let Some(state) = run.session_state.clone() {
        ctx.state.update(|s| s.extend(state));
    }
    let output = StepOutput {
        content: run.content.clone(),
        step_run_id: Some(agent_run_id),
        metrics: run.metrics.clone(),
        ..StepOutput::default()
    };
    if let Ok(mut runs) = ctx.executor_runs.lock() {
        runs.push(run);
    }
    match status {
        RunStatus::Cancelled => Err(StepFailure::Cancelled),
        RunStatus::Paused => Err(StepFailure::Error(format!(
            "agent {:?} paused for human input; continuing a workflow from an agent's pause is not supported yet",
            agent.id()
        ))),
        _ => Ok(output),
    }
}

async fn run_steps(ctx: &Ctx, group: &Steps, previous: Option<Value>, pos: &Pos) -> Result<StepOutput, Halt> {
    let id = group.step_id.as_deref();
    let node = Some((group.name.as_str(), id, pos));
    ctx.emit(WorkflowEventData::StepsExecutionStarted { steps_count: group.steps.len() }, node);
    let outputs = run_sequence(ctx, &group.steps, previous, |i| pos.child(i, id)).await?;
    ctx.emit(
        WorkflowEventData::StepsExecutionCompleted {
            steps_count: group.steps.len(),
            executed_steps: outputs.len(),
            step_results: outputs.clone(),
        },
        node,
    );
    let content = format!("Steps {} completed with {} results", group.name, outputs.len());
    Ok(container_output(&group.name, id, StepType::Steps, content, outputs))
}

async fn run_loop(ctx: &Ctx, lp: &Loop, previous: Option<Value>, pos: &Pos) -> Result<StepOutput, Halt> {
    let id = lp.step_id.as_deref();
    let node = Some((lp.name.as_str(), id, pos));
    ctx.emit(WorkflowEventData::LoopExecutionStarted { max_iterations: lp.max_iterations }, node);
    let mut all: Vec<Vec<StepOutput>> = Vec::new();
    let mut iteration_input = previous;
    for iteration in 1..=lp.max_iterations {
        ctx.check()?;
        ctx.emit(WorkflowEventData::LoopIterationStarted { iteration, max_iterations: lp.max_iterations }, node);
        let outputs = run_sequence(ctx, &lp.steps, iteration_input.clone(), |i| pos.child(i, id)).await?;
        let ended = lp.end_condition.as_ref().is_some_and(|c| c.ends(&outputs));
        ctx.emit(
            WorkflowEventData::LoopIterationCompleted {
                iteration,
                max_iterations: lp.max_iterations,
                should_continue: !ended,
                iteration_results: outputs.clone(),
            },
            node,
        );
        if lp.forward_iteration_output
            && let Some(last) = outputs.last().and_then(StepOutput::deepest_content)
        {
            iteration_input = Some(last.clone());
        }
        let stop = outputs.iter().any(|o| o.stop);
        all.push(outputs);
        if ended || stop {
            break;
        }
    }
    let total_iterations = u32::try_from(all.len()).unwrap_or(u32::MAX);
    ctx.emit(
        WorkflowEventData::LoopExecutionCompleted {
            total_iterations,
            max_iterations: lp.max_iterations,
            all_results: all.clone(),
        },
        node,
    );
    let flat: Vec<StepOutput> = all.into_iter().flatten().collect();
    let content = format!("Loop {} completed {total_iterations} iterations with {} total steps", lp.name, flat.len());
    Ok(container_output(&lp.name, id, StepType::Loop, content, flat))
}

async fn run_condition(
    ctx: &Ctx,
    cond: &Condition,
    previous: Option<Value>,
    pos: &Pos,
) -> Result<Option<StepOutput>, Halt> {
    let id = cond.step_id.as_deref();
    let node = Some((cond.name.as_str(), id, pos));
    let input = ctx.step_input(previous.as_ref());
    let result = match &cond.evaluator {
        Evaluator::Bool(b) => *b,
        Evaluator::Function(f) => f(&input),
        Evaluator::Expression(e) => e.is_true(&super::expr::step_context(&input)),
    };
    ctx.emit(WorkflowEventData::ConditionExecutionStarted { condition_result: result }, node);
    let (branch, steps) = if result {
        (Some("if"), cond.steps.as_slice())
    } else if !cond.else_steps.is_empty() {
        (Some("else"), cond.else_steps.as_slice())
    } else {
        (None, &[][..])
    };
    let outputs = run_sequence(ctx, steps, previous, |i| pos.child(i, id)).await?;
    ctx.emit(
        WorkflowEventData::ConditionExecutionCompleted {
            condition_result: result,
            executed_steps: outputs.len(),
            branch: branch.map(str::to_owned),
            step_results: outputs.clone(),
        },
        node,
    );
    let Some(branch) = branch else { return Ok(None) };
    let content = format!("Condition {} completed with {} results ({branch} branch)", cond.name, outputs.len());
    Ok(Some(container_output(&cond.name, id, StepType::Condition, content, outputs)))
}

async fn run_router(ctx: &Ctx, router: &Router, previous: Option<Value>, pos: &Pos) -> Result<StepOutput, Halt> {
    let id = router.step_id.as_deref();
    let node = Some((router.name.as_str(), id, pos));
    let names: Vec<&str> = router.choices.iter().map(StepNode::name).collect();
    let selected = router.selector.select(&ctx.step_input(previous.as_ref()), &names);
    let mut chosen = Vec::with_capacity(selected.len());
    for name in &selected {
        match router.choices.iter().find(|c| c.name() == name) {
            Some(choice) => chosen.push(choice.clone()),
            None => {
                let message = format!(
                    "router {:?} selected {name:?}, which is not one of its choices ({})",
                    router.name,
                    names.join(", ")
                );
                ctx.emit(WorkflowEventData::StepError { error: Some(message.clone()) }, node);
                return Err(Halt::Failed { step: router.name.clone(), message });
            }
        }
    }
    ctx.emit(WorkflowEventData::RouterExecutionStarted { selected_steps: selected.clone() }, node);
    // As Agno: the chosen steps carry the router's own index.
    let child_pos = Pos { index: pos.index.clone(), parent_step_id: id.map(str::to_owned) };
    let outputs = run_sequence(ctx, &chosen, previous, |_| child_pos.clone()).await?;
    ctx.emit(
        WorkflowEventData::RouterExecutionCompleted {
            selected_steps: selected,
            executed_steps: outputs.len(),
            step_results: outputs.clone(),
        },
        node,
    );
    let content = format!("Router {} completed with {} results", router.name, outputs.len());
    Ok(container_output(&router.name, id, StepType::Router, content, outputs))
}

async fn run_parallel(ctx: &Ctx, par: &Parallel, previous: Option<Value>, pos: &Pos) -> Result<StepOutput, Halt> {
    let id = par.step_id.as_deref();
    let node = Some((par.name.as_str(), id, pos));
    ctx.emit(WorkflowEventData::ParallelExecutionStarted { parallel_step_count: par.steps.len() }, node);
    let branches =
        par.steps.iter().enumerate().map(|(i, step)| run_node(ctx, step, previous.clone(), pos.child(i, id)));
    let results = join_all(branches).await;
    let mut outputs = Vec::with_capacity(results.len());
    let mut failure = None;
    for result in results {
        match result {
            Ok(output) => outputs.extend(output),
            Err(Halt::Cancelled) => return Err(Halt::Cancelled),
            Err(failed) => {
                failure.get_or_insert(failed);
            }
        }
    }
    if let Some(failed) = failure {
        return Err(failed);
    }
    ctx.emit(
        WorkflowEventData::ParallelExecutionCompleted {
            parallel_step_count: par.steps.len(),
            step_results: outputs.clone(),
        },
        node,
    );
    let mut content = String::from("## Parallel Execution Results\n\n");
    let sections: Vec<String> = outputs
        .iter()
        .map(|o| {
            let mark = if o.success { "✅ SUCCESS" } else { "❌ FAILURE" };
            format!("### {mark}: {}\n{}", o.step_name.as_deref().unwrap_or_default(), o.content_text())
        })
        .collect();
    content.push_str(&sections.join("\n\n"));
    let mut output = container_output(&par.name, id, StepType::Parallel, content, outputs);
    output.executor_type = Some("parallel".to_owned());
    output.executor_name = Some(par.name.clone());
    Ok(output)
}
