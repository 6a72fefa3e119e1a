//! DDL of the SQLite learnings table, as Python Agno 3.1 creates it (on first use).

pub(crate) fn learnings_ddl(t: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {t} (\n\tlearning_id VARCHAR NOT NULL, \n\tlearning_type VARCHAR NOT NULL, \n\tnamespace VARCHAR, \n\tuser_id VARCHAR, \n\tagent_id VARCHAR, \n\tteam_id VARCHAR, \n\tworkflow_id VARCHAR, \n\tsession_id VARCHAR, \n\tentity_id VARCHAR, \n\tentity_type VARCHAR, \n\tcontent JSON NOT NULL, \n\tmetadata JSON, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (learning_id)\n)"
    )];
    ddl.extend(
        crate::sql::learnings::indexed().map(|c| format!("CREATE INDEX IF NOT EXISTS idx_{t}_{c} ON {t} ({c})")),
    );
    ddl
}
