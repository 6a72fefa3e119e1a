//! `/sessions`: list, create, read, update, rename and delete sessions, and read their runs, as
//! Agno 3.1's session router answers them (`SessionSchema`, `AgentSessionDetailSchema`,
//! `RunSchema`, ...).
//!
//! Every storage call is scoped with [`Principal::user_scope`]: under user isolation another
//! user's session answers 404 exactly like a missing one, and listings only hold the caller's
//! sessions. Listing never reads run bodies (`get_sessions`).

use crate::routes::guard::Caller;
use std::sync::Arc;

use agno_core::{
    AgentSession, Db, SessionQuery as StoreQuery, SessionSort, SessionSummary, SessionType, SortOrder, StateUpdate,
};
use axum::Json;
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

mod query;
mod runs;
pub(crate) mod schema;
mod search;

pub use query::{CreateQuery, DeleteQuery, ListQuery, RunsQuery, SessionParams};
use query::{Params, RawQuery, database, parse_session_type, scoped};
pub use runs::{get_session_run, list_run_previews, list_session_runs};
pub use search::{SearchQuery, SessionSearchRequest, filter_schema, search_sessions};

use super::params::{NoContent, Paging};

use schema::{session_detail, session_schema, session_type_of, to_map, without_nulls};

use crate::error::{ApiError, ApiResult};

use super::run_form::strip_reserved;

/// Length of the `run_input` and `content_preview` texts of a run preview.
pub(super) const PREVIEW_CHARS: usize = 280;

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

/// A JSON object body that must be there: 422 when it is empty.
fn required_object(body: &Bytes) -> ApiResult<Map<String, Value>> {
    json_object(body)?.ok_or_else(|| ApiError::unprocessable("a JSON body is required"))
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
    if !strip_reserved(&mut m) {
        return Some(m);
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
pub async fn list_sessions(Caller { state, principal }: Caller, query: RawQuery) -> ApiResult<Json<Value>> {
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
    let query = StoreQuery {
        session_type,
        user_id: principal.user_scope(params.text("user_id")),
        component_id: params.text("component_id"),
        session_name: params.text("session_name"),
        limit: Some(limit),
        page: Some(page),
        sort_by,
        sort_order,
        ..StoreQuery::default()
    };
    listed(db.as_ref(), &query, &paging).await
}

/// One page of the sessions `query` asks for, as `GET /sessions` answers them (Agno's
/// `SessionSchema` each, in its paginated envelope).
pub(super) async fn listed(db: &dyn Db, query: &StoreQuery, paging: &Paging) -> ApiResult<Json<Value>> {
    let found = db.get_sessions(query).await?;
    // A session without a stored name is named after its first run's input (Agno reads every
    // run for it; only the first runs' inputs are read here).
    let unnamed: Vec<String> = found
        .sessions
        .iter()
        .filter(|s| s.session_data.as_ref().is_none_or(|d| d.get("session_name").is_none_or(Value::is_null)))
        .map(|s| s.session_id.clone())
        .collect();
    let user_id = query.user_id.as_deref();
    let first_inputs =
        if unnamed.is_empty() { Default::default() } else { db.first_run_inputs(&unnamed, user_id).await? };
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
pub async fn create_session(Caller { state, principal }: Caller, query: RawQuery, body: Bytes) -> ApiResult<Response> {
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
    Caller { state, principal }: Caller,
    Path(session_id): Path<String>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    let params = Params::read::<SessionParams>(query)?;
    let kind = params.session_type()?;
    let (db, user_id) = scoped(&state, &principal, &params)?;
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
    Caller { state, principal }: Caller,
    Path(session_id): Path<String>,
    query: RawQuery,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let params = Params::read::<SessionParams>(query)?;
    let kind = params.session_type()?;
    let body = required_object(&body)?;
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
    let (db, user_id) = scoped(&state, &principal, &params)?;
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
    Caller { state, principal }: Caller,
    Path(session_id): Path<String>,
    query: RawQuery,
) -> ApiResult<NoContent> {
    let params = Params::read::<DeleteQuery>(query)?;
    // Media lives inside the runs here (no media store): deleting them deletes it.
    params.bool("delete_media")?;
    let (db, user_id) = scoped(&state, &principal, &params)?;
    if db.delete_session(&session_id, user_id.as_deref()).await? { Ok(NoContent) } else { Err(not_found(&session_id)) }
}

/// `DELETE /sessions`: body `DeleteSessionRequest` (`session_ids`, `session_types`, same
/// length); deletes those of the caller's sessions; 204.
pub async fn delete_sessions(
    Caller { state, principal }: Caller,
    query: RawQuery,
    body: Bytes,
) -> ApiResult<NoContent> {
    let params = Params::read::<DeleteQuery>(query)?;
    params.bool("delete_media")?;
    let body = required_object(&body)?;
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
    let (db, user_id) = scoped(&state, &principal, &params)?;
    db.delete_sessions(&ids, user_id.as_deref()).await?;
    Ok(NoContent)
}

/// `POST /sessions/{session_id}/rename`: body `{"session_name": "..."}`; the renamed detail.
pub async fn rename_session(
    Caller { state, principal }: Caller,
    Path(session_id): Path<String>,
    query: RawQuery,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let params = Params::read::<SessionParams>(query)?;
    let kind = params.session_type()?;
    let body = required_object(&body)?;
    let name = body_text(&body, "session_name")?.ok_or_else(|| ApiError::unprocessable("session_name is required"))?;
    let (db, user_id) = scoped(&state, &principal, &params)?;
    if db.rename_session(&session_id, &name, user_id.as_deref()).await?.is_none() {
        return Err(not_found(&session_id));
    }
    let session = visible_session(db, &session_id, user_id.as_deref(), None, || not_found(&session_id)).await?;
    Ok(Json(detail_of(&session, kind)?))
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
