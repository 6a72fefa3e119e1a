//! User memories in SQLite (`agno_memories`, as Python Agno 3.x shapes it).

use crate::sql::SqlAdapter;
use agno_core::DbResult;
use sqlx::AssertSqlSafe;

use super::{SqliteState, db_error};

pub(crate) fn memories_ddl(t: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {t} (\n\tmemory_id VARCHAR NOT NULL, \n\tmemory JSON NOT NULL, \n\tinput VARCHAR, \n\tagent_id VARCHAR, \n\tteam_id VARCHAR, \n\tuser_id VARCHAR, \n\ttopics JSON, \n\tfeedback VARCHAR, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (memory_id)\n)"
        ),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_updated_at ON {t} (updated_at)"),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_user_id ON {t} (user_id)"),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_created_at ON {t} (created_at)"),
    ]
}

#[async_trait::async_trait]
impl crate::sql::memories::SqlMemories for SqliteState {
    async fn memory_topics(&self, user_id: Option<&str>) -> DbResult<Vec<String>> {
        let sql = format!(
            "SELECT DISTINCT j.value FROM {} AS m, json_each(m.topics) AS j \
             WHERE (? IS NULL OR m.user_id = ?) AND json_valid(m.topics) ORDER BY j.value",
            self.tables().memories
        );
        sqlx::query_scalar(AssertSqlSafe(sql.as_str()))
            .bind(user_id)
            .bind(user_id)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot read memory topics", e))
    }
}
