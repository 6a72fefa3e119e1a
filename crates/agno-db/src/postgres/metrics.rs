//! Daily metrics in PostgreSQL (`agno_metrics`, as Python Agno 3.x's `PostgresDb` shapes it): one
//! row per `(user_id, date, aggregation_period)`, the shared bucket stored with `user_id = ''`;
//! `token_metrics` and `model_metrics` are JSONB, `date` a DATE.

use crate::sql::metrics::bucket_from_row;
use sqlx::Postgres;
use std::collections::HashMap;

use agno_core::{DbError, DbErrorKind, DbResult, MetricsBucket, MetricsQuery, MetricsStore, NaiveDate};
use async_trait::async_trait;
use serde_json::Value;
use sqlx::{AssertSqlSafe, Row};

use super::schema::index_ddl;
use super::{PostgresDb, db_error, sanitize};

/// The date travels as ISO text (`YYYY-MM-DD`): the driver has no date codec enabled.
const COLUMNS: &str = "id, agent_runs_count, team_runs_count, workflow_runs_count, agent_sessions_count, \
     team_sessions_count, workflow_sessions_count, users_count, token_metrics, model_metrics, \
     to_char(date, 'YYYY-MM-DD') AS date, aggregation_period, user_id, created_at, updated_at, completed";

/// The metrics table as Python Agno 3.1 creates it (column order, types, the per-user unique key
/// `{table}_uq_metrics_user_date_period`, indexes). Python's column defaults are client-side, so
/// the DDL has none.
pub(crate) fn metrics_ddl(q: &str, t: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {q} (\n\tid VARCHAR NOT NULL, \n\tagent_runs_count BIGINT NOT NULL, \n\tteam_runs_count BIGINT NOT NULL, \n\tworkflow_runs_count BIGINT NOT NULL, \n\tagent_sessions_count BIGINT NOT NULL, \n\tteam_sessions_count BIGINT NOT NULL, \n\tworkflow_sessions_count BIGINT NOT NULL, \n\tusers_count BIGINT NOT NULL, \n\ttoken_metrics JSONB NOT NULL, \n\tmodel_metrics JSONB NOT NULL, \n\tdate DATE NOT NULL, \n\taggregation_period VARCHAR NOT NULL, \n\tuser_id VARCHAR NOT NULL, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tcompleted BOOLEAN NOT NULL, \n\tPRIMARY KEY (id), \n\tCONSTRAINT \"{t}_uq_metrics_user_date_period\" UNIQUE (user_id, date, aggregation_period)\n)"
        ),
        index_ddl(q, t, &["date"]),
        index_ddl(q, t, &["user_id"]),
    ]
}

fn parse_day(text: Option<String>, what: &str) -> DbResult<Option<NaiveDate>> {
    text.map(|t| {
        t.parse::<NaiveDate>().map_err(|e| {
            DbError::new(DbErrorKind::Other, format!("{what} holds an unreadable date {t:?}")).with_source(e)
        })
    })
    .transpose()
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

#[async_trait]
impl MetricsStore for PostgresDb {
    async fn upsert_metrics(&self, buckets: &[MetricsBucket]) -> DbResult<()> {
        if buckets.is_empty() {
            return Ok(());
        }
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
             ON CONFLICT (user_id, date, aggregation_period) DO UPDATE SET \
             agent_runs_count = excluded.agent_runs_count, team_runs_count = excluded.team_runs_count, \
             workflow_runs_count = excluded.workflow_runs_count, agent_sessions_count = excluded.agent_sessions_count, \
             team_sessions_count = excluded.team_sessions_count, \
             workflow_sessions_count = excluded.workflow_sessions_count, users_count = excluded.users_count, \
             token_metrics = excluded.token_metrics, model_metrics = excluded.model_metrics, \
             updated_at = excluded.updated_at, completed = excluded.completed",
            self.qualified(&self.tables().metrics)
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

    async fn get_metrics(&self, query: &MetricsQuery) -> DbResult<(Vec<MetricsBucket>, Option<i64>)> {
        let t = self.qualified(&self.tables().metrics);
        let day = |d: Option<NaiveDate>| d.map(|d| d.format("%Y-%m-%d").to_string());
        let sql = format!(
            "SELECT {COLUMNS} FROM {t} WHERE ($1::text IS NULL OR date >= $1::text::date) \
             AND ($2::text IS NULL OR date <= $2::text::date) AND ($3::text IS NULL OR user_id = $3) \
             ORDER BY date, user_id COLLATE \"C\", aggregation_period COLLATE \"C\""
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(day(query.starting_date))
            .bind(day(query.ending_date))
            .bind(&query.user_id)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot read metrics", e))?;
        if rows.is_empty() {
            return Ok((Vec::new(), None));
        }
        let buckets = crate::codec::readable(
            "metrics bucket",
            rows.iter().map(|r| (r.try_get::<String, _>("id").ok(), bucket_from_row::<Postgres>(r))),
        );
        // As Python Agno: the latest update is scoped by the owner, not by the dates.
        let sql = format!("SELECT MAX(updated_at) FROM {t} WHERE ($1::text IS NULL OR user_id = $1)");
        let latest: Option<i64> = sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(&query.user_id)
            .fetch_one(self.pool())
            .await
            .map_err(|e| db_error("cannot read the latest metrics update", e))?;
        Ok((buckets, latest))
    }

    async fn metrics_progress(&self) -> DbResult<(Option<NaiveDate>, Option<NaiveDate>)> {
        let t = self.qualified(&self.tables().metrics);
        let sql = format!(
            "WITH done AS (SELECT MAX(date) AS day FROM {t} WHERE completed) \
             SELECT to_char(done.day, 'YYYY-MM-DD') AS latest_completed, \
             (SELECT to_char(MIN(m.date), 'YYYY-MM-DD') FROM {t} m \
              WHERE NOT m.completed AND (done.day IS NULL OR m.date > done.day)) AS earliest_incomplete FROM done"
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .fetch_one(self.pool())
            .await
            .map_err(|e| db_error("cannot read the metrics progress", e))?;
        let col = |name: &str| -> DbResult<Option<NaiveDate>> {
            let text: Option<String> =
                row.try_get(name).map_err(|e| db_error("cannot read the metrics progress", e))?;
            parse_day(text, "the metrics table")
        };
        Ok((col("latest_completed")?, col("earliest_incomplete")?))
    }

    async fn metrics_facts(&self, from: i64, to: i64) -> DbResult<Option<Vec<agno_core::SessionFacts>>> {
        let sessions_t = self.qualified(&self.tables().sessions);
        if self.has_legacy_runs() {
            // Sessions still holding a legacy runs blob are read one by one (their runs merge).
            let sql = format!(
                "SELECT 1 FROM {sessions_t} WHERE runs IS NOT NULL AND created_at >= $1 AND created_at < $2 LIMIT 1"
            );
            let blob: Option<i32> = sqlx::query_scalar(AssertSqlSafe(sql.as_str()))
                .bind(from)
                .bind(to)
                .fetch_optional(self.pool())
                .await
                .map_err(|e| db_error("cannot look for legacy runs", e))?;
            if blob.is_some() {
                return Ok(None);
            }
        }
        let sql = format!(
            "SELECT session_id, session_type, user_id, created_at, (session_data::jsonb -> 'session_metrics')::text AS m \
             FROM {sessions_t} WHERE created_at >= $1 AND created_at < $2"
        );
        let rows = sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(from)
            .bind(to)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot read the sessions of the metrics window", e))?;
        let sessions =
            rows.iter().map(|r| crate::metrics::session_row_facts(r, db_error)).collect::<DbResult<Vec<_>>>()?;
        let runs_t = self.qualified(&self.tables().runs);
        // A run's model comes from its facts row; only runs without one (written by Python
        // Agno) have their JSON read.
        let (model, provider, join) = if self.has_run_facts() {
            (
                "CASE WHEN f.run_id IS NOT NULL THEN f.model ELSE r.run_data::jsonb ->> 'model' END",
                "CASE WHEN f.run_id IS NOT NULL THEN f.model_provider ELSE r.run_data::jsonb ->> 'model_provider' END",
                format!("LEFT JOIN {} f ON f.run_id = r.run_id", self.qualified(&self.tables().run_facts())),
            )
        } else {
            ("r.run_data::jsonb ->> 'model'", "r.run_data::jsonb ->> 'model_provider'", String::new())
        };
        let sql = format!(
            "SELECT r.session_id, {model} AS model, {provider} AS provider, \
             COUNT(*) AS n FROM {runs_t} r JOIN {sessions_t} s ON s.session_id = r.session_id {join} \
             WHERE s.created_at >= $1 AND s.created_at < $2 GROUP BY 1, 2, 3"
        );
        let rows = sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(from)
            .bind(to)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot read the runs of the metrics window", e))?;
        let runs = rows.iter().map(|r| crate::metrics::run_group_facts(r, db_error)).collect::<DbResult<Vec<_>>>()?;
        Ok(Some(crate::metrics::facts_from(sessions, runs)))
    }
}
