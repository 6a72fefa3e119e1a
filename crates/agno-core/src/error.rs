//! Errors shared across the workspace: model, tool and storage failures.
//!
//! Each error names what failed; what to do next is added at the edge (CLI, HTTP).

use std::error::Error as StdError;
use std::time::Duration;

/// A boxed driver or IO error kept as the `source` of a workspace error.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// What kind of model failure happened; decides retries and the error id shown to users.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelErrorKind {
    /// The provider answered 429.
    RateLimited,
    /// The provider answered 5xx.
    Server,
    /// The connection failed or broke (unreachable base URL, reset, ...).
    Connection,
    /// The request timed out.
    Timeout,
    /// 401/403: the API key is missing or wrong.
    Auth,
    /// Other 4xx: the request was refused.
    BadRequest,
    /// The provider answered something that is not its wire format.
    InvalidResponse,
    /// The `provider:model` string names no known provider.
    UnknownProvider,
    /// No API key was configured for a provider that needs one.
    MissingApiKey,
    /// Structured output did not match the output schema.
    SchemaViolation,
    /// The provider does not know the model (a typo, or a model not pulled yet).
    ModelNotFound,
    /// The conversation is longer than the model's context window.
    ContextTooLong,
    /// The provider withheld the answer (or refused the prompt) for safety reasons.
    ContentFiltered,
}

impl ModelErrorKind {
    /// Every kind.
    pub const ALL: [ModelErrorKind; 13] = [
        ModelErrorKind::RateLimited,
        ModelErrorKind::Server,
        ModelErrorKind::Connection,
        ModelErrorKind::Timeout,
        ModelErrorKind::Auth,
        ModelErrorKind::BadRequest,
        ModelErrorKind::InvalidResponse,
        ModelErrorKind::UnknownProvider,
        ModelErrorKind::MissingApiKey,
        ModelErrorKind::SchemaViolation,
        ModelErrorKind::ModelNotFound,
        ModelErrorKind::ContextTooLong,
        ModelErrorKind::ContentFiltered,
    ];

    /// Whether Agno has an error of this kind, with the same `error_id` (its `ModelRateLimitError`,
    /// `ModelProviderError`, `ModelAuthenticationError`, `ContextWindowExceededError`); the other
    /// ids are agno-rs's own, finer than Agno's `model_provider_error`.
    pub fn is_agnos(self) -> bool {
        matches!(
            self,
            ModelErrorKind::RateLimited
                | ModelErrorKind::Server
                | ModelErrorKind::Auth
                | ModelErrorKind::ContextTooLong
        )
    }

    /// True when retrying the same request may succeed.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ModelErrorKind::RateLimited | ModelErrorKind::Server | ModelErrorKind::Connection | ModelErrorKind::Timeout
        )
    }

    /// Stable snake_case id, as in Agno's `error_id`.
    pub fn id(self) -> &'static str {
        match self {
            ModelErrorKind::RateLimited => "model_rate_limit_error",
            ModelErrorKind::Server => "model_provider_error",
            ModelErrorKind::Connection => "model_connection_error",
            ModelErrorKind::Timeout => "model_timeout_error",
            ModelErrorKind::Auth => "model_authentication_error",
            ModelErrorKind::BadRequest => "model_bad_request_error",
            ModelErrorKind::InvalidResponse => "model_invalid_response_error",
            ModelErrorKind::UnknownProvider => "unknown_model_provider",
            ModelErrorKind::MissingApiKey => "missing_api_key",
            ModelErrorKind::SchemaViolation => "output_schema_violation",
            ModelErrorKind::ModelNotFound => "model_not_found_error",
            // Agno's `ContextWindowExceededError`.
            ModelErrorKind::ContextTooLong => "context_window_exceeded_error",
            ModelErrorKind::ContentFiltered => "model_content_filtered_error",
        }
    }
}

/// A failed model call.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ModelError {
    /// What kind of failure.
    pub kind: ModelErrorKind,
    /// Lowercase description naming the provider and model.
    pub message: String,
    /// HTTP status, when the provider answered.
    pub status: Option<u16>,
    /// The provider's `retry-after`, when given.
    pub retry_after: Option<Duration>,
    /// The underlying error.
    #[source]
    pub source: Option<BoxError>,
}

impl ModelError {
    /// An error of `kind` with a message.
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), status: None, retry_after: None, source: None }
    }

    /// Attaches the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Attaches the provider's retry-after hint.
    pub fn with_retry_after(mut self, after: Option<Duration>) -> Self {
        self.retry_after = after;
        self
    }

    /// Attaches the underlying error.
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// True when retrying may succeed.
    pub fn is_retryable(&self) -> bool {
        self.kind.is_retryable()
    }
}

/// What kind of tool failure happened. One table decides, per kind, whether a retry may help and
/// how the model is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// The model's arguments were not JSON, or did not match the tool's schema.
    InvalidArguments,
    /// The model called a tool that does not exist (or is not enabled).
    NotFound,
    /// The tool ran and returned an error.
    Execution,
    /// The tool did not finish within its timeout.
    Timeout,
    /// The tool panicked; the panic was contained.
    Panicked,
    /// The user rejected the call.
    Rejected,
    /// The run's `tool_call_limit` was reached.
    CallLimitReached,
    /// The run was cancelled while the tool ran.
    Cancelled,
    /// The tool waits for a person (a team member's pause): the run pauses on this call, whose
    /// result comes with the continue, as an external result does.
    Paused,
}

impl ToolErrorKind {
    /// (retryable by the model, text prefix the model sees)
    fn table(self) -> (bool, &'static str) {
        match self {
            ToolErrorKind::InvalidArguments => (true, "Invalid arguments"),
            ToolErrorKind::NotFound => (true, "Unknown tool"),
            ToolErrorKind::Execution => (true, "Tool error"),
            ToolErrorKind::Timeout => (true, "Tool timed out"),
            ToolErrorKind::Panicked => (false, "Tool crashed"),
            ToolErrorKind::Rejected => (false, "Tool call was rejected"),
            ToolErrorKind::CallLimitReached => (false, "Tool call limit reached"),
            ToolErrorKind::Cancelled => (false, "Tool call was cancelled"),
            ToolErrorKind::Paused => (false, "Tool call waits for human input"),
        }
    }

    /// True when the model may fix the call and try again.
    pub fn is_retryable(self) -> bool {
        self.table().0
    }

    /// The prefix of the text the model sees.
    pub fn label(self) -> &'static str {
        self.table().1
    }
}

/// A failed tool call. Never aborts a run: it becomes a tool result the model sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", kind.label())]
pub struct ToolError {
    /// What kind of failure.
    pub kind: ToolErrorKind,
    /// Details for the model and the logs.
    pub message: String,
}

impl ToolError {
    /// An error of `kind`.
    pub fn new(kind: ToolErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into() }
    }

    /// The tool failed while executing.
    pub fn execution(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::Execution, message)
    }

    /// The model's arguments were invalid.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::InvalidArguments, message)
    }

    /// The text the model sees as the tool result.
    pub fn model_text(&self) -> String {
        let hint = if self.kind.is_retryable() { " Fix the call and try again if needed." } else { "" };
        format!("{}: {}.{hint}", self.kind.label(), self.message.trim_end_matches('.'))
    }
}

/// Portable kind of a storage failure. Code outside an adapter branches on this, never on driver
/// error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DbErrorKind {
    /// A unique key or a fencing check refused the write.
    Conflict,
    /// The addressed row does not exist.
    NotFound,
    /// The database schema is older than this version needs: run the migrations.
    SchemaTooOld,
    /// The database could not be reached.
    Unavailable,
    /// This kind of database does not keep what was asked for (Agno answers 503).
    Unsupported,
    /// Anything else.
    Other,
}

/// A storage failure. Always reaches the caller; never turns into an empty result.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct DbError {
    kind: DbErrorKind,
    message: String,
    #[source]
    source: Option<BoxError>,
}

impl DbError {
    /// An error of `kind`.
    pub fn new(kind: DbErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), source: None }
    }

    /// Attaches the driver error.
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The portable kind.
    pub fn kind(&self) -> DbErrorKind {
        self.kind
    }
}
