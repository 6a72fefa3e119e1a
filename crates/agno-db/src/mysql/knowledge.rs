//! Knowledge contents in MySQL and MariaDB (`agno_knowledge`, as Python Agno 3.1's `MySQLDb`
//! shapes it): `metadata` is a JSON text; a row without `user_id` is shared. Visibility, filters,
//! sort, paging and counts run in SQL; a given `user_id` is matched byte for byte.

use agno_core::{DbError, DbErrorKind, DbResult, KnowledgeRow, new_id, now_epoch_secs};
use sqlx::MySql;
use sqlx::{AssertSqlSafe, Connection};

use super::{MySqlDb, db_error, marks, with_retries};
use crate::codec::to_json_text;
use crate::sql::knowledge::knowledge_from_row;

const COLUMNS: &str = "id, name, description, metadata, type, size, linked_to, access_count, created_at, updated_at, \
                       status, status_message, external_id, user_id";

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

impl MySqlDb {
    /// One attempt at [`KnowledgeStore::upsert_knowledge_content`]: a single insert-or-update
    /// whose assignments only apply when the stored row is shared or the writer's (byte for
    /// byte), then a read of the row it locked, in one transaction.
    async fn try_upsert_knowledge(&self, content: &KnowledgeRow, id: &str) -> DbResult<KnowledgeRow> {
        let t = &self.tables().knowledge;
        let now = now_epoch_secs();
        // An unscoped (admin) write, or the writer's own row byte for byte; a user never changes
        // another user's row or a shared one.
        let ok = "(VALUES(user_id) IS NULL OR CAST(user_id AS BINARY) = CAST(VALUES(user_id) AS BINARY))";
        // Assignments run left to right and see earlier ones: `user_id` goes last so `ok` reads
        // the stored owner throughout.
        let mut sets: Vec<String> = [
            "name",
            "description",
            "metadata",
            "type",
            "size",
            "linked_to",
            "access_count",
            "status",
            "status_message",
            "external_id",
            "updated_at",
        ]
        .iter()
        .map(|c| format!("{c} = IF({ok}, VALUES({c}), {c})"))
        .collect();
        sets.push(format!("created_at = IF({ok}, COALESCE(created_at, VALUES(created_at)), created_at)"));
        sets.push(format!("user_id = IF({ok}, VALUES(user_id), user_id)"));
        let sql =
            format!("INSERT INTO `{t}` ({COLUMNS}) VALUES ({}) ON DUPLICATE KEY UPDATE {}", marks(14), sets.join(", "));
        let mut conn = self.read_committed_conn().await?;
        let mut tx = conn.begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
        sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(id)
            .bind(&content.name)
            .bind(&content.description)
            .bind(content.metadata.as_ref().map(to_json_text).transpose()?)
            .bind(&content.kind)
            .bind(content.size)
            .bind(&content.linked_to)
            .bind(content.access_count)
            .bind(content.created_at.unwrap_or(now))
            .bind(now)
            .bind(&content.status)
            .bind(&content.status_message)
            .bind(&content.external_id)
            .bind(&content.user_id)
            .execute(&mut *tx)
            .await
            .map_err(|e| db_error(&format!("cannot write knowledge content {id}"), e))?;
        // The statement above holds the row lock: this reads what it left.
        let read = format!("SELECT {COLUMNS} FROM `{t}` WHERE id = ? FOR UPDATE");
        let row = sqlx::query(AssertSqlSafe(read.as_str()))
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| db_error(&format!("cannot read back knowledge content {id}"), e))?
            .ok_or_else(|| {
                DbError::new(DbErrorKind::Other, format!("knowledge content {id} vanished while being written"))
            })?;
        let stored = knowledge_from_row::<MySql>(&row)?;
        if content.user_id.is_some() && stored.user_id != content.user_id {
            // Nothing was changed; end the transaction without a write.
            tx.rollback().await.map_err(|e| db_error(&format!("cannot end the write of knowledge content {id}"), e))?;
            return Err(DbError::new(
                DbErrorKind::Conflict,
                format!("knowledge content {id} belongs to another user or is shared"),
            ));
        }
        tx.commit().await.map_err(|e| db_error(&format!("cannot commit the write of knowledge content {id}"), e))?;
        Ok(stored)
    }
}

impl MySqlDb {
    /// `KnowledgeStore::upsert_knowledge_content`, as this database writes it.
    pub(crate) async fn upsert_knowledge(&self, row: &KnowledgeRow) -> DbResult<KnowledgeRow> {
        let id = row.id.clone().unwrap_or_else(new_id);
        with_retries(|| self.try_upsert_knowledge(row, &id)).await
    }
}

crate::sql::knowledge::knowledge_store!(MySqlDb);
