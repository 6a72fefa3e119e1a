//! A backlog of queued background runs drained by one replica: an accepting replica (one worker
//! slot, held by a model call that never answers) takes `N` submissions from 32 clients and is
//! then killed; a second replica (`max_concurrency = 32`, fake model at 1 ms) drains the queue.
//! Prints the accept rate, the drain rate per tenth of the backlog (a claim whose cost grew with
//! the backlog would show as later tenths draining slower), the whole drain's runs/s and the
//! claim latency the draining replica reports.
//!
//! Run: `cargo bench -p agno-cli --bench backlog` (`AGNO_BACKLOG_JOBS`, default 10,000; SQLite,
//! and PostgreSQL too when `AGNO_BENCH_PG` is set, e.g.
//! `postgresql://postgres@127.0.0.1:5432/agno_bench?schema=agno_bench_backlog`, whose schema is
//! dropped and recreated).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use agno_testkit::{FakeProvider, Reply};
use common::{load, start_server};

/// A model endpoint that accepts connections and never answers: the accepting replica's one
/// worker slot stays busy, so everything it accepts stays queued.
async fn black_hole() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    format!("http://{addr}/v1")
}

fn config(
    dir: &std::path::Path,
    name: &str,
    db: &str,
    concurrency: usize,
    depth: usize,
    model_url: &str,
) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "[db]\nurl = \"{db}\"\n[queue]\nmax_concurrency = {concurrency}\nmax_queue_depth = {depth}\npoll_interval_ms = 100\n\
             [[agents]]\nid = \"bench\"\n\
             model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{model_url}\", api_key = \"sk-bench\" }}\n"
        ),
    )
    .unwrap();
    path
}

async fn stats(client: &reqwest::Client, base: &str) -> serde_json::Value {
    client.get(format!("{base}/queue/stats")).send().await.unwrap().json().await.unwrap()
}

async fn backlog(label: &str, db: &str, jobs: usize, dir: &std::path::Path, model_url: &str, hole: &str) {
    let accepting = config(dir, &format!("accept-{label}.toml"), db, 1, jobs + 100, hole);
    let draining = config(dir, &format!("drain-{label}.toml"), db, 32, jobs + 100, model_url);
    let client = reqwest::Client::builder().pool_max_idle_per_host(64).build().unwrap();

    let (acceptor, _) = start_server(&accepting).await;
    let url = format!("{}/agents/bench/runs", acceptor.base);
    let started = Instant::now();
    let submit = {
        let client = client.clone();
        move |i: usize| {
            let (client, url) = (client.clone(), url.clone());
            async move {
                let form = reqwest::multipart::Form::new()
                    .text("message", format!("backlog {i}"))
                    .text("stream", "false")
                    .text("background", "true")
                    .text("session_id", format!("backlog-{i}"));
                let resp = client.post(&url).multipart(form).send().await.unwrap();
                assert_eq!(resp.status().as_u16(), 202, "submission {i}");
                (Duration::ZERO, None)
            }
        }
    };
    load(32, jobs, submit).await;
    let accepted_in = started.elapsed();
    let queued = stats(&client, &acceptor.base).await["jobs"]["queued"].as_u64().unwrap_or(0);
    drop(acceptor);
    println!(
        "  {label}: {jobs} accepted in {:.1} s ({:.0}/s); {queued} queued, 1 held by the killed acceptor",
        accepted_in.as_secs_f64(),
        jobs as f64 / accepted_in.as_secs_f64()
    );

    let (drainer, _) = start_server(&draining).await;
    let target = jobs - 1;
    let started = Instant::now();
    let (mut tenth, mut last) = (1, (Duration::ZERO, 0_usize));
    let mut rates = Vec::new();
    loop {
        let s = stats(&client, &drainer.base).await;
        let done = usize::try_from(s["jobs"]["completed"].as_u64().unwrap_or(0)).unwrap();
        let now = started.elapsed();
        while tenth <= 10 && done >= target * tenth / 10 {
            let (t0, d0) = last;
            let rate = (done - d0) as f64 / (now - t0).as_secs_f64().max(1e-3);
            rates.push(format!("{rate:.0}"));
            last = (now, done);
            tenth += 1;
        }
        if done >= target {
            let claim = &s["claim_latency_ms"];
            println!(
                "  {label}: drained {target} in {:.1} s = {:.0} runs/s; per tenth of the backlog (runs/s): {}; claim p50 {} ms, p99 {} ms ({} claim statements)",
                now.as_secs_f64(),
                target as f64 / now.as_secs_f64(),
                rates.join(" "),
                claim["p50"],
                claim["p99"],
                claim["samples"]
            );
            break;
        }
        assert!(now < Duration::from_secs(1800), "the backlog did not drain ({done}/{target})");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn main() {
    let jobs: usize = std::env::var("AGNO_BACKLOG_JOBS").ok().map_or(10_000, |v| v.parse().expect("a number"));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let provider = FakeProvider::start().await.unwrap();
        provider.set_fallback(Some(Reply::text("a short answer from the fake model")));
        provider.set_latency(Duration::from_millis(1));
        let hole = black_hole().await;
        let dir = std::env::temp_dir().join(format!("agno-bench-backlog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        println!(
            "a backlog of {jobs} queued background runs drained by one replica (max_concurrency = 32, fake model 1 ms):"
        );
        let sqlite = format!("sqlite://{}", dir.join("backlog.db").display());
        backlog("SQLite", &sqlite, jobs, &dir, &provider.base_url(), &hole).await;
        match std::env::var("AGNO_BENCH_PG") {
            Ok(url) => {
                let (conn, query) = url.split_once('?').unwrap_or((&url, ""));
                let schema = query.split('&').find_map(|kv| kv.strip_prefix("schema=")).unwrap_or("public");
                assert!(schema.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "schema {schema:?}");
                let psql = |sql: &str| {
                    let ok = Command::new("psql")
                        .args([conn, "-X", "-q", "-c", sql])
                        .stderr(std::process::Stdio::null())
                        .status()
                        .unwrap()
                        .success();
                    assert!(ok, "psql failed on {sql}");
                };
                psql(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE; CREATE SCHEMA \"{schema}\""));
                backlog("PostgreSQL", &url, jobs, &dir, &provider.base_url(), &hole).await;
                psql(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"));
            }
            Err(_) => {
                println!("  PostgreSQL: set AGNO_BENCH_PG=postgresql://...?schema=agno_bench_backlog to measure it")
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
}
