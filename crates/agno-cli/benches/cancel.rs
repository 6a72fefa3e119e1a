//! How long a cancel takes to stop a background run executing on another replica: two
//! `agno serve` processes on one database, a run held in a model call (or in a tool call running
//! `sleep 60`) on one of them, `POST
//! .../cancel` sent to the other, and the time until the run is stored `CANCELLED` (which its own
//! worker writes once the run has stopped). PostgreSQL carries the cancel by `NOTIFY`; SQLite
//! (two processes on one file, no push) by each replica's 200 ms poll of cancelled jobs.
//!
//! Run: `cargo bench -p agno-cli --bench cancel` (PostgreSQL from `AGNO_BENCH_PG`, default
//! `postgresql://postgres@127.0.0.1:5432/test?schema=agno_bench_cancel`; `AGNO_CANCEL_RUNS`
//! cancels per database, default 100).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use agno_testkit::{FakeProvider, Reply};
use common::{percentile_ms, start_server};
use serde_json::Value;

async fn get(client: &reqwest::Client, url: String) -> Value {
    client.get(url).send().await.unwrap().json().await.unwrap()
}

async fn measure(label: &str, db_url: &str, provider: &FakeProvider, dir: &std::path::Path, runs: usize) {
    let config = dir.join(format!("{}.toml", label.split_whitespace().next().unwrap_or("db")));
    let model = format!(
        "model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}",
        provider.base_url()
    );
    std::fs::write(
        &config,
        format!(
            "[db]\nurl = \"{db_url}\"\n[queue]\npoll_interval_ms = 50\nmax_concurrency = 64\n\
             [[agents]]\nid = \"slow\"\n{model}\n\
             [[agents]]\nid = \"tooling\"\n{model}\ntools = [{{ toolkit = \"shell\", run_shell_command = true }}]\n"
        ),
    )
    .unwrap();
    // Held in a model call that never answers, then in a tool call (`sleep 60`).
    provider.set_fallback(Some(Reply::Delayed(Duration::from_secs(3600), Box::new(Reply::text("never")))));
    cancels(&format!("{label}, in a model call"), &config, "slow", runs).await;
    provider.set_fallback(Some(Reply::ToolCalls {
        content: None,
        calls: vec![("run_shell_command".to_owned(), r#"{"args": ["sleep", "60"]}"#.to_owned())],
    }));
    cancels(&format!("{label}, in a tool call "), &config, "tooling", runs).await;
}

async fn cancels(label: &str, config: &std::path::Path, agent: &str, runs: usize) {
    let replicas = [start_server(config).await.0, start_server(config).await.0];
    let mut workers = Vec::new();
    for r in &replicas {
        let client = reqwest::Client::new();
        workers.push(get(&client, format!("http://127.0.0.1:{}/queue/stats", r.port)).await["worker_id"].clone());
    }
    let client = reqwest::Client::new();
    let mut took = Vec::with_capacity(runs);
    for i in 0..runs {
        let submit_to = replicas[i % 2].port;
        let form = reqwest::multipart::Form::new()
            .text("message", format!("hold {i}"))
            .text("stream", "false")
            .text("background", "true");
        let accepted: Value = client
            .post(format!("http://127.0.0.1:{submit_to}/agents/{agent}/runs"))
            .multipart(form)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let run_id = accepted["run_id"].as_str().unwrap().to_owned();
        // Wait until a replica executes it, then cancel on the other one.
        let deadline = Instant::now() + Duration::from_secs(30);
        let owner = loop {
            let job = get(&client, format!("http://127.0.0.1:{submit_to}/queue/jobs/{run_id}")).await;
            if job["status"] == "running" && !job["locked_by"].is_null() {
                break job["locked_by"].clone();
            }
            assert!(Instant::now() < deadline, "run {run_id} never started");
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        let other = if workers[0] == owner { replicas[1].port } else { replicas[0].port };
        let t0 = Instant::now();
        let resp =
            client.post(format!("http://127.0.0.1:{other}/agents/{agent}/runs/{run_id}/cancel")).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        loop {
            let run = get(&client, format!("http://127.0.0.1:{other}/agents/{agent}/runs/{run_id}")).await;
            if run["status"] == "CANCELLED" {
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(120), "run {run_id} was never cancelled: {run}");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        took.push(t0.elapsed());
    }
    took.sort();
    println!(
        "  {label}: {runs} cancels from the other replica; stopped and stored CANCELLED after p50 {:.0} ms, p95 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        percentile_ms(&took, 0.50),
        percentile_ms(&took, 0.95),
        percentile_ms(&took, 0.99),
        percentile_ms(&took, 1.0)
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let provider = FakeProvider::start().await.unwrap();
        let runs = std::env::var("AGNO_CANCEL_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(100);
        let dir = std::env::temp_dir().join(format!("agno-bench-cancel-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        println!("Cross-replica cancel of a background run (2 agno serve processes, one database)");
        let pg = std::env::var("AGNO_BENCH_PG")
            .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test?schema=agno_bench_cancel".to_owned());
        measure("PostgreSQL (NOTIFY)", &pg, &provider, &dir, runs).await;
        let sqlite = format!("sqlite://{}", dir.join("cancel.db").display());
        measure("SQLite (poll)      ", &sqlite, &provider, &dir, runs).await;
        let _ = std::fs::remove_dir_all(&dir);
    });
}
