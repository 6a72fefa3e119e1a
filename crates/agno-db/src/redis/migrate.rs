//! Schema migrations of a `RedisDb`: the v3.0.0 copy of legacy `runs` fields of session
//! documents into run keys (the run keys win, so reruns are safe), and the cleanup of the legacy
//! field. Redis has no tables: a "table" exists when it is stamped or holds a key.

use agno_core::{DbError, DbErrorKind, DbResult, SchemaStore, now_epoch_secs};
use async_trait::async_trait;
use serde_json::Value;

use super::runs::run_index_values;
use super::schema::INSERT_RUN_IF_ABSENT;
use super::{RedisDb, glob_escape, parse_doc, redis_error};
use crate::doc::schema::{blob_run_ids, legacy_blob, legacy_rows, str_field};
use crate::migration::{CleanupReport, Migrate, MigrationOptions, MigrationStep, Progress, TableKind};

impl RedisDb {
    /// True when some key `{prefix}:{table_type}:*` other than an index exists.
    pub(crate) async fn has_keys(&self, table_type: &str) -> DbResult<bool> {
        let pattern = format!("{}:{table_type}:*", glob_escape(&self.backend.prefix));
        let index = format!("{}:{table_type}:index:", self.backend.prefix);
        let mut conn = self.conn();
        let mut cursor: u64 = 0;
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut conn)
                .await
                .map_err(|e| redis_error(&format!("cannot scan keys of {}", self.backend.url), e))?;
            if batch.iter().any(|k| !k.starts_with(&index)) {
                return Ok(true);
            }
            if next == 0 {
                return Ok(false);
            }
            cursor = next;
        }
    }

    /// Keys of the session documents that hold a legacy `runs` field.
    async fn legacy_session_keys(&self) -> DbResult<Vec<String>> {
        let keys = self.doc_keys("sessions").await?;
        let docs = self.mget(&keys).await?;
        Ok(keys
            .into_iter()
            .zip(docs)
            .filter(|(_, text)| text.as_deref().and_then(parse_doc).is_some_and(|d| legacy_blob(&d).is_some()))
            .map(|(k, _)| k)
            .collect())
    }

    /// Copies every legacy run without a run key, in batches of sessions.
    async fn copy_blob_runs(&self, options: &MigrationOptions, progress: Progress<'_>) -> DbResult<bool> {
        let legacy = self.legacy_session_keys().await?;
        let total = legacy.len() as u64;
        let now = now_epoch_secs();
        let mut done = 0u64;
        for (batches, chunk) in legacy.chunks(options.batch_size.max(1)).enumerate() {
            if options.fail_after_batches.is_some_and(|n| batches >= n) {
                return Err(DbError::new(DbErrorKind::Other, "injected failure after copying some batches"));
            }
            for doc in self.mget(chunk).await?.into_iter().flatten().filter_map(|t| parse_doc(&t)) {
                let Some(session_id) = str_field(&doc, "session_id") else { continue };
                for row in legacy_rows(&doc, now) {
                    let Some(run_id) = str_field(&row, "run_id") else { continue };
                    let index = row.get("run_index").and_then(Value::as_i64).unwrap_or(0);
                    let _: i64 = INSERT_RUN_IF_ABSENT
                        .key(self.run_key(run_id))
                        .key(self.by_session_key(session_id))
                        .arg(&self.backend.prefix)
                        .arg(run_id)
                        .arg(index)
                        .arg(serde_json::to_string(&row).map_err(|e| {
                            DbError::new(DbErrorKind::Other, format!("cannot encode run {run_id}: {e}"))
                        })?)
                        .arg(run_index_values(&row))
                        .invoke_async(&mut self.conn())
                        .await
                        .map_err(|e| redis_error(&format!("cannot copy run {run_id}"), e))?;
                }
            }
            done += chunk.len() as u64;
            progress(done, total);
        }
        Ok(done > 0)
    }

    /// Legacy runs, over every session, without a run key.
    async fn missing_blob_runs(&self) -> DbResult<u64> {
        let keys = self.legacy_session_keys().await?;
        let mut missing = 0u64;
        for doc in self.mget(&keys).await?.into_iter().flatten().filter_map(|t| parse_doc(&t)) {
            let ids = blob_run_ids(legacy_blob(&doc));
            if ids.is_empty() {
                continue;
            }
            let keys: Vec<String> = ids.iter().map(|id| self.run_key(id)).collect();
            for chunk in keys.chunks(500) {
                let present: u64 = redis::cmd("EXISTS")
                    .arg(chunk)
                    .query_async(&mut self.conn())
                    .await
                    .map_err(|e| redis_error("cannot check run keys", e))?;
                missing += (chunk.len() as u64).saturating_sub(present);
            }
        }
        Ok(missing)
    }
}

#[async_trait]
impl Migrate for RedisDb {
    fn job_store(self: std::sync::Arc<Self>) -> Option<std::sync::Arc<dyn agno_core::JobStore>> {
        Some(self)
    }

    async fn existing_tables(&self) -> DbResult<Vec<(TableKind, String)>> {
        let t = self.tables().clone();
        let mut out = Vec::new();
        for (kind, table_type, name) in [
            (TableKind::Sessions, "sessions", t.sessions),
            (TableKind::Memories, "memories", t.memories),
            (TableKind::Metrics, "metrics", t.metrics),
            (TableKind::Evals, "evals", t.evals),
            (TableKind::Knowledge, "knowledge", t.knowledge),
            (TableKind::Schedules, "schedules", t.schedules),
            (TableKind::ScheduleRuns, "schedule_runs", t.schedule_runs),
        ] {
            if self.get_latest_schema_version(&name).await?.is_some() || self.has_keys(table_type).await? {
                out.push((kind, name));
            }
        }
        Ok(out)
    }

    async fn migrate_table(&self, step: MigrationStep<'_>) -> DbResult<bool> {
        match (step.kind, step.version) {
            (TableKind::Sessions, "3.0.0") => self.copy_blob_runs(step.options, step.progress).await,
            // The other steps change SQL schemas only; documents need nothing.
            _ => Ok(false),
        }
    }

    async fn create_tables(&self) -> DbResult<()> {
        RedisDb::create_tables(self).await
    }

    async fn legacy_runs_pending(&self) -> DbResult<u64> {
        self.missing_blob_runs().await
    }

    async fn cleanup_legacy_runs(&self, force: bool) -> DbResult<CleanupReport> {
        let keys = self.doc_keys("sessions").await?;
        let with_field: Vec<String> = self
            .mget(&keys)
            .await?
            .into_iter()
            .flatten()
            .filter_map(|t| parse_doc(&t))
            .filter(|d| d.contains_key("runs"))
            .filter_map(|d| str_field(&d, "session_id").map(str::to_owned))
            .collect();
        if with_field.is_empty() {
            return Ok(CleanupReport { removed: false, missing_runs: 0 });
        }
        let missing = self.missing_blob_runs().await?;
        if missing > 0 && !force {
            return Err(DbError::new(
                DbErrorKind::Conflict,
                format!(
                    "{missing} legacy runs are not in the run keys of {}: run `agno db migrate` first, or force the cleanup to drop them",
                    self.backend.url
                ),
            ));
        }
        for session_id in with_field {
            self.update_session_doc(&session_id, |doc| Ok(doc.shift_remove("runs").map(|_| ()))).await?;
        }
        Ok(CleanupReport { removed: true, missing_runs: missing })
    }
}
