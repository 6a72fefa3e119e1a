//! `agno_jobs` (the durable queue) and its event log as every SQL adapter writes and reads
//! them: the columns in table order, the values a job binds to them, and a row read back.

use agno_core::{Cell, DbError, DbErrorKind, DbResult, Enqueued, Job, JobLease, JobSignal, JobStatus, StoredEvent};
use serde_json::Value;
use sqlx::Database;

use super::{Columns, Dialect, SqlAdapter};

/// What differs per database in the durable queue: the enqueue, the claim, the event log and
/// notifications.
#[async_trait::async_trait]
pub(crate) trait SqlQueue: SqlAdapter {
    /// `JobStore::enqueue_job`: the database's insert (idempotency key and depth checked in the
    /// same statement or transaction).
    async fn enqueue(&self, job: &Job, max_depth: usize) -> DbResult<Enqueued>;

    /// Claims up to `limit` (at least 1) claimable jobs for `worker_id`, in Agno's order (a
    /// running job locked at or before `stale_before` was abandoned): the database's claim
    /// statement.
    async fn claim_batch(&self, worker_id: &str, limit: usize, stale_before: i64, now: i64) -> DbResult<Vec<Job>>;

    /// `JobStore::append_events`: the database's insert of a lease holder's events.
    async fn log_events(&self, lease: &JobLease, events: &[StoredEvent]) -> DbResult<bool>;

    /// `JobStore::job_signals`: where the database pushes queue changes (PostgreSQL's `LISTEN`).
    async fn job_signals(&self) -> DbResult<Option<futures::stream::BoxStream<'static, JobSignal>>> {
        Ok(None)
    }
}

/// The table name errors give.
pub(crate) const JOBS: &str = "agno_jobs";

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
