//! `InMemoryDb`: a process-local store, for tests, examples and the CLI's one-shot runs.
//! Nothing survives the process.

mod runs;
mod sessions;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use agno_core::{AgentSession, DbError, DbErrorKind, RunOutput};

#[derive(Debug, Clone)]
struct RunRow {
    session_id: String,
    user_id: Option<String>,
    run_index: i64,
    run: RunOutput,
}

#[derive(Debug, Default)]
struct Tables {
    sessions: HashMap<String, AgentSession>,
    runs: HashMap<String, RunRow>,
}

/// A storage backend kept in process memory. Cloning shares the same data.
#[derive(Debug, Clone, Default)]
pub struct InMemoryDb {
    tables: Arc<Mutex<Tables>>,
}

impl InMemoryDb {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> Result<MutexGuard<'_, Tables>, DbError> {
        self.tables.lock().map_err(|_| DbError::new(DbErrorKind::Unavailable, "in-memory db lock poisoned by a panic"))
    }
}

/// True when a row owned by `owner` is visible to a caller filtering on `user_id`.
fn visible(owner: Option<&str>, user_id: Option<&str>) -> bool {
    user_id.is_none_or(|u| owner == Some(u))
}
