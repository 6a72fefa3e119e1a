//! User memories in SQLite (`agno_memories`, as Python Agno 3.x shapes it).

use agno_core::{DbError, DbErrorKind, DbResult, UserMemory, new_id, now_epoch_secs};
use sqlx::AssertSqlSafe;

use super::{SqliteDb, db_error};
use crate::codec::to_json_text;

const COLUMNS: &str = "memory_id, memory, input, agent_id, team_id, user_id, topics, feedback, created_at, updated_at";

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

impl SqliteDb {
    /// `MemoryStore::upsert_user_memory`, as this database writes it.
    pub(crate) async fn upsert_memory(&self, memory: &UserMemory) -> DbResult<UserMemory> {
        let _turn = self.write_turn().await;
        let t = &self.tables().memories;
        let mut row = memory.clone();
        let id = row.memory_id.get_or_insert_with(new_id).clone();
        let now = now_epoch_secs();
        let sql = format!(
            "INSERT INTO {t} ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (memory_id) DO UPDATE SET \
             memory = excluded.memory, input = excluded.input, agent_id = excluded.agent_id, team_id = excluded.team_id, \
             topics = excluded.topics, feedback = excluded.feedback, updated_at = excluded.updated_at \
             WHERE {t}.user_id IS excluded.user_id OR {t}.user_id IS NULL RETURNING created_at"
        );
        let created: Option<i64> = sqlx::query_scalar(AssertSqlSafe(sql.as_str()))
            .bind(&id)
            .bind(to_json_text(&row.memory)?)
            .bind(&row.input)
            .bind(&row.agent_id)
            .bind(&row.team_id)
            .bind(&row.user_id)
            .bind(row.topics.as_ref().map(to_json_text).transpose()?)
            .bind(&row.feedback)
            .bind(row.created_at.unwrap_or(now))
            .bind(now)
            .fetch_all(self.pool())
            .await
            .map(|rows| rows.into_iter().next())
            .map_err(|e| db_error(&format!("cannot write memory {id}"), e))?;
        let Some(created) = created else {
            return Err(DbError::new(DbErrorKind::Conflict, format!("memory {id} belongs to another user")));
        };
        row.created_at = Some(created);
        row.updated_at = Some(now);
        Ok(row)
    }

    /// `MemoryStore::get_all_memory_topics`, read with this database's JSON functions.
    pub(crate) async fn memory_topics(&self, user_id: Option<&str>) -> DbResult<Vec<String>> {
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

crate::sql::memories::memory_store!(SqliteDb);
