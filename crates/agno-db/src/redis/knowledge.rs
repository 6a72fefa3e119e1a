//! Knowledge contents in Redis, laid out as Python Agno's `RedisDb` lays them out:
//! `{prefix}:knowledge:{id}` holds the row document (JSON string, keys `id, name, description,
//! metadata, type, size, linked_to, access_count, status, status_message, user_id, created_at,
//! updated_at, external_id`); Agno keeps no index sets for knowledge.
//!
//! Upserts are compare-and-set scripts retried on contention (the owner check and the kept
//! `created_at` are decided on the document the write replaces); deletes are one script that
//! checks the owner. A row without `user_id` is shared: every user reads it, only an unscoped
//! caller deletes it.

use crate::doc::knowledge::{knowledge_visible, page_knowledge};
use std::sync::LazyLock;

use agno_core::{DbError, DbErrorKind, DbResult, KnowledgeQuery, KnowledgeRow, KnowledgeStore, new_id, now_epoch_secs};
use async_trait::async_trait;
use redis::Script;
use serde_json::{Map, Value};

use super::sessions::user_args;
use super::{RedisDb, parse_doc, redis_error};
use crate::codec::to_json_text;

/// Attempts of a compare-and-set before giving up (each round, one contender always wins).
const CAS_ATTEMPTS: usize = 10_000;

/// Compare-and-set of a knowledge document.
/// KEYS: knowledge key. ARGV: expect_existing ('1'/'0'), expected text, new text.
/// Returns 1 when written, 0 when the stored document changed meanwhile.
static CAS_KNOWLEDGE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local cur = redis.call('GET', KEYS[1])
if ARGV[1] == '1' then
  if cur ~= ARGV[2] then return 0 end
elseif cur then
  return 0
end
redis.call('SET', KEYS[1], ARGV[3])
return 1
",
    )
});

/// Deletes a knowledge row: any row for an unscoped caller, only the user's own otherwise
/// (never a shared one). KEYS: knowledge key. ARGV: has_user ('1'/'0'), user_id.
/// Returns 1 when deleted.
static DELETE_KNOWLEDGE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local text = redis.call('GET', KEYS[1])
if not text then return 0 end
if ARGV[1] == '1' then
  local ok, doc = pcall(cjson.decode, text)
  if not ok or type(doc) ~= 'table' then return 0 end
  local owner = doc['user_id']
  if type(owner) ~= 'string' or owner ~= ARGV[2] then return 0 end
end
redis.call('DEL', KEYS[1])
return 1
",
    )
});

/// A knowledge document as Python Agno's `RedisDb.upsert_knowledge_content` writes it
/// (`KnowledgeRow.model_dump()`).
fn knowledge_doc(k: &KnowledgeRow) -> Map<String, Value> {
    let text = |v: &Option<String>| v.clone().map_or(Value::Null, Value::String);
    let int = |v: Option<i64>| v.map_or(Value::Null, Value::from);
    let mut doc = Map::new();
    doc.insert("id".to_owned(), text(&k.id));
    doc.insert("name".to_owned(), Value::String(k.name.clone()));
    doc.insert("description".to_owned(), Value::String(k.description.clone()));
    doc.insert("metadata".to_owned(), k.metadata.clone().map_or(Value::Null, Value::Object));
    doc.insert("type".to_owned(), text(&k.kind));
    doc.insert("size".to_owned(), int(k.size));
    doc.insert("linked_to".to_owned(), text(&k.linked_to));
    doc.insert("access_count".to_owned(), int(k.access_count));
    doc.insert("status".to_owned(), text(&k.status));
    doc.insert("status_message".to_owned(), text(&k.status_message));
    doc.insert("user_id".to_owned(), text(&k.user_id));
    doc.insert("created_at".to_owned(), int(k.created_at));
    doc.insert("updated_at".to_owned(), int(k.updated_at));
    doc.insert("external_id".to_owned(), text(&k.external_id));
    doc
}

/// Reads a knowledge row from its stored document; `None` when the document is not one.
fn knowledge_from_doc(doc: &Map<String, Value>) -> Option<KnowledgeRow> {
    serde_json::from_value(Value::Object(doc.clone())).ok()
}

fn not_a_row(id: &str) -> DbError {
    DbError::new(DbErrorKind::Other, format!("stored knowledge content {id} is not a valid knowledge document"))
}

impl RedisDb {
    fn knowledge_key(&self, id: &str) -> String {
        self.doc_key("knowledge", id)
    }

    /// One stored knowledge row, with its document text.
    async fn knowledge_row(&self, id: &str) -> DbResult<Option<(String, KnowledgeRow)>> {
        let Some(text) = self.get(&self.knowledge_key(id)).await? else { return Ok(None) };
        let row = parse_doc(&text).and_then(|d| knowledge_from_doc(&d)).ok_or_else(|| not_a_row(id))?;
        Ok(Some((text, row)))
    }
}

#[async_trait]
impl KnowledgeStore for RedisDb {
    async fn upsert_knowledge_content(&self, row: &KnowledgeRow) -> DbResult<KnowledgeRow> {
        let mut row = row.clone();
        let id = row.id.get_or_insert_with(new_id).clone();
        let key = self.knowledge_key(&id);
        for _ in 0..CAS_ATTEMPTS {
            let current = self.knowledge_row(&id).await?;
            let mut write = row.clone();
            if let Some((_, existing)) = &current {
                if write.user_id.is_some() && existing.user_id != write.user_id {
                    return Err(DbError::new(
                        DbErrorKind::Conflict,
                        format!("knowledge content {id} belongs to another user"),
                    ));
                }
                write.created_at = existing.created_at;
            }
            let now = now_epoch_secs();
            write.created_at = Some(write.created_at.unwrap_or(now));
            write.updated_at = Some(now);
            let written: i64 = CAS_KNOWLEDGE
                .key(&key)
                .arg(if current.is_some() { "1" } else { "0" })
                .arg(current.as_ref().map_or("", |(text, _)| text.as_str()))
                .arg(to_json_text(&knowledge_doc(&write))?)
                .invoke_async(&mut self.conn())
                .await
                .map_err(|e| redis_error(&format!("cannot write knowledge content {id}"), e))?;
            if written == 1 {
                return Ok(write);
            }
        }
        Err(DbError::new(
            DbErrorKind::Conflict,
            format!("knowledge content {id} changed too often concurrently; retry the write"),
        ))
    }

    async fn get_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<KnowledgeRow>> {
        let Some((_, row)) = self.knowledge_row(id).await? else { return Ok(None) };
        Ok(knowledge_visible(&row, user_id).then_some(row))
    }

    async fn get_knowledge_contents(&self, query: &KnowledgeQuery) -> DbResult<(Vec<KnowledgeRow>, u64)> {
        let keys = self.doc_keys("knowledge").await?;
        let docs = self.mget(&keys).await?.into_iter().flatten().filter_map(|t| parse_doc(&t));
        Ok(page_knowledge(docs.filter_map(|d| knowledge_from_doc(&d)), query))
    }

    async fn delete_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        let (has_user, user) = user_args(user_id);
        let deleted: i64 = DELETE_KNOWLEDGE
            .key(self.knowledge_key(id))
            .arg(has_user)
            .arg(user)
            .invoke_async(&mut self.conn())
            .await
            .map_err(|e| redis_error(&format!("cannot delete knowledge content {id}"), e))?;
        Ok(deleted == 1)
    }
}
