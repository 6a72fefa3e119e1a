//! How an A2A request about a run is answered: who asks what of which component ([`Target`]),
//! a run that was awaited as its task ([`finished_task`]), a run streamed as A2A frames
//! ([`stream_response`]). Shared by new messages and by answers to paused runs.

use agno_core::StreamEvent;
use agno_runtime::EventStream;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Value, json};

use super::jsonrpc::{Version, result_response};
use super::{frames, task, v1};
use crate::auth::Principal;
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
        let events = events.map(|e| (e.stream_name().into_owned(), serde_json::to_value(&e).unwrap_or_default()));
        let first = (self.version == Version::V1_0)
            .then(|| json!({"id": ids.0, "contextId": ids.1, "kind": "task", "status": {"state": state}}));
        stream_response(self.state, events, request_id, ids, (self.version, first))
    }

    /// An SSE answer of `task` alone (a task that waits for its user has nothing to follow).
    pub(super) fn stream_of_task(&self, request_id: &Value, task: &Value) -> Response {
        let frame = task_frame(self.version, request_id, task);
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
        let events = frames.filter_map(|frame| async move {
            let (name, data) = frame.name_and_data();
            Some((name?, serde_json::from_str::<Value>(&data).ok()?))
        });
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

/// A stream frame carrying `task` (v0.3's spelling) in `version`.
fn task_frame(version: Version, request_id: &Value, task: &Value) -> crate::sse::Frame {
    match version {
        Version::V1_0 => crate::sse::Frame::data(&super::jsonrpc::envelope(request_id, v1::one_of(task)).to_string()),
        Version::V0_3 => crate::sse::Frame::json("Task", &super::jsonrpc::envelope(request_id, task.clone()), None),
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
    let db = state.db.clone();
    let run_id = run_id.to_owned();
    let first = first.map(|task| task_frame(version, &request_id, &task));
    let translator = Box::new(frames::Translator::new(request_id, &run_id, session_id, version));
    let events = Box::pin(events);
    let frames = futures::stream::unfold(Some((events, translator)), move |step| {
        let db = db.clone();
        let run_id = run_id.clone();
        async move {
            let (mut events, mut translator) = step?;
            while let Some((name, value)) = events.next().await {
                if let Some(frame) = translator.event(&name, &value) {
                    return Some((vec![frame], Some((events, translator))));
                }
            }
            let paused = match (&db, translator.paused()) {
                (Some(db), true) => db.get_run(&run_id, None).await.ok().flatten(),
                _ => None,
            };
            Some((translator.finish(paused.as_ref()), None))
        }
    })
    .flat_map(futures::stream::iter);
    let frames = futures::stream::iter(first).chain(frames);
    crate::sse::live(frames, DisconnectPolicy::KeepRunning, state.streaming())
}
