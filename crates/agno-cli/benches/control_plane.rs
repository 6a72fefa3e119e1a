//! Page loads of the control plane (`/ui`) on a big database: 10,000 sessions of 10 runs each
//! (100,000 runs, written straight into a SQLite file first), served by `agno serve` in its own
//! process. Each page is loaded sequentially (one browser's worth of requests, HTML only) and its
//! p50/p99 time and size are printed: listings are paged and never load run bodies, so the first
//! and the last page of sessions cost alike.
//!
//! Run: `cargo bench -p agno-cli --bench control_plane`. `AGNO_BENCH_SESSIONS` (default 10,000)
//! and `AGNO_BENCH_RUNS_PER_SESSION` (default 10) change the size; `AGNO_BENCH_LOADS` (default
//! 50) the loads per page.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use agno::core::{AgentSession, Message, RunInput, RunOutput, RunStatus, StateUpdate};
use common::{percentile_ms, start_server};
use serde_json::json;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn run_of(session: &str, i: usize, at: i64) -> RunOutput {
    let mut run = RunOutput::new(format!("{session}-run-{i}"), session);
    run.agent_id = Some("assistant".into());
    run.user_id = Some(format!("user-{}", at % 50));
    run.status = RunStatus::Completed;
    run.created_at = at;
    let question = format!("question {i} of {session} about the weather in Paris");
    let answer = format!("answer {i}: {}", "lorem ipsum dolor sit amet ".repeat(40));
    run.input = Some(RunInput::text(question.clone()));
    run.content = Some(json!(answer.clone()));
    run.messages = Some(vec![
        Message::system("You are a helpful assistant."),
        Message::user(question),
        Message::assistant(answer, vec![]),
    ]);
    run
}

/// Writes `sessions` sessions of `runs` runs each into the database at `url`.
async fn seed(url: &str, sessions: usize, runs: usize) -> Duration {
    let started = Instant::now();
    let db = agno::db::open(url).await.unwrap();
    db.create_tables().await.unwrap();
    let progress = indicatif::ProgressBar::new((sessions * runs) as u64);
    for s in 0..sessions {
        let sid = format!("session-{s:05}");
        let at = 1_790_000_000 + i64::try_from(s * runs).unwrap();
        let mut session = AgentSession::new(&sid);
        session.agent_id = Some("assistant".into());
        session.user_id = Some(format!("user-{}", at % 50));
        session.created_at = Some(at);
        session.updated_at = Some(at);
        db.upsert_session(&session, &StateUpdate::Replace).await.unwrap();
        for i in 0..runs {
            let run = run_of(&sid, i, at + i64::try_from(i).unwrap());
            db.upsert_run(&run, &sid, run.user_id.as_deref()).await.unwrap();
        }
        progress.inc(runs as u64);
    }
    progress.finish_and_clear();
    started.elapsed()
}

fn main() {
    let sessions = env_usize("AGNO_BENCH_SESSIONS", 10_000).max(1);
    let runs = env_usize("AGNO_BENCH_RUNS_PER_SESSION", 10).max(1);
    let loads = env_usize("AGNO_BENCH_LOADS", 50).max(5);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let dir = std::env::temp_dir().join(format!("agno-bench-ui-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}", dir.join("ui.db").display());
        let took = seed(&url, sessions, runs).await;
        println!(
            "seeded {sessions} sessions x {runs} runs ({} runs) into SQLite in {:.1} s",
            sessions * runs,
            took.as_secs_f64()
        );
        let config = dir.join("agentos.toml");
        std::fs::write(&config, format!("[db]\nurl = \"{url}\"\n[[agents]]\nid = \"assistant\"\nmodel = \"test\"\n"))
            .unwrap();
        let (server, _) = start_server(&config).await;
        let client = reqwest::Client::new();
        let last_page = sessions.div_ceil(20);
        let middle = format!("session-{:05}", sessions / 2);
        let pages = [
            ("start page", "/ui/".to_owned()),
            ("sessions, page 1", "/ui/sessions?type=agent".to_owned()),
            ("sessions, last page", format!("/ui/sessions?type=agent&page={last_page}")),
            ("sessions, name search", "/ui/sessions?type=agent&q=session-0999".to_owned()),
            ("a session's runs", format!("/ui/sessions/{middle}?type=agent")),
            ("a run", format!("/ui/sessions/{middle}/runs/{middle}-run-0?type=agent")),
            ("memories", "/ui/memories".to_owned()),
            ("metrics", "/ui/metrics".to_owned()),
            ("chat page", "/ui/chat/agents/assistant".to_owned()),
            ("stylesheet", "/ui/assets/ui.css".to_owned()),
        ];
        println!("{loads} sequential loads per page, HTML only (agno serve, SQLite, no auth)");
        println!("| page | p50 | p99 | bytes |");
        println!("|---|---|---|---|");
        for (label, path) in pages {
            let mut times = Vec::with_capacity(loads);
            let mut bytes = 0;
            for _ in 0..loads {
                let started = Instant::now();
                let resp = client.get(format!("{}{path}", server.base)).send().await.unwrap();
                assert!(resp.status().is_success(), "{path}: {}", resp.status());
                bytes = resp.bytes().await.unwrap().len();
                times.push(started.elapsed());
            }
            times.sort();
            println!(
                "| {label} | {:.2} ms | {:.2} ms | {bytes} |",
                percentile_ms(&times, 0.5),
                percentile_ms(&times, 0.99)
            );
        }
        drop(server);
        let _ = std::fs::remove_dir_all(&dir);
    });
}
