//! A worker's attempt at a claimed job: what the job asks for ([`Work`]), the run it starts for
//! each kind of component, its events logged and its writes fenced by the claim, and the outcome
//! recorded with the same fence.

use std::sync::Arc;
use std::time::Duration;

use agno_core::{
    ComponentKind, Job, JobOutcome, JobSignal, JobStatus, JobStore, JobType, RunOutput, RunRequirement, RunStatus,
    StreamEvent, now_epoch_secs,
};
use agno_runtime::{Agent, CarryOn, ClientSide, Component, Durable, EventStream, RunError, RunSpec};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::event_log::EventLog;
use super::{Queue, Served};

/// A worker's claim on a job as a run fence: each write of the run is stored together with a
/// check of the claim (which also refreshes the lease), in one transaction.
pub(super) struct LeaseFence {
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

/// What a job asks of its worker, read from its payload: a new run, or the continuation of a
/// paused one with the answers (`payload.continue.requirements`).
#[derive(Debug)]
pub(super) enum Work {
    /// A new run.
    Run(Box<RunSpec>),
    /// The continuation of the paused run: its answered requirements, and what the client
    /// brings to the rest of it (the continue's, else the run's first request's).
    Continue(Vec<RunRequirement>, ClientSide),
}

/// Reads what `job` asks for; a payload no version of agno-rs wrote (or an unknown component
/// kind) gives the reason, naming the field.
pub(super) fn work_of(job: &Job) -> Result<Work, String> {
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
        let client = match cont.get("client").or_else(|| job.payload.get("client")) {
            None | Some(Value::Null) => ClientSide::default(),
            Some(c) => serde_path_to_error::deserialize(c)
                .map_err(|e| format!("the job's payload names no client: `client{}` {}", path_suffix(&e), e.inner()))?,
        };
        return Ok(Work::Continue(requirements, client));
    }
    RunSpec::from_job(job).map(|spec| Work::Run(Box::new(spec))).map_err(|e| e.to_string())
}

/// A field path below a known one (`[0].status`), or nothing for the value itself.
pub(super) fn path_suffix<E>(e: &serde_path_to_error::Error<E>) -> String {
    match e.path().to_string() {
        p if p == "." => String::new(),
        p if p.starts_with('[') => p,
        p => format!(".{p}"),
    }
}

/// The last `event_index` an earlier attempt of the job logged.
pub(super) async fn last_logged(queue: &Queue, job: &Job, earlier: bool) -> Option<u64> {
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
pub(super) fn fence_of(queue: &Queue, job: &Job) -> Arc<LeaseFence> {
    Arc::new(LeaseFence {
        store: queue.store.clone(),
        lease: agno_core::JobLease::new(&job.id, queue.worker_id.to_string(), job.attempt),
    })
}

/// Logs a run's events until it ends, cancelling it after `timeout_seconds` (and logging how it
/// stopped); true when it timed out.
pub(super) async fn log_attempt<E: StreamEvent>(
    queue: &Queue,
    job: &Job,
    stream: &mut (impl futures::Stream<Item = E> + Unpin),
) -> bool {
    let mut log = EventLog::new(queue, job);
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
pub(super) fn outcome_of(queue: &Queue, job: &Job, result: Result<RunOutput, RunError>, timed_out: bool) -> JobOutcome {
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
            available_at: now_epoch_secs() + queue.settings.backoff(job.attempt),
        },
        Err(e) => JobOutcome::Settled(JobStatus::Failed, Some(e.to_string())),
    }
}

/// One attempt of `work` by the component the job names, its events logged and its writes
/// fenced by the claim. A retried or continued run numbers its events after those logged.
pub(super) async fn attempt(state: &dyn Served, queue: &Queue, job: &Job, work: Work, earlier: bool) -> JobOutcome {
    let id = &job.component_id;
    let Some(kind) = job.kind() else {
        return JobOutcome::Settled(
            JobStatus::Failed,
            Some(format!("unknown component kind `{}`", job.component_type)),
        );
    };
    let durable =
        Durable { fence: Some(fence_of(queue, job)), after_event_index: last_logged(queue, job, earlier).await };
    // A run asked of a catalog component's version runs that version, continued or not: the
    // job's payload keeps the version it was queued with.
    let pinned = job.payload.get("component_version").and_then(Value::as_i64);
    match kind {
        ComponentKind::Agent => {
            let agent = chosen_version(kind, id, pinned, |v| state.agent_version(id, v), || state.agent_of(id)).await;
            attempt_or_fail(state, queue, job, agent, work, durable).await
        }
        ComponentKind::Team => {
            let team = chosen_version(kind, id, pinned, |v| state.team_version(id, v), || state.team_of(id)).await;
            attempt_or_fail(state, queue, job, team, work, durable).await
        }
        ComponentKind::Workflow => {
            let workflow =
                chosen_version(kind, id, pinned, |v| state.workflow_version(id, v), || state.workflow_of(id)).await;
            attempt_or_fail(state, queue, job, workflow, work, durable).await
        }
    }
}

/// The component a job runs: the catalog version it names (`pinned`), else the one served; why
/// there is none otherwise.
async fn chosen_version<'a, T>(
    kind: ComponentKind,
    id: &str,
    pinned: Option<i64>,
    at: impl FnOnce(i64) -> futures::future::BoxFuture<'a, Result<T, String>>,
    served: impl FnOnce() -> Option<T>,
) -> Result<T, String> {
    match pinned {
        Some(v) => at(v).await.map_err(|e| format!("{kind} {id} v{v}: {e}")),
        None => served().ok_or_else(|| format!("{kind} {id} is not served here")),
    }
}

/// [`attempt_by`] the component found, else the job failed with the reason there is none.
async fn attempt_or_fail<C: Component>(
    state: &dyn Served,
    queue: &Queue,
    job: &Job,
    component: Result<C, String>,
    work: Work,
    durable: Durable,
) -> JobOutcome {
    match component {
        Ok(component) => attempt_by(state, queue, job, &component, work, durable).await,
        Err(reason) => JobOutcome::Settled(JobStatus::Failed, Some(reason)),
    }
}

/// The attempt by `component`: a new run; the continuation of the paused run (the route put it
/// back to `PENDING` when it queued the answers); or, for a kind that carries on what an
/// interrupted attempt stored (a workflow's journal), that run carried on.
async fn attempt_by<C: Component>(
    state: &dyn Served,
    queue: &Queue,
    job: &Job,
    component: &C,
    work: Work,
    durable: Durable,
) -> JobOutcome {
    let reads_stored = match work {
        Work::Continue(..) => true,
        Work::Run(_) => C::CARRIES_ON_INTERRUPTED && job.attempt > 1,
    };
    let stored = match state.database() {
        Some(db) if reads_stored => match db.get_run(&job.id, job.user_id.as_deref()).await {
            Ok(run) => run,
            Err(e) => return unread_run(queue, job, &e),
        },
        _ => None,
    };
    let user_id = job.user_id.clone();
    let stream = match (work, stored) {
        (Work::Continue(requirements, client), Some(run)) => {
            component.carry_on(CarryOn { run, requirements, user_id, client }, durable)
        }
        (Work::Continue(..), None) => {
            return JobOutcome::Settled(
                JobStatus::Failed,
                Some(format!("run {} cannot be continued: it is no longer stored", job.id)),
            );
        }
        (Work::Run(spec), Some(run)) if run.status != RunStatus::Pending => {
            component.carry_on(CarryOn { run, requirements: Vec::new(), user_id, client: spec.client }, durable)
        }
        (Work::Run(spec), _) => component.start(&spec, durable),
    };
    drive(queue, job, stream).await
}

/// The attempt could not read what an earlier attempt stored: tried again later (the database
/// may be back), never taken for "nothing stored", which would run again or refuse a continue.
fn unread_run(queue: &Queue, job: &Job, e: &agno_core::DbError) -> JobOutcome {
    tracing::warn!(job = %job.id, error = %e, "cannot read the job's stored run");
    JobOutcome::Retry {
        error: format!("cannot read the stored run: {e}"),
        available_at: now_epoch_secs() + queue.settings.backoff(job.attempt),
    }
}

/// Logs the events of an attempt's run until it ends and tells how the attempt ended.
async fn drive<E: StreamEvent>(queue: &Queue, job: &Job, mut stream: EventStream<E>) -> JobOutcome {
    let timed_out = log_attempt(queue, job, &mut stream).await;
    outcome_of(queue, job, stream.output().await, timed_out)
}

/// Ends the run of a job whose payload cannot be read: `ERROR`, with the reason as its content.
pub(super) async fn end_unreadable(state: &dyn Served, job: &Job, reason: &str) {
    let Some(db) = state.database() else { return };
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

/// One attempt at a run job: the run it asks for, or (an earlier attempt stored the run
/// `COMPLETED` and died before recording the job's outcome) the job settled without running again.
async fn run_attempt(state: &dyn Served, queue: &Queue, job: &Job) -> JobOutcome {
    // A later attempt (a retry, a requeue or a continue) may follow one that got somewhere; a
    // first attempt has no earlier record, so it reads nothing here.
    let earlier = job.attempt > 1;
    // An earlier attempt stored the run COMPLETED and died before recording the job's outcome:
    // the run is not executed again, the job is settled.
    let done_before = match state.database() {
        Some(db) if earlier => match db.get_run(&job.id, None).await {
            Ok(run) => run.is_some_and(|r| r.status == RunStatus::Completed),
            Err(e) => return unread_run(queue, job, &e),
        },
        _ => false,
    };
    if done_before {
        tracing::info!(job = %job.id, attempt = job.attempt, "run already completed by an earlier attempt");
        return JobOutcome::Settled(JobStatus::Completed, None);
    }
    match work_of(job) {
        Ok(work) => attempt(state, queue, job, work, earlier).await,
        Err(reason) => {
            tracing::error!(job = %job.id, %reason, "unreadable job payload");
            end_unreadable(state, job, &reason).await;
            JobOutcome::Settled(JobStatus::Failed, Some(reason))
        }
    }
}

/// Runs one claimed job to the end of its attempt, logging its events.
pub(super) async fn execute(state: Arc<dyn Served>, queue: Queue, job: Job) {
    let grace = queue.settings.lock_grace_seconds.max(3);
    let beat = Duration::from_secs(u64::try_from(grace / 3).unwrap_or(1).max(1));
    // Cancelled when the lease is lost: a run is cancelled by its id, an ingestion by this.
    let lost = CancellationToken::new();
    let heartbeat = {
        let (store, worker, id) = (queue.store.clone(), queue.worker_id.clone(), job.id.clone());
        let lost = lost.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(beat).await;
                match store.heartbeat_jobs(&worker, std::slice::from_ref(&id), now_epoch_secs()).await {
                    Ok(0) => {
                        tracing::warn!(job = %id, "lease lost (cancelled, or another worker took the job over)");
                        Agent::cancel_run(&id);
                        lost.cancel();
                        break;
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(job = %id, error = %e, "heartbeat failed"),
                }
            }
        })
    };
    let outcome = match job.job_type() {
        Some(JobType::Run) => run_attempt(state.as_ref(), &queue, &job).await,
        Some(JobType::Ingest) => super::ingest::attempt(state.as_ref(), &queue, &job, &lost).await,
        None => {
            let reason = format!("unknown job type `{}`", job.job_type);
            tracing::error!(job = %job.id, %reason, "unreadable job");
            end_unreadable(state.as_ref(), &job, &reason).await;
            JobOutcome::Settled(JobStatus::Failed, Some(reason))
        }
    };
    heartbeat.abort();
    let lease = agno_core::JobLease::new(&job.id, queue.worker_id.to_string(), job.attempt);
    match queue.store.finish_job(&lease, &outcome, now_epoch_secs()).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::warn!(job = %job.id, attempt = job.attempt, "outcome refused: a newer attempt owns the job")
        }
        Err(e) => tracing::error!(job = %job.id, error = %e, "cannot record the job's outcome"),
    }
    queue.signal(JobSignal::Events(job.id.clone()));
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use agno_core::{ComponentKind, Job, RunInput};
    use agno_runtime::{ClientSide, RunSpec};
    use serde_json::json;

    use super::{Work, work_of};
    use crate::config::QueueSettings;

    /// A continued job carries on with the client's tools of its continue, else of the run's
    /// first request; a client that is not one is refused, naming the field.
    #[test]
    fn a_continuation_brings_the_clients_tools() {
        let mut spec = RunSpec::new(ComponentKind::Agent, "a", RunInput::text("hi"));
        spec.client = ClientSide { tools: vec![ClientSide::tool("first", None, None)], follows_state: true };
        let mut payload = spec.to_payload();
        payload["continue"] = json!({"requirements": []});
        let job = Job::run(spec.kind, &spec.run_id, "a", &spec.session_id, payload.clone());
        let Ok(Work::Continue(_, client)) = work_of(&job) else { panic!("a continuation") };
        assert_eq!(client, spec.client);
        payload["continue"]["client"] = json!({"tools": [{"name": "again", "parameters": {"type": "object"}}]});
        let job = Job::run(spec.kind, &spec.run_id, "a", &spec.session_id, payload.clone());
        let Ok(Work::Continue(_, client)) = work_of(&job) else { panic!("a continuation") };
        assert_eq!(client.tools[0].name, "again");
        assert!(!client.follows_state);
        payload["continue"]["client"] = json!({"tools": "nope"});
        let job = Job::run(spec.kind, &spec.run_id, "a", &spec.session_id, payload);
        let Err(why) = work_of(&job) else { panic!("refused") };
        assert!(why.contains("`client.tools`"), "{why}");
    }

    /// The retry delay doubles per attempt from `retry_delay_seconds`, is capped at ten times it,
    /// and adds at most a quarter of jitter.
    #[test]
    fn retry_backoff_doubles_with_bounded_jitter_and_a_cap() {
        let settings = QueueSettings { retry_delay_seconds: 4, ..QueueSettings::default() };
        for (attempt, expected) in [(1, 4), (2, 8), (3, 16), (4, 32), (5, 40), (9, 40)] {
            for _ in 0..200 {
                let delay = settings.backoff(attempt);
                assert!(
                    (expected..=expected + expected / 4).contains(&delay),
                    "attempt {attempt}: {delay} outside {expected}..={}",
                    expected + expected / 4
                );
            }
        }
        let none = QueueSettings { retry_delay_seconds: 0, ..QueueSettings::default() };
        assert_eq!(none.backoff(3), 0, "no delay configured, no delay");
    }
}
