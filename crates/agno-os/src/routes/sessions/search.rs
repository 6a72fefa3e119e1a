//! `POST /sessions/search` and `GET /sessions/filter-schema` (Agno 3.1.11): sessions found by
//! the same filter expression as `POST /traces/search` ([`crate::routes::filter_expr`]), over a
//! session's ids, name, type and times. The expression runs in the store: compiled to SQL with
//! bound values on SQLite, PostgreSQL and MySQL, evaluated in process on the document stores.
//! An unknown field or operator, or a value a field cannot be compared with, is a 422 naming it.
//! Under user isolation the search only ever sees the caller's sessions.

use agno_core::{FilterField, FilterValue, SessionField, SessionQuery as StoreQuery, SessionSort, SortOrder};
use axum::Json;
use axum::body::Bytes;
use serde::Deserialize;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::routes::filter_expr::Operand;
use crate::routes::guard::Caller;
use crate::routes::params::Paging;
use crate::routes::query::Query;

/// Query of the search route: which database.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SearchQuery {
    /// The database to search (default: the OS's).
    db_id: Option<String>,
    /// The sessions table to search.
    table: Option<String>,
}

/// Body of `POST /sessions/search`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionSearchRequest {
    /// The filter expression over session fields (`{"op": "AND", "conditions": [...]}`; see
    /// `GET /sessions/filter-schema`).
    filter: Option<serde_json::Map<String, Value>>,
    #[schemars(range(min = 1, max = i64::MAX))]
    page: Option<usize>,
    #[schemars(range(min = 1, max = 100))]
    limit: Option<usize>,
    /// `created_at` (default) or `updated_at`.
    #[schemars(extend("enum" = ["created_at", "updated_at"]))]
    sort_by: Option<String>,
    /// `desc` (default) or `asc`.
    #[schemars(extend("enum" = ["asc", "desc"]))]
    sort_order: Option<String>,
}

/// Session times are compared as epoch seconds (a number, or an ISO-8601 time); a session type
/// must be one; the rest is text.
impl Operand for SessionField {
    fn operand(self, value: &Value) -> Result<FilterValue, String> {
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Null => return Err(format!("a value compared with {} must not be null", self.column())),
            other => other.to_string(),
        };
        if self.is_time() {
            if let Some(n) = value.as_f64().or_else(|| text.trim().parse().ok()) {
                return Ok(FilterValue::Number(n));
            }
            let at = crate::routes::traces::utc_instant(&text, self.column())?;
            #[allow(clippy::cast_precision_loss)]
            return Ok(FilterValue::Number(at.timestamp() as f64));
        }
        if self == SessionField::SessionType && !["agent", "team", "workflow"].contains(&text.as_str()) {
            return Err(format!("session_type is one of agent, team, workflow, not {value}"));
        }
        Ok(FilterValue::Text(text))
    }
}

/// `GET /sessions/filter-schema`: the fields `POST /sessions/search` filters on, their types and
/// operators (the shape of `GET /traces/filter-schema`).
pub async fn filter_schema() -> Json<Value> {
    use crate::routes::filter_expr::{ENUM_OPS, NAME_OPS, TEXT_OPS};
    const TIME_OPS: &[&str] = &["EQ", "GT", "GTE", "LT", "LTE"];
    Json(crate::routes::filter_expr::filter_schema(&[
        ("session_type", "Session Type", "enum", ENUM_OPS, Some(&["agent", "team", "workflow"])),
        ("user_id", "User ID", "string", TEXT_OPS, None),
        ("agent_id", "Agent ID", "string", TEXT_OPS, None),
        ("team_id", "Team ID", "string", TEXT_OPS, None),
        ("workflow_id", "Workflow ID", "string", TEXT_OPS, None),
        ("session_id", "Session ID", "string", TEXT_OPS, None),
        ("session_name", "Session Name", "string", NAME_OPS, None),
        ("created_at", "Created At", "datetime", TIME_OPS, None),
        ("updated_at", "Updated At", "datetime", TIME_OPS, None),
    ]))
}

/// `POST /sessions/search`: the sessions matching the body's filter, in `GET /sessions`'s
/// paginated shape.
pub async fn search_sessions(
    Caller { state, principal }: Caller,
    Query(q): Query<SearchQuery>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let request: SessionSearchRequest = if body.iter().all(u8::is_ascii_whitespace) {
        SessionSearchRequest::default()
    } else {
        crate::routes::params::json_body(&body)?
    };
    if request.limit.is_some_and(|l| l > 100) {
        return Err(ApiError::unprocessable("Input should be less than or equal to 100").at("body", "limit"));
    }
    let paging = Paging::new(request.limit, request.page)?;
    let sort_by = match request.sort_by.as_deref() {
        None | Some("created_at") => SessionSort::CreatedAt,
        Some("updated_at") => SessionSort::UpdatedAt,
        Some(_) => {
            return Err(ApiError::unprocessable("Input should be 'created_at' or 'updated_at'").at("body", "sort_by"));
        }
    };
    let sort_order = match request.sort_order.as_deref() {
        None | Some("desc") => SortOrder::Desc,
        Some("asc") => SortOrder::Asc,
        Some(_) => return Err(ApiError::unprocessable("Input should be 'asc' or 'desc'").at("body", "sort_order")),
    };
    let filter = match request.filter.filter(|f| !f.is_empty()) {
        Some(f) => Some(
            crate::routes::filter_expr::parse::<SessionField>(&Value::Object(f))
                .map_err(|e| ApiError::unprocessable(format!("Invalid filter expression: {e}")).at("body", "filter"))?,
        ),
        None => None,
    };
    let db = crate::routes::databases::select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    let query = StoreQuery {
        user_id: principal.user_scope(None),
        filter,
        limit: Some(paging.limit),
        page: Some(paging.page),
        sort_by,
        sort_order,
        ..StoreQuery::default()
    };
    super::listed(db.as_ref(), &query, &paging).await
}
