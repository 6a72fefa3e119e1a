//! Schedules and their runs, as Agno stores them (`agno_schedules`, `agno_schedule_runs`).
//!
//! A schedule's owner (`user_id`) scopes every user-facing read and write; the poller's claim and
//! release take none, since it fires schedules of every user. Changes go through typed patches
//! ([`ScheduleUpdate`], [`ScheduleRunUpdate`]) that list exactly the columns Agno lets a caller
//! change: ownership, provenance and lock state have their own calls.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A scheduled call of an AgentOS endpoint (`Schedule`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// Schedule id.
    pub id: String,
    /// Name, unique per owner.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// HTTP method of the call (`POST`).
    #[serde(default = "default_method")]
    pub method: String,
    /// Endpoint called, e.g. `/agents/a1/runs`.
    pub endpoint: String,
    /// Body of the call.
    #[serde(default)]
    pub payload: Option<Value>,
    /// Cron expression; empty for an on-demand schedule.
    pub cron_expr: String,
    /// Time zone the cron expression is read in.
    #[serde(default = "default_timezone")]
    pub timezone: String,
    /// Longest a run may take.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: i64,
    /// Retries after a failed run.
    #[serde(default)]
    pub max_retries: i64,
    /// Wait between retries.
    #[serde(default = "default_retry_delay")]
    pub retry_delay_seconds: i64,
    /// Fired by the poller only when true.
    #[serde(default = "default_enabled")]
    pub enabled: bool,
    /// Next firing time (epoch seconds).
    #[serde(default)]
    pub next_run_at: Option<i64>,
    /// Worker holding the claim.
    #[serde(default)]
    pub locked_by: Option<String>,
    /// When the claim was taken (epoch seconds).
    #[serde(default)]
    pub locked_at: Option<i64>,
    /// Owner; `None` for system schedules.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Control plane managing the row (`studio`), if any.
    #[serde(default)]
    pub managed_by: Option<String>,
    /// Kind of component targeted (`agent`, `team`, `workflow`).
    #[serde(default)]
    pub target_type: Option<String>,
    /// Component targeted.
    #[serde(default)]
    pub target_id: Option<String>,
    /// Run that created the row.
    #[serde(default)]
    pub created_by_run_id: Option<String>,
    /// Session that created the row.
    #[serde(default)]
    pub created_by_session_id: Option<String>,
    /// Run that last changed the row.
    #[serde(default)]
    pub updated_by_run_id: Option<String>,
    /// Session that last changed the row.
    #[serde(default)]
    pub updated_by_session_id: Option<String>,
    /// Why the system disabled it.
    #[serde(default)]
    pub disabled_reason: Option<String>,
    /// Creation time (epoch seconds).
    pub created_at: i64,
    /// Last change (epoch seconds).
    #[serde(default)]
    pub updated_at: Option<i64>,
}

fn default_method() -> String {
    "POST".to_owned()
}
fn default_timezone() -> String {
    "UTC".to_owned()
}
fn default_timeout() -> i64 {
    3600
}
fn default_retry_delay() -> i64 {
    60
}
fn default_enabled() -> bool {
    true
}

impl Schedule {
    /// A new enabled schedule with Agno's defaults (`POST`, `UTC`, 3600 s timeout, no retries).
    pub fn new(name: impl Into<String>, endpoint: impl Into<String>, cron_expr: impl Into<String>) -> Self {
        Self {
            id: crate::new_id(),
            name: name.into(),
            description: None,
            method: default_method(),
            endpoint: endpoint.into(),
            payload: None,
            cron_expr: cron_expr.into(),
            timezone: default_timezone(),
            timeout_seconds: default_timeout(),
            max_retries: 0,
            retry_delay_seconds: default_retry_delay(),
            enabled: true,
            next_run_at: None,
            locked_by: None,
            locked_at: None,
            user_id: None,
            managed_by: None,
            target_type: None,
            target_id: None,
            created_by_run_id: None,
            created_by_session_id: None,
            updated_by_run_id: None,
            updated_by_session_id: None,
            disabled_reason: None,
            created_at: crate::now_epoch_secs(),
            updated_at: None,
        }
    }
}

/// One execution attempt of a schedule (`ScheduleRun`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleRun {
    /// Schedule run id.
    pub id: String,
    /// The schedule.
    pub schedule_id: String,
    /// Attempt number, from 1.
    #[serde(default = "default_attempt")]
    pub attempt: i64,
    /// When it fired (epoch seconds).
    #[serde(default)]
    pub triggered_at: Option<i64>,
    /// When it ended (epoch seconds).
    #[serde(default)]
    pub completed_at: Option<i64>,
    /// `running`, `success`, `failed`, `paused` or `timeout`.
    #[serde(default = "default_status")]
    pub status: String,
    /// HTTP status of the call.
    #[serde(default)]
    pub status_code: Option<i64>,
    /// Agent/team/workflow run it started.
    #[serde(default)]
    pub run_id: Option<String>,
    /// Session of that run.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Error text.
    #[serde(default)]
    pub error: Option<String>,
    /// What was sent.
    #[serde(default)]
    pub input: Option<Value>,
    /// What came back.
    #[serde(default)]
    pub output: Option<Value>,
    /// Pending requirements of a paused run.
    #[serde(default)]
    pub requirements: Option<Value>,
    /// Owner, copied from the schedule when the run is created.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Creation time (epoch seconds).
    pub created_at: i64,
}

fn default_attempt() -> i64 {
    1
}
fn default_status() -> String {
    "running".to_owned()
}

impl ScheduleRun {
    /// A new `running` attempt 1 of a schedule.
    pub fn new(schedule_id: impl Into<String>) -> Self {
        Self {
            id: crate::new_id(),
            schedule_id: schedule_id.into(),
            attempt: 1,
            triggered_at: None,
            completed_at: None,
            status: default_status(),
            status_code: None,
            run_id: None,
            session_id: None,
            error: None,
            input: None,
            output: None,
            requirements: None,
            user_id: None,
            created_at: crate::now_epoch_secs(),
        }
    }
}

/// One column value of a patch, typed the way the column is stored.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// A text column (`NULL` when `None`).
    Text(Option<String>),
    /// An integer column (`NULL` when `None`).
    Int(Option<i64>),
    /// A boolean column.
    Bool(bool),
    /// A JSON column (`NULL` when `None`).
    Json(Option<Value>),
}

/// The columns of a schedule a caller may change (Agno's `SCHEDULE_MUTABLE_COLUMNS`). A field
/// left `None` is not touched; `Some(None)` clears a nullable column.
#[derive(Debug, Clone, Default, PartialEq)]
#[allow(clippy::option_option)]
pub struct ScheduleUpdate {
    /// New name (unique per owner).
    pub name: Option<String>,
    /// New description.
    pub description: Option<Option<String>>,
    /// New HTTP method.
    pub method: Option<String>,
    /// New endpoint.
    pub endpoint: Option<String>,
    /// New payload.
    pub payload: Option<Option<Value>>,
    /// New cron expression.
    pub cron_expr: Option<String>,
    /// New time zone.
    pub timezone: Option<String>,
    /// New timeout.
    pub timeout_seconds: Option<i64>,
    /// New retry count.
    pub max_retries: Option<i64>,
    /// New retry delay.
    pub retry_delay_seconds: Option<i64>,
    /// Enable or disable. Enabling clears `disabled_reason` unless it is set here too.
    pub enabled: Option<bool>,
    /// New next firing time.
    pub next_run_at: Option<Option<i64>>,
    /// New disabled reason.
    pub disabled_reason: Option<Option<String>>,
}

impl ScheduleUpdate {
    /// The columns to write, in a fixed order, `updated_at` last (set to `now`).
    pub fn columns(&self, now: i64) -> Vec<(&'static str, Cell)> {
        let mut cols = Vec::new();
        let text = |v: &Option<String>| v.clone().map(|s| Cell::Text(Some(s)));
        if let Some(c) = text(&self.name) {
            cols.push(("name", c));
        }
        if let Some(v) = &self.description {
            cols.push(("description", Cell::Text(v.clone())));
        }
        if let Some(c) = text(&self.method) {
            cols.push(("method", c));
        }
        if let Some(c) = text(&self.endpoint) {
            cols.push(("endpoint", c));
        }
        if let Some(v) = &self.payload {
            cols.push(("payload", Cell::Json(v.clone())));
        }
        if let Some(c) = text(&self.cron_expr) {
            cols.push(("cron_expr", c));
        }
        if let Some(c) = text(&self.timezone) {
            cols.push(("timezone", c));
        }
        for (name, v) in [
            ("timeout_seconds", self.timeout_seconds),
            ("max_retries", self.max_retries),
            ("retry_delay_seconds", self.retry_delay_seconds),
        ] {
            if let Some(v) = v {
                cols.push((name, Cell::Int(Some(v))));
            }
        }
        if let Some(v) = self.enabled {
            cols.push(("enabled", Cell::Bool(v)));
        }
        if let Some(v) = self.next_run_at {
            cols.push(("next_run_at", Cell::Int(v)));
        }
        match (&self.disabled_reason, self.enabled) {
            (Some(v), _) => cols.push(("disabled_reason", Cell::Text(v.clone()))),
            (None, Some(true)) => cols.push(("disabled_reason", Cell::Text(None))),
            _ => {}
        }
        cols.push(("updated_at", Cell::Int(Some(now))));
        cols
    }

    /// Applies the patch to a schedule held in memory (document and key-value stores).
    pub fn apply(&self, s: &mut Schedule, now: i64) {
        for (name, cell) in self.columns(now) {
            match (name, cell) {
                ("name", Cell::Text(Some(v))) => s.name = v,
                ("description", Cell::Text(v)) => s.description = v,
                ("method", Cell::Text(Some(v))) => s.method = v,
                ("endpoint", Cell::Text(Some(v))) => s.endpoint = v,
                ("payload", Cell::Json(v)) => s.payload = v,
                ("cron_expr", Cell::Text(Some(v))) => s.cron_expr = v,
                ("timezone", Cell::Text(Some(v))) => s.timezone = v,
                ("timeout_seconds", Cell::Int(Some(v))) => s.timeout_seconds = v,
                ("max_retries", Cell::Int(Some(v))) => s.max_retries = v,
                ("retry_delay_seconds", Cell::Int(Some(v))) => s.retry_delay_seconds = v,
                ("enabled", Cell::Bool(v)) => s.enabled = v,
                ("next_run_at", Cell::Int(v)) => s.next_run_at = v,
                ("disabled_reason", Cell::Text(v)) => s.disabled_reason = v,
                ("updated_at", Cell::Int(v)) => s.updated_at = v,
                _ => {}
            }
        }
    }
}

/// The columns of a schedule run the executor changes. A field left `None` is not touched.
#[derive(Debug, Clone, Default, PartialEq)]
#[allow(clippy::option_option)]
pub struct ScheduleRunUpdate {
    /// New status.
    pub status: Option<String>,
    /// New attempt number.
    pub attempt: Option<i64>,
    /// Firing time.
    pub triggered_at: Option<Option<i64>>,
    /// End time.
    pub completed_at: Option<Option<i64>>,
    /// HTTP status.
    pub status_code: Option<Option<i64>>,
    /// Started run.
    pub run_id: Option<Option<String>>,
    /// Session of the started run.
    pub session_id: Option<Option<String>>,
    /// Error text.
    pub error: Option<Option<String>>,
    /// Response.
    pub output: Option<Option<Value>>,
    /// Pending requirements.
    pub requirements: Option<Option<Value>>,
}

impl ScheduleRunUpdate {
    /// The columns to write, in a fixed order; empty when nothing changes.
    pub fn columns(&self) -> Vec<(&'static str, Cell)> {
        let mut cols = Vec::new();
        if let Some(v) = &self.status {
            cols.push(("status", Cell::Text(Some(v.clone()))));
        }
        if let Some(v) = self.attempt {
            cols.push(("attempt", Cell::Int(Some(v))));
        }
        for (name, v) in [
            ("triggered_at", self.triggered_at),
            ("completed_at", self.completed_at),
            ("status_code", self.status_code),
        ] {
            if let Some(v) = v {
                cols.push((name, Cell::Int(v)));
            }
        }
        for (name, v) in [("run_id", &self.run_id), ("session_id", &self.session_id), ("error", &self.error)] {
            if let Some(v) = v {
                cols.push((name, Cell::Text(v.clone())));
            }
        }
        for (name, v) in [("output", &self.output), ("requirements", &self.requirements)] {
            if let Some(v) = v {
                cols.push((name, Cell::Json(v.clone())));
            }
        }
        cols
    }

    /// Applies the patch to a run held in memory (document and key-value stores).
    pub fn apply(&self, r: &mut ScheduleRun) {
        for (name, cell) in self.columns() {
            match (name, cell) {
                ("status", Cell::Text(Some(v))) => r.status = v,
                ("attempt", Cell::Int(Some(v))) => r.attempt = v,
                ("triggered_at", Cell::Int(v)) => r.triggered_at = v,
                ("completed_at", Cell::Int(v)) => r.completed_at = v,
                ("status_code", Cell::Int(v)) => r.status_code = v,
                ("run_id", Cell::Text(v)) => r.run_id = v,
                ("session_id", Cell::Text(v)) => r.session_id = v,
                ("error", Cell::Text(v)) => r.error = v,
                ("output", Cell::Json(v)) => r.output = v,
                ("requirements", Cell::Json(v)) => r.requirements = v,
                _ => {}
            }
        }
    }
}

/// Filters and paging for [`ScheduleStore::get_schedules`](crate::ScheduleStore::get_schedules).
#[derive(Debug, Clone, Default)]
pub struct ScheduleQuery {
    /// Only enabled (or disabled) schedules.
    pub enabled: Option<bool>,
    /// Only this user's schedules; every schedule when `None`.
    pub user_id: Option<String>,
    /// Page size (default 100).
    pub limit: Option<usize>,
    /// 1-based page.
    pub page: Option<usize>,
}
