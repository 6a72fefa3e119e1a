//! Pause and continue of a team run whose members wait for a person: a member that pauses
//! makes the leader's delegation call wait (the leader pauses on it like on an external result),
//! the team run is `PAUSED` on the member's requirements, and a continue runs each paused member
//! with its answers, then the leader with the members' answers as its calls' results.

use std::sync::Arc;

use agno_core::{RunOutput, RunRequirement, RunStatus, TeamStreamEvent};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use super::engine::{LeaderCall, Storage, TeamRun, conclude, drive, find_member, leader, member_text};
use super::{Member, TeamInner};
use crate::error::RunError;
use crate::request::{ContinueFrom, ContinueRequest};
use crate::trace::{RunSpan, Runner};

/// Where a paused team run keeps its delegation calls waiting on members.
const PAUSES_KEY: &str = "member_pauses";
/// Where a paused team run keeps its leader's own requirements (its delegation calls).
const LEADER_KEY: &str = "leader_requirements";

/// A delegation call of the leader waiting on paused members; its result is the members'
/// answers, put together once they have all continued.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct DelegationPause {
    /// The leader's call.
    pub(super) tool_call_id: String,
    /// Each member's share of the call's result.
    pub(super) parts: Vec<PausePart>,
    /// Tasks mode: the task the call executes (it ends with the member's answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) task_id: Option<String>,
}

impl DelegationPause {
    fn waiting(&self) -> bool {
        self.parts.iter().any(|p| p.member_run_id.is_some())
    }

    /// The call's result: each member's text after its prefix, one per line (for a task, as
    /// `execute_task` words its result).
    fn answer(&self) -> String {
        if let (Some(task), [part]) = (&self.task_id, self.parts.as_slice()) {
            let text = part.text.as_deref().unwrap_or_default();
            return match part.failed {
                true => format!("Task [{task}] failed: {text}"),
                false => {
                    format!("Task [{task}] completed by {}:\n{text}", part.member_id.as_deref().unwrap_or_default())
                }
            };
        }
        let lines: Vec<String> =
            self.parts.iter().map(|p| format!("{}{}", p.prefix, p.text.as_deref().unwrap_or_default())).collect();
        lines.join("\n")
    }
}

/// One member's share of a delegation's result: its text, or its paused run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct PausePart {
    /// Put before the member's text (broadcast: `Agent {name}: `).
    #[serde(default)]
    pub(super) prefix: String,
    /// The member's answer, once it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) text: Option<String>,
    /// The member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) member_id: Option<String>,
    /// The member's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) member_name: Option<String>,
    /// The member's run did not complete (cancelled, failed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) failed: bool,
    /// The member's paused run, while it waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) member_run_id: Option<String>,
}

/// Turns the leader's run, paused on delegation calls to paused members, into the team's paused
/// run: the members' active requirements (with Agno's `member_*` fields), Agno's paused content,
/// and what a continue needs (the waiting calls, the leader's own requirements).
pub(super) fn pause_on_members(out: &mut RunOutput, pauses: &[DelegationPause], members: &[RunOutput]) {
    let leader_requirements = out.requirements.take().unwrap_or_default();
    let mut requirements = Vec::new();
    for part in pauses.iter().flat_map(|p| &p.parts) {
        let Some(member_run) = part.member_run_id.as_deref().and_then(|id| members.iter().find(|m| m.id() == id))
        else {
            continue;
        };
        for req in member_run.active_requirements() {
            let mut req = req.clone();
            req.member_agent_id = req.member_agent_id.or_else(|| part.member_id.clone());
            req.member_agent_name = req.member_agent_name.or_else(|| part.member_name.clone());
            req.member_run_id = req.member_run_id.or_else(|| Some(member_run.id().to_owned()));
            requirements.push(req);
        }
    }
    out.content = Some(Value::String(paused_content(&requirements)));
    out.requirements = Some(requirements);
    out.extra.insert(PAUSES_KEY.to_owned(), serde_json::to_value(pauses).unwrap_or_default());
    out.extra.insert(LEADER_KEY.to_owned(), serde_json::to_value(&leader_requirements).unwrap_or_default());
}

/// Continues a paused team run: each paused member continues with the answers to its
/// requirements (found by requirement id), then the leader continues with the members' answers
/// as the results of its delegation calls. A member that pauses again keeps the team paused.
pub(super) async fn continue_run(
    team: Arc<TeamInner>,
    request: ContinueRequest,
    tx: Option<mpsc::UnboundedSender<TeamStreamEvent>>,
    store: bool,
) -> Result<RunOutput, RunError> {
    let ids = (Some(request.target_run_id()), None, request.user_id.as_deref());
    let span = RunSpan::start(
        Runner::Team,
        team.tracing.as_ref(),
        (&team.id, team.name.as_deref()),
        "continue_run",
        String::new,
        ids,
    );
    RunSpan::around(span, continue_team_run(team, request, tx, store)).await
}

async fn continue_team_run(
    team: Arc<TeamInner>,
    request: ContinueRequest,
    tx: Option<mpsc::UnboundedSender<TeamStreamEvent>>,
    store: bool,
) -> Result<RunOutput, RunError> {
    let mut record = match request.from {
        ContinueFrom::Output(output) => *output,
        ContinueFrom::RunId(run_id) => {
            let Some(db) = &team.db else { return Err(RunError::RunNotFound(run_id)) };
            db.get_run(&run_id, request.user_id.as_deref()).await?.ok_or(RunError::RunNotFound(run_id))?
        }
    };
    if record.extra.get(PAUSES_KEY).is_none()
        && record.active_requirements().is_empty()
        && request.requirements.is_empty()
    {
        return carry_on_leader(team, record, request.user_id.clone(), &request.durable, tx, store).await;
    }
    let answers = check_continuable(&team, &record, &request.requirements)?;
    let run_id = record.id().to_owned();
    let mut pauses: Vec<DelegationPause> = take_json(&mut record, PAUSES_KEY)
        .ok_or_else(|| RunError::InvalidContinue(format!("team run {run_id} has no paused member to continue")))?;
    let mut leader_requirements: Vec<RunRequirement> = take_json(&mut record, LEADER_KEY).unwrap_or_default();
    let members: Vec<RunOutput> = take_json(&mut record, "member_responses").unwrap_or_default();

    let session_id = record.session_id.clone().unwrap_or_default();
    let user_id = request.user_id.clone().or_else(|| record.user_id.clone());
    let fence = request.durable.fence.clone();
    let after = request.durable.after_event_index;
    let mut storage = Storage::load(&team, &session_id, user_id.as_deref(), store, fence.clone()).await?;
    // What the pause already added to the session's metrics.
    storage.counted = super::engine::run_metrics(&members.iter().chain(std::iter::once(&record)).collect::<Vec<_>>());
    let mut running = record.clone();
    running.status = RunStatus::Running;
    running.extra.insert("member_responses".to_owned(), serde_json::to_value(&members).unwrap_or_default());
    storage.start(&team, &running).await?;

    let run = TeamRun::new(&team, &run_id, &session_id, user_id.clone(), members, tx, after);
    // The members continue under the team run's registration, so a cancel of the team reaches
    // them.
    let registration = crate::cancel::Registration::new(&run_id);
    let token = registration.token().clone();
    for pause in &mut pauses {
        for part in &mut pause.parts {
            let Some(member_run_id) = part.member_run_id.clone() else { continue };
            let paused = run.member_run(&member_run_id).ok_or_else(|| {
                RunError::InvalidContinue(format!("paused member run {member_run_id} is missing from the team run"))
            })?;
            let ids: Vec<&str> = paused.active_requirements().into_iter().map(|r| r.id.as_str()).collect();
            let mine: Vec<RunRequirement> = answers.iter().filter(|a| ids.contains(&a.id.as_str())).cloned().collect();
            let member = part.member_id.as_deref().and_then(|id| find_member(&team.members, id)).ok_or_else(|| {
                RunError::InvalidContinue(format!(
                    "member {:?} of the paused run is no longer in team {:?}",
                    part.member_id.as_deref().unwrap_or_default(),
                    team.id
                ))
            })?;
            let continued = ContinueRequest::output(paused, mine).store(false);
            let continued = match &user_id {
                Some(user) => continued.user_id(user.clone()),
                None => continued,
            };
            let task = continue_member(member.clone(), continued, Arc::clone(&run));
            tokio::pin!(task);
            let result = tokio::select! {
                result = &mut task => result,
                () = token.cancelled() => {
                    // Stop the member where it is and keep how it ended.
                    crate::cancel::cancel_run(&member_run_id);
                    task.await
                }
            };
            let out = match result {
                Ok(out) => Some(out),
                Err(e) => e.run().cloned(),
            };
            match out {
                Some(out) if out.status == RunStatus::Paused => {
                    part.member_run_id = Some(out.id().to_owned());
                    run.replace_member(out);
                }
                Some(out) => {
                    part.text = Some(member_text(&out));
                    part.failed = out.status != RunStatus::Completed;
                    part.member_run_id = None;
                    run.replace_member(out);
                }
                None => {
                    part.text = Some("the member failed to continue".to_owned());
                    part.failed = true;
                    part.member_run_id = None;
                }
            }
        }
    }
    let cancelled = token.is_cancelled();
    drop(registration);
    if cancelled {
        // Remembered for the leader's continuation, which stops at its first checkpoint.
        crate::cancel::cancel_run(&run_id);
    }
    if pauses.iter().any(DelegationPause::waiting) {
        // A member paused again: the team stays paused on its new requirements.
        record.requirements = Some(leader_requirements);
        if let Ok(mut p) = run.pauses.lock() {
            *p = pauses;
        }
        return conclude(&team, &run, Ok(record), storage).await;
    }
    // Tasks mode: a task whose member waited ends with the member's answer.
    for pause in &pauses {
        if let (Some(task), [part]) = (&pause.task_id, pause.parts.as_slice()) {
            let state = record.session_state.get_or_insert_with(Default::default);
            super::tasks::end_task(state, task, !part.failed, part.text.clone().unwrap_or_default());
        }
    }
    // The leader's run keeps its requirements open; the answers carry the members' results.
    record.requirements = Some(leader_requirements.clone());
    for req in &mut leader_requirements {
        if let Some(pause) = pauses.iter().find(|p| req.tool_call_id() == Some(p.tool_call_id.as_str())) {
            req.set_external_execution_result(pause.answer());
        }
    }
    let leader = leader(&team, &run)?;
    let call = ContinueRequest::output(record, leader_requirements).store(false);
    let call = match &user_id {
        Some(user) => call.user_id(user.clone()),
        None => call,
    };
    let result = drive(&run, &leader, LeaderCall::Continue(call)).await;
    conclude(&team, &run, result, storage).await
}

/// Carries on a team run that waits on no member and no requirement (a branch of a finished or
/// failed run, `agno_core::branch`): the leader goes on from the run's messages, delegating as
/// it sees fit, and the team's run is stored as any run of the team.
async fn carry_on_leader(
    team: Arc<TeamInner>,
    mut record: RunOutput,
    user_id: Option<String>,
    durable: &crate::Durable,
    tx: Option<mpsc::UnboundedSender<TeamStreamEvent>>,
    store: bool,
) -> Result<RunOutput, RunError> {
    let run_id = record.id().to_owned();
    if record.extra.get("team_id").and_then(Value::as_str) != Some(team.id.as_str()) {
        return Err(RunError::RunNotFound(run_id));
    }
    let members: Vec<RunOutput> = take_json(&mut record, "member_responses").unwrap_or_default();
    let session_id = record.session_id.clone().unwrap_or_default();
    let user_id = user_id.or_else(|| record.user_id.clone());
    let mut storage = Storage::load(&team, &session_id, user_id.as_deref(), store, durable.fence.clone()).await?;
    // The members' runs it carries were counted when they were made.
    storage.counted = super::engine::run_metrics(&members.iter().chain(std::iter::once(&record)).collect::<Vec<_>>());
    let mut running = record.clone();
    running.status = RunStatus::Running;
    running.extra.insert("member_responses".to_owned(), serde_json::to_value(&members).unwrap_or_default());
    storage.start(&team, &running).await?;
    let run = TeamRun::new(&team, &run_id, &session_id, user_id.clone(), members, tx, durable.after_event_index);
    let leader = leader(&team, &run)?;
    let call = ContinueRequest::output(record, Vec::new()).store(false);
    let call = match &user_id {
        Some(user) => call.user_id(user.clone()),
        None => call,
    };
    let result = drive(&run, &leader, LeaderCall::Continue(call)).await;
    conclude(&team, &run, result, storage).await
}

/// Checks that `record` is a paused run of `team` and `given` answers it; returns the answers.
pub(super) fn check_continuable(
    team: &TeamInner,
    record: &RunOutput,
    given: &[RunRequirement],
) -> Result<Vec<RunRequirement>, RunError> {
    let run_id = record.id().to_owned();
    if record.extra.get("team_id").and_then(Value::as_str) != Some(team.id.as_str()) {
        return Err(RunError::RunNotFound(run_id));
    }
    if record.status != RunStatus::Paused {
        return Err(RunError::NotPaused { run_id, status: record.status });
    }
    check_answers(record, given)
}

/// The answers of a continue, checked against the run's active requirements: each active one
/// answered and resolved, no answer for anything else. Nothing has changed when this fails.
fn check_answers(record: &RunOutput, given: &[RunRequirement]) -> Result<Vec<RunRequirement>, RunError> {
    let active = record.active_requirements();
    for answer in given {
        if !active.iter().any(|r| r.id == answer.id) {
            return Err(RunError::InvalidContinue(format!(
                "requirement {:?} is not active in team run {}; active: {}",
                answer.id,
                record.id(),
                active.iter().map(|r| r.id.as_str()).collect::<Vec<_>>().join(", ")
            )));
        }
    }
    let mut out = Vec::with_capacity(active.len());
    for pending in active {
        let call_id = pending.tool_call_id().unwrap_or(&pending.id).to_owned();
        let Some(answer) = given.iter().find(|a| a.id == pending.id) else {
            return Err(RunError::UnresolvedRequirement { tool_call_id: call_id, what: "no answer was given" });
        };
        if !answer.is_resolved() {
            return Err(RunError::UnresolvedRequirement {
                tool_call_id: call_id,
                what: "confirm or reject it, give its input or its result",
            });
        }
        out.push(answer.clone());
    }
    Ok(out)
}

/// Continues a paused member run (not stored on its own: the team stores it).
async fn continue_member(member: Member, request: ContinueRequest, run: Arc<TeamRun>) -> Result<RunOutput, RunError> {
    match member {
        Member::Agent(agent) if run.streaming() => {
            let mut stream = agent.continue_run_stream(request);
            while let Some(event) = stream.next().await {
                run.forward_member(event);
            }
            stream.output().await
        }
        Member::Agent(agent) => agent.acontinue_run(request).await,
        Member::Team(team) => {
            let (tx, mut rx) = mpsc::unbounded_channel::<TeamStreamEvent>();
            let forward = run.streaming();
            let task = tokio::spawn(crate::trace::propagate(continue_nested(
                Arc::clone(&team.inner),
                request,
                forward.then_some(tx),
            )));
            if forward {
                while let Some(event) = rx.recv().await {
                    run.forward_member(event.inner().clone());
                }
            }
            task.await.map_err(|e| RunError::Internal(e.to_string()))?
        }
    }
}

/// A nested team's continuation, boxed (the continuation is recursive).
fn continue_nested(
    team: Arc<TeamInner>,
    request: ContinueRequest,
    tx: Option<mpsc::UnboundedSender<TeamStreamEvent>>,
) -> futures::future::BoxFuture<'static, Result<RunOutput, RunError>> {
    Box::pin(continue_run(team, request, tx, false))
}

/// What a paused team run says (Agno's wording): each active requirement, by member and tool.
fn paused_content(requirements: &[RunRequirement]) -> String {
    let mut parts = Vec::new();
    for req in requirements.iter().filter(|r| !r.is_resolved()) {
        let member = req.member_agent_name.as_deref().unwrap_or("team");
        let tool = req.tool_execution.as_ref().and_then(|t| t.tool_name.as_deref()).unwrap_or("unknown");
        let what = if req.needs_confirmation() {
            "requires confirmation"
        } else if req.needs_user_input() {
            "requires user input"
        } else {
            "requires external execution"
        };
        parts.push(format!("- {member}: {tool} {what}"));
    }
    if parts.is_empty() {
        return "Team run paused.".to_owned();
    }
    format!("Team run paused. The following require input:\n{}", parts.join("\n"))
}

/// Takes the JSON value `key` out of the run's extra fields.
fn take_json<T: serde::de::DeserializeOwned>(record: &mut RunOutput, key: &str) -> Option<T> {
    record.extra.remove(key).and_then(|v| serde_json::from_value(v).ok())
}
