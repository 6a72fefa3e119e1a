//! How an A2A request about a run is answered: who asks what of which component ([`Target`]),
//! a run that was awaited as its task ([`finished_task`]), a run streamed as A2A frames
//! ([`stream_response`]). Shared by new messages and by answers to paused runs.

use agno_core::StreamEvent;
use agno_runtime::EventStream;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use super::jsonrpc::{Version, result_response};
use super::{frames, task, v1};
use crate::auth::Principal;
use crate::routes::translated::{self, Translate};
use crate::sse::DisconnectPolicy;
use crate::state::AppState;

/// Who asks what of which component.
pub(super) struct Target<'a> {
    pub(super) state: &'a AppState,
    pub(super) principal: &'a Principal,
    pub(super) component_id: &'a str,
    pub(super) headers: &'a HeaderMap,
    /// The protocol version the request speaks (and is answered in).
    pub(super) version: Version,
}

impl Target<'_> {
    /// The run's user, as Agno's `resolve_run_user_id`: a token's subject (forced under
    /// isolation); the client's `X-User-ID` header or `message.metadata.userId` only when the
    /// server assigned no identity.
    pub(super) fn user(&self, from_message: Option<String>) -> Option<String> {
        let header = self.headers.get("x-user-id").and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty());
        let client = header.map(str::to_owned).or(from_message);
        self.principal.run_user(client)
    }

    /// The answer to a message (`message/send`, `SendMessage`): the task, which v1.0 wraps as
    /// `{"task": ...}` and always answers with 200 (v0.3 with `status`, as Python AgentOS).
    pub(super) fn sent(&self, request_id: &Value, task: &Value, status: StatusCode) -> Response {
        match self.version {
            Version::V0_3 => result_response(request_id, task.clone(), status),
            Version::V1_0 => result_response(request_id, v1::one_of(task), StatusCode::OK),
        }
    }

    /// The answer to a task method (`GetTask`, `CancelTask`): the task, in the request's spelling.
    pub(super) fn task(&self, request_id: &Value, task: &Value) -> Response {
        match self.version {
            Version::V0_3 => result_response(request_id, task.clone(), StatusCode::OK),
            Version::V1_0 => result_response(request_id, v1::task(task), StatusCode::OK),
        }
    }

    /// The SSE answer of a run's events as they come; `state` is the task's state when the
    /// stream starts (a v1.0 stream begins with the task).
    pub(super) fn stream<E: StreamEvent>(
        &self,
        events: EventStream<E>,
        request_id: Value,
        ids: (&str, &str),
        state: &str,
    ) -> Response {
        let events = translated::named(events);
        let first = (self.version == Version::V1_0)
            .then(|| json!({"id": ids.0, "contextId": ids.1, "kind": "task", "status": {"state": state}}));
        stream_response(self.state, events, request_id, ids, (self.version, first))
    }

    /// An SSE answer of `task` alone (a task that waits for its user has nothing to follow).
    pub(super) fn stream_of_task(&self, request_id: &Value, task: &Value) -> Response {
        let frame = frames::frame(self.version, request_id, "Task", task.clone());
        crate::sse::live(futures::stream::iter([frame]), DisconnectPolicy::KeepRunning, self.state.streaming())
    }

    /// The SSE answer of a background run's logged events (Agno's `event:` name and JSON data),
    /// after `task` (the task as it stood when the client subscribed).
    pub(super) fn follow(
        &self,
        frames: impl futures::Stream<Item = crate::sse::Frame> + Send + 'static,
        request_id: Value,
        task: Value,
    ) -> Response {
        let events = translated::logged(frames);
        let run_id = task.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
        let session_id = task.get("contextId").and_then(Value::as_str).unwrap_or_default().to_owned();
        stream_response(self.state, events, request_id, (&run_id, &session_id), (self.version, Some(task)))
    }
}

/// The task of a run that was awaited: the run as stored (a failed one `failed` with its
/// error), or a failed task naming the error when no run was stored.
pub(super) fn finished_task(
    result: Result<agno_core::RunOutput, agno_runtime::RunError>,
    run_id: &str,
    session_id: &str,
) -> Value {
    match result {
        Ok(run) => task::task_of(&run),
        Err(e) => match e.run() {
            Some(run) => task::task_of(run),
            None => {
                let message = task::agent_message(
                    &agno_core::new_id(),
                    vec![task::text_part(&format!("Error: {e}"))],
                    session_id,
                    run_id,
                    None,
                );
                task::task(run_id, session_id, "failed", None, vec![message], Vec::new())
            }
        },
    }
}

/// A2A's view of a run's events, with what its end needs: the database, to say what a paused
/// run waits for.
struct A2aStream {
    translator: frames::Translator,
    db: Option<std::sync::Arc<dyn agno_core::Db>>,
    run_id: String,
}

impl Translate for A2aStream {
    fn event(&mut self, name: &str, event: &Value) -> Vec<crate::sse::Frame> {
        self.translator.event(name, event).into_iter().collect()
    }

    async fn finish(self) -> Vec<crate::sse::Frame> {
        let paused = match (&self.db, self.translator.paused()) {
            (Some(db), true) => db.get_run(&self.run_id, None).await.ok().flatten(),
            _ => None,
        };
        self.translator.finish(paused.as_ref())
    }
}

/// An SSE response of a run's events (`(Agno name, JSON)`) as A2A frames (`ids`: the run's
/// and its session's) in `version`, after `first` (a task, v0.3's spelling) when given; the run
/// goes on when the client leaves.
fn stream_response(
    state: &AppState,
    events: impl futures::Stream<Item = (String, Value)> + Send + 'static,
    request_id: Value,
    (run_id, session_id): (&str, &str),
    (version, first): (Version, Option<Value>),
) -> Response {
    let first = first.map(|task| frames::frame(version, &request_id, "Task", task)).into_iter().collect();
    let translator = frames::Translator::new(request_id, run_id, session_id, version);
    let stream = A2aStream { translator, db: state.db.clone(), run_id: run_id.to_owned() };
    translated::respond(state, first, events, stream)
}
