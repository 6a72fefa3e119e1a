//! The storage conformance suite on every adapter, and `calculate_metrics` on each.
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
    sqlite_jobs().await
}

/// [`sqlite_db`] as the concrete adapter, for the job queue.
async fn sqlite_jobs() -> Arc<SqliteDb> {
    let dir = std::env::temp_dir().join("agno-rs-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("conformance-{}.db", agno_core::new_id()));
    let db = SqliteDb::connect(path.to_str().unwrap()).await.unwrap();
    db.create_tables().await.unwrap();
    Arc::new(db)
}

/// A fresh, uniquely named Postgres schema per test, as [`postgres_store`].
async fn postgres_db() -> Arc<dyn Db> {
    postgres_store().await
}

/// A fresh, uniquely named Postgres schema per test (`AGNO_TEST_POSTGRES_URL`, default the local
/// `test` database). Schemas left by earlier test processes that have exited are dropped first.
async fn postgres_store() -> Arc<agno_db::PostgresDb> {
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
    mysql_store().await
}

/// A fresh MariaDB/MySQL database, as [`mysql_db`], as the concrete store (for the job queue).
async fn mysql_store() -> Arc<agno_db::MySqlDb> {
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
    redis_store().await
}

/// A fresh Redis key prefix, as [`redis_db`], as the concrete store (for the job queue cases).
async fn redis_store() -> Arc<agno_db::RedisDb> {
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

/// `calculate_metrics` on every adapter: sessions and runs become one bucket per user per day.
mod metrics_calculation {
    use std::sync::Arc;

    use agno_core::{
        AgentSession, Db, MetricsQuery, MetricsStore, NaiveDate, RunOutput, RunStatus, RunStore, SessionStore,
        SessionType, StateUpdate,
    };
    use agno_db::calculate_metrics_until;
    use serde_json::json;

    const DAY: i64 = 86_400;

    fn midnight(day: NaiveDate) -> i64 {
        day.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp()
    }

    async fn session<D: SessionStore + RunStore + ?Sized>(
        db: &D,
        id: &str,
        user: Option<&str>,
        kind: SessionType,
        created_at: i64,
        models: &[(&str, &str)],
        input_tokens: i64,
    ) {
        let mut s = AgentSession::new(id);
        match kind {
            SessionType::Agent => s.agent_id = Some("a1".into()),
            SessionType::Team => s.team_id = Some("t1".into()),
            SessionType::Workflow => s.workflow_id = Some("w1".into()),
        }
        s.user_id = user.map(str::to_owned);
        s.created_at = Some(created_at);
        s.updated_at = Some(created_at);
        s.session_data = Some(
            json!({"session_metrics": {"input_tokens": input_tokens, "output_tokens": 5, "total_tokens": input_tokens + 5}})
                .as_object()
                .cloned()
                .unwrap(),
        );
        db.upsert_session(&s, &StateUpdate::Replace).await.unwrap();
        for (i, (model, provider)) in models.iter().enumerate() {
            let mut r = RunOutput::new(format!("{id}-run-{i}"), id);
            r.status = RunStatus::Completed;
            r.created_at = created_at + i64::try_from(i).unwrap();
            r.model = Some((*model).to_owned());
            r.model_provider = Some((*provider).to_owned());
            match kind {
                SessionType::Workflow => r.workflow_id = Some("w1".into()),
                _ => r.agent_id = Some("a1".into()),
            }
            db.upsert_run(&r, id, user).await.unwrap();
        }
    }

    /// Yesterday's and today's sessions of two users and of nobody aggregate into per-user buckets;
    /// yesterday's are completed, today's are recalculated on the next pass and keep their ids.
    async fn metrics_are_calculated_per_user<D: SessionStore + RunStore + MetricsStore + ?Sized>(db: Arc<D>) {
        let today: NaiveDate = "2026-11-30".parse().unwrap();
        let yesterday = today.pred_opt().unwrap();
        assert!(calculate_metrics_until(&*db, today).await.unwrap().is_empty(), "no sessions, nothing to do");

        let y = midnight(yesterday) + 3_600;
        session(&*db, "s1", Some("u1"), SessionType::Agent, y, &[("gpt-4o", "OpenAI"), ("gpt-4o", "OpenAI")], 10).await;
        session(&*db, "s2", Some("u1"), SessionType::Team, y + 60, &[("claude", "Anthropic")], 20).await;
        session(&*db, "s3", Some("u2"), SessionType::Workflow, y + 120, &[], 30).await;
        session(&*db, "s4", None, SessionType::Agent, y + 180, &[("gpt-4o", "OpenAI")], 40).await;
        let t = midnight(today) + 60;
        session(&*db, "s5", Some("u1"), SessionType::Agent, t, &[("gpt-4o", "OpenAI")], 50).await;
        // Before the first day with sessions is never read; after today is not counted.
        session(&*db, "late", Some("u1"), SessionType::Agent, midnight(today) + DAY + 5, &[], 1).await;

        let written = calculate_metrics_until(&*db, today).await.unwrap();
        assert_eq!(written.len(), 4, "u1, u2 and the shared bucket yesterday; u1 today: {written:?}");

        let (all, latest) = db.get_metrics(&MetricsQuery::default()).await.unwrap();
        assert_eq!(all.len(), 4);
        assert!(latest.is_some());
        let find = |date: NaiveDate, user: Option<&str>| {
            all.iter().find(|b| b.date == date && b.user_id.as_deref() == user).cloned().expect("bucket")
        };
        let u1 = find(yesterday, Some("u1"));
        assert_eq!((u1.agent_sessions_count, u1.team_sessions_count, u1.workflow_sessions_count), (1, 1, 0));
        assert_eq!((u1.agent_runs_count, u1.team_runs_count, u1.workflow_runs_count), (2, 1, 0));
        assert_eq!(u1.users_count, 1);
        assert_eq!(u1.token_metrics["input_tokens"], json!(30));
        assert_eq!(u1.token_metrics["total_tokens"], json!(40));
        assert_eq!(u1.token_metrics["reasoning_tokens"], json!(0));
        assert_eq!(
            u1.model_metrics,
            json!([
                {"model_id": "claude", "model_provider": "Anthropic", "count": 1},
                {"model_id": "gpt-4o", "model_provider": "OpenAI", "count": 2}
            ])
        );
        assert!(u1.completed, "yesterday is complete");
        let u2 = find(yesterday, Some("u2"));
        assert_eq!((u2.workflow_sessions_count, u2.workflow_runs_count, u2.users_count), (1, 0, 1));
        let shared = find(yesterday, None);
        assert_eq!((shared.agent_sessions_count, shared.agent_runs_count, shared.users_count), (1, 1, 0));
        let today_u1 = find(today, Some("u1"));
        assert!(!today_u1.completed, "today is not over");
        assert_eq!(today_u1.agent_runs_count, 1);

        // Only u1's buckets, and only the shared one.
        let (mine, _) =
            db.get_metrics(&MetricsQuery { user_id: Some("u1".into()), ..Default::default() }).await.unwrap();
        assert_eq!(mine.len(), 2);
        let (none, _) =
            db.get_metrics(&MetricsQuery { user_id: Some(String::new()), ..Default::default() }).await.unwrap();
        assert_eq!(none.len(), 1);

        // A new run today: the next pass recomputes only today, in place.
        let mut r = RunOutput::new("s5-run-extra", "s5");
        r.status = RunStatus::Completed;
        r.created_at = t + 30;
        r.agent_id = Some("a1".into());
        db.upsert_run(&r, "s5", Some("u1")).await.unwrap();
        let again = calculate_metrics_until(&*db, today).await.unwrap();
        assert_eq!(again.len(), 1, "completed days are not recalculated: {again:?}");
        let (all, _) = db.get_metrics(&MetricsQuery::default()).await.unwrap();
        assert_eq!(all.len(), 4);
        let today_u1_again = all.iter().find(|b| b.date == today && b.user_id.as_deref() == Some("u1")).unwrap();
        assert_eq!(today_u1_again.agent_runs_count, 2);
        assert_eq!(today_u1_again.id, today_u1.id, "recalculation keeps the bucket's id");

        // The next day completes today's buckets.
        let tomorrow = today.succ_opt().unwrap();
        let next = calculate_metrics_until(&*db, tomorrow).await.unwrap();
        assert!(next.iter().any(|b| b.date == today && b.completed));
        assert!(next.iter().any(|b| b.date == tomorrow && !b.completed && b.agent_sessions_count == 1));

        // The adapter's set-based reads (where it has them) and one read per session agree.
        let per_session =
            agno_db::calculate_metrics_with(&*db, tomorrow, agno_db::MetricsReads::PerSession).await.unwrap();
        let set_based = agno_db::calculate_metrics_with(&*db, tomorrow, agno_db::MetricsReads::SetBased).await.unwrap();
        let shape = |b: &agno_core::MetricsBucket| {
            (
                b.date,
                b.user_id.clone(),
                b.agent_sessions_count,
                b.agent_runs_count,
                b.token_metrics.clone(),
                b.model_metrics.clone(),
            )
        };
        assert_eq!(per_session.iter().map(shape).collect::<Vec<_>>(), set_based.iter().map(shape).collect::<Vec<_>>());
    }

    macro_rules! on_adapters {
        ($($adapter:ident),* $(,)?) => {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $adapter() {
                    if !agno_testkit::services::for_adapter(stringify!($adapter), concat!(module_path!(), "::", stringify!($adapter))) {
                        return;
                    }
                    let db: Arc<dyn Db> = super::$adapter().await;
                    metrics_are_calculated_per_user(db).await;
                }
            )*
        };
    }

    on_adapters!(memory_db, sqlite_db, postgres_db, mysql_db, redis_db, json_db);
}

/// The job queue, on the adapters that have one.
mod jobs {
    agno_testkit::jobs_conformance!(memory, std::sync::Arc::new(agno_db::InMemoryDb::new()));
    agno_testkit::jobs_conformance!(sqlite, crate::sqlite_jobs().await);
    agno_testkit::jobs_conformance!(postgres, crate::postgres_store().await);
    agno_testkit::jobs_conformance!(redis, crate::redis_store().await);
    agno_testkit::jobs_conformance!(mysql, crate::mysql_store().await);
}

/// Agent files (`agno_fs`) are kept by the SQL databases and the document stores.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_files_on_every_database_that_keeps_them() {
    let mut dbs = vec![("sqlite", sqlite_db().await), ("memory", memory_db().await), ("json", json_db().await)];
    if agno_testkit::services::for_adapter("postgres", "agent files on PostgreSQL") {
        dbs.push(("postgres", postgres_db().await));
    }
    if agno_testkit::services::for_adapter("mysql", "agent files on MySQL") {
        dbs.push(("mysql", mysql_db().await));
    }
    for (name, db) in dbs {
        eprintln!("agent files on {name}");
        agno_testkit::conformance::agent_files_round_trip_and_isolate(std::sync::Arc::clone(&db)).await;
        agno_testkit::conformance::agent_files_follow_agnos_rules(db).await;
    }
    if agno_testkit::services::for_adapter("redis", "agent files on Redis") {
        agno_testkit::conformance::agent_files_unsupported(redis_db().await).await;
    }
}

/// Learnings (`agno_learnings`) are kept by the SQL databases; the others say they are not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn learnings_on_the_sql_databases_and_not_elsewhere() {
    agno_testkit::conformance::learnings_round_trip_list_and_delete(sqlite_db().await).await;
    if agno_testkit::services::for_adapter("postgres", "learnings on PostgreSQL") {
        agno_testkit::conformance::learnings_round_trip_list_and_delete(postgres_db().await).await;
    }
    if agno_testkit::services::for_adapter("mysql", "learnings on MySQL") {
        agno_testkit::conformance::learnings_round_trip_list_and_delete(mysql_db().await).await;
    }
    agno_testkit::conformance::learnings_unsupported(memory_db().await).await;
    agno_testkit::conformance::learnings_unsupported(json_db().await).await;
    if agno_testkit::services::for_adapter("redis", "learnings on Redis") {
        agno_testkit::conformance::learnings_unsupported(redis_db().await).await;
    }
}

/// Service accounts are kept by the SQL databases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_accounts_on_the_sql_databases() {
    agno_testkit::conformance::service_accounts_mint_find_list_revoke(sqlite_db().await).await;
    if agno_testkit::services::for_adapter("postgres", "service accounts on PostgreSQL") {
        agno_testkit::conformance::service_accounts_mint_find_list_revoke(postgres_db().await).await;
    }
    if agno_testkit::services::for_adapter("mysql", "service accounts on MySQL") {
        agno_testkit::conformance::service_accounts_mint_find_list_revoke(mysql_db().await).await;
    }
}

/// The document databases do not keep service accounts, and say so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_accounts_are_unsupported_on_the_document_databases() {
    agno_testkit::conformance::service_accounts_unsupported(memory_db().await).await;
    agno_testkit::conformance::service_accounts_unsupported(json_db().await).await;
    if agno_testkit::services::for_adapter("redis", "service accounts on Redis") {
        agno_testkit::conformance::service_accounts_unsupported(redis_db().await).await;
    }
}
