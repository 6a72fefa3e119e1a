//! Metrics buckets in SQLite (`agno_metrics`, as Python Agno 3.x shapes it): one row per
//! `(user_id, date, aggregation_period)`, the shared bucket stored as `user_id = ''`.

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
