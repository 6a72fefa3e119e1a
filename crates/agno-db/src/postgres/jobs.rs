//! The durable job queue in PostgreSQL (`agno_jobs`, as Python Agno 3.1's `PostgresDb` shapes
//! it): a JSONB payload, lowercase text statuses, idempotency keys unique per user through two
//! partial unique indexes. Enqueue dedup is decided by those indexes (`INSERT ... ON CONFLICT DO
//! NOTHING`, then the winner is read back); a claim is one `UPDATE ... WHERE id = (SELECT ...
//! FOR UPDATE SKIP LOCKED) RETURNING`; every write of a worker is fenced by
//! `locked_by`, `attempt` and `status = 'running'`. A successful enqueue (and an operator
//! requeue) sends a notification on [`PostgresDb::jobs_channel`] in the same transaction.

use crate::sql::SqlAdapter;
use agno_core::{
    DbError, DbErrorKind, DbResult, Enqueued, Job, JobLease, JobSignal, JobStatus, PendingRun, StoredEvent,
};
use sqlx::{AssertSqlSafe, PgConnection, Postgres, Row};

use super::schedules::to_i64;
use super::{PostgresDb, PostgresState, db_error};
use crate::sql::jobs::{JOB_COLUMNS, job_cells, job_from_row, job_placeholders};

/// Longest channel name PostgreSQL accepts (`NAMEDATALEN - 1`).
const MAX_CHANNEL_BYTES: usize = 63;

/// Longest notification payload sent; a longer job id is announced with an empty payload
/// (PostgreSQL refuses payloads of 8000 bytes or more).
const MAX_PAYLOAD_BYTES: usize = 7_999;

/// The predicate a worker writing for its attempt must satisfy (job id, worker and attempt bound
/// from `$first`): the job runs under its claim, or was cancelled while it ran.
pub(super) fn holds(first: usize) -> String {
    let [id, worker, attempt] = [first, first + 1, first + 2];
    format!("id = ${id} AND locked_by = ${worker} AND attempt = ${attempt} AND status IN ('running', 'cancelled')")
}

/// A notification payload, or an empty one when it would be too long for PostgreSQL.
fn signal(prefix: &str, id: &str) -> String {
    let payload = format!("{prefix}{id}");
    if payload.len() <= MAX_PAYLOAD_BYTES { payload } else { String::new() }
}

impl PostgresDb {
    /// Suffix of the notification channel of the job queue: `<schema>_agno_jobs` (e.g.
    /// `ai_agno_jobs`; cut to PostgreSQL's 63-byte limit), as [`PostgresDb::jobs_channel`] gives
    /// it. Every accepted enqueue and every operator requeue sends `pg_notify(channel, job_id)`
    /// in the transaction that queued the job, so it is delivered on commit, and only then.
    /// Workers wake on it with `LISTEN "<channel>"` (quoted: the name keeps the schema's case)
    /// instead of waiting for their next poll; a notification is a hint, the claim decides.
    pub const JOBS_CHANNEL_SUFFIX: &'static str = "_agno_jobs";

    /// Prefix of a cancellation's notification payload (`cancel:<job id>`); other payloads are the
    /// id of a claimable job.
    pub const CANCEL_PREFIX: &'static str = "cancel:";

    /// Prefix of the notification sent when a run's event log grew or its job ended
    /// (`events:<run id>`), so tails on every replica read again at once.
    pub const EVENTS_PREFIX: &'static str = "events:";

    /// The channel job-queue notifications are sent on: the schema followed by
    /// [`PostgresDb::JOBS_CHANNEL_SUFFIX`], at most 63 bytes.
    pub fn jobs_channel(&self) -> String {
        channel_of(&self.schema)
    }
}

/// The channel job-queue notifications of `schema` are sent on (see [`PostgresDb::jobs_channel`]).
fn channel_of(schema: &str) -> String {
    let mut channel = format!("{schema}{}", PostgresDb::JOBS_CHANNEL_SUFFIX);
    // Schema names are validated ASCII identifiers: any byte is a character boundary.
    channel.truncate(MAX_CHANNEL_BYTES);
    channel
}

impl PostgresState {
    /// The channel and payload of a queue notification.
    pub(crate) fn notice_of(&self, notice: crate::sql::job_transitions::Notice<'_>) -> (String, String) {
        use crate::sql::job_transitions::Notice;
        let payload = match notice {
            Notice::Claimable(id) => signal("", id),
            Notice::Cancelled(id) => signal(PostgresDb::CANCEL_PREFIX, id),
            Notice::Ended(id) => signal(PostgresDb::EVENTS_PREFIX, id),
        };
        (channel_of(&self.schema), payload)
    }

    /// The job holding `key` for `user_id` (`None`: the anonymous bucket), read in `conn`.
    async fn job_by_key(&self, conn: &mut PgConnection, key: &str, user_id: Option<&str>) -> DbResult<Option<Job>> {
        let sql = format!(
            "SELECT {JOB_COLUMNS} FROM {} WHERE idempotency_key = $1 AND user_id IS NOT DISTINCT FROM $2 LIMIT 1",
            self.qualified(&self.tables().jobs)
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(key)
            .bind(user_id)
            .fetch_optional(conn)
            .await
            .map_err(|e| db_error(&format!("cannot read the job of idempotency key {key:?}"), e))?;
        row.as_ref().map(job_from_row::<Postgres>).transpose()
    }
}

impl PostgresState {
    /// `sql::jobs::put_pending` in two statements: the session insert with the run-index lock
    /// (taken once the insert is done, as the generic write orders them), then the run with the
    /// enqueue's depth turn `depth_turn` (its lock key) when given, taken once the run is written.
    async fn put_pending(
        &self,
        conn: &mut PgConnection,
        job: &Job,
        pending: PendingRun<'_>,
        depth_turn: Option<&str>,
    ) -> DbResult<()> {
        let (sql, mut values) = crate::sql::jobs::pending_session(self, job, pending)?;
        values.0.0.push(job.session_id.clone().into());
        let lock = super::runs::run_index_lock(values.0.0.len());
        let sql = format!("WITH s AS ({sql} RETURNING 1) SELECT {lock} FROM (SELECT count(*) FROM s) AS written");
        let what = format!("cannot write session {}", job.session_id);
        <Postgres as crate::sql::Dialect>::execute_on(&mut *conn, &sql, values)
            .await
            .map_err(|e| db_error(&what, e))?;
        self.insert_run(conn, pending.run, &job.session_id, job.user_id.as_deref(), depth_turn).await?;
        Ok(())
    }
}

/// The transaction every multi-statement queue write runs in: READ COMMITTED whatever the
/// server's default, since the dedup read after `ON CONFLICT DO NOTHING` must see the winner
/// committed meanwhile.
const BEGIN: &str = "BEGIN ISOLATION LEVEL READ COMMITTED";

/// The claim's transaction: the planner may not read the queued rows by bitmap. When the
/// statistics say few jobs are queued (a new table, or a burst after a quiet time: autovacuum
/// analyzes a minute later at best), a bitmap scan of every queued row, the session check on
/// each and a sort look cheap; with 10,000 queued that is 19 ms per claim against 0.4 ms for
/// walking `(status, available_at)` in order and stopping at the limit (`EXPLAIN ANALYZE`,
/// 2026-12-05).
const CLAIM_BEGIN: &str = "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL enable_bitmapscan = off";

#[async_trait::async_trait]
impl crate::sql::jobs::SqlQueue for PostgresState {
    async fn enqueue(&self, job: &Job, max_depth: usize, pending: Option<PendingRun<'_>>) -> DbResult<Enqueued> {
        let t = self.qualified(&self.tables().jobs);
        let what = format!("cannot enqueue job {}", job.id);
        // An empty key is no key (the partial indexes would otherwise cover '').
        let key = job.idempotency_key.as_deref().filter(|k| !k.is_empty());
        let user_id = job.user_id.as_deref();
        let mut tx = self.pool().begin_with(BEGIN).await.map_err(|e| db_error(&what, e))?;
        // A resubmission returns the original even when the queue is full. Only a shortcut: the
        // unique indexes decide below.
        if let Some(key) = key
            && let Some(existing) = self.job_by_key(&mut tx, key, user_id).await?
        {
            tx.rollback().await.map_err(|e| db_error(&what, e))?;
            return Ok(Enqueued::Duplicate(existing));
        }
        // The session and run first: the depth turn is then held only for the count and the
        // insert. Taken in the run's statement (once the run is written), or alone.
        let depth_key = format!("agno_jobs_depth:{t}");
        let depth_turn = (max_depth > 0).then_some(depth_key.as_str());
        if let Some(pending) = pending {
            if let Err(e) = self.put_pending(&mut tx, job, pending, depth_turn).await {
                let _ = tx.rollback().await;
                return Err(e);
            }
        } else if let Some(key) = depth_turn {
            // Depth-bounded enqueues on this table take turns until commit, so concurrent
            // submitters cannot all count the same free slot. The count is the next statement's
            // (a snapshot taken once the turn is ours).
            sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                .bind(key)
                .execute(&mut *tx)
                .await
                .map_err(|e| db_error(&what, e))?;
        }
        // One statement: the room left (counting at most `max_depth` queued rows, so its cost
        // does not grow with a backlog past the bound), the insert when there is room, and the
        // notification of a claimable job (sent on commit). ON CONFLICT DO NOTHING waits for a
        // concurrent insert of the same key (or id) and skips once it commits; the winner is
        // then read back.
        let values = job_placeholders::<Postgres>();
        let notify = if job.status == JobStatus::Queued { ", pg_notify($21, $22) AS notified" } else { "" };
        let sql = format!(
            "WITH room AS (SELECT $20::bigint = 0 OR (SELECT count(*) FROM (SELECT 1 FROM {t} \
             WHERE status = 'queued' LIMIT $20::bigint) q) < $20::bigint AS ok), \
             ins AS (INSERT INTO {t} ({JOB_COLUMNS}) SELECT {values} FROM room WHERE room.ok \
             ON CONFLICT DO NOTHING RETURNING {JOB_COLUMNS}{notify}) \
             SELECT room.ok AS room, ins.* FROM room LEFT JOIN ins ON true"
        );
        let (channel, payload) = self.notice_of(crate::sql::job_transitions::Notice::Claimable(&job.id));
        let mut insert =
            crate::sql::bind_all::<Postgres>(sqlx::query(AssertSqlSafe(sql)), job_cells::<Postgres>(job, key))?
                .bind(to_i64(max_depth));
        if !notify.is_empty() {
            insert = insert.bind(channel).bind(payload);
        }
        let row = insert.fetch_one(&mut *tx).await.map_err(|e| db_error(&what, e))?;
        let room: bool = row.try_get("room").map_err(|e| db_error(&what, e))?;
        let inserted: Option<String> = row.try_get("id").map_err(|e| db_error(&what, e))?;
        if !room {
            // Ends the transaction now, releasing the depth lock (a dropped transaction's
            // rollback would only run when its connection is next used).
            tx.rollback().await.map_err(|e| db_error(&what, e))?;
            return Ok(Enqueued::QueueFull);
        }
        if inserted.is_none() {
            let existing = match key {
                Some(key) => self.job_by_key(&mut tx, key, user_id).await?,
                None => None,
            };
            tx.rollback().await.map_err(|e| db_error(&what, e))?;
            if let Some(existing) = existing {
                return Ok(Enqueued::Duplicate(existing));
            }
            return Err(DbError::new(DbErrorKind::Conflict, format!("job {} already exists", job.id)));
        }
        let stored = job_from_row::<Postgres>(&row)?;
        tx.commit().await.map_err(|e| db_error(&what, e))?;
        Ok(Enqueued::Accepted(stored))
    }

    async fn claim_batch(&self, worker_id: &str, limit: usize, stale_before: i64, now: i64) -> DbResult<Vec<Job>> {
        let t = self.qualified(&self.tables().jobs);
        // SKIP LOCKED passes over a row another worker is claiming; a row claimed and committed
        // since this statement's snapshot is re-checked against the predicate and skipped too.
        // Jobs bound to a deployment are left to that deployment's workers. One live run per
        // session, in order: a job waits while another of its session is running or paused, or an
        // older one is still queued (an uncommitted claim of that older one still reads as queued).
        // In that per-session check `o.status || ''` keeps the planner on the session index: on
        // the status index it scanned every queued row once per candidate, quadratic in the
        // backlog (221 ms against 8 ms per claim with 2,500 queued jobs).
        let session_free = "NOT EXISTS (SELECT 1 FROM {t} o WHERE o.session_id = j.session_id AND o.id <> j.id \
             AND ((o.status || '') IN ('running', 'paused') OR ((o.status || '') = 'queued' \
             AND (o.created_at < j.created_at \
             OR (o.created_at = j.created_at AND o.id COLLATE \"C\" < j.id COLLATE \"C\")))))"
            .replace("{t}", &t);
        // Queued jobs and stale running ones (a dead worker's) are picked apart, each walking the
        // `(status, available_at)` index in its order and stopping at the limit: jobs that became
        // available in the same second come in index order (about insertion order; a session's
        // own order is the check above). One ORDER BY over `status = 'queued' OR ...` read and
        // sorted every queued row per claim, and ordering a branch by `created_at, id` too sorts
        // every row of the oldest second: claims took longer the longer the backlog (p99 35 ms
        // with 10,000 queued, 2026-12-05).
        let branch = |which: &str| {
            format!(
                "SELECT id, available_at, created_at FROM {t} j WHERE {which} AND available_at <= $2 \
                 AND deployment_id IS NULL AND {session_free} \
                 ORDER BY available_at ASC LIMIT $4 FOR UPDATE SKIP LOCKED"
            )
        };
        let sql = format!(
            "WITH queued AS ({}), stale AS ({}), \
             picked AS (SELECT id FROM (SELECT * FROM queued UNION ALL SELECT * FROM stale) c \
             ORDER BY available_at, created_at, id COLLATE \"C\" LIMIT $4) \
             UPDATE {t} SET status = 'running', locked_by = $1, locked_at = $2, attempt = attempt + 1, \
             updated_at = $2 WHERE id IN (SELECT id FROM picked) RETURNING {JOB_COLUMNS}",
            branch("status = 'queued'"),
            branch("status = 'running' AND locked_at <= $3 AND attempt < max_attempts"),
        );
        let what = format!("cannot claim jobs for worker {worker_id}");
        let mut tx = self.pool().begin_with(CLAIM_BEGIN).await.map_err(|e| db_error(&what, e))?;
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(worker_id)
            .bind(now)
            .bind(stale_before)
            .bind(to_i64(limit))
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| db_error(&what, e))?;
        tx.commit().await.map_err(|e| db_error(&what, e))?;
        let jobs = rows.iter().map(job_from_row::<Postgres>).collect::<DbResult<Vec<_>>>()?;
        // RETURNING keeps no order.
        Ok(crate::sql::jobs::oldest_first(jobs))
    }

    async fn log_events(&self, lease: &JobLease, events: &[StoredEvent]) -> DbResult<bool> {
        let (job_id, worker_id, attempt) = (lease.job_id.as_str(), lease.worker_id.as_str(), lease.attempt);
        // One statement: the fence takes a share lock on the job row (a concurrent claim skips or
        // waits for it, and a newer attempt makes the check fail), the rows go in, and tails on
        // every replica are told on commit. A taken index writes nothing and is reported without
        // making the statement fail (a failed statement's locks linger until the connection's
        // next use, and a claim would skip the job meanwhile).
        let t = self.tables();
        let (jobs, log) = (self.qualified(&t.jobs), self.qualified(&t.events));
        let sql = format!(
            "WITH held AS (SELECT id FROM {jobs} WHERE {} FOR SHARE), \
             clash AS (SELECT 1 FROM {log} WHERE run_id = $1 AND event_index = ANY($4::bigint[]) LIMIT 1), \
             ins AS (INSERT INTO {log} (run_id, event_index, attempt, event, data, created_at) \
             SELECT held.id, u.i, $3, u.e, u.d, u.c FROM held, \
             unnest($4::bigint[], $5::text[], $6::text[], $7::bigint[]) AS u(i, e, d, c) \
             WHERE NOT EXISTS (SELECT 1 FROM clash) ON CONFLICT DO NOTHING RETURNING 1) \
             SELECT EXISTS (SELECT 1 FROM clash) AS clash, (SELECT count(*) FROM ins) AS written, \
             pg_notify($8, $9) FROM held",
            holds(1)
        );
        let indexes: Vec<i64> = events.iter().map(|e| e.event_index).collect();
        let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
        // JSON text never holds a raw NUL (serde escapes it), which PostgreSQL text refuses.
        let data: Vec<&str> = events.iter().map(|e| e.data.as_str()).collect();
        let created: Vec<i64> = events.iter().map(|e| e.created_at).collect();
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(job_id)
            .bind(worker_id)
            .bind(attempt)
            .bind(&indexes)
            .bind(&names)
            .bind(&data)
            .bind(&created)
            .bind(channel_of(&self.schema))
            .bind(signal(PostgresDb::EVENTS_PREFIX, job_id))
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot log the events of run {job_id}"), e))?;
        let Some(row) = rows.first() else { return Ok(false) };
        let clash: bool = row.try_get("clash").map_err(|e| db_error("cannot read an event write", e))?;
        let written: i64 = row.try_get("written").map_err(|e| db_error("cannot read an event write", e))?;
        if clash || written < to_i64(events.len()) {
            return Err(DbError::new(
                DbErrorKind::Conflict,
                format!("an event index of run {job_id} is already in the log; nothing was written over it"),
            ));
        }
        Ok(true)
    }

    async fn job_signals(&self) -> DbResult<Option<futures::stream::BoxStream<'static, JobSignal>>> {
        use futures::StreamExt;
        let channel = channel_of(&self.schema);
        let mut listener = sqlx::postgres::PgListener::connect_with(self.pool())
            .await
            .map_err(|e| db_error("cannot listen for job notifications", e))?;
        listener.listen(&channel).await.map_err(|e| db_error(&format!("cannot LISTEN on {channel}"), e))?;
        // The listener reconnects by itself; a delivery error is skipped (polling covers the gap).
        let stream = listener.into_stream().filter_map(|n| async move {
            let payload = n.ok()?.payload().to_owned();
            Some(if let Some(id) = payload.strip_prefix(PostgresDb::CANCEL_PREFIX) {
                JobSignal::Cancelled(id.to_owned())
            } else if let Some(id) = payload.strip_prefix(PostgresDb::EVENTS_PREFIX) {
                JobSignal::Events(id.to_owned())
            } else {
                JobSignal::Claimable(payload)
            })
        });
        Ok(Some(stream.boxed()))
    }
}
