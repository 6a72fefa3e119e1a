//! User memories of the in-memory store.

use crate::doc::memories::{memory_stats, memory_topics, page_memories};

use agno_core::{
    DbError, DbErrorKind, DbResult, MemoryPage, MemoryQuery, MemoryStore, UserMemory, UserMemoryStats, new_id,
    now_epoch_secs,
};
use async_trait::async_trait;

use super::{InMemoryDb, visible};

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
        Ok(page_memories(tables.memories.values().cloned(), query))
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
        Ok(memory_topics(tables.memories.values(), user_id))
    }

    async fn get_user_memory_stats(
        &self,
        limit: Option<usize>,
        page: Option<usize>,
        user_id: Option<&str>,
    ) -> DbResult<(Vec<UserMemoryStats>, u64)> {
        let tables = self.lock()?;
        Ok(memory_stats(tables.memories.values(), limit, page, user_id))
    }

    async fn clear_memories(&self) -> DbResult<()> {
        self.lock()?.memories.clear();
        Ok(())
    }
}
