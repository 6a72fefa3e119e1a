//! Knowledge contents in Redis, laid out as Python Agno's `RedisDb` lays them out:
//! `{prefix}:knowledge:{id}` holds the row document (JSON string, keys `id, name, description,
//! metadata, type, size, linked_to, access_count, status, status_message, user_id, created_at,
//! updated_at, external_id`); Agno keeps no index sets for knowledge.
//!
//! Upserts are the shared compare-and-set (`docs`; the owner check and the kept `created_at` are
//! decided on the document the write replaces); a delete is the shared owner-checked script. A
//! row without `user_id` is shared: every user reads it, only an unscoped caller deletes it.

use agno_core::{DbError, DbErrorKind, DbResult, KnowledgeQuery, KnowledgeRow, KnowledgeStore, new_id};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::RedisDb;
use super::docs::DocKind;
use crate::codec::to_doc;
use crate::doc::knowledge::{knowledge_visible, page_knowledge, planned_knowledge};

/// Knowledge documents (Agno keeps no index sets for them).
const KNOWLEDGE: DocKind = DocKind { name: "knowledge", index: &[] };

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
        // Written as `KnowledgeRow.model_dump()`, as Agno's `upsert_knowledge_content` writes it.
        self.upsert_doc(KNOWLEDGE, &id, "knowledge content", |current| {
            let existing = current.map(|doc| knowledge_from_doc(doc).ok_or_else(|| not_a_row(&id))).transpose()?;
            let write = planned_knowledge(&row, &id, existing.as_ref())?;
            Ok((to_doc(&write)?, write))
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
