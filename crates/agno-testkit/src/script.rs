//! Provider-neutral scripting and state: the [`Reply`] script, recorded requests, and the shared state the server reads.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;

/// One scripted answer of the fake provider.
///
/// Each chat-completion request consumes one reply from the FIFO script (or uses the fallback
/// when the script is empty). The reply is rendered in the wire format of the endpoint that
/// received the request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Assistant text.
    Text(String),
    /// Tool calls (parallel when more than one), optional text before them. Each: (function name,
    /// raw arguments string — may be invalid JSON on purpose).
    ToolCalls {
        /// Optional assistant text sent before the tool calls.
        content: Option<String>,
        /// `(function name, raw arguments string)` for each call, in order.
        calls: Vec<(String, String)>,
    },
    /// An HTTP error: status, the provider's error body, optional `retry-after` header in seconds.
    Error {
        /// HTTP status code (invalid codes are answered as 500).
        status: u16,
        /// Human-readable error message placed in the error body.
        message: String,
        /// Value of the `retry-after` header, in seconds, if any.
        retry_after: Option<u64>,
    },
    /// A 200 response whose body is this raw text (e.g. `"not json{"`), both for streaming and
    /// non-streaming requests (for streaming it is sent as a single `data: <raw>` SSE event, then
    /// the stream stops without `[DONE]`).
    Garbage(String),
    /// Delay then this reply (per-reply latency, on top of the global one).
    Delayed(Duration, Box<Reply>),
    /// Echo: answer with text `"echo: <content of the last user message>"`; when the request has
    /// tools and the last message is a user message, instead call the first tool with arguments
    /// `"{}"`. Useful as a fallback in benchmarks.
    Echo,
    /// This reasoning (the provider's thinking / reasoning content) before the inner answer.
    Reasoning(String, Box<Reply>),
    /// The inner answer, but its stream stops halfway, before the provider's end marker (a
    /// whole answer is cut halfway through its JSON).
    Cut(Box<Reply>),
    /// The provider refuses to answer for safety reasons (OpenAI `content_filter`, Anthropic
    /// `refusal`, Gemini `SAFETY`), with this reason.
    Filtered(String),
}

impl Reply {
    /// A plain assistant text reply.
    pub fn text(s: impl Into<String>) -> Self {
        Self::Text(s.into())
    }

    /// A reply consisting of a single tool call with the given raw arguments string.
    pub fn tool_call(name: impl Into<String>, args: impl Into<String>) -> Self {
        Self::ToolCalls { content: None, calls: vec![(name.into(), args.into())] }
    }
}

/// A request received by the fake provider, recorded in arrival order.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// Request path, without the query string (e.g. `/v1/chat/completions`).
    pub path: String,
    /// Request headers in arrival order; names are lower-case.
    pub headers: Vec<(String, String)>,
    /// The parsed JSON body, or [`Value::Null`] if the body was not JSON.
    pub body: Value,
    /// The query string, without `?` (empty when there is none).
    pub query: String,
}

impl RecordedRequest {
    /// The value of the first header called `name` (case-insensitive), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Whether the request asked for a streamed answer (`"stream": true` in the body).
    pub fn is_stream(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
    }
}

/// What a reply resolves to once delays are stripped and `Echo` is evaluated.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// A successful assistant turn.
    Completion(Completion),
    /// An HTTP error answer.
    Error { status: u16, message: String, retry_after: Option<u64> },
    /// A 200 answer with a raw, probably broken, body.
    Garbage(String),
}

/// A provider-neutral assistant turn: optional text and tool calls.
#[derive(Debug, Clone, Default)]
pub(crate) struct Completion {
    /// Assistant text; `None` means no text (e.g. JSON `null` content).
    pub(crate) content: Option<String>,
    /// `(function name, raw arguments)` for each tool call.
    pub(crate) calls: Vec<(String, String)>,
    /// Reasoning before the answer.
    pub(crate) reasoning: Option<String>,
    /// The stream (or body) stops halfway.
    pub(crate) cut: bool,
    /// The answer was withheld for safety reasons: the reason.
    pub(crate) filtered: Option<String>,
}

/// What the `Echo` reply needs to know about a request, extracted by the wire-format module.
#[derive(Debug, Clone, Default)]
pub(crate) struct EchoContext {
    /// Text of the last user message ("" if none).
    pub(crate) last_user_text: String,
    /// Name of the first tool, set only when the request has tools and its last message is a
    /// user message.
    pub(crate) tool_to_call: Option<String>,
}

/// Strip `Delayed`, `Reasoning` and `Cut` layers (summing delays, keeping the reasoning and the
/// cut for the completion) and evaluate `Echo`.
pub(crate) fn resolve(reply: Reply, echo: &EchoContext) -> (Duration, Outcome) {
    let mut delay = Duration::ZERO;
    let mut reasoning = None;
    let mut cut = false;
    let mut reply = reply;
    let completion = loop {
        match reply {
            Reply::Delayed(d, inner) => {
                delay = delay.saturating_add(d);
                reply = *inner;
            }
            Reply::Reasoning(text, inner) => {
                reasoning = Some(text);
                reply = *inner;
            }
            Reply::Cut(inner) => {
                cut = true;
                reply = *inner;
            }
            Reply::Text(text) => break Completion { content: Some(text), ..Completion::default() },
            Reply::ToolCalls { content, calls } => break Completion { content, calls, ..Completion::default() },
            Reply::Filtered(reason) => break Completion { filtered: Some(reason), ..Completion::default() },
            Reply::Error { status, message, retry_after } => {
                return (delay, Outcome::Error { status, message, retry_after });
            }
            Reply::Garbage(raw) => return (delay, Outcome::Garbage(raw)),
            Reply::Echo => {
                break match &echo.tool_to_call {
                    Some(name) => Completion { calls: vec![(name.clone(), "{}".to_owned())], ..Completion::default() },
                    None => {
                        Completion { content: Some(format!("echo: {}", echo.last_user_text)), ..Completion::default() }
                    }
                };
            }
        }
    };
    (delay, Outcome::Completion(Completion { reasoning, cut, ..completion }))
}

/// Mutable state behind the lock.
#[derive(Debug, Default)]
struct State {
    script: VecDeque<Reply>,
    fallback: Option<Reply>,
    latency: Duration,
    embedding_latency: Duration,
    requests: Vec<RecordedRequest>,
    /// Number of replies handed out so far (used for response ids).
    served: u64,
}

/// State shared between the [`crate::FakeProvider`] handles and the server task.
#[derive(Debug)]
pub(crate) struct Shared {
    state: Mutex<State>,
    shutdown: watch::Sender<bool>,
    /// The fake Slack workspace's messages.
    pub(crate) slack: crate::slack::Workspace,
}

impl Default for Shared {
    fn default() -> Self {
        Self {
            state: Mutex::new(State::default()),
            shutdown: watch::Sender::new(false),
            slack: crate::slack::Workspace::default(),
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn push(&self, reply: Reply) {
        self.lock().script.push_back(reply);
    }

    pub(crate) fn push_all(&self, replies: impl IntoIterator<Item = Reply>) {
        self.lock().script.extend(replies);
    }

    pub(crate) fn set_fallback(&self, reply: Option<Reply>) {
        self.lock().fallback = reply;
    }

    pub(crate) fn set_latency(&self, latency: Duration) {
        self.lock().latency = latency;
    }

    pub(crate) fn latency(&self) -> Duration {
        self.lock().latency
    }

    pub(crate) fn set_embedding_latency(&self, latency: Duration) {
        self.lock().embedding_latency = latency;
    }

    pub(crate) fn embedding_latency(&self) -> Duration {
        self.lock().embedding_latency
    }

    pub(crate) fn record(&self, request: RecordedRequest) {
        self.lock().requests.push(request);
    }

    pub(crate) fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    pub(crate) fn request_count(&self) -> usize {
        self.lock().requests.len()
    }

    /// Take the next scripted reply (or a clone of the fallback) with its 1-based sequence
    /// number; `None` when the script is empty and there is no fallback.
    pub(crate) fn next_reply(&self) -> Option<(u64, Reply)> {
        let mut state = self.lock();
        let reply = match state.script.pop_front() {
            Some(reply) => reply,
            None => state.fallback.clone()?,
        };
        state.served += 1;
        Some((state.served, reply))
    }

    /// Ask the server (and any pending delays) to stop.
    pub(crate) fn shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// Completes once shutdown has been requested.
    pub(crate) async fn shutdown_requested(&self) {
        let mut rx = self.shutdown.subscribe();
        // `wait_for` only fails when the sender is gone, which also means shutdown.
        let _ = rx.wait_for(|stop| *stop).await;
    }

    /// Sleep for `delay`; returns `false` if shutdown was requested meanwhile.
    pub(crate) async fn sleep(&self, delay: Duration) -> bool {
        if delay.is_zero() {
            return true;
        }
        tokio::select! {
            () = tokio::time::sleep(delay) => true,
            () = self.shutdown_requested() => false,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn fifo_then_fallback() {
        let shared = Shared::default();
        shared.push(Reply::text("a"));
        shared.push_all([Reply::text("b")]);
        assert!(matches!(shared.next_reply(), Some((1, Reply::Text(t))) if t == "a"));
        assert!(matches!(shared.next_reply(), Some((2, Reply::Text(t))) if t == "b"));
        assert!(shared.next_reply().is_none());
        shared.set_fallback(Some(Reply::Echo));
        assert!(matches!(shared.next_reply(), Some((3, Reply::Echo))));
        assert!(matches!(shared.next_reply(), Some((4, Reply::Echo))));
    }

    #[test]
    fn resolve_sums_delays_and_echoes() {
        let reply = Reply::Delayed(
            Duration::from_millis(5),
            Box::new(Reply::Delayed(Duration::from_millis(7), Box::new(Reply::Echo))),
        );
        let echo = EchoContext { last_user_text: "hi".into(), tool_to_call: None };
        let (delay, outcome) = resolve(reply, &echo);
        assert_eq!(delay, Duration::from_millis(12));
        match outcome {
            Outcome::Completion(c) => assert_eq!(c.content.as_deref(), Some("echo: hi")),
            other => panic!("unexpected {other:?}"),
        }
        let echo = EchoContext { last_user_text: "hi".into(), tool_to_call: Some("search".into()) };
        match resolve(Reply::Echo, &echo).1 {
            Outcome::Completion(c) => {
                assert_eq!(c.content, None);
                assert_eq!(c.calls, vec![("search".to_owned(), "{}".to_owned())]);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn header_lookup_is_case_insensitive() {
        let req = RecordedRequest {
            path: "/v1/chat/completions".into(),
            headers: vec![("authorization".into(), "Bearer x".into())],
            body: serde_json::json!({"stream": true}),
            query: String::new(),
        };
        assert_eq!(req.header("Authorization"), Some("Bearer x"));
        assert!(req.is_stream());
    }
}
