//! DDL of the SQLite compactions table, as Python Agno 3.1 creates it.

pub(crate) fn compactions_ddl(t: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {t} (\n\tcompaction_id VARCHAR NOT NULL, \n\tsession_id VARCHAR NOT NULL, \n\trun_id VARCHAR, \n\tuser_id VARCHAR, \n\tfirst_kept_message_id VARCHAR, \n\tsummary VARCHAR, \n\tarchived_messages VARCHAR, \n\tmessages_compacted BIGINT, \n\ttokens_before BIGINT, \n\ttokens_after BIGINT, \n\tcreated_at BIGINT NOT NULL, \n\tPRIMARY KEY (compaction_id)\n)"
        ),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_session_id_created_at ON {t} (session_id, created_at)"),
    ]
}
