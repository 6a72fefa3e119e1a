//! Per-run cost on a long session: 2,000 sequential non-streaming runs in ONE session through
//! `agno serve` (its own process, fake OpenAI model with no latency), with history on (the last
//! 3 runs) and off, on SQLite and PostgreSQL. Prints the mean and p50 latency of runs 1-100 and
//! 1,901-2,000 and their ratio: a run reads only the history it uses, so the ratio stays near 1
//! (Python Agno 3.1.10 re-reads the whole session on every run). Two more rows per database run
//! a compacting agent: `compaction = true` (folds when asked: one `POST .../compact` halfway,
//! whose time is printed) and a 2,000-token threshold (it folds by itself as the context grows,
//! the fake model writing the summaries).
//!
//! Run: `cargo bench -p agno-cli --bench long_session`. PostgreSQL from `AGNO_BENCH_PG` (default
//! `postgresql://postgres@127.0.0.1:5432/test?schema=agno_bench_long`, dropped and recreated per
//! row); `AGNO_BENCH_RUNS` changes the session length (default 2,000); `AGNO_BENCH_ONLY=sqlite` or
//! `=postgresql` measures one database.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use agno_testkit::{FakeProvider, Reply};
use common::{percentile_ms, start_server};

/// Mean and p50 of a window of latencies, in milliseconds.
fn window(latencies: &[Duration]) -> (f64, f64) {
    let mean = latencies.iter().map(Duration::as_secs_f64).sum::<f64>() / latencies.len() as f64 * 1000.0;
    let mut sorted = latencies.to_vec();
    sorted.sort();
    (mean, percentile_ms(&sorted, 0.5))
}

fn drop_schema(pg_url: &str) {
    let Some((base, schema)) = pg_url.split_once("?schema=") else { return };
    let _ = std::process::Command::new("psql")
        .args([base, "-q", "-c", &format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE")])
        .output();
}

/// How the agent of a row keeps its history.
#[derive(Clone, Copy)]
struct Mode {
    label: &'static str,
    history: bool,
    /// Appended to the agent's config.
    compaction: &'static str,
    /// Ask for a fold halfway.
    compact_halfway: bool,
}

const MODES: [Mode; 4] = [
    Mode { label: "off", history: false, compaction: "", compact_halfway: false },
    Mode { label: "on (3 runs)", history: true, compaction: "", compact_halfway: false },
    Mode {
        label: "compaction, folded when asked",
        history: true,
        compaction: "compaction = true\n",
        compact_halfway: true,
    },
    Mode {
        label: "compaction at 2,000 tokens",
        history: true,
        compaction: "compaction = { compact_at_tokens = 2000, uncompacted_runs = 5 }\n",
        compact_halfway: false,
    },
];

async fn one_session(label: &str, db_url: &str, mode: Mode, provider: &FakeProvider, runs: usize) {
    let history = mode.history;
    let dir = std::env::temp_dir().join(format!("agno-bench-long-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("agentos.toml");
    std::fs::write(
        &config,
        format!(
            "[db]\nurl = \"{db_url}\"\n[[agents]]\nid = \"bench\"\nadd_history_to_context = {history}\n{}\
             model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk-bench\" }}\n",
            mode.compaction,
            provider.base_url()
        ),
    )
    .unwrap();
    let (server, _) = start_server(&config).await;
    let client = reqwest::Client::new();
    let url = format!("{}/agents/bench/runs", server.base);
    let session = format!("long-{}", std::process::id());
    let mut latencies = Vec::with_capacity(runs);
    let progress = indicatif::ProgressBar::new(runs as u64);
    let mut fold_time = None;
    for i in 0..runs {
        if mode.compact_halfway && i == runs / 2 {
            let started = Instant::now();
            let resp =
                client.post(format!("{}/agents/bench/sessions/{session}/compact", server.base)).send().await.unwrap();
            assert!(resp.status().is_success(), "compact failed: {}", resp.status());
            let body: serde_json::Value = resp.json().await.unwrap();
            assert_eq!(body["compacted"], true, "{body}");
            fold_time = Some(started.elapsed());
        }
        let started = Instant::now();
        let resp = client
            .post(&url)
            .form(&[("message", format!("message {i}")), ("stream", "false".into()), ("session_id", session.clone())])
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success(), "run {i} failed: {}", resp.status());
        let _ = resp.bytes().await.unwrap();
        latencies.push(started.elapsed());
        progress.inc(1);
    }
    progress.finish_and_clear();
    drop(server);
    let tail = runs.saturating_sub(100);
    let (first_mean, first_p50) = window(&latencies[..100.min(runs)]);
    let (last_mean, last_p50) = window(&latencies[tail..]);
    let fold = fold_time
        .map_or(String::new(), |t| format!(" (the fold of {} runs: {:.1} ms)", runs / 2, t.as_secs_f64() * 1000.0));
    println!(
        "| {label} | history {}{fold} | {first_mean:.2} ms (p50 {first_p50:.2}) | {last_mean:.2} ms (p50 {last_p50:.2}) | {:.2} |",
        mode.label,
        last_mean / first_mean
    );
}

fn main() {
    let runs: usize = std::env::var("AGNO_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(2000).max(200);
    let pg = std::env::var("AGNO_BENCH_PG")
        .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test?schema=agno_bench_long".to_owned());
    let only = std::env::var("AGNO_BENCH_ONLY").unwrap_or_default().to_lowercase();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let provider = FakeProvider::start().await.unwrap();
        provider.set_fallback(Some(Reply::text("ok")));
        println!("{runs} sequential non-streaming runs in one session through agno serve (fake model, no latency)");
        println!("| database | history | runs 1-100 mean | runs {}-{runs} mean | ratio |", runs - 99);
        println!("|---|---|---|---|---|");
        for (n, mode) in MODES.into_iter().enumerate() {
            let dir = std::env::temp_dir().join(format!("agno-bench-long-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let sqlite = dir.join(format!("long-{n}.db"));
            let _ = std::fs::remove_file(&sqlite);
            if only.is_empty() || only == "sqlite" {
                one_session("SQLite", &format!("sqlite://{}", sqlite.display()), mode, &provider, runs).await;
            }
            if only.is_empty() || only.starts_with("postgres") {
                drop_schema(&pg);
                one_session("PostgreSQL", &pg, mode, &provider, runs).await;
                drop_schema(&pg);
            }
        }
    });
}
