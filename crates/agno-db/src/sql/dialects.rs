//! The three SQL dialects: SQLite, PostgreSQL and MySQL/MariaDB, as [`Dialect`]s.

use agno_core::{Cell, DbError, DbResult};
use futures::future::BoxFuture;
use sea_query::{Expr, ExprTrait, MysqlQueryBuilder, PostgresQueryBuilder, QueryBuilder, Value as SeaValue};
use sea_query_sqlx::SqlxValues;
use serde_json::Value;
use sqlx::mysql::MySqlRow;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::{AssertSqlSafe, Database, MySql, Pool, Postgres, Row, Sqlite};

use super::{Dialect, Query, parse_json};
use crate::codec::to_json_text;
use crate::postgres::{clean_json, clean_text};

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
    fn read_int(row: &SqliteRow, column: &str) -> Result<Option<i64>, sqlx::Error> {
        row.try_get(column)
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
    fn read_int(row: &PgRow, column: &str) -> Result<Option<i64>, sqlx::Error> {
        row.try_get(column)
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
