//! User memories in Redis, laid out as Python Agno's `RedisDb` lays them out:
//! - `{prefix}:memories:{memory_id}`: the memory document (JSON string, keys `user_id, agent_id,
//!   team_id, memory_id, memory, topics, input, feedback, created_at, updated_at`, timestamps in
//!   epoch seconds);
//! - `{prefix}:memories:index:{field}:{value}`: sets of memory ids per `user_id`, `agent_id`,
//!   `team_id` (and `workflow_id`, which memories never carry), kept up to date on every write.
//!
//! Upserts are compare-and-set scripts retried on contention (the owner check and the kept
//! `created_at` are decided on the document the write replaces); deletes are one script per batch.

use std::sync::LazyLock;

use agno_core::{
    DbError, DbErrorKind, DbResult, MemoryPage, MemoryQuery, MemoryStore, UserMemory, UserMemoryStats, new_id,
    now_epoch_secs,
};
use async_trait::async_trait;
use redis::Script;
use serde_json::{Map, Value};

use super::{MGET_CHUNK, RedisDb, glob_escape, redis_error};
use crate::codec::to_json_text;
use crate::doc::memories::{memory_from_doc, memory_write};
use crate::doc::memories::{memory_stats, memory_topics, page_memories};
use crate::doc::visible;

/// Fields with an index set `{prefix}:memories:index:{field}:{value}` (as Agno).
const INDEX_FIELDS: [&str; 4] = ["user_id", "agent_id", "team_id", "workflow_id"];

/// Attempts of a compare-and-set before giving up (each round, one contender always wins).
const CAS_ATTEMPTS: usize = 10_000;

/// Compare-and-set of a memory document, with its index sets.
/// KEYS: memory key. ARGV: prefix, memory_id, expect_existing ('1'/'0'), expected text, new text,
/// JSON list of old index values, JSON list of new index values (`INDEX_FIELDS` order).
/// Returns 1 when written, 0 when the stored document changed meanwhile.
static CAS_MEMORY: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local FIELDS = {'user_id', 'agent_id', 'team_id', 'workflow_id'}
local cur = redis.call('GET', KEYS[1])
if ARGV[3] == '1' then
  if cur ~= ARGV[4] then return 0 end
elseif cur then
  return 0
end
redis.call('SET', KEYS[1], ARGV[5])
local old = cjson.decode(ARGV[6])
local new = cjson.decode(ARGV[7])
for i, f in ipairs(FIELDS) do
  local base = ARGV[1] .. ':memories:index:' .. f .. ':'
  if type(old[i]) == 'string' and old[i] ~= new[i] then redis.call('SREM', base .. old[i], ARGV[2]) end
  if type(new[i]) == 'string' then redis.call('SADD', base .. new[i], ARGV[2]) end
end
return 1
",
    )
});

/// Deletes the memories visible to the caller, with their index entries.
/// KEYS: memory keys. ARGV: prefix, has_user ('1'/'0'), user_id, then the memory ids (as KEYS).
/// Returns how many were deleted.
static DELETE_MEMORIES: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local FIELDS = {'user_id', 'agent_id', 'team_id', 'workflow_id'}
local deleted = 0
for i, key in ipairs(KEYS) do
  local text = redis.call('GET', key)
  if text then
    local ok, doc = pcall(cjson.decode, text)
    if not ok or type(doc) ~= 'table' then doc = {} end
    local owner = doc['user_id']
    if ARGV[2] ~= '1' or (type(owner) == 'string' and owner == ARGV[3]) then
      local id = ARGV[3 + i]
      for _, f in ipairs(FIELDS) do
        local v = doc[f]
        if type(v) == 'string' then redis.call('SREM', ARGV[1] .. ':memories:index:' .. f .. ':' .. v, id) end
      end
      redis.call('DEL', key)
      deleted = deleted + 1
    end
  end
end
return deleted
",
    )
});

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

/// The indexed values of a memory document, as a JSON list in `INDEX_FIELDS` order.
fn index_values(doc: Option<&Map<String, Value>>) -> String {
    let values: Vec<Value> = INDEX_FIELDS
        .iter()
        .map(|f| doc.and_then(|d| d.get(*f)).filter(|v| v.is_string()).cloned().unwrap_or(Value::Null))
        .collect();
    Value::Array(values).to_string()
}

impl RedisDb {
    fn memory_key(&self, memory_id: &str) -> String {
        self.doc_key("memories", memory_id)
    }

    /// Every stored memory (values that are not JSON documents are skipped).
    async fn all_memories(&self) -> DbResult<Vec<UserMemory>> {
        Ok(self.docs_of("memories").await?.iter().map(memory_from_doc).collect())
    }
}

#[async_trait]
impl MemoryStore for RedisDb {
    async fn upsert_user_memory(&self, memory: &UserMemory) -> DbResult<UserMemory> {
        let id = memory.memory_id.clone().unwrap_or_else(new_id);
        let key = self.memory_key(&id);
        for _ in 0..CAS_ATTEMPTS {
            let current = self.doc_at("memories", &id, "memory").await?;
            let existing = current.as_ref().map(|(_, doc)| memory_from_doc(doc));
            let write = memory_write(memory, &id, existing.as_ref(), now_epoch_secs())?;
            let doc = redis_doc(&write.stored);
            let written: i64 = CAS_MEMORY
                .key(&key)
                .arg(&self.prefix)
                .arg(&id)
                .arg(if current.is_some() { "1" } else { "0" })
                .arg(current.as_ref().map_or("", |(text, _)| text.as_str()))
                .arg(to_json_text(&doc)?)
                .arg(index_values(current.as_ref().map(|(_, doc)| doc)))
                .arg(index_values(Some(&doc)))
                .invoke_async(&mut self.conn())
                .await
                .map_err(|e| redis_error(&format!("cannot write memory {id}"), e))?;
            if written == 1 {
                return Ok(write.returned);
            }
        }
        Err(DbError::new(DbErrorKind::Conflict, format!("memory {id} changed too often concurrently; retry the write")))
    }

    async fn get_user_memory(&self, memory_id: &str, user_id: Option<&str>) -> DbResult<Option<UserMemory>> {
        let Some((_, doc)) = self.doc_at("memories", memory_id, "memory").await? else { return Ok(None) };
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
        self.delete_owned(&DELETE_MEMORIES, "memories", memory_ids, user_id).await
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
