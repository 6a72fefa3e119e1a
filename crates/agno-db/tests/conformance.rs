//! The storage conformance suite on every adapter.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;

use agno_core::Db;
use agno_db::{InMemoryDb, SqliteDb};
use agno_testkit::db_conformance;

async fn memory_db() -> Arc<dyn Db> {
    Arc::new(InMemoryDb::new())
}

/// A fresh SQLite file per test, removed when the process ends (it lives under the temp dir).
async fn sqlite_db() -> Arc<dyn Db> {
    let dir = std::env::temp_dir().join("agno-rs-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("conformance-{}.db", agno_core::new_id()));
    let db = SqliteDb::connect(path.to_str().unwrap()).await.unwrap();
    db.create_tables().await.unwrap();
    Arc::new(db)
}

/// A fresh, uniquely named Postgres schema per test (`AGNO_TEST_POSTGRES_URL`, default the local
/// `test` database). Schemas left by earlier test processes that have exited are dropped first.
async fn postgres_db() -> Arc<dyn Db> {
    static SWEPT: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    let url = std::env::var("AGNO_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".to_owned());
    let prefix = "agno_conf_";
    SWEPT
        .get_or_init(|| async {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
            let names: Vec<String> =
                sqlx::query_scalar("SELECT nspname::text FROM pg_namespace WHERE starts_with(nspname, $1)")
                    .bind(prefix)
                    .fetch_all(&mut conn)
                    .await
                    .unwrap();
            for name in names {
                let pid = name[prefix.len()..].split('_').next().unwrap_or_default();
                if !std::path::Path::new("/proc").join(pid).exists() {
                    let sql = format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE");
                    sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await.unwrap();
                }
            }
        })
        .await;
    let schema = format!("{prefix}{}_{}", std::process::id(), agno_core::new_id().replace('-', ""));
    let db = agno_db::PostgresDb::connect_with(&url, agno_db::TableNames::default(), &schema[..schema.len().min(63)])
        .await
        .unwrap();
    db.create_tables().await.unwrap();
    Arc::new(db)
}

/// A fresh, uniquely named MariaDB/MySQL database per test (`AGNO_TEST_MYSQL_URL`, default root on
/// the local server). Databases left by earlier test processes that have exited are dropped first.
async fn mysql_db() -> Arc<dyn Db> {
    use sqlx::Connection;
    static SWEPT: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    let url = std::env::var("AGNO_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned());
    let prefix = "agno_t_conf_";
    let mut admin = sqlx::MySqlConnection::connect(&url).await.unwrap();
    SWEPT
        .get_or_init(|| async {
            let mut conn = sqlx::MySqlConnection::connect(&url).await.unwrap();
            let names: Vec<String> = sqlx::query_scalar(
                "SELECT CAST(SCHEMA_NAME AS CHAR) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'agno\\_t\\_conf\\_%'",
            )
            .fetch_all(&mut conn)
            .await
            .unwrap();
            for name in names {
                let pid = name[prefix.len()..].split('_').next().unwrap_or_default();
                if !std::path::Path::new("/proc").join(pid).exists() {
                    let sql = format!("DROP DATABASE IF EXISTS `{name}`");
                    sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await.unwrap();
                }
            }
        })
        .await;
    let name = format!("{prefix}{}_{}", std::process::id(), agno_core::new_id().replace('-', ""));
    let name = &name[..name.len().min(64)];
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE `{name}`"))).execute(&mut admin).await.unwrap();
    let base = url.rsplit_once('/').map_or(url.as_str(), |(base, _)| base);
    let db = agno_db::MySqlDb::connect(&format!("{base}/{name}")).await.unwrap();
    db.create_tables().await.unwrap();
    Arc::new(db)
}

/// A unique key prefix per test in the local Redis (`AGNO_TEST_REDIS_URL`, default
/// `redis://127.0.0.1:6379/0`). Prefixes left by earlier test processes that have exited are
/// deleted first.
async fn redis_db() -> Arc<dyn Db> {
    static SWEPT: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    let url = std::env::var("AGNO_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".to_owned());
    let family = "agno-rs-conf";
    SWEPT
        .get_or_init(|| async {
            let client = ::redis::Client::open(url.as_str()).unwrap();
            let mut conn = client.get_multiplexed_async_connection().await.unwrap();
            let mut cursor: u64 = 0;
            let mut dead = Vec::new();
            loop {
                let (next, keys): (u64, Vec<String>) = ::redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(format!("{family}:*"))
                    .arg("COUNT")
                    .arg(1000)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                for key in keys {
                    let pid = key.split(':').nth(1).unwrap_or_default();
                    if !std::path::Path::new("/proc").join(pid).exists() {
                        dead.push(key);
                    }
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
            for chunk in dead.chunks(500) {
                ::redis::cmd("DEL").arg(chunk).query_async::<()>(&mut conn).await.unwrap();
            }
        })
        .await;
    let prefix = format!("{family}:{}:{}", std::process::id(), agno_core::new_id());
    let db = agno_db::RedisDb::connect_with(&url, &prefix).await.unwrap();
    db.create_tables().await.unwrap();
    Arc::new(db)
}

/// A fresh directory per test under the temp dir.
async fn json_db() -> Arc<dyn Db> {
    let dir = std::env::temp_dir().join("agno-rs-tests").join(format!("json-{}", agno_core::new_id()));
    let db = agno_db::JsonDb::connect(&format!("json://{}", dir.display())).await.unwrap();
    db.create_tables().await.unwrap();
    Arc::new(db)
}

db_conformance!(memory, memory_db().await);
db_conformance!(sqlite, sqlite_db().await);
db_conformance!(mysql, mysql_db().await);
db_conformance!(postgres, postgres_db().await);
db_conformance!(redis, redis_db().await);
db_conformance!(json, json_db().await);

/// Memory store conformance, on the adapters that have a memory store.
mod memories {
    use std::sync::Arc;

    use agno_core::MemoryStore;
    use agno_db::{InMemoryDb, SqliteDb};
    use agno_testkit::memory_conformance;

    async fn memory_db() -> Arc<dyn MemoryStore> {
        Arc::new(InMemoryDb::new())
    }

    async fn sqlite_db() -> Arc<dyn MemoryStore> {
        let dir = std::env::temp_dir().join("agno-rs-tests");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("memories-{}.db", agno_core::new_id()));
        let db = SqliteDb::connect(path.to_str().unwrap()).await.unwrap();
        db.create_tables().await.unwrap();
        Arc::new(db)
    }

    /// A unique key prefix per test (swept with the other conformance prefixes).
    async fn redis_db() -> Arc<dyn MemoryStore> {
        let url = std::env::var("AGNO_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".to_owned());
        let prefix = format!("agno-rs-conf:{}:{}", std::process::id(), agno_core::new_id());
        let db = agno_db::RedisDb::connect_with(&url, &prefix).await.unwrap();
        db.create_tables().await.unwrap();
        Arc::new(db)
    }

    /// A fresh directory per test under the temp dir.
    async fn json_db() -> Arc<dyn MemoryStore> {
        let dir = std::env::temp_dir().join("agno-rs-tests").join(format!("json-mem-{}", agno_core::new_id()));
        let db = agno_db::JsonDb::connect(&format!("json://{}", dir.display())).await.unwrap();
        db.create_tables().await.unwrap();
        Arc::new(db)
    }

    memory_conformance!(memory, memory_db().await);
    memory_conformance!(sqlite, sqlite_db().await);
    memory_conformance!(redis, redis_db().await);
    memory_conformance!(json, json_db().await);

    /// A fresh Postgres schema per test, named like the session suite's so its sweep of schemas
    /// left by exited test processes covers these too.
    async fn postgres_db() -> Arc<dyn MemoryStore> {
        let url = std::env::var("AGNO_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".to_owned());
        let schema = format!("agno_conf_{}_{}", std::process::id(), agno_core::new_id().replace('-', ""));
        let db =
            agno_db::PostgresDb::connect_with(&url, agno_db::TableNames::default(), &schema[..schema.len().min(63)])
                .await
                .unwrap();
        db.create_tables().await.unwrap();
        Arc::new(db)
    }

    /// A fresh MariaDB/MySQL database per test, named like the session suite's so its sweep
    /// covers these too.
    async fn mysql_db() -> Arc<dyn MemoryStore> {
        use sqlx::Connection;
        let url =
            std::env::var("AGNO_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned());
        let name = format!("agno_t_conf_{}_{}", std::process::id(), agno_core::new_id().replace('-', ""));
        let name = &name[..name.len().min(64)];
        let mut admin = sqlx::MySqlConnection::connect(&url).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE `{name}`"))).execute(&mut admin).await.unwrap();
        admin.close().await.unwrap();
        let base = url.rsplit_once('/').map_or(url.as_str(), |(base, _)| base);
        let db = agno_db::MySqlDb::connect(&format!("{base}/{name}")).await.unwrap();
        db.create_tables().await.unwrap();
        Arc::new(db)
    }

    memory_conformance!(postgres, postgres_db().await);
    memory_conformance!(mysql, mysql_db().await);
}

mod records_memory {
    agno_testkit::records_conformance!(memory, std::sync::Arc::new(agno_db::InMemoryDb::new()));
}

mod records_sqlite {
    /// A fresh SQLite file per test under the temp dir.
    async fn make() -> std::sync::Arc<agno_db::SqliteDb> {
        let dir = std::env::temp_dir().join("agno-rs-tests");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("records-{}.db", agno_core::new_id()));
        let db = agno_db::SqliteDb::connect(path.to_str().unwrap()).await.unwrap();
        db.create_tables().await.unwrap();
        std::sync::Arc::new(db)
    }
    agno_testkit::records_conformance!(sqlite, make().await);
}

mod records_postgres {
    /// A fresh Postgres schema per test, named like the session suite's so its sweep of schemas
    /// left by exited test processes covers these too.
    async fn make() -> std::sync::Arc<agno_db::PostgresDb> {
        let url = std::env::var("AGNO_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".to_owned());
        let schema = format!("agno_conf_{}_{}", std::process::id(), agno_core::new_id().replace('-', ""));
        let db =
            agno_db::PostgresDb::connect_with(&url, agno_db::TableNames::default(), &schema[..schema.len().min(63)])
                .await
                .unwrap();
        db.create_tables().await.unwrap();
        std::sync::Arc::new(db)
    }
    agno_testkit::records_conformance!(postgres, make().await);
}

mod records_redis {
    /// A unique key prefix per test (swept with the other conformance prefixes).
    async fn make() -> std::sync::Arc<agno_db::RedisDb> {
        let url = std::env::var("AGNO_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".to_owned());
        let prefix = format!("agno-rs-conf:{}:{}", std::process::id(), agno_core::new_id());
        let db = agno_db::RedisDb::connect_with(&url, &prefix).await.unwrap();
        db.create_tables().await.unwrap();
        std::sync::Arc::new(db)
    }
    agno_testkit::records_conformance!(redis, make().await);
}

mod records_mysql {
    use std::sync::Arc;

    /// A fresh MariaDB/MySQL database per test, named like the session suite's so its sweep of
    /// databases left by exited test processes covers these too.
    async fn make() -> Arc<agno_db::MySqlDb> {
        use sqlx::Connection;
        let url =
            std::env::var("AGNO_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned());
        let name = format!("agno_t_conf_{}_{}", std::process::id(), agno_core::new_id().replace('-', ""));
        let name = &name[..name.len().min(64)];
        let mut admin = sqlx::MySqlConnection::connect(&url).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE `{name}`"))).execute(&mut admin).await.unwrap();
        admin.close().await.unwrap();
        let base = url.rsplit_once('/').map_or(url.as_str(), |(base, _)| base);
        let db = agno_db::MySqlDb::connect(&format!("{base}/{name}")).await.unwrap();
        db.create_tables().await.unwrap();
        Arc::new(db)
    }

    agno_testkit::records_conformance!(mysql, make().await);
}

mod records_json {
    use std::sync::Arc;

    /// A fresh directory per test under the temp dir.
    async fn make() -> Arc<agno_db::JsonDb> {
        let dir = std::env::temp_dir().join("agno-rs-tests").join(format!("json-rec-{}", agno_core::new_id()));
        let db = agno_db::JsonDb::connect(&format!("json://{}", dir.display())).await.unwrap();
        db.create_tables().await.unwrap();
        Arc::new(db)
    }

    agno_testkit::records_conformance!(json, make().await);
}

mod schedules_memory {
    agno_testkit::schedules_conformance!(memory, std::sync::Arc::new(agno_db::InMemoryDb::new()));
}

mod schedules_mysql {
    use std::sync::Arc;

    /// A fresh MariaDB/MySQL database per test, named like the session suite's so its sweep of
    /// databases left by exited test processes covers these too.
    async fn make() -> Arc<agno_db::MySqlDb> {
        use sqlx::Connection;
        let url =
            std::env::var("AGNO_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned());
        let name = format!("agno_t_conf_{}_{}", std::process::id(), agno_core::new_id().replace('-', ""));
        let name = &name[..name.len().min(64)];
        let mut admin = sqlx::MySqlConnection::connect(&url).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE `{name}`"))).execute(&mut admin).await.unwrap();
        admin.close().await.unwrap();
        let base = url.rsplit_once('/').map_or(url.as_str(), |(base, _)| base);
        let db = agno_db::MySqlDb::connect(&format!("{base}/{name}")).await.unwrap();
        db.create_tables().await.unwrap();
        Arc::new(db)
    }

    agno_testkit::schedules_conformance!(mysql, make().await);
}
