//! The `sql` toolkit (Agno's `SQLTools`, v3 names `list_sql_tables`, `describe_sql_table`,
//! `run_sql_query`) over SQLite, PostgreSQL or MySQL/MariaDB, **read-only unless
//! `read_only = false`**.
//!
//! Read-only is enforced by the database, not by reading the SQL: SQLite is opened read-only
//! with `query_only`; PostgreSQL runs each query in a `READ ONLY` transaction (sessions default
//! to read-only too) that is always rolled back; MySQL/MariaDB sessions are `READ ONLY` and each
//! query runs in `START TRANSACTION READ ONLY`, rolled back. Statements run as prepared
//! statements, one at a time. Read-only is a second line of defence, not a replacement for a
//! database role that may only read: a superuser can still reach the server's side effects
//! (PostgreSQL's `COPY ... TO PROGRAM`, say).
//!
//! Rows come back as Agno's do: a JSON array of objects, at most `limit` (default 10, capped by
//! `max_rows`, default 1000). A query is bounded by `timeout_seconds` (default 30; PostgreSQL also
//! gets a `statement_timeout`). The connection is opened on first use, so a database that is down
//! is a tool error, not a start-up failure.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
// The model's SQL is this toolkit's input by design (`AssertSqlSafe`): the database's read-only
// mode, not the text, is what keeps it from writing.
use sqlx::{AssertSqlSafe, Column, Executor, Row, TypeInfo, ValueRef};
use tokio::sync::OnceCell;

use super::{BuiltinError, Options};
use crate::{Function, ToolError, ToolErrorKind, Toolkit};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Dialect {
    Sqlite,
    Postgres,
    MySql,
}

#[derive(Debug)]
enum Pool {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
    MySql(sqlx::MySqlPool),
}

#[derive(Debug)]
struct Sql {
    dialect: Dialect,
    url: String,
    read_only: bool,
    schema: Option<String>,
    tables: Option<Value>,
    max_rows: usize,
    timeout: Duration,
    pool: OnceCell<Pool>,
}

/// The URL without its password, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// A database error as the model sees it, with the fix for a refused write.
fn db_error(what: &str, e: &sqlx::Error) -> ToolError {
    let message = match e {
        sqlx::Error::Database(d) => d.message().to_owned(),
        other => other.to_string(),
    };
    let lower = message.to_lowercase();
    let refused_write = lower.contains("readonly database")
        || lower.contains("read-only transaction")
        || lower.contains("read only transaction")
        || lower.contains("query_only");
    let hint = if refused_write {
        " (this SQL toolkit is read-only: it may only read; read_only = false in its options allows writes)"
    } else {
        ""
    };
    ToolError::execution(format!("{what} failed: {message}{hint}"))
}

fn blob(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(text) => json!(text),
        Err(_) => json!(format!("<{} bytes of binary data>", bytes.len())),
    }
}

/// Tries to decode column `$i` of `$row` as each type in turn; the first that fits wins.
macro_rules! first_fit {
    ($row:expr, $i:expr, [$($ty:ty => $to:expr),* $(,)?]) => {{
        let mut found = None;
        $(
            if found.is_none() {
                if let Ok(Some(v)) = $row.try_get::<Option<$ty>, _>($i) {
                    found = Some($to(v));
                }
            }
        )*
        found
    }};
}

fn sqlite_value(row: &sqlx::sqlite::SqliteRow, i: usize) -> Value {
    let Ok(raw) = row.try_get_raw(i) else { return Value::Null };
    if raw.is_null() {
        return Value::Null;
    }
    let kind = raw.type_info().name().to_owned();
    match kind.as_str() {
        "INTEGER" => row.try_get::<i64, _>(i).map_or(Value::Null, |v| json!(v)),
        "REAL" => row.try_get::<f64, _>(i).map_or(Value::Null, |v| json!(v)),
        "BLOB" => row.try_get::<Vec<u8>, _>(i).map_or(Value::Null, |v| blob(&v)),
        _ => row.try_get::<String, _>(i).map_or(Value::Null, |v| json!(v)),
    }
}

fn pg_value(row: &sqlx::postgres::PgRow, i: usize) -> Value {
    if row.try_get_raw(i).map_or(true, |v| v.is_null()) {
        return Value::Null;
    }
    first_fit!(row, i, [
        bool => |v: bool| json!(v),
        i16 => |v: i16| json!(v),
        i32 => |v: i32| json!(v),
        i64 => |v: i64| json!(v),
        f32 => |v: f32| json!(v),
        f64 => |v: f64| json!(v),
        String => |v: String| json!(v),
        Value => |v: Value| v,
        chrono::DateTime<chrono::Utc> => |v: chrono::DateTime<chrono::Utc>| json!(v.to_rfc3339()),
        chrono::NaiveDateTime => |v: chrono::NaiveDateTime| json!(v.to_string()),
        chrono::NaiveDate => |v: chrono::NaiveDate| json!(v.to_string()),
        chrono::NaiveTime => |v: chrono::NaiveTime| json!(v.to_string()),
        Vec<u8> => |v: Vec<u8>| blob(&v),
    ])
    .unwrap_or_else(|| {
        let name = row.column(i).type_info().name().to_owned();
        json!(format!("<{name} value: cast it to text in the query to read it>"))
    })
}

fn mysql_value(row: &sqlx::mysql::MySqlRow, i: usize) -> Value {
    if row.try_get_raw(i).map_or(true, |v| v.is_null()) {
        return Value::Null;
    }
    let decimal = matches!(row.column(i).type_info().name(), "DECIMAL" | "NUMERIC");
    if decimal {
        // Sent as text by the server; no decimal type is compiled in.
        return row.try_get_unchecked::<String, _>(i).map_or(Value::Null, |v| json!(v));
    }
    first_fit!(row, i, [
        i64 => |v: i64| json!(v),
        u64 => |v: u64| json!(v),
        f64 => |v: f64| json!(v),
        f32 => |v: f32| json!(v),
        bool => |v: bool| json!(v),
        String => |v: String| json!(v),
        // DATETIME has no zone: read it as such before TIMESTAMP's UTC.
        chrono::NaiveDateTime => |v: chrono::NaiveDateTime| json!(v.to_string()),
        chrono::DateTime<chrono::Utc> => |v: chrono::DateTime<chrono::Utc>| json!(v.to_rfc3339()),
        chrono::NaiveDate => |v: chrono::NaiveDate| json!(v.to_string()),
        chrono::NaiveTime => |v: chrono::NaiveTime| json!(v.to_string()),
        Value => |v: Value| v,
        Vec<u8> => |v: Vec<u8>| blob(&v),
    ])
    .unwrap_or_else(|| {
        let name = row.column(i).type_info().name().to_owned();
        json!(format!("<{name} value: cast it in the query to read it>"))
    })
}

fn object<R: Row>(row: &R, value: impl Fn(&R, usize) -> Value) -> Value {
    let mut out = Map::new();
    for (i, column) in row.columns().iter().enumerate() {
        out.insert(column.name().to_owned(), value(row, i));
    }
    Value::Object(out)
}

/// Whether a statement is a query PostgreSQL can wrap in `row_to_json` (so every column type
/// comes back as JSON).
fn wrappable(sql: &str) -> bool {
    let first = sql.trim_start().split(|c: char| c.is_whitespace() || c == '(').next().unwrap_or_default();
    matches!(first.to_ascii_lowercase().as_str(), "select" | "with" | "values" | "table")
}

impl Sql {
    async fn pool(&self) -> Result<&Pool, ToolError> {
        self.pool
            .get_or_try_init(|| async {
                let fail = |e: sqlx::Error| {
                    ToolError::execution(format!("cannot open the database {}: {e}", redact(&self.url)))
                };
                fn options<DB: sqlx::Database>(timeout: Duration) -> sqlx::pool::PoolOptions<DB> {
                    sqlx::pool::PoolOptions::new().max_connections(4).acquire_timeout(timeout)
                }
                Ok(match self.dialect {
                    Dialect::Sqlite => {
                        let mut connect = sqlx::sqlite::SqliteConnectOptions::from_str(&self.url).map_err(fail)?;
                        if self.read_only {
                            connect = connect.read_only(true).pragma("query_only", "ON");
                        }
                        Pool::Sqlite(options(self.timeout).connect_with(connect).await.map_err(fail)?)
                    }
                    Dialect::Postgres => {
                        let mut connect = sqlx::postgres::PgConnectOptions::from_str(&self.url).map_err(fail)?;
                        let timeout = format!("{}", self.timeout.as_millis());
                        connect = connect.options([("statement_timeout", timeout.as_str())]);
                        if self.read_only {
                            connect = connect.options([("default_transaction_read_only", "on")]);
                        }
                        Pool::Postgres(options(self.timeout).connect_with(connect).await.map_err(fail)?)
                    }
                    Dialect::MySql => {
                        let connect = sqlx::mysql::MySqlConnectOptions::from_str(&self.url).map_err(fail)?;
                        let read_only = self.read_only;
                        let options = options::<sqlx::MySql>(self.timeout).after_connect(move |conn, _| {
                            Box::pin(async move {
                                if read_only {
                                    conn.execute("SET SESSION TRANSACTION READ ONLY").await?;
                                }
                                Ok(())
                            })
                        });
                        Pool::MySql(options.connect_with(connect).await.map_err(fail)?)
                    }
                })
            })
            .await
    }

    async fn bounded<T>(&self, what: &str, work: impl Future<Output = Result<T, ToolError>>) -> Result<T, ToolError> {
        tokio::time::timeout(self.timeout, work).await.map_err(|_| {
            ToolError::new(
                ToolErrorKind::Timeout,
                format!("{what} did not finish within {} s (timeout_seconds)", self.timeout.as_secs_f64()),
            )
        })?
    }

    async fn run(&self, sql: &str, limit: usize) -> Result<Vec<Value>, ToolError> {
        let sql = sql.trim().trim_end_matches(';').trim();
        if sql.is_empty() {
            return Err(ToolError::invalid_arguments("query is empty: give one SQL statement"));
        }
        let what = "the query";
        let err = |e: sqlx::Error| db_error(what, &e);
        let work = async {
            match self.pool().await? {
                Pool::Sqlite(pool) => {
                    let mut conn = pool.acquire().await.map_err(err)?;
                    let rows: Vec<_> =
                        take_n(sqlx::query(AssertSqlSafe(sql)).fetch(&mut *conn), limit).await.map_err(err)?;
                    Ok(rows.iter().map(|r| object(r, sqlite_value)).collect())
                }
                Pool::Postgres(pool) => {
                    let mut tx = pool.begin().await.map_err(err)?;
                    if self.read_only {
                        tx.execute("SET TRANSACTION READ ONLY").await.map_err(err)?;
                    }
                    let rows = if wrappable(sql) {
                        let wrapped = format!("SELECT row_to_json(agno_q)::text FROM ({sql}) AS agno_q");
                        let rows: Vec<_> = take_n(sqlx::query(AssertSqlSafe(wrapped.as_str())).fetch(&mut *tx), limit)
                            .await
                            .map_err(err)?;
                        rows.iter()
                            .map(|r| {
                                r.try_get::<String, _>(0)
                                    .ok()
                                    .and_then(|t| serde_json::from_str(&t).ok())
                                    .unwrap_or(Value::Null)
                            })
                            .collect()
                    } else {
                        let rows: Vec<_> =
                            take_n(sqlx::query(AssertSqlSafe(sql)).fetch(&mut *tx), limit).await.map_err(err)?;
                        rows.iter().map(|r| object(r, pg_value)).collect()
                    };
                    if self.read_only { tx.rollback().await } else { tx.commit().await }.map_err(err)?;
                    Ok(rows)
                }
                Pool::MySql(pool) => {
                    let mut conn = pool.acquire().await.map_err(err)?;
                    let begin = if self.read_only { "START TRANSACTION READ ONLY" } else { "START TRANSACTION" };
                    conn.execute(begin).await.map_err(err)?;
                    let result: Result<Vec<_>, _> =
                        take_n(sqlx::query(AssertSqlSafe(sql)).fetch(&mut *conn), limit).await;
                    let end = if self.read_only || result.is_err() { "ROLLBACK" } else { "COMMIT" };
                    conn.execute(end).await.map_err(err)?;
                    Ok(result.map_err(err)?.iter().map(|r| object(r, mysql_value)).collect())
                }
            }
        };
        self.bounded(what, work).await
    }

    async fn list_tables(&self) -> Result<Value, ToolError> {
        if let Some(tables) = &self.tables {
            return Ok(tables.clone());
        }
        let what = "listing the tables";
        let err = |e: sqlx::Error| db_error(what, &e);
        let work = async {
            let names: Vec<String> = match self.pool().await? {
                Pool::Sqlite(pool) => sqlx::query_scalar(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY name",
                )
                .fetch_all(pool)
                .await
                .map_err(err)?,
                Pool::Postgres(pool) => sqlx::query_scalar(
                    "SELECT table_name::text FROM information_schema.tables \
                     WHERE table_schema = COALESCE($1, current_schema()) ORDER BY 1",
                )
                .bind(self.schema.as_deref())
                .fetch_all(pool)
                .await
                .map_err(err)?,
                Pool::MySql(pool) => sqlx::query_scalar(
                    "SELECT CAST(table_name AS CHAR) FROM information_schema.tables \
                     WHERE table_schema = COALESCE(?, DATABASE()) ORDER BY 1",
                )
                .bind(self.schema.as_deref())
                .fetch_all(pool)
                .await
                .map_err(err)?,
            };
            Ok(json!(names))
        };
        self.bounded(what, work).await
    }

    async fn describe(&self, table: &str) -> Result<Vec<Value>, ToolError> {
        let what = format!("describing {table}");
        let err = |e: sqlx::Error| db_error(&what, &e);
        let work = async {
            let columns: Vec<Value> = match self.pool().await? {
                Pool::Sqlite(pool) => {
                    let rows = sqlx::query("SELECT name, type, \"notnull\", dflt_value FROM pragma_table_info(?1)")
                        .bind(table)
                        .fetch_all(pool)
                        .await
                        .map_err(err)?;
                    rows.iter()
                        .map(|r| {
                            json!({
                                "name": r.try_get::<String, _>(0).unwrap_or_default(),
                                "type": r.try_get::<String, _>(1).unwrap_or_default(),
                                "nullable": r.try_get::<i64, _>(2).unwrap_or(0) == 0,
                                "default": r.try_get::<Option<String>, _>(3).unwrap_or_default(),
                            })
                        })
                        .collect()
                }
                Pool::Postgres(pool) => {
                    let rows = sqlx::query(
                        "SELECT column_name::text, data_type::text, is_nullable::text, column_default::text \
                         FROM information_schema.columns \
                         WHERE table_schema = COALESCE($2, current_schema()) AND table_name = $1 ORDER BY ordinal_position",
                    )
                    .bind(table)
                    .bind(self.schema.as_deref())
                    .fetch_all(pool)
                    .await
                    .map_err(err)?;
                    rows.iter().map(|r| described(r.try_get(0), r.try_get(1), r.try_get(2), r.try_get(3))).collect()
                }
                Pool::MySql(pool) => {
                    let rows = sqlx::query(
                        "SELECT CAST(column_name AS CHAR), CAST(column_type AS CHAR), CAST(is_nullable AS CHAR), \
                         CAST(column_default AS CHAR) FROM information_schema.columns \
                         WHERE table_schema = COALESCE(?, DATABASE()) AND table_name = ? ORDER BY ordinal_position",
                    )
                    .bind(self.schema.as_deref())
                    .bind(table)
                    .fetch_all(pool)
                    .await
                    .map_err(err)?;
                    rows.iter().map(|r| described(r.try_get(0), r.try_get(1), r.try_get(2), r.try_get(3))).collect()
                }
            };
            if columns.is_empty() {
                return Err(ToolError::execution(format!(
                    "there is no table named {table:?} (list_sql_tables lists the tables)"
                )));
            }
            Ok(columns)
        };
        self.bounded(&format!("describing {table}"), work).await
    }
}

fn described(
    name: Result<String, sqlx::Error>,
    kind: Result<String, sqlx::Error>,
    nullable: Result<String, sqlx::Error>,
    default: Result<Option<String>, sqlx::Error>,
) -> Value {
    json!({
        "name": name.unwrap_or_default(),
        "type": kind.unwrap_or_default(),
        "nullable": nullable.is_ok_and(|n| n == "YES"),
        "default": default.unwrap_or_default(),
    })
}

/// The first `n` items of a row stream (the rest are never fetched).
async fn take_n<T>(rows: impl futures::Stream<Item = Result<T, sqlx::Error>>, n: usize) -> Result<Vec<T>, sqlx::Error> {
    futures::StreamExt::take(rows, n).try_collect().await
}

#[derive(Debug, Deserialize, JsonSchema)]
struct QueryArgs {
    /// One SQL statement.
    query: String,
    /// How many rows to return at most (default 10).
    limit: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct DescribeArgs {
    /// The table's name.
    table_name: String,
}

/// Options of the `sql` toolkit read here (the rest are flags and Toolkit options).
pub(super) const OPTIONS: &[&str] = &["db_url", "read_only", "schema", "tables", "max_rows", "timeout_seconds"];

/// The SQL toolkit (name and id `sql`) over `db_url` (`sqlite://PATH`, `postgresql://...`,
/// `mysql://...`; SQLAlchemy's `+driver` suffixes are accepted), read-only unless `read_only =
/// false`, with `schema`, `tables` (answered by `list_sql_tables`, as Agno's), `max_rows` and
/// `timeout_seconds`.
///
/// # Errors
/// [`BuiltinError::Option`] for a missing or unsupported URL or a bad option.
pub fn sql_tools(options: &Map<String, Value>) -> Result<Toolkit, BuiltinError> {
    let err = |message: String| BuiltinError::Option { toolkit: "sql".into(), message };
    let url = options
        .get("db_url")
        .and_then(Value::as_str)
        .ok_or_else(|| err("give db_url = \"sqlite://data.db\" (or a postgresql:// or mysql:// URL)".into()))?;
    let (scheme, rest) = url.split_once(':').ok_or_else(|| err(format!("db_url {url:?} is not a URL")))?;
    let base_scheme = scheme.split('+').next().unwrap_or(scheme);
    let (dialect, scheme) = match base_scheme {
        "sqlite" => (Dialect::Sqlite, "sqlite"),
        "postgres" | "postgresql" => (Dialect::Postgres, "postgresql"),
        "mysql" | "mariadb" => (Dialect::MySql, "mysql"),
        other => return Err(err(format!("db_url scheme {other:?} is not supported: use sqlite, postgresql or mysql"))),
    };
    let url = format!("{scheme}:{rest}");
    let read = Options::new("sql", options);
    let read_only = read.flag("read_only", true)?;
    let schema = read.string("schema")?;
    let max_rows = read.positive_integer("max_rows")?.map_or(1000, |n| n as usize);
    let timeout = read.seconds("timeout_seconds")?.unwrap_or(Duration::from_secs(30));
    let sql = Arc::new(Sql {
        dialect,
        url,
        read_only,
        schema,
        tables: options.get("tables").cloned(),
        max_rows,
        timeout,
        pool: OnceCell::new(),
    });
    let list = Function::with_state(
        "list_sql_tables",
        "List the database's tables: a JSON array of names.",
        &sql,
        |sql, _: crate::NoArgs| async move { sql.list_tables().await },
    );
    let describe = Function::with_state(
        "describe_sql_table",
        "Describe a table's columns: a JSON array of {name, type, nullable, default}.",
        &sql,
        |sql, a: DescribeArgs| async move { sql.describe(&a.table_name).await },
    );
    let mode =
        if read_only { "The database is read-only: only read (SELECT)." } else { "The database may be changed." };
    let run = Function::with_state(
        "run_sql_query",
        &format!(
            "Run one SQL statement and return its rows as a JSON array of objects (at most limit, default 10). {mode}"
        ),
        &sql,
        |sql, a: QueryArgs| async move {
            let limit = a.limit.unwrap_or(10).clamp(1, sql.max_rows);
            sql.run(&a.query, limit).await
        },
    );
    let dialect_name = match dialect {
        Dialect::Sqlite => "SQLite",
        Dialect::Postgres => "PostgreSQL",
        Dialect::MySql => "MySQL",
    };
    Ok(Toolkit::new("sql")
        .with_instructions(&format!(
            "You can query a {dialect_name} database. List the tables and describe the ones you need before writing a query; \
             select only the columns you need and use a limit. {mode}"
        ))
        .flagged_tool("list_tables", true, list)
        .flagged_tool("describe_table", true, describe)
        .flagged_tool("run_sql_query", true, run))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted_and_queries_recognised() {
        assert_eq!(redact("postgresql://ann:secret@db:5432/x"), "postgresql://ann:***@db:5432/x");
        assert_eq!(redact("sqlite://data.db"), "sqlite://data.db");
        assert!(
            wrappable("  select 1") && wrappable("WITH x AS (SELECT 1) SELECT * FROM x") && !wrappable("(SELECT 1)")
        );
        assert!(!wrappable("SHOW search_path") && !wrappable("EXPLAIN SELECT 1"));
    }
}
