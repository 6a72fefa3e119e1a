//! `/learnings`: what agents learned about users, sessions and entities (`agno_learnings`), as
//! Python AgentOS 3.1 serves it. Identity-keyed types get Agno's deterministic ids (a second
//! create of the same identity is 409); under user isolation a caller reads their own records and
//! the ownerless ones, changes only their own (an ownerless one is for admins), and creates only
//! for themselves. A database that keeps no learnings answers 501, as Agno's do.

use agno_core::{
    DbErrorKind, IDENTITY_KEYED_LEARNING_TYPES, LEARNING_SORTABLE, LearningIdentity, LearningQuery, LearningRecord,
    SortOrder, learning_id, now_epoch_secs,
};
use axum::Json;
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::databases::select_db;
use super::params::{NoContent, json_body};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::routes::guard::Caller;
use crate::routes::query::Query;
use crate::state::AppState;

/// A storage error as these routes answer it: a database without learnings is Agno's 501.
fn db_error(e: agno_core::DbError) -> ApiError {
    if e.kind() == DbErrorKind::Unsupported {
        return ApiError::new(StatusCode::NOT_IMPLEMENTED, "Learnings not supported by the configured database");
    }
    e.into()
}

/// The user a scoped caller is confined to (none: an admin, or isolation off).
fn scoped(principal: &Principal) -> Option<&str> {
    if principal.isolated { principal.subject.as_deref() } else { None }
}

/// Agno's `LearningResponse` (`workflow_id` left out).
fn response(r: &LearningRecord) -> Value {
    json!({
        "learning_id": r.learning_id,
        "learning_type": r.learning_type,
        "namespace": r.namespace,
        "user_id": r.user_id,
        "agent_id": r.agent_id,
        "team_id": r.team_id,
        "session_id": r.session_id,
        "entity_id": r.entity_id,
        "entity_type": r.entity_type,
        "content": r.content,
        "metadata": r.metadata,
        "created_at": r.created_at,
        "updated_at": r.updated_at,
    })
}

fn envelope(data: Vec<Value>, page: u64, limit: u64, total: u64) -> Json<Value> {
    Json(json!({
        "data": Value::Array(data),
        "meta": {"page": page, "limit": limit, "total_pages": total.div_ceil(limit), "total_count": total, "search_time_ms": 0.0},
    }))
}

fn bounded(value: Option<u64>, default: u64, name: &str, min: u64, max: Option<u64>) -> ApiResult<u64> {
    let v = value.unwrap_or(default);
    if v < min {
        return Err(ApiError::unprocessable(format!("Input should be greater than or equal to {min}"))
            .with_type("greater_than_equal")
            .at("query", name)
            .with_ctx(json!({"ge": min})));
    }
    if let Some(max) = max.filter(|m| v > *m) {
        return Err(ApiError::unprocessable(format!("Input should be less than or equal to {max}"))
            .with_type("less_than_equal")
            .at("query", name)
            .with_ctx(json!({"le": max})));
    }
    Ok(v)
}

fn order(value: Option<&str>) -> ApiResult<SortOrder> {
    match value {
        None | Some("desc") => Ok(SortOrder::Desc),
        Some("asc") => Ok(SortOrder::Asc),
        Some(_) => Err(ApiError::unprocessable("Input should be 'asc' or 'desc'")
            .with_type("enum")
            .at("query", "sort_order")
            .with_ctx(json!({"expected": "'asc' or 'desc'"}))),
    }
}

/// Query of `GET /learnings`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListQuery {
    /// Only this type.
    learning_type: Option<String>,
    /// Only this user's (a scoped caller: their own and the ownerless ones).
    user_id: Option<String>,
    /// Only this agent's.
    agent_id: Option<String>,
    /// Only this team's.
    team_id: Option<String>,
    /// Only this session's.
    session_id: Option<String>,
    /// Only this namespace.
    namespace: Option<String>,
    /// Only this entity.
    entity_id: Option<String>,
    /// Only this entity type.
    entity_type: Option<String>,
    /// Page size (1 to 1000, default 100).
    limit: Option<u64>,
    /// Page, from 1.
    page: Option<u64>,
    /// A column (default `updated_at`; another name leaves the order to the database).
    sort_by: Option<String>,
    /// `asc` or `desc` (default).
    sort_order: Option<String>,
    /// The database (one is served).
    db_id: Option<String>,
    /// The table (accepted and ignored).
    table: Option<String>,
}

/// `GET /learnings`.
pub async fn list_learnings(Caller { state, principal }: Caller, Query(q): Query<ListQuery>) -> ApiResult<Json<Value>> {
    let limit = bounded(q.limit, 100, "limit", 1, Some(1000))?;
    let page = bounded(q.page, 1, "page", 1, None)?;
    let sort_order = order(q.sort_order.as_deref())?;
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    let (user_id, include_global) = match scoped(&principal) {
        Some(me) if q.user_id.as_deref().is_some_and(|u| u != me) => {
            return Err(ApiError::forbidden("Cannot list learnings for another user"));
        }
        Some(me) => (Some(me.to_owned()), true),
        None => (q.user_id.clone(), false),
    };
    let sort_by = match q.sort_by.as_deref() {
        None => Some("updated_at"),
        Some(by) => LEARNING_SORTABLE.iter().find(|c| **c == by).copied().or(Some("learning_id")),
    };
    let query = LearningQuery {
        learning_type: q.learning_type,
        user_id,
        include_global,
        agent_id: q.agent_id,
        team_id: q.team_id,
        session_id: q.session_id,
        namespace: q.namespace,
        entity_id: q.entity_id,
        entity_type: q.entity_type,
        limit,
        page,
        sort_by,
        sort_order,
    };
    let (found, total) = db.list_learnings(&query).await.map_err(db_error)?;
    Ok(envelope(found.iter().map(response).collect(), page, limit, total))
}

/// Body of `POST /learnings` (Agno's `LearningCreate`).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CreateRequest {
    /// What it is (`user_profile`, `user_memory`, `session_context`, `entity_memory`,
    /// `decision_log`, or any other name).
    learning_type: String,
    /// What was learned (a JSON object).
    content: Map<String, Value>,
    /// Its namespace (entity memory: default `global`).
    namespace: Option<String>,
    /// Its owner (a scoped caller: themselves).
    user_id: Option<String>,
    /// The agent it belongs to.
    agent_id: Option<String>,
    /// The team it belongs to.
    team_id: Option<String>,
    /// The session it is about.
    session_id: Option<String>,
    /// The entity it is about.
    entity_id: Option<String>,
    /// The entity's type.
    entity_type: Option<String>,
    /// Free metadata.
    metadata: Option<Map<String, Value>>,
}

/// Query of the routes on one learning and `POST /learnings`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct DbQuery {
    /// The database (one is served).
    db_id: Option<String>,
    /// The table (accepted and ignored).
    table: Option<String>,
}

/// Whether `ns` has the shape of entity memory's per-user keys (`user_<16 hex>...`), which a
/// namespace may not take.
fn reserved_namespace(ns: &str) -> bool {
    let Some(rest) = ns.strip_prefix("user_") else { return false };
    let hex = rest.get(..16).is_some_and(|h| h.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    hex && (rest.len() == 16 || rest[16..].starts_with('_'))
}

/// `POST /learnings`: 201 with the record.
pub async fn create_learning(
    Caller { state, principal }: Caller,
    Query(q): Query<DbQuery>,
    body: Bytes,
) -> ApiResult<Response> {
    let mut b: CreateRequest = json_body(&body)?;
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    if let Some(me) = scoped(&principal) {
        if b.user_id.as_deref().is_some_and(|u| u != me) {
            return Err(ApiError::forbidden("Cannot create learnings for another user"));
        }
        b.user_id = Some(me.to_owned());
        if let Some(session) = &b.session_id
            && let Some(s) = db.get_session(session, None, Some(0)).await.map_err(db_error)?
            && s.user_id.as_deref().is_some_and(|owner| owner != me)
        {
            return Err(ApiError::not_found(format!("Session {session} not found")));
        }
    }
    let entity = b.learning_type == "entity_memory";
    if entity && let Some(ns) = b.namespace.as_deref().filter(|ns| reserved_namespace(ns)) {
        return Err(ApiError::unprocessable_plain(format!(
            "namespace '{ns}' is reserved: it has the key shape entity_memory uses for namespace=\"user\" records, so a \
             record stored under it would occupy another user's key. Choose a different namespace."
        )));
    }
    let identity = LearningIdentity {
        user_id: b.user_id.as_deref(),
        session_id: b.session_id.as_deref(),
        namespace: b.namespace.as_deref(),
        entity_id: b.entity_id.as_deref(),
        entity_type: b.entity_type.as_deref(),
    };
    let keyed = IDENTITY_KEYED_LEARNING_TYPES.contains(&b.learning_type.as_str());
    let id = match learning_id(&b.learning_type, identity) {
        Some(id) => id,
        None if keyed && entity && b.namespace.as_deref() == Some("user") => {
            return Err(ApiError::unprocessable_plain(
                "entity_memory under namespace=\"user\" is keyed by the owning user as well as the entity; provide \
                 user_id together with entity_id + entity_type so the record reconciles with the agent's store.",
            ));
        }
        None if keyed => {
            return Err(ApiError::unprocessable_plain(format!(
                "learning_type '{}' is keyed by its identity fields; provide the required field(s) (user_id, \
                 session_id, or entity_id + entity_type) so the record reconciles with the agent's store.",
                b.learning_type
            )));
        }
        None => agno_core::new_id(),
    };
    if entity && b.namespace.as_deref().is_none_or(str::is_empty) {
        b.namespace = Some(agno_core::DEFAULT_LEARNING_NAMESPACE.to_owned());
    }
    if keyed && db.get_learning_by_id(&id).await.map_err(db_error)?.is_some() {
        return Err(ApiError::conflict(format!(
            "A '{}' learning already exists for this identity (id '{id}'). Use PATCH /learnings/{id} to update it.",
            b.learning_type
        )));
    }
    let now = now_epoch_secs();
    let record = LearningRecord {
        learning_id: id.clone(),
        learning_type: b.learning_type,
        namespace: b.namespace,
        user_id: b.user_id,
        agent_id: b.agent_id,
        team_id: b.team_id,
        workflow_id: None,
        session_id: b.session_id,
        entity_id: b.entity_id,
        entity_type: b.entity_type,
        content: b.content,
        metadata: b.metadata,
        created_at: now,
        updated_at: Some(now),
    };
    db.upsert_learning(&record).await.map_err(db_error)?;
    let stored = db.get_learning_by_id(&id).await.map_err(db_error)?;
    let stored = stored.ok_or_else(|| ApiError::internal("Failed to create learning"))?;
    Ok((StatusCode::CREATED, Json(response(&stored))).into_response())
}

/// Record `id` as the caller may see it: 404 when it does not exist or belongs to another user;
/// with `mutating`, 403 for an ownerless one unless the caller is unscoped.
async fn fetch(
    state: &AppState,
    principal: &Principal,
    id: &str,
    q: &DbQuery,
    mutating: bool,
) -> ApiResult<LearningRecord> {
    let db = select_db(state, q.db_id.as_deref(), q.table.as_deref())?;
    let found = db.get_learning_by_id(id).await.map_err(db_error)?;
    let record = found.ok_or_else(|| ApiError::not_found("Learning not found"))?;
    if let Some(me) = scoped(principal) {
        match record.user_id.as_deref() {
            Some(owner) if owner != me => return Err(ApiError::not_found("Learning not found")),
            None if mutating => {
                return Err(ApiError::forbidden(
                    "Only admins can modify learnings that have no owner (user_id is null)",
                ));
            }
            _ => {}
        }
    }
    Ok(record)
}

/// `GET /learnings/{learning_id}`.
pub async fn get_learning(
    Caller { state, principal }: Caller,
    Path(id): Path<String>,
    Query(q): Query<DbQuery>,
) -> ApiResult<Json<Value>> {
    Ok(Json(response(&fetch(&state, &principal, &id, &q, false).await?)))
}

/// Body of `PATCH /learnings/{learning_id}` (Agno's `LearningUpdate`): what is given replaces.
/// The handler reads the body as a map (a `null` and a missing field differ); this type
/// documents it and checks its fields' types.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
pub struct UpdateRequest {
    /// The new content (not null).
    content: Option<Value>,
    /// The new metadata (null clears it).
    metadata: Option<Value>,
}

/// `PATCH /learnings/{learning_id}`: the content and metadata given replace the stored ones.
pub async fn update_learning(
    Caller { state, principal }: Caller,
    Path(id): Path<String>,
    Query(q): Query<DbQuery>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let raw: Map<String, Value> = json_body(&body)?;
    let _: UpdateRequest = json_body(&body)?;
    let record = fetch(&state, &principal, &id, &q, true).await?;
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    if !raw.contains_key("content") && !raw.contains_key("metadata") {
        return Ok(Json(response(&record)));
    }
    let content = match raw.get("content") {
        None => record.content.clone(),
        Some(Value::Object(m)) => m.clone(),
        Some(Value::Null) => {
            return Err(ApiError::unprocessable_plain("content cannot be null; omit the field to leave it unchanged"));
        }
        Some(_) => {
            return Err(ApiError::unprocessable("Input should be a valid dictionary")
                .with_type("dict_type")
                .at("body", "content"));
        }
    };
    let metadata = match raw.get("metadata") {
        None => record.metadata.clone(),
        Some(Value::Object(m)) => Some(m.clone()),
        Some(Value::Null) => None,
        Some(_) => {
            return Err(ApiError::unprocessable("Input should be a valid dictionary")
                .with_type("dict_type")
                .at("body", "metadata"));
        }
    };
    if !db.update_learning(&id, &content, metadata.as_ref(), now_epoch_secs()).await.map_err(db_error)? {
        return Err(ApiError::not_found("Learning not found"));
    }
    let stored = db.get_learning_by_id(&id).await.map_err(db_error)?;
    Ok(Json(response(&stored.ok_or_else(|| ApiError::not_found("Learning not found"))?)))
}

/// `DELETE /learnings/{learning_id}`: 204.
pub async fn delete_learning(
    Caller { state, principal }: Caller,
    Path(id): Path<String>,
    Query(q): Query<DbQuery>,
) -> ApiResult<NoContent> {
    fetch(&state, &principal, &id, &q, true).await?;
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    if !db.delete_learning(&id).await.map_err(db_error)? {
        return Err(ApiError::internal("Failed to delete learning"));
    }
    Ok(NoContent)
}

/// Query of `GET /learnings/users`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct UsersQuery {
    /// Only users holding this type.
    learning_type: Option<String>,
    /// Only this user (a scoped caller: themselves).
    user_id: Option<String>,
    /// Page size (1 to 1000, default 20).
    limit: Option<u64>,
    /// Page, from 1.
    page: Option<u64>,
    /// `user_id` or `last_learning_updated_at` (default).
    sort_by: Option<String>,
    /// `asc` or `desc` (default).
    sort_order: Option<String>,
    /// The database (one is served).
    db_id: Option<String>,
    /// The table (accepted and ignored).
    table: Option<String>,
}

/// `GET /learnings/users`: the users holding learnings, with their newest change.
pub async fn list_learning_users(
    Caller { state, principal }: Caller,
    Query(q): Query<UsersQuery>,
) -> ApiResult<Json<Value>> {
    let limit = bounded(q.limit, 20, "limit", 1, Some(1000))?;
    let page = bounded(q.page, 1, "page", 1, None)?;
    let sort_order = order(q.sort_order.as_deref())?;
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    let user = match scoped(&principal) {
        Some(me) if q.user_id.as_deref().is_some_and(|u| u != me) => {
            return Err(ApiError::forbidden("Cannot list learning users for another user"));
        }
        Some(me) => Some(me.to_owned()),
        None => q.user_id,
    };
    let by_user = q.sort_by.as_deref() == Some("user_id");
    let (users, total) = db
        .learning_users(q.learning_type.as_deref(), user.as_deref(), by_user, sort_order, limit, page)
        .await
        .map_err(db_error)?;
    let data =
        users.iter().map(|u| json!({"user_id": u.user_id, "last_learning_updated_at": u.last_learning_updated_at}));
    Ok(envelope(data.collect(), page, limit, total))
}

/// Query of `DELETE /learnings/users/{user_id}`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct DeleteUserQuery {
    /// Only this type.
    learning_type: Option<String>,
    /// The database (one is served).
    db_id: Option<String>,
    /// The table (accepted and ignored).
    table: Option<String>,
}

/// `DELETE /learnings/users/{user_id}`: 204, however many there were.
pub async fn delete_learning_user(
    Caller { state, principal }: Caller,
    Path(user_id): Path<String>,
    Query(q): Query<DeleteUserQuery>,
) -> ApiResult<NoContent> {
    if scoped(&principal).is_some_and(|me| me != user_id) {
        return Err(ApiError::forbidden("Cannot delete learnings for another user"));
    }
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    db.delete_user_learnings(&user_id, q.learning_type.as_deref()).await.map_err(db_error)?;
    Ok(NoContent)
}
