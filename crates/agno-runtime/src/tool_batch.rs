//! Executes one model turn's tool calls: argument parsing, lookup, `tool_call_limit`, HITL
//! pauses, concurrent execution, hooks and cancellation.
//!
//! Invariant: every call of the batch ends with exactly one tool result message, except calls
//! that pause the run (their result arrives on continue). A bad call becomes an error result the
//! model sees; it never aborts the run.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use agno_core::{
    DynTool, EventData, Message, RunRequirement, ToolCall, ToolCallMetrics, ToolError, ToolErrorKind, ToolExecution,
};
use agno_tools::{call_with_hooks, user_input_fields};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::emitter::Emitter;
use crate::run_state::RunState;
use crate::trace::{SpanScope, traced};

/// How a batch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchEnd {
    /// Call the model again with the results.
    Continue,
    /// Some calls wait for the user.
    Paused,
    /// A tool asked the run to stop after it.
    Stop,
    /// The run was cancelled during the batch.
    Cancelled,
}

enum Plan {
    Fail(ToolExecution, ToolError),
    Pause(ToolExecution),
    Run(Arc<dyn DynTool>, ToolExecution, Map<String, Value>),
}

fn epoch_f64() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Parses the model's raw argument text into a JSON object.
pub(crate) fn parse_arguments(raw: &str) -> Result<Map<String, Value>, ToolError> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(other) => Err(ToolError::invalid_arguments(format!(
            "arguments must be a JSON object, got {}",
            match other {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                _ => "a boolean",
            }
        ))),
        Err(e) => Err(ToolError::invalid_arguments(format!("arguments are not valid JSON: {e}"))),
    }
}

/// The name and attributes of a tool call's span: the tool's name, its arguments and the tool's
/// own attributes (an MCP tool's server).
fn describe_tool_call(
    tool: Option<&dyn DynTool>,
    exec: &ToolExecution,
    args: Option<&Map<String, Value>>,
) -> (String, Vec<(&'static str, Option<String>)>) {
    let arguments = args.map(|a| Value::Object(a.clone()).to_string());
    let mut attributes = vec![
        ("tool.name", Some(exec.name().to_owned())),
        ("tool.parameters", arguments.clone()),
        ("input.mime_type", Some("application/json".to_owned())),
        ("input.value", arguments),
    ];
    attributes.extend(tool.into_iter().flat_map(|t| t.trace_attributes()).map(|(k, v)| (k, Some(v))));
    (exec.name().to_owned(), attributes)
}

/// Runs `tool` (its hooks around it) as the call `exec`, traced as its TOOL span; a cancel ends it.
async fn run_tool(
    tool: &dyn DynTool,
    hooks: &[Arc<dyn agno_tools::ToolHook>],
    exec: &ToolExecution,
    args: Map<String, Value>,
    ctx: agno_core::ToolContext,
    cancel: &CancellationToken,
) -> Result<agno_core::ToolOutput, ToolError> {
    let span = SpanScope::start("TOOL", || describe_tool_call(Some(tool), exec, Some(&args)));
    let call = async {
        tokio::select! {
            r = call_with_hooks(tool, hooks, args, ctx) => r,
            () = cancel.cancelled() => Err(ToolError::new(ToolErrorKind::Cancelled, "the run was cancelled while the tool ran")),
        }
    };
    traced(span, call, |span, text| {
        span.text("output.value", text.clone());
        span.text("output.mime_type", "text/plain");
    })
    .await
}

/// Executes `calls` and appends their results to the run.
pub(crate) async fn execute_batch(
    st: &mut RunState,
    calls: &[ToolCall],
    em: &mut Emitter,
    cancel: &CancellationToken,
) -> BatchEnd {
    let mut plans = Vec::with_capacity(calls.len());
    for call in calls {
        let parsed = parse_arguments(&call.function.arguments);
        let exec = ToolExecution::new(call.id.clone(), call.function.name.clone(), parsed.as_ref().ok().cloned());
        let plan = match (parsed, st.tool(&call.function.name)) {
            (Err(e), _) => Plan::Fail(exec, e),
            (_, None) => {
                let known: Vec<&str> = st.tools.iter().map(|t| t.name()).collect();
                let err = ToolError::new(
                    ToolErrorKind::NotFound,
                    format!("no tool named {:?}; available tools: {}", call.function.name, known.join(", ")),
                );
                Plan::Fail(exec, err)
            }
            (Ok(_), Some(_)) if st.tool_call_limit.is_some_and(|limit| st.tool_calls_made >= limit) => {
                let err = ToolError::new(
                    ToolErrorKind::CallLimitReached,
                    format!("this run may make at most {} tool calls", st.tool_call_limit.unwrap_or(0)),
                );
                Plan::Fail(exec, err)
            }
            (Ok(args), Some(tool)) => {
                st.tool_calls_made += 1;
                let flags = tool.flags();
                if flags.pauses() {
                    let mut exec = exec;
                    exec.approval_type = flags.approval.map(|a| a.as_str().to_owned());
                    // A `required` approval on a call that pauses for nothing else asks for confirmation.
                    if flags.requires_confirmation || !flags.pauses_for_a_person() {
                        exec.requires_confirmation = Some(true);
                    }
                    if flags.requires_user_input {
                        exec.requires_user_input = Some(true);
                        exec.user_input_schema = Some(user_input_fields(tool.definition(), flags));
                    }
                    if flags.external_execution {
                        exec.external_execution_required = Some(true);
                    }
                    Plan::Pause(exec)
                } else {
                    let mut exec = exec;
                    exec.stop_after_tool_call = flags.stop_after_tool_call;
                    Plan::Run(tool, exec, args)
                }
            }
        };
        plans.push(plan);
    }

    // Start events, in call order.
    for plan in &plans {
        if let Plan::Run(_, exec, _) | Plan::Fail(exec, _) = plan {
            em.emit(EventData::ToolCallStarted { tool: exec.clone() });
        }
    }

    let hooks = st.tool_hooks.clone();
    let ctx = st.tool_context();
    let futures = plans.into_iter().map(|plan| {
        let hooks = hooks.clone();
        let mut ctx = ctx.clone();
        let cancel = cancel.clone();
        async move {
            match plan {
                Plan::Fail(exec, err) => {
                    if let Some(span) = SpanScope::start("TOOL", || describe_tool_call(None, &exec, None)) {
                        span.fail(&err.to_string());
                    }
                    (exec, Some(Err(err)))
                }
                Plan::Pause(exec) => (exec, None),
                Plan::Run(tool, mut exec, args) => {
                    ctx.tool_call_id = exec.call_id().to_owned();
                    let started = Instant::now();
                    let start_time = epoch_f64();
                    let result = run_tool(tool.as_ref(), &hooks, &exec, args, ctx, &cancel).await;
                    exec.metrics = Some(ToolCallMetrics {
                        start_time: Some(start_time),
                        end_time: Some(epoch_f64()),
                        duration: Some(started.elapsed().as_secs_f64()),
                    });
                    (exec, Some(result))
                }
            }
        }
    });
    let outcomes = futures::future::join_all(futures).await;

    let mut paused = false;
    let mut stop = false;
    let created_at = chrono::Utc::now().to_rfc3339();
    for (mut exec, outcome) in outcomes {
        // A tool that waits for a person pauses the run on its call; its result comes with the
        // continue, as an external result does.
        let outcome = match outcome {
            Some(Err(err)) if err.kind == ToolErrorKind::Paused => {
                exec.external_execution_required = Some(true);
                None
            }
            other => other,
        };
        match outcome {
            None => {
                paused = true;
                st.add_requirement(RunRequirement::for_tool(exec.clone(), created_at.clone()));
                st.push_tool(exec);
            }
            Some(result) => {
                let (text, is_error) = match result {
                    Ok(text) => (text, false),
                    Err(err) => {
                        tracing::debug!(tool = exec.name(), error = %err, "tool call failed");
                        (err.model_text(), true)
                    }
                };
                exec.result = Some(text.clone());
                exec.tool_call_error = Some(is_error);
                // As Agno: the call's completion, then (for a failed call) its error.
                em.emit(EventData::ToolCallCompleted {
                    tool: exec.clone(),
                    content: Some(Value::String(text.clone())),
                    session_state: st.changed_state(),
                });
                if is_error {
                    em.emit(EventData::ToolCallError { tool: exec.clone(), error: Some(text.clone()) });
                }
                stop |= exec.stop_after_tool_call && !is_error;
                let mut msg = Message::tool_result(exec.call_id(), exec.name(), text, is_error);
                msg.tool_args = exec.tool_args.clone().map(Value::Object);
                msg.stop_after_tool_call = exec.stop_after_tool_call;
                st.messages.push(msg);
                st.push_tool(exec);
            }
        }
    }
    if cancel.is_cancelled() {
        BatchEnd::Cancelled
    } else if paused {
        BatchEnd::Paused
    } else if stop {
        BatchEnd::Stop
    } else {
        BatchEnd::Continue
    }
}

/// Executes one resolved requirement on continue: runs confirmed or answered tools, turns
/// rejections into error results, takes external results as they are.
pub(crate) async fn resolve_requirement(
    st: &mut RunState,
    req: &RunRequirement,
    em: &mut Emitter,
    cancel: &CancellationToken,
) {
    let Some(paused) = req.tool_execution.clone() else {
        return;
    };
    let mut exec = st
        .output
        .tools
        .iter()
        .flatten()
        .find(|t| t.tool_call_id == paused.tool_call_id)
        .cloned()
        .unwrap_or_else(|| paused.clone());
    let (text, is_error) = if let Some(result) = req
        .external_execution_result
        .clone()
        .or_else(|| paused.external_execution_required.filter(|b| *b).and(paused.result.clone()))
    {
        (result, false)
    } else if req.confirmation == Some(false) || paused.confirmed == Some(false) {
        exec.confirmed = Some(false);
        let note = req.confirmation_note.clone().or(paused.confirmation_note.clone());
        exec.confirmation_note.clone_from(&note);
        let text = match note {
            Some(note) => ToolError::new(ToolErrorKind::Rejected, note).model_text(),
            None => "Tool call was rejected by the user.".to_owned(),
        };
        (text, true)
    } else {
        if req.confirmation == Some(true) || paused.confirmed == Some(true) {
            exec.confirmed = Some(true);
        }
        let mut args = exec.tool_args.clone().unwrap_or_default();
        if let Some(fields) = req.user_input_schema.as_ref().or(paused.user_input_schema.as_ref()) {
            for field in fields {
                if let Some(v) = &field.value {
                    args.insert(field.name.clone(), v.clone());
                }
            }
            exec.user_input_schema = Some(fields.clone());
            exec.answered = Some(true);
            exec.tool_args = Some(args.clone());
        }
        match st.tool(exec.name()) {
            None => {
                (ToolError::new(ToolErrorKind::NotFound, format!("no tool named {:?}", exec.name())).model_text(), true)
            }
            Some(tool) => {
                em.emit(EventData::ToolCallStarted { tool: exec.clone() });
                let mut ctx = st.tool_context();
                ctx.tool_call_id = exec.call_id().to_owned();
                let hooks = st.tool_hooks.clone();
                match run_tool(tool.as_ref(), &hooks, &exec, args, ctx, cancel).await {
                    Ok(text) => (text, false),
                    Err(e) => (e.model_text(), true),
                }
            }
        }
    };
    exec.result = Some(text.clone());
    exec.tool_call_error = Some(is_error);
    let session_state = st.changed_state();
    em.emit(EventData::ToolCallCompleted {
        tool: exec.clone(),
        content: Some(Value::String(text.clone())),
        session_state,
    });
    let mut msg = Message::tool_result(exec.call_id(), exec.name(), text, is_error);
    msg.tool_args = exec.tool_args.clone().map(Value::Object);
    st.messages.push(msg);
    st.push_tool(exec);
}
