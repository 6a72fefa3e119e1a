//! The job queue of the in-memory store; the reference semantics the other adapters follow.

use agno_core::{
    Continued, DbError, DbErrorKind, DbResult, Enqueued, Job, JobLease, JobOutcome, JobStatus, JobStore, RunWrite,
    StoredEvent,
};
use std::collections::HashMap;

use async_trait::async_trait;

use super::{InMemoryDb, visible};
use crate::memories::page_bounds;

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
        job.claim(worker_id, now);
        Ok(Some(job.clone()))
    }

    async fn heartbeat_jobs(&self, worker_id: &str, job_ids: &[String], now: i64) -> DbResult<u64> {
        let mut tables = self.lock()?;
        Ok(job_ids
            .iter()
            .filter(|id| tables.jobs.get_mut(id.as_str()).is_some_and(|j| j.heartbeat(worker_id, now)))
            .count() as u64)
    }

    async fn finish_job(
        &self,
        job_id: &str,
        worker_id: &str,
        attempt: i64,
        outcome: &JobOutcome,
        now: i64,
    ) -> DbResult<bool> {
        Ok(self.lock()?.jobs.get_mut(job_id).is_some_and(|j| j.finish(worker_id, attempt, outcome, now)))
    }

    async fn sweep_jobs(&self, lock_grace_seconds: i64, now: i64, error: &str) -> DbResult<Vec<Job>> {
        let mut tables = self.lock()?;
        let stale = now - lock_grace_seconds;
        Ok(tables.jobs.values_mut().filter_map(|j| j.sweep(stale, now, error).then(|| j.clone())).collect())
    }

    async fn cancel_job(&self, job_id: &str, now: i64) -> DbResult<Option<JobStatus>> {
        Ok(self.lock()?.jobs.get_mut(job_id).and_then(|j| j.cancel(now)))
    }

    async fn holds_job(&self, job_id: &str, worker_id: &str, attempt: i64, now: i64) -> DbResult<bool> {
        Ok(self.lock()?.jobs.get_mut(job_id).is_some_and(|j| j.hold(worker_id, attempt, now)))
    }

    async fn save_claimed_run(&self, lease: &JobLease, write: RunWrite<'_>, now: i64) -> DbResult<bool> {
        let mut tables = self.lock()?;
        if !tables.jobs.get_mut(&lease.job_id).is_some_and(|j| j.hold(&lease.worker_id, lease.attempt, now)) {
            return Ok(false);
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
        if !tables.jobs.get(job_id).is_some_and(|j| j.held_by(worker_id, attempt)) {
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
        Ok(self.lock()?.jobs.get_mut(job_id).is_some_and(|j| j.complete_swept(now)))
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
        Ok(match self.lock()?.jobs.get_mut(job_id) {
            Some(job) => job.continue_with(continuation, now),
            None => Continued::Conflict(None),
        })
    }

    async fn requeue_job(&self, job_id: &str, now: i64) -> DbResult<bool> {
        Ok(self.lock()?.jobs.get_mut(job_id).is_some_and(|j| j.requeue(now)))
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
