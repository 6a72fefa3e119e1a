//! AgentOS over HTTP, measured the way Python Agno's figures were taken: `agno serve` as its own
//! process, an agent on the fake OpenAI server (1 ms latency), SQLite storage, clients on
//! loopback. Prints startup time, `GET /health` rate, non-streaming and streaming run rates and
//! latencies at 1/8/32 concurrent clients, and the server's RSS, beside Python AgentOS 3.1.10.
//! Then durable background runs at concurrency 8/32/128 on SQLite and (with `AGNO_BENCH_PG`) on
//! PostgreSQL: accept rate, end-to-end runs/s (accepted -> all COMPLETED), the claim latency the
//! server reports, and PostgreSQL statements (or transactions) per run.
//!
//! Run: `cargo bench -p agno-cli --bench serve` (`AGNO_BENCH_ONLY=statements`: only the SQLite
//! statements per run, by statement; `AGNO_BENCH_ONLY=queue`: only the background rows,
//! `AGNO_BENCH_CONCURRENCY=32` only that concurrency); for PostgreSQL add
//! `AGNO_BENCH_PG=postgresql://postgres@127.0.0.1:5432/agno_bench?schema=agno_bench_queue` (the
//! schema is dropped and recreated per row; a database of its own keeps other clients out of the
//! statement counts, which are printed per statement when `pg_stat_statements` is loaded).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agno_testkit::{FakeProvider, Reply};
use common::{Usage, percentile_ms, rss_mib, start_logging_server, start_server};
use futures::StreamExt;

struct Figures {
    per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    first_content_p50_ms: Option<f64>,
}

/// `total` requests from `concurrency` clients; each returns its latency (and, streaming, the
/// time to the first content event).
async fn load<F, Fut>(concurrency: usize, total: usize, one: F) -> Figures
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = (Duration, Option<Duration>)> + Send,
{
    let one = Arc::new(one);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (one, next) = (Arc::clone(&one), Arc::clone(&next));
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= total {
                    break out;
                }
                out.push(one(i).await);
            }
        }));
    }
    let mut latencies = Vec::new();
    let mut firsts = Vec::new();
    for t in tasks {
        for (l, f) in t.await.unwrap() {
            latencies.push(l);
            firsts.extend(f);
        }
    }
    let elapsed = started.elapsed();
    latencies.sort();
    firsts.sort();
    Figures {
        per_s: total as f64 / elapsed.as_secs_f64(),
        p50_ms: percentile_ms(&latencies, 0.50),
        p99_ms: percentile_ms(&latencies, 0.99),
        first_content_p50_ms: (!firsts.is_empty()).then(|| percentile_ms(&firsts, 0.50)),
    }
}

async fn run_once(client: reqwest::Client, url: String, i: usize, stream: bool) -> (Duration, Option<Duration>) {
    let started = Instant::now();
    let form = reqwest::multipart::Form::new()
        .text("message", format!("question {i}"))
        .text("stream", stream.to_string())
        .text("session_id", format!("bench-{i}"));
    let resp = client.post(&url).multipart(form).send().await.unwrap();
    assert!(resp.status().is_success(), "run failed: {}", resp.status());
    if !stream {
        let _ = resp.bytes().await.unwrap();
        return (started.elapsed(), None);
    }
    let mut first = None;
    let mut events = eventsource_stream::EventStream::new(resp.bytes_stream());
    while let Some(ev) = events.next().await {
        let ev = ev.unwrap();
        if first.is_none() && ev.event == "RunContent" {
            first = Some(started.elapsed());
        }
    }
    (started.elapsed(), first)
}

/// The PostgreSQL database of the background figures, read with `psql` (its URL without
/// `?schema=`), and how it counts work: `pg_stat_statements` when the extension is loaded, else
/// committed transactions from `pg_stat_database`.
#[derive(Clone)]
struct PgTarget {
    conn: String,
    schema: String,
    statements: bool,
}

impl PgTarget {
    fn new(url: &str) -> PgTarget {
        let (conn, query) = url.split_once('?').unwrap_or((url, ""));
        let schema = query.split('&').find_map(|kv| kv.strip_prefix("schema=")).unwrap_or("public").to_owned();
        assert!(schema.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "schema {schema:?}");
        let mut pg = PgTarget { conn: conn.to_owned(), schema, statements: false };
        pg.statements = pg.try_query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements").is_some()
            && pg.try_query(&pg.counter_sql(true)).is_some();
        pg
    }

    fn psql(&self, sql: &str) -> Result<String, String> {
        let out = Command::new("psql")
            .args([self.conn.as_str(), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .map_err(|e| format!("cannot run psql: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    fn try_query(&self, sql: &str) -> Option<String> {
        self.psql(sql).ok()
    }

    fn query(&self, sql: &str) -> String {
        self.psql(sql).map_err(|e| format!("psql failed on {sql}: {e}")).unwrap()
    }

    fn counter_sql(&self, statements: bool) -> String {
        if statements {
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements \
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
                .to_owned()
        } else {
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()".to_owned()
        }
    }

    /// Statements (or transactions) run in this database so far.
    fn counter(&self) -> u64 {
        self.query(&self.counter_sql(self.statements)).parse().unwrap()
    }

    fn counter_name(&self) -> &'static str {
        if self.statements {
            "statements/run (pg_stat_statements, BEGIN/COMMIT included)"
        } else {
            "transactions/run (pg_stat_database.xact_commit; pg_stat_statements is not loaded)"
        }
    }

    fn recreate_schema(&self) {
        self.query(&format!("DROP SCHEMA IF EXISTS \"{0}\" CASCADE; CREATE SCHEMA \"{0}\"", self.schema));
        if self.statements {
            // Counted per statement from here on (the figure itself is a difference of sums).
            self.query("SELECT pg_stat_statements_reset()");
        }
    }

    /// The statements run most often since the last reset, per run: `(calls per run, first
    /// words)`, the bench's own polls left out.
    fn top_statements(&self, runs: usize) -> Vec<(f64, String)> {
        if !self.statements {
            return Vec::new();
        }
        let sql = "SELECT calls, regexp_replace(left(query, 110), '\\s+', ' ', 'g') FROM pg_stat_statements \
                   WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                   AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE 'SELECT count(*) FROM \"%' \
                   ORDER BY calls DESC LIMIT 16";
        self.query(sql)
            .lines()
            .filter_map(|l| l.split_once('|'))
            .map(|(calls, q)| (calls.parse::<f64>().unwrap_or(0.0) / runs as f64, q.to_owned()))
            .filter(|(per_run, _)| *per_run >= 0.05)
            .collect()
    }

    fn completed_jobs(&self) -> u64 {
        let sql = format!("SELECT count(*) FROM \"{}\".agno_jobs WHERE status = 'completed'", self.schema);
        self.try_query(&sql).and_then(|n| n.parse().ok()).unwrap_or(0)
    }
}

/// Durable background runs: `total` submissions from `concurrency` clients to a server with
/// `max_concurrency = concurrency` (accept latency and rate), then the time until every run is
/// COMPLETED; the claim latency the server reports; on PostgreSQL, the statements (or
/// transactions) per run, the bench's own polls subtracted (server startup included).
async fn background(config: &std::path::Path, label: &str, concurrency: usize, total: usize, pg: Option<&PgTarget>) {
    let before = pg.map(|pg| {
        pg.recreate_schema();
        pg.counter()
    });
    let (server, _) = start_server(config).await;
    let client = reqwest::Client::builder().pool_max_idle_per_host(256).build().unwrap();
    let url = format!("{}/agents/bench/runs", server.base);
    let started = Instant::now();
    let accept = {
        let (c, u) = (client.clone(), url.clone());
        load(concurrency, total, move |i| {
            let (c, u) = (c.clone(), u.clone());
            async move {
                let t = Instant::now();
                let form = reqwest::multipart::Form::new()
                    .text("message", format!("background {i}"))
                    .text("stream", "false")
                    .text("background", "true")
                    .text("session_id", format!("bg-{i}"));
                let resp = c.post(&u).multipart(form).send().await.unwrap();
                assert_eq!(resp.status().as_u16(), 202);
                let _ = resp.bytes().await.unwrap();
                (t.elapsed(), None)
            }
        })
        .await
    };
    // On PostgreSQL the wait reads the database (one statement per poll, subtracted below)
    // rather than /queue/stats, whose per-status counts would weigh on the per-run figure.
    let stats_url = format!("{}/queue/stats", server.base);
    let mut polls = 0_u64;
    loop {
        let completed = match pg {
            Some(pg) => {
                polls += 1;
                let pg = pg.clone();
                tokio::task::spawn_blocking(move || pg.completed_jobs()).await.unwrap()
            }
            None => {
                let stats: serde_json::Value = client.get(&stats_url).send().await.unwrap().json().await.unwrap();
                stats["jobs"]["completed"].as_u64().unwrap_or(0)
            }
        };
        if completed == total as u64 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(600), "background runs did not finish ({completed}/{total})");
        tokio::time::sleep(Duration::from_millis(if pg.is_some() { 50 } else { 20 })).await;
    }
    let all_done = started.elapsed();
    let (hwm, _) = rss_mib(server.child.id());
    let stats: serde_json::Value = client.get(&stats_url).send().await.unwrap().json().await.unwrap();
    let claim = match stats.get("claim_latency_ms") {
        Some(c) => format!("claim p50 {} ms, p99 {} ms ({} claims)", c["p50"], c["p99"], c["samples"]),
        None => "claim latency n/a".to_owned(),
    };
    drop(server);
    let per_run = pg.zip(before).map(|(pg, before)| {
        // The server's connections are closed: their statistics are flushed.
        std::thread::sleep(Duration::from_millis(500));
        let after = pg.counter();
        let work = after.saturating_sub(before).saturating_sub(polls);
        format!("; {:.1} {}", work as f64 / total as f64, pg.counter_name())
    });
    let top = pg.map(|pg| pg.top_statements(total)).unwrap_or_default();
    println!(
        "    {label} c={concurrency:>3}: accept {:>5.0}/s (p50 {:.1} ms, p99 {:.1} ms); all {total} COMPLETED after {:.2} s = {:.0} runs/s; {claim}; peak RSS {hwm:.1} MiB{}",
        accept.per_s,
        accept.p50_ms,
        accept.p99_ms,
        all_done.as_secs_f64(),
        total as f64 / all_done.as_secs_f64(),
        per_run.unwrap_or_default()
    );
    for (per_run, statement) in top {
        println!("        {per_run:>5.2}/run  {statement}");
    }
}

/// `line` without its terminal colour codes (`ESC [ ... m`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// SQL statements one non-streaming run costs on SQLite (session new, then continued): a server
/// logging every statement (sqlx's `sqlx::query` events) runs 100 runs, 2 per session, at c=1.
async fn statements_per_run(config: &std::path::Path, dir: &std::path::Path, client: &reqwest::Client) {
    let log = dir.join("statements.log");
    let (server, _) = start_logging_server(config, "error,sqlx::query=debug", Some(&log)).await;
    let url = format!("{}/agents/bench/runs", server.base);
    let count =
        || std::fs::read_to_string(&log).unwrap_or_default().lines().filter(|l| l.contains("sqlx::query")).count();
    let before = count();
    let runs = 100;
    for i in 0..runs {
        let form = reqwest::multipart::Form::new()
            .text("message", format!("question {i}"))
            .text("stream", "false")
            .text("session_id", format!("statements-{}", i / 2));
        let resp = client.post(&url).multipart(form).send().await.unwrap();
        assert!(resp.status().is_success(), "run failed: {}", resp.status());
        let _ = resp.bytes().await.unwrap();
    }
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("sqlx::query")).skip(before).collect();
    println!("  SQLite statements per non-streaming run (as sqlx logs them): {:.1}", lines.len() as f64 / runs as f64);
    // Which statements: sqlx's `summary` field (the statement's first words).
    let mut kinds: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for line in &lines {
        let plain = strip_ansi(line);
        let summary = plain.split("summary=\"").nth(1).and_then(|s| s.split('"').next()).unwrap_or("?");
        *kinds.entry(summary.chars().take(70).collect()).or_default() += 1;
    }
    let mut kinds: Vec<_> = kinds.into_iter().collect();
    kinds.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    for (summary, n) in kinds.iter().take(12) {
        println!("    {:>5.2}/run  {summary}", *n as f64 / runs as f64);
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let provider = FakeProvider::start().await.unwrap();
        provider.set_fallback(Some(Reply::text("a short answer from the fake model")));
        provider.set_latency(Duration::from_millis(1));
        let dir = std::env::temp_dir().join(format!("agno-bench-serve-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("agentos.toml");
        std::fs::write(
            &config,
            format!(
                "[db]\nurl = \"sqlite://{}\"\n[[agents]]\nid = \"bench\"\n\
                 model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk-bench\" }}\n",
                dir.join("bench.db").display(),
                provider.base_url()
            ),
        )
        .unwrap();
        let client = reqwest::Client::builder().pool_max_idle_per_host(64).build().unwrap();
        let only = std::env::var("AGNO_BENCH_ONLY").unwrap_or_default();
        if only == "statements" {
            statements_per_run(&config, &dir, &client).await;
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
        if only != "queue" {
            let (server, startup) = start_server(&config).await;
            let pid = server.child.id();
            let (_, idle_rss) = rss_mib(pid);
            println!("AgentOS over HTTP (agno serve, SQLite, fake OpenAI model with 1 ms latency, loopback clients)");
            println!("  startup to first /health: {:.0} ms (Python AgentOS: 2.8 s); idle RSS {idle_rss:.1} MiB (Python: 146.5 MiB)", startup.as_secs_f64() * 1000.0);

            let health_url = format!("{}/health", server.base);
            let c = client.clone();
            let health = load(1, 3000, move |_| {
                let (c, url) = (c.clone(), health_url.clone());
                async move {
                    let t = Instant::now();
                    let _ = c.get(&url).send().await.unwrap().bytes().await.unwrap();
                    (t.elapsed(), None)
                }
            })
            .await;
            println!("  GET /health, 1 client: {:.0} req/s, p50 {:.2} ms (Python: 2,900 req/s)", health.per_s, health.p50_ms);

            let url = format!("{}/agents/bench/runs", server.base);
            // Warm-up.
            for i in 0..20 {
                run_once(client.clone(), url.clone(), i, false).await;
            }
            let python = [(1, "82/s, p50 11.7 ms"), (8, "108/s, p99 163 ms"), (32, "104/s, p50 284 ms, p99 499 ms")];
            println!("  non-streaming runs:");
            for (concurrency, py) in python {
                let (c, u) = (client.clone(), url.clone());
                let (runs, before) = (300 * concurrency.min(8), Usage::of(pid));
                let f = load(concurrency, runs, move |i| run_once(c.clone(), u.clone(), i, false)).await;
                let (cpu, switches) = Usage::of(pid).per(before, runs);
                println!(
                    "    c={concurrency:>2}: {:>6.0} runs/s  p50 {:>6.2} ms  p99 {:>6.2} ms  server CPU {cpu:.2} ms/run, {switches:.0} context switches/run   (Python: {py})",
                    f.per_s, f.p50_ms, f.p99_ms
                );
            }
            println!("  streaming runs (time to first RunContent):");
            let python = [(1, "p50 7.7 ms"), (8, "p50 52 ms"), (32, "p50 193 ms")];
            for (concurrency, py) in python {
                let (c, u) = (client.clone(), url.clone());
                let (runs, before) = (200 * concurrency.min(8), Usage::of(pid));
                let f = load(concurrency, runs, move |i| run_once(c.clone(), u.clone(), i, true)).await;
                let (cpu, switches) = Usage::of(pid).per(before, runs);
                println!(
                    "    c={concurrency:>2}: {:>6.0} runs/s  first content p50 {:>6.2} ms  run p99 {:>6.2} ms  server CPU {cpu:.2} ms/run, {switches:.0} context switches/run   (Python: 55-67 runs/s, first text {py})",
                    f.per_s,
                    f.first_content_p50_ms.unwrap_or_default(),
                    f.p99_ms
                );
            }
            let (hwm, rss) = rss_mib(pid);
            println!("  server RSS after the runs: peak {hwm:.1} MiB, now {rss:.1} MiB (Python: 162 MB)");
            drop(server);
            statements_per_run(&config, &dir, &client).await;
        }
        println!(
            "  durable background runs, 1,000 per row from c clients to max_concurrency = c (accepted -> all COMPLETED; \
             Python on PostgreSQL 15, c=32: accept 52/s, p50 579 ms, p99 988 ms; 19 runs/s; all done after 52 s):"
        );
        let write_config = |name: &str, url: &str, concurrency: usize| {
            let path = dir.join(name);
            std::fs::write(
                &path,
                format!(
                    "[db]\nurl = \"{url}\"\n[queue]\nmax_concurrency = {concurrency}\npoll_interval_ms = 100\n[[agents]]\nid = \"bench\"\n\
                     model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk-bench\" }}\n",
                    provider.base_url()
                ),
            )
            .unwrap();
            path
        };
        // `AGNO_BENCH_CONCURRENCY=32`: only that row (comma-separated for several).
        let rows: Vec<usize> = match std::env::var("AGNO_BENCH_CONCURRENCY") {
            Ok(list) => list.split(',').map(|c| c.trim().parse().expect("AGNO_BENCH_CONCURRENCY: numbers")).collect(),
            Err(_) => vec![8, 32, 128],
        };
        for &concurrency in &rows {
            let db = format!("sqlite://{}", dir.join(format!("bg-{concurrency}.db")).display());
            let sqlite = write_config(&format!("bg-sqlite-{concurrency}.toml"), &db, concurrency);
            background(&sqlite, "SQLite    ", concurrency, 1000, None).await;
        }
        match std::env::var("AGNO_BENCH_PG") {
            Ok(url) => {
                let target = PgTarget::new(&url);
                for &concurrency in &rows {
                    let pg = write_config(&format!("bg-pg-{concurrency}.toml"), &url, concurrency);
                    background(&pg, "PostgreSQL", concurrency, 1000, Some(&target)).await;
                }
                target.query(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", target.schema));
            }
            Err(_) => println!(
                "    PostgreSQL: set AGNO_BENCH_PG=postgresql://...?schema=agno_bench_queue to measure it \
                 (a database of its own keeps other clients out of the statement counts)"
            ),
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
}
