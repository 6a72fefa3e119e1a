//! DDL of the MySQL traces and spans tables, as Python Agno 3.1 creates them (the spans'
//! foreign key without `ON DELETE`, as Agno has it).

use crate::sql::traces::{SPAN_INDEXES, TRACE_INDEXES};

fn indexes(t: &str, columns: &[&str]) -> String {
    columns.iter().map(|c| format!(", \n\tINDEX `idx_{t}_{c}` ({c})")).collect()
}

pub(crate) fn traces_ddl(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\ttrace_id VARCHAR(128) NOT NULL, \n\tname VARCHAR(255) NOT NULL, \n\tstatus VARCHAR(50) NOT NULL, \n\tstart_time VARCHAR(128) NOT NULL, \n\tend_time VARCHAR(128) NOT NULL, \n\tduration_ms BIGINT NOT NULL, \n\trun_id VARCHAR(128), \n\tsession_id VARCHAR(128), \n\tuser_id VARCHAR(128), \n\tagent_id VARCHAR(128), \n\tteam_id VARCHAR(128), \n\tworkflow_id VARCHAR(128), \n\tcreated_at VARCHAR(128) NOT NULL, \n\tPRIMARY KEY (trace_id){}\n)",
        indexes(t, &TRACE_INDEXES)
    )
}

pub(crate) fn spans_ddl(t: &str, traces: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\tspan_id VARCHAR(128) NOT NULL, \n\ttrace_id VARCHAR(128) NOT NULL, \n\tparent_span_id VARCHAR(128), \n\tname VARCHAR(255) NOT NULL, \n\tspan_kind VARCHAR(50) NOT NULL, \n\tstatus_code VARCHAR(50) NOT NULL, \n\tstatus_message TEXT, \n\tstart_time VARCHAR(128) NOT NULL, \n\tend_time VARCHAR(128) NOT NULL, \n\tduration_ms BIGINT NOT NULL, \n\tattributes JSON, \n\tcreated_at VARCHAR(128) NOT NULL, \n\tPRIMARY KEY (span_id){}, \n\tFOREIGN KEY(trace_id) REFERENCES `{traces}` (trace_id)\n)",
        indexes(t, &SPAN_INDEXES)
    )
}
