//! Runs one team run: the leader is an agent built for the run (the team's model, its
//! instructions, the members listed, the delegation tools of the mode) that reads the team's
//! history and stores nothing itself; the team stores the run as a `TeamRunOutput` with its member
//! runs, each member run also as its own row.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agno_core::{AgentSession, DbError, RunEvent, RunOutput, RunStatus, RunWrite, StateUpdate, TeamStreamEvent};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::delegate;
use super::resume::{self, DelegationPause};
use super::{Member, TeamInner, TeamMode};
use crate::agent::Agent;
use crate::error::RunError;
use crate::request::{ContinueRequest, RunRequest};
use crate::trace::{RunSpan, Runner};

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
    /// Delegation calls waiting on paused members.
    pub(super) pauses: Mutex<Vec<DelegationPause>>,
    /// The stream, and the next `event_index` of it.
    events: Mutex<(Option<mpsc::UnboundedSender<TeamStreamEvent>>, u64)>,
    /// What a streamed run keeps on its record (Agno's `events`: all but content deltas).
    stored_events: Mutex<Vec<Value>>,
    /// Whether events are kept at all (a run asked for without streaming keeps none).
    keep_events: std::sync::atomic::AtomicBool,
}

impl TeamRun {
    pub(super) fn new(
        team: &Arc<TeamInner>,
        run_id: &str,
        session_id: &str,
        user_id: Option<String>,
        members: Vec<RunOutput>,
        tx: Option<mpsc::UnboundedSender<TeamStreamEvent>>,
        after_event_index: Option<u64>,
    ) -> Arc<Self> {
        Arc::new(Self {
            team: Arc::clone(team),
            run_id: run_id.to_owned(),
            session_id: session_id.to_owned(),
            user_id,
            members_out: Mutex::new(members),
            in_flight: Mutex::new(Vec::new()),
            pauses: Mutex::new(Vec::new()),
            events: Mutex::new((tx, after_event_index.map_or(0, |i| i + 1))),
            stored_events: Mutex::new(Vec::new()),
            keep_events: std::sync::atomic::AtomicBool::new(true),
        })
    }

    /// Keeps none of the run's events on its record ([`RunRequest::store_events`]).
    pub(super) fn drop_events(&self) {
        self.keep_events.store(false, std::sync::atomic::Ordering::Relaxed);
    }

    /// Records a delegation call waiting on paused members.
    pub(super) fn pause(&self, pause: DelegationPause) {
        if let Ok(mut pauses) = self.pauses.lock() {
            pauses.push(pause);
        }
    }

    /// The member run `id`, as this run holds it.
    pub(super) fn member_run(&self, id: &str) -> Option<RunOutput> {
        self.members_out.lock().ok()?.iter().find(|m| m.id() == id).cloned()
    }

    /// Puts `out` in place of the member run with its id (or after the others).
    pub(super) fn replace_member(&self, out: RunOutput) {
        if let Ok(mut members) = self.members_out.lock() {
            match members.iter_mut().find(|m| m.id() == out.id()) {
                Some(slot) => *slot = out,
                None => members.push(out),
            }
        }
    }

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
            let keep = self.keep_events.load(std::sync::atomic::Ordering::Relaxed)
                && !matches!(event.data, agno_core::EventData::RunContent { .. });
            let event = wrap(Box::new(event));
            if keep && let (Ok(value), Ok(mut stored)) = (serde_json::to_value(&event), self.stored_events.lock()) {
                stored.push(value);
            }
            let _ = tx.send(event);
        }
    }

    /// Sends a team event of the run's own (tasks mode's), when someone reads the stream.
    pub(super) fn emit(&self, data: agno_core::EventData) {
        if !self.streaming() {
            return;
        }
        let event = RunEvent::new(
            data,
            self.team.id.clone(),
            self.team.name.clone().unwrap_or_default(),
            self.run_id.clone(),
            self.session_id.clone(),
        );
        self.send(event, TeamStreamEvent::Team);
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
        TeamMode::Tasks => {
            "You work from a shared task list: you create tasks, assign each one to a member, execute them, \
             and deliver the result.\n\
             - `create_task` sets the assignee: the member whose role and description fit the work best. \
             `execute_tasks_parallel` runs each task against the member it was created with, so a task created \
             without an assignee cannot go in a batch. Titles are unique: creating a task under an existing \
             title returns that task instead of a new one.\n\
             - Set `depends_on` only when a task genuinely needs another task's output.\n\
             - Run one task with `execute_task`, or a batch of independent ones with `execute_tasks_parallel`. \
             `list_tasks` re-reads the board at any point.\n\
             - Read every result. On a failure, retry, reassign, or change the plan. Record work you did \
             yourself with `update_task_status`, and anything a later task will need with `add_task_note`.\n\
             - `mark_all_complete` ends the loop; the summary you pass it is bookkeeping, not the reply. Write \
             the answer as your own message: that message is what reaches the user. A list whose tasks have \
             all completed also ends the loop. For a request that needs no tasks at all, write the answer and \
             call `mark_all_complete` in the same turn.\n"
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

/// Builds the run's leader: the team's model, instructions and members listed, with the
/// delegation tools of the mode bound to `run`.
pub(super) fn leader(team: &TeamInner, run: &Arc<TeamRun>) -> Result<Agent, RunError> {
    let mut builder = Agent::builder(Arc::clone(&team.model))
        .leads_team()
        .id(team.id.clone())
        .additional_context(members_message(team))
        .instructions(team.instructions.clone());
    if let Some(name) = &team.name {
        builder = builder.name(name.clone());
    }
    if let Some(d) = &team.description {
        builder = builder.description(d.clone());
    }
    let tools = match team.mode {
        TeamMode::Tasks => {
            builder = builder.follow_up(super::tasks::Iterations::new(run, team.max_iterations));
            super::tasks::tools(run)
        }
        _ => delegate::tools(run),
    };
    for tool in tools {
        builder = builder.tool_arc(tool);
    }
    builder.build().map_err(|e| RunError::Internal(format!("cannot build the team's leader: {e}")))
}

/// What the leader does: a new run, or the continuation of its paused run.
pub(super) enum LeaderCall {
    Run(Box<RunRequest>),
    Continue(ContinueRequest),
}

/// Runs the leader to its end, forwarding its events, then waits for the members it stopped;
/// the leader's terminal event is sent last.
pub(super) async fn drive(run: &TeamRun, leader: &Agent, call: LeaderCall) -> Result<RunOutput, RunError> {
    let mut terminal = None;
    let result = if run.streaming() {
        let mut stream = match call {
            LeaderCall::Run(request) => leader.run_stream(*request),
            LeaderCall::Continue(request) => leader.continue_run_stream(request),
        };
        while let Some(event) = stream.next().await {
            if event.data.is_terminal() {
                terminal = Some(event);
            } else {
                run.send(event, TeamStreamEvent::Team);
            }
        }
        stream.output().await
    } else {
        // Inline: the team waits for its leader (a dropped team run stops its leader, as a
        // dropped `Agent::arun` stops; the members it started still record how they ended).
        match call {
            LeaderCall::Run(request) => leader.arun(*request).await,
            LeaderCall::Continue(request) => leader.acontinue_run(request).await,
        }
    };
    // Members stopped by a cancel store how they ended before the team does.
    let pending: Vec<JoinHandle<()>> = run.in_flight.lock().map(|mut p| std::mem::take(&mut *p)).unwrap_or_default();
    if tokio::time::timeout(MEMBER_DRAIN, futures::future::join_all(pending)).await.is_err() {
        tracing::warn!(run_id = run.run_id, "member runs did not end within the drain time");
    }
    if let Some(event) = terminal {
        run.send(event, TeamStreamEvent::Team);
    }
    result
}

/// Where a team run is stored: the database (when storing), the session and its state before
/// the run.
pub(super) struct Storage {
    pub(super) db: Option<Arc<dyn agno_core::Db>>,
    /// The claim of the background worker running the team (its writes go through it).
    pub(super) fence: Option<Arc<dyn crate::RunFence>>,
    pub(super) session: AgentSession,
    pub(super) initial: serde_json::Map<String, Value>,
    /// What this run already added to the session's metrics (a continued run's, when paused).
    pub(super) counted: agno_core::Metrics,
}

impl Storage {
    pub(super) async fn load(
        team: &TeamInner,
        session_id: &str,
        user_id: Option<&str>,
        store: bool,
        fence: Option<Arc<dyn crate::RunFence>>,
    ) -> Result<Self, RunError> {
        let db = team.db.clone().filter(|_| store);
        let stored_session = match &db {
            Some(db) => db.get_session(session_id, user_id, Some(0)).await?,
            None => None,
        };
        let mut initial = stored_session.as_ref().and_then(AgentSession::session_state).cloned().unwrap_or_default();
        for (k, v) in &team.session_state {
            initial.entry(k.clone()).or_insert_with(|| v.clone());
        }
        let session = stored_session.unwrap_or_else(|| {
            let mut s = AgentSession::new(session_id);
            s.user_id = user_id.map(str::to_owned);
            s
        });
        Ok(Self { db, fence, session, initial, counted: agno_core::Metrics::default() })
    }

    /// Stores `run` (status `RUNNING` or the paused record) and the session before anything runs,
    /// so the run is visible (and cancellable by its owner) while it executes.
    pub(super) async fn start(&mut self, team: &TeamInner, run: &RunOutput) -> Result<(), RunError> {
        let initial = self.initial.clone();
        if !self.write(team, initial, &[run], None).await? {
            return Err(RunError::Internal(format!("run {}: this worker no longer holds its claim", run.id())));
        }
        Ok(())
    }

    /// Writes the session (its state as a merge of the run's changes, `team_data` as Agno's)
    /// and `runs`, through the worker's claim when there is one. `Ok(false)`: the claim no
    /// longer holds and nothing more was written.
    pub(super) async fn write(
        &mut self,
        team: &TeamInner,
        state: serde_json::Map<String, Value>,
        runs: &[&RunOutput],
        metrics: Option<agno_core::Metrics>,
    ) -> Result<bool, DbError> {
        let Some(db) = &self.db else { return Ok(true) };
        let session = &mut self.session;
        session.team_id = Some(team.id.clone());
        session.runs = None;
        let mut update = StateUpdate::diff(&self.initial, &state);
        if let Some(metrics) = metrics {
            update = update.with_metrics(metrics);
        }
        session.set_session_state(state);
        session.extra.insert(
            "team_data".to_owned(),
            json!({"team_id": team.id, "name": team.name, "model": {
                "name": team.model.name(), "id": team.model.id(), "provider": team.model.provider()}}),
        );
        let user_id = session.user_id.clone();
        if let Some(fence) = &self.fence {
            for run in runs {
                let write = RunWrite { session, state: &update, run, user_id: user_id.as_deref() };
                if !fence.save(write).await? {
                    return Ok(false);
                }
                update = StateUpdate::keep();
            }
            return Ok(true);
        }
        // The first run goes with the session in one write; the others (members) after it.
        let Some((first, rest)) = runs.split_first() else {
            db.upsert_session(session, &update).await?;
            return Ok(true);
        };
        db.save_run_write(RunWrite { session, state: &update, run: first, user_id: user_id.as_deref() }).await?;
        for run in rest {
            db.upsert_run(run, &session.session_id, user_id.as_deref()).await?;
        }
        Ok(true)
    }
}

/// Runs the team: the leader to its end, then the members it stopped, then (with `store`) the
/// team run, its member runs and the session.
pub(super) async fn execute(
    team: Arc<TeamInner>,
    request: RunRequest,
    tx: Option<mpsc::UnboundedSender<TeamStreamEvent>>,
    store: bool,
) -> Result<RunOutput, RunError> {
    let ids = (request.run_id.as_deref(), request.session_id.as_deref(), request.user_id.as_deref());
    let span = RunSpan::start(
        Runner::Team,
        team.tracing.as_ref(),
        (&team.id, team.name.as_deref()),
        "run",
        || request.input.as_text(),
        ids,
    );
    RunSpan::around(span, execute_run(team, request, tx, store)).await
}

async fn execute_run(
    team: Arc<TeamInner>,
    mut request: RunRequest,
    tx: Option<mpsc::UnboundedSender<TeamStreamEvent>>,
    store: bool,
) -> Result<RunOutput, RunError> {
    let run_id = request.run_id.clone().unwrap_or_else(agno_core::new_id);
    let session_id = request.session_id.clone().unwrap_or_else(agno_core::new_id);
    let user_id = request.user_id.clone();
    let fence = request.durable.fence.take();
    let after = request.durable.after_event_index.take();
    let mut storage = Storage::load(&team, &session_id, user_id.as_deref(), store, fence).await?;
    let history = if store { history(&team, &session_id, user_id.as_deref()).await? } else { Vec::new() };

    let run = TeamRun::new(&team, &run_id, &session_id, user_id.clone(), Vec::new(), tx, after);
    if request.store_events == Some(false) {
        run.drop_events();
    }
    let leader = leader(&team, &run)?;
    let mut state = storage.initial.clone();
    if let Some(overrides) = request.session_state.take() {
        state.extend(overrides);
    }
    let mut running = new_record(&team, &request, &run_id, &session_id);
    running.status = RunStatus::Running;
    storage.start(&team, &running).await?;
    request.run_id = Some(run_id.clone());
    request.session_id = Some(session_id.clone());
    request.session_state = Some(state);
    request.store = Some(false);
    request.history = Some(history);
    let result = drive(&run, &leader, LeaderCall::Run(Box::new(request))).await;
    conclude(&team, &run, result, storage).await
}

/// The metrics of `runs`, added up.
pub(super) fn run_metrics(runs: &[&RunOutput]) -> agno_core::Metrics {
    let mut total = agno_core::Metrics::default();
    for run in runs {
        if let Some(m) = &run.metrics {
            total.accumulate(m);
        }
    }
    total
}

/// A new team run's record before anything ran: the team's, with its input and user.
pub(super) fn new_record(team: &TeamInner, request: &RunRequest, run_id: &str, session_id: &str) -> RunOutput {
    let mut out = RunOutput::new(run_id, session_id);
    out.user_id.clone_from(&request.user_id);
    out.input = Some(request.input.clone());
    out.metadata.clone_from(&request.metadata);
    brand(team, &mut out);
    out
}

/// The member named `id` (its id, else its name).
pub(super) fn find_member<'a>(members: &'a [Member], id: &str) -> Option<&'a Member> {
    members.iter().find(|m| m.id() == id).or_else(|| members.iter().find(|m| m.name() == Some(id)))
}

/// Marks a run as the team's (Agno's `team_id`, `team_name`).
pub(super) fn brand(team: &TeamInner, out: &mut RunOutput) {
    out.agent_id = None;
    out.agent_name = None;
    out.extra.insert("team_id".to_owned(), Value::String(team.id.clone()));
    if let Some(name) = &team.name {
        out.extra.insert("team_name".to_owned(), Value::String(name.clone()));
    }
}

/// Turns the leader's result into the team's record and (with storage) stores it with its member
/// runs and the session. A leader paused on delegations to paused members gives a team paused on
/// those members' requirements (with Agno's `member_*` fields).
pub(super) async fn conclude(
    team: &TeamInner,
    run: &TeamRun,
    result: Result<RunOutput, RunError>,
    mut storage: Storage,
) -> Result<RunOutput, RunError> {
    let members: Vec<RunOutput> = run.members_out.lock().map(|m| m.clone()).unwrap_or_default();
    let pauses: Vec<DelegationPause> = run.pauses.lock().map(|mut p| std::mem::take(&mut *p)).unwrap_or_default();
    // Kept on a stored run only: a run kept inside a workflow's has its events in the workflow's.
    let streamed: Vec<Value> = match storage.db {
        Some(_) => run.stored_events.lock().map(|mut e| std::mem::take(&mut *e)).unwrap_or_default(),
        None => Vec::new(),
    };
    let finish = |mut out: RunOutput| {
        brand(team, &mut out);
        // A streamed run keeps its events, as Agno keeps a streamed team run's (a continue adds
        // to those of the run it continues).
        if !streamed.is_empty() {
            let mut events = match out.extra.remove("events") {
                Some(Value::Array(earlier)) => earlier,
                _ => Vec::new(),
            };
            events.extend(streamed.iter().cloned());
            out.extra.insert("events".to_owned(), Value::Array(events));
        }
        out.events = None;
        // As Agno's `TeamRunOutput`: no state when the session has none.
        if out.session_state.as_ref().is_some_and(serde_json::Map::is_empty) {
            out.session_state = None;
        }
        out.extra.insert("member_responses".to_owned(), serde_json::to_value(&members).unwrap_or_default());
        if out.status == RunStatus::Paused && !pauses.is_empty() {
            resume::pause_on_members(&mut out, &pauses, &members);
        }
        out
    };
    let (mut record, error) = match result {
        Ok(out) => (finish(out), None),
        Err(e) => match e.run().cloned() {
            Some(out) => (finish(out), Some(e)),
            None => return Err(e),
        },
    };
    // A paused team's record covers the `required` calls no member's own record covers.
    if record.status == RunStatus::Paused
        && let Some(db) = &storage.db
    {
        let source = crate::approvals::ApprovalSource::of_run(&record);
        crate::approvals::record_pause(db.as_ref(), &mut record, &source).await;
    }
    let state = record.session_state.clone().unwrap_or_default();
    let mut runs: Vec<&RunOutput> = members.iter().collect();
    runs.push(&record);
    // The session's metrics count the team's runs and its members', as Agno's.
    let total = run_metrics(&runs);
    let delta = total.since(&storage.counted);
    if !storage.write(team, state, &runs, Some(delta)).await? {
        tracing::warn!(run_id = record.id(), "claim lost: the team run's end was not written by this worker");
    } else if let Some(db) = &storage.db {
        crate::approvals::follow_run_status(db.as_ref(), &record).await;
    }
    match error {
        None => Ok(record),
        Some(e) => Err(replace_run(e, record)),
    }
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
    let run = tokio::spawn(crate::trace::propagate(execute(team, request, tx, false)));
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
