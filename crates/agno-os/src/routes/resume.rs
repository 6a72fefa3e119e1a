//! `POST /{agents|teams|workflows}/{id}/runs/{run_id}/resume`, written once for the three kinds:
//! re-attach to a run's events after the last one the client received. A background run's
//! logged events are replayed and its live ones followed until it ends, from any replica; a run
//! executed inline replays the events stored with it (as Agno replays from the run's row).

use crate::routes::guard::Caller;
use agno_core::RunOutput;
use axum::extract::{Path, Request};
use axum::response::Response;
use serde_json::json;

use super::component::{Kind, runnable};
use super::run_form::fields;
use super::run_records::stored_run;
use crate::error::{ApiError, ApiResult};
use crate::form::Form;
use crate::routes::FormField;
use crate::sse::Frame;
use crate::state::AppState;

/// The form of `POST .../runs/{run_id}/resume`, for every kind.
pub const RESUME_FORM: &[FormField] = &[
    FormField::optional("last_event_index", "integer", "Replay after this event_index (or the Last-Event-ID header)."),
    fields::RUN_SESSION,
];

/// `POST /{kind}s/{id}/runs/{run_id}/resume`: form `last_event_index` (or the `Last-Event-ID`
/// header) and `session_id`. A background run replays its logged events after that index and
/// follows live ones until it ends; a finished one replays and closes. A run executed inline
/// replays the events stored with it (`store_events`) after a first `replay` event that says how
/// many follow. An unknown run (or another user's) answers 404.
pub async fn resume_run<K: Kind>(
    Caller { state, principal }: Caller,
    Path((id, run_id)): Path<(String, String)>,
    request: Request,
) -> ApiResult<Response> {
    runnable::<K>(&state, &principal, &id)?;
    // Only this header is kept, as a string of its own: a copy of the header map would keep the
    // connection's read buffer (which its values share) alive while the request waits below,
    // and hyper would reserve a second one to watch the connection.
    let last_event_id = request.headers().get("last-event-id").map(|v| v.to_str().map(|s| s.trim().to_owned()));
    let form = Form::read(request, &state.limits).await?;
    let after = resume_index(&form, last_event_id)?;
    let session_id = form.text("session_id").filter(|s| !s.is_empty());
    let run = stored_run::<K>(&state, &principal, &id, &run_id, session_id).await?;
    if let Some(queue) = super::background::queue_holding(&state, &run_id).await? {
        return super::background::tail_response(&state, queue, run_id, after);
    }
    Ok(replay_stored(&state, &run, after))
}

/// The events stored with an inline run after index `after`, behind a `replay` event that says
/// how many follow (none: read the run instead), then the end of the stream.
fn replay_stored(state: &AppState, run: &RunOutput, after: i64) -> Response {
    let events: Vec<Frame> = run
        .events
        .iter()
        .flatten()
        .filter(|e| e.event_index.is_some_and(|i| i64::try_from(i).is_ok_and(|i| i > after)))
        .map(crate::sse::frame)
        .collect();
    let meta = json!({
        "event": "replay",
        "run_id": run.id(),
        "status": run.status.as_str(),
        "total_events": events.len(),
        "message": if events.is_empty() {
            "This run was not run in the background and stored no events: poll the run endpoint for its result."
        } else {
            "Replaying the events stored with the run."
        },
    });
    let first = Frame::new("replay", &meta.to_string(), None);
    crate::sse::replay(futures::stream::iter(std::iter::once(first).chain(events)), state.streaming())
}

/// The index after which a resume starts: the form's `last_event_index`, else the standard
/// `Last-Event-ID` header, else -1 (everything). Negative or non-numeric values are refused.
fn resume_index(form: &Form, last_event_id: Option<Result<String, axum::http::header::ToStrError>>) -> ApiResult<i64> {
    let (text, what) = match form.text("last_event_index").filter(|t| !t.trim().is_empty()) {
        Some(t) => (t.trim().to_owned(), "last_event_index"),
        None => match last_event_id {
            Some(v) => {
                (v.map_err(|_| ApiError::unprocessable("Last-Event-ID must be an event index"))?, "Last-Event-ID")
            }
            None => return Ok(-1),
        },
    };
    match text.parse::<i64>() {
        Ok(i) if i >= 0 => Ok(i),
        Ok(_) => Err(ApiError::unprocessable(format!("{what} must be 0 or more (the last event_index you received)"))),
        Err(_) => Err(ApiError::unprocessable(format!("{what} must be an integer event_index, got {text:?}"))),
    }
}
