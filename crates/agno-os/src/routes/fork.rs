//! `POST /{agents|teams}/{id}/sessions/{session_id}/fork`, written once for both kinds: a copy of
//! one of the component's sessions under a new id, every run copied with a fresh run id
//! (`agno_runtime::fork`), as Python AgentOS 3.1 forks it. The caller forks only what it may
//! read: another user's session, like a missing or empty one, is "nothing to fork" (400).

use axum::Json;
use axum::extract::Path;
use serde::Deserialize;
use serde_json::{Value, json};

use super::component::{Kind, runnable};
use crate::error::{ApiError, ApiResult};
use crate::routes::guard::Caller;
use crate::routes::query::Query;

/// Query of the fork route.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ForkQuery {
    /// Who owns the copy (a scoped caller's own id, whatever is asked; default: the source's
    /// owner).
    user_id: Option<String>,
}

/// `POST /{kind}s/{id}/sessions/{session_id}/fork`: `{session_id, forked_from_session_id}`.
pub async fn fork_session<K: Kind>(
    Caller { state, principal }: Caller,
    Path((id, session_id)): Path<(String, String)>,
    Query(q): Query<ForkQuery>,
) -> ApiResult<Json<Value>> {
    runnable::<K>(&state, &principal, &id)?;
    let db = state.require_db()?;
    let user = principal.user_scope(q.user_id.filter(|u| !u.is_empty()));
    // The session must be the component's: the route's access was granted for `id`.
    let read_as = principal.user_scope(None);
    let of = (K::KIND, id.as_str());
    let new_id = agno_runtime::fork::fork_session(db.as_ref(), of, &session_id, read_as.as_deref(), user.as_deref())
        .await
        .map_err(|e| match e {
            agno_runtime::fork::ForkError::Storage(db) => db.into(),
            agno_runtime::fork::ForkError::OtherComponent(_) => ApiError::not_found(e.to_string()),
            other => ApiError::bad_request(other.to_string()),
        })?;
    Ok(Json(json!({ "session_id": new_id, "forked_from_session_id": session_id })))
}
