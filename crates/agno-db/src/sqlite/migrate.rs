//! Schema migrations of a SQLite database: the v2 -> v3 copy of blob runs into the runs table,
//! the `user_id` columns, and the cleanup of the legacy `runs` column.

use sqlx::AssertSqlSafe;

use agno_core::{DbError, DbErrorKind, DbResult, now_epoch_secs};
use async_trait::async_trait;
use serde_json::Value;
use sqlx::Row;

use super::schema::runs_ddl;
use super::{SqliteDb, db_error};
use crate::codec::{json_column, run_type, to_json_text};
use crate::migration::{CleanupReport, Migrate, MigrationOptions, MigrationStep, Progress, TableKind};
use crate::sql::migrate::{BlobRun, blob_runs};

impl SqliteDb {
    async fn add_column_if_missing(&self, table: &str, column: &str, decl: &str) -> DbResult<bool> {
        let _turn = self.write_turn().await;
        if self.column_exists(table, column).await? {
            return Ok(false);
        }
        let sql = format!("ALTER TABLE {table} ADD COLUMN {column} {decl}");
        sqlx::query(AssertSqlSafe(sql.as_str()))
            .execute(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot add {table}.{column}"), e))?;
        Ok(true)
    }

    /// 3.0.0 on schedules, as Python Agno: the provenance columns (nullable), their lookup
    /// indexes, the owner composite index, and the partial unique indexes that keep names unique
    /// per owner. Duplicate names within one owner fail the step (unstamped) with the names to
    /// fix.
    async fn schedules_v3(&self, table: &str) -> DbResult<bool> {
        let mut changed = false;
        for column in crate::schedules::SCHEDULE_PROVENANCE_COLUMNS {
            changed |= self.add_column_if_missing(table, column, "TEXT").await?;
        }
        let mut ddl = vec![
            format!("CREATE INDEX IF NOT EXISTS idx_{table}_managed_by ON {table} (managed_by)"),
            format!("CREATE INDEX IF NOT EXISTS idx_{table}_target_id ON {table} (target_id)"),
            format!(
                "CREATE INDEX IF NOT EXISTS idx_{table}_user_id_enabled_next_run_at ON {table} (user_id, enabled, next_run_at)"
            ),
        ];
        ddl.extend(super::schedules::schedules_ddl(table).into_iter().filter(|d| d.starts_with("CREATE UNIQUE")));
        let _turn = self.write_turn().await;
        for sql in ddl {
            sqlx::query(AssertSqlSafe(sql.as_str())).execute(self.pool()).await.map_err(|e| match &e {
                sqlx::Error::Database(d) if d.is_unique_violation() => DbError::new(
                    DbErrorKind::Conflict,
                    format!(
                        "{table} has two schedules with the same name for one owner; rename or delete one, \
                         then migrate again (schedule names are unique per owner from 3.0.0)"
                    ),
                )
                .with_source(e),
                _ => db_error(&format!("cannot migrate {table} to 3.0.0"), e),
            })?;
        }
        Ok(changed)
    }

    /// Copies every legacy blob run into the runs table, in batches, in one transaction; runs
    /// already in the table are left as they are.
    async fn copy_blob_runs(&self, options: &MigrationOptions, progress: Progress<'_>) -> DbResult<bool> {
        let t = self.tables().clone();
        self.exec_all(&runs_ddl(&t.runs, &t.sessions)).await?;
        let _turn = self.write_turn().await;
        if !self.column_exists(&t.sessions, "runs").await? {
            return Ok(false);
        }
        let total: i64 =
            sqlx::query_scalar(AssertSqlSafe(format!("SELECT COUNT(*) FROM {} WHERE runs IS NOT NULL", t.sessions)))
                .fetch_one(self.pool())
                .await
                .map_err(|e| db_error("cannot count legacy sessions", e))?;
        let total = u64::try_from(total).unwrap_or(0);
        let mut tx =
            self.pool().begin_with("BEGIN IMMEDIATE").await.map_err(|e| db_error("cannot start migration", e))?;
        let insert = format!(
            "INSERT INTO {} (run_id, session_id, run_type, agent_id, team_id, workflow_id, user_id, parent_run_id, status, \
             run_index, run_data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (run_id) DO NOTHING",
            t.runs
        );
        let now = now_epoch_secs();
        let batch = i64::try_from(options.batch_size.max(1)).unwrap_or(50);
        let mut done = 0u64;
        let mut batches = 0usize;
        let mut last_id = String::new();
        loop {
            let sql = format!(
                "SELECT session_id, user_id, runs FROM {} WHERE runs IS NOT NULL AND session_id > ? ORDER BY session_id LIMIT ?",
                t.sessions
            );
            let rows = sqlx::query(AssertSqlSafe(sql.as_str()))
                .bind(&last_id)
                .bind(batch)
                .fetch_all(&mut *tx)
                .await
                .map_err(|e| db_error("cannot read legacy sessions", e))?;
            if rows.is_empty() {
                break;
            }
            if options.fail_after_batches.is_some_and(|n| batches >= n) {
                return Err(DbError::new(DbErrorKind::Other, "injected failure after copying some batches"));
            }
            for row in &rows {
                let session_id: String = row.try_get("session_id").map_err(|e| db_error("session_id", e))?;
                let user_id: Option<String> = row.try_get("user_id").map_err(|e| db_error("user_id", e))?;
                let blob = json_column(row.try_get("runs").map_err(|e| db_error("runs", e))?)?;
                for BlobRun { run_id, run_index, run } in blob_runs(blob) {
                    let field = |k: &str| run.get(k).and_then(Value::as_str).map(str::to_owned);
                    sqlx::query(AssertSqlSafe(insert.as_str()))
                        .bind(&run_id)
                        .bind(&session_id)
                        .bind(run_type(&run))
                        .bind(field("agent_id"))
                        .bind(field("team_id"))
                        .bind(field("workflow_id"))
                        .bind(&user_id)
                        .bind(field("parent_run_id"))
                        .bind(field("status"))
                        .bind(run_index)
                        .bind(to_json_text(&run)?)
                        .bind(run.get("created_at").and_then(Value::as_i64).unwrap_or(now))
                        .bind(now)
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| db_error(&format!("cannot copy run {run_id}"), e))?;
                }
                last_id = session_id;
            }
            done += rows.len() as u64;
            batches += 1;
            progress(done, total);
        }
        tx.commit().await.map_err(|e| db_error("cannot commit the runs copy", e))?;
        Ok(done > 0)
    }
}

#[async_trait]
impl Migrate for SqliteDb {
    fn job_store(self: std::sync::Arc<Self>) -> Option<std::sync::Arc<dyn agno_core::JobStore>> {
        Some(self)
    }

    async fn existing_tables(&self) -> DbResult<Vec<(TableKind, String)>> {
        crate::sql::existing_tables(self).await
    }

    async fn migrate_table(&self, step: MigrationStep<'_>) -> DbResult<bool> {
        let t = self.tables().clone();
        let changed = match (step.kind, step.version) {
            (TableKind::Memories, "2.3.0") => {
                let a = self.add_column_if_missing(&t.memories, "created_at", "BIGINT").await?;
                let b = self.add_column_if_missing(&t.memories, "feedback", "VARCHAR").await?;
                a || b
            }
            (TableKind::Sessions, "3.0.0") => {
                let copied = self.copy_blob_runs(step.options, step.progress).await?;
                self.refresh_legacy_flag().await?;
                copied
            }
            (TableKind::Evals | TableKind::Knowledge | TableKind::Schedules | TableKind::ScheduleRuns, "3.0.0") => {
                let table = match step.kind {
                    TableKind::Evals => &t.evals,
                    TableKind::Knowledge => &t.knowledge,
                    TableKind::Schedules => &t.schedules,
                    _ => &t.schedule_runs,
                };
                let added = self.add_column_if_missing(table, "user_id", "VARCHAR").await?;
                let sql = format!("CREATE INDEX IF NOT EXISTS idx_{table}_user_id ON {table} (user_id)");
                sqlx::query(AssertSqlSafe(sql.as_str()))
                    .execute(self.pool())
                    .await
                    .map_err(|e| db_error("cannot index user_id", e))?;
                if step.kind == TableKind::Schedules { self.schedules_v3(table).await? || added } else { added }
            }
            (TableKind::Metrics, "3.0.0") => {
                let added = self.add_column_if_missing(&t.metrics, "user_id", "VARCHAR NOT NULL DEFAULT ''").await?;
                let sql = format!(
                    "CREATE UNIQUE INDEX IF NOT EXISTS {m}_uq_metrics_user_date_period ON {m} (user_id, date, aggregation_period)",
                    m = t.metrics
                );
                sqlx::query(AssertSqlSafe(sql.as_str()))
                    .execute(self.pool())
                    .await
                    .map_err(|e| db_error("cannot add metrics key", e))?;
                added
            }
            // Steps with no SQLite work for this table (2.5.0 primary key, 2.5.6 approvals).
            _ => false,
        };
        Ok(changed)
    }

    async fn create_tables(&self) -> DbResult<()> {
        SqliteDb::create_tables(self).await
    }

    async fn legacy_runs_pending(&self) -> DbResult<u64> {
        crate::sql::migrate::missing_blob_runs(self).await
    }

    async fn cleanup_legacy_runs(&self, force: bool) -> DbResult<CleanupReport> {
        crate::sql::migrate::cleanup_legacy_runs(self, force).await
    }
}
