//! Daily metrics in PostgreSQL (`agno_metrics`, as Python Agno 3.x's `PostgresDb` shapes it): one
//! row per `(user_id, date, aggregation_period)`, the shared bucket stored with `user_id = ''`;
//! `token_metrics` and `model_metrics` are JSONB, `date` a DATE.

use super::schema::table_ddl;

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
