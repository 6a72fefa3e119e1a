//! User memories in SQLite (`agno_memories`, as Python Agno 3.x shapes it).

use agno_core::{
    DbError, DbErrorKind, DbResult, MemoryPage, MemoryQuery, MemorySort, MemoryStore, UserMemory, UserMemoryStats,
    new_id, now_epoch_secs,
};
use async_trait::async_trait;
use sqlx::Sqlite;
use sqlx::{AssertSqlSafe, Row};

use super::{SqliteDb, db_error};
use crate::codec::to_json_text;
use crate::memories::page_bounds;
use crate::sql::memories::memory_from_row;

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

/// The WHERE clause of a memory listing and its binds, in order.
fn filter(q: &MemoryQuery) -> (String, Vec<Option<String>>) {
    let mut sql = String::from(
        "(? IS NULL OR user_id = ?) AND (? IS NULL OR agent_id = ?) AND (? IS NULL OR team_id = ?) \
         AND (? IS NULL OR LOWER(memory) LIKE '%' || LOWER(?) || '%')",
    );
    let mut binds = Vec::new();
    for v in [&q.user_id, &q.agent_id, &q.team_id, &q.search_content] {
        binds.push(v.clone());
        binds.push(v.clone());
    }
    if let Some(topics) = q.topics.as_ref().filter(|t| !t.is_empty()) {
        let marks = vec!["?"; topics.len()].join(", ");
        sql.push_str(&format!(" AND EXISTS (SELECT 1 FROM json_each(topics) WHERE value IN ({marks}))"));
        binds.extend(topics.iter().cloned().map(Some));
    }
    (sql, binds)
}

#[async_trait]
impl MemoryStore for SqliteDb {
    async fn upsert_user_memory(&self, memory: &UserMemory) -> DbResult<UserMemory> {
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

    async fn get_user_memory(&self, memory_id: &str, user_id: Option<&str>) -> DbResult<Option<UserMemory>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM {} WHERE memory_id = ? AND (? IS NULL OR user_id = ?)",
            self.tables().memories
        );
        let row = sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(memory_id)
            .bind(user_id)
            .bind(user_id)
            .fetch_all(self.pool())
            .await
            .map(|rows| rows.into_iter().next())
            .map_err(|e| db_error(&format!("cannot read memory {memory_id}"), e))?;
        row.as_ref().map(memory_from_row::<Sqlite>).transpose()
    }

    async fn get_user_memories(&self, query: &MemoryQuery) -> DbResult<MemoryPage> {
        let t = &self.tables().memories;
        let (clause, binds) = filter(query);
        let order = match query.sort_by {
            MemorySort::UpdatedAt => "updated_at",
            MemorySort::CreatedAt => "created_at",
        };
        let dir = query.sort_order.sql();
        let select = format!("SELECT {COLUMNS} FROM {t} WHERE {clause} ORDER BY {order} {dir}, memory_id {dir}");
        let count = format!("SELECT COUNT(*) FROM {t} WHERE {clause}");
        let (rows, total) = self.page_and_count(&select, &count, &binds, (query.limit, query.page), "memories").await?;
        let memories = crate::codec::readable(
            "memory",
            rows.iter().map(|r| (r.try_get::<String, _>("memory_id").ok(), memory_from_row::<Sqlite>(r))),
        );
        Ok(MemoryPage { memories, total })
    }

    async fn delete_user_memory(&self, memory_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_user_memories(&[memory_id.to_owned()], user_id).await? == 1)
    }

    async fn delete_user_memories(&self, memory_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        let _turn = self.write_turn().await;
        if memory_ids.is_empty() {
            return Ok(0);
        }
        let marks = vec!["?"; memory_ids.len()].join(", ");
        let sql = format!(
            "DELETE FROM {} WHERE memory_id IN ({marks}) AND (? IS NULL OR user_id = ?)",
            self.tables().memories
        );
        let mut q = sqlx::query(AssertSqlSafe(sql.as_str()));
        for id in memory_ids {
            q = q.bind(id);
        }
        let done = q
            .bind(user_id)
            .bind(user_id)
            .execute(self.pool())
            .await
            .map_err(|e| db_error("cannot delete memories", e))?;
        Ok(done.rows_affected())
    }

    async fn get_all_memory_topics(&self, user_id: Option<&str>) -> DbResult<Vec<String>> {
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

    async fn get_user_memory_stats(
        &self,
        limit: Option<usize>,
        page: Option<usize>,
        user_id: Option<&str>,
    ) -> DbResult<(Vec<UserMemoryStats>, u64)> {
        let t = &self.tables().memories;
        let (offset, limit) = page_bounds(limit, page);
        let sql = format!(
            "SELECT user_id, COUNT(*) AS total, MAX(updated_at) AS last FROM {t} WHERE (? IS NULL OR user_id = ?) \
             GROUP BY user_id ORDER BY MAX(updated_at) DESC, user_id LIMIT ? OFFSET ?"
        );
        let rows = sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(user_id)
            .bind(user_id)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .bind(i64::try_from(offset).unwrap_or(i64::MAX))
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot read memory stats", e))?;
        let stats = rows
            .iter()
            .map(|r| {
                Ok(UserMemoryStats {
                    user_id: r.try_get("user_id").map_err(|e| db_error("user_id", e))?,
                    total_memories: u64::try_from(r.try_get::<i64, _>("total").map_err(|e| db_error("total", e))?)
                        .unwrap_or(0),
                    last_memory_updated_at: r.try_get("last").map_err(|e| db_error("last", e))?,
                })
            })
            .collect::<DbResult<Vec<_>>>()?;
        let count_sql =
            format!("SELECT COUNT(*) FROM (SELECT user_id FROM {t} WHERE (? IS NULL OR user_id = ?) GROUP BY user_id)");
        let total: i64 = sqlx::query_scalar(AssertSqlSafe(count_sql.as_str()))
            .bind(user_id)
            .bind(user_id)
            .fetch_one(self.pool())
            .await
            .map_err(|e| db_error("cannot count memory users", e))?;
        Ok((stats, u64::try_from(total).unwrap_or(0)))
    }

    async fn clear_memories(&self) -> DbResult<()> {
        let _turn = self.write_turn().await;
        let sql = format!("DELETE FROM {}", self.tables().memories);
        sqlx::query(AssertSqlSafe(sql.as_str()))
            .execute(self.pool())
            .await
            .map_err(|e| db_error("cannot clear memories", e))?;
        Ok(())
    }
}
