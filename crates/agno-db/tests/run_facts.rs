//! The facts the daily metrics read of each run (its model and provider) are written beside the
//! run, so metrics never parse runs' JSON; runs without them (written by Python Agno) are read
//! from their JSON and count the same; the facts go with their runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use agno_core::{AgentSession, RunOutput, RunStatus, RunStore, SessionStore, StateUpdate};
use agno_db::{MetricsReads, SqliteDb, calculate_metrics_with};
use sqlx::Connection;

async fn count(path: &str, sql: &str) -> i64 {
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{path}")).await.unwrap();
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned())).fetch_one(&mut conn).await.unwrap()
}

/// A new SQLite database with Agno's tables, and its path.
async fn fresh_db() -> (SqliteDb, String) {
    let dir = std::env::temp_dir().join("agno-rs-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("facts-{}.sqlite", agno_core::new_id())).display().to_string();
    let db = SqliteDb::connect(&path).await.unwrap();
    db.create_tables().await.unwrap();
    (db, path)
}

#[tokio::test]
async fn metrics_read_run_facts_and_fall_back_to_json_without_them() {
    let (db, path) = fresh_db().await;
    let day = chrono::NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
    let noon = day.and_hms_opt(12, 0, 0).unwrap().and_utc().timestamp();
    for (s, models) in [("s1", ["gpt-4o", "gpt-4o", "claude"]), ("s2", ["claude", "gpt-4o", "o3"])] {
        let mut session = AgentSession::new(s);
        session.agent_id = Some("a".into());
        session.created_at = Some(noon);
        db.upsert_session(&session, &StateUpdate::Replace).await.unwrap();
        for (i, model) in models.iter().enumerate() {
            let mut run = RunOutput::new(format!("{s}-{i}"), s);
            run.status = RunStatus::Completed;
            run.agent_id = Some("a".into());
            run.created_at = noon + i64::try_from(i).unwrap();
            run.model = Some((*model).to_owned());
            run.model_provider = Some("P".into());
            // A big answer: what the metrics must not parse.
            run.content = Some(serde_json::Value::String("x".repeat(200_000)));
            db.upsert_run(&run, s, None).await.unwrap();
        }
    }
    assert_eq!(count(&path, "SELECT COUNT(*) FROM agno_runs_facts").await, 6, "one facts row per run");
    // The day is "today": recomputed on every pass.
    let until = day;
    let with_facts = calculate_metrics_with(&db, until, MetricsReads::SetBased).await.unwrap();
    let per_session = calculate_metrics_with(&db, until, MetricsReads::PerSession).await.unwrap();
    let models = |b: &[agno_core::MetricsBucket]| b.iter().map(|b| b.model_metrics.clone()).collect::<Vec<_>>();
    assert_eq!(models(&with_facts), models(&per_session));

    // Runs another writer stored (no facts): read from their JSON, the same figures.
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{path}")).await.unwrap();
    sqlx::query("DELETE FROM agno_runs_facts WHERE run_id LIKE 's1-%'").execute(&mut conn).await.unwrap();
    let mixed = calculate_metrics_with(&db, until, MetricsReads::SetBased).await.unwrap();
    assert_eq!(models(&mixed), models(&with_facts));

    // The facts go with their runs.
    db.delete_session("s2", None).await.unwrap();
    assert_eq!(count(&path, "SELECT COUNT(*) FROM agno_runs_facts").await, 0);
}

/// A refused run write (another user's run) leaves the run's facts as they were; an accepted
/// update changes them.
#[tokio::test]
async fn a_refused_run_write_keeps_its_facts() {
    let (db, path) = fresh_db().await;
    let mut session = AgentSession::new("s1");
    session.user_id = Some("u1".into());
    db.upsert_session(&session, &StateUpdate::Replace).await.unwrap();
    let with_model = |model: &str| {
        let mut run = RunOutput::new("r1", "s1");
        run.model = Some(model.to_owned());
        run
    };
    db.upsert_run(&with_model("gpt-4o"), "s1", Some("u1")).await.unwrap();
    let refused = db.upsert_run(&with_model("o3"), "s1", Some("u2")).await.expect_err("another user's run");
    assert_eq!(refused.kind(), agno_core::DbErrorKind::Conflict, "{refused}");
    let model = "SELECT COUNT(*) FROM agno_runs_facts WHERE run_id = 'r1' AND model = ";
    assert_eq!(count(&path, &format!("{model}'gpt-4o'")).await, 1, "the refused write changed the facts");
    db.upsert_run(&with_model("claude"), "s1", Some("u1")).await.unwrap();
    assert_eq!(count(&path, &format!("{model}'claude'")).await, 1, "the owner's update is in the facts");
}
