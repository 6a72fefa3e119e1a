//! Cancellation of running runs by `run_id`, process-wide.
//!
//! A cancel request is recorded even when the run is not (yet) registered, so a run cancelled
//! before it starts stops at its first checkpoint. Cross-replica cancellation arrives with the
//! durable queue (issue #5).

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};

use tokio_util::sync::CancellationToken;

#[derive(Debug, Default)]
struct Registry {
    running: HashMap<String, CancellationToken>,
    requested: HashSet<String>,
}

fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| Mutex::new(Registry::default()))
}

/// Upper bound on remembered early cancel requests, so unknown ids cannot grow memory forever.
const MAX_REQUESTED: usize = 10_000;

/// Registers a run; the token fires when the run is cancelled (also if it was cancelled before).
pub(crate) fn register(run_id: &str) -> CancellationToken {
    let token = CancellationToken::new();
    if let Ok(mut reg) = registry().lock() {
        if reg.requested.remove(run_id) {
            token.cancel();
        }
        reg.running.insert(run_id.to_owned(), token.clone());
    }
    token
}

/// Forgets a finished run.
pub(crate) fn unregister(run_id: &str) {
    if let Ok(mut reg) = registry().lock() {
        reg.running.remove(run_id);
    }
}

/// Requests cancellation of `run_id`. Returns true when the run is executing in this process;
/// otherwise the request is remembered and honoured if the run starts later.
pub fn cancel_run(run_id: &str) -> bool {
    let Ok(mut reg) = registry().lock() else {
        return false;
    };
    if let Some(token) = reg.running.get(run_id) {
        token.cancel();
        return true;
    }
    if reg.requested.len() >= MAX_REQUESTED {
        reg.requested.clear();
    }
    reg.requested.insert(run_id.to_owned());
    false
}

/// True when `run_id` is executing in this process.
pub fn is_running(run_id: &str) -> bool {
    registry().lock().is_ok_and(|reg| reg.running.contains_key(run_id))
}

/// Ids of the runs executing in this process (for a graceful shutdown that waits for them).
pub fn running_runs() -> Vec<String> {
    registry().lock().map(|reg| reg.running.keys().cloned().collect()).unwrap_or_default()
}
