//! Daily metrics in MySQL and MariaDB (`agno_metrics`, as Python Agno 3.1's `MySQLDb` shapes it):
//! one row per `(user_id, date, aggregation_period)`, the shared bucket stored with `user_id = ''`;
//! `token_metrics` and `model_metrics` are JSON texts. A given `user_id` is matched byte for byte.
//!
//! The unique key follows the column collation (case-insensitive by default), as Python Agno's
//! does: buckets of two users whose ids differ only in case share a row.

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
