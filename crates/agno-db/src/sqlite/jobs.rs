//! The durable job queue in SQLite (`agno_jobs`, shaped as Agno 3.x's SQLAlchemy machinery shapes
//! it on SQLite). Dedup is the two partial unique indexes on the idempotency key (one per user,
//! one for anonymous jobs): an insert that loses to them does nothing and the original row is
//! read back. A claim is one conditional `UPDATE ... RETURNING`; every later write of a worker is
//! fenced by its worker id, its attempt and the `running` status.

use agno_core::{
    Continued, DbError, DbErrorKind, DbResult, Enqueued, Job, JobLease, JobOutcome, JobStatus, JobStore, RunWrite,
    StoredEvent,
};
use async_trait::async_trait;
use serde_json::Value;
use sqlx::{AssertSqlSafe, Sqlite};

use super::{SqliteDb, db_error};
use crate::codec::to_json_text;
use crate::sql::jobs::{self, JOB_COLUMNS, job_cells, job_from_row, job_placeholders};

/// The jobs table as Agno 3.1's SQLite adapter creates a table from `JOBS_TABLE_SCHEMA`
/// (columns, the single-column and composite indexes, the two partial unique indexes).
pub(crate) fn jobs_ddl(t: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {t} (\n\tid VARCHAR NOT NULL, \n\tcomponent_type VARCHAR NOT NULL, \n\tjob_type VARCHAR NOT NULL, \n\tdeployment_id VARCHAR, \n\tcomponent_id VARCHAR NOT NULL, \n\tsession_id VARCHAR NOT NULL, \n\tuser_id VARCHAR, \n\tpayload JSON NOT NULL, \n\tstatus VARCHAR NOT NULL, \n\tattempt BIGINT NOT NULL, \n\tmax_attempts BIGINT NOT NULL, \n\tidempotency_key VARCHAR, \n\tavailable_at BIGINT NOT NULL, \n\tlocked_by VARCHAR, \n\tlocked_at BIGINT, \n\terror TEXT, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tcompleted_at BIGINT, \n\tPRIMARY KEY (id)\n)"
    )];
    for col in ["status", "created_at", "session_id", "component_id"] {
        ddl.push(format!("CREATE INDEX IF NOT EXISTS idx_{t}_{col} ON {t} ({col})"));
    }
    ddl.push(format!("CREATE INDEX IF NOT EXISTS idx_{t}_status_available_at ON {t} (status, available_at)"));
    ddl.push(format!(
        "CREATE UNIQUE INDEX IF NOT EXISTS {t}_uq_jobs_idempotency_key ON {t} (idempotency_key, user_id) \
         WHERE idempotency_key IS NOT NULL"
    ));
    ddl.push(format!(
        "CREATE UNIQUE INDEX IF NOT EXISTS {t}_uq_jobs_idempotency_key_anon ON {t} (idempotency_key) \
         WHERE idempotency_key IS NOT NULL AND user_id IS NULL"
    ));
    ddl
}

/// The durable event log of background runs: one row per event, keyed by run and index.
pub(crate) fn events_ddl(t: &str) -> Vec<String> {
    vec![format!(
        "CREATE TABLE IF NOT EXISTS {t} (run_id VARCHAR NOT NULL, event_index BIGINT NOT NULL, \
         attempt BIGINT NOT NULL, event VARCHAR NOT NULL, data TEXT NOT NULL, created_at BIGINT NOT NULL, \
         PRIMARY KEY (run_id, event_index))"
    )]
}

/// The predicate a worker writing for attempt `attempt` must still satisfy (three binds: id,
/// worker, attempt): the job runs under its claim, or was cancelled while it ran.
const HOLDS: &str = "id = ? AND locked_by = ? AND attempt = ? AND status IN ('running', 'cancelled')";

impl SqliteDb {
    /// The job holding idempotency key `key` (if any) for `user_id` (`None`: the anonymous
    /// bucket), read in `conn`.
    async fn job_by_key(
        &self,
        conn: &mut sqlx::SqliteConnection,
        key: Option<&str>,
        user_id: Option<&str>,
    ) -> DbResult<Option<Job>> {
        let Some(key) = key else { return Ok(None) };
        let sql = format!(
            "SELECT {JOB_COLUMNS} FROM {} WHERE idempotency_key = ? AND user_id IS ? AND idempotency_key IS NOT NULL",
            self.tables().jobs
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(key)
            .bind(user_id)
            .fetch_all(conn)
            .await
            .map_err(|e| db_error("cannot read the job of an idempotency key", e))?;
        rows.first().map(job_from_row::<Sqlite>).transpose()
    }
}

#[async_trait]
impl JobStore for SqliteDb {
    async fn enqueue_job(&self, job: &Job, max_depth: usize) -> DbResult<Enqueued> {
        let t = &self.tables().jobs;
        // An empty key is no key (as in Agno): the unique indexes would otherwise cover ''.
        let key = job.idempotency_key.as_deref().filter(|k| !k.is_empty());
        let values = job_placeholders::<Sqlite>();
        let insert =
            format!("INSERT INTO {t} ({JOB_COLUMNS}) VALUES ({values}) ON CONFLICT DO NOTHING RETURNING {JOB_COLUMNS}");
        let _payload = to_json_text(&job.payload)?;
        let _turn = self.write_turn().await;
        // IMMEDIATE: the depth count and the insert hold the write lock together, also against
        // other processes sharing the file.
        let mut tx =
            self.pool().begin_with("BEGIN IMMEDIATE").await.map_err(|e| db_error("cannot begin an enqueue", e))?;
        if max_depth > 0 {
            let sql = format!("SELECT COUNT(*) FROM {t} WHERE status = 'queued'");
            let queued: Vec<i64> = sqlx::query_scalar(AssertSqlSafe(sql))
                .fetch_all(&mut *tx)
                .await
                .map_err(|e| db_error("cannot count queued jobs", e))?;
            if queued.first().copied().unwrap_or(0) >= i64::try_from(max_depth).unwrap_or(i64::MAX) {
                // A resubmission of an accepted job is answered with it even when the queue is full.
                let existing = self.job_by_key(&mut tx, key, job.user_id.as_deref()).await?;
                tx.commit().await.map_err(|e| db_error("cannot end an enqueue", e))?;
                return Ok(existing.map_or(Enqueued::QueueFull, Enqueued::Duplicate));
            }
        }
        let inserted =
            crate::sql::bind_all::<Sqlite>(sqlx::query(AssertSqlSafe(insert)), job_cells::<Sqlite>(job, key))?
                .fetch_all(&mut *tx)
                .await
                .map_err(|e| db_error(&format!("cannot enqueue job {}", job.id), e))?;
        // Nothing inserted: a unique index decided. The key's original job, else the id is taken.
        let existing =
            if inserted.is_empty() { self.job_by_key(&mut tx, key, job.user_id.as_deref()).await? } else { None };
        tx.commit().await.map_err(|e| db_error(&format!("cannot enqueue job {}", job.id), e))?;
        if let Some(row) = inserted.first() {
            return Ok(Enqueued::Accepted(job_from_row::<Sqlite>(row)?));
        }
        existing
            .map(Enqueued::Duplicate)
            .ok_or_else(|| DbError::new(DbErrorKind::Conflict, format!("job {} already exists", job.id)))
    }

    async fn claim_job(&self, worker_id: &str, lock_grace_seconds: i64, now: i64) -> DbResult<Option<Job>> {
        let t = &self.tables().jobs;
        // One live run per session, in order: a job waits while another job of its session is
        // running or paused, or an older one of its session is still queued.
        let claimable = format!(
            "available_at <= ? AND deployment_id IS NULL AND (status = 'queued' \
             OR (status = 'running' AND locked_at <= ? AND attempt < max_attempts)) \
             AND NOT EXISTS (SELECT 1 FROM {t} o WHERE o.session_id = {t}.session_id AND o.id <> {t}.id \
             AND (o.status IN ('running', 'paused') OR (o.status = 'queued' AND (o.created_at < {t}.created_at \
             OR (o.created_at = {t}.created_at AND o.id < {t}.id)))))"
        );
        // One statement: SQLite's single writer makes the pick and the claim atomic.
        let sql = format!(
            "UPDATE {t} SET status = 'running', locked_by = ?, locked_at = ?, attempt = attempt + 1, updated_at = ? \
             WHERE id = (SELECT id FROM {t} WHERE {claimable} ORDER BY created_at, id LIMIT 1) AND {claimable} \
             RETURNING {JOB_COLUMNS}"
        );
        let stale = now - lock_grace_seconds;
        let _turn = self.write_turn().await;
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(worker_id)
            .bind(now)
            .bind(now)
            .bind(now)
            .bind(stale)
            .bind(now)
            .bind(stale)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot claim a job", e))?;
        rows.first().map(job_from_row::<Sqlite>).transpose()
    }

    async fn heartbeat_jobs(&self, worker_id: &str, job_ids: &[String], now: i64) -> DbResult<u64> {
        if job_ids.is_empty() {
            return Ok(0);
        }
        let marks = vec!["?"; job_ids.len()].join(", ");
        let sql = format!(
            "UPDATE {} SET locked_at = ? WHERE id IN ({marks}) AND locked_by = ? AND status = 'running'",
            self.tables().jobs
        );
        let _turn = self.write_turn().await;
        let mut q = sqlx::query(AssertSqlSafe(sql)).bind(now);
        for id in job_ids {
            q = q.bind(id);
        }
        let done = q
            .bind(worker_id)
            .execute(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot refresh the leases of {worker_id}"), e))?;
        Ok(done.rows_affected())
    }

    async fn finish_job(
        &self,
        job_id: &str,
        worker_id: &str,
        attempt: i64,
        outcome: &JobOutcome,
        now: i64,
    ) -> DbResult<bool> {
        let t = &self.tables().jobs;
        // A job cancelled while it ran stays cancelled whatever the attempt's outcome; SET
        // expressions read the row as it was (`status`, `attempt < max_attempts` are the claim's).
        let release = "locked_by = NULL, locked_at = NULL, updated_at = ?, \
                       error = CASE WHEN status = 'cancelled' THEN error ELSE ? END";
        let _turn = self.write_turn().await;
        let q = match outcome {
            JobOutcome::Retry { error, available_at } => sqlx::query(AssertSqlSafe(format!(
                "UPDATE {t} SET {release}, \
                 status = CASE WHEN status = 'cancelled' THEN status \
                 WHEN attempt < max_attempts THEN 'queued' ELSE 'failed' END, \
                 available_at = CASE WHEN status <> 'cancelled' AND attempt < max_attempts THEN ? \
                 ELSE available_at END, \
                 completed_at = CASE WHEN status = 'cancelled' OR attempt < max_attempts THEN completed_at \
                 ELSE ? END \
                 WHERE {HOLDS}"
            )))
            .bind(now)
            .bind(error.as_str())
            .bind(*available_at)
            .bind(now),
            JobOutcome::Settled(status, error) => sqlx::query(AssertSqlSafe(format!(
                "UPDATE {t} SET {release}, status = CASE WHEN status = 'cancelled' THEN status ELSE ? END, \
                 completed_at = CASE WHEN status = 'cancelled' THEN completed_at ELSE COALESCE(?, completed_at) END \
                 WHERE {HOLDS}"
            )))
            .bind(now)
            .bind(error.as_deref())
            .bind(status.as_str())
            .bind(status.is_terminal().then_some(now)),
        };
        let done = q
            .bind(job_id)
            .bind(worker_id)
            .bind(attempt)
            .execute(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot finish job {job_id}"), e))?;
        Ok(done.rows_affected() > 0)
    }

    async fn sweep_jobs(&self, lock_grace_seconds: i64, now: i64, error: &str) -> DbResult<Vec<Job>> {
        let t = &self.tables().jobs;
        let failed = format!(
            "UPDATE {t} SET status = 'failed', error = ?, locked_by = NULL, locked_at = NULL, completed_at = ?, \
             updated_at = ? WHERE status = 'running' AND locked_at <= ? AND attempt >= max_attempts \
             RETURNING {JOB_COLUMNS}"
        );
        let cancelled = format!(
            "UPDATE {t} SET locked_by = NULL, locked_at = NULL, updated_at = ? \
             WHERE status = 'cancelled' AND locked_by IS NOT NULL AND locked_at <= ? RETURNING {JOB_COLUMNS}"
        );
        let stale = now - lock_grace_seconds;
        let _turn = self.write_turn().await;
        let mut rows = sqlx::query(AssertSqlSafe(failed))
            .bind(error)
            .bind(now)
            .bind(now)
            .bind(stale)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot sweep abandoned jobs", e))?;
        rows.extend(
            sqlx::query(AssertSqlSafe(cancelled))
                .bind(now)
                .bind(stale)
                .fetch_all(self.pool())
                .await
                .map_err(|e| db_error("cannot sweep abandoned cancelled jobs", e))?,
        );
        rows.iter().map(job_from_row::<Sqlite>).collect()
    }

    async fn cancel_job(&self, job_id: &str, now: i64) -> DbResult<Option<JobStatus>> {
        let t = &self.tables().jobs;
        let _turn = self.write_turn().await;
        let mut tx =
            self.pool().begin_with("BEGIN IMMEDIATE").await.map_err(|e| db_error("cannot begin a cancel", e))?;
        let before: Option<String> = sqlx::query_scalar(AssertSqlSafe(format!("SELECT status FROM {t} WHERE id = ?")))
            .bind(job_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| db_error(&format!("cannot read job {job_id}"), e))?;
        let Some(before) = before
            .as_deref()
            .and_then(JobStatus::parse)
            .filter(|s| matches!(s, JobStatus::Queued | JobStatus::Paused | JobStatus::Running))
        else {
            // Ends the write transaction now rather than whenever the connection is next used.
            tx.rollback().await.map_err(|e| db_error(&format!("cannot cancel job {job_id}"), e))?;
            return Ok(None);
        };
        // A running job keeps its lease so its worker can record how the run ended.
        sqlx::query(AssertSqlSafe(format!(
            "UPDATE {t} SET status = 'cancelled', completed_at = ?, updated_at = ?, \
             locked_by = CASE WHEN status = 'running' THEN locked_by END, \
             locked_at = CASE WHEN status = 'running' THEN locked_at END WHERE id = ?"
        )))
        .bind(now)
        .bind(now)
        .bind(job_id)
        .execute(&mut *tx)
        .await
        .map_err(|e| db_error(&format!("cannot cancel job {job_id}"), e))?;
        tx.commit().await.map_err(|e| db_error(&format!("cannot cancel job {job_id}"), e))?;
        Ok(Some(before))
    }

    async fn holds_job(&self, job_id: &str, worker_id: &str, attempt: i64, now: i64) -> DbResult<bool> {
        let sql = format!(
            "UPDATE {} SET locked_at = CASE WHEN status = 'running' THEN ? ELSE locked_at END WHERE {HOLDS}",
            self.tables().jobs
        );
        let _turn = self.write_turn().await;
        let done = sqlx::query(AssertSqlSafe(sql))
            .bind(now)
            .bind(job_id)
            .bind(worker_id)
            .bind(attempt)
            .execute(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot check the lease on job {job_id}"), e))?;
        Ok(done.rows_affected() > 0)
    }

    async fn save_claimed_run(&self, lease: &JobLease, write: RunWrite<'_>, now: i64) -> DbResult<bool> {
        let job_id = &lease.job_id;
        let _turn = self.write_turn().await;
        // IMMEDIATE: the lease check and both writes hold the write lock together, so no claim,
        // cancel or sweep can come between them.
        let mut tx =
            self.pool().begin_with("BEGIN IMMEDIATE").await.map_err(|e| db_error("cannot begin a run write", e))?;
        let sql = format!(
            "UPDATE {} SET locked_at = CASE WHEN status = 'running' THEN ? ELSE locked_at END WHERE {HOLDS}",
            self.tables().jobs
        );
        let held = sqlx::query(AssertSqlSafe(sql))
            .bind(now)
            .bind(job_id)
            .bind(&lease.worker_id)
            .bind(lease.attempt)
            .execute(&mut *tx)
            .await
            .map_err(|e| db_error(&format!("cannot check the lease on job {job_id}"), e))?;
        let written = if held.rows_affected() == 0 {
            Ok(false)
        } else {
            match self.write_session(&mut tx, write.session, write.state).await {
                Ok(()) => {
                    let sid = &write.session.session_id;
                    self.write_run(&mut tx, write.run, sid, write.user_id).await.map(|_| true)
                }
                Err(e) => Err(e),
            }
        };
        match written {
            Ok(true) => {
                tx.commit().await.map_err(|e| db_error(&format!("cannot commit the write of run {job_id}"), e))?;
                Ok(true)
            }
            other => {
                tx.rollback().await.map_err(|e| db_error(&format!("cannot end the write of run {job_id}"), e))?;
                other
            }
        }
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
        let t = self.tables();
        let _turn = self.write_turn().await;
        // IMMEDIATE: the fence check and the insert hold the write lock together.
        let mut tx =
            self.pool().begin_with("BEGIN IMMEDIATE").await.map_err(|e| db_error("cannot begin an event write", e))?;
        let held: Option<i64> = sqlx::query_scalar(AssertSqlSafe(format!("SELECT 1 FROM {} WHERE {HOLDS}", t.jobs)))
            .bind(job_id)
            .bind(worker_id)
            .bind(attempt)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| db_error(&format!("cannot check the lease on job {job_id}"), e))?;
        if held.is_none() {
            tx.rollback().await.map_err(|e| db_error(&format!("cannot log the events of run {job_id}"), e))?;
            return Ok(false);
        }
        // SQLite allows 32,766 binds: 6 per row, so at most 5,000 rows per statement.
        for chunk in events.chunks(5000) {
            let rows = vec!["(?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ");
            let sql = format!(
                "INSERT INTO {} (run_id, event_index, attempt, event, data, created_at) VALUES {rows}",
                t.events
            );
            let mut q = sqlx::query(AssertSqlSafe(sql));
            for e in chunk {
                q = q.bind(job_id).bind(e.event_index).bind(e.attempt).bind(&e.event).bind(&e.data).bind(e.created_at);
            }
            q.execute(&mut *tx).await.map_err(|e| db_error(&format!("cannot log the events of run {job_id}"), e))?;
        }
        tx.commit().await.map_err(|e| db_error(&format!("cannot log the events of run {job_id}"), e))?;
        Ok(true)
    }

    async fn read_events(&self, run_id: &str, after: i64, limit: usize) -> DbResult<Vec<StoredEvent>> {
        jobs::read_events(self, run_id, after, limit).await
    }

    async fn last_event_index(&self, run_id: &str) -> DbResult<Option<i64>> {
        jobs::last_event_index(self, run_id).await
    }

    async fn complete_swept_job(&self, job_id: &str, now: i64) -> DbResult<bool> {
        let sql = format!(
            "UPDATE {} SET status = 'completed', error = NULL, updated_at = ? \
             WHERE id = ? AND status = 'failed' AND locked_by IS NULL",
            self.tables().jobs
        );
        let _turn = self.write_turn().await;
        let done = sqlx::query(AssertSqlSafe(sql))
            .bind(now)
            .bind(job_id)
            .execute(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot complete swept job {job_id}"), e))?;
        Ok(done.rows_affected() > 0)
    }

    async fn cleanup_jobs(&self, before: i64) -> DbResult<u64> {
        let t = self.tables();
        let old = format!(
            "SELECT id FROM {} WHERE status IN ('completed', 'failed', 'cancelled') AND locked_by IS NULL \
             AND completed_at IS NOT NULL AND completed_at <= ?",
            t.jobs
        );
        let _turn = self.write_turn().await;
        let mut tx =
            self.pool().begin_with("BEGIN IMMEDIATE").await.map_err(|e| db_error("cannot begin a cleanup", e))?;
        sqlx::query(AssertSqlSafe(format!("DELETE FROM {} WHERE run_id IN ({old})", t.events)))
            .bind(before)
            .execute(&mut *tx)
            .await
            .map_err(|e| db_error("cannot delete old event logs", e))?;
        let done = sqlx::query(AssertSqlSafe(format!("DELETE FROM {} WHERE id IN ({old})", t.jobs)))
            .bind(before)
            .execute(&mut *tx)
            .await
            .map_err(|e| db_error("cannot delete old jobs", e))?;
        tx.commit().await.map_err(|e| db_error("cannot clean up old jobs", e))?;
        Ok(done.rows_affected())
    }

    async fn continue_job(&self, job_id: &str, continuation: &Value, now: i64) -> DbResult<Continued> {
        let t = &self.tables().jobs;
        let _turn = self.write_turn().await;
        let mut tx =
            self.pool().begin_with("BEGIN IMMEDIATE").await.map_err(|e| db_error("cannot begin a continue", e))?;
        let rows = sqlx::query(AssertSqlSafe(format!("SELECT {JOB_COLUMNS} FROM {t} WHERE id = ?")))
            .bind(job_id)
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| db_error(&format!("cannot read job {job_id}"), e))?;
        let rollback = |e| db_error(&format!("cannot continue job {job_id}"), e);
        let Some(job) = rows.first().map(job_from_row::<Sqlite>).transpose()? else {
            tx.rollback().await.map_err(rollback)?;
            return Ok(Continued::Conflict(None));
        };
        match job.status {
            JobStatus::Paused => {}
            JobStatus::Queued | JobStatus::Running => {
                tx.rollback().await.map_err(rollback)?;
                return Ok(Continued::Attach(job));
            }
            _ => {
                tx.rollback().await.map_err(rollback)?;
                return Ok(Continued::Conflict(Some(job)));
            }
        }
        let payload = job.continued_payload(continuation);
        let rows = sqlx::query(AssertSqlSafe(format!(
            "UPDATE {t} SET status = 'queued', payload = ?, max_attempts = attempt + 1, available_at = ?, \
             locked_by = NULL, locked_at = NULL, completed_at = NULL, updated_at = ? \
             WHERE id = ? AND status = 'paused' RETURNING {JOB_COLUMNS}"
        )))
        .bind(to_json_text(&payload)?)
        .bind(now)
        .bind(now)
        .bind(job_id)
        .fetch_all(&mut *tx)
        .await
        .map_err(|e| db_error(&format!("cannot continue job {job_id}"), e))?;
        tx.commit().await.map_err(|e| db_error(&format!("cannot continue job {job_id}"), e))?;
        match rows.first() {
            Some(row) => Ok(Continued::Queued(job_from_row::<Sqlite>(row)?)),
            None => Ok(Continued::Conflict(Some(job))),
        }
    }

    async fn requeue_job(&self, job_id: &str, now: i64) -> DbResult<bool> {
        let sql = format!(
            "UPDATE {} SET status = 'queued', max_attempts = attempt + MAX(max_attempts, 1), available_at = ?, \
             completed_at = NULL, updated_at = ?, locked_by = NULL, locked_at = NULL \
             WHERE id = ? AND status IN ('failed', 'cancelled')",
            self.tables().jobs
        );
        let _turn = self.write_turn().await;
        let done = sqlx::query(AssertSqlSafe(sql))
            .bind(now)
            .bind(now)
            .bind(job_id)
            .execute(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot requeue job {job_id}"), e))?;
        Ok(done.rows_affected() > 0)
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
