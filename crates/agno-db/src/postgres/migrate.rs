//! Schema migrations of a PostgreSQL database, as Python Agno's `MigrationManager` applies them:
//! 2.3.0 (memory columns, JSON -> JSONB), 2.5.0 (session primary key), 3.0.0 (the copy of
//! legacy blob runs into the runs table, `user_id` columns, the per-user metrics key, the
//! per-owner schedule name keys), and the cleanup of the legacy `runs` column.

use crate::sql::SqlAdapter;
use std::collections::BTreeMap;

use agno_core::{DbError, DbErrorKind, DbResult, now_epoch_secs};
use sqlx::postgres::Postgres;
use sqlx::{AssertSqlSafe, Row, Transaction};

use super::schedules::name_backstop_ddl;
use super::schema::{events_ddl, index_ddl, jobs_ddl, runs_ddl, sessions_ddl, versions_ddl};
use super::{PostgresState, db_error};
use crate::migration::{LATEST_VERSION, MigrationOptions, MigrationStep, Progress, TableKind};
use crate::sql::migrate::Table;

impl PostgresState {
    async fn exec(&self, what: &str, sql: String) -> DbResult<()> {
        sqlx::query(AssertSqlSafe(sql)).execute(self.pool()).await.map_err(|e| db_error(what, e))?;
        Ok(())
    }

    async fn index_exists(&self, name: &str) -> DbResult<bool> {
        let found: Option<i32> =
            sqlx::query_scalar("SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = $2")
                .bind(self.schema.as_str())
                .bind(name)
                .fetch_optional(self.pool())
                .await
                .map_err(|e| db_error(&format!("cannot look up index {name}"), e))?;
        Ok(found.is_some())
    }

    /// 2.3.0: JSON columns become JSONB.
    async fn json_to_jsonb(&self, table: &str, columns: &[&str]) -> DbResult<bool> {
        let mut changed = false;
        for column in columns {
            let data_type: Option<String> = sqlx::query_scalar(
                "SELECT data_type::text FROM information_schema.columns \
                 WHERE table_schema = $1 AND table_name = $2 AND column_name = $3",
            )
            .bind(self.schema.as_str())
            .bind(table)
            .bind(column)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot read the type of {table}.{column}"), e))?;
            if data_type.as_deref() == Some("json") {
                let sql = format!(
                    "ALTER TABLE {} ALTER COLUMN {column} TYPE JSONB USING {column}::jsonb",
                    self.qualified(table)
                );
                self.exec(&format!("cannot convert {table}.{column} to jsonb"), sql).await?;
                changed = true;
            }
        }
        Ok(changed)
    }

    /// 2.3.0 on memories: `created_at` (filled from `updated_at`), `feedback`.
    async fn memories_2_3_0(&self, table: &str) -> DbResult<bool> {
        let q = self.qualified(table);
        let mut changed = false;
        if !self.column_exists(table, "created_at").await? {
            let mut tx = self.pool().begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
            let fail = |e| db_error(&format!("cannot add {table}.created_at"), e);
            let add = format!("ALTER TABLE {q} ADD COLUMN created_at BIGINT");
            sqlx::query(AssertSqlSafe(add)).execute(&mut *tx).await.map_err(fail)?;
            let fill = format!("UPDATE {q} SET created_at = COALESCE(updated_at, $1)");
            sqlx::query(AssertSqlSafe(fill)).bind(now_epoch_secs()).execute(&mut *tx).await.map_err(fail)?;
            for sql in
                [format!("ALTER TABLE {q} ALTER COLUMN created_at SET NOT NULL"), index_ddl(&q, table, &["created_at"])]
            {
                sqlx::query(AssertSqlSafe(sql)).execute(&mut *tx).await.map_err(fail)?;
            }
            tx.commit().await.map_err(|e| db_error(&format!("cannot add {table}.created_at"), e))?;
            changed = true;
        }
        changed |= self.add_column_if_missing(table, "feedback", "TEXT").await?;
        changed |= self.json_to_jsonb(table, &["memory", "topics"]).await?;
        Ok(changed)
    }

    /// 2.5.0 on sessions: `session_id` becomes the primary key; the old unique key goes.
    async fn sessions_2_5_0(&self, table: &str) -> DbResult<bool> {
        let constraint = |kind: &'static str, name: Option<String>| async move {
            let found: Option<i32> = sqlx::query_scalar(
                "SELECT 1 FROM information_schema.table_constraints WHERE table_schema = $1 AND table_name = $2 \
                 AND constraint_type = $3 AND ($4::text IS NULL OR constraint_name = $4)",
            )
            .bind(self.schema.as_str())
            .bind(table)
            .bind(kind)
            .bind(name)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot read the constraints of {table}"), e))?;
            DbResult::Ok(found.is_some())
        };
        let q = self.qualified(table);
        let mut changed = false;
        if !constraint("PRIMARY KEY", None).await? {
            self.exec(
                &format!("cannot add the primary key of {table}"),
                format!("ALTER TABLE {q} ADD PRIMARY KEY (session_id)"),
            )
            .await?;
            changed = true;
        }
        let uq = format!("{table}_uq_session_id");
        if constraint("UNIQUE", Some(uq.clone())).await? {
            self.exec(&format!("cannot drop {uq}"), format!("ALTER TABLE {q} DROP CONSTRAINT \"{uq}\"")).await?;
            changed = true;
        }
        Ok(changed)
    }

    /// Creates the runs table (stamped at creation, as Python Agno's table factory does), then
    /// copies the legacy blob runs into it (`sql::migrate`).
    async fn copy_blob_runs(&self, options: &MigrationOptions, progress: Progress<'_>) -> DbResult<bool> {
        let t = self.tables().clone();
        let runs_q = self.qualified(&t.runs);
        if self.create_table_if_missing(&t.runs, &runs_ddl(&runs_q, &t.runs, &self.qualified(&t.sessions))).await? {
            crate::sql::versions::stamp_version(self, &t.runs, LATEST_VERSION).await?;
        }
        crate::sql::migrate::copy_blob_runs(self, options, progress).await
    }

    /// 3.0.0 on evals, knowledge, schedules and schedule runs: a `user_id` column and index
    /// (and the composite indexes and schedule columns Python Agno adds with it).
    async fn user_id_3_0_0(&self, kind: TableKind, table: &str) -> DbResult<bool> {
        let q = self.qualified(table);
        let mut changed = self.add_column_if_missing(table, "user_id", "VARCHAR").await?;
        let mut indexes: Vec<Vec<&str>> = vec![vec!["user_id"]];
        match kind {
            TableKind::Knowledge => indexes.push(vec!["user_id", "linked_to"]),
            TableKind::Schedules => {
                indexes.push(vec!["user_id", "enabled", "next_run_at"]);
                for column in crate::schedules::SCHEDULE_PROVENANCE_COLUMNS {
                    changed |= self.add_column_if_missing(table, column, "VARCHAR").await?;
                }
                indexes.push(vec!["managed_by"]);
                indexes.push(vec!["target_id"]);
            }
            _ => {}
        }
        for columns in indexes {
            let name = format!("idx_{table}_{}", columns.join("_"));
            let mut present = true;
            for c in &columns {
                present &= self.column_exists(table, c).await?;
            }
            if present && !self.index_exists(&name).await? {
                self.exec(&format!("cannot create index {name}"), index_ddl(&q, table, &columns)).await?;
                changed = true;
            }
        }
        if kind == TableKind::Schedules {
            changed |= self.schedule_name_backstop(table).await?;
        }
        Ok(changed)
    }

    /// 3.0.0 on schedules, as Python Agno: the partial unique indexes keeping names unique per
    /// owner (v2 had no such key). Duplicate names within one owner fail the step, unstamped,
    /// until they are resolved.
    async fn schedule_name_backstop(&self, table: &str) -> DbResult<bool> {
        let mut changed = false;
        for (name, ddl) in name_backstop_ddl(&self.qualified(table), table) {
            if self.index_exists(&name).await? {
                continue;
            }
            match sqlx::query(AssertSqlSafe(ddl)).execute(self.pool()).await {
                Ok(_) => changed = true,
                Err(sqlx::Error::Database(d)) if d.is_unique_violation() => {
                    return Err(DbError::new(
                        DbErrorKind::Conflict,
                        format!(
                            "cannot create unique index {name} on {table}: duplicate schedule names exist within one \
                             owner; rename or delete the duplicates, then run the migration again"
                        ),
                    )
                    .with_source(sqlx::Error::Database(d)));
                }
                Err(e) => return Err(db_error(&format!("cannot create index {name}"), e)),
            }
        }
        Ok(changed)
    }

    /// 3.0.0 on metrics: `user_id` (empty for rows before it), the per-user unique key in place
    /// of the `(date, aggregation_period)` one, all in one transaction.
    async fn metrics_3_0_0(&self, table: &str) -> DbResult<bool> {
        let q = self.qualified(table);
        let key = format!("{table}_uq_metrics_user_date_period");
        let fail = |what: &str| format!("cannot migrate {table}: {what}");
        let mut tx = self.pool().begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
        let mut changed = false;
        let added = !self.column_exists(table, "user_id").await?;
        if added {
            let sql = format!("ALTER TABLE {q} ADD COLUMN IF NOT EXISTS user_id VARCHAR NOT NULL DEFAULT ''");
            sqlx::query(AssertSqlSafe(sql)).execute(&mut *tx).await.map_err(|e| db_error(&fail("add user_id"), e))?;
            changed = true;
        }
        let unique = unique_indexes(&mut tx, self.schema.as_str(), table).await?;
        let has_key = unique.values().any(|cols| sorted(cols) == ["aggregation_period", "date", "user_id"]);
        if !has_key {
            let sql = format!("ALTER TABLE {q} ADD CONSTRAINT \"{key}\" UNIQUE (user_id, date, aggregation_period)");
            sqlx::query(AssertSqlSafe(sql)).execute(&mut *tx).await.map_err(|e| db_error(&fail("add the key"), e))?;
            changed = true;
        }
        let mut swapped = !has_key;
        for (name, cols) in &unique {
            if sorted(cols) == ["aggregation_period", "date"] {
                for sql in [
                    format!("ALTER TABLE {q} DROP CONSTRAINT IF EXISTS \"{name}\""),
                    format!("DROP INDEX IF EXISTS \"{}\".\"{name}\"", self.schema.as_str()),
                ] {
                    sqlx::query(AssertSqlSafe(sql))
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| db_error(&fail(&format!("drop the legacy key {name}")), e))?;
                }
                changed = true;
                swapped = true;
            }
        }
        if added || swapped {
            // As Python Agno: the newest unfinished day, stamped unowned, would never be
            // recalculated per user; drop it so the recalculation rebuilds it.
            let sql = format!(
                "DELETE FROM {q} WHERE completed = false AND (user_id = '' OR user_id IS NULL) \
                 AND date = (SELECT MAX(date) FROM {q}) \
                 AND (SELECT MAX(date) FROM {q}) > COALESCE((SELECT MAX(date) FROM {q} WHERE completed = true), '-infinity'::date)"
            );
            sqlx::query(AssertSqlSafe(sql))
                .execute(&mut *tx)
                .await
                .map_err(|e| db_error(&fail("clear the unfinished day"), e))?;
        }
        // The default only helps the ALTER on a populated table; Python Agno's fresh table has
        // none, so an insert without an owner fails instead of landing in the unowned bucket.
        let default: Option<Option<String>> = sqlx::query_scalar(
            "SELECT column_default::text FROM information_schema.columns \
             WHERE table_schema = $1 AND table_name = $2 AND column_name = 'user_id'",
        )
        .bind(self.schema.as_str())
        .bind(table)
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| db_error(&fail("read the user_id default"), e))?;
        if default.flatten().is_some() {
            let sql = format!("ALTER TABLE {q} ALTER COLUMN user_id DROP DEFAULT");
            sqlx::query(AssertSqlSafe(sql))
                .execute(&mut *tx)
                .await
                .map_err(|e| db_error(&fail("drop the user_id default"), e))?;
            changed = true;
        }
        let sql = index_ddl(&q, table, &["user_id"]);
        sqlx::query(AssertSqlSafe(sql)).execute(&mut *tx).await.map_err(|e| db_error(&fail("index user_id"), e))?;
        tx.commit().await.map_err(|e| db_error(&fail("commit"), e))?;
        Ok(changed)
    }
}

fn sorted(cols: &[String]) -> Vec<&str> {
    let mut v: Vec<&str> = cols.iter().map(String::as_str).collect();
    v.sort_unstable();
    v
}

/// Every unique index of a table with its columns.
async fn unique_indexes(
    tx: &mut Transaction<'static, Postgres>,
    schema: &str,
    table: &str,
) -> DbResult<BTreeMap<String, Vec<String>>> {
    let rows = sqlx::query(
        "SELECT i.relname::text AS index_name, a.attname::text AS column_name FROM pg_class t \
         JOIN pg_namespace n ON n.oid = t.relnamespace JOIN pg_index ix ON ix.indrelid = t.oid \
         JOIN pg_class i ON i.oid = ix.indexrelid \
         JOIN unnest(ix.indkey) WITH ORDINALITY AS k(attnum, ord) ON true \
         JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum \
         WHERE n.nspname = $1 AND t.relname = $2 AND ix.indisunique ORDER BY i.relname, k.ord",
    )
    .bind(schema)
    .bind(table)
    .fetch_all(&mut **tx)
    .await
    .map_err(|e| db_error(&format!("cannot read the unique keys of {table}"), e))?;
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for row in rows {
        let name: String = row.try_get("index_name").map_err(|e| db_error("cannot read an index name", e))?;
        let column: String = row.try_get("column_name").map_err(|e| db_error("cannot read an index column", e))?;
        out.entry(name).or_default().push(column);
    }
    Ok(out)
}

#[async_trait::async_trait]
impl crate::sql::migrate::SqlSchema for PostgresState {
    /// Each table schema-qualified; a foreign key names its parent qualified too.
    fn ddl(&self, table: Table) -> Vec<String> {
        let t = self.tables();
        let q = |name: &str| self.qualified(name);
        let name = table.name(t);
        match table {
            Table::Sessions => sessions_ddl(&q(name), name),
            Table::Runs => runs_ddl(&q(name), name, &q(&t.sessions)),
            Table::Memories => super::memories::memories_ddl(&q(name), name),
            Table::Evals => super::evals::evals_ddl(&q(name), name),
            Table::Knowledge => super::knowledge::knowledge_ddl(&q(name), name),
            Table::Metrics => super::metrics::metrics_ddl(&q(name), name),
            Table::Schedules => super::schedules::schedules_ddl(&q(name), name),
            Table::ScheduleRuns => super::schedules::schedule_runs_ddl(&q(name), name, &q(&t.schedules)),
            Table::Jobs => jobs_ddl(&q(name), name),
            Table::Events => events_ddl(&q(name)),
            Table::Traces => super::traces::traces_ddl(&q(name), name),
            Table::Spans => super::traces::spans_ddl(&q(name), name, &q(&t.traces)),
            Table::Approvals => super::approvals::approvals_ddl(&q(name), name),
            Table::Compactions => super::compactions::compactions_ddl(&q(name), name),
            Table::Components => super::components::components_ddl(&q(name), name),
            Table::ComponentConfigs => super::components::component_configs_ddl(&q(name), name, &q(&t.components)),
            Table::ComponentLinks => {
                super::components::component_links_ddl(&q(name), name, &q(&t.components), &q(&t.component_configs))
            }
            Table::ServiceAccounts => super::service_accounts::service_accounts_ddl(&q(name), name),
        }
    }

    async fn create_missing(&self, name: &str, ddl: &[String]) -> DbResult<bool> {
        self.create_table_if_missing(name, ddl).await
    }

    async fn ensure_versions_table(&self) -> DbResult<()> {
        let t = &self.tables().versions;
        self.create_table_if_missing(t, &versions_ddl(&self.qualified(t), t)).await.map(|_| ())
    }

    async fn migrate_step(&self, step: MigrationStep<'_>) -> DbResult<bool> {
        let t = self.tables().clone();
        let table = match step.kind {
            TableKind::Sessions => &t.sessions,
            TableKind::Memories => &t.memories,
            TableKind::Metrics => &t.metrics,
            TableKind::Evals => &t.evals,
            TableKind::Knowledge => &t.knowledge,
            TableKind::Schedules => &t.schedules,
            TableKind::ScheduleRuns => &t.schedule_runs,
            TableKind::Approvals => &t.approvals,
        };
        if !self.table_exists(table).await? {
            return Ok(false);
        }
        match (step.kind, step.version) {
            (TableKind::Memories, "2.3.0") => self.memories_2_3_0(table).await,
            (TableKind::Sessions, "2.3.0") => {
                let cols = ["session_data", "agent_data", "team_data", "workflow_data", "metadata", "runs", "summary"];
                self.json_to_jsonb(table, &cols).await
            }
            (TableKind::Evals, "2.3.0") => self.json_to_jsonb(table, &["eval_data", "eval_input"]).await,
            (TableKind::Metrics, "2.3.0") => self.json_to_jsonb(table, &["token_metrics", "model_metrics"]).await,
            (TableKind::Knowledge, "2.3.0") => self.json_to_jsonb(table, &["metadata"]).await,
            (TableKind::Sessions, "2.5.0") => self.sessions_2_5_0(table).await,
            (TableKind::Sessions, "3.0.0") => {
                let copied = self.copy_blob_runs(step.options, step.progress).await;
                self.refresh_legacy_runs().await?;
                copied
            }
            (TableKind::Evals | TableKind::Knowledge | TableKind::Schedules | TableKind::ScheduleRuns, "3.0.0") => {
                self.user_id_3_0_0(step.kind, table).await
            }
            (TableKind::Metrics, "3.0.0") => self.metrics_3_0_0(table).await,
            (TableKind::Approvals, "2.5.6") => {
                let mut changed = self.add_column_if_missing(table, "run_status", "VARCHAR").await?;
                let name = format!("idx_{table}_run_status");
                if !self.index_exists(&name).await? {
                    let ddl = index_ddl(&self.qualified(table), table, &["run_status"]);
                    self.exec(&format!("cannot create index {name}"), ddl).await?;
                    changed = true;
                }
                Ok(changed)
            }
            // Steps with no work for this table.
            _ => Ok(false),
        }
    }
}
