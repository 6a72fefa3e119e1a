//! `agno_sessions` as every SQL adapter reads (with its runs, and Agno 2.x's legacy blob), lists,
//! renames and deletes it. How a session is written (the state merge under each database's
//! locks) may differ per adapter ([`SqlSessions`]).

use agno_core::{
    AgentSession, Cell, DbError, DbErrorKind, DbResult, RunOutput, SessionPage, SessionQuery, SessionSort,
    SessionStore, StateUpdate, now_epoch_secs,
};
use sea_query::{Condition, Expr, ExprTrait, Query, SelectStatement};
use sea_query_sqlx::SqlxBinder;
use serde_json::Value;
use sqlx::Database;

use super::listing::{Listing, readable};
use super::{Columns, Conn, Dialect, SqlAdapter, SqlDb, SqlFamily, Tx, delete_owned, owned_by, retrying, rows};

/// How a database writes a session (its upsert, owner check and state merge differ).
#[async_trait::async_trait]
pub(crate) trait SqlSessions: SqlAdapter {
    /// Writes a session on `conn` (the caller's transaction): the write of `upsert_session`. By
    /// default the stored row is locked, then updated or inserted ([`super::locked`]).
    async fn put_session(&self, conn: &mut Conn<Self::D>, session: &AgentSession, state: &StateUpdate) -> DbResult<()>
    where
        Self: Sized,
    {
        super::locked::put_session(self, conn, session, state).await
    }

    /// `SessionStore::upsert_session`: [`put_session`](Self::put_session) in a transaction of its
    /// own, tried again when it lost a race.
    async fn save_session(&self, session: &AgentSession, state: &StateUpdate) -> DbResult<()>
    where
        Self: Sized,
    {
        retrying::<Self::D, _, _, _>(|| async {
            let what = format!("cannot write session {}", session.session_id);
            let mut tx = Tx::begin(self).await?;
            let written = self.put_session(&mut *tx.tx, session, state).await;
            tx.end(written, &what).await
        })
        .await
    }
}

/// The columns of the sessions table (without Agno 2.x's legacy `runs`), in table order.
pub(crate) const COLUMNS: [&str; 14] = [
    "session_id",
    "session_type",
    "agent_id",
    "team_id",
    "workflow_id",
    "user_id",
    "session_data",
    "agent_data",
    "team_data",
    "workflow_data",
    "metadata",
    "summary",
    "created_at",
    "updated_at",
];

/// The cells of `session`'s row, in [`COLUMNS`] order, with `session_data` as its session data
/// (what a merge made of the session's own) and `now` as `updated_at` (and `created_at`, unless
/// the session has one).
///
/// # Errors
/// A JSON field that cannot be written as JSON.
pub(crate) fn session_cells(
    session: &AgentSession,
    session_data: serde_json::Map<String, Value>,
    now: i64,
) -> DbResult<[Cell; 14]> {
    let json = |v: Option<&Value>| Cell::Json(v.filter(|v| !v.is_null()).cloned());
    let summary = session
        .summary
        .as_ref()
        .map(|s| {
            serde_json::to_value(s)
                .map_err(|e| DbError::new(DbErrorKind::Other, format!("cannot write a session summary: {e}")))
        })
        .transpose()?;
    Ok([
        Cell::Text(Some(session.session_id.clone())),
        Cell::Text(Some(crate::codec::session_type_of(session).to_owned())),
        Cell::Text(session.agent_id.clone()),
        Cell::Text(session.team_id.clone()),
        Cell::Text(session.workflow_id.clone()),
        Cell::Text(session.user_id.clone()),
        Cell::Json(Some(Value::Object(session_data))),
        Cell::Json(session.agent_data.clone().map(Value::Object)),
        json(session.extra.get("team_data")),
        json(session.extra.get("workflow_data")),
        Cell::Json(session.metadata.clone().map(Value::Object)),
        Cell::Json(summary),
        Cell::Int(Some(session.created_at.unwrap_or(now))),
        Cell::Int(Some(now)),
    ])
}

/// A session (without its runs) read back from a row of the sessions table: the JSON columns
/// as stored (an object column holding anything else reads as none; a summary that is not
/// Agno's shape is dropped), `team_data` and `workflow_data` kept as extra fields.
///
/// # Errors
/// A column cannot be read, or a JSON column holds text that is not JSON.
pub(crate) fn session_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<AgentSession> {
    let c = Columns::<D>::of(row, "agno_sessions");
    let mut session = AgentSession::new(c.text("session_id")?.unwrap_or_default());
    session.agent_id = c.text("agent_id")?;
    session.team_id = c.text("team_id")?;
    session.workflow_id = c.text("workflow_id")?;
    session.user_id = c.text("user_id")?;
    session.session_data = c.object("session_data")?;
    session.agent_data = c.object("agent_data")?;
    session.metadata = c.object("metadata")?;
    session.summary = c.json("summary")?.and_then(|v| serde_json::from_value(v).ok());
    for col in ["team_data", "workflow_data"] {
        if let Some(v) = c.json(col)? {
            session.extra.insert(col.to_owned(), v);
        }
    }
    session.created_at = c.int("created_at")?;
    session.updated_at = c.int("updated_at")?;
    session.runs = None;
    Ok(session)
}

/// The session `session_id` (of `user_id`, when given), without its runs.
pub(crate) fn by_id<A: SqlAdapter>(db: &A, session_id: &str, user_id: Option<&str>) -> SelectStatement {
    Query::select()
        .columns(COLUMNS)
        .from(db.table_ref(&db.tables().sessions))
        .and_where(Expr::col("session_id").eq(session_id))
        .cond_where(owned_by::<A::D>(user_id))
        .take()
}

/// The row of the session `session_id` (of `user_id`, when given), with Agno 2.x's legacy `runs`
/// column when `legacy`. Named columns, never `*`: a prepared `*` outlives a dropped column and
/// then reads every column after it from the wrong place.
async fn session_row<A: SqlAdapter>(
    db: &A,
    session_id: &str,
    user_id: Option<&str>,
    legacy: bool,
) -> DbResult<Vec<super::Row<A::D>>> {
    let mut select = by_id(db, session_id, user_id);
    if legacy {
        select.column("runs");
    }
    rows(db, select.build_sqlx(A::D::builder()), &format!("cannot read session {session_id}")).await
}

/// The `run_data` of the latest `limit` runs of a session (all when `None`), newest first.
fn latest_runs<A: SqlAdapter>(db: &A, session_id: &str, limit: Option<usize>) -> SelectStatement {
    let mut select = Query::select();
    select
        .column("run_data")
        .from(db.table_ref(&db.tables().runs))
        .and_where(Expr::col("session_id").eq(session_id))
        .order_by("run_index", sea_query::Order::Desc)
        .order_by("created_at", sea_query::Order::Desc);
    if let Some(n) = limit {
        select.limit(super::bound(n));
    }
    select
}

/// The latest `limit` runs of a session (all when `None`), oldest first.
async fn session_runs<A: SqlAdapter>(db: &A, session_id: &str, limit: Option<usize>) -> DbResult<Vec<RunOutput>> {
    if !db.has_runs_table() {
        return Ok(Vec::new());
    }
    let (sql, values) = latest_runs(db, session_id, limit).build_sqlx(A::D::builder());
    let found = A::D::fetch_replanned(db.pool(), &sql, values)
        .await
        .map_err(|e| A::D::error(&format!("cannot read the runs of session {session_id}"), e))?;
    let mut runs = super::runs::listed_runs::<A::D>(&found);
    runs.reverse();
    Ok(runs)
}

/// The session `session_id` (of `user_id`, when given) and its latest `limit` runs (all when
/// `None`) in one statement: the session's row first, then one row per run, newest first, whose
/// session columns are NULL (so a first row without a `session_id` means no such session).
fn session_with_runs<A: SqlAdapter>(
    db: &A,
    session_id: &str,
    user_id: Option<&str>,
    limit: Option<usize>,
) -> super::runs::Statement {
    let null = || Expr::cust("NULL");
    let mut head = by_id(db, session_id, user_id);
    head.expr_as(Expr::cust("0"), "part")
        .expr_as(null(), "run_data")
        .expr_as(null(), "run_index")
        .expr_as(null(), "run_created_at");
    let mut latest = latest_runs(db, session_id, limit);
    latest.column("run_index").expr_as(Expr::col("created_at"), "run_created_at");
    let mut tail = Query::select();
    for column in COLUMNS {
        tail.expr_as(null(), column);
    }
    tail.expr_as(Expr::cust("1"), "part")
        .column("run_data")
        .column("run_index")
        .column("run_created_at")
        .from_subquery(latest, "latest");
    let mut both = Query::select();
    both.column(sea_query::Asterisk)
        .from_subquery(head.union(sea_query::UnionType::All, tail).take(), "found")
        .order_by("part", sea_query::Order::Asc)
        .order_by("run_index", sea_query::Order::Desc)
        .order_by("run_created_at", sea_query::Order::Desc);
    both.build_sqlx(A::D::builder())
}

#[async_trait::async_trait]
impl<A: SqlFamily> SessionStore for SqlDb<A> {
    /// The session (of `user_id`, when given) with its latest `runs_limit` runs, oldest first (all
    /// without a limit, none with 0). A session of a Python Agno 2.x database still holding its
    /// runs in the legacy `runs` column has them merged with the runs table first, then bounded, so
    /// blob-only runs count towards the latest N.
    async fn get_session(
        &self,
        session_id: &str,
        user_id: Option<&str>,
        runs_limit: Option<usize>,
    ) -> DbResult<Option<AgentSession>> {
        let db = &self.0;
        let with_runs = runs_limit != Some(0);
        let legacy = with_runs && db.has_legacy_runs();
        if A::D::SESSION_AND_RUNS_IN_ONE && with_runs && !legacy && db.has_runs_table() {
            // The session and its runs in one statement (planned for these values: see
            // `Dialect::fetch_replanned`).
            let (sql, values) = session_with_runs(db, session_id, user_id, runs_limit);
            let found = A::D::fetch_replanned(db.pool(), &sql, values)
                .await
                .map_err(|e| A::D::error(&format!("cannot read session {session_id}"), e))?;
            let Some((row, runs)) = found.split_first() else { return Ok(None) };
            if Columns::<A::D>::of(row, "agno_sessions").text("session_id")?.is_none() {
                return Ok(None);
            }
            let mut session = session_from_row::<A::D>(row)?;
            let mut runs = super::runs::listed_runs::<A::D>(runs);
            runs.reverse();
            session.runs = Some(runs);
            return Ok(Some(session));
        }
        let found = match session_row(db, session_id, user_id, legacy).await {
            // The legacy column was dropped by another process since this one looked: look again.
            Err(e) if legacy && e.kind() == DbErrorKind::SchemaTooOld => {
                db.refresh_legacy_runs().await?;
                session_row(db, session_id, user_id, db.has_legacy_runs()).await?
            }
            other => other?,
        };
        let Some(row) = found.first() else { return Ok(None) };
        let c = Columns::<A::D>::of(row, "agno_sessions");
        let legacy = c.has("runs");
        let blob = if legacy { c.json("runs")? } else { None };
        let mut session = session_from_row::<A::D>(row)?;
        if !with_runs {
            return Ok(Some(session));
        }
        let runs = match (session_runs(db, session_id, if blob.is_some() { None } else { runs_limit }).await, blob) {
            // A 2.x database not migrated yet has no runs table: the blob is all there is.
            (Err(e), blob) if legacy && e.kind() == DbErrorKind::SchemaTooOld => {
                crate::codec::keep_latest(crate::codec::merge_legacy_runs(Vec::new(), blob)?, runs_limit)
            }
            (Err(e), _) => return Err(e),
            (Ok(runs), None) => runs,
            (Ok(runs), blob) => crate::codec::keep_latest(crate::codec::merge_legacy_runs(runs, blob)?, runs_limit),
        };
        session.runs = Some(runs);
        Ok(Some(session))
    }

    async fn upsert_session(&self, session: &AgentSession, state: &StateUpdate) -> DbResult<()> {
        self.0.save_session(session, state).await
    }

    /// A page of the listing (by the query's time column, NULL oldest, then by the bytes of the
    /// session id) and the number of matching sessions.
    async fn get_sessions(&self, q: &SessionQuery) -> DbResult<SessionPage> {
        let db = &self.0;
        let mut filter = owned_by::<A::D>(q.user_id.as_deref());
        if let Some(t) = q.session_type {
            filter = filter.add(Expr::col("session_type").eq(t.as_str()));
        }
        if let Some(c) = &q.component_id {
            filter = filter.add(
                Condition::any()
                    .add(A::D::exact("agent_id", c))
                    .add(A::D::exact("team_id", c))
                    .add(A::D::exact("workflow_id", c)),
            );
        }
        if let Some(name) = &q.session_name {
            filter = filter.add(A::D::session_name_like(name));
        }
        if let Some(at) = q.start_timestamp {
            filter = filter.add(Expr::col("created_at").gte(at));
        }
        if let Some(at) = q.end_timestamp {
            filter = filter.add(Expr::col("created_at").lte(at));
        }
        if let Some(f) = &q.filter {
            filter = filter.add(super::filter::condition::<A::D, _>(f));
        }
        let listing = Listing::<A::D>::of(db.table_ref(&db.tables().sessions), COLUMNS, filter);
        let listing = match q.sort_by {
            SessionSort::CreatedAt => listing.by_never_null("created_at", q.sort_order),
            SessionSort::UpdatedAt => listing.by(Expr::col("updated_at"), q.sort_order),
        };
        let (found, total) =
            listing.then_by_bytes("session_id", q.sort_order).page(q.limit, q.page).fetch(db, "sessions").await?;
        Ok(SessionPage {
            sessions: readable::<A::D, _>(&found, "session", "session_id", session_from_row::<A::D>),
            total,
        })
    }

    /// The session renamed, `None` when it is not `user_id`'s (or does not exist).
    async fn rename_session(
        &self,
        session_id: &str,
        name: &str,
        user_id: Option<&str>,
    ) -> DbResult<Option<AgentSession>> {
        let db = &self.0;
        let update = Query::update()
            .table(db.table_ref(&db.tables().sessions))
            .values([("session_data", A::D::named_session_data(name)), ("updated_at", Expr::val(now_epoch_secs()))])
            .and_where(Expr::col("session_id").eq(session_id))
            .cond_where(owned_by::<A::D>(user_id))
            .build_sqlx(A::D::builder());
        let what = format!("cannot rename session {session_id}");
        retrying::<A::D, _, _, _>(|| async {
            let mut tx = Tx::begin(db).await?;
            // Matched rows count (MySQL's connection reports them), so a same-name rename counts.
            if tx.changed(update.clone(), &what).await? == 0 {
                return Ok(None);
            }
            let renamed = tx.rows(by_id(db, session_id, user_id).build_sqlx(A::D::builder()), &what).await?;
            tx.commit(&what).await?;
            renamed.first().map(session_from_row::<A::D>).transpose()
        })
        .await
    }

    async fn delete_session(&self, session_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_sessions(&[session_id.to_owned()], user_id).await? == 1)
    }

    /// How many of `session_ids` (of `user_id`, when given) were deleted, with their runs
    /// (explicitly: a runs table made without the cascading foreign key keeps no orphans) and
    /// their compactions.
    async fn delete_sessions(&self, session_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        let db = &self.0;
        if session_ids.is_empty() {
            return Ok(0);
        }
        let t = db.tables();
        // Asked before the transaction: it takes a connection of its own.
        let has_runs = db.has_runs_table() && db.table_exists(&t.runs).await?;
        let owned = Query::select()
            .column("session_id")
            .from(db.table_ref(&t.sessions))
            .and_where(Expr::col("session_id").is_in(session_ids.iter().map(String::as_str)))
            .cond_where(owned_by::<A::D>(user_id))
            .take();
        let has_compactions = db.table_exists(&t.compactions).await?;
        let runs = Query::delete()
            .from_table(db.table_ref(&t.runs))
            .and_where(Expr::col("session_id").in_subquery(owned.clone()))
            .build_sqlx(A::D::builder());
        // A session's folds hold its messages verbatim: they go with it (as in Agno).
        let compactions = Query::delete()
            .from_table(db.table_ref(&t.compactions))
            .and_where(Expr::col("session_id").in_subquery(owned))
            .build_sqlx(A::D::builder());
        let sessions = delete_owned(db, &t.sessions, "session_id", session_ids, user_id);
        retrying::<A::D, _, _, _>(|| async {
            let mut tx = Tx::begin(db).await?;
            if has_runs {
                tx.changed(runs.clone(), "cannot delete the runs of the sessions").await?;
            }
            if has_compactions {
                tx.changed(compactions.clone(), "cannot delete the compactions of the sessions").await?;
            }
            let deleted = tx.changed(sessions.clone(), "cannot delete sessions").await?;
            tx.commit("cannot delete sessions").await?;
            Ok(deleted)
        })
        .await
    }

    /// The `input` of each session's first top-level run, its text cut to what a session name
    /// shows; only that leaves the database. Runs without an owner count for every user (as Python
    /// Agno wrote them).
    async fn first_run_inputs(
        &self,
        session_ids: &[String],
        user_id: Option<&str>,
    ) -> DbResult<std::collections::HashMap<String, serde_json::Value>> {
        let db = &self.0;
        if session_ids.is_empty() || !db.has_runs_table() {
            return Ok(std::collections::HashMap::new());
        }
        let t = db.table(&db.tables().runs);
        let first = Expr::cust(format!(
            "(SELECT MIN(r2.run_index) FROM {t} r2 WHERE r2.session_id = {t}.session_id AND r2.parent_run_id IS NULL)"
        ));
        let owner = match user_id {
            Some(u) => Condition::any().add(Expr::col("user_id").is_null()).add(A::D::exact("user_id", u)),
            None => Condition::all(),
        };
        let select = Query::select()
            .column("session_id")
            .expr_as(Expr::cust(A::D::first_input(crate::codec::FIRST_INPUT_CHARS)), "input")
            .from(db.table_ref(&db.tables().runs))
            .and_where(Expr::col("session_id").is_in(session_ids.iter().map(String::as_str)))
            .and_where(Expr::col("parent_run_id").is_null())
            .cond_where(owner)
            .and_where(Expr::col("run_index").eq(first))
            .build_sqlx(A::D::builder());
        let found = rows(db, select, "cannot read the first runs of sessions").await?;
        let mut inputs = std::collections::HashMap::new();
        for row in &found {
            let c = Columns::<A::D>::of(row, "agno_runs");
            if let (Some(id), Some(input)) = (c.text("session_id")?, c.json("input")?) {
                inputs.insert(id, input);
            }
        }
        Ok(inputs)
    }
}
