//! Metrics buckets of the in-memory store.

use agno_core::{DbResult, MetricsBucket, MetricsQuery, MetricsStore, NaiveDate};
use async_trait::async_trait;

use super::InMemoryDb;
use crate::metrics::{metrics_match, metrics_order, progress_of};

#[async_trait]
impl MetricsStore for InMemoryDb {
    async fn upsert_metrics(&self, buckets: &[MetricsBucket]) -> DbResult<()> {
        let mut tables = self.lock()?;
        for b in buckets {
            let key = (b.bucket_key().to_owned(), b.date, b.aggregation_period.clone());
            let mut row = b.clone();
            if let Some(old) = tables.metrics.get(&key) {
                row.id.clone_from(&old.id);
                row.created_at = old.created_at;
            }
            tables.metrics.insert(key, row);
        }
        Ok(())
    }

    async fn get_metrics(&self, query: &MetricsQuery) -> DbResult<(Vec<MetricsBucket>, Option<i64>)> {
        let tables = self.lock()?;
        let mut list: Vec<MetricsBucket> =
            tables.metrics.values().filter(|b| metrics_match(b, query)).cloned().collect();
        if list.is_empty() {
            return Ok((list, None));
        }
        list.sort_by(metrics_order);
        let owner = MetricsQuery { user_id: query.user_id.clone(), ..MetricsQuery::default() };
        let latest = tables.metrics.values().filter(|b| metrics_match(b, &owner)).filter_map(|b| b.updated_at).max();
        Ok((list, latest))
    }

    async fn metrics_progress(&self) -> DbResult<(Option<NaiveDate>, Option<NaiveDate>)> {
        Ok(progress_of(self.lock()?.metrics.values()))
    }
}
