//! User memories in PostgreSQL (`agno_memories`, as Python Agno 3.x's `PostgresDb` shapes it):
//! `memory` is a JSONB string, `topics` a JSONB array; filters, paging and counts run in SQL.

use crate::sql::SqlAdapter;
use agno_core::DbResult;
use sqlx::AssertSqlSafe;

use super::schema::table_ddl;
use super::{PostgresState, db_error};

/// The memories table as Python Agno 3.1 creates it (column order, types, indexes).
pub(crate) fn memories_ddl(q: &str, t: &str) -> Vec<String> {
    table_ddl(
        q,
        t,
        "CREATE TABLE IF NOT EXISTS {q} (\n\tmemory_id VARCHAR NOT NULL, \n\tmemory JSONB NOT NULL, \n\tfeedback TEXT, \n\tinput TEXT, \n\tagent_id VARCHAR, \n\tteam_id VARCHAR, \n\tuser_id VARCHAR, \n\ttopics JSONB, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (memory_id)\n)",
        &[&["updated_at"], &["created_at"], &["user_id"]],
    )
}

#[async_trait::async_trait]
impl crate::sql::memories::SqlMemories for PostgresState {
    async fn memory_topics(&self, user_id: Option<&str>) -> DbResult<Vec<String>> {
        let sql = format!(
            "SELECT DISTINCT j.topic COLLATE \"C\" AS topic FROM {} AS m CROSS JOIN LATERAL \
             jsonb_array_elements_text(CASE WHEN jsonb_typeof(m.topics::jsonb) = 'array' THEN m.topics::jsonb \
             ELSE '[]'::jsonb END) AS j(topic) \
             WHERE ($1::text IS NULL OR m.user_id = $1) AND j.topic IS NOT NULL ORDER BY 1",
            self.qualified(&self.tables().memories)
        );
        sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(user_id)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot read memory topics", e))
    }
}
