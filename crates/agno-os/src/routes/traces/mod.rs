//! `/traces`, `/traces/{trace_id}`, `/traces/filter-schema`, `/trace_session_stats` and
//! `POST /traces/search`, as Python AgentOS 3.1 serves them over the traces its database holds
//! (written by agno-rs's `[tracing]` or by Python Agno's). Under user isolation a caller sees the
//! traces of its own runs only: another user's trace, or one of nobody, is "not found".

mod filter;
mod shape;

pub(crate) use filter::utc_instant;

use agno_core::{SpanRecord, TraceQuery, TraceRecord};
use axum::Json;
use axum::body::Bytes;
use axum::extract::Path;
use serde::Deserialize;
use serde_json::Value;

use super::databases::select_db;
use super::params::{Paging, json_body};
use crate::error::{ApiError, ApiResult};
use crate::routes::guard::Caller;
use crate::routes::query::Query;

/// Query of `GET /traces`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct TracesQuery {
    run_id: Option<String>,
    session_id: Option<String>,
    user_id: Option<String>,
    agent_id: Option<String>,
    team_id: Option<String>,
    workflow_id: Option<String>,
    /// `OK` or `ERROR`.
    status: Option<String>,
    /// Traces starting at or after (ISO 8601).
    start_time: Option<String>,
    /// Traces ending at or before (ISO 8601).
    end_time: Option<String>,
    #[schemars(range(min = 0, max = i64::MAX))]
    page: Option<usize>,
    #[schemars(range(min = 1, max = i64::MAX))]
    limit: Option<usize>,
    db_id: Option<String>,
}

/// Query of `GET /trace_session_stats`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct StatsQuery {
    user_id: Option<String>,
    agent_id: Option<String>,
    team_id: Option<String>,
    workflow_id: Option<String>,
    /// Sessions with traces created at or after (ISO 8601).
    start_time: Option<String>,
    /// Sessions with traces created at or before (ISO 8601).
    end_time: Option<String>,
    #[schemars(range(min = 1, max = i64::MAX))]
    page: Option<usize>,
    #[schemars(range(min = 1, max = i64::MAX))]
    limit: Option<usize>,
    db_id: Option<String>,
}

/// Query of `GET /traces/{trace_id}`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct TraceQueryParams {
    /// One span of the trace, alone.
    span_id: Option<String>,
    /// Accepted as Agno accepts it (the path's trace id wins).
    run_id: Option<String>,
    db_id: Option<String>,
}

/// Query of `POST /traces/search` (`GET /traces/filter-schema` takes none).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct DbQuery {
    db_id: Option<String>,
}

/// Body of `POST /traces/search` (Agno's `TraceSearchRequest`).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceSearchRequest {
    /// Agno's filter expression over trace fields (`{"op": "AND", "conditions": [...]}`).
    filter: Option<serde_json::Map<String, Value>>,
    /// `run` (traces with their span trees) or `session` (per-session stats).
    #[schemars(extend("enum" = ["run", "session"]))]
    group_by: Option<String>,
    #[schemars(range(min = 1, max = i64::MAX))]
    page: Option<usize>,
    #[schemars(range(min = 1, max = 100))]
    limit: Option<usize>,
}

/// A time of a query, in UTC as traces store it; 422 naming the parameter.
fn query_time(value: Option<String>, name: &'static str) -> ApiResult<Option<String>> {
    value
        .filter(|v| !v.is_empty())
        .map(|v| filter::utc_time(&v, name).map_err(|e| ApiError::unprocessable(e).at("query", name)))
        .transpose()
}

fn not_found() -> ApiError {
    ApiError::not_found("Trace not found")
}

/// `GET /traces`: a page of traces, newest first, each with its root span's input.
pub async fn list_traces(Caller { state, principal }: Caller, Query(q): Query<TracesQuery>) -> ApiResult<Json<Value>> {
    let paging = Paging::new(q.limit, q.page.map(|p| p.max(1)))?;
    let db = select_db(&state, q.db_id.as_deref(), None)?;
    let query = TraceQuery {
        run_id: q.run_id.filter(|v| !v.is_empty()),
        session_id: q.session_id.filter(|v| !v.is_empty()),
        user_id: principal.user_scope(q.user_id),
        agent_id: q.agent_id.filter(|v| !v.is_empty()),
        team_id: q.team_id.filter(|v| !v.is_empty()),
        workflow_id: q.workflow_id.filter(|v| !v.is_empty()),
        status: q.status.filter(|v| !v.is_empty()),
        start_time: query_time(q.start_time, "start_time")?,
        end_time: query_time(q.end_time, "end_time")?,
        filter: None,
        limit: Some(paging.limit),
        page: Some(paging.page),
    };
    let (traces, total) = db.get_traces(&query).await?;
    let mut data = Vec::with_capacity(traces.len());
    for trace in &traces {
        data.push(shape::summary(trace, &db.get_spans(&trace.trace_id).await?));
    }
    Ok(paging.respond(data, total))
}

/// `GET /traces/filter-schema`: the fields `POST /traces/search` filters on.
pub async fn filter_schema() -> Json<Value> {
    Json(filter::filter_schema())
}

/// The trace `trace_id` when the caller may see it (a scoped caller: only its own).
async fn visible_trace(
    db: &dyn agno_core::Db,
    trace_id: &str,
    run_id: Option<&str>,
    scope: Option<&str>,
) -> ApiResult<TraceRecord> {
    let trace = db.get_trace(Some(trace_id), run_id).await?.ok_or_else(not_found)?;
    if scope.is_some() && trace.user_id.as_deref() != scope {
        return Err(not_found());
    }
    Ok(trace)
}

/// `GET /traces/{trace_id}`: the trace and its span tree, or one of its spans (`span_id`).
pub async fn get_trace(
    Caller { state, principal }: Caller,
    Path(trace_id): Path<String>,
    Query(q): Query<TraceQueryParams>,
) -> ApiResult<Json<Value>> {
    let db = select_db(&state, q.db_id.as_deref(), None)?;
    let scope = principal.user_scope(None);
    let trace = visible_trace(db.as_ref(), &trace_id, q.run_id.as_deref(), scope.as_deref()).await?;
    let spans: Vec<SpanRecord> = db.get_spans(&trace.trace_id).await?;
    if let Some(span_id) = q.span_id.filter(|s| !s.is_empty()) {
        let span = spans
            .iter()
            .find(|s| s.span_id == span_id)
            .ok_or_else(|| ApiError::not_found(format!("Span {span_id} does not belong to trace {trace_id}")))?;
        return Ok(Json(shape::node(span, None, None)));
    }
    Ok(Json(shape::detail(&trace, &spans)))
}

/// `GET /trace_session_stats`: the traces of each session, latest activity first.
pub async fn session_stats(Caller { state, principal }: Caller, Query(q): Query<StatsQuery>) -> ApiResult<Json<Value>> {
    let paging = Paging::new(q.limit, q.page)?;
    let db = select_db(&state, q.db_id.as_deref(), None)?;
    let query = TraceQuery {
        user_id: principal.user_scope(q.user_id),
        agent_id: q.agent_id.filter(|v| !v.is_empty()),
        team_id: q.team_id.filter(|v| !v.is_empty()),
        workflow_id: q.workflow_id.filter(|v| !v.is_empty()),
        start_time: query_time(q.start_time, "start_time")?,
        end_time: query_time(q.end_time, "end_time")?,
        limit: Some(paging.limit),
        page: Some(paging.page),
        ..TraceQuery::default()
    };
    let (stats, total) = db.get_trace_session_stats(&query).await?;
    Ok(paging.respond(stats.iter().map(shape::session_stats).collect(), total))
}

/// `POST /traces/search`: traces matching a filter expression, with their span trees
/// (`group_by: run`) or as per-session stats (`group_by: session`).
pub async fn search(
    Caller { state, principal }: Caller,
    Query(q): Query<DbQuery>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let request: TraceSearchRequest = json_body(&body)?;
    if request.limit.is_some_and(|l| l > 100) {
        return Err(ApiError::unprocessable("Input should be less than or equal to 100").at("body", "limit"));
    }
    let paging = Paging::new(request.limit, request.page)?;
    let by_session = match request.group_by.as_deref() {
        None | Some("run") => false,
        Some("session") => true,
        Some(_) => {
            return Err(ApiError::unprocessable("Input should be 'run' or 'session'").at("body", "group_by"));
        }
    };
    let filter = match request.filter.filter(|f| !f.is_empty()) {
        Some(f) => Some(
            crate::routes::filter_expr::parse::<agno_core::TraceField>(&Value::Object(f))
                .map_err(|e| ApiError::unprocessable(format!("Invalid filter expression: {e}")).at("body", "filter"))?,
        ),
        None => None,
    };
    let db = select_db(&state, q.db_id.as_deref(), None)?;
    let query = TraceQuery {
        user_id: principal.user_scope(None),
        filter,
        limit: Some(paging.limit),
        page: Some(paging.page),
        ..TraceQuery::default()
    };
    if by_session {
        let (stats, total) = db.get_trace_session_stats(&query).await?;
        return Ok(paging.respond(stats.iter().map(shape::session_stats).collect(), total));
    }
    let (traces, total) = db.get_traces(&query).await?;
    let mut data = Vec::with_capacity(traces.len());
    for trace in &traces {
        data.push(shape::detail(trace, &db.get_spans(&trace.trace_id).await?));
    }
    Ok(paging.respond(data, total))
}
