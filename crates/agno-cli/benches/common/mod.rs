//! What the benchmarks share: the `agno` binary, `agno serve` processes, percentiles and RSS.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The `agno` binary: `AGNO_BIN` when set (a private copy: the shared target directory's
/// `release/agno` is rebuilt by whichever worktree built last), else the one Cargo built.
pub fn agno_bin() -> String {
    std::env::var("AGNO_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_agno").to_owned())
}

/// The `p` percentile (0..=1) of sorted durations, in milliseconds (0 when empty).
pub fn percentile_ms(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1000.0
}

/// `VmHWM` and `VmRSS` of a process, in MiB.
pub fn rss_mib(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// What a process has used so far: CPU time (user + system, all threads) and context switches
/// (voluntary + involuntary, summed over its threads), from `/proc`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub cpu: Duration,
    pub switches: u64,
}

impl Usage {
    /// The usage of `pid` now (zero where `/proc` cannot be read).
    pub fn of(pid: u32) -> Usage {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Fields after the command name (which may hold spaces): utime and stime are the 14th
        // and 15th fields of the line, the 12th and 13th after `) `.
        let after = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
        let ticks: u64 = after.split_whitespace().skip(11).take(2).filter_map(|t| t.parse::<u64>().ok()).sum();
        // USER_HZ: 100 on every Linux this runs on (x86_64 and arm64).
        let hz = 100;
        let mut switches = 0;
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for task in tasks.flatten() {
                let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
                switches += status
                    .lines()
                    .filter(|l| {
                        l.starts_with("voluntary_ctxt_switches:") || l.starts_with("nonvoluntary_ctxt_switches:")
                    })
                    .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                    .sum::<u64>();
            }
        }
        Usage { cpu: Duration::from_micros(ticks * 1_000_000 / hz), switches }
    }

    /// What was used between `earlier` and `self`, per unit of `n` (a run): CPU in
    /// milliseconds and context switches.
    pub fn per(&self, earlier: Usage, n: usize) -> (f64, f64) {
        let n = n.max(1) as f64;
        let cpu = self.cpu.saturating_sub(earlier.cpu).as_secs_f64() * 1000.0 / n;
        (cpu, self.switches.saturating_sub(earlier.switches) as f64 / n)
    }
}

/// A running `agno serve`, killed when dropped.
pub struct Server {
    pub child: Child,
    pub port: u16,
    /// `http://127.0.0.1:{port}`.
    pub base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `agno serve --config` on a free port (logging errors only) and waits until `/health`
/// answers; returns it and the time that took.
pub async fn start_server(config: &std::path::Path) -> (Server, Duration) {
    start_logging_server(config, "error", None).await
}

/// [`start_server`] logging what `filter` (an `AGNO_LOG` filter) selects to the file `log`.
pub async fn start_logging_server(
    config: &std::path::Path,
    filter: &str,
    log: Option<&std::path::Path>,
) -> (Server, Duration) {
    let port = free_port();
    let stderr = match log {
        Some(p) => Stdio::from(std::fs::File::create(p).unwrap()),
        None => Stdio::null(),
    };
    let mut command = Command::new(agno_bin());
    command
        .args(["serve", "--config", config.to_str().unwrap(), "--port", &port.to_string()])
        .env("AGNO_LOG", filter)
        .stderr(stderr);
    start_command(command, port).await
}

/// A free port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Spawns `command` (a server that will listen on `port`) and waits until its `/health` answers
/// (at most 60 s); returns it and the time that took.
pub async fn start_command(mut command: Command, port: u16) -> (Server, Duration) {
    let program = command.get_program().to_string_lossy().into_owned();
    // The program read whole first, as a server that has run before is: a start maps the pages
    // around each one it touches only when they are cached, so an uncached binary prints a
    // different idle RSS from run to run.
    if let Ok(mut file) = std::fs::File::open(&program) {
        let _ = std::io::copy(&mut file, &mut std::io::sink());
    }
    let started = Instant::now();
    let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if client.get(format!("{base}/health")).send().await.is_ok_and(|r| r.status().is_success()) {
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{program} exited before serving /health: {status}");
        }
        assert!(Instant::now() < deadline, "{program} did not serve /health within 60 s");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    (Server { child, port, base }, started.elapsed())
}

/// What a load run measured: its rate, latency percentiles and, streaming, the p50 time to the
/// first content.
pub struct Figures {
    pub per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub first_content_p50_ms: Option<f64>,
}

/// `total` requests from `concurrency` clients; each returns its latency (and, streaming, the
/// time to the first content event).
pub async fn load<F, Fut>(concurrency: usize, total: usize, one: F) -> Figures
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
