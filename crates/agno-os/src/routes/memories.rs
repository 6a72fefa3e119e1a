//! `/memories`, `/memory_topics` and `/user_memory_stats`: user memories as Agno's memory router
//! serves them. Under user isolation every read and write is scoped to the caller's `sub`: a
//! created memory belongs to the caller, another user's memory answers 404.

use crate::routes::guard::Caller;
use crate::routes::query::Query;
use std::sync::Arc;

use agno_core::{MemoryQuery, MemorySort, UserMemory, UserMemoryStats};
use agno_runtime::memory::MemoryError;
use axum::Json;
use axum::body::Bytes;
use axum::extract::Path;
use serde::Deserialize;
use serde_json::{Value, json};

use super::databases::select_db;
use super::params::{DbParams, NoContent, Paging, iso, json_body, sort_order};
use crate::error::{ApiError, ApiResult};

/// Longest memory text accepted (Agno's `UserMemoryCreateSchema`).
const MAX_MEMORY_CHARS: usize = 5000;

/// A memory as Agno's `UserMemorySchema`.
fn memory_json(m: &UserMemory) -> Value {
    json!({
        "memory_id": m.memory_id,
        "memory": m.memory,
        "topics": m.topics,
        "agent_id": m.agent_id,
        "team_id": m.team_id,
        "user_id": m.user_id,
        "updated_at": iso(m.updated_at),
    })
}

/// Per-user counts as Agno's `UserStatsSchema`.
fn stats_json(s: &UserMemoryStats) -> Value {
    json!({
        "user_id": s.user_id,
        "total_memories": s.total_memories,
        "last_memory_updated_at": iso(s.last_memory_updated_at),
    })
}

fn not_found(memory_id: &str) -> ApiError {
    ApiError::not_found(format!("Memory with ID {memory_id} not found"))
}

/// Body of `POST /memories` and `PATCH /memories/{memory_id}` (Agno's `UserMemoryCreateSchema`).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct MemoryPayload {
    /// The memory text (1 to 5,000 characters).
    #[schemars(length(min = 1, max = 5000))]
    memory: String,
    /// Owner (the caller's `sub` under user isolation).
    #[serde(default)]
    user_id: Option<String>,
    /// Topics.
    #[serde(default)]
    topics: Option<Vec<String>>,
}

impl MemoryPayload {
    fn parse(body: &Bytes) -> ApiResult<Self> {
        let payload: Self = json_body(body)?;
        let chars = payload.memory.chars().count();
        if chars == 0 {
            return Err(ApiError::unprocessable("memory must have at least 1 character"));
        }
        if chars > MAX_MEMORY_CHARS {
            return Err(ApiError::unprocessable(format!("memory must have at most {MAX_MEMORY_CHARS} characters")));
        }
        Ok(payload)
    }
}

/// `POST /memories`: creates a memory; under isolation it belongs to the caller whatever
/// `user_id` says. 400 without a user.
pub async fn create_memory(
    Caller { state, principal }: Caller,
    Query(q): Query<DbParams>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    let payload = MemoryPayload::parse(&body)?;
    let user_id = principal
        .user_scope(payload.user_id.filter(|u| !u.is_empty()))
        .ok_or_else(|| ApiError::bad_request("User ID is required"))?;
    let mut memory = UserMemory::new(payload.memory, Some(user_id.as_str()));
    memory.memory_id = Some(agno_core::new_id());
    memory.topics = Some(payload.topics.unwrap_or_default());
    let stored = db.upsert_user_memory(&memory).await?;
    Ok(Json(memory_json(&stored)))
}

/// Query of `GET /memories`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListMemoriesParams {
    user_id: Option<String>,
    agent_id: Option<String>,
    team_id: Option<String>,
    /// Topics (any of): repeat the parameter, or separate them with commas.
    topics: Option<Vec<String>>,
    search_content: Option<String>,
    #[schemars(range(min = 1, max = i64::MAX))]
    limit: Option<usize>,
    #[schemars(range(min = 1, max = i64::MAX))]
    page: Option<usize>,
    #[schemars(extend("enum" = ["updated_at", "created_at"]))]
    sort_by: Option<String>,
    #[schemars(extend("enum" = ["asc", "desc"]))]
    sort_order: Option<String>,
    db_id: Option<String>,
    table: Option<String>,
}

fn memory_sort(value: Option<&str>) -> ApiResult<MemorySort> {
    match value {
        None | Some("updated_at") => Ok(MemorySort::UpdatedAt),
        Some("created_at") => Ok(MemorySort::CreatedAt),
        Some(other) => Err(ApiError::unprocessable(format!(
            "memories can be sorted by 'updated_at' or 'created_at', not {other:?}"
        ))),
    }
}

/// `GET /memories`: a page of memories, newest update first by default. Filters `user_id`
/// (forced to the caller under isolation), `agent_id`, `team_id`, `topics` (repeated or comma-separated,
/// any of), `search_content`.
pub async fn list_memories(
    Caller { state, principal }: Caller,
    Query(q): Query<ListMemoriesParams>,
) -> ApiResult<Json<Value>> {
    let paging = Paging::new(q.limit, q.page)?;
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    let topics: Option<Vec<String>> = q
        .topics
        .map(|t| {
            t.iter()
                .flat_map(|t| t.split(','))
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|t| !t.is_empty());
    let page = db
        .get_user_memories(&MemoryQuery {
            user_id: principal.user_scope(q.user_id),
            agent_id: q.agent_id,
            team_id: q.team_id,
            topics,
            search_content: q.search_content.filter(|s| !s.is_empty()),
            limit: Some(paging.limit),
            page: Some(paging.page),
            sort_by: memory_sort(q.sort_by.as_deref())?,
            sort_order: sort_order(q.sort_order.as_deref())?,
        })
        .await?;
    // Agno drops memories with empty text from listings.
    let data = page.memories.iter().filter(|m| !m.memory.is_empty()).map(memory_json).collect();
    Ok(paging.respond(data, page.total))
}

/// Query carrying an optional `user_id` (admins' filter) and the database selectors.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct UserParams {
    user_id: Option<String>,
    db_id: Option<String>,
    table: Option<String>,
}

/// `GET /memories/{memory_id}`.
pub async fn get_memory(
    Caller { state, principal }: Caller,
    Path(memory_id): Path<String>,
    Query(q): Query<UserParams>,
) -> ApiResult<Json<Value>> {
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    let memory = db.get_user_memory(&memory_id, principal.user_scope(q.user_id).as_deref()).await?;
    memory.map(|m| Json(memory_json(&m))).ok_or_else(|| not_found(&memory_id))
}

/// `PATCH /memories/{memory_id}`: replaces the text and topics of a memory the caller can see
/// (404 otherwise). Without `user_id` the memory keeps its owner.
pub async fn update_memory(
    Caller { state, principal }: Caller,
    Path(memory_id): Path<String>,
    Query(q): Query<DbParams>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    let payload = MemoryPayload::parse(&body)?;
    let existing = db
        .get_user_memory(&memory_id, principal.user_scope(None).as_deref())
        .await?
        .ok_or_else(|| not_found(&memory_id))?;
    let user_id = principal
        .user_scope(payload.user_id)
        .or_else(|| existing.user_id.clone())
        .ok_or_else(|| ApiError::bad_request("User ID is required"))?;
    let memory = UserMemory {
        memory: payload.memory,
        topics: Some(payload.topics.unwrap_or_default()),
        user_id: Some(user_id),
        ..existing
    };
    let stored = db.upsert_user_memory(&memory).await?;
    Ok(Json(memory_json(&stored)))
}

/// `DELETE /memories/{memory_id}`: 204, or 404 when the caller has no such memory.
pub async fn delete_memory(
    Caller { state, principal }: Caller,
    Path(memory_id): Path<String>,
    Query(q): Query<UserParams>,
) -> ApiResult<NoContent> {
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    // As Agno: 204 whether or not the memory existed (another user's is never touched).
    db.delete_user_memory(&memory_id, principal.user_scope(q.user_id).as_deref()).await?;
    Ok(NoContent)
}

/// Body of `DELETE /memories` (Agno's `DeleteMemoriesRequest`).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct DeleteMemoriesRequest {
    /// The memories to delete.
    #[schemars(length(min = 1))]
    memory_ids: Vec<String>,
    /// Their owner.
    #[serde(default)]
    user_id: Option<String>,
}

/// `DELETE /memories`: deletes the listed memories the caller can see; 204.
pub async fn delete_memories(
    Caller { state, principal }: Caller,
    Query(q): Query<DbParams>,
    body: Bytes,
) -> ApiResult<NoContent> {
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    let req: DeleteMemoriesRequest = json_body(&body)?;
    if req.memory_ids.is_empty() {
        return Err(ApiError::unprocessable("memory_ids must list at least 1 memory id"));
    }
    db.delete_user_memories(&req.memory_ids, principal.user_scope(req.user_id).as_deref()).await?;
    Ok(NoContent)
}

/// `GET /memory_topics`: the topics of the memories the caller can see, sorted.
pub async fn memory_topics(
    Caller { state, principal }: Caller,
    Query(q): Query<UserParams>,
) -> ApiResult<Json<Vec<String>>> {
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    Ok(Json(db.get_all_memory_topics(principal.user_scope(q.user_id).as_deref()).await?))
}

/// Query of `GET /user_memory_stats`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct StatsParams {
    #[schemars(range(min = 1, max = i64::MAX))]
    limit: Option<usize>,
    #[schemars(range(min = 1, max = i64::MAX))]
    page: Option<usize>,
    user_id: Option<String>,
    db_id: Option<String>,
    table: Option<String>,
}

/// `GET /user_memory_stats`: memory counts per user, most recently updated first, paged. Under
/// isolation only the caller's own row.
pub async fn user_memory_stats(
    Caller { state, principal }: Caller,
    Query(q): Query<StatsParams>,
) -> ApiResult<Json<Value>> {
    let paging = Paging::new(q.limit, q.page)?;
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    let (stats, total) = db
        .get_user_memory_stats(Some(paging.limit), Some(paging.page), principal.user_scope(q.user_id).as_deref())
        .await?;
    // Agno counts owned memories only.
    let data = stats.iter().filter(|s| s.user_id.is_some()).map(stats_json).collect();
    Ok(paging.respond(data, total))
}

/// Body of `POST /optimize-memories` (Agno's `OptimizeMemoriesRequest`).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct OptimizeMemoriesRequest {
    /// The user whose memories are summarized (the caller under user isolation).
    #[schemars(length(min = 1))]
    user_id: String,
    /// `provider:model_id` of the summarizing model (default: Agno's `openai:gpt-4o`).
    #[serde(default)]
    model: Option<String>,
    /// Store the result (default); `false` previews it without changing anything.
    #[serde(default = "yes")]
    apply: bool,
}

fn yes() -> bool {
    true
}

/// The model a memory optimization uses when the request names none and the OS serves no agent
/// (Agno's `MemoryManager` default).
const DEFAULT_OPTIMIZATION_MODEL: &str = "openai:gpt-4o";

/// `POST /optimize-memories`: summarizes all of a user's memories into one (Agno's `SUMMARIZE`
/// strategy). 404 when the user has none; 400 for a model string that cannot be built; with
/// `apply = false` nothing is stored. Under isolation only the caller's memories are touched.
pub async fn optimize_memories(
    Caller { state, principal }: Caller,
    Query(q): Query<DbParams>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    let req: OptimizeMemoriesRequest = json_body(&body)?;
    let user_id = principal
        .user_scope(Some(req.user_id))
        // As Agno: any user id but none (the document's `minLength` refuses an empty one).
        .filter(|u| !u.is_empty())
        .ok_or_else(|| ApiError::bad_request("User ID is required"))?;
    // Without a model named, the first agent's (as an eval's judge): a model this OS is set up
    // for, rather than one it may have no key for.
    // A model an agent of this OS uses is that agent's (with its configured key and base URL).
    let requested = req.model.as_deref().filter(|m| !m.is_empty());
    let served = match requested {
        None => state.agents.first().map(|a| Arc::clone(a.agent.model())),
        Some(spec) => state.served_model(spec, None),
    };
    let model = match served {
        Some(model) => model,
        None => agno_models::model_from_str(requested.unwrap_or(DEFAULT_OPTIMIZATION_MODEL))
            .map_err(|e| ApiError::bad_request(e.to_string()))?,
    };
    let manager = agno_runtime::memory::MemoryManager::new(model, Arc::clone(db));
    let outcome = manager.optimize_memories(&user_id, req.apply).await.map_err(|e| match e {
        MemoryError::NoMemories(_) => ApiError::not_found(format!("No memories found for user {user_id}")),
        MemoryError::Storage(db_err) => ApiError::from(db_err),
        other => ApiError::internal(format!("Failed to optimize memories: {other}")),
    })?;
    let saved = outcome.tokens_before.saturating_sub(outcome.tokens_after);
    #[allow(clippy::cast_precision_loss)] // token counts are far below 2^52
    let reduction = if outcome.tokens_before > 0 { saved as f64 / outcome.tokens_before as f64 * 100.0 } else { 0.0 };
    Ok(Json(json!({
        "memories": outcome.memories.iter().map(memory_json).collect::<Vec<_>>(),
        "memories_before": outcome.memories_before,
        "memories_after": outcome.memories.len(),
        "tokens_before": outcome.tokens_before,
        "tokens_after": outcome.tokens_after,
        "tokens_saved": saved,
        "reduction_percentage": reduction,
    })))
}
