//! Schema migrations of a MySQL database, as Python Agno's MySQL migrations do them: memories
//! columns (2.3.0), the sessions primary key (2.5.0), the v2 -> v3 copy of blob runs into the runs
//! table (3.0.0), the `user_id` columns, the metrics key swap, and the cleanup of the legacy
//! `runs` column.
//!
//! MySQL commits every DDL statement on its own, so each schema change checks first and is
//! safe to repeat; the runs copy is one transaction of plain inserts.

use crate::sql::SqlAdapter;
use agno_core::{DbError, DbErrorKind, DbResult, now_epoch_secs};
use sqlx::{AssertSqlSafe, Row};

use super::{MySqlState, db_error};
use crate::migration::{MigrationOptions, MigrationStep, Progress, TableKind};
use crate::sql::migrate::{Table, unqualified_ddl};

/// MySQL refuses longer identifiers (error 1059).
const MAX_IDENTIFIER_LENGTH: usize = 64;

impl MySqlState {
    /// Creates index `name` on `columns` unless an index of that name already covers them.
    async fn add_index_if_missing(&self, table: &str, name: &str, columns: &[&str], unique: bool) -> DbResult<bool> {
        let covers = |found: &[String]| {
            let mut found: Vec<&str> = found.iter().map(String::as_str).collect();
            let mut want = columns.to_vec();
            found.sort_unstable();
            want.sort_unstable();
            found == want
        };
        if covers(&self.index_columns(table, name).await?) {
            return Ok(false);
        }
        let cols = columns.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ");
        let sql = if unique {
            format!("ALTER TABLE `{table}` ADD CONSTRAINT `{name}` UNIQUE ({cols})")
        } else {
            format!("CREATE INDEX `{name}` ON `{table}` ({cols})")
        };
        match sqlx::raw_sql(AssertSqlSafe(sql.as_str())).execute(self.pool()).await {
            Ok(_) => Ok(true),
            Err(_) if covers(&self.index_columns(table, name).await?) => Ok(false),
            Err(e) => Err(db_error(&format!("cannot create index {name} on {table}"), e)),
        }
    }

    /// 2.3.0: memories get `created_at` (filled from `updated_at`) and `feedback`.
    async fn migrate_memories_2_3_0(&self, table: &str) -> DbResult<bool> {
        let mut changed = false;
        if !self.column_exists(table, "created_at").await? {
            self.exec(
                &format!("ALTER TABLE `{table}` ADD COLUMN `created_at` BIGINT, ADD INDEX `idx_{table}_created_at` (`created_at`)"),
                &format!("cannot add {table}.created_at"),
            )
            .await?;
            sqlx::query(AssertSqlSafe(format!("UPDATE `{table}` SET `created_at` = COALESCE(`updated_at`, ?)")))
                .bind(now_epoch_secs())
                .execute(self.pool())
                .await
                .map_err(|e| db_error(&format!("cannot fill {table}.created_at"), e))?;
            self.exec(
                &format!("ALTER TABLE `{table}` MODIFY COLUMN `created_at` BIGINT NOT NULL"),
                &format!("cannot make {table}.created_at required"),
            )
            .await?;
            changed = true;
        }
        changed |= self.add_column_if_missing(table, "feedback", "TEXT").await?;
        Ok(changed)
    }

    /// 2.5.0: `session_id` becomes the primary key; the old `{table}_uq_session_id` key goes.
    async fn migrate_sessions_2_5_0(&self, table: &str) -> DbResult<bool> {
        let mut changed = false;
        let has_pk: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE() \
             AND TABLE_NAME = ? AND CONSTRAINT_TYPE = 'PRIMARY KEY'",
        )
        .bind(table)
        .fetch_one(self.pool())
        .await
        .map_err(|e| db_error(&format!("cannot read the keys of {table}"), e))?;
        if has_pk == 0 {
            let bad: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
                "SELECT (SELECT COUNT(*) FROM `{table}` WHERE session_id IS NULL) + \
                 (SELECT COUNT(*) FROM (SELECT session_id FROM `{table}` GROUP BY session_id HAVING COUNT(*) > 1) d)"
            )))
            .fetch_one(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot check the session ids of {table}"), e))?;
            if bad > 0 {
                return Err(DbError::new(
                    DbErrorKind::Conflict,
                    format!(
                        "cannot add a primary key to {table}: {bad} session ids are NULL or duplicated; fix them first"
                    ),
                ));
            }
            self.exec(
                &format!("ALTER TABLE `{table}` ADD PRIMARY KEY (`session_id`)"),
                &format!("cannot add the primary key of {table}"),
            )
            .await?;
            changed = true;
        }
        let uq = format!("{table}_uq_session_id");
        if !self.index_columns(table, &uq).await?.is_empty() {
            self.exec(&format!("ALTER TABLE `{table}` DROP INDEX `{uq}`"), &format!("cannot drop {uq}")).await?;
            changed = true;
        }
        Ok(changed)
    }

    /// 3.0.0 on evals, knowledge, schedules and schedule runs: a nullable `user_id` and its index.
    async fn add_user_id(&self, table: &str) -> DbResult<bool> {
        let added = self.add_column_if_missing(table, "user_id", "VARCHAR(128)").await?;
        let indexed = self.add_index_if_missing(table, &format!("idx_{table}_user_id"), &["user_id"], false).await?;
        Ok(added || indexed)
    }

    /// 3.0.0 on metrics: `user_id` (`''` = no owner) and the unique key
    /// `(user_id, date, aggregation_period)` in place of `(date, aggregation_period)`.
    async fn migrate_metrics_3_0_0(&self, table: &str) -> DbResult<bool> {
        let key = format!("{table}_uq_metrics_user_date_period");
        if key.len() > MAX_IDENTIFIER_LENGTH {
            tracing::warn!(
                table,
                "skipping the metrics migration: its unique key {key} would exceed mysql's 64 character limit; \
                 rename the table and migrate again"
            );
            return Ok(false);
        }
        let added = self.add_column_if_missing(table, "user_id", "VARCHAR(128) NOT NULL DEFAULT ''").await?;
        let mut changed = added;
        changed |= self.add_index_if_missing(table, &format!("idx_{table}_user_id"), &["user_id"], false).await?;
        // The new key goes on before the old one comes off: every ALTER commits on its own.
        let mut swapped =
            self.add_index_if_missing(table, &key, &["user_id", "date", "aggregation_period"], true).await?;
        let rows = sqlx::query(
            "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() \
             AND TABLE_NAME = ? AND NON_UNIQUE = 0",
        )
        .bind(table)
        .fetch_all(self.pool())
        .await
        .map_err(|e| db_error(&format!("cannot read the keys of {table}"), e))?;
        let mut keys: Vec<(String, Vec<String>)> = Vec::new();
        for row in &rows {
            let name: String = row.try_get(0).map_err(|e| db_error("cannot read an index name", e))?;
            let col: String = row.try_get(1).map_err(|e| db_error("cannot read an index column", e))?;
            match keys.iter_mut().find(|(n, _)| *n == name) {
                Some((_, cols)) => cols.push(col),
                None => keys.push((name, vec![col])),
            }
        }
        for (name, mut cols) in keys {
            cols.sort();
            // Found by columns, not name: a renamed table keeps its old key name.
            if cols == ["aggregation_period", "date"] {
                self.exec(&format!("DROP INDEX `{name}` ON `{table}`"), &format!("cannot drop {name}")).await?;
                swapped = true;
            }
        }
        if added || swapped {
            // The newest unfinished day, if past every completed one, is recalculated per user.
            let row = sqlx::query(AssertSqlSafe(format!(
                "SELECT CAST(MAX(CASE WHEN completed THEN date END) AS CHAR) AS done, CAST(MAX(date) AS CHAR) AS newest FROM `{table}`"
            )))
            .fetch_one(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot read the days of {table}"), e))?;
            let done: Option<String> = row.try_get("done").map_err(|e| db_error("cannot read a metrics day", e))?;
            let newest: Option<String> = row.try_get("newest").map_err(|e| db_error("cannot read a metrics day", e))?;
            if let Some(newest) = newest
                && done.as_ref().is_none_or(|d| *d < newest)
            {
                sqlx::query(AssertSqlSafe(format!(
                    "DELETE FROM `{table}` WHERE completed = false AND (user_id = '' OR user_id IS NULL) AND date = ?"
                )))
                .bind(newest)
                .execute(self.pool())
                .await
                .map_err(|e| db_error(&format!("cannot clear the unfinished day of {table}"), e))?;
            }
        }
        changed |= swapped;
        // Without a default, an old writer's insert fails instead of filing under "no owner".
        let default: Option<Option<String>> = sqlx::query_scalar(
            "SELECT COLUMN_DEFAULT FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() \
             AND TABLE_NAME = ? AND COLUMN_NAME = 'user_id'",
        )
        .bind(table)
        .fetch_optional(self.pool())
        .await
        .map_err(|e| db_error(&format!("cannot read the columns of {table}"), e))?;
        if default.flatten().is_some() {
            self.exec(
                &format!("ALTER TABLE `{table}` MODIFY COLUMN `user_id` VARCHAR(128) NOT NULL"),
                &format!("cannot drop the default of {table}.user_id"),
            )
            .await?;
            changed = true;
        }
        Ok(changed)
    }

    /// Creates the runs table (DDL commits on its own in MySQL: before the copy's transaction),
    /// then copies the legacy blob runs into it (`sql::migrate`).
    async fn copy_blob_runs(&self, options: &MigrationOptions, progress: Progress<'_>) -> DbResult<bool> {
        self.ensure_runs_table().await?;
        crate::sql::migrate::copy_blob_runs(self, options, progress).await
    }
}

#[async_trait::async_trait]
impl crate::sql::migrate::SqlSchema for MySqlState {
    /// One statement per table: MySQL declares the indexes inside `CREATE TABLE`.
    fn ddl(&self, table: Table) -> Vec<String> {
        let t = self.tables();
        vec![unqualified_ddl!(table, t)]
    }

    async fn create_missing(&self, name: &str, ddl: &[String]) -> DbResult<bool> {
        if self.table_exists(name).await? {
            return Ok(false);
        }
        for statement in ddl {
            self.exec(statement, &format!("cannot create table {name}")).await?;
        }
        Ok(true)
    }

    async fn ensure_versions_table(&self) -> DbResult<()> {
        let t = &self.core.tables.versions;
        self.exec(&super::schema::versions_ddl(t), &format!("cannot create table {t}")).await
    }

    async fn migrate_step(&self, step: MigrationStep<'_>) -> DbResult<bool> {
        let t = self.tables().clone();
        match (step.kind, step.version) {
            (TableKind::Memories, "2.3.0") => self.migrate_memories_2_3_0(&t.memories).await,
            (TableKind::Sessions, "2.5.0") => self.migrate_sessions_2_5_0(&t.sessions).await,
            (TableKind::Sessions, "3.0.0") => self.copy_blob_runs(step.options, step.progress).await,
            (TableKind::Evals, "3.0.0") => self.add_user_id(&t.evals).await,
            (TableKind::Knowledge, "3.0.0") => self.add_user_id(&t.knowledge).await,
            (TableKind::Schedules, "3.0.0") => self.add_user_id(&t.schedules).await,
            (TableKind::ScheduleRuns, "3.0.0") => self.add_user_id(&t.schedule_runs).await,
            (TableKind::Metrics, "3.0.0") => self.migrate_metrics_3_0_0(&t.metrics).await,
            (TableKind::Approvals, "2.5.6") => {
                let table = &t.approvals;
                let added = self.add_column_if_missing(table, "run_status", "VARCHAR(50)").await?;
                let name = format!("idx_{table}_run_status");
                Ok(self.add_index_if_missing(table, &name, &["run_status"], false).await? || added)
            }
            // Steps with no MySQL work for this table.
            _ => Ok(false),
        }
    }
}
