//! Agno's `PerformanceEval`: the run time (seconds) and memory (MiB) of a function over
//! `num_iterations` runs after `warmup_runs`. Memory is the growth of the process's resident
//! set during one run (Linux `/proc/self/statm`; 0 elsewhere): coarser than Python's
//! `tracemalloc`, which counts the function's own allocations.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use agno_core::EvalType;
use serde_json::json;

use super::{EvalError, EvalOutcome, EvalSink, stats};
use crate::Agent;

/// The measured function.
pub type Measured = Box<dyn Fn() -> Pin<Box<dyn Future<Output = Result<(), EvalError>> + Send>> + Send + Sync>;

/// A performance eval.
pub struct PerformanceEval {
    /// What is measured.
    pub func: Measured,
    /// Unmeasured runs first (Agno: 10; the route allows 0 to 10).
    pub warmup_runs: usize,
    /// Measured runs (Agno: 50).
    pub num_iterations: usize,
    /// The agent measured, for the record.
    pub agent: Option<Agent>,
    /// Average run time (seconds) above which the eval fails (none: it passes when it ran).
    pub max_avg_run_time: Option<f64>,
}

impl std::fmt::Debug for PerformanceEval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerformanceEval")
            .field("warmup_runs", &self.warmup_runs)
            .field("num_iterations", &self.num_iterations)
            .finish_non_exhaustive()
    }
}

/// The resident set of this process in MiB (0 where it cannot be read).
fn resident_mib() -> f64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<f64>().ok()))
        .unwrap_or(0.0);
    pages * 4096.0 / (1024.0 * 1024.0)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (sorted.len() as f64 - 1.0) * p;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - rank.floor())
}

fn summary(values: &[f64]) -> (f64, f64, f64, f64, f64, f64) {
    let (avg, min, max, std_dev) = stats(values);
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    (
        avg.unwrap_or(0.0),
        min.unwrap_or(0.0),
        max.unwrap_or(0.0),
        std_dev.unwrap_or(0.0),
        percentile(&sorted, 0.5),
        percentile(&sorted, 0.95),
    )
}

impl PerformanceEval {
    /// Measures `agent` answering `input` (as the sink's user).
    pub fn of_agent(agent: Agent, input: impl Into<String>, user_id: Option<String>) -> Self {
        let input: String = input.into();
        let measured = agent.clone();
        Self {
            func: Box::new(move || {
                let (agent, input, user_id) = (measured.clone(), input.clone(), user_id.clone());
                Box::pin(async move { super::run_agent(&agent, &input, user_id.as_deref()).await.map(|_| ()) })
            }),
            warmup_runs: 10,
            num_iterations: 50,
            agent: Some(agent),
            max_avg_run_time: None,
        }
    }

    /// Runs the eval; stores its record through `sink`.
    ///
    /// # Errors
    /// An [`EvalError`] when a run or the store fails.
    pub async fn run(&self, sink: &EvalSink) -> Result<EvalOutcome, EvalError> {
        if self.num_iterations == 0 {
            return Err(EvalError::Config("num_iterations must be at least 1".to_owned()));
        }
        for _ in 0..self.warmup_runs {
            (self.func)().await?;
        }
        let (mut times, mut memory) = (Vec::new(), Vec::new());
        for _ in 0..self.num_iterations {
            let before = resident_mib();
            let started = Instant::now();
            (self.func)().await?;
            times.push(started.elapsed().as_secs_f64());
            memory.push((resident_mib() - before).max(0.0));
        }
        let (avg, min, max, std_dev, median, p95) = summary(&times);
        let (mavg, mmin, mmax, mstd, mmedian, mp95) = summary(&memory);
        let eval_data = json!({
            "run_id": agno_core::new_id(),
            "run_times": times, "avg_run_time": avg, "min_run_time": min, "max_run_time": max,
            "std_dev_run_time": std_dev, "median_run_time": median, "p95_run_time": p95,
            "memory_usages": memory, "avg_memory_usage": mavg, "min_memory_usage": mmin,
            "max_memory_usage": mmax, "std_dev_memory_usage": mstd, "median_memory_usage": mmedian,
            "p95_memory_usage": mp95,
        });
        let eval_input = json!({"warmup_runs": self.warmup_runs, "num_iterations": self.num_iterations});
        let record = sink.store(EvalType::Performance, eval_data, eval_input, self.agent.as_ref()).await?;
        Ok(EvalOutcome { passed: self.max_avg_run_time.is_none_or(|limit| avg <= limit), record })
    }
}
