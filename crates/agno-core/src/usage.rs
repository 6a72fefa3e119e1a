//! Daily usage metrics, one bucket per user per day (`agno_metrics`).

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What daily metrics need of one session, read for a whole window in a few set-based queries
/// ([`MetricsStore::metrics_facts`](crate::MetricsStore::metrics_facts)) instead of a read per
/// session.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionFacts {
    /// Agent, team or workflow.
    pub session_type: crate::SessionType,
    /// Owner; `None` for the shared bucket.
    pub user_id: Option<String>,
    /// Creation time (epoch seconds): the day it counts for.
    pub created_at: i64,
    /// `session_data.session_metrics`, when stored.
    pub session_metrics: Option<Map<String, Value>>,
    /// How many runs the session has.
    pub runs: i64,
    /// `(model, model_provider, runs)` of its runs that name a model.
    pub models: Vec<(String, String, i64)>,
}

/// Aggregated activity of one user (or of every session without a user) over one period.
///
/// The unique key is `(user_id, date, aggregation_period)`. Sessions without a user aggregate
/// into a shared bucket stored with `user_id = ""`; it reads back as `user_id: None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricsBucket {
    /// Row id.
    pub id: String,
    /// Owner of the bucket; `None` for the shared bucket of sessions without a user.
    #[serde(default)]
    pub user_id: Option<String>,
    /// The day (UTC).
    pub date: NaiveDate,
    /// `daily`.
    pub aggregation_period: String,
    /// Agent runs.
    #[serde(default)]
    pub agent_runs_count: i64,
    /// Team runs.
    #[serde(default)]
    pub team_runs_count: i64,
    /// Workflow runs.
    #[serde(default)]
    pub workflow_runs_count: i64,
    /// Agent sessions created that day.
    #[serde(default)]
    pub agent_sessions_count: i64,
    /// Team sessions created that day.
    #[serde(default)]
    pub team_sessions_count: i64,
    /// Workflow sessions created that day.
    #[serde(default)]
    pub workflow_sessions_count: i64,
    /// 1 for a user's bucket, 0 for the shared one: summing buckets gives the distinct users.
    #[serde(default)]
    pub users_count: i64,
    /// Token totals (`input_tokens`, `output_tokens`, `total_tokens`, ...).
    #[serde(default)]
    pub token_metrics: Map<String, Value>,
    /// Runs per model: a list of `{model_id, model_provider, count}`.
    #[serde(default)]
    pub model_metrics: Value,
    /// Creation time (epoch seconds).
    pub created_at: i64,
    /// Last recalculation (epoch seconds).
    #[serde(default)]
    pub updated_at: Option<i64>,
    /// True once the day has ended and the bucket was rebuilt after it.
    #[serde(default)]
    pub completed: bool,
}

impl MetricsBucket {
    /// The stored owner key: the user id, or `""` for the shared bucket.
    pub fn bucket_key(&self) -> &str {
        self.user_id.as_deref().unwrap_or("")
    }
}

/// Filters for [`MetricsStore::get_metrics`](crate::MetricsStore::get_metrics).
#[derive(Debug, Clone, Default)]
pub struct MetricsQuery {
    /// Only days on or after.
    pub starting_date: Option<NaiveDate>,
    /// Only days on or before.
    pub ending_date: Option<NaiveDate>,
    /// `None`: every bucket; `Some("")`: the shared bucket only; `Some(user)`: that user's.
    pub user_id: Option<String>,
}
