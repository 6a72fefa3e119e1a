//! `agno_jobs` (the durable queue) and its event log as every SQL adapter writes and reads
//! them: the columns in table order, the values a job binds to them, and a row read back.

use agno_core::{Cell, DbError, DbErrorKind, DbResult, Job, JobStatus, SortOrder, StoredEvent};
use sea_query::{Condition, Expr, ExprTrait, Query};
use sea_query_sqlx::SqlxBinder;
use serde_json::Value;
use sqlx::Database;

use super::listing::Listing;
use super::{Columns, Dialect, SqlDb, owned_by, rows};

/// The table name errors give.
const JOBS: &str = "agno_jobs";

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

/// The events of run `run_id` after index `after` (at most `limit`, in order) from the event
/// log of `db`.
///
/// # Errors
/// The statement fails or a row cannot be read.
pub(crate) async fn read_events<A: SqlDb>(
    db: &A,
    run_id: &str,
    after: i64,
    limit: usize,
) -> DbResult<Vec<StoredEvent>> {
    let select = Query::select()
        .columns(["event_index", "attempt", "event", "data", "created_at"])
        .from(db.table_ref(&db.tables().events))
        .and_where(Expr::col("run_id").eq(run_id))
        .and_where(Expr::col("event_index").gt(after))
        .order_by("event_index", sea_query::Order::Asc)
        .limit(super::bound(limit))
        .build_sqlx(A::D::builder());
    let found = rows(db, select, &format!("cannot read the events of run {run_id}")).await?;
    found.iter().map(event_from_row::<A::D>).collect()
}

/// The index of the last event logged for run `run_id`, if any.
///
/// # Errors
/// The statement fails.
pub(crate) async fn last_event_index<A: SqlDb>(db: &A, run_id: &str) -> DbResult<Option<i64>> {
    let select = Query::select()
        .expr_as(Expr::cust("MAX(event_index)"), "last_index")
        .from(db.table_ref(&db.tables().events))
        .and_where(Expr::col("run_id").eq(run_id))
        .build_sqlx(A::D::builder());
    match rows(db, select, &format!("cannot read the events of run {run_id}")).await?.first() {
        Some(row) => Columns::<A::D>::of(row, "agno_job_events").int("last_index"),
        None => Ok(None),
    }
}

/// The ids of the jobs cancelled while `worker_id` ran them.
///
/// # Errors
/// The statement fails.
pub(crate) async fn cancelled_jobs<A: SqlDb>(db: &A, worker_id: &str) -> DbResult<Vec<String>> {
    let select = Query::select()
        .column("id")
        .from(db.table_ref(&db.tables().jobs))
        .and_where(Expr::col("status").eq(JobStatus::Cancelled.as_str()))
        .and_where(Expr::col("locked_by").eq(worker_id))
        .build_sqlx(A::D::builder());
    let found = rows(db, select, "cannot read cancelled jobs").await?;
    found.iter().map(|row| Ok(Columns::<A::D>::of(row, JOBS).text("id")?.unwrap_or_default())).collect()
}

/// Jobs listed per page when no limit is given.
const JOBS_PAGE: usize = 20;

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

/// `JobStore::get_job`: the job, when it is `user_id`'s (or any, unscoped).
///
/// # Errors
/// The statement fails or the row cannot be read.
pub(crate) async fn get_job<A: SqlDb>(db: &A, job_id: &str, user_id: Option<&str>) -> DbResult<Option<Job>> {
    let select = Query::select()
        .columns(JOB_COLUMN_LIST)
        .from(db.table_ref(&db.tables().jobs))
        .and_where(Expr::col("id").eq(job_id))
        .cond_where(owned_by::<A::D>(user_id))
        .build_sqlx(A::D::builder());
    let found = rows(db, select, &format!("cannot read job {job_id}")).await?;
    found.first().map(job_from_row::<A::D>).transpose()
}

/// `JobStore::list_jobs`: newest first (then by the bytes of the id), a page of 20 unless asked
/// otherwise, and the number of jobs with the status.
///
/// # Errors
/// A statement fails or a row cannot be read.
pub(crate) async fn list_jobs<A: SqlDb>(
    db: &A,
    status: Option<JobStatus>,
    limit: Option<usize>,
    page: Option<usize>,
) -> DbResult<(Vec<Job>, u64)> {
    let mut filter = Condition::all();
    if let Some(s) = status {
        filter = filter.add(Expr::col("status").eq(s.as_str()));
    }
    let (found, total) = Listing::<A::D>::of(db.table_ref(&db.tables().jobs), JOB_COLUMN_LIST, filter)
        .by(Expr::col("created_at"), SortOrder::Desc)
        .then_by_bytes("id", SortOrder::Desc)
        .page(Some(limit.unwrap_or(JOBS_PAGE)), page)
        .fetch(db, "jobs")
        .await?;
    Ok((found.iter().map(job_from_row::<A::D>).collect::<DbResult<Vec<_>>>()?, total))
}

/// Implements `agno_core::JobStore` for an SQL adapter: its own enqueue, claim and event log
/// (inherent `enqueue`, `claim_batch` and `log_events`: each differs per database), the transitions
/// and the claimed run write of [`super::job_transitions`] and the reads above; `$extra` adds methods of its
/// own (PostgreSQL's `job_signals`).
macro_rules! job_store {
    ($db:ty $(, { $($extra:tt)* })?) => {
        #[async_trait::async_trait]
        impl agno_core::JobStore for $db {
            async fn enqueue_job(&self, job: &agno_core::Job, max_depth: usize) -> agno_core::DbResult<agno_core::Enqueued> {
                self.enqueue(job, max_depth).await
            }
            async fn claim_job(&self, worker_id: &str, lock_grace_seconds: i64, now: i64) -> agno_core::DbResult<Option<agno_core::Job>> {
                Ok(self.claim_batch(worker_id, 1, lock_grace_seconds, now).await?.pop())
            }
            async fn claim_jobs(&self, worker_id: &str, limit: usize, lock_grace_seconds: i64, now: i64) -> agno_core::DbResult<Vec<agno_core::Job>> {
                if limit == 0 {
                    return Ok(Vec::new());
                }
                self.claim_batch(worker_id, limit, lock_grace_seconds, now).await
            }
            async fn heartbeat_jobs(&self, worker_id: &str, job_ids: &[String], now: i64) -> agno_core::DbResult<u64> {
                crate::sql::job_transitions::heartbeat(self, worker_id, job_ids, now).await
            }
            async fn finish_job(&self, lease: &agno_core::JobLease, outcome: &agno_core::JobOutcome, now: i64) -> agno_core::DbResult<bool> {
                crate::sql::job_transitions::finish(self, lease, outcome, now).await
            }
            async fn sweep_jobs(&self, lock_grace_seconds: i64, now: i64, error: &str) -> agno_core::DbResult<Vec<agno_core::Job>> {
                crate::sql::job_transitions::sweep(self, lock_grace_seconds, now, error).await
            }
            async fn cancel_job(&self, job_id: &str, now: i64) -> agno_core::DbResult<Option<agno_core::JobStatus>> {
                crate::sql::job_transitions::cancel(self, job_id, now).await
            }
            async fn holds_job(&self, lease: &agno_core::JobLease, now: i64) -> agno_core::DbResult<bool> {
                crate::sql::job_transitions::holds(self, lease, now).await
            }
            async fn save_claimed_run(&self, lease: &agno_core::JobLease, write: agno_core::RunWrite<'_>, now: i64) -> agno_core::DbResult<bool> {
                crate::sql::job_transitions::save_claimed_run(self, lease, write, now).await
            }
            async fn cancelled_jobs(&self, worker_id: &str) -> agno_core::DbResult<Vec<String>> {
                crate::sql::jobs::cancelled_jobs(self, worker_id).await
            }
            async fn append_events(&self, lease: &agno_core::JobLease, events: &[agno_core::StoredEvent]) -> agno_core::DbResult<bool> {
                self.log_events(lease, events).await
            }
            async fn read_events(&self, run_id: &str, after: i64, limit: usize) -> agno_core::DbResult<Vec<agno_core::StoredEvent>> {
                crate::sql::jobs::read_events(self, run_id, after, limit).await
            }
            async fn last_event_index(&self, run_id: &str) -> agno_core::DbResult<Option<i64>> {
                crate::sql::jobs::last_event_index(self, run_id).await
            }
            async fn complete_swept_job(&self, job_id: &str, now: i64) -> agno_core::DbResult<bool> {
                crate::sql::job_transitions::complete_swept(self, job_id, now).await
            }
            async fn cleanup_jobs(&self, before: i64) -> agno_core::DbResult<u64> {
                crate::sql::job_transitions::cleanup(self, before).await
            }
            async fn continue_job(&self, job_id: &str, continuation: &serde_json::Value, now: i64) -> agno_core::DbResult<agno_core::Continued> {
                crate::sql::job_transitions::resume(self, job_id, continuation, now).await
            }
            async fn requeue_job(&self, job_id: &str, now: i64) -> agno_core::DbResult<bool> {
                crate::sql::job_transitions::requeue(self, job_id, now).await
            }
            async fn get_job(&self, job_id: &str, user_id: Option<&str>) -> agno_core::DbResult<Option<agno_core::Job>> {
                crate::sql::jobs::get_job(self, job_id, user_id).await
            }
            async fn list_jobs(&self, status: Option<agno_core::JobStatus>, limit: Option<usize>, page: Option<usize>) -> agno_core::DbResult<(Vec<agno_core::Job>, u64)> {
                crate::sql::jobs::list_jobs(self, status, limit, page).await
            }
            $($($extra)*)?
        }
    };
}
pub(crate) use job_store;
