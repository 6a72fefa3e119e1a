//! One document at a time: the operations every document store answers ([`Documents`]), over
//! which the areas whose records are plain documents (eval runs, knowledge, memories, approvals,
//! compactions, traces and spans) are written once for the in-memory store, the JSON files and
//! Redis.
//!
//! A store reads one document, the documents of a kind (all, or those whose indexed field has a
//! value), changes one document by a plan over what is stored (under the table lock for the
//! table stores, by compare-and-set retried on contention for Redis), and deletes the documents
//! a caller may delete. Where each store keeps a kind is its [`DocKind`].

use std::collections::HashSet;
use std::future::Future;

use agno_core::DbResult;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{DocBackend, DocDb, delete_visible};
use crate::tables::TableNames;

/// A JSON document.
pub(crate) type Doc = Map<String, Value>;

/// A kind of document and where each store keeps it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DocKind {
    /// The Redis key segment: `{prefix}:{name}:{id}`.
    pub(crate) name: &'static str,
    /// The field holding a document's id.
    pub(crate) key: &'static str,
    /// The table of the table stores (in-memory, JSON files).
    pub(crate) table: fn(&TableNames) -> &String,
    /// The fields Redis keeps `{prefix}:{name}:index:{field}:{value}` sets of ids for (string
    /// values only), as Python Agno's `RedisDb` keeps them.
    pub(crate) index: &'static [&'static str],
}

/// Which of Python Agno's layouts a store writes its documents in: its `JsonDb`'s (shared by
/// the in-memory store) or its `RedisDb`'s. The two differ in the key order and the timestamps of
/// some documents (see `memories`, `evals`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Python Agno's `JsonDb`.
    Json,
    /// Python Agno's `RedisDb`.
    Redis,
}

/// The document operations of a store.
pub(crate) trait Documents: Send + Sync {
    /// The layout the store writes.
    const LAYOUT: Layout;

    /// Document `id` of `kind`; `what` names it in an error (a stored value that is not a
    /// document).
    fn doc(&self, kind: &'static DocKind, id: &str, what: &str) -> impl Future<Output = DbResult<Option<Doc>>> + Send;

    /// The documents of `kind` (values that are not documents are skipped); with `index`, only
    /// those whose field is one of the given texts.
    fn docs(
        &self,
        kind: &'static DocKind,
        index: Option<(&'static str, &[&str])>,
    ) -> impl Future<Output = DbResult<Vec<Doc>>> + Send;

    /// Stores each of `docs` (its id, the document) whose id is not stored yet, leaving a stored
    /// one as it is; how many were stored.
    fn insert_absent(
        &self,
        kind: &'static DocKind,
        docs: Vec<(String, Doc)>,
    ) -> impl Future<Output = DbResult<u64>> + Send;

    /// Changes document `id` of `kind`: `plan` sees the stored document (`None`: none) and
    /// answers the document to store with what to return, or `None` to write nothing. It may be
    /// called again when the document changed meanwhile (Redis); `what` names the document in
    /// errors.
    fn change<T, P>(
        &self,
        kind: &'static DocKind,
        id: &str,
        what: &str,
        plan: P,
    ) -> impl Future<Output = DbResult<Option<T>>> + Send
    where
        T: Send + 'static,
        P: FnMut(Option<&Doc>) -> DbResult<Option<(Doc, T)>> + Send + 'static;

    /// Deletes the documents `ids` of `kind` that `user_id` may delete (none: any; a scoped
    /// caller only its own, never a shared one); how many.
    fn delete(
        &self,
        kind: &'static DocKind,
        ids: &[String],
        user_id: Option<&str>,
    ) -> impl Future<Output = DbResult<u64>> + Send;

    /// Deletes every document of `kind`.
    fn clear(&self, kind: &'static DocKind) -> impl Future<Output = DbResult<()>> + Send;
}

/// Document `id`'s position among `docs` (by `kind`'s key).
fn position(docs: &[Value], kind: &DocKind, id: &str) -> Option<usize> {
    docs.iter().position(|d| super::key_of(d, kind.key) == Some(id))
}

impl<B: DocBackend> Documents for DocDb<B> {
    const LAYOUT: Layout = Layout::Json;

    async fn doc(&self, kind: &'static DocKind, id: &str, _what: &str) -> DbResult<Option<Doc>> {
        let id = id.to_owned();
        self.read(move |files| {
            let docs = files.read((kind.table)(files.tables()))?;
            Ok(position(&docs, kind, &id).and_then(|i| docs[i].as_object().cloned()))
        })
        .await
    }

    async fn docs(&self, kind: &'static DocKind, index: Option<(&'static str, &[&str])>) -> DbResult<Vec<Doc>> {
        let index =
            index.map(|(field, values)| (field, values.iter().map(|v| (*v).to_owned()).collect::<HashSet<_>>()));
        self.read(move |files| {
            let docs = files.read((kind.table)(files.tables()))?;
            let wanted = |d: &&Doc| index.as_ref().is_none_or(|(f, values)| indexed(d, f, values));
            Ok(docs.iter().filter_map(Value::as_object).filter(wanted).cloned().collect())
        })
        .await
    }

    async fn insert_absent(&self, kind: &'static DocKind, new: Vec<(String, Doc)>) -> DbResult<u64> {
        if new.is_empty() {
            return Ok(0);
        }
        self.write(move |files| {
            let table = (kind.table)(files.tables()).clone();
            let mut docs = files.read(&table)?.into_owned();
            let mut known: HashSet<String> =
                docs.iter().filter_map(|d| super::key_of(d, kind.key)).map(str::to_owned).collect();
            let before = docs.len();
            docs.extend(new.into_iter().filter(|(id, _)| known.insert(id.clone())).map(|(_, doc)| Value::Object(doc)));
            let stored = (docs.len() - before) as u64;
            if stored > 0 {
                files.write(&table, docs)?;
            }
            Ok(stored)
        })
        .await
    }

    async fn change<T, P>(&self, kind: &'static DocKind, id: &str, _what: &str, mut plan: P) -> DbResult<Option<T>>
    where
        T: Send + 'static,
        P: FnMut(Option<&Doc>) -> DbResult<Option<(Doc, T)>> + Send + 'static,
    {
        let id = id.to_owned();
        self.write(move |files| {
            let table = (kind.table)(files.tables()).clone();
            let mut docs = files.read(&table)?.into_owned();
            let at = position(&docs, kind, &id);
            let Some((new, out)) = plan(at.and_then(|i| docs[i].as_object()))? else { return Ok(None) };
            match at {
                Some(i) => docs[i] = Value::Object(new),
                None => docs.push(Value::Object(new)),
            }
            files.write(&table, docs)?;
            Ok(Some(out))
        })
        .await
    }

    async fn delete(&self, kind: &'static DocKind, ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let (ids, user_id) = (ids.iter().cloned().collect(), user_id.map(str::to_owned));
        self.write(move |files| {
            let table = (kind.table)(files.tables()).clone();
            delete_visible(files, &table, kind.key, &ids, user_id.as_deref())
        })
        .await
    }

    async fn clear(&self, kind: &'static DocKind) -> DbResult<()> {
        self.write(move |files| {
            let table = (kind.table)(files.tables()).clone();
            if files.exists(&table) { files.write(&table, Vec::new()) } else { Ok(()) }
        })
        .await
    }
}

/// The record document `doc` holds; `None` for a document that is not one.
pub(crate) fn record<T: DeserializeOwned>(doc: Doc) -> Option<T> {
    serde_json::from_value(Value::Object(doc)).ok()
}

/// The records `docs` hold (documents that are not records are left out).
pub(crate) fn records<T: DeserializeOwned>(docs: Vec<Doc>) -> Vec<T> {
    docs.into_iter().filter_map(record).collect()
}

/// True when `doc`'s `field` is one of `values`.
pub(crate) fn indexed<S: std::borrow::Borrow<str> + Eq + std::hash::Hash>(
    doc: &Doc,
    field: &str,
    values: &HashSet<S>,
) -> bool {
    doc.get(field).and_then(Value::as_str).is_some_and(|v| values.contains(v))
}
