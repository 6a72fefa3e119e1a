//! DDL of the SQLite traces and spans tables, as Python Agno 3.1 creates them.

use crate::sql::traces::{SPAN_INDEXES, TRACE_INDEXES};

pub(crate) fn traces_ddl(t: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {t} (\n\ttrace_id VARCHAR NOT NULL, \n\tname VARCHAR NOT NULL, \n\tstatus VARCHAR NOT NULL, \n\tstart_time VARCHAR NOT NULL, \n\tend_time VARCHAR NOT NULL, \n\tduration_ms BIGINT NOT NULL, \n\trun_id VARCHAR, \n\tsession_id VARCHAR, \n\tuser_id VARCHAR, \n\tagent_id VARCHAR, \n\tteam_id VARCHAR, \n\tworkflow_id VARCHAR, \n\tcreated_at VARCHAR NOT NULL, \n\tPRIMARY KEY (trace_id)\n)"
    )];
    ddl.extend(TRACE_INDEXES.iter().map(|c| format!("CREATE INDEX IF NOT EXISTS idx_{t}_{c} ON {t} ({c})")));
    ddl
}

pub(crate) fn spans_ddl(t: &str, traces: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {t} (\n\tspan_id VARCHAR NOT NULL, \n\ttrace_id VARCHAR NOT NULL, \n\tparent_span_id VARCHAR, \n\tname VARCHAR NOT NULL, \n\tspan_kind VARCHAR NOT NULL, \n\tstatus_code VARCHAR NOT NULL, \n\tstatus_message VARCHAR, \n\tstart_time VARCHAR NOT NULL, \n\tend_time VARCHAR NOT NULL, \n\tduration_ms BIGINT NOT NULL, \n\tattributes JSON, \n\tcreated_at VARCHAR NOT NULL, \n\tPRIMARY KEY (span_id), \n\tFOREIGN KEY(trace_id) REFERENCES {traces} (trace_id)\n)"
    )];
    ddl.extend(SPAN_INDEXES.iter().map(|c| format!("CREATE INDEX IF NOT EXISTS idx_{t}_{c} ON {t} ({c})")));
    ddl
}
