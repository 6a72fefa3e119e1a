//! The document family: the stores of JSON documents shaped as Python Agno writes them, for
//! three backends — process memory ([`InMemoryDb`]), a directory of JSON files ([`JsonDb`]) and
//! Redis (`RedisDb`). Every area's documents, filters, order, paging and owner checks are written
//! once here.
//!
//! Two layers serve the areas. [`documents::Documents`] is one document at a time (read, list,
//! change by a plan over the stored document, delete): all three backends answer it, and eval
//! runs, knowledge, memories, approvals, compactions and traces are written once over it. The table
//! backends also read and write whole tables under their lock ([`DocBackend`], [`Docs`]), over
//! which sessions, runs, schedules, metrics, components and the job queue of memory and
//! JSON are written; Redis keeps its own key layout and Lua scripts for those (`crate::redis`),
//! sharing the document shapes and listing rules defined here.

mod agent_files;
pub(crate) mod approvals;
pub(crate) mod compactions;
pub(crate) mod components;
pub(crate) mod documents;
pub(crate) mod evals;
mod files;
pub(crate) mod jobs;
pub(crate) mod knowledge;
pub(crate) mod memories;
mod memory;
pub(crate) mod metrics;
mod migrate;
pub(crate) mod runs;
mod schedules;
pub(crate) mod schema;
pub(crate) mod sessions;
pub(crate) mod traces;

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use agno_core::{DbResult, SortOrder};
use serde_json::Value;

use crate::tables::TableNames;

/// A database of JSON-document tables over the backend `B`: [`InMemoryDb`] or [`JsonDb`].
/// Cloning shares the same backend.
pub struct DocDb<B> {
    pub(crate) backend: Arc<B>,
}

/// A process-local store, for tests, examples and the CLI's one-shot runs: the document family
/// over tables kept in memory. Nothing survives the process. Cloning shares the same data.
pub type InMemoryDb = DocDb<memory::MemoryDocs>;

/// A directory of JSON files, one per table (`agno_sessions.json`, `agno_runs.json`, ...), shaped
/// as Python Agno's `JsonDb` writes them, so both can use the same directory.
pub type JsonDb = DocDb<files::JsonFiles>;

impl<B> Clone for DocDb<B> {
    fn clone(&self) -> Self {
        Self { backend: Arc::clone(&self.backend) }
    }
}

impl<B: fmt::Debug> fmt::Debug for DocDb<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.backend.fmt(f)
    }
}

impl<B> DocDb<B> {
    pub(crate) fn with_backend(backend: B) -> Self {
        Self { backend: Arc::new(backend) }
    }
}

impl<B: DocBackend> DocDb<B> {
    /// The table names in use.
    pub fn tables(&self) -> &TableNames {
        self.backend.tables()
    }

    /// Runs `f` under the backend's shared lock: a consistent view of every table.
    pub(crate) async fn read<T, F>(&self, f: F) -> DbResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn Docs) -> DbResult<T> + Send + 'static,
    {
        self.backend.locked(false, f).await
    }

    /// Runs a read-modify-write `f` under the backend's exclusive lock; `f` reads what it changes.
    pub(crate) async fn write<T, F>(&self, f: F) -> DbResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn Docs) -> DbResult<T> + Send + 'static,
    {
        self.backend.locked(true, f).await
    }
}

/// Where a [`DocDb`] keeps its tables. What a backend does is only lock and give a view of its
/// tables; which documents they hold is the family's.
pub trait DocBackend: Send + Sync + fmt::Debug + 'static {
    /// True when the backend runs the durable job queue (`JobStore`).
    const JOBS: bool;

    /// The table names in use.
    fn tables(&self) -> &TableNames;

    /// Runs `f` over a view of the tables under the backend's lock (exclusive for writes, which
    /// are read-modify-write); `f` may block.
    fn locked<T, F>(&self, exclusive: bool, f: F) -> impl Future<Output = DbResult<T>> + Send
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn Docs) -> DbResult<T> + Send + 'static;
}

/// The tables of a document store, while its lock is held.
pub trait Docs {
    /// The table names in use.
    fn tables(&self) -> &TableNames;

    /// The documents of a table; a missing table is empty.
    ///
    /// # Errors
    /// A storage error, or a table that cannot be read as a list of documents.
    fn read(&self, table: &str) -> DbResult<Cow<'_, [Value]>>;

    /// Replaces the documents of a table (creating it).
    ///
    /// # Errors
    /// A storage error; the table is then unchanged.
    fn write(&mut self, table: &str, rows: Vec<Value>) -> DbResult<()>;

    /// True when the table exists.
    fn exists(&self, table: &str) -> bool;

    /// The job queue, for a backend that runs one ([`DocBackend::JOBS`]).
    fn job_tables(&mut self) -> Option<&mut jobs::JobTables> {
        None
    }

    /// Creates a table holding no documents when it is missing; true when created.
    ///
    /// # Errors
    /// As [`Docs::write`].
    fn create_if_missing(&mut self, table: &str) -> DbResult<bool> {
        if self.exists(table) {
            return Ok(false);
        }
        self.write(table, Vec::new())?;
        Ok(true)
    }
}

/// True when a record owned by `owner` is visible to a caller filtering on `user_id` (none:
/// unscoped, sees everything).
pub(crate) fn visible(owner: Option<&str>, user_id: Option<&str>) -> bool {
    user_id.is_none_or(|u| owner == Some(u))
}

/// Sorts `list` ascending by `key`, reverses it for [`SortOrder::Desc`], and pages it as
/// `limit`/`page` ask; with the count before paging.
pub(crate) fn sort_and_page<T>(
    mut list: Vec<T>,
    key: impl FnMut(&T, &T) -> std::cmp::Ordering,
    order: SortOrder,
    limit: Option<usize>,
    page: Option<usize>,
) -> (Vec<T>, u64) {
    list.sort_by(key);
    if order == SortOrder::Desc {
        list.reverse();
    }
    let total = list.len() as u64;
    let (offset, limit) = crate::memories::page_bounds(limit, page);
    (list.into_iter().skip(offset).take(limit).collect(), total)
}

/// The key of `doc` named `key`, when it is a string (a document's id).
pub(crate) fn key_of<'a>(doc: &'a Value, key: &str) -> Option<&'a str> {
    doc.get(key).and_then(Value::as_str)
}

/// Removes the documents of `table` whose `key` is in `ids` and that `user_id` may see (none:
/// any owner); returns how many. The table is written only when one was removed.
///
/// # Errors
/// A storage error; nothing is removed then.
pub(crate) fn delete_visible(
    files: &mut dyn Docs,
    table: &str,
    key: &str,
    ids: &std::collections::BTreeSet<String>,
    user_id: Option<&str>,
) -> DbResult<u64> {
    let mut docs = files.read(table)?.into_owned();
    let before = docs.len();
    docs.retain(|d| !(key_of(d, key).is_some_and(|id| ids.contains(id)) && visible(key_of(d, "user_id"), user_id)));
    let deleted = (before - docs.len()) as u64;
    if deleted > 0 {
        files.write(table, docs)?;
    }
    Ok(deleted)
}

/// Applies `change` to the document of `table` whose `key` is `id`, when `user_id` may see it
/// (none: any owner), and writes the table; `None` (nothing written) when there is no such
/// document or `change` declines.
///
/// # Errors
/// A storage error, or `change`'s; nothing is written then.
pub(crate) fn update_visible<T>(
    files: &mut dyn Docs,
    table: &str,
    (key, id): (&str, &str),
    user_id: Option<&str>,
    change: impl FnOnce(&mut serde_json::Map<String, Value>) -> DbResult<Option<T>>,
) -> DbResult<Option<T>> {
    let mut docs = files.read(table)?.into_owned();
    let Some(doc) = docs
        .iter_mut()
        .filter_map(Value::as_object_mut)
        .find(|d| d.get(key).and_then(Value::as_str) == Some(id))
        .filter(|d| visible(d.get("user_id").and_then(Value::as_str), user_id))
    else {
        return Ok(None);
    };
    let Some(out) = change(doc)? else { return Ok(None) };
    files.write(table, docs)?;
    Ok(Some(out))
}

/// Service accounts are kept by the SQL databases only (as Python Agno's): the document
/// databases answer that they do not keep them.
impl<B: DocBackend> agno_core::ServiceAccountStore for DocDb<B> {}

/// Learnings are kept by the SQL databases (as Python Agno's: its in-memory and JSON databases
/// answer 501): the document databases say they do not keep them.
impl<B: DocBackend> agno_core::LearningStore for DocDb<B> {}
