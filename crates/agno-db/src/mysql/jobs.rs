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

use crate::sql::SqlAdapter;
use agno_core::{DbError, DbErrorKind, DbResult, Enqueued, Job, PendingRun};
use sqlx::{AssertSqlSafe, Connection, MySql, MySqlConnection};

use super::{MySqlState, db_error, error_number};
use crate::sql::jobs::{JOB_COLUMNS, job_cells, job_from_row, job_placeholders};

/// Claimable jobs a claim tries, oldest first, before it gives up for this poll.
const CLAIM_CANDIDATES: usize = 16;
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

impl MySqlState {
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

    /// Writes every changeable column of `job` (its row locked on `conn`).
    async fn put_job(&self, conn: &mut MySqlConnection, job: &Job) -> DbResult<()> {
        let (sql, values) = crate::sql::job_transitions::put(self, job)?;
        <MySql as crate::sql::Dialect>::execute_on(conn, &sql, values)
            .await
            .map_err(|e| db_error(&format!("cannot write job {}", job.id), e))?;
        Ok(())
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

    async fn try_enqueue(
        &self,
        job: &Job,
        key: Option<&str>,
        max_depth: usize,
        pending: Option<PendingRun<'_>>,
    ) -> DbResult<Enqueued> {
        let t = self.tables().clone();
        let what = format!("cannot enqueue job {}", job.id);
        let inserted = self
            .transact(&what, async |conn| {
                if let Some(key) = key
                    && let Some(existing) = self.job_by_key(conn, key, job.user_id.as_deref()).await?
                {
                    return Ok((false, Some(Enqueued::Duplicate(existing))));
                }
                // The session and run first: the depth turn below is then held only for the
                // count and the insert.
                if let Some(pending) = pending {
                    crate::sql::jobs::put_pending(self, conn, job, pending).await?;
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

    async fn try_claim(&self, worker_id: &str, stale: i64, now: i64) -> DbResult<Option<Job>> {
        let t = &self.tables().jobs;
        let what = format!("cannot claim a job for worker {worker_id}");
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
            "SELECT id FROM `{t}` j WHERE {claimable} ORDER BY available_at ASC, created_at ASC, CAST(id AS BINARY) ASC LIMIT {CLAIM_CANDIDATES}"
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
}

#[async_trait::async_trait]
impl crate::sql::jobs::SqlQueue for MySqlState {
    async fn enqueue(&self, job: &Job, max_depth: usize, pending: Option<PendingRun<'_>>) -> DbResult<Enqueued> {
        // An empty key is no key (as in Agno).
        let key = job.idempotency_key.as_deref().filter(|k| !k.is_empty());
        crate::sql::retrying::<MySql, _, _, _>(|| self.try_enqueue(job, key, max_depth, pending)).await
    }

    async fn claim_batch(&self, worker_id: &str, limit: usize, stale_before: i64, now: i64) -> DbResult<Vec<Job>> {
        let mut claimed = Vec::new();
        while claimed.len() < limit {
            let one = crate::sql::retrying::<MySql, _, _, _>(|| self.try_claim(worker_id, stale_before, now));
            match one.await? {
                Some(job) => claimed.push(job),
                None => break,
            }
        }
        Ok(claimed)
    }
}
