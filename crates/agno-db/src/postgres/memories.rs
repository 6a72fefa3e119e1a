//! User memories in PostgreSQL (`agno_memories`, as Python Agno 3.x's `PostgresDb` shapes it):
//! `memory` is a JSONB string, `topics` a JSONB array; filters, paging and counts run in SQL.

use agno_core::{
    DbError, DbErrorKind, DbResult, MemoryPage, MemoryQuery, MemorySort, MemoryStore, UserMemory, UserMemoryStats,
    new_id, now_epoch_secs,
};
use async_trait::async_trait;
use serde_json::Value;
use sqlx::Postgres;
use sqlx::{AssertSqlSafe, Row};

use super::schema::index_ddl;
use super::{PostgresDb, db_error, sanitize};
use crate::memories::page_bounds;
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

/// The WHERE clause of a memory listing; binds `$1` user, `$2` agent, `$3` team, `$4` topics
/// (`text[]`, NULL for no topic filter), `$5` search text.
const FILTER: &str = "($1::text IS NULL OR user_id = $1) AND ($2::text IS NULL OR agent_id = $2) \
     AND ($3::text IS NULL OR team_id = $3) \
     AND ($4::text[] IS NULL OR (jsonb_typeof(topics::jsonb) = 'array' AND topics::jsonb ?| $4::text[])) \
     AND ($5::text IS NULL OR strpos(lower(memory #>> '{}'), lower($5)) > 0)";

#[async_trait]
impl MemoryStore for PostgresDb {
    async fn upsert_user_memory(&self, memory: &UserMemory) -> DbResult<UserMemory> {
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

    async fn get_user_memory(&self, memory_id: &str, user_id: Option<&str>) -> DbResult<Option<UserMemory>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM {} WHERE memory_id = $1 AND ($2::text IS NULL OR user_id = $2)",
            self.qualified(&self.tables().memories)
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(memory_id)
            .bind(user_id)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot read memory {memory_id}"), e))?;
        row.as_ref().map(memory_from_row::<Postgres>).transpose()
    }

    async fn get_user_memories(&self, query: &MemoryQuery) -> DbResult<MemoryPage> {
        let t = self.qualified(&self.tables().memories);
        let order = match query.sort_by {
            MemorySort::UpdatedAt => "updated_at",
            MemorySort::CreatedAt => "created_at",
        };
        let dir = query.sort_order.sql();
        // NULL timestamps sort as the oldest, as in SQLite; ids in byte order.
        let nulls = if dir == "ASC" { "NULLS FIRST" } else { "NULLS LAST" };
        let (offset, _) = page_bounds(query.limit, query.page);
        let limit = query.limit.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        let topics = query.topics.as_ref().filter(|t| !t.is_empty());
        macro_rules! bind_filters {
            ($q:expr) => {
                $q.bind(&query.user_id)
                    .bind(&query.agent_id)
                    .bind(&query.team_id)
                    .bind(topics)
                    .bind(&query.search_content)
            };
        }
        let sql = format!(
            "SELECT {COLUMNS} FROM {t} WHERE {FILTER} \
             ORDER BY {order} {dir} {nulls}, memory_id COLLATE \"C\" {dir} LIMIT $6 OFFSET $7"
        );
        let rows = bind_filters!(sqlx::query(AssertSqlSafe(sql)))
            .bind(limit)
            .bind(i64::try_from(offset).unwrap_or(i64::MAX))
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot list memories", e))?;
        let memories = crate::codec::readable(
            "memory",
            rows.iter().map(|r| (r.try_get::<String, _>("memory_id").ok(), memory_from_row::<Postgres>(r))),
        );
        let count_sql = format!("SELECT COUNT(*) FROM {t} WHERE {FILTER}");
        let total: i64 = bind_filters!(sqlx::query_scalar(AssertSqlSafe(count_sql)))
            .fetch_one(self.pool())
            .await
            .map_err(|e| db_error("cannot count memories", e))?;
        Ok(MemoryPage { memories, total: u64::try_from(total).unwrap_or(0) })
    }

    async fn delete_user_memory(&self, memory_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_user_memories(&[memory_id.to_owned()], user_id).await? == 1)
    }

    async fn delete_user_memories(&self, memory_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        if memory_ids.is_empty() {
            return Ok(0);
        }
        let sql = format!(
            "DELETE FROM {} WHERE memory_id = ANY($1) AND ($2::text IS NULL OR user_id = $2)",
            self.qualified(&self.tables().memories)
        );
        let done = sqlx::query(AssertSqlSafe(sql))
            .bind(memory_ids)
            .bind(user_id)
            .execute(self.pool())
            .await
            .map_err(|e| db_error("cannot delete memories", e))?;
        Ok(done.rows_affected())
    }

    async fn get_all_memory_topics(&self, user_id: Option<&str>) -> DbResult<Vec<String>> {
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

    async fn get_user_memory_stats(
        &self,
        limit: Option<usize>,
        page: Option<usize>,
        user_id: Option<&str>,
    ) -> DbResult<(Vec<UserMemoryStats>, u64)> {
        let t = self.qualified(&self.tables().memories);
        let (offset, _) = page_bounds(limit, page);
        let limit = limit.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        // As SQLite: memories without an owner count as one more "user" (NULL).
        let sql = format!(
            "SELECT user_id, COUNT(*) AS total, MAX(updated_at) AS last FROM {t} WHERE ($1::text IS NULL OR user_id = $1) \
             GROUP BY user_id ORDER BY MAX(updated_at) DESC NULLS LAST, user_id COLLATE \"C\" NULLS FIRST \
             LIMIT $2 OFFSET $3"
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(user_id)
            .bind(limit)
            .bind(i64::try_from(offset).unwrap_or(i64::MAX))
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot read memory stats", e))?;
        let stats = rows
            .iter()
            .map(|r| {
                let total: i64 = r.try_get("total").map_err(|e| db_error("cannot read memory stats", e))?;
                Ok(UserMemoryStats {
                    user_id: r.try_get("user_id").map_err(|e| db_error("cannot read memory stats", e))?,
                    total_memories: u64::try_from(total).unwrap_or(0),
                    last_memory_updated_at: r.try_get("last").map_err(|e| db_error("cannot read memory stats", e))?,
                })
            })
            .collect::<DbResult<Vec<_>>>()?;
        let count_sql = format!(
            "SELECT COUNT(*) FROM (SELECT 1 FROM {t} WHERE ($1::text IS NULL OR user_id = $1) GROUP BY user_id) g"
        );
        let total: i64 = sqlx::query_scalar(AssertSqlSafe(count_sql))
            .bind(user_id)
            .fetch_one(self.pool())
            .await
            .map_err(|e| db_error("cannot count memory users", e))?;
        Ok((stats, u64::try_from(total).unwrap_or(0)))
    }

    async fn clear_memories(&self) -> DbResult<()> {
        let sql = format!("DELETE FROM {}", self.qualified(&self.tables().memories));
        sqlx::query(AssertSqlSafe(sql)).execute(self.pool()).await.map_err(|e| db_error("cannot clear memories", e))?;
        Ok(())
    }
}
