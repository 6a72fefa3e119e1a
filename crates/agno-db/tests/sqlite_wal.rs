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
