//! Knowledge contents: who sees a row, which a listing shows and in which order.
//!
//! Knowledge contents of the document stores (`agno_knowledge.json`, documents shaped as Python Agno's
//! `JsonDb` writes them: `KnowledgeRow.model_dump()`, its keys and order). A document without
//! `user_id` is shared. Visibility, filters, sort and paging run in process under the file lock.

use std::collections::BTreeSet;

use agno_core::{DbError, DbErrorKind, DbResult, KnowledgeStore, new_id, now_epoch_secs};
use agno_core::{KnowledgeQuery, KnowledgeRow, KnowledgeSort};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::delete_visible;
use super::evals::object_of;
use super::memories::epoch_value;
use super::schema::str_field;
use super::{DocBackend, DocDb};
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

fn doc_id(doc: &Value) -> Option<&str> {
    doc.get("id").and_then(Value::as_str)
}

#[async_trait]
impl<B: DocBackend> KnowledgeStore for DocDb<B> {
    async fn upsert_knowledge_content(&self, row: &KnowledgeRow) -> DbResult<KnowledgeRow> {
        let mut row = row.clone();
        self.write(move |files| {
            let table = &files.tables().knowledge.clone();
            let mut docs = files.read(table)?.into_owned();
            let id = row.id.get_or_insert_with(new_id).clone();
            let at = docs.iter().position(|d| doc_id(d) == Some(id.as_str()));
            let existing = at.and_then(|i| docs[i].as_object()).and_then(knowledge_from_doc);
            let row = planned_knowledge(&row, &id, existing.as_ref())?;
            let doc = Value::Object(to_doc(&row)?);
            match at {
                Some(i) => docs[i] = doc,
                None => docs.push(doc),
            }
            files.write(table, docs)?;
            Ok(row)
        })
        .await
    }

    async fn get_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<KnowledgeRow>> {
        let (id, user_id) = (id.to_owned(), user_id.map(str::to_owned));
        self.read(move |files| {
            let docs = files.read(&files.tables().knowledge)?;
            Ok(docs
                .iter()
                .find(|d| doc_id(d) == Some(id.as_str()))
                .and_then(Value::as_object)
                .and_then(knowledge_from_doc)
                .filter(|k| knowledge_visible(k, user_id.as_deref())))
        })
        .await
    }

    async fn get_knowledge_contents(&self, query: &KnowledgeQuery) -> DbResult<(Vec<KnowledgeRow>, u64)> {
        let query = query.clone();
        self.read(move |files| {
            let docs = files.read(&files.tables().knowledge)?;
            Ok(page_knowledge(docs.iter().filter_map(Value::as_object).filter_map(knowledge_from_doc), &query))
        })
        .await
    }

    async fn delete_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        let (ids, user_id) = (BTreeSet::from([id.to_owned()]), user_id.map(str::to_owned));
        // With a user, only that user's own rows: never shared ones.
        self.write(move |files| {
            let table = files.tables().knowledge.clone();
            Ok(delete_visible(files, &table, "id", &ids, user_id.as_deref())? > 0)
        })
        .await
    }
}
