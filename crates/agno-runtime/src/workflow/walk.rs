//! Walks the primitives: each step's (innermost) content feeds the next; containers emit their
//! events and summarise their inner outputs as Agno does; reviews pause and continue
//! (`pause.rs`); what the journal holds is replayed instead of run again.

use agno_core::{StepOutput, StepType, WorkflowEventData};
use futures::future::{BoxFuture, join_all};
use serde_json::{Map, Value, json};

use super::engine::{Ctx, Halt, Pos};
use super::executors::{StepFailure, execute_step};
use super::pause::{self, After, Before, ErrorDecision, Reviewed};
use super::primitives::{Condition, Evaluator, Executor, Loop, Parallel, Router, Step, StepNode, Steps};
use super::review::{OnError, OnReject};
use crate::trace::{SpanScope, in_span, span_name};

/// Runs `nodes` one after the other, each on the content the previous one produced.
pub(super) fn run_sequence<'a>(
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

/// Runs one node; `None` when it leaves no result (an unmet condition without else, a step a
/// reviewer skipped).
pub(super) fn run_node<'a>(
    ctx: &'a Ctx,
    node: &'a StepNode,
    previous: Option<Value>,
    pos: Pos,
) -> BoxFuture<'a, Result<Option<StepOutput>, Halt>> {
    Box::pin(async move {
        ctx.check()?;
        let span = step_span(node, previous.as_ref());
        let result = in_span(span.as_ref(), run_node_untraced(ctx, node, previous, pos)).await;
        if let Some(span) = span {
            match &result {
                Ok(Some(output)) if output.success => {
                    span.text("output.value", output.content_text());
                    span.ok();
                }
                Ok(Some(output)) => span.fail(output.error.as_deref().unwrap_or("the step failed")),
                Ok(None) => span.ok(),
                Err(Halt::Failed { message, .. }) => span.fail(message),
                Err(Halt::Cancelled(reason)) => span.fail(reason.as_deref().unwrap_or("the run was cancelled")),
                // A pause is no failure: the step's span ends unset, and the continue traces it anew.
                Err(Halt::Paused(_)) => drop(span),
            }
        }
        result
    })
}

/// The span of one node (`{Name}.execute`, CHAIN), with the input it is given.
fn step_span(node: &StepNode, previous: Option<&Value>) -> Option<SpanScope> {
    SpanScope::start("CHAIN", || {
        let input = previous.map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        let attributes = vec![
            ("input.value", input),
            ("agno.step.type", Some(format!("{:?}", node.step_type()))),
            ("agno.step.name", Some(node.name().to_owned())),
            ("agno.step.id", node.step_id().map(str::to_owned)),
        ];
        (span_name(node.name(), "execute"), attributes)
    })
}

/// [`run_node`] without its span.
async fn run_node_untraced(
    ctx: &Ctx,
    node: &StepNode,
    previous: Option<Value>,
    pos: Pos,
) -> Result<Option<StepOutput>, Halt> {
    let output = match node {
        StepNode::Step(step) => return run_step(ctx, step, previous, &pos).await,
        StepNode::Steps(group) => run_steps(ctx, group, previous, &pos).await?,
        StepNode::Loop(lp) => run_loop(ctx, lp, previous, &pos).await?,
        StepNode::Condition(cond) => run_condition(ctx, cond, previous, &pos).await?,
        StepNode::Router(router) => run_router(ctx, router, previous, &pos).await?,
        StepNode::Parallel(par) => Some(run_parallel(ctx, par, previous, &pos).await?),
    };
    if let Some(output) = &output {
        ctx.record(node.name(), output);
    }
    Ok(output)
}

/// The output of a container: its summary text, and its inner outputs in `steps`.
fn container_output(
    name: &str,
    id: Option<&str>,
    kind: StepType,
    content: String,
    steps: Vec<StepOutput>,
) -> StepOutput {
    let success = steps.iter().all(|s| s.success);
    StepOutput {
        content: Some(Value::String(content)),
        step_name: Some(name.to_owned()),
        step_id: id.map(str::to_owned),
        step_type: Some(kind),
        success,
        steps: Some(steps),
        ..StepOutput::default()
    }
}

/// A step: its review before it runs, its attempts (`max_retries`), what an error does, the
/// review of its output (a rejection may run it again), then its events. A step the journal
/// holds is replayed.
async fn run_step(ctx: &Ctx, step: &Step, previous: Option<Value>, pos: &Pos) -> Result<Option<StepOutput>, Halt> {
    if let Some(output) = ctx.done(&pos.key) {
        // Done before a pause or a crash: the same output (or none), no events, no work.
        if let Some(run) = ctx.done_run(&pos.key)
            && let Ok(mut runs) = ctx.executor_runs.lock()
        {
            runs.push(run);
        }
        if let Some(output) = &output {
            ctx.record(&step.name, output);
        }
        return Ok(output);
    }
    let node = Some((step.name.as_str(), step.step_id.as_deref(), pos));
    let reviewed = Reviewed::of(StepType::Step, &step.name, step.step_id.as_deref(), pos, step.human_review.as_ref());
    let mut extra = Map::new();
    if let Some(r) = &reviewed {
        match pause::before(ctx, r, None)? {
            Before::Go(answer) => {
                if let Some(input) = answer.and_then(|a| a.user_input) {
                    extra.insert("user_input".to_owned(), Value::Object(input));
                }
            }
            Before::Rejected(OnReject::Cancel, _) => return Err(r.rejected()),
            Before::Rejected(OnReject::Retry, answer) => {
                if let Some(feedback) = answer.rejection_feedback {
                    extra.insert("rejection_feedback".to_owned(), Value::String(feedback));
                }
            }
            Before::Rejected(_, _) => return finish(ctx, step, pos, None),
        }
    }
    ctx.live();
    ctx.emit(|| WorkflowEventData::StepStarted {}, node);
    let mut round = 0;
    let mut error_round = 0;
    let output = loop {
        // Only a reviewed step has outputs waiting for review or failures decided on.
        let produced = match reviewed.as_ref().and_then(|_| ctx.journal_get(&pause::pending_key(pos, round))) {
            Some(pending) => serde_json::from_value(pending).ok(),
            None => None,
        };
        // A failure an earlier walk already had (and a reviewer decided on) is not had again.
        let decided = reviewed.as_ref().and_then(|_| pause::decided(ctx, pos, error_round));
        let produced = match (produced, decided) {
            (None, Some((ErrorDecision::Retry, _))) => {
                error_round += 1;
                continue;
            }
            (None, Some((ErrorDecision::Skip, message))) => Some(skipped(&message)),
            (produced, _) => produced,
        };
        let produced = match produced {
            Some(output) => output,
            None => match agent_attempt(ctx, step, previous.as_ref(), pos, &extra).await {
                Ok(output) => output,
                Err(StepFailure::Paused(run)) => {
                    let round = pause::executor_round(ctx, pos);
                    return Err(pause::executor(ctx, step, pos, &run, round));
                }
                Err(StepFailure::Cancelled) => return Err(Halt::Cancelled(None)),
                Err(StepFailure::Error(message)) => match (&reviewed, step.human_review.as_ref().map(|r| r.on_error)) {
                    (Some(r), Some(OnError::Pause)) => match pause::error(ctx, r, &message, error_round)? {
                        ErrorDecision::Retry => {
                            error_round += 1;
                            continue;
                        }
                        ErrorDecision::Skip => skipped(&message),
                    },
                    (Some(_), Some(OnError::Skip)) => skipped(&message),
                    (Some(_), _) => return Err(failed(ctx, step, pos, &message)),
                    (None, _) if step.skip_on_failure => StepOutput {
                        content: Some(Value::String(format!("Step {} failed but skipped", step.name))),
                        success: false,
                        error: Some(message),
                        ..StepOutput::default()
                    },
                    (None, _) => return Err(failed(ctx, step, pos, &message)),
                },
            },
        };
        let Some(r) = &reviewed else { break produced };
        match pause::after(ctx, r, produced, round)? {
            After::Accept(output) => break *output,
            After::Rejected(OnReject::Cancel, _) => return Err(r.rejected()),
            After::Rejected(OnReject::Retry, answer) => {
                if round >= r.review.max_retries {
                    return Err(Halt::Cancelled(Some(format!(
                        "Max retries ({}) reached for step '{}'",
                        r.review.max_retries, step.name
                    ))));
                }
                if let Some(feedback) = &answer.rejection_feedback {
                    extra.insert("rejection_feedback".to_owned(), Value::String(feedback.clone()));
                }
                if let Some(previous_output) = answer.step_output.as_ref().map(StepOutput::content_text) {
                    extra.insert("previous_output".to_owned(), Value::String(previous_output));
                }
                round += 1;
            }
            After::Rejected(_, _) => return finish(ctx, step, pos, None),
        }
    };
    finish(ctx, step, pos, Some(output))
}

fn skipped(message: &str) -> StepOutput {
    StepOutput {
        content: Some(Value::String(format!("Step skipped due to error: {message}"))),
        success: false,
        error: Some(message.to_owned()),
        ..StepOutput::default()
    }
}

fn failed(ctx: &Ctx, step: &Step, pos: &Pos, message: &str) -> Halt {
    ctx.emit(
        || WorkflowEventData::StepError { error: Some(message.to_owned()) },
        Some((step.name.as_str(), step.step_id.as_deref(), pos)),
    );
    Halt::Failed { step: step.name.clone(), message: format!("step {:?} failed: {message}", step.name) }
}

/// The step's work: an agent step whose agent paused and was answered is continued (each
/// answered pause once, in order); otherwise every attempt of the step.
async fn agent_attempt(
    ctx: &Ctx,
    step: &Step,
    previous: Option<&Value>,
    pos: &Pos,
    extra: &Map<String, Value>,
) -> Result<StepOutput, StepFailure> {
    if let Executor::Workflow(nested) = &step.executor
        && let Some(run) = pause::answered_nested(ctx, pos)
    {
        return super::executors::run_nested(ctx, step, nested, previous, Some(run)).await;
    }
    if matches!(step.executor, Executor::Agent(_) | Executor::Team(_))
        && let Some((run, answers)) = pause::answered_executor(ctx, pos)
    {
        let start = super::executors::AgentStart::Continue(Box::new(run), answers);
        return match &step.executor {
            Executor::Team(team) => super::executors::run_team(ctx, step, team, previous, pos, extra, start).await,
            Executor::Agent(agent) => super::executors::run_agent(ctx, step, agent, previous, pos, extra, start).await,
            _ => attempts(ctx, step, previous, pos, extra).await,
        };
    }
    attempts(ctx, step, previous, pos, extra).await
}

/// Every attempt of the step (`max_retries` more after the first failure).
async fn attempts(
    ctx: &Ctx,
    step: &Step,
    previous: Option<&Value>,
    pos: &Pos,
    extra: &Map<String, Value>,
) -> Result<StepOutput, StepFailure> {
    let mut last_error = String::new();
    for _ in 0..=step.max_retries {
        if ctx.token.is_cancelled() {
            return Err(StepFailure::Cancelled);
        }
        match execute_step(ctx, step, previous, pos, extra).await {
            Ok(output) => return Ok(output),
            Err(StepFailure::Cancelled) => return Err(StepFailure::Cancelled),
            Err(StepFailure::Paused(run)) => return Err(StepFailure::Paused(run)),
            Err(StepFailure::Error(message)) => {
                tracing::debug!(step = step.name, error = message, "workflow step attempt failed");
                last_error = message;
            }
        }
    }
    Err(StepFailure::Error(last_error))
}

/// Names the output, journals it (and the step's agent run), records it and emits its events.
fn finish(ctx: &Ctx, step: &Step, pos: &Pos, output: Option<StepOutput>) -> Result<Option<StepOutput>, Halt> {
    let output = output.map(|mut output| {
        output.step_name = Some(step.name.clone());
        output.step_id.clone_from(&step.step_id);
        output.step_type = Some(StepType::Step);
        output.executor_type = Some(step.executor.kind().to_owned());
        if output.executor_name.is_none() {
            output.executor_name = Some(match &step.executor {
                Executor::Agent(agent) => agent.name().unwrap_or(agent.id()).to_owned(),
                Executor::Workflow(wf) => wf.name().unwrap_or(wf.id()).to_owned(),
                Executor::Team(team) => team.name().unwrap_or(team.id()).to_owned(),
                _ => step.name.clone(),
            });
        }
        output
    });
    let run = output.as_ref().and_then(|o| o.step_run_id.as_deref()).and_then(|run_id| {
        ctx.executor_runs.lock().ok().and_then(|runs| runs.iter().rev().find(|r| r.id() == run_id).cloned())
    });
    ctx.set_done(&pos.key, output.clone(), run);
    let Some(output) = output else { return Ok(None) };
    ctx.record(&step.name, &output);
    if pos.is_top() && matches!(step.executor, Executor::Function(_)) {
        ctx.emit(
            || WorkflowEventData::StepOutput { step_output: output.clone() },
            Some((step.name.as_str(), None, pos)),
        );
    }
    ctx.emit(
        || WorkflowEventData::StepCompleted {
            content: output.content.clone(),
            content_type: "str".to_owned(),
            step_response: output.clone(),
        },
        Some((step.name.as_str(), step.step_id.as_deref(), pos)),
    );
    Ok(Some(output))
}

/// The confirmation review of a container: `Ok(true)` to run it, `Ok(false)` when a reviewer
/// skipped it.
fn confirm_container(ctx: &Ctx, reviewed: Option<&Reviewed<'_>>) -> Result<bool, Halt> {
    let Some(r) = reviewed else { return Ok(true) };
    match pause::before(ctx, r, None)? {
        Before::Go(_) | Before::Rejected(OnReject::Retry, _) => Ok(true),
        Before::Rejected(OnReject::Cancel, _) => Err(r.rejected()),
        Before::Rejected(_, _) => Ok(false),
    }
}

async fn run_steps(ctx: &Ctx, group: &Steps, previous: Option<Value>, pos: &Pos) -> Result<Option<StepOutput>, Halt> {
    let id = group.step_id.as_deref();
    let node = Some((group.name.as_str(), id, pos));
    let reviewed = Reviewed::of(StepType::Steps, &group.name, id, pos, group.human_review.as_ref());
    if !confirm_container(ctx, reviewed.as_ref())? {
        return Ok(None);
    }
    ctx.emit(|| WorkflowEventData::StepsExecutionStarted { steps_count: group.steps.len() }, node);
    let outputs = run_sequence(ctx, &group.steps, previous, |i| pos.child(i, id)).await?;
    ctx.emit(
        || WorkflowEventData::StepsExecutionCompleted {
            steps_count: group.steps.len(),
            executed_steps: outputs.len(),
            step_results: outputs.clone(),
        },
        node,
    );
    let content = format!("Steps {} completed with {} results", group.name, outputs.len());
    Ok(Some(container_output(&group.name, id, StepType::Steps, content, outputs)))
}

async fn run_loop(ctx: &Ctx, lp: &Loop, previous: Option<Value>, pos: &Pos) -> Result<Option<StepOutput>, Halt> {
    let id = lp.step_id.as_deref();
    let node = Some((lp.name.as_str(), id, pos));
    let reviewed = Reviewed::of(StepType::Loop, &lp.name, id, pos, lp.human_review.as_ref());
    if !confirm_container(ctx, reviewed.as_ref())? {
        return Ok(None);
    }
    ctx.emit(|| WorkflowEventData::LoopExecutionStarted { max_iterations: lp.max_iterations }, node);
    let mut all: Vec<Vec<StepOutput>> = Vec::new();
    let mut iteration_input = previous;
    let mut iteration = 1;
    let mut round = 0;
    while iteration <= lp.max_iterations {
        ctx.check()?;
        ctx.emit(|| WorkflowEventData::LoopIterationStarted { iteration, max_iterations: lp.max_iterations }, node);
        let scope = pos.scoped(&format!("#{iteration}r{round}"));
        let outputs = run_sequence(ctx, &lp.steps, iteration_input.clone(), |i| scope.child(i, id)).await?;
        let ended = lp.end_condition.as_ref().is_some_and(|c| c.ends(&outputs));
        ctx.emit(
            || WorkflowEventData::LoopIterationCompleted {
                iteration,
                max_iterations: lp.max_iterations,
                should_continue: !ended,
                iteration_results: outputs.clone(),
            },
            node,
        );
        if let Some(r) = reviewed.as_ref().filter(|r| r.review.requires_iteration_review) {
            match pause::iteration(ctx, r, iteration, round, outputs.last())? {
                None => {}
                Some((OnReject::Retry, _)) if round < r.review.max_retries => {
                    round += 1;
                    continue;
                }
                Some((OnReject::Retry | OnReject::Cancel, _)) => return Err(r.rejected()),
                // Skip: the rejected iteration is dropped and the loop ends here.
                Some(_) => break,
            }
        }
        round = 0;
        if lp.forward_iteration_output
            && let Some(last) = outputs.last().and_then(StepOutput::deepest_content)
        {
            iteration_input = Some(last.clone());
        }
        let stop = outputs.iter().any(|o| o.stop);
        all.push(outputs);
        iteration += 1;
        if ended || stop {
            break;
        }
    }
    let total_iterations = u32::try_from(all.len()).unwrap_or(u32::MAX);
    ctx.emit(
        || WorkflowEventData::LoopExecutionCompleted {
            total_iterations,
            max_iterations: lp.max_iterations,
            all_results: all.clone(),
        },
        node,
    );
    let flat: Vec<StepOutput> = all.into_iter().flatten().collect();
    let content = format!("Loop {} completed {total_iterations} iterations with {} total steps", lp.name, flat.len());
    Ok(Some(container_output(&lp.name, id, StepType::Loop, content, flat)))
}

async fn run_condition(
    ctx: &Ctx,
    cond: &Condition,
    previous: Option<Value>,
    pos: &Pos,
) -> Result<Option<StepOutput>, Halt> {
    let id = cond.step_id.as_deref();
    let node = Some((cond.name.as_str(), id, pos));
    let reviewed = Reviewed::of(StepType::Condition, &cond.name, id, pos, cond.human_review.as_ref());
    let mut forced_else = false;
    if let Some(r) = &reviewed {
        match pause::before(ctx, r, None)? {
            Before::Go(_) | Before::Rejected(OnReject::Retry, _) => {}
            Before::Rejected(OnReject::Cancel, _) => return Err(r.rejected()),
            Before::Rejected(OnReject::Else, _) => forced_else = true,
            Before::Rejected(_, _) => return Ok(None),
        }
    }
    let decision_key = format!("cond:{}", pos.key);
    let result = match ctx.journal_get(&decision_key).and_then(|v| v.as_bool()) {
        Some(result) => result,
        None if forced_else => false,
        None => {
            ctx.live();
            let input = ctx.step_input(previous.as_ref());
            let result = match &cond.evaluator {
                Evaluator::Bool(b) => *b,
                Evaluator::Function(f) => f(&input),
                Evaluator::Expression(e) => e.is_true(&super::expr::step_context(&input)),
            };
            ctx.journal_put(decision_key, json!(result));
            result
        }
    };
    ctx.emit(|| WorkflowEventData::ConditionExecutionStarted { condition_result: result }, node);
    let (branch, steps, scope) = if result {
        (Some("if"), cond.steps.as_slice(), pos.clone())
    } else if !cond.else_steps.is_empty() {
        (Some("else"), cond.else_steps.as_slice(), pos.scoped("e"))
    } else {
        (None, &[][..], pos.clone())
    };
    let outputs = run_sequence(ctx, steps, previous, |i| scope.child(i, id)).await?;
    ctx.emit(
        || WorkflowEventData::ConditionExecutionCompleted {
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

async fn run_router(
    ctx: &Ctx,
    router: &Router,
    previous: Option<Value>,
    pos: &Pos,
) -> Result<Option<StepOutput>, Halt> {
    let id = router.step_id.as_deref();
    let node = Some((router.name.as_str(), id, pos));
    let names: Vec<&str> = router.choices.iter().map(StepNode::name).collect();
    let reviewed = Reviewed::of(StepType::Router, &router.name, id, pos, router.human_review.as_ref());
    let mut picked_by_reviewer = None;
    if let Some(r) = &reviewed {
        match pause::before(ctx, r, Some(&names))? {
            Before::Go(answer) => picked_by_reviewer = answer.and_then(|a| a.selected_choices),
            Before::Rejected(OnReject::Retry, _) => {}
            Before::Rejected(OnReject::Cancel, _) => return Err(r.rejected()),
            Before::Rejected(_, _) => return Ok(None),
        }
    }
    let mut round = 0;
    loop {
        let decision_key = format!("route:{}:{round}", pos.key);
        let selected: Vec<String> = match ctx.journal_get(&decision_key).and_then(|v| serde_json::from_value(v).ok()) {
            Some(selected) => selected,
            None => {
                ctx.live();
                let selected = match &picked_by_reviewer {
                    Some(picked) => picked.clone(),
                    None => router.selector.select(&ctx.step_input(previous.as_ref()), &names),
                };
                ctx.journal_put(decision_key, json!(selected));
                selected
            }
        };
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
                    ctx.emit(|| WorkflowEventData::StepError { error: Some(message.clone()) }, node);
                    return Err(Halt::Failed { step: router.name.clone(), message });
                }
            }
        }
        ctx.emit(|| WorkflowEventData::RouterExecutionStarted { selected_steps: selected.clone() }, node);
        // As Agno: the chosen steps carry the router's own index.
        let scope = Pos { parent_step_id: id.map(str::to_owned), ..pos.scoped(&format!(">{round}")) };
        let outputs = run_sequence(ctx, &chosen, previous.clone(), |i| scope.scoped(&format!(".{i}"))).await?;
        ctx.emit(
            || WorkflowEventData::RouterExecutionCompleted {
                selected_steps: selected,
                executed_steps: outputs.len(),
                step_results: outputs.clone(),
            },
            node,
        );
        let content = format!("Router {} completed with {} results", router.name, outputs.len());
        let output = container_output(&router.name, id, StepType::Router, content, outputs);
        let Some(r) = &reviewed else { return Ok(Some(output)) };
        match pause::after(ctx, r, output, round)? {
            After::Accept(output) => return Ok(Some(*output)),
            After::Rejected(OnReject::Cancel, _) => return Err(r.rejected()),
            After::Rejected(OnReject::Retry, _) if round < r.review.max_retries => {
                // Route again (a reviewer who picks routes is asked again).
                round += 1;
                picked_by_reviewer = None;
            }
            After::Rejected(OnReject::Retry, _) => {
                return Err(Halt::Cancelled(Some(format!(
                    "Max retries ({}) reached for step '{}'",
                    r.review.max_retries, router.name
                ))));
            }
            After::Rejected(_, _) => return Ok(None),
        }
    }
}

async fn run_parallel(ctx: &Ctx, par: &Parallel, previous: Option<Value>, pos: &Pos) -> Result<StepOutput, Halt> {
    let id = par.step_id.as_deref();
    let node = Some((par.name.as_str(), id, pos));
    ctx.emit(|| WorkflowEventData::ParallelExecutionStarted { parallel_step_count: par.steps.len() }, node);
    let branches =
        par.steps.iter().enumerate().map(|(i, step)| run_node(ctx, step, previous.clone(), pos.child(i, id)));
    let results = join_all(branches).await;
    let mut outputs = Vec::with_capacity(results.len());
    let mut halt = None;
    for result in results {
        match result {
            Ok(output) => outputs.extend(output),
            // A cancel wins, then a pause (the other branches' work is in the journal), then a
            // failure.
            Err(Halt::Cancelled(reason)) => return Err(Halt::Cancelled(reason)),
            Err(h @ Halt::Paused(_)) => halt = Some(h),
            Err(failed) => {
                if !matches!(halt, Some(Halt::Paused(_))) {
                    halt.get_or_insert(failed);
                }
            }
        }
    }
    if let Some(halt) = halt {
        return Err(halt);
    }
    ctx.emit(
        || WorkflowEventData::ParallelExecutionCompleted {
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
