//! User memories in MySQL and MariaDB (`agno_memories`, as Python Agno 3.x's `MySQLDb` shapes
//! it): `memory` is a JSON string, `topics` a JSON array; filters, paging and counts run in SQL.
//! A given `user_id` is matched byte for byte, and per-user stats group users byte for byte.

use crate::sql::SqlAdapter;
use agno_core::DbResult;
use sqlx::AssertSqlSafe;

use super::{MySqlState, db_error, text_column};

/// The memories table as Python Agno 3.1 creates it (column types and lengths, index names), in
/// one statement. `JSON` becomes `LONGTEXT ... CHECK (json_valid(...))` on MariaDB, as for Agno.
pub(crate) fn memories_ddl(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\
         \tmemory_id VARCHAR(128) NOT NULL, \n\
         \tmemory JSON NOT NULL, \n\
         \tinput TEXT, \n\
         \tagent_id VARCHAR(128), \n\
         \tteam_id VARCHAR(128), \n\
         \tuser_id VARCHAR(128), \n\
         \ttopics JSON, \n\
         \tfeedback TEXT, \n\
         \tcreated_at BIGINT NOT NULL, \n\
         \tupdated_at BIGINT, \n\
         \tPRIMARY KEY (memory_id), \n\
         \tINDEX `idx_{t}_updated_at` (updated_at), \n\
         \tINDEX `idx_{t}_created_at` (created_at), \n\
         \tINDEX `idx_{t}_user_id` (user_id)\n\
         )"
    )
}

#[async_trait::async_trait]
impl crate::sql::memories::SqlMemories for MySqlState {
    async fn memory_topics(&self, user_id: Option<&str>) -> DbResult<Vec<String>> {
        // Byte for byte; the first comparison keeps the index usable.
        let owner =
            if user_id.is_some() { " AND m.user_id = ? AND CAST(m.user_id AS BINARY) = CAST(? AS BINARY)" } else { "" };
        // A binary collation: topics differing only in case stay apart, sorted byte for byte.
        let sql = format!(
            "SELECT DISTINCT j.topic FROM `{}` AS m, JSON_TABLE(m.topics, '$[*]' COLUMNS \
             (topic TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j \
             WHERE m.topics IS NOT NULL AND j.topic IS NOT NULL{owner} ORDER BY j.topic",
            self.tables().memories
        );
        let mut query = sqlx::query(AssertSqlSafe(sql.as_str()));
        if let Some(u) = user_id {
            query = query.bind(u).bind(u);
        }
        let rows = query.fetch_all(self.pool()).await.map_err(|e| db_error("cannot read memory topics", e))?;
        rows.iter().map(|r| text_column(r, "topic").map(Option::unwrap_or_default)).collect()
    }
}
