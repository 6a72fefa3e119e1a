//! Metrics buckets in SQLite (`agno_metrics`, as Python Agno 3.x shapes it): one row per
//! `(user_id, date, aggregation_period)`, the shared bucket stored as `user_id = ''`.

use crate::sql::metrics::{bucket_from_row, parse_date};
use agno_core::{DbResult, MetricsBucket, MetricsQuery, MetricsStore, NaiveDate};
use async_trait::async_trait;
use sqlx::Sqlite;
use sqlx::{AssertSqlSafe, Row};

use super::{SqliteDb, db_error};
use crate::codec::to_json_text;

const COLUMNS: &str = "id, agent_runs_count, team_runs_count, workflow_runs_count, agent_sessions_count, \
     team_sessions_count, workflow_sessions_count, users_count, token_metrics, model_metrics, date, \
     aggregation_period, user_id, created_at, updated_at, completed";

/// The metrics table as Python Agno 3.1 creates it (column order, types, unique key, indexes).
pub(crate) fn metrics_ddl(t: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {t} (\n\tid VARCHAR NOT NULL, \n\tagent_runs_count BIGINT NOT NULL, \n\tteam_runs_count BIGINT NOT NULL, \n\tworkflow_runs_count BIGINT NOT NULL, \n\tagent_sessions_count BIGINT NOT NULL, \n\tteam_sessions_count BIGINT NOT NULL, \n\tworkflow_sessions_count BIGINT NOT NULL, \n\tusers_count BIGINT NOT NULL, \n\ttoken_metrics JSON NOT NULL, \n\tmodel_metrics JSON NOT NULL, \n\tdate DATE NOT NULL, \n\taggregation_period VARCHAR NOT NULL, \n\tuser_id VARCHAR NOT NULL, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tcompleted BOOLEAN NOT NULL, \n\tPRIMARY KEY (id), \n\tCONSTRAINT {t}_uq_metrics_user_date_period UNIQUE (user_id, date, aggregation_period)\n)"
        ),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_aggregation_period ON {t} (aggregation_period)"),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_date ON {t} (date)"),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_user_id ON {t} (user_id)"),
    ]
}

#[async_trait]
impl MetricsStore for SqliteDb {
    async fn upsert_metrics(&self, buckets: &[MetricsBucket]) -> DbResult<()> {
        if buckets.is_empty() {
            return Ok(());
        }
        let _turn = self.write_turn().await;
        let sql = format!(
            "INSERT INTO {} ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (user_id, date, aggregation_period) DO UPDATE SET \
             agent_runs_count = excluded.agent_runs_count, team_runs_count = excluded.team_runs_count, \
             workflow_runs_count = excluded.workflow_runs_count, agent_sessions_count = excluded.agent_sessions_count, \
             team_sessions_count = excluded.team_sessions_count, \
             workflow_sessions_count = excluded.workflow_sessions_count, users_count = excluded.users_count, \
             token_metrics = excluded.token_metrics, model_metrics = excluded.model_metrics, \
             updated_at = excluded.updated_at, completed = excluded.completed",
            self.tables().metrics
        );
        let mut tx = self.pool().begin().await.map_err(|e| db_error("cannot begin a metrics write", e))?;
        for b in buckets {
            sqlx::query(AssertSqlSafe(sql.as_str()))
                .bind(&b.id)
                .bind(b.agent_runs_count)
                .bind(b.team_runs_count)
                .bind(b.workflow_runs_count)
                .bind(b.agent_sessions_count)
                .bind(b.team_sessions_count)
                .bind(b.workflow_sessions_count)
                .bind(b.users_count)
                .bind(to_json_text(&b.token_metrics)?)
                .bind(to_json_text(&b.model_metrics)?)
                .bind(b.date.to_string())
                .bind(&b.aggregation_period)
                .bind(b.bucket_key())
                .bind(b.created_at)
                .bind(b.updated_at)
                .bind(b.completed)
                .execute(&mut *tx)
                .await
                .map_err(|e| db_error(&format!("cannot write the metrics of {}", b.date), e))?;
        }
        tx.commit().await.map_err(|e| db_error("cannot commit metrics", e))
    }

    async fn get_metrics(&self, query: &MetricsQuery) -> DbResult<(Vec<MetricsBucket>, Option<i64>)> {
        let t = &self.tables().metrics;
        let from = query.starting_date.map(|d| d.to_string());
        let to = query.ending_date.map(|d| d.to_string());
        let user = query.user_id.as_deref();
        let sql = format!(
            "SELECT {COLUMNS} FROM {t} WHERE (? IS NULL OR date >= ?) AND (? IS NULL OR date <= ?) \
             AND (? IS NULL OR user_id = ?) ORDER BY date, user_id, aggregation_period"
        );
        let rows = sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(&from)
            .bind(&from)
            .bind(&to)
            .bind(&to)
            .bind(user)
            .bind(user)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot read metrics", e))?;
        if rows.is_empty() {
            return Ok((Vec::new(), None));
        }
        let buckets = crate::codec::readable(
            "metrics bucket",
            rows.iter().map(|r| (r.try_get::<String, _>("id").ok(), bucket_from_row::<Sqlite>(r))),
        );
        let latest_sql = format!("SELECT MAX(updated_at) FROM {t} WHERE (? IS NULL OR user_id = ?)");
        let latest: Option<i64> = sqlx::query_scalar(AssertSqlSafe(latest_sql.as_str()))
            .bind(user)
            .bind(user)
            .fetch_one(self.pool())
            .await
            .map_err(|e| db_error("cannot read the latest metrics update", e))?;
        Ok((buckets, latest))
    }

    async fn metrics_progress(&self) -> DbResult<(Option<NaiveDate>, Option<NaiveDate>)> {
        let t = &self.tables().metrics;
        let sql = format!(
            "SELECT (SELECT MAX(date) FROM {t} WHERE completed), \
             (SELECT MIN(date) FROM {t} WHERE NOT completed \
              AND date > COALESCE((SELECT MAX(date) FROM {t} WHERE completed), ''))"
        );
        let row = sqlx::query(AssertSqlSafe(sql.as_str()))
            .fetch_one(self.pool())
            .await
            .map_err(|e| db_error("cannot read metrics progress", e))?;
        let day = |i: usize| -> DbResult<Option<NaiveDate>> {
            let text: Option<String> = row.try_get(i).map_err(|e| db_error("cannot read metrics progress", e))?;
            text.as_deref().map(parse_date).transpose()
        };
        Ok((day(0)?, day(1)?))
    }

    async fn metrics_facts(&self, from: i64, to: i64) -> DbResult<Option<Vec<agno_core::SessionFacts>>> {
        let t = self.tables();
        if self.has_legacy_runs() {
            // Sessions still holding a legacy runs blob are read one by one (their runs merge).
            let sql = format!(
                "SELECT 1 FROM {} WHERE runs IS NOT NULL AND created_at >= ? AND created_at < ? LIMIT 1",
                t.sessions
            );
            let blob: Option<i64> = sqlx::query_scalar(AssertSqlSafe(sql.as_str()))
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
            "SELECT session_id, session_type, user_id, created_at, \
             CASE WHEN json_valid(session_data) THEN json_extract(session_data, '$.session_metrics') END AS m \
             FROM {} WHERE created_at >= ? AND created_at < ?",
            t.sessions
        );
        let rows = sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(from)
            .bind(to)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot read the sessions of the metrics window", e))?;
        let sessions =
            rows.iter().map(|r| crate::metrics::session_row_facts(r, db_error)).collect::<DbResult<Vec<_>>>()?;
        let mut runs = Vec::new();
        if self.has_runs_table() {
            // A run's model comes from its facts row; only runs without one (written by Python
            // Agno) have their JSON read, once each.
            let from_json = |key: &str| {
                format!("CASE WHEN json_valid(r.run_data) THEN CAST(json_extract(r.run_data, '$.{key}') AS TEXT) END")
            };
            let (model, provider, join) = if self.has_run_facts() {
                (
                    format!("CASE WHEN f.run_id IS NOT NULL THEN f.model ELSE {} END", from_json("model")),
                    format!(
                        "CASE WHEN f.run_id IS NOT NULL THEN f.model_provider ELSE {} END",
                        from_json("model_provider")
                    ),
                    format!("LEFT JOIN {} f ON f.run_id = r.run_id", t.run_facts()),
                )
            } else {
                (from_json("model"), from_json("model_provider"), String::new())
            };
            let sql = format!(
                "SELECT r.session_id AS session_id, {model} AS model, {provider} AS provider, \
                 COUNT(*) AS n FROM {} r JOIN {} s ON s.session_id = r.session_id {join} \
                 WHERE s.created_at >= ? AND s.created_at < ? GROUP BY 1, 2, 3",
                t.runs, t.sessions
            );
            let rows = sqlx::query(AssertSqlSafe(sql.as_str()))
                .bind(from)
                .bind(to)
                .fetch_all(self.pool())
                .await
                .map_err(|e| db_error("cannot read the runs of the metrics window", e))?;
            runs = rows.iter().map(|r| crate::metrics::run_group_facts(r, db_error)).collect::<DbResult<Vec<_>>>()?;
        }
        Ok(Some(crate::metrics::facts_from(sessions, runs)))
    }
}
