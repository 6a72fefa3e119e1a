//! Knowledge contents of the in-memory store; the reference semantics the other adapters follow.

use crate::doc::knowledge::{knowledge_visible, page_knowledge};
use agno_core::{DbError, DbErrorKind, DbResult, KnowledgeQuery, KnowledgeRow, KnowledgeStore, new_id, now_epoch_secs};
use async_trait::async_trait;

use super::InMemoryDb;

#[async_trait]
impl KnowledgeStore for InMemoryDb {
    async fn upsert_knowledge_content(&self, row: &KnowledgeRow) -> DbResult<KnowledgeRow> {
        let mut tables = self.lock()?;
        let mut row = row.clone();
        let id = row.id.get_or_insert_with(new_id).clone();
        if let Some(existing) = tables.knowledge.get(&id) {
            // A user may only write their own rows; shared rows change only through an unscoped
            // (admin) write, as in Agno.
            if row.user_id.is_some() && existing.user_id != row.user_id {
                return Err(DbError::new(
                    DbErrorKind::Conflict,
                    format!("knowledge content {id} belongs to another user or is shared"),
                ));
            }
            row.created_at = existing.created_at;
        }
        let now = now_epoch_secs();
        row.created_at = Some(row.created_at.unwrap_or(now));
        row.updated_at = Some(now);
        tables.knowledge.insert(id, row.clone());
        Ok(row)
    }

    async fn get_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<KnowledgeRow>> {
        let tables = self.lock()?;
        Ok(tables.knowledge.get(id).filter(|k| knowledge_visible(k, user_id)).cloned())
    }

    async fn get_knowledge_contents(&self, query: &KnowledgeQuery) -> DbResult<(Vec<KnowledgeRow>, u64)> {
        let tables = self.lock()?;
        Ok(page_knowledge(tables.knowledge.values().cloned(), query))
    }

    async fn delete_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        let mut tables = self.lock()?;
        let allowed = tables.knowledge.get(id).is_some_and(|k| match user_id {
            None => true,
            Some(u) => k.user_id.as_deref() == Some(u),
        });
        if allowed {
            tables.knowledge.remove(id);
        }
        Ok(allowed)
    }
}
