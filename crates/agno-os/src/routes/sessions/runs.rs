//! `/sessions/{session_id}/runs`, `/run-previews` and `/runs/{run_id}`: a session's runs, each
//! as the schema of its kind.

use crate::routes::guard::Caller;
use agno_core::RunStatus;
use axum::Json;
use axum::extract::Path;
use serde_json::Value;

use super::schema::{
    agent_run_schema, classify_run, run_preview, session_type_of, team_run_schema, to_map, without_nulls,
    workflow_run_schema,
};
use super::*;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

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
    Caller { state, principal }: Caller,
    Path(session_id): Path<String>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    Ok(Json(Value::Array(session_runs(&state, &principal, &session_id, query).await?)))
}

/// `GET /sessions/{session_id}/run-previews`: the same runs, as short previews.
pub async fn list_run_previews(
    Caller { state, principal }: Caller,
    Path(session_id): Path<String>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    let runs = session_runs(&state, &principal, &session_id, query).await?;
    Ok(Json(Value::Array(runs.iter().map(run_preview).collect())))
}

/// `GET /sessions/{session_id}/runs/{run_id}`: the run as the schema of its kind.
pub async fn get_session_run(
    Caller { state, principal }: Caller,
    Path((session_id, run_id)): Path<(String, String)>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    let params = Params::read::<SessionParams>(query)?;
    params.session_type()?;
    let (db, user_id) = scoped(&state, &principal, &params)?;
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
