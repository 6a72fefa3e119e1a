//! The SQL family: SQLite, PostgreSQL and MySQL/MariaDB as one type, [`SqlDb<S>`] over each
//! database's state, with every store implemented once, generic over a [`Dialect`] (how a value
//! is bound and read back, the statement builder, byte order, the few JSON and date expressions,
//! how a driver error is classified) and an [`SqlAdapter`] (a state's pool, tables and flags).
//! Each stored record has one description here (its columns in table order, the values it
//! binds, how a row reads back), and each store one `impl<A: SqlFamily> ... for SqlDb<A>` per
//! area ([`schedules`], [`sessions`], [`runs`], [`evals`], [`metrics`], [`job_transitions`],
//! ...). What truly differs per database is a trait of its area ([`sessions::SqlSessions`],
//! [`runs::SqlRuns`], [`memories::SqlMemories`], [`migrate::SqlSchema`],
//! [`jobs::SqlQueue`]) implemented in the adapter's own module of that area.

mod agent_files;
pub(crate) mod approvals;
mod compactions;
pub(crate) mod components;
pub(crate) mod dialects;
pub(crate) mod evals;
mod filter;
pub(crate) mod group_commit;
pub(crate) mod job_transitions;
pub(crate) mod jobs;
pub(crate) mod knowledge;
pub(crate) mod learnings;
pub(crate) mod listing;
mod locked;
pub(crate) mod memories;
pub(crate) mod metrics;
pub(crate) mod migrate;
pub(crate) mod record;
pub(crate) mod runs;
pub(crate) mod schedules;
mod service_accounts;
pub(crate) mod sessions;
pub(crate) mod sqlite_builder;
pub(crate) mod traces;
pub(crate) mod tx;
pub(crate) mod upsert;
pub(crate) mod versions;

pub(crate) use dialects::{Conn, Dialect, Row};
pub(crate) use tx::{Tx, retrying};

use agno_core::{Cell, DbError, DbResult};
use async_trait::async_trait;
use serde_json::Value;
use sqlx::{Database, Pool};

use crate::TableNames;
use crate::migration::TableKind;

/// A query being bound, of the dialect's database.
pub(crate) type Query<'q, DB> = sqlx::query::Query<'q, DB, <DB as Database>::Arguments>;

/// A database of the SQL family: [`crate::SqliteDb`], [`crate::PostgresDb`] or
/// [`crate::MySqlDb`], each `SqlDb` over its own state `S` (its pool and what it knows of the
/// schema). Every store (sessions, runs, memories, evals, knowledge, metrics, schedules, the job
/// queue, migrations) is implemented once for all three, generic over the database's
/// `SqlAdapter` impl, which holds what truly differs (DDL, migration steps, the queue's claim).
pub struct SqlDb<S>(pub(crate) S);

// `SqlFamily` stays crate-private: callers name `SqliteDb`, `PostgresDb` or `MySqlDb`.
#[allow(private_bounds)]
impl<A: SqlFamily> SqlDb<A> {
    /// The table names in use.
    pub fn tables(&self) -> &TableNames {
        self.0.tables()
    }

    /// Creates every missing table at the latest schema and stamps it. Existing tables are left
    /// alone: use the migrations for those.
    ///
    /// # Errors
    /// A storage error.
    pub async fn create_tables(&self) -> DbResult<()> {
        crate::migration::Migrate::create_tables(self).await
    }
}

impl<S> std::ops::Deref for SqlDb<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.0
    }
}

impl<S: std::fmt::Debug> std::fmt::Debug for SqlDb<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// An SQL adapter as the shared store code sees it: its dialect, its pool and how it names its
/// tables.
#[async_trait]
pub(crate) trait SqlAdapter: Send + Sync + std::fmt::Debug + 'static {
    /// The adapter's dialect.
    type D: Dialect;

    /// What every SQL adapter holds alike.
    fn core(&self) -> &SqlCore<<Self::D as Dialect>::DB>;

    /// The connection pool.
    fn pool(&self) -> &Pool<<Self::D as Dialect>::DB> {
        &self.core().pool
    }

    /// The configured table names.
    fn tables(&self) -> &TableNames {
        &self.core().tables
    }

    /// The agent files table as built statements name it (on PostgreSQL in the schema `fs`).
    fn files_table(&self) -> sea_query::TableRef {
        self.table_ref(&self.tables().files)
    }

    /// The statements creating a table Agno creates on first use (and its schema), as Agno 3.1
    /// does.
    fn lazy_ddl(&self, table: LazyTable) -> Vec<String>;

    /// Set once this process made sure the table exists.
    fn lazy_ready(&self, table: LazyTable) -> &tokio::sync::OnceCell<()> {
        &self.core().lazy_tables[table as usize]
    }

    /// `table` as statements name it: schema-qualified and quoted on PostgreSQL, quoted on
    /// MySQL, bare on SQLite.
    fn table(&self, table: &str) -> String;

    /// `table` as a built statement names it (schema-qualified on PostgreSQL).
    fn table_ref(&self, table: &str) -> sea_query::TableRef;

    /// This process's turn to write, where the database has a single writer (SQLite: held until
    /// the guard drops); none elsewhere.
    async fn writer_turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        None
    }

    /// The writer turn when nobody holds it now (SQLite); none where writers do not take turns.
    fn try_writer_turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        None
    }

    /// Where run writes waiting for the writer turn are committed together (SQLite); none
    /// where writers do not take turns.
    fn group_commit(&self) -> Option<&group_commit::GroupCommit<Self>>
    where
        Self: Sized,
    {
        None
    }

    /// Whether the runs table is known to exist (a Python Agno 2.x database not migrated yet has
    /// none: its runs live in the sessions' legacy blob).
    fn has_runs_table(&self) -> bool {
        true
    }

    /// The statement sending `notice` inside a transaction, where the database has
    /// notifications (PostgreSQL's `NOTIFY`); none elsewhere.
    fn notice(&self, _notice: job_transitions::Notice<'_>) -> Option<(String, sea_query_sqlx::SqlxValues)> {
        None
    }

    /// Runs a built write with `notice` sent when it changed a row, in one statement where the
    /// database can (PostgreSQL); the number of rows it changed.
    ///
    /// # Errors
    /// The write fails.
    async fn changed_noticed(
        &self,
        statement: (String, sea_query_sqlx::SqlxValues),
        _notice: job_transitions::Notice<'_>,
        what: &str,
    ) -> DbResult<u64>
    where
        Self: Sized,
    {
        changed(self, statement, what).await
    }

    /// The statement a catalog write starts with so that the catalog writes of every process
    /// sharing the database take turns: PostgreSQL's transaction advisory lock, MySQL's row lock
    /// on the components table's schema version; none where the transaction alone takes the
    /// database's one write turn (SQLite's `BEGIN IMMEDIATE`).
    fn catalog_lock(&self) -> Option<(String, sea_query_sqlx::SqlxValues)> {
        None
    }

    /// The statement a catalog write about `target` ends with so that every replica hears of it
    /// when it commits (PostgreSQL's `pg_notify`); none where there are no notifications.
    fn catalog_notice(&self, _target: &str) -> Option<(String, sea_query_sqlx::SqlxValues)> {
        None
    }

    /// The catalog notifications (see `ComponentStore::catalog_changes`); none by default.
    ///
    /// # Errors
    /// The subscription cannot be made.
    async fn catalog_listen(&self) -> DbResult<Option<futures::stream::BoxStream<'static, String>>> {
        Ok(None)
    }

    /// Whether the run facts table (each run's model, written beside it) exists.
    fn has_run_facts(&self) -> bool {
        false
    }

    /// Whether the sessions table is known to still have Agno 2.x's legacy `runs` column.
    fn has_legacy_runs(&self) -> bool {
        self.core().legacy_runs_column.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Looks again whether the legacy `runs` column exists (another process may have dropped it).
    ///
    /// # Errors
    /// The catalog cannot be read.
    async fn refresh_legacy_runs(&self) -> DbResult<()>;

    /// The database's catalog query that returns a row when `table` exists (and has `column`,
    /// when one is given).
    fn catalog(&self, table: &str, column: Option<&str>) -> (String, sea_query_sqlx::SqlxValues);

    /// Whether `table` has `column`.
    ///
    /// # Errors
    /// The catalog cannot be read.
    async fn column_exists(&self, table: &str, column: &str) -> DbResult<bool>
    where
        Self: Sized,
    {
        let what = format!("cannot read the columns of {table}");
        Ok(!rows(self, self.catalog(table, Some(column)), &what).await?.is_empty())
    }

    /// Whether `table` exists.
    ///
    /// # Errors
    /// The catalog cannot be read.
    async fn table_exists(&self, table: &str) -> DbResult<bool>
    where
        Self: Sized,
    {
        Ok(!rows(self, self.catalog(table, None), &format!("cannot look up table {table}")).await?.is_empty())
    }

    /// Adds `column`, declared `decl`, to `table` unless it has it; whether this call added it
    /// (one another process added meanwhile is there either way).
    ///
    /// # Errors
    /// The catalog cannot be read, or the column cannot be added.
    async fn add_column_if_missing(&self, table: &str, column: &str, decl: &str) -> DbResult<bool>
    where
        Self: Sized,
    {
        let _turn = self.writer_turn().await;
        if self.column_exists(table, column).await? {
            return Ok(false);
        }
        let sql = format!("ALTER TABLE {} ADD COLUMN {column} {decl}", self.table(table));
        match rows(self, unbound(sql), &format!("cannot add {table}.{column}")).await {
            Ok(_) => Ok(true),
            Err(_) if self.column_exists(table, column).await? => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// The tables Agno creates on first use rather than with the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LazyTable {
    /// Agent files (`agno_fs`).
    Files = 0,
    /// Learnings (`agno_learnings`).
    Learnings = 1,
}

/// What every SQL adapter holds alike: its pool, its table names, and what it learned of its
/// tables.
#[derive(Debug)]
pub(crate) struct SqlCore<DB: Database> {
    pub(crate) pool: Pool<DB>,
    pub(crate) tables: TableNames,
    /// The sessions table still has Agno 2.x's legacy `runs` column (a blob to merge on read).
    pub(crate) legacy_runs_column: std::sync::atomic::AtomicBool,
    /// Set once each [`LazyTable`] is known to exist.
    lazy_tables: [tokio::sync::OnceCell<()>; 2],
}

impl<DB: Database> SqlCore<DB> {
    /// A new adapter's core: nothing learned of its tables yet.
    pub(crate) fn new(pool: Pool<DB>, tables: TableNames) -> Self {
        Self { pool, tables, legacy_runs_column: Default::default(), lazy_tables: Default::default() }
    }
}

/// Creates `table` on first use in this process (as Agno creates it lazily). `IF NOT EXISTS`
/// checks, then creates: a process creating it at the same moment makes this one fail once, and
/// the second try finds it. A schema that cannot be created (a role that may create tables in an
/// existing schema only) is left to the table's statement, as Agno does.
///
/// # Errors
/// The table cannot be created.
pub(crate) async fn ensure<A: SqlAdapter>(db: &A, table: LazyTable) -> DbResult<()> {
    db.lazy_ready(table)
        .get_or_try_init(|| async {
            for ddl in db.lazy_ddl(table) {
                let schema = ddl.starts_with("CREATE SCHEMA");
                let run = || {
                    let empty = sea_query_sqlx::SqlxValues(sea_query::Values(Vec::new()));
                    changed(db, (ddl.clone(), empty), "cannot create a table on first use")
                };
                match run().await {
                    Err(e) if schema => tracing::warn!(error = %e, "could not create a schema on first use"),
                    Err(_) => {
                        run().await?;
                    }
                    Ok(_) => {}
                }
            }
            Ok(())
        })
        .await
        .map(|_| ())
}

/// Everything an SQL database implements itself: its [`SqlAdapter`] basics and, per area, what
/// differs in how it writes (sessions, runs, memory topics, metrics), migrates and queues. The
/// stores of [`SqlDb`] are implemented once over any `A: SqlFamily`.
pub(crate) trait SqlFamily:
    sessions::SqlSessions + runs::SqlRuns + memories::SqlMemories + migrate::SqlSchema + jobs::SqlQueue
{
}

impl<A> SqlFamily for A where
    A: sessions::SqlSessions + runs::SqlRuns + memories::SqlMemories + migrate::SqlSchema + jobs::SqlQueue
{
}

/// A statement written out whole (it binds nothing).
pub(crate) fn unbound(sql: String) -> (String, sea_query_sqlx::SqlxValues) {
    (sql, sea_query_sqlx::SqlxValues(sea_query::Values(Vec::new())))
}

/// Values bound to a catalog query (see [`SqlAdapter::catalog`]).
pub(crate) fn catalog_values<const N: usize>(values: [&str; N]) -> sea_query_sqlx::SqlxValues {
    sea_query_sqlx::SqlxValues(sea_query::Values(values.iter().map(|v| (*v).into()).collect()))
}

/// The migratable tables of `db` that exist, with their names (`Migrate::existing_tables` of
/// every SQL adapter).
///
/// # Errors
/// The catalog cannot be read.
pub(crate) async fn existing_tables<A: SqlAdapter>(db: &A) -> DbResult<Vec<(TableKind, String)>> {
    let mut out = Vec::new();
    for (kind, name) in db.tables().migratable() {
        if db.table_exists(name).await? {
            out.push((kind, name.to_owned()));
        }
    }
    Ok(out)
}

/// `n` as a bound `LIMIT` or `OFFSET` value: at most `i64::MAX`, the databases' integer
/// (sea-query-sqlx panics on a larger unsigned value, so a client's `limit=2^64-1` must never
/// reach it).
pub(crate) fn bound(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX).min(i64::MAX.unsigned_abs())
}

/// Column names written out for SQL text, comma-separated (from the one list statements built
/// with sea-query use too).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ColumnList(pub(crate) &'static [&'static str]);

impl std::fmt::Display for ColumnList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join(", "))
    }
}

/// What a write that broke a constraint broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Violation {
    /// The primary key: the record exists already.
    PrimaryKey,
    /// Another unique index (a name unique per owner).
    Unique,
    /// A foreign key: the parent record does not exist (any more).
    ForeignKey,
}

/// The columns of one row of `table`, read by name with errors that name the column.
pub(crate) struct Columns<'r, D: Dialect> {
    row: &'r <D::DB as Database>::Row,
    table: &'static str,
}

impl<'r, D: Dialect> Columns<'r, D> {
    /// The row, as a row of `table` (the name errors give).
    pub(crate) fn of(row: &'r <D::DB as Database>::Row, table: &'static str) -> Self {
        Self { row, table }
    }

    fn fail(&self, column: &str, e: sqlx::Error) -> DbError {
        D::error(&format!("cannot read {}.{column}", self.table), e)
    }

    /// A text column.
    pub(crate) fn text(&self, column: &str) -> DbResult<Option<String>> {
        D::read_text(self.row, column).map_err(|e| self.fail(column, e))
    }

    /// An integer column.
    pub(crate) fn int(&self, column: &str) -> DbResult<Option<i64>> {
        D::read_int(self.row, column).map_err(|e| self.fail(column, e))
    }

    /// A JSON column holding an object (anything else reads as `None`).
    pub(crate) fn object(&self, column: &str) -> DbResult<Option<serde_json::Map<String, Value>>> {
        Ok(match self.json(column)? {
            Some(Value::Object(m)) => Some(m),
            _ => None,
        })
    }

    /// Whether the row has `column` (a column only older schemas have).
    pub(crate) fn has(&self, column: &str) -> bool {
        use sqlx::{Column, Row};
        self.row.columns().iter().any(|c| c.name() == column)
    }

    /// A boolean column.
    pub(crate) fn bool(&self, column: &str) -> DbResult<Option<bool>> {
        D::read_bool(self.row, column).map_err(|e| self.fail(column, e))
    }

    /// A JSON column (JSON null reads as `None`).
    pub(crate) fn json(&self, column: &str) -> DbResult<Option<Value>> {
        D::read_json(self.row, column).map_err(|e| self.fail(column, e))
    }
}

/// `cells` as a built statement carries them, in order.
///
/// # Errors
/// A JSON value cannot be encoded.
pub(crate) fn values<D: Dialect>(cells: impl IntoIterator<Item = Cell>) -> DbResult<Vec<sea_query::Expr>> {
    cells.into_iter().map(|c| D::value(c).map(sea_query::Expr::val)).collect()
}

/// Binds `cells` in order.
///
/// # Errors
/// A JSON value cannot be encoded.
pub(crate) fn bind_all<D: Dialect>(
    mut q: Query<'_, D::DB>,
    cells: impl IntoIterator<Item = Cell>,
) -> DbResult<Query<'_, D::DB>> {
    for cell in cells {
        q = D::bind(q, cell)?;
    }
    Ok(q)
}

/// A JSON column stored as text, read back as [`crate::codec::json_column`] reads it (JSON null
/// is none; Agno 2.x's double encoding is undone); a decode error when it is not JSON.
fn parse_json(text: Option<String>) -> Result<Option<Value>, sqlx::Error> {
    crate::codec::json_column(text).map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

/// Only `user_id`'s rows when one is given.
pub(crate) fn owned_by<D: Dialect>(user_id: Option<&str>) -> sea_query::Condition {
    let mut c = sea_query::Condition::all();
    if let Some(u) = user_id {
        c = c.add(D::exact("user_id", u));
    }
    c
}

/// The delete of the rows of `table` whose `key` is one of `ids` and, when `user_id` is given,
/// that it owns (another user's rows are "not found": left as they are).
pub(crate) fn delete_owned<A: SqlAdapter>(
    db: &A,
    table: &str,
    key: &'static str,
    ids: &[String],
    user_id: Option<&str>,
) -> (String, sea_query_sqlx::SqlxValues) {
    use sea_query::ExprTrait;
    use sea_query_sqlx::SqlxBinder;
    sea_query::Query::delete()
        .from_table(db.table_ref(table))
        .and_where(sea_query::Expr::col(key).is_in(ids.iter().map(String::as_str)))
        .cond_where(owned_by::<A::D>(user_id))
        .build_sqlx(A::D::builder())
}

/// Runs a built statement and returns its rows, or the error saying what was being done.
pub(crate) async fn rows<A: SqlAdapter>(
    db: &A,
    (sql, values): (String, sea_query_sqlx::SqlxValues),
    what: &str,
) -> DbResult<Vec<Row<A::D>>> {
    A::D::fetch_built(db.pool(), &sql, values).await.map_err(|e| A::D::error(what, e))
}

/// How many times a write that lost a race (a MySQL deadlock) is tried in all.
pub(crate) const WRITE_ATTEMPTS: usize = 8;

/// Runs a built write (in the process's writer turn where the database has one writer) and
/// returns the number of rows it changed; a write that lost a race is tried again.
pub(crate) async fn changed<A: SqlAdapter>(
    db: &A,
    (sql, values): (String, sea_query_sqlx::SqlxValues),
    what: &str,
) -> DbResult<u64> {
    let alone = async |in_turn: bool| {
        let _turn = if in_turn { None } else { db.writer_turn().await };
        let mut tries = 1;
        loop {
            match A::D::execute_built(db.pool(), &sql, values.clone()).await.map_err(|e| A::D::error(what, e)) {
                Err(e) if tries < WRITE_ATTEMPTS && A::D::lost_race(&e) => tries += 1,
                other => return other,
            }
        }
    };
    let owned = || (sql.clone(), values.clone(), what.to_owned());
    group_commit::submit(
        db,
        owned,
        |_, conn, (sql, values, what)| {
            Box::pin(async move { A::D::execute_on(conn, sql, values.clone()).await.map_err(|e| A::D::error(what, e)) })
        },
        alone,
    )
    .await
}
