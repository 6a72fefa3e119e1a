//! What the benchmarks share: the `agno` binary, `agno serve` processes, percentiles and RSS.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Command, Stdio};
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
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let started = Instant::now();
    let child = Command::new(agno_bin())
        .args(["serve", "--config", config.to_str().unwrap(), "--port", &port.to_string()])
        .env("AGNO_LOG", "error")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if client.get(format!("{base}/health")).send().await.is_ok_and(|r| r.status().is_success()) {
            break;
        }
        assert!(Instant::now() < deadline, "agno serve did not start");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    (Server { child, port, base }, started.elapsed())
}
