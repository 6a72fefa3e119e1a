//! DDL of the SQLite approvals table, as Python Agno 3.1 creates it.

use crate::sql::approvals::APPROVAL_INDEXES;

pub(crate) fn approvals_ddl(t: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {t} (\n\tid VARCHAR NOT NULL, \n\trun_id VARCHAR NOT NULL, \n\tsession_id VARCHAR NOT NULL, \n\tstatus VARCHAR NOT NULL, \n\tsource_type VARCHAR NOT NULL, \n\tapproval_type VARCHAR, \n\tpause_type VARCHAR NOT NULL, \n\ttool_name VARCHAR, \n\ttool_args JSON, \n\texpires_at BIGINT, \n\tagent_id VARCHAR, \n\tteam_id VARCHAR, \n\tworkflow_id VARCHAR, \n\tuser_id VARCHAR, \n\tschedule_id VARCHAR, \n\tschedule_run_id VARCHAR, \n\tsource_name VARCHAR, \n\trequirements JSON, \n\tcontext JSON, \n\tresolution_data JSON, \n\tresolved_by VARCHAR, \n\tresolved_at BIGINT, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\trun_status VARCHAR, \n\tPRIMARY KEY (id)\n)"
    )];
    ddl.extend(APPROVAL_INDEXES.iter().map(|c| format!("CREATE INDEX IF NOT EXISTS idx_{t}_{c} ON {t} ({c})")));
    ddl
}
