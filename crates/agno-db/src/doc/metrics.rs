//! Metrics buckets of the document stores (`agno_metrics.json`), and their documents as Python Agno's
//! `JsonDb` and `RedisDb` store them (shared by both adapters): one document per `(user_id, date, aggregation_period)` with the keys, in order, of Agno's
//! `calculate_date_metrics` record (`id, date, completed, token_metrics, model_metrics,
//! created_at, updated_at, aggregation_period, user_id, users_count, agent_sessions_count,
//! team_sessions_count, workflow_sessions_count, agent_runs_count, team_runs_count,
//! workflow_runs_count`). `date` is an ISO day (`2026-11-01`) and the shared bucket of sessions
//! without a user is stored with `user_id: ""`.
//!
//! Reads follow Agno's: an owner filter compares the stored `user_id` exactly, and an unscoped
//! read drops a pre-v3 record (no owner, but counting its users) whose day the per-user records
//! already cover. A document-store upsert replaces the matching document in place (same stored
//! `user_id`, day and period, as Agno matches it), keeping its `id` and `created_at`, and writes
//! the whole batch in one read-modify-write under the file lock.

use std::collections::HashSet;

use agno_core::{DbResult, MetricsBucket, MetricsQuery, MetricsStore, NaiveDate};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::schema::str_field;
use super::{DocBackend, DocDb};
use crate::metrics::{metrics_match, metrics_order, progress_of};

/// Python Agno's deterministic id of a bucket, `{date}_{user_id}_{period}` (`2026-11-01__daily`
/// for the shared bucket); `RedisDb` keys the bucket by it.
pub(crate) fn metrics_key_id(b: &MetricsBucket) -> String {
    format!("{}_{}_{}", b.date, b.bucket_key(), b.aggregation_period)
}

/// The stored document of a bucket, in Agno's key order.
pub(crate) fn metrics_doc(b: &MetricsBucket) -> Map<String, Value> {
    let mut doc = Map::new();
    doc.insert("id".to_owned(), Value::String(b.id.clone()));
    doc.insert("date".to_owned(), Value::String(b.date.to_string()));
    doc.insert("completed".to_owned(), Value::Bool(b.completed));
    doc.insert("token_metrics".to_owned(), Value::Object(b.token_metrics.clone()));
    doc.insert("model_metrics".to_owned(), b.model_metrics.clone());
    doc.insert("created_at".to_owned(), Value::from(b.created_at));
    doc.insert("updated_at".to_owned(), b.updated_at.map_or(Value::Null, Value::from));
    doc.insert("aggregation_period".to_owned(), Value::String(b.aggregation_period.clone()));
    doc.insert("user_id".to_owned(), Value::String(b.bucket_key().to_owned()));
    for (key, n) in [
        ("users_count", b.users_count),
        ("agent_sessions_count", b.agent_sessions_count),
        ("team_sessions_count", b.team_sessions_count),
        ("workflow_sessions_count", b.workflow_sessions_count),
        ("agent_runs_count", b.agent_runs_count),
        ("team_runs_count", b.team_runs_count),
        ("workflow_runs_count", b.workflow_runs_count),
    ] {
        doc.insert(key.to_owned(), Value::from(n));
    }
    doc
}

/// An integer field (Python may have written a float).
fn int_of(doc: &Map<String, Value>, key: &str) -> Option<i64> {
    let v = doc.get(key)?;
    #[allow(clippy::cast_possible_truncation)]
    v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))
}

/// Python truthiness of a field, as Agno tests `completed` and `users_count`.
fn truthy(doc: &Map<String, Value>, key: &str) -> bool {
    agno_core::truthy(doc.get(key))
}

/// The day of a stored record: an ISO day or date-time, or epoch seconds (as Agno reads it).
fn day_of(doc: &Map<String, Value>) -> Option<NaiveDate> {
    match doc.get("date")? {
        Value::String(s) => s.get(..10).and_then(|d| d.parse().ok()),
        Value::Number(n) => {
            #[allow(clippy::cast_possible_truncation)]
            let secs = n.as_i64().or_else(|| n.as_f64().map(|f| f as i64))?;
            chrono::DateTime::from_timestamp(secs, 0).map(|t| t.date_naive())
        }
        _ => None,
    }
}

/// A bucket from a stored document; `None` when it has no usable day.
pub(crate) fn bucket_from_doc(doc: &Map<String, Value>) -> Option<MetricsBucket> {
    let date = day_of(doc)?;
    let user_id = str_field(doc, "user_id").filter(|u| !u.is_empty()).map(str::to_owned);
    let aggregation_period = str_field(doc, "aggregation_period").unwrap_or("daily").to_owned();
    let id = str_field(doc, "id")
        .map_or_else(|| format!("{date}_{}_{aggregation_period}", user_id.as_deref().unwrap_or("")), str::to_owned);
    let count = |key: &str| int_of(doc, key).unwrap_or(0);
    Some(MetricsBucket {
        id,
        user_id,
        date,
        aggregation_period,
        agent_runs_count: count("agent_runs_count"),
        team_runs_count: count("team_runs_count"),
        workflow_runs_count: count("workflow_runs_count"),
        agent_sessions_count: count("agent_sessions_count"),
        team_sessions_count: count("team_sessions_count"),
        workflow_sessions_count: count("workflow_sessions_count"),
        users_count: count("users_count"),
        token_metrics: doc.get("token_metrics").and_then(Value::as_object).cloned().unwrap_or_default(),
        model_metrics: doc.get("model_metrics").cloned().unwrap_or(Value::Null),
        created_at: count("created_at"),
        updated_at: int_of(doc, "updated_at"),
        completed: truthy(doc, "completed"),
    })
}

/// Agno's `is_legacy_metric`: a record from before per-user buckets holds every user's traffic
/// (no `user_id` at all, or an empty one while counting users).
fn is_legacy(doc: &Map<String, Value>) -> bool {
    match doc.get("user_id") {
        None => true,
        Some(Value::Null) => truthy(doc, "users_count"),
        Some(Value::String(s)) => s.is_empty() && truthy(doc, "users_count"),
        Some(_) => false,
    }
}

/// Every bucket of the stored documents (for [`crate::metrics::progress_of`]).
pub(crate) fn all_buckets<'a>(docs: impl IntoIterator<Item = &'a Map<String, Value>>) -> Vec<MetricsBucket> {
    docs.into_iter().filter_map(bucket_from_doc).collect()
}

/// [`agno_core::MetricsStore::get_metrics`] over the stored documents.
pub(crate) fn select_metrics<'a>(
    docs: impl IntoIterator<Item = &'a Map<String, Value>>,
    query: &MetricsQuery,
) -> (Vec<MetricsBucket>, Option<i64>) {
    let parsed: Vec<(bool, MetricsBucket)> = docs
        .into_iter()
        .filter(|d| query.user_id.as_deref().is_none_or(|u| str_field(d, "user_id") == Some(u)))
        .filter_map(|d| bucket_from_doc(d).map(|b| (is_legacy(d), b)))
        .collect();
    let owned = if query.user_id.is_some() {
        parsed.into_iter().map(|(_, b)| b).collect::<Vec<_>>()
    } else {
        // Agno's `drop_legacy_metrics`: a legacy record goes only where per-user records of
        // its (day, period) replace it.
        let covered: HashSet<(NaiveDate, String)> =
            parsed.iter().filter(|(legacy, _)| !legacy).map(|(_, b)| (b.date, b.aggregation_period.clone())).collect();
        parsed
            .into_iter()
            .filter(|(legacy, b)| !legacy || !covered.contains(&(b.date, b.aggregation_period.clone())))
            .map(|(_, b)| b)
            .collect()
    };
    let latest = owned.iter().filter_map(|b| b.updated_at).max();
    let dates = MetricsQuery { user_id: None, ..query.clone() };
    let mut list: Vec<MetricsBucket> = owned.into_iter().filter(|b| metrics_match(b, &dates)).collect();
    if list.is_empty() {
        return (list, None);
    }
    list.sort_by(metrics_order);
    (list, latest)
}

/// True when a stored document is the bucket of `b` (Agno's match: same stored `user_id`, day
/// and period).
fn same_bucket(doc: &Map<String, Value>, b: &MetricsBucket) -> bool {
    str_field(doc, "user_id") == Some(b.bucket_key())
        && day_of(doc) == Some(b.date)
        && str_field(doc, "aggregation_period").unwrap_or("daily") == b.aggregation_period
}

#[async_trait]
impl<B: DocBackend> MetricsStore for DocDb<B> {
    async fn upsert_metrics(&self, buckets: &[MetricsBucket]) -> DbResult<()> {
        if buckets.is_empty() {
            return Ok(());
        }
        let buckets = buckets.to_vec();
        self.write(move |files| {
            let table = &files.tables().metrics.clone();
            let mut docs = files.read(table)?.into_owned();
            for b in buckets {
                let mut row = b;
                let slot = docs.iter().position(|d| d.as_object().is_some_and(|d| same_bucket(d, &row)));
                match slot.and_then(|i| docs.get_mut(i)) {
                    Some(stored) => {
                        if let Some(old) = stored.as_object() {
                            if let Some(id) = str_field(old, "id") {
                                id.clone_into(&mut row.id);
                            }
                            if let Some(created) = old.get("created_at").and_then(Value::as_i64) {
                                row.created_at = created;
                            }
                        }
                        *stored = Value::Object(metrics_doc(&row));
                    }
                    None => docs.push(Value::Object(metrics_doc(&row))),
                }
            }
            files.write(table, docs)
        })
        .await
    }

    async fn get_metrics(&self, query: &MetricsQuery) -> DbResult<(Vec<MetricsBucket>, Option<i64>)> {
        let query = query.clone();
        self.read(move |files| {
            let docs = files.read(&files.tables().metrics)?;
            Ok(select_metrics(docs.iter().filter_map(Value::as_object), &query))
        })
        .await
    }

    async fn metrics_progress(&self) -> DbResult<(Option<NaiveDate>, Option<NaiveDate>)> {
        self.read(|files| {
            let docs = files.read(&files.tables().metrics)?;
            let buckets = all_buckets(docs.iter().filter_map(Value::as_object));
            Ok(progress_of(buckets.iter()))
        })
        .await
    }
}
