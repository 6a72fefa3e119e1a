//! Python Agno 3.1 and agno-rs share a SQLite file's component catalog: each reads what the other
//! wrote, and each one's rules hold on the other's rows (`agno_testkit::components_interop`; the
//! PostgreSQL case is in `postgres.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use agno_db::SqliteDb;

#[tokio::test]
async fn python_agno_and_agno_rs_share_a_sqlite_component_catalog() {
    let Some(py) = agno_testkit::agno_python("the SQLite component catalog shared with Python Agno") else { return };
    let dir = std::env::temp_dir().join(format!("agno-components-{}", agno_core::new_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("shared.db");
    let db = SqliteDb::connect(file.to_str().unwrap()).await.unwrap();
    db.create_tables().await.unwrap();
    agno_testkit::conformance::components_interop(
        Arc::new(db),
        &py,
        &["sqlite".to_owned(), file.display().to_string()],
    )
    .await;
    let _ = std::fs::remove_dir_all(&dir);
}
