//! `RedisDb` beyond the conformance suite: the key layout Python Agno 3.1 uses (both directions),
//! the v2 -> v3 migration of legacy `runs` fields (content from fixtures/legacy_v2), URL handling
//! and an unreachable server. Needs Redis on 127.0.0.1:6379 (`AGNO_TEST_REDIS_URL`); every test
//! uses its own key prefix and deletes its keys.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use agno_core::{
    AgentSession, DbErrorKind, MemoryQuery, MemoryStore, RunOutput, RunQuery, RunStatus, RunStore, SchemaStore,
    SessionStore, StateUpdate,
};
use agno_db::{Migrate, MigrationManager, MigrationOptions, RedisDb};
use serde_json::{Value, json};

fn url() -> String {
    std::env::var("AGNO_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".to_owned())
}

fn unique_prefix(test: &str) -> String {
    format!("agno-rs-test-{test}-{}", agno_core::new_id())
}

async fn raw() -> redis::aio::MultiplexedConnection {
    redis::Client::open(url().as_str()).unwrap().get_multiplexed_async_connection().await.unwrap()
}

async fn raw_get(key: &str) -> Option<String> {
    redis::cmd("GET").arg(key).query_async(&mut raw().await).await.unwrap()
}

async fn raw_set(key: &str, value: &str) {
    redis::cmd("SET").arg(key).arg(value).query_async::<()>(&mut raw().await).await.unwrap();
}

async fn raw_keys(prefix: &str) -> Vec<String> {
    let mut keys: Vec<String> =
        redis::cmd("KEYS").arg(format!("{prefix}:*")).query_async(&mut raw().await).await.unwrap();
    keys.sort();
    keys
}

async fn raw_json(key: &str) -> Value {
    serde_json::from_str(&raw_get(key).await.unwrap_or_else(|| panic!("{key} missing"))).unwrap()
}

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/legacy_v2")
}

fn expected() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture_dir().join("expected.json")).unwrap()).unwrap()
}

/// Writes the fixture's sessions and memories as Agno 2.x's `RedisDb` stored them: one document
/// per session with the whole run list in its `runs` field, plus the index sets it kept.
async fn write_v2(prefix: &str) {
    let expected = expected();
    let mut conn = raw().await;
    for s in expected["sessions"].as_array().unwrap() {
        let id = s["session_id"].as_str().unwrap();
        let doc = json!({
            "session_id": id, "session_type": "agent", "agent_id": s["agent_id"], "team_id": null,
            "workflow_id": null, "user_id": s["user_id"], "agent_data": s["agent_data"], "team_data": null,
            "workflow_data": null, "session_data": s["session_data"], "summary": s["summary"],
            "metadata": s["metadata"], "runs": s["runs"], "created_at": s["created_at"], "updated_at": s["updated_at"],
        });
        redis::cmd("SET")
            .arg(format!("{prefix}:sessions:{id}"))
            .arg(doc.to_string())
            .query_async::<()>(&mut conn)
            .await
            .unwrap();
        for field in ["user_id", "agent_id"] {
            if let Some(v) = s[field].as_str() {
                redis::cmd("SADD")
                    .arg(format!("{prefix}:sessions:index:{field}:{v}"))
                    .arg(id)
                    .query_async::<()>(&mut conn)
                    .await
                    .unwrap();
            }
        }
    }
    for m in expected["memories"].as_array().unwrap() {
        let id = m["memory_id"].as_str().unwrap();
        redis::cmd("SET")
            .arg(format!("{prefix}:memories:{id}"))
            .arg(m.to_string())
            .query_async::<()>(&mut conn)
            .await
            .unwrap();
    }
}

/// Compares what we read with what Agno 2.x read from the same data.
async fn assert_matches_agno(db: &RedisDb) {
    agno_testkit::legacy::assert_matches_agno(db, &agno_testkit::legacy::expected("expected.json")).await;
}

async fn has_legacy_field(prefix: &str, session_id: &str) -> bool {
    raw_json(&format!("{prefix}:sessions:{session_id}")).await.get("runs").is_some()
}

#[tokio::test]
async fn agno_2x_session_documents_migrate_to_run_keys_without_loss() {
    if !agno_testkit::services::redis("agno_2x_session_documents_migrate_to_run_keys_without_loss") {
        return;
    }
    let prefix = unique_prefix("legacy");
    write_v2(&prefix).await;
    let db = RedisDb::connect_with(&url(), &prefix).await.unwrap();
    // Before migrating, legacy sessions already read back in full (blob merge).
    assert_matches_agno(&db).await;
    let manager = MigrationManager::new(&db);
    let status = manager.status(None).await.unwrap();
    assert!(!status.is_current());
    assert_eq!(status.legacy_runs_pending, 16);
    let tables: Vec<&str> = status.tables.iter().map(|t| t.table.as_str()).collect();
    assert_eq!(tables, ["agno_sessions", "agno_memories"]);
    let sessions = &status.tables[0];
    assert_eq!(sessions.version, None, "Agno 2.x did not stamp redis");
    assert_eq!(sessions.pending, vec!["2.3.0", "2.5.0", "2.5.6", "3.0.0"]);

    let seen = std::sync::Mutex::new(Vec::new());
    manager.up(None, &|done, total| seen.lock().unwrap().push((done, total))).await.unwrap();
    assert_eq!(seen.into_inner().unwrap().last(), Some(&(5, 5)), "progress reported per batch");
    for table in ["agno_sessions", "agno_memories", "agno_runs"] {
        assert_eq!(db.get_latest_schema_version(table).await.unwrap().as_deref(), Some("3.0.0"), "{table}");
    }
    // Stamps are plain strings at Agno's key.
    assert_eq!(raw_get(&format!("{prefix}:agno_schema_versions:agno_sessions")).await.as_deref(), Some("3.0.0"));
    let after = manager.status(None).await.unwrap();
    assert!(after.is_current());
    assert_eq!(after.legacy_runs_pending, 0);
    assert_eq!(db.get_runs(&RunQuery::default()).await.unwrap().runs.len(), 16);
    assert_matches_agno(&db).await;

    // Each run has its own key, shaped as Agno's migration writes it, and the session's sorted set.
    let bob_runs: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(format!("{prefix}:runs:by_session:sess-bob-1"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut raw().await)
        .await
        .unwrap();
    assert_eq!(bob_runs.iter().map(|(_, s)| *s).collect::<Vec<_>>(), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let row = raw_json(&format!("{prefix}:runs:{}", bob_runs[2].0)).await;
    assert_eq!(row["run_index"], json!(2));
    assert_eq!(row["session_id"], json!("sess-bob-1"));
    assert_eq!(row["user_id"], json!("bob"));
    assert_eq!(row["run_type"], json!("agent"));
    assert_eq!(row["status"], json!("COMPLETED"));
    assert_eq!(row["run_data"]["session_state"], json!({"count": 3}));
    // The legacy field is still there as a backup.
    assert!(has_legacy_field(&prefix, "sess-bob-1").await);

    // A second migration does nothing.
    let again = manager.up(None, &|_, _| {}).await.unwrap();
    assert!(again.is_current(), "nothing was pending the second time");
    assert_eq!(db.get_runs(&RunQuery::default()).await.unwrap().runs.len(), 16);

    // Cleanup removes the field once every legacy run has its key; reads are unchanged.
    let report = db.cleanup_legacy_runs(false).await.unwrap();
    assert!(report.removed);
    assert_eq!(report.missing_runs, 0);
    for s in expected()["sessions"].as_array().unwrap() {
        assert!(!has_legacy_field(&prefix, s["session_id"].as_str().unwrap()).await);
    }
    assert_matches_agno(&db).await;
    assert!(!db.cleanup_legacy_runs(false).await.unwrap().removed, "nothing left to clean");
    db.delete_all_keys().await.unwrap();
}

#[tokio::test]
async fn a_migration_failing_halfway_keeps_no_stamp_and_loses_nothing() {
    if !agno_testkit::services::redis("a_migration_failing_halfway_keeps_no_stamp_and_loses_nothing") {
        return;
    }
    let prefix = unique_prefix("legacy-fail");
    write_v2(&prefix).await;
    let db = RedisDb::connect_with(&url(), &prefix).await.unwrap();
    let failing =
        MigrationManager::new(&db).with_options(MigrationOptions { batch_size: 2, fail_after_batches: Some(1) });
    let err = failing.up(None, &|_, _| {}).await.unwrap_err();
    assert!(err.to_string().contains("migration of agno_sessions to 3.0.0 failed"), "{err}");
    assert_eq!(db.get_latest_schema_version("agno_sessions").await.unwrap().as_deref(), Some("2.5.6"));
    // The first batch (sess-alice-1 and sess-alice-2) was copied; the rest is still pending.
    assert_eq!(db.get_runs(&RunQuery::default()).await.unwrap().runs.len(), 4);
    assert_eq!(db.legacy_runs_pending().await.unwrap(), 12);
    assert_matches_agno(&db).await;
    // Rerunning completes.
    MigrationManager::new(&db).up(None, &|_, _| {}).await.unwrap();
    assert_eq!(db.get_latest_schema_version("agno_sessions").await.unwrap().as_deref(), Some("3.0.0"));
    assert_eq!(db.get_runs(&RunQuery::default()).await.unwrap().runs.len(), 16);
    assert_eq!(db.legacy_runs_pending().await.unwrap(), 0);
    assert_matches_agno(&db).await;
    // Deleting a migrated run also drops it from the backup field, so it does not come back.
    let first = db.get_session("sess-alice-1", None, None).await.unwrap().unwrap().runs()[0].id().to_owned();
    assert!(!db.delete_run(&first, Some("bob")).await.unwrap(), "not bob's run");
    assert!(db.delete_run(&first, Some("alice")).await.unwrap());
    let ids: Vec<String> = db
        .get_session("sess-alice-1", None, None)
        .await
        .unwrap()
        .unwrap()
        .runs()
        .iter()
        .map(|r| r.id().to_owned())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(!ids.contains(&first));
    let blob = raw_json(&format!("{prefix}:sessions:sess-alice-1")).await["runs"].clone();
    assert_eq!(blob.as_array().unwrap().len(), 2);
    db.delete_all_keys().await.unwrap();
}

#[tokio::test]
async fn cleanup_refuses_to_lose_uncopied_runs_unless_forced() {
    if !agno_testkit::services::redis("cleanup_refuses_to_lose_uncopied_runs_unless_forced") {
        return;
    }
    let prefix = unique_prefix("legacy-cleanup");
    write_v2(&prefix).await;
    let db = RedisDb::connect_with(&url(), &prefix).await.unwrap();
    let err = db.cleanup_legacy_runs(false).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    assert!(err.to_string().contains("16 legacy runs"), "{err}");
    assert!(has_legacy_field(&prefix, "sess-alice-1").await, "nothing removed");
    assert_matches_agno(&db).await;
    let forced = db.cleanup_legacy_runs(true).await.unwrap();
    assert!(forced.removed);
    assert_eq!(forced.missing_runs, 16);
    assert!(db.get_session("sess-alice-1", None, None).await.unwrap().unwrap().runs().is_empty());
    db.delete_all_keys().await.unwrap();
}

#[tokio::test]
async fn an_unmigrated_redis_is_refused_at_startup() {
    if !agno_testkit::services::redis("an_unmigrated_redis_is_refused_at_startup") {
        return;
    }
    let prefix = unique_prefix("legacy-open");
    write_v2(&prefix).await;
    let url = format!("{}?prefix={prefix}", url());
    let err = agno_db::open_ready(&url).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::SchemaTooOld);
    assert!(err.to_string().contains("agno_sessions (sessions): unstamped -> 2.3.0"), "{err}");
    RedisDb::connect_with(&self::url(), &prefix).await.unwrap().delete_all_keys().await.unwrap();
}

#[tokio::test]
async fn a_fresh_prefix_opens_ready_and_is_stamped() {
    if !agno_testkit::services::redis("a_fresh_prefix_opens_ready_and_is_stamped") {
        return;
    }
    let prefix = unique_prefix("fresh");
    let db = agno_db::open_ready(&format!("{}?prefix={prefix}", url())).await.unwrap();
    assert_eq!(db.get_latest_schema_version("agno_sessions").await.unwrap().as_deref(), Some("3.0.0"));
    let stamps: Vec<String> = ["metrics", "runs", "schedule_runs", "schedules", "sessions"]
        .iter()
        .map(|t| format!("{prefix}:agno_schema_versions:agno_{t}"))
        .collect();
    assert_eq!(raw_keys(&prefix).await, stamps, "only the stamps");
    RedisDb::connect_with(&url(), &prefix).await.unwrap().delete_all_keys().await.unwrap();
}

fn run(id: &str, session_id: &str, status: RunStatus) -> RunOutput {
    let mut r = RunOutput::new(id, session_id);
    r.agent_id = Some("a1".to_owned());
    r.status = status;
    r.created_at = 5;
    r.content = Some(json!("hi"));
    r
}

#[tokio::test]
async fn keys_are_laid_out_as_python_agno_lays_them_out() {
    if !agno_testkit::services::redis("keys_are_laid_out_as_python_agno_lays_them_out") {
        return;
    }
    let prefix = unique_prefix("layout");
    let db = RedisDb::connect(&format!("{}?prefix={prefix}", url())).await.unwrap();
    assert_eq!(db.prefix(), prefix);
    let mut s = AgentSession::new("s1");
    s.agent_id = Some("a1".to_owned());
    s.user_id = Some("u1".to_owned());
    s.created_at = Some(100);
    s.set_session_state(serde_json::from_value(json!({"x": 1})).unwrap());
    db.upsert_session(&s, &StateUpdate::Replace).await.unwrap();
    assert_eq!(db.upsert_run(&run("r1", "s1", RunStatus::Running), "s1", Some("u1")).await.unwrap(), 0);
    assert_eq!(db.upsert_run(&run("r1", "s1", RunStatus::Completed), "s1", Some("u1")).await.unwrap(), 0);

    let doc = raw_json(&format!("{prefix}:sessions:s1")).await;
    let keys: Vec<&str> = doc.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "session_id",
            "session_type",
            "agent_id",
            "team_id",
            "workflow_id",
            "user_id",
            "agent_data",
            "team_data",
            "workflow_data",
            "session_data",
            "summary",
            "metadata",
            "created_at",
            "updated_at"
        ]
    );
    assert_eq!(doc["session_type"], json!("agent"));
    assert_eq!(doc["session_data"], json!({"session_state": {"x": 1}}));
    assert_eq!(doc["created_at"], json!(100));

    let row = raw_json(&format!("{prefix}:runs:r1")).await;
    let keys: Vec<&str> = row.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, common::RUN_ROW_KEYS);
    assert_eq!(row["run_index"], json!(0));
    assert_eq!(row["status"], json!("COMPLETED"));
    assert_eq!(row["run_data"]["content"], json!("hi"));

    let mut conn = raw().await;
    let zset: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(format!("{prefix}:runs:by_session:s1"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(zset, [("r1".to_owned(), 0.0)]);
    let mut sets = BTreeMap::new();
    for key in raw_keys(&prefix).await.into_iter().filter(|k| k.contains(":index:")) {
        let members: Vec<String> = redis::cmd("SMEMBERS").arg(&key).query_async(&mut conn).await.unwrap();
        sets.insert(key[prefix.len() + 1..].to_owned(), members);
    }
    let want: BTreeMap<String, Vec<String>> = [
        "runs:index:agent_id:a1",
        "runs:index:run_type:agent",
        "runs:index:session_id:s1",
        "runs:index:status:COMPLETED",
        "runs:index:user_id:u1",
    ]
    .iter()
    .map(|k| ((*k).to_owned(), vec!["r1".to_owned()]))
    .chain(
        ["sessions:index:agent_id:a1", "sessions:index:session_type:agent", "sessions:index:user_id:u1"]
            .iter()
            .map(|k| ((*k).to_owned(), vec!["s1".to_owned()])),
    )
    .collect();
    assert_eq!(sets, want, "the RUNNING index entry went with the update");

    // Deleting the session removes its runs, the run set and every index entry.
    assert!(db.delete_session("s1", Some("u1")).await.unwrap());
    assert_eq!(raw_keys(&prefix).await, Vec::<String>::new());
}

/// Keys exactly as Python Agno 3.1.10's `RedisDb` wrote them (captured from `upsert_session`,
/// `upsert_run(run_index=0)` and `upsert_schema_version`, Python's JSON separators included).
#[tokio::test]
async fn keys_written_by_python_agno_read_back() {
    if !agno_testkit::services::redis("keys_written_by_python_agno_read_back") {
        return;
    }
    let prefix = unique_prefix("python");
    raw_set(
        &format!("{prefix}:sessions:s1"),
        r#"{"session_id": "s1", "session_type": "agent", "agent_id": "a1", "team_id": null, "workflow_id": null, "user_id": "u1", "agent_data": null, "team_data": null, "workflow_data": null, "session_data": {"session_state": {"x": 1}}, "summary": null, "metadata": null, "created_at": 100, "updated_at": 1796006857}"#,
    )
    .await;
    raw_set(
        &format!("{prefix}:runs:r1"),
        r#"{"run_id": "r1", "session_id": "s1", "run_type": "agent", "agent_id": "a1", "team_id": null, "workflow_id": null, "user_id": "u1", "parent_run_id": null, "status": "COMPLETED", "run_index": 0, "run_data": {"run_id": "r1", "agent_id": "a1", "session_id": "s1", "content": "hi", "content_type": "str", "created_at": 5, "status": "COMPLETED"}, "created_at": 5, "updated_at": 1796006857}"#,
    )
    .await;
    redis::cmd("ZADD")
        .arg(format!("{prefix}:runs:by_session:s1"))
        .arg(0)
        .arg("r1")
        .query_async::<()>(&mut raw().await)
        .await
        .unwrap();
    raw_set(&format!("{prefix}:agno_schema_versions:agno_sessions"), "3.0.0").await;
    let db = RedisDb::connect_with(&url(), &prefix).await.unwrap();
    assert_eq!(db.get_latest_schema_version("agno_sessions").await.unwrap().as_deref(), Some("3.0.0"));
    let s = db.get_session("s1", Some("u1"), None).await.unwrap().unwrap();
    assert_eq!(s.session_state(), Some(&serde_json::from_value(json!({"x": 1})).unwrap()));
    assert_eq!(s.created_at, Some(100));
    assert_eq!(s.runs().iter().map(|r| r.content.clone()).collect::<Vec<_>>(), [Some(json!("hi"))]);
    // The next run of that session gets the next index; a Python row's owner is enforced.
    assert_eq!(db.upsert_run(&run("r2", "s1", RunStatus::Completed), "s1", Some("u1")).await.unwrap(), 1);
    let err = db.upsert_run(&run("r1", "s1", RunStatus::Completed), "s1", Some("u2")).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    let page = db.get_runs(&RunQuery { session_id: Some("s1".into()), ..RunQuery::default() }).await.unwrap();
    assert_eq!(page.runs.len(), 2);
    db.delete_all_keys().await.unwrap();
}

#[tokio::test]
async fn a_run_of_a_missing_session_is_refused() {
    if !agno_testkit::services::redis("a_run_of_a_missing_session_is_refused") {
        return;
    }
    let prefix = unique_prefix("orphan");
    let db = RedisDb::connect_with(&url(), &prefix).await.unwrap();
    let err = db.upsert_run(&run("r1", "nope", RunStatus::Completed), "nope", None).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    assert!(err.to_string().contains("session nope does not exist"), "{err}");
    assert_eq!(raw_keys(&prefix).await, Vec::<String>::new(), "nothing written");
}

#[tokio::test]
async fn an_unreachable_redis_is_unavailable_and_named() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("redis://127.0.0.1:{port}/0");
    let err = RedisDb::connect(&url).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Unavailable);
    assert!(err.to_string().contains(&format!("redis://127.0.0.1:{port}/0")), "{err}");
    // Through `open` too, and a password is never shown.
    let err = agno_db::open(&format!("redis://agno:s3cret@127.0.0.1:{port}/0")).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Unavailable);
    assert!(!err.to_string().contains("s3cret"), "{err}");
}

// ----- Memories -------------------------------------------------------------------------------

/// The members of every memory index set under `prefix`, by key (without the prefix).
async fn memory_index_sets(prefix: &str) -> BTreeMap<String, Vec<String>> {
    let mut conn = raw().await;
    let mut sets = BTreeMap::new();
    for key in raw_keys(prefix).await.into_iter().filter(|k| k.contains(":memories:index:")) {
        let mut members: Vec<String> = redis::cmd("SMEMBERS").arg(&key).query_async(&mut conn).await.unwrap();
        members.sort();
        sets.insert(key[prefix.len() + 1..].to_owned(), members);
    }
    sets
}

fn sets(entries: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
    entries.iter().map(|(k, v)| ((*k).to_owned(), v.iter().map(|m| (*m).to_owned()).collect())).collect()
}

#[tokio::test]
async fn memory_keys_are_laid_out_as_python_agno_lays_them_out() {
    if !agno_testkit::services::redis("memory_keys_are_laid_out_as_python_agno_lays_them_out") {
        return;
    }
    let prefix = unique_prefix("memory-layout");
    let db = RedisDb::connect_with(&url(), &prefix).await.unwrap();
    let mut m = common::memory("m1", Some("u1"), "likes otters");
    m.created_at = Some(100);
    m.input = Some("I like otters".to_owned());
    let stored = db.upsert_user_memory(&m).await.unwrap();
    assert_eq!(stored.created_at, Some(100));

    let doc = raw_json(&format!("{prefix}:memories:m1")).await;
    let keys: Vec<&str> = doc.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "user_id",
            "agent_id",
            "team_id",
            "memory_id",
            "memory",
            "topics",
            "input",
            "feedback",
            "created_at",
            "updated_at"
        ]
    );
    assert_eq!(doc["memory"], json!("likes otters"));
    assert_eq!(doc["topics"], json!(["animals"]));
    assert_eq!(doc["team_id"], Value::Null);
    assert_eq!(doc["created_at"], json!(100));
    assert_eq!(doc["updated_at"], json!(stored.updated_at.unwrap()));
    assert_eq!(
        memory_index_sets(&prefix).await,
        sets(&[("memories:index:agent_id:a1", &["m1"]), ("memories:index:user_id:u1", &["m1"])])
    );

    // An update moves the index entries of a changed field and keeps created_at.
    let mut changed = common::memory("m1", Some("u1"), "loves otters");
    changed.agent_id = Some("a2".to_owned());
    changed.team_id = Some("t1".to_owned());
    assert_eq!(db.upsert_user_memory(&changed).await.unwrap().created_at, Some(100));
    assert_eq!(raw_json(&format!("{prefix}:memories:m1")).await["created_at"], json!(100));
    assert_eq!(
        memory_index_sets(&prefix).await,
        sets(&[
            ("memories:index:agent_id:a2", &["m1"]),
            ("memories:index:team_id:t1", &["m1"]),
            ("memories:index:user_id:u1", &["m1"])
        ])
    );

    // Another user's write is refused and changes nothing.
    let before = raw_get(&format!("{prefix}:memories:m1")).await;
    let err = db.upsert_user_memory(&common::memory("m1", Some("u2"), "hijacked")).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    assert_eq!(raw_get(&format!("{prefix}:memories:m1")).await, before);

    // Deleting removes the document and its index entries; clearing touches only memory keys.
    db.upsert_user_memory(&common::memory("m2", Some("u1"), "x")).await.unwrap();
    assert!(db.delete_user_memory("m1", Some("u1")).await.unwrap());
    assert_eq!(
        memory_index_sets(&prefix).await,
        sets(&[("memories:index:agent_id:a1", &["m2"]), ("memories:index:user_id:u1", &["m2"])])
    );
    db.upsert_session(&AgentSession::new("s1"), &StateUpdate::Replace).await.unwrap();
    db.clear_memories().await.unwrap();
    assert_eq!(
        raw_keys(&prefix).await,
        [format!("{prefix}:sessions:index:session_type:agent"), format!("{prefix}:sessions:s1")]
    );
    db.delete_all_keys().await.unwrap();
}

/// Keys exactly as Python Agno 3.1.10's `RedisDb.upsert_user_memory` wrote them (captured,
/// Python's JSON separators included), and an Agno 2.x `to_dict()`-shaped document with ISO
/// timestamps.
#[tokio::test]
async fn memory_keys_written_by_python_agno_read_back() {
    if !agno_testkit::services::redis("memory_keys_written_by_python_agno_read_back") {
        return;
    }
    let prefix = unique_prefix("memory-python");
    raw_set(
        &format!("{prefix}:memories:m1"),
        r#"{"user_id": "ann", "agent_id": "a1", "team_id": null, "memory_id": "m1", "memory": "Ann likes otters ü", "topics": ["animals"], "input": "hi", "feedback": null, "created_at": 100, "updated_at": 1796009009}"#,
    )
    .await;
    raw_set(
        &format!("{prefix}:memories:m2"),
        r#"{"user_id": null, "agent_id": null, "team_id": null, "memory_id": "m2", "memory": "no owner", "topics": null, "input": null, "feedback": null, "created_at": 1796009009, "updated_at": 1796009009}"#,
    )
    .await;
    raw_set(
        &format!("{prefix}:memories:mem-bob-1"),
        r#"{"memory_id": "mem-bob-1", "memory": "Bob prefers short answers.", "topics": ["preferences"], "created_at": "2025-01-01T00:00:00", "updated_at": "2025-01-01T00:00:00", "input": "Keep it short.", "user_id": "bob", "agent_id": "chat-agent"}"#,
    )
    .await;
    let mut conn = raw().await;
    for (key, member) in [("agent_id:a1", "m1"), ("user_id:ann", "m1")] {
        redis::cmd("SADD")
            .arg(format!("{prefix}:memories:index:{key}"))
            .arg(member)
            .query_async::<()>(&mut conn)
            .await
            .unwrap();
    }
    let db = RedisDb::connect_with(&url(), &prefix).await.unwrap();
    let m1 = db.get_user_memory("m1", Some("ann")).await.unwrap().unwrap();
    assert_eq!(m1.memory, "Ann likes otters ü");
    assert_eq!(m1.topics, Some(vec!["animals".to_owned()]));
    assert_eq!((m1.input.as_deref(), m1.agent_id.as_deref()), (Some("hi"), Some("a1")));
    assert_eq!((m1.created_at, m1.updated_at), (Some(100), Some(1_796_009_009)));
    let bob = db.get_user_memory("mem-bob-1", None).await.unwrap().unwrap();
    assert_eq!((bob.created_at, bob.updated_at), (Some(1_735_689_600), Some(1_735_689_600)));
    let page = db.get_user_memories(&MemoryQuery::default()).await.unwrap();
    assert_eq!(page.total, 3);
    assert_eq!(db.get_all_memory_topics(None).await.unwrap(), ["animals", "preferences"]);
    let (stats, users) = db.get_user_memory_stats(None, None, None).await.unwrap();
    assert_eq!(users, 3, "ann, bob and the ownerless group");
    assert_eq!(stats[0].last_memory_updated_at, Some(1_796_009_009));
    // A Python memory's owner is enforced; its owner's update keeps created_at.
    let err = db.upsert_user_memory(&common::memory("m1", Some("bob"), "hijacked")).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    let updated = db.upsert_user_memory(&common::memory("m1", Some("ann"), "Ann loves otters")).await.unwrap();
    assert_eq!(updated.created_at, Some(100));
    assert_eq!(raw_json(&format!("{prefix}:memories:m1")).await["memory"], json!("Ann loves otters"));
    assert!(db.delete_user_memory("m1", Some("ann")).await.unwrap());
    assert!(memory_index_sets(&prefix).await.is_empty(), "Python's index entries went with the memory");
    db.delete_all_keys().await.unwrap();
}

/// The Python with Agno 3.1 (see [`agno_testkit::agno_python`]).
fn agno_python() -> Option<String> {
    agno_testkit::agno_python("the live Python Agno check on Redis")
}

/// Runs Python Agno's `RedisDb` on `prefix`: reads memory `rs-1` (as `bob`), rewrites its text,
/// writes memory `py-1` (of `ann`), and prints what it read as one JSON line. Uses the `redis`
/// package when installed, else a minimal RESP client standing in for it (only the commands
/// `RedisDb`'s memory methods send).
const PYTHON_REDIS_MEMORIES: &str = r#"
import json, socket, sys, types
from urllib.parse import urlparse
try:
    import redis
except ImportError:
    class _Conn:
        def __init__(self, url):
            u = urlparse(url)
            self.s = socket.create_connection((u.hostname or "127.0.0.1", u.port or 6379))
            self.f = self.s.makefile("rb")
            db = (u.path or "/0").strip("/") or "0"
            if db != "0":
                self.cmd("SELECT", db)
        def cmd(self, *args):
            out = b"*%d\r\n" % len(args)
            for a in args:
                b = a if isinstance(a, bytes) else str(a).encode()
                out += b"$%d\r\n%s\r\n" % (len(b), b)
            self.s.sendall(out)
            return self.read()
        def read(self):
            line = self.f.readline()[:-2]
            kind, rest = line[:1], line[1:]
            if kind == b"+": return rest.decode()
            if kind == b"-": raise RuntimeError(rest.decode())
            if kind == b":": return int(rest)
            if kind == b"$":
                n = int(rest)
                return None if n < 0 else self.f.read(n + 2)[:-2].decode()
            if kind == b"*":
                n = int(rest)
                return None if n < 0 else [self.read() for _ in range(n)]
            raise RuntimeError("unexpected reply %r" % line)
    class Redis:
        @classmethod
        def from_url(cls, url, decode_responses=True):
            r = cls()
            r.c = _Conn(url)
            return r
        def set(self, k, v, ex=None): return self.c.cmd("SET", k, v, *(["EX", ex] if ex else []))
        def get(self, k): return self.c.cmd("GET", k)
        def delete(self, *ks): return self.c.cmd("DEL", *ks) if ks else 0
        def sadd(self, k, *m): return self.c.cmd("SADD", k, *m)
        def srem(self, k, *m): return self.c.cmd("SREM", k, *m)
        def scan_iter(self, match=None):
            cursor = "0"
            while True:
                cursor, keys = self.c.cmd("SCAN", cursor, "MATCH", match or "*", "COUNT", 1000)
                yield from keys
                if cursor == "0":
                    break
    shim = types.ModuleType("redis")
    shim.Redis = shim.RedisCluster = Redis
    sys.modules["redis"] = shim
from agno.db.redis import RedisDb
from agno.db.schemas.memory import UserMemory

url, prefix = sys.argv[1], sys.argv[2]
db = RedisDb(db_url=url, db_prefix=prefix)
seen = {
    "raw": db.get_user_memory("rs-1", deserialize=False, user_id="bob"),
    "other_user": db.get_user_memory("rs-1", user_id="ann") is None,
    "listed": db.get_user_memories(user_id="bob", sort_by="created_at", sort_order="asc", deserialize=False),
    "topics": sorted(db.get_all_memory_topics(user_id="bob")),
    "stats": db.get_user_memory_stats(),
}
m = db.get_user_memory("rs-1", user_id="bob")
m.memory = "rust memory, edited by python"
db.upsert_user_memory(m)
db.upsert_user_memory(UserMemory(memory="from python", memory_id="py-1", topics=["py"], user_id="ann",
                                 input="hello", agent_id="py-agent", created_at=100))
print(json.dumps(seen))
"#;

/// Python Agno 3.1's `RedisDb` reads memories agno-rs wrote, and agno-rs reads, updates and
/// deletes what it wrote.
#[tokio::test]
async fn python_agno_and_agno_rs_share_memories() {
    if !agno_testkit::services::redis("python_agno_and_agno_rs_share_memories") {
        return;
    }
    let Some(py) = agno_python() else { return };
    let prefix = unique_prefix("memory-live");
    let db = RedisDb::connect_with(&url(), &prefix).await.unwrap();
    let mut mine = common::memory("rs-1", Some("bob"), "rust memory");
    mine.created_at = Some(200);
    mine.feedback = Some("good".to_owned());
    let written = db.upsert_user_memory(&mine).await.unwrap();

    let out =
        std::process::Command::new(&py).arg("-c").arg(PYTHON_REDIS_MEMORIES).arg(url()).arg(&prefix).output().unwrap();
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let seen: Value = serde_json::from_str(stdout.lines().rev().find(|l| l.starts_with('{')).unwrap()).unwrap();
    assert_eq!(seen["raw"]["created_at"], json!(200));
    common::assert_memories_shared_with_python(&db, &seen, &written).await;
    assert_eq!(
        memory_index_sets(&prefix).await,
        sets(&[("memories:index:agent_id:a1", &["rs-1"]), ("memories:index:user_id:bob", &["rs-1"])])
    );
    db.delete_all_keys().await.unwrap();
}

/// Python Agno 3.1's `RedisDb` queue, driven on jobs agno-rs enqueued, and enqueueing one of its
/// own. argv: url, prefix, phase (`read` or `write`). Prints one JSON line.
const PYTHON_REDIS_JOBS: &str = r#"
import json, sys
from agno.db.redis import RedisDb
from agno.db.schemas.jobs import QueuedJob
url, prefix, phase = sys.argv[1], sys.argv[2], sys.argv[3]
db = RedisDb(db_url=url, db_prefix=prefix)
out = {}
if phase == "read":
    out["a"] = db.get_job("a-job")
    out["listed"] = [j["id"] for j in db.list_jobs(limit=10)[0]]
    out["queued"] = db.count_queued_jobs()
    out["b_waits_behind"] = db.session_blocker("b-job")
    claimed = db.claim_job("py-worker", 60)
    out["claimed"] = claimed["id"] if claimed else None
    out["claimed_again"] = (db.claim_job("py-worker", 60) or {}).get("id")
    out["completed"] = db.complete_job("a-job", "py-worker", 1, "completed")
else:
    job = QueuedJob(id="c-job", component_type="agent", component_id="py-agent", session_id="py-session",
                    user_id="u2", idempotency_key="key-c",
                    payload={"message": "from python", "serialize_session": True}).to_dict()
    out["enqueued"] = db.enqueue_job(job)["accepted"]
    out["c"] = db.get_job("c-job")
print(json.dumps(out))
"#;

fn py_jobs(py: &str, prefix: &str, phase: &str) -> Value {
    let out = std::process::Command::new(py)
        .arg("-c")
        .arg(PYTHON_REDIS_JOBS)
        .args([url().as_str(), prefix, phase])
        .env("AGNO_TELEMETRY", "false")
        .output()
        .unwrap();
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().rev().find(|l| l.starts_with('{')).unwrap()).unwrap()
}

/// agno-rs and Python Agno 3.1 share one Redis job queue: each reads, claims, completes and
/// dedups the other's jobs (same keys, same documents, same session ordering).
#[tokio::test]
async fn python_agno_and_agno_rs_share_the_job_queue() {
    use agno_core::{Enqueued, Job, JobOutcome, JobStatus, JobStore};
    if !agno_testkit::services::redis("python_agno_and_agno_rs_share_the_job_queue") {
        return;
    }
    let Some(py) = agno_python() else { return };
    let prefix = unique_prefix("jobs-live");
    let db = RedisDb::connect_with(&url(), &prefix).await.unwrap();
    let mk = |id: &str| {
        let mut j = Job::agent_run(id, "rs-agent", "rs-session", json!({"message": id}));
        j.user_id = Some("u1".to_owned());
        j.max_attempts = 2;
        j
    };
    let mut a = mk("a-job");
    a.idempotency_key = Some("key-a".to_owned());
    assert!(matches!(db.enqueue_job(&a, 0).await.unwrap(), Enqueued::Accepted(_)));
    assert!(matches!(db.enqueue_job(&mk("b-job"), 0).await.unwrap(), Enqueued::Accepted(_)));

    let seen = py_jobs(&py, &prefix, "read");
    assert_eq!(seen["a"]["status"], "queued");
    assert_eq!(seen["a"]["user_id"], "u1");
    assert_eq!(seen["a"]["idempotency_key"], "key-a");
    assert_eq!(seen["a"]["payload"]["message"], "a-job");
    assert_eq!(seen["queued"], 2);
    let mut listed: Vec<&str> = seen["listed"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    listed.sort_unstable();
    assert_eq!(listed, ["a-job", "b-job"]);
    assert_eq!(seen["b_waits_behind"], "a-job", "Agno sees agno-rs's session order");
    assert_eq!(seen["claimed"], "a-job");
    assert_eq!(seen["claimed_again"], Value::Null, "b-job waits for a-job, in Agno's claim too");
    assert_eq!(seen["completed"], true);
    let done = db.get_job("a-job", None).await.unwrap().unwrap();
    assert_eq!((done.status, done.attempt, done.locked_by), (JobStatus::Completed, 1, None));
    assert_eq!(done.payload, json!({"message": "a-job"}), "Agno's session stamps stay out of the job");

    let seen = py_jobs(&py, &prefix, "write");
    assert_eq!(seen["enqueued"], true);
    let c = db.get_job("c-job", Some("u2")).await.unwrap().expect("Python's job");
    assert_eq!(
        (c.status, c.component_id.as_str(), c.session_id.as_str()),
        (JobStatus::Queued, "py-agent", "py-session")
    );
    assert_eq!(c.payload, json!({"message": "from python"}));
    let mut dup = mk("d-job");
    dup.user_id = Some("u2".to_owned());
    dup.idempotency_key = Some("key-c".to_owned());
    match db.enqueue_job(&dup, 0).await.unwrap() {
        Enqueued::Duplicate(original) => assert_eq!(original.id, "c-job"),
        other => panic!("Python's idempotency key must dedup: {other:?}"),
    }
    let now = agno_core::now_epoch_secs();
    let mut claimed: Vec<String> = Vec::new();
    while let Some(j) = db.claim_job("rs-worker", 60, now + 1).await.unwrap() {
        claimed.push(j.id);
    }
    claimed.sort();
    assert_eq!(claimed, ["b-job", "c-job"]);
    let completed = JobOutcome::Settled(JobStatus::Completed, None);
    assert!(db.finish_job(&agno_core::JobLease::new("c-job", "rs-worker", 1), &completed, now + 2).await.unwrap());
    let out = std::process::Command::new(&py)
        .arg("-c")
        .arg(format!(
            "import json; from agno.db.redis import RedisDb; print(json.dumps(RedisDb(db_url={:?}, db_prefix={:?}).get_job('c-job')))",
            url(),
            prefix
        ))
        .env("AGNO_TELEMETRY", "false")
        .output()
        .unwrap();
    let c: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!((c["status"].as_str(), c["locked_by"].as_str()), (Some("completed"), None));
    assert_eq!(c["payload"]["serialize_session"], true, "Agno's stamps are kept");
    db.delete_all_keys().await.unwrap();
}
