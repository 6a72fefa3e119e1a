//! Daily metrics in MySQL and MariaDB (`agno_metrics`, as Python Agno 3.1's `MySQLDb` shapes it):
//! one row per `(user_id, date, aggregation_period)`, the shared bucket stored with `user_id = ''`;
//! `token_metrics` and `model_metrics` are JSON texts. A given `user_id` is matched byte for byte.
//!
//! The unique key follows the column collation (case-insensitive by default), as Python Agno's
//! does: buckets of two users whose ids differ only in case share a row.

use crate::sql::SqlAdapter;
use agno_core::{DbResult, MetricsBucket};
use sqlx::MySql;
use sqlx::{AssertSqlSafe, Connection};

use super::{Arg, MySqlState, bind_args, db_error, marks};
use crate::codec::to_json_text;

/// The columns in insert order; `date` is read back as text (sqlx has no date codec here).
const COLUMNS: &str = "id, agent_runs_count, team_runs_count, workflow_runs_count, agent_sessions_count, \
                       team_sessions_count, workflow_sessions_count, users_count, token_metrics, model_metrics, \
                       date, aggregation_period, user_id, created_at, updated_at, completed";

/// Buckets per multi-row insert (16 parameters each, far below the 65 535 limit).
const INSERT_CHUNK: usize = 500;

/// The metrics table exactly as Python Agno 3.1's `MySQLDb` creates it (checked against
/// `SHOW CREATE TABLE` of a table Agno created on MariaDB 10.11), in one statement. Agno declares
/// no server defaults: every value is written by the client.
pub(crate) fn metrics_ddl(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\
         \tid VARCHAR(128) NOT NULL, \n\
         \tagent_runs_count BIGINT NOT NULL, \n\
         \tteam_runs_count BIGINT NOT NULL, \n\
         \tworkflow_runs_count BIGINT NOT NULL, \n\
         \tagent_sessions_count BIGINT NOT NULL, \n\
         \tteam_sessions_count BIGINT NOT NULL, \n\
         \tworkflow_sessions_count BIGINT NOT NULL, \n\
         \tusers_count BIGINT NOT NULL, \n\
         \ttoken_metrics JSON NOT NULL, \n\
         \tmodel_metrics JSON NOT NULL, \n\
         \tdate DATE NOT NULL, \n\
         \taggregation_period VARCHAR(20) NOT NULL, \n\
         \tuser_id VARCHAR(128) NOT NULL, \n\
         \tcreated_at BIGINT NOT NULL, \n\
         \tupdated_at BIGINT, \n\
         \tcompleted BOOL NOT NULL, \n\
         \tPRIMARY KEY (id), \n\
         \tCONSTRAINT `{t}_uq_metrics_user_date_period` UNIQUE (user_id, date, aggregation_period), \n\
         \tINDEX `idx_{t}_user_id` (user_id), \n\
         \tINDEX `idx_{t}_date` (date)\n\
         )"
    )
}

fn bucket_args(b: &MetricsBucket) -> DbResult<Vec<Arg>> {
    Ok(vec![
        Arg::Str(b.id.clone()),
        Arg::Int(b.agent_runs_count),
        Arg::Int(b.team_runs_count),
        Arg::Int(b.workflow_runs_count),
        Arg::Int(b.agent_sessions_count),
        Arg::Int(b.team_sessions_count),
        Arg::Int(b.workflow_sessions_count),
        Arg::Int(b.users_count),
        Arg::Str(to_json_text(&b.token_metrics)?),
        Arg::Str(to_json_text(&b.model_metrics)?),
        Arg::Str(b.date.to_string()),
        Arg::Str(b.aggregation_period.clone()),
        Arg::Str(b.bucket_key().to_owned()),
        Arg::Int(b.created_at),
        b.updated_at.map_or(Arg::Null, Arg::Int),
        Arg::Int(i64::from(b.completed)),
    ])
}

impl MySqlState {
    /// One attempt at [`MetricsStore::upsert_metrics`]: multi-row inserts that update a bucket
    /// whose key exists, all in one transaction.
    async fn try_upsert_metrics(&self, buckets: &[MetricsBucket]) -> DbResult<()> {
        let t = &self.tables().metrics;
        let updates =
            crate::sql::metrics::replaced().map(|c| format!("{c} = VALUES({c})")).collect::<Vec<_>>().join(", ");
        let mut conn = self.read_committed_conn().await?;
        let mut tx = conn.begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
        for chunk in buckets.chunks(INSERT_CHUNK) {
            let tuple = format!("({})", marks(16));
            let sql = format!(
                "INSERT INTO `{t}` ({COLUMNS}) VALUES {} ON DUPLICATE KEY UPDATE {updates}",
                vec![tuple; chunk.len()].join(", ")
            );
            let mut args = Vec::with_capacity(chunk.len() * 16);
            for b in chunk {
                args.extend(bucket_args(b)?);
            }
            bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
                .execute(&mut *tx)
                .await
                .map_err(|e| db_error("cannot upsert metrics", e))?;
        }
        tx.commit().await.map_err(|e| db_error("cannot commit the metrics", e))?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl crate::sql::metrics::SqlMetrics for MySqlState {
    async fn save_metrics(&self, buckets: &[MetricsBucket]) -> DbResult<()> {
        crate::sql::retrying::<MySql, _, _, _>(|| self.try_upsert_metrics(buckets)).await
    }
}
