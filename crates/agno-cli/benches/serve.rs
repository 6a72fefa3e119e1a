//! AgentOS over HTTP: `agno serve` as its own process and, when `AGNO_BENCH_PYTHON` names the
//! interpreter of a venv with `agno==3.1.*` (what `scripts/bench/compare-python` sets up), Python
//! AgentOS 3.1 the same way, one after the other, driven by the same load generator (this
//! program's HTTP clients on loopback) against the same fake OpenAI server (1 ms latency, in this
//! process) with the same ten agents on the same kind of database. Prints, per server: cold start
//! to a healthy `/health` and idle RSS, the `GET /health` rate, non-streaming and streaming run
//! rates, latencies and server CPU per run at 1/8/32 clients, peak RSS; then durable background
//! runs (accepted -> all COMPLETED) on SQLite (agno only: Python's durable queue needs PostgreSQL
//! or Redis) and, with `AGNO_BENCH_PG`, on PostgreSQL with statements per run; and at the end
//! one table with each figure for both servers and the ratio.
//!
//! Run: `scripts/bench/compare-python` (both servers), or `cargo bench -p agno-cli --bench serve`
//! (agno serve only; `AGNO_BENCH_ONLY=statements`: only the SQLite statements per run, by
//! statement; `AGNO_BENCH_ONLY=queue`: only the background rows; `AGNO_BENCH_ONLY=http`: only the
//! HTTP rows; `AGNO_BENCH_ONLY=interfaces`: the same turn over REST, A2A v0.3 and v1.0 and
//! AG-UI; `AGNO_BENCH_ONLY=tracing`: only what `[tracing]` costs per run, with
//! `AGNO_BENCH_PERF_DIR=<dir>` a `perf record` profile of the server per mode at 32 clients;
//! `AGNO_BENCH_CONCURRENCY=32` only that background concurrency); for PostgreSQL add
//! `AGNO_BENCH_PG=postgresql://postgres@127.0.0.1:5432/agno_bench?schema=agno_bench_queue` (the
//! schema is dropped and recreated per row; a database of its own keeps other clients out of the
//! statement counts, which are printed per statement when `pg_stat_statements` is loaded).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use agno_testkit::{FakeProvider, Reply};
use common::{Server, Usage, free_port, load, rss_mib, start_command, start_logging_server, start_server};
use futures::StreamExt;

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

    /// Completed jobs, read on `conn` (the count is the same statement each time, so the polls
    /// are subtracted from the statements per run).
    async fn completed_jobs(&self, conn: &mut sqlx::PgConnection) -> u64 {
        let sql = format!("SELECT count(*) FROM \"{}\".agno_jobs WHERE status = 'completed'", self.schema);
        let n: Result<i64, _> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(conn).await;
        n.ok().and_then(|n| u64::try_from(n).ok()).unwrap_or(0)
    }
}

/// What one background row measured.
struct Background {
    accept_per_s: f64,
    runs_per_s: f64,
    per_run: Option<f64>,
}

/// Durable background runs: `total` submissions from `concurrency` clients to a server with
/// `max_concurrency = concurrency` (accept latency and rate), then the time until every run is
/// COMPLETED; the claim latency the server reports (agno serve); on PostgreSQL, the statements
/// (or transactions) per run, the bench's own polls subtracted (server startup included).
async fn background(
    bench: &Bench,
    side: Side,
    db: &str,
    concurrency: usize,
    total: usize,
    pg: Option<&PgTarget>,
) -> Background {
    let before = pg.map(|pg| {
        pg.recreate_schema();
        pg.counter()
    });
    let (server, _) = bench.start(side, db, Some(concurrency)).await;
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
    // One connection for the polls: a `psql` process per poll cost a tenth of the machine's CPU.
    let mut poller = match pg {
        Some(pg) => Some(<sqlx::PgConnection as sqlx::Connection>::connect(&pg.conn).await.unwrap()),
        None => None,
    };
    loop {
        let completed = match (pg, poller.as_mut()) {
            (Some(pg), Some(conn)) => {
                polls += 1;
                pg.completed_jobs(conn).await
            }
            _ => {
                let stats: serde_json::Value = client.get(&stats_url).send().await.unwrap().json().await.unwrap();
                stats["jobs"]["completed"].as_u64().unwrap_or(0)
            }
        };
        if completed == total as u64 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(900), "background runs did not finish ({completed}/{total})");
        tokio::time::sleep(Duration::from_millis(if pg.is_some() { 50 } else { 20 })).await;
    }
    let all_done = started.elapsed();
    let (hwm, _) = rss_mib(server.child.id());
    let stats: Option<serde_json::Value> = match client.get(&stats_url).send().await {
        Ok(resp) => resp.json().await.ok(),
        Err(_) => None,
    };
    let claim = match stats.as_ref().and_then(|s| s.get("claim_latency_ms")) {
        Some(c) => format!("claim p50 {} ms, p99 {} ms ({} claims)", c["p50"], c["p99"], c["samples"]),
        None => "claim latency not reported".to_owned(),
    };
    drop(server);
    let per_run = pg.zip(before).map(|(pg, before)| {
        // The server's connections are closed: their statistics are flushed.
        std::thread::sleep(Duration::from_millis(500));
        let after = pg.counter();
        let work = after.saturating_sub(before).saturating_sub(polls);
        work as f64 / total as f64
    });
    let top = pg.map(|pg| pg.top_statements(total)).unwrap_or_default();
    let runs_per_s = total as f64 / all_done.as_secs_f64();
    println!(
        "    {:<7} {:<10} c={concurrency:>3}: accept {:>5.0}/s (p50 {:.1} ms, p99 {:.1} ms); all {total} COMPLETED after {:.2} s = {runs_per_s:.0} runs/s; {claim}; peak RSS {hwm:.1} MiB{}",
        side.name(),
        if pg.is_some() { "PostgreSQL" } else { "SQLite" },
        accept.per_s,
        accept.p50_ms,
        accept.p99_ms,
        all_done.as_secs_f64(),
        match (pg, per_run) {
            (Some(pg), Some(n)) => format!("; {n:.1} {}", pg.counter_name()),
            _ => String::new(),
        }
    );
    for (per_run, statement) in top {
        println!("        {per_run:>5.2}/run  {statement}");
    }
    Background { accept_per_s: accept.per_s, runs_per_s, per_run }
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
    for stream in [false, true] {
        let log = dir.join(format!("statements-{stream}.log"));
        let (server, _) = start_logging_server(config, "error,sqlx::query=debug", Some(&log)).await;
        let url = format!("{}/agents/bench/runs", server.base);
        let count =
            || std::fs::read_to_string(&log).unwrap_or_default().lines().filter(|l| l.contains("sqlx::query")).count();
        let before = count();
        let runs = 100;
        for i in 0..runs {
            let form = reqwest::multipart::Form::new()
                .text("message", format!("question {i}"))
                .text("stream", stream.to_string())
                .text("session_id", format!("statements-{stream}-{}", i / 2));
            let resp = client.post(&url).multipart(form).send().await.unwrap();
            assert!(resp.status().is_success(), "run failed: {}", resp.status());
            let _ = resp.bytes().await.unwrap();
        }
        drop(server);
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| l.contains("sqlx::query")).skip(before).collect();
        let kind = if stream { "streamed" } else { "non-streaming" };
        println!("  SQLite statements per {kind} run (as sqlx logs them): {:.1}", lines.len() as f64 / runs as f64);
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
}

/// The Python side's script (a Python AgentOS configured like the agno serve it is compared with).
const PYTHON_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/bench/python_agentos.py");

/// The agents both servers are configured with (`bench` is the one measured): the cold-start
/// target is for ten.
const AGENTS: usize = 10;

/// A server under measurement.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Agno,
    Python,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Agno => "agno-rs",
            Side::Python => "Python",
        }
    }
}

/// What the servers share: a folder for configs, databases and logs, the fake model's URL, and
/// the Python interpreter when Python is compared.
struct Bench {
    dir: std::path::PathBuf,
    model_url: String,
    python: Option<String>,
}

impl Bench {
    /// The agno serve config for `db` (a URL), with the durable queue at `queue` concurrency.
    fn agno_config(&self, db: &str, queue: Option<usize>) -> std::path::PathBuf {
        let mut text = format!("[db]\nurl = \"{db}\"\n");
        if let Some(concurrency) = queue {
            text.push_str(&format!("[queue]\nmax_concurrency = {concurrency}\npoll_interval_ms = 100\n"));
        }
        for i in 0..AGENTS {
            let id = if i == 0 { "bench".to_owned() } else { format!("helper-{i}") };
            text.push_str(&format!(
                "[[agents]]\nid = \"{id}\"\n\
                 model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk-bench\" }}\n",
                self.model_url
            ));
        }
        let path = self.dir.join(format!("agentos-{}.toml", free_port()));
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Starts `side` on `db` (the durable queue on at `queue` concurrency) and waits until its
    /// `/health` answers; returns it and the time that took.
    async fn start(&self, side: Side, db: &str, queue: Option<usize>) -> (Server, Duration) {
        match side {
            Side::Agno => start_server(&self.agno_config(db, queue)).await,
            Side::Python => {
                let python = self.python.as_deref().expect("AGNO_BENCH_PYTHON");
                let port = free_port();
                let log = std::fs::File::create(self.dir.join(format!("python-{port}.log"))).unwrap();
                let mut command = Command::new(python);
                command
                    .arg(PYTHON_SCRIPT)
                    .args(["--port", &port.to_string(), "--db", db, "--model-base-url", &self.model_url])
                    .args(["--agents", &AGENTS.to_string()])
                    .stdout(std::process::Stdio::null())
                    .stderr(log);
                if let Some(concurrency) = queue {
                    command.args(["--queue-concurrency", &concurrency.to_string()]);
                }
                start_command(command, port).await
            }
        }
    }

    fn sides(&self) -> Vec<Side> {
        let mut sides = vec![Side::Agno];
        if self.python.is_some() {
            sides.push(Side::Python);
        }
        sides
    }
}

/// One figure of the closing table, for each server.
struct Row {
    name: String,
    higher_is_better: bool,
    agno: Option<f64>,
    python: Option<f64>,
}

/// The closing table: each figure for both servers and how many times better agno-rs is.
#[derive(Default)]
struct Table {
    rows: Vec<Row>,
}

impl Table {
    fn set(&mut self, name: &str, higher_is_better: bool, side: Side, value: f64) {
        let row = match self.rows.iter_mut().position(|r| r.name == name) {
            Some(i) => &mut self.rows[i],
            None => {
                self.rows.push(Row { name: name.to_owned(), higher_is_better, agno: None, python: None });
                self.rows.last_mut().unwrap()
            }
        };
        match side {
            Side::Agno => row.agno = Some(value),
            Side::Python => row.python = Some(value),
        }
    }

    fn print(&self) {
        let cell = |v: Option<f64>| match v {
            Some(v) if v >= 100.0 => format!("{v:.0}"),
            Some(v) if v >= 10.0 => format!("{v:.1}"),
            Some(v) => format!("{v:.2}"),
            None => "n/a".to_owned(),
        };
        println!();
        println!("| figure | agno-rs | Python AgentOS 3.1 | agno-rs is |");
        println!("|---|---:|---:|---:|");
        for row in &self.rows {
            let ratio = match (row.agno, row.python) {
                (Some(a), Some(p)) if a > 0.0 && p > 0.0 => {
                    let times = if row.higher_is_better { a / p } else { p / a };
                    format!("{times:.1}x {}", if times >= 1.0 { "better" } else { "worse" })
                }
                _ => String::new(),
            };
            println!("| {} | {} | {} | {ratio} |", row.name, cell(row.agno), cell(row.python));
        }
    }
}

/// The HTTP figures of one server on SQLite: cold start (median of three), idle RSS, `/health`
/// rate, non-streaming and streaming runs at 1/8/32 clients with server CPU per run, peak RSS.
async fn http(bench: &Bench, side: Side, client: &reqwest::Client, table: &mut Table) {
    let db = format!("sqlite://{}", bench.dir.join(format!("http-{}.db", side.name())).display());
    let mut starts = Vec::new();
    for _ in 0..2 {
        let (server, startup) = bench.start(side, &db, None).await;
        starts.push(startup);
        drop(server);
    }
    let (server, startup) = bench.start(side, &db, None).await;
    starts.push(startup);
    starts.sort();
    let startup_ms = starts[1].as_secs_f64() * 1000.0;
    let pid = server.child.id();
    // Settled: what an idle server holds, not the tail of its start.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (_, idle_rss) = rss_mib(pid);
    println!("{} (SQLite, {AGENTS} agents, fake OpenAI model with 1 ms latency, loopback clients)", side.name());
    println!("  cold start to a healthy /health: {startup_ms:.0} ms (median of 3); idle RSS {idle_rss:.1} MiB");
    table.set("cold start to /health, ms (10 agents)", false, side, startup_ms);
    table.set("idle RSS, MiB", false, side, idle_rss);

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
    println!("  GET /health, 1 client: {:.0} req/s, p50 {:.2} ms", health.per_s, health.p50_ms);
    table.set("GET /health, 1 client, req/s", true, side, health.per_s);

    let url = format!("{}/agents/bench/runs", server.base);
    // Warm-up.
    for i in 0..20 {
        run_once(client.clone(), url.clone(), i, false).await;
    }
    for stream in [false, true] {
        println!(
            "  {} runs:",
            if stream { "streamed (first content: the first RunContent event)" } else { "non-streaming" }
        );
        let kind = if stream { "streamed" } else { "non-streaming" };
        for concurrency in [1, 8, 32] {
            let (c, u) = (client.clone(), url.clone());
            let runs = if stream { 200 } else { 300 } * concurrency.min(8);
            let before = Usage::of(pid);
            let f = load(concurrency, runs, move |i| run_once(c.clone(), u.clone(), i, stream)).await;
            let (cpu, switches) = Usage::of(pid).per(before, runs);
            let first =
                f.first_content_p50_ms.map(|ms| format!("  first content p50 {ms:>6.2} ms")).unwrap_or_default();
            println!(
                "    c={concurrency:>2}: {:>6.0} runs/s  p50 {:>6.2} ms  p99 {:>6.2} ms{first}  server CPU {cpu:.2} ms/run, {switches:.0} context switches/run",
                f.per_s, f.p50_ms, f.p99_ms
            );
            table.set(&format!("{kind} runs/s, c={concurrency}"), true, side, f.per_s);
            table.set(&format!("{kind} p50 ms, c={concurrency}"), false, side, f.p50_ms);
            table.set(&format!("{kind} p99 ms, c={concurrency}"), false, side, f.p99_ms);
            if let Some(ms) = f.first_content_p50_ms {
                table.set(&format!("streamed first content p50 ms, c={concurrency}"), false, side, ms);
            }
            table.set(&format!("{kind} server CPU ms/run, c={concurrency}"), false, side, cpu);
        }
    }
    let (hwm, rss) = rss_mib(pid);
    println!("  server RSS after the runs: peak {hwm:.1} MiB, now {rss:.1} MiB");
    table.set("peak RSS after the runs, MiB", false, side, hwm);
}

/// An OTLP/HTTP collector that takes every export and answers 200 (what a collector costs the
/// exporting server, without a collector's own work on the same cores); its address.
async fn otlp_sink() -> String {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut conn = tokio::io::BufReader::new(conn);
                loop {
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if conn.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if conn.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    let ok = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if conn.get_mut().write_all(ok).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

/// `perf record` (CPU-clock samples with call graphs) of process `pid` while it lives, into
/// `$AGNO_BENCH_PERF_DIR/{name}.data`, when that variable is set (nothing otherwise). Read it
/// with `perf report -i <file> --no-children --sort sym`.
struct Profile(Option<std::process::Child>);

impl Profile {
    fn start(pid: u32, name: &str) -> Profile {
        let Some(dir) = std::env::var_os("AGNO_BENCH_PERF_DIR") else { return Profile(None) };
        let out = std::path::Path::new(&dir).join(format!("{name}.data"));
        let child = Command::new("perf")
            .args(["record", "-q", "-e", "cpu-clock", "-g", "-p", &pid.to_string(), "-o"])
            .arg(&out)
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| eprintln!("cannot start perf (AGNO_BENCH_PERF_DIR is set): {e}"))
            .ok();
        // perf attaches asynchronously: give it a moment before the load starts.
        std::thread::sleep(Duration::from_millis(300));
        Profile(child)
    }
}

impl Drop for Profile {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            // SIGINT: perf writes its file and exits.
            let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
            let _ = child.wait();
        }
    }
}

/// The cost of tracing: agno serve on SQLite with `[tracing]` off, on (spans stored in the same
/// database) and on with OTLP export too, non-streaming runs at 1 and 32 clients, rounds
/// alternating the three so that each sees the same machine; medians of the rounds, and what
/// tracing adds.
async fn tracing_overhead(bench: &Bench, client: &reqwest::Client) {
    // More rounds (`AGNO_BENCH_ROUNDS`) narrow the medians: rounds differ by several percent here.
    let rounds: usize = std::env::var("AGNO_BENCH_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(3).max(1);
    // 50 warm-up runs, then 300 at 1 client and 2,400 at 32.
    const TOTAL_RUNS: u64 = 50 + 300 + 2400;
    const MODES: [&str; 3] = ["off", "stored", "stored + OTLP"];
    println!(
        "tracing overhead (agno serve, SQLite, non-streaming runs; {rounds} rounds alternating off / stored / \
         stored + OTLP to a local sink, medians):"
    );
    let sink = otlp_sink().await;
    let mut figures: std::collections::BTreeMap<(usize, usize), (Vec<f64>, Vec<f64>)> = Default::default();
    let mut stored = 0;
    for round in 0..rounds {
        for (mode, name) in MODES.iter().enumerate() {
            let traced = mode > 0;
            let db = format!("sqlite://{}", bench.dir.join(format!("tracing-{round}-{mode}.db")).display());
            let config = bench.agno_config(&db, None);
            if traced {
                let mut text = std::fs::read_to_string(&config).unwrap();
                text.push_str("[tracing]\nenabled = true\n");
                if *name == "stored + OTLP" {
                    text.push_str(&format!("otlp_endpoint = \"{sink}\"\n"));
                }
                std::fs::write(&config, text).unwrap();
            }
            let (server, _) = start_server(&config).await;
            let pid = server.child.id();
            let url = format!("{}/agents/bench/runs", server.base);
            for i in 0..50 {
                run_once(client.clone(), url.clone(), i, false).await;
            }
            for concurrency in [1, 32] {
                let runs = 300 * concurrency.min(8);
                let (c, u) = (client.clone(), url.clone());
                let profile = (concurrency == 32).then(|| Profile::start(pid, &format!("tracing-{round}-{mode}")));
                let before = Usage::of(pid);
                let f = load(concurrency, runs, move |i| run_once(c.clone(), u.clone(), i, false)).await;
                let (cpu, _) = Usage::of(pid).per(before, runs);
                drop(profile);
                let entry = figures.entry((mode, concurrency)).or_default();
                entry.0.push(f.per_s);
                entry.1.push(cpu);
            }
            if traced {
                // The spans are stored: every run is a trace (checked once the writer caught up).
                let deadline = Instant::now() + Duration::from_secs(30);
                loop {
                    let listed: serde_json::Value = client
                        .get(format!("{}/traces?limit=1", server.base))
                        .send()
                        .await
                        .unwrap()
                        .json()
                        .await
                        .unwrap();
                    stored = listed["meta"]["total_count"].as_u64().unwrap_or(0);
                    if stored >= TOTAL_RUNS || Instant::now() > deadline {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            drop(server);
        }
    }
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    for concurrency in [1, 32] {
        let off_cpu = median(&figures[&(0, concurrency)].1);
        for (mode, name) in MODES.iter().enumerate() {
            let (rate, cpus) = &figures[&(mode, concurrency)];
            let cpu = median(cpus);
            let (low, high) = cpus.iter().fold((f64::MAX, 0.0f64), |(l, h), c| (l.min(*c), h.max(*c)));
            let added = if mode == 0 {
                String::new()
            } else {
                format!(" ({:+.1}% CPU per run)", (cpu / off_cpu - 1.0) * 100.0)
            };
            println!(
                "    c={concurrency:>2} {name:>14}: {:>6.0} runs/s, {cpu:.3} ms server CPU/run{added} \
                 [rounds {low:.3}..{high:.3}]",
                median(rate)
            );
        }
    }
    println!("    traces stored by the last traced server: {stored} of its {TOTAL_RUNS} runs (with the warm-up)");
}

/// One request of `protocol` for a non-streaming turn (an AG-UI turn is a stream, read to its
/// end): REST's run form, A2A v0.3's `message/send`, A2A v1.0's `SendMessage`, AG-UI's POST.
async fn interface_turn(
    client: reqwest::Client,
    base: String,
    protocol: &'static str,
    i: usize,
) -> (Duration, Option<Duration>) {
    let started = Instant::now();
    let message = |role: &str, with_kind: bool| {
        let part = if with_kind {
            serde_json::json!({"kind": "text", "text": format!("question {i}")})
        } else {
            serde_json::json!({"text": format!("question {i}")})
        };
        serde_json::json!({"role": role, "messageId": format!("m-{i}-{protocol}"), "parts": [part]})
    };
    let resp = match protocol {
        "REST" => {
            return run_once(client, format!("{base}/agents/bench/runs"), i, false).await;
        }
        "A2A v0.3" => {
            let body = serde_json::json!({"jsonrpc": "2.0", "id": i, "method": "message/send", "params": {"message": message("user", true)}});
            client.post(format!("{base}/a2a/agents/bench/v1/message:send")).json(&body).send().await.unwrap()
        }
        "A2A v1.0" => {
            let body = serde_json::json!({"jsonrpc": "2.0", "id": i, "method": "SendMessage", "params": {"message": message("ROLE_USER", false)}});
            let req = client.post(format!("{base}/a2a/agents/bench/v1/message:send")).header("A2A-Version", "1.0");
            req.json(&body).send().await.unwrap()
        }
        _ => {
            let body = serde_json::json!({"threadId": format!("thread-{i}"), "runId": format!("agui-{i}"), "state": {},
                "messages": [{"id": "m", "role": "user", "content": format!("question {i}")}], "tools": [], "context": [], "forwardedProps": {}});
            client.post(format!("{base}/agui")).json(&body).send().await.unwrap()
        }
    };
    assert!(resp.status().is_success(), "{protocol}: {}", resp.status());
    let text = resp.text().await.unwrap();
    assert!(!text.contains("\"error\"") && !text.contains("RUN_ERROR"), "{protocol}: {text}");
    (started.elapsed(), None)
}

/// The same turn over REST, A2A v0.3, A2A v1.0 and AG-UI on one server (SQLite): runs/s, p50 /
/// p99 latency and server CPU per turn at 1 and 8 clients, so what each interface adds to a run
/// is read beside REST's.
async fn interfaces_overhead(bench: &Bench) {
    let client = reqwest::Client::builder().pool_max_idle_per_host(64).build().unwrap();
    let config = bench.agno_config(&format!("sqlite://{}", bench.dir.join("interfaces.db").display()), None);
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[a2a]\nenabled = true\n[agui]\nenabled = true\nagent = \"bench\"\n");
    std::fs::write(&config, text).unwrap();
    let (server, _) = start_server(&config).await;
    let pid = server.child.id();
    println!("one turn per request over each interface (agno serve, SQLite, fake model at 1 ms):");
    println!(
        "    {:<10} {:>8} {:>9} {:>9} {:>9} {:>9}",
        "interface", "clients", "turns/s", "p50 ms", "p99 ms", "CPU ms"
    );
    for protocol in ["REST", "A2A v0.3", "A2A v1.0", "AG-UI"] {
        for i in 0..30 {
            interface_turn(client.clone(), server.base.clone(), protocol, 100_000 + i).await;
        }
        for concurrency in [1, 8] {
            let turns = 200 * concurrency.min(4);
            let (c, base) = (client.clone(), server.base.clone());
            let offset = concurrency * 1_000_000;
            let before = Usage::of(pid);
            let f =
                load(concurrency, turns, move |i| interface_turn(c.clone(), base.clone(), protocol, offset + i)).await;
            let (cpu, _) = Usage::of(pid).per(before, turns);
            println!(
                "    {protocol:<10} {concurrency:>8} {:>9.0} {:>9.2} {:>9.2} {:>9.2}",
                f.per_s, f.p50_ms, f.p99_ms, cpu
            );
        }
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
        let python = std::env::var("AGNO_BENCH_PYTHON").ok().filter(|p| !p.is_empty());
        let bench = Bench { dir: dir.clone(), model_url: provider.base_url(), python };
        let client = reqwest::Client::builder().pool_max_idle_per_host(64).build().unwrap();
        let only = std::env::var("AGNO_BENCH_ONLY").unwrap_or_default();
        let sqlite_url = |name: &str| format!("sqlite://{}", dir.join(name).display());
        if only == "statements" {
            statements_per_run(&bench.agno_config(&sqlite_url("statements.db"), None), &dir, &client).await;
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
        if only == "interfaces" {
            interfaces_overhead(&bench).await;
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
        if only == "tracing" {
            tracing_overhead(&bench, &client).await;
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
        if bench.python.is_none() {
            println!("(agno serve only: set AGNO_BENCH_PYTHON, or run scripts/bench/compare-python, to measure Python AgentOS beside it)");
        }
        let mut table = Table::default();
        if only.is_empty() || only == "http" {
            for side in bench.sides() {
                http(&bench, side, &client, &mut table).await;
            }
            statements_per_run(&bench.agno_config(&sqlite_url("statements.db"), None), &dir, &client).await;
        }
        if only.is_empty() || only == "queue" {
            println!("durable background runs, 1,000 per row from c clients to max_concurrency = c (accepted -> all COMPLETED):");
            // `AGNO_BENCH_CONCURRENCY=32`: only that row (comma-separated for several).
            let rows: Vec<usize> = match std::env::var("AGNO_BENCH_CONCURRENCY") {
                Ok(list) => list.split(',').map(|c| c.trim().parse().expect("AGNO_BENCH_CONCURRENCY: numbers")).collect(),
                Err(_) => vec![8, 32, 128],
            };
            for &concurrency in &rows {
                let db = sqlite_url(&format!("bg-{concurrency}.db"));
                let figures = background(&bench, Side::Agno, &db, concurrency, 1000, None).await;
                table.set(&format!("durable queue on SQLite, runs/s, c={concurrency}"), true, Side::Agno, figures.runs_per_s);
            }
            if bench.python.is_some() {
                println!("    Python  SQLite: not measured (Python's durable queue needs PostgreSQL or Redis)");
            }
            match std::env::var("AGNO_BENCH_PG") {
                Ok(url) => {
                    let target = PgTarget::new(&url);
                    for side in bench.sides() {
                        for &concurrency in &rows {
                            let f = background(&bench, side, &url, concurrency, 1000, Some(&target)).await;
                            let label = format!("durable queue on PostgreSQL, c={concurrency}");
                            table.set(&format!("{label}: accepted/s"), true, side, f.accept_per_s);
                            table.set(&format!("{label}: runs/s"), true, side, f.runs_per_s);
                            if let Some(n) = f.per_run {
                                let what = if target.statements { "statements" } else { "transactions" };
                                table.set(&format!("{label}: {what}/run"), false, side, n);
                            }
                        }
                    }
                    target.query(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", target.schema));
                }
                Err(_) => println!(
                    "    PostgreSQL: set AGNO_BENCH_PG=postgresql://...?schema=agno_bench_queue to measure it \
                     (a database of its own keeps other clients out of the statement counts)"
                ),
            }
        }
        table.print();
        let _ = std::fs::remove_dir_all(&dir);
    });
}
