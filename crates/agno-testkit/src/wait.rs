//! Waiting on a condition with a deadline, never sleeping and hoping.

use std::future::Future;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// A gate a thread (a model function, a tool) waits at until the test opens it: a test can hold
/// work at a point and check what happened before it (a run answered while its follow-up work is
/// still held). The wait is bounded: a gate never opened fails the test after 20 s.
#[derive(Debug, Default)]
pub struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    /// Blocks until the gate is opened.
    ///
    /// # Panics
    /// After 20 s without [`Gate::open`].
    pub fn wait(&self) {
        let guard = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (guard, timeout) = self
            .cv
            .wait_timeout_while(guard, Duration::from_secs(20), |open| !*open)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        assert!(*guard && !timeout.timed_out(), "the gate was never opened");
    }

    /// Opens the gate for every waiter, now and later.
    pub fn open(&self) {
        *self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        self.cv.notify_all();
    }
}

/// Polls `check` every 20 ms until it holds; panics naming `what` after `limit`.
pub async fn until<F, Fut>(what: &str, limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
