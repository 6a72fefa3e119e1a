//! Runs one workflow run from its start or from a pause: loads the session, stores the run as
//! `RUNNING`, walks the steps (`walk.rs`) storing progress after each top-level one, and stores
//! how it ended: `COMPLETED`, `PAUSED` (a review waits), `CANCELLED` or `ERROR`.
//!
//! Every step output, every condition and route decision and every review answer goes into the
//! run's journal (kept in the stored run until it ends). Continuing a paused run walks the steps
//! again: what the journal holds is replayed (without running it again or streaming its events)
//! up to the paused step, which continues with the reviewer's answer. The same replay resumes a
//! run after the last step it completed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use agno_core::{
    ErrorRequirement, RunEvent, RunOutput, RunStatus, StepOutput, StepRequirement, WorkflowEvent, WorkflowEventData,
    WorkflowStreamEvent, now_epoch_secs,
};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::input::{SessionState, StepInput};
use super::primitives::Step;
use super::{WorkflowInner, WorkflowRunRequest, store, walk};
use crate::cancel::Registration;
use crate::error::RunError;
use crate::fence::Durable;
use crate::trace::{RunSpan, Runner};

/// Where the journal lives in the stored run (Python Agno ignores the field).
pub(super) const JOURNAL: &str = "agno_rs_journal";

/// Why a walk stopped early.
#[derive(Debug)]
pub(super) enum Halt {
    /// A step failed after its retries (without `skip_on_failure`).
    Failed { step: String, message: String },
    /// The run was cancelled (by a cancel, a rejection or a timeout: the reason).
    Cancelled(Option<String>),
    /// A review waits.
    Paused(Box<Pause>),
}

/// What a paused run waits for.
#[derive(Debug)]
pub(super) enum Pause {
    /// A reviewer's answer.
    Step(Box<StepRequirement>),
    /// A decision after a failed step.
    Error(Box<ErrorRequirement>),
}

/// Where a node sits: its `step_index` (a number at top level, a path inside containers), the
/// container it is in, and its journal key (the path, with loop iterations and router picks).
#[derive(Debug, Clone)]
pub(super) struct Pos {
    pub(super) index: Value,
    pub(super) parent_step_id: Option<String>,
    pub(super) key: String,
}

impl Pos {
    fn top(i: usize) -> Self {
        Self { index: Value::from(i), parent_step_id: None, key: i.to_string() }
    }

    /// The `i`th node inside this one.
    pub(super) fn child(&self, i: usize, parent_id: Option<&str>) -> Self {
        let mut path = match &self.index {
            Value::Array(items) => items.clone(),
            other => vec![other.clone()],
        };
        path.push(Value::from(i));
        Self {
            index: Value::Array(path),
            parent_step_id: parent_id.map(str::to_owned),
            key: format!("{}.{i}", self.key),
        }
    }

    /// The same position under another journal key (a loop iteration, a router pick, a branch).
    pub(super) fn scoped(&self, suffix: &str) -> Self {
        Self { key: format!("{}{suffix}", self.key), ..self.clone() }
    }

    pub(super) fn is_top(&self) -> bool {
        self.parent_step_id.is_none()
    }
}

/// Numbers, stamps, streams and (with `store_events`) keeps the run's events.
struct Events {
    tx: Option<mpsc::UnboundedSender<WorkflowStreamEvent>>,
    next_index: u64,
    stored: Option<Vec<WorkflowStreamEvent>>,
    template: WorkflowEvent,
}

impl Events {
    fn listening(&self) -> bool {
        self.tx.as_ref().is_some_and(|tx| !tx.is_closed())
    }

    fn send(&mut self, event: WorkflowStreamEvent, keep: bool) {
        if keep && let Some(stored) = self.stored.as_mut() {
            stored.push(event.clone());
        }
        if let Some(tx) = &self.tx {
            let _ = tx.send(event);
        }
    }

    /// Passes on an agent step's event, numbered in the workflow's sequence.
    fn forward(&mut self, mut event: RunEvent) {
        event.event_index = Some(self.next_index);
        self.next_index += 1;
        // Content deltas are not kept, as for an agent's own stored events.
        let keep = !matches!(event.data, agno_core::EventData::RunContent { .. });
        self.send(WorkflowStreamEvent::Agent(Box::new(event)), keep);
    }

    fn emit(&mut self, data: WorkflowEventData, node: Option<(&str, Option<&str>, &Pos)>) {
        if !self.listening() && self.stored.is_none() {
            return;
        }
        let mut event = self.template.clone();
        event.created_at = now_epoch_secs();
        event.data = data;
        if let Some((name, id, pos)) = node {
            event.step_name = Some(name.to_owned());
            event.step_id = id.map(str::to_owned);
            event.step_index = Some(pos.index.clone());
            event.parent_step_id.clone_from(&pos.parent_step_id);
        }
        event.event_index = Some(self.next_index);
        self.next_index += 1;
        // As Agno: the streamed-only `StepOutput` event is not kept on the run.
        let keep = !matches!(event.data, WorkflowEventData::StepOutput { .. });
        self.send(WorkflowStreamEvent::Workflow(Box::new(event)), keep);
    }
}

/// One run in progress.
pub(super) struct Ctx {
    pub(super) workflow_id: String,
    events: Mutex<Events>,
    pub(super) state: SessionState,
    pub(super) token: CancellationToken,
    pub(super) run_id: String,
    pub(super) session_id: String,
    pub(super) user_id: Option<String>,
    pub(super) input: Value,
    pub(super) additional_data: Option<Map<String, Value>>,
    /// Outputs completed so far (`previous_step_outputs`), in completion order.
    completed: Mutex<Arc<Vec<(String, StepOutput)>>>,
    /// Agent and nested-workflow runs of the steps (`step_executor_runs`).
    pub(super) executor_runs: Mutex<Vec<RunOutput>>,
    pub(super) depth: u32,
    /// Decisions and answers so far, by journal key.
    journal: Mutex<Map<String, Value>>,
    /// Step outputs so far (`None`: the step left no result), by position key; kept typed and
    /// written into the journal only when the run is stored.
    outputs: Mutex<HashMap<String, Option<StepOutput>>>,
    /// The agent and workflow runs of the steps done so far, by position key.
    step_runs: Mutex<HashMap<String, RunOutput>>,
    /// True while replaying what the journal holds: events stay quiet.
    replaying: AtomicBool,
    /// False for a run asked for without streaming: its steps' runs keep no events either.
    pub(super) keep_events: bool,
}

impl Ctx {
    /// Emits the event `data()` builds, unless nobody wants events (then `data` never runs, so
    /// a run without listeners builds no event payloads).
    pub(super) fn emit(&self, data: impl FnOnce() -> WorkflowEventData, node: Option<(&str, Option<&str>, &Pos)>) {
        if self.replaying.load(Ordering::Relaxed) {
            return;
        }
        if let Ok(mut events) = self.events.lock()
            && (events.listening() || events.stored.is_some())
        {
            events.emit(data(), node);
        }
    }

    /// Stamps an event of the agent or team running `step` with the workflow run and the step,
    /// as Agno stamps them.
    pub(super) fn stamp(&self, event: &mut RunEvent, step: &Step, pos: &Pos) {
        event.workflow_id = Some(self.workflow_id.clone());
        event.workflow_run_id = Some(self.run_id.clone());
        event.step_id.clone_from(&step.step_id);
        event.step_name = Some(step.name.clone());
        event.step_index = Some(pos.index.clone());
    }

    /// Passes on an event of the agent running `step`, stamped with the step as Agno stamps it.
    pub(super) fn forward(&self, mut event: RunEvent, step: &Step, pos: &Pos) {
        self.stamp(&mut event, step, pos);
        if let Ok(mut events) = self.events.lock() {
            events.forward(event);
        }
    }

    /// Passes on a team step's leader event (named as Agno's team events), stamped with the step.
    pub(super) fn forward_team(&self, mut event: RunEvent, step: &Step, pos: &Pos) {
        self.stamp(&mut event, step, pos);
        if let Ok(mut events) = self.events.lock() {
            event.event_index = Some(events.next_index);
            events.next_index += 1;
            let keep = !matches!(event.data, agno_core::EventData::RunContent { .. });
            events.send(WorkflowStreamEvent::Team(Box::new(event)), keep);
        }
    }

    /// True when someone reads the stream (agent steps then stream their events through it).
    pub(super) fn streaming(&self) -> bool {
        self.events.lock().is_ok_and(|e| e.listening())
    }

    /// The replay reached work that runs now: events flow again.
    pub(super) fn live(&self) {
        self.replaying.store(false, Ordering::Relaxed);
    }

    pub(super) fn step_input(&self, previous: Option<&Value>) -> StepInput {
        StepInput {
            input: Some(self.input.clone()),
            previous_step_content: previous.cloned(),
            previous_step_outputs: self.completed.lock().map(|c| Arc::clone(&c)).unwrap_or_default(),
            additional_data: self.additional_data.clone(),
            session_state: self.state.clone(),
            run_id: self.run_id.clone(),
            session_id: self.session_id.clone(),
            user_id: self.user_id.clone(),
            cancel: self.token.clone(),
        }
    }

    /// Records a completed output for `previous_step_outputs`.
    pub(super) fn record(&self, name: &str, output: &StepOutput) {
        if let Ok(mut completed) = self.completed.lock() {
            Arc::make_mut(&mut completed).push((name.to_owned(), output.clone()));
        }
    }

    pub(super) fn check(&self) -> Result<(), Halt> {
        if self.token.is_cancelled() { Err(Halt::Cancelled(None)) } else { Ok(()) }
    }

    pub(super) fn journal_get(&self, key: &str) -> Option<Value> {
        self.journal.lock().ok().and_then(|j| j.get(key).cloned())
    }

    pub(super) fn journal_put(&self, key: String, value: Value) {
        if let Ok(mut j) = self.journal.lock() {
            j.insert(key, value);
        }
    }

    /// The reviewer's answer stored under `key`.
    pub(super) fn answer(&self, key: &str) -> Option<StepRequirement> {
        self.journal_get(&format!("answer:{key}")).and_then(|v| serde_json::from_value(v).ok())
    }

    /// The output of the step at `key` in an earlier walk: `Some(None)` when it left no result.
    pub(super) fn done(&self, key: &str) -> Option<Option<StepOutput>> {
        self.outputs.lock().ok().and_then(|o| o.get(key).cloned())
    }

    /// The agent or workflow run of the step at `key` in an earlier walk.
    pub(super) fn done_run(&self, key: &str) -> Option<RunOutput> {
        self.step_runs.lock().ok().and_then(|r| r.get(key).cloned())
    }

    /// Keeps the step's output (and its agent or workflow run) for later walks.
    pub(super) fn set_done(&self, key: &str, output: Option<StepOutput>, run: Option<RunOutput>) {
        if let Ok(mut o) = self.outputs.lock() {
            o.insert(key.to_owned(), output);
        }
        if let (Some(run), Ok(mut r)) = (run, self.step_runs.lock()) {
            r.insert(key.to_owned(), run);
        }
    }

    /// The whole journal as stored: decisions, answers, outputs (`out:`) and runs (`run:`).
    fn journal_snapshot(&self) -> Map<String, Value> {
        let mut journal = self.journal.lock().map(|j| j.clone()).unwrap_or_default();
        if let Ok(outputs) = self.outputs.lock() {
            for (key, output) in outputs.iter() {
                journal.insert(format!("out:{key}"), serde_json::to_value(output).unwrap_or(Value::Null));
            }
        }
        if let Ok(runs) = self.step_runs.lock() {
            for (key, run) in runs.iter() {
                journal.insert(format!("run:{key}"), serde_json::to_value(run).unwrap_or(Value::Null));
            }
        }
        journal
    }

    pub(super) fn executor_runs(&self) -> Vec<RunOutput> {
        self.executor_runs.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// How a run starts.
pub(super) enum Start {
    /// A new run.
    New(Box<WorkflowRunRequest>),
    /// A paused (or interrupted) run, its answers already in its journal.
    Continue(Box<RunOutput>),
}

/// Runs one workflow run, new or continued, to its end or its next pause.
pub(super) async fn execute(
    wf: Arc<WorkflowInner>,
    start: Start,
    tx: Option<mpsc::UnboundedSender<WorkflowStreamEvent>>,
    depth: u32,
    durable: Durable,
) -> Result<RunOutput, RunError> {
    let span = workflow_span(&wf, &start);
    RunSpan::around(span, execute_run(Arc::clone(&wf), start, tx, depth, durable)).await
}

/// The root span of a workflow run (`{Name}.run`, or `.continue_run`), with its steps as Agno's
/// tracing describes them.
fn workflow_span(wf: &WorkflowInner, start: &Start) -> Option<RunSpan> {
    let who = (wf.id.as_str(), wf.name.as_deref());
    let span = match start {
        Start::New(request) => {
            let ids = (request.run_id.as_deref(), request.session_id.as_deref(), request.user_id.as_deref());
            let input = || match &request.input {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            RunSpan::start(Runner::Workflow, wf.tracing.as_ref(), who, "run", input, ids)
        }
        Start::Continue(run) => {
            let ids = (Some(run.id()), run.session_id.as_deref(), run.user_id.as_deref());
            RunSpan::start(Runner::Workflow, wf.tracing.as_ref(), who, "continue_run", String::new, ids)
        }
    }?;
    let scope = span.scope();
    if let Some(description) = &wf.description {
        scope.text("agno.workflow.description", description.clone());
    }
    scope.int("agno.workflow.steps_count", i64::try_from(wf.steps.len()).unwrap_or(i64::MAX));
    scope.texts("agno.workflow.steps", wf.steps.iter().map(|s| s.name().to_owned()).collect());
    scope.texts("agno.workflow.step_types", wf.steps.iter().map(|s| format!("{:?}", s.step_type())).collect());
    Some(span)
}

/// [`execute`] without its span.
async fn execute_run(
    wf: Arc<WorkflowInner>,
    start: Start,
    tx: Option<mpsc::UnboundedSender<WorkflowStreamEvent>>,
    depth: u32,
    durable: Durable,
) -> Result<RunOutput, RunError> {
    let started = Instant::now();
    let fence = durable.fence.clone();
    // Nested workflows run inside their parent's run: nothing of their own is stored.
    let db = if depth == 0 { wf.db.clone() } else { None };
    // `Some(false)`: a run asked for without streaming keeps no events, nor do its steps' runs.
    let mut store_events = None;
    let (mut record, overrides, additional_data, continued) = match start {
        Start::New(request) => {
            let request = *request;
            let run_id = request.run_id.clone().unwrap_or_else(agno_core::new_id);
            let session_id = request.session_id.clone().unwrap_or_else(agno_core::new_id);
            let record = store::new_record(
                &wf,
                &run_id,
                &session_id,
                request.user_id.as_deref(),
                &request.input,
                request.metadata.clone(),
            );
            store_events = request.store_events;
            (record, request.session_state, request.additional_data, false)
        }
        Start::Continue(run) => {
            let mut record = *run;
            let additional = record
                .extra
                .get(JOURNAL)
                .and_then(|j| j.get("meta:additional_data"))
                .and_then(Value::as_object)
                .cloned();
            record.status = RunStatus::Running;
            (record, None, additional, true)
        }
    };
    let run_id = record.id().to_owned();
    let session_id = record.session_id.clone().unwrap_or_default();
    let user_id = record.user_id.clone();
    let input = record.input.as_ref().and_then(|i| i.content().cloned()).unwrap_or(Value::Null);
    let registration = Registration::new(&run_id);

    let mut session = match &db {
        Some(_) => store::load_session(&wf, &session_id, user_id.as_deref()).await?,
        None => agno_core::AgentSession::new(&session_id),
    };
    let mut initial = session.session_state().cloned().unwrap_or_default();
    for (k, v) in &wf.session_state {
        initial.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let mut state = initial.clone();
    if let Some(overrides) = overrides {
        state.extend(overrides);
    }
    let mut journal = match record.extra.remove(JOURNAL) {
        Some(Value::Object(j)) => j,
        _ => Map::new(),
    };
    if let Some(data) = &additional_data {
        journal.insert("meta:additional_data".to_owned(), Value::Object(data.clone()));
    }
    // Kept in the journal, so a resumed run (a retry, a continue) keeps the same rule.
    if let Some(keep) = store_events {
        journal.insert("meta:store_events".to_owned(), Value::Bool(keep));
    }
    let keep_events = journal.get("meta:store_events").and_then(Value::as_bool) != Some(false);
    let replaying = journal.keys().any(|k| k.starts_with("out:") || k.starts_with("answer:"));
    // Outputs and step runs are read once, typed.
    let mut outputs = HashMap::new();
    let mut step_runs = HashMap::new();
    journal.retain(|key, value| {
        if let Some(pos) = key.strip_prefix("out:") {
            outputs.insert(pos.to_owned(), serde_json::from_value(value.take()).unwrap_or(None));
            return false;
        }
        if let Some(pos) = key.strip_prefix("run:") {
            if let Ok(run) = serde_json::from_value(value.take()) {
                step_runs.insert(pos.to_owned(), run);
            }
            return false;
        }
        true
    });
    if let Some(db) = &db {
        let mut running = record.clone();
        if replaying {
            // The journal read above stays stored while the run executes.
            let mut stored = journal.clone();
            for (key, output) in &outputs {
                stored.insert(format!("out:{key}"), serde_json::to_value(output).unwrap_or(Value::Null));
            }
            for (key, run) in &step_runs {
                stored.insert(format!("run:{key}"), serde_json::to_value(run).unwrap_or(Value::Null));
            }
            running.extra.insert(JOURNAL.to_owned(), Value::Object(stored));
        }
        if !store::save(db, fence.as_ref(), &wf, &mut session, &initial, state.clone(), &running).await? {
            return Err(RunError::Internal(format!("run {run_id}: this worker no longer holds its claim")));
        }
    }

    let template = WorkflowEvent {
        created_at: 0,
        data: WorkflowEventData::WorkflowStarted {},
        workflow_id: Some(wf.id.clone()),
        workflow_name: wf.name.clone(),
        session_id: Some(session_id.clone()),
        run_id: Some(run_id.clone()),
        step_id: None,
        parent_step_id: None,
        nested_depth: depth,
        step_name: None,
        step_index: None,
        event_index: None,
    };
    let ctx = Ctx {
        workflow_id: wf.id.clone(),
        events: Mutex::new(Events {
            tx,
            next_index: durable.after_event_index.map_or(0, |i| i + 1),
            stored: (wf.store_events && keep_events).then(Vec::new),
            template,
        }),
        state: SessionState::new(state),
        token: registration.token().clone(),
        run_id: run_id.clone(),
        session_id: session_id.clone(),
        user_id: user_id.clone(),
        input,
        additional_data,
        completed: Mutex::new(Arc::new(Vec::new())),
        executor_runs: Mutex::new(Vec::new()),
        depth,
        journal: Mutex::new(journal),
        outputs: Mutex::new(outputs),
        step_runs: Mutex::new(step_runs),
        replaying: AtomicBool::new(replaying),
        keep_events,
    };
    if !continued {
        ctx.emit(|| WorkflowEventData::WorkflowStarted {}, None);
    }

    // The top-level walk, storing progress (and the journal) after each step.
    let mut results: Vec<StepOutput> = Vec::new();
    let mut previous: Option<Value> = None;
    let mut halt = None;
    let mut paused_at = 0;
    for (i, node) in wf.steps.iter().enumerate() {
        paused_at = i;
        match walk::run_node(&ctx, node, previous.clone(), Pos::top(i)).await {
            // A condition that is not met and has no else branch leaves no result, as in Agno.
            Ok(None) => {}
            Ok(Some(output)) => {
                if let Some(content) = output.deepest_content() {
                    previous = Some(content.clone());
                }
                let stop = output.stop;
                results.push(output);
                if let Some(db) = &db {
                    let mut progress = record.clone();
                    store::set_progress(&mut progress, &results, &ctx.executor_runs());
                    progress.extra.insert(JOURNAL.to_owned(), Value::Object(ctx.journal_snapshot()));
                    // Progress is the run row alone (the session and its state are written when
                    // the run starts and ends); a fenced run writes both, checked by its claim.
                    let stored = match &fence {
                        Some(_) => {
                            store::save(
                                db,
                                fence.as_ref(),
                                &wf,
                                &mut session,
                                &initial,
                                ctx.state.snapshot(),
                                &progress,
                            )
                            .await
                        }
                        None => db.upsert_run(&progress, &session_id, user_id.as_deref()).await.map(|_| true),
                    };
                    if let Ok(false) = stored {
                        tracing::warn!(run_id, "claim lost: stopping the workflow run");
                        ctx.token.cancel();
                    }
                    if let Err(e) = stored {
                        tracing::warn!(run_id, error = %e, "cannot store the workflow run's progress");
                    }
                }
                if stop {
                    break;
                }
            }
            Err(h) => {
                halt = Some(h);
                break;
            }
        }
    }

    let duration = started.elapsed().as_secs_f64();
    store::set_progress(&mut record, &results, &ctx.executor_runs());
    store::set_metrics(&mut record, &results, duration);
    let metrics_value = record.metrics.as_ref().and_then(|m| serde_json::to_value(m).ok());
    let mut failure = None;
    match halt {
        None => {
            record.status = RunStatus::Completed;
            record.content = results.last().and_then(StepOutput::deepest_content).cloned();
            clear_pause(&mut record);
            ctx.emit(
                || WorkflowEventData::WorkflowCompleted {
                    content: record.content.clone(),
                    content_type: record.content_type.clone(),
                    metadata: record.metadata.clone(),
                    metrics: metrics_value,
                    step_results: results.clone(),
                    step_executor_runs: Some(ctx.executor_runs()).filter(|r| !r.is_empty()),
                },
                None,
            );
        }
        Some(Halt::Cancelled(reason)) => {
            record.status = RunStatus::Cancelled;
            record.content =
                Some(Value::String(reason.clone().unwrap_or_else(|| format!("Run {run_id} was cancelled"))));
            clear_pause(&mut record);
            ctx.live();
            ctx.emit(
                || WorkflowEventData::WorkflowCancelled {
                    reason: Some(reason.unwrap_or_else(|| "cancelled".to_owned())),
                },
                None,
            );
        }
        Some(Halt::Failed { step, message }) => {
            record.status = RunStatus::Error;
            record.content = Some(Value::String(message.clone()));
            clear_pause(&mut record);
            ctx.live();
            ctx.emit(
                || WorkflowEventData::WorkflowError {
                    error: Some(message.clone()),
                    error_type: Some("StepFailed".to_owned()),
                },
                None,
            );
            failure = Some((step, message));
        }
        Some(Halt::Paused(pause)) => {
            record.status = RunStatus::Paused;
            set_pause(&mut record, *pause, paused_at, &wf);
            // The journal stays with the paused run: a continue replays it.
            record.extra.insert(JOURNAL.to_owned(), Value::Object(ctx.journal_snapshot()));
            ctx.live();
            ctx.emit(
                || WorkflowEventData::WorkflowPaused {
                    status: RunStatus::Paused.as_str().to_owned(),
                    paused_step_index: record
                        .extra
                        .get("paused_step_index")
                        .and_then(Value::as_u64)
                        .and_then(|i| usize::try_from(i).ok()),
                    paused_step_name: record.extra.get("paused_step_name").and_then(Value::as_str).map(str::to_owned),
                    pause_kind: record.extra.get("pause_kind").and_then(Value::as_str).map(str::to_owned),
                    step_requirements: record
                        .extra
                        .get("step_requirements")
                        .and_then(|v| serde_json::from_value(v.clone()).ok()),
                    error_requirements: record
                        .extra
                        .get("error_requirements")
                        .and_then(|v| serde_json::from_value(v.clone()).ok()),
                    step_results: results.clone(),
                    content: None,
                },
                None,
            );
        }
    }
    if let Some(stored) = ctx.events.lock().ok().and_then(|mut e| e.stored.take()) {
        let mut events = match record.extra.remove("events") {
            Some(Value::Array(earlier)) if continued => earlier,
            _ => Vec::new(),
        };
        events.extend(stored.iter().filter_map(|e| serde_json::to_value(e).ok()));
        record.extra.insert("events".to_owned(), Value::Array(events));
    }
    record.events = None;
    if let Some(db) = &db
        && !store::save(db, fence.as_ref(), &wf, &mut session, &initial, ctx.state.snapshot(), &record).await?
    {
        tracing::warn!(run_id, "claim lost: the workflow run's end was not written by this worker");
    }
    if depth > 0 {
        // A nested workflow hands its state back to the step that ran it.
        record.session_state = Some(ctx.state.snapshot());
    }
    drop(registration);
    match failure {
        None => Ok(record),
        Some((step, message)) => Err(RunError::StepFailed { step, message, run: Box::new(record) }),
    }
}

/// Records a pause on the run: the requirement appended, where it paused.
fn set_pause(record: &mut RunOutput, pause: Pause, top_index: usize, wf: &WorkflowInner) {
    let name = wf.steps.get(top_index).map(|s| s.name().to_owned());
    record.extra.insert("paused_step_index".to_owned(), json!(top_index));
    record.extra.insert("paused_step_name".to_owned(), json!(name));
    let executor = matches!(&pause, Pause::Step(req) if req.extra.get("requires_executor_input") == Some(&json!(true)));
    record.extra.insert("pause_kind".to_owned(), json!(if executor { "executor" } else { "step" }));
    let (field, value) = match pause {
        Pause::Step(req) => ("step_requirements", serde_json::to_value(*req).unwrap_or_default()),
        Pause::Error(req) => ("error_requirements", serde_json::to_value(*req).unwrap_or_default()),
    };
    match record.extra.get_mut(field) {
        Some(Value::Array(list)) => list.push(value),
        _ => {
            record.extra.insert(field.to_owned(), Value::Array(vec![value]));
        }
    }
}

/// A run that ended keeps its requirements as history but is no longer paused anywhere.
fn clear_pause(record: &mut RunOutput) {
    for key in ["paused_step_index", "paused_step_name", "pause_kind", JOURNAL] {
        record.extra.remove(key);
    }
}
