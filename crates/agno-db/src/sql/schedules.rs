//! `agno_schedules` and `agno_schedule_runs`: the whole schedule store of every SQL adapter.
//! Owner checks are part of each statement; a write and the read of what it wrote are one
//! transaction; names are unique per owner through each database's unique indexes (their DDL
//! stays with the adapter), whose violation is a conflict naming the name.

use std::collections::HashMap;

use agno_core::{
    DbError, DbErrorKind, DbResult, Schedule, ScheduleQuery, ScheduleRun, ScheduleRunUpdate, ScheduleStore,
    ScheduleUpdate, SortOrder, now_epoch_secs,
};
use sea_query::{Expr, ExprTrait, Order, Query, SelectStatement};
use sea_query_sqlx::SqlxBinder;

use super::listing::Listing;
use super::record::{SqlRecord, readable, sql_record};
use super::{
    Columns, Dialect, SqlAdapter, SqlDb, SqlFamily, Tx, Violation, delete_owned, owned_by, retrying, rows, values,
};
use crate::schedules::SCHEDULE_RUNS_PAGE;
use crate::schedules::SCHEDULES_PAGE;

sql_record! {
    Schedule {
        noun: "schedule", table: "agno_schedules", key: "id",
        columns: [
            id: text required, name: free_text required, description: free_text, method: text required,
            endpoint: text required, payload: json, cron_expr: text required, timezone: text required,
            timeout_seconds: int required, max_retries: int required, retry_delay_seconds: int required,
            enabled: bool required, next_run_at: int, locked_by: text, locked_at: int, user_id: text,
            managed_by: text, target_type: text, target_id: text, created_by_run_id: text,
            created_by_session_id: text, updated_by_run_id: text, updated_by_session_id: text,
            disabled_reason: free_text, created_at: int required, updated_at: int,
        ],
    }
}

/// The error of a schedule write that broke a constraint: a conflict naming the id or the name.
fn write_error<D: Dialect>(e: sqlx::Error, what: &str, id: &str, name: Option<&str>) -> DbError {
    match (D::violation(&e), name) {
        (Some(Violation::PrimaryKey), _) => {
            DbError::new(DbErrorKind::Conflict, format!("schedule {id} already exists"))
        }
        (Some(Violation::Unique), Some(name)) => {
            DbError::new(DbErrorKind::Conflict, format!("a schedule named {name:?} already exists for this owner"))
        }
        _ => D::error(&format!("cannot {what} schedule {id}"), e),
    }
}

/// The schedule `id` (of `user_id`, when given).
fn by_id<A: SqlAdapter>(db: &A, id: &str, user_id: Option<&str>) -> SelectStatement {
    Query::select()
        .columns(Schedule::names())
        .from(db.table_ref(&db.tables().schedules))
        .and_where(Expr::col("id").eq(id))
        .cond_where(owned_by::<A::D>(user_id))
        .take()
}

/// The first schedule `select` finds.
async fn first<A: SqlAdapter>(tx: &mut Tx<'_, A>, select: SelectStatement, what: &str) -> DbResult<Option<Schedule>> {
    tx.rows(select.build_sqlx(A::D::builder()), what).await?.first().map(Schedule::from_row::<A::D>).transpose()
}

/// The schedules due at `now`: enabled, `next_run_at` passed, and unclaimed or claimed before
/// `stale`.
fn due(now: i64, stale: i64) -> sea_query::Condition {
    let free = sea_query::Condition::any().add(Expr::col("locked_by").is_null()).add(Expr::col("locked_at").lte(stale));
    sea_query::Condition::all().add(Expr::col("enabled").eq(true)).add(Expr::col("next_run_at").lte(now)).add(free)
}

/// Due schedules a claim tries, soonest first, before giving up until the next poll.
const CLAIM_CANDIDATES: u64 = 32;

sql_record! {
    /// A schedule run (its attempt 1 when none is stored).
    ScheduleRun {
        noun: "schedule run", table: "agno_schedule_runs", key: "id",
        columns: [
            id: text required, schedule_id: text required, attempt: int, triggered_at: int, completed_at: int,
            status: text required, status_code: int, run_id: text, session_id: text, error: free_text,
            input: json, output: json, requirements: json, user_id: text, created_at: int required,
        ],
    }
}

/// The schedule run `id` (of `user_id`, when given).
fn run_by_id<A: SqlAdapter>(db: &A, id: &str, user_id: Option<&str>) -> SelectStatement {
    Query::select()
        .columns(ScheduleRun::names())
        .from(db.table_ref(&db.tables().schedule_runs))
        .and_where(Expr::col("id").eq(id))
        .cond_where(owned_by::<A::D>(user_id))
        .take()
}

#[async_trait::async_trait]
impl<A: SqlFamily> ScheduleStore for SqlDb<A> {
    /// The schedule as stored.
    async fn create_schedule(&self, s: &Schedule) -> DbResult<Schedule> {
        let db = &self.0;
        let insert = Query::insert()
            .into_table(db.table_ref(&db.tables().schedules))
            .columns(Schedule::names())
            .values(values::<A::D>(s.cells::<A::D>()?)?)
            .map_err(|e| DbError::new(DbErrorKind::Other, format!("cannot write schedule {}: {e}", s.id)))?
            .build_sqlx(A::D::builder());
        let mut tx = Tx::begin(db).await?;
        tx.try_changed(insert).await.map_err(|e| write_error::<A::D>(e, "create", &s.id, Some(&s.name)))?;
        let stored = first(&mut tx, by_id(db, &s.id, None), &format!("cannot read schedule {}", s.id)).await?;
        tx.commit(&format!("cannot create schedule {}", s.id)).await?;
        stored.ok_or_else(|| DbError::new(DbErrorKind::Other, format!("schedule {} vanished as it was written", s.id)))
    }

    async fn get_schedule(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>> {
        let db = &self.0;
        let found =
            rows(db, by_id(db, id, user_id).build_sqlx(A::D::builder()), &format!("cannot read schedule {id}")).await?;
        found.first().map(Schedule::from_row::<A::D>).transpose()
    }

    /// No owner addresses the unowned schedules only.
    async fn get_schedule_by_name(&self, name: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>> {
        let db = &self.0;
        let owner = match user_id {
            Some(u) => A::D::exact("user_id", u),
            None => Expr::col("user_id").is_null(),
        };
        let select = Query::select()
            .columns(Schedule::names())
            .from(db.table_ref(&db.tables().schedules))
            .and_where(A::D::exact("name", name))
            .and_where(owner)
            .limit(1)
            .build_sqlx(A::D::builder());
        let found = rows(db, select, &format!("cannot read schedule {name:?}")).await?;
        found.first().map(Schedule::from_row::<A::D>).transpose()
    }

    /// Newest first, then by the bytes of the id; a page of `SCHEDULES_PAGE` unless the query
    /// says otherwise.
    async fn get_schedules(&self, q: &ScheduleQuery) -> DbResult<(Vec<Schedule>, u64)> {
        let db = &self.0;
        let mut filter = owned_by::<A::D>(q.user_id.as_deref());
        if let Some(enabled) = q.enabled {
            filter = filter.add(Expr::col("enabled").eq(enabled));
        }
        let (found, total) = Listing::<A::D>::of(db.table_ref(&db.tables().schedules), Schedule::names(), filter)
            .by(Expr::col("created_at"), SortOrder::Desc)
            .then_by_bytes("id", SortOrder::Desc)
            .page(Some(q.limit.unwrap_or(SCHEDULES_PAGE)), q.page)
            .fetch(db, "schedules")
            .await?;
        Ok((readable::<A::D, Schedule>(&found), total))
    }

    /// The schedule as updated, `None` when `id` is not `user_id`'s (or does not exist).
    async fn update_schedule(
        &self,
        id: &str,
        user_id: Option<&str>,
        update: &ScheduleUpdate,
    ) -> DbResult<Option<Schedule>> {
        let db = &self.0;
        let mut set = Vec::new();
        for (column, cell) in update.columns(now_epoch_secs()) {
            set.push((column, Expr::val(A::D::value(cell)?)));
        }
        let statement = Query::update()
            .table(db.table_ref(&db.tables().schedules))
            .values(set)
            .and_where(Expr::col("id").eq(id))
            .cond_where(owned_by::<A::D>(user_id))
            .build_sqlx(A::D::builder());
        retrying::<A::D, _, _, _>(|| async {
            let mut tx = Tx::begin(db).await?;
            let changed = tx
                .try_changed(statement.clone())
                .await
                .map_err(|e| write_error::<A::D>(e, "update", id, update.name.as_deref()))?;
            if changed == 0 {
                return Ok(None);
            }
            let updated = first(&mut tx, by_id(db, id, user_id), &format!("cannot read schedule {id}")).await?;
            tx.commit(&format!("cannot update schedule {id}")).await?;
            Ok(updated)
        })
        .await
    }

    /// The schedule and its runs, `user_id`'s only (as Python Agno: the cascade carries the owner
    /// guard, so another user's runs are kept).
    async fn delete_schedule(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        let db = &self.0;
        let t = db.tables();
        let ids = [id.to_owned()];
        let runs = delete_owned(db, &t.schedule_runs, "schedule_id", &ids, user_id);
        let schedule = delete_owned(db, &t.schedules, "id", &ids, user_id);
        let what = format!("cannot delete schedule {id}");
        retrying::<A::D, _, _, _>(|| async {
            let mut tx = Tx::begin(db).await?;
            tx.changed(runs.clone(), &format!("cannot delete the runs of schedule {id}")).await?;
            let deleted = tx.changed(schedule.clone(), &what).await?;
            tx.commit(&what).await?;
            Ok(deleted > 0)
        })
        .await
    }

    /// The due schedule that fires first (then by the bytes of its id) locked by `worker_id` at
    /// `now`. Each candidate is taken by a conditional update that re-checks it is due (every
    /// database evaluates it on the row's latest version, under the row's lock), so two workers
    /// never hold the same schedule; a worker that loses one race tries the next candidate.
    async fn claim_due_schedule(
        &self,
        worker_id: &str,
        lock_grace_seconds: i64,
        now: i64,
    ) -> DbResult<Option<Schedule>> {
        let db = &self.0;
        let stale = now.saturating_sub(lock_grace_seconds);
        let table = db.table_ref(&db.tables().schedules);
        let candidates = Query::select()
            .column("id")
            .from(table.clone())
            .cond_where(due(now, stale))
            .order_by("next_run_at", Order::Asc)
            .order_by_expr(A::D::byte_order("id"), Order::Asc)
            .limit(CLAIM_CANDIDATES)
            .build_sqlx(A::D::builder());
        let found = rows(db, candidates, "cannot list due schedules").await?;
        for row in &found {
            let Some(id) = Columns::<A::D>::of(row, "agno_schedules").text("id")? else { continue };
            let lock = Query::update()
                .table(table.clone())
                .values([("locked_by", Expr::val(worker_id)), ("locked_at", Expr::val(now))])
                .and_where(Expr::col("id").eq(id.as_str()))
                .cond_where(due(now, stale))
                .build_sqlx(A::D::builder());
            if super::changed(db, lock, &format!("cannot claim schedule {id}")).await? == 1 {
                return self.get_schedule(&id, None).await;
            }
        }
        Ok(None)
    }

    /// Unlocks `id` (when still held by `worker_id` since `locked_at`, when given) and re-arms it
    /// at `next_run_at`; an on-demand schedule (no cron) is never re-armed from the executor's
    /// snapshot.
    async fn release_schedule(
        &self,
        id: &str,
        next_run_at: Option<i64>,
        worker_id: Option<&str>,
        locked_at: Option<i64>,
    ) -> DbResult<bool> {
        let db = &self.0;
        let next = Expr::case(Expr::col("cron_expr").eq(""), Expr::val(None::<i64>))
            .finally(sea_query::Func::coalesce([Expr::val(next_run_at), Expr::col("next_run_at")]));
        let mut held = sea_query::Condition::all().add(Expr::col("id").eq(id));
        if let Some(w) = worker_id {
            held = held.add(A::D::exact("locked_by", w));
        }
        if let Some(at) = locked_at {
            held = held.add(Expr::col("locked_at").eq(at));
        }
        let statement = Query::update()
            .table(db.table_ref(&db.tables().schedules))
            .values([
                ("locked_by", Expr::val(None::<String>)),
                ("locked_at", Expr::val(None::<i64>)),
                ("updated_at", Expr::val(now_epoch_secs())),
                ("next_run_at", next.into()),
            ])
            .cond_where(held)
            .build_sqlx(A::D::builder());
        Ok(super::changed(db, statement, &format!("cannot release schedule {id}")).await? > 0)
    }

    /// Whether `worker_id` still held `id`.
    async fn renew_schedule_claim(&self, id: &str, worker_id: &str, now: i64) -> DbResult<bool> {
        let db = &self.0;
        let statement = Query::update()
            .table(db.table_ref(&db.tables().schedules))
            .value("locked_at", now)
            .and_where(Expr::col("id").eq(id))
            .and_where(A::D::exact("locked_by", worker_id))
            .build_sqlx(A::D::builder());
        Ok(super::changed(db, statement, &format!("cannot renew the claim of schedule {id}")).await? > 0)
    }

    /// The run as stored, its owner copied from the schedule in the same statement; no schedule, no
    /// row (not found).
    async fn create_schedule_run(&self, run: &ScheduleRun) -> DbResult<ScheduleRun> {
        let db = &self.0;
        let t = db.tables();
        // The schedule's id and owner are read from the schedule's row.
        let exprs = ScheduleRun::names()
            .zip(values::<A::D>(run.cells::<A::D>()?)?)
            .map(|(column, value)| match column {
                "schedule_id" => Expr::col("id"),
                "user_id" => Expr::col("user_id"),
                _ => value,
            })
            .collect::<Vec<_>>();
        let from_schedule = Query::select()
            .exprs(exprs)
            .from(db.table_ref(&t.schedules))
            .and_where(Expr::col("id").eq(run.schedule_id.as_str()))
            .take();
        let insert = Query::insert()
            .into_table(db.table_ref(&t.schedule_runs))
            .columns(ScheduleRun::names())
            .select_from(from_schedule)
            .map_err(|e| DbError::new(DbErrorKind::Other, format!("cannot write schedule run {}: {e}", run.id)))?
            .build_sqlx(A::D::builder());
        let missing = || DbError::new(DbErrorKind::NotFound, format!("schedule {} does not exist", run.schedule_id));
        retrying::<A::D, _, _, _>(|| async {
            let mut tx = Tx::begin(db).await?;
            let written = tx.try_changed(insert.clone()).await.map_err(|e| match A::D::violation(&e) {
                Some(Violation::PrimaryKey | Violation::Unique) => {
                    DbError::new(DbErrorKind::Conflict, format!("schedule run {} already exists", run.id))
                }
                // The schedule was deleted between the read and the insert.
                Some(Violation::ForeignKey) => missing(),
                None => A::D::error(&format!("cannot create schedule run {}", run.id), e),
            })?;
            if written == 0 {
                return Err(missing());
            }
            let stored =
                tx.rows(run_by_id(db, &run.id, None).build_sqlx(A::D::builder()), "cannot read schedule run").await?;
            tx.commit(&format!("cannot create schedule run {}", run.id)).await?;
            stored.first().map(ScheduleRun::from_row::<A::D>).transpose()?.ok_or_else(missing)
        })
        .await
    }

    /// The run as updated, `None` when it does not exist.
    async fn update_schedule_run(&self, id: &str, update: &ScheduleRunUpdate) -> DbResult<Option<ScheduleRun>> {
        let db = &self.0;
        let columns = update.columns();
        if columns.is_empty() {
            return self.get_schedule_run(id, None).await;
        }
        let mut set = Vec::new();
        for (column, cell) in columns {
            set.push((column, Expr::val(A::D::value(cell)?)));
        }
        let statement = Query::update()
            .table(db.table_ref(&db.tables().schedule_runs))
            .values(set)
            .and_where(Expr::col("id").eq(id))
            .build_sqlx(A::D::builder());
        let what = format!("cannot update schedule run {id}");
        retrying::<A::D, _, _, _>(|| async {
            let mut tx = Tx::begin(db).await?;
            if tx.changed(statement.clone(), &what).await? == 0 {
                return Ok(None);
            }
            let updated = tx.rows(run_by_id(db, id, None).build_sqlx(A::D::builder()), &what).await?;
            tx.commit(&what).await?;
            updated.first().map(ScheduleRun::from_row::<A::D>).transpose()
        })
        .await
    }

    async fn get_schedule_run(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<ScheduleRun>> {
        let db = &self.0;
        let select = run_by_id(db, id, user_id).build_sqlx(A::D::builder());
        let found = rows(db, select, &format!("cannot read schedule run {id}")).await?;
        found.first().map(ScheduleRun::from_row::<A::D>).transpose()
    }

    /// Newest first, then by the bytes of the id; a page of `SCHEDULE_RUNS_PAGE` unless asked
    /// otherwise.
    async fn get_schedule_runs(
        &self,
        schedule_id: &str,
        user_id: Option<&str>,
        limit: Option<usize>,
        page: Option<usize>,
    ) -> DbResult<(Vec<ScheduleRun>, u64)> {
        let db = &self.0;
        let filter = owned_by::<A::D>(user_id).add(Expr::col("schedule_id").eq(schedule_id));
        let (found, total) =
            Listing::<A::D>::of(db.table_ref(&db.tables().schedule_runs), ScheduleRun::names(), filter)
                .by(Expr::col("created_at"), SortOrder::Desc)
                .then_by_bytes("id", SortOrder::Desc)
                .page(Some(limit.unwrap_or(SCHEDULE_RUNS_PAGE)), page)
                .fetch(db, "schedule runs")
                .await?;
        Ok((readable::<A::D, ScheduleRun>(&found), total))
    }

    /// The run of each schedule triggered last (then created last, then the greatest id).
    async fn get_latest_schedule_runs(&self, schedule_ids: &[String]) -> DbResult<HashMap<String, ScheduleRun>> {
        let db = &self.0;
        if schedule_ids.is_empty() {
            return Ok(HashMap::new());
        }
        let last = if A::D::NULLS_LOW { "DESC" } else { "DESC NULLS LAST" };
        let position = format!(
            "ROW_NUMBER() OVER (PARTITION BY schedule_id ORDER BY triggered_at {last}, created_at DESC, {} DESC)",
            A::D::bytes_of("id")
        );
        let ranked = Query::select()
            .columns(ScheduleRun::names())
            .expr_as(Expr::cust(position), "position")
            .from(db.table_ref(&db.tables().schedule_runs))
            .and_where(Expr::col("schedule_id").is_in(schedule_ids.iter().map(String::as_str)))
            .take();
        let select = Query::select()
            .columns(ScheduleRun::names())
            .from_subquery(ranked, "ranked")
            .and_where(Expr::col("position").eq(1))
            .build_sqlx(A::D::builder());
        let found = rows(db, select, "cannot read the latest schedule runs").await?;
        found.iter().map(|r| ScheduleRun::from_row::<A::D>(r).map(|r| (r.schedule_id.clone(), r))).collect()
    }

    /// The runs of `schedule_id` completed before `before`.
    async fn delete_schedule_runs(&self, schedule_id: &str, before: i64) -> DbResult<u64> {
        let db = &self.0;
        let statement = Query::delete()
            .from_table(db.table_ref(&db.tables().schedule_runs))
            .and_where(Expr::col("schedule_id").eq(schedule_id))
            .and_where(Expr::col("completed_at").lt(before))
            .build_sqlx(A::D::builder());
        super::changed(db, statement, &format!("cannot expire the runs of schedule {schedule_id}")).await
    }
}
