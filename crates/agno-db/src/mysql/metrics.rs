//! Daily metrics in MySQL and MariaDB (`agno_metrics`, as Python Agno 3.1's `MySQLDb` shapes it):
//! one row per `(user_id, date, aggregation_period)`, the shared bucket stored with `user_id = ''`;
//! `token_metrics` and `model_metrics` are JSON texts. A given `user_id` is matched byte for byte.
//!
//! The unique key follows the column collation (case-insensitive by default), as Python Agno's
//! does: buckets of two users whose ids differ only in case share a row.

use crate::sql::metrics::bucket_from_row;
use agno_core::{DbError, DbErrorKind, DbResult, MetricsBucket, MetricsQuery, MetricsStore, NaiveDate};
use async_trait::async_trait;
use sqlx::MySql;
use sqlx::{AssertSqlSafe, Connection, Row};

use super::sessions::text_column;
use super::{Arg, MySqlDb, bind_args, db_error, marks, push_user, where_clause, with_retries};
use crate::codec::to_json_text;

/// The columns in insert order; `date` is read back as text (sqlx has no date codec here).
const COLUMNS: &str = "id, agent_runs_count, team_runs_count, workflow_runs_count, agent_sessions_count, \
                       team_sessions_count, workflow_sessions_count, users_count, token_metrics, model_metrics, \
                       date, aggregation_period, user_id, created_at, updated_at, completed";

const SELECT_COLUMNS: &str = "id, agent_runs_count, team_runs_count, workflow_runs_count, agent_sessions_count, \
                              team_sessions_count, workflow_sessions_count, users_count, token_metrics, \
                              model_metrics, CAST(date AS CHAR) AS date, aggregation_period, user_id, created_at, \
                              updated_at, completed";

/// Columns rewritten when a bucket's key exists: all but the key, `id` and `created_at`, as
/// Agno's `bulk_upsert_metrics`.
const UPDATED: [&str; 11] = [
    "agent_runs_count",
    "team_runs_count",
    "workflow_runs_count",
    "agent_sessions_count",
    "team_sessions_count",
    "workflow_sessions_count",
    "users_count",
    "token_metrics",
    "model_metrics",
    "updated_at",
    "completed",
];

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

fn parse_day(text: Option<String>, what: &str) -> DbResult<Option<NaiveDate>> {
    text.map(|t| {
        t.parse::<NaiveDate>().map_err(|e| {
            DbError::new(DbErrorKind::Other, format!("stored {what} {t:?} is not a date: {e}")).with_source(e)
        })
    })
    .transpose()
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

impl MySqlDb {
    /// One attempt at [`MetricsStore::upsert_metrics`]: multi-row inserts that update a bucket
    /// whose key exists, all in one transaction.
    async fn try_upsert_metrics(&self, buckets: &[MetricsBucket]) -> DbResult<()> {
        let t = &self.tables().metrics;
        let updates = UPDATED.iter().map(|c| format!("{c} = VALUES({c})")).collect::<Vec<_>>().join(", ");
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

#[async_trait]
impl MetricsStore for MySqlDb {
    async fn upsert_metrics(&self, buckets: &[MetricsBucket]) -> DbResult<()> {
        if buckets.is_empty() {
            return Ok(());
        }
        with_retries(|| self.try_upsert_metrics(buckets)).await
    }

    async fn get_metrics(&self, query: &MetricsQuery) -> DbResult<(Vec<MetricsBucket>, Option<i64>)> {
        let t = &self.tables().metrics;
        let mut owner = Vec::new();
        let mut owner_args = Vec::new();
        push_user(&mut owner, &mut owner_args, query.user_id.as_deref());
        let mut conditions = owner.clone();
        let mut args = owner_args.clone();
        for (op, day) in [(">=", query.starting_date), ("<=", query.ending_date)] {
            if let Some(day) = day {
                conditions.push(format!("date {op} ?"));
                args.push(Arg::Str(day.to_string()));
            }
        }
        let sql = format!(
            "SELECT {SELECT_COLUMNS} FROM `{t}`{} ORDER BY date, CAST(user_id AS BINARY), \
             CAST(aggregation_period AS BINARY)",
            where_clause(&conditions)
        );
        let rows = bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot list metrics", e))?;
        if rows.is_empty() {
            return Ok((Vec::new(), None));
        }
        let buckets = crate::codec::readable(
            "metrics bucket",
            rows.iter().map(|r| (r.try_get::<String, _>("id").ok(), bucket_from_row::<MySql>(r))),
        );
        // The latest update among the owner's buckets, whatever their date (as Agno).
        let sql = format!("SELECT MAX(updated_at) AS latest FROM `{t}`{}", where_clause(&owner));
        let row = bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &owner_args)
            .fetch_one(self.pool())
            .await
            .map_err(|e| db_error("cannot read the latest metrics update", e))?;
        let latest: Option<i64> =
            row.try_get("latest").map_err(|e| db_error("cannot read the latest metrics update", e))?;
        Ok((buckets, latest))
    }

    async fn metrics_progress(&self) -> DbResult<(Option<NaiveDate>, Option<NaiveDate>)> {
        let t = &self.tables().metrics;
        let sql = format!(
            "SELECT CAST(d.done AS CHAR) AS done, CAST((SELECT MIN(m.date) FROM `{t}` m WHERE NOT m.completed \
             AND (d.done IS NULL OR m.date > d.done)) AS CHAR) AS pending \
             FROM (SELECT MAX(CASE WHEN completed THEN date END) AS done FROM `{t}`) d"
        );
        let row = sqlx::query(AssertSqlSafe(sql.as_str()))
            .fetch_one(self.pool())
            .await
            .map_err(|e| db_error("cannot read the metrics progress", e))?;
        let done = parse_day(text_column(&row, "done")?, "metrics date")?;
        let pending = parse_day(text_column(&row, "pending")?, "metrics date")?;
        Ok((done, pending))
    }
}
