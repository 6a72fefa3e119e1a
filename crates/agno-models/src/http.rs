//! What every provider's HTTP call shares: connection settings, the retry loop (429, 5xx and
//! connection failures, with exponential backoff and full jitter, honouring `retry-after` /
//! `retry-after-ms`), and turning a refusal into a [`ModelError`] whose kind a caller can match
//! on (rate limit, auth, model not found, context too long, content filtered, ...).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use agno_core::{ModelError, ModelErrorKind};
use reqwest::header::HeaderMap;
use serde_json::Value;

/// Retry settings for model calls.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Delay before the first retry; doubles each time.
    pub base_delay: Duration,
    /// Upper bound of one delay (also caps `retry-after`).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_retries: 3, base_delay: Duration::from_millis(500), max_delay: Duration::from_secs(30) }
    }
}

impl RetryPolicy {
    /// No retries.
    pub fn none() -> Self {
        Self { max_retries: 0, ..Self::default() }
    }

    /// The delay before retry number `attempt` (0-based): the provider's hint when given,
    /// otherwise exponential backoff with full jitter.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(hint) = retry_after {
            return hint.min(self.max_delay);
        }
        let exp = self.base_delay.saturating_mul(2u32.saturating_pow(attempt.min(16)));
        let capped = exp.min(self.max_delay);
        // Full jitter: uniformly in [capped/2, capped].
        let half = capped / 2;
        half + half.mul_f64(fastrand::f64())
    }
}

/// How a retry waits: `tokio::time::sleep` unless a test (or a simulation) supplies its own
/// clock, which then sees every delay the retry loop asks for.
#[derive(Clone, Default)]
pub struct Sleeper(Option<Arc<SleepFn>>);

/// A sleep: the future that waits for a duration.
pub(crate) type SleepFn = dyn Fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync;

impl fmt::Debug for Sleeper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "Sleeper(custom)" } else { "Sleeper(tokio)" })
    }
}

impl Sleeper {
    /// Waits with `sleep` instead of the tokio timer.
    pub fn new(sleep: impl Fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(sleep)))
    }

    async fn sleep(&self, delay: Duration) {
        match &self.0 {
            Some(sleep) => sleep(delay).await,
            None => tokio::time::sleep(delay).await,
        }
    }
}

/// Where and how to reach a provider.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Base URL (for OpenAI-compatible servers including the version path, e.g.
    /// `https://api.openai.com/v1`).
    pub base_url: String,
    /// API key; `None` for servers that need none. Each provider sends it its own way.
    pub api_key: Option<String>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Retry settings.
    pub retry: RetryPolicy,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// How retries wait.
    pub sleeper: Sleeper,
}

impl ClientConfig {
    /// Settings for `base_url` with defaults: no key, 120 s timeout, default retries.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
            headers: Vec::new(),
            sleeper: Sleeper::default(),
        }
    }

    /// The base URL without a trailing slash.
    pub(crate) fn base(&self) -> &str {
        self.base_url.trim_end_matches('/')
    }
}

/// The HTTP client of models whose calls may wait `timeout` between two reads, shared by the
/// models built with that timeout on the same tokio runtime. A client holds a connection pool
/// and a TLS root store, which takes a parse of the system's certificates to build: ten agents
/// building one each spent a tenth of a server's start on it. (A pooled connection is served by
/// a task of the runtime that opened it, hence one client per runtime: a process starting many
/// runtimes, as a test binary does, keeps one client per runtime and timeout.)
pub(crate) fn http_client(timeout: Duration) -> Result<reqwest::Client, ModelError> {
    type Key = (Duration, Option<tokio::runtime::Id>);
    static CLIENTS: std::sync::Mutex<Vec<(Key, reqwest::Client)>> = std::sync::Mutex::new(Vec::new());
    let key = (timeout, tokio::runtime::Handle::try_current().ok().map(|runtime| runtime.id()));
    let mut clients = CLIENTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, client)) = clients.iter().find(|(k, _)| *k == key) {
        return Ok(client.clone());
    }
    let client =
        reqwest::Client::builder().read_timeout(timeout).connect_timeout(Duration::from_secs(10)).build().map_err(
            |e| ModelError::new(ModelErrorKind::Connection, format!("cannot build http client: {e}")).with_source(e),
        )?;
    clients.push((key, client.clone()));
    Ok(client)
}

/// Parses `retry-after` (seconds, possibly fractional) or `retry-after-ms`.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(Duration::from_secs_f64((ms / 1000.0).clamp(0.0, 3600.0)));
    }
    get("retry-after").and_then(|v| v.parse::<f64>().ok()).map(|s| Duration::from_secs_f64(s.clamp(0.0, 3600.0)))
}

/// The provider's message in an error body, whatever its shape: OpenAI's and Anthropic's
/// `{"error": {"message"}}`, Gemini's `{"error": {"message", "status"}}`, Ollama's `{"error":
/// "..."}`, Bedrock's `{"message"}`, FastAPI's `{"detail"}`.
pub(crate) fn error_message(body: &str) -> Option<String> {
    let value: Value = serde_json::from_str(body).ok()?;
    let from = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("message").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    };
    value
        .get("error")
        .and_then(from)
        .or_else(|| value.get("detail").and_then(from))
        .or_else(|| value.get("message").and_then(Value::as_str).map(str::to_owned))
        .or_else(|| value.get("Message").and_then(Value::as_str).map(str::to_owned))
}

/// The kind of a refusal, from its status and the provider's words.
pub(crate) fn refusal_kind(status: u16, message: &str) -> ModelErrorKind {
    let m = message.to_lowercase();
    let says = |words: &[&str]| words.iter().any(|w| m.contains(w));
    if says(&[
        "context length",
        "context_length",
        "context window",
        "prompt is too long",
        "too many tokens",
        "maximum context",
        "input is too long",
        "exceeds the maximum number of tokens",
    ]) {
        return ModelErrorKind::ContextTooLong;
    }
    if says(&[
        "content filter",
        "content_filter",
        "content management policy",
        "safety",
        "responsibleaipolicyviolation",
    ]) {
        return ModelErrorKind::ContentFiltered;
    }
    match status {
        429 => ModelErrorKind::RateLimited,
        401 | 403 => ModelErrorKind::Auth,
        404 if says(&["model"]) => ModelErrorKind::ModelNotFound,
        408 => ModelErrorKind::Timeout,
        // Anthropic's "overloaded" is 529.
        s if s >= 500 => ModelErrorKind::Server,
        _ if says(&["model"]) && says(&["not found", "does not exist", "unknown model", "not_found"]) => {
            ModelErrorKind::ModelNotFound
        }
        _ => ModelErrorKind::BadRequest,
    }
}

/// Turns a non-success status and body into a [`ModelError`]: the kind, the provider's message
/// once, and `retry-after`.
pub(crate) fn status_error(label: &str, status: u16, headers: &HeaderMap, body: &str) -> ModelError {
    let detail = error_message(body).unwrap_or_else(|| body.chars().take(300).collect());
    let kind = refusal_kind(status, &detail);
    ModelError::new(kind, format!("{label} answered http {status}: {detail}"))
        .with_status(status)
        .with_retry_after(retry_after(headers))
}

/// Turns a transport failure into a [`ModelError`].
pub(crate) fn transport_error(label: &str, base_url: &str, err: reqwest::Error) -> ModelError {
    if err.is_builder() {
        // Not a network failure: the URL itself cannot be used, and retrying will not help.
        return ModelError::new(
            ModelErrorKind::BadRequest,
            format!("{label} has an unusable base URL {base_url:?} (it needs http:// or https://): {err}"),
        )
        .with_source(err);
    }
    let kind = if err.is_timeout() { ModelErrorKind::Timeout } else { ModelErrorKind::Connection };
    ModelError::new(kind, format!("{label} is unreachable at {base_url}: {err}")).with_source(err)
}

/// An answer that is not the provider's wire format.
pub(crate) fn invalid(label: &str, what: &str, text: &str) -> ModelError {
    ModelError::new(
        ModelErrorKind::InvalidResponse,
        format!("{label} answered {what}: {}", text.chars().take(200).collect::<String>()),
    )
}

/// Sends the request `build` makes (again for each retry), retrying what can be retried;
/// returns the successful response. `model` names the model in logs.
pub(crate) async fn send(
    config: &ClientConfig,
    label: &str,
    build: impl Fn() -> reqwest::RequestBuilder,
) -> Result<reqwest::Response, ModelError> {
    let mut attempt = 0;
    loop {
        let mut request = build();
        for (name, value) in &config.headers {
            request = request.header(name, value);
        }
        let err = match request.send().await {
            Err(e) => transport_error(label, &config.base_url, e),
            Ok(resp) if resp.status().is_success() => return Ok(resp),
            Ok(resp) => {
                let status = resp.status().as_u16();
                let headers = resp.headers().clone();
                let text = resp.text().await.unwrap_or_default();
                status_error(label, status, &headers, &text)
            }
        };
        if !err.is_retryable() || attempt >= config.retry.max_retries {
            if attempt > 0 {
                return Err(ModelError {
                    message: format!("{} (gave up after {} attempts)", err.message, attempt + 1),
                    ..err
                });
            }
            return Err(err);
        }
        let delay = config.retry.delay(attempt, err.retry_after);
        tracing::warn!(model = %label, attempt = attempt + 1, delay_ms = delay.as_millis() as u64, error = %err, "retrying model request");
        config.sleeper.sleep(delay).await;
        attempt += 1;
    }
}

/// Reads a whole answer as text.
pub(crate) async fn body_text(
    config: &ClientConfig,
    label: &str,
    resp: reqwest::Response,
) -> Result<String, ModelError> {
    resp.text().await.map_err(|e| transport_error(label, &config.base_url, e))
}

/// Reads a whole answer as JSON; an answer that is not JSON is an `InvalidResponse` error.
pub(crate) async fn json_body(
    config: &ClientConfig,
    label: &str,
    resp: reqwest::Response,
) -> Result<Value, ModelError> {
    let text = body_text(config, label, resp).await?;
    serde_json::from_str(&text).map_err(|e| invalid(label, &format!("with invalid JSON ({e})"), &text))
}

/// The response's id (`{"id": ...}` provider data), when the answer names one.
pub(crate) fn response_id(id: Option<&Value>) -> Option<agno_core::ModelChunk> {
    let id = id?.as_str()?;
    Some(agno_core::ModelChunk::ProviderData(serde_json::Map::from_iter([(
        "id".to_owned(),
        Value::String(id.to_owned()),
    )])))
}

/// Turns one provider's stream events (`E`: the data of an SSE event or an NDJSON line, or a
/// decoded binary message) into chunks; it keeps whatever state the format needs (which content
/// block is a tool call, ...).
pub(crate) trait EventParser<E = String>: Send + 'static {
    /// The chunks of one event, and whether the response is done with it (nothing after it is
    /// read).
    fn event(&mut self, event: E) -> Result<(Vec<agno_core::ModelChunk>, bool), ModelError>;

    /// Whether what arrived so far is a whole response even though no event said it is done:
    /// a stream may end here (Chat Completions after its finish reason, without `[DONE]`).
    fn complete(&self) -> bool {
        false
    }
}

/// A byte stream of text events (SSE, or NDJSON lines with `lines`), each event's data trimmed
/// and the empty ones skipped, parsed by `parser` (see [`parse_events`]).
pub(crate) fn event_stream<P: EventParser>(
    label: String,
    resp: reqwest::Response,
    parser: P,
    lines: bool,
) -> agno_core::ModelStream {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;
    let broke = {
        let label = label.clone();
        move |e: String| ModelError::new(ModelErrorKind::Connection, format!("{label} stream broke: {e}"))
    };
    let data: futures::stream::BoxStream<'static, Result<String, ModelError>> = if lines {
        let mut buffer = Vec::new();
        resp.bytes_stream()
            .map(move |chunk| match chunk {
                Ok(chunk) => {
                    buffer.extend_from_slice(&chunk);
                    let mut out = Vec::new();
                    while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = buffer.drain(..=end).collect();
                        out.push(Ok(String::from_utf8_lossy(&line).into_owned()));
                    }
                    futures::stream::iter(out)
                }
                Err(e) => futures::stream::iter(vec![Err(broke(e.to_string()))]),
            })
            .flatten()
            .boxed()
    } else {
        resp.bytes_stream()
            .eventsource()
            .map(move |event| event.map(|e| e.data).map_err(|e| broke(e.to_string())))
            .boxed()
    };
    let data = data
        .filter_map(|item| {
            futures::future::ready(match item {
                Ok(data) => Some(data.trim().to_owned()).filter(|d| !d.is_empty()).map(Ok),
                Err(e) => Some(Err(e)),
            })
        })
        .boxed();
    parse_events(label, data, parser)
}

/// Chunks of the `events` `parser` reads, until an event says the response is done. The stream
/// ends at the first error (the events' own, a transport failure, or the parser's); one that ends
/// before the response was done (or [`EventParser::complete`]) was cut off: a `Connection` error.
pub(crate) fn parse_events<E: Send + 'static, P: EventParser<E>>(
    label: String,
    events: futures::stream::BoxStream<'static, Result<E, ModelError>>,
    parser: P,
) -> agno_core::ModelStream {
    use futures::StreamExt;
    futures::stream::unfold((events, parser, label, false), |(mut events, mut parser, label, stopped)| async move {
        if stopped {
            return None;
        }
        let (chunks, stop) = match events.next().await {
            None if parser.complete() => return None,
            None => {
                let err = ModelError::new(
                    ModelErrorKind::Connection,
                    format!("{label} stream ended before the response was complete"),
                );
                (vec![Err(err)], true)
            }
            Some(Err(err)) => (vec![Err(err)], true),
            Some(Ok(event)) => match parser.event(event) {
                Ok((chunks, done)) => (chunks.into_iter().map(Ok).collect(), done),
                Err(err) => (vec![Err(err)], true),
            },
        };
        Some((chunks, (events, parser, label, stop)))
    })
    .flat_map(futures::stream::iter)
    .boxed()
}

/// A stream event that is not JSON of the provider's format.
pub(crate) fn invalid_event(label: &str, why: &str, data: &str) -> ModelError {
    invalid(label, &format!("an invalid stream event ({why})"), data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_classified_by_status_and_words() {
        assert_eq!(refusal_kind(429, "slow down"), ModelErrorKind::RateLimited);
        assert_eq!(refusal_kind(401, "invalid x-api-key"), ModelErrorKind::Auth);
        assert_eq!(refusal_kind(404, "model: claude-9 not found"), ModelErrorKind::ModelNotFound);
        assert_eq!(refusal_kind(404, "no such route"), ModelErrorKind::BadRequest);
        assert_eq!(
            refusal_kind(400, "prompt is too long: 250000 tokens > 200000 maximum"),
            ModelErrorKind::ContextTooLong
        );
        assert_eq!(
            refusal_kind(400, "This model's maximum context length is 128000 tokens"),
            ModelErrorKind::ContextTooLong
        );
        assert_eq!(refusal_kind(400, "filtered by the content management policy"), ModelErrorKind::ContentFiltered);
        assert_eq!(
            refusal_kind(400, "model \"llama9\" not found, try pulling it first"),
            ModelErrorKind::ModelNotFound
        );
        assert_eq!(refusal_kind(529, "Overloaded"), ModelErrorKind::Server);
        assert_eq!(error_message(r#"{"type":"error","error":{"type":"x","message":"m1"}}"#).as_deref(), Some("m1"));
        assert_eq!(error_message(r#"{"error":"m2"}"#).as_deref(), Some("m2"));
        assert_eq!(error_message(r#"{"message":"m3"}"#).as_deref(), Some("m3"));
    }
}
