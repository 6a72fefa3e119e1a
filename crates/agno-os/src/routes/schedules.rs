//! `/schedules`: cron schedules of the OS's own endpoints, as Agno 3.1's schedule router (CRUD,
//! enable, disable, trigger, runs). A schedule belongs to its creator: under user isolation the
//! caller's `sub`, otherwise the `user_id` of the body, if any. A caller sees and changes only
//! its own schedules (admins and callers without isolation see all), and a schedule fires as
//! its owner (see [`crate::scheduler::executor`]).
//!
//! Bad input is refused with 422 before anything is stored: an invalid cron expression or time
//! zone, an endpoint that is not a route of this OS, a payload that is not a JSON object,
//! numbers out of Agno's ranges.

use crate::routes::guard::Caller;
use crate::routes::query::Query;
use std::sync::LazyLock;

use agno_core::{Schedule, ScheduleQuery, ScheduleRun, ScheduleUpdate, now_epoch_secs};
use axum::Json;
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::params::{NoContent, Paging, json_body};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::scheduler::cron::{CronSchedule, check_timezone};
use crate::scheduler::executor::is_os_route;
use crate::state::AppState;

/// Agno's `_NAME_PATTERN`.
/// What a schedule's `cron_expr` may be, as documented: five fields of numbers in range, `*`,
/// ranges, lists and steps, or one of the `@` names.
pub(crate) const CRON_PATTERN: &str = r"^(?:@(?:yearly|annually|monthly|weekly|daily|midnight|hourly)|(?:\*(?:/(?:[1-9]|[1-5][0-9]))?|(?:[0-5]?[0-9])-(?:[0-5]?[0-9])(?:/(?:[1-9]|[1-5][0-9]))?|(?:[0-5]?[0-9]))(?:,(?:\*(?:/(?:[1-9]|[1-5][0-9]))?|(?:[0-5]?[0-9])-(?:[0-5]?[0-9])(?:/(?:[1-9]|[1-5][0-9]))?|(?:[0-5]?[0-9])))* (?:\*(?:/(?:[1-9]|1[0-9]|2[0-3]))?|(?:[01]?[0-9]|2[0-3])-(?:[01]?[0-9]|2[0-3])(?:/(?:[1-9]|1[0-9]|2[0-3]))?|(?:[01]?[0-9]|2[0-3]))(?:,(?:\*(?:/(?:[1-9]|1[0-9]|2[0-3]))?|(?:[01]?[0-9]|2[0-3])-(?:[01]?[0-9]|2[0-3])(?:/(?:[1-9]|1[0-9]|2[0-3]))?|(?:[01]?[0-9]|2[0-3])))* (?:\*(?:/(?:[1-9]|[12][0-9]|3[01]))?|(?:[1-9]|[12][0-9]|3[01])-(?:[1-9]|[12][0-9]|3[01])(?:/(?:[1-9]|[12][0-9]|3[01]))?|(?:[1-9]|[12][0-9]|3[01])|L)(?:,(?:\*(?:/(?:[1-9]|[12][0-9]|3[01]))?|(?:[1-9]|[12][0-9]|3[01])-(?:[1-9]|[12][0-9]|3[01])(?:/(?:[1-9]|[12][0-9]|3[01]))?|(?:[1-9]|[12][0-9]|3[01])|L))* (?:\*(?:/(?:[1-9]|1[0-2]))?|(?:[1-9]|1[0-2])-(?:[1-9]|1[0-2])(?:/(?:[1-9]|1[0-2]))?|(?:[1-9]|1[0-2])|(?:[Jj][Aa][Nn]|[Ff][Ee][Bb]|[Mm][Aa][Rr]|[Aa][Pp][Rr]|[Mm][Aa][Yy]|[Jj][Uu][Nn]|[Jj][Uu][Ll]|[Aa][Uu][Gg]|[Ss][Ee][Pp]|[Oo][Cc][Tt]|[Nn][Oo][Vv]|[Dd][Ee][Cc])-(?:[Jj][Aa][Nn]|[Ff][Ee][Bb]|[Mm][Aa][Rr]|[Aa][Pp][Rr]|[Mm][Aa][Yy]|[Jj][Uu][Nn]|[Jj][Uu][Ll]|[Aa][Uu][Gg]|[Ss][Ee][Pp]|[Oo][Cc][Tt]|[Nn][Oo][Vv]|[Dd][Ee][Cc])(?:/(?:[1-9]|1[0-2]))?|(?:[Jj][Aa][Nn]|[Ff][Ee][Bb]|[Mm][Aa][Rr]|[Aa][Pp][Rr]|[Mm][Aa][Yy]|[Jj][Uu][Nn]|[Jj][Uu][Ll]|[Aa][Uu][Gg]|[Ss][Ee][Pp]|[Oo][Cc][Tt]|[Nn][Oo][Vv]|[Dd][Ee][Cc]))(?:,(?:\*(?:/(?:[1-9]|1[0-2]))?|(?:[1-9]|1[0-2])-(?:[1-9]|1[0-2])(?:/(?:[1-9]|1[0-2]))?|(?:[1-9]|1[0-2])|(?:[Jj][Aa][Nn]|[Ff][Ee][Bb]|[Mm][Aa][Rr]|[Aa][Pp][Rr]|[Mm][Aa][Yy]|[Jj][Uu][Nn]|[Jj][Uu][Ll]|[Aa][Uu][Gg]|[Ss][Ee][Pp]|[Oo][Cc][Tt]|[Nn][Oo][Vv]|[Dd][Ee][Cc])-(?:[Jj][Aa][Nn]|[Ff][Ee][Bb]|[Mm][Aa][Rr]|[Aa][Pp][Rr]|[Mm][Aa][Yy]|[Jj][Uu][Nn]|[Jj][Uu][Ll]|[Aa][Uu][Gg]|[Ss][Ee][Pp]|[Oo][Cc][Tt]|[Nn][Oo][Vv]|[Dd][Ee][Cc])(?:/(?:[1-9]|1[0-2]))?|(?:[Jj][Aa][Nn]|[Ff][Ee][Bb]|[Mm][Aa][Rr]|[Aa][Pp][Rr]|[Mm][Aa][Yy]|[Jj][Uu][Nn]|[Jj][Uu][Ll]|[Aa][Uu][Gg]|[Ss][Ee][Pp]|[Oo][Cc][Tt]|[Nn][Oo][Vv]|[Dd][Ee][Cc])))* (?:\*(?:/[1-7])?|[0-7]-[0-7](?:/[1-7])?|[0-7]|(?:[Ss][Uu][Nn]|[Mm][Oo][Nn]|[Tt][Uu][Ee]|[Ww][Ee][Dd]|[Tt][Hh][Uu]|[Ff][Rr][Ii]|[Ss][Aa][Tt])-(?:[Ss][Uu][Nn]|[Mm][Oo][Nn]|[Tt][Uu][Ee]|[Ww][Ee][Dd]|[Tt][Hh][Uu]|[Ff][Rr][Ii]|[Ss][Aa][Tt])(?:/[1-7])?|(?:[Ss][Uu][Nn]|[Mm][Oo][Nn]|[Tt][Uu][Ee]|[Ww][Ee][Dd]|[Tt][Hh][Uu]|[Ff][Rr][Ii]|[Ss][Aa][Tt]))(?:,(?:\*(?:/[1-7])?|[0-7]-[0-7](?:/[1-7])?|[0-7]|(?:[Ss][Uu][Nn]|[Mm][Oo][Nn]|[Tt][Uu][Ee]|[Ww][Ee][Dd]|[Tt][Hh][Uu]|[Ff][Rr][Ii]|[Ss][Aa][Tt])-(?:[Ss][Uu][Nn]|[Mm][Oo][Nn]|[Tt][Uu][Ee]|[Ww][Ee][Dd]|[Tt][Hh][Uu]|[Ff][Rr][Ii]|[Ss][Aa][Tt])(?:/[1-7])?|(?:[Ss][Uu][Nn]|[Mm][Oo][Nn]|[Tt][Uu][Ee]|[Ww][Ee][Dd]|[Tt][Hh][Uu]|[Ff][Rr][Ii]|[Ss][Aa][Tt])))*)$";

/// What a `cron_expr` outside [`CRON_PATTERN`] answers.
const CRON_MESSAGE: &str = "Invalid cron expression: {value} (use 5 fields: minute hour day-of-month month day-of-week, \
     each numbers in range, *, ranges, lists or steps, with month and day names and L for the last day of the month; \
     or @daily, @hourly, ...)";
/// The five methods, in any case.
const METHOD_PATTERN: &str =
    r"^(?:[Gg][Ee][Tt]|[Pp][Oo][Ss][Tt]|[Pp][Uu][Tt]|[Pp][Aa][Tt][Cc][Hh]|[Dd][Ee][Ll][Ee][Tt][Ee])$";
/// What a `method` other than the five answers.
const METHOD_MESSAGE: &str = "Value error, Method must be GET, POST, PUT, PATCH, or DELETE";
/// What a `name` of other characters answers.
const NAME_MESSAGE: &str =
    "Value error, Name must start with alphanumeric and contain only alphanumeric, spaces, '.', '_', '-'";
/// What an `endpoint` that is not a path answers.
const ENDPOINT_MESSAGE: &str = "Value error, Endpoint must start with '/'";

static NAME: LazyLock<regex::Regex> = LazyLock::new(|| {
    #[allow(clippy::unwrap_used)] // a constant pattern
    regex::Regex::new(r"^[a-zA-Z0-9][a-zA-Z0-9 ._-]*$").unwrap()
});

/// Body of `POST /schedules` (Agno's `ScheduleCreate`).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ScheduleCreate {
    /// Unique per owner; letters, digits, spaces, `.`, `_`, `-`.
    #[schemars(length(max = 255), regex(pattern = r"^[a-zA-Z0-9][a-zA-Z0-9 ._-]*$"), extend("x-message" = NAME_MESSAGE))]
    name: String,
    /// 5-field cron expression (or `@daily`, ...).
    #[schemars(length(max = 128), regex(pattern = CRON_PATTERN), extend("x-message" = CRON_MESSAGE, "x-plain" = true))]
    cron_expr: String,
    /// A route of this OS, e.g. `/agents/helper/runs`.
    #[schemars(length(max = 512), regex(pattern = r"^/"), extend("x-message" = ENDPOINT_MESSAGE))]
    endpoint: String,
    /// `GET`, `POST`, `PUT`, `PATCH` or `DELETE` (default `POST`).
    #[serde(default)]
    #[schemars(
        with = "String",
        regex(
            pattern = METHOD_PATTERN
        ),
        extend("x-message" = METHOD_MESSAGE)
    )]
    method: Option<String>,
    /// Free text.
    #[serde(default)]
    #[schemars(length(max = 1024))]
    description: Option<String>,
    /// JSON object sent with the call (form fields for a run endpoint).
    #[serde(default)]
    #[schemars(with = "Option<Map<String, Value>>")]
    payload: Option<Value>,
    /// IANA time zone of the cron expression (default `UTC`).
    #[serde(default)]
    #[schemars(with = "String", length(max = 64))]
    timezone: Option<String>,
    /// Longest a firing may take, 1 to 86400 (default 3600).
    #[serde(default)]
    #[schemars(with = "i64", range(min = 1, max = 86_400))]
    timeout_seconds: Option<i64>,
    /// Retries of a failed firing, 0 to 10 (default 0).
    #[serde(default)]
    #[schemars(with = "i64", range(min = 0, max = 10))]
    max_retries: Option<i64>,
    /// Wait between retries, 1 to 3600 (default 60).
    #[serde(default)]
    #[schemars(with = "i64", range(min = 1, max = 3600))]
    retry_delay_seconds: Option<i64>,
    /// Owner (ignored under user isolation: the caller owns it).
    #[serde(default)]
    user_id: Option<String>,
}

/// Body of `PATCH /schedules/{id}` (Agno's `ScheduleUpdate`): any of these fields.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ScheduleUpdateBody {
    #[serde(default)]
    #[schemars(with = "String", length(max = 255), regex(pattern = r"^[a-zA-Z0-9][a-zA-Z0-9 ._-]*$"), extend("x-message" = NAME_MESSAGE))]
    name: Option<String>,
    #[serde(default)]
    #[schemars(with = "String", length(max = 128), regex(pattern = CRON_PATTERN), extend("x-message" = CRON_MESSAGE, "x-plain" = true))]
    cron_expr: Option<String>,
    #[serde(default)]
    #[schemars(with = "String", length(max = 512), regex(pattern = r"^/"), extend("x-message" = ENDPOINT_MESSAGE))]
    endpoint: Option<String>,
    #[serde(default)]
    #[schemars(
        with = "String",
        regex(
            pattern = METHOD_PATTERN
        ),
        extend("x-message" = METHOD_MESSAGE)
    )]
    method: Option<String>,
    #[schemars(length(max = 1024))]
    description: Option<String>,
    #[schemars(with = "Option<Map<String, Value>>")]
    payload: Option<Value>,
    #[serde(default)]
    #[schemars(with = "String", length(max = 64))]
    timezone: Option<String>,
    #[serde(default)]
    #[schemars(with = "i64", range(min = 1, max = 86_400))]
    timeout_seconds: Option<i64>,
    #[serde(default)]
    #[schemars(with = "i64", range(min = 0, max = 10))]
    max_retries: Option<i64>,
    #[serde(default)]
    #[schemars(with = "i64", range(min = 1, max = 3600))]
    retry_delay_seconds: Option<i64>,
}

/// Query of the listings.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListParams {
    /// Only enabled (or disabled) schedules.
    enabled: Option<bool>,
    /// Page size, 1 to 1000 (default 100).
    #[schemars(range(min = 1, max = 1000))]
    limit: Option<usize>,
    /// 1-based page.
    #[schemars(range(min = 1, max = i64::MAX))]
    page: Option<usize>,
}

/// A schedule as Agno's `ScheduleResponse`.
pub(crate) fn schedule_json(s: &Schedule) -> Value {
    json!({
        "id": s.id, "user_id": s.user_id, "name": s.name, "description": s.description, "method": s.method,
        "endpoint": s.endpoint, "payload": s.payload,
        // An on-demand schedule (no cron) shows none, as Agno's `public_cron`.
        "cron_expr": (!s.cron_expr.is_empty()).then_some(&s.cron_expr), "timezone": s.timezone,
        "timeout_seconds": s.timeout_seconds, "max_retries": s.max_retries,
        "retry_delay_seconds": s.retry_delay_seconds, "enabled": s.enabled, "next_run_at": s.next_run_at,
        "managed_by": s.managed_by, "target_type": s.target_type, "target_id": s.target_id,
        "disabled_reason": s.disabled_reason, "created_at": s.created_at, "updated_at": s.updated_at,
    })
}

/// A schedule run as Agno's `ScheduleRunResponse`.
pub(crate) fn run_json(r: &ScheduleRun) -> Value {
    json!({
        "id": r.id, "schedule_id": r.schedule_id, "user_id": r.user_id, "attempt": r.attempt, "triggered_at": r.triggered_at,
        "completed_at": r.completed_at, "status": r.status, "status_code": r.status_code,
        "run_id": r.run_id, "session_id": r.session_id, "error": r.error, "input": r.input,
        "output": r.output, "requirements": r.requirements, "created_at": r.created_at,
    })
}

/// A body validator's refusal, as pydantic reports a `ValueError`.
fn invalid(field: &str, message: impl std::fmt::Display) -> ApiError {
    ApiError::value_error(field, message)
}

fn check_name(name: &str) -> ApiResult<()> {
    if name.chars().count() > 255 || !NAME.is_match(name) {
        return Err(invalid(
            "name",
            "Name must start with alphanumeric and contain only alphanumeric, spaces, '.', '_', '-'",
        ));
    }
    Ok(())
}

fn check_method(method: &str) -> ApiResult<String> {
    let upper = method.to_ascii_uppercase();
    if !matches!(upper.as_str(), "GET" | "POST" | "PUT" | "PATCH" | "DELETE") {
        return Err(invalid("method", "Method must be GET, POST, PUT, PATCH, or DELETE"));
    }
    Ok(upper)
}

fn check_endpoint(endpoint: &str, method: &str) -> ApiResult<()> {
    if !endpoint.starts_with('/') {
        return Err(invalid("endpoint", "Endpoint must start with '/'"));
    }
    if endpoint.contains("://") {
        return Err(invalid("endpoint", "Endpoint must be a path, not a full URL"));
    }
    if endpoint.len() > 512 {
        return Err(invalid("endpoint", "Endpoint must be at most 512 characters"));
    }
    if !is_os_route(method, endpoint) {
        // The route named does not exist here (as an unknown agent or team would not).
        return Err(ApiError::not_found(format!(
            "{method} {endpoint} is not a route of this AgentOS: a schedule can only call this OS's own routes"
        )));
    }
    Ok(())
}

fn check_range(field: &str, value: i64, min: i64, max: i64) -> ApiResult<i64> {
    let (kind, message, ctx) = if value < min {
        ("greater_than_equal", format!("Input should be greater than or equal to {min}"), json!({"ge": min}))
    } else if value > max {
        ("less_than_equal", format!("Input should be less than or equal to {max}"), json!({"le": max}))
    } else {
        return Ok(value);
    };
    Err(ApiError::unprocessable(message).with_type(kind).at("body", field).with_ctx(ctx))
}

fn check_payload(payload: Option<Value>) -> ApiResult<Option<Value>> {
    match payload {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(Value::Object(m))),
        Some(_) => Err(ApiError::unprocessable("Input should be a valid dictionary (a JSON object)")
            .with_type("dict_type")
            .at("body", "payload")),
    }
}

/// Agno's `_require_endpoint_permission`: a schedule fires with the OS's own authority, so
/// scheduling (creating, re-arming, triggering) needs the caller's own right to call the target:
/// `{agents,teams,workflows}:run` on that component for a run endpoint, admin for any other
/// endpoint. Nothing to check on an OS without authentication.
fn require_endpoint_permission(state: &AppState, principal: &Principal, endpoint: &str, method: &str) -> ApiResult<()> {
    if !state.auth.required() || principal.admin {
        return Ok(());
    }
    let run_target =
        (method.eq_ignore_ascii_case("POST")).then(|| crate::scheduler::executor::run_target(endpoint)).flatten();
    let Some((family, id)) = run_target else {
        return Err(ApiError::forbidden("Only admins can schedule an endpoint that is not a run endpoint"));
    };
    let required = format!("{family}:run");
    if !crate::auth::scopes::has_required(
        &principal.scopes,
        &[required.as_str()],
        Some((family, id)),
        &state.auth.admin_scope,
    ) {
        return Err(ApiError::forbidden(format!("Insufficient permissions: {required} is required")));
    }
    Ok(())
}

/// The cron expression in its time zone; 422 with the reason as a plain `detail`, as Agno.
fn cron(expr: &str, timezone: &str) -> ApiResult<CronSchedule> {
    check_timezone(timezone).map_err(|e| ApiError::unprocessable_plain(e.to_string()))?;
    CronSchedule::parse(expr, timezone).map_err(|e| ApiError::unprocessable_plain(e.to_string()))
}

/// The schedule's next time from now; 422 (plain) when it has none.
fn next_time(cron: &CronSchedule) -> ApiResult<i64> {
    let now = now_epoch_secs();
    cron.next_run(now, now).map_err(|e| ApiError::unprocessable_plain(e.to_string()))
}

impl ListParams {
    /// Agno's paging of the schedule listings: `limit` 1 to 1000 (default 100).
    fn paging(&self) -> ApiResult<Paging> {
        let limit = self.limit.unwrap_or(100);
        if limit > 1000 {
            return Err(ApiError::unprocessable("limit must be at most 1000").at("query", "limit"));
        }
        Paging::new(Some(limit), self.page)
    }
}

/// The caller's schedule `id` (404 for another owner's, as for a missing one).
async fn visible(state: &AppState, principal: &Principal, id: &str) -> ApiResult<Schedule> {
    state
        .require_db()?
        .get_schedule(id, principal.user_scope(None).as_deref())
        .await?
        .ok_or_else(|| ApiError::not_found("Schedule not found"))
}

/// `GET /schedules`.
pub async fn list_schedules(
    Caller { state, principal }: Caller,
    Query(q): Query<ListParams>,
) -> ApiResult<Json<Value>> {
    let paging = q.paging()?;
    let query = ScheduleQuery {
        enabled: q.enabled,
        user_id: principal.user_scope(None),
        limit: Some(paging.limit),
        page: Some(paging.page),
    };
    let (rows, total) = state.require_db()?.get_schedules(&query).await?;
    Ok(paging.respond(rows.iter().map(schedule_json).collect(), total))
}

/// `POST /schedules`: 201 with the schedule, enabled, its next time computed.
pub async fn create_schedule(Caller { state, principal }: Caller, body: Bytes) -> ApiResult<(StatusCode, Json<Value>)> {
    let body: ScheduleCreate = json_body(&body)?;
    let db = state.require_db()?;
    check_name(&body.name)?;
    let method = check_method(body.method.as_deref().unwrap_or("POST"))?;
    check_endpoint(&body.endpoint, &method)?;
    let timezone = body.timezone.unwrap_or_else(|| "UTC".to_owned());
    let now = now_epoch_secs();
    let next = next_time(&cron(&body.cron_expr, &timezone)?)?;
    require_endpoint_permission(&state, &principal, &body.endpoint, &method)?;
    // The caller owns it (a JWT's `sub` when not isolated; an unauthenticated caller may name
    // an owner in `user_id`).
    let owner = principal.user_scope(body.user_id).or_else(|| principal.subject.clone());
    if db.get_schedule_by_name(&body.name, owner.as_deref()).await?.is_some() {
        return Err(ApiError::conflict(format!("Schedule with name '{}' already exists", body.name)));
    }
    let mut schedule = Schedule::new(body.name, body.endpoint, body.cron_expr.trim());
    schedule.method = method;
    schedule.description = body.description;
    schedule.payload = check_payload(body.payload)?;
    schedule.timezone = timezone;
    schedule.timeout_seconds = check_range("timeout_seconds", body.timeout_seconds.unwrap_or(3600), 1, 86_400)?;
    schedule.max_retries = check_range("max_retries", body.max_retries.unwrap_or(0), 0, 10)?;
    schedule.retry_delay_seconds = check_range("retry_delay_seconds", body.retry_delay_seconds.unwrap_or(60), 1, 3600)?;
    schedule.next_run_at = Some(next);
    schedule.user_id = owner;
    schedule.created_at = now;
    let stored = db.create_schedule(&schedule).await?;
    Ok((StatusCode::CREATED, Json(schedule_json(&stored))))
}

/// `GET /schedules/{schedule_id}`.
pub async fn get_schedule(Caller { state, principal }: Caller, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    Ok(Json(schedule_json(&visible(&state, &principal, &id).await?)))
}

/// `PATCH /schedules/{schedule_id}`: changes the fields sent; a new cron expression or time zone
/// recomputes the next time of an enabled schedule.
pub async fn update_schedule(
    Caller { state, principal }: Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let fields: Map<String, Value> = json_body(&body)?;
    for field in
        ["name", "cron_expr", "endpoint", "method", "timezone", "timeout_seconds", "max_retries", "retry_delay_seconds"]
    {
        if fields.get(field).is_some_and(Value::is_null) {
            return Err(ApiError::unprocessable(format!("Value error, '{field}' cannot be set to null"))
                .at("body", "")
                .with_ctx(json!({"error": {}})));
        }
    }
    // The typed body checks the types; the map tells which fields were sent.
    let body: ScheduleUpdateBody = json_body(&body)?;
    let existing = visible(&state, &principal, &id).await?;
    let db = state.require_db()?;
    let method = body.method.as_deref().map(check_method).transpose()?;
    if let Some(name) = &body.name {
        check_name(name)?;
    }
    if body.endpoint.is_some() || method.is_some() {
        let m = method.clone().unwrap_or_else(|| existing.method.clone());
        let endpoint = body.endpoint.as_deref().unwrap_or(&existing.endpoint);
        check_endpoint(endpoint, &m)?;
        require_endpoint_permission(&state, &principal, endpoint, &m)?;
    }
    let mut update = ScheduleUpdate {
        name: body.name.clone(),
        method,
        endpoint: body.endpoint,
        description: fields.contains_key("description").then_some(body.description),
        payload: if fields.contains_key("payload") { Some(check_payload(body.payload)?) } else { None },
        timeout_seconds: body.timeout_seconds.map(|v| check_range("timeout_seconds", v, 1, 86_400)).transpose()?,
        max_retries: body.max_retries.map(|v| check_range("max_retries", v, 0, 10)).transpose()?,
        retry_delay_seconds: body
            .retry_delay_seconds
            .map(|v| check_range("retry_delay_seconds", v, 1, 3600))
            .transpose()?,
        ..ScheduleUpdate::default()
    };
    if body.cron_expr.is_some() || body.timezone.is_some() {
        let expr = body.cron_expr.as_deref().unwrap_or(&existing.cron_expr).trim().to_owned();
        let tz = body.timezone.clone().unwrap_or_else(|| existing.timezone.clone());
        let parsed = cron(&expr, &tz)?;
        if existing.enabled {
            update.next_run_at = Some(Some(next_time(&parsed)?));
        }
        update.cron_expr = Some(expr);
        update.timezone = Some(tz);
    }
    if update == ScheduleUpdate::default() {
        return Ok(Json(schedule_json(&existing)));
    }
    if let Some(name) = body.name.filter(|n| *n != existing.name)
        && db.get_schedule_by_name(&name, existing.user_id.as_deref()).await?.is_some()
    {
        return Err(ApiError::conflict(format!("Schedule with name '{name}' already exists")));
    }
    let scope = principal.user_scope(None);
    let updated = db
        .update_schedule(&id, scope.as_deref(), &update)
        .await?
        .ok_or_else(|| ApiError::not_found("Schedule not found"))?;
    Ok(Json(schedule_json(&updated)))
}

/// `DELETE /schedules/{schedule_id}`: 204; the schedule's runs go with it.
pub async fn delete_schedule(Caller { state, principal }: Caller, Path(id): Path<String>) -> ApiResult<NoContent> {
    visible(&state, &principal, &id).await?;
    let scope = principal.user_scope(None);
    if !state.require_db()?.delete_schedule(&id, scope.as_deref()).await? {
        return Err(ApiError::not_found("Schedule not found"));
    }
    Ok(NoContent)
}

fn state_json(s: &Schedule) -> Value {
    json!({"id": s.id, "name": s.name, "enabled": s.enabled, "next_run_at": s.next_run_at, "updated_at": s.updated_at})
}

async fn set_enabled(state: &AppState, principal: &Principal, id: &str, enabled: bool) -> ApiResult<Json<Value>> {
    let existing = visible(state, principal, id).await?;
    let mut update = ScheduleUpdate { enabled: Some(enabled), ..ScheduleUpdate::default() };
    if enabled {
        // Re-arming puts the endpoint back on the poller: the same right as creating it.
        require_endpoint_permission(state, principal, &existing.endpoint, &existing.method)?;
        update.next_run_at = Some(Some(next_time(&cron(&existing.cron_expr, &existing.timezone)?)?));
    }
    let scope = principal.user_scope(None);
    let updated = state
        .require_db()?
        .update_schedule(id, scope.as_deref(), &update)
        .await?
        .ok_or_else(|| ApiError::not_found("Schedule not found"))?;
    tracing::info!(schedule = %updated.name, enabled, next_run_at = ?updated.next_run_at, "schedule changed");
    Ok(Json(state_json(&updated)))
}

/// `POST /schedules/{schedule_id}/enable`: enabled, with its next time from now.
pub async fn enable_schedule(Caller { state, principal }: Caller, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    set_enabled(&state, &principal, &id, true).await
}

/// `POST /schedules/{schedule_id}/disable`.
pub async fn disable_schedule(Caller { state, principal }: Caller, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    set_enabled(&state, &principal, &id, false).await
}

/// `POST /schedules/{schedule_id}/trigger`: fires the schedule now (as its owner), follows it to
/// its end and answers with the last attempt's run. The schedule's claim and next time are left
/// alone, as in Agno. 409 for a disabled schedule.
pub async fn trigger_schedule(Caller { state, principal }: Caller, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let schedule = visible(&state, &principal, &id).await?;
    if !schedule.enabled {
        return Err(ApiError::conflict("Schedule is disabled"));
    }
    require_endpoint_permission(&state, &principal, &schedule.endpoint, &schedule.method)?;
    let executor = state.scheduler.executor(&state);
    let run = executor.execute(&schedule, &state.stopping).await?;
    Ok(Json(run_json(&run)))
}

/// `GET /schedules/{schedule_id}/runs`: newest first.
pub async fn list_schedule_runs(
    Caller { state, principal }: Caller,
    Path(id): Path<String>,
    Query(q): Query<ListParams>,
) -> ApiResult<Json<Value>> {
    visible(&state, &principal, &id).await?;
    let paging = q.paging()?;
    let scope = principal.user_scope(None);
    let (runs, total) =
        state.require_db()?.get_schedule_runs(&id, scope.as_deref(), Some(paging.limit), Some(paging.page)).await?;
    Ok(paging.respond(runs.iter().map(run_json).collect(), total))
}

/// `GET /schedules/{schedule_id}/runs/{run_id}`.
pub async fn get_schedule_run(
    Caller { state, principal }: Caller,
    Path((id, run_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let scope = principal.user_scope(None);
    let run = state
        .require_db()?
        .get_schedule_run(&run_id, scope.as_deref())
        .await?
        .filter(|r| r.schedule_id == id)
        .ok_or_else(|| ApiError::not_found("Schedule run not found"))?;
    Ok(Json(run_json(&run)))
}
