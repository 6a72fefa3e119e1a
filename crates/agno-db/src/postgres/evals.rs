//! Eval runs in PostgreSQL (`agno_eval_runs`, as Python Agno 3.x's `PostgresDb` shapes it):
//! `eval_data` and `eval_input` are JSONB; filters, paging and counts run in SQL, and a given
//! `user_id` is part of every statement.

use super::schema::table_ddl;

/// The eval runs table as Python Agno 3.1 creates it (column order, types, indexes).
pub(crate) fn evals_ddl(q: &str, t: &str) -> Vec<String> {
    table_ddl(
        q,
        t,
        "CREATE TABLE IF NOT EXISTS {q} (\n\trun_id VARCHAR NOT NULL, \n\teval_type VARCHAR NOT NULL, \n\teval_data JSONB NOT NULL, \n\teval_input JSONB NOT NULL, \n\tname VARCHAR, \n\tagent_id VARCHAR, \n\tteam_id VARCHAR, \n\tworkflow_id VARCHAR, \n\tmodel_id VARCHAR, \n\tmodel_provider VARCHAR, \n\tevaluated_component_name VARCHAR, \n\tuser_id VARCHAR, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (run_id)\n)",
        &[&["created_at"], &["user_id"]],
    )
}
