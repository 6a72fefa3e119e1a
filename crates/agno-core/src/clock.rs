//! Wall-clock helpers shared by the run model. Pure std; no runtime.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, as Agno stores `created_at` / `updated_at`.
pub fn now_epoch_secs() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)).unwrap_or(0)
}

/// A fresh random identifier in Agno's format (a hyphenated UUID v4).
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}
