//! Agent benchmark: construction time and heap, framework overhead per run with `TestModel`, and
//! throughput / latency / peak RSS against the fake OpenAI server over loopback.
//!
//! Run with `cargo bench -p agno-runtime --bench agent`. It prints figures; it asserts no timings
//! (only that runs complete as expected, so the figures measure the intended work).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::alloc::System;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agno_core::{DynTool, Model, RunStatus, ToolError};
use agno_models::{ClientConfig, OpenAIChat, RetryPolicy, TestModel};
use agno_runtime::Agent;
use agno_testkit::{FakeProvider, Reply};
use agno_tools::Function;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const CONSTRUCT_WARMUP: usize = 10;
const CONSTRUCT_N: usize = 1_000;
const OVERHEAD_WARMUP: usize = 200;
const OVERHEAD_N: usize = 2_000;
const HTTP_WARMUP: usize = 64;
/// (concurrency, total runs) for the loopback section.
const HTTP_LEVELS: [(usize, usize); 3] = [(1, 500), (8, 2_000), (32, 2_000)];
/// Upper bound of one concurrency level, so a misbehaving server cannot hang the bench.
const HTTP_LEVEL_TIMEOUT: Duration = Duration::from_secs(60);

/// Python Agno 3.1.10 measured on this machine kind: instantiation µs and KiB.
const PY_CONSTRUCT_US: f64 = 11.4;
const PY_CONSTRUCT_KIB: f64 = 6.9;
/// One Python Agno figure over AgentOS HTTP.
struct PyHttp {
    concurrency: usize,
    runs_per_s: Option<f64>,
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
}

/// Python Agno figures over AgentOS HTTP (not the library; indicative only).
const PY_HTTP: [PyHttp; 3] = [
    PyHttp { concurrency: 1, runs_per_s: Some(82.0), p50_ms: Some(11.7), p99_ms: None },
    PyHttp { concurrency: 8, runs_per_s: Some(108.0), p50_ms: None, p99_ms: Some(163.0) },
    PyHttp { concurrency: 32, runs_per_s: Some(104.0), p50_ms: Some(284.0), p99_ms: Some(499.0) },
];

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// First number.
    a: f64,
    /// Second number.
    b: f64,
}

fn add_tool() -> Function {
    Function::new("add", "Add two numbers.", |args: AddArgs| async move { Ok::<_, ToolError>(args.a + args.b) })
}

/// One full construction: model, function tool (schema generation included) and agent.
fn construct_full() -> Agent {
    Agent::builder(Arc::new(TestModel::new()) as Arc<dyn Model>).function(add_tool()).build().expect("agent builds")
}

/// Construction of the agent alone, from a ready model and tool (shared `Arc`s).
fn construct_agent_only(model: &Arc<dyn Model>, tool: &Arc<dyn DynTool>) -> Agent {
    Agent::builder(Arc::clone(model)).tool_arc(Arc::clone(tool)).build().expect("agent builds")
}

struct ConstructFigures {
    mean_us: f64,
    bytes: f64,
    allocs: f64,
}

fn measure_construction(mut make: impl FnMut() -> Agent) -> ConstructFigures {
    for _ in 0..CONSTRUCT_WARMUP {
        black_box(make());
    }
    // Keep the agents alive during the loop (as Python's benchmark does with its instances),
    // so the allocation figures are what one agent holds plus transient garbage.
    let mut keep: Vec<Agent> = Vec::with_capacity(CONSTRUCT_N);
    let region = Region::new(GLOBAL);
    let start = Instant::now();
    for _ in 0..CONSTRUCT_N {
        keep.push(black_box(make()));
    }
    let elapsed = start.elapsed();
    let stats = region.change();
    drop(black_box(keep));
    let n = CONSTRUCT_N as f64;
    ConstructFigures {
        mean_us: elapsed.as_secs_f64() * 1e6 / n,
        bytes: stats.bytes_allocated as f64 / n,
        allocs: stats.allocations as f64 / n,
    }
}

struct OverheadFigures {
    runs_per_s: f64,
    mean_us: f64,
    bytes: f64,
    allocs: f64,
}

async fn measure_overhead(agent: &Agent, expected_tools: usize) -> OverheadFigures {
    let check = |out: &agno_core::RunOutput| {
        assert_eq!(out.status, RunStatus::Completed);
        assert_eq!(out.tools.as_ref().map_or(0, Vec::len), expected_tools);
    };
    for _ in 0..OVERHEAD_WARMUP {
        check(&agent.arun("What is 2+2?").await.expect("run succeeds"));
    }
    let region = Region::new(GLOBAL);
    let start = Instant::now();
    for _ in 0..OVERHEAD_N {
        let out = agent.arun(black_box("What is 2+2?")).await.expect("run succeeds");
        black_box(&out);
    }
    let elapsed = start.elapsed();
    let stats = region.change();
    // Checked after the timed loop so the check is not measured.
    check(&agent.arun("What is 2+2?").await.expect("run succeeds"));
    let n = OVERHEAD_N as f64;
    OverheadFigures {
        runs_per_s: n / elapsed.as_secs_f64(),
        mean_us: elapsed.as_secs_f64() * 1e6 / n,
        bytes: stats.bytes_allocated as f64 / n,
        allocs: stats.allocations as f64 / n,
    }
}

struct HttpFigures {
    concurrency: usize,
    runs: usize,
    errors: usize,
    runs_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    hwm_mib: f64,
    rss_mib: f64,
}

/// Nearest-rank percentile of sorted latencies, in ms.
fn percentile_ms(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1e3
}

/// `VmHWM` (peak RSS) and `VmRSS` of this process, in MiB.
fn rss_mib() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// `total` runs shared by `concurrency` tasks, each looping `agent.arun(..)`.
async fn http_level(agent: &Agent, concurrency: usize, total: usize) -> HttpFigures {
    let next = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let agent = agent.clone();
        let next = Arc::clone(&next);
        let errors = Arc::clone(&errors);
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(total / concurrency + 1);
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let t0 = Instant::now();
                match agent.arun("What is 2+2?").await {
                    Ok(out) if out.status == RunStatus::Completed => latencies.push(t0.elapsed()),
                    _ => {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            latencies
        }));
    }
    let mut latencies = Vec::with_capacity(total);
    let joined = tokio::time::timeout(HTTP_LEVEL_TIMEOUT, futures::future::join_all(tasks)).await;
    let elapsed = start.elapsed();
    match joined {
        Ok(results) => {
            for r in results {
                latencies.extend(r.expect("bench task does not panic"));
            }
        }
        Err(_) => println!("  ! c={concurrency}: level timed out after {HTTP_LEVEL_TIMEOUT:?}"),
    }
    latencies.sort_unstable();
    let (hwm_mib, rss_mib) = rss_mib();
    HttpFigures {
        concurrency,
        runs: latencies.len(),
        errors: errors.load(Ordering::Relaxed),
        runs_per_s: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50_ms: percentile_ms(&latencies, 0.50),
        p99_ms: percentile_ms(&latencies, 0.99),
        max_ms: latencies.last().map_or(f64::NAN, |d| d.as_secs_f64() * 1e3),
        hwm_mib,
        rss_mib,
    }
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or_else(|| "—".to_owned(), |v| format!("{v:.prec$}"))
}

/// The Python column of the README table: only the figures that exist.
fn py_cell(py: Option<&PyHttp>) -> String {
    let Some(py) = py else { return "—".to_owned() };
    let mut parts = Vec::new();
    if let Some(v) = py.runs_per_s {
        parts.push(format!("{v:.0} runs/s"));
    }
    if let Some(v) = py.p50_ms {
        parts.push(format!("p50 {v:.1} ms"));
    }
    if let Some(v) = py.p99_ms {
        parts.push(format!("p99 {v:.0} ms"));
    }
    if parts.is_empty() { "—".to_owned() } else { parts.join(", ") }
}

fn main() {
    let wall = Instant::now();
    println!("agno-rs agent benchmark ({} profile)", if cfg!(debug_assertions) { "debug" } else { "optimized" });
    println!();

    // (a) Construction, before any runtime exists so no other thread allocates meanwhile.
    let full = measure_construction(construct_full);
    let model: Arc<dyn Model> = Arc::new(TestModel::new());
    let tool: Arc<dyn DynTool> = Arc::new(add_tool());
    let only = measure_construction(|| construct_agent_only(&model, &tool));
    println!("(a) Agent construction: TestModel + one function tool, {CONSTRUCT_N} after {CONSTRUCT_WARMUP} warm-ups");
    println!("    {:<44} {:>10} {:>12} {:>12}", "variant", "µs/agent", "bytes/agent", "allocs/agent");
    println!(
        "    {:<44} {:>10.2} {:>12.0} {:>12.1}",
        "model + Function::new + build (headline)", full.mean_us, full.bytes, full.allocs
    );
    println!(
        "    {:<44} {:>10.2} {:>12.0} {:>12.1}",
        "build only (shared model and tool Arcs)", only.mean_us, only.bytes, only.allocs
    );
    println!(
        "    {:<44} {:>10.2} {:>12.0} {:>12}",
        "Python Agno 3.1.10 (same machine kind)",
        PY_CONSTRUCT_US,
        PY_CONSTRUCT_KIB * 1024.0,
        "—"
    );
    println!("    (Agno README claims ~3 µs / 6.6 KiB on an Apple M4)");
    println!();

    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");

    // (b) Framework overhead with TestModel, no network.
    let (no_tools, one_tool) = rt.block_on(async {
        let plain = Agent::builder(Arc::new(TestModel::new().without_tool_calls()) as Arc<dyn Model>)
            .build()
            .expect("agent builds");
        let with_tool = Agent::builder(Arc::new(TestModel::new()) as Arc<dyn Model>)
            .function(add_tool())
            .build()
            .expect("agent builds");
        let a = measure_overhead(&plain, 0).await;
        let b = measure_overhead(&with_tool, 1).await;
        (a, b)
    });
    let turn_us = one_tool.mean_us - no_tools.mean_us;
    println!(
        "(b) Framework overhead, TestModel (no network), sequential, {OVERHEAD_N} runs after {OVERHEAD_WARMUP} warm-ups"
    );
    println!("    {:<44} {:>10} {:>10} {:>12} {:>12}", "run", "runs/s", "µs/run", "bytes/run", "allocs/run");
    for (label, f) in [("no tools (1 model turn)", &no_tools), ("one tool call (2 model turns)", &one_tool)] {
        println!("    {:<44} {:>10.0} {:>10.2} {:>12.0} {:>12.1}", label, f.runs_per_s, f.mean_us, f.bytes, f.allocs);
    }
    println!(
        "    per tool-call turn overhead: {:.2} µs, {:.0} bytes, {:.1} allocs",
        turn_us,
        one_tool.bytes - no_tools.bytes,
        one_tool.allocs - no_tools.allocs
    );
    println!();

    // (c) Loopback against the fake OpenAI server (in-process, same runtime).
    let (base_hwm, base_rss) = rss_mib();
    let http = rt.block_on(async {
        let server = FakeProvider::start().await.expect("fake provider starts");
        server.set_latency(Duration::from_millis(1));
        server.set_fallback(Some(Reply::Text("ok".into())));
        let config = ClientConfig {
            api_key: Some("k".to_owned()),
            retry: RetryPolicy::none(),
            ..ClientConfig::new(server.base_url())
        };
        let model = OpenAIChat::new("fake-model", "OpenAI", config).expect("client builds");
        let agent = Agent::builder(Arc::new(model) as Arc<dyn Model>).build().expect("agent builds");
        let warm = http_level(&agent, 32, HTTP_WARMUP).await;
        assert_eq!(warm.errors, 0, "warm-up runs against the fake server failed");
        let mut figures = Vec::new();
        for (c, total) in HTTP_LEVELS {
            figures.push(http_level(&agent, c, total).await);
        }
        server.shutdown();
        figures
    });
    println!("(c) Loopback, OpenAIChat -> fake OpenAI server (streaming, 1 ms server latency, server in-process)");
    println!("    RSS before section: VmHWM {base_hwm:.1} MiB, VmRSS {base_rss:.1} MiB");
    println!(
        "    {:>4} {:>6} {:>6} {:>10} {:>9} {:>9} {:>9} {:>11} {:>10}   {:>10} {:>9} {:>9}",
        "c",
        "runs",
        "errors",
        "runs/s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "VmHWM MiB",
        "VmRSS MiB",
        "py runs/s",
        "py p50",
        "py p99"
    );
    for f in &http {
        let py = PY_HTTP.iter().find(|p| p.concurrency == f.concurrency);
        println!(
            "    {:>4} {:>6} {:>6} {:>10.0} {:>9.2} {:>9.2} {:>9.2} {:>11.1} {:>10.1}   {:>10} {:>9} {:>9}",
            f.concurrency,
            f.runs,
            f.errors,
            f.runs_per_s,
            f.p50_ms,
            f.p99_ms,
            f.max_ms,
            f.hwm_mib,
            f.rss_mib,
            opt(py.and_then(|p| p.runs_per_s), 0),
            opt(py.and_then(|p| p.p50_ms), 1),
            opt(py.and_then(|p| p.p99_ms), 1),
        );
    }
    println!("    (Python figures: AgentOS over HTTP, not the library; indicative only)");
    println!();

    // README block.
    let (peak, _) = rss_mib();
    println!("```markdown");
    println!("| measure | agno-rs | Python Agno 3.1.10 |");
    println!("|---|---|---|");
    println!(
        "| agent construction (model + 1 function tool) | {:.2} µs, {:.1} KiB | {PY_CONSTRUCT_US} µs, {PY_CONSTRUCT_KIB} KiB |",
        full.mean_us,
        full.bytes / 1024.0
    );
    println!(
        "| run overhead, TestModel, no tools | {:.1} µs ({:.0} runs/s) | — |",
        no_tools.mean_us, no_tools.runs_per_s
    );
    println!(
        "| run overhead, TestModel, one tool call | {:.1} µs ({:.0} runs/s) | — |",
        one_tool.mean_us, one_tool.runs_per_s
    );
    println!("| per tool-call turn | {turn_us:.1} µs | — |");
    for f in &http {
        let py = PY_HTTP.iter().find(|p| p.concurrency == f.concurrency);
        println!(
            "| loopback c={} (1 ms fake OpenAI) | {:.0} runs/s, p50 {:.1} ms, p99 {:.1} ms | {} |",
            f.concurrency,
            f.runs_per_s,
            f.p50_ms,
            f.p99_ms,
            py_cell(py),
        );
    }
    println!("| peak RSS (whole bench process, incl. fake server) | {peak:.1} MiB | — |");
    println!();
    println!(
        "Python loopback figures are AgentOS over HTTP (not the library): indicative only. agno-rs loopback runs \
         stream from an in-process fake OpenAI server sharing the same tokio runtime."
    );
    println!("```");
    println!();
    println!("total bench wall time: {:.1} s", wall.elapsed().as_secs_f64());
}
