//! `POST /agents/{agent_id}/sessions/{session_id}/compact`: fold the session's older history into
//! a summary now (`agno_runtime::Agent::compact`), as Python AgentOS 3.1 does. A decline
//! (`not_enabled`, `nothing_to_fold`, `already_compacted`, ...) is a 200 with `compacted: false`
//! and a message to show; another user's session, like another agent's or a missing one, is 404.

use axum::Json;
use axum::extract::Path;
use serde::Deserialize;
use serde_json::Value;

use super::agents::Agents;
use super::component::runnable;
use crate::error::{ApiError, ApiResult};
use crate::routes::guard::Caller;
use crate::routes::query::Query;

/// Query of the compact route.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CompactQuery {
    /// Whose session (a scoped caller's own id, whatever is asked).
    user_id: Option<String>,
}

/// `POST /agents/{agent_id}/sessions/{session_id}/compact`: Agno's `CompactionResult`
/// (`{status, message, compacted, record, metrics}`).
pub async fn compact_session(
    Caller { state, principal }: Caller,
    Path((agent_id, session_id)): Path<(String, String)>,
    Query(q): Query<CompactQuery>,
) -> ApiResult<Json<Value>> {
    let agent = runnable::<Agents>(&state, &principal, &agent_id)?;
    let db = state.require_db()?;
    let user = principal.user_scope(q.user_id.filter(|u| !u.is_empty()));
    // The session must be this agent's: the route's access was granted for `agent_id`.
    let session = db.get_session(&session_id, user.as_deref(), Some(0)).await?;
    if session.as_ref().and_then(|s| s.agent_id.as_deref()) != Some(agent_id.as_str()) {
        return Err(ApiError::not_found("Session not found"));
    }
    let outcome = agent.compact(&session_id, user.as_deref()).await.map_err(|e| match e {
        agno_runtime::CompactError::Storage(db) => db.into(),
        agno_runtime::CompactError::NoDb => ApiError::bad_request(e.to_string()),
    })?;
    Ok(Json(outcome.to_api()))
}
