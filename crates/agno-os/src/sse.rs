//! Run events as Server-Sent Events, framed as Agno frames them: `event: <Name>` and
//! `data: <compact JSON>` carrying `event_index` and `run_id`, plus `id: <event_index>` so a
//! client can resume. A comment heartbeat (every 15 s by default) keeps proxies from closing an idle stream;
//! `Cache-Control: no-cache` and `X-Accel-Buffering: no` stop buffering.

use std::convert::Infallible;
use std::task::Poll;
use std::time::Duration;

use agno_core::RunEvent;
use agno_runtime::{Agent, RunStream};
use axum::http::HeaderValue;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};

/// What happens to the run when the client goes away.
#[derive(Debug, Clone)]
pub enum DisconnectPolicy {
    /// The run finishes and is stored (the default).
    KeepRunning,
    /// The run is cancelled.
    Cancel(String),
}

/// Applies a [`DisconnectPolicy`] when dropped before [`DisconnectGuard::finish`]: the request
/// carrying the run went away before the run's end reached the client.
#[derive(Debug)]
pub(crate) struct DisconnectGuard {
    policy: DisconnectPolicy,
    finished: bool,
}

impl DisconnectGuard {
    pub(crate) fn new(policy: DisconnectPolicy) -> Self {
        Self { policy, finished: false }
    }

    /// The run's end reached the client: nothing to do on drop.
    pub(crate) fn finish(&mut self) {
        self.finished = true;
    }
}

impl Drop for DisconnectGuard {
    fn drop(&mut self) {
        if let (DisconnectPolicy::Cancel(run_id), false) = (&self.policy, self.finished) {
            tracing::info!(%run_id, "client went away: cancelling the run as asked");
            Agent::cancel_run(run_id);
        }
    }
}

/// One event as an SSE frame.
pub fn frame(event: &RunEvent) -> Event {
    let data = serde_json::to_value(event).unwrap_or_default();
    let name = data.get("event").and_then(|v| v.as_str()).unwrap_or("message").to_owned();
    let mut frame = Event::default().event(name).data(data.to_string());
    if let Some(i) = event.event_index {
        frame = frame.id(i.to_string());
    }
    frame
}

/// An SSE response streaming a run's events.
pub fn run_events(stream: RunStream, policy: DisconnectPolicy, heartbeat: Duration) -> Response {
    let mut guard = DisconnectGuard::new(policy);
    let mut stream = Box::pin(stream);
    let events = futures::stream::poll_fn(move |cx| {
        // The whole guard lives in this closure: dropping the response drops it.
        let guard = &mut guard;
        match stream.as_mut().poll_next(cx) {
            Poll::Ready(Some(ev)) => Poll::Ready(Some(Ok::<_, Infallible>(frame(&ev)))),
            Poll::Ready(None) => {
                guard.finish();
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    });
    sse_response(events, heartbeat)
}

/// Wraps frames in an SSE response with the heartbeat and anti-buffering headers.
pub fn sse_response(
    events: impl Stream<Item = Result<Event, Infallible>> + Send + 'static,
    heartbeat: Duration,
) -> Response {
    let mut resp =
        Sse::new(events.boxed()).keep_alive(KeepAlive::new().interval(heartbeat).text("heartbeat")).into_response();
    let headers = resp.headers_mut();
    headers.insert("content-type", HeaderValue::from_static("text/event-stream; charset=utf-8"));
    headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}
