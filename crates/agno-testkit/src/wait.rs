//! Waiting on a condition with a deadline, never sleeping and hoping.

use std::future::Future;
use std::time::{Duration, Instant};

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
