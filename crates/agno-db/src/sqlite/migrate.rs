//! Schema migrations of a SQLite database: the v2 -> v3 copy of blob runs into the runs table,
//! the `user_id` columns, and the cleanup of the legacy `runs` column.

use crate::sql::SqlAdapter;
use sqlx::AssertSqlSafe;

use agno_core::{DbError, DbErrorKind, DbResult};

use super::schema::runs_ddl;
use super::{SqliteState, db_error};
use crate::migration::{MigrationOptions, MigrationStep, Progress, TableKind};
use crate::sql::migrate::{Table, unqualified_ddl};

impl SqliteState {
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

    /// Creates the runs table, then copies the legacy blob runs into it (`sql::migrate`).
    async fn copy_blob_runs(&self, options: &MigrationOptions, progress: Progress<'_>) -> DbResult<bool> {
        let t = self.tables().clone();
        self.exec_all(&runs_ddl(&t.runs, &t.sessions)).await?;
        crate::sql::migrate::copy_blob_runs(self, options, progress).await
    }
}

#[async_trait::async_trait]
impl crate::sql::migrate::SqlSchema for SqliteState {
    fn ddl(&self, table: Table) -> Vec<String> {
        let t = self.tables();
        unqualified_ddl!(table, t)
    }

    async fn create_missing(&self, name: &str, ddl: &[String]) -> DbResult<bool> {
        if self.table_exists(name).await? {
            return Ok(false);
        }
        self.exec_all(ddl).await?;
        Ok(true)
    }

    async fn ensure_versions_table(&self) -> DbResult<()> {
        self.exec_all(&super::schema::versions_ddl(&self.core.tables.versions)).await
    }

    async fn migrate_step(&self, step: MigrationStep<'_>) -> DbResult<bool> {
        let t = self.tables().clone();
        let changed = match (step.kind, step.version) {
            (TableKind::Memories, "2.3.0") => {
                let a = self.add_column_if_missing(&t.memories, "created_at", "BIGINT").await?;
                let b = self.add_column_if_missing(&t.memories, "feedback", "VARCHAR").await?;
                a || b
            }
            (TableKind::Sessions, "3.0.0") => {
                let copied = self.copy_blob_runs(step.options, step.progress).await?;
                self.refresh_legacy_runs().await?;
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
            (TableKind::Approvals, "2.5.6") => {
                let table = &t.approvals;
                let added = self.add_column_if_missing(table, "run_status", "VARCHAR").await?;
                let sql = format!("CREATE INDEX IF NOT EXISTS idx_{table}_run_status ON {table} (run_status)");
                sqlx::query(AssertSqlSafe(sql.as_str()))
                    .execute(self.pool())
                    .await
                    .map_err(|e| db_error("cannot index run_status", e))?;
                added
            }
            // Steps with no SQLite work for this table (2.5.0 primary key).
            _ => false,
        };
        Ok(changed)
    }
}
