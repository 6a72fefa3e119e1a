//! Eval runs in SQLite (`agno_eval_runs`, as Python Agno 3.x shapes it): filters, paging and
//! counts run in SQL, and a given `user_id` is part of every statement.

/// The eval runs table as Python Agno 3.1 creates it (column order, types, indexes).
pub(crate) fn evals_ddl(t: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {t} (\n\trun_id VARCHAR NOT NULL, \n\teval_type VARCHAR NOT NULL, \n\teval_data JSON NOT NULL, \n\teval_input JSON NOT NULL, \n\tname VARCHAR, \n\tagent_id VARCHAR, \n\tteam_id VARCHAR, \n\tworkflow_id VARCHAR, \n\tmodel_id VARCHAR, \n\tmodel_provider VARCHAR, \n\tevaluated_component_name VARCHAR, \n\tuser_id VARCHAR, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (run_id)\n)"
        ),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_created_at ON {t} (created_at)"),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_user_id ON {t} (user_id)"),
    ]
}
