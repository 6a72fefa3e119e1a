//! User memories in PostgreSQL (`agno_memories`, as Python Agno 3.x's `PostgresDb` shapes it):
//! `memory` is a JSONB string, `topics` a JSONB array; filters, paging and counts run in SQL.

use agno_core::{DbError, DbErrorKind, DbResult, UserMemory, new_id, now_epoch_secs};
use serde_json::Value;
use sqlx::AssertSqlSafe;
use sqlx::Postgres;

use super::schema::index_ddl;
use super::{PostgresDb, db_error, sanitize};
use crate::sql::memories::memory_from_row;

const COLUMNS: &str = "memory_id, memory, feedback, input, agent_id, team_id, user_id, topics, created_at, updated_at";

/// The memories table as Python Agno 3.1 creates it (column order, types, indexes).
pub(crate) fn memories_ddl(q: &str, t: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {q} (\n\tmemory_id VARCHAR NOT NULL, \n\tmemory JSONB NOT NULL, \n\tfeedback TEXT, \n\tinput TEXT, \n\tagent_id VARCHAR, \n\tteam_id VARCHAR, \n\tuser_id VARCHAR, \n\ttopics JSONB, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (memory_id)\n)"
        ),
        index_ddl(q, t, &["updated_at"]),
        index_ddl(q, t, &["created_at"]),
        index_ddl(q, t, &["user_id"]),
    ]
}

/// A string without the characters PostgreSQL cannot store (as Python Agno sanitises).
fn clean(text: Option<&String>) -> Option<String> {
    text.map(|s| {
        let mut v = Value::String(s.clone());
        sanitize(&mut v);
        match v {
            Value::String(s) => s,
            _ => String::new(),
        }
    })
}

impl PostgresDb {
    /// `MemoryStore::upsert_user_memory`, as this database writes it.
    pub(crate) async fn upsert_memory(&self, memory: &UserMemory) -> DbResult<UserMemory> {
        let t = self.qualified(&self.tables().memories);
        let id = memory.memory_id.clone().unwrap_or_else(new_id);
        let now = now_epoch_secs();
        let mut text = Value::String(memory.memory.clone());
        sanitize(&mut text);
        let mut topics =
            memory.topics.as_ref().map(|list| Value::Array(list.iter().cloned().map(Value::String).collect()));
        if let Some(topics) = topics.as_mut() {
            sanitize(topics);
        }
        // The owner check is part of the statement: another user's row is left as it is and no
        // row comes back.
        let sql = format!(
            "INSERT INTO {t} AS t ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
             ON CONFLICT (memory_id) DO UPDATE SET memory = excluded.memory, feedback = excluded.feedback, \
             input = excluded.input, agent_id = excluded.agent_id, team_id = excluded.team_id, \
             topics = excluded.topics, updated_at = excluded.updated_at \
             WHERE t.user_id IS NOT DISTINCT FROM excluded.user_id OR t.user_id IS NULL \
             RETURNING {COLUMNS}"
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(&id)
            .bind(&text)
            .bind(clean(memory.feedback.as_ref()))
            .bind(clean(memory.input.as_ref()))
            .bind(&memory.agent_id)
            .bind(&memory.team_id)
            .bind(&memory.user_id)
            .bind(&topics)
            .bind(memory.created_at.unwrap_or(now))
            .bind(now)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot write memory {id}"), e))?;
        match row {
            Some(row) => memory_from_row::<Postgres>(&row),
            None => Err(DbError::new(DbErrorKind::Conflict, format!("memory {id} belongs to another user"))),
        }
    }

    /// `MemoryStore::get_all_memory_topics`, read with this database's JSON functions.
    pub(crate) async fn memory_topics(&self, user_id: Option<&str>) -> DbResult<Vec<String>> {
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

crate::sql::memories::memory_store!(PostgresDb);
