//! Daily metrics in PostgreSQL (`agno_metrics`, as Python Agno 3.x's `PostgresDb` shapes it): one
//! row per `(user_id, date, aggregation_period)`, the shared bucket stored with `user_id = ''`;
//! `token_metrics` and `model_metrics` are JSONB, `date` a DATE.

use crate::sql::SqlAdapter;
use std::collections::HashMap;

use agno_core::{DbResult, MetricsBucket, NaiveDate};
use serde_json::Value;
use sqlx::AssertSqlSafe;

use super::schema::table_ddl;
use super::{PostgresState, db_error, sanitize};

/// The metrics table as Python Agno 3.1 creates it (column order, types, the per-user unique key
/// `{table}_uq_metrics_user_date_period`, indexes). Python's column defaults are client-side, so
/// the DDL has none.
pub(crate) fn metrics_ddl(q: &str, t: &str) -> Vec<String> {
    table_ddl(
        q,
        t,
        "CREATE TABLE IF NOT EXISTS {q} (\n\tid VARCHAR NOT NULL, \n\tagent_runs_count BIGINT NOT NULL, \n\tteam_runs_count BIGINT NOT NULL, \n\tworkflow_runs_count BIGINT NOT NULL, \n\tagent_sessions_count BIGINT NOT NULL, \n\tteam_sessions_count BIGINT NOT NULL, \n\tworkflow_sessions_count BIGINT NOT NULL, \n\tusers_count BIGINT NOT NULL, \n\ttoken_metrics JSONB NOT NULL, \n\tmodel_metrics JSONB NOT NULL, \n\tdate DATE NOT NULL, \n\taggregation_period VARCHAR NOT NULL, \n\tuser_id VARCHAR NOT NULL, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tcompleted BOOLEAN NOT NULL, \n\tPRIMARY KEY (id), \n\tCONSTRAINT \"{t}_uq_metrics_user_date_period\" UNIQUE (user_id, date, aggregation_period)\n)",
        &[&["date"], &["user_id"]],
    )
}

/// Column arrays of one batch upsert (`INSERT ... SELECT * FROM UNNEST(...)`).
#[derive(Default)]
struct BucketColumns {
    id: Vec<String>,
    counts: [Vec<i64>; 7],
    token_metrics: Vec<Value>,
    model_metrics: Vec<Value>,
    date: Vec<String>,
    aggregation_period: Vec<String>,
    user_id: Vec<String>,
    created_at: Vec<i64>,
    updated_at: Vec<Option<i64>>,
    completed: Vec<bool>,
}

impl BucketColumns {
    /// One row per key, the last of the batch winning (one statement cannot update a row twice).
    fn of(buckets: &[MetricsBucket]) -> Self {
        let mut last: HashMap<(&str, NaiveDate, &str), usize> = HashMap::new();
        for (i, b) in buckets.iter().enumerate() {
            last.insert((b.bucket_key(), b.date, b.aggregation_period.as_str()), i);
        }
        let mut cols = Self::default();
        for (i, b) in buckets.iter().enumerate() {
            if last.get(&(b.bucket_key(), b.date, b.aggregation_period.as_str())) != Some(&i) {
                continue;
            }
            cols.id.push(b.id.clone());
            let counts = [
                b.agent_runs_count,
                b.team_runs_count,
                b.workflow_runs_count,
                b.agent_sessions_count,
                b.team_sessions_count,
                b.workflow_sessions_count,
                b.users_count,
            ];
            for (col, n) in cols.counts.iter_mut().zip(counts) {
                col.push(n);
            }
            let mut tokens = Value::Object(b.token_metrics.clone());
            sanitize(&mut tokens);
            cols.token_metrics.push(tokens);
            let mut models = b.model_metrics.clone();
            sanitize(&mut models);
            cols.model_metrics.push(models);
            cols.date.push(b.date.format("%Y-%m-%d").to_string());
            cols.aggregation_period.push(b.aggregation_period.clone());
            cols.user_id.push(b.bucket_key().to_owned());
            cols.created_at.push(b.created_at);
            cols.updated_at.push(b.updated_at);
            cols.completed.push(b.completed);
        }
        cols
    }
}

#[async_trait::async_trait]
impl crate::sql::metrics::SqlMetrics for PostgresState {
    async fn save_metrics(&self, buckets: &[MetricsBucket]) -> DbResult<()> {
        let cols = BucketColumns::of(buckets);
        // One statement: the batch is written whole or not at all. As Python Agno's
        // bulk_upsert_metrics: a replaced bucket keeps id, date, created_at and its key.
        let sql = format!(
            "INSERT INTO {} (id, agent_runs_count, team_runs_count, workflow_runs_count, agent_sessions_count, \
             team_sessions_count, workflow_sessions_count, users_count, token_metrics, model_metrics, date, \
             aggregation_period, user_id, created_at, updated_at, completed) \
             SELECT * FROM UNNEST($1::varchar[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], \
             $6::bigint[], $7::bigint[], $8::bigint[], $9::jsonb[], $10::jsonb[], $11::text[]::date[], \
             $12::varchar[], $13::varchar[], $14::bigint[], $15::bigint[], $16::boolean[]) \
             ON CONFLICT (user_id, date, aggregation_period) DO UPDATE SET {}",
            self.qualified(&self.tables().metrics),
            crate::sql::metrics::replaced_from_excluded()
        );
        let BucketColumns {
            id,
            counts,
            token_metrics,
            model_metrics,
            date,
            aggregation_period,
            user_id,
            created_at,
            updated_at,
            completed,
        } = cols;
        let mut query = sqlx::query(AssertSqlSafe(sql)).bind(id);
        for col in counts {
            query = query.bind(col);
        }
        query
            .bind(token_metrics)
            .bind(model_metrics)
            .bind(date)
            .bind(aggregation_period)
            .bind(user_id)
            .bind(created_at)
            .bind(updated_at)
            .bind(completed)
            .execute(self.pool())
            .await
            .map_err(|e| db_error("cannot write metrics", e))?;
        Ok(())
    }
}
