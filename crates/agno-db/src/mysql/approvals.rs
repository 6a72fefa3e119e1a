//! DDL of the MySQL approvals table: Agno's columns (Agno 3.1's `MySQLDb` has no approvals; this
//! is the table its SQLite and PostgreSQL adapters create, in MySQL's types).

use crate::sql::approvals::APPROVAL_INDEXES;

pub(crate) fn approvals_ddl(t: &str) -> String {
    let indexes: String = APPROVAL_INDEXES.iter().map(|c| format!(", \n\tINDEX `idx_{t}_{c}` ({c})")).collect();
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\tid VARCHAR(128) NOT NULL, \n\trun_id VARCHAR(128) NOT NULL, \n\tsession_id VARCHAR(128) NOT NULL, \n\tstatus VARCHAR(50) NOT NULL, \n\tsource_type VARCHAR(50) NOT NULL, \n\tapproval_type VARCHAR(50), \n\tpause_type VARCHAR(50) NOT NULL, \n\ttool_name VARCHAR(255), \n\ttool_args JSON, \n\texpires_at BIGINT, \n\tagent_id VARCHAR(128), \n\tteam_id VARCHAR(128), \n\tworkflow_id VARCHAR(128), \n\tuser_id VARCHAR(128), \n\tschedule_id VARCHAR(128), \n\tschedule_run_id VARCHAR(128), \n\tsource_name VARCHAR(255), \n\trequirements JSON, \n\tcontext JSON, \n\tresolution_data JSON, \n\tresolved_by VARCHAR(255), \n\tresolved_at BIGINT, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\trun_status VARCHAR(50), \n\tPRIMARY KEY (id){indexes}\n)"
    )
}
