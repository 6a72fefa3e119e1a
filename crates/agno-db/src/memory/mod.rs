//! `InMemoryDb`: a process-local store, for tests, examples and the CLI's one-shot runs.
//! Nothing survives the process.

mod evals;
mod jobs;
mod knowledge;
mod memories;
mod metrics;
mod runs;
mod schedules;
mod sessions;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use agno_core::{AgentSession, DbError, DbErrorKind, DbResult, RunOutput, SchemaStore};
use async_trait::async_trait;

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
    versions: HashMap<String, String>,
    memories: HashMap<String, agno_core::UserMemory>,
    evals: HashMap<String, agno_core::EvalRunRecord>,
    knowledge: HashMap<String, agno_core::KnowledgeRow>,
    /// Keyed by `(owner or "", date, aggregation_period)`.
    metrics: HashMap<(String, agno_core::NaiveDate, String), agno_core::MetricsBucket>,
    schedules: HashMap<String, agno_core::Schedule>,
    schedule_runs: HashMap<String, agno_core::ScheduleRun>,
    jobs: HashMap<String, agno_core::Job>,
    events: HashMap<String, Vec<agno_core::StoredEvent>>,
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

use crate::doc::visible;

#[async_trait]
impl SchemaStore for InMemoryDb {
    async fn get_latest_schema_version(&self, table_name: &str) -> DbResult<Option<String>> {
        Ok(self.lock()?.versions.get(table_name).cloned())
    }

    async fn upsert_schema_version(&self, table_name: &str, version: &str) -> DbResult<()> {
        self.lock()?.versions.insert(table_name.to_owned(), version.to_owned());
        Ok(())
    }
}

#[async_trait]
impl crate::migration::Migrate for InMemoryDb {
    fn job_store(self: Arc<Self>) -> Option<Arc<dyn agno_core::JobStore>> {
        Some(self)
    }

    async fn existing_tables(&self) -> DbResult<Vec<(crate::migration::TableKind, String)>> {
        // Created at the latest version with the store; stamped so status reads current.
        let mut tables = self.lock()?;
        tables
            .versions
            .entry("agno_sessions".to_owned())
            .or_insert_with(|| crate::migration::LATEST_VERSION.to_owned());
        Ok(vec![(crate::migration::TableKind::Sessions, "agno_sessions".to_owned())])
    }

    async fn migrate_table(
        &self,
        _kind: crate::migration::TableKind,
        _version: &str,
        _options: &crate::migration::MigrationOptions,
        _progress: crate::migration::Progress<'_>,
    ) -> DbResult<bool> {
        Ok(false)
    }

    async fn create_tables(&self) -> DbResult<()> {
        Ok(())
    }

    async fn legacy_runs_pending(&self) -> DbResult<u64> {
        Ok(0)
    }

    async fn cleanup_legacy_runs(&self, _force: bool) -> DbResult<crate::migration::CleanupReport> {
        Ok(crate::migration::CleanupReport { removed: false, missing_runs: 0 })
    }
}
