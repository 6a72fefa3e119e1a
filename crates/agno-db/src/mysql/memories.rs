//! User memories in MySQL and MariaDB (`agno_memories`, as Python Agno 3.x's `MySQLDb` shapes
//! it): `memory` is a JSON string, `topics` a JSON array; filters, paging and counts run in SQL.
//! A given `user_id` is matched byte for byte, and per-user stats group users byte for byte.

use agno_core::{DbError, DbErrorKind, DbResult, UserMemory, new_id, now_epoch_secs};
use sqlx::MySql;
use sqlx::{AssertSqlSafe, Connection};

use super::sessions::text_column;
use super::{Arg, MySqlDb, bind_args, db_error, marks, where_clause, with_retries};
use crate::codec::to_json_text;
use crate::sql::memories::memory_from_row;

const COLUMNS: &str = "memory_id, memory, input, agent_id, team_id, user_id, topics, feedback, created_at, updated_at";

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

impl MySqlDb {
    /// One attempt at [`MemoryStore::upsert_user_memory`]: a single insert-or-update whose
    /// assignments only apply when the stored owner is the writer (or nobody), then a read of
    /// the row it locked, in one transaction.
    async fn try_upsert_memory(&self, memory: &UserMemory, id: &str) -> DbResult<UserMemory> {
        let t = &self.tables().memories;
        let now = now_epoch_secs();
        // Stored owner is nobody, or the writer byte for byte; NULL (refused) when the writer
        // has no owner but the row has one.
        let ok = "(user_id IS NULL OR CAST(user_id AS BINARY) = CAST(VALUES(user_id) AS BINARY))";
        let sets = ["memory", "input", "agent_id", "team_id", "topics", "feedback", "updated_at"]
            .iter()
            .map(|c| format!("{c} = IF({ok}, VALUES({c}), {c})"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!("INSERT INTO `{t}` ({COLUMNS}) VALUES ({}) ON DUPLICATE KEY UPDATE {sets}", marks(10));
        let mut conn = self.read_committed_conn().await?;
        let mut tx = conn.begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
        sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(id)
            .bind(to_json_text(&memory.memory)?)
            .bind(&memory.input)
            .bind(&memory.agent_id)
            .bind(&memory.team_id)
            .bind(&memory.user_id)
            .bind(memory.topics.as_ref().map(to_json_text).transpose()?)
            .bind(&memory.feedback)
            .bind(memory.created_at.unwrap_or(now))
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(|e| db_error(&format!("cannot write memory {id}"), e))?;
        // The statement above holds the row lock: this reads what it left.
        let read = format!("SELECT {COLUMNS} FROM `{t}` WHERE memory_id = ? FOR UPDATE");
        let row = sqlx::query(AssertSqlSafe(read.as_str()))
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| db_error(&format!("cannot read back memory {id}"), e))?
            .ok_or_else(|| DbError::new(DbErrorKind::Other, format!("memory {id} vanished while being written")))?;
        let stored = memory_from_row::<MySql>(&row)?;
        if stored.user_id.is_some() && stored.user_id != memory.user_id {
            // Nothing was changed; end the transaction without a write.
            tx.rollback().await.map_err(|e| db_error(&format!("cannot end the write of memory {id}"), e))?;
            return Err(DbError::new(DbErrorKind::Conflict, format!("memory {id} belongs to another user")));
        }
        tx.commit().await.map_err(|e| db_error(&format!("cannot commit the write of memory {id}"), e))?;
        Ok(stored)
    }
}

impl MySqlDb {
    /// `MemoryStore::upsert_user_memory`, as this database writes it.
    pub(crate) async fn upsert_memory(&self, memory: &UserMemory) -> DbResult<UserMemory> {
        let id = memory.memory_id.clone().unwrap_or_else(new_id);
        with_retries(|| self.try_upsert_memory(memory, &id)).await
    }

    /// `MemoryStore::get_all_memory_topics`, read with this database's JSON functions.
    pub(crate) async fn memory_topics(&self, user_id: Option<&str>) -> DbResult<Vec<String>> {
        let t = &self.tables().memories;
        let mut conditions = vec!["m.topics IS NOT NULL".to_owned(), "j.topic IS NOT NULL".to_owned()];
        let mut args = Vec::new();
        if let Some(u) = user_id {
            conditions.push("(m.user_id = ? AND CAST(m.user_id AS BINARY) = CAST(? AS BINARY))".to_owned());
            args.extend([Arg::Str(u.to_owned()), Arg::Str(u.to_owned())]);
        }
        // A binary collation: topics differing only in case stay apart, sorted byte for byte.
        let sql = format!(
            "SELECT DISTINCT j.topic FROM `{t}` AS m, JSON_TABLE(m.topics, '$[*]' COLUMNS \
             (topic TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j{} ORDER BY j.topic",
            where_clause(&conditions)
        );
        let rows = bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot read memory topics", e))?;
        rows.iter().map(|r| text_column(r, "topic").map(Option::unwrap_or_default)).collect()
    }
}

crate::sql::memories::memory_store!(MySqlDb);
