//! Storage benchmark: the cost of saving run N (v3 one row per run vs a v2-style blob rewrite),
//! reading the newest runs of a long session, and listing many sessions. Prints figures; asserts
//! nothing about time.
//!
//! `cargo bench -p agno-db --bench storage` runs SQLite; set `AGNO_BENCH_PG=postgres://...` to add
//! PostgreSQL (`AGNO_BENCH_SKIP_SQLITE=1` leaves SQLite out; `.ci/run` does not run benchmarks).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agno_core::{AgentSession, Message, RunOutput, RunStatus, SessionQuery, StateUpdate};
use agno_db::Migrate;
use serde_json::json;

const RUNS_IN_SESSION: usize = 2_000;

fn sample_run(session: &str, i: usize) -> RunOutput {
    let mut run = RunOutput::new(format!("{session}-run-{i}"), session);
    run.agent_id = Some("bench-agent".into());
    run.status = RunStatus::Completed;
    run.created_at = 1_700_000_000 + i64::try_from(i).unwrap();
    run.input = Some(agno_core::RunInput::text(format!("question number {i} about the weather in Paris")));
    run.content = Some(json!(format!("answer {i}: {}", "lorem ipsum dolor sit amet ".repeat(20))));
    run.messages = Some(vec![
        Message::system("You are a helpful assistant. Be concise and precise."),
        Message::user(format!("question number {i} about the weather in Paris")),
        Message::assistant(format!("answer {i}: {}", "lorem ipsum dolor sit amet ".repeat(20)), vec![]),
    ]);
    run
}

fn session(id: &str) -> AgentSession {
    let mut s = AgentSession::new(id);
    s.agent_id = Some("bench-agent".into());
    s
}

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|kb| kb.parse::<f64>().ok()))
        .map_or(0.0, |kb| kb / 1024.0)
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx].as_secs_f64() * 1e3
}

/// Saves 2,000 runs into one session, one row each; mean time and bytes per save by range.
async fn v3_saves(db: &Arc<dyn Migrate>) -> (f64, f64, f64, f64) {
    let sid = format!("bench-v3-{}", agno_core::new_id());
    db.upsert_session(&session(&sid), &StateUpdate::Replace).await.unwrap();
    let mut times = Vec::with_capacity(RUNS_IN_SESSION);
    let mut bytes = Vec::with_capacity(RUNS_IN_SESSION);
    for i in 0..RUNS_IN_SESSION {
        let run = sample_run(&sid, i);
        bytes.push(serde_json::to_vec(&run).unwrap().len());
        let t = Instant::now();
        db.upsert_run(&run, &sid, None).await.unwrap();
        times.push(t.elapsed());
    }
    summarize(&times, &bytes)
}

fn summarize(times: &[Duration], bytes: &[usize]) -> (f64, f64, f64, f64) {
    let mean_ms = |r: std::ops::Range<usize>| {
        times[r.clone()].iter().map(Duration::as_secs_f64).sum::<f64>() * 1e3 / r.len() as f64
    };
    let mean_b = |r: std::ops::Range<usize>| bytes[r.clone()].iter().sum::<usize>() as f64 / r.len() as f64;
    let n = times.len();
    (mean_ms(0..100), mean_ms(n - 100..n), mean_b(0..100), mean_b(n - 100..n))
}

/// The v2 design on the same engine: every save rewrites the session's whole run list.
async fn v2_blob_saves(url: &str) -> (f64, f64, f64, f64) {
    let mut times = Vec::with_capacity(RUNS_IN_SESSION);
    let mut bytes = Vec::with_capacity(RUNS_IN_SESSION);
    let mut runs: Vec<serde_json::Value> = Vec::new();
    let sid = format!("bench-v2-{}", agno_core::new_id());
    if url.starts_with("sqlite") {
        let pool = sqlx::SqlitePool::connect(url).await.unwrap();
        sqlx::query("CREATE TABLE IF NOT EXISTS bench_v2_sessions (session_id VARCHAR PRIMARY KEY, runs JSON)")
            .execute(&pool)
            .await
            .unwrap();
        for i in 0..RUNS_IN_SESSION {
            runs.push(serde_json::to_value(sample_run(&sid, i)).unwrap());
            let blob = serde_json::to_string(&runs).unwrap();
            bytes.push(blob.len());
            let t = Instant::now();
            sqlx::query("INSERT INTO bench_v2_sessions (session_id, runs) VALUES (?, ?) ON CONFLICT (session_id) DO UPDATE SET runs = excluded.runs")
                .bind(&sid)
                .bind(&blob)
                .execute(&pool)
                .await
                .unwrap();
            times.push(t.elapsed());
        }
    } else {
        let pool = sqlx::PgPool::connect(url.split('?').next().unwrap_or(url)).await.unwrap();
        sqlx::query("CREATE TABLE IF NOT EXISTS bench_v2_sessions (session_id VARCHAR PRIMARY KEY, runs JSONB)")
            .execute(&pool)
            .await
            .unwrap();
        for i in 0..RUNS_IN_SESSION {
            runs.push(serde_json::to_value(sample_run(&sid, i)).unwrap());
            let blob = serde_json::Value::Array(runs.clone());
            bytes.push(blob.to_string().len());
            let t = Instant::now();
            sqlx::query("INSERT INTO bench_v2_sessions (session_id, runs) VALUES ($1, $2) ON CONFLICT (session_id) DO UPDATE SET runs = excluded.runs")
                .bind(&sid)
                .bind(&blob)
                .execute(&pool)
                .await
                .unwrap();
            times.push(t.elapsed());
        }
        sqlx::query("DROP TABLE bench_v2_sessions").execute(&pool).await.unwrap();
    }
    summarize(&times, &bytes)
}

/// Reads the newest 20 runs of a 10,000-run session, 200 times.
async fn newest_runs(db: &Arc<dyn Migrate>) -> (f64, f64) {
    let sid = format!("bench-long-{}", agno_core::new_id());
    db.upsert_session(&session(&sid), &StateUpdate::Replace).await.unwrap();
    fill(db, std::slice::from_ref(&sid), 10_000).await;
    let mut times = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        let s = db.get_session(&sid, None, Some(20)).await.unwrap().unwrap();
        times.push(t.elapsed());
        assert_eq!(s.runs().len(), 20);
    }
    times.sort();
    (pct(&times, 0.5), pct(&times, 0.95))
}

/// Writes `per_session` runs into each session with 8 concurrent writers.
async fn fill(db: &Arc<dyn Migrate>, sessions: &[String], per_session: usize) {
    let jobs: Vec<(String, usize)> =
        sessions.iter().flat_map(|s| (0..per_session).map(move |i| (s.clone(), i))).collect();
    let jobs = Arc::new(std::sync::Mutex::new(jobs));
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let db = Arc::clone(db);
            let jobs = Arc::clone(&jobs);
            tokio::spawn(async move {
                loop {
                    let Some((sid, i)) = jobs.lock().unwrap().pop() else { break };
                    db.upsert_run(&sample_run(&sid, i), &sid, None).await.unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap();
    }
}

/// Lists 1,000 sessions of 100 runs each.
async fn listing(db: &Arc<dyn Migrate>) -> (f64, usize) {
    let prefix = agno_core::new_id();
    let ids: Vec<String> = (0..1_000).map(|i| format!("list-{prefix}-{i}")).collect();
    for id in &ids {
        let mut s = session(id);
        s.user_id = Some(format!("lister-{prefix}"));
        db.upsert_session(&s, &StateUpdate::Replace).await.unwrap();
    }
    fill(db, &ids, 100).await;
    let t = Instant::now();
    let page = db
        .get_sessions(&SessionQuery {
            user_id: Some(format!("lister-{prefix}")),
            limit: Some(1_000),
            ..SessionQuery::default()
        })
        .await
        .unwrap();
    let ms = t.elapsed().as_secs_f64() * 1e3;
    (ms, page.sessions.len())
}

/// Opens a fresh store for one phase: a new SQLite file, or the same PostgreSQL database.
async fn fresh(url_for: &dyn Fn() -> String) -> (Arc<dyn Migrate>, String) {
    let url = url_for();
    let db = agno_db::open(&url).await.unwrap();
    db.create_tables().await.unwrap();
    (db, url)
}

async fn bench(name: &str, url_for: &dyn Fn() -> String) {
    println!("\n== {name}");
    let (db, url) = fresh(url_for).await;
    let (a_ms, z_ms, a_b, z_b) = v3_saves(&db).await;
    println!(
        "save run N, v3 (one row per run):  runs 1-100 {a_ms:.3} ms, {a_b:.0} B | runs 1,901-2,000 {z_ms:.3} ms, {z_b:.0} B | ratio {:.2}",
        z_ms / a_ms
    );
    let (a_ms2, z_ms2, a_b2, z_b2) = v2_blob_saves(&url).await;
    println!(
        "save run N, v2-style blob rewrite: runs 1-100 {a_ms2:.3} ms, {a_b2:.0} B | runs 1,901-2,000 {z_ms2:.3} ms, {z_b2:.0} B | ratio {:.2}",
        z_ms2 / a_ms2
    );
    let (db, _) = fresh(url_for).await;
    let (p50, p95) = newest_runs(&db).await;
    println!("newest 20 runs of a 10,000-run session: p50 {p50:.3} ms, p95 {p95:.3} ms");
    let (db, _) = fresh(url_for).await;
    let (ms, n) = listing(&db).await;
    println!("list {n} sessions of 100 runs each: {ms:.1} ms; peak RSS of the bench so far {:.1} MiB", peak_rss_mib());
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let dir = std::env::temp_dir().join("agno-rs-bench");
        std::fs::create_dir_all(&dir).unwrap();
        let sqlite = || format!("sqlite://{}", dir.join(format!("storage-{}.db", agno_core::new_id())).display());
        if std::env::var_os("AGNO_BENCH_SKIP_SQLITE").is_none() {
            bench("SQLite (a fresh file per phase)", &sqlite).await;
        }
        let _ = std::fs::remove_dir_all(&dir);
        if let Ok(url) = std::env::var("AGNO_BENCH_PG") {
            bench("PostgreSQL", &|| url.clone()).await;
        }
    });
}
