//! `JsonDb` beyond the conformance suite: two writers on one directory, a corrupt file, the file
//! shapes Python Agno 3.1 uses (both directions), and the v2 -> v3 migration of legacy `runs`
//! fields (content from fixtures/legacy_v2). Every test uses its own temp directory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agno_core::{
    AgentSession, DbErrorKind, MemoryQuery, MemorySort, MemoryStore, RunOutput, RunQuery, RunStatus, RunStore,
    SchemaStore, SessionStore, StateUpdate, UserMemory,
};
use agno_db::{JsonDb, Migrate, MigrationManager, MigrationOptions};
use serde_json::{Value, json};

/// A fresh directory (not created: `JsonDb` creates it).
fn temp_dir(test: &str) -> PathBuf {
    std::env::temp_dir().join("agno-rs-tests").join(format!("json-{test}-{}", agno_core::new_id()))
}

async fn open(dir: &Path) -> JsonDb {
    JsonDb::connect(&format!("json://{}", dir.display())).await.unwrap()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/legacy_v2")
}

fn expected() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture_dir().join("expected.json")).unwrap()).unwrap()
}

fn session(id: &str) -> AgentSession {
    let mut s = AgentSession::new(id);
    s.agent_id = Some("a1".to_owned());
    s
}

fn run(id: &str, session_id: &str) -> RunOutput {
    let mut r = RunOutput::new(id, session_id);
    r.agent_id = Some("a1".to_owned());
    r.status = RunStatus::Completed;
    r.created_at = 5;
    r.content = Some(json!("hi"));
    r
}

#[tokio::test]
async fn two_instances_on_one_directory_lose_no_run() {
    let dir = temp_dir("two-writers");
    let a = Arc::new(open(&dir).await);
    let b = Arc::new(open(&dir).await);
    a.create_tables().await.unwrap();
    a.upsert_session(&session("s1"), &StateUpdate::Replace).await.unwrap();
    let mut tasks = Vec::new();
    for (name, db) in [("a", &a), ("b", &b)] {
        for i in 0..50 {
            let db = Arc::clone(db);
            tasks.push(tokio::spawn(async move { db.upsert_run(&run(&format!("{name}{i}"), "s1"), "s1", None).await }));
        }
    }
    let mut indexes = HashSet::new();
    for t in tasks {
        indexes.insert(t.await.unwrap().unwrap());
    }
    assert_eq!(indexes, (0..100).collect::<HashSet<i64>>());
    let file = read_json(&dir.join("agno_runs.json"));
    assert_eq!(file.as_array().unwrap().len(), 100);
    let in_file: HashSet<i64> = file.as_array().unwrap().iter().map(|r| r["run_index"].as_i64().unwrap()).collect();
    assert_eq!(in_file.len(), 100, "distinct run_index in the file");
    assert_eq!(b.get_session("s1", None, None).await.unwrap().unwrap().runs().len(), 100);
    // No temp file is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The second writer of [`two_processes_on_one_directory_lose_no_run`]: this test binary run
/// again as a child process. Does nothing unless `AGNO_JSON_CHILD_DIR` is set.
#[tokio::test]
#[ignore = "run as a child process by two_processes_on_one_directory_lose_no_run"]
async fn child_writer() {
    let Ok(dir) = std::env::var("AGNO_JSON_CHILD_DIR") else { return };
    let db = open(Path::new(&dir)).await;
    for i in 0..50 {
        db.upsert_run(&run(&format!("child{i}"), "s1"), "s1", None).await.unwrap();
    }
}

#[tokio::test]
async fn two_processes_on_one_directory_lose_no_run() {
    let dir = temp_dir("two-processes");
    let db = Arc::new(open(&dir).await);
    db.create_tables().await.unwrap();
    db.upsert_session(&session("s1"), &StateUpdate::Replace).await.unwrap();
    let child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(["child_writer", "--exact", "--ignored", "--quiet"])
        .env("AGNO_JSON_CHILD_DIR", &dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for i in 0..50 {
        db.upsert_run(&run(&format!("parent{i}"), "s1"), "s1", None).await.unwrap();
    }
    let out = child.wait_with_output().await.unwrap();
    assert!(
        out.status.success(),
        "the child writer failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = read_json(&dir.join("agno_runs.json"));
    let indexes: HashSet<i64> = rows.as_array().unwrap().iter().map(|r| r["run_index"].as_i64().unwrap()).collect();
    assert_eq!(rows.as_array().unwrap().len(), 100);
    assert_eq!(indexes, (0..100).collect::<HashSet<i64>>());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_corrupt_file_is_named_and_never_overwritten() {
    let dir = temp_dir("corrupt");
    let db = open(&dir).await;
    db.create_tables().await.unwrap();
    db.upsert_session(&session("s1"), &StateUpdate::Replace).await.unwrap();
    let sessions = dir.join("agno_sessions.json");
    let garbage = b"[{\"session_id\": \"s1\", \"agent_id\": ".to_vec();
    std::fs::write(&sessions, &garbage).unwrap();

    let err = db.get_session("s1", None, None).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Other);
    assert!(err.to_string().contains(&sessions.display().to_string()), "{err}");
    assert!(err.to_string().contains("corrupt"), "{err}");
    let err = db.upsert_session(&session("s2"), &StateUpdate::Replace).await.unwrap_err();
    assert!(err.to_string().contains("agno_sessions.json"), "{err}");
    assert!(db.delete_session("s1", None).await.is_err());
    assert!(db.upsert_run(&run("r1", "s1"), "s1", None).await.is_err());
    assert_eq!(std::fs::read(&sessions).unwrap(), garbage, "the corrupt file is untouched");

    // A runs file that is JSON but not a list is refused the same way.
    let runs = dir.join("agno_runs.json");
    std::fs::write(&runs, b"{\"run_id\": \"r1\"}").unwrap();
    let err = db.get_runs(&RunQuery::default()).await.unwrap_err();
    assert!(err.to_string().contains("agno_runs.json") && err.to_string().contains("not a JSON list"), "{err}");
    assert_eq!(std::fs::read(&runs).unwrap(), b"{\"run_id\": \"r1\"}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn files_are_shaped_as_python_agno_writes_them() {
    let dir = temp_dir("shape");
    let db = agno_db::open_ready(&format!("json://{}", dir.display())).await.unwrap();
    let mut s = session("s1");
    s.user_id = Some("u1".to_owned());
    s.created_at = Some(100);
    s.set_session_state(serde_json::from_value(json!({"x": 1})).unwrap());
    db.upsert_session(&s, &StateUpdate::Replace).await.unwrap();
    db.upsert_run(&run("r1", "s1"), "s1", Some("u1")).await.unwrap();

    let versions = read_json(&dir.join("agno_schema_versions.json"));
    let stamped: Vec<(&str, &str)> = versions
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["table_name"].as_str().unwrap(), r["version"].as_str().unwrap()))
        .collect();
    assert_eq!(
        stamped,
        [
            ("agno_sessions", "3.0.0"),
            ("agno_runs", "3.0.0"),
            ("agno_metrics", "3.0.0"),
            ("agno_schedules", "3.0.0"),
            ("agno_schedule_runs", "3.0.0")
        ]
    );
    assert!(versions[0]["updated_at"].is_i64());
    let doc = &read_json(&dir.join("agno_sessions.json"))[0];
    assert_eq!(doc["session_type"], json!("agent"));
    assert_eq!(doc["user_id"], json!("u1"));
    assert_eq!(doc["session_data"], json!({"session_state": {"x": 1}}));
    assert_eq!(doc["created_at"], json!(100));
    assert!(doc.get("runs").is_none(), "runs live in agno_runs.json");
    let row = &read_json(&dir.join("agno_runs.json"))[0];
    let keys: Vec<&str> = row.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, common::RUN_ROW_KEYS);
    assert_eq!(row["run_index"], json!(0));
    assert_eq!(row["run_data"]["content"], json!("hi"));
    // Pretty-printed with two spaces, as Python's `json.dump(indent=2)`.
    assert!(std::fs::read_to_string(dir.join("agno_runs.json")).unwrap().starts_with("[\n  {\n    \"run_id\""));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Files exactly as Python Agno 3.1.10's `JsonDb` wrote them (captured from `upsert_session`,
/// `upsert_run(run_index=0)` and `upsert_schema_version`).
#[tokio::test]
async fn files_written_by_python_agno_read_back() {
    let dir = temp_dir("python");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agno_sessions.json"),
        r#"[
  {
    "session_id": "s1",
    "agent_id": "a1",
    "team_id": null,
    "user_id": "u1",
    "workflow_id": null,
    "session_data": {
      "session_state": {
        "x": 1
      }
    },
    "metadata": null,
    "agent_data": null,
    "summary": null,
    "created_at": 100,
    "updated_at": 100,
    "session_type": "agent"
  }
]"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("agno_runs.json"),
        r#"[
  {
    "run_id": "r1", "session_id": "s1", "run_type": "agent", "agent_id": "a1", "team_id": null,
    "workflow_id": null, "user_id": "u1", "parent_run_id": null, "status": "COMPLETED", "run_index": 0,
    "run_data": {"run_id": "r1", "agent_id": "a1", "session_id": "s1", "content": "hi", "content_type": "str",
                 "created_at": 5, "status": "COMPLETED"},
    "created_at": 5, "updated_at": 1796006857
  }
]"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("agno_schema_versions.json"),
        r#"[{"table_name": "agno_sessions", "version": "3.0.0", "updated_at": 1796006857}]"#,
    )
    .unwrap();
    let db = open(&dir).await;
    assert_eq!(db.get_latest_schema_version("agno_sessions").await.unwrap().as_deref(), Some("3.0.0"));
    let s = db.get_session("s1", Some("u1"), None).await.unwrap().unwrap();
    assert_eq!(s.created_at, Some(100));
    assert_eq!(s.runs().iter().map(|r| r.content.clone()).collect::<Vec<_>>(), [Some(json!("hi"))]);
    assert_eq!(db.upsert_run(&run("r2", "s1"), "s1", Some("u1")).await.unwrap(), 1);
    let err = db.upsert_run(&run("r1", "s1"), "s1", Some("u2")).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Writes the fixture's sessions as Agno 2.x's `JsonDb` stored them (`to_dict()` plus
/// `session_type`, the whole run list in `runs`), its memories, and its version stamps.
fn write_v2(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let expected = expected();
    let sessions: Vec<Value> = expected["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let mut doc = s.clone();
            doc["session_type"] = json!("agent");
            doc
        })
        .collect();
    std::fs::write(dir.join("agno_sessions.json"), serde_json::to_string_pretty(&sessions).unwrap()).unwrap();
    std::fs::write(dir.join("agno_memories.json"), serde_json::to_string_pretty(&expected["memories"]).unwrap())
        .unwrap();
    let stamps = json!([
        {"table_name": "agno_sessions", "version": "2.5.6", "updated_at": 1796006504},
        {"table_name": "agno_memories", "version": "2.5.6", "updated_at": 1796006504},
    ]);
    std::fs::write(dir.join("agno_schema_versions.json"), stamps.to_string()).unwrap();
}

/// Compares what we read with what Agno 2.x read from the same data.
async fn assert_matches_agno(db: &JsonDb) {
    agno_testkit::legacy::assert_matches_agno(db, &agno_testkit::legacy::expected("expected.json")).await;
}

fn legacy_fields(dir: &Path) -> usize {
    read_json(&dir.join("agno_sessions.json")).as_array().unwrap().iter().filter(|s| s.get("runs").is_some()).count()
}

#[tokio::test]
async fn agno_2x_json_files_migrate_to_the_runs_file_without_loss() {
    let dir = temp_dir("legacy");
    write_v2(&dir);
    let db = open(&dir).await;
    assert_matches_agno(&db).await;
    let manager = MigrationManager::new(&db);
    let status = manager.status(None).await.unwrap();
    assert_eq!(status.legacy_runs_pending, 16);
    let tables: Vec<(&str, Vec<&str>)> = status.tables.iter().map(|t| (t.table.as_str(), t.pending.clone())).collect();
    assert_eq!(tables, [("agno_sessions", vec!["3.0.0"]), ("agno_memories", vec!["3.0.0"])]);
    let err = agno_db::open_ready(&format!("json://{}", dir.display())).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::SchemaTooOld);

    manager.up(None, &|_, _| {}).await.unwrap();
    for table in ["agno_sessions", "agno_memories", "agno_runs"] {
        assert_eq!(db.get_latest_schema_version(table).await.unwrap().as_deref(), Some("3.0.0"), "{table}");
    }
    let after = manager.status(None).await.unwrap();
    assert!(after.is_current());
    assert_eq!(after.legacy_runs_pending, 0);
    assert_eq!(db.get_runs(&RunQuery::default()).await.unwrap().runs.len(), 16);
    assert_matches_agno(&db).await;
    let rows = read_json(&dir.join("agno_runs.json"));
    let bob: Vec<i64> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["session_id"] == json!("sess-bob-1"))
        .map(|r| r["run_index"].as_i64().unwrap())
        .collect();
    assert_eq!(bob, [0, 1, 2, 3, 4, 5]);
    assert_eq!(legacy_fields(&dir), 5, "the legacy field is kept as a backup");

    // A second migration does nothing.
    let before = std::fs::read(dir.join("agno_runs.json")).unwrap();
    assert!(manager.up(None, &|_, _| {}).await.unwrap().is_current());
    assert_eq!(std::fs::read(dir.join("agno_runs.json")).unwrap(), before);

    let report = db.cleanup_legacy_runs(false).await.unwrap();
    assert!(report.removed);
    assert_eq!(report.missing_runs, 0);
    assert_eq!(legacy_fields(&dir), 0);
    assert_matches_agno(&db).await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_migration_failing_halfway_keeps_no_stamp_and_changes_nothing() {
    let dir = temp_dir("legacy-fail");
    write_v2(&dir);
    let db = open(&dir).await;
    let failing =
        MigrationManager::new(&db).with_options(MigrationOptions { batch_size: 2, fail_after_batches: Some(1) });
    let err = failing.up(None, &|_, _| {}).await.unwrap_err();
    assert!(err.to_string().contains("migration of agno_sessions to 3.0.0 failed"), "{err}");
    assert_eq!(db.get_latest_schema_version("agno_sessions").await.unwrap().as_deref(), Some("2.5.6"));
    // The runs file is written once, at the end: nothing was copied.
    assert!(!dir.join("agno_runs.json").exists());
    assert_eq!(db.legacy_runs_pending().await.unwrap(), 16);
    assert_matches_agno(&db).await;
    MigrationManager::new(&db).up(None, &|_, _| {}).await.unwrap();
    assert_eq!(db.get_latest_schema_version("agno_sessions").await.unwrap().as_deref(), Some("3.0.0"));
    assert_eq!(db.get_runs(&RunQuery::default()).await.unwrap().runs.len(), 16);
    assert_matches_agno(&db).await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn cleanup_refuses_to_lose_uncopied_runs_and_deletes_reach_the_legacy_field() {
    let dir = temp_dir("legacy-cleanup");
    write_v2(&dir);
    let db = open(&dir).await;
    let err = db.cleanup_legacy_runs(false).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    assert!(err.to_string().contains("16 legacy runs"), "{err}");
    assert_eq!(legacy_fields(&dir), 5);
    MigrationManager::new(&db).up(None, &|_, _| {}).await.unwrap();
    // Deleting a migrated run also drops it from the backup, so it does not come back.
    let first = db.get_session("sess-alice-1", None, None).await.unwrap().unwrap().runs()[0].id().to_owned();
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
    std::fs::remove_dir_all(&dir).unwrap();
}

// ----- Memories -------------------------------------------------------------------------------

#[tokio::test]
async fn the_memory_file_is_shaped_as_python_agno_writes_it() {
    let dir = temp_dir("memory-shape");
    let db = open(&dir).await;
    let mut m = common::memory("m1", Some("u1"), "likes otters");
    m.created_at = Some(100);
    m.input = Some("I like otters".to_owned());
    let stored = db.upsert_user_memory(&m).await.unwrap();
    db.upsert_user_memory(&UserMemory::new("no owner", None)).await.unwrap();

    let docs = read_json(&dir.join("agno_memories.json"));
    let doc = &docs[0];
    let keys: Vec<&str> = doc.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["memory_id", "memory", "topics", "created_at", "updated_at", "input", "user_id", "agent_id"]);
    assert_eq!(doc["created_at"], json!("1970-01-01T00:01:40"), "UserMemory.to_dict() shape");
    assert_eq!(doc["updated_at"], json!(stored.updated_at.unwrap()));
    assert_eq!(doc["topics"], json!(["animals"]));
    let keys: Vec<&str> = docs[1].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["memory_id", "memory", "created_at", "updated_at"], "keys without a value are left out");

    // An update replaces the document in place and keeps created_at; another user's is refused.
    let mut changed = common::memory("m1", Some("u1"), "loves otters");
    changed.created_at = Some(5);
    assert_eq!(db.upsert_user_memory(&changed).await.unwrap().created_at, Some(100));
    let docs = read_json(&dir.join("agno_memories.json"));
    assert_eq!(
        (docs[0]["memory"].clone(), docs[0]["created_at"].clone()),
        (json!("loves otters"), json!("1970-01-01T00:01:40"))
    );
    let before = std::fs::read_to_string(dir.join("agno_memories.json")).unwrap();
    let err = db.upsert_user_memory(&common::memory("m1", Some("u2"), "hijacked")).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    assert_eq!(std::fs::read_to_string(dir.join("agno_memories.json")).unwrap(), before);

    // Clearing empties only the memory file.
    db.upsert_session(&session("s1"), &StateUpdate::Replace).await.unwrap();
    db.clear_memories().await.unwrap();
    assert_eq!(read_json(&dir.join("agno_memories.json")), json!([]));
    assert!(db.get_session("s1", None, None).await.unwrap().is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The memory file exactly as Python Agno 3.1.10's `JsonDb.upsert_user_memory` wrote it
/// (captured), and an Agno 2.x document with an ISO `updated_at`.
#[tokio::test]
async fn a_memory_file_written_by_python_agno_reads_back() {
    let dir = temp_dir("memory-python");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agno_memories.json"),
        r#"[
  {
    "memory_id": "m1",
    "memory": "Ann likes otters \u00fc",
    "topics": [
      "animals"
    ],
    "created_at": "1970-01-01T00:01:40",
    "updated_at": 1796009009,
    "input": "hi",
    "user_id": "ann",
    "agent_id": "a1"
  },
  {
    "memory_id": "m2",
    "memory": "no owner",
    "created_at": "2026-11-30T03:23:29",
    "updated_at": 1796009009
  },
  {
    "memory_id": "mem-bob-1",
    "memory": "Bob prefers short answers.",
    "topics": ["preferences"],
    "created_at": "2025-01-01T00:00:00",
    "updated_at": "2025-01-01T00:00:00",
    "user_id": "bob"
  }
]"#,
    )
    .unwrap();
    let db = open(&dir).await;
    let m1 = db.get_user_memory("m1", Some("ann")).await.unwrap().unwrap();
    assert_eq!(m1.memory, "Ann likes otters ü");
    assert_eq!((m1.created_at, m1.updated_at), (Some(100), Some(1_796_009_009)));
    assert_eq!((m1.input.as_deref(), m1.agent_id.as_deref()), (Some("hi"), Some("a1")));
    let m2 = db.get_user_memory("m2", None).await.unwrap().unwrap();
    assert_eq!((m2.user_id, m2.created_at), (None, Some(1_796_009_009)));
    let bob = db.get_user_memory("mem-bob-1", Some("bob")).await.unwrap().unwrap();
    assert_eq!(bob.updated_at, Some(1_735_689_600));
    let oldest_first = db
        .get_user_memories(&MemoryQuery {
            sort_by: MemorySort::CreatedAt,
            sort_order: agno_core::SortOrder::Asc,
            ..MemoryQuery::default()
        })
        .await
        .unwrap();
    let ids: Vec<_> = oldest_first.memories.iter().map(|m| m.memory_id.clone().unwrap()).collect();
    assert_eq!(ids, ["m1", "mem-bob-1", "m2"]);
    let (stats, users) = db.get_user_memory_stats(None, None, None).await.unwrap();
    assert_eq!(users, 3);
    assert_eq!(stats.last().unwrap().user_id.as_deref(), Some("bob"), "least recently updated last");
    let err = db.upsert_user_memory(&common::memory("m1", Some("bob"), "hijacked")).await.unwrap_err();
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    assert_eq!(
        db.upsert_user_memory(&common::memory("m1", Some("ann"), "edited")).await.unwrap().created_at,
        Some(100)
    );
    assert_eq!(db.delete_user_memories(&["m1".into(), "mem-bob-1".into()], Some("ann")).await.unwrap(), 1);
    assert_eq!(db.get_user_memories(&MemoryQuery::default()).await.unwrap().total, 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs Python Agno's `JsonDb` on a directory: reads memory `rs-1` (as `bob`), rewrites its
/// text, writes memory `py-1` (of `ann`), and prints what it read as one JSON line.
const PYTHON_JSON_MEMORIES: &str = r#"
import json, sys
from agno.db.json import JsonDb
from agno.db.schemas.memory import UserMemory

db = JsonDb(db_path=sys.argv[1])
seen = {
    "raw": db.get_user_memory("rs-1", deserialize=False, user_id="bob"),
    "other_user": db.get_user_memory("rs-1", user_id="ann") is None,
    "listed": db.get_user_memories(user_id="bob", sort_by="created_at", sort_order="asc", deserialize=False),
    "topics": sorted(db.get_all_memory_topics(user_id="bob")),
    "stats": db.get_user_memory_stats(),
}
m = db.get_user_memory("rs-1", user_id="bob")
seen["created_at"] = m.created_at
m.memory = "rust memory, edited by python"
db.upsert_user_memory(m)
db.upsert_user_memory(UserMemory(memory="from python", memory_id="py-1", topics=["py"], user_id="ann",
                                 input="hello", agent_id="py-agent", created_at=100))
print(json.dumps(seen))
"#;

/// Python Agno 3.1's `JsonDb` reads memories agno-rs wrote, and agno-rs reads, updates and
/// deletes what it wrote. Needs `AGNO_PYTHON` (a Python with `agno==3.1.*`).
#[tokio::test]
async fn python_agno_and_agno_rs_share_the_memory_file() {
    let Some(py) = agno_testkit::agno_python("the live Python Agno check on JSON files") else { return };
    let dir = temp_dir("memory-live");
    let db = open(&dir).await;
    let mut mine = common::memory("rs-1", Some("bob"), "rust memory");
    mine.created_at = Some(200);
    mine.feedback = Some("good".to_owned());
    let written = db.upsert_user_memory(&mine).await.unwrap();

    let out = std::process::Command::new(&py).arg("-c").arg(PYTHON_JSON_MEMORIES).arg(&dir).output().unwrap();
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let seen: Value = serde_json::from_str(stdout.lines().rev().find(|l| l.starts_with('{')).unwrap()).unwrap();
    assert_eq!(seen["created_at"], json!(200), "Python reads the ISO created_at as the same instant");
    common::assert_memories_shared_with_python(&db, &seen, &written).await;
    assert_eq!(db.get_user_memories(&MemoryQuery::default()).await.unwrap().total, 1);
    std::fs::remove_dir_all(&dir).unwrap();
}
