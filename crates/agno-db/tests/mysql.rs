//! `MySqlDb` on the local MariaDB: DDL parity with Python Agno, URL forms, owner checks, and the
//! v2 -> v3 migration of legacy blob runs (taken from `fixtures/legacy_v2/expected.json`).
//!
//! Each test works in its own database `agno_t_m_<pid>_<id>` (`AGNO_TEST_MYSQL_URL` names the
//! server, default root on 127.0.0.1:3306) and drops it at the end; databases left by test
//! processes that have exited are dropped by the first test that runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use agno_core::{
    AgentSession, Db, DbErrorKind, RunOutput, RunQuery, RunStatus, RunStore, SchemaStore, SessionStore, StateUpdate,
};
use agno_db::{Migrate, MigrationManager, MigrationOptions, MigrationStep, MySqlDb, TableNames};
use serde_json::{Map, Value, json};
use sqlx::{AssertSqlSafe, Connection, MySqlConnection, Row};

const PREFIX: &str = "agno_t_m_";

fn server_url() -> String {
    std::env::var("AGNO_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned())
}

fn server_base() -> String {
    let url = server_url();
    url.rsplit_once('/').map_or(url.clone(), |(base, _)| base.to_owned())
}

/// A database of its own for one test.
struct TestDb {
    name: String,
}

impl TestDb {
    async fn new() -> Self {
        static SWEPT: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
        let mut admin = MySqlConnection::connect(&server_url()).await.unwrap();
        SWEPT
            .get_or_init(|| async {
                let mut conn = MySqlConnection::connect(&server_url()).await.unwrap();
                let names: Vec<String> = sqlx::query_scalar(
                    "SELECT CAST(SCHEMA_NAME AS CHAR) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'agno\\_t\\_m\\_%'",
                )
                .fetch_all(&mut conn)
                .await
                .unwrap();
                for name in names {
                    let pid = name[PREFIX.len()..].split('_').next().unwrap_or_default();
                    if !std::path::Path::new("/proc").join(pid).exists() {
                        let sql = format!("DROP DATABASE IF EXISTS `{name}`");
                        sqlx::query(AssertSqlSafe(sql)).execute(&mut conn).await.unwrap();
                    }
                }
            })
            .await;
        let name = format!("{PREFIX}{}_{}", std::process::id(), agno_core::new_id().replace('-', ""));
        let name = name[..name.len().min(64)].to_owned();
        sqlx::query(AssertSqlSafe(format!("CREATE DATABASE `{name}`"))).execute(&mut admin).await.unwrap();
        Self { name }
    }

    fn url(&self) -> String {
        format!("{}/{}", server_base(), self.name)
    }

    async fn db(&self) -> MySqlDb {
        MySqlDb::connect(&self.url()).await.unwrap()
    }

    async fn conn(&self) -> MySqlConnection {
        MySqlConnection::connect(&self.url()).await.unwrap()
    }

    async fn exec(&self, sql: &str) {
        sqlx::query(AssertSqlSafe(sql)).execute(&mut self.conn().await).await.unwrap();
    }

    async fn drop(self) {
        let mut admin = MySqlConnection::connect(&server_url()).await.unwrap();
        sqlx::query(AssertSqlSafe(format!("DROP DATABASE IF EXISTS `{}`", self.name)))
            .execute(&mut admin)
            .await
            .unwrap();
    }
}

/// `SHOW CREATE TABLE` as a set of trimmed lines (the order of keys is not significant).
async fn create_table_lines(conn: &mut MySqlConnection, table: &str) -> BTreeSet<String> {
    let row = sqlx::query(AssertSqlSafe(format!("SHOW CREATE TABLE `{table}`"))).fetch_one(conn).await.unwrap();
    let ddl: String = row.try_get(1).unwrap();
    ddl.lines().map(|l| l.trim().trim_end_matches(',').to_owned()).collect()
}

/// Agno 2.9.0's `MySQLDb` sessions table: the v3 one plus `runs JSON` (column order as Agno's).
const V2_SESSIONS: &str = "CREATE TABLE agno_sessions (
  session_id VARCHAR(128) NOT NULL, session_type VARCHAR(20) NOT NULL, agent_id VARCHAR(128),
  team_id VARCHAR(128), workflow_id VARCHAR(128), user_id VARCHAR(128), session_data JSON, agent_data JSON,
  team_data JSON, workflow_data JSON, metadata JSON, runs JSON, summary JSON, created_at BIGINT NOT NULL,
  updated_at BIGINT, PRIMARY KEY (session_id),
  INDEX idx_agno_sessions_session_type (session_type), INDEX idx_agno_sessions_created_at (created_at))";

/// Agno 2.9.0's metrics, evals and knowledge tables on MySQL.
const V2_METRICS: &str = "CREATE TABLE agno_metrics (
  id VARCHAR(128) NOT NULL, agent_runs_count BIGINT NOT NULL, team_runs_count BIGINT NOT NULL,
  workflow_runs_count BIGINT NOT NULL, agent_sessions_count BIGINT NOT NULL, team_sessions_count BIGINT NOT NULL,
  workflow_sessions_count BIGINT NOT NULL, users_count BIGINT NOT NULL, token_metrics JSON NOT NULL,
  model_metrics JSON NOT NULL, date DATE NOT NULL, aggregation_period VARCHAR(20) NOT NULL,
  created_at BIGINT NOT NULL, updated_at BIGINT, completed BOOL NOT NULL, PRIMARY KEY (id),
  CONSTRAINT agno_metrics_uq_metrics_date_period UNIQUE (date, aggregation_period),
  INDEX idx_agno_metrics_date (date))";

const V2_EVALS: &str = "CREATE TABLE agno_eval_runs (
  run_id VARCHAR(128) NOT NULL, eval_type VARCHAR(50) NOT NULL, eval_data JSON NOT NULL, eval_input JSON NOT NULL,
  name VARCHAR(255), agent_id VARCHAR(128), team_id VARCHAR(128), workflow_id VARCHAR(128), model_id VARCHAR(128),
  model_provider VARCHAR(128), evaluated_component_name VARCHAR(255), created_at BIGINT NOT NULL, updated_at BIGINT,
  PRIMARY KEY (run_id), INDEX idx_agno_eval_runs_created_at (created_at))";

const V2_KNOWLEDGE: &str = "CREATE TABLE agno_knowledge (
  id VARCHAR(128) NOT NULL, name VARCHAR(255) NOT NULL, description TEXT NOT NULL, metadata JSON, type VARCHAR(50),
  size BIGINT, linked_to VARCHAR(128), access_count BIGINT, created_at BIGINT, updated_at BIGINT,
  status VARCHAR(50), status_message TEXT, external_id VARCHAR(128), PRIMARY KEY (id))";

const STAMPS: &str =
    "CREATE TABLE agno_schema_versions (table_name VARCHAR(128) NOT NULL, version VARCHAR(10) NOT NULL,
  created_at VARCHAR(128) NOT NULL, updated_at VARCHAR(128), PRIMARY KEY (table_name),
  INDEX idx_agno_schema_versions_created_at (created_at))";

fn expected() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/legacy_v2/expected.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn expected_sessions() -> Vec<Value> {
    expected()["sessions"].as_array().unwrap().clone()
}

/// Python's `json.dumps` spacing, as SQLAlchemy writes JSON columns.
fn py_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let items: Vec<String> =
                m.iter().map(|(k, v)| format!("{}: {}", Value::String(k.clone()), py_json(v))).collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(py_json).collect::<Vec<_>>().join(", ")),
        other => other.to_string(),
    }
}

/// A v2 database as Agno 2.x's `MySQLDb` leaves it: every session's runs in the `runs` blob,
/// `None` columns stored as JSON `null`, tables stamped 2.5.6 (or unstamped).
async fn make_v2(t: &TestDb, stamp: bool) {
    t.exec(V2_SESSIONS).await;
    t.exec(STAMPS).await;
    if stamp {
        t.exec(
            "INSERT INTO agno_schema_versions VALUES ('agno_sessions', '2.5.6', '2026-11-30T02:41:45.109159', \
             '2026-11-30T02:41:45.109159')",
        )
        .await;
    }
    let mut conn = t.conn().await;
    for s in expected_sessions() {
        sqlx::query(
            "INSERT INTO agno_sessions (session_id, session_type, agent_id, team_id, workflow_id, user_id, session_data, \
             agent_data, metadata, runs, summary, created_at, updated_at) VALUES (?, 'agent', ?, NULL, NULL, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(s["session_id"].as_str())
        .bind(s["agent_id"].as_str())
        .bind(s["user_id"].as_str())
        .bind(py_json(&s["session_data"]))
        .bind(py_json(&s["agent_data"]))
        .bind(py_json(&s["metadata"]))
        .bind(py_json(&s["runs"]))
        .bind(py_json(&s["summary"]))
        .bind(s["created_at"].as_i64())
        .bind(s["updated_at"].as_i64())
        .execute(&mut conn)
        .await
        .unwrap();
    }
}

fn expected_runs(s: &Value) -> Vec<RunOutput> {
    s["runs"].as_array().unwrap().iter().map(|r| serde_json::from_value(r.clone()).unwrap()).collect()
}

async fn count(t: &TestDb, sql: &str) -> i64 {
    sqlx::query_scalar(AssertSqlSafe(sql)).fetch_one(&mut t.conn().await).await.unwrap()
}

/// Every expected run is in the runs table, stored exactly as the blob held it, with its blob
/// position as `run_index` and the session's owner; sessions read back the same runs in order.
async fn assert_all_runs_copied(t: &TestDb, db: &MySqlDb) {
    let mut conn = t.conn().await;
    for s in expected_sessions() {
        let sid = s["session_id"].as_str().unwrap();
        for (i, run) in s["runs"].as_array().unwrap().iter().enumerate() {
            let run_id = run["run_id"].as_str().unwrap();
            let row = sqlx::query(
                "SELECT run_data, run_index, session_id, user_id, run_type, status FROM agno_runs WHERE run_id = ?",
            )
            .bind(run_id)
            .fetch_one(&mut conn)
            .await
            .unwrap();
            let stored: Value = serde_json::from_str(&row.try_get_unchecked::<String, _>("run_data").unwrap()).unwrap();
            assert_eq!(&stored, run, "run {run_id} is stored as the blob held it");
            assert_eq!(row.try_get::<Option<i64>, _>("run_index").unwrap(), Some(i as i64));
            assert_eq!(row.try_get::<String, _>("session_id").unwrap(), sid);
            assert_eq!(row.try_get::<Option<String>, _>("user_id").unwrap().as_deref(), s["user_id"].as_str());
            assert_eq!(row.try_get::<String, _>("run_type").unwrap(), "agent");
            assert_eq!(row.try_get::<Option<String>, _>("status").unwrap().as_deref(), Some("COMPLETED"));
            let got = db.get_run(run_id, s["user_id"].as_str()).await.unwrap().expect("run present");
            assert_eq!(got, serde_json::from_value::<RunOutput>(run.clone()).unwrap());
        }
        let got = db.get_session(sid, None, None).await.unwrap().expect("session present");
        assert_eq!(got.runs(), expected_runs(&s).as_slice(), "runs of {sid}");
    }
}

/// Agno's table types that Python Agno 3.1's `MySQLDb` and agno-rs's `MySqlDb` both create, with
/// their table names.
const TABLES: [(&str, &str); 9] = [
    ("sessions", "agno_sessions"),
    ("runs", "agno_runs"),
    ("versions", "agno_schema_versions"),
    ("memories", "agno_memories"),
    ("metrics", "agno_metrics"),
    ("evals", "agno_eval_runs"),
    ("knowledge", "agno_knowledge"),
    ("traces", "agno_traces"),
    ("spans", "agno_spans"),
];

/// `SHOW CREATE TABLE` of each table as Python Agno 3.1 creates it, live, in a database of its
/// own (`scripts/interop/create_tables.py` with pymysql); `None` when no Python Agno is found.
async fn python_ddl() -> Option<Vec<BTreeSet<String>>> {
    let py = agno_testkit::agno_python("the MariaDB DDL comparison with Python Agno")?;
    let t = TestDb::new().await;
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/create_tables.py");
    let sa_url = t.url().replacen("mysql://", "mysql+pymysql://", 1);
    let out = std::process::Command::new(py)
        .arg(script)
        .args(["mysql", &sa_url, &t.name])
        .args(TABLES.map(|(kind, _)| kind))
        .env("AGNO_TELEMETRY", "false")
        .output()
        .unwrap();
    assert!(out.status.success(), "create_tables.py failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut conn = t.conn().await;
    let mut ddl = Vec::new();
    for (_, table) in TABLES {
        ddl.push(create_table_lines(&mut conn, table).await);
    }
    t.drop().await;
    Some(ddl)
}

/// agno-rs creates its MariaDB tables exactly as Python Agno 3.1 does, compared live.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_match_python_agno_ddl() {
    if !agno_testkit::services::mariadb("tables_match_python_agno_ddl") {
        return;
    }
    let t = TestDb::new().await;
    let db = t.db().await;
    db.create_tables().await.unwrap();
    db.create_tables().await.unwrap(); // idempotent
    let mut conn = t.conn().await;
    let mut ours = Vec::new();
    for (_, table) in TABLES {
        ours.push(create_table_lines(&mut conn, table).await);
    }
    for table in ["agno_sessions", "agno_runs"] {
        assert_eq!(db.get_latest_schema_version(table).await.unwrap().as_deref(), Some("3.0.0"));
    }
    t.drop().await;
    let Some(theirs) = python_ddl().await else { return };
    for (((_, table), ours), theirs) in TABLES.iter().zip(&ours).zip(&theirs) {
        assert!(theirs.len() > 3, "Agno created {table}: {theirs:?}");
        assert_eq!(ours, theirs, "{table}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlalchemy_style_urls_open_the_same_database() {
    if !agno_testkit::services::mariadb("sqlalchemy_style_urls_open_the_same_database") {
        return;
    }
    let t = TestDb::new().await;
    let base = server_base();
    let rest = base.split_once("://").unwrap().1;
    let pymysql = agno_db::open_ready(&format!("mysql+pymysql://{rest}/{}", t.name)).await.unwrap();
    let mut s = AgentSession::new("s1");
    s.user_id = Some("u1".into());
    pymysql.upsert_session(&s, &StateUpdate::Replace).await.unwrap();
    let asyncmy = MySqlDb::connect(&format!("mysql+asyncmy://{rest}/{}", t.name)).await.unwrap();
    assert_eq!(asyncmy.get_session("s1", Some("u1"), None).await.unwrap().unwrap().session_id, "s1");
    let plain: Arc<dyn Migrate> = agno_db::open(&t.url()).await.unwrap();
    assert!(plain.get_session("s1", None, None).await.unwrap().is_some());
    let missing = MySqlDb::connect(&format!("{base}/agno_t_no_such_database")).await.unwrap_err();
    assert_eq!(missing.kind(), DbErrorKind::Unavailable);
    t.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_are_refused_for_other_users_and_missing_sessions() {
    if !agno_testkit::services::mariadb("writes_are_refused_for_other_users_and_missing_sessions") {
        return;
    }
    let t = TestDb::new().await;
    let db = t.db().await;
    db.create_tables().await.unwrap();
    let mut s = AgentSession::new("sa");
    s.user_id = Some("alice".into());
    s.set_session_state(serde_json::from_value(json!({"k": 1})).unwrap());
    db.upsert_session(&s, &StateUpdate::Replace).await.unwrap();
    let mut r = RunOutput::new("ra", "sa");
    r.content = Some(json!("original"));
    assert_eq!(db.upsert_run(&r, "sa", Some("alice")).await.unwrap(), 0);

    // User ids match exactly, whatever the column collation says.
    let upper = Some("ALICE");
    assert!(db.get_session("sa", upper, None).await.unwrap().is_none());
    assert!(db.get_run("ra", upper).await.unwrap().is_none());
    assert!(
        db.get_runs(&RunQuery { user_id: Some("ALICE".into()), ..RunQuery::default() }).await.unwrap().runs.is_empty()
    );
    let mut hijack = s.clone();
    hijack.user_id = Some("ALICE".into());
    hijack.set_session_state(Map::new());
    let err = db.upsert_session(&hijack, &StateUpdate::Replace).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    let mut changed = r.clone();
    changed.content = Some(json!("changed"));
    let err = db.upsert_run(&changed, "sa", upper).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    assert!(!db.delete_run("ra", upper).await.unwrap());
    let got = db.get_session("sa", Some("alice"), None).await.unwrap().unwrap();
    assert_eq!(got.session_state(), s.session_state());
    assert_eq!(got.runs()[0].content, Some(json!("original")));

    // A run needs its session.
    let err = db.upsert_run(&RunOutput::new("orphan", "nope"), "nope", None).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    assert!(err.to_string().contains("nope"), "{err}");
    t.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_writes_of_a_new_session_keep_every_key() {
    if !agno_testkit::services::mariadb("concurrent_first_writes_of_a_new_session_keep_every_key") {
        return;
    }
    let t = TestDb::new().await;
    let mysql = t.db().await;
    mysql.create_tables().await.unwrap();
    let db: Arc<dyn Db> = Arc::new(mysql);
    // Open the pool's connections first, so the writers below really start together.
    let warm: Vec<_> = (0..10)
        .map(|_| {
            let db = Arc::clone(&db);
            tokio::spawn(async move { db.get_session("none", None, None).await })
        })
        .collect();
    for task in warm {
        task.await.unwrap().unwrap();
    }
    // Writers that lose the race to insert the row retry as updates and merge their keys.
    for round in 0..10 {
        let id = format!("fresh-{round}");
        let tasks: Vec<_> = (0..10)
            .map(|i| {
                let db = Arc::clone(&db);
                let id = id.clone();
                tokio::spawn(async move {
                    let mut s = AgentSession::new(id);
                    let state: Map<String, Value> = serde_json::from_value(json!({ format!("k{i}"): i })).unwrap();
                    s.set_session_state(state.clone());
                    db.upsert_session(&s, &StateUpdate::diff(&Map::new(), &state)).await
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        let got = db.get_session(&id, None, None).await.unwrap().unwrap();
        assert_eq!(got.session_state().map(Map::len), Some(10), "{id}");
    }
    t.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_table_names_are_used_throughout() {
    if !agno_testkit::services::mariadb("custom_table_names_are_used_throughout") {
        return;
    }
    let t = TestDb::new().await;
    let names = TableNames::default().with_session_table("my_sessions");
    let db = MySqlDb::connect_with(&t.url(), names).await.unwrap();
    db.create_tables().await.unwrap();
    db.upsert_session(&AgentSession::new("s1"), &StateUpdate::Replace).await.unwrap();
    db.upsert_run(&RunOutput::new("r1", "s1"), "s1", None).await.unwrap();
    assert_eq!(count(&t, "SELECT COUNT(*) FROM my_sessions_runs").await, 1);
    let mut conn = t.conn().await;
    let ddl = create_table_lines(&mut conn, "my_sessions_runs").await;
    assert!(ddl.contains("KEY `my_sessions_runs_runs_session_id_run_index` (`session_id`,`run_index`)"), "{ddl:?}");
    assert!(
        ddl.contains(
            "CONSTRAINT `my_sessions_runs_ibfk_1` FOREIGN KEY (`session_id`) REFERENCES `my_sessions` (`session_id`) ON DELETE CASCADE"
        ),
        "{ddl:?}"
    );
    assert!(db.delete_session("s1", None).await.unwrap());
    assert_eq!(count(&t, "SELECT COUNT(*) FROM my_sessions_runs").await, 0);
    assert!(MySqlDb::connect_with(&t.url(), TableNames::default().with_session_table("bad name")).await.is_err());
    t.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_v2_sessions_migrate_to_v3() {
    if !agno_testkit::services::mariadb("legacy_v2_sessions_migrate_to_v3") {
        return;
    }
    let t = TestDb::new().await;
    make_v2(&t, true).await;
    let db = t.db().await;

    // Before migrating: the blob is read (no runs table yet) and the database is refused.
    let alice = db.get_session("sess-alice-1", Some("alice"), None).await.unwrap().unwrap();
    assert_eq!(alice.runs(), expected_runs(&expected_sessions()[0]).as_slice());
    assert_eq!(alice.runs.as_ref().map(Vec::len), Some(3));
    assert_eq!(db.legacy_runs_pending().await.unwrap(), 16);
    let refused = agno_db::open_ready(&t.url()).await.unwrap_err();
    assert_eq!(refused.kind(), DbErrorKind::SchemaTooOld);

    let calls = Mutex::new(Vec::new());
    let progress = |done: u64, total: u64| calls.lock().unwrap().push((done, total));
    let before = MigrationManager::new(&db).up(None, &progress).await.unwrap();
    let sessions = before.tables.iter().find(|s| s.table == "agno_sessions").unwrap();
    assert_eq!(sessions.version.as_deref(), Some("2.5.6"));
    assert_eq!(sessions.pending, ["3.0.0"]);
    assert_eq!(calls.lock().unwrap().last(), Some(&(5, 5)));

    assert_eq!(db.get_latest_schema_version("agno_sessions").await.unwrap().as_deref(), Some("3.0.0"));
    assert_eq!(db.get_latest_schema_version("agno_runs").await.unwrap().as_deref(), Some("3.0.0"));
    assert_eq!(count(&t, "SELECT COUNT(*) FROM agno_runs").await, 16);
    assert_all_runs_copied(&t, &db).await;
    // The legacy column is kept as a backup, untouched.
    assert_eq!(count(&t, "SELECT COUNT(*) FROM agno_sessions WHERE runs IS NOT NULL").await, 5);
    assert_eq!(db.legacy_runs_pending().await.unwrap(), 0);
    // The session rows read as Agno wrote them (JSON `null` columns included).
    let bob = db.get_session("sess-bob-1", Some("bob"), Some(2)).await.unwrap().unwrap();
    let exp_bob = &expected_sessions()[2];
    assert_eq!(Value::Object(bob.session_data.clone().unwrap()), exp_bob["session_data"]);
    assert_eq!(Value::Object(bob.agent_data.clone().unwrap()), exp_bob["agent_data"]);
    assert_eq!(bob.metadata, None);
    assert_eq!(bob.summary, None);
    assert_eq!(bob.runs(), &expected_runs(exp_bob)[4..]);

    // New runs continue after the copied ones; v3 writes leave the blob alone.
    let next = db.upsert_run(&RunOutput::new("new-run", "sess-bob-1"), "sess-bob-1", Some("bob")).await.unwrap();
    assert_eq!(next, 6);
    let mut renamed = bob.clone();
    renamed.runs = None;
    db.upsert_session(&renamed, &StateUpdate::Replace).await.unwrap();
    let blob: String = sqlx::query("SELECT runs FROM agno_sessions WHERE session_id = 'sess-bob-1'")
        .fetch_one(&mut t.conn().await)
        .await
        .unwrap()
        .try_get_unchecked(0)
        .unwrap();
    assert_eq!(serde_json::from_str::<Value>(&blob).unwrap(), exp_bob["runs"]);
    assert_eq!(db.get_session("sess-bob-1", None, None).await.unwrap().unwrap().runs().len(), 7);

    // A second run has nothing to do.
    calls.lock().unwrap().clear();
    let again = MigrationManager::new(&db).up(None, &progress).await.unwrap();
    assert!(again.is_current(), "{again:?}");
    assert!(calls.lock().unwrap().is_empty());
    assert_eq!(count(&t, "SELECT COUNT(*) FROM agno_runs").await, 17);
    agno_db::open_ready(&t.url()).await.unwrap();

    // Cleanup drops the column once every blob run is in the table; reads are unchanged.
    let report = db.cleanup_legacy_runs(false).await.unwrap();
    assert!(report.removed);
    assert_eq!(report.missing_runs, 0);
    assert_eq!(
        count(&t, "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'agno_sessions' AND COLUMN_NAME = 'runs'").await,
        0
    );
    let alice = db.get_session("sess-alice-1", None, None).await.unwrap().unwrap();
    assert_eq!(alice.runs(), expected_runs(&expected_sessions()[0]).as_slice());
    assert!(!db.cleanup_legacy_runs(false).await.unwrap().removed);
    t.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_copy_leaves_no_stamp_and_loses_nothing_then_a_rerun_completes() {
    if !agno_testkit::services::mariadb("failed_copy_leaves_no_stamp_and_loses_nothing_then_a_rerun_completes") {
        return;
    }
    let t = TestDb::new().await;
    make_v2(&t, false).await;
    let db = t.db().await;
    let calls = Mutex::new(Vec::new());
    let progress = |done: u64, total: u64| calls.lock().unwrap().push((done, total));
    let failing = MigrationOptions { batch_size: 1, fail_after_batches: Some(1) };
    let err = MigrationManager::new(&db).with_options(failing).up(None, &progress).await.unwrap_err();
    assert!(err.to_string().contains("agno_sessions"), "{err}");
    assert_eq!(*calls.lock().unwrap(), [(1, 5)], "one batch of one session was copied before the failure");

    // The earlier steps are stamped; 3.0.0 is not.
    assert_eq!(db.get_latest_schema_version("agno_sessions").await.unwrap().as_deref(), Some("2.5.6"));
    // The copy was one transaction: nothing of it is kept, and nothing is lost.
    assert_eq!(count(&t, "SELECT COUNT(*) FROM agno_runs").await, 0);
    assert_eq!(db.legacy_runs_pending().await.unwrap(), 16);
    for s in expected_sessions() {
        let got = db.get_session(s["session_id"].as_str().unwrap(), None, None).await.unwrap().unwrap();
        assert_eq!(got.runs(), expected_runs(&s).as_slice());
    }
    let err = db.cleanup_legacy_runs(false).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Conflict);

    calls.lock().unwrap().clear();
    MigrationManager::new(&db)
        .with_options(MigrationOptions { batch_size: 2, fail_after_batches: None })
        .up(None, &progress)
        .await
        .unwrap();
    assert_eq!(*calls.lock().unwrap(), [(2, 5), (4, 5), (5, 5)]);
    assert_eq!(db.get_latest_schema_version("agno_sessions").await.unwrap().as_deref(), Some("3.0.0"));
    assert_eq!(db.legacy_runs_pending().await.unwrap(), 0);
    assert_all_runs_copied(&t, &db).await;
    t.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_cleanup_reports_the_runs_it_drops() {
    if !agno_testkit::services::mariadb("forced_cleanup_reports_the_runs_it_drops") {
        return;
    }
    let t = TestDb::new().await;
    make_v2(&t, true).await;
    let db = t.db().await;
    db.create_tables().await.unwrap();
    assert_eq!(db.cleanup_legacy_runs(false).await.unwrap_err().kind(), DbErrorKind::Conflict);
    let report = db.cleanup_legacy_runs(true).await.unwrap();
    assert_eq!((report.removed, report.missing_runs), (true, 16));
    assert_eq!(db.legacy_runs_pending().await.unwrap(), 0);
    assert!(db.get_session("sess-alice-1", None, None).await.unwrap().unwrap().runs().is_empty());
    t.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_side_tables_gain_user_ids_and_the_per_user_metrics_key() {
    if !agno_testkit::services::mariadb("v2_side_tables_gain_user_ids_and_the_per_user_metrics_key") {
        return;
    }
    let t = TestDb::new().await;
    for ddl in [STAMPS, V2_METRICS, V2_EVALS, V2_KNOWLEDGE] {
        t.exec(ddl).await;
    }
    for table in ["agno_metrics", "agno_eval_runs", "agno_knowledge"] {
        t.exec(&format!("INSERT INTO agno_schema_versions VALUES ('{table}', '2.5.6', 'x', 'x')")).await;
    }
    // A completed day, and a newer unfinished one (recalculated per user after the migration).
    t.exec(
        "INSERT INTO agno_metrics VALUES ('m1', 1, 0, 0, 1, 0, 0, 1, '{}', '[]', '2026-01-01', 'daily', 1, 1, true), \
         ('m2', 2, 0, 0, 1, 0, 0, 1, '{}', '[]', '2026-01-02', 'daily', 2, 2, false)",
    )
    .await;
    let db = t.db().await;
    MigrationManager::new(&db).up(None, &|_, _| {}).await.unwrap();

    let mut conn = t.conn().await;
    let metrics = create_table_lines(&mut conn, "agno_metrics").await;
    assert!(metrics.contains("`user_id` varchar(128) NOT NULL"), "{metrics:?}");
    assert!(
        metrics
            .contains("UNIQUE KEY `agno_metrics_uq_metrics_user_date_period` (`user_id`,`date`,`aggregation_period`)"),
        "{metrics:?}"
    );
    assert!(metrics.contains("KEY `idx_agno_metrics_user_id` (`user_id`)"), "{metrics:?}");
    assert!(!metrics.iter().any(|l| l.contains("uq_metrics_date_period")), "{metrics:?}");
    let kept: Vec<(String, String)> =
        sqlx::query_as("SELECT id, user_id FROM agno_metrics").fetch_all(&mut conn).await.unwrap();
    assert_eq!(kept, [("m1".to_owned(), String::new())]);
    for table in ["agno_eval_runs", "agno_knowledge"] {
        let ddl = create_table_lines(&mut conn, table).await;
        assert!(ddl.contains("`user_id` varchar(128) DEFAULT NULL"), "{ddl:?}");
        assert!(ddl.contains(&format!("KEY `idx_{table}_user_id` (`user_id`)")), "{ddl:?}");
    }
    for table in ["agno_metrics", "agno_eval_runs", "agno_knowledge", "agno_sessions"] {
        assert_eq!(db.get_latest_schema_version(table).await.unwrap().as_deref(), Some("3.0.0"), "{table}");
    }
    // Nothing left to do, and doing it again changes nothing.
    let again = MigrationManager::new(&db).up(None, &|_, _| {}).await.unwrap();
    assert!(again.is_current());
    for (kind, version) in [
        (agno_db::TableKind::Metrics, "3.0.0"),
        (agno_db::TableKind::Evals, "3.0.0"),
        (agno_db::TableKind::Knowledge, "3.0.0"),
        (agno_db::TableKind::Sessions, "2.5.0"),
    ] {
        let step = MigrationStep { kind, version, options: &MigrationOptions::default(), progress: &|_, _| {} };
        let changed = db.migrate_table(step).await.unwrap();
        assert!(!changed, "{kind} {version} is idempotent");
    }
    t.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_2_5_tables_gain_their_keys_and_columns() {
    if !agno_testkit::services::mariadb("pre_2_5_tables_gain_their_keys_and_columns") {
        return;
    }
    let t = TestDb::new().await;
    // Agno 2.0's shapes: sessions keyed by a unique constraint only; memories without
    // `created_at` and `feedback`. Nothing is stamped.
    t.exec(
        &V2_SESSIONS.replace("PRIMARY KEY (session_id)", "CONSTRAINT agno_sessions_uq_session_id UNIQUE (session_id)"),
    )
    .await;
    t.exec(
        "CREATE TABLE agno_memories (memory_id VARCHAR(128) NOT NULL, memory JSON NOT NULL, input TEXT, \
         agent_id VARCHAR(128), team_id VARCHAR(128), user_id VARCHAR(128), topics JSON, updated_at BIGINT, \
         PRIMARY KEY (memory_id))",
    )
    .await;
    t.exec("INSERT INTO agno_memories (memory_id, memory, updated_at) VALUES ('m1', '\"likes otters\"', 1735689600)")
        .await;
    t.exec(
        "INSERT INTO agno_sessions (session_id, session_type, created_at, runs) VALUES \
         ('s1', 'agent', 1, '[{\"run_id\": \"r1\", \"agent_id\": \"a\", \"created_at\": 5, \"status\": \"COMPLETED\"}]')",
    )
    .await;
    let db = t.db().await;
    MigrationManager::new(&db).up(None, &|_, _| {}).await.unwrap();

    let mut conn = t.conn().await;
    let sessions = create_table_lines(&mut conn, "agno_sessions").await;
    assert!(sessions.contains("PRIMARY KEY (`session_id`)"), "{sessions:?}");
    assert!(!sessions.iter().any(|l| l.contains("uq_session_id")), "{sessions:?}");
    let memories = create_table_lines(&mut conn, "agno_memories").await;
    assert!(memories.contains("`created_at` bigint(20) NOT NULL"), "{memories:?}");
    assert!(memories.contains("`feedback` text DEFAULT NULL"), "{memories:?}");
    assert!(memories.contains("KEY `idx_agno_memories_created_at` (`created_at`)"), "{memories:?}");
    assert_eq!(count(&t, "SELECT created_at FROM agno_memories WHERE memory_id = 'm1'").await, 1_735_689_600);
    let run = db.get_run("r1", None).await.unwrap().unwrap();
    assert_eq!((run.created_at, run.status), (5, RunStatus::Completed));
    for table in ["agno_sessions", "agno_memories"] {
        assert_eq!(db.get_latest_schema_version(table).await.unwrap().as_deref(), Some("3.0.0"), "{table}");
    }
    t.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_listing_orders_ties_by_run_id_bytes() {
    if !agno_testkit::services::mariadb("run_listing_orders_ties_by_run_id_bytes") {
        return;
    }
    let t = TestDb::new().await;
    let db = t.db().await;
    db.create_tables().await.unwrap();
    db.upsert_session(&AgentSession::new("s"), &StateUpdate::Replace).await.unwrap();
    // The column collation orders these a, B, c; every other adapter orders them B, a, c.
    for id in ["c", "a", "B"] {
        let mut r = RunOutput::new(id, "s");
        r.created_at = 7;
        r.status = RunStatus::Completed;
        db.upsert_run(&r, "s", None).await.unwrap();
    }
    let mut query = RunQuery { limit: Some(1), sort: agno_core::SortOrder::Asc, ..RunQuery::default() };
    let mut seen = Vec::new();
    loop {
        let page = db.get_runs(&query).await.unwrap();
        seen.extend(page.runs.iter().map(|r| r.id().to_owned()));
        match page.next_cursor {
            Some(c) => query.cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(seen, ["B", "a", "c"]);
    t.drop().await;
}

/// A worker's run write checks its lease and writes in one transaction holding the job's row:
/// while the write waits (on a session row another connection has locked), the job cannot be
/// taken over; once it lands, the takeover follows and the old owner is fenced out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_takeover_while_a_claimed_run_write_is_in_flight() {
    use agno_core::{Job, JobLease, JobStore, RunWrite};
    if !agno_testkit::services::mariadb("no_takeover_while_a_claimed_run_write_is_in_flight") {
        return;
    }
    let t = TestDb::new().await;
    let db = Arc::new(t.db().await);
    db.create_tables().await.unwrap();
    let now = agno_core::now_epoch_secs();
    let mut job = Job::agent_run("fenced", "agent-1", "session-fenced", json!({"message": "hi"}));
    job.max_attempts = 2;
    db.enqueue_job(&job, 0).await.unwrap();
    // Claimed at the time after the enqueue (the job is available from when it was made, which
    // may be a second after `now`).
    let claimed = db.claim_job("old", 60, agno_core::now_epoch_secs()).await.unwrap().unwrap();
    let session = AgentSession::new(&claimed.session_id);
    db.upsert_session(&session, &StateUpdate::Replace).await.unwrap();

    // Another connection holds the session row: the next session write waits for it.
    let mut blocker = t.conn().await;
    sqlx::query("BEGIN").execute(&mut blocker).await.unwrap();
    sqlx::query("SELECT session_id FROM agno_sessions WHERE session_id = ? FOR UPDATE")
        .bind(&claimed.session_id)
        .fetch_all(&mut blocker)
        .await
        .unwrap();
    let write = tokio::spawn({
        let (db, session_id) = (db.clone(), claimed.session_id.clone());
        async move {
            let session = AgentSession::new(&session_id);
            let mut run = RunOutput::new("fenced", &session_id);
            run.status = RunStatus::Running;
            run.content = Some(json!("old"));
            let lease = JobLease { job_id: "fenced".into(), worker_id: "old".into(), attempt: 1 };
            let write = RunWrite { session: &session, state: &StateUpdate::Replace, run: &run, user_id: None };
            db.save_claimed_run(&lease, write, now + 1).await.unwrap()
        }
    });
    // Wait until the write waits on the row lock: its session read is executing (and can only
    // be waiting, the blocker holding the row). PROCESSLIST, not INNODB_TRX: InnoDB's views are
    // cached and not refreshed while read more often than every 0.1 s.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut probe = t.conn().await;
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() \
             AND INFO LIKE 'SELECT %user_id%, %session_data% FROM%FOR UPDATE'",
        )
        .fetch_one(&mut probe)
        .await
        .unwrap();
        if waiting > 0 {
            break;
        }
        assert!(!write.is_finished(), "the run write did not wait for the session row: {:?}", write.await);
        assert!(std::time::Instant::now() < deadline, "the run write never waited on the session row");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(db.claim_job("new", 60, now + 100).await.unwrap().is_none(), "no takeover while the write is in flight");

    sqlx::query("COMMIT").execute(&mut blocker).await.unwrap();
    assert!(write.await.unwrap(), "the write of the lease holder lands");
    let taken = db.claim_job("new", 60, now + 100).await.unwrap().expect("taken over once the write ended");
    assert_eq!(taken.attempt, 2);
    assert_eq!(db.get_run("fenced", None).await.unwrap().unwrap().content, Some(json!("old")));
    let stale = RunOutput::new("fenced", &claimed.session_id);
    let lease = JobLease { job_id: "fenced".into(), worker_id: "old".into(), attempt: 1 };
    let write = RunWrite { session: &session, state: &StateUpdate::Replace, run: &stale, user_id: None };
    assert!(!db.save_claimed_run(&lease, write, now + 101).await.unwrap(), "and the old owner is fenced out");
    drop(db);
    t.drop().await;
}
