//! SQLite commits concurrent run writes together (`sql::group_commit`); writers whose futures
//! are dropped midway (a client gone), leaders among them, leave each write whole or absent,
//! never counted twice, and never stop the writers after them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::cast_possible_truncation, missing_docs)]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use agno_core::{AgentSession, Metrics, RunOutput, RunStore, RunWrite, SessionStore, StateUpdate};
use agno_db::SqliteDb;
use serde_json::{Map, Value, json};

/// Writes run `r{i}` of session `s{i % 4}`, merging state key `k{i}` and one input token.
async fn write(db: &SqliteDb, i: usize) -> agno_core::DbResult<i64> {
    let sid = format!("s{}", i % 4);
    let key = format!("k{i}");
    let mut session = AgentSession::new(&sid);
    session.set_session_state(json!({ key.clone(): i }).as_object().cloned().unwrap());
    let state = StateUpdate::diff(&Map::new(), json!({ key: i }).as_object().unwrap())
        .with_metrics(Metrics { input_tokens: 1, ..Default::default() });
    let run = RunOutput::new(format!("r{i}"), &sid);
    db.save_run_write(RunWrite { session: &session, state: &state, run: &run, user_id: None }).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_writers_leave_each_write_whole_or_absent() {
    let dir = std::env::temp_dir().join("agno-rs-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("group-commit-{}.db", agno_core::new_id()));
    let db = Arc::new(SqliteDb::connect(path.to_str().unwrap()).await.unwrap());
    db.create_tables().await.unwrap();

    let mut kept = HashSet::new();
    for round in 0..20 {
        let tasks: Vec<_> = (0..32)
            .map(|j| {
                let db = Arc::clone(&db);
                let i = round * 32 + j;
                (i, tokio::spawn(async move { write(&db, i).await }))
            })
            .collect();
        // Every other writer is dropped, at a different point in each round (before it started,
        // while it leads a batch, while it waits for one).
        match round % 4 {
            0 => {}
            1 => {
                for _ in 0..20 {
                    tokio::task::yield_now().await;
                }
            }
            r => tokio::time::sleep(Duration::from_micros(500 * r as u64)).await,
        }
        for (i, task) in &tasks {
            if i % 2 == 1 {
                task.abort();
            }
        }
        for (i, task) in tasks {
            match tokio::time::timeout(Duration::from_secs(30), task).await.expect("a writer hung") {
                Ok(written) => {
                    written.unwrap_or_else(|e| panic!("write {i}: {e}"));
                    kept.insert(i);
                }
                Err(e) => assert!(e.is_cancelled(), "write {i}: {e}"),
            }
        }
    }
    assert!(kept.iter().filter(|i| *i % 2 == 0).count() == 320, "every writer not dropped was written");

    let mut stored_runs = 0;
    for s in 0..4 {
        let session = db.get_session(&format!("s{s}"), None, None).await.unwrap().expect("stored");
        let runs: HashSet<String> = session.runs().iter().map(|r| r.id().to_owned()).collect();
        let keys: HashSet<String> = session.session_state().map(|m| m.keys().cloned().collect()).unwrap_or_default();
        for i in (s..640).step_by(4) {
            let (run, key) = (runs.contains(&format!("r{i}")), keys.contains(&format!("k{i}")));
            assert_eq!(run, key, "write {i}: run stored {run}, state key stored {key}: half a write");
            if i % 2 == 0 {
                assert!(run, "write {i} answered Ok but is not stored");
            }
        }
        let tokens =
            session.session_data.as_ref().and_then(|d| d.get("session_metrics")).map(|m| m["input_tokens"].clone());
        assert_eq!(tokens, Some(Value::from(runs.len())), "s{s}: one token per stored run, none counted twice");
        stored_runs += runs.len();
    }
    assert!(stored_runs >= 320, "{stored_runs} runs stored");
    // The database still takes writes.
    tokio::time::timeout(Duration::from_secs(10), write(&db, 10_000)).await.expect("a write after the drops").unwrap();
    drop(db);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}
