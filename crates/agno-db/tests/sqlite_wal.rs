//! Many writes keep the SQLite WAL bounded (checkpoints are never starved by unfinished
//! statements), and listing sessions stays a small read afterwards.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;

use agno_core::{AgentSession, RunOutput, RunStore, SessionQuery, SessionStore, StateUpdate};
use agno_db::SqliteDb;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wal_stays_bounded_under_many_concurrent_writes() {
    let dir = std::env::temp_dir().join("agno-rs-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("wal-{}.db", agno_core::new_id()));
    let db = Arc::new(SqliteDb::connect(path.to_str().unwrap()).await.unwrap());
    db.create_tables().await.unwrap();
    for i in 0..100 {
        db.upsert_session(&AgentSession::new(format!("s{i}")), &StateUpdate::Replace).await.unwrap();
    }
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let db = Arc::clone(&db);
            tokio::spawn(async move {
                for i in 0..1000 {
                    let sid = format!("s{}", (i * 4 + w) % 100);
                    db.upsert_run(&RunOutput::new(format!("r{w}-{i}"), &sid), &sid, None).await.unwrap();
                    if i % 50 == 0 {
                        db.get_run(&format!("r{w}-{i}"), None).await.unwrap().unwrap();
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    let wal = std::fs::metadata(format!("{}-wal", path.display())).map(|m| m.len()).unwrap_or(0);
    // 4,000 run writes touch ~12 pages each; with working checkpoints the WAL is reused and stays
    // near its autocheckpoint size (4 MiB), far below what 4,000 appended commits would take.
    assert!(wal < 32 * 1024 * 1024, "WAL grew to {wal} bytes: checkpoints are being starved");
    let page = db.get_sessions(&SessionQuery { limit: Some(1000), ..SessionQuery::default() }).await.unwrap();
    assert_eq!(page.total, 100);
}

/// Checkpoints run in the background, not inside a request's commit: after a burst of writes
/// the main database file catches up with what the WAL holds, with no further write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wal_is_checkpointed_in_the_background() {
    use sqlx::Connection;
    let dir = std::env::temp_dir().join("agno-rs-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("checkpoint-{}.db", agno_core::new_id()));
    let db = SqliteDb::connect(path.to_str().unwrap()).await.unwrap();
    db.create_tables().await.unwrap();
    for i in 0..300 {
        let mut s = AgentSession::new(format!("s{i}"));
        s.session_data = serde_json::json!({"note": "x".repeat(500)}).as_object().cloned();
        db.upsert_session(&s, &StateUpdate::Replace).await.unwrap();
    }
    let mut probe = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display())).await.unwrap();
    let pages: i64 = sqlx::query_scalar("PRAGMA page_count").fetch_one(&mut probe).await.unwrap();
    let page_size: i64 = sqlx::query_scalar("PRAGMA page_size").fetch_one(&mut probe).await.unwrap();
    let want = u64::try_from(pages * page_size).unwrap();
    assert!(want > 100 * 1024, "the writes made the database grow ({want} bytes)");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let main = std::fs::metadata(&path).unwrap().len();
        if main >= want {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the main file stayed at {main} of {want} bytes: nothing checkpointed the WAL"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    probe.close().await.unwrap();
    drop(db);
}
