//! Routes of features agno-rs does not have yet (tracing, knowledge), answered
//! as Python AgentOS answers them when none is configured, so clients that call them on every
//! load (Agent UI calls `/teams`) see an empty OS rather than an error.

use crate::routes::query::Query;
use axum::Json;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::Value;

use super::params::Paging;
use crate::error::{ApiError, ApiResult};

/// Paging of `GET /traces`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct TracesQuery {
    #[schemars(range(min = 1, max = i64::MAX))]
    page: Option<usize>,
    #[schemars(range(min = 1, max = i64::MAX))]
    limit: Option<usize>,
}

/// `GET /traces`: tracing is off, so an empty page.
pub async fn list_traces(Query(q): Query<TracesQuery>) -> ApiResult<Json<Value>> {
    Ok(Paging::new(q.limit, q.page)?.respond(Vec::new(), 0))
}

/// The answer of `/knowledge` routes when no knowledge base is configured: 503, as Python answers.
pub(crate) fn no_knowledge() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "No knowledge base is available on this AgentOS. A Knowledge is served over /knowledge only once it has a \
         contents_db: declare one with [[knowledge]] in agentos.toml.",
    )
}
