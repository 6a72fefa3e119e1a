//! The transitions of a queued job as every SQL adapter applies them. The rules are
//! `agno_core::Job`'s: the rare transitions (cancel, continue, requeue, sweep, complete a swept
//! job) lock the row, apply the `Job` method and write the row back, in one transaction; the
//! three a worker makes on every run (heartbeat, lease check, finish) are single conditional
//! statements stating the same rules, so they cost one round trip. The claim, the enqueue and
//! the event writes differ per database and stay with each adapter ([`SqlAdapter`]); this is
//! the one `JobStore` of the SQL family, with the queue's reads.

use agno_core::{
    Cell, Continued, DbResult, Enqueued, Job, JobLease, JobOutcome, JobSignal, JobStatus, JobStore, PendingRun,
    RunWrite, SortOrder, StoredEvent,
};
use sea_query::{Condition, Expr, ExprTrait, LockType, Order, Query};
use sea_query_sqlx::{SqlxBinder, SqlxValues};

use super::jobs::{JOB_COLUMN_LIST, JOBS, JOBS_PAGE, event_from_row, job_from_row};
use super::listing::Listing;
use super::{Columns, Dialect, SqlAdapter, SqlDb, SqlFamily, Tx, owned_by, retrying, rows};

/// A notification a queue write sends where the database has them (PostgreSQL's `NOTIFY`):
/// hints for workers and tails on every replica, delivered when the write commits.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Notice<'a> {
    /// The job can be claimed.
    Claimable(&'a str),
    /// The job was cancelled: its worker stops now.
    Cancelled(&'a str),
    /// The job's attempt ended: tails read its event log again.
    Ended(&'a str),
}

/// What [`apply`] did.
enum Applied<T> {
    /// No such job.
    Missing,
    /// The transition does not apply to the job as it is.
    Declined(Job),
    /// Applied: its answer and the job as written.
    Done(T, Job),
}

/// The statement writing every changeable column of `job`.
pub(crate) fn put<A: SqlAdapter>(db: &A, job: &Job) -> DbResult<(String, SqlxValues)> {
    let cells = [
        ("payload", Cell::Json(Some(job.payload.clone()))),
        ("status", Cell::Text(Some(job.status.as_str().to_owned()))),
        ("attempt", Cell::Int(Some(job.attempt))),
        ("max_attempts", Cell::Int(Some(job.max_attempts))),
        ("available_at", Cell::Int(Some(job.available_at))),
        ("locked_by", Cell::Text(job.locked_by.clone())),
        ("locked_at", Cell::Int(job.locked_at)),
        ("error", Cell::Text(A::D::storable(job.error.as_deref()))),
        ("updated_at", Cell::Int(job.updated_at)),
        ("completed_at", Cell::Int(job.completed_at)),
    ];
    let mut set = Vec::with_capacity(cells.len());
    for (column, cell) in cells {
        set.push((column, Expr::val(A::D::value(cell)?)));
    }
    Ok(Query::update()
        .table(db.table_ref(&db.tables().jobs))
        .values(set)
        .and_where(Expr::col("id").eq(job.id.as_str()))
        .build_sqlx(A::D::builder()))
}

/// Locks job `id`, applies `change` to it (`None`: the transition does not apply) and writes it
/// back with `notice`, in one transaction tried again when it loses a race.
async fn apply<A: SqlAdapter, T>(
    db: &A,
    id: &str,
    what: &str,
    notice: Option<Notice<'_>>,
    change: impl Fn(&mut Job) -> Option<T>,
) -> DbResult<Applied<T>> {
    let lock = Query::select()
        .columns(JOB_COLUMN_LIST)
        .from(db.table_ref(&db.tables().jobs))
        .and_where(Expr::col("id").eq(id))
        .lock(LockType::Update)
        .build_sqlx(A::D::builder());
    retrying::<A::D, _, _, _>(|| async {
        let mut tx = Tx::begin(db).await?;
        let found = tx.rows(lock.clone(), what).await?;
        let Some(mut job) = found.first().map(job_from_row::<A::D>).transpose()? else {
            tx.rollback(what).await?;
            return Ok(Applied::Missing);
        };
        let Some(out) = change(&mut job) else {
            tx.rollback(what).await?;
            return Ok(Applied::Declined(job));
        };
        tx.changed(put(db, &job)?, what).await?;
        if let Some(notice) = notice.and_then(|n| db.notice(n)) {
            tx.rows(notice, what).await?;
        }
        tx.commit(what).await?;
        Ok(Applied::Done(out, job))
    })
    .await
}

/// The job `lease` holds (`Job::held_by`): its id, running or cancelled while it ran, locked by
/// the lease's worker for its attempt.
pub(crate) fn held<D: Dialect>(lease: &JobLease) -> Condition {
    Condition::all()
        .add(Expr::col("id").eq(lease.job_id.as_str()))
        .add(D::exact("locked_by", &lease.worker_id))
        .add(Expr::col("attempt").eq(lease.attempt))
        .add(Expr::col("status").is_in([JobStatus::Running.as_str(), JobStatus::Cancelled.as_str()]))
}

/// `status = 'cancelled'`.
fn cancelled() -> Expr {
    Expr::col("status").eq(JobStatus::Cancelled.as_str())
}

/// The claim check of `Job::hold`: matches the job while `lease` holds it, refreshing the lease
/// while the job runs. (The connections of every adapter count matched rows, so an unchanged row
/// counts.)
fn hold<A: SqlAdapter>(db: &A, lease: &JobLease, now: i64) -> (String, SqlxValues) {
    let refreshed: Expr = Expr::case(Expr::col("status").eq(JobStatus::Running.as_str()), Expr::val(now))
        .finally(Expr::col("locked_at"))
        .into();
    Query::update()
        .table(db.table_ref(&db.tables().jobs))
        .value("locked_at", refreshed)
        .cond_where(held::<A::D>(lease))
        .build_sqlx(A::D::builder())
}

#[async_trait::async_trait]
impl<A: SqlFamily> JobStore for SqlDb<A> {
    async fn job_signals(&self) -> DbResult<Option<futures::stream::BoxStream<'static, JobSignal>>> {
        self.0.job_signals().await
    }

    async fn enqueue_job(&self, job: &Job, max_depth: usize) -> DbResult<Enqueued> {
        self.0.enqueue(job, max_depth, None).await
    }

    async fn enqueue_run(&self, job: &Job, max_depth: usize, pending: PendingRun<'_>) -> DbResult<Enqueued> {
        self.0.enqueue(job, max_depth, Some(pending)).await
    }

    async fn claim_job(&self, worker_id: &str, lock_grace_seconds: i64, now: i64) -> DbResult<Option<Job>> {
        Ok(self.0.claim_batch(worker_id, 1, now.saturating_sub(lock_grace_seconds), now).await?.pop())
    }

    async fn claim_jobs(&self, worker_id: &str, limit: usize, lock_grace_seconds: i64, now: i64) -> DbResult<Vec<Job>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.0.claim_batch(worker_id, limit, now.saturating_sub(lock_grace_seconds), now).await
    }

    /// `JobStore::heartbeat_jobs` (`Job::heartbeat`): how many of `job_ids` `worker_id` still runs.
    async fn heartbeat_jobs(&self, worker_id: &str, job_ids: &[String], now: i64) -> DbResult<u64> {
        let db = &self.0;
        if job_ids.is_empty() {
            return Ok(0);
        }
        let statement = Query::update()
            .table(db.table_ref(&db.tables().jobs))
            .value("locked_at", now)
            .and_where(Expr::col("id").is_in(job_ids.iter().map(String::as_str)))
            .and_where(A::D::exact("locked_by", worker_id))
            .and_where(Expr::col("status").eq(JobStatus::Running.as_str()))
            .build_sqlx(A::D::builder());
        super::changed(db, statement, &format!("cannot refresh the leases of worker {worker_id}")).await
    }

    /// `JobStore::finish_job` (`Job::finish`): ends the attempt with `outcome` and releases the lease;
    /// a job cancelled while it ran stays cancelled; tails are told the attempt ended. Every
    /// expression reads the row as it was: MySQL assigns left to right, so `status` is set last.
    async fn finish_job(&self, lease: &JobLease, outcome: &JobOutcome, now: i64) -> DbResult<bool> {
        let db = &self.0;
        let keep = |column: &'static str, otherwise: Expr| -> Expr {
            Expr::case(cancelled(), Expr::col(column)).finally(otherwise).into()
        };
        let text = |t: Option<&str>| A::D::value(Cell::Text(A::D::storable(t))).map(Expr::val);
        let left = Expr::col("attempt").lt(Expr::col("max_attempts"));
        let mut set = Vec::new();
        match outcome {
            JobOutcome::Retry { error, available_at } => {
                set.push(("error", keep("error", text(Some(error))?)));
                let again = Condition::all().add(cancelled().not()).add(left.clone());
                set.push((
                    "available_at",
                    Expr::case(again, Expr::val(*available_at)).finally(Expr::col("available_at")).into(),
                ));
                let kept = Condition::any().add(cancelled()).add(left.clone());
                set.push(("completed_at", Expr::case(kept, Expr::col("completed_at")).finally(Expr::val(now)).into()));
            }
            JobOutcome::Settled(status, error) => {
                set.push(("error", keep("error", text(error.as_deref())?)));
                if status.is_terminal() {
                    set.push(("completed_at", keep("completed_at", Expr::val(now))));
                }
            }
        }
        set.push(("locked_by", Expr::val(None::<String>)));
        set.push(("locked_at", Expr::val(None::<i64>)));
        set.push(("updated_at", Expr::val(now)));
        let status: Expr = match outcome {
            JobOutcome::Retry { .. } => Expr::case(cancelled(), Expr::col("status"))
                .case(left, Expr::val(JobStatus::Queued.as_str()))
                .finally(Expr::val(JobStatus::Failed.as_str()))
                .into(),
            JobOutcome::Settled(status, _) => keep("status", Expr::val(status.as_str())),
        };
        set.push(("status", status));
        let statement = Query::update()
            .table(db.table_ref(&db.tables().jobs))
            .values(set)
            .cond_where(held::<A::D>(lease))
            .build_sqlx(A::D::builder());
        let (id, attempt) = (&lease.job_id, lease.attempt);
        let what = format!("cannot finish attempt {attempt} of job {id}");
        Ok(db.changed_noticed(statement, Notice::Ended(id), &what).await? > 0)
    }

    /// `JobStore::sweep_jobs` (`Job::sweep`): the jobs whose lease expired before
    /// `now - lock_grace_seconds` swept, oldest first. Each is swept in its own transaction that
    /// checks it again, so a late heartbeat or finish wins and a job is swept at most once.
    async fn sweep_jobs(&self, lock_grace_seconds: i64, now: i64, error: &str) -> DbResult<Vec<Job>> {
        let db = &self.0;
        let stale = now.saturating_sub(lock_grace_seconds);
        let expired = Expr::col("locked_at").lte(stale);
        let exhausted = Condition::all()
            .add(Expr::col("status").eq(JobStatus::Running.as_str()))
            .add(expired.clone())
            .add(Expr::col("attempt").gte(Expr::col("max_attempts")));
        let abandoned = Condition::all()
            .add(Expr::col("status").eq(JobStatus::Cancelled.as_str()))
            .add(Expr::col("locked_by").is_not_null())
            .add(expired);
        let candidates = Query::select()
            .column("id")
            .from(db.table_ref(&db.tables().jobs))
            .cond_where(Condition::any().add(exhausted).add(abandoned))
            .order_by("created_at", Order::Asc)
            .order_by_expr(A::D::byte_order("id"), Order::Asc)
            .build_sqlx(A::D::builder());
        let mut swept = Vec::new();
        for row in &rows(db, candidates, "cannot list expired jobs").await? {
            let Some(id) = Columns::<A::D>::of(row, "agno_jobs").text("id")? else { continue };
            let what = format!("cannot sweep job {id}");
            if let Applied::Done((), job) =
                apply(db, &id, &what, None, |j| j.sweep(stale, now, error).then_some(())).await?
            {
                swept.push(job);
            }
        }
        Ok(swept)
    }

    /// `JobStore::cancel_job` (`Job::cancel`): the status the job had, `None` when it had ended or
    /// does not exist. A running job keeps its lease so its worker records how the run ended; the
    /// notice tells that worker to stop now.
    async fn cancel_job(&self, id: &str, now: i64) -> DbResult<Option<JobStatus>> {
        let db = &self.0;
        let what = format!("cannot cancel job {id}");
        Ok(match apply(db, id, &what, Some(Notice::Cancelled(id)), |j| j.cancel(now)).await? {
            Applied::Done(before, _) => Some(before),
            Applied::Missing | Applied::Declined(_) => None,
        })
    }

    /// `JobStore::holds_job` (`Job::hold`): whether the claim holds, its lease refreshed while the
    /// job runs.
    async fn holds_job(&self, lease: &JobLease, now: i64) -> DbResult<bool> {
        let db = &self.0;
        let what = format!("cannot check the lease on job {}", lease.job_id);
        Ok(super::changed(db, hold(db, lease, now), &what).await? > 0)
    }

    /// The claim check and the session and run writes in one transaction (the check's row lock, or
    /// SQLite's write lock, keeps every claim, cancel and sweep out until commit); tried again when
    /// it loses a race (a MySQL deadlock).
    async fn save_claimed_run(&self, lease: &JobLease, write: RunWrite<'_>, now: i64) -> DbResult<bool> {
        let db = &self.0;
        let guard = super::runs::Guard { lease: lease.clone(), now, statement: hold(db, lease, now) };
        Ok(super::runs::write_with_session(db, write, Some(guard)).await?.is_some())
    }

    /// The ids of the jobs cancelled while `worker_id` ran them.
    ///
    /// # Errors
    /// The statement fails.
    async fn cancelled_jobs(&self, worker_id: &str) -> DbResult<Vec<String>> {
        let db = &self.0;
        let select = Query::select()
            .column("id")
            .from(db.table_ref(&db.tables().jobs))
            .and_where(Expr::col("status").eq(JobStatus::Cancelled.as_str()))
            .and_where(Expr::col("locked_by").eq(worker_id))
            .build_sqlx(A::D::builder());
        let found = rows(db, select, "cannot read cancelled jobs").await?;
        found.iter().map(|row| Ok(Columns::<A::D>::of(row, JOBS).text("id")?.unwrap_or_default())).collect()
    }

    async fn append_events(&self, lease: &JobLease, events: &[StoredEvent]) -> DbResult<bool> {
        self.0.log_events(lease, events).await
    }

    /// The events of run `run_id` after index `after` (at most `limit`, in order) from the event
    /// log of `db`.
    ///
    /// # Errors
    /// The statement fails or a row cannot be read.
    async fn read_events(&self, run_id: &str, after: i64, limit: usize) -> DbResult<Vec<StoredEvent>> {
        let db = &self.0;
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
    async fn last_event_index(&self, run_id: &str) -> DbResult<Option<i64>> {
        let db = &self.0;
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

    /// `JobStore::complete_swept_job` (`Job::complete_swept`).
    async fn complete_swept_job(&self, id: &str, now: i64) -> DbResult<bool> {
        let db = &self.0;
        let what = format!("cannot complete swept job {id}");
        let applied = apply(db, id, &what, None, |j| j.complete_swept(now).then_some(())).await?;
        Ok(matches!(applied, Applied::Done(..)))
    }

    /// The ended, released jobs completed at or before `before`, with their event logs; how many
    /// jobs.
    async fn cleanup_jobs(&self, before: i64) -> DbResult<u64> {
        let db = &self.0;
        let t = db.tables();
        let old = || {
            Condition::all()
                .add(Expr::col("status").is_in([
                    JobStatus::Completed.as_str(),
                    JobStatus::Failed.as_str(),
                    JobStatus::Cancelled.as_str(),
                ]))
                .add(Expr::col("locked_by").is_null())
                .add(Expr::col("completed_at").is_not_null())
                .add(Expr::col("completed_at").lte(before))
        };
        let old_ids = Query::select().column("id").from(db.table_ref(&t.jobs)).cond_where(old()).take();
        let logs = Query::delete()
            .from_table(db.table_ref(&t.events))
            .and_where(Expr::col("run_id").in_subquery(old_ids))
            .build_sqlx(A::D::builder());
        let jobs = Query::delete().from_table(db.table_ref(&t.jobs)).cond_where(old()).build_sqlx(A::D::builder());
        retrying::<A::D, _, _, _>(|| async {
            let mut tx = Tx::begin(db).await?;
            tx.changed(logs.clone(), "cannot delete old event logs").await?;
            let removed = tx.changed(jobs.clone(), "cannot delete old jobs").await?;
            tx.commit("cannot clean up old jobs").await?;
            Ok(removed)
        })
        .await
    }

    /// `JobStore::continue_job` (`Job::continue_with`).
    async fn continue_job(&self, id: &str, continuation: &serde_json::Value, now: i64) -> DbResult<Continued> {
        let db = &self.0;
        let what = format!("cannot continue job {id}");
        let queued = |j: &mut Job| match j.continue_with(continuation, now) {
            Continued::Queued(job) => Some(job),
            _ => None,
        };
        Ok(match apply(db, id, &what, Some(Notice::Claimable(id)), queued).await? {
            Applied::Done(job, _) => Continued::Queued(job),
            // Not paused: attach to the live job, or a conflict with the ended one.
            Applied::Declined(mut job) => job.continue_with(continuation, now),
            Applied::Missing => Continued::Conflict(None),
        })
    }

    /// `JobStore::requeue_job` (`Job::requeue`): whether the failed or cancelled job was queued again.
    async fn requeue_job(&self, id: &str, now: i64) -> DbResult<bool> {
        let db = &self.0;
        let what = format!("cannot requeue job {id}");
        let applied = apply(db, id, &what, Some(Notice::Claimable(id)), |j| j.requeue(now).then_some(())).await?;
        Ok(matches!(applied, Applied::Done(..)))
    }

    /// The job, when it is `user_id`'s (or any, unscoped).
    ///
    /// # Errors
    /// The statement fails or the row cannot be read.
    async fn get_job(&self, job_id: &str, user_id: Option<&str>) -> DbResult<Option<Job>> {
        let db = &self.0;
        let select = Query::select()
            .columns(JOB_COLUMN_LIST)
            .from(db.table_ref(&db.tables().jobs))
            .and_where(Expr::col("id").eq(job_id))
            .cond_where(owned_by::<A::D>(user_id))
            .build_sqlx(A::D::builder());
        let found = rows(db, select, &format!("cannot read job {job_id}")).await?;
        found.first().map(job_from_row::<A::D>).transpose()
    }

    /// Newest first (then by the bytes of the id), a page of 20 unless asked otherwise, and the
    /// number of jobs with the status.
    ///
    /// # Errors
    /// A statement fails or a row cannot be read.
    async fn list_jobs(
        &self,
        status: Option<JobStatus>,
        limit: Option<usize>,
        page: Option<usize>,
    ) -> DbResult<(Vec<Job>, u64)> {
        let db = &self.0;
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
}
