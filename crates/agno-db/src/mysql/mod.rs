//! `MySqlDb`: MySQL and MariaDB storage over a sqlx pool, with tables shaped exactly as Python
//! Agno 3.x's `MySQLDb` creates them, so either can open the other's database.
//!
//! Writes that must be atomic (run index assignment, state merges) run in a `READ COMMITTED`
//! transaction holding a row lock (`SELECT ... FOR UPDATE`), and are retried on a deadlock or a
//! lost insert race. A given `user_id` is matched byte for byte, whatever the column collation.

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
mod schedules;
mod schema;
pub(crate) mod service_accounts;
pub(crate) mod traces;

use crate::sql::{SqlAdapter, catalog_values};
use std::str::FromStr;
use std::time::Duration;

use agno_core::{DbError, DbErrorKind, DbResult};

use sqlx::mysql::{MySql, MySqlConnectOptions, MySqlDatabaseError, MySqlPoolOptions};
use sqlx::pool::PoolConnection;
use sqlx::{AssertSqlSafe, Row};

use crate::tables::TableNames;

/// The database Python Agno's `MySQLDb` uses when none is given (its `db_schema` default).
const DEFAULT_DATABASE: &str = "ai";

/// A MySQL or MariaDB database (the SQL family over `MySqlState`).
pub type MySqlDb = crate::sql::SqlDb<MySqlState>;

/// What a [`MySqlDb`] holds: its pool and what it knows of the tables.
#[derive(Debug)]
pub struct MySqlState {
    core: crate::sql::SqlCore<sqlx::MySql>,
}

/// MySQL error numbers the adapter reacts to.
mod code {
    pub(crate) const DUPLICATE_KEY: u16 = 1062;
    pub(crate) const DEADLOCK: u16 = 1213;
    pub(crate) const NO_SUCH_TABLE: u16 = 1146;
    pub(crate) const UNKNOWN_COLUMN: u16 = 1054;
    pub(crate) const FK_PARENT_MISSING: u16 = 1452;
    pub(crate) const FK_CHILD_EXISTS: u16 = 1451;
    pub(crate) const ACCESS_DENIED: u16 = 1045;
    pub(crate) const UNKNOWN_DATABASE: u16 = 1049;
}

/// The MySQL error number of a driver error, if it came from the server.
pub(crate) fn error_number(e: &sqlx::Error) -> Option<u16> {
    match e {
        sqlx::Error::Database(d) => d.try_downcast_ref::<MySqlDatabaseError>().map(MySqlDatabaseError::number),
        _ => None,
    }
}

/// A text or JSON column as text. JSON columns are read unchecked: MySQL reports them as `JSON`,
/// MariaDB as `LONGTEXT`, and both send the JSON text.
pub(crate) fn text_column(row: &sqlx::mysql::MySqlRow, col: &str) -> DbResult<Option<String>> {
    row.try_get_unchecked::<Option<String>, _>(col).map_err(|e| db_error(&format!("cannot read column {col}"), e))
}

// Sessions and runs: the stored row locked, then updated or inserted (`crate::sql::locked`).
impl crate::sql::sessions::SqlSessions for MySqlState {}
impl crate::sql::runs::SqlRuns for MySqlState {}

pub(crate) fn db_error(what: &str, e: sqlx::Error) -> DbError {
    let kind = match (&e, error_number(&e)) {
        (_, Some(code::DUPLICATE_KEY | code::FK_PARENT_MISSING | code::FK_CHILD_EXISTS)) => DbErrorKind::Conflict,
        (_, Some(code::NO_SUCH_TABLE | code::UNKNOWN_COLUMN)) => DbErrorKind::SchemaTooOld,
        (_, Some(code::ACCESS_DENIED | code::UNKNOWN_DATABASE)) => DbErrorKind::Unavailable,
        (sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed, _) => {
            DbErrorKind::Unavailable
        }
        _ => DbErrorKind::Other,
    };
    DbError::new(kind, format!("{what}: {e}")).with_source(e)
}

/// True when a failed transaction may succeed if run again: it lost a deadlock, or a concurrent
/// writer inserted the row it was about to insert.
pub(crate) fn is_transient(e: &DbError) -> bool {
    let Some(source) = std::error::Error::source(e) else { return false };
    source
        .downcast_ref::<sqlx::Error>()
        .and_then(error_number)
        .is_some_and(|n| matches!(n, code::DEADLOCK | code::DUPLICATE_KEY))
}

/// Rewrites Agno's SQLAlchemy-style URL (`mysql+pymysql://`, `mysql+asyncmy://`, ...) to the
/// `mysql://` form sqlx reads.
fn normalize_url(url: &str) -> String {
    let url = url.trim();
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let scheme = scheme.to_ascii_lowercase();
            let base = scheme.split_once('+').map_or(scheme.as_str(), |(base, _)| base);
            let base = if base == "mariadb" { "mysql" } else { base };
            format!("{base}://{rest}")
        }
        None => url.to_owned(),
    }
}

/// The URL with any password replaced, for error messages.
fn redacted(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            if parsed.password().is_some() {
                let _ = parsed.set_password(Some("***"));
            }
            parsed.to_string()
        }
        Err(_) => "<unparseable url>".to_owned(),
    }
}

impl MySqlDb {
    /// Connects to the database at `url` with default table names. Accepts `mysql://`,
    /// `mariadb://` and Agno's SQLAlchemy style `mysql+pymysql://` / `mysql+asyncmy://`. The
    /// tables live in the database the URL names (Agno's `db_schema`), `ai` when it names none.
    /// Tables are created by [`MySqlDb::create_tables`] or the migrations.
    ///
    /// # Errors
    /// [`DbErrorKind::Unavailable`] when the server cannot be reached or refuses the login;
    /// [`DbErrorKind::Other`] for a URL that cannot be parsed.
    pub async fn connect(url: &str) -> DbResult<Self> {
        Self::connect_with(url, TableNames::default()).await
    }

    /// Connects with custom table names.
    ///
    /// # Errors
    /// As [`MySqlDb::connect`], or [`DbErrorKind::Other`] for invalid table names.
    pub async fn connect_with(url: &str, tables: TableNames) -> DbResult<Self> {
        tables.validate().map_err(|e| DbError::new(DbErrorKind::Other, e))?;
        let normalized = normalize_url(url);
        let shown = redacted(&normalized);
        let mut options = MySqlConnectOptions::from_str(&normalized)
            .map_err(|e| DbError::new(DbErrorKind::Other, format!("invalid mysql url {shown}: {e}")).with_source(e))?;
        if options.get_database().is_none() {
            options = options.database(DEFAULT_DATABASE);
        }
        let pool = MySqlPoolOptions::new()
            .max_connections(10)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(options)
            .await
            .map_err(|e| {
                let e = db_error(&format!("cannot connect to mysql database {shown}"), e);
                if e.kind() == DbErrorKind::Other { DbError::new(DbErrorKind::Unavailable, e.to_string()) } else { e }
            })?;
        let db = crate::sql::SqlDb(MySqlState { core: crate::sql::SqlCore::new(pool, tables) });
        db.refresh_legacy_runs().await?;
        Ok(db)
    }
}

impl MySqlState {
    /// A pooled connection whose next transaction runs at `READ COMMITTED`: plain reads inside
    /// it see what committed before each statement, so a value read after taking a row lock is
    /// current.
    pub(crate) async fn read_committed_conn(&self) -> DbResult<PoolConnection<MySql>> {
        let mut conn = self.core.pool.acquire().await.map_err(|e| db_error("cannot get a mysql connection", e))?;
        sqlx::raw_sql("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
            .execute(&mut *conn)
            .await
            .map_err(|e| db_error("cannot set the transaction isolation level", e))?;
        Ok(conn)
    }

    /// The columns of index `index` on `table`, in index order; empty when there is no such index.
    pub(crate) async fn index_columns(&self, table: &str, index: &str) -> DbResult<Vec<String>> {
        let rows = sqlx::query(
            "SELECT COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() \
             AND TABLE_NAME = ? AND INDEX_NAME = ? ORDER BY SEQ_IN_INDEX",
        )
        .bind(table)
        .bind(index)
        .fetch_all(&self.core.pool)
        .await
        .map_err(|e| db_error(&format!("cannot read the indexes of {table}"), e))?;
        rows.iter().map(|r| r.try_get::<String, _>(0).map_err(|e| db_error("cannot read an index column", e))).collect()
    }

    /// Runs one statement without parameters (DDL) over the text protocol: nothing to prepare or
    /// cache.
    pub(crate) async fn exec(&self, sql: &str, what: &str) -> DbResult<()> {
        sqlx::raw_sql(AssertSqlSafe(sql)).execute(&self.core.pool).await.map_err(|e| db_error(what, e))?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl crate::sql::SqlAdapter for MySqlState {
    type D = sqlx::MySql;

    fn core(&self) -> &crate::sql::SqlCore<sqlx::MySql> {
        &self.core
    }
    fn lazy_ddl(&self, table: crate::sql::LazyTable) -> Vec<String> {
        match table {
            crate::sql::LazyTable::Files => agent_files::files_ddl(&self.core.tables.files),
            crate::sql::LazyTable::Learnings => learnings::learnings_ddl(&self.core.tables.learnings),
        }
    }
    fn table(&self, table: &str) -> String {
        format!("`{table}`")
    }
    fn table_ref(&self, table: &str) -> sea_query::TableRef {
        sea_query::Alias::new(table).into()
    }
    fn catalog_lock(&self) -> Option<(String, sea_query_sqlx::SqlxValues)> {
        // The components table's row in the versions table, stamped when the table was created:
        // a row every process locks the same way (MySQL has no transaction-scoped named lock).
        let sql = format!("SELECT version FROM `{}` WHERE table_name = ? FOR UPDATE", self.core.tables.versions);
        Some((sql, crate::sql::catalog_values([self.core.tables.components.as_str()])))
    }
    async fn refresh_legacy_runs(&self) -> DbResult<()> {
        let has = self.column_exists(&self.core.tables.sessions, "runs").await?;
        self.core.legacy_runs_column.store(has, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
    fn catalog(&self, table: &str, column: Option<&str>) -> (String, sea_query_sqlx::SqlxValues) {
        match column {
            Some(column) => (
                "SELECT 1 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? \
                 AND COLUMN_NAME = ?"
                    .to_owned(),
                catalog_values([table, column]),
            ),
            None => (
                "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?".to_owned(),
                catalog_values([table]),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlalchemy_urls_become_sqlx_urls() {
        assert_eq!(normalize_url("mysql+pymysql://u:p@h:3306/db"), "mysql://u:p@h:3306/db");
        assert_eq!(normalize_url("MySQL+asyncmy://h/db"), "mysql://h/db");
        assert_eq!(normalize_url("mariadb://h/db"), "mysql://h/db");
        assert_eq!(normalize_url(" mysql://h/db "), "mysql://h/db");
    }

    #[test]
    fn passwords_are_not_shown() {
        let shown = redacted("mysql://user:secret@host:3306/db");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("user"), "{shown}");
    }
}
