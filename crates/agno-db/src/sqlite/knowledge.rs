//! Knowledge contents in SQLite (`agno_knowledge`, as Python Agno 3.x shapes it). A row without
//! `user_id` is shared: every user reads it, only an unscoped caller deletes it; the owner check
//! of a write is part of the upsert statement.

use agno_core::{DbError, DbErrorKind, DbResult, KnowledgeRow, new_id, now_epoch_secs};
use sqlx::AssertSqlSafe;

use super::{SqliteDb, db_error};
use crate::codec::to_json_text;

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

impl SqliteDb {
    /// `KnowledgeStore::upsert_knowledge_content`, as this database writes it.
    pub(crate) async fn upsert_knowledge(&self, row: &KnowledgeRow) -> DbResult<KnowledgeRow> {
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
}

crate::sql::knowledge::knowledge_store!(SqliteDb);
