//! Durable background runs. `POST /agents/{id}/runs` with `background=true` commits a job row
//! (`id == run_id`) and a `PENDING` run, and answers 202; workers on every replica claim jobs from
//! the database, hold a lease refreshed by heartbeats, and end each attempt with a write fenced by
//! worker and attempt. A sweeper turns runs whose worker died into a visible `ERROR` (or a retry
//! while attempts remain). The database is the truth; nothing lives only in this process.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agno_core::{
    AgentSession, ComponentKind, Job, JobOutcome, JobSignal, JobStatus, JobStore, RunEvent, RunOutput, RunRequirement,
    RunStatus, StateUpdate, StoredEvent, TeamStreamEvent, WorkflowStreamEvent, now_epoch_secs,
};
use agno_runtime::team::{Team, TeamStream};
use agno_runtime::workflow::{Durable, Workflow};
use agno_runtime::{Agent, ContinueRequest, RunError, RunSpec};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::state::AppState;

/// `[queue]` settings (Agno's `QueueConfig`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSettings {
    /// Runs executing at once on this replica.
    #[serde(default = "default_concurrency")]
    pub max_concurrency: usize,
    /// Queued jobs beyond which submissions answer 429.
    #[serde(default = "default_depth")]
    pub max_queue_depth: usize,
    /// Claims per job: 1 = at most once; more = retried (with backoff) when a worker dies or a
    /// retryable error happens.
    #[serde(default = "default_attempts")]
    pub max_attempts: i64,
    /// A lease not refreshed for this long is expired; heartbeats come every third of it.
    #[serde(default = "default_grace")]
    pub lock_grace_seconds: i64,
    /// Base delay of a retry (doubled per attempt, with jitter, capped at 10x).
    #[serde(default = "default_retry_delay")]
    pub retry_delay_seconds: i64,
    /// Longest a run may execute before it is cancelled and failed.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u64,
    /// How often idle workers look for work and tails read the event log without a push, in
    /// milliseconds (local submissions and writes wake them at once).
    #[serde(default = "default_poll")]
    pub poll_interval_ms: u64,
    /// Ended jobs (and their event logs) older than this are deleted, hourly (paused ones are
    /// kept).
    #[serde(default = "default_retention")]
    pub retention_seconds: i64,
    /// Optional Redis (`redis://host:6379`) carrying wake-ups and cancels between replicas at
    /// once, on any database; never the truth (see [`crate::coordination`]).
    #[serde(default)]
    pub redis: Option<String>,
    /// The Redis pub/sub channel of this deployment's replicas.
    #[serde(default = "default_channel")]
    pub redis_channel: String,
    /// On a database without notifications (SQLite), how often a replica running background
    /// runs asks whether another process cancelled one, in milliseconds (200).
    #[serde(default = "default_cancel_poll")]
    pub cancel_poll_ms: u64,
}

fn default_cancel_poll() -> u64 {
    200
}

fn default_retention() -> i64 {
    86_400
}

fn default_channel() -> String {
    "agno:queue".to_owned()
}

fn default_concurrency() -> usize {
    32
}
fn default_depth() -> usize {
    1000
}
fn default_attempts() -> i64 {
    1
}
fn default_grace() -> i64 {
    60
}
fn default_retry_delay() -> i64 {
    30
}
fn default_timeout() -> u64 {
    3600
}
fn default_poll() -> u64 {
    1000
}

impl Default for QueueSettings {
    fn default() -> Self {
        Self {
            max_concurrency: default_concurrency(),
            max_queue_depth: default_depth(),
            max_attempts: default_attempts(),
            lock_grace_seconds: default_grace(),
            retry_delay_seconds: default_retry_delay(),
            timeout_seconds: default_timeout(),
            poll_interval_ms: default_poll(),
            retention_seconds: default_retention(),
            redis: None,
            redis_channel: default_channel(),
            cancel_poll_ms: default_cancel_poll(),
        }
    }
}

/// The queue of a running OS: its store, settings, and the signal that wakes local workers.
#[derive(Clone)]
pub struct Queue {
    /// The database's job store.
    pub store: Arc<dyn JobStore>,
    /// Settings.
    pub settings: Arc<QueueSettings>,
    /// Wakes idle workers of this replica after a local submission.
    pub wake: Arc<Notify>,
    /// This replica's worker id.
    pub worker_id: Arc<str>,
    /// Wakes this replica's tails of a run's event log.
    pub waiters: Arc<crate::tail::Waiters>,
    /// Durations of this replica's successful claims.
    pub claims: Arc<ClaimTimes>,
    /// Redis coordination, when configured.
    pub coordination: Option<Arc<crate::coordination::Coordination>>,
    /// The claimed jobs executing on this replica (a shutdown waits for them).
    pub tasks: tokio_util::task::TaskTracker,
}

impl Queue {
    /// A queue over `store` with a fresh worker id.
    ///
    /// # Errors
    /// A `[queue] redis` URL Redis does not accept.
    pub fn new(store: Arc<dyn JobStore>, settings: QueueSettings) -> Result<Self, String> {
        let coordination = match &settings.redis {
            Some(url) => Some(Arc::new(crate::coordination::Coordination::new(url, &settings.redis_channel)?)),
            None => None,
        };
        Ok(Self {
            store,
            settings: Arc::new(settings),
            wake: Arc::new(Notify::new()),
            worker_id: format!("worker-{}", &agno_core::new_id()[..8]).into(),
            waiters: Arc::default(),
            claims: Arc::default(),
            coordination,
            tasks: tokio_util::task::TaskTracker::new(),
        })
    }

    /// Something happened to a job here: acts on it on this replica (wakes workers or tails,
    /// stops a cancelled run) and tells the others through Redis, when configured.
    pub fn signal(&self, signal: JobSignal) {
        self.on_signal(signal.clone());
        self.announce(signal);
    }

    /// Tells the other replicas (through Redis, when configured) that something happened to a
    /// job; in the background, never failing the caller.
    fn announce(&self, signal: JobSignal) {
        if let Some(c) = &self.coordination {
            let c = c.clone();
            tokio::spawn(async move { c.publish(&signal).await });
        }
    }

    /// Acts on a hint about a job, from this replica or another (PostgreSQL `NOTIFY` or Redis).
    pub fn on_signal(&self, signal: JobSignal) {
        match signal {
            JobSignal::Claimable(id) => {
                self.wake.notify_one();
                self.waiters.wake(&id);
            }
            JobSignal::Cancelled(id) => {
                if Agent::cancel_run(&id) {
                    tracing::info!(run = %id, "background run cancelled");
                }
                self.waiters.wake(&id);
            }
            JobSignal::Events(id) => self.waiters.wake(&id),
        }
    }
}

/// The last claims' durations (the claim statement, from send to answer), for `/queue/stats`.
#[derive(Debug, Default)]
pub struct ClaimTimes {
    micros: Mutex<std::collections::VecDeque<u64>>,
}

impl ClaimTimes {
    /// Samples kept.
    const KEEP: usize = 10_000;

    fn record(&self, took: Duration) {
        if let Ok(mut m) = self.micros.lock() {
            if m.len() == Self::KEEP {
                m.pop_front();
            }
            m.push_back(u64::try_from(took.as_micros()).unwrap_or(u64::MAX));
        }
    }

    /// `(p50, p99, samples)` in milliseconds over the kept samples.
    pub fn percentiles(&self) -> Option<(f64, f64, usize)> {
        let mut v: Vec<u64> = self.micros.lock().ok()?.iter().copied().collect();
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        let at = |p: f64| {
            let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
            v[rank - 1] as f64 / 1000.0
        };
        Some((at(0.50), at(0.99), v.len()))
    }
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("settings", &self.settings)
            .field("worker_id", &self.worker_id)
            .finish_non_exhaustive()
    }
}

/// Why a run cancelled while its worker died ended without the worker's own record.
pub const CANCELLED_LOST_WORKER: &str = "the run was cancelled and the replica running it stopped before recording \
     its end";

/// The error written on a run whose worker died with no attempt left.
pub const LOST_WORKER: &str = "the replica running this background run stopped before it finished (its lease \
     expired) and no attempt is left; requeue it if it should run again";

/// The `PENDING` record of `spec`'s run, in the shape its component stores it; `None` when the
/// component is not served here.
pub fn pending_record(state: &AppState, spec: &RunSpec) -> Option<RunOutput> {
    let id = spec.component_id.as_str();
    match spec.kind {
        ComponentKind::Agent => state.agent(id).map(|a| a.agent.pending_run(&spec.request())),
        ComponentKind::Team => state.team(id).map(|t| t.pending_run(&spec.request())),
        ComponentKind::Workflow => state.workflow(id).map(|w| w.pending_run(&spec.workflow_request())),
    }
}

/// Writes the session (if new) and the `PENDING` run of a job about to be queued, so the run is
/// visible before any worker can pick it up; true when the session was created here.
///
/// # Errors
/// The storage error; a payload that is not a run, or a component not served here (kind
/// `Other`, with the reason).
pub async fn store_pending(state: &AppState, job: &Job) -> Result<bool, agno_core::DbError> {
    let invalid = |reason: String| agno_core::DbError::new(agno_core::DbErrorKind::Other, reason);
    let spec = RunSpec::from_job(job).map_err(|e| invalid(e.to_string()))?;
    store_pending_spec(state, job, &spec)
        .await?
        .ok_or_else(|| invalid(format!("{} {} is not served here", spec.kind, spec.component_id)))
}

/// [`store_pending`] of `spec`, the job's own; `None` when its component is not served here.
pub(crate) async fn store_pending_spec(
    state: &AppState,
    job: &Job,
    spec: &RunSpec,
) -> Result<Option<bool>, agno_core::DbError> {
    let Some(mut run) = pending_record(state, spec) else { return Ok(None) };
    run.created_at = job.created_at;
    let db = state.db.as_ref().ok_or_else(|| agno_core::DbError::new(agno_core::DbErrorKind::Other, "no database"))?;
    let created = db.get_session(&job.session_id, None, Some(0)).await?.is_none();
    if created {
        let mut session = AgentSession::new(job.session_id.clone());
        let id = Some(job.component_id.clone());
        match spec.kind {
            ComponentKind::Agent => session.agent_id = id,
            ComponentKind::Team => session.team_id = id,
            ComponentKind::Workflow => session.workflow_id = id,
        }
        session.user_id.clone_from(&job.user_id);
        db.upsert_session(&session, &StateUpdate::keep()).await?;
    }
    db.upsert_run(&run, &job.session_id, job.user_id.as_deref()).await?;
    Ok(Some(created))
}

/// Jobs per status, in [`JobStatus::ALL`] order.
///
/// # Errors
/// The storage error.
pub async fn counts(store: &dyn JobStore) -> Result<Vec<(JobStatus, u64)>, agno_core::DbError> {
    let mut counts = Vec::with_capacity(JobStatus::ALL.len());
    for status in JobStatus::ALL {
        let (_, total) = store.list_jobs(Some(status), Some(1), Some(1)).await?;
        counts.push((status, total));
    }
    Ok(counts)
}

/// What [`requeue`] did.
#[derive(Debug)]
pub enum Requeued {
    /// No such job.
    Missing,
    /// The job is in this status, which is not requeued (only failed or cancelled jobs are).
    Refused(JobStatus),
    /// Queued again; its run is back to `PENDING`.
    Done(Box<Job>),
}

/// Queues a failed or cancelled job again and puts its run back to `PENDING` (an operator's
/// requeue, from `/queue` or `agno queue`).
///
/// # Errors
/// The storage error.
pub async fn requeue(
    store: &dyn JobStore,
    db: &dyn agno_core::Db,
    job_id: &str,
) -> Result<Requeued, agno_core::DbError> {
    let Some(job) = store.get_job(job_id, None).await? else { return Ok(Requeued::Missing) };
    if !store.requeue_job(job_id, now_epoch_secs()).await? {
        return Ok(Requeued::Refused(job.status));
    }
    if let Some(mut run) = db.get_run(job_id, None).await? {
        run.status = RunStatus::Pending;
        db.upsert_run(&run, &job.session_id, job.user_id.as_deref()).await?;
    }
    Ok(match store.get_job(job_id, None).await? {
        Some(job) => Requeued::Done(Box::new(job)),
        None => Requeued::Missing,
    })
}

/// A worker's claim on a job as a run fence: each write of the run is stored together with a
/// check of the claim (which also refreshes the lease), in one transaction.
struct LeaseFence {
    store: Arc<dyn JobStore>,
    lease: agno_core::JobLease,
}

impl std::fmt::Debug for LeaseFence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseFence").field("lease", &self.lease).finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl agno_runtime::RunFence for LeaseFence {
    async fn save(&self, write: agno_core::RunWrite<'_>) -> Result<bool, agno_core::DbError> {
        self.store.save_claimed_run(&self.lease, write, now_epoch_secs()).await
    }
}

/// Exponential backoff with jitter, capped at 10x the base.
fn backoff(settings: &QueueSettings, attempt: i64) -> i64 {
    let base = settings.retry_delay_seconds.max(0);
    let exp = base.saturating_mul(1_i64 << attempt.clamp(1, 10).saturating_sub(1)).min(base.saturating_mul(10));
    exp + fastrand::i64(0..=(exp / 4).max(0))
}

/// Events buffered before a write to the log.
const EVENT_BATCH: usize = 128;
/// Longest an event waits in the buffer before it is written.
const EVENT_DELAY: Duration = Duration::from_millis(20);

/// Writes a run's events to the durable log in batches, fenced by the worker's claim.
struct EventLog {
    queue: Queue,
    job_id: String,
    attempt: i64,
    buffer: Vec<StoredEvent>,
    /// The claim no longer holds: nothing more is written (and the run is stopped).
    fenced_out: bool,
}

/// An event a worker writes to the durable log: an agent's, or a workflow's (with its agents').
trait Logged: serde::Serialize {
    fn index(&self) -> Option<u64>;
    fn name(&self) -> std::borrow::Cow<'static, str>;
    fn created_at(&self) -> i64;
    fn terminal(&self) -> bool;
}

impl Logged for RunEvent {
    fn index(&self) -> Option<u64> {
        self.event_index
    }
    fn name(&self) -> std::borrow::Cow<'static, str> {
        RunEvent::name(self).into()
    }
    fn created_at(&self) -> i64 {
        self.created_at
    }
    fn terminal(&self) -> bool {
        self.data.is_terminal()
    }
}

impl Logged for WorkflowStreamEvent {
    fn index(&self) -> Option<u64> {
        self.event_index()
    }
    fn name(&self) -> std::borrow::Cow<'static, str> {
        WorkflowStreamEvent::name(self).into()
    }
    fn created_at(&self) -> i64 {
        match self {
            WorkflowStreamEvent::Workflow(e) => e.created_at,
            WorkflowStreamEvent::Agent(e) | WorkflowStreamEvent::Team(e) => e.created_at,
        }
    }
    fn terminal(&self) -> bool {
        self.is_terminal()
    }
}

impl Logged for TeamStreamEvent {
    fn index(&self) -> Option<u64> {
        self.event_index()
    }
    fn name(&self) -> std::borrow::Cow<'static, str> {
        TeamStreamEvent::name(self).into()
    }
    fn created_at(&self) -> i64 {
        self.inner().created_at
    }
    fn terminal(&self) -> bool {
        self.is_terminal()
    }
}

impl EventLog {
    fn push<E: Logged>(&mut self, event: &E) {
        let Ok(data) = serde_json::to_string(event) else { return };
        self.buffer.push(StoredEvent {
            event_index: event.index().and_then(|i| i64::try_from(i).ok()).unwrap_or_default(),
            attempt: self.attempt,
            event: event.name().into_owned(),
            data,
            created_at: event.created_at(),
        });
    }

    async fn flush(&mut self) {
        if self.buffer.is_empty() || self.fenced_out {
            self.buffer.clear();
            return;
        }
        let q = &self.queue;
        match q.store.append_events(&self.job_id, &q.worker_id, self.attempt, &self.buffer).await {
            Ok(true) => {
                q.signal(JobSignal::Events(self.job_id.clone()));
            }
            Ok(false) => {
                tracing::warn!(job = %self.job_id, attempt = self.attempt, "claim lost: stopping the run");
                self.fenced_out = true;
                Agent::cancel_run(&self.job_id);
            }
            Err(e) => tracing::error!(job = %self.job_id, error = %e, "cannot write run events to the log"),
        }
        self.buffer.clear();
    }

    /// Consumes the run's events into the log until the stream ends.
    async fn record<E: Logged>(&mut self, stream: &mut (impl futures::Stream<Item = E> + Unpin)) {
        let mut deadline = tokio::time::Instant::now();
        loop {
            let next = if self.buffer.is_empty() {
                stream.next().await
            } else {
                tokio::select! {
                    ev = stream.next() => ev,
                    () = tokio::time::sleep_until(deadline) => {
                        self.flush().await;
                        continue;
                    }
                }
            };
            let Some(event) = next else { break };
            if self.buffer.is_empty() {
                deadline = tokio::time::Instant::now() + EVENT_DELAY;
            }
            self.push(&event);
            if self.buffer.len() >= EVENT_BATCH || event.terminal() {
                self.flush().await;
            }
        }
        self.flush().await;
    }
}

/// What a job asks of its worker, read from its payload: a new run, or the continuation of a
/// paused one with the answers (`payload.continue.requirements`).
#[derive(Debug)]
enum Work {
    /// A new run.
    Run(Box<RunSpec>),
    /// The continuation of the paused run.
    Continue(Vec<RunRequirement>),
}

/// Reads what `job` asks for; a payload no version of agno-rs wrote (or an unknown component
/// kind) gives the reason, naming the field.
fn work_of(job: &Job) -> Result<Work, String> {
    if let Some(cont) = job.payload.get("continue") {
        let requirements = match cont.get("requirements") {
            None | Some(Value::Null) => Vec::new(),
            Some(r) => serde_path_to_error::deserialize(r).map_err(|e| {
                format!(
                    "the job's payload is not a continuation: `continue.requirements{}` {}",
                    path_suffix(&e),
                    e.inner()
                )
            })?,
        };
        return Ok(Work::Continue(requirements));
    }
    RunSpec::from_job(job).map(|spec| Work::Run(Box::new(spec))).map_err(|e| e.to_string())
}

/// A field path below a known one (`[0].status`), or nothing for the value itself.
fn path_suffix<E>(e: &serde_path_to_error::Error<E>) -> String {
    match e.path().to_string() {
        p if p == "." => String::new(),
        p if p.starts_with('[') => p,
        p => format!(".{p}"),
    }
}

/// The workflow run a job executes: a new run; or, for a later attempt (its worker died) or a
/// continue (the route applied the answers), the stored run resumed from its journal, so the
/// steps it completed are not run again.
async fn start_workflow(
    state: &AppState,
    wf: &Workflow,
    job: &Job,
    work: Work,
    durable: Durable,
) -> agno_runtime::workflow::WorkflowStream {
    let continued = matches!(work, Work::Continue(_));
    if (continued || job.attempt > 1)
        && let Some(db) = &state.db
        && let Ok(Some(run)) = db.get_run(&job.id, job.user_id.as_deref()).await
        && (continued || run.status != RunStatus::Pending)
    {
        return wf.resume_stream(run, durable);
    }
    match work {
        Work::Run(spec) => wf.run_stream_durable(spec.workflow_request(), durable),
        // A continue whose run is gone: resuming the bare record reports that it is not paused.
        Work::Continue(_) => {
            let mut run = RunOutput::new(job.id.clone(), job.session_id.clone());
            run.workflow_id = Some(job.component_id.clone());
            wf.resume_stream(run, durable)
        }
    }
}

/// The continuation of the paused run of `job` with `requirements`: the stored run (the route
/// put it back to `PENDING` when it queued the continuation), else the run by id.
async fn continuation(state: &AppState, job: &Job, requirements: Vec<RunRequirement>) -> ContinueRequest {
    let stored = match &state.db {
        Some(db) => db.get_run(&job.id, job.user_id.as_deref()).await.ok().flatten(),
        None => None,
    };
    let mut req = match stored {
        Some(mut run) => {
            run.status = RunStatus::Paused;
            ContinueRequest::output(run, requirements)
        }
        None => ContinueRequest::run_id(job.id.clone(), requirements),
    };
    if let Some(u) = &job.user_id {
        req = req.user_id(u.clone());
    }
    req
}

/// The agent run a job executes: a new run, or the continuation of a paused one.
async fn start_run(
    state: &AppState,
    agent: &Agent,
    job: &Job,
    work: Work,
    fence: Arc<LeaseFence>,
    after: Option<u64>,
) -> agno_runtime::RunStream {
    match work {
        Work::Run(spec) => agent.run_stream(spec.request().fence(fence).after_event_index(after)),
        Work::Continue(requirements) => {
            let req = continuation(state, job, requirements).await;
            agent.continue_run_stream(req.fence(fence).after_event_index(after))
        }
    }
}

/// The last `event_index` an earlier attempt of the job logged.
async fn last_logged(queue: &Queue, job: &Job, earlier: bool) -> Option<u64> {
    if !earlier {
        return None;
    }
    match queue.store.last_event_index(&job.id).await {
        Ok(last) => last.and_then(|i| u64::try_from(i).ok()),
        Err(e) => {
            tracing::warn!(job = %job.id, error = %e, "cannot read the event log");
            None
        }
    }
}

/// The worker's claim on `job` as a run fence.
fn fence_of(queue: &Queue, job: &Job) -> Arc<LeaseFence> {
    Arc::new(LeaseFence {
        store: queue.store.clone(),
        lease: agno_core::JobLease {
            job_id: job.id.clone(),
            worker_id: queue.worker_id.to_string(),
            attempt: job.attempt,
        },
    })
}

/// Logs a run's events until it ends, cancelling it after `timeout_seconds` (and logging how it
/// stopped); true when it timed out.
async fn log_attempt<E: Logged>(
    queue: &Queue,
    job: &Job,
    stream: &mut (impl futures::Stream<Item = E> + Unpin),
) -> bool {
    let mut log = EventLog {
        queue: queue.clone(),
        job_id: job.id.clone(),
        attempt: job.attempt,
        buffer: Vec::new(),
        fenced_out: false,
    };
    let timeout = Duration::from_secs(queue.settings.timeout_seconds);
    let timed_out = tokio::time::timeout(timeout, log.record(stream)).await.is_err();
    if timed_out {
        Agent::cancel_run(&job.id);
        log.record(stream).await;
    }
    timed_out
}

/// How an attempt ended, for the job: a paused, cancelled or finished run settles it; a model
/// error worth retrying queues it again (with backoff); any other failure fails it.
fn outcome_of(queue: &Queue, job: &Job, result: Result<RunOutput, RunError>, timed_out: bool) -> JobOutcome {
    match result {
        _ if timed_out => JobOutcome::Settled(
            JobStatus::Failed,
            Some(format!("timed out after {} s (timeout_seconds)", queue.settings.timeout_seconds)),
        ),
        Ok(run) => match run.status {
            RunStatus::Paused => JobOutcome::Settled(JobStatus::Paused, None),
            RunStatus::Cancelled => JobOutcome::Settled(JobStatus::Cancelled, None),
            _ => JobOutcome::Settled(JobStatus::Completed, None),
        },
        Err(RunError::Model { source, .. }) if source.is_retryable() => JobOutcome::Retry {
            error: source.to_string(),
            available_at: now_epoch_secs() + backoff(&queue.settings, job.attempt),
        },
        Err(e) => JobOutcome::Settled(JobStatus::Failed, Some(e.to_string())),
    }
}

/// The team run a job executes: a new run (also for a later attempt: a team run starts over), or
/// the continuation of a paused one.
async fn start_team(
    state: &AppState,
    team: &Team,
    job: &Job,
    work: Work,
    fence: Arc<LeaseFence>,
    after: Option<u64>,
) -> TeamStream {
    match work {
        Work::Run(spec) => team.run_stream(spec.request().fence(fence).after_event_index(after)),
        Work::Continue(requirements) => {
            let req = continuation(state, job, requirements).await;
            team.continue_run_stream(req.fence(fence).after_event_index(after))
        }
    }
}

/// One attempt of `work` by the component the job names, its events logged and its writes
/// fenced by the claim. A retried or continued run numbers its events after those logged.
async fn attempt(state: &AppState, queue: &Queue, job: &Job, work: Work, earlier: bool) -> JobOutcome {
    let id = &job.component_id;
    let not_served =
        |kind: ComponentKind| JobOutcome::Settled(JobStatus::Failed, Some(format!("{kind} {id} is not served here")));
    let Some(kind) = job.kind() else {
        return JobOutcome::Settled(
            JobStatus::Failed,
            Some(format!("unknown component kind `{}`", job.component_type)),
        );
    };
    let after = last_logged(queue, job, earlier).await;
    match kind {
        ComponentKind::Agent => {
            let Some(served) = state.agent(id) else { return not_served(kind) };
            let mut stream = start_run(state, &served.agent, job, work, fence_of(queue, job), after).await;
            let timed_out = log_attempt(queue, job, &mut stream).await;
            outcome_of(queue, job, stream.output().await, timed_out)
        }
        ComponentKind::Team => {
            let Some(team) = state.team(id) else { return not_served(kind) };
            let mut stream = start_team(state, team, job, work, fence_of(queue, job), after).await;
            let timed_out = log_attempt(queue, job, &mut stream).await;
            outcome_of(queue, job, stream.output().await, timed_out)
        }
        ComponentKind::Workflow => {
            let Some(wf) = state.workflow(id) else { return not_served(kind) };
            let fence: Arc<dyn agno_runtime::RunFence> = fence_of(queue, job);
            let durable = Durable { fence: Some(fence), after_event_index: after };
            let mut stream = start_workflow(state, wf, job, work, durable).await;
            let timed_out = log_attempt(queue, job, &mut stream).await;
            outcome_of(queue, job, stream.output().await, timed_out)
        }
    }
}

/// Ends the run of a job whose payload cannot be read: `ERROR`, with the reason as its content.
async fn end_unreadable(state: &AppState, job: &Job, reason: &str) {
    let Some(db) = &state.db else { return };
    let mut run = match db.get_run(&job.id, None).await {
        Ok(Some(run)) => run,
        Ok(None) => {
            tracing::warn!(job = %job.id, "the run of an unreadable job is gone");
            return;
        }
        Err(e) => {
            tracing::error!(job = %job.id, error = %e, "cannot read the run of an unreadable job");
            return;
        }
    };
    run.status = RunStatus::Error;
    run.content = Some(Value::String(reason.to_owned()));
    if let Err(e) = db.upsert_run(&run, &job.session_id, job.user_id.as_deref()).await {
        tracing::error!(job = %job.id, error = %e, "cannot end the run of an unreadable job");
    }
}

/// Runs one claimed job to the end of its attempt, logging its events.
async fn execute(state: AppState, queue: Queue, job: Job) {
    let grace = queue.settings.lock_grace_seconds.max(3);
    let beat = Duration::from_secs(u64::try_from(grace / 3).unwrap_or(1).max(1));
    let heartbeat = {
        let (store, worker, id) = (queue.store.clone(), queue.worker_id.clone(), job.id.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(beat).await;
                match store.heartbeat_jobs(&worker, std::slice::from_ref(&id), now_epoch_secs()).await {
                    Ok(0) => {
                        tracing::warn!(job = %id, "lease lost (cancelled, or another worker took the job over)");
                        Agent::cancel_run(&id);
                        break;
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(job = %id, error = %e, "heartbeat failed"),
                }
            }
        })
    };
    // A later attempt (a retry, a requeue or a continue) may follow one that got somewhere; a
    // first attempt has no earlier record, so it reads nothing here.
    let earlier = job.attempt > 1;
    // An earlier attempt stored the run COMPLETED and died before recording the job's outcome:
    // the run is not executed again, the job is settled.
    let done_before = match &state.db {
        Some(db) if earlier => {
            db.get_run(&job.id, None).await.ok().flatten().is_some_and(|r| r.status == RunStatus::Completed)
        }
        _ => false,
    };
    let outcome = if done_before {
        tracing::info!(job = %job.id, attempt = job.attempt, "run already completed by an earlier attempt");
        JobOutcome::Settled(JobStatus::Completed, None)
    } else {
        match work_of(&job) {
            Ok(work) => attempt(&state, &queue, &job, work, earlier).await,
            Err(reason) => {
                tracing::error!(job = %job.id, %reason, "unreadable job payload");
                end_unreadable(&state, &job, &reason).await;
                JobOutcome::Settled(JobStatus::Failed, Some(reason))
            }
        }
    };
    heartbeat.abort();
    match queue.store.finish_job(&job.id, &queue.worker_id, job.attempt, &outcome, now_epoch_secs()).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::warn!(job = %job.id, attempt = job.attempt, "outcome refused: a newer attempt owns the job")
        }
        Err(e) => tracing::error!(job = %job.id, error = %e, "cannot record the job's outcome"),
    }
    queue.signal(JobSignal::Events(job.id.clone()));
}

/// Marks the runs of swept jobs `ERROR` with the reason.
async fn end_swept_runs(state: &AppState, store: &dyn JobStore, jobs: Vec<Job>) {
    let Some(db) = &state.db else { return };
    for job in jobs {
        let run = match db.get_run(&job.id, None).await {
            Ok(Some(run)) => run,
            Ok(None) => {
                let mut r = RunOutput::new(job.id.clone(), job.session_id.clone());
                match job.kind() {
                    Some(ComponentKind::Team) => {
                        r.extra.insert("team_id".to_owned(), Value::String(job.component_id.clone()));
                    }
                    Some(ComponentKind::Workflow) => r.workflow_id = Some(job.component_id.clone()),
                    Some(ComponentKind::Agent) | None => r.agent_id = Some(job.component_id.clone()),
                }
                r
            }
            Err(e) => {
                tracing::error!(job = %job.id, error = %e, "cannot read the run of a swept job");
                continue;
            }
        };
        if run.status == RunStatus::Completed && job.status == JobStatus::Failed {
            // The worker stored its run and died before recording the job's outcome.
            if let Err(e) = store.complete_swept_job(&job.id, now_epoch_secs()).await {
                tracing::error!(job = %job.id, error = %e, "cannot mark a swept job completed");
            }
            continue;
        }
        if matches!(run.status, RunStatus::Completed | RunStatus::Cancelled | RunStatus::Error) {
            continue;
        }
        let mut run = run;
        if job.status == JobStatus::Cancelled {
            run.status = RunStatus::Cancelled;
            run.content = Some(Value::String(CANCELLED_LOST_WORKER.to_owned()));
        } else {
            run.status = RunStatus::Error;
            run.content = Some(Value::String(LOST_WORKER.to_owned()));
        }
        if let Err(e) = db.upsert_run(&run, &job.session_id, job.user_id.as_deref()).await {
            tracing::error!(job = %job.id, error = %e, "cannot mark the run of a swept job");
        }
    }
}

/// Why an orphaned `PENDING` run (its submission was interrupted before the job was committed)
/// is removed: it was never acknowledged, and no worker will ever run it.
const NEVER_QUEUED: &str = "submission interrupted before its job was committed";

/// Runs scanned per status and sweep.
const RECONCILE_PAGE: usize = 200;

/// Repairs what a replica that died between two writes can leave behind, for runs older than the
/// lease grace: a `PENDING` run with no job (the submission died before the job was committed; it
/// was never acknowledged) is deleted; a `PENDING` or `RUNNING` run whose job already ended (the
/// sweeper died before ending the run) is ended like a swept one. Runs without a job that are
/// `RUNNING` are inline runs and are left alone.
async fn reconcile_runs(state: &AppState, queue: &Queue) {
    let Some(db) = &state.db else { return };
    let old = now_epoch_secs() - queue.settings.lock_grace_seconds.max(1);
    let mut ended = Vec::new();
    for status in [RunStatus::Pending, RunStatus::Running] {
        let query = agno_core::RunQuery {
            status: Some(status),
            limit: Some(RECONCILE_PAGE),
            sort: agno_core::SortOrder::Asc,
            ..agno_core::RunQuery::default()
        };
        let page = match db.get_runs(&query).await {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!(error = %e, "cannot scan runs for repairs");
                return;
            }
        };
        for run in page.runs.into_iter().filter(|r| r.created_at <= old) {
            let id = run.id().to_owned();
            match queue.store.get_job(&id, None).await {
                Ok(None) if status == RunStatus::Pending => {
                    tracing::warn!(run = %id, reason = NEVER_QUEUED, "removing an orphaned PENDING run");
                    if let Err(e) = db.delete_run(&id, None).await {
                        tracing::warn!(run = %id, error = %e, "cannot remove an orphaned run");
                    }
                }
                Ok(Some(job))
                    if matches!(job.status, JobStatus::Failed | JobStatus::Cancelled) && job.locked_by.is_none() =>
                {
                    ended.push(job);
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(run = %id, error = %e, "cannot read the job of a run"),
            }
        }
    }
    if !ended.is_empty() {
        tracing::warn!(runs = ended.len(), "ending runs whose job ended without them");
        end_swept_runs(state, queue.store.as_ref(), ended).await;
    }
}

/// Follows the store's push notifications, when it has them: a claimable job wakes an idle
/// worker at once, a cancelled job stops its run here at once (instead of at the next heartbeat).
fn listen(queue: Queue, stop: CancellationToken) {
    tokio::spawn(async move {
        use futures::StreamExt;
        let mut signals = match queue.store.job_signals().await {
            Ok(Some(s)) => s,
            Ok(None) => return watch_cancels(queue, stop).await,
            Err(e) => {
                tracing::warn!(error = %e, "no job notifications; workers poll");
                return watch_cancels(queue, stop).await;
            }
        };
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                signal = signals.next() => match signal {
                    Some(signal) => queue.on_signal(signal),
                    None => {
                        tracing::warn!("job notifications ended; workers poll");
                        break;
                    }
                },
            }
        }
    });
}

/// Without push notifications (SQLite, memory), a cancel recorded by another process reaches this
/// replica's runs through a cheap poll (`[queue] cancel_poll_ms`) while it runs any background
/// job.
async fn watch_cancels(queue: Queue, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(Duration::from_millis(queue.settings.cancel_poll_ms.max(10))) => {}
        }
        if agno_runtime::running_runs().is_empty() {
            continue;
        }
        match queue.store.cancelled_jobs(&queue.worker_id).await {
            Ok(ids) => {
                for id in ids {
                    if Agent::cancel_run(&id) {
                        tracing::info!(run = %id, "cancelled on request of another process");
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot look for cancelled jobs"),
        }
    }
}

/// Starts this replica's workers and sweeper; they stop claiming when `stop` is cancelled (in-flight runs
/// keep going and are awaited by the caller's drain).
pub fn start(state: AppState, queue: Queue, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
    listen(queue.clone(), stop.clone());
    if let Some(c) = queue.coordination.clone() {
        let q = queue.clone();
        c.subscribe(stop.clone(), move |signal| q.on_signal(signal));
    }
    tokio::spawn(async move {
        let permits = Arc::new(Semaphore::new(queue.settings.max_concurrency.max(1)));
        let poll = Duration::from_millis(queue.settings.poll_interval_ms.max(10));
        let sweep_every = Duration::from_secs(u64::try_from(queue.settings.lock_grace_seconds.max(2) / 2).unwrap_or(1));
        let mut next_sweep = tokio::time::Instant::now();
        let mut next_cleanup = tokio::time::Instant::now();
        loop {
            if tokio::time::Instant::now() >= next_cleanup {
                let before = now_epoch_secs() - queue.settings.retention_seconds.max(1);
                match queue.store.cleanup_jobs(before).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(jobs = n, "removed ended background jobs past retention_seconds"),
                    Err(e) => tracing::warn!(error = %e, "job retention cleanup failed"),
                }
                next_cleanup = tokio::time::Instant::now() + Duration::from_secs(3600);
            }
            if tokio::time::Instant::now() >= next_sweep {
                match queue.store.sweep_jobs(queue.settings.lock_grace_seconds, now_epoch_secs(), LOST_WORKER).await {
                    Ok(swept) if !swept.is_empty() => {
                        tracing::warn!(jobs = swept.len(), "ended background runs whose worker was lost");
                        end_swept_runs(&state, queue.store.as_ref(), swept).await;
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "sweep failed"),
                }
                reconcile_runs(&state, &queue).await;
                next_sweep = tokio::time::Instant::now() + sweep_every;
            }
            let permit = tokio::select! {
                p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
                () = stop.cancelled() => break,
            };
            let asked = std::time::Instant::now();
            match queue.store.claim_job(&queue.worker_id, queue.settings.lock_grace_seconds, now_epoch_secs()).await {
                Ok(Some(job)) => {
                    queue.claims.record(asked.elapsed());
                    let (state, queue) = (state.clone(), queue.clone());
                    queue.clone().tasks.spawn(async move {
                        execute(state, queue, job).await;
                        drop(permit);
                    });
                }
                Ok(None) => {
                    drop(permit);
                    tokio::select! {
                        () = queue.wake.notified() => {}
                        () = tokio::time::sleep(poll) => {}
                        () = stop.cancelled() => break,
                    }
                }
                Err(e) => {
                    drop(permit);
                    tracing::warn!(error = %e, "cannot claim jobs; retrying");
                    tokio::select! {
                        () = tokio::time::sleep(poll) => {}
                        () = stop.cancelled() => break,
                    }
                }
            }
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{QueueSettings, backoff};

    /// The retry delay doubles per attempt from `retry_delay_seconds`, is capped at ten times it,
    /// and adds at most a quarter of jitter.
    #[test]
    fn retry_backoff_doubles_with_bounded_jitter_and_a_cap() {
        let settings = QueueSettings { retry_delay_seconds: 4, ..QueueSettings::default() };
        for (attempt, expected) in [(1, 4), (2, 8), (3, 16), (4, 32), (5, 40), (9, 40)] {
            for _ in 0..200 {
                let delay = backoff(&settings, attempt);
                assert!(
                    (expected..=expected + expected / 4).contains(&delay),
                    "attempt {attempt}: {delay} outside {expected}..={}",
                    expected + expected / 4
                );
            }
        }
        let none = QueueSettings { retry_delay_seconds: 0, ..QueueSettings::default() };
        assert_eq!(backoff(&none, 3), 0, "no delay configured, no delay");
    }
}
