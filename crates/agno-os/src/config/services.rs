//! The settings of the OS's services: `[queue]` (Agno's `QueueConfig`), `[scheduler]` and
//! `[mcp_server]`, with their defaults.

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

impl QueueSettings {
    /// Seconds before attempt `attempt + 1` of a job whose attempt failed in a way worth
    /// retrying: exponential from `retry_delay_seconds`, with jitter, capped at 10x the base.
    pub fn backoff(&self, attempt: i64) -> i64 {
        let base = self.retry_delay_seconds.max(0);
        let exp = base.saturating_mul(1_i64 << attempt.clamp(1, 10).saturating_sub(1)).min(base.saturating_mul(10));
        exp + fastrand::i64(0..=(exp / 4).max(0))
    }
}

/// `[scheduler]` settings (Agno's `AgentOS(scheduler=..., scheduler_poll_interval=...)`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerSettings {
    /// Poll for due schedules on this replica.
    #[serde(default)]
    pub enabled: bool,
    /// Seconds between polls (Agno: 15).
    #[serde(default = "default_schedule_poll")]
    pub poll_interval_seconds: f64,
    /// A claim older than this is considered abandoned (its replica died) and taken over.
    #[serde(default = "default_schedule_grace")]
    pub lock_grace_seconds: i64,
    /// Schedules executing at once on this replica.
    #[serde(default = "default_concurrent")]
    pub max_concurrent: usize,
    /// How often a scheduled background run is looked at until it ends, in milliseconds.
    #[serde(default = "default_run_poll")]
    pub run_poll_interval_ms: u64,
    /// When the daily metrics are recalculated in the background (a cron expression, UTC); an
    /// empty string turns the job off. The job is a system schedule (`agno-metrics-refresh`,
    /// `POST /metrics/refresh`), so one replica computes each time and the others skip it.
    #[serde(default = "default_metrics_cron")]
    pub metrics_cron: String,
}

fn default_schedule_poll() -> f64 {
    15.0
}
fn default_schedule_grace() -> i64 {
    300
}
fn default_concurrent() -> usize {
    10
}
fn default_run_poll() -> u64 {
    1000
}
fn default_metrics_cron() -> String {
    "*/15 * * * *".to_owned()
}

impl Default for SchedulerSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            poll_interval_seconds: default_schedule_poll(),
            lock_grace_seconds: default_schedule_grace(),
            max_concurrent: default_concurrent(),
            run_poll_interval_ms: default_run_poll(),
            metrics_cron: default_metrics_cron(),
        }
    }
}

/// `[components]` settings: how this replica follows the components published in the database
/// (`/components`, `agno component`).
///
/// ```toml
/// [components]
/// poll_interval_ms = 1000   # how soon another replica's publish is served here
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentsSettings {
    /// Serve the agents and teams published in the catalog (default true when there is a
    /// database).
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// How often the catalog is read for what other replicas published, in milliseconds.
    #[serde(default = "default_components_poll")]
    pub poll_interval_ms: u64,
}

fn default_true() -> bool {
    true
}
fn default_components_poll() -> u64 {
    1000
}

impl Default for ComponentsSettings {
    fn default() -> Self {
        Self { enabled: true, poll_interval_ms: default_components_poll() }
    }
}

/// `[a2a]` settings: Python AgentOS's `a2a_interface=True`. Every agent, team and workflow is served
/// over A2A v0.3 under `/a2a` (`/a2a/{agents|teams|workflows}/{id}/.well-known/agent-card.json`
/// and `.../v1/message:send`, `message:stream`, `tasks:get`, `tasks:cancel`), behind the same
/// authentication, scopes and user isolation as the REST routes.
///
/// ```toml
/// [a2a]
/// enabled = true
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct A2aSettings {
    /// Serve `/a2a`.
    #[serde(default)]
    pub enabled: bool,
}

/// `[ui]` settings: the control plane's pages, served by the OS itself.
///
/// ```toml
/// [ui]
/// enabled = true   # default: on when [os] host is a loopback address
/// path = "/ui"     # where the pages are
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UiSettings {
    /// Serve the pages; unset, they are served when the OS listens on a loopback address only.
    pub enabled: Option<bool>,
    /// Where the pages are (`/ui`).
    pub path: Option<String>,
}

impl UiSettings {
    /// Where the pages are served on an OS listening on `host`, or `None` when they are not.
    ///
    /// # Errors
    /// A `path` that is not `/` followed by letters, digits, `-` or `_` segments.
    pub fn served_at(&self, host: &str) -> Result<Option<String>, String> {
        let loopback = host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
        if !self.enabled.unwrap_or(loopback) {
            return Ok(None);
        }
        let path = self.path.clone().unwrap_or_else(|| "/ui".to_owned());
        let valid = path.len() > 1
            && path.starts_with('/')
            && !path.ends_with('/')
            && path[1..]
                .split('/')
                .all(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        if valid { Ok(Some(path)) } else { Err(format!("[ui] path {path:?} must look like /ui or /console/ui")) }
    }
}

/// `[agui]` settings: Python AgentOS's `interfaces=[AGUI(agent=...)]`. One agent (or team) answers
/// AG-UI clients at `POST /agui` (and `GET /status`), behind the same authentication, scopes and
/// user isolation as the REST routes.
///
/// ```toml
/// [agui]
/// enabled = true
/// agent = "assistant"   # or team = "..."
/// background = true      # runs on the durable queue: re-attach by runId after a disconnect
/// prefix = "/copilot"    # optional: serve /copilot/agui and /copilot/status (Agno's `prefix`)
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AguiSettings {
    /// Serve `/agui` and `/status`.
    #[serde(default)]
    pub enabled: bool,
    /// The agent answering (one of `agent`, `team`).
    pub agent: Option<String>,
    /// The team answering.
    pub team: Option<String>,
    /// Run every AG-UI run on the durable queue and stream it from its event log, so a client
    /// that lost its connection re-attaches (the same `runId` again) on any replica.
    #[serde(default)]
    pub background: bool,
    /// Where the interface is mounted (Agno's `AGUI(prefix=...)`): `""` (the default) serves
    /// `/agui` and `/status`, `"/copilot"` serves `/copilot/agui` and `/copilot/status`.
    #[serde(default)]
    pub prefix: String,
}

/// `[mcp_server]` settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerSettings {
    /// Serve `/mcp`.
    #[serde(default)]
    pub enabled: bool,
    /// Host names (with port, if any) clients may address the server by, besides localhost
    /// (DNS-rebinding protection of the MCP transport).
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
}

/// `[tracing]` settings (Agno's `AgentOS(tracing=True)`): runs traced as OpenTelemetry spans and
/// stored in the OS's database (`agno_traces`, `agno_spans`), served on `/traces`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TracingSettings {
    /// Trace runs.
    #[serde(default)]
    pub enabled: bool,
    /// The share of runs traced, 0.0 to 1.0 (decided per trace); unset: the standard
    /// `OTEL_TRACES_SAMPLER` decides when set, else every run is traced.
    #[serde(default)]
    pub sample_ratio: Option<f64>,
    /// Spans waiting to be stored beyond which new ones are dropped (and counted).
    #[serde(default = "default_trace_buffer")]
    pub buffer: usize,
    /// The longest text attribute kept whole, in bytes (longer ones are cut).
    #[serde(default = "default_max_attribute_len")]
    pub max_attribute_len: usize,
    /// Also export every span over OTLP to this collector (`http://collector:4318` over HTTP,
    /// `http://collector:4317` over gRPC); without it, spans are exported only when the standard
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set.
    #[serde(default)]
    pub otlp_endpoint: Option<String>,
    /// `"grpc"`, `"http/protobuf"` or `"http/json"`; unset: the standard
    /// `OTEL_EXPORTER_OTLP_PROTOCOL`, else gRPC for an endpoint on port 4317, else protobuf over HTTP.
    #[serde(default)]
    pub otlp_protocol: Option<String>,
    /// Delete traces (and their spans) older than this many days, at start and every hour;
    /// none: kept for ever.
    #[serde(default)]
    pub retention_days: Option<u32>,
}

fn default_trace_buffer() -> usize {
    agno_runtime::trace::DEFAULT_BUFFER
}
fn default_max_attribute_len() -> usize {
    agno_runtime::trace::DEFAULT_MAX_ATTRIBUTE_LEN
}

impl Default for TracingSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            sample_ratio: None,
            buffer: default_trace_buffer(),
            max_attribute_len: default_max_attribute_len(),
            otlp_endpoint: None,
            otlp_protocol: None,
            retention_days: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::UiSettings;

    #[test]
    fn the_control_plane_is_served_by_default_on_loopback_only() {
        let unset = UiSettings::default();
        assert_eq!(unset.served_at("127.0.0.1"), Ok(Some("/ui".to_owned())));
        assert_eq!(unset.served_at("::1"), Ok(Some("/ui".to_owned())));
        assert_eq!(unset.served_at("localhost"), Ok(Some("/ui".to_owned())));
        assert_eq!(unset.served_at("0.0.0.0"), Ok(None));
        let on = UiSettings { enabled: Some(true), path: Some("/console/ui".to_owned()) };
        assert_eq!(on.served_at("0.0.0.0"), Ok(Some("/console/ui".to_owned())));
        let off = UiSettings { enabled: Some(false), path: None };
        assert_eq!(off.served_at("127.0.0.1"), Ok(None));
        for bad in ["ui", "/", "/ui/", "/a b", "/x//y", "/ü"] {
            let s = UiSettings { enabled: Some(true), path: Some(bad.to_owned()) };
            assert!(s.served_at("127.0.0.1").is_err(), "{bad}");
        }
    }
}
