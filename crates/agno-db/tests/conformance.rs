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

db_conformance!(memory, memory_db().await);
db_conformance!(sqlite, sqlite_db().await);
