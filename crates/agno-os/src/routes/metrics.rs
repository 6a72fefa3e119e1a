//! `/metrics`, `/metrics/refresh` and `/metrics/refresh/status`: daily usage metrics, as Agno's
//! metrics router answers them.
//!
//! Buckets are stored per user per day. A read of one owner (the caller under user isolation,
//! or an admin's `?user_id=`) answers that owner's buckets, with ids `{date}_{user}_{period}`;
//! every other read collapses them into one row per day (`{date}_{period}`), as Agno does.
//! `GET /metrics` recalculates first, at most once a minute per database per process (Agno's
//! rule); `POST /metrics/refresh` recalculates now. One recalculation per database runs at a
//! time: another request meanwhile answers `already_running`.

use crate::routes::guard::Caller;
use crate::routes::query::Query;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use agno_core::{Db, MetricsBucket, MetricsQuery, NaiveDate};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::databases::select_db;
use super::params::{DbParams, iso};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// How long a read trusts the last recalculation.
const REFRESH_INTERVAL: Duration = Duration::from_secs(60);

const COUNT_FIELDS: [&str; 7] = [
    "agent_runs_count",
    "agent_sessions_count",
    "team_runs_count",
    "team_sessions_count",
    "workflow_runs_count",
    "workflow_sessions_count",
    "users_count",
];

/// The recalculation state of one database.
#[derive(Debug)]
struct Tracked {
    /// The database; a weak handle keeps its address from being reused while tracked.
    db: Weak<dyn Db>,
    /// When the last recalculation started.
    refreshed_at: Option<Instant>,
    /// `running`, `completed` or `failed`.
    status: &'static str,
    started_at: Option<i64>,
    finished_at: Option<i64>,
    error: Option<String>,
}

/// Recalculation state per database, for this process.
static REFRESHES: Mutex<Vec<Tracked>> = Mutex::new(Vec::new());

fn with_tracked<R>(db: &Arc<dyn Db>, f: impl FnOnce(&mut Tracked) -> R) -> R {
    let mut all = REFRESHES.lock().unwrap_or_else(PoisonError::into_inner);
    all.retain(|t| t.db.strong_count() > 0);
    let index = match all.iter().position(|t| std::ptr::addr_eq(t.db.as_ptr(), Arc::as_ptr(db))) {
        Some(i) => i,
        None => {
            all.push(Tracked {
                db: Arc::downgrade(db),
                refreshed_at: None,
                status: "idle",
                started_at: None,
                finished_at: None,
                error: None,
            });
            all.len() - 1
        }
    };
    f(&mut all[index])
}

/// A started recalculation; records its outcome, or a failure when dropped unfinished (a
/// panic or a client that went away).
#[derive(Debug)]
struct Refresh {
    db: Arc<dyn Db>,
    done: bool,
}

impl Refresh {
    /// Starts a recalculation unless one is running, or (`lazy`) one started less than
    /// [`REFRESH_INTERVAL`] ago.
    fn start(db: &Arc<dyn Db>, lazy: bool) -> Option<Self> {
        let started = with_tracked(db, |t| {
            let recent = t.refreshed_at.is_some_and(|at| at.elapsed() < REFRESH_INTERVAL);
            if t.status == "running" || (lazy && recent) {
                return false;
            }
            t.refreshed_at = Some(Instant::now());
            t.status = "running";
            t.started_at = Some(agno_core::now_epoch_secs());
            t.finished_at = None;
            t.error = None;
            true
        });
        started.then(|| Self { db: db.clone(), done: false })
    }

    /// Recalculates and records the outcome.
    async fn run(mut self) -> agno_core::DbResult<Vec<MetricsBucket>> {
        let result = agno_db::calculate_metrics(&*self.db).await;
        self.finish(result.as_ref().err().map(ToString::to_string));
        result
    }

    fn finish(&mut self, error: Option<String>) {
        self.done = true;
        with_tracked(&self.db, |t| {
            t.status = if error.is_some() { "failed" } else { "completed" };
            t.finished_at = Some(agno_core::now_epoch_secs());
            t.error = error;
        });
    }
}

impl Drop for Refresh {
    fn drop(&mut self) {
        if !self.done {
            self.finish(Some("the metrics refresh was interrupted".to_owned()));
        }
    }
}

fn day(date: NaiveDate) -> String {
    format!("{date}T00:00:00Z")
}

fn models(bucket: &MetricsBucket) -> Vec<Value> {
    bucket.model_metrics.as_array().cloned().unwrap_or_default()
}

/// One bucket as Agno's `DayAggregatedMetrics`, with the given id.
fn day_json(b: &MetricsBucket, id: String, models: Vec<Value>) -> Value {
    let mut out = Map::new();
    out.insert("id".to_owned(), Value::String(id));
    let counts = [
        b.agent_runs_count,
        b.agent_sessions_count,
        b.team_runs_count,
        b.team_sessions_count,
        b.workflow_runs_count,
        b.workflow_sessions_count,
        b.users_count,
    ];
    for (field, n) in COUNT_FIELDS.iter().zip(counts) {
        out.insert((*field).to_owned(), json!(n));
    }
    out.insert("token_metrics".to_owned(), Value::Object(b.token_metrics.clone()));
    out.insert("model_metrics".to_owned(), Value::Array(models));
    out.insert("date".to_owned(), Value::String(day(b.date)));
    out.insert("created_at".to_owned(), iso(Some(b.created_at)));
    out.insert("updated_at".to_owned(), iso(Some(b.updated_at.unwrap_or(b.created_at))));
    Value::Object(out)
}

fn add_number(into: &mut Value, n: &Value) {
    *into = match (into.as_i64(), n.as_i64()) {
        (Some(a), Some(b)) => json!(a.saturating_add(b)),
        _ => json!(into.as_f64().unwrap_or(0.0) + n.as_f64().unwrap_or(0.0)),
    };
}

/// Sums model counts per `(model_id, model_provider)`, keeping first-seen order.
fn merge_models(into: &mut Vec<Value>, extra: Vec<Value>) {
    for m in extra {
        let key = (m.get("model_id").cloned(), m.get("model_provider").cloned());
        match into.iter_mut().find(|x| (x.get("model_id").cloned(), x.get("model_provider").cloned()) == key) {
            Some(existing) => {
                let count = m.get("count").cloned().unwrap_or(json!(0));
                let mut total = existing.get("count").cloned().unwrap_or(json!(0));
                add_number(&mut total, &count);
                existing["count"] = total;
            }
            None => into.push(m),
        }
    }
}

/// The buckets as Agno answers them: one owner's rows, or one row per day.
fn days_json(buckets: &[MetricsBucket], owner: Option<&str>) -> Vec<Value> {
    if let Some(owner) = owner {
        return buckets
            .iter()
            .filter(|b| b.bucket_key() == owner)
            .map(|b| day_json(b, format!("{}_{owner}_{}", b.date, b.aggregation_period), models(b)))
            .collect();
    }
    let mut by_day: BTreeMap<(NaiveDate, &str), (MetricsBucket, Vec<Value>)> = BTreeMap::new();
    for b in buckets {
        match by_day.get_mut(&(b.date, b.aggregation_period.as_str())) {
            None => {
                by_day.insert((b.date, b.aggregation_period.as_str()), (b.clone(), models(b)));
            }
            Some((agg, agg_models)) => {
                agg.agent_runs_count += b.agent_runs_count;
                agg.agent_sessions_count += b.agent_sessions_count;
                agg.team_runs_count += b.team_runs_count;
                agg.team_sessions_count += b.team_sessions_count;
                agg.workflow_runs_count += b.workflow_runs_count;
                agg.workflow_sessions_count += b.workflow_sessions_count;
                agg.users_count += b.users_count;
                for (token, n) in &b.token_metrics {
                    add_number(agg.token_metrics.entry(token.clone()).or_insert(json!(0)), n);
                }
                merge_models(agg_models, models(b));
                agg.created_at = agg.created_at.min(b.created_at);
                agg.updated_at = agg.updated_at.max(b.updated_at);
            }
        }
    }
    by_day
        .into_iter()
        .map(|((date, period), (agg, models))| day_json(&agg, format!("{date}_{period}"), models))
        .collect()
}

/// Query of `GET /metrics`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct MetricsParams {
    #[schemars(extend("format" = "date"))]
    starting_date: Option<String>,
    #[schemars(extend("format" = "date"))]
    ending_date: Option<String>,
    user_id: Option<String>,
    db_id: Option<String>,
    table: Option<String>,
}

/// A date query value; an empty one is refused like any other non-date (FastAPI does).
fn date_param(name: &str, value: Option<&str>) -> ApiResult<Option<NaiveDate>> {
    value
        .map(|v| {
            NaiveDate::parse_from_str(v, "%Y-%m-%d").map_err(|e| {
                ApiError::unprocessable(format!("{name} must be a date as YYYY-MM-DD ({v:?}: {e})")).at("query", name)
            })
        })
        .transpose()
}

/// `GET /metrics?starting_date=&ending_date=&user_id=`: `{"metrics": [...], "updated_at"}`.
/// A caller under user isolation reads only their own buckets; `user_id` selects one owner's.
pub async fn get_metrics(
    Caller { state, principal }: Caller,
    Query(q): Query<MetricsParams>,
) -> ApiResult<Json<Value>> {
    let starting_date = date_param("starting_date", q.starting_date.as_deref())?;
    let ending_date = date_param("ending_date", q.ending_date.as_deref())?;
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    if let Some(refresh) = Refresh::start(db, true)
        && let Err(e) = refresh.run().await
    {
        tracing::warn!(error = %e, "could not refresh metrics before reading them");
    }
    let owner = principal.user_scope(q.user_id);
    let (buckets, updated_at) =
        db.get_metrics(&MetricsQuery { starting_date, ending_date, user_id: owner.clone() }).await?;
    Ok(Json(json!({"metrics": days_json(&buckets, owner.as_deref()), "updated_at": iso(updated_at)})))
}

/// Query of `POST /metrics/refresh`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RefreshParams {
    user_id: Option<String>,
    background: Option<bool>,
    db_id: Option<String>,
    table: Option<String>,
}

fn refresh_reply(status: StatusCode, state: &str, message: &str) -> Response {
    (status, Json(json!({"status": state, "message": message}))).into_response()
}

/// `POST /metrics/refresh?user_id=&background=`: recalculates the metrics and answers the
/// recalculated days (the caller's own under isolation, `user_id`'s when given, else one row per
/// day). With `background=true`, 202 `{"status": "started"}` at once. When a recalculation is
/// already running, `{"status": "already_running"}`.
pub async fn refresh_metrics(
    Caller { state, principal }: Caller,
    Query(q): Query<RefreshParams>,
) -> ApiResult<Response> {
    let background = q.background.unwrap_or(false);
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    let owner = principal.user_scope(q.user_id);
    let running = "A metrics refresh is already in progress for this database";
    let Some(refresh) = Refresh::start(db, false) else {
        let status = if background { StatusCode::ACCEPTED } else { StatusCode::OK };
        return Ok(refresh_reply(status, "already_running", running));
    };
    if background {
        tokio::spawn(async move {
            if let Err(e) = refresh.run().await {
                tracing::error!(error = %e, "background metrics refresh failed");
            }
        });
        return Ok(refresh_reply(StatusCode::ACCEPTED, "started", "Metrics refresh started in background"));
    }
    let buckets = refresh.run().await?;
    Ok(Json(days_json(&buckets, owner.as_deref())).into_response())
}

/// `GET /metrics/refresh/status`: the last recalculation of this database in this process:
/// `idle`, `running`, `completed` or `failed`.
pub async fn refresh_status(State(state): State<AppState>, Query(q): Query<DbParams>) -> ApiResult<Json<Value>> {
    let db = select_db(&state, q.db_id(), q.table())?;
    let status = with_tracked(db, |t| {
        json!({
            "status": t.status,
            "started_at": iso(t.started_at),
            "finished_at": iso(t.finished_at),
            "error": t.error,
        })
    });
    Ok(Json(status))
}
