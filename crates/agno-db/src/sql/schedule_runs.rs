//! `agno_schedule_runs`: the schedule run half of every SQL adapter's schedule store (see
//! [`super::schedules`]).

use std::collections::HashMap;

use agno_core::{Cell, DbError, DbErrorKind, DbResult, ScheduleRun, ScheduleRunUpdate};
use sea_query::{Expr, ExprTrait, Query, SelectStatement};
use sea_query_sqlx::SqlxBinder;
use sqlx::Database;

use super::listing::{Listing, readable};
use super::schedules::values;
use super::{Columns, Dialect, SqlDb, Tx, Violation, owned_by, retrying, rows};
use crate::schedules::SCHEDULE_RUNS_PAGE;

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
fn run_by_id<A: SqlDb>(db: &A, id: &str, user_id: Option<&str>) -> SelectStatement {
    Query::select()
        .columns(RUN)
        .from(db.table_ref(&db.tables().schedule_runs))
        .and_where(Expr::col("id").eq(id))
        .cond_where(owned_by::<A::D>(user_id))
        .take()
}

/// `ScheduleStore::create_schedule_run`: the run as stored, its owner copied from the schedule
/// in the same statement; no schedule, no row (not found).
pub(crate) async fn create<A: SqlDb>(db: &A, run: &ScheduleRun) -> DbResult<ScheduleRun> {
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

/// `ScheduleStore::update_schedule_run`: the run as updated, `None` when it does not exist.
pub(crate) async fn update<A: SqlDb>(db: &A, id: &str, update: &ScheduleRunUpdate) -> DbResult<Option<ScheduleRun>> {
    let columns = update.columns();
    if columns.is_empty() {
        return get(db, id, None).await;
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

/// `ScheduleStore::get_schedule_run`.
pub(crate) async fn get<A: SqlDb>(db: &A, id: &str, user_id: Option<&str>) -> DbResult<Option<ScheduleRun>> {
    let select = run_by_id(db, id, user_id).build_sqlx(A::D::builder());
    let found = rows(db, select, &format!("cannot read schedule run {id}")).await?;
    found.first().map(schedule_run_from_row::<A::D>).transpose()
}

/// `ScheduleStore::get_schedule_runs`: newest first, then by the bytes of the id; a page of
/// [`SCHEDULE_RUNS_PAGE`] unless asked otherwise.
pub(crate) async fn list<A: SqlDb>(
    db: &A,
    schedule_id: &str,
    user_id: Option<&str>,
    limit: Option<usize>,
    page: Option<usize>,
) -> DbResult<(Vec<ScheduleRun>, u64)> {
    let filter = owned_by::<A::D>(user_id).add(Expr::col("schedule_id").eq(schedule_id));
    let (found, total) = Listing::<A::D>::of(db.table_ref(&db.tables().schedule_runs), RUN, filter)
        .by(Expr::col("created_at"), agno_core::SortOrder::Desc)
        .then_by_bytes("id", agno_core::SortOrder::Desc)
        .page(Some(limit.unwrap_or(SCHEDULE_RUNS_PAGE)), page)
        .fetch(db, "schedule runs")
        .await?;
    Ok((readable::<A::D, _>(&found, "schedule run", "id", schedule_run_from_row::<A::D>), total))
}

/// `ScheduleStore::get_latest_schedule_runs`: the run of each schedule triggered last (then
/// created last, then the greatest id).
pub(crate) async fn latest<A: SqlDb>(db: &A, schedule_ids: &[String]) -> DbResult<HashMap<String, ScheduleRun>> {
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

/// `ScheduleStore::delete_schedule_runs`: the runs of `schedule_id` completed before `before`.
pub(crate) async fn expire<A: SqlDb>(db: &A, schedule_id: &str, before: i64) -> DbResult<u64> {
    let statement = Query::delete()
        .from_table(db.table_ref(&db.tables().schedule_runs))
        .and_where(Expr::col("schedule_id").eq(schedule_id))
        .and_where(Expr::col("completed_at").lt(before))
        .build_sqlx(A::D::builder());
    super::changed(db, statement, &format!("cannot expire the runs of schedule {schedule_id}")).await
}
