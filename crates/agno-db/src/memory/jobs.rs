//! The job queue of the in-memory store; the reference semantics the other adapters follow.

use agno_core::{
    Continued, DbError, DbErrorKind, DbResult, Enqueued, Job, JobLease, JobOutcome, JobStatus, JobStore, RunWrite,
    StoredEvent,
};
use std::collections::HashMap;

use async_trait::async_trait;

use super::{InMemoryDb, visible};
use crate::memories::page_bounds;

/// True when `worker_id` holds attempt `attempt` of a job that is running or was cancelled while
/// it ran (the worker still records the end).
fn holds(job: &Job, worker_id: &str, attempt: i64) -> bool {
    matches!(job.status, JobStatus::Running | JobStatus::Cancelled)
        && job.locked_by.as_deref() == Some(worker_id)
        && job.attempt == attempt
}

#[async_trait]
impl JobStore for InMemoryDb {
    async fn enqueue_job(&self, job: &Job, max_depth: usize) -> DbResult<Enqueued> {
        let mut tables = self.lock()?;
        let key = job.idempotency_key.as_deref().filter(|k| !k.is_empty());
        if let Some(key) = key
            && let Some(existing) =
                tables.jobs.values().find(|j| j.idempotency_key.as_deref() == Some(key) && j.user_id == job.user_id)
        {
            return Ok(Enqueued::Duplicate(existing.clone()));
        }
        if max_depth > 0 && tables.jobs.values().filter(|j| j.status == JobStatus::Queued).count() >= max_depth {
            return Ok(Enqueued::QueueFull);
        }
        if tables.jobs.contains_key(&job.id) {
            return Err(DbError::new(DbErrorKind::Conflict, format!("job {} already exists", job.id)));
        }
        let mut row = job.clone();
        row.idempotency_key = key.map(str::to_owned);
        tables.jobs.insert(row.id.clone(), row.clone());
        Ok(Enqueued::Accepted(row))
    }

    async fn claim_job(&self, worker_id: &str, lock_grace_seconds: i64, now: i64) -> DbResult<Option<Job>> {
        let mut tables = self.lock()?;
        let stale = now - lock_grace_seconds;
        // One live run per session, in order: a job waits while another of its session is running
        // or paused, or an older one is still queued. One pass over the jobs per claim.
        let mut live: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut oldest_queued: HashMap<&str, (i64, &str)> = HashMap::new();
        for o in tables.jobs.values() {
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
        let next = tables
            .jobs
            .values()
            .filter(|j| !blocked(j))
            .filter(|j| {
                j.available_at <= now
                    && j.deployment_id.is_none()
                    && (j.status == JobStatus::Queued
                        || (j.status == JobStatus::Running
                            && j.locked_at.is_some_and(|t| t <= stale)
                            && j.attempt < j.max_attempts))
            })
            .min_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)))
            .map(|j| j.id.clone());
        let Some(id) = next else { return Ok(None) };
        let Some(job) = tables.jobs.get_mut(&id) else { return Ok(None) };
        job.status = JobStatus::Running;
        job.locked_by = Some(worker_id.to_owned());
        job.locked_at = Some(now);
        job.attempt += 1;
        job.updated_at = Some(now);
        Ok(Some(job.clone()))
    }

    async fn heartbeat_jobs(&self, worker_id: &str, job_ids: &[String], now: i64) -> DbResult<u64> {
        let mut tables = self.lock()?;
        let mut held = 0;
        for id in job_ids {
            if let Some(j) = tables.jobs.get_mut(id)
                && j.status == JobStatus::Running
                && j.locked_by.as_deref() == Some(worker_id)
            {
                j.locked_at = Some(now);
                held += 1;
            }
        }
        Ok(held)
    }

    async fn finish_job(
        &self,
        job_id: &str,
        worker_id: &str,
        attempt: i64,
        outcome: &JobOutcome,
        now: i64,
    ) -> DbResult<bool> {
        let mut tables = self.lock()?;
        let Some(job) = tables.jobs.get_mut(job_id).filter(|j| holds(j, worker_id, attempt)) else {
            return Ok(false);
        };
        job.locked_by = None;
        job.locked_at = None;
        job.updated_at = Some(now);
        if job.status == JobStatus::Cancelled {
            // Cancelled while it ran: the cancellation stands, whatever the attempt's outcome.
            return Ok(true);
        }
        match outcome {
            JobOutcome::Retry { error, available_at } if job.attempt < job.max_attempts => {
                job.status = JobStatus::Queued;
                job.error = Some(error.clone());
                job.available_at = *available_at;
            }
            JobOutcome::Retry { error, .. } => {
                job.status = JobStatus::Failed;
                job.error = Some(error.clone());
                job.completed_at = Some(now);
            }
            JobOutcome::Settled(status, error) => {
                job.status = *status;
                job.error.clone_from(error);
                if status.is_terminal() {
                    job.completed_at = Some(now);
                }
            }
        }
        Ok(true)
    }

    async fn sweep_jobs(&self, lock_grace_seconds: i64, now: i64, error: &str) -> DbResult<Vec<Job>> {
        let mut tables = self.lock()?;
        let stale = now - lock_grace_seconds;
        let mut swept = Vec::new();
        for job in tables.jobs.values_mut() {
            if job.status == JobStatus::Cancelled
                && job.locked_by.is_some()
                && job.locked_at.is_some_and(|t| t <= stale)
            {
                job.locked_by = None;
                job.locked_at = None;
                job.updated_at = Some(now);
                swept.push(job.clone());
            } else if job.status == JobStatus::Running
                && job.locked_at.is_some_and(|t| t <= stale)
                && job.attempt >= job.max_attempts
            {
                job.status = JobStatus::Failed;
                job.error = Some(error.to_owned());
                job.locked_by = None;
                job.locked_at = None;
                job.completed_at = Some(now);
                job.updated_at = Some(now);
                swept.push(job.clone());
            }
        }
        Ok(swept)
    }

    async fn cancel_job(&self, job_id: &str, now: i64) -> DbResult<Option<JobStatus>> {
        let mut tables = self.lock()?;
        let Some(job) = tables
            .jobs
            .get_mut(job_id)
            .filter(|j| matches!(j.status, JobStatus::Queued | JobStatus::Paused | JobStatus::Running))
        else {
            return Ok(None);
        };
        let before = job.status;
        job.status = JobStatus::Cancelled;
        if before != JobStatus::Running {
            job.locked_by = None;
            job.locked_at = None;
        }
        job.completed_at = Some(now);
        job.updated_at = Some(now);
        Ok(Some(before))
    }

    async fn holds_job(&self, job_id: &str, worker_id: &str, attempt: i64, now: i64) -> DbResult<bool> {
        let mut tables = self.lock()?;
        let Some(job) = tables.jobs.get_mut(job_id).filter(|j| holds(j, worker_id, attempt)) else {
            return Ok(false);
        };
        if job.status == JobStatus::Running {
            job.locked_at = Some(now);
        }
        Ok(true)
    }

    async fn save_claimed_run(&self, lease: &JobLease, write: RunWrite<'_>, now: i64) -> DbResult<bool> {
        let mut tables = self.lock()?;
        let Some(job) = tables.jobs.get_mut(&lease.job_id).filter(|j| holds(j, &lease.worker_id, lease.attempt)) else {
            return Ok(false);
        };
        if job.status == JobStatus::Running {
            job.locked_at = Some(now);
        }
        // Every refusal is decided before anything changes: all or nothing.
        let sid = &write.session.session_id;
        let run_index = super::runs::run_index_for(&tables, write.run, sid, write.user_id)?;
        super::sessions::write_session(&mut tables, write.session, write.state)?;
        super::runs::write_run(&mut tables, write.run, sid, write.user_id, run_index);
        Ok(true)
    }

    async fn cancelled_jobs(&self, worker_id: &str) -> DbResult<Vec<String>> {
        let tables = self.lock()?;
        Ok(tables
            .jobs
            .values()
            .filter(|j| j.status == JobStatus::Cancelled && j.locked_by.as_deref() == Some(worker_id))
            .map(|j| j.id.clone())
            .collect())
    }

    async fn append_events(
        &self,
        job_id: &str,
        worker_id: &str,
        attempt: i64,
        events: &[StoredEvent],
    ) -> DbResult<bool> {
        let mut tables = self.lock()?;
        if !tables.jobs.get(job_id).is_some_and(|j| holds(j, worker_id, attempt)) {
            return Ok(false);
        }
        let log = tables.events.entry(job_id.to_owned()).or_default();
        let last = log.last().map_or(-1, |e| e.event_index);
        let mut prev = last;
        for e in events {
            if e.event_index <= prev {
                return Err(DbError::new(
                    DbErrorKind::Conflict,
                    format!("event {} of run {job_id} is already in the log", e.event_index),
                ));
            }
            prev = e.event_index;
        }
        log.extend_from_slice(events);
        Ok(true)
    }

    async fn read_events(&self, run_id: &str, after: i64, limit: usize) -> DbResult<Vec<StoredEvent>> {
        let tables = self.lock()?;
        Ok(tables
            .events
            .get(run_id)
            .map(|log| log.iter().filter(|e| e.event_index > after).take(limit).cloned().collect())
            .unwrap_or_default())
    }

    async fn last_event_index(&self, run_id: &str) -> DbResult<Option<i64>> {
        Ok(self.lock()?.events.get(run_id).and_then(|log| log.last()).map(|e| e.event_index))
    }

    async fn complete_swept_job(&self, job_id: &str, now: i64) -> DbResult<bool> {
        let mut tables = self.lock()?;
        let Some(job) = tables.jobs.get_mut(job_id).filter(|j| j.status == JobStatus::Failed && j.locked_by.is_none())
        else {
            return Ok(false);
        };
        job.status = JobStatus::Completed;
        job.error = None;
        job.updated_at = Some(now);
        Ok(true)
    }

    async fn cleanup_jobs(&self, before: i64) -> DbResult<u64> {
        let mut tables = self.lock()?;
        let old: Vec<String> = tables
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
            tables.jobs.remove(id);
            tables.events.remove(id);
        }
        Ok(old.len() as u64)
    }

    async fn continue_job(&self, job_id: &str, continuation: &serde_json::Value, now: i64) -> DbResult<Continued> {
        let mut tables = self.lock()?;
        let Some(job) = tables.jobs.get_mut(job_id) else { return Ok(Continued::Conflict(None)) };
        match job.status {
            JobStatus::Queued | JobStatus::Running => return Ok(Continued::Attach(job.clone())),
            JobStatus::Paused => {}
            _ => return Ok(Continued::Conflict(Some(job.clone()))),
        }
        job.payload = job.continued_payload(continuation);
        job.status = JobStatus::Queued;
        job.max_attempts = job.attempt + 1;
        job.available_at = now;
        job.locked_by = None;
        job.locked_at = None;
        job.completed_at = None;
        job.updated_at = Some(now);
        Ok(Continued::Queued(job.clone()))
    }

    async fn requeue_job(&self, job_id: &str, now: i64) -> DbResult<bool> {
        let mut tables = self.lock()?;
        let Some(job) =
            tables.jobs.get_mut(job_id).filter(|j| matches!(j.status, JobStatus::Failed | JobStatus::Cancelled))
        else {
            return Ok(false);
        };
        job.status = JobStatus::Queued;
        job.max_attempts = job.attempt + job.max_attempts.max(1);
        job.available_at = now;
        job.locked_by = None;
        job.locked_at = None;
        job.completed_at = None;
        job.updated_at = Some(now);
        Ok(true)
    }

    async fn get_job(&self, job_id: &str, user_id: Option<&str>) -> DbResult<Option<Job>> {
        Ok(self.lock()?.jobs.get(job_id).filter(|j| visible(j.user_id.as_deref(), user_id)).cloned())
    }

    async fn list_jobs(
        &self,
        status: Option<JobStatus>,
        limit: Option<usize>,
        page: Option<usize>,
    ) -> DbResult<(Vec<Job>, u64)> {
        let tables = self.lock()?;
        let mut list: Vec<Job> =
            tables.jobs.values().filter(|j| status.is_none_or(|s| j.status == s)).cloned().collect();
        list.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
        let total = list.len() as u64;
        let (offset, limit) = page_bounds(Some(limit.unwrap_or(20)), page);
        Ok((list.into_iter().skip(offset).take(limit).collect(), total))
    }
}
