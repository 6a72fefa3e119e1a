//! `PostgresDb`: a PostgreSQL pool on one schema (default `ai`), tables shaped exactly as Python
//! Agno 3.1's `PostgresDb` creates them (JSONB columns, same names, indexes and keys), so either
//! can open the other's database.

pub(crate) mod agent_files;
pub(crate) mod approvals;
mod claimed;
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

pub(crate) use schedules::{clean_json, clean_text};

use crate::sql::{SqlAdapter, catalog_values};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agno_core::{DbError, DbErrorKind, DbResult};

use serde_json::Value;
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};

use crate::tables::TableNames;

/// The schema Python Agno's `PostgresDb` uses when none is given.
pub(crate) const DEFAULT_SCHEMA: &str = "ai";

/// A PostgreSQL database (the SQL family over `PostgresState`).
pub type PostgresDb = crate::sql::SqlDb<PostgresState>;

/// What a [`PostgresDb`] holds: a connection pool, the schema holding the tables, and what it
/// knows of them.
#[derive(Debug)]
pub struct PostgresState {
    core: crate::sql::SqlCore<sqlx::Postgres>,
    schema: String,
    /// Whether the run facts table exists (created beside the runs table).
    run_facts_table: AtomicBool,
}

/// Maps a driver error to a portable [`DbError`] whose message starts with `what`.
pub(crate) fn db_error(what: &str, e: sqlx::Error) -> DbError {
    let kind = match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() || d.is_foreign_key_violation() => DbErrorKind::Conflict,
        sqlx::Error::Database(d) => match d.code().as_deref() {
            // undefined_table, undefined_column, invalid_schema_name
            Some("42P01" | "42703" | "3F000") => DbErrorKind::SchemaTooOld,
            // connection_exception class, too_many_connections, admin_shutdown, crash_shutdown,
            // cannot_connect_now
            Some(code) if code.starts_with("08") || matches!(code, "53300" | "57P01" | "57P02" | "57P03") => {
                DbErrorKind::Unavailable
            }
            _ => DbErrorKind::Other,
        },
        sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => {
            DbErrorKind::Unavailable
        }
        _ => DbErrorKind::Other,
    };
    DbError::new(kind, format!("{what}: {e}")).with_source(e)
}

/// A plain SQL identifier (letters, digits, `_`, not starting with a digit, at most 63 bytes).
fn check_identifier(what: &str, name: &str) -> DbResult<()> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(DbError::new(DbErrorKind::Other, format!("invalid {what} {name:?}: use letters, digits and underscores")))
    }
}

/// Normalises a connection URL: `postgresql+psycopg://` (SQLAlchemy style) becomes
/// `postgresql://`; a `schema` query parameter is taken out and returned.
fn normalise_url(url: &str) -> DbResult<(String, Option<String>)> {
    let url = url.trim();
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(DbError::new(
            DbErrorKind::Other,
            "invalid postgres url: expected postgresql://user@host:port/database".to_owned(),
        ));
    };
    let base = scheme.split_once('+').map_or(scheme, |(base, _)| base).to_ascii_lowercase();
    if base != "postgres" && base != "postgresql" {
        return Err(DbError::new(
            DbErrorKind::Other,
            format!("invalid postgres url scheme {scheme:?}: expected postgres:// or postgresql://"),
        ));
    }
    let mut parsed = url::Url::parse(&format!("postgresql://{rest}"))
        .map_err(|e| DbError::new(DbErrorKind::Other, format!("invalid postgres url: {e}")).with_source(e))?;
    let schema = crate::open::take_query_option(&mut parsed, "schema");
    Ok((parsed.to_string(), schema))
}

/// Where a connection goes, without credentials, for error messages.
fn describe(options: &PgConnectOptions) -> String {
    format!("{}:{}/{}", options.get_host(), options.get_port(), options.get_database().unwrap_or("postgres"))
}

/// A nullable JSON(B) column: SQL NULL and JSON `null` are both `None`. A JSON string holding a
/// JSON object or list (written by clients that encode twice) is decoded.
pub(crate) fn value_column(value: Option<Value>) -> Option<Value> {
    match value {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.starts_with(['{', '[']) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Null) => None,
            Ok(v) => Some(v),
            Err(_) => Some(Value::String(s)),
        },
        Some(v) => Some(v),
    }
}

/// Removes the characters Python Agno strips before writing to Postgres (NUL and other control
/// characters PostgreSQL text cannot hold, and the non-characters U+FFFE/U+FFFF) from every
/// string value.
pub(crate) fn sanitize(value: &mut Value) {
    fn bad(c: char) -> bool {
        matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}')
    }
    match value {
        Value::String(s) if s.contains(bad) => s.retain(|c| !bad(c)),
        Value::Array(items) => items.iter_mut().for_each(sanitize),
        Value::Object(map) => map.values_mut().for_each(sanitize),
        _ => {}
    }
}

impl PostgresDb {
    /// Connects to `url` (`postgresql://user@host:5432/db`, `postgres://...`, or SQLAlchemy's
    /// `postgresql+psycopg://...`) with default table names, on schema `ai` (or the URL's
    /// `?schema=` parameter). Tables are created by [`PostgresDb::create_tables`] or the
    /// migrations.
    ///
    /// # Errors
    /// [`DbErrorKind::Unavailable`] when the server cannot be reached (the message names the
    /// host); [`DbErrorKind::Other`] for an invalid URL.
    pub async fn connect(url: &str) -> DbResult<Self> {
        let (_, schema) = normalise_url(url)?;
        Self::connect_with(url, TableNames::default(), schema.as_deref().unwrap_or(DEFAULT_SCHEMA)).await
    }

    /// Connects with custom table names and schema. The schema is created if missing.
    ///
    /// # Errors
    /// As [`PostgresDb::connect`], or [`DbErrorKind::Other`] for invalid table or schema names.
    pub async fn connect_with(url: &str, tables: TableNames, schema: &str) -> DbResult<Self> {
        tables.validate().map_err(|e| DbError::new(DbErrorKind::Other, e))?;
        check_identifier("schema name", schema)?;
        let (url, _) = normalise_url(url)?;
        let options = PgConnectOptions::from_str(&url)
            .map_err(|e| DbError::new(DbErrorKind::Other, format!("invalid postgres url: {e}")).with_source(e))?
            .application_name("agno-rs");
        let target = describe(&options);
        // One direct attempt first: the pool retries a refused connection until its acquire
        // timeout, while a caller wants to hear at once that the server is down.
        let probe = PgConnection::connect_with(&options)
            .await
            .map_err(|e| db_error(&format!("cannot connect to postgres at {target}"), e))?;
        probe.close().await.map_err(|e| db_error(&format!("cannot connect to postgres at {target}"), e))?;
        let pool = PgPoolOptions::new()
            .max_connections(10)
            // A caller (a run being saved) hears within 10 s that the server is gone.
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await
            .map_err(|e| db_error(&format!("cannot connect to postgres at {target}"), e))?;
        let db = crate::sql::SqlDb(PostgresState {
            core: crate::sql::SqlCore::new(pool, tables),
            schema: schema.to_owned(),
            run_facts_table: AtomicBool::new(false),
        });
        db.ensure_schema().await?;
        db.refresh_legacy_runs().await?;
        Ok(db)
    }

    /// The schema holding the tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Closes every pooled connection.
    pub async fn close(&self) {
        self.core.pool.close().await;
    }
}

impl PostgresState {
    /// The channel catalog writes are announced on: `<schema>_agno_catalog`, at most 63 bytes.
    pub(crate) fn catalog_channel(&self) -> String {
        let mut channel = format!("{}_agno_catalog", self.schema);
        // Schema names are validated ASCII identifiers: any byte is a character boundary.
        channel.truncate(63);
        channel
    }

    /// `"schema".table`, for SQL text. Both parts are validated identifiers.
    pub(crate) fn qualified(&self, table: &str) -> String {
        format!("\"{}\".\"{table}\"", self.schema)
    }

    async fn ensure_schema(&self) -> DbResult<()> {
        let exists: Option<i32> = sqlx::query_scalar("SELECT 1 FROM pg_namespace WHERE nspname = $1")
            .bind(&self.schema)
            .fetch_optional(&self.core.pool)
            .await
            .map_err(|e| db_error(&format!("cannot look up schema {}", self.schema), e))?;
        if exists.is_some() {
            return Ok(());
        }
        let sql = format!("CREATE SCHEMA IF NOT EXISTS \"{}\"", self.schema);
        match sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&self.core.pool).await {
            Ok(_) => Ok(()),
            // Two processes creating the schema at once: the loser sees a unique violation.
            Err(sqlx::Error::Database(d)) if d.is_unique_violation() => Ok(()),
            Err(e) => Err(db_error(&format!("cannot create schema {}", self.schema), e)),
        }
    }
}

#[async_trait::async_trait]
impl crate::sql::SqlAdapter for PostgresState {
    type D = sqlx::Postgres;

    fn core(&self) -> &crate::sql::SqlCore<sqlx::Postgres> {
        &self.core
    }
    fn files_table(&self) -> sea_query::TableRef {
        (sea_query::Alias::new(agent_files::FILES_SCHEMA), sea_query::Alias::new(self.core.tables.files.as_str()))
            .into()
    }
    fn lazy_ddl(&self, table: crate::sql::LazyTable) -> Vec<String> {
        match table {
            crate::sql::LazyTable::Files => agent_files::files_ddl(&self.core.tables.files),
            crate::sql::LazyTable::Learnings => {
                learnings::learnings_ddl(&self.qualified(&self.core.tables.learnings), &self.core.tables.learnings)
            }
        }
    }
    fn table(&self, table: &str) -> String {
        self.qualified(table)
    }
    fn table_ref(&self, table: &str) -> sea_query::TableRef {
        (sea_query::Alias::new(self.schema.as_str()), sea_query::Alias::new(table)).into()
    }
    fn has_run_facts(&self) -> bool {
        self.run_facts_table.load(Ordering::Relaxed)
    }
    fn catalog_lock(&self) -> Option<(String, sea_query_sqlx::SqlxValues)> {
        let key = self.qualified(&self.core.tables.components);
        Some(("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))".to_owned(), crate::sql::catalog_values([&key])))
    }
    fn catalog_notice(&self, target: &str) -> Option<(String, sea_query_sqlx::SqlxValues)> {
        let channel = self.catalog_channel();
        Some(("SELECT pg_notify($1, $2)".to_owned(), crate::sql::catalog_values([&channel, target])))
    }
    async fn catalog_listen(&self) -> DbResult<Option<futures::stream::BoxStream<'static, String>>> {
        use futures::StreamExt;
        let channel = self.catalog_channel();
        let mut listener = sqlx::postgres::PgListener::connect_with(&self.core.pool)
            .await
            .map_err(|e| db_error("cannot listen for catalog notifications", e))?;
        listener.listen(&channel).await.map_err(|e| db_error(&format!("cannot LISTEN on {channel}"), e))?;
        // The listener reconnects by itself; a delivery error is skipped (polling covers the gap).
        let stream = listener.into_stream().filter_map(|n| async move { Some(n.ok()?.payload().to_owned()) });
        Ok(Some(stream.boxed()))
    }
    fn notice(&self, notice: crate::sql::job_transitions::Notice<'_>) -> Option<(String, sea_query_sqlx::SqlxValues)> {
        let (channel, payload) = self.notice_of(notice);
        Some((
            "SELECT pg_notify($1, $2)".to_owned(),
            sea_query_sqlx::SqlxValues(sea_query::Values(vec![channel.into(), payload.into()])),
        ))
    }
    // One statement: the update, and the notification when it changed a row.
    async fn changed_noticed(
        &self,
        (sql, mut values): (String, sea_query_sqlx::SqlxValues),
        notice: crate::sql::job_transitions::Notice<'_>,
        what: &str,
    ) -> DbResult<u64> {
        let n = values.0.0.len();
        let (channel, payload) = self.notice_of(notice);
        values.0.0.extend([channel.into(), payload.into()]);
        let sql = format!("WITH done AS ({sql} RETURNING 1) SELECT pg_notify(${}, ${}) FROM done", n + 1, n + 2);
        Ok(crate::sql::rows(self, (sql, values), what).await?.len() as u64)
    }
    async fn refresh_legacy_runs(&self) -> DbResult<()> {
        let has = self.column_exists(&self.core.tables.sessions, "runs").await?;
        self.core.legacy_runs_column.store(has, Ordering::Relaxed);
        if self.table_exists(&self.core.tables.runs).await? {
            let facts = self.core.tables.run_facts();
            let ddl = schema::run_facts_ddl(&self.qualified(&facts), &self.qualified(&self.core.tables.runs));
            let created = if self.table_exists(&facts).await? {
                Ok(())
            } else {
                self.exec_ddl("cannot create the run facts table", &ddl).await
            };
            match created {
                Ok(()) => {}
                // Two processes creating it at once: the loser sees a unique violation.
                Err(e) if e.kind() == DbErrorKind::Conflict => {}
                Err(e) => {
                    tracing::warn!(table = %facts, error = %e, "cannot create the run facts table; metrics read runs' JSON")
                }
            }
            let exists = self.table_exists(&facts).await?;
            self.run_facts_table.store(exists, Ordering::Relaxed);
        }
        Ok(())
    }
    fn catalog(&self, table: &str, column: Option<&str>) -> (String, sea_query_sqlx::SqlxValues) {
        let schema = self.schema.as_str();
        match column {
            Some(column) => (
                "SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 \
                 AND column_name = $3"
                    .to_owned(),
                catalog_values([schema, table, column]),
            ),
            None => (
                "SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2".to_owned(),
                catalog_values([schema, table]),
            ),
        }
    }
}
