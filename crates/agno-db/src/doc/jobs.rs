//! The job queue of the document family, the reference semantics the other adapters follow:
//! every transition is one of the [`Job`] methods applied under the backend's exclusive lock, to
//! the typed [`JobTables`] of a backend that runs a queue ([`crate::InMemoryDb`]; JSON files do
//! not). A session and run written with a claimed job go to the documents in the same lock.

use std::collections::HashMap;

use agno_core::{
    Continued, DbError, DbErrorKind, DbResult, Enqueued, Job, JobLease, JobOutcome, JobStatus, JobStore, PendingRun,
    RunWrite, StateUpdate, StoredEvent,
};
use async_trait::async_trait;
use serde_json::{Value, json};

use super::{DocBackend, DocDb, Docs, visible};
use crate::memories::page_bounds;

/// A run event as stored (the Redis queue stores the same object as a sorted-set member).
pub(crate) fn event_value(e: &StoredEvent) -> Value {
    json!({"event_index": e.event_index, "attempt": e.attempt, "event": e.event, "data": e.data, "created_at": e.created_at})
}

/// The event of a stored object; `None` when it is not one.
pub(crate) fn event_of(v: &Value) -> Option<StoredEvent> {
    Some(StoredEvent {
        event_index: v.get("event_index")?.as_i64()?,
        attempt: v.get("attempt")?.as_i64()?,
        event: v.get("event")?.as_str()?.to_owned(),
        data: v.get("data")?.as_str()?.to_owned(),
        created_at: v.get("created_at")?.as_i64()?,
    })
}

/// The queue of a backend that runs one: jobs by id, and each run's event log in order.
#[derive(Debug, Default)]
pub struct JobTables {
    jobs: HashMap<String, Job>,
    events: HashMap<String, Vec<StoredEvent>>,
}

/// The next claimable job, in Agno's order: one live run per session, in order (a job waits
/// while another of its session is running or paused, or an older one is still queued); then
/// the queued or stale-running job with attempts left that became available first (then the
/// oldest). One pass over the jobs.
fn next_claimable(jobs: &HashMap<String, Job>, stale: i64, now: i64) -> Option<String> {
    let mut live: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut oldest_queued: HashMap<&str, (i64, &str)> = HashMap::new();
    for o in jobs.values() {
        if matches!(o.status, JobStatus::Running | JobStatus::Paused) {
            live.entry(o.session_id.as_str()).or_default().push(o.id.as_str());
        } else if o.status == JobStatus::Queued {
            let key = (o.created_at, o.id.as_str());
            oldest_queued.entry(o.session_id.as_str()).and_modify(|k| *k = (*k).min(key)).or_insert(key);
        }
    }
    let blocked = |j: &Job| {
        live.get(j.session_id.as_str()).is_some_and(|ids| ids.iter().any(|id| *id != j.id))
            || oldest_queued.get(j.session_id.as_str()).is_some_and(|k| *k < (j.created_at, j.id.as_str()))
    };
    jobs.values()
        .filter(|j| !blocked(j))
        .filter(|j| {
            j.available_at <= now
                && j.deployment_id.is_none()
                && (j.status == JobStatus::Queued
                    || (j.status == JobStatus::Running
                        && j.locked_at.is_some_and(|t| t <= stale)
                        && j.attempt < j.max_attempts))
        })
        .min_by(|a, b| (a.available_at, a.created_at, &a.id).cmp(&(b.available_at, b.created_at, &b.id)))
        .map(|j| j.id.clone())
}

/// What enqueueing `job` comes to, decided before anything is written: `Ok` with the row to
/// insert, or the answer without one (the original job of a used idempotency key, a full queue).
///
/// # Errors
/// `Conflict` when the id exists.
fn admission(q: &JobTables, job: &Job, max_depth: usize) -> DbResult<Result<Job, Enqueued>> {
    let key = job.idempotency_key.as_deref().filter(|k| !k.is_empty());
    if let Some(key) = key
        && let Some(existing) =
            q.jobs.values().find(|j| j.idempotency_key.as_deref() == Some(key) && j.user_id == job.user_id)
    {
        return Ok(Err(Enqueued::Duplicate(existing.clone())));
    }
    if max_depth > 0 && q.jobs.values().filter(|j| j.status == JobStatus::Queued).count() >= max_depth {
        return Ok(Err(Enqueued::QueueFull));
    }
    if q.jobs.contains_key(&job.id) {
        return Err(DbError::new(DbErrorKind::Conflict, format!("job {} already exists", job.id)));
    }
    let mut row = job.clone();
    row.idempotency_key = key.map(str::to_owned);
    Ok(Ok(row))
}

/// The queue of `files`; an error for a backend without one.
fn queue(files: &mut dyn Docs) -> DbResult<&mut JobTables> {
    files.job_tables().ok_or_else(|| DbError::new(DbErrorKind::Other, "this store has no job queue"))
}

impl<B: DocBackend> DocDb<B> {
    /// Runs `f` over the queue under the exclusive lock.
    async fn with_queue<T, F>(&self, f: F) -> DbResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut JobTables) -> DbResult<T> + Send + 'static,
    {
        self.write(move |files| f(queue(files)?)).await
    }

    /// Applies a transition to one job; false when the job is missing or the transition refused.
    async fn change_job(&self, job_id: &str, change: impl FnOnce(&mut Job) -> bool + Send + 'static) -> DbResult<bool> {
        let id = job_id.to_owned();
        self.with_queue(move |q| Ok(q.jobs.get_mut(&id).is_some_and(change))).await
    }
}

#[async_trait]
impl<B: DocBackend> JobStore for DocDb<B> {
    async fn enqueue_job(&self, job: &Job, max_depth: usize) -> DbResult<Enqueued> {
        let job = job.clone();
        self.with_queue(move |q| {
            Ok(match admission(q, &job, max_depth)? {
                Ok(row) => {
                    q.jobs.insert(row.id.clone(), row.clone());
                    Enqueued::Accepted(row)
                }
                Err(answer) => answer,
            })
        })
        .await
    }

    async fn enqueue_run(&self, job: &Job, max_depth: usize, pending: PendingRun<'_>) -> DbResult<Enqueued> {
        let (job, session, run) = (job.clone(), pending.session.clone(), pending.run.clone());
        self.write(move |files| {
            let row = match admission(queue(files)?, &job, max_depth)? {
                Ok(row) => row,
                Err(answer) => return Ok(answer),
            };
            // Every refusal is decided before anything changes: all or nothing.
            let user_id = job.user_id.as_deref();
            super::runs::check_run(files, &run, &job.session_id, user_id)?;
            if super::sessions::find_session(&files.read(&files.tables().sessions)?, &job.session_id).is_none() {
                super::sessions::write_session(files, &session, &StateUpdate::Replace)?;
            }
            super::runs::write_run(files, &run, &job.session_id, user_id)?;
            queue(files)?.jobs.insert(row.id.clone(), row.clone());
            Ok(Enqueued::Accepted(row))
        })
        .await
    }

    async fn claim_job(&self, worker_id: &str, lock_grace_seconds: i64, now: i64) -> DbResult<Option<Job>> {
        let worker = worker_id.to_owned();
        self.with_queue(move |q| {
            let Some(id) = next_claimable(&q.jobs, now - lock_grace_seconds, now) else { return Ok(None) };
            let Some(job) = q.jobs.get_mut(&id) else { return Ok(None) };
            job.claim(&worker, now);
            Ok(Some(job.clone()))
        })
        .await
    }

    async fn heartbeat_jobs(&self, worker_id: &str, job_ids: &[String], now: i64) -> DbResult<u64> {
        let (worker, ids) = (worker_id.to_owned(), job_ids.to_vec());
        self.with_queue(move |q| {
            Ok(ids.iter().filter(|id| q.jobs.get_mut(id.as_str()).is_some_and(|j| j.heartbeat(&worker, now))).count()
                as u64)
        })
        .await
    }

    async fn finish_job(&self, lease: &JobLease, outcome: &JobOutcome, now: i64) -> DbResult<bool> {
        let (lease, outcome) = (lease.clone(), outcome.clone());
        self.change_job(&lease.job_id.clone(), move |j| j.finish(&lease.worker_id, lease.attempt, &outcome, now)).await
    }

    async fn sweep_jobs(&self, lock_grace_seconds: i64, now: i64, error: &str) -> DbResult<Vec<Job>> {
        let (stale, error) = (now - lock_grace_seconds, error.to_owned());
        self.with_queue(move |q| {
            Ok(q.jobs.values_mut().filter_map(|j| j.sweep(stale, now, &error).then(|| j.clone())).collect())
        })
        .await
    }

    async fn cancel_job(&self, job_id: &str, now: i64) -> DbResult<Option<JobStatus>> {
        let id = job_id.to_owned();
        self.with_queue(move |q| Ok(q.jobs.get_mut(&id).and_then(|j| j.cancel(now)))).await
    }

    async fn holds_job(&self, lease: &JobLease, now: i64) -> DbResult<bool> {
        let lease = lease.clone();
        self.change_job(&lease.job_id.clone(), move |j| j.hold(&lease.worker_id, lease.attempt, now)).await
    }

    async fn save_claimed_run(&self, lease: &JobLease, write: RunWrite<'_>, now: i64) -> DbResult<bool> {
        let lease = lease.clone();
        let (session, state, run) = (write.session.clone(), write.state.clone(), write.run.clone());
        let user_id = write.user_id.map(str::to_owned);
        self.write(move |files| {
            let held = queue(files)?.jobs.get_mut(&lease.job_id);
            if !held.is_some_and(|j| j.hold(&lease.worker_id, lease.attempt, now)) {
                return Ok(false);
            }
            // Every refusal is decided before anything changes: all or nothing.
            super::runs::write_with_session(files, &session, &state, &run, user_id.as_deref())?;
            Ok(true)
        })
        .await
    }

    async fn cancelled_jobs(&self, worker_id: &str) -> DbResult<Vec<String>> {
        let worker = worker_id.to_owned();
        self.with_queue(move |q| {
            Ok(q.jobs
                .values()
                .filter(|j| j.status == JobStatus::Cancelled && j.locked_by.as_deref() == Some(worker.as_str()))
                .map(|j| j.id.clone())
                .collect())
        })
        .await
    }

    async fn append_events(&self, lease: &JobLease, events: &[StoredEvent]) -> DbResult<bool> {
        let (lease, events) = (lease.clone(), events.to_vec());
        self.with_queue(move |q| {
            let id = lease.job_id;
            if !q.jobs.get(&id).is_some_and(|j| j.held_by(&lease.worker_id, lease.attempt)) {
                return Ok(false);
            }
            let log = q.events.entry(id.clone()).or_default();
            let mut prev = log.last().map_or(-1, |e| e.event_index);
            for e in &events {
                if e.event_index <= prev {
                    return Err(DbError::new(
                        DbErrorKind::Conflict,
                        format!("event {} of run {id} is already in the log", e.event_index),
                    ));
                }
                prev = e.event_index;
            }
            log.extend(events);
            Ok(true)
        })
        .await
    }

    async fn read_events(&self, run_id: &str, after: i64, limit: usize) -> DbResult<Vec<StoredEvent>> {
        let id = run_id.to_owned();
        self.with_queue(move |q| {
            let log = q.events.get(&id).map_or(&[][..], Vec::as_slice);
            Ok(log.iter().filter(|e| e.event_index > after).take(limit).cloned().collect())
        })
        .await
    }

    async fn last_event_index(&self, run_id: &str) -> DbResult<Option<i64>> {
        let id = run_id.to_owned();
        self.with_queue(move |q| Ok(q.events.get(&id).and_then(|log| log.last()).map(|e| e.event_index))).await
    }

    async fn complete_swept_job(&self, job_id: &str, now: i64) -> DbResult<bool> {
        self.change_job(job_id, move |j| j.complete_swept(now)).await
    }

    async fn cleanup_jobs(&self, before: i64) -> DbResult<u64> {
        self.with_queue(move |q| {
            let old: Vec<String> = q
                .jobs
                .values()
                .filter(|j| {
                    matches!(j.status, JobStatus::Completed | JobStatus::Failed | JobStatus::Cancelled)
                        && j.locked_by.is_none()
                        && j.completed_at.is_some_and(|t| t <= before)
                })
                .map(|j| j.id.clone())
                .collect();
            for id in &old {
                q.jobs.remove(id);
                q.events.remove(id);
            }
            Ok(old.len() as u64)
        })
        .await
    }

    async fn continue_job(&self, job_id: &str, continuation: &Value, now: i64) -> DbResult<Continued> {
        let (id, continuation) = (job_id.to_owned(), continuation.clone());
        self.with_queue(move |q| {
            Ok(match q.jobs.get_mut(&id) {
                Some(job) => job.continue_with(&continuation, now),
                None => Continued::Conflict(None),
            })
        })
        .await
    }

    async fn requeue_job(&self, job_id: &str, now: i64) -> DbResult<bool> {
        self.change_job(job_id, move |j| j.requeue(now)).await
    }

    async fn get_job(&self, job_id: &str, user_id: Option<&str>) -> DbResult<Option<Job>> {
        let (id, user_id) = (job_id.to_owned(), user_id.map(str::to_owned));
        self.with_queue(move |q| {
            Ok(q.jobs.get(&id).filter(|j| visible(j.user_id.as_deref(), user_id.as_deref())).cloned())
        })
        .await
    }

    async fn list_jobs(
        &self,
        status: Option<JobStatus>,
        limit: Option<usize>,
        page: Option<usize>,
    ) -> DbResult<(Vec<Job>, u64)> {
        self.with_queue(move |q| {
            let mut list: Vec<&Job> = q.jobs.values().filter(|j| status.is_none_or(|s| j.status == s)).collect();
            list.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
            let total = list.len() as u64;
            let (offset, limit) = page_bounds(Some(limit.unwrap_or(20)), page);
            Ok((list.into_iter().skip(offset).take(limit).cloned().collect(), total))
        })
        .await
    }
}
