//! Metrics buckets in Redis, laid out as Python Agno's `RedisDb` lays them out: one JSON string
//! per bucket at `{prefix}:metrics:{date}_{user_id}_{period}` (Agno's deterministic record id,
//! `2026-11-01__daily` for the shared bucket), shaped as in [`crate::doc::metrics`]; Agno keeps
//! no index sets for metrics.
//!
//! A batch is written by one compare-and-set script over all its keys, retried on contention: a
//! replaced bucket keeps the `id` and `created_at` of the document it replaces, and either every
//! bucket of the batch is written or none.

use std::collections::HashMap;
use std::sync::LazyLock;

use agno_core::{DbError, DbErrorKind, DbResult, MetricsBucket, MetricsQuery, MetricsStore, NaiveDate};
use async_trait::async_trait;
use redis::Script;
use serde_json::{Map, Value};

use super::{RedisDb, glob_escape, parse_doc, redis_error};
use crate::codec::to_json_text;
use crate::doc::metrics::{all_buckets, metrics_doc, metrics_key_id, select_metrics};
use crate::doc::schema::str_field;
use crate::metrics::progress_of;

/// Attempts of a compare-and-set before giving up (each round, one contender always wins).
const CAS_ATTEMPTS: usize = 10_000;

/// Compare-and-set of every document of a batch at once.
/// KEYS: bucket keys. ARGV, three per key: expect_existing ('1'/'0'), expected text, new text.
/// Returns 1 when all were written, 0 (writing nothing) when any stored document changed.
static UPSERT_METRICS: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
for i, key in ipairs(KEYS) do
  local cur = redis.call('GET', key)
  if ARGV[3 * i - 2] == '1' then
    if cur ~= ARGV[3 * i - 1] then return 0 end
  elseif cur then
    return 0
  end
end
for i, key in ipairs(KEYS) do redis.call('SET', key, ARGV[3 * i]) end
return 1
",
    )
});

impl RedisDb {
    fn metrics_key(&self, key_id: &str) -> String {
        format!("{}:metrics:{key_id}", self.backend.prefix)
    }

    /// Every stored metrics document (not index sets, which Agno does not keep for metrics).
    async fn metrics_docs(&self) -> DbResult<Vec<Map<String, Value>>> {
        let index = format!("{}:metrics:index:", self.backend.prefix);
        let keys: Vec<String> = self
            .scan(&format!("{}:metrics:*", glob_escape(&self.backend.prefix)))
            .await?
            .into_iter()
            .filter(|k| !k.starts_with(&index))
            .collect();
        Ok(self.mget(&keys).await?.into_iter().flatten().filter_map(|t| parse_doc(&t)).collect())
    }
}

#[async_trait]
impl MetricsStore for RedisDb {
    async fn upsert_metrics(&self, buckets: &[MetricsBucket]) -> DbResult<()> {
        if buckets.is_empty() {
            return Ok(());
        }
        // One slot per key, in first-seen order; a later bucket of the same key replaces an
        // earlier one, keeping its id and created_at (as two writes would).
        let mut order: Vec<String> = Vec::new();
        let mut latest: HashMap<String, &MetricsBucket> = HashMap::new();
        let mut first: HashMap<String, &MetricsBucket> = HashMap::new();
        for b in buckets {
            let key = self.metrics_key(&metrics_key_id(b));
            if !latest.contains_key(&key) {
                order.push(key.clone());
                first.insert(key.clone(), b);
            }
            latest.insert(key, b);
        }
        for _ in 0..CAS_ATTEMPTS {
            let stored = self.mget(&order).await?;
            let mut call = UPSERT_METRICS.prepare_invoke();
            for (key, current) in order.iter().zip(&stored) {
                let (Some(newest), Some(earliest)) = (latest.get(key), first.get(key)) else { continue };
                let mut row = (*newest).clone();
                row.id.clone_from(&earliest.id);
                row.created_at = earliest.created_at;
                if let Some(doc) = current.as_deref().and_then(parse_doc) {
                    if let Some(id) = str_field(&doc, "id") {
                        id.clone_into(&mut row.id);
                    }
                    if let Some(created) = doc.get("created_at").and_then(Value::as_i64) {
                        row.created_at = created;
                    }
                }
                call.key(key);
                call.arg(if current.is_some() { "1" } else { "0" })
                    .arg(current.as_deref().unwrap_or(""))
                    .arg(to_json_text(&metrics_doc(&row))?);
            }
            let written: i64 =
                call.invoke_async(&mut self.conn()).await.map_err(|e| redis_error("cannot write metrics", e))?;
            if written == 1 {
                return Ok(());
            }
        }
        Err(DbError::new(DbErrorKind::Conflict, "metrics changed too often concurrently; retry the write"))
    }

    async fn get_metrics(&self, query: &MetricsQuery) -> DbResult<(Vec<MetricsBucket>, Option<i64>)> {
        let docs = self.metrics_docs().await?;
        Ok(select_metrics(&docs, query))
    }

    async fn metrics_progress(&self) -> DbResult<(Option<NaiveDate>, Option<NaiveDate>)> {
        let buckets = all_buckets(&self.metrics_docs().await?);
        Ok(progress_of(buckets.iter()))
    }
}
