//! The in-memory backend of [`InMemoryDb`]: each table a list of documents in a map, behind one
//! mutex, beside the typed job queue. Reads borrow the documents; a write replaces a table's list.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use agno_core::{DbError, DbErrorKind, DbResult};
use serde_json::Value;

use super::jobs::JobTables;
use super::{DocBackend, DocDb, Docs, InMemoryDb};
use crate::tables::TableNames;

/// The in-memory backend: tables by name, and the job queue.
#[derive(Debug, Default)]
pub struct MemoryDocs {
    state: Mutex<State>,
    names: TableNames,
}

#[derive(Debug, Default)]
struct State {
    tables: HashMap<String, Vec<Value>>,
    queue: JobTables,
}

impl InMemoryDb {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Default for InMemoryDb {
    fn default() -> Self {
        DocDb::with_backend(MemoryDocs::default())
    }
}

/// The tables, while the mutex is held.
struct View<'a> {
    state: MutexGuard<'a, State>,
    names: &'a TableNames,
}

impl Docs for View<'_> {
    fn tables(&self) -> &TableNames {
        self.names
    }

    fn read(&self, table: &str) -> DbResult<Cow<'_, [Value]>> {
        Ok(Cow::Borrowed(self.state.tables.get(table).map_or(&[], Vec::as_slice)))
    }

    fn write(&mut self, table: &str, rows: Vec<Value>) -> DbResult<()> {
        self.state.tables.insert(table.to_owned(), rows);
        Ok(())
    }

    fn exists(&self, table: &str) -> bool {
        self.state.tables.contains_key(table)
    }

    fn job_tables(&mut self) -> Option<&mut JobTables> {
        Some(&mut self.state.queue)
    }
}

impl DocBackend for MemoryDocs {
    const JOBS: bool = true;

    fn tables(&self) -> &TableNames {
        &self.names
    }

    async fn locked<T, F>(&self, _exclusive: bool, f: F) -> DbResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn Docs) -> DbResult<T> + Send + 'static,
    {
        let state = self
            .state
            .lock()
            .map_err(|_| DbError::new(DbErrorKind::Unavailable, "in-memory db lock poisoned by a panic"))?;
        f(&mut View { state, names: &self.names })
    }
}
