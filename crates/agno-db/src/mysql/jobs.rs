//! The durable job queue on MySQL/MariaDB (`agno_jobs`, the columns of Agno 3.x's jobs table;
//! Python Agno's `MySQLDb` has no queue, so the table is agno-rs's shape for it) and the run
//! event log (`agno_run_events`).
//!
//! Each change locks the job's row (`SELECT ... FOR UPDATE` in a `READ COMMITTED` transaction),
//! decides in Rust with the same rules as the other stores, and writes the row back before the
//! lock is released, so every write of a worker is checked against its claim inside the same
//! transaction. A claim picks the oldest claimable job with `FOR UPDATE SKIP LOCKED`. The
//! idempotency key is unique per user through a stored generated column (MySQL has no partial
//! indexes); the queue-depth bound serialises depth-bounded enqueues on the jobs table's row of
//! the schema-versions table.

use agno_core::{
    Continued, DbError, DbErrorKind, DbResult, Enqueued, Job, JobLease, JobOutcome, JobStatus, JobStore, RunWrite,
    StoredEvent,
};
use async_trait::async_trait;
use serde_json::Value;
use sqlx::{AssertSqlSafe, Connection, MySql, MySqlConnection, Row};

use super::{MySqlDb, db_error, error_number, marks, with_retries};
use crate::codec::to_json_text;
use crate::sql::jobs::{self, JOB_COLUMNS, job_cells, job_from_row, job_placeholders};

/// Claimable jobs a claim tries, oldest first, before it gives up for this poll.
const CLAIM_CANDIDATES: usize = 16;
/// Rows per statement when deleting ended jobs.
const CLEANUP_CHUNK: usize = 500;

/// The jobs table: Agno's columns, plus `idempotency_scope` (user and key, the unique index
/// that dedups submissions: a user's key, or an anonymous one, once).
pub(crate) fn jobs_ddl(t: &str) -> String {
    let mut indexes = String::new();
    for col in ["status", "created_at", "session_id", "component_id"] {
        indexes.push_str(&format!("\tINDEX `idx_{t}_{col}` ({col}), \n"));
    }
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\
         \tid VARCHAR(128) NOT NULL, \n\
         \tcomponent_type VARCHAR(20) NOT NULL, \n\
         \tjob_type VARCHAR(20) NOT NULL, \n\
         \tdeployment_id VARCHAR(128), \n\
         \tcomponent_id VARCHAR(128) NOT NULL, \n\
         \tsession_id VARCHAR(128) NOT NULL, \n\
         \tuser_id VARCHAR(128), \n\
         \tpayload JSON NOT NULL, \n\
         \tstatus VARCHAR(20) NOT NULL, \n\
         \tattempt BIGINT NOT NULL, \n\
         \tmax_attempts BIGINT NOT NULL, \n\
         \tidempotency_key VARCHAR(512), \n\
         \tavailable_at BIGINT NOT NULL, \n\
         \tlocked_by VARCHAR(128), \n\
         \tlocked_at BIGINT, \n\
         \terror TEXT, \n\
         \tcreated_at BIGINT NOT NULL, \n\
         \tupdated_at BIGINT, \n\
         \tcompleted_at BIGINT, \n\
         \tidempotency_scope VARCHAR(700) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin GENERATED ALWAYS AS \
         (IF(idempotency_key IS NULL, NULL, IF(user_id IS NULL, CONCAT('a:', idempotency_key), \
         CONCAT('u', CHAR_LENGTH(user_id), ':', user_id, ':', idempotency_key)))) STORED, \n\
         \tPRIMARY KEY (id), \n\
         {indexes}\
         \tINDEX `idx_{t}_status_available_at` (status, available_at), \n\
         \tUNIQUE INDEX `{t}_uq_jobs_idempotency_key` (idempotency_scope)\n\
         )"
    )
}

/// The durable event log of background runs: one row per event, keyed by run and index.
pub(crate) fn events_ddl(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\
         \trun_id VARCHAR(128) NOT NULL, \n\
         \tevent_index BIGINT NOT NULL, \n\
         \tattempt BIGINT NOT NULL, \n\
         \tevent VARCHAR(64) NOT NULL, \n\
         \tdata LONGTEXT NOT NULL, \n\
         \tcreated_at BIGINT NOT NULL, \n\
         \tPRIMARY KEY (run_id, event_index)\n\
         )"
    )
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl MySqlDb {
    /// Runs `body` in a `READ COMMITTED` transaction that is committed when it answers
    /// `(true, _)` and rolled back at once otherwise (also on an error), so no row lock outlives
    /// the call.
    async fn transact<T>(
        &self,
        what: &str,
        body: impl AsyncFnOnce(&mut MySqlConnection) -> DbResult<(bool, T)>,
    ) -> DbResult<T> {
        let mut conn = self.read_committed_conn().await?;
        let mut tx = conn.begin().await.map_err(|e| db_error(what, e))?;
        match body(&mut tx).await {
            Ok((true, out)) => {
                tx.commit().await.map_err(|e| db_error(what, e))?;
                Ok(out)
            }
            Ok((false, out)) => {
                tx.rollback().await.map_err(|e| db_error(what, e))?;
                Ok(out)
            }
            Err(e) => {
                // The error is what matters; a failed rollback closes the connection anyway.
                let _ = tx.rollback().await;
                Err(e)
            }
        }
    }

    /// The job `id`, its row locked until the transaction on `conn` ends.
    async fn lock_job(&self, conn: &mut MySqlConnection, id: &str) -> DbResult<Option<Job>> {
        let sql = format!("SELECT {JOB_COLUMNS} FROM `{}` WHERE id = ? FOR UPDATE", self.tables().jobs);
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(conn)
            .await
            .map_err(|e| db_error(&format!("cannot read job {id}"), e))?;
        row.as_ref().map(job_from_row::<MySql>).transpose()
    }

    /// Writes every changeable column of `job` (its row locked on `conn`).
    async fn put_job(&self, conn: &mut MySqlConnection, job: &Job) -> DbResult<()> {
        let sql = format!(
            "UPDATE `{}` SET payload = ?, status = ?, attempt = ?, max_attempts = ?, available_at = ?, \
             locked_by = ?, locked_at = ?, error = ?, updated_at = ?, completed_at = ? WHERE id = ?",
            self.tables().jobs
        );
        sqlx::query(AssertSqlSafe(sql))
            .bind(to_json_text(&job.payload)?)
            .bind(job.status.as_str())
            .bind(job.attempt)
            .bind(job.max_attempts)
            .bind(job.available_at)
            .bind(&job.locked_by)
            .bind(job.locked_at)
            .bind(&job.error)
            .bind(job.updated_at)
            .bind(job.completed_at)
            .bind(&job.id)
            .execute(conn)
            .await
            .map_err(|e| db_error(&format!("cannot write job {}", job.id), e))?;
        Ok(())
    }

    /// Locks a job, applies `change` (None: leave it alone) and writes it back, in one
    /// transaction retried on a deadlock; `Ok(None)` when the job is missing or `change` declines.
    async fn update_job<T>(&self, id: &str, change: impl Fn(&mut Job) -> Option<T>) -> DbResult<Option<(T, Job)>> {
        let what = format!("cannot write job {id}");
        with_retries(|| {
            self.transact(&what, async |conn| {
                let Some(mut job) = self.lock_job(conn, id).await? else { return Ok((false, None)) };
                let Some(out) = change(&mut job) else { return Ok((false, None)) };
                self.put_job(conn, &job).await?;
                Ok((true, Some((out, job))))
            })
        })
        .await
    }

    /// The job holding idempotency key `key` for `user_id` (`None`: the anonymous bucket).
    async fn job_by_key(&self, conn: &mut MySqlConnection, key: &str, user_id: Option<&str>) -> DbResult<Option<Job>> {
        let sql = format!(
            "SELECT {JOB_COLUMNS} FROM `{}` WHERE idempotency_scope = IF(? IS NULL, CONCAT('a:', ?), \
             CONCAT('u', CHAR_LENGTH(?), ':', ?, ':', ?))",
            self.tables().jobs
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(user_id)
            .bind(key)
            .bind(user_id)
            .bind(user_id)
            .bind(key)
            .fetch_optional(conn)
            .await
            .map_err(|e| db_error("cannot read the job of an idempotency key", e))?;
        row.as_ref().map(job_from_row::<MySql>).transpose()
    }

    async fn try_enqueue(&self, job: &Job, key: Option<&str>, max_depth: usize) -> DbResult<Enqueued> {
        let t = self.tables().clone();
        let what = format!("cannot enqueue job {}", job.id);
        let inserted = self
            .transact(&what, async |conn| {
                if let Some(key) = key
                    && let Some(existing) = self.job_by_key(conn, key, job.user_id.as_deref()).await?
                {
                    return Ok((false, Some(Enqueued::Duplicate(existing))));
                }
                if max_depth > 0 {
                    // Depth-bounded enqueues take turns on one row until commit, so concurrent
                    // submitters cannot all count the same free slot.
                    let sql = format!("SELECT version FROM `{}` WHERE table_name = ? FOR UPDATE", t.versions);
                    sqlx::query(AssertSqlSafe(sql))
                        .bind(&t.jobs)
                        .fetch_optional(&mut *conn)
                        .await
                        .map_err(|e| db_error(&what, e))?;
                    let sql = format!("SELECT COUNT(*) FROM `{}` WHERE status = 'queued'", t.jobs);
                    let queued: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
                        .fetch_one(&mut *conn)
                        .await
                        .map_err(|e| db_error(&what, e))?;
                    if queued >= to_i64(max_depth) {
                        return Ok((false, Some(Enqueued::QueueFull)));
                    }
                }
                let sql = format!("INSERT INTO `{}` ({JOB_COLUMNS}) VALUES ({})", t.jobs, job_placeholders::<MySql>());
                let inserted =
                    crate::sql::bind_all::<MySql>(sqlx::query(AssertSqlSafe(sql)), job_cells::<MySql>(job, key))?
                        .execute(&mut *conn)
                        .await;
                match inserted {
                    Ok(_) => {
                        let mut stored = job.clone();
                        stored.idempotency_key = key.map(str::to_owned);
                        Ok((true, Some(Enqueued::Accepted(stored))))
                    }
                    // The id exists, or a concurrent duplicate of the key won: decided below, once
                    // this transaction is over and the winner's row is visible.
                    Err(e) if error_number(&e) == Some(super::code::DUPLICATE_KEY) => Ok((false, None)),
                    Err(e) => Err(db_error(&what, e)),
                }
            })
            .await?;
        if let Some(outcome) = inserted {
            return Ok(outcome);
        }
        let mut conn = self.read_committed_conn().await?;
        if let Some(key) = key
            && let Some(existing) = self.job_by_key(&mut conn, key, job.user_id.as_deref()).await?
        {
            return Ok(Enqueued::Duplicate(existing));
        }
        Err(DbError::new(DbErrorKind::Conflict, format!("job {} already exists", job.id)))
    }

    async fn try_claim(&self, worker_id: &str, lock_grace_seconds: i64, now: i64) -> DbResult<Option<Job>> {
        let t = &self.tables().jobs;
        let what = format!("cannot claim a job for worker {worker_id}");
        let stale = now.saturating_sub(lock_grace_seconds);
        // Claimable, and first of its session: one live run per session, in order (a job waits
        // while another of its session is running or paused, or an older one is still queued).
        let claimable = format!(
            "available_at <= ? AND deployment_id IS NULL \
             AND (status = 'queued' OR (status = 'running' AND locked_at <= ? AND attempt < max_attempts)) \
             AND NOT EXISTS (SELECT 1 FROM `{t}` o WHERE o.session_id = j.session_id AND o.id <> j.id \
             AND (o.status IN ('running', 'paused') OR (o.status = 'queued' AND (o.created_at < j.created_at \
             OR (o.created_at = j.created_at AND CAST(o.id AS BINARY) < CAST(j.id AS BINARY))))))"
        );
        // Candidates are read without locks (a locking read that sorts would lock every row it
        // matched, and concurrent claimers would skip them all); each is then locked alone with
        // SKIP LOCKED and checked again, so two workers never claim one job.
        let sql = format!(
            "SELECT id FROM `{t}` j WHERE {claimable} ORDER BY created_at ASC, CAST(id AS BINARY) ASC LIMIT {CLAIM_CANDIDATES}"
        );
        let candidates: Vec<String> = sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(now)
            .bind(stale)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error(&what, e))?;
        let lock = format!("SELECT {JOB_COLUMNS} FROM `{t}` j WHERE id = ? AND {claimable} FOR UPDATE SKIP LOCKED");
        for id in candidates {
            let claimed = self
                .transact(&what, async |conn| {
                    let row = sqlx::query(AssertSqlSafe(lock.as_str()))
                        .bind(&id)
                        .bind(now)
                        .bind(stale)
                        .fetch_optional(&mut *conn)
                        .await
                        .map_err(|e| db_error(&what, e))?;
                    let Some(row) = row else { return Ok((false, None)) };
                    let mut job = job_from_row::<MySql>(&row)?;
                    job.claim(worker_id, now);
                    self.put_job(conn, &job).await?;
                    Ok((true, Some(job)))
                })
                .await?;
            if claimed.is_some() {
                return Ok(claimed);
            }
        }
        Ok(None)
    }

    async fn try_save_claimed_run(&self, lease: &JobLease, write: RunWrite<'_>, now: i64) -> DbResult<bool> {
        let what = format!("cannot write run {}", lease.job_id);
        self.transact(&what, async |conn| {
            // The job's row stays locked until commit: no claim, cancel or sweep comes between
            // the lease check and the writes.
            let Some(mut job) = self.lock_job(conn, &lease.job_id).await? else { return Ok((false, false)) };
            if !job.hold(&lease.worker_id, lease.attempt, now) {
                return Ok((false, false));
            }
            self.put_job(conn, &job).await?;
            self.write_session(conn, write.session, write.state).await?;
            self.write_run(conn, write.run, &write.session.session_id, write.user_id).await?;
            Ok((true, true))
        })
        .await
    }

    async fn try_append_events(
        &self,
        job_id: &str,
        worker_id: &str,
        attempt: i64,
        events: &[StoredEvent],
    ) -> DbResult<bool> {
        let t = self.tables().clone();
        let what = format!("cannot log the events of run {job_id}");
        self.transact(&what, async |conn| {
            // A shared lock: a claim or cancel (which lock the row for update) waits for the
            // append, and the check holds until commit.
            let sql = format!("SELECT {JOB_COLUMNS} FROM `{}` WHERE id = ? LOCK IN SHARE MODE", t.jobs);
            let row = sqlx::query(AssertSqlSafe(sql))
                .bind(job_id)
                .fetch_optional(&mut *conn)
                .await
                .map_err(|e| db_error(&format!("cannot check the lease on job {job_id}"), e))?;
            match row.as_ref().map(job_from_row::<MySql>).transpose()? {
                Some(job) if job.held_by(worker_id, attempt) => {}
                _ => return Ok((false, false)),
            }
            for chunk in events.chunks(1000) {
                let rows = vec!["(?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ");
                let sql = format!(
                    "INSERT INTO `{}` (run_id, event_index, attempt, event, data, created_at) VALUES {rows}",
                    t.events
                );
                let mut q = sqlx::query(AssertSqlSafe(sql));
                for e in chunk {
                    q = q
                        .bind(job_id)
                        .bind(e.event_index)
                        .bind(e.attempt)
                        .bind(&e.event)
                        .bind(&e.data)
                        .bind(e.created_at);
                }
                match q.execute(&mut *conn).await {
                    Ok(_) => {}
                    Err(e) if error_number(&e) == Some(super::code::DUPLICATE_KEY) => {
                        return Err(DbError::new(
                            DbErrorKind::Conflict,
                            format!("an event of run {job_id} is already in the log"),
                        ));
                    }
                    Err(e) => return Err(db_error(&what, e)),
                }
            }
            Ok((true, true))
        })
        .await
    }

    async fn job_ids(&self, filter: &str, args: &[i64]) -> DbResult<Vec<String>> {
        let sql = format!("SELECT id FROM `{}` WHERE {filter}", self.tables().jobs);
        let mut q = sqlx::query(AssertSqlSafe(sql));
        for a in args {
            q = q.bind(*a);
        }
        let rows = q.fetch_all(self.pool()).await.map_err(|e| db_error("cannot list jobs", e))?;
        rows.iter()
            .map(|r| r.try_get_unchecked::<String, _>(0).map_err(|e| db_error("cannot read a job id", e)))
            .collect()
    }
}

#[async_trait]
impl JobStore for MySqlDb {
    async fn enqueue_job(&self, job: &Job, max_depth: usize) -> DbResult<Enqueued> {
        // An empty key is no key (as in Agno).
        let key = job.idempotency_key.as_deref().filter(|k| !k.is_empty());
        with_retries(|| self.try_enqueue(job, key, max_depth)).await
    }

    async fn claim_job(&self, worker_id: &str, lock_grace_seconds: i64, now: i64) -> DbResult<Option<Job>> {
        with_retries(|| self.try_claim(worker_id, lock_grace_seconds, now)).await
    }

    async fn heartbeat_jobs(&self, worker_id: &str, job_ids: &[String], now: i64) -> DbResult<u64> {
        let mut held = 0;
        for id in job_ids {
            held += u64::from(self.update_job(id, |j| j.heartbeat(worker_id, now).then_some(())).await?.is_some());
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
        let done = self.update_job(job_id, |j| j.finish(worker_id, attempt, outcome, now).then_some(())).await?;
        Ok(done.is_some())
    }

    async fn sweep_jobs(&self, lock_grace_seconds: i64, now: i64, error: &str) -> DbResult<Vec<Job>> {
        let stale = now - lock_grace_seconds;
        let ids = self
            .job_ids(
                "locked_at <= ? AND ((status = 'cancelled' AND locked_by IS NOT NULL) \
                 OR (status = 'running' AND attempt >= max_attempts))",
                &[stale],
            )
            .await?;
        let mut swept = Vec::new();
        for id in ids {
            // Decided again under the row lock: a heartbeat may have come in since the scan.
            if let Some(((), job)) = self.update_job(&id, |j| j.sweep(stale, now, error).then_some(())).await? {
                swept.push(job);
            }
        }
        Ok(swept)
    }

    async fn cancel_job(&self, job_id: &str, now: i64) -> DbResult<Option<JobStatus>> {
        Ok(self.update_job(job_id, |j| j.cancel(now)).await?.map(|(before, _)| before))
    }

    async fn holds_job(&self, job_id: &str, worker_id: &str, attempt: i64, now: i64) -> DbResult<bool> {
        Ok(self.update_job(job_id, |j| j.hold(worker_id, attempt, now).then_some(())).await?.is_some())
    }

    async fn save_claimed_run(&self, lease: &JobLease, write: RunWrite<'_>, now: i64) -> DbResult<bool> {
        with_retries(|| self.try_save_claimed_run(lease, write, now)).await
    }

    async fn cancelled_jobs(&self, worker_id: &str) -> DbResult<Vec<String>> {
        jobs::cancelled_jobs(self, worker_id).await
    }

    async fn append_events(
        &self,
        job_id: &str,
        worker_id: &str,
        attempt: i64,
        events: &[StoredEvent],
    ) -> DbResult<bool> {
        with_retries(|| self.try_append_events(job_id, worker_id, attempt, events)).await
    }

    async fn read_events(&self, run_id: &str, after: i64, limit: usize) -> DbResult<Vec<StoredEvent>> {
        jobs::read_events(self, run_id, after, limit).await
    }

    async fn last_event_index(&self, run_id: &str) -> DbResult<Option<i64>> {
        jobs::last_event_index(self, run_id).await
    }

    async fn complete_swept_job(&self, job_id: &str, now: i64) -> DbResult<bool> {
        Ok(self.update_job(job_id, |j| j.complete_swept(now).then_some(())).await?.is_some())
    }

    async fn cleanup_jobs(&self, before: i64) -> DbResult<u64> {
        let t = self.tables().clone();
        let ended = "status IN ('completed', 'failed', 'cancelled') AND locked_by IS NULL AND completed_at <= ?";
        let ids = self.job_ids(ended, &[before]).await?;
        let mut removed = 0;
        for chunk in ids.chunks(CLEANUP_CHUNK) {
            let n = with_retries(|| {
                self.transact("cannot delete ended jobs", async |conn| {
                    // Deleted only if still ended: a job requeued since the scan is left alone.
                    let sql = format!("DELETE FROM `{}` WHERE id IN ({}) AND {ended}", t.jobs, marks(chunk.len()));
                    let mut q = sqlx::query(AssertSqlSafe(sql));
                    for id in chunk {
                        q = q.bind(id);
                    }
                    let done =
                        q.bind(before).execute(&mut *conn).await.map_err(|e| db_error("cannot delete jobs", e))?;
                    let sql = format!(
                        "DELETE FROM `{}` WHERE run_id IN ({}) AND run_id NOT IN (SELECT id FROM `{}`)",
                        t.events,
                        marks(chunk.len()),
                        t.jobs
                    );
                    let mut q = sqlx::query(AssertSqlSafe(sql));
                    for id in chunk {
                        q = q.bind(id);
                    }
                    q.execute(&mut *conn).await.map_err(|e| db_error("cannot delete event logs", e))?;
                    Ok((true, done.rows_affected()))
                })
            })
            .await?;
            removed += n;
        }
        Ok(removed)
    }

    async fn continue_job(&self, job_id: &str, continuation: &Value, now: i64) -> DbResult<Continued> {
        let what = format!("cannot continue job {job_id}");
        with_retries(|| {
            self.transact(&what, async |conn| {
                let Some(mut job) = self.lock_job(conn, job_id).await? else {
                    return Ok((false, Continued::Conflict(None)));
                };
                let outcome = job.continue_with(continuation, now);
                let queued = matches!(outcome, Continued::Queued(_));
                if queued {
                    self.put_job(conn, &job).await?;
                }
                Ok((queued, outcome))
            })
        })
        .await
    }

    async fn requeue_job(&self, job_id: &str, now: i64) -> DbResult<bool> {
        Ok(self.update_job(job_id, |j| j.requeue(now).then_some(())).await?.is_some())
    }

    async fn get_job(&self, job_id: &str, user_id: Option<&str>) -> DbResult<Option<Job>> {
        jobs::get_job(self, job_id, user_id).await
    }

    async fn list_jobs(
        &self,
        status: Option<JobStatus>,
        limit: Option<usize>,
        page: Option<usize>,
    ) -> DbResult<(Vec<Job>, u64)> {
        jobs::list_jobs(self, status, limit, page).await
    }
}
