//! What differs between the SQL databases in how records are written and read ([`Dialect`]),
//! and the three dialects: SQLite, PostgreSQL and MySQL/MariaDB.

use agno_core::{Cell, DbError, DbResult};
use futures::future::BoxFuture;
use sea_query::{Expr, ExprTrait, MysqlQueryBuilder, PostgresQueryBuilder, QueryBuilder, Value as SeaValue};
use sea_query_sqlx::SqlxValues;
use serde_json::Value;
use sqlx::mysql::MySqlRow;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::{AssertSqlSafe, Database, MySql, Pool, Postgres, Row as _, Sqlite};

use super::{Query, Violation, parse_json};
use crate::codec::to_json_text;
use crate::postgres::{clean_json, clean_text};

/// A row of the dialect's database.
pub(crate) type Row<D> = <<D as Dialect>::DB as Database>::Row;

/// A connection of the dialect's database (or the caller's transaction, dereferenced).
pub(crate) type Conn<D> = <<D as Dialect>::DB as Database>::Connection;

/// What differs between the SQL databases in how records are written and read.
pub(crate) trait Dialect: Send + Sync + 'static {
    /// The sqlx database.
    type DB: Database;

    /// The `n`th bind placeholder (`?`, or `$n`), counted from 1.
    fn placeholder(n: usize) -> String;

    /// `n` bind placeholders, comma-separated (`?, ?` or `$1, $2`), the first numbered `first`.
    fn placeholders(first: usize, n: usize) -> String {
        (first..first + n).map(Self::placeholder).collect::<Vec<_>>().join(", ")
    }

    /// Binds one column value as the dialect stores its kind (JSON as text or JSONB, booleans
    /// as integers or booleans).
    ///
    /// # Errors
    /// A JSON value cannot be encoded.
    fn bind<'q>(q: Query<'q, Self::DB>, cell: Cell) -> DbResult<Query<'q, Self::DB>>;

    /// A free text a user or a model wrote (an error message) as the database can store it:
    /// PostgreSQL cannot hold NUL and some other control characters, which are removed (as
    /// Python Agno removes them); elsewhere unchanged.
    fn storable(text: Option<&str>) -> Option<String> {
        text.map(str::to_owned)
    }

    /// Reads a text column.
    ///
    /// # Errors
    /// The column is missing or not text.
    fn read_text(row: &<Self::DB as Database>::Row, column: &str) -> Result<Option<String>, sqlx::Error>;

    /// Reads an integer column.
    ///
    /// # Errors
    /// The column is missing or not an integer.
    fn read_int(row: &<Self::DB as Database>::Row, column: &str) -> Result<Option<i64>, sqlx::Error>;

    /// Reads a boolean column (an integer 0/1 where the dialect has no booleans).
    ///
    /// # Errors
    /// The column is missing or not a boolean.
    fn read_bool(row: &<Self::DB as Database>::Row, column: &str) -> Result<Option<bool>, sqlx::Error>;

    /// Reads a JSON column as the dialect stores it (JSON text, JSONB), `None` for NULL.
    ///
    /// # Errors
    /// The column is missing, or holds text that is not JSON (a decode error).
    fn read_json(row: &<Self::DB as Database>::Row, column: &str) -> Result<Option<Value>, sqlx::Error>;

    /// sea-query's builder of statements in the dialect.
    fn builder() -> impl sea_query::QueryBuilder;

    /// One column value as a built statement carries it (see [`Dialect::bind`]): JSON as its
    /// text, unless the dialect has a JSON type.
    ///
    /// # Errors
    /// A JSON value cannot be encoded.
    fn value(cell: Cell) -> DbResult<sea_query::Value> {
        use sea_query::Value;
        Ok(match cell {
            Cell::Text(v) => Value::String(v),
            Cell::Int(v) => Value::BigInt(v),
            Cell::Bool(v) => Value::Bool(Some(v)),
            Cell::Json(v) => Value::String(v.as_ref().map(crate::codec::to_json_text).transpose()?),
        })
    }

    /// `column` equal to `value` byte for byte (MySQL's default collations ignore case: `Alice`
    /// must never match `alice`'s rows).
    fn exact(column: &'static str, value: &str) -> sea_query::Expr {
        use sea_query::ExprTrait;
        sea_query::Expr::col(column).eq(value)
    }

    /// `column` equal, byte for byte, to one of `values`.
    fn exact_in<'v>(column: &'static str, values: impl IntoIterator<Item = &'v str>) -> sea_query::Expr {
        use sea_query::ExprTrait;
        sea_query::Expr::col(column).is_in(values)
    }

    /// `sql` (a column, or an expression over columns) as an ordering or grouping by its bytes,
    /// so ids and names sort, and user ids group, the same on every database.
    fn byte_order(sql: &'static str) -> sea_query::Expr {
        sea_query::Expr::cust(Self::bytes_of(sql))
    }

    /// The SQL of [`Dialect::byte_order`].
    fn bytes_of(sql: &str) -> String;

    /// Memories whose JSON `topics` list holds one of `topics` (not empty).
    fn any_topic(topics: &[String]) -> sea_query::Expr;

    /// Memories whose text holds `needle`, ignoring case: a plain substring, no wildcards.
    fn memory_contains(needle: &str) -> sea_query::Expr;

    /// Sessions whose `session_data.session_name` holds `name`, ignoring case (a LIKE pattern,
    /// as Python Agno matches it).
    fn session_name_like(name: &str) -> sea_query::Expr;

    /// The `session_data` of a session renamed `name`: its stored object with `session_name`
    /// set (a new object when it holds none).
    fn named_session_data(name: &str) -> sea_query::Expr;

    /// The `input` of a run's `run_data` as JSON, its `input_content` text (when it is text) cut
    /// to `keep` characters.
    fn first_input(keep: usize) -> String;

    /// A date column or expression as `YYYY-MM-DD` text.
    fn date_text(sql: &str) -> String;

    /// A day (`YYYY-MM-DD`) as a value compared with a date column.
    fn date_value(day: &str) -> sea_query::Expr {
        sea_query::Expr::val(day)
    }

    /// The JSON text of the member `key` of the JSON object in `column` (NULL when absent or
    /// when the column is not JSON).
    fn json_member(column: &str, key: &str) -> String;

    /// The text of the member `key` of the JSON object in `column` (NULL when absent, JSON null,
    /// or when the column is not JSON).
    fn json_text(column: &str, key: &str) -> String;

    /// Whether NULL sorts below every value (SQLite and MySQL), rather than above (PostgreSQL).
    const NULLS_LOW: bool = true;

    /// Runs a built statement on `pool` and returns its rows.
    fn fetch_built<'a>(
        pool: &'a Pool<Self::DB>,
        sql: &'a str,
        values: sea_query_sqlx::SqlxValues,
    ) -> BoxFuture<'a, Result<Vec<Row<Self>>, sqlx::Error>>;

    /// Runs a built statement on `pool` and returns its rows, planned for these values (not a
    /// cached prepared statement) where the database would otherwise settle on one generic plan
    /// (PostgreSQL: a plan made while a session had few runs sorts all of them to return the
    /// newest few, so run N of a session would cost O(N)).
    fn fetch_replanned<'a>(
        pool: &'a Pool<Self::DB>,
        sql: &'a str,
        values: sea_query_sqlx::SqlxValues,
    ) -> BoxFuture<'a, Result<Vec<Row<Self>>, sqlx::Error>> {
        Self::fetch_built(pool, sql, values)
    }

    /// Runs a built statement on `pool` and returns the number of rows it changed.
    fn execute_built<'a>(
        pool: &'a Pool<Self::DB>,
        sql: &'a str,
        values: sea_query_sqlx::SqlxValues,
    ) -> BoxFuture<'a, Result<u64, sqlx::Error>>;

    /// Runs a built statement on one connection (a transaction's) and returns its rows.
    fn fetch_on<'a>(
        conn: &'a mut <Self::DB as Database>::Connection,
        sql: &'a str,
        values: sea_query_sqlx::SqlxValues,
    ) -> BoxFuture<'a, Result<Vec<Row<Self>>, sqlx::Error>>;

    /// Runs a built statement on one connection (a transaction's) and returns the number of
    /// rows it changed.
    fn execute_on<'a>(
        conn: &'a mut <Self::DB as Database>::Connection,
        sql: &'a str,
        values: sea_query_sqlx::SqlxValues,
    ) -> BoxFuture<'a, Result<u64, sqlx::Error>>;

    /// The statement a [`Tx`] starts with, where plain `BEGIN` is not what the stores need
    /// (SQLite takes the write lock up front; MySQL reads committed rows, so a conditional
    /// write sees another worker's claim).
    const BEGIN: Option<&'static str> = None;

    /// Whether a session and its runs are read in one statement (a union of the session's row
    /// and its runs' rows) rather than two: where each statement is a round trip to a server.
    /// In-process SQLite pays no round trip, and runs the union (which it sorts) no faster than
    /// the two statements: the durable queue's medians were 801 against 838 runs/s in four pairs
    /// (2026-12-06).
    const SESSION_AND_RUNS_IN_ONE: bool = true;

    /// Whether a failed write lost a race and may succeed if run again (a MySQL deadlock).
    fn lost_race(_error: &DbError) -> bool {
        false
    }

    /// What a unique or foreign key violation broke, or `None` for any other error.
    fn violation(e: &sqlx::Error) -> Option<Violation> {
        let sqlx::Error::Database(d) = e else { return None };
        if d.is_foreign_key_violation() {
            Some(Violation::ForeignKey)
        } else if d.is_unique_violation() {
            Some(if Self::primary_key(d.as_ref()) { Violation::PrimaryKey } else { Violation::Unique })
        } else {
            None
        }
    }

    /// Whether a unique violation is of the primary key (rather than another unique index).
    fn primary_key(e: &dyn sqlx::error::DatabaseError) -> bool;

    /// Classifies a driver error (conflict, unavailable, schema too old) with what was being done.
    fn error(what: &str, e: sqlx::Error) -> DbError;
}

/// The statement-running methods of a dialect, the same for every sqlx driver.
macro_rules! runs_statements {
    ($db:ty, $row:ty) => {
        fn fetch_built<'a>(
            pool: &'a Pool<$db>,
            sql: &'a str,
            values: SqlxValues,
        ) -> BoxFuture<'a, Result<Vec<$row>, sqlx::Error>> {
            Box::pin(sqlx::query_with(AssertSqlSafe(sql), values).fetch_all(pool))
        }
        fn execute_built<'a>(
            pool: &'a Pool<$db>,
            sql: &'a str,
            values: SqlxValues,
        ) -> BoxFuture<'a, Result<u64, sqlx::Error>> {
            Box::pin(
                async move { Ok(sqlx::query_with(AssertSqlSafe(sql), values).execute(pool).await?.rows_affected()) },
            )
        }
        fn fetch_on<'a>(
            conn: &'a mut <$db as Database>::Connection,
            sql: &'a str,
            values: SqlxValues,
        ) -> BoxFuture<'a, Result<Vec<$row>, sqlx::Error>> {
            Box::pin(sqlx::query_with(AssertSqlSafe(sql), values).fetch_all(conn))
        }
        fn execute_on<'a>(
            conn: &'a mut <$db as Database>::Connection,
            sql: &'a str,
            values: SqlxValues,
        ) -> BoxFuture<'a, Result<u64, sqlx::Error>> {
            Box::pin(
                async move { Ok(sqlx::query_with(AssertSqlSafe(sql), values).execute(conn).await?.rows_affected()) },
            )
        }
    };
}

impl Dialect for Sqlite {
    runs_statements!(Sqlite, SqliteRow);

    type DB = Sqlite;

    fn placeholder(_n: usize) -> String {
        "?".to_owned()
    }
    // JSON columns are text holding the JSON.
    fn bind<'q>(q: Query<'q, Sqlite>, cell: Cell) -> DbResult<Query<'q, Sqlite>> {
        Ok(match cell {
            Cell::Text(v) => q.bind(v),
            Cell::Int(v) => q.bind(v),
            Cell::Bool(v) => q.bind(v),
            Cell::Json(v) => q.bind(v.as_ref().map(to_json_text).transpose()?),
        })
    }
    fn read_text(row: &SqliteRow, column: &str) -> Result<Option<String>, sqlx::Error> {
        row.try_get(column)
    }
    // A REAL where an integer belongs (Python Agno's SQLite trace upsert stores `duration_ms` as
    // a `julianday` difference) reads rounded.
    fn read_int(row: &SqliteRow, column: &str) -> Result<Option<i64>, sqlx::Error> {
        row.try_get(column).or_else(|e| match row.try_get::<Option<f64>, _>(column) {
            Ok(real) => Ok(real.map(|r| r.round() as i64)),
            Err(_) => Err(e),
        })
    }
    fn read_bool(row: &SqliteRow, column: &str) -> Result<Option<bool>, sqlx::Error> {
        row.try_get::<Option<i64>, _>(column).map(|v| v.map(|v| v != 0))
    }
    fn read_json(row: &SqliteRow, column: &str) -> Result<Option<Value>, sqlx::Error> {
        parse_json(row.try_get(column)?)
    }
    // Backticks: a missing column is an error, not a string literal.
    fn builder() -> impl QueryBuilder {
        super::sqlite_builder::SqliteBuilder
    }
    // Text compares by its bytes already (BINARY collation).
    fn bytes_of(sql: &str) -> String {
        sql.to_owned()
    }
    // Topics are a JSON list in text.
    fn any_topic(topics: &[String]) -> Expr {
        let marks = vec!["?"; topics.len()].join(", ");
        Expr::cust_with_values(
            format!("EXISTS (SELECT 1 FROM json_each(topics) WHERE value IN ({marks}))"),
            topics.iter().map(String::as_str),
        )
    }
    fn session_name_like(name: &str) -> Expr {
        Expr::cust_with_values("json_extract(session_data, '$.session_name') LIKE '%' || ? || '%'", [name])
    }
    fn date_text(sql: &str) -> String {
        sql.to_owned()
    }
    fn json_member(column: &str, key: &str) -> String {
        format!("CASE WHEN json_valid({column}) THEN json_extract({column}, '$.{key}') END")
    }
    fn json_text(column: &str, key: &str) -> String {
        format!("CASE WHEN json_valid({column}) THEN CAST(json_extract({column}, '$.{key}') AS TEXT) END")
    }
    fn first_input(keep: usize) -> String {
        format!(
            "CASE WHEN json_type(run_data, '$.input.input_content') = 'text' \
             THEN json_object('input_content', substr(json_extract(run_data, '$.input.input_content'), 1, {keep})) \
             ELSE run_data -> '$.input' END"
        )
    }
    fn named_session_data(name: &str) -> Expr {
        Expr::cust_with_values("json_set(COALESCE(NULLIF(session_data, 'null'), '{}'), '$.session_name', ?)", [name])
    }
    // The memory is its JSON text; a plain substring, not a LIKE pattern.
    fn memory_contains(needle: &str) -> Expr {
        Expr::cust_with_values("instr(lower(memory), lower(?)) > 0", [needle])
    }
    const BEGIN: Option<&'static str> = Some("BEGIN IMMEDIATE");
    const SESSION_AND_RUNS_IN_ONE: bool = false;
    // "UNIQUE constraint failed: <table>.id"
    fn primary_key(e: &dyn sqlx::error::DatabaseError) -> bool {
        e.message().ends_with(".id")
    }
    fn error(what: &str, e: sqlx::Error) -> DbError {
        crate::sqlite::db_error(what, e)
    }
}

impl Dialect for Postgres {
    runs_statements!(Postgres, PgRow);

    type DB = Postgres;

    fn placeholder(n: usize) -> String {
        format!("${n}")
    }
    // Whatever the server's default: a conditional write must see rows committed meanwhile.
    const BEGIN: Option<&'static str> = Some("BEGIN ISOLATION LEVEL READ COMMITTED");
    fn fetch_replanned<'a>(
        pool: &'a Pool<Postgres>,
        sql: &'a str,
        values: SqlxValues,
    ) -> BoxFuture<'a, Result<Vec<PgRow>, sqlx::Error>> {
        Box::pin(sqlx::query_with(AssertSqlSafe(sql), values).persistent(false).fetch_all(pool))
    }
    // JSONB, without the characters PostgreSQL cannot store (as Python Agno strips them).
    fn bind<'q>(q: Query<'q, Postgres>, cell: Cell) -> DbResult<Query<'q, Postgres>> {
        Ok(match cell {
            Cell::Text(v) => q.bind(v),
            Cell::Int(v) => q.bind(v),
            Cell::Bool(v) => q.bind(v),
            Cell::Json(v) => q.bind(v.map(|mut v| {
                crate::postgres::sanitize(&mut v);
                v
            })),
        })
    }
    fn storable(text: Option<&str>) -> Option<String> {
        clean_text(text)
    }
    fn read_text(row: &PgRow, column: &str) -> Result<Option<String>, sqlx::Error> {
        row.try_get(column)
    }
    // BIGINT, or INTEGER (Agno's component tables number versions with it).
    fn read_int(row: &PgRow, column: &str) -> Result<Option<i64>, sqlx::Error> {
        row.try_get(column).or_else(|e| match row.try_get::<Option<i32>, _>(column) {
            Ok(small) => Ok(small.map(i64::from)),
            Err(_) => Err(e),
        })
    }
    fn read_bool(row: &PgRow, column: &str) -> Result<Option<bool>, sqlx::Error> {
        row.try_get(column)
    }
    // JSONB, or a JSON column Python Agno wrote as a JSON string holding the document.
    fn read_json(row: &PgRow, column: &str) -> Result<Option<Value>, sqlx::Error> {
        Ok(crate::postgres::value_column(row.try_get(column)?))
    }
    fn builder() -> impl QueryBuilder {
        PostgresQueryBuilder
    }
    fn value(cell: Cell) -> DbResult<SeaValue> {
        Ok(match cell {
            Cell::Text(v) => SeaValue::String(clean_text(v.as_deref())),
            Cell::Int(v) => SeaValue::BigInt(v),
            Cell::Bool(v) => SeaValue::Bool(Some(v)),
            Cell::Json(v) => SeaValue::Json(clean_json(v.as_ref()).map(Box::new)),
        })
    }
    // Byte order, whatever the database's collation.
    fn bytes_of(sql: &str) -> String {
        format!("{sql} COLLATE \"C\"")
    }
    fn any_topic(topics: &[String]) -> Expr {
        let any = (1..=topics.len()).map(|i| format!("jsonb_exists(topics::jsonb, ${i})")).collect::<Vec<_>>();
        let sql = format!("(jsonb_typeof(topics::jsonb) = 'array' AND ({}))", any.join(" OR "));
        Expr::cust_with_values(sql, topics.iter().map(String::as_str))
    }
    fn memory_contains(needle: &str) -> Expr {
        Expr::cust_with_values("strpos(lower(memory #>> '{}'), lower($1)) > 0", [needle])
    }
    fn session_name_like(name: &str) -> Expr {
        Expr::cust_with_values("COALESCE(session_data ->> 'session_name', '') ILIKE '%' || $1 || '%'", [name])
    }
    fn date_text(sql: &str) -> String {
        format!("to_char({sql}, 'YYYY-MM-DD')")
    }
    fn date_value(day: &str) -> Expr {
        Expr::cust_with_values("CAST($1 AS DATE)", [day])
    }
    fn json_member(column: &str, key: &str) -> String {
        format!("({column}::jsonb -> '{key}')::text")
    }
    fn json_text(column: &str, key: &str) -> String {
        format!("{column}::jsonb ->> '{key}'")
    }
    fn first_input(keep: usize) -> String {
        format!(
            "CASE WHEN jsonb_typeof(run_data->'input'->'input_content') = 'string' \
             THEN jsonb_build_object('input_content', left(run_data->'input'->>'input_content', {keep})) \
             ELSE run_data->'input' END"
        )
    }
    fn named_session_data(name: &str) -> Expr {
        Expr::cust_with_values(
            "jsonb_set(CASE WHEN jsonb_typeof(session_data) = 'object' THEN session_data ELSE '{}'::jsonb END, \
             '{session_name}', to_jsonb($1::text))",
            [clean_text(Some(name))],
        )
    }
    const NULLS_LOW: bool = false;
    fn primary_key(e: &dyn sqlx::error::DatabaseError) -> bool {
        e.constraint().is_some_and(|c| c.ends_with("_pkey"))
    }
    fn error(what: &str, e: sqlx::Error) -> DbError {
        crate::postgres::db_error(what, e)
    }
}

impl Dialect for MySql {
    runs_statements!(MySql, MySqlRow);

    type DB = MySql;

    fn placeholder(_n: usize) -> String {
        "?".to_owned()
    }
    // JSON columns take JSON text; booleans are TINYINT.
    fn bind<'q>(q: Query<'q, MySql>, cell: Cell) -> DbResult<Query<'q, MySql>> {
        Ok(match cell {
            Cell::Text(v) => q.bind(v),
            Cell::Int(v) => q.bind(v),
            Cell::Bool(v) => q.bind(i64::from(v)),
            Cell::Json(v) => q.bind(v.as_ref().map(to_json_text).transpose()?),
        })
    }
    // Unchecked: text columns with a binary collation (and JSON) come back as bytes to sqlx.
    fn read_text(row: &MySqlRow, column: &str) -> Result<Option<String>, sqlx::Error> {
        row.try_get_unchecked(column)
    }
    fn read_int(row: &MySqlRow, column: &str) -> Result<Option<i64>, sqlx::Error> {
        row.try_get(column)
    }
    fn read_bool(row: &MySqlRow, column: &str) -> Result<Option<bool>, sqlx::Error> {
        row.try_get(column)
    }
    fn read_json(row: &MySqlRow, column: &str) -> Result<Option<Value>, sqlx::Error> {
        parse_json(row.try_get_unchecked(column)?)
    }
    fn builder() -> impl QueryBuilder {
        MysqlQueryBuilder
    }
    // Byte order, whatever the column's collation.
    fn bytes_of(sql: &str) -> String {
        format!("CAST({sql} AS BINARY)")
    }
    fn any_topic(topics: &[String]) -> Expr {
        let any = vec!["JSON_CONTAINS(topics, JSON_QUOTE(?))"; topics.len()].join(" OR ");
        Expr::cust_with_values(format!("(topics IS NOT NULL AND ({any}))"), topics.iter().map(String::as_str))
    }
    fn memory_contains(needle: &str) -> Expr {
        Expr::cust_with_values("LOCATE(LOWER(?), LOWER(JSON_UNQUOTE(memory))) > 0", [needle])
    }
    fn session_name_like(name: &str) -> Expr {
        Expr::cust_with_values(
            "LOWER(COALESCE(JSON_UNQUOTE(JSON_EXTRACT(session_data, '$.session_name')), '')) LIKE CONCAT('%', LOWER(?), '%')",
            [name],
        )
    }
    fn date_text(sql: &str) -> String {
        format!("CAST({sql} AS CHAR)")
    }
    fn json_member(column: &str, key: &str) -> String {
        format!("CASE WHEN JSON_VALID({column}) THEN JSON_EXTRACT({column}, '$.{key}') END")
    }
    fn json_text(column: &str, key: &str) -> String {
        format!(
            "CASE WHEN JSON_VALID({column}) AND JSON_TYPE(JSON_EXTRACT({column}, '$.{key}')) <> 'NULL' \
             THEN JSON_UNQUOTE(JSON_EXTRACT({column}, '$.{key}')) END"
        )
    }
    fn first_input(keep: usize) -> String {
        format!(
            "CASE WHEN JSON_TYPE(JSON_EXTRACT(run_data, '$.input.input_content')) = 'STRING' \
             THEN JSON_OBJECT('input_content', LEFT(JSON_UNQUOTE(JSON_EXTRACT(run_data, '$.input.input_content')), {keep})) \
             ELSE JSON_EXTRACT(run_data, '$.input') END"
        )
    }
    fn named_session_data(name: &str) -> Expr {
        Expr::cust_with_values(
            "CASE WHEN session_data IS NULL OR JSON_TYPE(session_data) <> 'OBJECT' THEN JSON_OBJECT('session_name', ?) \
             ELSE JSON_SET(session_data, '$.session_name', ?) END",
            [name, name],
        )
    }
    // The plain comparison keeps the column's index in use; the binary one decides.
    fn exact(column: &'static str, value: &str) -> Expr {
        let binary = Expr::cust_with_values(format!("CAST(`{column}` AS BINARY) = CAST(? AS BINARY)"), [value]);
        Expr::col(column).eq(value).and(binary)
    }
    fn exact_in<'v>(column: &'static str, values: impl IntoIterator<Item = &'v str>) -> Expr {
        Expr::cust(format!("CAST(`{column}` AS BINARY)")).is_in(values)
    }
    fn lost_race(error: &DbError) -> bool {
        crate::mysql::is_transient(error)
    }
    const BEGIN: Option<&'static str> = Some("SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION");
    // "Duplicate entry '...' for key 'PRIMARY'"
    fn primary_key(e: &dyn sqlx::error::DatabaseError) -> bool {
        e.message().contains("PRIMARY")
    }
    fn error(what: &str, e: sqlx::Error) -> DbError {
        crate::mysql::db_error(what, e)
    }
}
