//! Runs one team run: the leader is an agent built for the run (the team's model, its
//! instructions, the members listed, the delegation tools of the mode) that reads the team's
//! history and stores nothing itself; the team stores the run as a `TeamRunOutput` with its member
//! runs, each member run also as its own row.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agno_core::{AgentSession, DbError, RunEvent, RunOutput, StateUpdate, TeamStreamEvent};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::delegate;
use super::{Member, TeamInner, TeamMode};
use crate::agent::Agent;
use crate::error::RunError;
use crate::request::RunRequest;

/// Longest a finished leader waits for member runs it stopped to store themselves.
const MEMBER_DRAIN: Duration = Duration::from_secs(10);

/// One team run in progress, shared with its delegation tools.
pub(super) struct TeamRun {
    pub(super) team: Arc<TeamInner>,
    pub(super) run_id: String,
    pub(super) session_id: String,
    pub(super) user_id: Option<String>,
    /// The member runs, in the order they ended.
    pub(super) members_out: Mutex<Vec<RunOutput>>,
    /// Member runs still executing (each stores its output in `members_out` when it ends).
    pub(super) in_flight: Mutex<Vec<JoinHandle<()>>>,
    /// The stream, and the next `event_index` of it.
    events: Mutex<(Option<mpsc::UnboundedSender<TeamStreamEvent>>, u64)>,
}

impl TeamRun {
    /// True when someone reads the team's stream.
    pub(super) fn streaming(&self) -> bool {
        self.events.lock().is_ok_and(|e| e.0.as_ref().is_some_and(|tx| !tx.is_closed()))
    }

    fn send(&self, mut event: RunEvent, wrap: fn(Box<RunEvent>) -> TeamStreamEvent) {
        if let Ok(mut events) = self.events.lock() {
            let (tx, next) = &mut *events;
            let Some(tx) = tx else { return };
            event.event_index = Some(*next);
            *next += 1;
            let _ = tx.send(wrap(Box::new(event)));
        }
    }

    /// Passes on a member's event (its `parent_run_id` the team run).
    pub(super) fn forward_member(&self, mut event: RunEvent) {
        event.parent_run_id.get_or_insert_with(|| self.run_id.clone());
        self.send(event, TeamStreamEvent::Member);
    }
}

/// The leader's instructions about its members, as Agno words them.
fn members_message(team: &TeamInner) -> String {
    let mut out = String::from("<team_members>\n");
    for member in &team.members {
        let kind = if matches!(member, Member::Team(_)) { " type=\"team\"" } else { "" };
        out.push_str(&format!(
            "<member id=\"{}\" name=\"{}\"{kind}>\n",
            member.id(),
            member.name().unwrap_or(member.id())
        ));
        if let Some(d) = member.description() {
            out.push_str(&format!("  Description: {d}\n"));
        }
        out.push_str("</member>\n");
    }
    out.push_str("</team_members>\n\n<how_to_respond>\n");
    out.push_str(match team.mode {
        TeamMode::Route => {
            "Pick the one member best suited to the request and delegate it with delegate_task_to_member. \
             The member's answer is returned to the user as it is.\n"
        }
        TeamMode::Broadcast => {
            "Send the task to every member at once with delegate_task_to_members (one call reaches all \
             members), then answer from their responses.\n"
        }
        _ => {
            "Delegate parts of the request to the members best suited for them with delegate_task_to_member \
             (member_id exactly as in <team_members>), then answer the user from their results.\n"
        }
    });
    out.push_str("</how_to_respond>");
    out
}

/// The history the leader reads: the team's earlier runs in this session (not its members').
async fn history(
    team: &TeamInner,
    session_id: &str,
    user_id: Option<&str>,
) -> Result<Vec<agno_core::Message>, DbError> {
    let Some(db) = team.db.as_ref().filter(|_| team.add_history_to_context) else { return Ok(Vec::new()) };
    let Some(mut session) = db.get_session(session_id, user_id, None).await? else { return Ok(Vec::new()) };
    if let Some(runs) = session.runs.as_mut() {
        runs.retain(|r| r.parent_run_id.is_none() && r.agent_id.is_none());
    }
    Ok(session.history_messages(Some(team.num_history_runs), None))
}

/// Runs the team: the leader to its end, then the members it stopped, then (with `store`) the
/// team run, its member runs and the session.
pub(super) async fn execute(
    team: Arc<TeamInner>,
    mut request: RunRequest,
    tx: Option<mpsc::UnboundedSender<TeamStreamEvent>>,
    store: bool,
) -> Result<RunOutput, RunError> {
    let run_id = request.run_id.clone().unwrap_or_else(agno_core::new_id);
    let session_id = request.session_id.clone().unwrap_or_else(agno_core::new_id);
    let user_id = request.user_id.clone();
    let db = team.db.clone().filter(|_| store);
    let stored_session = match &db {
        Some(db) => db.get_session(&session_id, user_id.as_deref(), Some(0)).await?,
        None => None,
    };
    let mut initial = stored_session.as_ref().and_then(AgentSession::session_state).cloned().unwrap_or_default();
    for (k, v) in &team.session_state {
        initial.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let history = if store { history(&team, &session_id, user_id.as_deref()).await? } else { Vec::new() };

    let run = Arc::new(TeamRun {
        team: Arc::clone(&team),
        run_id: run_id.clone(),
        session_id: session_id.clone(),
        user_id: user_id.clone(),
        members_out: Mutex::new(Vec::new()),
        in_flight: Mutex::new(Vec::new()),
        events: Mutex::new((tx, 0)),
    });
    let mut builder = Agent::builder(Arc::clone(&team.model))
        .id(team.id.clone())
        .additional_context(members_message(&team))
        .instructions(team.instructions.clone());
    if let Some(name) = &team.name {
        builder = builder.name(name.clone());
    }
    if let Some(d) = &team.description {
        builder = builder.description(d.clone());
    }
    for tool in delegate::tools(&run) {
        builder = builder.tool_arc(tool);
    }
    let leader = builder.build().map_err(|e| RunError::Internal(format!("cannot build the team's leader: {e}")))?;

    let mut state = initial.clone();
    if let Some(overrides) = request.session_state.take() {
        state.extend(overrides);
    }
    let mut session = stored_session.unwrap_or_else(|| {
        let mut s = AgentSession::new(&session_id);
        s.user_id.clone_from(&user_id);
        s
    });
    // Stored RUNNING before anything runs, so the run is visible (and cancellable by its owner)
    // while it executes, as an agent run is.
    if let Some(db) = &db {
        let mut running = RunOutput::new(&run_id, &session_id);
        running.user_id.clone_from(&user_id);
        running.input = Some(request.input.clone());
        running.extra.insert("team_id".to_owned(), Value::String(team.id.clone()));
        if let Some(name) = &team.name {
            running.extra.insert("team_name".to_owned(), Value::String(name.clone()));
        }
        write_session(db.as_ref(), &team, &mut session, &initial, initial.clone()).await?;
        db.upsert_run(&running, &session_id, user_id.as_deref()).await?;
    }
    request.run_id = Some(run_id.clone());
    request.session_id = Some(session_id.clone());
    request.session_state = Some(state);
    request.store = Some(false);
    request.history = Some(history);
    // The leader's terminal event is sent last, after the members it stopped have ended.
    let mut terminal = None;
    let result = if run.streaming() {
        let mut stream = leader.run_stream(request);
        while let Some(event) = stream.next().await {
            if event.data.is_terminal() {
                terminal = Some(event);
            } else {
                run.send(event, TeamStreamEvent::Team);
            }
        }
        stream.output().await
    } else {
        leader.spawn_run(request).await
    };
    // Members stopped by a cancel store how they ended before the team does.
    let pending: Vec<JoinHandle<()>> = run.in_flight.lock().map(|mut p| std::mem::take(&mut *p)).unwrap_or_default();
    if tokio::time::timeout(MEMBER_DRAIN, futures::future::join_all(pending)).await.is_err() {
        tracing::warn!(run_id, "member runs did not end within the drain time");
    }
    if let Some(event) = terminal {
        run.send(event, TeamStreamEvent::Team);
    }
    let members: Vec<RunOutput> = run.members_out.lock().map(|m| m.clone()).unwrap_or_default();
    let finish = |mut out: RunOutput| {
        out.agent_id = None;
        out.agent_name = None;
        out.extra.insert("team_id".to_owned(), Value::String(team.id.clone()));
        if let Some(name) = &team.name {
            out.extra.insert("team_name".to_owned(), Value::String(name.clone()));
        }
        out.extra.insert("member_responses".to_owned(), serde_json::to_value(&members).unwrap_or_default());
        out
    };
    let (record, error) = match result {
        Ok(out) => (finish(out), None),
        Err(e) => match e.run().cloned() {
            Some(out) => (finish(out), Some(e)),
            None => return Err(e),
        },
    };
    if let Some(db) = &db {
        let state = record.session_state.clone().unwrap_or_default();
        write_session(db.as_ref(), &team, &mut session, &initial, state).await?;
        for member in &members {
            db.upsert_run(member, &session_id, user_id.as_deref()).await?;
        }
        db.upsert_run(&record, &session_id, user_id.as_deref()).await?;
    }
    match error {
        None => Ok(record),
        Some(e) => Err(replace_run(e, record)),
    }
}

/// Writes the team session: its state as a merge of this run's changes, `team_data` as Agno's.
async fn write_session(
    db: &dyn agno_core::Db,
    team: &TeamInner,
    session: &mut AgentSession,
    initial: &serde_json::Map<String, Value>,
    state: serde_json::Map<String, Value>,
) -> Result<(), DbError> {
    session.team_id = Some(team.id.clone());
    session.runs = None;
    let update = StateUpdate::diff(initial, &state);
    session.set_session_state(state);
    session.extra.insert(
        "team_data".to_owned(),
        json!({"team_id": team.id, "name": team.name, "mode": team.mode.as_str(), "model": {
            "name": team.model.name(), "id": team.model.id(), "provider": team.model.provider()}}),
    );
    db.upsert_session(session, &update).await
}

/// The error with the team's record in place of the leader's.
fn replace_run(e: RunError, record: RunOutput) -> RunError {
    match e {
        RunError::Model { source, .. } => RunError::Model { source, run: Box::new(record) },
        RunError::Hook { hook, message, .. } => RunError::Hook { hook, message, run: Box::new(record) },
        RunError::OutputSchema { message, .. } => RunError::OutputSchema { message, run: Box::new(record) },
        other => other,
    }
}

/// Runs a nested team as a member: nothing of its own is stored (the outer team stores it).
pub(super) async fn execute_member(
    team: Arc<TeamInner>,
    request: RunRequest,
    outer: Arc<TeamRun>,
) -> Result<RunOutput, RunError> {
    let (tx, mut rx) = mpsc::unbounded_channel::<TeamStreamEvent>();
    let forward = outer.streaming();
    let tx = forward.then_some(tx);
    let run = tokio::spawn(execute(team, request, tx, false));
    if forward {
        while let Some(event) = rx.recv().await {
            outer.forward_member(event.inner().clone());
        }
    }
    run.await.map_err(|e| RunError::Internal(e.to_string()))?
}

/// What the leader reads back from a member's run (Agno's wording).
pub(super) fn member_text(out: &RunOutput) -> String {
    match &out.content {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
        Some(Value::Null) | None | Some(Value::String(_)) => {
            let results: Vec<&str> = out.tools.iter().flatten().filter_map(|t| t.result.as_deref()).collect();
            if results.is_empty() { "No response from the member agent.".to_owned() } else { results.join(",") }
        }
        Some(other) => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}
