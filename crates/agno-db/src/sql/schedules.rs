//! `agno_schedules` and `agno_schedule_runs`: the whole schedule store of every SQL adapter.
//! Owner checks are part of each statement; a write and the read of what it wrote are one
//! transaction; names are unique per owner through each database's unique indexes (their DDL
//! stays with the adapter), whose violation is a conflict naming the name.

use std::collections::HashMap;

use agno_core::{
    Cell, DbError, DbErrorKind, DbResult, Schedule, ScheduleQuery, ScheduleRun, ScheduleRunUpdate, ScheduleStore,
    ScheduleUpdate, SortOrder, now_epoch_secs,
};
use sea_query::{Expr, ExprTrait, Order, Query, SelectStatement};
use sea_query_sqlx::SqlxBinder;
use sqlx::Database;

use super::listing::{Listing, readable};
use super::{
    Columns, Dialect, SqlAdapter, SqlDb, SqlFamily, Tx, Violation, delete_owned, owned_by, retrying, rows, values,
};
use crate::schedules::SCHEDULE_RUNS_PAGE;
use crate::schedules::SCHEDULES_PAGE;

/// The columns of the schedules table, in table order.
const SCHEDULE: [&str; 26] = [
    "id",
    "name",
    "description",
    "method",
    "endpoint",
    "payload",
    "cron_expr",
    "timezone",
    "timeout_seconds",
    "max_retries",
    "retry_delay_seconds",
    "enabled",
    "next_run_at",
    "locked_by",
    "locked_at",
    "user_id",
    "managed_by",
    "target_type",
    "target_id",
    "created_by_run_id",
    "created_by_session_id",
    "updated_by_run_id",
    "updated_by_session_id",
    "disabled_reason",
    "created_at",
    "updated_at",
];

/// The values of the schedule columns for `s`.
fn schedule_cells<D: Dialect>(s: &Schedule) -> Vec<Cell> {
    let text = |v: &Option<String>| Cell::Text(v.clone());
    let given = |v: &str| Cell::Text(Some(v.to_owned()));
    vec![
        given(&s.id),
        Cell::Text(D::storable(Some(&s.name))),
        Cell::Text(D::storable(s.description.as_deref())),
        given(&s.method),
        given(&s.endpoint),
        Cell::Json(s.payload.clone()),
        given(&s.cron_expr),
        given(&s.timezone),
        Cell::Int(Some(s.timeout_seconds)),
        Cell::Int(Some(s.max_retries)),
        Cell::Int(Some(s.retry_delay_seconds)),
        Cell::Bool(s.enabled),
        Cell::Int(s.next_run_at),
        text(&s.locked_by),
        Cell::Int(s.locked_at),
        text(&s.user_id),
        text(&s.managed_by),
        text(&s.target_type),
        text(&s.target_id),
        text(&s.created_by_run_id),
        text(&s.created_by_session_id),
        text(&s.updated_by_run_id),
        text(&s.updated_by_session_id),
        Cell::Text(D::storable(s.disabled_reason.as_deref())),
        Cell::Int(Some(s.created_at)),
        Cell::Int(s.updated_at),
    ]
}

/// A schedule read back from a row of the schedules table.
///
/// # Errors
/// A column cannot be read, or a JSON column holds text that is not JSON.
fn schedule_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<Schedule> {
    let c = Columns::<D>::of(row, "agno_schedules");
    Ok(Schedule {
        id: c.text("id")?.unwrap_or_default(),
        name: c.text("name")?.unwrap_or_default(),
        description: c.text("description")?,
        method: c.text("method")?.unwrap_or_default(),
        endpoint: c.text("endpoint")?.unwrap_or_default(),
        payload: c.json("payload")?,
        cron_expr: c.text("cron_expr")?.unwrap_or_default(),
        timezone: c.text("timezone")?.unwrap_or_default(),
        timeout_seconds: c.int("timeout_seconds")?.unwrap_or_default(),
        max_retries: c.int("max_retries")?.unwrap_or_default(),
        retry_delay_seconds: c.int("retry_delay_seconds")?.unwrap_or_default(),
        enabled: c.bool("enabled")?.unwrap_or_default(),
        next_run_at: c.int("next_run_at")?,
        locked_by: c.text("locked_by")?,
        locked_at: c.int("locked_at")?,
        user_id: c.text("user_id")?,
        managed_by: c.text("managed_by")?,
        target_type: c.text("target_type")?,
        target_id: c.text("target_id")?,
        created_by_run_id: c.text("created_by_run_id")?,
        created_by_session_id: c.text("created_by_session_id")?,
        updated_by_run_id: c.text("updated_by_run_id")?,
        updated_by_session_id: c.text("updated_by_session_id")?,
        disabled_reason: c.text("disabled_reason")?,
        created_at: c.int("created_at")?.unwrap_or_default(),
        updated_at: c.int("updated_at")?,
    })
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
        .columns(SCHEDULE)
        .from(db.table_ref(&db.tables().schedules))
        .and_where(Expr::col("id").eq(id))
        .cond_where(owned_by::<A::D>(user_id))
        .take()
}

/// The first schedule `select` finds.
async fn first<A: SqlAdapter>(tx: &mut Tx<'_, A>, select: SelectStatement, what: &str) -> DbResult<Option<Schedule>> {
    tx.rows(select.build_sqlx(A::D::builder()), what).await?.first().map(schedule_from_row::<A::D>).transpose()
}

/// The schedules due at `now`: enabled, `next_run_at` passed, and unclaimed or claimed before
/// `stale`.
fn due(now: i64, stale: i64) -> sea_query::Condition {
    let free = sea_query::Condition::any().add(Expr::col("locked_by").is_null()).add(Expr::col("locked_at").lte(stale));
    sea_query::Condition::all().add(Expr::col("enabled").eq(true)).add(Expr::col("next_run_at").lte(now)).add(free)
}

/// Due schedules a claim tries, soonest first, before giving up until the next poll.
const CLAIM_CANDIDATES: u64 = 32;

/// The columns of the schedule runs table, in table order.
const RUN: [&str; 15] = [
    "id",
    "schedule_id",
    "attempt",
    "triggered_at",
    "completed_at",
    "status",
    "status_code",
    "run_id",
    "session_id",
    "error",
    "input",
    "output",
    "requirements",
    "user_id",
    "created_at",
];

/// A schedule run read back from a row of the schedule runs table.
///
/// # Errors
/// A column cannot be read, or a JSON column holds text that is not JSON.
fn schedule_run_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<ScheduleRun> {
    let c = Columns::<D>::of(row, "agno_schedule_runs");
    Ok(ScheduleRun {
        id: c.text("id")?.unwrap_or_default(),
        schedule_id: c.text("schedule_id")?.unwrap_or_default(),
        attempt: c.int("attempt")?.unwrap_or(1),
        triggered_at: c.int("triggered_at")?,
        completed_at: c.int("completed_at")?,
        status: c.text("status")?.unwrap_or_default(),
        status_code: c.int("status_code")?,
        run_id: c.text("run_id")?,
        session_id: c.text("session_id")?,
        error: c.text("error")?,
        input: c.json("input")?,
        output: c.json("output")?,
        requirements: c.json("requirements")?,
        user_id: c.text("user_id")?,
        created_at: c.int("created_at")?.unwrap_or_default(),
    })
}

/// The schedule run `id` (of `user_id`, when given).
fn run_by_id<A: SqlAdapter>(db: &A, id: &str, user_id: Option<&str>) -> SelectStatement {
    Query::select()
        .columns(RUN)
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
            .columns(SCHEDULE)
            .values(values::<A::D>(schedule_cells::<A::D>(s))?)
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
        found.first().map(schedule_from_row::<A::D>).transpose()
    }

    /// No owner addresses the unowned schedules only.
    async fn get_schedule_by_name(&self, name: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>> {
        let db = &self.0;
        let owner = match user_id {
            Some(u) => A::D::exact("user_id", u),
            None => Expr::col("user_id").is_null(),
        };
        let select = Query::select()
            .columns(SCHEDULE)
            .from(db.table_ref(&db.tables().schedules))
            .and_where(A::D::exact("name", name))
            .and_where(owner)
            .limit(1)
            .build_sqlx(A::D::builder());
        let found = rows(db, select, &format!("cannot read schedule {name:?}")).await?;
        found.first().map(schedule_from_row::<A::D>).transpose()
    }

    /// Newest first, then by the bytes of the id; a page of `SCHEDULES_PAGE` unless the query
    /// says otherwise.
    async fn get_schedules(&self, q: &ScheduleQuery) -> DbResult<(Vec<Schedule>, u64)> {
        let db = &self.0;
        let mut filter = owned_by::<A::D>(q.user_id.as_deref());
        if let Some(enabled) = q.enabled {
            filter = filter.add(Expr::col("enabled").eq(enabled));
        }
        let (found, total) = Listing::<A::D>::of(db.table_ref(&db.tables().schedules), SCHEDULE, filter)
            .by(Expr::col("created_at"), SortOrder::Desc)
            .then_by_bytes("id", SortOrder::Desc)
            .page(Some(q.limit.unwrap_or(SCHEDULES_PAGE)), q.page)
            .fetch(db, "schedules")
            .await?;
        Ok((readable::<A::D, _>(&found, "schedule", "id", schedule_from_row::<A::D>), total))
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
        let cells = [
            Cell::Text(Some(run.id.clone())),
            Cell::Int(Some(run.attempt)),
            Cell::Int(run.triggered_at),
            Cell::Int(run.completed_at),
            Cell::Text(Some(run.status.clone())),
            Cell::Int(run.status_code),
            Cell::Text(run.run_id.clone()),
            Cell::Text(run.session_id.clone()),
            Cell::Text(A::D::storable(run.error.as_deref())),
            Cell::Json(run.input.clone()),
            Cell::Json(run.output.clone()),
            Cell::Json(run.requirements.clone()),
            Cell::Int(Some(run.created_at)),
        ];
        let mut exprs = values::<A::D>(cells)?;
        // In table order: the schedule's id after the run's, its owner before `created_at`.
        exprs.insert(1, Expr::col("id"));
        exprs.insert(13, Expr::col("user_id"));
        let from_schedule = Query::select()
            .exprs(exprs)
            .from(db.table_ref(&t.schedules))
            .and_where(Expr::col("id").eq(run.schedule_id.as_str()))
            .take();
        let insert = Query::insert()
            .into_table(db.table_ref(&t.schedule_runs))
            .columns(RUN)
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
            stored.first().map(schedule_run_from_row::<A::D>).transpose()?.ok_or_else(missing)
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
            updated.first().map(schedule_run_from_row::<A::D>).transpose()
        })
        .await
    }

    async fn get_schedule_run(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<ScheduleRun>> {
        let db = &self.0;
        let select = run_by_id(db, id, user_id).build_sqlx(A::D::builder());
        let found = rows(db, select, &format!("cannot read schedule run {id}")).await?;
        found.first().map(schedule_run_from_row::<A::D>).transpose()
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
        let (found, total) = Listing::<A::D>::of(db.table_ref(&db.tables().schedule_runs), RUN, filter)
            .by(Expr::col("created_at"), SortOrder::Desc)
            .then_by_bytes("id", SortOrder::Desc)
            .page(Some(limit.unwrap_or(SCHEDULE_RUNS_PAGE)), page)
            .fetch(db, "schedule runs")
            .await?;
        Ok((readable::<A::D, _>(&found, "schedule run", "id", schedule_run_from_row::<A::D>), total))
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
            .columns(RUN)
            .expr_as(Expr::cust(position), "position")
            .from(db.table_ref(&db.tables().schedule_runs))
            .and_where(Expr::col("schedule_id").is_in(schedule_ids.iter().map(String::as_str)))
            .take();
        let select = Query::select()
            .columns(RUN)
            .from_subquery(ranked, "ranked")
            .and_where(Expr::col("position").eq(1))
            .build_sqlx(A::D::builder());
        let found = rows(db, select, "cannot read the latest schedule runs").await?;
        found.iter().map(|r| schedule_run_from_row::<A::D>(r).map(|r| (r.schedule_id.clone(), r))).collect()
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
