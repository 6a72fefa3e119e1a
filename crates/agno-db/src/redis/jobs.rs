//! The durable job queue in Redis, with the key layout of Python Agno 3.1's `RedisDb` queue so
//! both can share one Redis (`{prefix}:jobs:*`):
//! - `job:{id}`: the job document (JSON, Agno's field names);
//! - `queued` (scored by `available_at`), `running` (by `locked_at`), `all` (by `created_at`):
//!   sorted sets of job ids;
//! - `idem:u{len}:{user}:{key}`: the job id holding an idempotency key for a user;
//! - `session:{sha256 of the JSON session id}`: the live jobs of a session, scored by the
//!   `session_seq` Agno stamps into the payload with `serialize_session` (one run at a time per
//!   session, in acceptance order);
//! - `events:{id}`: the run's durable event log (agno-rs's own key), scored by `event_index`.
//!
//! Every change is a compare-and-set script on the job document the caller read (the lease check
//! of a fenced write is that comparison), applied with its sorted-set and key changes in one
//! atomic step, and retried on contention. Python Agno's WATCH/MULTI writers and these scripts
//! exclude each other. Lease times come from the caller's `now`, as with the other stores.

use agno_core::{
    Continued, DbError, DbErrorKind, DbResult, Enqueued, Job, JobLease, JobOutcome, JobStatus, JobStore, PendingRun,
    RunStore, RunWrite, SessionStore, StateUpdate, StoredEvent, now_epoch_secs,
};
use async_trait::async_trait;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::cas::{Applied, Cas};
use super::docs::CAS_ATTEMPTS;
use super::job_docs::{
    Stored, corrupt, doc_of, event_member, event_of, job_from_doc, python_json_string, serialized, session_blocked,
    session_seq, too_busy,
};
use super::runs::{run_index_values, split_row};
use super::schema::SAVE_CLAIMED_RUN;
use super::sessions::SESSIONS;
use super::sessions::{index_values, planned_session_doc, user_args};
use super::{RedisDb, parse_doc, redis_error};
use crate::codec::to_json_text;
use crate::doc::schema::build_run_row;
use crate::doc::visible;

/// Jobs listed per page when no limit is given.
const JOBS_PAGE: usize = 20;
/// Candidates read per step of a claim scan.
const CLAIM_PAGE: isize = 64;

impl RedisDb {
    fn q(&self, suffix: &str) -> String {
        format!("{}:jobs:{suffix}", self.backend.prefix)
    }

    fn job_key(&self, id: &str) -> String {
        self.q(&format!("job:{id}"))
    }

    fn events_key(&self, id: &str) -> String {
        self.q(&format!("events:{id}"))
    }

    fn idem_key(&self, user_id: Option<&str>, key: &str) -> String {
        let user = user_id.unwrap_or_default();
        self.q(&format!("idem:u{}:{user}:{key}", user.chars().count()))
    }

    fn job_session_key(&self, session_id: &str) -> String {
        let digest = Sha256::digest(python_json_string(session_id).as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        self.q(&format!("session:{hex}"))
    }

    fn stored(id: &str, text: String) -> DbResult<Stored> {
        let doc = parse_doc(&text).ok_or_else(|| corrupt(id))?;
        let job = job_from_doc(id, &doc)?;
        Ok(Stored { text, doc, job })
    }

    async fn load_job(&self, id: &str) -> DbResult<Option<Stored>> {
        match self.get(&self.job_key(id)).await? {
            Some(text) => Self::stored(id, text).map(Some),
            None => Ok(None),
        }
    }

    /// The jobs of `ids` that exist, in order.
    async fn load_jobs(&self, ids: &[String]) -> DbResult<Vec<Stored>> {
        let keys: Vec<String> = ids.iter().map(|id| self.job_key(id)).collect();
        let mut out = Vec::with_capacity(ids.len());
        for (id, text) in ids.iter().zip(self.mget(&keys).await?) {
            if let Some(text) = text {
                out.push(Self::stored(id, text)?);
            }
        }
        Ok(out)
    }

    async fn zrange(&self, cmd: &str, key: &str, args: &[String]) -> DbResult<Vec<String>> {
        redis::cmd(cmd)
            .arg(key)
            .arg(args)
            .query_async(&mut self.conn())
            .await
            .map_err(|e| redis_error(&format!("cannot read {key}"), e))
    }

    /// The top score of a sorted set.
    async fn top_score(&self, key: &str) -> DbResult<Option<i64>> {
        let top: Vec<(String, f64)> = redis::cmd("ZREVRANGE")
            .arg(key)
            .arg(0)
            .arg(0)
            .arg("WITHSCORES")
            .query_async(&mut self.conn())
            .await
            .map_err(|e| redis_error(&format!("cannot read {key}"), e))?;
        #[allow(clippy::cast_possible_truncation)]
        Ok(top.first().map(|(_, score)| *score as i64))
    }

    /// Adds the sorted-set changes that follow a job's status: `queued` and `running`
    /// membership, and session-index membership for live statuses (entered with `seq` when given).
    fn place(&self, cas: &mut Cas, doc: &Map<String, Value>, job: &Job, seq: Option<i64>) {
        let id = job.id.as_str();
        match job.status {
            JobStatus::Queued => {
                cas.zadd(&self.q("queued"), job.available_at, id).zrem(&self.q("running"), id);
            }
            JobStatus::Running => {
                cas.zrem(&self.q("queued"), id).zadd(&self.q("running"), job.locked_at.unwrap_or_default(), id);
            }
            // A job cancelled while it ran stays in `running` while its worker holds it, so a
            // sweep finds it if the worker dies.
            JobStatus::Cancelled if job.locked_by.is_some() => {
                cas.zrem(&self.q("queued"), id).zadd(&self.q("running"), job.locked_at.unwrap_or_default(), id);
            }
            _ => {
                cas.zrem(&self.q("queued"), id).zrem(&self.q("running"), id);
            }
        }
        if serialized(doc) {
            let key = self.job_session_key(&job.session_id);
            if matches!(job.status, JobStatus::Queued | JobStatus::Running | JobStatus::Paused) {
                cas.zadd(&key, seq.unwrap_or_else(|| session_seq(doc)), id);
            } else {
                cas.zrem(&key, id);
            }
        }
    }

    /// Writes `job` over `stored` with its set changes; `Changed` when the document changed
    /// since it was read.
    async fn write_job(&self, stored: &Stored, job: &Job, extra: impl FnOnce(&mut Cas)) -> DbResult<Applied> {
        let doc = doc_of(job, &stored.doc)?;
        let key = self.job_key(&job.id);
        let mut cas = Cas::default();
        cas.unchanged(&key, Some(&stored.text)).set(&key, &to_json_text(&doc)?);
        self.place(&mut cas, &doc, job, None);
        extra(&mut cas);
        cas.apply(self, &format!("cannot write job {}", job.id)).await
    }

    /// Reads a job and applies `change` (None: leave it) with compare-and-set, retrying on
    /// contention; `Ok(None)` when the job is missing or `change` declines.
    async fn update_job<T>(
        &self,
        job_id: &str,
        mut change: impl FnMut(&mut Job) -> Option<T>,
    ) -> DbResult<Option<(T, Job)>> {
        for _ in 0..CAS_ATTEMPTS {
            let Some(stored) = self.load_job(job_id).await? else { return Ok(None) };
            let mut job = stored.job.clone();
            let Some(out) = change(&mut job) else { return Ok(None) };
            if self.write_job(&stored, &job, |_| {}).await? == Applied::Yes {
                return Ok(Some((out, job)));
            }
        }
        Err(too_busy(job_id))
    }

    /// Tries to claim one candidate; `None` when it is not claimable (or changed meanwhile).
    async fn try_claim(&self, c: &Stored, worker_id: &str, now: i64, stale: Option<i64>) -> DbResult<Option<Job>> {
        let j = &c.job;
        let claimable = j.available_at <= now
            && j.deployment_id.is_none()
            && match stale {
                None => j.status == JobStatus::Queued,
                Some(stale) => {
                    j.status == JobStatus::Running
                        && j.locked_at.is_some_and(|t| t <= stale)
                        && j.attempt < j.max_attempts
                }
            };
        if !claimable {
            return Ok(None);
        }
        let mut members = Vec::new();
        if serialized(&c.doc) {
            let ids = self.zrange("ZRANGE", &self.job_session_key(&j.session_id), &["0".into(), "-1".into()]).await?;
            members = self.load_jobs(&ids).await?;
            let docs: Vec<Map<String, Value>> = members.iter().map(|m| m.doc.clone()).collect();
            if session_blocked(&c.doc, &docs) {
                return Ok(None);
            }
        }
        let mut job = j.clone();
        job.claim(worker_id, now);
        let applied = self
            .write_job(c, &job, |cas| {
                // The session's other jobs as read: a concurrent claim, pause or continue of one
                // of them changes its document and this claim is retried later.
                for m in members.iter().filter(|m| m.job.id != job.id) {
                    cas.unchanged(&self.job_key(&m.job.id), Some(&m.text));
                }
            })
            .await?;
        Ok((applied == Applied::Yes).then_some(job))
    }
}

#[async_trait]
impl JobStore for RedisDb {
    async fn enqueue_job(&self, job: &Job, max_depth: usize) -> DbResult<Enqueued> {
        let mut row = job.clone();
        row.idempotency_key = job.idempotency_key.clone().filter(|k| !k.is_empty());
        let key = self.job_key(&row.id);
        let idem = row.idempotency_key.as_deref().map(|k| self.idem_key(row.user_id.as_deref(), k));
        let session = self.job_session_key(&row.session_id);
        for _ in 0..CAS_ATTEMPTS {
            let mut cas = Cas::default();
            if let Some(idem) = &idem {
                let holder = self.get(idem).await?;
                if let Some(existing_id) = &holder
                    && let Some(existing) = self.load_job(existing_id).await?
                    && existing.job.user_id == row.user_id
                {
                    return Ok(Enqueued::Duplicate(existing.job));
                }
                // Free, or left by a job that is gone (or, defensively, another user's): take it.
                cas.unchanged(idem, holder.as_deref()).set(idem, &row.id);
            }
            if self.get(&key).await?.is_some() {
                return Err(DbError::new(DbErrorKind::Conflict, format!("job {} already exists", row.id)));
            }
            let top = self.top_score(&session).await?;
            let seq = top.unwrap_or(0) + 1;
            let mut doc = doc_of(&row, &Map::new())?;
            if let Some(Value::Object(payload)) = doc.get_mut("payload") {
                payload.insert("serialize_session".to_owned(), Value::Bool(true));
                payload.insert("session_seq".to_owned(), Value::from(seq));
            }
            cas.unchanged(&key, None).check("ztop", &session, &top.map(|t| t.to_string()).unwrap_or_default());
            if max_depth > 0 {
                cas.check("lt", &self.q("queued"), &max_depth);
            }
            cas.set(&key, &to_json_text(&doc)?).zadd(&self.q("all"), row.created_at, &row.id);
            self.place(&mut cas, &doc, &row, Some(seq));
            match cas.apply(self, &format!("cannot enqueue job {}", row.id)).await? {
                Applied::Yes => return Ok(Enqueued::Accepted(row)),
                Applied::Full => return Ok(Enqueued::QueueFull),
                Applied::Changed | Applied::Taken => {}
            }
        }
        Err(too_busy(&row.id))
    }

    /// Redis has no transaction across the session, run and job writes (each is its own script):
    /// the session (when missing) and the run are written first, so a worker never sees the job
    /// before its run, and taken away again when the job is not accepted.
    async fn enqueue_run(&self, job: &Job, max_depth: usize, pending: PendingRun<'_>) -> DbResult<Enqueued> {
        let (session_id, user_id) = (job.session_id.as_str(), job.user_id.as_deref());
        let created = self
            .change_doc(SESSIONS, session_id, "session", |current| match current {
                Some(_) => Ok(None),
                None => Ok(Some((planned_session_doc(pending.session, &StateUpdate::Replace, None)?, ()))),
            })
            .await?
            .is_some();
        // A run refused here (another user's id) is not this job's to take back.
        let (queued, run_written) = match self.upsert_run(pending.run, session_id, user_id).await {
            Ok(_) => (self.enqueue_job(job, max_depth).await, true),
            Err(e) => (Err(e), false),
        };
        if !matches!(queued, Ok(Enqueued::Accepted(_))) {
            if run_written && let Err(e) = self.delete_run(&job.id, None).await {
                tracing::warn!(run = %job.id, error = %e, "cannot take back the run of a job not queued");
            }
            if created && let Err(e) = self.delete_session(session_id, None).await {
                tracing::warn!(session = %session_id, error = %e, "cannot take back the session of a job not queued");
            }
        }
        queued
    }

    async fn claim_job(&self, worker_id: &str, lock_grace_seconds: i64, now: i64) -> DbResult<Option<Job>> {
        let stale = now - lock_grace_seconds;
        for (set, max, stale) in [("queued", now, None), ("running", stale, Some(stale))] {
            let mut offset: isize = 0;
            loop {
                let args =
                    ["-inf".to_owned(), max.to_string(), "LIMIT".into(), offset.to_string(), CLAIM_PAGE.to_string()];
                let ids = self.zrange("ZRANGEBYSCORE", &self.q(set), &args).await?;
                if ids.is_empty() {
                    break;
                }
                let mut candidates = self.load_jobs(&ids).await?;
                // Oldest first: ties of `available_at` go by creation.
                candidates.sort_by(|a, b| {
                    (a.job.available_at, a.job.created_at, &a.job.id).cmp(&(
                        b.job.available_at,
                        b.job.created_at,
                        &b.job.id,
                    ))
                });
                for c in &candidates {
                    if let Some(job) = self.try_claim(c, worker_id, now, stale).await? {
                        return Ok(Some(job));
                    }
                }
                offset += CLAIM_PAGE;
            }
        }
        Ok(None)
    }

    async fn heartbeat_jobs(&self, worker_id: &str, job_ids: &[String], now: i64) -> DbResult<u64> {
        let mut held = 0;
        for id in job_ids {
            held += u64::from(self.update_job(id, |j| j.heartbeat(worker_id, now).then_some(())).await?.is_some());
        }
        Ok(held)
    }

    async fn finish_job(&self, lease: &JobLease, outcome: &JobOutcome, now: i64) -> DbResult<bool> {
        let finish = |j: &mut Job| j.finish(&lease.worker_id, lease.attempt, outcome, now).then_some(());
        Ok(self.update_job(&lease.job_id, finish).await?.is_some())
    }

    async fn sweep_jobs(&self, lock_grace_seconds: i64, now: i64, error: &str) -> DbResult<Vec<Job>> {
        let stale = now - lock_grace_seconds;
        let ids = self.zrange("ZRANGEBYSCORE", &self.q("running"), &["-inf".into(), stale.to_string()]).await?;
        let mut swept = Vec::new();
        for id in ids {
            if let Some(((), job)) = self.update_job(&id, |j| j.sweep(stale, now, error).then_some(())).await? {
                swept.push(job);
            }
        }
        Ok(swept)
    }

    async fn cancel_job(&self, job_id: &str, now: i64) -> DbResult<Option<JobStatus>> {
        Ok(self.update_job(job_id, |j| j.cancel(now)).await?.map(|(before, _)| before))
    }

    async fn holds_job(&self, lease: &JobLease, now: i64) -> DbResult<bool> {
        let hold = |j: &mut Job| j.hold(&lease.worker_id, lease.attempt, now).then_some(());
        Ok(self.update_job(&lease.job_id, hold).await?.is_some())
    }

    async fn save_claimed_run(&self, lease: &JobLease, write: RunWrite<'_>, now: i64) -> DbResult<bool> {
        let run = write.run;
        let run_id = run.id();
        let sid = &write.session.session_id;
        if run_id.is_empty() {
            return Err(DbError::new(DbErrorKind::Other, "cannot write a run without a run_id"));
        }
        for _ in 0..CAS_ATTEMPTS {
            let Some(stored) = self.load_job(&lease.job_id).await? else { return Ok(false) };
            let mut job = stored.job.clone();
            if !job.hold(&lease.worker_id, lease.attempt, now) {
                return Ok(false);
            }
            let score = if job.status == JobStatus::Running { now.to_string() } else { String::new() };
            let job_text = to_json_text(&doc_of(&job, &stored.doc)?)?;
            let current = self.session_doc(sid).await?;
            let session_doc = planned_session_doc(write.session, write.state, current.as_ref().map(|(_, d)| d))?;
            let row = build_run_row(run, sid, write.user_id, None, now_epoch_secs())?;
            let (head, tail) = split_row(&row);
            let (has_user, user) = user_args(write.user_id);
            let reply: Vec<String> = SAVE_CLAIMED_RUN
                .key(self.job_key(&lease.job_id))
                .key(self.q("running"))
                .key(self.session_key(sid))
                .key(self.run_key(run_id))
                .key(self.by_session_key(sid))
                .arg(&self.backend.prefix)
                .arg(&stored.text)
                .arg(job_text)
                .arg(score)
                .arg(&lease.job_id)
                .arg(sid)
                .arg(if current.is_some() { "1" } else { "0" })
                .arg(current.as_ref().map_or("", |(text, _)| text.as_str()))
                .arg(to_json_text(&session_doc)?)
                .arg(index_values(current.as_ref().map(|(_, d)| d)))
                .arg(index_values(Some(&session_doc)))
                .arg(run_id)
                .arg(has_user)
                .arg(user)
                .arg(head)
                .arg(tail)
                .arg(run_index_values(&row))
                .invoke_async(&mut self.conn())
                .await
                .map_err(|e| redis_error(&format!("cannot write run {run_id}"), e))?;
            match reply.first().map(String::as_str) {
                Some("ok") => return Ok(true),
                Some("retry") => {}
                Some("other_user") => {
                    return Err(DbError::new(DbErrorKind::Conflict, format!("run {run_id} belongs to another user")));
                }
                Some("other_session") => {
                    let other = reply.get(1).map_or("", String::as_str);
                    return Err(DbError::new(
                        DbErrorKind::Conflict,
                        format!("run {run_id} belongs to session {other}, not {sid}"),
                    ));
                }
                _ => {
                    return Err(DbError::new(
                        DbErrorKind::Other,
                        format!("unexpected reply writing run {run_id}: {reply:?}"),
                    ));
                }
            }
        }
        Err(too_busy(&lease.job_id))
    }

    async fn cancelled_jobs(&self, worker_id: &str) -> DbResult<Vec<String>> {
        let ids = self.zrange("ZRANGE", &self.q("running"), &["0".into(), "-1".into()]).await?;
        Ok(self
            .load_jobs(&ids)
            .await?
            .into_iter()
            .filter(|s| s.job.status == JobStatus::Cancelled && s.job.locked_by.as_deref() == Some(worker_id))
            .map(|s| s.job.id)
            .collect())
    }

    async fn append_events(&self, lease: &JobLease, events: &[StoredEvent]) -> DbResult<bool> {
        let (job_id, worker_id, attempt) = (lease.job_id.as_str(), lease.worker_id.as_str(), lease.attempt);
        let Some(first) = events.first() else {
            return Ok(self.load_job(job_id).await?.is_some_and(|s| s.job.held_by(worker_id, attempt)));
        };
        if events.windows(2).any(|w| w[1].event_index <= w[0].event_index) {
            return Err(DbError::new(
                DbErrorKind::Conflict,
                format!("the events of run {job_id} must have increasing indexes"),
            ));
        }
        let log = self.events_key(job_id);
        for _ in 0..CAS_ATTEMPTS {
            let Some(stored) = self.load_job(job_id).await? else { return Ok(false) };
            if !stored.job.held_by(worker_id, attempt) {
                return Ok(false);
            }
            let mut cas = Cas::default();
            cas.unchanged(&self.job_key(job_id), Some(&stored.text)).check("below", &log, &first.event_index);
            for e in events {
                cas.zadd(&log, e.event_index, &event_member(e));
            }
            match cas.apply(self, &format!("cannot log the events of run {job_id}")).await? {
                Applied::Yes => return Ok(true),
                Applied::Taken => {
                    return Err(DbError::new(
                        DbErrorKind::Conflict,
                        format!("event {} of run {job_id} is already in the log", first.event_index),
                    ));
                }
                Applied::Changed | Applied::Full => {}
            }
        }
        Err(too_busy(job_id))
    }

    async fn read_events(&self, run_id: &str, after: i64, limit: usize) -> DbResult<Vec<StoredEvent>> {
        let args = [format!("({after}"), "+inf".into(), "LIMIT".into(), "0".into(), limit.to_string()];
        let members = self.zrange("ZRANGEBYSCORE", &self.events_key(run_id), &args).await?;
        Ok(members.iter().filter_map(|m| event_of(m)).collect())
    }

    async fn last_event_index(&self, run_id: &str) -> DbResult<Option<i64>> {
        let last = self.zrange("ZRANGE", &self.events_key(run_id), &["-1".into(), "-1".into()]).await?;
        Ok(last.first().and_then(|m| event_of(m)).map(|e| e.event_index))
    }

    async fn complete_swept_job(&self, job_id: &str, now: i64) -> DbResult<bool> {
        Ok(self.update_job(job_id, |j| j.complete_swept(now).then_some(())).await?.is_some())
    }

    async fn cleanup_jobs(&self, before: i64) -> DbResult<u64> {
        let ids = self.zrange("ZRANGE", &self.q("all"), &["0".into(), "-1".into()]).await?;
        let mut removed = 0;
        for stored in self.load_jobs(&ids).await? {
            let j = &stored.job;
            if !(j.status.is_terminal() && j.locked_by.is_none() && j.completed_at.is_some_and(|t| t <= before)) {
                continue;
            }
            let key = self.job_key(&j.id);
            let mut cas = Cas::default();
            cas.unchanged(&key, Some(&stored.text)).del(&key).del(&self.events_key(&j.id));
            if let Some(k) = &j.idempotency_key {
                let idem = self.idem_key(j.user_id.as_deref(), k);
                cas.del(&idem);
            }
            for set in ["all", "queued", "running"] {
                cas.zrem(&self.q(set), &j.id);
            }
            cas.zrem(&self.job_session_key(&j.session_id), &j.id);
            // A job changed meanwhile (requeued, say) is left alone.
            removed += u64::from(cas.apply(self, &format!("cannot delete job {}", j.id)).await? == Applied::Yes);
        }
        Ok(removed)
    }

    async fn continue_job(&self, job_id: &str, continuation: &Value, now: i64) -> DbResult<Continued> {
        for _ in 0..CAS_ATTEMPTS {
            let Some(stored) = self.load_job(job_id).await? else { return Ok(Continued::Conflict(None)) };
            let mut job = stored.job.clone();
            let outcome = job.continue_with(continuation, now);
            if !matches!(outcome, Continued::Queued(_)) || self.write_job(&stored, &job, |_| {}).await? == Applied::Yes
            {
                return Ok(outcome);
            }
        }
        Err(too_busy(job_id))
    }

    async fn requeue_job(&self, job_id: &str, now: i64) -> DbResult<bool> {
        for _ in 0..CAS_ATTEMPTS {
            let Some(stored) = self.load_job(job_id).await? else { return Ok(false) };
            let mut job = stored.job.clone();
            if !job.requeue(now) {
                return Ok(false);
            }
            // Back into its session after every live job, as Agno sequences a requeue.
            let mut base = stored.doc.clone();
            let session = self.job_session_key(&job.session_id);
            let top = self.top_score(&session).await?;
            if serialized(&base)
                && let Some(Value::Object(payload)) = base.get_mut("payload")
            {
                payload.insert("session_seq".to_owned(), Value::from(top.unwrap_or(0) + 1));
            }
            let restamped = Stored { text: stored.text.clone(), doc: base, job: stored.job.clone() };
            let applied = self
                .write_job(&restamped, &job, |cas| {
                    cas.check("ztop", &session, &top.map(|t| t.to_string()).unwrap_or_default());
                })
                .await?;
            if applied == Applied::Yes {
                return Ok(true);
            }
        }
        Err(too_busy(job_id))
    }

    async fn get_job(&self, job_id: &str, user_id: Option<&str>) -> DbResult<Option<Job>> {
        Ok(self.load_job(job_id).await?.map(|s| s.job).filter(|j| visible(j.user_id.as_deref(), user_id)))
    }

    async fn list_jobs(
        &self,
        status: Option<JobStatus>,
        limit: Option<usize>,
        page: Option<usize>,
    ) -> DbResult<(Vec<Job>, u64)> {
        let ids = self.zrange("ZRANGE", &self.q("all"), &["0".into(), "-1".into()]).await?;
        let mut jobs: Vec<Job> = self
            .load_jobs(&ids)
            .await?
            .into_iter()
            .map(|s| s.job)
            .filter(|j| status.is_none_or(|s| j.status == s))
            .collect();
        jobs.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
        let total = jobs.len() as u64;
        let (offset, limit) = crate::memories::page_bounds(Some(limit.unwrap_or(JOBS_PAGE)), page);
        Ok((jobs.into_iter().skip(offset).take(limit).collect(), total))
    }
}
