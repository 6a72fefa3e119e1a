//! Answers of features agno-rs serves only when configured (knowledge), answered as Python
//! AgentOS answers them when none is configured.

use axum::http::StatusCode;

use crate::error::ApiError;

/// The answer of `/knowledge` routes when no knowledge base is configured: 503, as Python answers.
pub(crate) fn no_knowledge() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "No knowledge base is available on this AgentOS. A Knowledge is served over /knowledge only once it has a \
         contents_db: declare one with [[knowledge]] in agentos.toml.",
    )
}
