//! `agno_jobs` (the durable queue) and its event log as every SQL adapter writes and reads
//! them: the columns in table order, the values a job binds to them, and a row read back.

use agno_core::{
    Cell, DbError, DbErrorKind, DbResult, Enqueued, Job, JobLease, JobSignal, JobStatus, PendingRun, StoredEvent,
};
use sea_query::Query;
use sea_query_sqlx::SqlxBinder;
use serde_json::Value;
use sqlx::Database;

use super::job_transitions::held;
use super::runs::Statement;
use super::{Columns, Conn, Dialect, SqlAdapter, Tx};

/// Events inserted per statement (6 binds each: within every database's bind limit).
pub(crate) const EVENTS_PER_STATEMENT: usize = 1000;

/// The columns of the event log, in table order.
const EVENT_COLUMNS: [&str; 6] = ["run_id", "event_index", "attempt", "event", "data", "created_at"];

/// What differs per database in the durable queue: the enqueue, the claim, the event log and
/// notifications.
#[async_trait::async_trait]
pub(crate) trait SqlQueue: SqlAdapter {
    /// `JobStore::enqueue_job`: the database's insert (idempotency key and depth checked in the
    /// same statement or transaction); with `pending` (`JobStore::enqueue_run`), its session and
    /// run written first in the same transaction ([`put_pending`]), which rolls back unless the
    /// job is accepted.
    async fn enqueue(&self, job: &Job, max_depth: usize, pending: Option<PendingRun<'_>>) -> DbResult<Enqueued>;

    /// Claims up to `limit` (at least 1) claimable jobs for `worker_id`, in Agno's order (a
    /// running job locked at or before `stale_before` was abandoned): the database's claim
    /// statement.
    async fn claim_batch(&self, worker_id: &str, limit: usize, stale_before: i64, now: i64) -> DbResult<Vec<Job>>;

    /// `JobStore::append_events`: in one transaction, the lease check (the job row share-locked
    /// where the database has row locks, so a claim or cancel waits for the append) and the
    /// events inserted [`EVENTS_PER_STATEMENT`] at a time; false (nothing written) when the lease
    /// is not held, a conflict (nothing written) when an event index is already in the log.
    /// PostgreSQL does it in one statement.
    async fn log_events(&self, lease: &JobLease, events: &[StoredEvent]) -> DbResult<bool>
    where
        Self: Sized,
    {
        let job_id = lease.job_id.as_str();
        let what = format!("cannot log the events of run {job_id}");
        let t = self.tables();
        let fence = Query::select()
            .column("id")
            .from(self.table_ref(&t.jobs))
            .cond_where(held::<Self::D>(lease))
            .lock_shared()
            .build_sqlx(Self::D::builder());
        let mut inserts = Vec::new();
        for chunk in events.chunks(EVENTS_PER_STATEMENT) {
            let mut insert = Query::insert();
            insert.into_table(self.table_ref(&t.events)).columns(EVENT_COLUMNS);
            for e in chunk {
                let row = [job_id.into(), e.event_index.into(), e.attempt.into(), e.event.as_str().into()];
                insert
                    .values(row.into_iter().chain([e.data.as_str().into(), e.created_at.into()]))
                    .map_err(|e| DbError::new(DbErrorKind::Other, format!("cannot build an event insert: {e}")))?;
            }
            inserts.push(insert.build_sqlx(Self::D::builder()));
        }
        let alone = async |in_turn: bool| {
            super::retrying::<Self::D, _, _, _>(|| async {
                let mut tx = if in_turn { Tx::begin_in_turn(self).await? } else { Tx::begin(self).await? };
                let logged = log_once::<Self::D>(&mut *tx.tx, &fence, &inserts, job_id).await;
                tx.end(logged, &what).await
            })
            .await
        };
        let owned = || (fence.clone(), inserts.clone(), job_id.to_owned());
        super::group_commit::submit(
            self,
            owned,
            |_, conn, (fence, inserts, job_id)| Box::pin(log_once::<Self::D>(conn, fence, inserts, job_id)),
            alone,
        )
        .await
    }

    /// `JobStore::job_signals`: where the database pushes queue changes (PostgreSQL's `LISTEN`).
    async fn job_signals(&self) -> DbResult<Option<futures::stream::BoxStream<'static, JobSignal>>> {
        Ok(None)
    }
}

/// The table name errors give.
pub(crate) const JOBS: &str = "agno_jobs";

/// The statements of `SqlQueue::log_events` on `conn` (the caller's transaction): the lease
/// check, then the inserts; false (nothing written) when the lease is not held.
async fn log_once<D: Dialect>(
    conn: &mut Conn<D>,
    fence: &Statement,
    inserts: &[Statement],
    job_id: &str,
) -> DbResult<bool> {
    let (sql, values) = fence.clone();
    let held = D::fetch_on(&mut *conn, &sql, values)
        .await
        .map_err(|e| D::error(&format!("cannot check the lease on job {job_id}"), e))?;
    if held.is_empty() {
        return Ok(false);
    }
    for (sql, values) in inserts.iter().cloned() {
        match D::execute_on(&mut *conn, &sql, values).await {
            Ok(_) => {}
            Err(e) if D::violation(&e).is_some() => {
                return Err(DbError::new(
                    DbErrorKind::Conflict,
                    format!("an event index of run {job_id} is already in the log; nothing was written over it"),
                ));
            }
            Err(e) => return Err(D::error(&format!("cannot log the events of run {job_id}"), e)),
        }
    }
    Ok(true)
}

/// The placeholders of one job's [`JOB_COLUMNS`], numbered from 1.
pub(crate) fn job_placeholders<D: Dialect>() -> String {
    D::placeholders(1, 19)
}

/// The values of [`JOB_COLUMNS`] for `job`, with `key` as its idempotency key (an empty key is
/// stored as none by the caller's choice).
pub(crate) fn job_cells<D: Dialect>(job: &Job, key: Option<&str>) -> Vec<Cell> {
    let text = |v: &Option<String>| Cell::Text(v.clone());
    vec![
        Cell::Text(Some(job.id.clone())),
        Cell::Text(Some(job.component_type.clone())),
        Cell::Text(Some(job.job_type.clone())),
        text(&job.deployment_id),
        Cell::Text(Some(job.component_id.clone())),
        Cell::Text(Some(job.session_id.clone())),
        text(&job.user_id),
        Cell::Json(Some(job.payload.clone())),
        Cell::Text(Some(job.status.as_str().to_owned())),
        Cell::Int(Some(job.attempt)),
        Cell::Int(Some(job.max_attempts)),
        Cell::Text(key.map(str::to_owned)),
        Cell::Int(Some(job.available_at)),
        text(&job.locked_by),
        Cell::Int(job.locked_at),
        Cell::Text(D::storable(job.error.as_deref())),
        Cell::Int(Some(job.created_at)),
        Cell::Int(job.updated_at),
        Cell::Int(job.completed_at),
    ]
}

/// A job read back from a row holding [`JOB_COLUMNS`].
///
/// # Errors
/// A column cannot be read, the status is not one of [`JobStatus`], or the payload is not JSON.
pub(crate) fn job_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<Job> {
    let c = Columns::<D>::of(row, JOBS);
    let id = c.text("id")?.unwrap_or_default();
    let status = c.text("status")?.unwrap_or_default();
    let status = JobStatus::parse(&status)
        .ok_or_else(|| DbError::new(DbErrorKind::Other, format!("job {id} has an unknown status {status:?}")))?;
    Ok(Job {
        component_type: c.text("component_type")?.unwrap_or_default(),
        job_type: c.text("job_type")?.unwrap_or_default(),
        deployment_id: c.text("deployment_id")?,
        component_id: c.text("component_id")?.unwrap_or_default(),
        session_id: c.text("session_id")?.unwrap_or_default(),
        user_id: c.text("user_id")?,
        payload: c.json("payload")?.unwrap_or(Value::Null),
        status,
        attempt: c.int("attempt")?.unwrap_or_default(),
        max_attempts: c.int("max_attempts")?.unwrap_or(1),
        idempotency_key: c.text("idempotency_key")?,
        available_at: c.int("available_at")?.unwrap_or_default(),
        locked_by: c.text("locked_by")?,
        locked_at: c.int("locked_at")?,
        error: c.text("error")?,
        created_at: c.int("created_at")?.unwrap_or_default(),
        updated_at: c.int("updated_at")?,
        completed_at: c.int("completed_at")?,
        id,
    })
}

/// `jobs` in claim order: available first, then oldest, then by the bytes of the id.
pub(crate) fn oldest_first(mut jobs: Vec<Job>) -> Vec<Job> {
    jobs.sort_by(|a, b| {
        (a.available_at, a.created_at, a.id.as_bytes()).cmp(&(b.available_at, b.created_at, b.id.as_bytes()))
    });
    jobs
}

/// A logged event read back from a row holding `event_index, attempt, event, data, created_at`.
///
/// # Errors
/// A column cannot be read.
pub(crate) fn event_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<StoredEvent> {
    let c = Columns::<D>::of(row, "agno_job_events");
    Ok(StoredEvent {
        event_index: c.int("event_index")?.unwrap_or_default(),
        attempt: c.int("attempt")?.unwrap_or_default(),
        event: c.text("event")?.unwrap_or_default(),
        data: c.text("data")?.unwrap_or_default(),
        created_at: c.int("created_at")?.unwrap_or_default(),
    })
}

/// Jobs listed per page when no limit is given.
pub(crate) const JOBS_PAGE: usize = 20;

/// The columns of the jobs table as SQL text names them (`id, component_type, ...`).
pub(crate) const JOB_COLUMNS: super::ColumnList = super::ColumnList(&JOB_COLUMN_LIST);

/// The columns of the jobs table, in table order.
pub(crate) const JOB_COLUMN_LIST: [&str; 19] = [
    "id",
    "component_type",
    "job_type",
    "deployment_id",
    "component_id",
    "session_id",
    "user_id",
    "payload",
    "status",
    "attempt",
    "max_attempts",
    "idempotency_key",
    "available_at",
    "locked_by",
    "locked_at",
    "error",
    "created_at",
    "updated_at",
    "completed_at",
];

/// Writes on `conn` (an enqueue's transaction) what `JobStore::enqueue_run` stores beside the
/// job: the session unless one of its id is stored (that one is left as it is: one statement,
/// no read), then the `PENDING` run as `upsert_run` writes it, owned by the job's user.
///
/// # Errors
/// A storage error, or the run's `Conflict` (another user's or another session's id).
pub(crate) async fn put_pending<A: super::SqlFamily>(
    db: &A,
    conn: &mut super::Conn<A::D>,
    job: &Job,
    pending: PendingRun<'_>,
) -> DbResult<()> {
    let (sql, values) = pending_session(db, job, pending)?;
    let what = format!("cannot write session {}", job.session_id);
    A::D::execute_on(&mut *conn, &sql, values).await.map_err(|e| A::D::error(&what, e))?;
    super::runs::SqlRuns::put_run(db, conn, pending.run, &job.session_id, job.user_id.as_deref(), false).await?;
    Ok(())
}

/// The insert of [`put_pending`]'s session, which changes nothing when a session of its id is
/// stored.
///
/// # Errors
/// A JSON field of the session that cannot be written as JSON.
pub(crate) fn pending_session<A: SqlAdapter>(
    db: &A,
    job: &Job,
    pending: PendingRun<'_>,
) -> DbResult<super::runs::Statement> {
    let mut values = Vec::with_capacity(super::sessions::COLUMNS.len());
    let data = pending.session.session_data.clone().unwrap_or_default();
    for cell in super::sessions::session_cells(pending.session, data, agno_core::now_epoch_secs())? {
        values.push(sea_query::Expr::val(A::D::value(cell)?));
    }
    let what = format!("cannot write session {}", job.session_id);
    Ok(Query::insert()
        .into_table(db.table_ref(&db.tables().sessions))
        .columns(super::sessions::COLUMNS)
        .values(values)
        .map_err(|e| DbError::new(DbErrorKind::Other, format!("{what}: {e}")))?
        .on_conflict(sea_query::OnConflict::column("session_id").do_nothing_on(["session_id"]).to_owned())
        .build_sqlx(A::D::builder()))
}
