//! DDL of the PostgreSQL approvals table, as Python Agno 3.1 creates it.

use super::schema::index_ddl;
use crate::sql::approvals::APPROVAL_INDEXES;

pub(crate) fn approvals_ddl(q: &str, t: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {q} (\n\tid VARCHAR NOT NULL, \n\trun_id VARCHAR NOT NULL, \n\tsession_id VARCHAR NOT NULL, \n\tstatus VARCHAR NOT NULL, \n\tsource_type VARCHAR NOT NULL, \n\tapproval_type VARCHAR, \n\tpause_type VARCHAR NOT NULL, \n\ttool_name VARCHAR, \n\ttool_args JSONB, \n\texpires_at BIGINT, \n\tagent_id VARCHAR, \n\tteam_id VARCHAR, \n\tworkflow_id VARCHAR, \n\tuser_id VARCHAR, \n\tschedule_id VARCHAR, \n\tschedule_run_id VARCHAR, \n\tsource_name VARCHAR, \n\trequirements JSONB, \n\tcontext JSONB, \n\tresolution_data JSONB, \n\tresolved_by VARCHAR, \n\tresolved_at BIGINT, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\trun_status VARCHAR, \n\tPRIMARY KEY (id)\n)"
    )];
    ddl.extend(APPROVAL_INDEXES.iter().map(|c| index_ddl(q, t, &[c])));
    ddl
}
