//! Knowledge contents in MySQL and MariaDB (`agno_knowledge`, as Python Agno 3.1's `MySQLDb`
//! shapes it): `metadata` is a JSON text; a row without `user_id` is shared. Visibility, filters,
//! sort, paging and counts run in SQL; a given `user_id` is matched byte for byte.

use agno_core::{
    DbError, DbErrorKind, DbResult, KnowledgeQuery, KnowledgeRow, KnowledgeSort, KnowledgeStore, new_id, now_epoch_secs,
};
use async_trait::async_trait;
use sqlx::MySql;
use sqlx::{AssertSqlSafe, Connection, Row};

use super::evals::exact;
use super::{Arg, MySqlDb, USER_MATCH, bind_args, db_error, marks, push_user, where_clause, with_retries};
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

/// Rows visible to `user_id`: its own (byte for byte) and shared ones; every row when `None`.
fn push_visible(conditions: &mut Vec<String>, args: &mut Vec<Arg>, user_id: Option<&str>) {
    if let Some(u) = user_id {
        conditions.push(format!("(user_id IS NULL OR {USER_MATCH})"));
        args.extend([Arg::Str(u.to_owned()), Arg::Str(u.to_owned())]);
    }
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

#[async_trait]
impl KnowledgeStore for MySqlDb {
    async fn upsert_knowledge_content(&self, row: &KnowledgeRow) -> DbResult<KnowledgeRow> {
        let id = row.id.clone().unwrap_or_else(new_id);
        with_retries(|| self.try_upsert_knowledge(row, &id)).await
    }

    async fn get_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<KnowledgeRow>> {
        let t = &self.tables().knowledge;
        let mut conditions = vec!["id = ?".to_owned()];
        let mut args = vec![Arg::Str(id.to_owned())];
        push_visible(&mut conditions, &mut args, user_id);
        let sql = format!("SELECT {COLUMNS} FROM `{t}`{}", where_clause(&conditions));
        let row = bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot read knowledge content {id}"), e))?;
        row.as_ref().map(knowledge_from_row::<MySql>).transpose()
    }

    async fn get_knowledge_contents(&self, query: &KnowledgeQuery) -> DbResult<(Vec<KnowledgeRow>, u64)> {
        let t = &self.tables().knowledge;
        let mut conditions = Vec::new();
        let mut args = Vec::new();
        push_visible(&mut conditions, &mut args, query.user_id.as_deref());
        if let Some(l) = &query.linked_to {
            conditions.push(exact("linked_to"));
            args.extend([Arg::Str(l.clone()), Arg::Str(l.clone())]);
        }
        let clause = where_clause(&conditions);
        let order = match query.sort_by {
            KnowledgeSort::CreatedAt => "created_at",
            KnowledgeSort::UpdatedAt => "updated_at",
            // Byte order, whatever the column collation.
            KnowledgeSort::Name => "CAST(name AS BINARY)",
        };
        let dir = query.sort_order.sql();
        let sql = format!("SELECT {COLUMNS} FROM `{t}`{clause} ORDER BY {order} {dir}, CAST(id AS BINARY) {dir}");
        let count_sql = format!("SELECT COUNT(*) AS n FROM `{t}`{clause}");
        let (rows, total) =
            self.page_and_count(sql, &count_sql, &args, (query.limit, query.page), "knowledge contents").await?;
        let list = crate::codec::readable(
            "knowledge content",
            rows.iter().map(|r| (r.try_get::<String, _>("id").ok(), knowledge_from_row::<MySql>(r))),
        );
        Ok((list, total))
    }

    async fn delete_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        let t = &self.tables().knowledge;
        let mut conditions = vec!["id = ?".to_owned()];
        let mut args = vec![Arg::Str(id.to_owned())];
        // Only the user's own rows: never shared ones.
        push_user(&mut conditions, &mut args, user_id);
        let sql = format!("DELETE FROM `{t}`{}", where_clause(&conditions));
        let done = with_retries(|| async {
            bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
                .execute(self.pool())
                .await
                .map_err(|e| db_error(&format!("cannot delete knowledge content {id}"), e))
        })
        .await?;
        Ok(done.rows_affected() > 0)
    }
}
