//! Knowledge contents in SQLite (`agno_knowledge`, as Python Agno 3.x shapes it). A row without
//! `user_id` is shared: every user reads it, only an unscoped caller deletes it; the owner check
//! of a write is part of the upsert statement.

use agno_core::{
    DbError, DbErrorKind, DbResult, KnowledgeQuery, KnowledgeRow, KnowledgeSort, KnowledgeStore, new_id, now_epoch_secs,
};
use async_trait::async_trait;
use sqlx::Sqlite;
use sqlx::{AssertSqlSafe, Row};

use super::{SqliteDb, db_error};
use crate::codec::to_json_text;
use crate::sql::knowledge::knowledge_from_row;

const COLUMNS: &str = "id, name, description, metadata, type, size, linked_to, access_count, status, status_message, \
     created_at, updated_at, external_id, user_id";

/// The knowledge table as Python Agno 3.1 creates it (column order, types, indexes, including
/// the v3 composite `(user_id, linked_to)` index).
pub(crate) fn knowledge_ddl(t: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {t} (\n\tid VARCHAR NOT NULL, \n\tname VARCHAR NOT NULL, \n\tdescription VARCHAR NOT NULL, \n\tmetadata JSON, \n\ttype VARCHAR, \n\tsize BIGINT, \n\tlinked_to VARCHAR, \n\taccess_count BIGINT, \n\tstatus VARCHAR, \n\tstatus_message VARCHAR, \n\tcreated_at BIGINT, \n\tupdated_at BIGINT, \n\texternal_id VARCHAR, \n\tuser_id VARCHAR, \n\tPRIMARY KEY (id)\n)"
        ),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_user_id ON {t} (user_id)"),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_user_id_linked_to ON {t} (user_id, linked_to)"),
    ]
}

/// Rows a caller sees: with a `user_id`, its own and the shared ones. Binds the user twice.
const VISIBLE: &str = "(? IS NULL OR user_id = ? OR user_id IS NULL)";

#[async_trait]
impl KnowledgeStore for SqliteDb {
    async fn upsert_knowledge_content(&self, row: &KnowledgeRow) -> DbResult<KnowledgeRow> {
        let _turn = self.write_turn().await;
        let t = &self.tables().knowledge;
        let mut row = row.clone();
        let id = row.id.get_or_insert_with(new_id).clone();
        let now = now_epoch_secs();
        // Another user's row is left as it is and no row comes back; a shared row may be
        // written by anyone. `created_at` is kept.
        let sql = format!(
            "INSERT INTO {t} ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET \
             name = excluded.name, description = excluded.description, metadata = excluded.metadata, \
             type = excluded.type, size = excluded.size, linked_to = excluded.linked_to, \
             access_count = excluded.access_count, status = excluded.status, \
             status_message = excluded.status_message, external_id = excluded.external_id, \
             user_id = excluded.user_id, updated_at = excluded.updated_at, created_at = COALESCE({t}.created_at, ?) \
             WHERE excluded.user_id IS NULL OR {t}.user_id IS excluded.user_id RETURNING created_at"
        );
        let created: Option<Option<i64>> = sqlx::query_scalar(AssertSqlSafe(sql.as_str()))
            .bind(&id)
            .bind(&row.name)
            .bind(&row.description)
            .bind(to_json_text(&row.metadata)?)
            .bind(&row.kind)
            .bind(row.size)
            .bind(&row.linked_to)
            .bind(row.access_count)
            .bind(&row.status)
            .bind(&row.status_message)
            .bind(row.created_at.unwrap_or(now))
            .bind(now)
            .bind(&row.external_id)
            .bind(&row.user_id)
            .bind(now)
            .fetch_all(self.pool())
            .await
            .map(|rows| rows.into_iter().next())
            .map_err(|e| db_error(&format!("cannot write knowledge content {id}"), e))?;
        let Some(created) = created else {
            return Err(DbError::new(DbErrorKind::Conflict, format!("knowledge content {id} belongs to another user")));
        };
        row.created_at = Some(created.unwrap_or(now));
        row.updated_at = Some(now);
        Ok(row)
    }

    async fn get_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<KnowledgeRow>> {
        let sql = format!("SELECT {COLUMNS} FROM {} WHERE id = ? AND {VISIBLE}", self.tables().knowledge);
        let row = sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(id)
            .bind(user_id)
            .bind(user_id)
            .fetch_all(self.pool())
            .await
            .map(|rows| rows.into_iter().next())
            .map_err(|e| db_error(&format!("cannot read knowledge content {id}"), e))?;
        row.as_ref().map(knowledge_from_row::<Sqlite>).transpose()
    }

    async fn get_knowledge_contents(&self, query: &KnowledgeQuery) -> DbResult<(Vec<KnowledgeRow>, u64)> {
        let t = &self.tables().knowledge;
        let clause = format!("{VISIBLE} AND (? IS NULL OR linked_to = ?)");
        let order = match query.sort_by {
            KnowledgeSort::CreatedAt => "created_at",
            KnowledgeSort::UpdatedAt => "updated_at",
            KnowledgeSort::Name => "name",
        };
        let dir = query.sort_order.sql();
        let select = format!("SELECT {COLUMNS} FROM {t} WHERE {clause} ORDER BY {order} {dir}, id {dir}");
        let count = format!("SELECT COUNT(*) FROM {t} WHERE {clause}");
        let binds = [query.user_id.clone(), query.user_id.clone(), query.linked_to.clone(), query.linked_to.clone()];
        let (rows, total) =
            self.page_and_count(&select, &count, &binds, (query.limit, query.page), "knowledge contents").await?;
        let list = crate::codec::readable(
            "knowledge content",
            rows.iter().map(|r| (r.try_get::<String, _>("id").ok(), knowledge_from_row::<Sqlite>(r))),
        );
        Ok((list, total))
    }

    async fn delete_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        let _turn = self.write_turn().await;
        // A scoped caller deletes only its own rows, never shared ones.
        let sql = format!("DELETE FROM {} WHERE id = ? AND (? IS NULL OR user_id = ?)", self.tables().knowledge);
        let done = sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(id)
            .bind(user_id)
            .bind(user_id)
            .execute(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot delete knowledge content {id}"), e))?;
        Ok(done.rows_affected() > 0)
    }
}
