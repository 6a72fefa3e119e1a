//! `PostgresDb` beyond the conformance suite: tables identical to Python Agno 3.1's, legacy data
//! written by the real Python Agno 2.9.0 (fixtures/legacy_v2) migrating to v3 without loss, a
//! migration failing halfway keeping nothing and resuming, the metrics key swap, the schedule
//! name keys, the job queue (its table, notifications, depth bound), URL forms, an unreachable
//! server reported as such, and Python Agno reading what agno-rs wrote (and back) when
//! `AGNO_PYTHON` is set. Needs the local server
//! (`AGNO_TEST_POSTGRES_URL`, default `postgresql://postgres@127.0.0.1:5432/test`); each test
//! works in its own schema.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use agno_core::{
    AgentSession, DbErrorKind, MemoryQuery, MemorySort, MemoryStore, MetricsBucket, MetricsQuery, MetricsStore,
    RunOutput, RunQuery, RunStore, Schedule, ScheduleRun, ScheduleRunUpdate, ScheduleStore, SchemaStore, SessionStore,
    SortOrder, StateUpdate, UserMemory,
};
use agno_db::{Migrate, MigrationManager, MigrationOptions, MigrationStep, PostgresDb, TableNames};
use serde_json::{Value, json};
use sqlx::{Connection, PgConnection};

fn url() -> String {
    std::env::var("AGNO_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".to_owned())
}

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/legacy_v2")
}

async fn conn() -> PgConnection {
    PgConnection::connect(&url()).await.unwrap()
}

/// A schema of its own, dropped when the test ends (also when it fails).
struct Scratch {
    name: String,
}

impl Scratch {
    fn new(tag: &str) -> Self {
        Self { name: format!("agno_pgtest_{tag}_{}", &agno_core::new_id().replace('-', "")[..16]) }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let name = self.name.clone();
        // Drop runs outside any test runtime: a thread with its own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                if let Ok(mut c) = PgConnection::connect(&url()).await {
                    let sql = format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE");
                    let _ = sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut c).await;
                }
            });
        })
        .join();
    }
}

async fn exec(c: &mut PgConnection, sql: &str) {
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned())).execute(c).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// Loads the Agno 2.9.0 `pg_dump --inserts` fixture into `schema`, one statement at a time.
async fn load_fixture(schema: &str) {
    let text = std::fs::read_to_string(fixture_dir().join("agno_v2_postgres_inserts.sql")).unwrap();
    let text = text.replace("agno_v2_fixture", schema);
    let mut c = conn().await;
    let mut statement = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if statement.is_empty() && (trimmed.is_empty() || trimmed.starts_with("--") || trimmed.starts_with('\\')) {
            continue;
        }
        statement.push_str(line);
        statement.push('\n');
        if trimmed.ends_with(';') {
            exec(&mut c, &statement).await;
            statement.clear();
        }
    }
    assert!(statement.trim().is_empty(), "unterminated statement: {statement}");
    c.close().await.unwrap();
}

async fn legacy_copy(tag: &str) -> (PostgresDb, Scratch) {
    let scratch = Scratch::new(tag);
    load_fixture(&scratch.name).await;
    let db = PostgresDb::connect_with(&url(), TableNames::default(), &scratch.name).await.unwrap();
    (db, scratch)
}

fn expected() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture_dir().join("expected_postgres.json")).unwrap()).unwrap()
}

/// Compares what we read with what Agno 2.x read from the same data.
async fn assert_matches_agno(db: &PostgresDb) {
    agno_testkit::legacy::assert_matches_agno(db, &agno_testkit::legacy::expected("expected_postgres.json")).await;
}

async fn column_exists(schema: &str, table: &str, column: &str) -> bool {
    let mut c = conn().await;
    let found: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = $3",
    )
    .bind(schema)
    .bind(table)
    .bind(column)
    .fetch_optional(&mut c)
    .await
    .unwrap();
    found.is_some()
}

/// The legacy blobs as stored, per session.
async fn legacy_blobs(schema: &str) -> Vec<(String, Value)> {
    let mut c = conn().await;
    let sql = format!("SELECT session_id, runs FROM \"{schema}\".agno_sessions ORDER BY session_id");
    sqlx::query_as::<_, (String, Value)>(sqlx::AssertSqlSafe(sql)).fetch_all(&mut c).await.unwrap()
}

async fn run_rows(schema: &str) -> Vec<(String, String, Option<i64>)> {
    let mut c = conn().await;
    let sql =
        format!("SELECT session_id, run_id, run_index FROM \"{schema}\".agno_runs ORDER BY session_id, run_index");
    sqlx::query_as(sqlx::AssertSqlSafe(sql)).fetch_all(&mut c).await.unwrap()
}

/// Columns, indexes and constraints of `tables`, with the schema name replaced by `S`.
async fn catalog(schema: &str, tables: &[&str]) -> Vec<String> {
    let mut c = conn().await;
    let tables: Vec<String> = tables.iter().map(|t| (*t).to_owned()).collect();
    let mut out: Vec<String> = sqlx::query_scalar(
        "SELECT 'col ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' \
         || coalesce(column_default, '-') FROM information_schema.columns \
         WHERE table_schema = $1 AND table_name = ANY($2) ORDER BY table_name, ordinal_position",
    )
    .bind(schema)
    .bind(&tables)
    .fetch_all(&mut c)
    .await
    .unwrap();
    let indexes: Vec<String> = sqlx::query_scalar(
        "SELECT 'idx ' || replace(indexdef, quote_ident($1) || '.', 'S.') FROM pg_indexes \
         WHERE schemaname = $1 AND tablename = ANY($2) ORDER BY indexname",
    )
    .bind(schema)
    .bind(&tables)
    .fetch_all(&mut c)
    .await
    .unwrap();
    let constraints: Vec<String> = sqlx::query_scalar(
        "SELECT 'con ' || conname || ' ' || replace(pg_get_constraintdef(c.oid), quote_ident($1) || '.', 'S.') \
         FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace \
         WHERE n.nspname = $1 AND t.relname = ANY($2) ORDER BY conname",
    )
    .bind(schema)
    .bind(&tables)
    .fetch_all(&mut c)
    .await
    .unwrap();
    out.extend(indexes);
    out.extend(constraints);
    out
}

/// The catalog (as [`catalog`]) of `tables` as Python Agno 3.1's `PostgresDb` creates them, live,
/// in a scratch schema of its own (`scripts/interop/create_tables.py`); `None` when no Python
/// Agno is found (the check is skipped; under `CI=true` it fails).
async fn python_catalog(table_types: &[&str], tables: &[&str]) -> Option<Vec<String>> {
    let py = agno_testkit::agno_python("the PostgreSQL DDL comparison with Python Agno")?;
    let scratch = Scratch::new("ddl_py");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/create_tables.py");
    let sa_url = url().replacen("postgresql://", "postgresql+psycopg://", 1);
    let out = std::process::Command::new(py)
        .arg(script)
        .args(["postgres", &sa_url, &scratch.name])
        .args(table_types)
        .env("AGNO_TELEMETRY", "false")
        .output()
        .unwrap();
    assert!(out.status.success(), "create_tables.py failed: {}", String::from_utf8_lossy(&out.stderr));
    let want = catalog(&scratch.name, tables).await;
    assert!(want.iter().filter(|l| l.starts_with("col ")).count() >= tables.len(), "Agno created {tables:?}");
    Some(want)
}

/// Agno's table type and default name of every table agno-rs creates, in creation order (the
/// `agno_events` log of the job queue is agno-rs's own: Agno 3.1 has no such table).
const PYTHON_TABLES: [(&str, &str); 18] = [
    ("sessions", "agno_sessions"),
    ("runs", "agno_runs"),
    ("versions", "agno_schema_versions"),
    ("memories", "agno_memories"),
    ("evals", "agno_eval_runs"),
    ("knowledge", "agno_knowledge"),
    ("metrics", "agno_metrics"),
    ("schedules", "agno_schedules"),
    ("schedule_runs", "agno_schedule_runs"),
    ("jobs", "agno_jobs"),
    ("traces", "agno_traces"),
    ("spans", "agno_spans"),
    ("approvals", "agno_approvals"),
    ("compactions", "agno_compactions"),
    ("components", "agno_components"),
    ("component_configs", "agno_component_configs"),
    ("component_links", "agno_component_links"),
    ("service_accounts", "agno_service_accounts"),
];

/// Every table is created as Python Agno 3.1 creates it, live: columns, types (JSONB, INTEGER
/// versions), defaults, indexes, the partial unique name keys of schedules and the idempotency
/// keys of jobs, the foreign keys of runs, schedule runs, spans, configs and links. Creating
/// twice changes nothing; each table is stamped 3.0.0 with Agno's naive ISO stamp.
#[tokio::test]
async fn every_table_is_created_exactly_as_python_agno_creates_it() {
    if !agno_testkit::services::postgres("every_table_is_created_exactly_as_python_agno_creates_it") {
        return;
    }
    let scratch = Scratch::new("ddl");
    let db = PostgresDb::connect_with(&url(), TableNames::default(), &scratch.name).await.unwrap();
    db.create_tables().await.unwrap();
    db.create_tables().await.unwrap(); // idempotent
    let (kinds, tables): (Vec<&str>, Vec<&str>) = PYTHON_TABLES.into_iter().unzip();
    let got = catalog(&scratch.name, &tables).await;
    let Some(want) = python_catalog(&kinds, &tables).await else { return };
    assert_eq!(got, want);
    for table in tables.iter().filter(|t| **t != "agno_schema_versions") {
        assert_eq!(db.get_latest_schema_version(table).await.unwrap().as_deref(), Some("3.0.0"), "{table}");
    }
    let mut c = conn().await;
    let sql = format!("SELECT created_at FROM \"{}\".agno_schema_versions LIMIT 1", scratch.name);
    let stamp: String = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(&mut c).await.unwrap();
    assert_eq!(stamp.len(), "2026-01-01T00:00:00.000000".len(), "{stamp}");
    assert_eq!(&stamp[10..11], "T");
    let shared: std::sync::Arc<dyn Migrate> = std::sync::Arc::new(db);
    assert!(shared.job_store().is_some(), "the adapter offers its job queue");
}

/// Python Agno 3.1 and agno-rs share a PostgreSQL component catalog: each reads what the other
/// wrote, and each one's rules hold on the other's rows.
#[tokio::test]
async fn python_agno_and_agno_rs_share_a_postgres_component_catalog() {
    if !agno_testkit::services::postgres("python_agno_and_agno_rs_share_a_postgres_component_catalog") {
        return;
    }
    let Some(py) = agno_testkit::agno_python("the PostgreSQL component catalog shared with Python Agno") else {
        return;
    };
    let scratch = Scratch::new("components");
    let db = PostgresDb::connect_with(&url(), TableNames::default(), &scratch.name).await.unwrap();
    db.create_tables().await.unwrap();
    let sa_url = url().replacen("postgresql://", "postgresql+psycopg://", 1);
    let target = ["postgres".to_owned(), sa_url, scratch.name.clone()];
    agno_testkit::conformance::components_interop(std::sync::Arc::new(db), &py, &target).await;
}

#[tokio::test]
async fn agno_2x_postgres_data_migrates_to_v3_without_loss() {
    if !agno_testkit::services::postgres("agno_2x_postgres_data_migrates_to_v3_without_loss") {
        return;
    }
    let (db, scratch) = legacy_copy("legacy").await;
    // Before migrating, legacy sessions already read back in full (blob merge).
    assert_matches_agno(&db).await;
    let before_blobs = legacy_blobs(&scratch.name).await;
    let manager = MigrationManager::new(&db);
    let status = manager.status(None).await.unwrap();
    assert!(!status.is_current());
    assert_eq!(status.legacy_runs_pending, 16);
    let sessions = status.tables.iter().find(|t| t.table == "agno_sessions").unwrap();
    assert_eq!(sessions.version.as_deref(), Some("2.5.6"));
    assert_eq!(sessions.pending, vec!["3.0.0"]);

    let calls = AtomicU64::new(0);
    let last = AtomicU64::new(0);
    manager
        .up(None, &|done, total| {
            calls.fetch_add(1, Ordering::Relaxed);
            last.store(done, Ordering::Relaxed);
            assert_eq!(total, 5);
        })
        .await
        .unwrap();
    assert!(calls.load(Ordering::Relaxed) >= 1);
    assert_eq!(last.load(Ordering::Relaxed), 5, "progress reaches every session");
    assert_eq!(db.get_latest_schema_version("agno_sessions").await.unwrap().as_deref(), Some("3.0.0"));
    assert_eq!(db.get_latest_schema_version("agno_memories").await.unwrap().as_deref(), Some("3.0.0"));
    assert_eq!(db.get_latest_schema_version("agno_runs").await.unwrap().as_deref(), Some("3.0.0"));
    let after = manager.status(None).await.unwrap();
    assert!(after.is_current());
    assert_eq!(after.legacy_runs_pending, 0);

    // Every run is now a row of its own, indexed by its position in the blob.
    let rows = run_rows(&scratch.name).await;
    assert_eq!(rows.len(), 16);
    for want in expected()["sessions"].as_array().unwrap() {
        let id = want["session_id"].as_str().unwrap();
        let got: Vec<(&str, Option<i64>)> = rows.iter().filter(|r| r.0 == id).map(|r| (r.1.as_str(), r.2)).collect();
        let want: Vec<(&str, Option<i64>)> = want["runs"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, r)| (r["run_id"].as_str().unwrap(), Some(i64::try_from(i).unwrap())))
            .collect();
        assert_eq!(got, want, "{id}");
        for (run_id, _) in &want {
            assert!(db.get_run(run_id, None).await.unwrap().is_some(), "{run_id} readable alone");
        }
    }
    assert_eq!(db.get_runs(&RunQuery::default()).await.unwrap().runs.len(), 16);
    assert_matches_agno(&db).await;
    assert_python_reads_as_agno_2(&scratch.name);
    assert_legacy_memories(&db).await;
    // The legacy column is still there, untouched, as a backup.
    assert!(column_exists(&scratch.name, "agno_sessions", "runs").await, "legacy runs column kept");
    assert_eq!(legacy_blobs(&scratch.name).await, before_blobs);

    // A second migration does nothing.
    let again = manager.up(None, &|_, _| {}).await.unwrap();
    assert!(again.is_current(), "nothing was pending the second time");
    assert_eq!(again.legacy_runs_pending, 0);
    assert_eq!(run_rows(&scratch.name).await.len(), 16);

    // A run written after the migration takes the next index of its session.
    let mut next = RunOutput::new("after-migration", "sess-alice-1");
    next.agent_id = Some("calc-agent".into());
    assert_eq!(db.upsert_run(&next, "sess-alice-1", Some("alice")).await.unwrap(), 3);

    // Cleanup drops the column once every legacy run is in the runs table; reads are unchanged
    // apart from the new run.
    let report = db.cleanup_legacy_runs(false).await.unwrap();
    assert!(report.removed);
    assert_eq!(report.missing_runs, 0);
    assert!(!column_exists(&scratch.name, "agno_sessions", "runs").await);
    db.delete_run("after-migration", Some("alice")).await.unwrap();
    assert_matches_agno(&db).await;
    // With the legacy column gone, the runs table is the only source Python Agno reads.
    assert_python_reads_as_agno_2(&scratch.name);
    let again = db.cleanup_legacy_runs(false).await.unwrap();
    assert!(!again.removed, "nothing left to clean");
}

/// Python Agno 3.1 reads the migrated schema exactly as Agno 2.9 read the legacy one.
fn assert_python_reads_as_agno_2(schema: &str) {
    let what = "the Python Agno 3.1 read-back of the migrated PostgreSQL fixture";
    let sa_url = url().replacen("postgresql://", "postgresql+psycopg://", 1);
    let args = ["postgres", sa_url.as_str(), schema];
    if let Some(differences) = agno_testkit::legacy::python_readback_differences(what, "expected_postgres.json", &args)
    {
        assert!(differences.is_empty(), "Python Agno 3.1 reads differently:\n{}", differences.join("\n"));
    }
}

/// The memories Agno 2.x wrote read back as Agno read them (`expected_postgres.json`), and the
/// memory filters work on them.
async fn assert_legacy_memories(db: &PostgresDb) {
    let query = MemoryQuery { sort_by: MemorySort::CreatedAt, sort_order: SortOrder::Asc, ..MemoryQuery::default() };
    let page = db.get_user_memories(&query).await.unwrap();
    assert_eq!(page.total, 3);
    let mut got = page.memories;
    got.sort_by(|a, b| a.memory_id.cmp(&b.memory_id));
    let want = expected()["memories"].as_array().unwrap().clone();
    assert_eq!(got.len(), want.len());
    for (m, w) in got.iter().zip(&want) {
        let id = w["memory_id"].as_str().unwrap();
        assert_eq!(m.memory_id.as_deref(), Some(id));
        assert_eq!(m.memory, w["memory"].as_str().unwrap(), "{id}");
        let topics: Vec<String> =
            w["topics"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_owned()).collect();
        assert_eq!(m.topics.as_ref(), Some(&topics), "{id}");
        for (field, value) in [
            ("input", &m.input),
            ("user_id", &m.user_id),
            ("agent_id", &m.agent_id),
            ("team_id", &m.team_id),
            ("feedback", &m.feedback),
        ] {
            assert_eq!(value.as_deref(), w.get(field).and_then(Value::as_str), "{id}.{field}");
        }
        // "2025-01-01T00:00:00" in Agno's read-back is this epoch second.
        assert_eq!(w["created_at"], json!("2025-01-01T00:00:00"));
        assert_eq!((m.created_at, m.updated_at), (Some(1_735_689_600), Some(1_735_689_600)), "{id}");
    }
    let alice = MemoryQuery { user_id: Some("alice".into()), ..MemoryQuery::default() };
    assert_eq!(db.get_user_memories(&alice).await.unwrap().total, 2);
    let prefs = MemoryQuery { topics: Some(vec!["preferences".into()]), ..MemoryQuery::default() };
    assert_eq!(db.get_user_memories(&prefs).await.unwrap().total, 2);
    let lisbon = MemoryQuery { search_content: Some("LISBON".into()), ..MemoryQuery::default() };
    assert_eq!(db.get_user_memories(&lisbon).await.unwrap().total, 1);
    assert_eq!(db.get_all_memory_topics(None).await.unwrap(), ["animals", "location", "preferences"]);
    assert_eq!(
        db.get_user_memory("mem-bob-1", Some("bob")).await.unwrap().unwrap().agent_id.as_deref(),
        Some("chat-agent")
    );
    assert!(db.get_user_memory("mem-bob-1", Some("alice")).await.unwrap().is_none());
}

/// As `pg_dump` shows the memories table Python Agno 3.1.10's `PostgresDb` creates.
const AGNO_MEMORIES_TABLE: &str = "\
col agno_memories.memory_id character varying NO -
col agno_memories.memory jsonb NO -
col agno_memories.feedback text YES -
col agno_memories.input text YES -
col agno_memories.agent_id character varying YES -
col agno_memories.team_id character varying YES -
col agno_memories.user_id character varying YES -
col agno_memories.topics jsonb YES -
col agno_memories.created_at bigint NO -
col agno_memories.updated_at bigint YES -
idx CREATE UNIQUE INDEX agno_memories_pkey ON S.agno_memories USING btree (memory_id)
idx CREATE INDEX idx_agno_memories_created_at ON S.agno_memories USING btree (created_at)
idx CREATE INDEX idx_agno_memories_updated_at ON S.agno_memories USING btree (updated_at)
idx CREATE INDEX idx_agno_memories_user_id ON S.agno_memories USING btree (user_id)
con agno_memories_pkey PRIMARY KEY (memory_id)";

#[tokio::test]
async fn memories_are_stored_as_python_agno_stores_them() {
    if !agno_testkit::services::postgres("memories_are_stored_as_python_agno_stores_them") {
        return;
    }
    let scratch = Scratch::new("mem");
    let db = PostgresDb::connect_with(&url(), TableNames::default(), &scratch.name).await.unwrap();
    db.create_tables().await.unwrap();
    db.create_tables().await.unwrap(); // idempotent
    let want: Vec<&str> = AGNO_MEMORIES_TABLE.lines().collect();
    assert_eq!(catalog(&scratch.name, &["agno_memories"]).await, want);
    assert_eq!(db.get_latest_schema_version("agno_memories").await.unwrap().as_deref(), Some("3.0.0"));
    let mut m = UserMemory::new("likes \u{0}otters", Some("u1"));
    m.memory_id = Some("m1".into());
    m.topics = Some(vec!["animals".into()]);
    m.input = Some("in\u{0}put".into());
    let stored = db.upsert_user_memory(&m).await.unwrap();
    // Postgres text cannot hold NUL: it is stripped, as Python Agno does; the row comes back as
    // stored.
    assert_eq!(stored.memory, "likes otters");
    assert_eq!(stored.input.as_deref(), Some("input"));
    let mut c = conn().await;
    let (memory, topics): (String, String) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT jsonb_typeof(memory), jsonb_typeof(topics) FROM \"{}\".agno_memories WHERE memory_id = 'm1'",
        scratch.name
    )))
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!((memory.as_str(), topics.as_str()), ("string", "array"));
    db.close().await;
}

#[tokio::test]
async fn a_migration_failing_halfway_keeps_no_stamp_and_loses_nothing() {
    if !agno_testkit::services::postgres("a_migration_failing_halfway_keeps_no_stamp_and_loses_nothing") {
        return;
    }
    let (db, scratch) = legacy_copy("fault").await;
    let before_blobs = legacy_blobs(&scratch.name).await;
    let failing =
        MigrationManager::new(&db).with_options(MigrationOptions { batch_size: 1, fail_after_batches: Some(1) });
    let err = failing.up(None, &|_, _| {}).await.unwrap_err();
    assert!(err.to_string().contains("migration of agno_sessions to 3.0.0 failed"), "{err}");
    assert_eq!(db.get_latest_schema_version("agno_sessions").await.unwrap().as_deref(), Some("2.5.6"));
    // The copy was rolled back as a whole: no half-copied runs, the blobs untouched.
    assert!(run_rows(&scratch.name).await.is_empty());
    assert_eq!(legacy_blobs(&scratch.name).await, before_blobs);
    assert_eq!(db.legacy_runs_pending().await.unwrap(), 16);
    // Nothing is lost: sessions still read back in full.
    assert_matches_agno(&db).await;
    // Cleanup refuses to drop runs that were not copied.
    let refused = db.cleanup_legacy_runs(false).await.unwrap_err();
    assert_eq!(refused.kind(), DbErrorKind::Conflict);
    assert!(refused.to_string().contains("16 legacy runs"), "{refused}");
    assert!(column_exists(&scratch.name, "agno_sessions", "runs").await);
    // Rerunning completes.
    MigrationManager::new(&db)
        .with_options(MigrationOptions { batch_size: 2, fail_after_batches: None })
        .up(None, &|_, _| {})
        .await
        .unwrap();
    assert_eq!(db.get_latest_schema_version("agno_sessions").await.unwrap().as_deref(), Some("3.0.0"));
    assert_eq!(run_rows(&scratch.name).await.len(), 16);
    assert_eq!(db.legacy_runs_pending().await.unwrap(), 0);
    assert_matches_agno(&db).await;
    let report = db.cleanup_legacy_runs(false).await.unwrap();
    assert!(report.removed);
    assert!(!column_exists(&scratch.name, "agno_sessions", "runs").await);
    assert_matches_agno(&db).await;
}

#[tokio::test]
async fn an_unmigrated_database_is_refused_at_startup() {
    if !agno_testkit::services::postgres("an_unmigrated_database_is_refused_at_startup") {
        return;
    }
    let (_db, scratch) = legacy_copy("ready").await;
    let url = format!("postgresql+psycopg://postgres@127.0.0.1:5432/test?schema={}", scratch.name);
    let url = match std::env::var("AGNO_TEST_POSTGRES_URL") {
        Ok(base) => format!("{base}?schema={}", scratch.name),
        Err(_) => url,
    };
    let err = agno_db::open_ready(&url).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::SchemaTooOld);
    assert!(err.to_string().contains("agno_sessions (sessions): 2.5.6 -> 3.0.0"), "{err}");
}

#[tokio::test]
async fn metrics_get_the_per_user_key_in_place_of_the_daily_one() {
    if !agno_testkit::services::postgres("metrics_get_the_per_user_key_in_place_of_the_daily_one") {
        return;
    }
    let scratch = Scratch::new("metrics");
    let db = PostgresDb::connect_with(&url(), TableNames::default(), &scratch.name).await.unwrap();
    let s = &scratch.name;
    let mut c = conn().await;
    // The v2 metrics table: no user_id, one row per (date, aggregation_period).
    exec(
        &mut c,
        &format!(
            "CREATE TABLE \"{s}\".agno_metrics (id VARCHAR NOT NULL, agent_runs_count BIGINT NOT NULL, \
             team_runs_count BIGINT NOT NULL, workflow_runs_count BIGINT NOT NULL, agent_sessions_count BIGINT NOT NULL, \
             team_sessions_count BIGINT NOT NULL, workflow_sessions_count BIGINT NOT NULL, users_count BIGINT NOT NULL, \
             token_metrics JSONB NOT NULL, model_metrics JSONB NOT NULL, date DATE NOT NULL, \
             aggregation_period VARCHAR NOT NULL, created_at BIGINT NOT NULL, updated_at BIGINT, completed BOOLEAN NOT NULL, \
             PRIMARY KEY (id), CONSTRAINT agno_metrics_uq_metrics_date_period UNIQUE (date, aggregation_period)); \
             CREATE INDEX idx_agno_metrics_date ON \"{s}\".agno_metrics (date); \
             INSERT INTO \"{s}\".agno_metrics VALUES ('m1', 1, 0, 0, 1, 0, 0, 1, '{{}}', '[]', '2026-01-01', 'day', 1, 1, true);"
        ),
    )
    .await;
    MigrationManager::new(&db).up(None, &|_, _| {}).await.unwrap();
    assert_eq!(db.get_latest_schema_version("agno_metrics").await.unwrap().as_deref(), Some("3.0.0"));
    let got: Vec<String> = catalog(s, &["agno_metrics"])
        .await
        .into_iter()
        .filter(|l| !l.starts_with("col ") || l.contains(".user_id "))
        .collect();
    // As Python Agno 3.1.10 creates the table.
    assert_eq!(
        got,
        [
            "col agno_metrics.user_id character varying NO -",
            "idx CREATE UNIQUE INDEX agno_metrics_pkey ON S.agno_metrics USING btree (id)",
            "idx CREATE UNIQUE INDEX agno_metrics_uq_metrics_user_date_period ON S.agno_metrics USING btree (user_id, date, aggregation_period)",
            "idx CREATE INDEX idx_agno_metrics_date ON S.agno_metrics USING btree (date)",
            "idx CREATE INDEX idx_agno_metrics_user_id ON S.agno_metrics USING btree (user_id)",
            "con agno_metrics_pkey PRIMARY KEY (id)",
            "con agno_metrics_uq_metrics_user_date_period UNIQUE (user_id, date, aggregation_period)",
        ]
    );
    // The existing (completed) row is kept, unowned; a second user's row for the day fits.
    let owners: Vec<String> =
        sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT user_id FROM \"{s}\".agno_metrics")))
            .fetch_all(&mut c)
            .await
            .unwrap();
    assert_eq!(owners, [""]);
    exec(
        &mut c,
        &format!(
            "INSERT INTO \"{s}\".agno_metrics VALUES ('m2', 1, 0, 0, 1, 0, 0, 1, '{{}}', '[]', '2026-01-01', 'day', 1, 1, \
             true, 'alice')"
        ),
    )
    .await;
    // Rerunning the step changes nothing.
    assert!(
        !db.migrate_table(MigrationStep {
            kind: agno_db::TableKind::Metrics,
            version: "3.0.0",
            options: &MigrationOptions::default(),
            progress: &|_, _| {}
        })
        .await
        .unwrap()
    );
}

#[tokio::test]
async fn schedules_get_the_per_owner_name_keys_on_migration() {
    if !agno_testkit::services::postgres("schedules_get_the_per_owner_name_keys_on_migration") {
        return;
    }
    let scratch = Scratch::new("sched_mig");
    let db = PostgresDb::connect_with(&url(), TableNames::default(), &scratch.name).await.unwrap();
    let s = &scratch.name;
    let mut c = conn().await;
    // A pre-3.0 schedules table: no owner, no provenance, no key on the name; two rows share one.
    exec(
        &mut c,
        &format!(
            "CREATE TABLE \"{s}\".agno_schedules (id VARCHAR NOT NULL, name VARCHAR NOT NULL, description TEXT, \
             method VARCHAR NOT NULL, endpoint VARCHAR NOT NULL, payload JSONB, cron_expr VARCHAR NOT NULL, \
             timezone VARCHAR NOT NULL, timeout_seconds BIGINT NOT NULL, max_retries BIGINT NOT NULL, \
             retry_delay_seconds BIGINT NOT NULL, enabled BOOLEAN NOT NULL, next_run_at BIGINT, locked_by VARCHAR, \
             locked_at BIGINT, created_at BIGINT NOT NULL, updated_at BIGINT, PRIMARY KEY (id)); \
             INSERT INTO \"{s}\".agno_schedules VALUES \
             ('s1', 'nightly', NULL, 'POST', '/agents/a/runs', NULL, '0 3 * * *', 'UTC', 3600, 0, 60, true, NULL, NULL, NULL, 1, NULL), \
             ('s2', 'nightly', NULL, 'POST', '/agents/b/runs', NULL, '0 4 * * *', 'UTC', 3600, 0, 60, true, NULL, NULL, NULL, 2, NULL);"
        ),
    )
    .await;
    // As Python Agno: duplicate names in one owner bucket fail the step, unstamped.
    let err = MigrationManager::new(&db).up(None, &|_, _| {}).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Conflict, "{err}");
    assert!(err.to_string().contains("agno_schedules_uq_unowned_name"), "{err}");
    assert_eq!(db.get_latest_schema_version("agno_schedules").await.unwrap().as_deref(), Some("2.5.6"));
    exec(&mut c, &format!("UPDATE \"{s}\".agno_schedules SET name = 'nightly-b' WHERE id = 's2'")).await;
    MigrationManager::new(&db).up(None, &|_, _| {}).await.unwrap();
    assert_eq!(db.get_latest_schema_version("agno_schedules").await.unwrap().as_deref(), Some("3.0.0"));
    let got: Vec<String> = catalog(s, &["agno_schedules"])
        .await
        .into_iter()
        .filter(|l| l.starts_with("idx ") && l.contains("_uq_"))
        .collect();
    assert_eq!(
        got,
        [
            "idx CREATE UNIQUE INDEX agno_schedules_uq_unowned_name ON S.agno_schedules USING btree (name) WHERE (user_id IS NULL)",
            "idx CREATE UNIQUE INDEX agno_schedules_uq_user_name ON S.agno_schedules USING btree (user_id, name) WHERE (user_id IS NOT NULL)",
        ]
    );
    let dup = Schedule::new("nightly", "/agents/c/runs", "* * * * *");
    assert_eq!(db.create_schedule(&dup).await.unwrap_err().kind(), DbErrorKind::Conflict);
    let run = db.create_schedule_run(&ScheduleRun::new("s1")).await.unwrap();
    assert_eq!(run.user_id, None);
}

#[tokio::test]
async fn rust_writes_read_back_and_users_stay_apart() {
    if !agno_testkit::services::postgres("rust_writes_read_back_and_users_stay_apart") {
        return;
    }
    let scratch = Scratch::new("rw");
    // SQLAlchemy-style URL, schema from the URL.
    let base = url();
    let url = format!("{}?schema={}", base.replacen("postgresql://", "postgresql+psycopg://", 1), scratch.name);
    let db = PostgresDb::connect(&url).await.unwrap();
    assert_eq!(db.schema(), scratch.name);
    db.create_tables().await.unwrap();
    let mut s = AgentSession::new("s1");
    s.agent_id = Some("a".into());
    s.user_id = Some("u1".into());
    s.set_session_state(json!({"text": "nul\u{0}byte"}).as_object().unwrap().clone());
    db.upsert_session(&s, &StateUpdate::Replace).await.unwrap();
    let got = db.get_session("s1", Some("u1"), None).await.unwrap().unwrap();
    // Postgres text cannot hold NUL: it is stripped, as Python Agno does.
    assert_eq!(got.session_state().unwrap()["text"], json!("nulbyte"));
    // A run for a session that does not exist is refused, typed.
    let err = db.upsert_run(&RunOutput::new("r-x", "nope"), "nope", None).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    assert!(err.to_string().contains("session nope does not exist"), "{err}");
    // Python Agno reads JSONB columns as stored: run_data is an object, not a string.
    db.upsert_run(&RunOutput::new("r1", "s1"), "s1", Some("u1")).await.unwrap();
    let mut c = conn().await;
    let kind: String = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT jsonb_typeof(run_data) FROM \"{}\".agno_runs WHERE run_id = 'r1'",
        scratch.name
    )))
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(kind, "object");
    db.close().await;
}

#[tokio::test]
async fn an_unreachable_server_is_reported_as_unavailable() {
    if !agno_testkit::services::postgres("an_unreachable_server_is_reported_as_unavailable") {
        return;
    }
    // A port nothing listens on.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let err = PostgresDb::connect(&format!("postgresql://postgres@127.0.0.1:{port}/test")).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains(&format!("127.0.0.1:{port}")), "{err}");
    let err = agno_db::open(&format!("postgres://postgres@127.0.0.1:{port}/test")).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Unavailable, "{err}");
    // A table dropped under a live adapter is a typed error too, never an empty result.
    let scratch = Scratch::new("gone");
    let db = PostgresDb::connect_with(&url(), TableNames::default(), &scratch.name).await.unwrap();
    db.create_tables().await.unwrap();
    let mut c = conn().await;
    exec(&mut c, &format!("DROP TABLE \"{}\".agno_runs CASCADE", scratch.name)).await;
    let err = db.get_run("r1", None).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::SchemaTooOld, "{err}");
    assert!(err.to_string().contains("cannot read run r1"), "{err}");
}

/// Python Agno 3.1 on Postgres, run by `AGNO_PYTHON` (needs `psycopg` next to `agno`).
const PY_PROBE: &str = r#"
from agno.db.base import SessionType
from agno.models.message import Message
from agno.models.response import ToolExecution
from agno.run.agent import RunInput, RunOutput
from agno.run.base import RunStatus
from agno.session.agent import AgentSession

sid = sys.argv[4]
if mode == "read":
    s = db.get_session(session_id=sid, session_type=SessionType.AGENT)
    runs = db.get_runs(session_id=sid)
    print(json.dumps({"session": s.to_dict() if s else None, "runs": [r.to_dict() for r in runs]}))
else:
    db.upsert_session(AgentSession(session_id=sid, agent_id="py-agent", user_id="py-user",
        session_data={"session_state": {"written_by": "python"}, "session_name": "from python"},
        agent_data={"name": "Py", "agent_id": "py-agent"}, created_at=1700000000))
    out = []
    for i in range(2):
        tool = ToolExecution(tool_call_id=f"call_{i}", tool_name="add", tool_args={"a": i, "b": 1}, result=str(i + 1))
        run = RunOutput(run_id=f"py-run-{i}", agent_id="py-agent", agent_name="Py", session_id=sid, user_id="py-user",
            input=RunInput(input_content=f"question {i}"), content=f"answer {i}",
            messages=[Message(role="user", content=f"question {i}"), Message(role="assistant", content=f"answer {i}")],
            tools=[tool], status=RunStatus.completed, created_at=1700000000 + i)
        db.upsert_run(run, session_id=sid, user_id="py-user")
        out.append(run.to_dict())
    print(json.dumps({"runs": out}))
"#;

/// Python Agno 3.1 on Postgres writing and reading schedules, schedule runs and metrics.
const PY_SCHEDULES_PROBE: &str = r#"
from datetime import date
from agno.db.postgres.utils import bulk_upsert_metrics


def plain(row):
    return {k: (v.isoformat() if isinstance(v, date) else v) for k, v in dict(row).items()} if row else None

if mode == "read":
    s = db.get_schedule("rs-sched", user_id="rs-user")
    by_name = db.get_schedule_by_name("rs nightly", user_id="rs-user")
    runs, total = db.get_schedule_runs("rs-sched", user_id="rs-user")
    latest = db.get_latest_schedule_runs(["rs-sched"])
    claimed = db.claim_due_schedule("py-worker", lock_grace_seconds=300)
    metrics, latest_update = db.get_metrics(starting_date=date(2026, 1, 1), ending_date=date(2026, 1, 31))
    print(json.dumps({"schedule": plain(s), "by_name": plain(by_name), "runs": [plain(r) for r in runs],
        "total": total, "latest": {k: plain(v) for k, v in latest.items()}, "claimed": plain(claimed),
        "metrics": [plain(m) for m in metrics], "latest_update": latest_update}))
else:
    db.create_schedule({"id": "py-sched", "name": "py nightly", "description": "from python", "method": "POST",
        "endpoint": "/agents/py-agent/runs", "payload": {"message": "hi", "nested": {"n": [1, 2]}},
        "cron_expr": "0 3 * * *", "timezone": "Europe/Paris", "timeout_seconds": 120, "max_retries": 2,
        "retry_delay_seconds": 30, "enabled": True, "next_run_at": 1700000500, "locked_by": None, "locked_at": None,
        "user_id": "py-user", "managed_by": "studio", "target_type": "agent", "target_id": "py-agent",
        "created_by_run_id": "r0", "created_by_session_id": "s0", "updated_by_run_id": None,
        "updated_by_session_id": None, "disabled_reason": None, "created_at": 1700000000, "updated_at": 1700000001})
    db.create_schedule_run({"id": "py-srun", "schedule_id": "py-sched", "attempt": 1, "triggered_at": 1700000600,
        "completed_at": None, "status": "running", "status_code": None, "run_id": None, "session_id": None,
        "error": None, "input": {"message": "hi"}, "output": None, "requirements": None, "user_id": "py-user",
        "created_at": 1700000600})
    db.update_schedule_run("py-srun", status="success", completed_at=1700000660, status_code=200,
        run_id="run-py", session_id="sess-py", output={"content": "done"})
    table = db._get_table(table_type="metrics", create_table_if_not_found=True)
    tokens = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    records = [
        {"id": "py-m1", "date": date(2026, 1, 2), "aggregation_period": "daily", "user_id": "py-user",
         "users_count": 1, "agent_sessions_count": 1, "team_sessions_count": 0, "workflow_sessions_count": 0,
         "agent_runs_count": 2, "team_runs_count": 0, "workflow_runs_count": 0, "token_metrics": tokens,
         "model_metrics": [{"model_id": "gpt-4o", "model_provider": "OpenAI", "count": 2}],
         "created_at": 1700000000, "updated_at": 1700000100, "completed": True},
        {"id": "py-m2", "date": date(2026, 1, 2), "aggregation_period": "daily", "user_id": "",
         "users_count": 0, "agent_sessions_count": 1, "team_sessions_count": 0, "workflow_sessions_count": 0,
         "agent_runs_count": 1, "team_runs_count": 0, "workflow_runs_count": 0, "token_metrics": tokens,
         "model_metrics": [], "created_at": 1700000000, "updated_at": 1700000200, "completed": False},
    ]
    with db.Session() as sess, sess.begin():
        bulk_upsert_metrics(session=sess, table=table, metrics_records=records)
    print(json.dumps({"ok": True}))
"#;

#[tokio::test]
async fn python_agno_and_agno_rs_share_schedules_and_metrics() {
    if !agno_testkit::services::postgres("python_agno_and_agno_rs_share_schedules_and_metrics") {
        return;
    }
    let scratch = Scratch::new("sched_interop");
    // Python Agno writes first, creating the tables its own way.
    if py_script(PY_SCHEDULES_PROBE, &["write", &scratch.name]).is_none() {
        return;
    }
    let db = PostgresDb::connect_with(&url(), TableNames::default(), &scratch.name).await.unwrap();
    db.create_tables().await.unwrap();
    let s = db.get_schedule("py-sched", Some("py-user")).await.unwrap().expect("python's schedule");
    assert_eq!(
        (s.name.as_str(), s.timezone.as_str(), s.cron_expr.as_str()),
        ("py nightly", "Europe/Paris", "0 3 * * *")
    );
    assert_eq!(s.payload, Some(json!({"message": "hi", "nested": {"n": [1, 2]}})));
    assert_eq!((s.timeout_seconds, s.max_retries, s.retry_delay_seconds), (120, 2, 30));
    assert_eq!(
        (s.enabled, s.next_run_at, s.created_at, s.updated_at),
        (true, Some(1_700_000_500), 1_700_000_000, Some(1_700_000_001))
    );
    assert_eq!((s.managed_by.as_deref(), s.target_id.as_deref()), (Some("studio"), Some("py-agent")));
    assert_eq!(
        db.get_schedule_by_name("py nightly", Some("py-user")).await.unwrap().map(|s| s.id),
        Some("py-sched".to_owned())
    );
    assert_eq!(db.get_schedule("py-sched", Some("rs-user")).await.unwrap(), None);
    // Python's partial unique index keeps the name taken for its owner.
    let mut dup = Schedule::new("py nightly", "/agents/a/runs", "* * * * *");
    dup.user_id = Some("py-user".to_owned());
    assert_eq!(db.create_schedule(&dup).await.unwrap_err().kind(), DbErrorKind::Conflict);
    let (runs, total) = db.get_schedule_runs("py-sched", Some("py-user"), None, None).await.unwrap();
    assert_eq!(total, 1);
    let r = &runs[0];
    assert_eq!(
        (r.id.as_str(), r.status.as_str(), r.status_code, r.completed_at),
        ("py-srun", "success", Some(200), Some(1_700_000_660))
    );
    assert_eq!((r.input.clone(), r.output.clone()), (Some(json!({"message": "hi"})), Some(json!({"content": "done"}))));
    assert_eq!(r.user_id.as_deref(), Some("py-user"));
    let day = |d: &str| d.parse::<agno_core::NaiveDate>().unwrap();
    let (buckets, latest) = db
        .get_metrics(&MetricsQuery {
            starting_date: Some(day("2026-01-02")),
            ending_date: Some(day("2026-01-02")),
            user_id: None,
        })
        .await
        .unwrap();
    assert_eq!(
        buckets.iter().map(|b| (b.id.as_str(), b.user_id.as_deref())).collect::<Vec<_>>(),
        [("py-m2", None), ("py-m1", Some("py-user"))]
    );
    assert_eq!(latest, Some(1_700_000_200));
    let m1 = &buckets[1];
    assert_eq!((m1.agent_runs_count, m1.users_count, m1.completed), (2, 1, true));
    assert_eq!(m1.token_metrics["total_tokens"], json!(15));
    assert_eq!(m1.model_metrics, json!([{"model_id": "gpt-4o", "model_provider": "OpenAI", "count": 2}]));

    // agno-rs writes, Python Agno reads (and claims).
    let mut mine = Schedule::new("rs nightly", "/agents/rs-agent/runs", "*/5 * * * *");
    mine.id = "rs-sched".to_owned();
    mine.user_id = Some("rs-user".to_owned());
    mine.description = Some("from rust".to_owned());
    mine.payload = Some(json!({"message": "from rust", "nested": {"n": [1, 2]}}));
    mine.next_run_at = Some(1_700_000_000);
    mine.created_at = 1_700_000_000;
    db.create_schedule(&mine).await.unwrap();
    let mut run = ScheduleRun::new("rs-sched");
    run.id = "rs-srun".to_owned();
    run.triggered_at = Some(1_700_000_010);
    run.created_at = 1_700_000_010;
    run.input = Some(json!({"message": "from rust"}));
    db.create_schedule_run(&run).await.unwrap();
    let done = ScheduleRunUpdate {
        status: Some("success".to_owned()),
        completed_at: Some(Some(1_700_000_020)),
        status_code: Some(Some(200)),
        output: Some(Some(json!({"content": "ok"}))),
        ..ScheduleRunUpdate::default()
    };
    db.update_schedule_run("rs-srun", &done).await.unwrap().expect("run");
    let bucket = |user: Option<&str>, completed: bool, updated_at: i64| MetricsBucket {
        id: agno_core::new_id(),
        user_id: user.map(str::to_owned),
        date: day("2026-01-05"),
        aggregation_period: "daily".to_owned(),
        agent_runs_count: 3,
        team_runs_count: 0,
        workflow_runs_count: 0,
        agent_sessions_count: 1,
        team_sessions_count: 0,
        workflow_sessions_count: 0,
        users_count: i64::from(user.is_some()),
        token_metrics: json!({"input_tokens": 4, "total_tokens": 4}).as_object().unwrap().clone(),
        model_metrics: json!([{"model_id": "m", "model_provider": "p", "count": 3}]),
        created_at: 1_700_000_000,
        updated_at: Some(updated_at),
        completed,
    };
    db.upsert_metrics(&[bucket(Some("rs-user"), true, 1_700_000_300), bucket(None, true, 1_700_000_400)])
        .await
        .unwrap();
    let seen = py_script(PY_SCHEDULES_PROBE, &["read", &scratch.name]).unwrap();
    assert_eq!(seen["schedule"]["payload"], json!({"message": "from rust", "nested": {"n": [1, 2]}}));
    assert_eq!(seen["schedule"]["description"], "from rust");
    assert_eq!(seen["schedule"]["enabled"], true);
    assert_eq!(seen["schedule"]["timeout_seconds"], 3600);
    assert_eq!(seen["by_name"]["id"], "rs-sched");
    assert_eq!(seen["total"], 1);
    assert_eq!(seen["runs"][0]["status"], "success");
    assert_eq!(seen["runs"][0]["output"], json!({"content": "ok"}));
    assert_eq!(seen["runs"][0]["user_id"], "rs-user");
    assert_eq!(seen["latest"]["rs-sched"]["id"], "rs-srun");
    // Python's poller claims the schedule due soonest.
    assert_eq!(seen["claimed"]["id"], "rs-sched");
    assert_eq!(seen["claimed"]["locked_by"], "py-worker");
    let mut owners: Vec<Value> = seen["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["date"] == "2026-01-05")
        .map(|m| m["user_id"].clone())
        .collect();
    owners.sort_by_key(Value::to_string);
    assert_eq!(owners, [json!("rs-user"), Value::Null], "the shared bucket reads back without an owner");
    assert_eq!(seen["latest_update"], 1_700_000_400);
    let claimed = "rs-sched";
    let got = db.get_schedule(claimed, None).await.unwrap().expect("claimed");
    assert_eq!(got.locked_by.as_deref(), Some("py-worker"));
    assert!(db.release_schedule(claimed, Some(1_800_000_000), Some("py-worker"), None).await.unwrap());
}

fn py_probe(mode: &str, schema: &str, session_id: &str) -> Option<Value> {
    py_script(PY_PROBE, &[mode, schema, session_id])
}

/// What every embedded probe starts with: `mode`, `url` and `schema` from its arguments, and
/// `db`, Python Agno's `PostgresDb` on them (or a `skip` line when `psycopg` is missing).
const PY_PRELUDE: &str = r#"
import json, sys
try:
    import psycopg  # noqa: F401
except ImportError:
    print(json.dumps({"skip": "psycopg is not installed"}))
    sys.exit(0)
from agno.db.postgres import PostgresDb

mode, url, schema = sys.argv[1:4]
db = PostgresDb(db_url=url, db_schema=schema)
"#;

/// Runs the probe `script` (after [`PY_PRELUDE`]) with `AGNO_PYTHON` as
/// `script <args[0]> <sqlalchemy url> <args[1..]>`; its last JSON line, or `None` when the check
/// is skipped.
fn py_script(script: &str, args: &[&str]) -> Option<Value> {
    let py = agno_testkit::agno_python("the Python Agno interop check on Postgres")?;
    let sa_url = url().replacen("postgresql://", "postgresql+psycopg://", 1);
    let (mode, rest) = args.split_first().expect("a mode");
    let value = python_json(Command::new(py).args(["-c", &format!("{PY_PRELUDE}{script}"), mode, &sa_url]).args(rest));
    if let Some(why) = value.get("skip") {
        eprintln!("skipping the Python Agno interop check on Postgres: {why}");
        return None;
    }
    Some(value)
}

/// Runs a Python Agno command (telemetry off) that must succeed; its last JSON line.
fn python_json(command: &mut Command) -> Value {
    let out = command.env("AGNO_TELEMETRY", "false").output().expect("python runs");
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().rev().find(|l| l.starts_with('{')).expect("json line");
    serde_json::from_str(last).unwrap()
}

#[tokio::test]
async fn python_agno_and_agno_rs_read_each_other() {
    if !agno_testkit::services::postgres("python_agno_and_agno_rs_read_each_other") {
        return;
    }
    let scratch = Scratch::new("interop");
    let db = PostgresDb::connect_with(&url(), TableNames::default(), &scratch.name).await.unwrap();
    db.create_tables().await.unwrap();
    // agno-rs writes, Python Agno reads.
    let mut session = AgentSession::new("rs-session");
    session.agent_id = Some("rs-agent".into());
    session.user_id = Some("rs-user".into());
    session.set_session_state(json!({"from": "rust"}).as_object().unwrap().clone());
    db.upsert_session(&session, &StateUpdate::Replace).await.unwrap();
    for i in 0..3 {
        let mut run = RunOutput::new(format!("rs-run-{i}"), "rs-session");
        run.agent_id = Some("rs-agent".into());
        run.user_id = Some("rs-user".into());
        run.content = Some(json!(format!("a{i}")));
        run.status = agno_core::RunStatus::Completed;
        run.created_at = 1_700_000_000 + i;
        db.upsert_run(&run, "rs-session", Some("rs-user")).await.unwrap();
    }
    let Some(seen) = py_probe("read", &scratch.name, "rs-session") else { return };
    let s = &seen["session"];
    assert_eq!(s["user_id"], "rs-user");
    assert_eq!(s["session_data"]["session_state"], json!({"from": "rust"}));
    let ids: Vec<&str> = s["runs"].as_array().unwrap().iter().map(|r| r["run_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["rs-run-0", "rs-run-1", "rs-run-2"]);
    assert_eq!(seen["runs"].as_array().unwrap().len(), 3);
    assert_eq!(seen["runs"][0]["status"], "COMPLETED");

    // Python Agno writes, agno-rs reads.
    let written = py_probe("write", &scratch.name, "py-session").unwrap();
    let session = db.get_session("py-session", Some("py-user"), None).await.unwrap().expect("session");
    assert_eq!(session.session_name(), Some("from python"));
    assert_eq!(session.session_state().unwrap()["written_by"], "python");
    assert_eq!(session.runs().len(), 2);
    assert_eq!(written["runs"].as_array().unwrap().len(), 2);
    // Whole runs, as Python Agno itself reads them back.
    let theirs = py_probe("read", &scratch.name, "py-session").unwrap();
    for (ours, theirs) in session.runs().iter().zip(theirs["runs"].as_array().unwrap()) {
        assert_eq!(&serde_json::to_value(ours).unwrap(), theirs);
    }
    // A run added by agno-rs continues Python's run_index.
    let next = RunOutput::new("rs-after-py", "py-session");
    assert_eq!(db.upsert_run(&next, "py-session", Some("py-user")).await.unwrap(), 2);
    assert!(db.get_run("py-run-1", Some("someone-else")).await.unwrap().is_none());
}

// ----- Job queue ------------------------------------------------------------------------------

fn queued_job(id: &str, user: Option<&str>, key: Option<&str>) -> agno_core::Job {
    let mut job = agno_core::Job::agent_run(id, "agent-1", format!("session-{id}"), json!({"message": id}));
    job.user_id = user.map(str::to_owned);
    job.idempotency_key = key.map(str::to_owned);
    job
}

/// The next notification on `listener`, or `None` within half a second.
async fn next_notification(listener: &mut sqlx::postgres::PgListener) -> Option<(String, String)> {
    let wait = tokio::time::timeout(std::time::Duration::from_millis(500), listener.recv()).await.ok()?;
    let n = wait.unwrap();
    Some((n.channel().to_owned(), n.payload().to_owned()))
}

#[tokio::test]
async fn an_accepted_enqueue_notifies_the_jobs_channel() {
    if !agno_testkit::services::postgres("an_accepted_enqueue_notifies_the_jobs_channel") {
        return;
    }
    use agno_core::{Enqueued, JobStatus, JobStore};
    let scratch = Scratch::new("jobs_notify");
    let db = PostgresDb::connect_with(&url(), TableNames::default(), &scratch.name).await.unwrap();
    db.create_tables().await.unwrap();
    let channel = db.jobs_channel();
    assert_eq!(channel, format!("{}_agno_jobs", scratch.name));
    assert!(channel.ends_with(PostgresDb::JOBS_CHANNEL_SUFFIX));
    let mut listener = sqlx::postgres::PgListener::connect(&url()).await.unwrap();
    listener.listen(&channel).await.unwrap();

    let first = queued_job("n1", Some("u1"), Some("key"));
    assert!(matches!(db.enqueue_job(&first, 0).await.unwrap(), Enqueued::Accepted(_)));
    assert_eq!(next_notification(&mut listener).await, Some((channel.clone(), "n1".to_owned())));
    // Nothing was queued: no wake-up.
    let dup = queued_job("n2", Some("u1"), Some("key"));
    assert!(matches!(db.enqueue_job(&dup, 0).await.unwrap(), Enqueued::Duplicate(_)));
    assert_eq!(db.enqueue_job(&queued_job("n3", None, None), 1).await.unwrap(), Enqueued::QueueFull);
    assert!(db.enqueue_job(&queued_job("n1", None, None), 0).await.is_err());
    assert_eq!(next_notification(&mut listener).await, None);
    // An operator requeue makes a job claimable again: announced too.
    let now = agno_core::now_epoch_secs();
    let claimed = db.claim_job("w", 60, now).await.unwrap().expect("n1");
    let failed = agno_core::JobOutcome::Settled(JobStatus::Failed, Some("boom".into()));
    assert!(db.finish_job(&agno_core::JobLease::new("n1", "w", claimed.attempt), &failed, now).await.unwrap());
    // The end of an attempt is announced to the run's tails, not as claimable work.
    assert_eq!(next_notification(&mut listener).await, Some((channel.clone(), "events:n1".to_owned())));
    assert_eq!(next_notification(&mut listener).await, None);
    assert!(db.requeue_job("n1", now).await.unwrap());
    assert_eq!(next_notification(&mut listener).await, Some((channel.clone(), "n1".to_owned())));

    // A schema name at the 63-byte limit: the channel is cut to fit and still reachable.
    let long = Scratch { name: format!("agno_pgtest_jobs_long_{}", "x".repeat(41)) };
    assert_eq!(long.name.len(), 63);
    let db = PostgresDb::connect_with(&url(), TableNames::default(), &long.name).await.unwrap();
    db.create_tables().await.unwrap();
    let channel = db.jobs_channel();
    assert_eq!(channel, long.name);
    listener.listen(&channel).await.unwrap();
    assert!(matches!(db.enqueue_job(&queued_job("l1", None, None), 0).await.unwrap(), Enqueued::Accepted(_)));
    assert_eq!(next_notification(&mut listener).await, Some((channel, "l1".to_owned())));
}

#[tokio::test]
async fn a_depth_bound_holds_under_concurrent_enqueues() {
    if !agno_testkit::services::postgres("a_depth_bound_holds_under_concurrent_enqueues") {
        return;
    }
    use agno_core::{Enqueued, JobStore};
    let scratch = Scratch::new("jobs_depth");
    let db = PostgresDb::connect_with(&url(), TableNames::default(), &scratch.name).await.unwrap();
    db.create_tables().await.unwrap();
    let db = std::sync::Arc::new(db);
    let mut tasks = Vec::new();
    for i in 0..30 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move { db.enqueue_job(&queued_job(&format!("d{i}"), None, None), 5).await }));
    }
    let mut accepted = 0;
    for t in tasks {
        match t.await.unwrap().unwrap() {
            Enqueued::Accepted(_) => accepted += 1,
            Enqueued::QueueFull => {}
            Enqueued::Duplicate(j) => panic!("no key, no duplicate: {}", j.id),
        }
    }
    assert_eq!(accepted, 5, "exactly max_depth jobs queued");
}

/// A worker's run write checks its lease and writes in one transaction: while the write waits (on
/// a session row another connection has locked), the job cannot be taken over, and once it lands
/// the takeover follows. A check-then-write would let the claim through while the write was
/// still pending, and the stale write would land after the takeover.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_takeover_while_a_claimed_run_write_is_in_flight() {
    if !agno_testkit::services::postgres("no_takeover_while_a_claimed_run_write_is_in_flight") {
        return;
    }
    use agno_core::{JobLease, JobStore, RunStatus, RunWrite};
    let scratch = Scratch::new("jobs_fence");
    let db = PostgresDb::connect_with(&url(), TableNames::default(), &scratch.name).await.unwrap();
    db.create_tables().await.unwrap();
    let db = std::sync::Arc::new(db);
    let now = agno_core::now_epoch_secs();
    let mut job = queued_job("fenced", None, None);
    job.max_attempts = 2;
    db.enqueue_job(&job, 0).await.unwrap();
    // Claimed at the time after the enqueue (the job is available from when it was made, which
    // may be a second after `now`).
    let claimed = db.claim_job("old", 60, agno_core::now_epoch_secs()).await.unwrap().unwrap();
    let session = AgentSession::new(&claimed.session_id);
    db.upsert_session(&session, &StateUpdate::Replace).await.unwrap();

    // Another connection holds the session row: the next session write waits for it.
    let mut blocker = conn().await;
    exec(&mut blocker, "BEGIN").await;
    let lock = format!("SELECT 1 FROM \"{}\".agno_sessions WHERE session_id = $1 FOR UPDATE", scratch.name);
    sqlx::query(sqlx::AssertSqlSafe(lock)).bind(&claimed.session_id).execute(&mut blocker).await.unwrap();

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
    // Wait until the write is blocked on the row lock.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut probe = conn().await;
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype IN ('transactionid', 'tuple')",
        )
        .fetch_one(&mut probe)
        .await
        .unwrap();
        if waiting > 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the run write never waited on the session row");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(db.claim_job("new", 60, now + 100).await.unwrap().is_none(), "no takeover while the write is in flight");

    exec(&mut blocker, "COMMIT").await;
    assert!(write.await.unwrap(), "the write of the lease holder lands");
    let taken = db.claim_job("new", 60, now + 100).await.unwrap().expect("taken over once the write ended");
    assert_eq!(taken.attempt, 2);
    assert_eq!(db.get_run("fenced", None).await.unwrap().unwrap().content, Some(json!("old")));
    let stale = RunOutput::new("fenced", &claimed.session_id);
    let lease = JobLease { job_id: "fenced".into(), worker_id: "old".into(), attempt: 1 };
    let write = RunWrite { session: &session, state: &StateUpdate::Replace, run: &stale, user_id: None };
    assert!(!db.save_claimed_run(&lease, write, now + 101).await.unwrap(), "and the old owner is fenced out");
}

/// A claimed run's writes take PostgreSQL's short path (the lease check, the session and the run
/// in one statement) only where it writes what the generic transaction would: a session whose
/// `session_data` a client stored double-encoded (a JSON string) takes the generic write, which
/// reads the state out of the text, and so does a session deleted while the run ran (written
/// again, with the run).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claimed_run_writes_fall_back_where_the_short_path_cannot_write() {
    if !agno_testkit::services::postgres("claimed_run_writes_fall_back_where_the_short_path_cannot_write") {
        return;
    }
    use agno_core::{JobLease, JobStore, PendingRun, RunStatus, RunWrite};
    let scratch = Scratch::new("claimed_fallback");
    let db = PostgresDb::connect_with(&url(), TableNames::default(), &scratch.name).await.unwrap();
    db.create_tables().await.unwrap();
    let now = agno_core::now_epoch_secs();
    let mut c = conn().await;
    for (n, how) in ["double-encoded", "deleted"].into_iter().enumerate() {
        let job = queued_job(&format!("fallback-{n}"), Some("u1"), None);
        let mut session = AgentSession::new(&job.session_id);
        session.user_id = Some("u1".to_owned());
        let mut pending = RunOutput::new(&job.id, &job.session_id);
        pending.status = RunStatus::Pending;
        db.enqueue_run(&job, 0, PendingRun { session: &session, run: &pending }).await.unwrap();
        // Claimed at the time after the enqueue: a second that ticks in between leaves the job
        // not yet available at `now` (CI caught it).
        let claimed = db.claim_job("w", 60, agno_core::now_epoch_secs()).await.unwrap().unwrap();
        let lease = JobLease::new(&claimed.id, "w", claimed.attempt);
        let t = format!("\"{}\".agno_sessions", scratch.name);
        match how {
            "double-encoded" => {
                let text = r#"{"session_state": {"a": 1}, "session_metrics": {"input_tokens": 5}}"#;
                let sql = format!("UPDATE {t} SET session_data = to_jsonb($1::text) WHERE session_id = $2");
                sqlx::query(sqlx::AssertSqlSafe(sql)).bind(text).bind(&job.session_id).execute(&mut c).await.unwrap();
            }
            _ => {
                let sql = format!("DELETE FROM {t} WHERE session_id = $1");
                sqlx::query(sqlx::AssertSqlSafe(sql)).bind(&job.session_id).execute(&mut c).await.unwrap();
            }
        }
        let mut run = RunOutput::new(&job.id, &job.session_id);
        run.status = RunStatus::Running;
        let keep = StateUpdate::keep();
        let write = RunWrite { session: &session, state: &keep, run: &run, user_id: Some("u1") };
        assert!(db.save_claimed_run(&lease, write, now + 1).await.unwrap(), "{how}: first write");
        let stored = db.get_session(&job.session_id, Some("u1"), None).await.unwrap().expect("the session");
        let state = stored.session_state().cloned().unwrap_or_default();
        let runs = stored.runs.clone().unwrap_or_default();
        assert_eq!(runs.iter().map(|r| r.status).collect::<Vec<_>>(), vec![RunStatus::Running], "{how}");
        if how == "double-encoded" {
            assert_eq!(state.get("a"), Some(&json!(1)), "the state read out of the text is kept");
            let sql = format!("SELECT jsonb_typeof(session_data) FROM {t} WHERE session_id = $1");
            let kind: String =
                sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(&job.session_id).fetch_one(&mut c).await.unwrap();
            assert_eq!(kind, "object", "and written back as an object");
        }
        let mut mine = session.clone();
        mine.set_session_state(serde_json::Map::from_iter([("b".to_owned(), json!(2))]));
        run.status = RunStatus::Completed;
        let merge = StateUpdate::Merge {
            set: serde_json::Map::from_iter([("b".to_owned(), json!(2))]),
            removed: Vec::new(),
            metrics: None,
        };
        let write = RunWrite { session: &mine, state: &merge, run: &run, user_id: Some("u1") };
        assert!(db.save_claimed_run(&lease, write, now + 2).await.unwrap(), "{how}: last write");
        let stored = db.get_session(&job.session_id, Some("u1"), None).await.unwrap().expect("the session");
        let state = stored.session_state().cloned().unwrap_or_default();
        assert_eq!(state.get("b"), Some(&json!(2)), "{how}");
        assert_eq!(state.get("a").is_some(), how == "double-encoded", "{how}: {state:?}");
        let runs = stored.runs.unwrap_or_default();
        assert_eq!(runs.iter().map(|r| r.status).collect::<Vec<_>>(), vec![RunStatus::Completed], "{how}");
    }
}

/// A claimed run's merges (read without a lock, written only if the session is unchanged) lose
/// nothing to concurrent merges of the same session by other runs: every key either side set is
/// in the stored state at the end, and the run's row is the claimed run's last write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claimed_merges_lose_nothing_to_concurrent_merges_of_the_session() {
    if !agno_testkit::services::postgres("claimed_merges_lose_nothing_to_concurrent_merges_of_the_session") {
        return;
    }
    use agno_core::{JobLease, JobStore, PendingRun, RunStatus, RunWrite};
    let scratch = Scratch::new("claimed_merges");
    let db = std::sync::Arc::new(PostgresDb::connect_with(&url(), TableNames::default(), &scratch.name).await.unwrap());
    db.create_tables().await.unwrap();
    let job = queued_job("merging", Some("u1"), None);
    let mut session = AgentSession::new(&job.session_id);
    session.user_id = Some("u1".to_owned());
    let mut pending = RunOutput::new(&job.id, &job.session_id);
    pending.status = RunStatus::Pending;
    db.enqueue_run(&job, 0, PendingRun { session: &session, run: &pending }).await.unwrap();
    let claimed = db.claim_job("w", 60, agno_core::now_epoch_secs()).await.unwrap().expect("claimed");
    let lease = JobLease::new(&claimed.id, "w", claimed.attempt);
    let merge = |key: String| StateUpdate::Merge {
        set: serde_json::Map::from_iter([(key, json!(true))]),
        removed: Vec::new(),
        metrics: None,
    };
    const N: usize = 40;
    let claimed_side = tokio::spawn({
        let (db, session, job_id) = (db.clone(), session.clone(), job.id.clone());
        async move {
            for i in 0..N {
                let mut run = RunOutput::new(&job_id, &session.session_id);
                run.status = RunStatus::Running;
                run.content = Some(json!(i));
                let state = merge(format!("claimed-{i}"));
                let write = RunWrite { session: &session, state: &state, run: &run, user_id: Some("u1") };
                let now = agno_core::now_epoch_secs();
                assert!(db.save_claimed_run(&lease, write, now).await.unwrap(), "claimed write {i}");
            }
        }
    });
    let other_side = tokio::spawn({
        let (db, session) = (db.clone(), session.clone());
        async move {
            for i in 0..N {
                let mut run = RunOutput::new(format!("other-{i}"), &session.session_id);
                run.status = RunStatus::Completed;
                let state = merge(format!("other-{i}"));
                let write = RunWrite { session: &session, state: &state, run: &run, user_id: Some("u1") };
                db.save_run_write(write).await.unwrap();
            }
        }
    });
    claimed_side.await.unwrap();
    other_side.await.unwrap();
    let stored = db.get_session(&job.session_id, Some("u1"), None).await.unwrap().expect("the session");
    let state = stored.session_state().cloned().unwrap_or_default();
    let missing: Vec<String> = (0..N)
        .flat_map(|i| [format!("claimed-{i}"), format!("other-{i}")])
        .filter(|k| state.get(k) != Some(&json!(true)))
        .collect();
    assert!(missing.is_empty(), "merges lost: {missing:?}");
    let run = db.get_run(&job.id, Some("u1")).await.unwrap().expect("the claimed run");
    assert_eq!(run.content, Some(json!(N - 1)));
}

/// Python Agno 3.1 on Postgres sharing the job queue: it enqueues, reads, claims and completes.
const PY_JOBS_PROBE: &str = r#"


if mode == "write":
    out = db.enqueue_job({"id": "py-job", "component_type": "agent", "job_type": "run", "deployment_id": None,
        "component_id": "py-agent", "session_id": "py-session", "user_id": "py-user",
        "payload": {"message": "from python", "nested": {"n": [1, 2]}}, "status": "queued", "attempt": 0,
        "max_attempts": 3, "idempotency_key": "py-key", "available_at": 0, "locked_by": None, "locked_at": None,
        "error": None, "created_at": 1700000000, "updated_at": 1700000000, "completed_at": None})
    print(json.dumps({"accepted": out["accepted"]}))
else:
    job = db.get_job("rs-job")
    dup = db.enqueue_job({**job, "id": "py-dup"})
    claimed = db.claim_job("py-worker", lock_grace_seconds=60)
    done = db.complete_job(claimed["id"], "py-worker", claimed["attempt"], "completed") if claimed else False
    print(json.dumps({"job": job, "dup": dup["reason"], "dup_id": dup["job"]["id"], "claimed": claimed,
        "done": done}))
"#;

#[tokio::test]
async fn python_agno_and_agno_rs_share_the_job_queue() {
    if !agno_testkit::services::postgres("python_agno_and_agno_rs_share_the_job_queue") {
        return;
    }
    use agno_core::{Enqueued, JobOutcome, JobStatus, JobStore};
    let scratch = Scratch::new("jobs_interop");
    // Python Agno enqueues first, creating the table its own way.
    let Some(wrote) = py_script(PY_JOBS_PROBE, &["write", &scratch.name]) else { return };
    assert_eq!(wrote["accepted"], true);
    let db = PostgresDb::connect_with(&url(), TableNames::default(), &scratch.name).await.unwrap();
    db.create_tables().await.unwrap();
    let py = db.get_job("py-job", Some("py-user")).await.unwrap().expect("python's job");
    assert_eq!((py.status, py.attempt, py.max_attempts), (JobStatus::Queued, 0, 3));
    assert_eq!(py.payload, json!({"message": "from python", "nested": {"n": [1, 2]}}));
    assert_eq!((py.component_id.as_str(), py.idempotency_key.as_deref()), ("py-agent", Some("py-key")));
    // Python's key is taken for its user.
    match db.enqueue_job(&queued_job("rs-dup", Some("py-user"), Some("py-key")), 0).await.unwrap() {
        Enqueued::Duplicate(j) => assert_eq!(j.id, "py-job"),
        other => panic!("expected python's job, got {other:?}"),
    }
    let now = agno_core::now_epoch_secs();
    let claimed = db.claim_job("rs-worker", 60, now).await.unwrap().expect("python's job is claimable");
    assert_eq!((claimed.id.as_str(), claimed.attempt), ("py-job", 1));
    let done = JobOutcome::Settled(JobStatus::Completed, None);
    assert!(db.finish_job(&agno_core::JobLease::new("py-job", "rs-worker", 1), &done, now).await.unwrap());

    // agno-rs enqueues, Python Agno reads, dedups, claims and completes.
    let mut mine = queued_job("rs-job", Some("rs-user"), Some("rs-key"));
    mine.payload = json!({"message": "from rust", "nested": {"n": [1, 2]}});
    mine.max_attempts = 2;
    mine.available_at = 0;
    assert!(matches!(db.enqueue_job(&mine, 0).await.unwrap(), Enqueued::Accepted(_)));
    let seen = py_script(PY_JOBS_PROBE, &["read", &scratch.name]).unwrap();
    assert_eq!(seen["job"]["payload"], json!({"message": "from rust", "nested": {"n": [1, 2]}}));
    assert_eq!(seen["job"]["status"], "queued");
    assert_eq!(seen["job"]["max_attempts"], 2);
    assert_eq!((seen["dup"].clone(), seen["dup_id"].clone()), (json!("duplicate"), json!("rs-job")));
    assert_eq!(seen["claimed"]["id"], "rs-job");
    assert_eq!(seen["claimed"]["attempt"], 1);
    assert_eq!(seen["done"], true);
    let j = db.get_job("rs-job", None).await.unwrap().expect("rs-job");
    assert_eq!((j.status, j.locked_by, j.attempt), (JobStatus::Completed, None, 1));
}

/// Runs `scripts/interop/agno_interop.py <mode> <url?schema=S> <session>`; its last JSON line.
fn interop_probe(mode: &str, schema: &str, session_id: &str) -> Option<Value> {
    let py = agno_testkit::agno_python("the Python Agno workflow interop check on Postgres")?;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/agno_interop.py");
    let sep = if url().contains('?') { '&' } else { '?' };
    let target = format!("{}{sep}schema={schema}", url());
    Some(python_json(Command::new(py).arg(script).args([mode, &target, session_id])))
}

/// Workflow and team sessions written by Python Agno 3.1 (a bare workflow `input`, `step_results`,
/// member runs with `parent_run_id` and in `member_responses`) read back as Agno reads them.
#[tokio::test]
async fn agno_rs_reads_workflow_and_team_sessions_python_agno_wrote() {
    if !agno_testkit::services::postgres("agno_rs_reads_workflow_and_team_sessions_python_agno_wrote") {
        return;
    }
    let scratch = Scratch::new("wf_interop");
    let Some(written) = interop_probe("write-workflow", &scratch.name, "py-wf") else { return };
    assert_eq!(written["workflow_run"]["input"], "hello world");
    let theirs = interop_probe("read-workflow", &scratch.name, "py-wf").unwrap();
    let db = PostgresDb::connect_with(&url(), TableNames::default(), &scratch.name).await.unwrap();
    let check = |ours: &[RunOutput], theirs: &Value| {
        let theirs = theirs.as_array().unwrap();
        assert_eq!(ours.len(), theirs.len());
        for (ours, theirs) in ours.iter().zip(theirs) {
            assert_eq!(&serde_json::to_value(ours).unwrap(), theirs, "run {}", ours.id());
        }
    };
    let session = db.get_session("py-wf", Some("py-user"), None).await.unwrap().expect("workflow session");
    check(session.runs(), &theirs["workflow_runs"]);
    assert_eq!(session.runs()[0].input.as_ref().unwrap().as_text(), "hello world");
    let page =
        db.get_runs(&agno_core::RunQuery { session_id: Some("py-wf".into()), ..Default::default() }).await.unwrap();
    check(&page.runs, &theirs["workflow_runs"]);
    let team = db.get_session("py-wf-team", Some("py-user"), None).await.unwrap().expect("team session");
    check(team.runs(), &theirs["team_runs"]);
    let member = db.get_run("py-member-run", Some("py-user")).await.unwrap().unwrap();
    assert_eq!(member.parent_run_id.as_deref(), Some("py-team-run"));
    // Rewritten by agno-rs, Python reads the same.
    for run in session.runs().iter().chain(team.runs()) {
        db.upsert_run(run, run.session_id.as_deref().unwrap(), Some("py-user")).await.unwrap();
    }
    let again = interop_probe("read-workflow", &scratch.name, "py-wf").unwrap();
    assert_eq!(again["workflow_runs"], theirs["workflow_runs"]);
    assert_eq!(again["team_runs"], theirs["team_runs"]);
}
