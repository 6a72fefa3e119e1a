//! Run events as Server-Sent Events, framed as Agno frames them: `event: <Name>` and
//! `data: <compact JSON>` carrying `event_index` and `run_id`, plus `id: <event_index>` so a
//! client can resume. A comment heartbeat (every 15 s by default) keeps proxies from closing an
//! idle stream; `Cache-Control: no-cache` and `X-Accel-Buffering: no` stop buffering.
//!
//! Every stream the OS sends (agents, teams, workflows, tails of background runs, replays) goes
//! through [`respond`]: a task of its own drains the events into a buffer of encoded frames that
//! the response body sends as the client reads, and that buffer is bounded
//! ([`Streaming::buffer_bytes`], `[os] sse_buffer_bytes`):
//! - a **live** run ([`Overflow::Cut`]) is never slowed by its client: when a client stops
//!   reading and the buffer is full, the stream is cut (the buffer freed, the connection closed,
//!   a log line written) and the run goes on and is stored, as for a client that left;
//! - a **replay** of stored events ([`Overflow::Wait`]) reads no further ahead than the buffer.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agno_core::StreamEvent;
use agno_runtime::{Agent, EventStream};
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use futures::{Stream, StreamExt};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// What happens to the run when the client goes away.
#[derive(Debug, Clone)]
pub enum DisconnectPolicy {
    /// The run finishes and is stored (the default).
    KeepRunning,
    /// The run is cancelled.
    Cancel(String),
}

/// Applies a [`DisconnectPolicy`] when dropped before [`DisconnectGuard::finish`]: the request
/// carrying the run went away (or stopped reading) before the run's end reached the client.
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

/// One encoded SSE frame.
#[derive(Debug, Clone)]
pub struct Frame(Bytes);

impl Frame {
    /// `event: <name>`, `data: <data>` (one `data:` line per line of `data`), and `id: <id>`.
    pub fn new(name: &str, data: &str, id: Option<u64>) -> Self {
        let mut out = String::with_capacity(name.len() + data.len() + 32);
        out.push_str("event: ");
        out.push_str(name.lines().next().unwrap_or("message"));
        out.push('\n');
        for line in data.split('\n') {
            out.push_str("data: ");
            out.push_str(line.strip_suffix('\r').unwrap_or(line));
            out.push('\n');
        }
        if let Some(id) = id {
            out.push_str("id: ");
            out.push_str(&id.to_string());
            out.push('\n');
        }
        out.push('\n');
        Self(Bytes::from(out))
    }

    /// A frame of `data` alone (no `event:` name, no `id:`), as AG-UI's encoder writes one.
    pub fn data(data: &str) -> Self {
        let mut out = String::with_capacity(data.len() + 8);
        for line in data.split('\n') {
            out.push_str("data: ");
            out.push_str(line.strip_suffix('\r').unwrap_or(line));
            out.push('\n');
        }
        out.push('\n');
        Self(Bytes::from(out))
    }

    /// A JSON-serialisable event named `name`.
    pub fn json<T: serde::Serialize>(name: &str, event: &T, id: Option<u64>) -> Self {
        Self::new(name, &serde_json::to_string(event).unwrap_or_default(), id)
    }

    fn heartbeat() -> Self {
        Self(Bytes::from_static(b": heartbeat\n\n"))
    }

    /// Its `event:` name and its data (the `data:` lines joined), read back from its bytes.
    pub fn name_and_data(&self) -> (Option<String>, String) {
        let text = String::from_utf8_lossy(&self.0);
        let mut name = None;
        let mut data: Vec<&str> = Vec::new();
        for line in text.lines() {
            if let Some(value) = line.strip_prefix("event: ") {
                name = Some(value.to_owned());
            } else if let Some(value) = line.strip_prefix("data: ") {
                data.push(value);
            }
        }
        (name, data.join("\n"))
    }

    /// Its size, in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True for a frame of no bytes (never built).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The encoded bytes.
    pub fn bytes(&self) -> &Bytes {
        &self.0
    }
}

/// One event of a run (of any component) as a frame: `event:` its Agno name, `id:` its index.
pub fn frame<E: StreamEvent>(event: &E) -> Frame {
    Frame::json(&event.stream_name(), event, event.stream_index())
}

/// How streams are sent (`[os] sse_heartbeat_seconds`, `sse_buffer_bytes`).
#[derive(Debug, Clone, Copy)]
pub struct Streaming {
    /// Interval of heartbeat comments on an idle stream.
    pub heartbeat: Duration,
    /// Most bytes of frames waiting for a client.
    pub buffer_bytes: usize,
}

/// What a full buffer does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// Cut the stream (a live run never waits for its client).
    Cut,
    /// Wait until the client reads (a replay of stored events).
    Wait,
}

/// Tells the server to close the connection carrying a response (a stream cut for a client
/// that does not read: nothing else would end it). Found in the response's extensions by
/// [`crate::serve`].
#[derive(Debug, Clone)]
pub struct AbortConnection(pub CancellationToken);

/// An SSE response of a run's events (an agent's, a team's or a workflow's); the run goes on when
/// the client leaves (or is cut) unless `policy` says otherwise.
pub fn run_events<E: StreamEvent>(stream: EventStream<E>, policy: DisconnectPolicy, streaming: Streaming) -> Response {
    live(stream.map(|e| frame(&e)), policy, streaming)
}

/// An SSE response of a live run's frames: cut when the client does not keep up.
pub fn live(
    frames: impl Stream<Item = Frame> + Send + 'static,
    policy: DisconnectPolicy,
    streaming: Streaming,
) -> Response {
    respond(frames, streaming, Overflow::Cut, DisconnectGuard::new(policy))
}

/// An SSE response of stored frames (a tail, a replay): read only as fast as the client reads.
pub fn replay(frames: impl Stream<Item = Frame> + Send + 'static, streaming: Streaming) -> Response {
    respond(frames, streaming, Overflow::Wait, DisconnectGuard::new(DisconnectPolicy::KeepRunning))
}

/// The buffer between the task draining the events and the response body.
#[derive(Debug, Default)]
struct Buffer {
    frames: VecDeque<Bytes>,
    bytes: usize,
    /// The events ended: the body ends once the frames are sent.
    done: bool,
    /// The stream was cut: the body fails (the connection closes) instead of ending.
    cut: bool,
}

#[derive(Debug, Default)]
struct Shared {
    buffer: Mutex<Buffer>,
    /// A frame was queued (or the stream ended): for the body.
    readable: Notify,
    /// A frame was sent: for the draining task.
    writable: Notify,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Buffer> {
        self.buffer.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Why the stream was cut (the body's error, which closes the connection).
#[derive(Debug, thiserror::Error)]
#[error("the stream was cut: the client did not read {0} bytes of events ([os] sse_buffer_bytes)")]
struct Cut(usize);

/// Cancels a token when dropped (the response body is gone: the client left).
struct CancelOnDrop(CancellationToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

fn respond(
    frames: impl Stream<Item = Frame> + Send + 'static,
    streaming: Streaming,
    overflow: Overflow,
    mut guard: DisconnectGuard,
) -> Response {
    let shared = Arc::new(Shared::default());
    let gone = CancellationToken::new();
    let abort = CancellationToken::new();
    let budget = streaming.buffer_bytes.max(1);
    {
        let (shared, gone, abort) = (shared.clone(), gone.clone(), abort.clone());
        tokio::spawn(async move {
            let mut frames = std::pin::pin!(frames);
            let mut quiet_since = tokio::time::Instant::now();
            loop {
                let next = tokio::select! {
                    next = frames.next() => next,
                    () = gone.cancelled() => return,
                    () = tokio::time::sleep_until(quiet_since + streaming.heartbeat) => {
                        let mut buffer = shared.lock();
                        if buffer.frames.is_empty() {
                            buffer.frames.push_back(Frame::heartbeat().0);
                            drop(buffer);
                            shared.readable.notify_one();
                        }
                        quiet_since = tokio::time::Instant::now();
                        continue;
                    }
                };
                let Some(frame) = next else {
                    guard.finish();
                    shared.lock().done = true;
                    shared.readable.notify_one();
                    return;
                };
                quiet_since = tokio::time::Instant::now();
                // A frame larger than the whole buffer is sent when the buffer is empty.
                let room = |b: &Buffer| b.frames.is_empty() || b.bytes + frame.len() <= budget;
                loop {
                    let writable = shared.writable.notified();
                    {
                        let mut buffer = shared.lock();
                        if room(&buffer) {
                            buffer.bytes += frame.len();
                            buffer.frames.push_back(frame.0);
                            break;
                        }
                        if overflow == Overflow::Cut {
                            tracing::warn!(
                                buffered_bytes = buffer.bytes,
                                limit = budget,
                                "a client is not reading its stream: cutting it (the run goes on and is stored; \
                                 [os] sse_buffer_bytes sets the limit)"
                            );
                            *buffer = Buffer { cut: true, ..Buffer::default() };
                            drop(buffer);
                            shared.readable.notify_one();
                            abort.cancel();
                            return;
                        }
                    }
                    tokio::select! {
                        () = writable => {}
                        () = gone.cancelled() => return,
                    }
                }
                shared.readable.notify_one();
            }
        });
    }
    let state = (shared, CancelOnDrop(gone), false);
    let body = futures::stream::unfold(state, move |(shared, gone, failed)| async move {
        if failed {
            return None;
        }
        loop {
            let waker = shared.clone();
            let readable = waker.readable.notified();
            {
                let mut buffer = shared.lock();
                if let Some(bytes) = buffer.frames.pop_front() {
                    buffer.bytes = buffer.bytes.saturating_sub(bytes.len());
                    drop(buffer);
                    shared.writable.notify_one();
                    return Some((Ok(bytes), (shared, gone, false)));
                }
                if buffer.cut {
                    drop(buffer);
                    return Some((Err(Cut(budget)), (shared, gone, true)));
                }
                if buffer.done {
                    return None;
                }
            }
            readable.await;
        }
    });
    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response.extensions_mut().insert(AbortConnection(abort));
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_encoded_as_agno_sends_them() {
        let f = Frame::new("RunContent", r#"{"content":"a"}"#, Some(3));
        assert_eq!(f.bytes().as_ref(), b"event: RunContent\ndata: {\"content\":\"a\"}\nid: 3\n\n");
        let multi = Frame::new("x", "a\nb", None);
        assert_eq!(multi.bytes().as_ref(), b"event: x\ndata: a\ndata: b\n\n");
    }

    fn streaming(buffer_bytes: usize) -> Streaming {
        Streaming { heartbeat: Duration::from_secs(60), buffer_bytes }
    }

    #[tokio::test]
    async fn a_client_that_does_not_read_is_cut_at_the_buffer_size() {
        let produced = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = produced.clone();
        let frames = futures::stream::iter(0..10_000u64).map(move |i| {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Frame::new("RunContent", &"x".repeat(1000), Some(i))
        });
        let response = live(frames, DisconnectPolicy::KeepRunning, streaming(64 * 1024));
        let abort = response.extensions().get::<AbortConnection>().cloned().expect("abort token");
        // Nobody reads: the stream is cut once 64 KiB wait, and the connection is told to close.
        tokio::time::timeout(Duration::from_secs(10), abort.0.cancelled()).await.expect("cut");
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await;
        assert!(body.is_err(), "a cut stream ends with an error, not a clean end");
    }

    #[tokio::test]
    async fn a_replay_waits_for_its_client_and_sends_everything() {
        let frames = futures::stream::iter(0..2_000u64).map(|i| Frame::new("E", &"y".repeat(500), Some(i)));
        let response = replay(frames, streaming(16 * 1024));
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("whole body");
        let text = String::from_utf8_lossy(&body);
        assert_eq!(text.matches("event: E").count(), 2_000);
    }
}
