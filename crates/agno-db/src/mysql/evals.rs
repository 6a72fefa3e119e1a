//! Eval runs in MySQL and MariaDB (`agno_eval_runs`, as Python Agno 3.1's `MySQLDb` shapes it):
//! `eval_data` and `eval_input` are JSON texts; filters, sort, paging and counts run in SQL. A
//! given `user_id` (and every other id filter) is matched byte for byte.

/// The eval runs table as Python Agno 3.1 creates it (column types and lengths, index names), in
/// one statement. `JSON` becomes `LONGTEXT ... CHECK (json_valid(...))` on MariaDB, as for Agno.
pub(crate) fn evals_ddl(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\
         \trun_id VARCHAR(128) NOT NULL, \n\
         \teval_type VARCHAR(50) NOT NULL, \n\
         \teval_data JSON NOT NULL, \n\
         \teval_input JSON NOT NULL, \n\
         \tname VARCHAR(255), \n\
         \tagent_id VARCHAR(128), \n\
         \tteam_id VARCHAR(128), \n\
         \tworkflow_id VARCHAR(128), \n\
         \tmodel_id VARCHAR(128), \n\
         \tmodel_provider VARCHAR(128), \n\
         \tevaluated_component_name VARCHAR(255), \n\
         \tcreated_at BIGINT NOT NULL, \n\
         \tupdated_at BIGINT, \n\
         \tuser_id VARCHAR(128), \n\
         \tPRIMARY KEY (run_id), \n\
         \tINDEX `idx_{t}_created_at` (created_at), \n\
         \tINDEX `idx_{t}_user_id` (user_id)\n\
         )"
    )
}
