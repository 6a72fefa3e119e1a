//! Knowledge contents: who sees a row, which a listing shows and in which order.
//!
//! Knowledge contents of the document stores, written once for the in-memory store, the JSON
//! files (`agno_knowledge.json`) and Redis (`{prefix}:knowledge:{id}`), each document shaped as
//! Python Agno writes it in both: `KnowledgeRow.model_dump()`, its keys and order. A document
//! without `user_id` is shared: every user reads it, only an unscoped caller deletes it.
//! Visibility, filters, order and paging run in process.

use agno_core::{DbError, DbErrorKind, DbResult, KnowledgeStore, new_id, now_epoch_secs};
use agno_core::{KnowledgeQuery, KnowledgeRow, KnowledgeSort};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::DocDb;
use super::documents::{DocKind, Documents};
use super::evals::object_of;
use super::memories::epoch_value;
use super::schema::str_field;
use crate::codec::to_doc;

/// True when `user_id` (none: unscoped) may see `row`: its own rows and the shared ones.
pub(crate) fn knowledge_visible(row: &KnowledgeRow, user_id: Option<&str>) -> bool {
    user_id.is_none_or(|u| row.user_id.is_none() || row.user_id.as_deref() == Some(u))
}

/// The page of `rows` the listing `q` asks for (visible to its user, linked to its base when it
/// names one, in its order, then by id), with the number of matching rows.
pub(crate) fn page_knowledge(
    rows: impl IntoIterator<Item = KnowledgeRow>,
    q: &KnowledgeQuery,
) -> (Vec<KnowledgeRow>, u64) {
    let list = rows
        .into_iter()
        .filter(|k| knowledge_visible(k, q.user_id.as_deref()))
        .filter(|k| q.linked_to.as_deref().is_none_or(|l| k.linked_to.as_deref() == Some(l)))
        .collect();
    let order = |a: &KnowledgeRow, b: &KnowledgeRow| {
        let primary = match q.sort_by {
            KnowledgeSort::CreatedAt => a.created_at.cmp(&b.created_at),
            KnowledgeSort::UpdatedAt => a.updated_at.cmp(&b.updated_at),
            KnowledgeSort::Name => a.name.cmp(&b.name),
        };
        primary.then_with(|| a.id.cmp(&b.id))
    };
    super::sort_and_page(list, order, q.sort_order, q.limit, q.page)
}

/// A knowledge row from a stored document; `None` for a document without an `id`.
fn knowledge_from_doc(doc: &Map<String, Value>) -> Option<KnowledgeRow> {
    let text = |key: &str| str_field(doc, key).map(str::to_owned);
    #[allow(clippy::cast_possible_truncation)]
    let int = |key: &str| doc.get(key).and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)));
    Some(KnowledgeRow {
        id: Some(text("id")?),
        name: text("name").unwrap_or_default(),
        description: text("description").unwrap_or_default(),
        metadata: object_of(doc.get("metadata")),
        kind: text("type"),
        size: int("size"),
        linked_to: text("linked_to"),
        access_count: int("access_count"),
        status: text("status"),
        status_message: text("status_message"),
        user_id: text("user_id"),
        created_at: epoch_value(doc.get("created_at")),
        updated_at: epoch_value(doc.get("updated_at")),
        external_id: text("external_id"),
    })
}

/// The row `upsert_knowledge_content` writes with id `id` over the stored `existing` (both of
/// Agno's layouts store it as `KnowledgeRow.model_dump()`): refused when that belongs to another
/// user; keeps its `created_at`.
pub(crate) fn planned_knowledge(
    row: &KnowledgeRow,
    id: &str,
    existing: Option<&KnowledgeRow>,
) -> DbResult<KnowledgeRow> {
    let mut row = row.clone();
    if let Some(existing) = existing {
        if row.user_id.is_some() && existing.user_id != row.user_id {
            return Err(DbError::new(DbErrorKind::Conflict, format!("knowledge content {id} belongs to another user")));
        }
        row.created_at = existing.created_at;
    }
    let now = now_epoch_secs();
    row.created_at = Some(row.created_at.unwrap_or(now));
    row.updated_at = Some(now);
    Ok(row)
}

/// Knowledge documents (Python Agno's `RedisDb` keeps no index sets for them).
const KNOWLEDGE: DocKind = DocKind { name: "knowledge", key: "id", table: |t| &t.knowledge, index: &[] };

#[async_trait]
impl<B> KnowledgeStore for DocDb<B>
where
    DocDb<B>: Documents,
{
    async fn upsert_knowledge_content(&self, row: &KnowledgeRow) -> DbResult<KnowledgeRow> {
        let mut row = row.clone();
        let id = row.id.get_or_insert_with(new_id).clone();
        let written = self
            .change(&KNOWLEDGE, &id.clone(), "knowledge content", move |current| {
                let existing = current.and_then(knowledge_from_doc);
                let write = planned_knowledge(&row, &id, existing.as_ref())?;
                Ok(Some((to_doc(&write)?, write)))
            })
            .await?;
        written.ok_or_else(|| DbError::new(DbErrorKind::Other, "knowledge content was not written"))
    }

    async fn get_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<KnowledgeRow>> {
        let found = self.doc(&KNOWLEDGE, id, "knowledge content").await?.as_ref().and_then(knowledge_from_doc);
        Ok(found.filter(|k| knowledge_visible(k, user_id)))
    }

    async fn get_knowledge_contents(&self, query: &KnowledgeQuery) -> DbResult<(Vec<KnowledgeRow>, u64)> {
        Ok(page_knowledge(self.docs(&KNOWLEDGE, None).await?.iter().filter_map(knowledge_from_doc), query))
    }

    async fn delete_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        // With a user, only that user's own rows: never shared ones.
        Ok(self.delete(&KNOWLEDGE, &[id.to_owned()], user_id).await? > 0)
    }
}
