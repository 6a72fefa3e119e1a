//! DDL of the PostgreSQL compactions table, as Python Agno 3.1 creates it.

use super::schema::index_ddl;

pub(crate) fn compactions_ddl(q: &str, t: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {q} (\n\tcompaction_id VARCHAR NOT NULL, \n\tsession_id VARCHAR NOT NULL, \n\trun_id VARCHAR, \n\tuser_id VARCHAR, \n\tfirst_kept_message_id VARCHAR, \n\tsummary VARCHAR, \n\tarchived_messages VARCHAR, \n\tmessages_compacted BIGINT, \n\ttokens_before BIGINT, \n\ttokens_after BIGINT, \n\tcreated_at BIGINT NOT NULL, \n\tPRIMARY KEY (compaction_id)\n)"
        ),
        index_ddl(q, t, &["session_id", "created_at"]),
    ]
}
