//! Cancellation of running runs by `run_id`, process-wide.
//!
//! A run is registered from the moment it is asked for (synchronously, before its task is
//! spawned) until its future ends or is dropped, so [`running_runs`] never misses a run that is
//! starting and never keeps one whose future is gone. A cancel request is recorded even when the
//! run is not (yet) registered, so a run cancelled before it starts stops at its first checkpoint.
//! Cancellation across replicas goes through the durable queue (`agno-os`).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use tokio_util::sync::CancellationToken;

#[derive(Debug, Default)]
struct Registry {
    /// Running runs: their registration number and token.
    running: HashMap<String, (u64, CancellationToken)>,
    requested: HashSet<String>,
}

fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| Mutex::new(Registry::default()))
}

/// Upper bound on remembered early cancel requests, so unknown ids cannot grow memory forever.
const MAX_REQUESTED: usize = 10_000;

/// A run's place in the registry; dropping it unregisters the run (only this registration: a
/// later one of the same run id, e.g. its continuation, stays).
#[derive(Debug)]
pub(crate) struct Registration {
    run_id: String,
    number: u64,
    token: CancellationToken,
}

impl Registration {
    /// Registers `run_id`; the token fires when the run is cancelled (also if it was cancelled
    /// before this).
    pub(crate) fn new(run_id: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let number = NEXT.fetch_add(1, Ordering::Relaxed);
        let token = CancellationToken::new();
        if let Ok(mut reg) = registry().lock() {
            if reg.requested.remove(run_id) {
                token.cancel();
            }
            reg.running.insert(run_id.to_owned(), (number, token.clone()));
        }
        Self { run_id: run_id.to_owned(), number, token }
    }

    /// The token that fires when the run is cancelled.
    pub(crate) fn token(&self) -> &CancellationToken {
        &self.token
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Ok(mut reg) = registry().lock()
            && reg.running.get(&self.run_id).is_some_and(|(n, _)| *n == self.number)
        {
            reg.running.remove(&self.run_id);
        }
    }
}

/// Requests cancellation of `run_id`. Returns true when the run is executing in this process;
/// otherwise the request is remembered and honoured if the run starts later.
pub fn cancel_run(run_id: &str) -> bool {
    let Ok(mut reg) = registry().lock() else {
        return false;
    };
    if let Some((_, token)) = reg.running.get(run_id) {
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

/// Ids of the runs executing (or about to) in this process, for a graceful shutdown that waits
/// for them.
pub fn running_runs() -> Vec<String> {
    registry().lock().map(|reg| reg.running.keys().cloned().collect()).unwrap_or_default()
}
