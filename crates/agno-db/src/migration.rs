//! Schema versions and the `MigrationManager`: walks 2.0.0 -> 2.3.0 -> 2.5.0 -> 2.5.6 -> 3.0.0
//! for every table, as Python Agno's `MigrationManager(db).up()` does.
//!
//! An unstamped table counts as 2.0.0 (pre-v3) and is migrated. Each step is idempotent and
//! non-destructive (the legacy `runs` column is kept); a step that fails returns its error and
//! writes no stamp, so rerunning resumes where it stopped.

use std::fmt;

use agno_core::{Db, DbError, DbErrorKind, DbResult};
use async_trait::async_trait;

/// Every schema version, oldest first.
pub const VERSIONS: &[&str] = &["2.0.0", "2.3.0", "2.5.0", "2.5.6", "3.0.0"];

/// The version this code writes.
pub const LATEST_VERSION: &str = "3.0.0";

/// The version an existing but unstamped table is assumed to have.
pub const UNSTAMPED_VERSION: &str = "2.0.0";

/// The kinds of table the migrations know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TableKind {
    /// Sessions (and, from 3.0.0, the runs table next to them).
    Sessions,
    /// User memories.
    Memories,
    /// Daily metrics.
    Metrics,
    /// Eval runs.
    Evals,
    /// Knowledge contents.
    Knowledge,
    /// Schedules.
    Schedules,
    /// Schedule runs.
    ScheduleRuns,
    /// Approvals (2.5.6 added their `run_status`).
    Approvals,
}

impl fmt::Display for TableKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TableKind::Sessions => "sessions",
            TableKind::Memories => "memories",
            TableKind::Metrics => "metrics",
            TableKind::Evals => "evals",
            TableKind::Knowledge => "knowledge",
            TableKind::Schedules => "schedules",
            TableKind::ScheduleRuns => "schedule_runs",
            TableKind::Approvals => "approvals",
        })
    }
}

/// Knobs of a migration run.
#[derive(Debug, Clone, Copy)]
pub struct MigrationOptions {
    /// Sessions per batch when copying legacy runs (Agno uses 50).
    pub batch_size: usize,
    /// Fault injection for tests: fail after this many copied batches.
    pub fail_after_batches: Option<usize>,
}

impl Default for MigrationOptions {
    fn default() -> Self {
        Self { batch_size: 50, fail_after_batches: None }
    }
}

/// Progress of a long step (for progress bars).
pub type Progress<'a> = &'a (dyn Fn(u64, u64) + Send + Sync);

/// One migration step on one table: what [`Migrate::migrate_table`] applies.
#[derive(Clone, Copy)]
pub struct MigrationStep<'a> {
    /// The table.
    pub kind: TableKind,
    /// The version the step brings the table to.
    pub version: &'a str,
    /// Batch size and fault injection.
    pub options: &'a MigrationOptions,
    /// Reports the progress of a long step.
    pub progress: Progress<'a>,
}

impl std::fmt::Debug for MigrationStep<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MigrationStep")
            .field("kind", &self.kind)
            .field("version", &self.version)
            .field("options", self.options)
            .finish_non_exhaustive()
    }
}

/// What `cleanup_legacy_runs_*` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanupReport {
    /// The legacy column or field was removed.
    pub removed: bool,
    /// Legacy runs that were not in the runs table (lost if `removed` with force).
    pub missing_runs: u64,
}

/// Adapter side of the migrations. Implemented by every adapter, document and key-value ones
/// included.
#[async_trait]
pub trait Migrate: Db {
    /// The adapter's durable job queue, when it has one (the background-run queue of AgentOS).
    fn job_store(self: std::sync::Arc<Self>) -> Option<std::sync::Arc<dyn agno_core::JobStore>> {
        None
    }

    /// The migratable tables that exist, with their names.
    ///
    /// # Errors
    /// A storage error.
    async fn existing_tables(&self) -> DbResult<Vec<(TableKind, String)>>;

    /// Applies the step to `version` on one table; `Ok(true)` when something changed.
    ///
    /// # Errors
    /// A storage error; nothing of the step is kept.
    async fn migrate_table(&self, step: MigrationStep<'_>) -> DbResult<bool>;

    /// Creates missing tables at the latest version and stamps them.
    ///
    /// # Errors
    /// A storage error.
    async fn create_tables(&self) -> DbResult<()>;

    /// Legacy blob runs not yet copied to the runs table.
    ///
    /// # Errors
    /// A storage error.
    async fn legacy_runs_pending(&self) -> DbResult<u64>;

    /// Drops the legacy `runs` column (SQL) or field (document/KV) when every blob run exists in
    /// the runs table, or always with `force`.
    ///
    /// # Errors
    /// [`DbErrorKind::Conflict`] when runs would be lost and `force` is off.
    async fn cleanup_legacy_runs(&self, force: bool) -> DbResult<CleanupReport>;
}

/// Where one table stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableStatus {
    /// Kind.
    pub kind: TableKind,
    /// Table name.
    pub table: String,
    /// Stamped version; `None` when unstamped (treated as 2.0.0).
    pub version: Option<String>,
    /// Steps still to apply.
    pub pending: Vec<&'static str>,
}

/// The state of a database's schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaStatus {
    /// Per-table status.
    pub tables: Vec<TableStatus>,
    /// Legacy blob runs not yet in the runs table.
    pub legacy_runs_pending: u64,
}

impl SchemaStatus {
    /// True when nothing is pending.
    pub fn is_current(&self) -> bool {
        self.tables.iter().all(|t| t.pending.is_empty())
    }

    /// A human description of the pending steps, naming the command that applies them.
    pub fn pending_description(&self, db_url: &str) -> String {
        let steps: Vec<String> = self
            .tables
            .iter()
            .filter(|t| !t.pending.is_empty())
            .map(|t| {
                format!(
                    "{} ({}): {} -> {}",
                    t.table,
                    t.kind,
                    t.version.as_deref().unwrap_or("unstamped"),
                    t.pending.join(" -> ")
                )
            })
            .collect();
        format!("the database needs migrating: {}; run `agno db migrate --db {db_url}`", steps.join("; "))
    }
}

fn pending_after(version: &str, target: &str) -> Vec<&'static str> {
    let from = VERSIONS.iter().position(|v| *v == version);
    let to = VERSIONS.iter().position(|v| *v == target).unwrap_or(VERSIONS.len() - 1);
    match from {
        Some(i) => VERSIONS[i + 1..=to.max(i)].to_vec(),
        // An unknown (newer) version: nothing we know to apply.
        None => Vec::new(),
    }
}

/// Applies schema migrations to a database.
#[derive(Debug)]
pub struct MigrationManager<'a> {
    db: &'a dyn Migrate,
    options: MigrationOptions,
}

impl<'a> MigrationManager<'a> {
    /// A manager for `db`.
    pub fn new(db: &'a dyn Migrate) -> Self {
        Self { db, options: MigrationOptions::default() }
    }

    /// Sets options.
    pub fn with_options(mut self, options: MigrationOptions) -> Self {
        self.options = options;
        self
    }

    /// Where each table stands relative to `target` (default latest).
    ///
    /// # Errors
    /// A storage error.
    pub async fn status(&self, target: Option<&str>) -> DbResult<SchemaStatus> {
        let target = check_target(target)?;
        let mut tables = Vec::new();
        for (kind, table) in self.db.existing_tables().await? {
            let version = self.db.get_latest_schema_version(&table).await?;
            let pending = pending_after(version.as_deref().unwrap_or(UNSTAMPED_VERSION), target);
            tables.push(TableStatus { kind, table, version, pending });
        }
        Ok(SchemaStatus { tables, legacy_runs_pending: self.db.legacy_runs_pending().await? })
    }

    /// Migrates every table up to `target` (default latest), then creates missing tables.
    /// Returns the status before migrating (what was applied).
    ///
    /// # Errors
    /// The first failing step's error; earlier steps stay applied and stamped, the failing step
    /// writes no stamp.
    pub async fn up(&self, target: Option<&str>, progress: Progress<'_>) -> DbResult<SchemaStatus> {
        let before = self.status(target).await?;
        for table in &before.tables {
            for version in &table.pending {
                tracing::info!(table = %table.table, version, "applying migration");
                self.db
                    .migrate_table(MigrationStep { kind: table.kind, version, options: &self.options, progress })
                    .await
                    .map_err(|e| {
                        DbError::new(e.kind(), format!("migration of {} to {version} failed: {e}", table.table))
                            .with_source(e)
                    })?;
                self.db.upsert_schema_version(&table.table, version).await?;
            }
        }
        if target.is_none_or(|t| t == LATEST_VERSION) {
            self.db.create_tables().await?;
        }
        Ok(before)
    }
}

fn check_target(target: Option<&str>) -> DbResult<&'static str> {
    match target {
        None => Ok(LATEST_VERSION),
        Some(t) => VERSIONS.iter().find(|v| **v == t).copied().ok_or_else(|| {
            DbError::new(
                DbErrorKind::Other,
                format!("unknown schema version {t:?}; known versions: {}", VERSIONS.join(", ")),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_steps_follow_the_version_order() {
        assert_eq!(pending_after("2.0.0", "3.0.0"), vec!["2.3.0", "2.5.0", "2.5.6", "3.0.0"]);
        assert_eq!(pending_after("2.5.0", "3.0.0"), vec!["2.5.6", "3.0.0"]);
        assert!(pending_after("3.0.0", "3.0.0").is_empty());
        assert!(pending_after("2.5.0", "2.3.0").is_empty());
        assert!(pending_after("9.9.9", "3.0.0").is_empty());
    }
}
