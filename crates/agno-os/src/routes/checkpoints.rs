//! `GET /{agents|teams}/{id}/runs/{run_id}/checkpoints[/{message_index}]`, written once for both
//! kinds: the boundaries a stored run can be read back (and continued) at, and the run as it
//! stood at one of them, derived from the stored run as Python AgentOS 3.1 derives them
//! (`agno_core::run_checkpoints`, `agno_core::checkpoint_snapshot`).

use axum::Json;
use axum::extract::Path;
use serde::Deserialize;
use serde_json::{Value, json};

use super::component::{Kind, runnable};
use super::run_records::stored_run;
use crate::error::{ApiError, ApiResult};
use crate::routes::guard::Caller;
use crate::routes::query::Query;

/// Query of the checkpoint routes.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CheckpointQuery {
    /// The run's session (required).
    session_id: Option<String>,
}

impl CheckpointQuery {
    fn session_id(self) -> ApiResult<String> {
        self.session_id.filter(|s| !s.is_empty()).ok_or_else(|| ApiError::missing("query", "session_id"))
    }
}

/// `GET /{kind}s/{id}/runs/{run_id}/checkpoints?session_id=`: `{run_id, session_id,
/// checkpoints}`, in message order; 404 for a run that is not the caller's.
pub async fn list_checkpoints<K: Kind>(
    Caller { state, principal }: Caller,
    Path((id, run_id)): Path<(String, String)>,
    Query(q): Query<CheckpointQuery>,
) -> ApiResult<Json<Value>> {
    runnable::<K>(&state, &principal, &id)?;
    let session_id = q.session_id()?;
    let run = stored_run::<K>(&state, &principal, &id, &run_id, Some(&session_id)).await?;
    Ok(Json(json!({
        "run_id": run_id,
        "session_id": session_id,
        "checkpoints": agno_core::run_checkpoints(&run),
    })))
}

/// `GET /{kind}s/{id}/runs/{run_id}/checkpoints/{message_index}?session_id=`: `{checkpoint,
/// snapshot}`, the run cut after `message_index` messages (never inside a tool exchange); 400
/// for an index past the run's messages.
pub async fn checkpoint_snapshot<K: Kind>(
    Caller { state, principal }: Caller,
    Path((id, run_id, index)): Path<(String, String, String)>,
    Query(q): Query<CheckpointQuery>,
) -> ApiResult<Json<Value>> {
    let index: i64 = index.parse().map_err(|_| {
        ApiError::unprocessable("Input should be a valid integer, unable to parse string as an integer")
            .with_type("int_parsing")
            .with_input(json!(index))
            .at("path", "message_index")
    })?;
    runnable::<K>(&state, &principal, &id)?;
    let session_id = q.session_id()?;
    let run = stored_run::<K>(&state, &principal, &id, &run_id, Some(&session_id)).await?;
    agno_core::checkpoint_snapshot(&run, index).map(Json).map_err(|e| ApiError::bad_request(e.to_string()))
}
