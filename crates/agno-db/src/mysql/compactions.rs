//! DDL of the MySQL compactions table: Agno's columns (Agno 3.1's `MySQLDb` stores no
//! compactions; this is the table its SQLite and PostgreSQL adapters create, in MySQL's types).

pub(crate) fn compactions_ddl(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\tcompaction_id VARCHAR(128) NOT NULL, \n\tsession_id VARCHAR(128) NOT NULL, \n\trun_id VARCHAR(128), \n\tuser_id VARCHAR(128), \n\tfirst_kept_message_id VARCHAR(128), \n\tsummary LONGTEXT, \n\tarchived_messages LONGTEXT, \n\tmessages_compacted BIGINT, \n\ttokens_before BIGINT, \n\ttokens_after BIGINT, \n\tcreated_at BIGINT NOT NULL, \n\tPRIMARY KEY (compaction_id), \n\tINDEX `idx_{t}_session_id_created_at` (session_id, created_at)\n)"
    )
}
