//! Knowledge contents of the in-memory store; the reference semantics the other adapters follow.

use agno_core::{
    DbError, DbErrorKind, DbResult, KnowledgeQuery, KnowledgeRow, KnowledgeSort, KnowledgeStore, SortOrder, new_id,
    now_epoch_secs,
};
use async_trait::async_trait;

use super::InMemoryDb;
use crate::memories::page_bounds;

/// Shared rows (no owner) are visible to everyone; owned rows to their owner.
fn knowledge_visible(row: &KnowledgeRow, user_id: Option<&str>) -> bool {
    user_id.is_none_or(|u| row.user_id.is_none() || row.user_id.as_deref() == Some(u))
}

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
        let mut list: Vec<KnowledgeRow> = tables
            .knowledge
            .values()
            .filter(|k| knowledge_visible(k, query.user_id.as_deref()))
            .filter(|k| query.linked_to.as_deref().is_none_or(|l| k.linked_to.as_deref() == Some(l)))
            .cloned()
            .collect();
        list.sort_by(|a, b| {
            let primary = match query.sort_by {
                KnowledgeSort::CreatedAt => a.created_at.cmp(&b.created_at),
                KnowledgeSort::UpdatedAt => a.updated_at.cmp(&b.updated_at),
                KnowledgeSort::Name => a.name.cmp(&b.name),
            };
            primary.then_with(|| a.id.cmp(&b.id))
        });
        if query.sort_order == SortOrder::Desc {
            list.reverse();
        }
        let total = list.len() as u64;
        let (offset, limit) = page_bounds(query.limit, query.page);
        Ok((list.into_iter().skip(offset).take(limit).collect(), total))
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
