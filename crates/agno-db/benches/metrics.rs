//! Metrics benchmark: recalculating one day of 10,000 sessions (agent, team and workflow, 50
//! users and the shared bucket, 1 to 3 runs each) with one read per session (how metrics were
//! computed before the set-based reads) and with the adapter's set-based reads. Prints the
//! median of 3 recalculations of each; asserts nothing about time, only that both give the same
//! buckets.
//!
//! `cargo bench -p agno-db --bench metrics` runs SQLite; set `AGNO_BENCH_PG=postgres://...` to
//! add PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agno_core::{AgentSession, MetricsBucket, NaiveDate, RunOutput, RunStatus, SessionType, StateUpdate};
use agno_db::{MetricsReads, Migrate, calculate_metrics_with};
use serde_json::json;

const SESSIONS: usize = 10_000;

async fn seed(db: &Arc<dyn Migrate>, day: NaiveDate) {
    let midnight = day.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp();
    let started = Instant::now();
    for i in 0..SESSIONS {
        let id = format!("s{i}");
        let mut s = AgentSession::new(&id);
        let kind = [SessionType::Agent, SessionType::Team, SessionType::Workflow][i % 3];
        match kind {
            SessionType::Agent => s.agent_id = Some("a".into()),
            SessionType::Team => s.team_id = Some("t".into()),
            SessionType::Workflow => s.workflow_id = Some("w".into()),
        }
        let user = (i % 51 != 0).then(|| format!("user-{}", i % 50));
        s.user_id.clone_from(&user);
        let at = midnight + i64::try_from(i % 80_000).unwrap();
        s.created_at = Some(at);
        s.session_data = json!({"session_metrics": {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}})
            .as_object()
            .cloned();
        db.upsert_session(&s, &StateUpdate::Replace).await.unwrap();
        for r in 0..(1 + i % 3) {
            let mut run = RunOutput::new(format!("{id}-r{r}"), &id);
            run.status = RunStatus::Completed;
            run.created_at = at + i64::try_from(r).unwrap();
            run.agent_id = Some("a".into());
            run.model = Some(["gpt-4o-mini", "claude-sonnet-4-5"][r % 2].to_owned());
            run.model_provider = Some(["OpenAI", "Anthropic"][r % 2].to_owned());
            run.content = Some(json!("an answer of a few words"));
            db.upsert_run(&run, &id, user.as_deref()).await.unwrap();
        }
        if (i + 1) % 2_000 == 0 {
            eprintln!("  seeded {} sessions ({:.0} s)", i + 1, started.elapsed().as_secs_f64());
        }
    }
}

/// The buckets without ids and timestamps, for comparing two calculations.
fn values(buckets: &[MetricsBucket]) -> Vec<String> {
    let mut v: Vec<String> = buckets
        .iter()
        .map(|b| {
            format!(
                "{} {:?} {} {} {} {} {} {} {} {} {}",
                b.date,
                b.user_id,
                b.agent_sessions_count,
                b.team_sessions_count,
                b.workflow_sessions_count,
                b.agent_runs_count,
                b.team_runs_count,
                b.workflow_runs_count,
                b.users_count,
                serde_json::to_string(&b.token_metrics).unwrap(),
                b.model_metrics
            )
        })
        .collect();
    v.sort();
    v
}

async fn median(db: &Arc<dyn Migrate>, day: NaiveDate, reads: MetricsReads) -> (Duration, Vec<MetricsBucket>) {
    let mut times = Vec::new();
    let mut last = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        // The day is today for the calculation, so it is incomplete and recomputed every time.
        last = calculate_metrics_with(&**db, day, reads).await.unwrap();
        times.push(t.elapsed());
    }
    times.sort();
    (times[1], last)
}

async fn bench(name: &str, db: Arc<dyn Migrate>) {
    let day: NaiveDate = "2026-11-20".parse().unwrap();
    eprintln!("{name}: seeding {SESSIONS} sessions of one day");
    seed(&db, day).await;
    let (per_session, a) = median(&db, day, MetricsReads::PerSession).await;
    let (set_based, b) = median(&db, day, MetricsReads::SetBased).await;
    assert_eq!(values(&a), values(&b), "both reads give the same buckets");
    println!(
        "{name:<10} day of {SESSIONS} sessions, {} buckets: one read per session {:>8.1} ms | set-based {:>7.1} ms | {:.0}x",
        b.len(),
        per_session.as_secs_f64() * 1e3,
        set_based.as_secs_f64() * 1e3,
        per_session.as_secs_f64() / set_based.as_secs_f64()
    );
}

#[tokio::main]
async fn main() {
    let dir = std::env::temp_dir().join(format!("agno-metrics-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sqlite = agno_db::open(&format!("sqlite://{}", dir.join("bench.db").display())).await.unwrap();
    sqlite.create_tables().await.unwrap();
    bench("SQLite", sqlite).await;
    if let Ok(url) = std::env::var("AGNO_BENCH_PG") {
        let sep = if url.contains('?') { '&' } else { '?' };
        let schema = format!("agno_metrics_bench_{}", std::process::id());
        let pg = agno_db::open(&format!("{url}{sep}schema={schema}")).await.unwrap();
        pg.create_tables().await.unwrap();
        bench("PostgreSQL", pg).await;
        let _ = std::process::Command::new("psql")
            .args([url.as_str(), "-c", &format!("DROP SCHEMA {schema} CASCADE")])
            .output();
    }
    let _ = std::fs::remove_dir_all(&dir);
}
