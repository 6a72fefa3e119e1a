//! Chaos for the durable queue: three `agno serve` replicas on one database (a PostgreSQL schema,
//! or one SQLite file the three processes share) share the
//! background work while a chaos task `kill -9`s a random replica every 2-4 s and restarts it on
//! the same port. N background runs are submitted at a steady pace, spread over the replicas; a
//! submission that fails (dead replica, connection cut mid-request) is retried on another replica
//! with the same `Idempotency-Key`. Then the program waits, printing progress, until no accepted
//! run is PENDING/RUNNING and reports from the database and from the HTTP API: accepted,
//! completed, errored, cancelled, lost, stuck, executed more than once, and the kills. It exits
//! with status 1 when a run was lost or stuck.
//!
//! Run: `cargo bench -p agno-cli --bench chaos [-- --runs 1000 --max-attempts 1 --seed 7 --db sqlite]`.
//! Environment (flags win): `AGNO_CHAOS_DB` / `--db` (a database URL, or `sqlite` for a new
//! SQLite file in a temporary folder; default `AGNO_BENCH_PG`, else
//! `postgresql://postgres@127.0.0.1:5432/test?schema=agno_chaos`; the schema is dropped and
//! recreated, a SQLite file removed), `AGNO_CHAOS_RUNS` (1000), `AGNO_CHAOS_MAX_ATTEMPTS` (3; 1 shows runs of killed
//! replicas ending in ERROR), `AGNO_CHAOS_RATE` (submissions per second, 50),
//! `AGNO_CHAOS_LATENCY_MS` (fake model latency, 200: about ten runs are executing when a kill
//! lands), `AGNO_CHAOS_CLIENTS` (16), `AGNO_CHAOS_SEED`, `AGNO_BIN` (the `agno` binary to run).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agno_testkit::{FakeProvider, Reply};
use futures::StreamExt;

const REPLICAS: usize = 3;
const LOCK_GRACE_SECONDS: u64 = 3;
const AGENT: &str = "chaos";

/// The `agno` binary: `AGNO_BIN` when set (a private copy: the shared target directory's
/// `release/agno` is rebuilt by whichever worktree built last), else the one Cargo built.
fn agno_bin() -> String {
    std::env::var("AGNO_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_agno").to_owned())
}

/// A flag (`--name value` or `--name=value`), else an environment variable, else the default.
fn setting<T: std::str::FromStr>(args: &[String], flag: &str, env: &str, default: T) -> T {
    let prefix = format!("{flag}=");
    let raw = args
        .windows(2)
        .find(|w| w[0] == flag)
        .map(|w| w[1].clone())
        .or_else(|| args.iter().find_map(|a| a.strip_prefix(&prefix).map(str::to_owned)))
        .or_else(|| std::env::var(env).ok());
    raw.map_or(default, |v| v.parse().map_err(|_| format!("{flag} / {env}: cannot read {v:?}")).unwrap())
}

/// xorshift64*: reproducible from the printed seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// The database under test, read with its own command-line client (`psql`, or `sqlite3` for a
/// `sqlite://` URL) so that the report never goes through the code it checks.
#[derive(Clone)]
struct Db {
    url: String,
    kind: DbKind,
}

#[derive(Clone)]
enum DbKind {
    /// `conn` is the URL without `?schema=`.
    Postgres {
        conn: String,
        schema: String,
    },
    Sqlite {
        path: PathBuf,
    },
}

impl Db {
    fn parse(url: &str) -> Db {
        if let Some(path) = url.strip_prefix("sqlite://") {
            let path = path.split('?').next().unwrap_or(path);
            return Db { url: url.to_owned(), kind: DbKind::Sqlite { path: PathBuf::from(path) } };
        }
        let (conn, query) = url.split_once('?').unwrap_or((url, ""));
        let schema = query.split('&').find_map(|kv| kv.strip_prefix("schema=")).unwrap_or("public").to_owned();
        assert!(
            schema.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "schema {schema:?}: use letters, digits and _"
        );
        Db { url: url.to_owned(), kind: DbKind::Postgres { conn: conn.to_owned(), schema } }
    }

    /// Rows as lines, columns separated by `|`.
    fn query_blocking(&self, sql: &str) -> String {
        let out = match &self.kind {
            DbKind::Postgres { conn, .. } => Command::new("psql")
                .args([conn.as_str(), "-X", "-q", "-At", "-F", "|", "-v", "ON_ERROR_STOP=1", "-c", sql])
                .output()
                .expect("psql is needed to read the database"),
            DbKind::Sqlite { path } => Command::new("sqlite3")
                .args(["-batch", "-bail", "-separator", "|", "-cmd", ".timeout 10000"])
                .arg(path)
                .arg(sql)
                .output()
                .expect("sqlite3 is needed to read the database"),
        };
        assert!(out.status.success(), "query failed on {sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    async fn query(&self, sql: String) -> String {
        let db = self.clone();
        tokio::task::spawn_blocking(move || db.query_blocking(&sql)).await.unwrap()
    }

    fn table(&self, name: &str) -> String {
        match &self.kind {
            DbKind::Postgres { schema, .. } => format!("\"{schema}\".\"{name}\""),
            DbKind::Sqlite { .. } => format!("\"{name}\""),
        }
    }

    /// The first 200 characters of a text column on one line, without the column separator.
    fn one_line(&self, column: &str) -> String {
        match &self.kind {
            DbKind::Postgres { .. } => format!("left(translate(coalesce({column}, ''), E'\\n\\r|', '   '), 200)"),
            DbKind::Sqlite { .. } => format!(
                "substr(replace(replace(replace(coalesce({column}, ''), char(10), ' '), char(13), ' '), '|', ' '), 1, 200)"
            ),
        }
    }

    /// Starts from an empty database: the schema dropped and created again, or the file (and its
    /// WAL) removed.
    async fn reset(&self) {
        match &self.kind {
            DbKind::Postgres { schema, .. } => {
                self.query(format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE; CREATE SCHEMA \"{schema}\"")).await;
            }
            DbKind::Sqlite { path } => {
                for suffix in ["", "-wal", "-shm"] {
                    let mut file = path.clone().into_os_string();
                    file.push(suffix);
                    let _ = std::fs::remove_file(file);
                }
            }
        }
    }
}

/// One job row, as far as the report needs it.
#[derive(Clone)]
struct JobRow {
    status: String,
    attempt: u32,
    key: String,
    error: String,
}

/// The jobs and runs tables at one moment.
struct Snapshot {
    jobs: HashMap<String, JobRow>,
    runs: HashMap<String, String>,
    /// Run id -> session id.
    sessions: HashMap<String, String>,
}

impl Snapshot {
    async fn read(db: &Db) -> Snapshot {
        let jobs = db
            .query(format!(
                "SELECT id, status, attempt, coalesce(idempotency_key, ''), {} FROM {}",
                db.one_line("error"),
                db.table("agno_jobs")
            ))
            .await;
        let jobs = jobs
            .lines()
            .filter_map(|l| {
                let mut f = l.splitn(5, '|');
                let id = f.next()?.to_owned();
                let row = JobRow {
                    status: f.next()?.to_owned(),
                    attempt: f.next()?.parse().ok()?,
                    key: f.next()?.to_owned(),
                    error: f.next().unwrap_or_default().to_owned(),
                };
                Some((id, row))
            })
            .collect();
        let rows =
            db.query(format!("SELECT run_id, coalesce(status, ''), session_id FROM {}", db.table("agno_runs"))).await;
        let (mut runs, mut sessions) = (HashMap::new(), HashMap::new());
        for line in rows.lines() {
            let mut f = line.splitn(3, '|');
            if let (Some(id), Some(status), Some(session)) = (f.next(), f.next(), f.next()) {
                runs.insert(id.to_owned(), status.to_owned());
                sessions.insert(id.to_owned(), session.to_owned());
            }
        }
        Snapshot { jobs, runs, sessions }
    }

    fn job_counts(&self) -> BTreeMap<&str, usize> {
        let mut counts = BTreeMap::new();
        for job in self.jobs.values() {
            *counts.entry(job.status.as_str()).or_default() += 1;
        }
        counts
    }
}

struct Replica {
    port: u16,
    child: Child,
    worker_id: Option<String>,
    kills: usize,
    starts: usize,
}

impl Drop for Replica {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The knobs of one chaos run.
struct Settings {
    runs: usize,
    max_attempts: u32,
    rate: f64,
    latency_ms: u64,
    clients: usize,
    seed: u64,
    db: Db,
}

/// The three replicas; the lock is never held across an await.
struct Cluster {
    config: PathBuf,
    logs: PathBuf,
    replicas: Mutex<Vec<Replica>>,
    client: reqwest::Client,
}

impl Cluster {
    fn spawn(&self, index: usize, port: u16) -> Child {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.logs.join(format!("replica-{index}.log")))
            .unwrap();
        Command::new(agno_bin())
            .args(["serve", "--config", self.config.to_str().unwrap(), "--port", &port.to_string()])
            .env("AGNO_LOG", "warn")
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    }

    fn port(&self, index: usize) -> u16 {
        self.replicas.lock().unwrap()[index].port
    }

    fn ports(&self) -> Vec<u16> {
        self.replicas.lock().unwrap().iter().map(|r| r.port).collect()
    }

    /// Waits until replica `index` answers `/health` (starting it again if it exited, e.g. when
    /// its port was not free yet) and notes its worker id.
    async fn wait_healthy(&self, index: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let port = self.port(index);
        loop {
            let health = self.client.get(format!("http://127.0.0.1:{port}/health")).send().await;
            if health.is_ok_and(|r| r.status().is_success()) {
                break;
            }
            {
                let mut replicas = self.replicas.lock().unwrap();
                let r = &mut replicas[index];
                if r.child.try_wait().unwrap().is_some() {
                    r.child = self.spawn(index, port);
                    r.starts += 1;
                }
            }
            assert!(Instant::now() < deadline, "replica {index} did not become healthy (see {})", self.logs.display());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let stats = self.client.get(format!("http://127.0.0.1:{port}/queue/stats")).send().await;
        let worker = match stats {
            Ok(r) => r.json::<serde_json::Value>().await.ok().and_then(|s| s["worker_id"].as_str().map(str::to_owned)),
            Err(_) => None,
        };
        self.replicas.lock().unwrap()[index].worker_id = worker;
    }

    /// `kill -9` and an immediate restart on the same port; the killed worker's id.
    fn kill_and_restart(&self, index: usize) -> (u32, Option<String>) {
        let mut replicas = self.replicas.lock().unwrap();
        let r = &mut replicas[index];
        let pid = r.child.id();
        r.child.kill().unwrap(); // SIGKILL: no drain, no final write
        r.child.wait().unwrap();
        r.kills += 1;
        let worker = r.worker_id.take();
        r.child = self.spawn(index, r.port);
        r.starts += 1;
        (pid, worker)
    }

    fn stop_all(&self) {
        let mut replicas = self.replicas.lock().unwrap();
        for r in replicas.iter_mut() {
            let _ = Command::new("kill").args(["-TERM", &r.child.id().to_string()]).status();
        }
        for r in replicas.iter_mut() {
            let deadline = Instant::now() + Duration::from_secs(30);
            while matches!(r.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
    }
}

/// A run as `GET /agents/{id}/runs/{run_id}` shows it: (status, content), or what went wrong.
type HttpView = Result<(String, String), String>;

/// What happened to the submissions.
#[derive(Default)]
struct Submissions {
    /// Per logical submission: the accepted run id and the tries it took.
    accepted: Vec<Option<(String, usize)>>,
    /// Failed tries by kind.
    failures: BTreeMap<String, usize>,
}

fn failure_kind(e: &reqwest::Error) -> String {
    if e.is_connect() {
        "connection refused (replica down)".to_owned()
    } else if e.is_timeout() {
        "timed out".to_owned()
    } else {
        "connection cut mid-request (replica killed)".to_owned()
    }
}

/// One logical submission: tries replica `index % 3` first, then the others in turn, always with
/// the same Idempotency-Key.
async fn submit(client: &reqwest::Client, ports: &[u16], index: usize, key: &str) -> (Option<String>, Vec<String>) {
    let mut failures = Vec::new();
    for attempt in 0..40 {
        let port = ports[(index + attempt) % ports.len()];
        let form = reqwest::multipart::Form::new()
            .text("message", format!("chaos {index}"))
            .text("stream", "false")
            .text("background", "true")
            .text("session_id", format!("chaos-{index}"));
        let sent = client
            .post(format!("http://127.0.0.1:{port}/agents/{AGENT}/runs"))
            .header("Idempotency-Key", key)
            .multipart(form)
            .send()
            .await;
        match sent {
            Ok(resp) if resp.status().as_u16() == 202 => match resp.json::<serde_json::Value>().await {
                Ok(body) => match body["run_id"].as_str() {
                    Some(id) => return (Some(id.to_owned()), failures),
                    None => failures.push(format!("202 without run_id: {body}")),
                },
                Err(e) => failures.push(format!("202, body lost: {}", failure_kind(&e))),
            },
            Ok(resp) => {
                let status = resp.status().as_u16();
                let body = resp.text().await.unwrap_or_default();
                failures.push(format!("HTTP {status}: {}", body.chars().take(160).collect::<String>()));
            }
            Err(e) => failures.push(failure_kind(&e)),
        }
        tokio::time::sleep(Duration::from_millis((20 << attempt.min(4)) as u64)).await;
    }
    (None, failures)
}

/// Warnings and errors of the replicas' logs, grouped by message (ids and values stripped).
fn log_summary(dir: &Path) -> Vec<(String, usize)> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for index in 0..REPLICAS {
        let text = std::fs::read_to_string(dir.join(format!("replica-{index}.log"))).unwrap_or_default();
        for line in text.lines() {
            let Some(pos) = line.find(" WARN ").or_else(|| line.find(" ERROR ")) else { continue };
            let message: Vec<&str> = line[pos..]
                .split_whitespace()
                .map(|w| match w.split_once('=') {
                    Some((k, _)) if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => k,
                    _ => w,
                })
                .collect();
            let message: String = message.join(" ").chars().take(220).collect();
            *counts.entry(message).or_default() += 1;
        }
    }
    let mut counts: Vec<_> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    counts
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runs: usize = setting(&args, "--runs", "AGNO_CHAOS_RUNS", 1000);
    let max_attempts: u32 = setting(&args, "--max-attempts", "AGNO_CHAOS_MAX_ATTEMPTS", 3);
    let rate: f64 = setting(&args, "--rate", "AGNO_CHAOS_RATE", 50.0);
    let latency_ms: u64 = setting(&args, "--latency-ms", "AGNO_CHAOS_LATENCY_MS", 200);
    let clients: usize = setting(&args, "--clients", "AGNO_CHAOS_CLIENTS", 16);
    let default_seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    let seed: u64 = setting(&args, "--seed", "AGNO_CHAOS_SEED", default_seed % 1_000_000);
    let default_db = std::env::var("AGNO_BENCH_PG")
        .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test?schema=agno_chaos".to_owned());
    let mut url: String = setting(&args, "--db", "AGNO_CHAOS_DB", default_db);
    if url == "sqlite" {
        // One file the three replicas share, in a folder of this run's own.
        let dir = std::env::temp_dir().join(format!("agno-chaos-db-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        url = format!("sqlite://{}", dir.join("chaos.db").display());
    }
    let db = Db::parse(&url);
    let settings = Settings { runs, max_attempts, rate, latency_ms, clients, seed, db };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let failed = rt.block_on(chaos(&settings));
    if failed {
        std::process::exit(1);
    }
}

#[allow(clippy::too_many_lines)]
async fn chaos(settings: &Settings) -> bool {
    let Settings { runs, max_attempts, rate, latency_ms, clients, seed, ref db } = *settings;
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::Echo));
    provider.set_latency(Duration::from_millis(latency_ms));

    db.reset().await;
    let dir = std::env::temp_dir().join(format!("agno-chaos-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("agentos.toml");
    std::fs::write(
        &config,
        format!(
            "[db]\nurl = \"{}\"\n[queue]\nmax_concurrency = 32\nmax_queue_depth = {}\nmax_attempts = {max_attempts}\n\
             lock_grace_seconds = {LOCK_GRACE_SECONDS}\nretry_delay_seconds = 1\npoll_interval_ms = 200\n\
             [[agents]]\nid = \"{AGENT}\"\n\
             model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk-chaos\" }}\n",
            db.url,
            (runs * 2).max(1000),
            provider.base_url()
        ),
    )
    .unwrap();
    println!(
        "chaos: {REPLICAS} agno serve replicas on {}, {runs} background runs at {rate}/s from {clients} clients, \
         max_attempts = {max_attempts}, lock_grace_seconds = {LOCK_GRACE_SECONDS}, fake model {latency_ms} ms, \
         kill -9 of a random replica every 2-4 s, seed {seed}",
        db.url
    );
    println!("  agno binary: {}; replica logs: {}", agno_bin(), dir.display());

    let client = reqwest::Client::builder().timeout(Duration::from_secs(20)).build().unwrap();
    let cluster = Arc::new(Cluster {
        config: config.clone(),
        logs: dir.clone(),
        replicas: Mutex::new(Vec::new()),
        client: client.clone(),
    });
    // One at a time: the first creates the tables.
    for index in 0..REPLICAS {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = cluster.spawn(index, port);
        cluster.replicas.lock().unwrap().push(Replica { port, child, worker_id: None, kills: 0, starts: 1 });
        cluster.wait_healthy(index).await;
    }

    let started = Instant::now();
    let stop = Arc::new(tokio::sync::Notify::new());
    let running_at_kills = Arc::new(AtomicUsize::new(0));
    let chaos_task = {
        let (cluster, stop, db, running_at_kills) =
            (Arc::clone(&cluster), Arc::clone(&stop), db.clone(), Arc::clone(&running_at_kills));
        tokio::spawn(async move {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            loop {
                let pause = Duration::from_millis(2000 + rng.below(2001));
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = stop.notified() => break,
                }
                let index = usize::try_from(rng.below(REPLICAS as u64)).unwrap();
                let (pid, worker) = cluster.kill_and_restart(index);
                let killed_at = Instant::now();
                // The dead worker's jobs keep its id until another replica takes them over.
                let held = match &worker {
                    Some(w) => db
                        .query(format!(
                            "SELECT count(*) FROM {} WHERE status = 'running' AND locked_by = '{}'",
                            db.table("agno_jobs"),
                            w.replace('\'', "''")
                        ))
                        .await
                        .trim()
                        .parse()
                        .unwrap_or(0),
                    None => 0,
                };
                running_at_kills.fetch_add(held, Ordering::Relaxed);
                cluster.wait_healthy(index).await;
                println!(
                    "  t={:>5.1} s  kill -9 replica {index} (pid {pid}, {held} runs in flight); back in {:.2} s",
                    started.elapsed().as_secs_f64(),
                    killed_at.elapsed().as_secs_f64()
                );
            }
        })
    };

    // Submissions, paced at `rate`, spread over the replicas.
    let tag = format!("{seed}-{}", std::process::id());
    let subs = Arc::new(Mutex::new(Submissions { accepted: vec![None; runs], failures: BTreeMap::new() }));
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (client, cluster, subs, next, tag) =
            (client.clone(), Arc::clone(&cluster), Arc::clone(&subs), Arc::clone(&next), tag.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= runs {
                    break;
                }
                tokio::time::sleep_until((started + Duration::from_secs_f64(index as f64 / rate)).into()).await;
                let (run_id, failures) =
                    submit(&client, &cluster.ports(), index, &format!("chaos-{tag}-{index}")).await;
                let mut subs = subs.lock().unwrap();
                let tries = failures.len() + 1;
                for f in failures {
                    *subs.failures.entry(f).or_default() += 1;
                }
                subs.accepted[index] = run_id.map(|id| (id, tries));
            }
        }));
    }
    let submitting = {
        let db = db.clone();
        let subs = Arc::clone(&subs);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(3)).await;
                let counts = db
                    .query(format!("SELECT status, count(*) FROM {} GROUP BY status ORDER BY 1", db.table("agno_jobs")))
                    .await
                    .lines()
                    .map(|l| l.replace('|', " "))
                    .collect::<Vec<_>>()
                    .join(", ");
                let (accepted, failed_tries) = {
                    let s = subs.lock().unwrap();
                    (s.accepted.iter().flatten().count(), s.failures.values().sum::<usize>())
                };
                println!(
                    "  t={:>5.1} s  accepted {accepted}/{runs} ({failed_tries} failed tries retried) | jobs: {counts}",
                    started.elapsed().as_secs_f64()
                );
            }
        })
    };
    for t in tasks {
        t.await.unwrap();
    }
    submitting.abort();
    let submitted_after = started.elapsed();
    stop.notify_one();
    chaos_task.await.unwrap();
    for index in 0..REPLICAS {
        cluster.wait_healthy(index).await;
    }
    println!(
        "  t={:>5.1} s  submissions done after {:.1} s; chaos stopped, all {REPLICAS} replicas up; draining",
        started.elapsed().as_secs_f64(),
        submitted_after.as_secs_f64()
    );

    let accepted: Vec<(usize, String, usize)> = subs
        .lock()
        .unwrap()
        .accepted
        .iter()
        .enumerate()
        .filter_map(|(i, a)| a.clone().map(|(id, tries)| (i, id, tries)))
        .collect();
    // Drain: until no accepted run is PENDING/RUNNING and no job is queued or running; a stall
    // (no change for long past lease expiry and sweep) or 10 minutes ends the wait.
    let outstanding = |snap: &Snapshot| {
        let runs = accepted
            .iter()
            .filter(|(_, id, _)| {
                !matches!(snap.runs.get(id).map(String::as_str), Some("COMPLETED" | "ERROR" | "CANCELLED" | "PAUSED"))
            })
            .count();
        let jobs = snap.jobs.values().filter(|j| matches!(j.status.as_str(), "queued" | "running")).count();
        (runs, jobs)
    };
    let stall = Duration::from_secs(4 * LOCK_GRACE_SECONDS + 30);
    let drain_started = Instant::now();
    let mut last_change = Instant::now();
    let mut last = (usize::MAX, usize::MAX);
    let mut last_print = Instant::now();
    let snap = loop {
        let snap = Snapshot::read(db).await;
        let now = outstanding(&snap);
        if now != last {
            last = now;
            last_change = Instant::now();
        }
        if now == (0, 0) || last_change.elapsed() > stall || drain_started.elapsed() > Duration::from_secs(600) {
            break snap;
        }
        if last_print.elapsed() >= Duration::from_secs(1) {
            let counts = snap.job_counts();
            println!(
                "  t={:>5.1} s  draining: {} accepted runs not finished; jobs {counts:?}",
                started.elapsed().as_secs_f64(),
                now.0
            );
            last_print = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let wall = started.elapsed();

    // The report: database first.
    let mut run_status: BTreeMap<String, usize> = BTreeMap::new();
    let mut attempts: BTreeMap<u32, usize> = BTreeMap::new();
    let (mut no_run, mut no_job, mut stuck, mut key_mismatch) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut disagreements = Vec::new();
    let mut error_texts: BTreeMap<String, usize> = BTreeMap::new();
    let keys: HashMap<&str, usize> = accepted.iter().map(|(i, id, _)| (id.as_str(), *i)).collect();
    for (i, id, _) in &accepted {
        let run = snap.runs.get(id);
        let job = snap.jobs.get(id);
        if run.is_none() {
            no_run.push(id.clone());
        }
        if job.is_none() {
            no_job.push(id.clone());
        }
        if let Some(status) = run {
            *run_status.entry(status.clone()).or_default() += 1;
            if matches!(status.as_str(), "PENDING" | "RUNNING") {
                stuck.push(format!("{id} run {status} job {}", job.map_or("-", |j| j.status.as_str())));
            }
        }
        if let Some(job) = job {
            *attempts.entry(job.attempt).or_default() += 1;
            if job.key != format!("chaos-{tag}-{i}") {
                key_mismatch.push(format!("{id}: key {:?}", job.key));
            }
            if !job.error.is_empty() {
                *error_texts.entry(job.error.clone()).or_default() += 1;
            }
            let expected = match job.status.as_str() {
                "completed" => "COMPLETED",
                "failed" => "ERROR",
                "cancelled" => "CANCELLED",
                "paused" => "PAUSED",
                _ => "",
            };
            if let Some(status) = run
                && status != expected
            {
                disagreements.push(format!(
                    "{id}: job {} (attempt {}, error {:?}) but run {status}",
                    job.status, job.attempt, job.error
                ));
            }
        }
    }
    let unacknowledged: Vec<_> = snap.jobs.keys().filter(|id| !keys.contains_key(id.as_str())).cloned().collect();
    let mut orphan_runs: BTreeMap<String, usize> = BTreeMap::new();
    let mut orphans = Vec::new();
    for (id, status) in &snap.runs {
        if !snap.jobs.contains_key(id) {
            *orphan_runs.entry(status.clone()).or_default() += 1;
            orphans.push((id.clone(), status.clone(), snap.sessions.get(id).cloned().unwrap_or_default()));
        }
    }
    orphans.sort();
    let distinct: HashSet<&str> = accepted.iter().map(|(_, id, _)| id.as_str()).collect();

    // The HTTP API's view of every accepted run, and the answers' integrity.
    let ports = cluster.ports();
    let http: Vec<(usize, HttpView)> = futures::stream::iter(accepted.iter().cloned())
        .map(|(i, id, _)| {
            let (client, port) = (client.clone(), ports[i % ports.len()]);
            async move {
                let resp = client.get(format!("http://127.0.0.1:{port}/agents/{AGENT}/runs/{id}")).send().await;
                let got = match resp {
                    Ok(r) if r.status().is_success() => {
                        let run: serde_json::Value = r.json().await.unwrap_or_default();
                        Ok((
                            run["status"].as_str().unwrap_or("?").to_owned(),
                            run["content"].as_str().unwrap_or_default().to_owned(),
                        ))
                    }
                    Ok(r) => Err(format!("HTTP {}", r.status().as_u16())),
                    Err(e) => Err(e.to_string()),
                };
                (i, got)
            }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    let mut http_status: BTreeMap<String, usize> = BTreeMap::new();
    let mut wrong_content = Vec::new();
    for (i, got) in &http {
        match got {
            Ok((status, content)) => {
                *http_status.entry(status.clone()).or_default() += 1;
                if status == "COMPLETED" && !content.ends_with(&format!(" chaos {i}")) {
                    wrong_content.push(format!("chaos {i}: {content:?}"));
                }
            }
            Err(e) => *http_status.entry(e.clone()).or_default() += 1,
        }
    }
    let http_missing = http_status.get("HTTP 404").copied().unwrap_or(0);
    let stats: serde_json::Value = match client.get(format!("http://127.0.0.1:{}/queue/stats", ports[0])).send().await {
        Ok(r) => r.json().await.unwrap_or_default(),
        Err(_) => serde_json::Value::Null,
    };

    // The model's view: calls per submission.
    let mut calls: HashMap<usize, usize> = HashMap::new();
    let requests = provider.requests();
    for req in &requests {
        let user = req.body["messages"]
            .as_array()
            .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
            .and_then(|m| m["content"].as_str())
            .and_then(|c| c.strip_prefix("chaos "))
            .and_then(|n| n.parse::<usize>().ok());
        if let Some(i) = user {
            *calls.entry(i).or_default() += 1;
        }
    }
    let called_twice = calls.values().filter(|&&n| n > 1).count();

    // What the API shows of the run rows that have no job.
    let mut orphan_views = Vec::new();
    for (id, status, session) in orphans.iter().take(5) {
        let seen = match client.get(format!("http://127.0.0.1:{}/agents/{AGENT}/runs/{id}", ports[0])).send().await {
            Ok(r) => match r.json::<serde_json::Value>().await {
                Ok(run) => format!("GET /agents/{AGENT}/runs/{{id}} answers status {}", run["status"]),
                Err(e) => e.to_string(),
            },
            Err(e) => e.to_string(),
        };
        orphan_views.push(format!("run {id} in session {session}: {status} with no job; {seen}"));
    }

    cluster.stop_all();
    let (kills, starts): (Vec<usize>, Vec<usize>) =
        cluster.replicas.lock().unwrap().iter().map(|r| (r.kills, r.starts)).unzip();
    let subs = subs.lock().unwrap();
    let not_accepted = subs.accepted.iter().filter(|a| a.is_none()).count();
    let retried = accepted.iter().filter(|(_, _, tries)| *tries > 1).count();
    let count = |m: &BTreeMap<String, usize>, k: &str| m.get(k).copied().unwrap_or(0);
    let lost = no_run.len().max(no_job.len()).max(http_missing);

    println!(
        "results ({:.1} s wall: submitting {:.1} s, draining {:.1} s)",
        wall.as_secs_f64(),
        submitted_after.as_secs_f64(),
        drain_started.elapsed().as_secs_f64()
    );
    println!(
        "  submitted {runs}: accepted {} ({} distinct run ids), not accepted {not_accepted}",
        accepted.len(),
        distinct.len()
    );
    println!(
        "  submissions retried on another replica: {retried} (failed tries: {})",
        subs.failures.values().sum::<usize>()
    );
    for (kind, n) in &subs.failures {
        println!("    {n:>5} x {kind}");
    }
    println!(
        "  kills: {} (per replica {kills:?}; starts {starts:?}); runs in flight on the killed replicas: {}",
        kills.iter().sum::<usize>(),
        running_at_kills.load(Ordering::Relaxed)
    );
    println!(
        "  outcome (database runs): completed {}, errored {}, cancelled {}, paused {} -- {run_status:?}",
        count(&run_status, "COMPLETED"),
        count(&run_status, "ERROR"),
        count(&run_status, "CANCELLED"),
        count(&run_status, "PAUSED")
    );
    println!("  outcome (HTTP GET of each run): {http_status:?}");
    println!("  jobs: {:?}", snap.job_counts());
    println!(
        "  lost: {lost} (accepted without a run row {}, without a job row {}, 404 over HTTP {http_missing})",
        no_run.len(),
        no_job.len()
    );
    println!(
        "  stuck: {} (accepted runs still PENDING/RUNNING after {:.1} s of draining with all replicas up)",
        stuck.len(),
        drain_started.elapsed().as_secs_f64()
    );
    println!(
        "  executed more than once: {} jobs with attempt >= 2 (attempts {attempts:?}); model called more than once \
         for {called_twice} runs ({} model calls in all)",
        attempts.iter().filter(|(a, _)| **a >= 2).map(|(_, n)| n).sum::<usize>(),
        requests.len()
    );
    println!("  job/run status disagreements: {}", disagreements.len());
    for d in disagreements.iter().take(10) {
        println!("    {d}");
    }
    println!("  completed runs whose answer is not their own: {}", wrong_content.len());
    for w in wrong_content.iter().take(5) {
        println!("    {w}");
    }
    println!(
        "  idempotency: jobs not acknowledged to any client {}, key mismatches {}",
        unacknowledged.len(),
        key_mismatch.len()
    );
    println!(
        "  run rows without a job (never accepted, e.g. killed between the PENDING write and the job commit): {orphan_runs:?}"
    );
    for line in &orphan_views {
        println!("    {line}");
    }
    for (text, n) in &error_texts {
        println!("  job error x{n}: {text}");
    }
    for s in stuck.iter().take(10) {
        println!("    stuck: {s}");
    }
    match stats.get("claim_latency_ms") {
        Some(c) => println!("  claim latency (replica 0, since its last start): {c}"),
        None => println!("  claim latency: n/a (GET /queue/stats has no claim_latency_ms)"),
    }
    let logs = log_summary(&dir);
    println!("  replica log warnings/errors: {}", logs.iter().map(|(_, n)| n).sum::<usize>());
    for (message, n) in logs.iter().take(12) {
        println!("    {n:>5} x {message}");
    }
    let failed = lost > 0 || !stuck.is_empty();
    println!("  verdict: {}", if failed { "FAILED (lost or stuck runs)" } else { "ok: nothing lost, nothing stuck" });
    failed
}
