//! Knowledge contents in Redis, laid out as Python Agno's `RedisDb` lays them out:
//! `{prefix}:knowledge:{id}` holds the row document (JSON string, keys `id, name, description,
//! metadata, type, size, linked_to, access_count, status, status_message, user_id, created_at,
//! updated_at, external_id`); Agno keeps no index sets for knowledge.
//!
//! Upserts are the shared compare-and-set (`docs`; the owner check and the kept `created_at` are
//! decided on the document the write replaces); a delete is the shared owner-checked script. A
//! row without `user_id` is shared: every user reads it, only an unscoped caller deletes it.

use agno_core::{DbError, DbErrorKind, DbResult, KnowledgeQuery, KnowledgeRow, KnowledgeStore, new_id, now_epoch_secs};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::RedisDb;
use super::docs::DocKind;
use crate::doc::knowledge::{knowledge_visible, page_knowledge};

/// Knowledge documents (Agno keeps no index sets for them).
const KNOWLEDGE: DocKind = DocKind { name: "knowledge", index: &[] };

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

#[async_trait]
impl KnowledgeStore for RedisDb {
    async fn upsert_knowledge_content(&self, row: &KnowledgeRow) -> DbResult<KnowledgeRow> {
        let mut row = row.clone();
        let id = row.id.get_or_insert_with(new_id).clone();
        self.upsert_doc(KNOWLEDGE, &id, "knowledge content", |current| {
            let mut write = row.clone();
            if let Some(doc) = current {
                let existing = knowledge_from_doc(doc).ok_or_else(|| not_a_row(&id))?;
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
            Ok((knowledge_doc(&write), write))
        })
        .await
    }

    async fn get_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<KnowledgeRow>> {
        let Some((_, doc)) = self.doc_at(KNOWLEDGE.name, id, "knowledge content").await? else { return Ok(None) };
        let row = knowledge_from_doc(&doc).ok_or_else(|| not_a_row(id))?;
        Ok(knowledge_visible(&row, user_id).then_some(row))
    }

    async fn get_knowledge_contents(&self, query: &KnowledgeQuery) -> DbResult<(Vec<KnowledgeRow>, u64)> {
        let docs = self.docs_of(KNOWLEDGE.name).await?;
        Ok(page_knowledge(docs.iter().filter_map(knowledge_from_doc), query))
    }

    async fn delete_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_docs(KNOWLEDGE, &[id.to_owned()], user_id).await? == 1)
    }
}
