//! Schema migrations of the document stores: file creation and stamping, the v3.0.0 copy of legacy
//! `runs` fields into `agno_runs.json` (one atomic file write, so a failing copy changes
//! nothing), and the cleanup of the legacy field.

use std::collections::HashSet;
use std::sync::Arc;

use agno_core::{DbError, DbErrorKind, DbResult, now_epoch_secs};
use async_trait::async_trait;
use serde_json::Value;

use super::schema::{blob_run_ids, legacy_blob, legacy_rows, stamp, stamped_version};
use super::{DocBackend, DocDb, Docs};
use crate::migration::{CleanupReport, LATEST_VERSION, Migrate, MigrationOptions, MigrationStep, TableKind};

/// Run ids present in the runs file.
fn stored_run_ids(files: &dyn Docs) -> DbResult<HashSet<String>> {
    Ok(files
        .read(&files.tables().runs)?
        .iter()
        .filter_map(|r| r.get("run_id").and_then(Value::as_str).map(str::to_owned))
        .collect())
}

/// Legacy runs, over every session, that are not in the runs file.
fn missing_blob_runs(files: &dyn Docs) -> DbResult<u64> {
    let docs = files.read(&files.tables().sessions)?;
    if !docs.iter().filter_map(Value::as_object).any(|d| legacy_blob(d).is_some()) {
        return Ok(0);
    }
    let have = stored_run_ids(files)?;
    let missing = docs
        .iter()
        .filter_map(Value::as_object)
        .flat_map(|d| blob_run_ids(legacy_blob(d)))
        .filter(|id| !have.contains(id))
        .count();
    Ok(missing as u64)
}

/// Copies every legacy run not yet in the runs file; the file is written once at the end.
fn copy_blob_runs(files: &mut dyn Docs, options: MigrationOptions, report: &dyn Fn(u64, u64)) -> DbResult<bool> {
    let t = files.tables().clone();
    let docs = files.read(&t.sessions)?;
    let legacy: Vec<_> = docs.iter().filter_map(Value::as_object).filter(|d| legacy_blob(d).is_some()).collect();
    if legacy.is_empty() {
        return Ok(false);
    }
    let total = legacy.len() as u64;
    let mut rows = files.read(&t.runs)?.into_owned();
    let mut have = stored_run_ids(files)?;
    let now = now_epoch_secs();
    let mut done = 0u64;
    let mut added = 0usize;
    for (batches, chunk) in legacy.chunks(options.batch_size.max(1)).enumerate() {
        if options.fail_after_batches.is_some_and(|n| batches >= n) {
            return Err(DbError::new(DbErrorKind::Other, "injected failure after copying some batches"));
        }
        for doc in chunk {
            for row in legacy_rows(doc, now) {
                let Some(run_id) = row.get("run_id").and_then(Value::as_str) else { continue };
                // The runs file wins: a rerun never overwrites a newer write.
                if have.insert(run_id.to_owned()) {
                    rows.push(Value::Object(row));
                    added += 1;
                }
            }
        }
        done += chunk.len() as u64;
        report(done, total);
    }
    if added > 0 {
        files.write(&t.runs, rows)?;
    }
    Ok(true)
}

impl<B: DocBackend> DocDb<B> {
    /// Creates the missing table files (sessions, runs, metrics, schedules, schedule runs) holding
    /// `[]` and stamps them at the latest schema; an unstamped runs, schedules or schedule runs
    /// file (only ever written by v3) is stamped too. An existing sessions or metrics file is left
    /// alone: use the migrations for it.
    ///
    /// # Errors
    /// A storage error.
    pub async fn create_tables(&self) -> DbResult<()> {
        self.write(|files| {
            let t = files.tables().clone();
            if files.create_if_missing(&t.sessions)? {
                stamp(files, &t.sessions, LATEST_VERSION)?;
            }
            let v3_only = |files: &mut dyn Docs, table: &str| -> DbResult<()> {
                files.create_if_missing(table)?;
                if stamped_version(&files.read(&t.versions)?, table).is_none() {
                    stamp(files, table, LATEST_VERSION)?;
                }
                Ok(())
            };
            v3_only(files, &t.runs)?;
            if files.create_if_missing(&t.metrics)? {
                stamp(files, &t.metrics, LATEST_VERSION)?;
            }
            v3_only(files, &t.schedules)?;
            v3_only(files, &t.schedule_runs)
        })
        .await
    }
}

#[async_trait]
impl<B: DocBackend> Migrate for DocDb<B> {
    fn job_store(self: Arc<Self>) -> Option<Arc<dyn agno_core::JobStore>> {
        B::JOBS.then_some(self as Arc<dyn agno_core::JobStore>)
    }

    async fn existing_tables(&self) -> DbResult<Vec<(TableKind, String)>> {
        self.read(|files| {
            let t = files.tables().clone();
            Ok([
                (TableKind::Sessions, t.sessions),
                (TableKind::Memories, t.memories),
                (TableKind::Metrics, t.metrics),
                (TableKind::Evals, t.evals),
                (TableKind::Knowledge, t.knowledge),
                (TableKind::Schedules, t.schedules),
                (TableKind::ScheduleRuns, t.schedule_runs),
            ]
            .into_iter()
            .filter(|(_, name)| files.exists(name))
            .collect())
        })
        .await
    }

    async fn migrate_table(&self, step: MigrationStep<'_>) -> DbResult<bool> {
        if (step.kind, step.version) != (TableKind::Sessions, "3.0.0") {
            // The other steps change SQL schemas only; documents need nothing.
            return Ok(false);
        }
        let (options, progress) = (*step.options, step.progress);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(u64, u64)>();
        let copy = self.write(move |files| {
            copy_blob_runs(files, options, &|done, total| {
                let _ = tx.send((done, total));
            })
        });
        let report = async {
            while let Some((done, total)) = rx.recv().await {
                progress(done, total);
            }
        };
        let (copied, ()) = tokio::join!(copy, report);
        copied
    }

    async fn create_tables(&self) -> DbResult<()> {
        DocDb::<B>::create_tables(self).await
    }

    async fn legacy_runs_pending(&self) -> DbResult<u64> {
        self.read(|files| missing_blob_runs(files)).await
    }

    async fn cleanup_legacy_runs(&self, force: bool) -> DbResult<CleanupReport> {
        self.write(move |files| {
            let t = files.tables().clone();
            let mut docs = files.read(&t.sessions)?.into_owned();
            if !docs.iter().filter_map(Value::as_object).any(|d| d.contains_key("runs")) {
                return Ok(CleanupReport { removed: false, missing_runs: 0 });
            }
            let missing = missing_blob_runs(files)?;
            if missing > 0 && !force {
                return Err(DbError::new(
                    DbErrorKind::Conflict,
                    format!(
                        "{missing} legacy runs are not in {}: run `agno db migrate` first, or force the cleanup to drop them",
                        t.runs
                    ),
                ));
            }
            for doc in docs.iter_mut().filter_map(Value::as_object_mut) {
                doc.shift_remove("runs");
            }
            files.write(&t.sessions, docs)?;
            Ok(CleanupReport { removed: true, missing_runs: missing })
        })
        .await
    }
}
