//! Connection settings for OpenAI-compatible servers and the HTTP call with retries.
//!
//! Retries cover 429, 5xx and connection failures, with exponential backoff and full jitter,
//! honouring the provider's `retry-after`. Errors that retrying cannot fix return at once.

use std::time::Duration;

use agno_core::{ModelError, ModelErrorKind};
use reqwest::header::HeaderMap;

use super::wire::ErrorBody;

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

/// Where and how to reach an OpenAI-compatible server.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Base URL including the version path, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// Bearer token; `None` for servers that need none.
    pub api_key: Option<String>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Retry settings.
    pub retry: RetryPolicy,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
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
        }
    }
}

pub(crate) fn http_client(timeout: Duration) -> Result<reqwest::Client, ModelError> {
    reqwest::Client::builder().read_timeout(timeout).connect_timeout(Duration::from_secs(10)).build().map_err(|e| {
        ModelError::new(ModelErrorKind::Connection, format!("cannot build http client: {e}")).with_source(e)
    })
}

/// Parses `retry-after` (seconds, possibly fractional) or `retry-after-ms`.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(Duration::from_secs_f64((ms / 1000.0).clamp(0.0, 3600.0)));
    }
    get("retry-after").and_then(|v| v.parse::<f64>().ok()).map(|s| Duration::from_secs_f64(s.clamp(0.0, 3600.0)))
}

/// Turns a non-success status and body into a [`ModelError`].
pub(crate) fn status_error(label: &str, status: u16, headers: &HeaderMap, body: &str) -> ModelError {
    let kind = match status {
        429 => ModelErrorKind::RateLimited,
        401 | 403 => ModelErrorKind::Auth,
        408 => ModelErrorKind::Timeout,
        s if s >= 500 => ModelErrorKind::Server,
        _ => ModelErrorKind::BadRequest,
    };
    let detail = serde_json::from_str::<ErrorBody>(body)
        .ok()
        .and_then(|b| b.message())
        .unwrap_or_else(|| body.chars().take(300).collect());
    ModelError::new(kind, format!("{label} answered http {status}: {detail}"))
        .with_status(status)
        .with_retry_after(retry_after(headers))
}

/// Turns a transport failure into a [`ModelError`].
pub(crate) fn transport_error(label: &str, base_url: &str, err: reqwest::Error) -> ModelError {
    let kind = if err.is_timeout() { ModelErrorKind::Timeout } else { ModelErrorKind::Connection };
    ModelError::new(kind, format!("{label} is unreachable at {base_url}: {err}")).with_source(err)
}
