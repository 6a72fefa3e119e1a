//! agno-rs creates SQLite tables exactly as Python Agno 3.1 does: Agno creates its tables live in
//! one file (`scripts/interop/create_tables.py`), agno-rs in another, and both schemas, read back
//! from `sqlite_master`, must be identical (same tables, columns, constraints, indexes, down to
//! the SQL text). Needs `AGNO_PYTHON` (fails under `CI=true` without it, says so elsewhere).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::{Path, PathBuf};

use agno_db::SqliteDb;
use serde_json::Value;
use sqlx::Row;

/// Agno's table types that agno-rs implements on SQLite (Agno 3.1 has no SQLite jobs table; the
/// one agno-rs adds, and its event log, are agno-rs's own).
const TABLE_TYPES: [&str; 17] = [
    "sessions",
    "runs",
    "memories",
    "metrics",
    "evals",
    "knowledge",
    "versions",
    "schedules",
    "schedule_runs",
    "traces",
    "spans",
    "approvals",
    "compactions",
    "components",
    "component_configs",
    "component_links",
    "service_accounts",
];

/// Tables (and their indexes) agno-rs adds that Agno does not create on SQLite.
const OWN_TABLES: [&str; 3] = ["agno_jobs", "agno_run_events", "agno_runs_facts"];

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join("agno-rs-tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("ddl-{tag}-{}.sqlite", agno_core::new_id()))
}

/// `type name on tbl_name: sql` for every object of the file, sorted by name.
async fn schema(path: &Path) -> Vec<String> {
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display())).await.unwrap();
    let rows = sqlx::query("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name")
        .fetch_all(&pool)
        .await
        .unwrap();
    rows.iter()
        .filter(|r| !OWN_TABLES.contains(&r.get::<String, _>("tbl_name").as_str()))
        .map(|r| {
            let sql: Option<String> = r.get("sql");
            format!(
                "{} {} on {}: {}",
                r.get::<String, _>("type"),
                r.get::<String, _>("name"),
                r.get::<String, _>("tbl_name"),
                sql.unwrap_or_default()
            )
        })
        .collect()
}

#[tokio::test]
async fn tables_are_created_exactly_as_python_agno_creates_them() {
    let Some(py) = agno_testkit::agno_python("the SQLite DDL comparison with Python Agno") else { return };
    let theirs = scratch("python");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/create_tables.py");
    let out = std::process::Command::new(py)
        .arg(script)
        .arg("sqlite")
        .arg(&theirs)
        .args(TABLE_TYPES)
        .env("AGNO_TELEMETRY", "false")
        .output()
        .unwrap();
    assert!(out.status.success(), "create_tables.py failed: {}", String::from_utf8_lossy(&out.stderr));
    let last = String::from_utf8_lossy(&out.stdout).lines().rev().find(|l| l.starts_with('{')).unwrap().to_owned();
    let report: Value = serde_json::from_str(&last).unwrap();
    assert_eq!(report["created"].as_array().unwrap().len(), TABLE_TYPES.len());

    let ours = scratch("rust");
    let db = SqliteDb::connect(ours.to_str().unwrap()).await.unwrap();
    db.create_tables().await.unwrap();
    db.create_tables().await.unwrap(); // idempotent
    drop(db);

    let (want, got) = (schema(&theirs).await, schema(&ours).await);
    assert!(want.len() > 40, "Agno created its tables and indexes: {want:#?}");
    let missing: Vec<&String> = want.iter().filter(|w| !got.contains(w)).collect();
    let extra: Vec<&String> = got.iter().filter(|g| !want.contains(g)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "as Agno creates them, missing:\n{missing:#?}\nnot Agno's:\n{extra:#?}"
    );
}
