//! Metrics buckets in SQLite (`agno_metrics`, as Python Agno 3.x shapes it): one row per
//! `(user_id, date, aggregation_period)`, the shared bucket stored as `user_id = ''`.

use crate::sql::SqlAdapter;
use agno_core::{DbResult, MetricsBucket};
use sqlx::AssertSqlSafe;

use super::{SqliteState, db_error};
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

#[async_trait::async_trait]
impl crate::sql::metrics::SqlMetrics for SqliteState {
    async fn save_metrics(&self, buckets: &[MetricsBucket]) -> DbResult<()> {
        let _turn = self.write_turn().await;
        let sql = format!(
            "INSERT INTO {} ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (user_id, date, aggregation_period) DO UPDATE SET {}",
            self.tables().metrics,
            crate::sql::metrics::replaced_from_excluded()
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
}
