//! What every model wire format of the fake server shares: the order of work for one request
//! (validate, take the next scripted reply, wait, answer) and the pieces of answers (SSE bodies,
//! text split into small deltas). Each provider module implements [`Wire`].

use std::convert::Infallible;

use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::Value;

use crate::script::{Completion, EchoContext, Outcome, Shared, resolve};

/// Maximum characters of text per streamed content delta.
pub(crate) const TEXT_PIECE_CHARS: usize = 4;
/// Maximum characters of tool-call arguments per streamed delta.
pub(crate) const ARGS_PIECE_CHARS: usize = 5;

/// One provider's wire format.
pub(crate) trait Wire {
    /// The provider's refusal of a malformed request (status and message), if it is one.
    fn validate(&self, headers: &HeaderMap, body: &Value) -> Result<(), (u16, String)>;

    /// What `Reply::Echo` needs from the request.
    fn echo_context(&self, body: &Value) -> EchoContext;

    /// Whether the request asked for a streamed answer.
    fn is_stream(&self, body: &Value) -> bool;

    /// The provider's error answer.
    fn error(&self, status: u16, message: &str) -> Response;

    /// A completed answer (`n` numbers the reply, for ids), streamed or whole. A `cut`
    /// completion's stream stops before its end marker.
    fn completion(&self, n: u64, body: &Value, completion: &Completion, stream: bool) -> Response;

    /// A 200 answer whose body is `raw`; for a stream, `raw` as the data of one event (the
    /// provider may override the framing).
    fn garbage(&self, raw: &str, stream: bool) -> Response {
        if stream {
            sse_response(vec![format!("data: {raw}\n\n")])
        } else {
            ([(CONTENT_TYPE, "application/json")], raw.to_owned()).into_response()
        }
    }
}

/// Answers one model request in `wire`'s format (the request is already recorded).
pub(crate) async fn serve(shared: &Shared, wire: &impl Wire, headers: &HeaderMap, body: &Value) -> Response {
    let latency = shared.latency();
    if let Err((status, message)) = wire.validate(headers, body) {
        if !shared.sleep(latency).await {
            return shutting_down(wire);
        }
        return wire.error(status, &message);
    }
    let Some((n, reply)) = shared.next_reply() else {
        if !shared.sleep(latency).await {
            return shutting_down(wire);
        }
        return wire.error(500, "fake provider: no scripted reply left");
    };
    let (delay, outcome) = resolve(reply, &wire.echo_context(body));
    if !shared.sleep(latency.saturating_add(delay)).await {
        return shutting_down(wire);
    }
    let stream = wire.is_stream(body);
    match outcome {
        Outcome::Error { status, message, retry_after } => with_retry_after(wire.error(status, &message), retry_after),
        Outcome::Garbage(raw) => wire.garbage(&raw, stream),
        Outcome::Completion(completion) => wire.completion(n, body, &completion, stream),
    }
}

fn shutting_down(wire: &impl Wire) -> Response {
    wire.error(503, "fake provider: shutting down")
}

/// `response` with a `retry-after` header of `seconds`, when given.
pub(crate) fn with_retry_after(mut response: Response, seconds: Option<u64>) -> Response {
    if let Some(secs) = seconds {
        response.headers_mut().insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

/// A JSON error answer with `status`.
pub(crate) fn json_error(status: u16, body: Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(body)).into_response()
}

/// An SSE (or NDJSON, with `content_type`) body of already framed events.
pub(crate) fn stream_response(content_type: &'static str, events: Vec<String>) -> Response {
    let stream = futures::stream::iter(events.into_iter().map(|e| Ok::<Bytes, Infallible>(Bytes::from(e))));
    ([(CONTENT_TYPE, content_type), (CACHE_CONTROL, "no-cache")], Body::from_stream(stream)).into_response()
}

/// An SSE body of already framed events.
pub(crate) fn sse_response(events: Vec<String>) -> Response {
    stream_response("text/event-stream", events)
}

/// A named SSE event: `event: <name>` and `data: <json>`.
pub(crate) fn named_event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// The events of a stream that is `cut`: the first half, so the end marker never comes.
pub(crate) fn maybe_cut<T>(mut events: Vec<T>, cut: bool) -> Vec<T> {
    if cut {
        events.truncate(events.len() / 2);
    }
    events
}

/// A whole JSON answer; a `cut` one stops halfway through its text.
pub(crate) fn json_answer(value: &Value, cut: bool) -> Response {
    if cut {
        let text = value.to_string();
        let half: String = text.chars().take(text.chars().count() / 2).collect();
        return ([(CONTENT_TYPE, "application/json")], half).into_response();
    }
    axum::Json(value.clone()).into_response()
}

/// Split `s` into pieces of at most `max` characters, on char boundaries.
pub(crate) fn split_chars(s: &str, max: usize) -> Vec<&str> {
    let max = max.max(1);
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut count = 0;
    for (i, _) in s.char_indices() {
        if count == max {
            pieces.push(&s[start..i]);
            start = i;
            count = 0;
        }
        count += 1;
    }
    if start < s.len() {
        pieces.push(&s[start..]);
    }
    pieces
}

/// Deterministic token counts: characters / 4, at least 1, for a prompt of `prompt_chars`
/// characters and this completion.
pub(crate) fn token_counts(prompt_chars: usize, completion: &Completion) -> (u64, u64) {
    let completion_chars = completion.content.as_deref().map_or(0, |c| c.chars().count())
        + completion.reasoning.as_deref().map_or(0, |c| c.chars().count())
        + completion.calls.iter().map(|(_, args)| args.chars().count()).sum::<usize>();
    ((prompt_chars / 4).max(1) as u64, (completion_chars / 4).max(1) as u64)
}
