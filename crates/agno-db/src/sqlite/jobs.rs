//! The durable job queue in SQLite (`agno_jobs`, shaped as Agno 3.x's SQLAlchemy machinery shapes
//! it on SQLite). Dedup is the two partial unique indexes on the idempotency key (one per user,
//! one for anonymous jobs): an insert that loses to them does nothing and the original row is
//! read back. A claim is one conditional `UPDATE ... RETURNING`; every later write of a worker is
//! fenced by its worker id, its attempt and the `running` status.

use crate::sql::SqlAdapter;
use crate::sql::group_commit;
use agno_core::{AgentSession, DbError, DbErrorKind, DbResult, Enqueued, Job, PendingRun, RunOutput};
use sqlx::{AssertSqlSafe, Sqlite};

use super::{SqliteState, db_error};
use crate::codec::to_json_text;
use crate::sql::jobs::{JOB_COLUMNS, job_cells, job_from_row, job_placeholders};

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

impl SqliteState {
    /// The statements of an enqueue on `conn` (the caller's transaction, `BEGIN IMMEDIATE`): the
    /// depth count (at most `max_depth` queued rows counted), the pending session and run, the
    /// job. The answer, and whether the transaction keeps what it wrote (false: the job was not
    /// inserted, and its pending session and run are to be rolled back).
    async fn enqueue_once(
        &self,
        conn: &mut sqlx::SqliteConnection,
        job: &Job,
        max_depth: usize,
        pending: Option<PendingRun<'_>>,
    ) -> DbResult<(DbResult<Enqueued>, bool)> {
        let t = &self.tables().jobs;
        // An empty key is no key (as in Agno): the unique indexes would otherwise cover ''.
        let key = job.idempotency_key.as_deref().filter(|k| !k.is_empty());
        if max_depth > 0 {
            // Counting at most `max_depth` rows: the cost does not grow with a backlog past it.
            let sql = format!("SELECT COUNT(*) FROM (SELECT 1 FROM {t} WHERE status = 'queued' LIMIT ?)");
            let depth = i64::try_from(max_depth).unwrap_or(i64::MAX);
            let queued: Vec<i64> = sqlx::query_scalar(AssertSqlSafe(sql))
                .bind(depth)
                .fetch_all(&mut *conn)
                .await
                .map_err(|e| db_error("cannot count queued jobs", e))?;
            if queued.first().copied().unwrap_or(0) >= depth {
                // A resubmission of an accepted job is answered with it even when the queue is full.
                let existing = self.job_by_key(&mut *conn, key, job.user_id.as_deref()).await?;
                return Ok((Ok(existing.map_or(Enqueued::QueueFull, Enqueued::Duplicate)), true));
            }
        }
        if let Some(pending) = pending {
            crate::sql::jobs::put_pending(self, &mut *conn, job, pending).await?;
        }
        let values = job_placeholders::<Sqlite>();
        let insert =
            format!("INSERT INTO {t} ({JOB_COLUMNS}) VALUES ({values}) ON CONFLICT DO NOTHING RETURNING {JOB_COLUMNS}");
        let inserted =
            crate::sql::bind_all::<Sqlite>(sqlx::query(AssertSqlSafe(insert)), job_cells::<Sqlite>(job, key))?
                .fetch_all(&mut *conn)
                .await
                .map_err(|e| db_error(&format!("cannot enqueue job {}", job.id), e))?;
        if let Some(row) = inserted.first() {
            return Ok((job_from_row::<Sqlite>(row).map(Enqueued::Accepted), true));
        }
        // Nothing inserted: a unique index decided. The key's original job, else the id is taken.
        let answer = match self.job_by_key(&mut *conn, key, job.user_id.as_deref()).await? {
            Some(existing) => Ok(Enqueued::Duplicate(existing)),
            None => Err(DbError::new(DbErrorKind::Conflict, format!("job {} already exists", job.id))),
        };
        Ok((answer, false))
    }

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

#[async_trait::async_trait]
impl crate::sql::jobs::SqlQueue for SqliteState {
    /// In the write turn; with other writes of the turn in one transaction when they wait
    /// (`sql::group_commit`). The depth count and the insert hold the write lock together
    /// (`BEGIN IMMEDIATE`), also against other processes sharing the file.
    async fn enqueue(&self, job: &Job, max_depth: usize, pending: Option<PendingRun<'_>>) -> DbResult<Enqueued> {
        let _payload = to_json_text(&job.payload)?;
        let alone = async |in_turn: bool| {
            let _turn = if in_turn { None } else { Some(self.write_turn().await) };
            let mut tx =
                self.pool().begin_with("BEGIN IMMEDIATE").await.map_err(|e| db_error("cannot begin an enqueue", e))?;
            let (enqueued, keep) = match self.enqueue_once(&mut tx, job, max_depth, pending).await {
                Ok(done) => done,
                Err(e) => {
                    let _ = tx.rollback().await;
                    return Err(e);
                }
            };
            // A job not inserted keeps nothing of its transaction (the pending session and run).
            let end = if keep { tx.commit().await } else { tx.rollback().await };
            end.map_err(|e| db_error(&format!("cannot enqueue job {}", job.id), e))?;
            enqueued
        };
        let owned = || (job.clone(), pending.map(|p| (p.session.clone(), p.run.clone())), max_depth);
        group_commit::submit(self, owned, |db, conn, owned| Box::pin(enqueue_in_group(db, conn, owned)), alone).await
    }

    async fn claim_batch(&self, worker_id: &str, limit: usize, stale_before: i64, now: i64) -> DbResult<Vec<Job>> {
        let t = &self.tables().jobs;
        // One live run per session, in order: a job waits while another job of its session is
        // running or paused, or an older one of its session is still queued.
        let session_free = format!(
            "NOT EXISTS (SELECT 1 FROM {t} o WHERE o.session_id = j.session_id AND o.id <> j.id \
             AND (o.status IN ('running', 'paused') OR (o.status = 'queued' AND (o.created_at < j.created_at \
             OR (o.created_at = j.created_at AND o.id < j.id)))))"
        );
        // Queued jobs and stale running ones (a dead worker's) are picked apart, each walking the
        // `(status, available_at)` index in claim order and stopping at the limit; one ORDER BY
        // over `status = 'queued' OR ...` sorted every queued row per claim, so the claim cost
        // grew with the backlog.
        let branch = |which: &str| {
            format!(
                "SELECT * FROM (SELECT id, available_at, created_at FROM {t} j WHERE {which} AND available_at <= ? \
                 AND deployment_id IS NULL AND {session_free} ORDER BY available_at, created_at, id LIMIT ?)"
            )
        };
        // One statement: SQLite's single writer makes the pick and the claim atomic.
        let sql = format!(
            "UPDATE {t} SET status = 'running', locked_by = ?, locked_at = ?, attempt = attempt + 1, updated_at = ? \
             WHERE id IN (SELECT id FROM ({} UNION ALL {}) ORDER BY available_at, created_at, id LIMIT ?) \
             RETURNING {JOB_COLUMNS}",
            branch("status = 'queued'"),
            branch("status = 'running' AND locked_at <= ? AND attempt < max_attempts"),
        );
        let (stale, limit) = (stale_before, i64::try_from(limit).unwrap_or(i64::MAX));
        let worker = worker_id.to_owned();
        let alone = async |in_turn: bool| {
            let _turn = if in_turn { None } else { Some(self.write_turn().await) };
            let mut conn = self.pool().acquire().await.map_err(|e| db_error("cannot claim jobs", e))?;
            claim_on(&mut conn, &sql, &worker, now, limit, stale).await
        };
        let owned = || (sql.clone(), worker.clone(), now, limit, stale);
        group_commit::submit(
            self,
            owned,
            |_, conn, (sql, worker, now, limit, stale)| Box::pin(claim_on(conn, sql, worker, *now, *limit, *stale)),
            alone,
        )
        .await
    }
}

/// An enqueue (its job, its pending session and run, the depth bound) as a group commit's leader
/// runs it: committed with the batch when the job is accepted or refused without a write (a full
/// queue).
///
/// # Errors
/// A job not inserted, whose pending session and run are to be taken back: the batch goes back,
/// and the enqueue is answered alone.
async fn enqueue_in_group(
    db: &SqliteState,
    conn: &mut sqlx::SqliteConnection,
    (job, pending, max_depth): &(Job, Option<(AgentSession, RunOutput)>, usize),
) -> DbResult<Enqueued> {
    let pending = pending.as_ref().map(|(session, run)| PendingRun { session, run });
    match db.enqueue_once(conn, job, *max_depth, pending).await? {
        (Ok(enqueued), true) => Ok(enqueued),
        _ => Err(DbError::new(DbErrorKind::Conflict, format!("job {} was not inserted", job.id))),
    }
}

/// Runs the claim statement `sql` (`SqlQueue::claim_batch`) on `conn`: the jobs claimed, oldest
/// first.
async fn claim_on(
    conn: &mut sqlx::SqliteConnection,
    sql: &str,
    worker: &str,
    now: i64,
    limit: i64,
    stale: i64,
) -> DbResult<Vec<Job>> {
    let rows = sqlx::query(AssertSqlSafe(sql))
        .bind(worker)
        .bind(now)
        .bind(now)
        .bind(now)
        .bind(limit)
        .bind(stale)
        .bind(now)
        .bind(limit)
        .bind(limit)
        .fetch_all(conn)
        .await
        .map_err(|e| db_error("cannot claim jobs", e))?;
    let jobs = rows.iter().map(job_from_row::<Sqlite>).collect::<DbResult<Vec<_>>>()?;
    // RETURNING keeps no order.
    Ok(crate::sql::jobs::oldest_first(jobs))
}
