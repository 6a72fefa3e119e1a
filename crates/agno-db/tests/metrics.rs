//! `calculate_metrics` on every adapter: sessions and runs become one bucket per user per day.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;

use agno_core::{
    AgentSession, MetricsQuery, MetricsStore, NaiveDate, RunOutput, RunStatus, RunStore, SessionStore, SessionType,
    StateUpdate,
};
use agno_db::calculate_metrics_until;
use serde_json::json;

const DAY: i64 = 86_400;

fn midnight(day: NaiveDate) -> i64 {
    day.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp()
}

async fn session<D: SessionStore + RunStore + ?Sized>(
    db: &D,
    id: &str,
    user: Option<&str>,
    kind: SessionType,
    created_at: i64,
    models: &[(&str, &str)],
    input_tokens: i64,
) {
    let mut s = AgentSession::new(id);
    match kind {
        SessionType::Agent => s.agent_id = Some("a1".into()),
        SessionType::Team => s.team_id = Some("t1".into()),
        SessionType::Workflow => s.workflow_id = Some("w1".into()),
    }
    s.user_id = user.map(str::to_owned);
    s.created_at = Some(created_at);
    s.updated_at = Some(created_at);
    s.session_data = Some(
        json!({"session_metrics": {"input_tokens": input_tokens, "output_tokens": 5, "total_tokens": input_tokens + 5}})
            .as_object()
            .cloned()
            .unwrap(),
    );
    db.upsert_session(&s, &StateUpdate::Replace).await.unwrap();
    for (i, (model, provider)) in models.iter().enumerate() {
        let mut r = RunOutput::new(format!("{id}-run-{i}"), id);
        r.status = RunStatus::Completed;
        r.created_at = created_at + i64::try_from(i).unwrap();
        r.model = Some((*model).to_owned());
        r.model_provider = Some((*provider).to_owned());
        match kind {
            SessionType::Workflow => r.workflow_id = Some("w1".into()),
            _ => r.agent_id = Some("a1".into()),
        }
        db.upsert_run(&r, id, user).await.unwrap();
    }
}

/// Yesterday's and today's sessions of two users and of nobody aggregate into per-user buckets;
/// yesterday's are completed, today's are recalculated on the next pass and keep their ids.
async fn metrics_are_calculated_per_user<D: SessionStore + RunStore + MetricsStore + ?Sized>(db: Arc<D>) {
    let today: NaiveDate = "2026-11-30".parse().unwrap();
    let yesterday = today.pred_opt().unwrap();
    assert!(calculate_metrics_until(&*db, today).await.unwrap().is_empty(), "no sessions, nothing to do");

    let y = midnight(yesterday) + 3_600;
    session(&*db, "s1", Some("u1"), SessionType::Agent, y, &[("gpt-4o", "OpenAI"), ("gpt-4o", "OpenAI")], 10).await;
    session(&*db, "s2", Some("u1"), SessionType::Team, y + 60, &[("claude", "Anthropic")], 20).await;
    session(&*db, "s3", Some("u2"), SessionType::Workflow, y + 120, &[], 30).await;
    session(&*db, "s4", None, SessionType::Agent, y + 180, &[("gpt-4o", "OpenAI")], 40).await;
    let t = midnight(today) + 60;
    session(&*db, "s5", Some("u1"), SessionType::Agent, t, &[("gpt-4o", "OpenAI")], 50).await;
    // Before the first day with sessions is never read; after today is not counted.
    session(&*db, "late", Some("u1"), SessionType::Agent, midnight(today) + DAY + 5, &[], 1).await;

    let written = calculate_metrics_until(&*db, today).await.unwrap();
    assert_eq!(written.len(), 4, "u1, u2 and the shared bucket yesterday; u1 today: {written:?}");

    let (all, latest) = db.get_metrics(&MetricsQuery::default()).await.unwrap();
    assert_eq!(all.len(), 4);
    assert!(latest.is_some());
    let find = |date: NaiveDate, user: Option<&str>| {
        all.iter().find(|b| b.date == date && b.user_id.as_deref() == user).cloned().expect("bucket")
    };
    let u1 = find(yesterday, Some("u1"));
    assert_eq!((u1.agent_sessions_count, u1.team_sessions_count, u1.workflow_sessions_count), (1, 1, 0));
    assert_eq!((u1.agent_runs_count, u1.team_runs_count, u1.workflow_runs_count), (2, 1, 0));
    assert_eq!(u1.users_count, 1);
    assert_eq!(u1.token_metrics["input_tokens"], json!(30));
    assert_eq!(u1.token_metrics["total_tokens"], json!(40));
    assert_eq!(u1.token_metrics["reasoning_tokens"], json!(0));
    assert_eq!(
        u1.model_metrics,
        json!([
            {"model_id": "claude", "model_provider": "Anthropic", "count": 1},
            {"model_id": "gpt-4o", "model_provider": "OpenAI", "count": 2}
        ])
    );
    assert!(u1.completed, "yesterday is complete");
    let u2 = find(yesterday, Some("u2"));
    assert_eq!((u2.workflow_sessions_count, u2.workflow_runs_count, u2.users_count), (1, 0, 1));
    let shared = find(yesterday, None);
    assert_eq!((shared.agent_sessions_count, shared.agent_runs_count, shared.users_count), (1, 1, 0));
    let today_u1 = find(today, Some("u1"));
    assert!(!today_u1.completed, "today is not over");
    assert_eq!(today_u1.agent_runs_count, 1);

    // Only u1's buckets, and only the shared one.
    let (mine, _) = db.get_metrics(&MetricsQuery { user_id: Some("u1".into()), ..Default::default() }).await.unwrap();
    assert_eq!(mine.len(), 2);
    let (none, _) = db.get_metrics(&MetricsQuery { user_id: Some(String::new()), ..Default::default() }).await.unwrap();
    assert_eq!(none.len(), 1);

    // A new run today: the next pass recomputes only today, in place.
    let mut r = RunOutput::new("s5-run-extra", "s5");
    r.status = RunStatus::Completed;
    r.created_at = t + 30;
    r.agent_id = Some("a1".into());
    db.upsert_run(&r, "s5", Some("u1")).await.unwrap();
    let again = calculate_metrics_until(&*db, today).await.unwrap();
    assert_eq!(again.len(), 1, "completed days are not recalculated: {again:?}");
    let (all, _) = db.get_metrics(&MetricsQuery::default()).await.unwrap();
    assert_eq!(all.len(), 4);
    let today_u1_again = all.iter().find(|b| b.date == today && b.user_id.as_deref() == Some("u1")).unwrap();
    assert_eq!(today_u1_again.agent_runs_count, 2);
    assert_eq!(today_u1_again.id, today_u1.id, "recalculation keeps the bucket's id");

    // The next day completes today's buckets.
    let tomorrow = today.succ_opt().unwrap();
    let next = calculate_metrics_until(&*db, tomorrow).await.unwrap();
    assert!(next.iter().any(|b| b.date == today && b.completed));
    assert!(next.iter().any(|b| b.date == tomorrow && !b.completed && b.agent_sessions_count == 1));
}

macro_rules! on_adapters {
    ($($adapter:ident => $make:expr),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $adapter() {
                metrics_are_calculated_per_user($make).await;
            }
        )*
    };
}

async fn sqlite() -> Arc<agno_db::SqliteDb> {
    let dir = std::env::temp_dir().join("agno-rs-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("metrics-{}.db", agno_core::new_id()));
    let db = agno_db::SqliteDb::connect(path.to_str().unwrap()).await.unwrap();
    db.create_tables().await.unwrap();
    Arc::new(db)
}

on_adapters!(
    memory => Arc::new(agno_db::InMemoryDb::new()),
    sqlite_file => sqlite().await,
);
