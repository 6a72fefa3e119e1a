//! Durable background runs. `POST /agents/{id}/runs` with `background=true` commits a job row
//! (`id == run_id`) and a `PENDING` run, and answers 202; workers on every replica claim jobs from
//! the database, hold a lease refreshed by heartbeats, and end each attempt with a write fenced by
//! worker and attempt. A sweeper turns runs whose worker died into a visible `ERROR` (or a retry
//! while attempts remain). The database is the truth; nothing lives only in this process.

use std::sync::Arc;
use std::time::Duration;

use agno_core::{
    AgentSession, Job, JobOutcome, JobStatus, JobStore, RunInput, RunOutput, RunStatus, StateUpdate, now_epoch_secs,
};
use agno_runtime::{Agent, RunError, RunRequest};
use serde::Deserialize;
use serde_json::{Map, Value};
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
    /// How often idle workers look for work, in milliseconds (local submissions wake them at once).
    #[serde(default = "default_poll")]
    pub poll_interval_ms: u64,
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
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("settings", &self.settings)
            .field("worker_id", &self.worker_id)
            .finish_non_exhaustive()
    }
}

/// The error written on a run whose worker died with no attempt left.
pub const LOST_WORKER: &str = "the replica running this background run stopped before it finished (its lease \
     expired) and no attempt is left; requeue it if it should run again";

/// The run parameters kept in a job's payload.
pub fn payload(
    message: &str,
    session_state: Option<Map<String, Value>>,
    dependencies: Option<Map<String, Value>>,
    metadata: Option<Map<String, Value>>,
) -> Value {
    let mut p = Map::new();
    p.insert("message".to_owned(), Value::String(message.to_owned()));
    for (k, v) in [("session_state", session_state), ("dependencies", dependencies), ("metadata", metadata)] {
        if let Some(v) = v {
            p.insert(k.to_owned(), Value::Object(v));
        }
    }
    Value::Object(p)
}

/// Writes the session (if new) and the `PENDING` run of a job about to be queued, so the run is
/// visible before any worker can pick it up; true when the session was created here.
///
/// # Errors
/// The storage error.
pub async fn store_pending(state: &AppState, job: &Job) -> Result<bool, agno_core::DbError> {
    let db = state.db.as_ref().ok_or_else(|| agno_core::DbError::new(agno_core::DbErrorKind::Other, "no database"))?;
    let created = db.get_session(&job.session_id, None, Some(0)).await?.is_none();
    if created {
        let mut session = AgentSession::new(job.session_id.clone());
        session.agent_id = Some(job.component_id.clone());
        session.user_id.clone_from(&job.user_id);
        db.upsert_session(&session, &StateUpdate::Merge { set: Map::new(), removed: Vec::new() }).await?;
    }
    let mut run = RunOutput::new(job.id.clone(), job.session_id.clone());
    run.agent_id = Some(job.component_id.clone());
    run.user_id.clone_from(&job.user_id);
    run.status = RunStatus::Pending;
    run.created_at = job.created_at;
    if let Some(m) = job.payload.get("message").and_then(Value::as_str) {
        run.input = Some(RunInput::text(m));
    }
    db.upsert_run(&run, &job.session_id, job.user_id.as_deref()).await?;
    Ok(created)
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

fn request_of(job: &Job) -> RunRequest {
    let p = &job.payload;
    let mut req = RunRequest::new(p.get("message").and_then(Value::as_str).unwrap_or_default())
        .run_id(job.id.clone())
        .session_id(job.session_id.clone());
    if let Some(u) = &job.user_id {
        req = req.user_id(u.clone());
    }
    if let Some(Value::Object(s)) = p.get("session_state") {
        req = req.session_state(s.clone());
    }
    if let Some(Value::Object(d)) = p.get("dependencies") {
        for (k, v) in d {
            req = req.dependency(k, v.clone());
        }
    }
    if let Some(Value::Object(m)) = p.get("metadata") {
        req = req.metadata(m.clone());
    }
    req
}

/// A worker's lease on a job as a run fence: the run writes only while the lease is held (the
/// check also refreshes it).
struct LeaseFence {
    store: Arc<dyn JobStore>,
    worker_id: Arc<str>,
    job_id: String,
}

impl std::fmt::Debug for LeaseFence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseFence").field("worker_id", &self.worker_id).field("job_id", &self.job_id).finish()
    }
}

#[async_trait::async_trait]
impl agno_runtime::RunFence for LeaseFence {
    async fn still_owner(&self) -> bool {
        let ids = std::slice::from_ref(&self.job_id);
        matches!(self.store.heartbeat_jobs(&self.worker_id, ids, now_epoch_secs()).await, Ok(n) if n > 0)
    }
}

/// Exponential backoff with jitter, capped at 10x the base.
fn backoff(settings: &QueueSettings, attempt: i64) -> i64 {
    let base = settings.retry_delay_seconds.max(0);
    let exp = base.saturating_mul(1_i64 << attempt.clamp(1, 10).saturating_sub(1)).min(base.saturating_mul(10));
    exp + fastrand::i64(0..=(exp / 4).max(0))
}

/// Runs one claimed job to the end of its attempt.
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
                        tracing::warn!(job = %id, "lease lost: another worker took this job over");
                        Agent::cancel_run(&id);
                        break;
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(job = %id, error = %e, "heartbeat failed"),
                }
            }
        })
    };
    let outcome = match state.agent(&job.component_id) {
        None => JobOutcome::Settled(JobStatus::Failed, Some(format!("agent {} is not served here", job.component_id))),
        Some(served) => {
            let timeout = Duration::from_secs(queue.settings.timeout_seconds);
            let fence =
                LeaseFence { store: queue.store.clone(), worker_id: queue.worker_id.clone(), job_id: job.id.clone() };
            let request = request_of(&job).fence(Arc::new(fence));
            match tokio::time::timeout(timeout, served.agent.arun(request)).await {
                Ok(Ok(run)) => match run.status {
                    RunStatus::Paused => JobOutcome::Settled(JobStatus::Paused, None),
                    RunStatus::Cancelled => JobOutcome::Settled(JobStatus::Cancelled, None),
                    _ => JobOutcome::Settled(JobStatus::Completed, None),
                },
                Ok(Err(RunError::Model { source, .. })) if source.is_retryable() => JobOutcome::Retry {
                    error: source.to_string(),
                    available_at: now_epoch_secs() + backoff(&queue.settings, job.attempt),
                },
                Ok(Err(e)) => JobOutcome::Settled(JobStatus::Failed, Some(e.to_string())),
                Err(_) => {
                    Agent::cancel_run(&job.id);
                    JobOutcome::Settled(
                        JobStatus::Failed,
                        Some(format!("timed out after {} s (timeout_seconds)", queue.settings.timeout_seconds)),
                    )
                }
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
}

/// Marks the runs of swept jobs `ERROR` with the reason.
async fn end_swept_runs(state: &AppState, jobs: Vec<Job>) {
    let Some(db) = &state.db else { return };
    for job in jobs {
        let run = match db.get_run(&job.id, None).await {
            Ok(Some(run)) => run,
            Ok(None) => {
                let mut r = RunOutput::new(job.id.clone(), job.session_id.clone());
                r.agent_id = Some(job.component_id.clone());
                r
            }
            Err(e) => {
                tracing::error!(job = %job.id, error = %e, "cannot read the run of a swept job");
                continue;
            }
        };
        if matches!(run.status, RunStatus::Completed | RunStatus::Cancelled | RunStatus::Error) {
            continue;
        }
        let mut run = run;
        run.status = RunStatus::Error;
        run.content = Some(Value::String(LOST_WORKER.to_owned()));
        if let Err(e) = db.upsert_run(&run, &job.session_id, job.user_id.as_deref()).await {
            tracing::error!(job = %job.id, error = %e, "cannot mark the run of a swept job");
        }
    }
}

/// Follows the store's push notifications, when it has them: a claimable job wakes an idle
/// worker at once, a cancelled job stops its run here at once (instead of at the next heartbeat).
fn listen(queue: Queue, stop: CancellationToken) {
    tokio::spawn(async move {
        use futures::StreamExt;
        let mut signals = match queue.store.job_signals().await {
            Ok(Some(s)) => s,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "no job notifications; workers poll");
                return;
            }
        };
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                signal = signals.next() => match signal {
                    Some(agno_core::JobSignal::Claimable(_)) => queue.wake.notify_one(),
                    Some(agno_core::JobSignal::Cancelled(id)) => {
                        if Agent::cancel_run(&id) {
                            tracing::info!(run = %id, "cancelled on request of another replica");
                        }
                    }
                    None => {
                        tracing::warn!("job notifications ended; workers poll");
                        break;
                    }
                },
            }
        }
    });
}

/// Starts this replica's workers and sweeper; they stop claiming when `stop` is cancelled (in-flight runs
/// keep going and are awaited by the caller's drain).
pub fn start(state: AppState, queue: Queue, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
    listen(queue.clone(), stop.clone());
    tokio::spawn(async move {
        let permits = Arc::new(Semaphore::new(queue.settings.max_concurrency.max(1)));
        let poll = Duration::from_millis(queue.settings.poll_interval_ms.max(10));
        let sweep_every = Duration::from_secs(u64::try_from(queue.settings.lock_grace_seconds.max(2) / 2).unwrap_or(1));
        let mut next_sweep = tokio::time::Instant::now();
        loop {
            if tokio::time::Instant::now() >= next_sweep {
                match queue.store.sweep_jobs(queue.settings.lock_grace_seconds, now_epoch_secs(), LOST_WORKER).await {
                    Ok(swept) if !swept.is_empty() => {
                        tracing::warn!(jobs = swept.len(), "ended background runs whose worker was lost");
                        end_swept_runs(&state, swept).await;
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "sweep failed"),
                }
                next_sweep = tokio::time::Instant::now() + sweep_every;
            }
            let permit = tokio::select! {
                p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
                () = stop.cancelled() => break,
            };
            match queue.store.claim_job(&queue.worker_id, queue.settings.lock_grace_seconds, now_epoch_secs()).await {
                Ok(Some(job)) => {
                    let (state, queue) = (state.clone(), queue.clone());
                    tokio::spawn(async move {
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
