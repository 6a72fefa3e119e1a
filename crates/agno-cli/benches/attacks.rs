//! `/health` during each attack of issue 23: for every defect, a fresh `agno serve` (SQLite, the
//! offline `test` model, an agent, a team and a knowledge base) is attacked for a few seconds
//! while a probe asks `/health` on a fresh connection every 20 ms. Prints, per attack, the
//! attack's own requests and their statuses, the probe's latency (p50, p90, p99, max), how many
//! probes took over 100 ms or got no answer within 5 s, and the server's peak RSS. An idle
//! server comes first, as the baseline.
//!
//! The attacks are the tests' own (`tests/support/attacks.rs`); the tests assert each answer and
//! a liveness deadline, this prints the latency, which a test must not assert.
//!
//! Run: `cargo bench -p agno-cli --bench attacks [-- --seconds 10 --clients 4]` (environment:
//! `AGNO_ATTACK_SECONDS`, `AGNO_ATTACK_CLIENTS`; `AGNO_BIN` to measure another build).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;
#[path = "../tests/support/attacks.rs"]
mod kit;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Server, percentile_ms, rss_mib, start_server};
use kit::HealthProbe;

const PROBE_EVERY: Duration = Duration::from_millis(20);
const PROBE_DEADLINE: Duration = Duration::from_secs(5);

/// A flag (`--name value`), else an environment variable, else the default.
fn setting(args: &[String], flag: &str, env: &str, default: u64) -> u64 {
    let raw = args.windows(2).find(|w| w[0] == flag).map(|w| w[1].clone()).or_else(|| std::env::var(env).ok());
    raw.map_or(default, |v| v.parse().map_err(|_| format!("{flag} / {env}: not a number: {v:?}")).unwrap())
}

/// A server of its own for one attack, with `extra` settings.
async fn serve(dir: &std::path::Path, tag: &str, extra: &str) -> Server {
    let dir = dir.join(tag);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("agentos.toml");
    std::fs::write(
        &config,
        format!(
            "{extra}\n[db]\nurl = \"sqlite://{}\"\n\
             [[agents]]\nid = \"demo\"\nmodel = \"test\"\n\
             [[teams]]\nid = \"crew\"\nmodel = \"test\"\nmembers = [\"demo\"]\n\
             [[knowledge]]\nid = \"docs\"\nembedder = \"hash:64\"\ndimensions = 64\nvector_db = \"sqlite://{}\"\n",
            dir.join("agno.db").display(),
            dir.join("vectors.db").display()
        ),
    )
    .unwrap();
    start_server(&config).await.0
}

/// Statuses of the attack's own requests (0: no answer).
type Tally = Arc<Mutex<BTreeMap<u16, usize>>>;

/// `clients` tasks sending the request `make(i)` builds, again and again, until `stop`.
fn hammer<F>(clients: usize, stop: &Arc<AtomicBool>, tally: &Tally, make: F) -> Vec<tokio::task::JoinHandle<()>>
where
    F: Fn(&reqwest::Client, usize) -> reqwest::RequestBuilder + Send + Sync + Clone + 'static,
{
    (0..clients)
        .map(|_| {
            let (stop, tally, make) = (stop.clone(), tally.clone(), make.clone());
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let status = match make(&client, i).send().await {
                        Ok(r) => {
                            let status = r.status().as_u16();
                            let _ = r.bytes().await;
                            status
                        }
                        Err(_) => 0,
                    };
                    *tally.lock().unwrap().entry(status).or_default() += 1;
                    i += 1;
                }
            })
        })
        .collect()
}

struct Row {
    attack: &'static str,
    requests: String,
    probes: Vec<Result<Duration, String>>,
    peak_mib: f64,
}

fn print_row(row: &Row) {
    let mut ok: Vec<Duration> = row.probes.iter().filter_map(|r| r.as_ref().ok().copied()).collect();
    ok.sort();
    let slow = ok.iter().filter(|d| **d > Duration::from_millis(100)).count();
    let failed = row.probes.len() - ok.len();
    println!(
        "{:<34} {:>6} {:>7.1} {:>7.1} {:>7.1} {:>8.1} {:>6} {:>6} {:>8.0}  {}",
        row.attack,
        row.probes.len(),
        percentile_ms(&ok, 0.5),
        percentile_ms(&ok, 0.9),
        percentile_ms(&ok, 0.99),
        percentile_ms(&ok, 1.0),
        slow,
        failed,
        row.peak_mib,
        row.requests
    );
}

fn tally_text(tally: &Tally) -> String {
    let t = tally.lock().unwrap();
    t.iter().map(|(status, n)| format!("{n} x {status}")).collect::<Vec<_>>().join(", ")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seconds = setting(&args, "--seconds", "AGNO_ATTACK_SECONDS", 10);
    let clients = setting(&args, "--clients", "AGNO_ATTACK_CLIENTS", 4) as usize;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let dir: PathBuf = std::env::temp_dir().join(format!("agno-bench-attacks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let span = Duration::from_secs(seconds);
        println!(
            "/health probed every {} ms on a fresh connection for {seconds} s per attack ({clients} attacking clients)",
            PROBE_EVERY.as_millis()
        );
        println!(
            "{:<34} {:>6} {:>7} {:>7} {:>7} {:>8} {:>6} {:>6} {:>8}  attack's requests",
            "attack", "probes", "p50 ms", "p90 ms", "p99 ms", "max ms", ">100ms", "failed", "peak MiB"
        );
        for attack in ATTACKS {
            let row = run_attack(&dir, attack, span, clients).await;
            print_row(&row);
        }
        std::fs::remove_dir_all(&dir).ok();
    });
}

const ATTACKS: [&str; 8] = [
    "idle (baseline)",
    "1 output_schema bombs",
    "2 JSON nested past the limit",
    "3 streams never read (1 MB each)",
    "4 1,030 trickling connections",
    "5 chunk bombs (9 MB / 2 MB)",
    "6 numbers out of bounds",
    "7 cross-site writes",
];

async fn run_attack(dir: &std::path::Path, attack: &'static str, span: Duration, clients: usize) -> Row {
    let tag = format!("a{}", attack.chars().next().unwrap_or('x'));
    let extra = match attack.chars().next() {
        Some('3') => "[os]\nsse_buffer_bytes = 4000000",
        Some('5') => "[os]\nmax_body_bytes = 20000000",
        _ => "",
    };
    let server = serve(dir, &tag, extra).await;
    let (port, base) = (server.port, server.base.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let tally: Tally = Arc::default();
    let mut tasks = Vec::new();
    let mut held = Vec::new();
    let mut note = String::new();
    match attack.chars().next() {
        Some('1') => {
            let url = format!("{base}/agents/demo/runs");
            tasks = hammer(clients, &stop, &tally, move |c, i| {
                let schema = kit::SCHEMA_BOMBS[i % 2].to_owned();
                c.post(&url).multipart(kit::form(&[
                    ("message", "x".to_owned()),
                    ("stream", "false".to_owned()),
                    ("output_schema", schema),
                ]))
            });
        }
        Some('2') => {
            let deep = kit::deep_json(127);
            let url = format!("{base}/agents/demo/runs");
            tasks = hammer(clients, &stop, &tally, move |c, _| {
                c.post(&url).multipart(kit::form(&[
                    ("message", "x".to_owned()),
                    ("stream", "false".to_owned()),
                    ("session_state", deep.clone()),
                ]))
            });
        }
        Some('3') => {
            let message = "word ".repeat(200_000);
            for _ in 0..clients {
                held.push(kit::unread_stream(port, &message).await);
            }
            note = format!("{} streams held unread", held.len());
        }
        Some('4') => {
            let n = 1030.min(kit::open_files_limit().saturating_sub(200) / 2);
            for (i, source) in ["127.0.0.2", "127.0.0.1"].into_iter().enumerate() {
                let stop = stop.clone();
                let count = if i == 0 { n * 3 / 4 } else { n / 4 };
                let tally = tally.clone();
                tasks.push(tokio::spawn(async move {
                    let reopened = kit::trickle(source, port, count, &stop).await;
                    *tally.lock().unwrap().entry(0).or_default() += reopened;
                }));
            }
            // Let them take the slots before probing.
            tokio::time::sleep(Duration::from_secs(3)).await;
            note = format!("{n} connections; ");
        }
        Some('5') => {
            let (nine, two) = (kit::lorem(9_450_000), kit::lorem(2_025_000));
            let url = format!("{base}/knowledge/content");
            tasks = hammer(clients.min(2), &stop, &tally, move |c, i| {
                let (bytes, fields): (Vec<u8>, &[(&str, &str)]) = if i % 2 == 0 {
                    (nine.clone(), &[("chunk_size", "1")])
                } else {
                    (two.clone(), &[("chunk_size", "100"), ("chunk_overlap", "99")])
                };
                let mut form = reqwest::multipart::Form::new()
                    .part("file", reqwest::multipart::Part::bytes(bytes).file_name(format!("bomb{i}.txt")));
                for (k, v) in fields {
                    form = form.text((*k).to_owned(), (*v).to_owned());
                }
                c.post(&url).multipart(form)
            });
        }
        Some('6') => {
            let urls: Vec<String> =
                ["/sessions?limit=0", "/memories?page=0", "/schedules?limit=1001", "/eval-runs?limit=-1"]
                    .iter()
                    .map(|p| format!("{base}{p}"))
                    .collect();
            tasks = hammer(clients, &stop, &tally, move |c, i| c.get(&urls[i % urls.len()]));
        }
        Some('7') => {
            let url = format!("{base}/memories");
            tasks = hammer(clients, &stop, &tally, move |c, _| {
                c.post(&url)
                    .header("origin", "https://evil.example")
                    .header("content-type", "text/plain")
                    .body(r#"{"memory":"csrf","user_id":"u"}"#)
            });
        }
        _ => {}
    }
    let probe = HealthProbe::start(port, PROBE_EVERY, PROBE_DEADLINE);
    tokio::time::sleep(span).await;
    let probes = probe.finish().await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    drop(held);
    let (peak_mib, _) = rss_mib(server.child.id());
    let requests = match attack.chars().next() {
        Some('4') => format!("{note}{} closed by the server and reopened", tally.lock().unwrap().get(&0).unwrap_or(&0)),
        Some('3') | None => note,
        _ if tally.lock().unwrap().is_empty() => "none".to_owned(),
        _ => tally_text(&tally),
    };
    Row { attack, requests, probes, peak_mib }
}
