//! `[queue]` settings (Agno's `QueueConfig`) and their defaults.

use serde::Deserialize;

/// `[queue]` settings (Agno's `QueueConfig`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSettings {
    /// Runs executing at once on this replica.
    #[serde(default = "default_concurrency")]
    pub max_concurrency: usize,
    /// Queued jobs beyond which submissions answer 429.
    #[serde(default = "default_depth")]
    pub max_queue_depth: usize,
    /// Claims per job: 1 = at most once; more = retried (with backoff) when a worker dies or a
    /// retryable error happens.
    #[serde(default = "default_attempts")]
    pub max_attempts: i64,
    /// A lease not refreshed for this long is expired; heartbeats come every third of it.
    #[serde(default = "default_grace")]
    pub lock_grace_seconds: i64,
    /// Base delay of a retry (doubled per attempt, with jitter, capped at 10x).
    #[serde(default = "default_retry_delay")]
    pub retry_delay_seconds: i64,
    /// Longest a run may execute before it is cancelled and failed.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u64,
    /// How often idle workers look for work and tails read the event log without a push, in
    /// milliseconds (local submissions and writes wake them at once).
    #[serde(default = "default_poll")]
    pub poll_interval_ms: u64,
    /// Ended jobs (and their event logs) older than this are deleted, hourly (paused ones are
    /// kept).
    #[serde(default = "default_retention")]
    pub retention_seconds: i64,
    /// Optional Redis (`redis://host:6379`) carrying wake-ups and cancels between replicas at
    /// once, on any database; never the truth (see [`crate::coordination`]).
    #[serde(default)]
    pub redis: Option<String>,
    /// The Redis pub/sub channel of this deployment's replicas.
    #[serde(default = "default_channel")]
    pub redis_channel: String,
    /// On a database without notifications (SQLite), how often a replica running background
    /// runs asks whether another process cancelled one, in milliseconds (200).
    #[serde(default = "default_cancel_poll")]
    pub cancel_poll_ms: u64,
}

fn default_cancel_poll() -> u64 {
    200
}

fn default_retention() -> i64 {
    86_400
}

fn default_channel() -> String {
    "agno:queue".to_owned()
}

fn default_concurrency() -> usize {
    32
}
fn default_depth() -> usize {
    1000
}
fn default_attempts() -> i64 {
    1
}
fn default_grace() -> i64 {
    60
}
fn default_retry_delay() -> i64 {
    30
}
fn default_timeout() -> u64 {
    3600
}
fn default_poll() -> u64 {
    1000
}

impl Default for QueueSettings {
    fn default() -> Self {
        Self {
            max_concurrency: default_concurrency(),
            max_queue_depth: default_depth(),
            max_attempts: default_attempts(),
            lock_grace_seconds: default_grace(),
            retry_delay_seconds: default_retry_delay(),
            timeout_seconds: default_timeout(),
            poll_interval_ms: default_poll(),
            retention_seconds: default_retention(),
            redis: None,
            redis_channel: default_channel(),
            cancel_poll_ms: default_cancel_poll(),
        }
    }
}
