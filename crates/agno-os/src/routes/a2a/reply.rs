//! How an A2A request about a run is answered: who asks what of which component ([`Target`]),
//! a run that was awaited as its task ([`finished_task`]), a run streamed as A2A frames
//! ([`stream_response`]). Shared by new messages and by answers to paused runs.

use agno_core::StreamEvent;
use agno_runtime::EventStream;
use axum::http::HeaderMap;
use axum::response::Response;
use futures::StreamExt;
use serde_json::Value;

use super::{frames, task};
use crate::auth::Principal;
use crate::sse::DisconnectPolicy;
use crate::state::AppState;

/// Who asks what of which component.
pub(super) struct Target<'a> {
    pub(super) state: &'a AppState,
    pub(super) principal: &'a Principal,
    pub(super) component_id: &'a str,
    pub(super) headers: &'a HeaderMap,
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

/// An SSE response of a run's events as A2A frames; the run goes on when the client leaves.
pub(super) fn stream_response<E: StreamEvent>(
    state: &AppState,
    events: EventStream<E>,
    request_id: Value,
    run_id: &str,
    session_id: &str,
) -> Response {
    enum Step<E> {
        Running(EventStream<E>, Box<frames::Translator>),
        Done,
    }
    let db = state.db.clone();
    let run_id = run_id.to_owned();
    let translator = Box::new(frames::Translator::new(request_id, &run_id, session_id));
    let frames = futures::stream::unfold(Step::Running(events, translator), move |step| {
        let db = db.clone();
        let run_id = run_id.clone();
        async move {
            let Step::Running(mut events, mut translator) = step else { return None };
            while let Some(event) = events.next().await {
                let value = serde_json::to_value(&event).unwrap_or_default();
                if let Some(frame) = translator.event(&event.stream_name(), &value) {
                    return Some((vec![frame], Step::Running(events, translator)));
                }
            }
            let paused = match (&db, translator.paused()) {
                (Some(db), true) => db.get_run(&run_id, None).await.ok().flatten(),
                _ => None,
            };
            Some((translator.finish(paused.as_ref()), Step::Done))
        }
    })
    .flat_map(futures::stream::iter);
    crate::sse::live(frames, DisconnectPolicy::KeepRunning, state.streaming())
}
