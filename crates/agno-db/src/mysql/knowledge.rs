//! Knowledge contents in MySQL and MariaDB (`agno_knowledge`, as Python Agno 3.1's `MySQLDb`
//! shapes it): `metadata` is a JSON text; a row without `user_id` is shared. Visibility, filters,
//! sort, paging and counts run in SQL; a given `user_id` is matched byte for byte.

/// The knowledge table as Python Agno 3.1's `MySQLDb` creates it (column types and lengths, index
/// names), in one statement. Agno 3.1 declares no composite `(user_id, linked_to)` index for
/// MySQL (only SQLite and Postgres have one), so none is created here either.
pub(crate) fn knowledge_ddl(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\
         \tid VARCHAR(128) NOT NULL, \n\
         \tname VARCHAR(255) NOT NULL, \n\
         \tdescription TEXT NOT NULL, \n\
         \tmetadata JSON, \n\
         \ttype VARCHAR(50), \n\
         \tsize BIGINT, \n\
         \tlinked_to VARCHAR(128), \n\
         \taccess_count BIGINT, \n\
         \tcreated_at BIGINT, \n\
         \tupdated_at BIGINT, \n\
         \tstatus VARCHAR(50), \n\
         \tstatus_message TEXT, \n\
         \texternal_id VARCHAR(128), \n\
         \tuser_id VARCHAR(128), \n\
         \tPRIMARY KEY (id), \n\
         \tINDEX `idx_{t}_user_id` (user_id)\n\
         )"
    )
}
