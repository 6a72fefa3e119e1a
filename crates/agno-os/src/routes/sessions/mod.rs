//! `/sessions`: list, create, read, update, rename and delete sessions, and read their runs, as
//! Agno 3.1's session router answers them (`SessionSchema`, `AgentSessionDetailSchema`,
//! `RunSchema`, ...).
//!
//! Every storage call is scoped with [`Principal::user_scope`]: under user isolation another
//! user's session answers 404 exactly like a missing one, and listings only hold the caller's
//! sessions. Listing never reads run bodies (`get_sessions`).

use std::sync::Arc;

use agno_core::{
    AgentSession, Db, RunStatus, SessionQuery as StoreQuery, SessionSort, SessionSummary, SessionType, SortOrder,
    StateUpdate,
};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

pub(crate) mod schema;

use super::params::{NoContent, Paging};

use schema::{
    agent_run_schema, classify_run, run_preview, session_detail, session_schema, session_type_of, team_run_schema,
    to_map, without_nulls, workflow_run_schema,
};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Metadata keys the runtime owns; Agno strips them from caller-supplied session metadata.
const RESERVED_METADATA_KEYS: [&str; 3] = ["agno_component_version", "agno_dispatch_chain", "agno_dispatch_depth"];

/// Length of the `run_input` and `content_preview` texts of a run preview.
pub(super) const PREVIEW_CHARS: usize = 280;

// ---------------------------------------------------------------------------------------------
// Query parameters
// ---------------------------------------------------------------------------------------------

/// The query string as `(name, value)` pairs; repeated names are kept (`status=A&status=B`).
struct Params(Vec<(String, String)>);

type RawQuery = axum::extract::RawQuery;

/// Query of `GET /sessions` (documents and bounds the parameters [`list_sessions`] reads).
#[derive(Debug, schemars::JsonSchema)]
#[allow(dead_code)]
pub struct ListQuery {
    /// `agent`, `team` or `workflow`.
    #[schemars(rename = "type", extend("enum" = ["agent", "team", "workflow"]))]
    kind: Option<String>,
    /// Sessions of this agent, team or workflow.
    component_id: Option<String>,
    /// Sessions of this user (the caller's own under user isolation).
    user_id: Option<String>,
    /// Sessions whose name contains this.
    session_name: Option<String>,
    /// Page size (default 20).
    #[schemars(range(min = 1, max = i64::MAX))]
    limit: Option<u64>,
    /// 1-based page.
    #[schemars(range(min = 1, max = i64::MAX))]
    page: Option<u64>,
    #[schemars(extend("enum" = ["created_at", "updated_at"]))]
    sort_by: Option<String>,
    #[schemars(extend("enum" = ["asc", "desc"]))]
    sort_order: Option<String>,
    db_id: Option<String>,
    table: Option<String>,
}

/// Query of `POST /sessions`.
#[derive(Debug, schemars::JsonSchema)]
#[allow(dead_code)]
pub struct CreateQuery {
    /// `agent` (default), `team` or `workflow`.
    #[schemars(rename = "type", extend("enum" = ["agent", "team", "workflow"]))]
    kind: Option<String>,
    db_id: Option<String>,
}

/// Query of the routes reading or changing one session.
#[derive(Debug, schemars::JsonSchema)]
#[allow(dead_code)]
pub struct SessionParams {
    /// `agent`, `team` or `workflow`.
    #[schemars(rename = "type", extend("enum" = ["agent", "team", "workflow"]))]
    kind: Option<String>,
    user_id: Option<String>,
    db_id: Option<String>,
    table: Option<String>,
}

/// Query of the session deletes.
#[derive(Debug, schemars::JsonSchema)]
#[allow(dead_code)]
pub struct DeleteQuery {
    user_id: Option<String>,
    /// Also delete the media the runs stored.
    delete_media: Option<bool>,
    db_id: Option<String>,
    table: Option<String>,
}

/// Query of a session's runs and run previews.
#[derive(Debug, schemars::JsonSchema)]
#[allow(dead_code)]
pub struct RunsQuery {
    #[schemars(rename = "type", extend("enum" = ["agent", "team", "workflow"]))]
    kind: Option<String>,
    user_id: Option<String>,
    /// Runs created at or after this epoch second.
    created_after: Option<i64>,
    /// Runs created at or before this epoch second.
    created_before: Option<i64>,
    /// Runs in these statuses (repeat the parameter; any case).
    #[schemars(
        inner(regex(pattern = r"^(?:[Pp][Ee][Nn][Dd][Ii][Nn][Gg]|[Rr][Uu][Nn][Nn][Ii][Nn][Gg]|[Cc][Oo][Mm][Pp][Ll][Ee][Tt][Ee][Dd]|[Pp][Aa][Uu][Ss][Ee][Dd]|[Cc][Aa][Nn][Cc][Ee][Ll][Ll][Ee][Dd]|[Ee][Rr][Rr][Oo][Rr]|[Rr][Ee][Gg][Ee][Nn][Ee][Rr][Aa][Tt][Ee][Dd])$")),
        extend("x-message" = "Invalid status value {value}: expected one of CANCELLED, COMPLETED, ERROR, PAUSED, PENDING, REGENERATED, RUNNING")
    )]
    status: Option<Vec<String>>,
    db_id: Option<String>,
    table: Option<String>,
}

impl Params {
    /// The query's pairs, once they keep the bounds `T` (the route's documented query) declares.
    fn read<T: schemars::JsonSchema>(query: RawQuery) -> ApiResult<Self> {
        let text = query.0.unwrap_or_default();
        let pairs: Vec<(String, String)> =
            form_urlencoded::parse(text.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        let mut grouped: Vec<(String, Vec<String>)> = Vec::new();
        for (k, v) in &pairs {
            match grouped.iter_mut().find(|(name, _)| name == k) {
                Some((_, values)) => values.push(v.clone()),
                None => grouped.push((k.clone(), vec![v.clone()])),
            }
        }
        super::validate::check::<T>(&super::validate::query_value::<T>(&grouped), "query")?;
        Ok(Self(pairs))
    }

    /// The last value given for `name` (FastAPI's rule for a scalar parameter).
    fn raw(&self, name: &str) -> Option<&str> {
        self.0.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// A text parameter; an empty value counts as absent.
    fn text(&self, name: &str) -> Option<String> {
        self.raw(name).filter(|v| !v.is_empty()).map(str::to_owned)
    }

    /// Every value given for `name`.
    fn all(&self, name: &str) -> Vec<&str> {
        self.0.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect()
    }

    fn int(&self, name: &str) -> ApiResult<Option<i64>> {
        self.raw(name)
            .map(|v| {
                v.trim()
                    .parse::<i64>()
                    .map_err(|_| ApiError::unprocessable(format!("{name} must be an integer, got {v:?}")))
            })
            .transpose()
    }

    /// A positive integer (`>= 1`), or `default`.
    fn positive(&self, name: &str, default: usize) -> ApiResult<usize> {
        match self.int(name)? {
            None => Ok(default),
            Some(n) if n >= 1 => {
                usize::try_from(n).map_err(|_| ApiError::unprocessable(format!("{name} is too large")))
            }
            Some(n) => Err(ApiError::unprocessable(format!("{name} must be greater than or equal to 1, got {n}"))),
        }
    }

    fn bool(&self, name: &str) -> ApiResult<bool> {
        match self.raw(name).map(str::to_ascii_lowercase).as_deref() {
            None => Ok(false),
            Some("true" | "1" | "yes" | "on" | "t" | "y") => Ok(true),
            Some("false" | "0" | "no" | "off" | "f" | "n") => Ok(false),
            Some(other) => Err(ApiError::unprocessable(format!("{name} must be a boolean, got {other:?}"))),
        }
    }

    /// `type`: `agent`, `team` or `workflow`.
    fn session_type(&self) -> ApiResult<Option<SessionType>> {
        self.raw("type").map(parse_session_type).transpose()
    }
}

pub(super) fn parse_session_type(text: &str) -> ApiResult<SessionType> {
    match text {
        "agent" => Ok(SessionType::Agent),
        "team" => Ok(SessionType::Team),
        "workflow" => Ok(SessionType::Workflow),
        other => Err(ApiError::unprocessable(format!("type must be 'agent', 'team' or 'workflow', got {other:?}"))),
    }
}

/// The database a request addresses (`db_id`, `table` as Agno's `get_db`): the OS has one.
fn database<'a>(state: &'a AppState, params: &Params) -> ApiResult<&'a Arc<dyn Db>> {
    super::databases::select_db(state, params.text("db_id").as_deref(), params.text("table").as_deref())
}

// ---------------------------------------------------------------------------------------------
// JSON bodies
// ---------------------------------------------------------------------------------------------

/// The body as a JSON object; an empty body is `None`.
fn json_object(body: &Bytes) -> ApiResult<Option<Map<String, Value>>> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(_) => Err(ApiError::unprocessable("the body must be a JSON object")),
        Err(e) => Err(ApiError::unprocessable(format!("the body is not valid JSON: {e}"))),
    }
}

fn body_text(body: &Map<String, Value>, field: &str) -> ApiResult<Option<String>> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::unprocessable(format!("{field} must be a string"))),
    }
}

fn body_object(body: &Map<String, Value>, field: &str) -> ApiResult<Option<Map<String, Value>>> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m.clone())),
        Some(_) => Err(ApiError::unprocessable(format!("{field} must be a JSON object"))),
    }
}

/// A non-empty list of `T` parsed from each item.
fn body_list<T>(
    body: &Map<String, Value>,
    field: &str,
    item: impl Fn(&Value) -> Option<T>,
    what: &str,
) -> ApiResult<Vec<T>> {
    let Some(Value::Array(items)) = body.get(field) else {
        return Err(ApiError::unprocessable(format!("{field} is required: a list of {what}")));
    };
    if items.is_empty() {
        return Err(ApiError::unprocessable(format!("{field} must hold at least 1 item")));
    }
    items
        .iter()
        .map(|v| item(v).ok_or_else(|| ApiError::unprocessable(format!("every item of {field} must be {what}"))))
        .collect()
}

/// Caller metadata without the keys the runtime owns; `None` when nothing is left of it.
fn sanitize_metadata(metadata: Option<Map<String, Value>>) -> Option<Map<String, Value>> {
    let mut m = metadata?;
    if !RESERVED_METADATA_KEYS.iter().any(|k| m.contains_key(*k)) {
        return Some(m);
    }
    for k in RESERVED_METADATA_KEYS {
        m.remove(k);
    }
    (!m.is_empty()).then_some(m)
}

// ---------------------------------------------------------------------------------------------
// Storage helpers
// ---------------------------------------------------------------------------------------------

fn not_found(session_id: &str) -> ApiError {
    ApiError::not_found(format!("Session with id '{session_id}' not found"))
}

/// The session visible to the caller (with its runs when `runs_limit` is `None`), or 404.
async fn visible_session(
    db: &Arc<dyn Db>,
    session_id: &str,
    user_id: Option<&str>,
    runs_limit: Option<usize>,
    missing: impl FnOnce() -> ApiError,
) -> ApiResult<AgentSession> {
    db.get_session(session_id, user_id, runs_limit).await?.ok_or_else(missing)
}

/// The detail answer of a session: the type asked for, else the session's own.
fn detail_of(session: &AgentSession, kind: Option<SessionType>) -> ApiResult<Value> {
    let d = to_map(session)?;
    let kind = kind.unwrap_or_else(|| session_type_of(&d));
    Ok(session_detail(&d, kind))
}

// ---------------------------------------------------------------------------------------------
// Handlers
// ---------------------------------------------------------------------------------------------

/// `GET /sessions`: `type`, `component_id`, `user_id`, `session_name` (contains), `limit` (20),
/// `page` (1), `sort_by` (`created_at` | `updated_at`), `sort_order` (`desc`); paginated
/// `SessionSchema` rows.
pub async fn list_sessions(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    let params = Params::read::<ListQuery>(query)?;
    let session_type = params.session_type()?;
    let limit = params.positive("limit", 20)?;
    let page = params.positive("page", 1)?;
    let sort_by = match params.raw("sort_by").unwrap_or("created_at") {
        "created_at" => SessionSort::CreatedAt,
        "updated_at" => SessionSort::UpdatedAt,
        other => {
            return Err(ApiError::unprocessable(format!(
                "sort_by must be 'created_at' or 'updated_at', got {other:?}"
            )));
        }
    };
    let sort_order = match params.raw("sort_order").unwrap_or("desc") {
        "asc" => SortOrder::Asc,
        "desc" => SortOrder::Desc,
        other => return Err(ApiError::unprocessable(format!("sort_order must be 'asc' or 'desc', got {other:?}"))),
    };
    let db = database(&state, &params)?;
    let paging = Paging::new(Some(limit), Some(page))?;
    let found = db
        .get_sessions(&StoreQuery {
            session_type,
            user_id: principal.user_scope(params.text("user_id")),
            component_id: params.text("component_id"),
            session_name: params.text("session_name"),
            limit: Some(limit),
            page: Some(page),
            sort_by,
            sort_order,
            ..StoreQuery::default()
        })
        .await?;
    // A session without a stored name is named after its first run's input (Agno reads every
    // run for it; only the first runs' inputs are read here).
    let unnamed: Vec<String> = found
        .sessions
        .iter()
        .filter(|s| s.session_data.as_ref().is_none_or(|d| d.get("session_name").is_none_or(Value::is_null)))
        .map(|s| s.session_id.clone())
        .collect();
    let user_id = principal.user_scope(params.text("user_id"));
    let first_inputs =
        if unnamed.is_empty() { Default::default() } else { db.first_run_inputs(&unnamed, user_id.as_deref()).await? };
    let data = found
        .sessions
        .iter()
        .map(|s| {
            let mut d = to_map(s)?;
            if let Some(input) = first_inputs.get(&s.session_id) {
                d.insert("runs".to_owned(), json!([first_run_of(input)]));
            }
            Ok(session_schema(&d))
        })
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(paging.respond(data, found.total))
}

/// A stand-in first run for naming a session from its input: the user message a run on that
/// input starts with (what Agno's `get_session_name` finds first), else the input itself.
fn first_run_of(input: &Value) -> Value {
    match input.get("input_content") {
        Some(content) if !content.is_null() && content != "" => {
            json!({"messages": [{"role": "user", "content": content}]})
        }
        _ => json!({"input": input}),
    }
}

/// `POST /sessions?type=agent`: body `CreateSessionRequest` (`session_id`, `session_name`,
/// `session_state`, `metadata`, `user_id`, `agent_id`, `team_id`, `workflow_id`; all optional).
/// 201 with the detail; 409 when the id is taken.
pub async fn create_session(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    query: RawQuery,
    body: Bytes,
) -> ApiResult<Response> {
    let params = Params::read::<CreateQuery>(query)?;
    let kind = params.session_type()?.unwrap_or(SessionType::Agent);
    let body = json_object(&body)?.unwrap_or_default();
    let requested_id = body_text(&body, "session_id")?;
    let session_name = body_text(&body, "session_name")?;
    let session_state = body_object(&body, "session_state")?;
    let metadata = sanitize_metadata(body_object(&body, "metadata")?);
    let user_id = principal.user_scope(body_text(&body, "user_id")?);
    let component_id = body_text(&body, &format!("{}_id", kind.as_str()))?;
    for other in ["agent_id", "team_id", "workflow_id"] {
        body_text(&body, other)?;
    }
    let db = database(&state, &params)?;

    let session_id = requested_id.clone().unwrap_or_else(agno_core::new_id);
    if requested_id.is_some() {
        let scoped = principal.user_scope(None);
        if db.get_session(&session_id, scoped.as_deref(), Some(0)).await?.is_some() {
            return Err(ApiError::conflict(format!(
                "Session with id '{session_id}' already exists. Use PATCH /sessions/{session_id} to update it."
            )));
        }
        // Another user's session is answered as every route answers it, as one that is not
        // found, not as a conflict that would tell it exists.
        if scoped.is_some() && db.get_session(&session_id, None, Some(0)).await?.is_some() {
            return Err(not_found(&session_id));
        }
    }

    let mut session = AgentSession::new(session_id.clone());
    session.user_id = user_id.clone();
    match kind {
        SessionType::Agent => session.agent_id = component_id,
        SessionType::Team => session.team_id = component_id,
        SessionType::Workflow => session.workflow_id = component_id,
    }
    let mut data = Map::new();
    if let Some(s) = session_state {
        data.insert("session_state".to_owned(), Value::Object(s));
    }
    if let Some(n) = session_name {
        data.insert("session_name".to_owned(), Value::String(n));
    }
    session.session_data = (!data.is_empty()).then_some(data);
    session.metadata = metadata;
    db.upsert_session(&session, &StateUpdate::Replace).await?;
    let stored = db.get_session(&session_id, user_id.as_deref(), Some(0)).await?.unwrap_or(session);
    Ok((StatusCode::CREATED, Json(without_nulls(detail_of(&stored, Some(kind))?))).into_response())
}

/// `GET /sessions/{session_id}?type=&user_id=`: the session's detail with its chat history.
pub async fn get_session(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(session_id): Path<String>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    let params = Params::read::<SessionParams>(query)?;
    let kind = params.session_type()?;
    let db = database(&state, &params)?;
    let user_id = principal.user_scope(params.text("user_id"));
    let missing = || {
        let title = match kind {
            Some(SessionType::Agent) => "Agent ",
            Some(SessionType::Team) => "Team ",
            Some(SessionType::Workflow) => "Workflow ",
            None => return not_found(&session_id),
        };
        ApiError::not_found(format!("{title}Session with id '{session_id}' not found"))
    };
    let session = visible_session(db, &session_id, user_id.as_deref(), None, missing).await?;
    Ok(Json(without_nulls(detail_of(&session, kind)?)))
}

/// `PATCH /sessions/{session_id}`: body `UpdateSessionRequest` (`session_name`, `session_state`,
/// `metadata`, `summary`). An explicit `session_state` replaces the stored one; without it the
/// stored state is kept (runs may be changing it meanwhile).
pub async fn update_session(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(session_id): Path<String>,
    query: RawQuery,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let params = Params::read::<SessionParams>(query)?;
    let kind = params.session_type()?;
    let body = json_object(&body)?.ok_or_else(|| ApiError::unprocessable("a JSON body is required"))?;
    let name = body_text(&body, "session_name")?;
    let session_state = body_object(&body, "session_state")?;
    let metadata = body_object(&body, "metadata")?;
    let summary =
        match body_object(&body, "summary")? {
            Some(s) => Some(serde_json::from_value::<SessionSummary>(Value::Object(s)).map_err(|e| {
                ApiError::unprocessable(format!("summary must be an object with a `summary` text: {e}"))
            })?),
            None => None,
        };
    let db = database(&state, &params)?;
    let user_id = principal.user_scope(params.text("user_id"));
    let mut session = visible_session(db, &session_id, user_id.as_deref(), None, || not_found(&session_id)).await?;

    let update = match session_state {
        Some(s) => {
            session.set_session_state(s);
            StateUpdate::Replace
        }
        None => StateUpdate::keep(),
    };
    if let Some(n) = name {
        session.session_data.get_or_insert_with(Map::new).insert("session_name".to_owned(), Value::String(n));
    }
    if metadata.is_some() {
        session.metadata = sanitize_metadata(metadata);
    }
    if summary.is_some() {
        session.summary = summary;
    }
    if principal.isolated {
        session.user_id = principal.user_scope(None);
    }
    db.upsert_session(&session, &update).await?;
    session.updated_at = Some(agno_core::now_epoch_secs());
    Ok(Json(detail_of(&session, kind)?))
}

/// `DELETE /sessions/{session_id}`: 204; 404 when the caller has no such session.
pub async fn delete_session(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(session_id): Path<String>,
    query: RawQuery,
) -> ApiResult<NoContent> {
    let params = Params::read::<DeleteQuery>(query)?;
    // Media lives inside the runs here (no media store): deleting them deletes it.
    params.bool("delete_media")?;
    let db = database(&state, &params)?;
    let user_id = principal.user_scope(params.text("user_id"));
    if db.delete_session(&session_id, user_id.as_deref()).await? { Ok(NoContent) } else { Err(not_found(&session_id)) }
}

/// `DELETE /sessions`: body `DeleteSessionRequest` (`session_ids`, `session_types`, same
/// length); deletes those of the caller's sessions; 204.
pub async fn delete_sessions(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    query: RawQuery,
    body: Bytes,
) -> ApiResult<NoContent> {
    let params = Params::read::<DeleteQuery>(query)?;
    params.bool("delete_media")?;
    let body = json_object(&body)?.ok_or_else(|| ApiError::unprocessable("a JSON body is required"))?;
    super::validate::check::<super::bodies::DeleteSessionsRequest>(&Value::Object(body.clone()), "body")?;
    let ids = body_list(&body, "session_ids", |v| v.as_str().map(str::to_owned), "a session id (string)")?;
    let types = body_list(
        &body,
        "session_types",
        |v| v.as_str().and_then(|t| parse_session_type(t).ok()),
        "'agent', 'team' or 'workflow'",
    )?;
    // The ids name the sessions; their types are checked but not needed to find them (Python
    // refuses lists of different lengths).
    let _ = types;
    let db = database(&state, &params)?;
    let user_id = principal.user_scope(params.text("user_id"));
    db.delete_sessions(&ids, user_id.as_deref()).await?;
    Ok(NoContent)
}

/// `POST /sessions/{session_id}/rename`: body `{"session_name": "..."}`; the renamed detail.
pub async fn rename_session(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(session_id): Path<String>,
    query: RawQuery,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let params = Params::read::<SessionParams>(query)?;
    let kind = params.session_type()?;
    let body = json_object(&body)?.ok_or_else(|| ApiError::unprocessable("a JSON body is required"))?;
    let name = body_text(&body, "session_name")?.ok_or_else(|| ApiError::unprocessable("session_name is required"))?;
    let db = database(&state, &params)?;
    let user_id = principal.user_scope(params.text("user_id"));
    if db.rename_session(&session_id, &name, user_id.as_deref()).await?.is_none() {
        return Err(not_found(&session_id));
    }
    let session = visible_session(db, &session_id, user_id.as_deref(), None, || not_found(&session_id)).await?;
    Ok(Json(detail_of(&session, kind)?))
}

/// Every status a run can have, sorted (for the error of an unknown one).
const RUN_STATUSES: [RunStatus; 7] = [
    RunStatus::Cancelled,
    RunStatus::Completed,
    RunStatus::Error,
    RunStatus::Paused,
    RunStatus::Pending,
    RunStatus::Regenerated,
    RunStatus::Running,
];

fn python_list(items: &[&str]) -> String {
    format!("[{}]", items.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", "))
}

/// The runs of a session (`type`, `user_id`, `created_after`, `created_before`, repeatable
/// `status`), each as the schema of its kind, oldest first.
///
/// Runs still in flight (`PENDING`, `RUNNING`) are left out unless `status` asks for them: Agno
/// stores a run when it ends, and its UIs replace what they show with this list (a half-written
/// run would wipe a reply being streamed). A session whose only runs are in flight answers 404,
/// as in Agno, where it is not stored yet. `/agents/{id}/runs/{run_id}` and `/queue` show them.
async fn session_runs(
    state: &AppState,
    principal: &Principal,
    session_id: &str,
    query: RawQuery,
) -> ApiResult<Vec<Value>> {
    let params = Params::read::<RunsQuery>(query)?;
    let kind = params.session_type()?;
    let created_after = params.int("created_after")?;
    let created_before = params.int("created_before")?;
    let wanted: Vec<String> = params.all("status").iter().map(|s| s.to_uppercase()).collect();
    let mut unknown: Vec<&str> =
        wanted.iter().map(String::as_str).filter(|w| !RUN_STATUSES.iter().any(|s| s.as_str() == *w)).collect();
    if !unknown.is_empty() {
        unknown.sort_unstable();
        unknown.dedup();
        let valid: Vec<&str> = RUN_STATUSES.iter().map(|s| s.as_str()).collect();
        return Err(ApiError::bad_request(format!(
            "Invalid status value(s) {}; expected one of {}",
            python_list(&unknown),
            python_list(&valid)
        )));
    }
    let db = database(state, &params)?;
    let user_id = principal.user_scope(params.text("user_id"));
    let session = visible_session(db, session_id, user_id.as_deref(), None, || {
        ApiError::not_found(format!("Session with ID {session_id} not found"))
    })
    .await?;
    let d = to_map(&session)?;
    let kind = kind.unwrap_or_else(|| session_type_of(&d));
    let mut out = Vec::new();
    let mut in_flight = 0;
    for run in session.runs() {
        let created = run.created_at;
        if created_after.is_some_and(|t| created < t) || created_before.is_some_and(|t| created > t) {
            continue;
        }
        if !wanted.is_empty() && !wanted.iter().any(|w| w == run.status.as_str()) {
            continue;
        }
        if wanted.is_empty() && matches!(run.status, RunStatus::Pending | RunStatus::Running) {
            in_flight += 1;
            continue;
        }
        if let Some(schema) = classify_run(&to_map(run)?, kind, &d) {
            out.push(without_nulls(schema));
        }
    }
    if out.is_empty() && in_flight > 0 {
        return Err(ApiError::not_found(format!("Session with ID {session_id} not found")));
    }
    Ok(out)
}

/// `GET /sessions/{session_id}/runs`.
pub async fn list_session_runs(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(session_id): Path<String>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    Ok(Json(Value::Array(session_runs(&state, &principal, &session_id, query).await?)))
}

/// `GET /sessions/{session_id}/run-previews`: the same runs, as short previews.
pub async fn list_run_previews(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(session_id): Path<String>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    let runs = session_runs(&state, &principal, &session_id, query).await?;
    Ok(Json(Value::Array(runs.iter().map(run_preview).collect())))
}

/// `GET /sessions/{session_id}/runs/{run_id}`: the run as the schema of its kind.
pub async fn get_session_run(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((session_id, run_id)): Path<(String, String)>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    let params = Params::read::<SessionParams>(query)?;
    params.session_type()?;
    let db = database(&state, &params)?;
    let user_id = principal.user_scope(params.text("user_id"));
    let session_missing = || ApiError::not_found(format!("Session with ID {session_id} not found"));
    let mut session = visible_session(db, &session_id, user_id.as_deref(), Some(0), session_missing).await?;
    // The run table first; a run only in a legacy session blob is found by reading the session.
    let mut run =
        db.get_run(&run_id, user_id.as_deref()).await?.filter(|r| r.session_id.as_deref() == Some(session_id.as_str()));
    if run.is_none() {
        session = visible_session(db, &session_id, user_id.as_deref(), None, session_missing).await?;
        run = session.runs().iter().find(|r| r.id() == run_id).cloned();
    }
    let run =
        run.ok_or_else(|| ApiError::not_found(format!("Run with ID {run_id} not found in session {session_id}")))?;
    let r = to_map(&run)?;
    let has = |k: &str| r.get(k).is_some_and(|v| !v.is_null());
    let schema = if has("workflow_id") {
        workflow_run_schema(&r)
    } else if has("team_id") {
        team_run_schema(&r)
    } else {
        agent_run_schema(&r, Some(&to_map(&session)?))
    };
    Ok(Json(schema))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use serde_json::json;

    use super::schema::{agent_metadata, iso, run_input, session_name};
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn timestamps_are_utc_iso() {
        assert_eq!(iso(&json!(1757088129)), json!("2025-09-05T16:02:09Z"));
        assert_eq!(iso(&Value::Null), Value::Null);
    }

    #[test]
    fn the_name_falls_back_to_the_first_user_message() {
        let d = obj(
            json!({"runs": [{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]}]}),
        );
        assert_eq!(session_name(&d, SessionType::Agent), "hi");
        let d = obj(json!({"session_data": {"session_name": "named"}, "runs": []}));
        assert_eq!(session_name(&d, SessionType::Agent), "named");
        let d = obj(json!({"workflow_data": {"name": "flow"}, "runs": [{"input": 3}]}));
        assert_eq!(session_name(&d, SessionType::Workflow), "New flow Session");
        assert_eq!(session_name(&obj(json!({})), SessionType::Team), "");
    }

    #[test]
    fn reserved_metadata_keys_are_stripped() {
        assert_eq!(sanitize_metadata(Some(obj(json!({"agno_dispatch_depth": 1})))), None);
        assert_eq!(
            sanitize_metadata(Some(obj(json!({"a": 1, "agno_dispatch_chain": []})))),
            Some(obj(json!({"a": 1})))
        );
    }

    #[test]
    fn the_sdk_of_the_agent_data_is_exposed_in_metadata() {
        assert_eq!(agent_metadata(&json!({"a": 1}), &json!({"sdk": "x"})), json!({"a": 1, "sdk": "x"}));
        assert_eq!(agent_metadata(&Value::Null, &json!({"name": "n"})), Value::Null);
    }

    #[test]
    fn run_input_prefers_the_stored_input() {
        let run = obj(json!({"input": {"input_content": "q"}, "messages": [{"role": "user", "content": "m"}]}));
        assert_eq!(run_input(&run, false), "q");
        let run = obj(json!({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}));
        assert_eq!(run_input(&run, false), "b");
    }
}
