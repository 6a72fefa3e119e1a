//! Durable background runs. `POST /agents/{id}/runs` with `background=true` commits a job row
//! (`id == run_id`) and a `PENDING` run, and answers 202; workers on every replica claim jobs from
//! the database, hold a lease refreshed by heartbeats, and end each attempt with a write fenced by
//! worker and attempt. A sweeper turns runs whose worker died into a visible `ERROR` (or a retry
//! while attempts remain). The database is the truth; nothing lives only in this process.
//!
//! `worker.rs` holds one attempt of a claimed job; `event_log.rs` the durable event log it
//! writes; `sweeper.rs` the repairs after a replica died; `signals.rs` the
//! push notifications and the cancel poll. This module holds the queue handle, the submission
//! side (`PENDING` records), the operators' requeue, and the loop that ties them together.
//! `ingest.rs` is the queue's second kind of job: the ingestion of an uploaded knowledge content.

mod event_log;
pub mod ingest;
mod signals;
mod sweeper;
mod worker;

pub use crate::config::QueueSettings;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agno_core::{
    AgentSession, ComponentKind, Job, JobSignal, JobStatus, JobStore, JobType, RunOutput, RunStatus, StateUpdate,
    now_epoch_secs,
};
use agno_runtime::{Agent, RunSpec};
use futures::future::BoxFuture;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use signals::listen;
use sweeper::{end_swept_runs, reconcile_contents, reconcile_runs};
use worker::execute;

/// Most jobs one claim statement takes for this replica (each needs a free slot of
/// `max_concurrency`): enough to pay one round trip for many runs under load, few enough that
/// one replica does not take a backlog's head while others are idle.
const CLAIM_BATCH: usize = 16;

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

/// What this replica serves, as the queue needs it: the components a job names, the knowledge
/// bases uploads go into, and the database. The OS's state is one ([`crate::state::AppState`]);
/// the queue knows nothing else of it.
pub trait Served: Send + Sync + 'static {
    /// The database, if the OS has one.
    fn database(&self) -> Option<&Arc<dyn agno_core::Db>>;
    /// The agent `id`, served here (from the configuration or the catalog).
    fn agent_of(&self, id: &str) -> Option<Agent>;
    /// The team `id`, served here (from the configuration or the catalog).
    fn team_of(&self, id: &str) -> Option<agno_runtime::team::Team>;
    /// The workflow `id`, served here.
    fn workflow_of(&self, id: &str) -> Option<agno_runtime::workflow::Workflow>;
    /// The agent `id` at catalog `version` (a run asked of that version), built if it is not the
    /// one served; the configuration's agent `id` whatever the version (it has none).
    ///
    /// # Errors
    /// Why that version cannot be run here (not stored, no longer builds, no catalog).
    fn agent_version<'a>(&'a self, id: &'a str, version: i64) -> BoxFuture<'a, Result<Agent, String>>;
    /// The team `id` at catalog `version`, as [`Served::agent_version`].
    ///
    /// # Errors
    /// As [`Served::agent_version`].
    fn team_version<'a>(&'a self, id: &'a str, version: i64)
    -> BoxFuture<'a, Result<agno_runtime::team::Team, String>>;
    /// The workflow `id` at catalog `version`, as [`Served::agent_version`].
    ///
    /// # Errors
    /// As [`Served::agent_version`].
    fn workflow_version<'a>(
        &'a self,
        id: &'a str,
        version: i64,
    ) -> BoxFuture<'a, Result<agno_runtime::workflow::Workflow, String>>;
    /// The knowledge base `name`, served here.
    fn knowledge_of(&self, name: &str) -> Option<&Arc<agno_knowledge::Knowledge>>;
    /// The names of the knowledge bases served here.
    fn knowledge_names(&self) -> Vec<String>;
}

/// The error written on a run whose worker died with no attempt left.
pub const LOST_WORKER: &str = "the replica running this background run stopped before it finished (its lease \
     expired) and no attempt is left; requeue it if it should run again";

/// The `PENDING` record of `spec`'s run, in the shape its component (at the catalog version the
/// run names, if any) stores it; `None` when the component is not served here.
pub async fn pending_record(state: &dyn Served, spec: &RunSpec) -> Option<RunOutput> {
    let id = spec.component_id.as_str();
    let (request, version) = (spec.request(), spec.component_version);
    match (spec.kind, version) {
        (ComponentKind::Agent, None) => state.agent_of(id).map(|a| a.pending_run(&request)),
        (ComponentKind::Agent, Some(v)) => state.agent_version(id, v).await.ok().map(|a| a.pending_run(&request)),
        (ComponentKind::Team, None) => state.team_of(id).map(|t| t.pending_run(&request)),
        (ComponentKind::Team, Some(v)) => state.team_version(id, v).await.ok().map(|t| t.pending_run(&request)),
        (ComponentKind::Workflow, None) => state.workflow_of(id).map(|w| w.pending_run(&spec.workflow_request())),
        (ComponentKind::Workflow, Some(v)) => {
            state.workflow_version(id, v).await.ok().map(|w| w.pending_run(&spec.workflow_request()))
        }
    }
}

/// Writes the session (if new) and the `PENDING` run of a job about to be queued, so the run is
/// visible before any worker can pick it up; true when the session was created here.
///
/// # Errors
/// The storage error; a payload that is not a run, or a component not served here (kind
/// `Other`, with the reason).
pub async fn store_pending(state: &dyn Served, job: &Job) -> Result<bool, agno_core::DbError> {
    let invalid = |reason: String| agno_core::DbError::new(agno_core::DbErrorKind::Other, reason);
    let spec = RunSpec::from_job(job).map_err(|e| invalid(e.to_string()))?;
    store_pending_spec(state, job, &spec)
        .await?
        .ok_or_else(|| invalid(format!("{} {} is not served here", spec.kind, spec.component_id)))
}

/// What a submitted run job is stored with: the session it runs in, as a new one (written only
/// when none of its id is stored), and its `PENDING` run; `None` when its component is not served
/// here.
pub(crate) async fn pending_parts(state: &dyn Served, job: &Job, spec: &RunSpec) -> Option<(AgentSession, RunOutput)> {
    let mut run = pending_record(state, spec).await?;
    run.created_at = job.created_at;
    let mut session = AgentSession::new(job.session_id.clone());
    let id = Some(job.component_id.clone());
    match spec.kind {
        ComponentKind::Agent => session.agent_id = id,
        ComponentKind::Team => session.team_id = id,
        ComponentKind::Workflow => session.workflow_id = id,
    }
    session.user_id.clone_from(&job.user_id);
    Some((session, run))
}

/// [`store_pending`] of `spec`, the job's own; `None` when its component is not served here.
async fn store_pending_spec(state: &dyn Served, job: &Job, spec: &RunSpec) -> Result<Option<bool>, agno_core::DbError> {
    let Some((session, run)) = pending_parts(state, job, spec).await else { return Ok(None) };
    let db = state.database().ok_or_else(|| agno_core::DbError::new(agno_core::DbErrorKind::Other, "no database"))?;
    let created = db.get_session(&job.session_id, None, Some(0)).await?.is_none();
    if created {
        // The new session and its first run in one transaction.
        let keep = StateUpdate::keep();
        let write = agno_core::RunWrite { session: &session, state: &keep, run: &run, user_id: job.user_id.as_deref() };
        db.save_run_write(write).await?;
    } else {
        db.upsert_run(&run, &job.session_id, job.user_id.as_deref()).await?;
    }
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

/// Queues a failed or cancelled job again and puts its run back to `PENDING` (an ingestion's
/// content back to `processing`) (an operator's
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
    if job.job_type() == Some(JobType::Ingest) {
        ingest::reopen_content(db, &job.session_id).await;
    } else if let Some(mut run) = db.get_run(job_id, None).await? {
        run.status = RunStatus::Pending;
        db.upsert_run(&run, &job.session_id, job.user_id.as_deref()).await?;
    }
    Ok(match store.get_job(job_id, None).await? {
        Some(job) => Requeued::Done(Box::new(job)),
        None => Requeued::Missing,
    })
}

/// Starts this replica's workers and sweeper; they stop claiming when `stop` is cancelled (in-flight runs
/// keep going and are awaited by the caller's drain).
pub fn start(state: Arc<dyn Served>, queue: Queue, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
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
                        end_swept_runs(state.as_ref(), queue.store.as_ref(), swept).await;
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "sweep failed"),
                }
                reconcile_runs(state.as_ref(), &queue).await;
                reconcile_contents(state.as_ref(), &queue).await;
                next_sweep = tokio::time::Instant::now() + sweep_every;
            }
            let first = tokio::select! {
                p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
                () = stop.cancelled() => break,
            };
            // One claim statement for as many jobs as there are free slots (up to CLAIM_BATCH):
            // under load the claim's round trip is paid once per batch, not once per run.
            let mut held = vec![first];
            while held.len() < CLAIM_BATCH {
                match permits.clone().try_acquire_owned() {
                    Ok(p) => held.push(p),
                    Err(_) => break,
                }
            }
            let asked = std::time::Instant::now();
            let claimed = queue
                .store
                .claim_jobs(&queue.worker_id, held.len(), queue.settings.lock_grace_seconds, now_epoch_secs())
                .await;
            match claimed {
                Ok(jobs) if !jobs.is_empty() => {
                    queue.claims.record(asked.elapsed());
                    // Slots left over go back at once.
                    held.truncate(jobs.len());
                    for (job, permit) in jobs.into_iter().zip(held) {
                        let (state, queue) = (Arc::clone(&state), queue.clone());
                        queue.clone().tasks.spawn(async move {
                            execute(state, queue, job).await;
                            drop(permit);
                        });
                    }
                }
                Ok(_) => {
                    drop(held);
                    // Idle until woken, the next poll, or the next sweep (a long poll interval
                    // must not delay finding lost workers).
                    let until = next_sweep.min(tokio::time::Instant::now() + poll);
                    tokio::select! {
                        () = queue.wake.notified() => {}
                        () = tokio::time::sleep_until(until) => {}
                        () = stop.cancelled() => break,
                    }
                }
                Err(e) => {
                    drop(held);
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
