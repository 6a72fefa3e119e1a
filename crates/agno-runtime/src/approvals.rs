//! Approvals in a run's life, written once for agents and teams (a team member's pause is the
//! team's): the record a pause on a `required` tool writes (and stamps on the paused calls),
//! the answers a continue takes from resolved records (so the caller does not resend the
//! decision), the audit record of a person's decision on an `audit` tool, and the run status
//! the records follow as the run is stored.
//!
//! The rules are Agno 3.1's (`agno/run/approval.py`): one record per pause, covering the
//! `required` calls that have none yet and the other calls paused with them; a continue with no
//! answer for such a call uses the call's own record (its stamped `approval_id`, else the
//! latest `required` record of the run, or of the member run that owns the call); a pending
//! record stops the continue. An approval past its `expires_at` is expired, which rejects the
//! call (Agno stores `expires_at` but never acts on it).

use agno_core::{
    APPROVAL_APPROVED, APPROVAL_PENDING, APPROVAL_REJECTED, ApprovalQuery, ApprovalRecord, ApprovalStore, ApprovalType,
    RunOutput, RunRequirement, RunStatus, ToolExecution, new_id, now_epoch_secs,
};
use serde_json::{Map, Value, json};

use crate::RunError;

/// Why a continue cannot take its answers from approvals.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalGate {
    /// The call's approval waits for an admin.
    #[error(
        "approval {approval_id} is still pending; resolve it (POST /approvals/{approval_id}/resolve) before continuing this run"
    )]
    Pending {
        /// The pending approval.
        approval_id: String,
    },
    /// The call needs an approval, and none was found.
    #[error(
        "no approval record was found for tool call {tool_call_id}; a run that requires an admin's approval cannot continue without one"
    )]
    Missing {
        /// The paused call.
        tool_call_id: String,
    },
}

/// Whose run an approval is for.
#[derive(Debug, Clone, Default)]
pub struct ApprovalSource {
    /// `agent`, `team` or `workflow`.
    pub source_type: &'static str,
    /// The agent's id (an agent's run).
    pub agent_id: Option<String>,
    /// The team's id (a team's run).
    pub team_id: Option<String>,
    /// The workflow's id.
    pub workflow_id: Option<String>,
    /// The component's name.
    pub name: Option<String>,
    /// The user whose run it is.
    pub user_id: Option<String>,
    /// How long its approval waits for an admin before it expires.
    pub expires_in: Option<std::time::Duration>,
}

impl ApprovalSource {
    /// The source of a stored run, read off the run (a team's run names its team).
    pub fn of_run(run: &RunOutput) -> Self {
        let extra = |key: &str| run.extra.get(key).and_then(Value::as_str).map(str::to_owned);
        match extra("team_id") {
            Some(team_id) => ApprovalSource {
                source_type: "team",
                team_id: Some(team_id),
                name: extra("team_name"),
                user_id: run.user_id.clone(),
                ..Default::default()
            },
            None => ApprovalSource {
                source_type: "agent",
                agent_id: run.agent_id.clone(),
                name: run.agent_name.clone(),
                user_id: run.user_id.clone(),
                ..Default::default()
            },
        }
    }
}

fn is_required(t: &ToolExecution) -> bool {
    t.approval_type.as_deref() == Some(ApprovalType::Required.as_str())
}

/// `confirmation`, `user_input` or `external_execution`, as Agno names a call's pause.
fn pause_type(t: &ToolExecution) -> &'static str {
    if t.requires_user_input == Some(true) {
        "user_input"
    } else if t.external_execution_required == Some(true) {
        "external_execution"
    } else {
        "confirmation"
    }
}

/// The `required` calls of `run` with no record yet (the calls of the current pause), each once.
fn unstamped(run: &RunOutput) -> Vec<ToolExecution> {
    let mut out: Vec<ToolExecution> = Vec::new();
    let calls =
        run.tools.iter().flatten().chain(run.requirements.iter().flatten().filter_map(|r| r.tool_execution.as_ref()));
    for t in calls {
        if is_required(t) && t.approval_id.is_none() && !out.iter().any(|o| o.tool_call_id == t.tool_call_id) {
            out.push(t.clone());
        }
    }
    out
}

/// Stamps `approval_id` on the `required` calls of `run` that have none.
fn stamp(run: &mut RunOutput, approval_id: &str) {
    let calls = run
        .tools
        .iter_mut()
        .flatten()
        .chain(run.requirements.iter_mut().flatten().filter_map(|r| r.tool_execution.as_mut()));
    for t in calls {
        if is_required(t) && t.approval_id.is_none() {
            t.approval_id = Some(approval_id.to_owned());
        }
    }
}

/// A record of `run`'s call `tool` (the first the approval covers) naming the calls `names`, as
/// Agno builds one: its ids, its source, `context` with the tool names and the source's name.
fn new_record(
    run: &RunOutput,
    source: &ApprovalSource,
    tool: &ToolExecution,
    kind: ApprovalType,
    names: &[&str],
    now: i64,
) -> ApprovalRecord {
    let mut context = Map::new();
    if !names.is_empty() {
        context.insert("tool_names".to_owned(), json!(names));
    }
    if let Some(name) = &source.name {
        context.insert("source_name".to_owned(), json!(name));
    }
    ApprovalRecord {
        id: new_id(),
        run_id: run.id().to_owned(),
        session_id: run.session_id.clone().unwrap_or_default(),
        status: String::new(),
        source_type: source.source_type.to_owned(),
        approval_type: Some(kind.as_str().to_owned()),
        pause_type: pause_type(tool).to_owned(),
        tool_name: tool.tool_name.clone(),
        tool_args: tool.tool_args.clone(),
        expires_at: None,
        agent_id: source.agent_id.clone(),
        team_id: source.team_id.clone(),
        workflow_id: None,
        user_id: source.user_id.clone(),
        schedule_id: None,
        schedule_run_id: None,
        source_name: source.name.clone(),
        requirements: None,
        context: (!context.is_empty()).then_some(context),
        resolution_data: None,
        resolved_by: None,
        resolved_at: None,
        created_at: now,
        updated_at: None,
        run_status: None,
    }
}

/// Writes the approval record of a run that paused on `required` calls, stamping its id on them
/// (before the run is stored, so the stored run carries it). Nothing when the pause has no such
/// call, or each already has a record (a member's own). A failed write is logged: the run is
/// stored paused all the same, and its continue then fails for want of a record.
pub async fn record_pause(db: &dyn ApprovalStore, run: &mut RunOutput, source: &ApprovalSource) -> Option<String> {
    let pending = unstamped(run);
    let first = pending.first()?;
    let ids: Vec<Option<&str>> = pending.iter().map(|t| t.tool_call_id.as_deref()).collect();
    // The requirements of this pause: its `required` calls and the other calls paused with them.
    let requirements: Vec<Value> = run
        .requirements
        .iter()
        .flatten()
        .filter(|r| {
            let Some(t) = &r.tool_execution else { return false };
            ids.contains(&t.tool_call_id.as_deref()) || (t.approval_type.is_none() && !r.is_resolved())
        })
        .filter_map(|r| serde_json::to_value(r).ok())
        .collect();
    let names: Vec<&str> = pending.iter().filter_map(|t| t.tool_name.as_deref()).collect();
    let now = now_epoch_secs();
    let mut record = new_record(run, source, first, ApprovalType::Required, &names, now);
    record.status = APPROVAL_PENDING.to_owned();
    record.expires_at = source.expires_in.map(|d| now.saturating_add(i64::try_from(d.as_secs()).unwrap_or(i64::MAX)));
    record.workflow_id.clone_from(&source.workflow_id);
    record.requirements = (!requirements.is_empty()).then_some(requirements);
    record.run_status = Some(RunStatus::Paused.as_str().to_owned());
    match db.create_approval(&record).await {
        Ok(()) => {
            stamp(run, &record.id);
            tracing::debug!(approval_id = record.id, run_id = record.run_id, "approval requested");
            Some(record.id)
        }
        Err(e) => {
            tracing::error!(run_id = record.run_id, error = %e, "cannot write the approval of a paused run");
            None
        }
    }
}

/// The answers the resolved approvals give the active `required` requirements of `run` that
/// `given` does not answer, and the first record used (Agno exposes it to post-hooks as the
/// run's `metadata["approval"]`).
///
/// # Errors
/// [`RunError::Approval`] when a call's approval is pending or missing; a storage error.
pub async fn answers_from_approvals(
    db: &dyn ApprovalStore,
    run: &RunOutput,
    given: &[RunRequirement],
) -> Result<(Vec<RunRequirement>, Option<ApprovalRecord>), RunError> {
    let now = now_epoch_secs();
    let mut answers = Vec::new();
    let mut first = None;
    for pending in run.active_requirements() {
        let Some(tool) = pending.tool_execution.as_ref().filter(|t| is_required(t)) else { continue };
        if given
            .iter()
            .any(|g| g.id == pending.id || (g.tool_call_id().is_some() && g.tool_call_id() == pending.tool_call_id()))
        {
            continue;
        }
        let call_id = tool.tool_call_id.clone().unwrap_or_default();
        let mut record = match &tool.approval_id {
            Some(id) => db.get_approval(id).await?,
            None => None,
        };
        if record.is_none() {
            let owner = pending.member_run_id.clone().unwrap_or_else(|| run.id().to_owned());
            let q = ApprovalQuery {
                run_id: Some(owner),
                approval_type: Some(ApprovalType::Required.as_str().to_owned()),
                limit: Some(1),
                ..Default::default()
            };
            record = db.get_approvals(&q).await?.0.into_iter().next();
            // A record naming other calls never speaks for this one.
            record = record.filter(|r| {
                let named = r.tool_call_ids();
                named.is_empty() || named.contains(&call_id.as_str())
            });
        }
        let Some(record) = record else {
            return Err(RunError::Approval(ApprovalGate::Missing { tool_call_id: call_id }));
        };
        let record = decided(db, record, now).await?;
        answers.push(answer_of(pending, &record));
        first.get_or_insert(record);
    }
    Ok((answers, first))
}

/// The answers resolved approvals give `requirements` (a workflow step's executor's), when each of
/// them is a `required` call with its own record: `None` when one needs an answer no approval
/// gives (the caller's to send).
///
/// # Errors
/// [`RunError::Approval`] when a call's approval is still pending; a storage error.
pub async fn answers_for(
    db: &dyn ApprovalStore,
    requirements: &[RunRequirement],
) -> Result<Option<Vec<RunRequirement>>, RunError> {
    let now = now_epoch_secs();
    let mut answers = Vec::with_capacity(requirements.len());
    for pending in requirements {
        let Some(id) = pending.tool_execution.as_ref().filter(|t| is_required(t)).and_then(|t| t.approval_id.clone())
        else {
            return Ok(None);
        };
        let Some(record) = db.get_approval(&id).await? else { return Ok(None) };
        let record = decided(db, record, now).await?;
        answers.push(answer_of(pending, &record));
    }
    Ok((!answers.is_empty()).then_some(answers))
}

/// `record` as decided at `now` (a pending one past its `expires_at` expires first).
///
/// # Errors
/// [`RunError::Approval`] when it is still pending; a storage error.
async fn decided(db: &dyn ApprovalStore, mut record: ApprovalRecord, now: i64) -> Result<ApprovalRecord, RunError> {
    if record.expired_at(now) {
        db.expire_approvals(now).await?;
        record = db.get_approval(&record.id).await?.unwrap_or(record);
    }
    if record.is_pending() {
        return Err(RunError::Approval(ApprovalGate::Pending { approval_id: record.id }));
    }
    Ok(record)
}

/// The answer an approval's decision gives a requirement: approved confirms it (with the
/// resolver's `values` for user input, its `result` for an external execution); any other
/// decision (rejected, expired, cancelled) rejects the call.
fn answer_of(pending: &RunRequirement, record: &ApprovalRecord) -> RunRequirement {
    let mut answer = pending.clone();
    let data = record.resolution_data.clone().unwrap_or_default();
    if record.status == APPROVAL_APPROVED {
        let needs_confirmation = answer.needs_confirmation();
        if needs_confirmation {
            answer.confirm();
        }
        if answer.needs_user_input() {
            let values = match data.get("values") {
                Some(Value::Object(values)) => values.clone(),
                _ => data.clone(),
            };
            answer.provide_user_input(&values);
        }
        if answer.needs_external_execution()
            && let Some(result) = data.get("result").filter(|r| !r.is_null())
        {
            answer.set_external_execution_result(result.as_str().map_or_else(|| result.to_string(), str::to_owned));
        }
        return answer;
    }
    // Refused: the call is rejected, whatever it paused for.
    if let Some(t) = answer.tool_execution.as_mut() {
        t.requires_user_input = None;
        t.external_execution_required = None;
        t.requires_confirmation = Some(true);
        t.answered = Some(true);
    }
    let note = match record.status.as_str() {
        APPROVAL_REJECTED => data.get("note").and_then(Value::as_str).map_or_else(
            || format!("The call was rejected by {}", record.resolved_by.as_deref().unwrap_or("an admin")),
            str::to_owned,
        ),
        other => format!("The call's approval was {other}; it was not run"),
    };
    answer.reject(Some(note));
    answer
}

/// Writes the audit records of the `audit` calls `answers` decide (approved unless rejected),
/// already resolved. Failures are logged: an audit never blocks a run.
pub async fn record_audits(db: &dyn ApprovalStore, run: &RunOutput, answers: &[RunRequirement]) {
    let source = ApprovalSource::of_run(run);
    let now = now_epoch_secs();
    for answer in answers {
        let Some(t) = answer.tool_execution.as_ref() else { continue };
        if t.approval_type.as_deref() != Some(ApprovalType::Audit.as_str()) {
            continue;
        }
        let status = if answer.confirmation == Some(false) { APPROVAL_REJECTED } else { APPROVAL_APPROVED };
        let names: Vec<&str> = t.tool_name.as_deref().into_iter().collect();
        let mut record = new_record(run, &source, t, ApprovalType::Audit, &names, now);
        status.clone_into(&mut record.status);
        record.resolved_at = Some(now);
        if let Err(e) = db.create_approval(&record).await {
            tracing::warn!(run_id = record.run_id, error = %e, "cannot write an audit approval");
        }
    }
}

/// Keeps the approvals of a stored run on its status (Agno's `update_approval_run_status`), for
/// a run that has any (a call stamped with an approval id). Failures are logged.
pub async fn follow_run_status(db: &dyn ApprovalStore, run: &RunOutput) {
    let stamped = run
        .tools
        .iter()
        .flatten()
        .chain(run.requirements.iter().flatten().filter_map(|r| r.tool_execution.as_ref()))
        .any(|t| t.approval_id.is_some());
    if !stamped {
        return;
    }
    if let Err(e) = db.set_approval_run_status(run.id(), run.status.as_str(), now_epoch_secs()).await {
        tracing::warn!(run_id = run.id(), error = %e, "cannot update the run status of the run's approvals");
    }
}
