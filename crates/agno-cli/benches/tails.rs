//! Many SSE tails of background runs on one replica: `R` background runs (SQLite, the fake model
//! waiting 2 s before it streams a long answer) and `T` tails per run (`POST .../resume` without
//! `last_event_index`: the logged events replayed, then the live ones followed), all open at once. Checks
//! that every tail gets every event of its run, in order and ending with the run's completion,
//! and prints the time until the last tail closed, the server's peak RSS, open file descriptors
//! and CPU per tail.
//!
//! Run: `cargo bench -p agno-cli --bench tails` (`AGNO_TAILS_RUNS`, default 100;
//! `AGNO_TAILS_PER_RUN`, default 100: 10,000 tails). Needs a file-descriptor limit above the
//! tail count for this process and the server (`ulimit -n`); the bench raises its soft limit to
//! the hard one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use agno_testkit::{FakeProvider, Reply};
use common::{Usage, rss_mib, start_server};
use futures::StreamExt;

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().map_or(default, |v| v.parse().expect("a number"))
}

/// Open file descriptors of a process.
fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

/// Raises this process's open-file soft limit to its hard limit (`ulimit -n` from a shell).
fn raise_fd_limit() -> u64 {
    let out = std::process::Command::new("sh").args(["-c", "ulimit -Hn"]).output().unwrap();
    let hard: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(1024);
    // `prlimit` from util-linux changes this process's limit from outside.
    let _ = std::process::Command::new("prlimit")
        .args(["--pid", &std::process::id().to_string(), &format!("--nofile={hard}:{hard}")])
        .status();
    hard
}

/// One tail: the events' names in order, until the stream ends.
async fn tail(client: reqwest::Client, url: String) -> Vec<String> {
    // No `last_event_index`: from the first event.
    let form = reqwest::multipart::Form::new();
    let resp = client.post(&url).multipart(form).send().await.unwrap();
    let status = resp.status().as_u16();
    if status != 200 {
        panic!("tail {url}: {status} {}", resp.text().await.unwrap_or_default());
    }
    let mut names = Vec::new();
    let mut events = eventsource_stream::EventStream::new(resp.bytes_stream());
    while let Some(ev) = events.next().await {
        names.push(ev.unwrap().event);
    }
    names
}

fn main() {
    let runs = setting("AGNO_TAILS_RUNS", 100);
    let per_run = setting("AGNO_TAILS_PER_RUN", 100);
    let limit = raise_fd_limit();
    let total = runs * per_run;
    assert!(limit as usize > total + 100, "{total} tails need `ulimit -n` above {total} (the hard limit is {limit})");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let provider = FakeProvider::start().await.unwrap();
        let answer = "a long answer streamed in many pieces so that every tail follows live events ".repeat(8);
        provider.set_fallback(Some(Reply::Delayed(Duration::from_secs(2), Box::new(Reply::text(answer)))));
        let dir = std::env::temp_dir().join(format!("agno-bench-tails-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("agentos.toml");
        std::fs::write(
            &config,
            format!(
                "[db]\nurl = \"sqlite://{}\"\n[os]\nmax_connections = {connections}\nmax_connections_per_client = {connections}\n\
                 [queue]\nmax_concurrency = {runs}\n[[agents]]\nid = \"bench\"\n\
                 model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk-bench\" }}\n",
                dir.join("tails.db").display(),
                provider.base_url(),
                connections = total + 64,
            ),
        )
        .unwrap();
        let (server, _) = start_server(&config).await;
        let pid = server.child.id();
        let (_, idle_rss) = rss_mib(pid);
        let idle_fds = fds(pid);
        println!(
            "{total} SSE tails ({runs} background runs x {per_run} tails each, from the first event), agno serve on SQLite; \
             idle RSS {idle_rss:.1} MiB, {idle_fds} fds"
        );
        let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
        let before = Usage::of(pid);
        let started = Instant::now();
        let mut run_ids = Vec::new();
        for i in 0..runs {
            let form = reqwest::multipart::Form::new()
                .text("message", format!("tail me {i}"))
                .text("stream", "false")
                .text("background", "true");
            let resp = client.post(format!("{}/agents/bench/runs", server.base)).multipart(form).send().await.unwrap();
            assert_eq!(resp.status().as_u16(), 202);
            let body: serde_json::Value = resp.json().await.unwrap();
            run_ids.push(body["run_id"].as_str().unwrap().to_owned());
        }
        let mut tails = Vec::with_capacity(total);
        for run_id in &run_ids {
            for _ in 0..per_run {
                let url = format!("{}/agents/bench/runs/{run_id}/resume", server.base);
                tails.push((run_id.clone(), tokio::spawn(tail(client.clone(), url))));
            }
        }
        // Sample the server while the tails are open.
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sampler = {
            let done = std::sync::Arc::clone(&done);
            tokio::spawn(async move {
                let (mut peak_fds, mut peak_rss) = (0, 0.0_f64);
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    peak_fds = peak_fds.max(fds(pid));
                    peak_rss = peak_rss.max(rss_mib(pid).1);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                (peak_fds, peak_rss)
            })
        };
        let mut by_run: std::collections::HashMap<String, Vec<Vec<String>>> = std::collections::HashMap::new();
        for (run_id, t) in tails {
            by_run.entry(run_id).or_default().push(t.await.unwrap());
        }
        let took = started.elapsed();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let (peak_fds, peak_rss) = sampler.await.unwrap();
        let (hwm, rss_after) = rss_mib(pid);
        let (cpu, _) = Usage::of(pid).per(before, total);
        // Every tail of a run saw the same events, ending with the run's completion.
        let (mut complete, mut events) = (0, 0);
        for (run_id, seen) in &by_run {
            let first = &seen[0];
            assert_eq!(first.last().map(String::as_str), Some("RunCompleted"), "run {run_id}: {first:?}");
            assert!(seen.iter().all(|s| s == first), "run {run_id}: the tails disagree");
            complete += seen.len();
            events += first.len() * seen.len();
        }
        println!(
            "  every tail got every event: {complete}/{total} tails complete, {events} events delivered ({} per tail) in {:.2} s",
            events / complete.max(1),
            took.as_secs_f64()
        );
        println!(
            "  server: RSS peak {hwm:.1} MiB (sampled with the tails open: {peak_rss:.1} MiB; now {rss_after:.1} MiB), \
             fds peak {peak_fds} (idle {idle_fds}, now {}); CPU {:.3} ms per tail",
            fds(pid),
            cpu
        );
        drop(server);
        let _ = std::fs::remove_dir_all(&dir);
    });
}
