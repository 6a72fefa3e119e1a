//! Session and run writes that lock the stored row (`SELECT ... FOR UPDATE`), decide in Rust
//! (the owner, the state merge, the run index) and then update or insert: the writes of a
//! database whose upsert cannot decide the owner in the statement itself (MySQL), and the
//! default of [`SqlSessions::put_session`](super::sessions::SqlSessions::put_session) and
//! [`SqlRuns::put_run`](super::runs::SqlRuns::put_run). The owner predicate is part of each
//! update too, not only of the check before it. A concurrent insert of the same id fails with a
//! duplicate key, and the caller's transaction is tried again.

use agno_core::{AgentSession, Cell, DbError, DbErrorKind, DbResult, RunOutput, StateUpdate, now_epoch_secs};
use sea_query::{Condition, Expr, ExprTrait, LockType, Query, SelectStatement};
use sea_query_sqlx::SqlxBinder;

use super::runs::{RUN_COLUMNS, RunCells};
use super::sessions::{COLUMNS, session_cells};
use super::{Columns, Conn, Dialect, Row, SqlAdapter, values};

fn belongs_elsewhere(what: &str, id: &str) -> DbError {
    DbError::new(DbErrorKind::Conflict, format!("{what} {id} belongs to another user"))
}

/// Rows a writer may replace: its own, or shared ones.
fn replaceable<D: Dialect>(user_id: Option<&str>) -> Condition {
    let shared = Condition::any().add(Expr::col("user_id").is_null());
    match user_id {
        Some(u) => shared.add(D::exact("user_id", u)),
        None => shared,
    }
}

/// The rows `select` locks on `conn`.
async fn locked<D: Dialect>(conn: &mut Conn<D>, select: &mut SelectStatement, what: &str) -> DbResult<Vec<Row<D>>> {
    let (sql, values) = select.lock(LockType::Update).build_sqlx(D::builder());
    D::fetch_on(conn, &sql, values).await.map_err(|e| D::error(what, e))
}

/// Runs a built write on `conn`; the rows it changed.
async fn write<D: Dialect>(
    conn: &mut Conn<D>,
    (sql, values): (String, sea_query_sqlx::SqlxValues),
    what: &str,
) -> DbResult<u64> {
    D::execute_on(conn, &sql, values).await.map_err(|e| D::error(what, e))
}

/// Inserts `cells` as a row of `table` with `columns`.
fn insert<A: SqlAdapter>(
    db: &A,
    table: &str,
    columns: impl IntoIterator<Item = &'static str>,
    cells: Vec<Cell>,
) -> DbResult<(String, sea_query_sqlx::SqlxValues)> {
    let mut insert = Query::insert();
    insert
        .into_table(db.table_ref(table))
        .columns(columns)
        .values(values::<A::D>(cells)?)
        .map_err(|e| DbError::new(DbErrorKind::Other, e.to_string()))?;
    Ok(insert.build_sqlx(A::D::builder()))
}

/// Writes `session` on `conn` (the caller's transaction); another user's session is a conflict.
pub(crate) async fn put_session<A: SqlAdapter>(
    db: &A,
    conn: &mut Conn<A::D>,
    session: &AgentSession,
    state: &StateUpdate,
) -> DbResult<()> {
    let t = &db.tables().sessions;
    let id = session.session_id.as_str();
    let what = format!("cannot write session {id}");
    let mut select = Query::select();
    select.columns(["user_id", "session_data"]).from(db.table_ref(t)).and_where(Expr::col("session_id").eq(id));
    let stored = locked::<A::D>(conn, &mut select, &format!("cannot read session {id}")).await?;
    let data = session.session_data.clone().unwrap_or_default();
    let now = now_epoch_secs();
    let Some(row) = stored.first() else {
        let cells = session_cells(session, state.session_data(data, None), now)?;
        write::<A::D>(conn, insert(db, t, COLUMNS, cells.into())?, &what).await?;
        return Ok(());
    };
    let c = Columns::<A::D>::of(row, "agno_sessions");
    let owner = c.text("user_id")?;
    if owner.is_some() && owner != session.user_id {
        return Err(belongs_elsewhere("session", id));
    }
    let data = match state {
        StateUpdate::Merge { .. } => state.session_data(data, c.object("session_data")?.as_ref()),
        _ => data,
    };
    let set = COLUMNS.into_iter().zip(values::<A::D>(session_cells(session, data, now)?)?);
    let update = Query::update()
        .table(db.table_ref(t))
        .values(set.filter(|(column, _)| !matches!(*column, "session_id" | "created_at")))
        .and_where(Expr::col("session_id").eq(id))
        .cond_where(replaceable::<A::D>(session.user_id.as_deref()))
        .build_sqlx(A::D::builder());
    if write::<A::D>(conn, update, &what).await? == 0 {
        return Err(belongs_elsewhere("session", id));
    }
    Ok(())
}

/// Writes `run` into `session_id` on `conn` (the caller's transaction) and answers its
/// `run_index`: a new run's is `max + 1` of its session, read while holding the session row's
/// lock, so writers of one session take their index one at a time. Another user's run is a
/// conflict, as is a new run whose session does not exist. Writes no run facts.
pub(crate) async fn put_run<A: SqlAdapter>(
    db: &A,
    conn: &mut Conn<A::D>,
    run: &RunOutput,
    session_id: &str,
    user_id: Option<&str>,
) -> DbResult<i64> {
    let t = db.tables();
    let run_id = run.id();
    let what = format!("cannot write run {run_id}");
    let now = now_epoch_secs();
    let RunCells { head, tail, .. } = RunCells::of(run, session_id, user_id, now)?;
    let mut select = Query::select();
    select.columns(["user_id", "run_index"]).from(db.table_ref(&t.runs)).and_where(Expr::col("run_id").eq(run_id));
    let stored = locked::<A::D>(conn, &mut select, &format!("cannot read run {run_id}")).await?;
    let stored_index = match stored.first() {
        Some(row) => {
            let c = Columns::<A::D>::of(row, "agno_runs");
            let owner = c.text("user_id")?;
            if owner.is_some() && owner.as_deref() != user_id {
                return Err(belongs_elsewhere("run", run_id));
            }
            c.int("run_index")?
        }
        None => None,
    };
    let index = match stored_index {
        Some(index) => index,
        None => {
            let mut select = Query::select();
            select
                .column("session_id")
                .from(db.table_ref(&t.sessions))
                .and_where(Expr::col("session_id").eq(session_id));
            let session = locked::<A::D>(conn, &mut select, &format!("cannot lock session {session_id}")).await?;
            if session.is_empty() && stored.is_empty() {
                return Err(DbError::new(
                    DbErrorKind::Conflict,
                    format!("cannot write run {run_id}: session {session_id} does not exist; save the session first"),
                ));
            }
            let (sql, values) = Query::select()
                .expr_as(Expr::col("run_index").max(), "m")
                .from(db.table_ref(&t.runs))
                .and_where(Expr::col("session_id").eq(session_id))
                .build_sqlx(A::D::builder());
            let rows = A::D::fetch_on(conn, &sql, values)
                .await
                .map_err(|e| A::D::error(&format!("cannot read the run index of session {session_id}"), e))?;
            let max = match rows.first() {
                Some(row) => Columns::<A::D>::of(row, "agno_runs").int("m")?,
                None => None,
            };
            max.map_or(0, |m| m + 1)
        }
    };
    let cells: Vec<Cell> = head.into_iter().chain([Cell::Int(Some(index))]).chain(tail).collect();
    if stored.is_empty() {
        write::<A::D>(conn, insert(db, &t.runs, RUN_COLUMNS, cells)?, &what).await?;
        return Ok(index);
    }
    let set = RUN_COLUMNS.into_iter().zip(values::<A::D>(cells)?);
    let update = Query::update()
        .table(db.table_ref(&t.runs))
        .values(set.filter(|(column, _)| {
            matches!(*column, "status" | "run_data" | "parent_run_id" | "updated_at" | "run_index")
        }))
        .and_where(Expr::col("run_id").eq(run_id))
        .cond_where(replaceable::<A::D>(user_id))
        .build_sqlx(A::D::builder());
    if write::<A::D>(conn, update, &what).await? == 0 {
        return Err(belongs_elsewhere("run", run_id));
    }
    Ok(index)
}
