//! `SqliteDb`: the embedded default. One file, WAL journal, tables shaped exactly as Python
//! Agno 3.x creates them, so either can open the other's database.
//!
//! Every statement is run to completion (`fetch_all`, never `fetch_optional`): a statement left
//! unfinished keeps its snapshot (and, for `INSERT ... RETURNING`, its write) open, which stops
//! WAL checkpoints; the WAL then grows without bound and reads slow down.

pub(crate) mod agent_files;
pub(crate) mod approvals;
mod compactions;
pub(crate) mod components;
mod evals;
mod jobs;
mod knowledge;
pub(crate) mod learnings;
mod memories;
mod metrics;
mod migrate;
mod runs;
mod schedules;
mod schema;
pub(crate) mod service_accounts;
mod sessions;
pub(crate) mod traces;

use crate::sql::{SqlAdapter, catalog_values};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agno_core::{DbError, DbErrorKind, DbResult};

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};

use crate::tables::TableNames;

/// A SQLite database (the SQL family over `SqliteState`).
pub type SqliteDb = crate::sql::SqlDb<SqliteState>;

/// What a [`SqliteDb`] holds: its pool, what it knows of the file's tables, its writer turn and
/// WAL checkpointer.
#[derive(Debug)]
pub struct SqliteState {
    core: crate::sql::SqlCore<sqlx::Sqlite>,
    /// The runs table exists (absent in an unmigrated v2 database, whose runs are in the blob).
    runs_table: AtomicBool,
    /// Whether the run facts table exists (created beside the runs table when the file can be
    /// written).
    run_facts_table: AtomicBool,
    /// Writes of this process go one at a time. SQLite has one writer anyway; queueing here
    /// instead of in SQLite keeps waiting writers from holding read snapshots, which would stop
    /// WAL checkpoints and let the WAL (and read latency) grow without bound.
    write_lock: Arc<tokio::sync::Mutex<()>>,
    /// Write turns taken, and the checkpointer's wake-up every [`CHECKPOINT_WRITES`] of them.
    writes: Arc<std::sync::atomic::AtomicU64>,
    checkpoint_due: Arc<tokio::sync::Notify>,
    /// Run writes waiting for the write turn, committed together.
    group: crate::sql::group_commit::GroupCommit<SqliteState>,
    /// The background WAL checkpoints of this handle (see [`spawn_checkpointer`]), stopped when
    /// it is dropped.
    checkpointer: tokio::task::AbortHandle,
}

impl Drop for SqliteState {
    fn drop(&mut self) {
        self.checkpointer.abort();
    }
}

/// How often the WAL is checkpointed in the background, at the latest.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(250);

/// Write turns after which the checkpointer runs without waiting for its tick (about what
/// SQLite's own 1,000-page threshold would allow: a run's write touches a dozen pages).
const CHECKPOINT_WRITES: u64 = 64;

/// Checkpoints the WAL every [`CHECKPOINT_EVERY`] after writes of this process (another
/// process checkpoints its own): first `PASSIVE` while writers go on (it copies most frames and
/// never waits), then again in the write turn, so the few frames written meanwhile are copied
/// too and the next write starts the WAL over (with writers never pausing, a checkpoint never
/// catches up and the WAL grows without bound). Left to SQLite (`wal_autocheckpoint`), the whole
/// checkpoint runs inside the commit that crosses 1,000 WAL pages, and that request pays for it
/// (p99 at one client 8-10 ms against 4.7 ms here, and 130-200 ms p99 stalls at 32 clients seen
/// in some runs: serve bench, 2026-12-05). An idle server checkpoints nothing.
fn spawn_checkpointer(
    pool: SqlitePool,
    write_lock: Arc<tokio::sync::Mutex<()>>,
    writes: Arc<std::sync::atomic::AtomicU64>,
    due: Arc<tokio::sync::Notify>,
) -> tokio::task::AbortHandle {
    tokio::spawn(async move {
        let checkpoint = || async {
            if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)").execute(&pool).await {
                tracing::debug!(error = %e, "background WAL checkpoint failed; trying again later");
            }
        };
        let mut checkpointed = 0;
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + CHECKPOINT_EVERY, CHECKPOINT_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = due.notified() => {}
            }
            if pool.is_closed() {
                break;
            }
            if writes.load(Ordering::Relaxed) == checkpointed {
                continue;
            }
            checkpoint().await;
            let _turn = write_lock.lock().await;
            // Every write counted so far has ended (a writer counts itself inside its turn): the
            // pass below copies it.
            checkpointed = writes.load(Ordering::Relaxed);
            checkpoint().await;
        }
    })
    .abort_handle()
}

pub(crate) fn db_error(what: &str, e: sqlx::Error) -> DbError {
    let kind = match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() || d.is_foreign_key_violation() => DbErrorKind::Conflict,
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => DbErrorKind::Unavailable,
        sqlx::Error::Database(d) if d.message().contains("no such table") || d.message().contains("no such column") => {
            DbErrorKind::SchemaTooOld
        }
        _ => DbErrorKind::Other,
    };
    DbError::new(kind, format!("{what}: {e}")).with_source(e)
}

impl SqliteDb {
    /// Opens (creating if missing) the database at `url` (`sqlite://path/to/file.db`, or a bare
    /// path) with default table names. Tables are created by [`SqliteDb::create_tables`] or the
    /// migrations.
    ///
    /// # Errors
    /// [`DbErrorKind::Unavailable`] when the file cannot be opened.
    pub async fn connect(url: &str) -> DbResult<Self> {
        Self::connect_with(url, TableNames::default()).await
    }

    /// Opens the database with custom table names.
    ///
    /// # Errors
    /// As [`SqliteDb::connect`], or [`DbErrorKind::Other`] for invalid table names.
    pub async fn connect_with(url: &str, tables: TableNames) -> DbResult<Self> {
        tables.validate().map_err(|e| DbError::new(DbErrorKind::Other, e))?;
        let url = if url.starts_with("sqlite:") { url.to_owned() } else { format!("sqlite://{url}") };
        let options = SqliteConnectOptions::from_str(&url)
            .map_err(|e| DbError::new(DbErrorKind::Other, format!("invalid sqlite url {url:?}: {e}")).with_source(e))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true)
            .pragma("journal_size_limit", "67108864")
            // Checkpoints run in the background (`spawn_checkpointer`), not in a request's commit.
            .pragma("wal_autocheckpoint", "0");
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(options)
            .await
            .map_err(|e| db_error(&format!("cannot open sqlite database {url}"), e))?;
        let write_lock = Arc::new(tokio::sync::Mutex::new(()));
        let checkpoint_due = Arc::new(tokio::sync::Notify::new());
        let writes = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let checkpointer =
            spawn_checkpointer(pool.clone(), Arc::clone(&write_lock), Arc::clone(&writes), Arc::clone(&checkpoint_due));
        let db = crate::sql::SqlDb(SqliteState {
            core: crate::sql::SqlCore::new(pool, tables),
            runs_table: AtomicBool::new(false),
            run_facts_table: AtomicBool::new(false),
            write_lock,
            writes,
            checkpoint_due,
            group: crate::sql::group_commit::GroupCommit::default(),
            checkpointer,
        });
        db.refresh_legacy_runs().await?;
        Ok(db)
    }
}

impl SqliteState {
    /// Waits for this process's turn to write.
    pub(crate) async fn write_turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        let turn = self.write_lock.lock().await;
        self.count_write();
        turn
    }

    /// Counts a write whose turn was just taken: a checkpoint that holds the turn has seen every
    /// write counted before it end. Every [`CHECKPOINT_WRITES`] wakes the checkpointer.
    fn count_write(&self) {
        if self.writes.fetch_add(1, Ordering::Relaxed) % CHECKPOINT_WRITES == CHECKPOINT_WRITES - 1 {
            self.checkpoint_due.notify_one();
        }
    }

    /// Creates the run facts table beside a runs table that has none (a database Python Agno
    /// made) and records whether it exists.
    ///
    /// The DDL does not wait for the write turn: this runs inside writes that hold it (the
    /// legacy cleanup re-reads the shapes before it returns), and the turn is not reentrant.
    /// SQLite's own lock and busy timeout order it against other writers.
    async fn ensure_run_facts(&self) -> DbResult<()> {
        let facts = self.core.tables.run_facts();
        if !self.table_exists(&facts).await? {
            for sql in schema::run_facts_ddl(&facts, &self.core.tables.runs) {
                if let Err(e) = sqlx::query(sqlx::AssertSqlSafe(sql.as_str())).execute(&self.core.pool).await {
                    tracing::warn!(table = %facts, error = %e, "cannot create the run facts table; metrics read runs' JSON");
                    break;
                }
            }
        }
        let exists = self.table_exists(&facts).await?;
        self.run_facts_table.store(exists, Ordering::Relaxed);
        Ok(())
    }
}

#[async_trait::async_trait]
impl crate::sql::SqlAdapter for SqliteState {
    type D = sqlx::Sqlite;

    fn core(&self) -> &crate::sql::SqlCore<sqlx::Sqlite> {
        &self.core
    }
    fn lazy_ddl(&self, table: crate::sql::LazyTable) -> Vec<String> {
        match table {
            crate::sql::LazyTable::Files => agent_files::files_ddl(&self.core.tables.files),
            crate::sql::LazyTable::Learnings => learnings::learnings_ddl(&self.core.tables.learnings),
        }
    }
    fn table(&self, table: &str) -> String {
        table.to_owned()
    }
    fn table_ref(&self, table: &str) -> sea_query::TableRef {
        sea_query::Alias::new(table).into()
    }
    async fn writer_turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        Some(self.write_turn().await)
    }
    fn try_writer_turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        let turn = self.write_lock.try_lock().ok()?;
        self.count_write();
        Some(turn)
    }
    fn group_commit(&self) -> Option<&crate::sql::group_commit::GroupCommit<Self>> {
        Some(&self.group)
    }
    fn has_runs_table(&self) -> bool {
        self.runs_table.load(Ordering::Relaxed)
    }
    fn has_run_facts(&self) -> bool {
        self.run_facts_table.load(Ordering::Relaxed)
    }
    async fn refresh_legacy_runs(&self) -> DbResult<()> {
        let has = self.column_exists(&self.core.tables.sessions, "runs").await?;
        self.core.legacy_runs_column.store(has, Ordering::Relaxed);
        let runs = self.table_exists(&self.core.tables.runs).await?;
        self.runs_table.store(runs, Ordering::Relaxed);
        if runs {
            self.ensure_run_facts().await?;
        }
        Ok(())
    }
    fn catalog(&self, table: &str, column: Option<&str>) -> (String, sea_query_sqlx::SqlxValues) {
        match column {
            Some(column) => {
                ("SELECT 1 FROM pragma_table_info(?) WHERE name = ?".to_owned(), catalog_values([table, column]))
            }
            None => {
                ("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?".to_owned(), catalog_values([table]))
            }
        }
    }
}
