//! Knowledge contents in SQLite (`agno_knowledge`, as Python Agno 3.x shapes it). A row without
//! `user_id` is shared: every user reads it, only an unscoped caller deletes it; the owner check
//! of a write is part of the upsert statement.

/// The knowledge table as Python Agno 3.1 creates it (column order, types, indexes, including
/// the v3 composite `(user_id, linked_to)` index).
pub(crate) fn knowledge_ddl(t: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {t} (\n\tid VARCHAR NOT NULL, \n\tname VARCHAR NOT NULL, \n\tdescription VARCHAR NOT NULL, \n\tmetadata JSON, \n\ttype VARCHAR, \n\tsize BIGINT, \n\tlinked_to VARCHAR, \n\taccess_count BIGINT, \n\tstatus VARCHAR, \n\tstatus_message VARCHAR, \n\tcreated_at BIGINT, \n\tupdated_at BIGINT, \n\texternal_id VARCHAR, \n\tuser_id VARCHAR, \n\tPRIMARY KEY (id)\n)"
        ),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_user_id ON {t} (user_id)"),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_user_id_linked_to ON {t} (user_id, linked_to)"),
    ]
}
