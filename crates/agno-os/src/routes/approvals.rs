//! `/approvals`: the approvals runs ask for when they pause on a tool that needs an admin's
//! decision, as Python AgentOS 3.1 serves them (its routes, filters, shapes and statuses).
//!
//! Reads are the caller's own under user isolation (another user's approval is "not found", and
//! counts leave it out); resolving and deleting are an admin's (a scoped caller gets 404, so
//! existence does not leak). A resolve is one compare-and-set from `pending`: a second one, or one
//! on an expired approval, is 409. Resolving does not resume the run: its owner continues it, and
//! the continue takes the decision from the record.

use agno_core::{APPROVAL_STATUSES, ApprovalDecision, ApprovalQuery, ApprovalRecord, Db, Resolved, now_epoch_secs};
use axum::Json;
use axum::body::Bytes;
use axum::extract::Path;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::sync::Arc;

use super::params::{NoContent, Paging, json_body};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::routes::guard::Caller;
use crate::routes::query::Query;
use crate::state::AppState;

/// Query of `GET /approvals` (Agno's filters).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListQuery {
    /// `pending`, `approved`, `rejected`, `expired` or `cancelled`.
    #[schemars(extend("enum" = ["pending", "approved", "rejected", "expired", "cancelled"]))]
    status: Option<String>,
    /// `agent`, `team` or `workflow`.
    source_type: Option<String>,
    /// `required` or `audit`.
    #[schemars(extend("enum" = ["required", "audit"]))]
    approval_type: Option<String>,
    /// `confirmation`, `user_input` or `external_execution`.
    pause_type: Option<String>,
    agent_id: Option<String>,
    team_id: Option<String>,
    workflow_id: Option<String>,
    /// Whose approvals (a scoped caller's own, whatever is asked).
    user_id: Option<String>,
    schedule_id: Option<String>,
    run_id: Option<String>,
    /// Page size (default 100).
    #[schemars(range(min = 1, max = 1000))]
    limit: Option<usize>,
    /// 1-based page.
    #[schemars(range(min = 1))]
    page: Option<usize>,
}

/// Query of `GET /approvals/count`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CountQuery {
    /// Whose pending approvals (a scoped caller's own, whatever is asked).
    user_id: Option<String>,
}

/// Body of `POST /approvals/{approval_id}/resolve` (Agno's `ApprovalResolve`).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ResolveRequest {
    /// `approved` or `rejected`.
    #[schemars(regex(pattern = r"^(approved|rejected)$"))]
    status: String,
    /// Who resolves it (ignored when the caller's token names them).
    #[schemars(length(max = 255))]
    resolved_by: Option<String>,
    /// What the resolver supplies: `values` for a tool's user input, `result` for an external
    /// execution, `note` for a rejection.
    resolution_data: Option<Map<String, Value>>,
}

/// The database, with approvals expired at this moment (a pending approval past its
/// `expires_at` reads as expired everywhere).
async fn approvals_db(state: &AppState) -> ApiResult<&Arc<dyn Db>> {
    let db = state.require_db()?;
    db.expire_approvals(now_epoch_secs()).await?;
    Ok(db)
}

/// An approval as Agno answers it (`ApprovalResponse`: the record's 25 keys).
fn shape(a: &ApprovalRecord) -> Value {
    serde_json::to_value(a).unwrap_or(Value::Null)
}

fn not_found() -> ApiError {
    ApiError::not_found("Approval not found")
}

/// The approval `id` when the caller may see it: a scoped caller only its own.
async fn visible(db: &Arc<dyn Db>, principal: &Principal, id: &str) -> ApiResult<ApprovalRecord> {
    let approval = db.get_approval(id).await?.ok_or_else(not_found)?;
    match principal.user_scope(None) {
        Some(me) if approval.user_id.as_deref() != Some(me.as_str()) => Err(not_found()),
        _ => Ok(approval),
    }
}

/// `GET /approvals`: a page of approvals, newest first.
pub async fn list_approvals(Caller { state, principal }: Caller, Query(q): Query<ListQuery>) -> ApiResult<Json<Value>> {
    let paging = Paging::new(Some(q.limit.unwrap_or(100)), q.page)?;
    if paging.limit > 1000 {
        return Err(ApiError::unprocessable("limit must be less than or equal to 1000").at("query", "limit"));
    }
    if let Some(status) = q.status.as_deref().filter(|s| !APPROVAL_STATUSES.contains(s)) {
        return Err(ApiError::unprocessable(format!(
            "status must be one of {}, not {status:?}",
            APPROVAL_STATUSES.join(", ")
        ))
        .at("query", "status"));
    }
    if let Some(kind) = q.approval_type.as_deref().filter(|t| agno_core::ApprovalType::parse(t).is_none()) {
        return Err(ApiError::unprocessable(format!("approval_type must be 'required' or 'audit', not {kind:?}"))
            .at("query", "approval_type"));
    }
    let db = approvals_db(&state).await?;
    let query = ApprovalQuery {
        status: q.status,
        source_type: q.source_type,
        approval_type: q.approval_type,
        pause_type: q.pause_type,
        agent_id: q.agent_id,
        team_id: q.team_id,
        workflow_id: q.workflow_id,
        user_id: principal.user_scope(q.user_id),
        schedule_id: q.schedule_id,
        run_id: q.run_id,
        limit: Some(paging.limit),
        page: Some(paging.page),
    };
    let (approvals, total) = db.get_approvals(&query).await?;
    Ok(paging.respond(approvals.iter().map(shape).collect(), total))
}

/// `GET /approvals/count`: `{"count": n}` of pending approvals.
pub async fn count_approvals(
    Caller { state, principal }: Caller,
    Query(q): Query<CountQuery>,
) -> ApiResult<Json<Value>> {
    let db = approvals_db(&state).await?;
    let count = db.count_pending_approvals(principal.user_scope(q.user_id).as_deref()).await?;
    Ok(Json(json!({ "count": count })))
}

/// `GET /approvals/{approval_id}/status`.
pub async fn approval_status(Caller { state, principal }: Caller, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let db = approvals_db(&state).await?;
    let a = visible(db, &principal, &id).await?;
    Ok(Json(json!({
        "approval_id": a.id,
        "status": a.status,
        "run_id": a.run_id,
        "resolved_at": a.resolved_at,
        "resolved_by": a.resolved_by,
    })))
}

/// `GET /approvals/{approval_id}`.
pub async fn get_approval(Caller { state, principal }: Caller, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let db = approvals_db(&state).await?;
    Ok(Json(shape(&visible(db, &principal, &id).await?)))
}

/// `POST /approvals/{approval_id}/resolve`: the decision, if the approval is still pending (409
/// otherwise). An admin's under user isolation.
pub async fn resolve_approval(
    Caller { state, principal }: Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let request: ResolveRequest = json_body(&body)?;
    if !matches!(request.status.as_str(), "approved" | "rejected") {
        return Err(ApiError::unprocessable("String should match pattern '^(approved|rejected)$'")
            .with_type("string_pattern_mismatch")
            .with_ctx(json!({"pattern": "^(approved|rejected)$"}))
            .with_input(json!(request.status))
            .at("body", "status"));
    }
    if principal.isolated {
        return Err(not_found());
    }
    let db = state.require_db()?;
    let decision = ApprovalDecision {
        status: request.status,
        // The token's subject when there is one; the body's name only without.
        resolved_by: principal.subject.clone().or(request.resolved_by),
        resolution_data: request.resolution_data,
        resolved_at: now_epoch_secs(),
    };
    match db.resolve_approval(&id, &decision).await? {
        Resolved::Done(a) => Ok(Json(shape(&a))),
        Resolved::NotFound => Err(not_found()),
        Resolved::NotPending(a) => {
            Err(ApiError::conflict(format!("Approval is already '{}' and cannot be resolved", a.status)))
        }
    }
}

/// `DELETE /approvals/{approval_id}`: 204; an admin's under user isolation. An unknown id is 404
/// (Python AgentOS answers 500 "Failed to delete approval").
pub async fn delete_approval(Caller { state, principal }: Caller, Path(id): Path<String>) -> ApiResult<NoContent> {
    if principal.isolated {
        return Err(not_found());
    }
    let db = state.require_db()?;
    if db.delete_approval(&id).await? { Ok(NoContent) } else { Err(not_found()) }
}

/// The continue gate (Agno's `require_approval_resolved`): a run with a pending `required`
/// approval (its own, or one a paused call of it carries, as a team member's does) continues only
/// for a caller who may resolve approvals (`approvals:write`, an admin, or anyone when
/// authorization is off). A failure to read the approvals refuses too.
///
/// # Errors
/// 403 naming why.
pub(crate) async fn gate_continue(
    state: &AppState,
    principal: &Principal,
    run: &agno_core::RunOutput,
) -> ApiResult<()> {
    if principal.holds("approvals:write") {
        return Ok(());
    }
    let Some(db) = state.db.as_ref() else { return Ok(()) };
    let now = now_epoch_secs();
    let stamped: Vec<&str> = run
        .active_requirements()
        .into_iter()
        .filter_map(|r| r.tool_execution.as_ref()?.approval_id.as_deref())
        .collect();
    // A workflow's paused step carries its agent's (or team's) requirements; their decisions are
    // the caller's to send, so only an approved call may be answered by the run's owner.
    let mut in_steps = Vec::new();
    if let Some(steps) = run.extra.get("step_requirements") {
        required_approval_ids(steps, &mut in_steps);
    }
    let q = ApprovalQuery {
        run_id: Some(run.id().to_owned()),
        status: Some(agno_core::APPROVAL_PENDING.to_owned()),
        approval_type: Some(agno_core::ApprovalType::Required.as_str().to_owned()),
        limit: Some(1),
        ..Default::default()
    };
    let pending = async {
        db.expire_approvals(now).await?;
        if !db.get_approvals(&q).await?.0.is_empty() {
            return Ok(true);
        }
        for id in stamped {
            if db.get_approval(id).await?.is_some_and(|a| a.is_pending()) {
                return Ok(true);
            }
        }
        for id in &in_steps {
            if db.get_approval(id).await?.is_none_or(|a| a.status != agno_core::APPROVAL_APPROVED) {
                return Ok(true);
            }
        }
        Ok::<_, agno_core::DbError>(false)
    };
    match pending.await {
        Ok(false) => Ok(()),
        Ok(true) => Err(ApiError::forbidden("This run requires admin approval before it can be continued")),
        Err(e) => {
            tracing::warn!(run_id = run.id(), error = %e, "cannot read the run's approvals; refusing the continue");
            Err(ApiError::forbidden("This run's approval state could not be verified; try again"))
        }
    }
}

/// The ids of the `required` approvals stamped on the tool calls anywhere in `value` (a
/// workflow's step requirements, which carry their executors' requirements).
fn required_approval_ids(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if map.get("approval_type").and_then(Value::as_str) == Some("required")
                && let Some(id) = map.get("approval_id").and_then(Value::as_str)
                && !out.iter().any(|o| o == id)
            {
                out.push(id.to_owned());
            }
            map.values().for_each(|v| required_approval_ids(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| required_approval_ids(v, out)),
        _ => {}
    }
}
