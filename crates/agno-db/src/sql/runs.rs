//! `agno_runs` as every SQL adapter reads, deletes and writes it with its session in one
//! transaction. How the run row itself is written (its `run_index` assigned in the statement, the
//! session's row locks) differs per database and stays with each adapter (`SqlAdapter::put_run`).

use agno_core::{
    Cell, DbError, DbErrorKind, DbResult, RunCursor, RunOutput, RunPage, RunQuery, RunStore, RunWrite, SortOrder,
};
use sea_query::{Condition, Expr, ExprTrait, Order, Query};
use sea_query_sqlx::SqlxBinder;
use serde_json::Value;

use super::group_commit;
use super::sessions::SqlSessions;
use super::{
    Columns, Conn, Dialect, Row, SqlAdapter, SqlDb, SqlFamily, Tx, changed, delete_owned, owned_by, retrying, rows,
};
use crate::codec::{decode_listed_run, decode_run, run_type, skip_unreadable_run};

/// How a database writes a run (how it assigns `run_index` differs).
#[async_trait::async_trait]
pub(crate) trait SqlRuns: SqlAdapter {
    /// Writes a run on `conn` (the caller's transaction): the write of `upsert_run`; its
    /// `run_index`. `stored`: the run's row most likely exists already (a claimed job's run,
    /// stored `PENDING` when it was accepted), which a database may use to write it more cheaply
    /// (PostgreSQL updates it by its key before taking the run-index lock); the answer is the
    /// same either way.
    /// By default the stored row is locked, then updated or inserted ([`super::locked`]).
    async fn put_run(
        &self,
        conn: &mut Conn<Self::D>,
        run: &RunOutput,
        sid: &str,
        user: Option<&str>,
        _stored: bool,
    ) -> DbResult<i64>
    where
        Self: Sized,
    {
        super::locked::put_run(self, conn, run, sid, user).await
    }

    /// Writes the session, then the run, on `conn` (the caller's transaction): the statements of
    /// [`write_once`] after its guard; the run's `run_index`. A database may state both in fewer
    /// calls (SQLite: one call to the connection's thread); the answer is the same either way.
    async fn put_session_and_run(&self, conn: &mut Conn<Self::D>, write: RunWrite<'_>, stored: bool) -> DbResult<i64>
    where
        Self: SqlSessions + Sized,
    {
        self.put_session(&mut *conn, write.session, write.state).await?;
        self.put_run(&mut *conn, write.run, &write.session.session_id, write.user_id, stored).await
    }

    /// A claimed run's write (`guard` checks the claim) in the fewest statements this database
    /// can state it in, or [`Claimed::Generic`] to leave it to the transaction of
    /// [`write_once`]'s statements. Nothing may be left half written: what this writes before
    /// answering `Generic` is what that transaction writes again.
    async fn write_claimed(&self, _write: RunWrite<'_>, _guard: &Guard) -> DbResult<Claimed> {
        Ok(Claimed::Generic)
    }

    /// `RunStore::upsert_run`: [`put_run`](Self::put_run) in a transaction of its own, tried
    /// again when it lost a race; the run's `run_index`.
    async fn save_run(&self, run: &RunOutput, session_id: &str, user_id: Option<&str>) -> DbResult<i64>
    where
        Self: Sized,
    {
        retrying::<Self::D, _, _, _>(|| async {
            let what = format!("cannot write run {}", run.id());
            let mut tx = Tx::begin(self).await?;
            let written = self.put_run(&mut *tx.tx, run, session_id, user_id, false).await;
            tx.end(written, &what).await
        })
        .await
    }
}

/// The columns of a run row, in table order (Agno's `agno_runs`).
pub(crate) const RUN_COLUMNS: [&str; 13] = [
    "run_id",
    "session_id",
    "run_type",
    "agent_id",
    "team_id",
    "workflow_id",
    "user_id",
    "parent_run_id",
    "status",
    "run_index",
    "run_data",
    "created_at",
    "updated_at",
];

/// The columns of a run row before `run_index`, in table order ([`RunCells::head`]).
pub(crate) const RUN_HEAD: &str =
    "run_id, session_id, run_type, agent_id, team_id, workflow_id, user_id, parent_run_id, status";

/// The columns of a run row after `run_index`, in table order ([`RunCells::tail`]).
pub(crate) const RUN_TAIL: &str = "run_data, created_at, updated_at";

/// One run as the SQL adapters write it: its row in the runs table (Agno's `agno_runs`), but for
/// `run_index`, which each database assigns in its own statement between `head` and `tail`; and
/// its row in the run-facts table. Every adapter binds these, in this order.
pub(crate) struct RunCells {
    /// The values of [`RUN_HEAD`].
    pub(crate) head: [Cell; 9],
    /// The values of [`RUN_TAIL`].
    pub(crate) tail: [Cell; 3],
    /// `run_id, model, model_provider` of the run-facts table.
    pub(crate) facts: [Cell; 3],
}

impl RunCells {
    /// The cells of `run`, written at `now` into `session_id` for `user_id`.
    ///
    /// # Errors
    /// The run cannot be encoded as JSON.
    pub(crate) fn of(run: &RunOutput, session_id: &str, user_id: Option<&str>, now: i64) -> DbResult<Self> {
        let data = serde_json::to_value(run)
            .map_err(|e| DbError::new(DbErrorKind::Other, format!("cannot encode run {}: {e}", run.id())))?;
        let text = |v: Option<&str>| Cell::Text(v.map(str::to_owned));
        let field = |key: &str| text(data.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()));
        let head = [
            text(Some(run.id())),
            text(Some(session_id)),
            text(Some(run_type(&data))),
            field("agent_id"),
            field("team_id"),
            field("workflow_id"),
            text(user_id),
            field("parent_run_id"),
            text(Some(run.status.as_str())),
        ];
        let facts = [text(Some(run.id())), field("model"), field("model_provider")];
        Ok(Self { head, tail: [Cell::Json(Some(data)), Cell::Int(Some(run.created_at)), Cell::Int(Some(now))], facts })
    }
}

/// Binds `cells` to `q`, in order, as the dialect stores each kind.
///
/// # Errors
/// A JSON cell that cannot be encoded.
pub(crate) fn bind_cells<'q, D: Dialect>(
    mut q: super::Query<'q, D::DB>,
    cells: impl IntoIterator<Item = Cell>,
) -> DbResult<super::Query<'q, D::DB>> {
    for cell in cells {
        q = D::bind(q, cell)?;
    }
    Ok(q)
}

/// The error of a failed run write: a `Conflict` when the run's session does not exist (a
/// foreign key), else a storage error naming the run.
pub(crate) fn write_error<D: Dialect>(run_id: &str, session_id: &str, e: sqlx::Error) -> DbError {
    if D::violation(&e) == Some(super::Violation::ForeignKey) {
        let message = format!("cannot write run {run_id}: session {session_id} does not exist; save the session first");
        return DbError::new(DbErrorKind::Conflict, message).with_source(e);
    }
    D::error(&format!("cannot write run {run_id}"), e)
}

/// The runs of a listing whose `run_data` decodes; the others are left out with a warning.
pub(crate) fn listed_runs<D: Dialect>(found: &[Row<D>]) -> Vec<RunOutput> {
    found
        .iter()
        .filter_map(|r| match Columns::<D>::of(r, "agno_runs").json("run_data") {
            Ok(data) => data.and_then(decode_listed_run),
            Err(e) => {
                skip_unreadable_run("(unknown)", &e);
                None
            }
        })
        .collect()
}

/// A built statement and its values.
pub(crate) type Statement = (String, sea_query_sqlx::SqlxValues);

/// A claimed job's lease check, which a worker's run write is conditioned on: the claim it
/// checks (refreshing the lease at `now`) and the statement checking it, for databases that
/// write it on its own before the run.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    /// The claim.
    pub(crate) lease: agno_core::JobLease,
    /// When the check is made: the lease's new `locked_at` while the job runs.
    pub(crate) now: i64,
    /// The check as one statement: it changes (matches) a row while the claim holds.
    pub(crate) statement: Statement,
}

/// What a database did with a claimed run's write ([`SqlRuns::write_claimed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claimed {
    /// Written, with its session: the run's `run_index`.
    Written(i64),
    /// The claim no longer holds: nothing written.
    Refused,
    /// Left to the generic write (a transaction of [`write_once`]'s statements).
    Generic,
}

/// Writes a run and its session in one transaction, after `guard` (a claimed job's lease check)
/// changed a row: the run's `run_index`, `None` (nothing written) when the guard did not hold.
/// Where the database has one writer (SQLite), concurrent writes share a transaction
/// ([`group_commit`](super::group_commit)).
///
/// # Errors
/// A statement fails, or the session or run belongs to another user.
pub(crate) async fn write_with_session<A: SqlSessions + SqlRuns>(
    db: &A,
    write: RunWrite<'_>,
    guard: Option<Guard>,
) -> DbResult<Option<i64>> {
    if let Some(g) = &guard {
        match db.write_claimed(write, g).await? {
            Claimed::Written(index) => return Ok(Some(index)),
            Claimed::Refused => return Ok(None),
            Claimed::Generic => {}
        }
    }
    let owned = || OwnedWrite::of(write, guard.clone());
    let alone = async |in_turn| write_alone(db, write, guard.clone(), in_turn).await;
    group_commit::submit(db, owned, |db, conn, owned| Box::pin(owned.write_on(db, conn)), alone).await
}

/// A run write, owned so that another writer's future (a group commit's leader) can run it.
struct OwnedWrite {
    session: agno_core::AgentSession,
    state: agno_core::StateUpdate,
    run: RunOutput,
    user_id: Option<String>,
    guard: Option<Guard>,
}

impl OwnedWrite {
    fn of(write: RunWrite<'_>, guard: Option<Guard>) -> Self {
        Self {
            session: write.session.clone(),
            state: write.state.clone(),
            run: write.run.clone(),
            user_id: write.user_id.map(str::to_owned),
            guard,
        }
    }

    /// [`write_once`] of this write.
    async fn write_on<A: SqlSessions + SqlRuns>(&self, db: &A, conn: &mut Conn<A::D>) -> DbResult<Option<i64>> {
        let write =
            RunWrite { session: &self.session, state: &self.state, run: &self.run, user_id: self.user_id.as_deref() };
        write_once(db, conn, write, self.guard.as_ref()).await
    }
}

/// [`write_with_session`] in a transaction of its own (taking the writer turn, unless the
/// caller holds it: `in_turn`), tried again when it lost a race.
pub(crate) async fn write_alone<A: SqlSessions + SqlRuns>(
    db: &A,
    write: RunWrite<'_>,
    guard: Option<Guard>,
    in_turn: bool,
) -> DbResult<Option<i64>> {
    super::retrying::<A::D, _, _, _>(|| async {
        let what = format!("cannot write run {}", write.run.id());
        let mut tx = if in_turn { Tx::begin_in_turn(db).await? } else { Tx::begin(db).await? };
        match write_once(db, &mut *tx.tx, write, guard.as_ref()).await {
            Ok(Some(index)) => tx.commit(&what).await.map(|()| Some(index)),
            other => {
                tx.rollback(&what).await?;
                other
            }
        }
    })
    .await
}

/// The statements of [`write_with_session`] on `conn` (the caller's transaction): the guard,
/// then the session, then the run.
pub(crate) async fn write_once<A: SqlSessions + SqlRuns>(
    db: &A,
    conn: &mut Conn<A::D>,
    write: RunWrite<'_>,
    guard: Option<&Guard>,
) -> DbResult<Option<i64>> {
    if let Some(guard) = guard {
        let what = format!("cannot write run {}", write.run.id());
        let (sql, values) = guard.statement.clone();
        if A::D::execute_on(&mut *conn, &sql, values).await.map_err(|e| A::D::error(&what, e))? == 0 {
            return Ok(None);
        }
    }
    // A guarded write is a claimed job's: its run was stored when it was accepted.
    db.put_session_and_run(&mut *conn, write, guard.is_some()).await.map(Some)
}

#[async_trait::async_trait]
impl<A: SqlFamily> RunStore for SqlDb<A> {
    async fn upsert_run(&self, run: &RunOutput, session_id: &str, user_id: Option<&str>) -> DbResult<i64> {
        self.0.save_run(run, session_id, user_id).await
    }

    /// `write_with_session` without a guard.
    async fn save_run_write(&self, write: RunWrite<'_>) -> DbResult<i64> {
        let db = &self.0;
        let index = write_with_session(db, write, None).await?;
        index.ok_or_else(|| DbError::new(DbErrorKind::Other, format!("run {} was not written", write.run.id())))
    }

    async fn get_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<RunOutput>> {
        let db = &self.0;
        if !db.has_runs_table() {
            return Ok(None);
        }
        let select = Query::select()
            .column("run_data")
            .from(db.table_ref(&db.tables().runs))
            .and_where(Expr::col("run_id").eq(run_id))
            .cond_where(owned_by::<A::D>(user_id))
            .build_sqlx(A::D::builder());
        let found = rows(db, select, &format!("cannot read run {run_id}")).await?;
        match found.first() {
            Some(row) => Columns::<A::D>::of(row, "agno_runs").json("run_data")?.map(decode_run).transpose(),
            None => Ok(None),
        }
    }

    /// By creation time, then by the bytes of the run id, from after the query's cursor; a page
    /// ends with the cursor of its last run when more follow.
    async fn get_runs(&self, q: &RunQuery) -> DbResult<RunPage> {
        let db = &self.0;
        if !db.has_runs_table() {
            return Ok(RunPage::default());
        }
        let mut filter = owned_by::<A::D>(q.user_id.as_deref());
        for (column, value) in [
            ("session_id", &q.session_id),
            ("agent_id", &q.agent_id),
            ("team_id", &q.team_id),
            ("workflow_id", &q.workflow_id),
        ] {
            if let Some(v) = value {
                filter = filter.add(Expr::col(column).eq(v.as_str()));
            }
        }
        if let Some(status) = q.status {
            filter = filter.add(Expr::col("status").eq(status.as_str()));
        }
        let order = match q.sort {
            SortOrder::Asc => Order::Asc,
            SortOrder::Desc => Order::Desc,
        };
        if let Some(c) = &q.cursor {
            let after = |a: Expr, b: Expr| if order == Order::Asc { a.gt(b) } else { a.lt(b) };
            let id = Expr::cust(A::D::bytes_of("run_id"));
            let cursor_id = Expr::cust_with_values(A::D::bytes_of(&A::D::placeholder(1)), [c.run_id.as_str()]);
            filter = filter.add(
                Condition::any()
                    .add(after(Expr::col("created_at"), Expr::val(c.created_at)))
                    .add(Expr::col("created_at").eq(c.created_at).and(after(id, cursor_id))),
            );
        }
        let mut select = Query::select();
        select
            .column("run_data")
            .from(db.table_ref(&db.tables().runs))
            .cond_where(filter)
            .order_by("created_at", order.clone())
            .order_by_expr(A::D::byte_order("run_id"), order);
        if let Some(n) = q.limit {
            select.limit(super::bound(n.saturating_add(1)));
        }
        let found = rows(db, select.build_sqlx(A::D::builder()), "cannot list runs").await?;
        let mut runs = listed_runs::<A::D>(&found);
        let next_cursor = match q.limit {
            Some(n) if runs.len() > n => {
                runs.truncate(n);
                runs.last().map(|r| RunCursor { created_at: r.created_at, run_id: r.id().to_owned() })
            }
            _ => None,
        };
        Ok(RunPage { runs, next_cursor })
    }

    async fn delete_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_runs(&[run_id.to_owned()], user_id).await? == 1)
    }

    /// How many of `run_ids` (of `user_id`, when given) were deleted.
    async fn delete_runs(&self, run_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        let db = &self.0;
        if run_ids.is_empty() || !db.has_runs_table() {
            return Ok(0);
        }
        let delete = delete_owned(db, &db.tables().runs, "run_id", run_ids, user_id);
        changed(db, delete, "cannot delete runs").await
    }
}

#[cfg(test)]
mod tests {
    use super::{RUN_COLUMNS, RUN_HEAD, RUN_TAIL};

    #[test]
    fn the_run_statements_name_the_columns_of_the_row() {
        assert_eq!(format!("{RUN_HEAD}, run_index, {RUN_TAIL}"), RUN_COLUMNS.join(", "));
    }
}
