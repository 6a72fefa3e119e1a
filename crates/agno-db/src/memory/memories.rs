//! User memories of the in-memory store.

use std::collections::{BTreeMap, BTreeSet};

use agno_core::{
    DbError, DbErrorKind, DbResult, MemoryPage, MemoryQuery, MemorySort, MemoryStore, SortOrder, UserMemory,
    UserMemoryStats, new_id, now_epoch_secs,
};
use async_trait::async_trait;

use super::{InMemoryDb, visible};
use crate::memories::{matches_query, page_bounds};

#[async_trait]
impl MemoryStore for InMemoryDb {
    async fn upsert_user_memory(&self, memory: &UserMemory) -> DbResult<UserMemory> {
        let mut tables = self.lock()?;
        let mut row = memory.clone();
        let id = row.memory_id.get_or_insert_with(new_id).clone();
        if let Some(existing) = tables.memories.get(&id) {
            if existing.user_id.is_some() && existing.user_id != row.user_id {
                return Err(DbError::new(DbErrorKind::Conflict, format!("memory {id} belongs to another user")));
            }
            row.created_at = row.created_at.or(existing.created_at);
        }
        let now = now_epoch_secs();
        row.created_at = Some(row.created_at.unwrap_or(now));
        row.updated_at = Some(now);
        tables.memories.insert(id, row.clone());
        Ok(row)
    }

    async fn get_user_memory(&self, memory_id: &str, user_id: Option<&str>) -> DbResult<Option<UserMemory>> {
        let tables = self.lock()?;
        Ok(tables.memories.get(memory_id).filter(|m| visible(m.user_id.as_deref(), user_id)).cloned())
    }

    async fn get_user_memories(&self, query: &MemoryQuery) -> DbResult<MemoryPage> {
        let tables = self.lock()?;
        let mut list: Vec<UserMemory> = tables.memories.values().filter(|m| matches_query(m, query)).cloned().collect();
        let key = |m: &UserMemory| match query.sort_by {
            MemorySort::UpdatedAt => m.updated_at,
            MemorySort::CreatedAt => m.created_at,
        };
        list.sort_by(|a, b| key(a).cmp(&key(b)).then_with(|| a.memory_id.cmp(&b.memory_id)));
        if query.sort_order == SortOrder::Desc {
            list.reverse();
        }
        let total = list.len() as u64;
        let (offset, limit) = page_bounds(query.limit, query.page);
        Ok(MemoryPage { memories: list.into_iter().skip(offset).take(limit).collect(), total })
    }

    async fn delete_user_memory(&self, memory_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_user_memories(&[memory_id.to_owned()], user_id).await? == 1)
    }

    async fn delete_user_memories(&self, memory_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        let mut tables = self.lock()?;
        let mut deleted = 0;
        for id in memory_ids {
            if tables.memories.get(id).is_some_and(|m| visible(m.user_id.as_deref(), user_id)) {
                tables.memories.remove(id);
                deleted += 1;
            }
        }
        Ok(deleted)
    }

    async fn get_all_memory_topics(&self, user_id: Option<&str>) -> DbResult<Vec<String>> {
        let tables = self.lock()?;
        let topics: BTreeSet<String> = tables
            .memories
            .values()
            .filter(|m| visible(m.user_id.as_deref(), user_id))
            .flat_map(|m| m.topics.iter().flatten().cloned())
            .collect();
        Ok(topics.into_iter().collect())
    }

    async fn get_user_memory_stats(
        &self,
        limit: Option<usize>,
        page: Option<usize>,
        user_id: Option<&str>,
    ) -> DbResult<(Vec<UserMemoryStats>, u64)> {
        let tables = self.lock()?;
        let mut by_user: BTreeMap<Option<String>, UserMemoryStats> = BTreeMap::new();
        for m in tables.memories.values().filter(|m| visible(m.user_id.as_deref(), user_id)) {
            let entry = by_user.entry(m.user_id.clone()).or_insert_with(|| UserMemoryStats {
                user_id: m.user_id.clone(),
                total_memories: 0,
                last_memory_updated_at: None,
            });
            entry.total_memories += 1;
            entry.last_memory_updated_at = entry.last_memory_updated_at.max(m.updated_at);
        }
        let mut stats: Vec<UserMemoryStats> = by_user.into_values().collect();
        stats.sort_by(|a, b| {
            b.last_memory_updated_at.cmp(&a.last_memory_updated_at).then_with(|| a.user_id.cmp(&b.user_id))
        });
        let total = stats.len() as u64;
        let (offset, limit) = page_bounds(limit, page);
        Ok((stats.into_iter().skip(offset).take(limit).collect(), total))
    }

    async fn clear_memories(&self) -> DbResult<()> {
        self.lock()?.memories.clear();
        Ok(())
    }
}
