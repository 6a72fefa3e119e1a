//! User memories in Redis, laid out as Python Agno's `RedisDb` lays them out:
//! - `{prefix}:memories:{memory_id}`: the memory document (JSON string, keys `user_id, agent_id,
//!   team_id, memory_id, memory, topics, input, feedback, created_at, updated_at`, timestamps in
//!   epoch seconds);
//! - `{prefix}:memories:index:{field}:{value}`: sets of memory ids per `user_id`, `agent_id`,
//!   `team_id` (and `workflow_id`, which memories never carry), kept up to date on every write.
//!
//! Upserts are the shared compare-and-set (`docs`; the owner check and the kept `created_at` are
//! decided on the document the write replaces); deletes are the shared owner-checked script.

use agno_core::{DbResult, MemoryPage, MemoryQuery, MemoryStore, UserMemory, UserMemoryStats, new_id, now_epoch_secs};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::docs::DocKind;
use super::{MGET_CHUNK, RedisDb, glob_escape, redis_error};
use crate::doc::memories::{memory_from_doc, memory_write};
use crate::doc::memories::{memory_stats, memory_topics, page_memories};
use crate::doc::visible;

/// Memory documents, with the index sets Agno keeps for them (`workflow_id`, which memories
/// never carry, included as Agno includes it).
const MEMORIES: DocKind = DocKind { name: "memories", index: &["user_id", "agent_id", "team_id", "workflow_id"] };

/// A memory document as Python Agno's `RedisDb.upsert_user_memory` writes it.
fn redis_doc(m: &UserMemory) -> Map<String, Value> {
    let text = |v: &Option<String>| v.clone().map_or(Value::Null, Value::String);
    let mut doc = Map::new();
    doc.insert("user_id".to_owned(), text(&m.user_id));
    doc.insert("agent_id".to_owned(), text(&m.agent_id));
    doc.insert("team_id".to_owned(), text(&m.team_id));
    doc.insert("memory_id".to_owned(), text(&m.memory_id));
    doc.insert("memory".to_owned(), Value::String(m.memory.clone()));
    doc.insert(
        "topics".to_owned(),
        m.topics.as_ref().map_or(Value::Null, |t| Value::Array(t.iter().cloned().map(Value::String).collect())),
    );
    doc.insert("input".to_owned(), text(&m.input));
    doc.insert("feedback".to_owned(), text(&m.feedback));
    doc.insert("created_at".to_owned(), m.created_at.map_or(Value::Null, Value::from));
    doc.insert("updated_at".to_owned(), m.updated_at.map_or(Value::Null, Value::from));
    doc
}

impl RedisDb {
    /// Every stored memory (values that are not JSON documents are skipped).
    async fn all_memories(&self) -> DbResult<Vec<UserMemory>> {
        Ok(self.docs_of(MEMORIES.name).await?.iter().map(memory_from_doc).collect())
    }
}

#[async_trait]
impl MemoryStore for RedisDb {
    async fn upsert_user_memory(&self, memory: &UserMemory) -> DbResult<UserMemory> {
        let id = memory.memory_id.clone().unwrap_or_else(new_id);
        self.upsert_doc(MEMORIES, &id, "memory", |current| {
            let existing = current.map(memory_from_doc);
            let write = memory_write(memory, &id, existing.as_ref(), now_epoch_secs())?;
            Ok((redis_doc(&write.stored), write.returned))
        })
        .await
    }

    async fn get_user_memory(&self, memory_id: &str, user_id: Option<&str>) -> DbResult<Option<UserMemory>> {
        let Some((_, doc)) = self.doc_at(MEMORIES.name, memory_id, "memory").await? else { return Ok(None) };
        let memory = memory_from_doc(&doc);
        Ok(visible(memory.user_id.as_deref(), user_id).then_some(memory))
    }

    async fn get_user_memories(&self, query: &MemoryQuery) -> DbResult<MemoryPage> {
        Ok(page_memories(self.all_memories().await?, query))
    }

    async fn delete_user_memory(&self, memory_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_user_memories(&[memory_id.to_owned()], user_id).await? == 1)
    }

    async fn delete_user_memories(&self, memory_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        self.delete_docs(MEMORIES, memory_ids, user_id).await
    }

    async fn get_all_memory_topics(&self, user_id: Option<&str>) -> DbResult<Vec<String>> {
        Ok(memory_topics(&self.all_memories().await?, user_id))
    }

    async fn get_user_memory_stats(
        &self,
        limit: Option<usize>,
        page: Option<usize>,
        user_id: Option<&str>,
    ) -> DbResult<(Vec<UserMemoryStats>, u64)> {
        Ok(memory_stats(&self.all_memories().await?, limit, page, user_id))
    }

    async fn clear_memories(&self) -> DbResult<()> {
        let keys = self.scan(&format!("{}:memories:*", glob_escape(&self.prefix))).await?;
        for chunk in keys.chunks(MGET_CHUNK) {
            redis::cmd("DEL")
                .arg(chunk)
                .query_async::<()>(&mut self.conn())
                .await
                .map_err(|e| redis_error("cannot clear memories", e))?;
        }
        Ok(())
    }
}
