//! Knowledge contents in PostgreSQL (`agno_knowledge`, as Python Agno 3.x's `PostgresDb` shapes
//! it; `metadata` is JSONB). A row without `user_id` is shared: every user reads it, only an
//! unscoped caller deletes it; the owner check of a write is part of the upsert statement.

use super::schema::table_ddl;

/// The knowledge table as Python Agno 3.1 creates it (column order, types, indexes, including
/// the v3 composite `(user_id, linked_to)` index).
pub(crate) fn knowledge_ddl(q: &str, t: &str) -> Vec<String> {
    table_ddl(
        q,
        t,
        "CREATE TABLE IF NOT EXISTS {q} (\n\tid VARCHAR NOT NULL, \n\tname VARCHAR NOT NULL, \n\tdescription TEXT NOT NULL, \n\tmetadata JSONB, \n\ttype VARCHAR, \n\tsize BIGINT, \n\tlinked_to VARCHAR, \n\taccess_count BIGINT, \n\tstatus VARCHAR, \n\tstatus_message TEXT, \n\tcreated_at BIGINT, \n\tupdated_at BIGINT, \n\texternal_id VARCHAR, \n\tuser_id VARCHAR, \n\tPRIMARY KEY (id)\n)",
        &[&["user_id"], &["user_id", "linked_to"]],
    )
}
