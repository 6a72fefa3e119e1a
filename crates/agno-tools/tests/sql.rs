//! The `sql` toolkit on SQLite, PostgreSQL and MariaDB: tables listed and described, rows as
//! JSON objects with their types, and writes refused by the database while read-only (the data
//! is unchanged afterwards), allowed with `read_only = false`; a query over its time limit is a
//! timeout error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::call;

use std::time::Duration;

use agno_tools::builtin::by_name;
use agno_tools::{ToolErrorKind, Toolkit};
use serde_json::{Map, Value, json};
use sqlx::{AssertSqlSafe, Executor};

fn toolkit(url: &str, extra: Value) -> Toolkit {
    let mut options = Map::new();
    options.insert("db_url".into(), json!(url));
    if let Value::Object(extra) = extra {
        options.extend(extra);
    }
    by_name("sql", &options).unwrap()
}

async fn rows(kit: &Toolkit, query: &str, limit: Option<u64>) -> Value {
    let mut args = json!({"query": query});
    if let Some(l) = limit {
        args["limit"] = json!(l);
    }
    let text = call(kit, "run_sql_query", args).await.unwrap_or_else(|e| panic!("{query}: {}", e.model_text()));
    serde_json::from_str(&text).unwrap()
}

/// A database with a `hotels` table of three rows, and a way to count them behind the toolkit's
/// back.
struct Fixture {
    url: String,
    table: String,
    /// A database that cannot be reached, with a password in its URL.
    down_url: &'static str,
    count: Box<dyn Fn() -> std::pin::Pin<Box<dyn Future<Output = i64> + Send>> + Send + Sync>,
}

/// What every backend must do.
async fn exercise(f: &Fixture, sleep: Option<&str>) {
    let t = &f.table;
    let kit = toolkit(&f.url, json!({}));
    let mut names: Vec<String> = kit.tools().iter().map(|t| t.name().to_owned()).collect();
    names.sort();
    assert_eq!(names, ["describe_sql_table", "list_sql_tables", "run_sql_query"]);
    assert!(kit.instructions().unwrap().contains("read-only"));

    let tables: Value = serde_json::from_str(&call(&kit, "list_sql_tables", json!({})).await.unwrap()).unwrap();
    assert!(tables.as_array().unwrap().iter().any(|n| n == t.as_str()), "{tables}");
    let columns: Value =
        serde_json::from_str(&call(&kit, "describe_sql_table", json!({"table_name": t})).await.unwrap()).unwrap();
    let described: Vec<(&str, bool)> = columns
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["nullable"].as_bool().unwrap()))
        .collect();
    assert_eq!(described, [("id", false), ("name", true), ("price", true), ("opened", true)], "{columns}");
    let err = call(&kit, "describe_sql_table", json!({"table_name": "no_such_table"})).await.unwrap_err();
    assert!(err.model_text().contains("no table named \"no_such_table\""), "{}", err.model_text());

    // Rows as JSON objects, limited; Agno's default limit is 10.
    let got = rows(&kit, &format!("SELECT id, name, price, opened FROM {t} ORDER BY id"), Some(2)).await;
    println!("{}: {got}", f.url.split(':').next().unwrap_or_default());
    assert_eq!(got.as_array().unwrap().len(), 2);
    assert_eq!(got[0]["id"], 1);
    assert_eq!(got[0]["name"], "Hilton Basel");
    assert!(got[0]["price"].is_number() || got[0]["price"] == "120.50", "{got}");
    assert!(got[0]["opened"].as_str().is_some_and(|d| d.starts_with("2020-01-02")), "{got}");
    assert_eq!(got[1]["name"], Value::Null, "NULL is null");
    assert_eq!(rows(&kit, &format!("SELECT id FROM {t};"), None).await.as_array().unwrap().len(), 3);
    assert_eq!(
        rows(&kit, &format!("SELECT id FROM {t}"), Some(0)).await.as_array().unwrap().len(),
        1,
        "at least one row"
    );

    // Writes are refused by the database, and nothing changes.
    for write in [
        format!("INSERT INTO {t} (id, name) VALUES (9, 'x')"),
        format!("UPDATE {t} SET name = 'x'"),
        format!("DELETE FROM {t}"),
        format!("DROP TABLE {t}"),
    ] {
        let err = call(&kit, "run_sql_query", json!({"query": write})).await.unwrap_err();
        assert!(err.model_text().contains("read-only"), "{write}: {}", err.model_text());
    }
    let err = call(&kit, "run_sql_query", json!({"query": format!("SELECT 1; DELETE FROM {t}")})).await;
    assert!(err.is_err() || (f.count)().await == 3, "a second statement never writes");
    assert_eq!((f.count)().await, 3, "the table is as it was");
    let err = call(&kit, "run_sql_query", json!({"query": "SELEC nonsense"})).await.unwrap_err();
    assert!(err.model_text().starts_with("Tool error: the query failed:"), "{}", err.model_text());
    let err = call(&kit, "run_sql_query", json!({"query": "  "})).await.unwrap_err();
    assert!(err.model_text().contains("query is empty"), "{}", err.model_text());

    // With read_only = false the same toolkit writes.
    let writer = toolkit(&f.url, json!({"read_only": false}));
    call(&writer, "run_sql_query", json!({"query": format!("INSERT INTO {t} (id, name) VALUES (4, 'Ibis Bern')")}))
        .await
        .unwrap();
    assert_eq!((f.count)().await, 4);

    if let Some(sleep) = sleep {
        let slow = toolkit(&f.url, json!({"timeout_seconds": 1}));
        let started = std::time::Instant::now();
        let err = call(&slow, "run_sql_query", json!({"query": sleep})).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
        assert!(
            err.kind == ToolErrorKind::Timeout || err.model_text().contains("statement timeout"),
            "{}",
            err.model_text()
        );
    }

    // A database that is not there is a tool error at the call, not a failed start.
    let down = toolkit(f.down_url, json!({"timeout_seconds": 3}));
    let err = call(&down, "list_sql_tables", json!({})).await.unwrap_err();
    assert!(
        err.model_text().contains("cannot open the database") || err.kind == ToolErrorKind::Timeout,
        "{}",
        err.model_text()
    );
    assert!(!err.model_text().contains("secret"), "no password in messages: {}", err.model_text());
}

#[tokio::test]
async fn sqlite() {
    let dir = std::env::temp_dir().join(format!("agno-sql-tools-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("hotels.db");
    let _ = std::fs::remove_file(&path);
    let url = format!("sqlite://{}", path.display());
    let opts = sqlx::sqlite::SqliteConnectOptions::new().filename(&path).create_if_missing(true);
    let pool = sqlx::SqlitePool::connect_with(opts).await.unwrap();
    pool.execute(
        "CREATE TABLE hotels (id INTEGER NOT NULL PRIMARY KEY, name TEXT, price REAL, opened TEXT);
         INSERT INTO hotels VALUES (1, 'Hilton Basel', 120.5, '2020-01-02'), (2, NULL, 80.0, '2021-03-04'), (3, 'Motel One', 99.0, NULL);",
    )
    .await
    .unwrap();
    let counter = pool.clone();
    let fixture = Fixture {
        url,
        table: "hotels".into(),
        down_url: "sqlite:///nonexistent/dir/db.sqlite",
        count: Box::new(move || {
            let pool = counter.clone();
            Box::pin(async move {
                sqlx::query_scalar::<_, i64>("SELECT count(*) FROM hotels").fetch_one(&pool).await.unwrap()
            })
        }),
    };
    exercise(&fixture, None).await;
    let _ = std::fs::remove_dir_all(&dir);
}

fn unique_table() -> String {
    format!(
        "agno_sql_tool_{}_{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos()
    )
}

#[tokio::test]
async fn postgres() {
    if !agno_testkit::services::postgres("the sql toolkit on PostgreSQL") {
        return;
    }
    let url =
        std::env::var("AGNO_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".into());
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let table = unique_table();
    pool.execute(AssertSqlSafe(format!(
        "CREATE TABLE {table} (id INTEGER NOT NULL PRIMARY KEY, name TEXT, price NUMERIC(8, 2), opened DATE);
         INSERT INTO {table} VALUES (1, 'Hilton Basel', 120.50, '2020-01-02'), (2, NULL, 80, '2021-03-04'), (3, 'Motel One', 99, NULL);"
    )))
    .await
    .unwrap();
    let counter = pool.clone();
    let count_sql = format!("SELECT count(*) FROM {table}");
    let fixture = Fixture {
        url: url.clone(),
        table: table.clone(),
        down_url: "postgresql://postgres:secret@127.0.0.1:1/test",
        count: Box::new(move || {
            let (pool, sql) = (counter.clone(), count_sql.clone());
            Box::pin(async move { sqlx::query_scalar::<_, i64>(AssertSqlSafe(sql)).fetch_one(&pool).await.unwrap() })
        }),
    };
    exercise(&fixture, Some("SELECT pg_sleep(10)")).await;
    // Statements that are not queries are answered too (not wrapped in row_to_json).
    let kit = toolkit(&url, json!({}));
    let shown = rows(&kit, "SHOW transaction_read_only", None).await;
    assert_eq!(shown[0]["transaction_read_only"], "on", "the toolkit's transactions are read-only");
    pool.execute(AssertSqlSafe(format!("DROP TABLE {table}"))).await.unwrap();
}

#[tokio::test]
async fn mariadb() {
    if !agno_testkit::services::mariadb("the sql toolkit on MariaDB") {
        return;
    }
    let url = std::env::var("AGNO_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".into());
    let pool = sqlx::MySqlPool::connect(&url).await.unwrap();
    let table = unique_table();
    pool.execute(AssertSqlSafe(format!(
        "CREATE TABLE {table} (id INTEGER NOT NULL PRIMARY KEY, name TEXT, price DECIMAL(8, 2), opened DATETIME)"
    )))
    .await
    .unwrap();
    pool.execute(AssertSqlSafe(format!(
        "INSERT INTO {table} VALUES (1, 'Hilton Basel', 120.50, '2020-01-02 10:00:00'), (2, NULL, 80, '2021-03-04 00:00:00'), (3, 'Motel One', 99, NULL)"
    )))
    .await
    .unwrap();
    let counter = pool.clone();
    let count_sql = format!("SELECT count(*) FROM {table}");
    let fixture = Fixture {
        url,
        table: table.clone(),
        down_url: "mysql://root:secret@127.0.0.1:1/test",
        count: Box::new(move || {
            let (pool, sql) = (counter.clone(), count_sql.clone());
            Box::pin(async move { sqlx::query_scalar::<_, i64>(AssertSqlSafe(sql)).fetch_one(&pool).await.unwrap() })
        }),
    };
    exercise(&fixture, Some("SELECT SLEEP(10)")).await;
    pool.execute(AssertSqlSafe(format!("DROP TABLE {table}"))).await.unwrap();
}
