//! `agno_schedules` and `agno_schedule_runs`: the whole schedule store of every SQL adapter.
//! Owner checks are part of each statement; a write and the read of what it wrote are one
//! transaction; names are unique per owner through each database's unique indexes (their DDL
//! stays with the adapter), whose violation is a conflict naming the name.

use agno_core::{Cell, DbError, DbErrorKind, DbResult, Schedule, ScheduleQuery, ScheduleUpdate, now_epoch_secs};
use sea_query::{Expr, ExprTrait, Order, Query, SelectStatement};
use sea_query_sqlx::SqlxBinder;
use sqlx::Database;

use super::listing::{Listing, readable};
use super::{Columns, Dialect, SqlDb, Tx, Violation, owned_by, retrying, rows};
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

/// `cells` as a built statement carries them.
pub(super) fn values<D: Dialect>(cells: impl IntoIterator<Item = Cell>) -> DbResult<Vec<Expr>> {
    cells.into_iter().map(|c| D::value(c).map(Expr::val)).collect()
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
fn by_id<A: SqlDb>(db: &A, id: &str, user_id: Option<&str>) -> SelectStatement {
    Query::select()
        .columns(SCHEDULE)
        .from(db.table_ref(&db.tables().schedules))
        .and_where(Expr::col("id").eq(id))
        .cond_where(owned_by::<A::D>(user_id))
        .take()
}

/// The first schedule `select` finds.
async fn first<A: SqlDb>(tx: &mut Tx<'_, A>, select: SelectStatement, what: &str) -> DbResult<Option<Schedule>> {
    tx.rows(select.build_sqlx(A::D::builder()), what).await?.first().map(schedule_from_row::<A::D>).transpose()
}

/// `ScheduleStore::create_schedule`: the schedule as stored.
pub(crate) async fn create<A: SqlDb>(db: &A, s: &Schedule) -> DbResult<Schedule> {
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

/// `ScheduleStore::get_schedule`.
pub(crate) async fn get<A: SqlDb>(db: &A, id: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>> {
    let found =
        rows(db, by_id(db, id, user_id).build_sqlx(A::D::builder()), &format!("cannot read schedule {id}")).await?;
    found.first().map(schedule_from_row::<A::D>).transpose()
}

/// `ScheduleStore::get_schedule_by_name`: no owner addresses the unowned schedules only.
pub(crate) async fn get_by_name<A: SqlDb>(db: &A, name: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>> {
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

/// `ScheduleStore::get_schedules`: newest first, then by the bytes of the id; a page of
/// [`SCHEDULES_PAGE`] unless the query says otherwise.
pub(crate) async fn list<A: SqlDb>(db: &A, q: &ScheduleQuery) -> DbResult<(Vec<Schedule>, u64)> {
    let mut filter = owned_by::<A::D>(q.user_id.as_deref());
    if let Some(enabled) = q.enabled {
        filter = filter.add(Expr::col("enabled").eq(enabled));
    }
    let (found, total) = Listing::<A::D>::of(db.table_ref(&db.tables().schedules), SCHEDULE, filter)
        .by(Expr::col("created_at"), agno_core::SortOrder::Desc)
        .then_by_bytes("id", agno_core::SortOrder::Desc)
        .page(Some(q.limit.unwrap_or(SCHEDULES_PAGE)), q.page)
        .fetch(db, "schedules")
        .await?;
    Ok((readable::<A::D, _>(&found, "schedule", "id", schedule_from_row::<A::D>), total))
}

/// `ScheduleStore::update_schedule`: the schedule as updated, `None` when `id` is not
/// `user_id`'s (or does not exist).
pub(crate) async fn update<A: SqlDb>(
    db: &A,
    id: &str,
    user_id: Option<&str>,
    update: &ScheduleUpdate,
) -> DbResult<Option<Schedule>> {
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

/// `ScheduleStore::delete_schedule`: the schedule and its runs, `user_id`'s only (as Python
/// Agno: the cascade carries the owner guard, so another user's runs are kept).
pub(crate) async fn delete<A: SqlDb>(db: &A, id: &str, user_id: Option<&str>) -> DbResult<bool> {
    let t = db.tables();
    let runs = Query::delete()
        .from_table(db.table_ref(&t.schedule_runs))
        .and_where(Expr::col("schedule_id").eq(id))
        .cond_where(owned_by::<A::D>(user_id))
        .build_sqlx(A::D::builder());
    let schedule = Query::delete()
        .from_table(db.table_ref(&t.schedules))
        .and_where(Expr::col("id").eq(id))
        .cond_where(owned_by::<A::D>(user_id))
        .build_sqlx(A::D::builder());
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

/// The schedules due at `now`: enabled, `next_run_at` passed, and unclaimed or claimed before
/// `stale`.
fn due(now: i64, stale: i64) -> sea_query::Condition {
    let free = sea_query::Condition::any().add(Expr::col("locked_by").is_null()).add(Expr::col("locked_at").lte(stale));
    sea_query::Condition::all().add(Expr::col("enabled").eq(true)).add(Expr::col("next_run_at").lte(now)).add(free)
}

/// Due schedules a claim tries, soonest first, before giving up until the next poll.
const CLAIM_CANDIDATES: u64 = 32;

/// `ScheduleStore::claim_due_schedule`: the due schedule that fires first (then by the bytes of
/// its id) locked by `worker_id` at `now`. Each candidate is taken by a conditional update that
/// re-checks it is due (every database evaluates it on the row's latest version, under the
/// row's lock), so two workers never hold the same schedule; a worker that loses one race tries
/// the next candidate.
pub(crate) async fn claim<A: SqlDb>(
    db: &A,
    worker_id: &str,
    lock_grace_seconds: i64,
    now: i64,
) -> DbResult<Option<Schedule>> {
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
            return get(db, &id, None).await;
        }
    }
    Ok(None)
}

/// `ScheduleStore::release_schedule`: unlocks `id` (when still held by `worker_id` since
/// `locked_at`, when given) and re-arms it at `next_run_at`; an on-demand schedule (no cron) is
/// never re-armed from the executor's snapshot.
pub(crate) async fn release<A: SqlDb>(
    db: &A,
    id: &str,
    next_run_at: Option<i64>,
    worker_id: Option<&str>,
    locked_at: Option<i64>,
) -> DbResult<bool> {
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

/// `ScheduleStore::renew_schedule_claim`: whether `worker_id` still held `id`.
pub(crate) async fn renew<A: SqlDb>(db: &A, id: &str, worker_id: &str, now: i64) -> DbResult<bool> {
    let statement = Query::update()
        .table(db.table_ref(&db.tables().schedules))
        .value("locked_at", now)
        .and_where(Expr::col("id").eq(id))
        .and_where(A::D::exact("locked_by", worker_id))
        .build_sqlx(A::D::builder());
    Ok(super::changed(db, statement, &format!("cannot renew the claim of schedule {id}")).await? > 0)
}

/// Implements `agno_core::ScheduleStore` for an SQL adapter with the functions above.
macro_rules! schedule_store {
    ($db:ty) => {
        #[async_trait::async_trait]
        impl agno_core::ScheduleStore for $db {
            async fn create_schedule(&self, s: &agno_core::Schedule) -> agno_core::DbResult<agno_core::Schedule> {
                crate::sql::schedules::create(self, s).await
            }
            async fn get_schedule(
                &self,
                id: &str,
                user_id: Option<&str>,
            ) -> agno_core::DbResult<Option<agno_core::Schedule>> {
                crate::sql::schedules::get(self, id, user_id).await
            }
            async fn get_schedule_by_name(
                &self,
                name: &str,
                user_id: Option<&str>,
            ) -> agno_core::DbResult<Option<agno_core::Schedule>> {
                crate::sql::schedules::get_by_name(self, name, user_id).await
            }
            async fn get_schedules(
                &self,
                query: &agno_core::ScheduleQuery,
            ) -> agno_core::DbResult<(Vec<agno_core::Schedule>, u64)> {
                crate::sql::schedules::list(self, query).await
            }
            async fn update_schedule(
                &self,
                id: &str,
                user_id: Option<&str>,
                update: &agno_core::ScheduleUpdate,
            ) -> agno_core::DbResult<Option<agno_core::Schedule>> {
                crate::sql::schedules::update(self, id, user_id, update).await
            }
            async fn delete_schedule(&self, id: &str, user_id: Option<&str>) -> agno_core::DbResult<bool> {
                crate::sql::schedules::delete(self, id, user_id).await
            }
            async fn claim_due_schedule(
                &self,
                worker_id: &str,
                lock_grace_seconds: i64,
                now: i64,
            ) -> agno_core::DbResult<Option<agno_core::Schedule>> {
                crate::sql::schedules::claim(self, worker_id, lock_grace_seconds, now).await
            }
            async fn release_schedule(
                &self,
                id: &str,
                next_run_at: Option<i64>,
                worker_id: Option<&str>,
                locked_at: Option<i64>,
            ) -> agno_core::DbResult<bool> {
                crate::sql::schedules::release(self, id, next_run_at, worker_id, locked_at).await
            }
            async fn renew_schedule_claim(&self, id: &str, worker_id: &str, now: i64) -> agno_core::DbResult<bool> {
                crate::sql::schedules::renew(self, id, worker_id, now).await
            }
            async fn create_schedule_run(
                &self,
                run: &agno_core::ScheduleRun,
            ) -> agno_core::DbResult<agno_core::ScheduleRun> {
                crate::sql::schedule_runs::create(self, run).await
            }
            async fn update_schedule_run(
                &self,
                id: &str,
                update: &agno_core::ScheduleRunUpdate,
            ) -> agno_core::DbResult<Option<agno_core::ScheduleRun>> {
                crate::sql::schedule_runs::update(self, id, update).await
            }
            async fn get_schedule_run(
                &self,
                id: &str,
                user_id: Option<&str>,
            ) -> agno_core::DbResult<Option<agno_core::ScheduleRun>> {
                crate::sql::schedule_runs::get(self, id, user_id).await
            }
            async fn get_schedule_runs(
                &self,
                schedule_id: &str,
                user_id: Option<&str>,
                limit: Option<usize>,
                page: Option<usize>,
            ) -> agno_core::DbResult<(Vec<agno_core::ScheduleRun>, u64)> {
                crate::sql::schedule_runs::list(self, schedule_id, user_id, limit, page).await
            }
            async fn get_latest_schedule_runs(
                &self,
                schedule_ids: &[String],
            ) -> agno_core::DbResult<std::collections::HashMap<String, agno_core::ScheduleRun>> {
                crate::sql::schedule_runs::latest(self, schedule_ids).await
            }
            async fn delete_schedule_runs(&self, schedule_id: &str, before: i64) -> agno_core::DbResult<u64> {
                crate::sql::schedule_runs::expire(self, schedule_id, before).await
            }
        }
    };
}
pub(crate) use schedule_store;
