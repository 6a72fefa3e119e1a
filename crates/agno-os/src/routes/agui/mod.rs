//! The AG-UI interface (`[agui]`): one agent or team answering AG-UI clients (CopilotKit,
//! `@ag-ui/client`'s `HttpAgent`), as Python AgentOS 3.1.10's `AGUI(agent=...)` serves it at its
//! default prefix: `POST /agui` takes AG-UI's `RunAgentInput` and answers `text/event-stream`
//! with AG-UI events ([`events`]); `GET /status` says the interface is available.
//!
//! `threadId` is the session (another user's answers 404 before anything runs), `runId` the new
//! run's id, the last user message its input, `state` the session state sent with it and
//! `context` its dependencies; `forwardedProps.user_id` names the user only when the token names
//! none. A request whose messages end with tool messages answers the paused run of the thread
//! waiting for those tool calls (Agno's `agui/resume.py`: a confirmation `{"accepted": bool}`, user
//! input `{"values": {...}}`, or the result of a call executed elsewhere), which carries on under
//! its own id; tool messages that answer no waiting call, or leave one open, end the stream with
//! `RUN_ERROR` naming the problem and change nothing.

mod events;
mod patch;

use agno_core::{ComponentKind, RunInput, RunOutput, RunQuery, RunRequirement, RunStatus, StreamEvent};
use agno_runtime::{ClientSide, Component, Durable, EventStream, RunSpec};
use axum::Json;
use axum::body::Bytes;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use self::events::Translator;
use super::agents::Agents;
use super::component::{Kind, runnable};
use super::continuation::{self, Carried};
use super::teams::Teams;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::routes::guard::Caller;
use crate::routes::translated::{self, Translate};
use crate::sse::{DisconnectPolicy, Frame};
use crate::state::{AguiTarget, AppState};

/// AG-UI's `RunAgentInput` (camelCase on the wire).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    /// The conversation: the session.
    #[schemars(length(min = 1))]
    pub thread_id: String,
    /// The run the client starts.
    #[schemars(length(min = 1))]
    pub run_id: String,
    /// The client's state: the session state the run starts from.
    #[serde(default)]
    pub state: Option<Value>,
    /// The conversation's messages; the last user message is the input, trailing tool messages
    /// answer a paused run.
    #[serde(default)]
    pub messages: Vec<Value>,
    /// Tools the client executes itself (`name`, `description`, `parameters`): offered to the
    /// model; a call pauses the run until a tool message brings its result.
    #[serde(default)]
    pub tools: Vec<Value>,
    /// Context entries (`description`, `value`): the run's dependencies.
    #[serde(default)]
    pub context: Vec<Value>,
    /// Anything else the client forwards (`user_id` for anonymous callers).
    #[serde(default)]
    pub forwarded_props: Option<Value>,
}

/// `GET /status`: the interface is available.
pub async fn status() -> Json<Value> {
    Json(json!({"status": "available"}))
}

/// `POST /agui`: the configured agent or team runs the input, answered as AG-UI events.
pub async fn run(Caller { state, principal }: Caller, body: Bytes) -> ApiResult<Response> {
    let Some(target) = state.agui.clone() else {
        return Err(ApiError::not_found(
            "the AG-UI interface is off: set [agui] enabled = true (and agent or team) in agentos.toml",
        ));
    };
    let input: RunAgentInput = super::params::json_body(&body)?;
    match target.kind {
        ComponentKind::Team => run_kind::<Teams>(&state, &principal, &target, input).await,
        _ => run_kind::<Agents>(&state, &principal, &target, input).await,
    }
}

/// The text of a message's `content` (a string, or its text parts).
fn text_of(message: &Value) -> Option<String> {
    match message.get("content")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// The messages at the end of the conversation that are tool results.
fn trailing_tool_messages(messages: &[Value]) -> Vec<&Value> {
    let mut out: Vec<&Value> =
        messages.iter().rev().take_while(|m| m.get("role").and_then(Value::as_str) == Some("tool")).collect();
    out.reverse();
    out
}

/// What the client brings: its tools (as Agno's `parse_client_tools`: a call pauses the run for
/// the client's result) and, when it sent a state, that it follows the state. A tool without a
/// name is a 422 naming it.
fn client_side(tools: &[Value], follows_state: bool) -> ApiResult<ClientSide> {
    let tools = tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let name = tool.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()).ok_or_else(|| {
                ApiError::unprocessable(format!(
                    "tools[{i}] needs a name: {{\"name\", \"description\", \"parameters\"}}"
                ))
            })?;
            Ok(ClientSide::tool(name, tool.get("description").and_then(Value::as_str), tool.get("parameters")))
        })
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(ClientSide { tools, follows_state })
}

/// The context entries as dependencies (`description` or `context_N` -> the value, JSON when it
/// parses).
fn dependencies(context: &[Value]) -> Option<Map<String, Value>> {
    let deps: Map<String, Value> = context
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let key = item
                .get("description")
                .and_then(Value::as_str)
                .filter(|d| !d.is_empty())
                .map_or_else(|| format!("context_{}", i + 1), str::to_owned);
            let value = match item.get("value") {
                Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
                Some(other) => other.clone(),
                None => Value::Null,
            };
            (key, value)
        })
        .collect();
    (!deps.is_empty()).then_some(deps)
}

async fn run_kind<K: Kind>(
    state: &AppState,
    principal: &Principal,
    target: &AguiTarget,
    input: RunAgentInput,
) -> ApiResult<Response> {
    let id = target.id.as_str();
    let runner = runnable::<K>(state, principal, id)?;
    let forwarded = input.forwarded_props.as_ref().and_then(|p| p.get("user_id")).and_then(Value::as_str);
    let user_id = principal.run_user(forwarded.map(str::to_owned));
    super::run_form::check_session_owner(state, &input.thread_id, user_id.as_deref()).await?;
    let session_state = match &input.state {
        Some(Value::Object(m)) => Some(m.clone()),
        _ => None,
    };
    let client = client_side(&input.tools, session_state.is_some())?;
    let tool_messages = trailing_tool_messages(&input.messages);
    if !tool_messages.is_empty() {
        let (run, requirements) =
            match resume_target::<K>(state, id, &input.thread_id, user_id.as_deref(), &tool_messages).await? {
                Ok(found) => found,
                Err(problem) => return Ok(refused(state, &input, session_state.as_ref(), &problem)),
            };
        super::approvals::gate_continue(state, principal, &run).await?;
        let form = continuation::answers_form(&requirements);
        let (run, requirements) = continuation::take_answers::<K>(state, &runner, run, &form, Vec::new()).await?;
        let agno_run_id = run.id().to_owned();
        let carried = continuation::carry_on::<K>(state, &runner, run, requirements, user_id, client, false).await?;
        return Ok(match carried {
            // A background run carries on on the queue; its events are followed from where they
            // stopped.
            Carried::Queued { queue, after, .. } => {
                let frames = super::background::tail_frames(state, queue, agno_run_id.clone(), after)?;
                respond_logged(state, frames, &input, &agno_run_id, session_state.as_ref())
            }
            Carried::Here(events) => respond(state, events, &input, &agno_run_id, session_state.as_ref()),
        });
    }
    if let Some(db) = &state.db
        && let Some(existing) = db.get_run(&input.run_id, None).await?
    {
        // The caller's background run in this thread: re-attach to it (its events from the
        // start, then as they come), on whichever replica it runs.
        let own = existing.session_id.as_deref() == Some(input.thread_id.as_str())
            && super::run_records::belongs(&existing, K::KIND, id)
            && (user_id.is_none() || existing.user_id == user_id);
        if own && let Some(queue) = super::background::queue_holding(state, &input.run_id).await? {
            let frames = super::background::tail_frames(state, queue, input.run_id.clone(), -1)?;
            return Ok(respond_logged(state, frames, &input, &input.run_id, session_state.as_ref()));
        }
        let problem = format!("a run with id {} exists already: start a new run with a new runId", input.run_id);
        return Ok(refused(state, &input, session_state.as_ref(), &problem));
    }
    let text = input
        .messages
        .iter()
        .rev()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .find_map(text_of)
        .unwrap_or_default();
    let mut spec = RunSpec::new(K::KIND, id, RunInput::text(text));
    spec.run_id.clone_from(&input.run_id);
    input.thread_id.clone_into(&mut spec.session_id);
    spec.user_id = user_id;
    spec.session_state.clone_from(&session_state);
    spec.dependencies = dependencies(&input.context);
    spec.client = client;
    spec.stream = true;
    if target.background {
        let queue = super::background::queue_of(state)?;
        super::background::commit(state, &spec, None).await?;
        let frames = super::background::tail_frames(state, queue, spec.run_id.clone(), -1)?;
        return Ok(respond_logged(state, frames, &input, &spec.run_id, session_state.as_ref()));
    }
    let events = runner.start(&spec, Durable::default());
    Ok(respond(state, events, &input, &spec.run_id, session_state.as_ref()))
}

/// The paused run of the component in the thread waiting for the calls the tool messages answer,
/// with the answers applied to its requirements; or why there is none (or why the answers do
/// not do).
async fn resume_target<K: Kind>(
    state: &AppState,
    id: &str,
    thread_id: &str,
    user_id: Option<&str>,
    tool_messages: &[&Value],
) -> ApiResult<Result<(RunOutput, Vec<RunRequirement>), String>> {
    let db = state.require_db()?;
    let call_of = |m: &&Value| m.get("toolCallId").and_then(Value::as_str).map(str::to_owned);
    let calls: Vec<String> = tool_messages.iter().filter_map(call_of).collect();
    let query = RunQuery {
        session_id: Some(thread_id.to_owned()),
        user_id: user_id.map(str::to_owned),
        status: Some(RunStatus::Paused),
        ..RunQuery::default()
    };
    let page = db.get_runs(&query).await?;
    let run = page.runs.into_iter().find(|run| {
        super::run_records::belongs(run, K::KIND, id)
            && run.requirements.iter().flatten().any(|r| r.tool_call_id().is_some_and(|c| calls.iter().any(|x| x == c)))
    });
    let Some(run) = run else {
        return Ok(Err(format!("No paused run matching the provided tool results found in session {thread_id}")));
    };
    let mut requirements = run.requirements.clone().unwrap_or_default();
    for message in tool_messages {
        let Some(call) = message.get("toolCallId").and_then(Value::as_str) else { continue };
        let Some(req) = requirements.iter_mut().find(|r| r.tool_call_id() == Some(call) && !r.is_resolved()) else {
            continue;
        };
        let content = text_of(message).unwrap_or_default();
        let error = message.get("error").and_then(Value::as_str).filter(|e| !e.is_empty());
        if req.needs_external_execution() {
            req.set_external_execution_result(error.map_or(content, str::to_owned));
            continue;
        }
        let payload: Map<String, Value> = serde_json::from_str(&content).unwrap_or_default();
        if req.needs_confirmation() {
            if error.is_none() && payload.get("accepted") == Some(&Value::Bool(true)) {
                req.confirm();
            } else {
                let note = payload.get("note").and_then(Value::as_str).or(error).map(str::to_owned);
                req.reject(note);
            }
        } else if req.needs_user_input() {
            match payload.get("values") {
                Some(Value::Object(values)) => req.provide_user_input(values),
                _ => return Ok(Err(format!("the answer to tool call {call} needs {{\"values\": {{...}}}}"))),
            }
        }
    }
    let open: Vec<&str> = requirements.iter().filter(|r| !r.is_resolved()).filter_map(|r| r.tool_call_id()).collect();
    if !open.is_empty() {
        return Ok(Err(format!("Partial resume: requirements {open:?} still unresolved")));
    }
    Ok(Ok((run, requirements)))
}

/// One AG-UI event as an SSE frame (`data:` only, as AG-UI's encoder writes it).
fn frame(event: &Value) -> Frame {
    Frame::data(&event.to_string())
}

/// A stream that starts and ends at once with `RUN_ERROR` naming `problem` (nothing ran).
fn refused(
    state: &AppState,
    input: &RunAgentInput,
    session_state: Option<&Map<String, Value>>,
    problem: &str,
) -> Response {
    let translator = Translator::new(&input.thread_id, &input.run_id, "", None);
    let mut all = translator.started(session_state);
    all.push(Translator::refused(problem));
    let frames: Vec<Frame> = all.iter().map(frame).collect();
    crate::sse::live(futures::stream::iter(frames), DisconnectPolicy::KeepRunning, state.streaming()).into_response()
}

/// The SSE response of a background run's logged frames (Agno's `event:` name and JSON data) as
/// AG-UI events; the run goes on when the client leaves.
fn respond_logged(
    state: &AppState,
    frames: impl futures::Stream<Item = Frame> + Send + 'static,
    input: &RunAgentInput,
    agno_run_id: &str,
    session_state: Option<&Map<String, Value>>,
) -> Response {
    translated(state, translated::logged(frames), input, agno_run_id, session_state)
}

/// The SSE response of a run's events as AG-UI events; the run goes on when the client leaves.
fn respond<E: StreamEvent>(
    state: &AppState,
    events: EventStream<E>,
    input: &RunAgentInput,
    agno_run_id: &str,
    session_state: Option<&Map<String, Value>>,
) -> Response {
    translated(state, translated::named(events), input, agno_run_id, session_state)
}

impl Translate for Translator {
    fn event(&mut self, name: &str, event: &Value) -> Vec<Frame> {
        Translator::event(self, name, event).iter().map(frame).collect()
    }

    async fn finish(mut self) -> Vec<Frame> {
        Translator::finish(&mut self).iter().map(frame).collect()
    }
}

/// The SSE response of `(Agno name, JSON)` events as AG-UI events.
fn translated(
    state: &AppState,
    events: impl futures::Stream<Item = (String, Value)> + Send + 'static,
    input: &RunAgentInput,
    agno_run_id: &str,
    session_state: Option<&Map<String, Value>>,
) -> Response {
    let translator = Translator::new(&input.thread_id, &input.run_id, agno_run_id, session_state);
    let first: Vec<Frame> = translator.started(session_state).iter().map(frame).collect();
    translated::respond(state, first, events, translator)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn inputs_read_as_agno_reads_them() {
        let messages = vec![
            json!({"role": "user", "content": "first"}),
            json!({"role": "assistant", "content": "ok"}),
            json!({"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "binary", "mimeType": "image/png"}, {"type": "text", "text": "b"}]}),
            json!({"role": "tool", "toolCallId": "c1", "content": "{\"accepted\": true}"}),
            json!({"role": "tool", "toolCallId": "c2", "content": "x"}),
        ];
        assert_eq!(text_of(&messages[2]).as_deref(), Some("a\nb"));
        let tools = trailing_tool_messages(&messages);
        assert_eq!(tools.len(), 2);
        assert!(trailing_tool_messages(&messages[..3]).is_empty());
        let deps =
            dependencies(&[json!({"description": "user", "value": "{\"n\": 1}"}), json!({"value": "plain"})]).unwrap();
        assert_eq!(deps["user"], json!({"n": 1}));
        assert_eq!(deps["context_2"], json!("plain"));
        assert!(dependencies(&[]).is_none());
    }
}
