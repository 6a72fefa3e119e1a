//! Request and response helpers the CRUD routes share: JSON bodies, sort
//! order, Agno's paging envelope and its timestamp format.

use std::time::Instant;

use agno_core::SortOrder;
use axum::Json;
use axum::body::Bytes;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};

/// Parses a JSON request body (its content type and depth were checked where it entered,
/// [`crate::input`]): 422 with the parser's message when it is not valid JSON, naming the field
/// when it breaks a bound `T` declares ([`super::validate`]) or is not of the expected shape.
pub(crate) fn json_body<T: DeserializeOwned + schemars::JsonSchema>(body: &Bytes) -> ApiResult<T> {
    let mut value: Value =
        serde_json::from_slice(body).map_err(|e| ApiError::unprocessable(format!("invalid JSON body: {e}")))?;
    super::validate::check::<T>(&value, "body")?;
    super::validate::integers::<T>(&mut value);
    serde_json::from_value(value).map_err(|e| ApiError::unprocessable(format!("invalid JSON body: {e}")))
}

/// `asc` or `desc` (default `desc`), else 422.
pub(crate) fn sort_order(value: Option<&str>) -> ApiResult<SortOrder> {
    match value.map(str::to_ascii_lowercase).as_deref() {
        None | Some("desc") => Ok(SortOrder::Desc),
        Some("asc") => Ok(SortOrder::Asc),
        Some(other) => Err(ApiError::unprocessable(format!("sort_order must be 'asc' or 'desc', not {other:?}"))),
    }
}

/// Agno's paging: `limit` (default 20, at least 1) and `page` (default 1, at least 1; every
/// listing refuses 0 alike).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Paging {
    /// Page size.
    pub(crate) limit: usize,
    /// 1-based page.
    pub(crate) page: usize,
    started: Instant,
}

impl Paging {
    /// Validates `limit` and `page`.
    pub(crate) fn new(limit: Option<usize>, page: Option<usize>) -> ApiResult<Self> {
        let limit = limit.unwrap_or(20);
        if limit == 0 {
            return Err(ApiError::unprocessable("limit must be greater than or equal to 1").at("query", "limit"));
        }
        let page = page.unwrap_or(1);
        if page == 0 {
            return Err(ApiError::unprocessable("page must be greater than or equal to 1").at("query", "page"));
        }
        Ok(Self { limit, page, started: Instant::now() })
    }

    /// 422 when `limit` is above `most`, as FastAPI answers a `le` bound.
    pub(crate) fn at_most(self, most: usize) -> ApiResult<Self> {
        if self.limit <= most {
            return Ok(self);
        }
        Err(ApiError::unprocessable(format!("Input should be less than or equal to {most}"))
            .with_type("less_than_equal")
            .at("query", "limit")
            .with_ctx(json!({"le": most})))
    }

    /// `{"data": [...], "meta": {...}}` for `total` matching items.
    pub(crate) fn respond(&self, data: Vec<Value>, total: u64) -> Json<Value> {
        let limit = self.limit as u64;
        let elapsed_ms = (self.started.elapsed().as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0;
        Json(json!({
            "data": Value::Array(data),
            "meta": {
                "page": self.page,
                "limit": self.limit,
                "total_pages": total.div_ceil(limit),
                "total_count": total,
                "search_time_ms": elapsed_ms,
            },
        }))
    }
}

/// 204 as FastAPI sends it, with `content-type: application/json`.
#[derive(Debug, Clone, Copy)]
pub struct NoContent;

impl axum::response::IntoResponse for NoContent {
    fn into_response(self) -> axum::response::Response {
        let json = axum::http::HeaderValue::from_static("application/json");
        (axum::http::StatusCode::NO_CONTENT, [(axum::http::header::CONTENT_TYPE, json)]).into_response()
    }
}

/// Epoch seconds as Agno answers datetimes: ISO 8601 in UTC with `Z`.
pub(crate) fn iso(epoch: Option<i64>) -> Value {
    epoch
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .map_or(Value::Null, |t| Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)))
}

/// `db_id` and `table` query parameters (one database is served; `table` is accepted and
/// ignored).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct DbParams {
    /// `db_id`.
    pub db_id: Option<String>,
    /// `table`.
    pub table: Option<String>,
}

impl DbParams {
    /// `db_id`.
    pub(crate) fn db_id(&self) -> Option<&str> {
        self.db_id.as_deref()
    }

    /// `table`.
    pub(crate) fn table(&self) -> Option<&str> {
        self.table.as_deref()
    }
}
