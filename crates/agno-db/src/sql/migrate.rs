//! What the SQL adapters' migrations share: the runs of Agno 2.x's legacy session blobs, how many
//! of them the runs table still lacks, and the cleanup that drops the legacy column. The steps
//! themselves (column types, JSON to JSONB, copying the blobs in batches) differ per database
//! and stay with each adapter.

use std::collections::HashSet;

use agno_core::{Cell, DbError, DbErrorKind, DbResult, JobStore, now_epoch_secs};
use sea_query::{Asterisk, Expr, ExprTrait, Func, OnConflict, Order, Query, SimpleExpr};
use sea_query_sqlx::{SqlxBinder, SqlxValues};
use serde_json::Value;

use super::runs::RUN_COLUMNS;
use super::{Columns, Dialect, SqlAdapter, SqlDb, SqlFamily, Tx, changed, rows};
use crate::codec::run_type;
use crate::migration::{CleanupReport, MigrationOptions, Progress};

/// The tables a SQL database creates together, in the order they are created: a table after
/// those its foreign keys point to (runs after sessions, schedule runs after schedules, spans after
/// traces, configs and links after components). Agent files and learnings are created on first
/// use instead ([`super::LazyTable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Sessions,
    Runs,
    Memories,
    Evals,
    Knowledge,
    Metrics,
    Schedules,
    ScheduleRuns,
    /// The background-run queue (its version row is also the lock of depth-bounded enqueues).
    Jobs,
    Events,
    Traces,
    Spans,
    Approvals,
    Compactions,
    /// The components (its version row is also the lock of MySQL's catalog writes).
    Components,
    ComponentConfigs,
    ComponentLinks,
    ServiceAccounts,
}

impl Table {
    /// Every table, in creation order.
    pub(crate) const ALL: [Self; 18] = [
        Self::Sessions,
        Self::Runs,
        Self::Memories,
        Self::Evals,
        Self::Knowledge,
        Self::Metrics,
        Self::Schedules,
        Self::ScheduleRuns,
        Self::Jobs,
        Self::Events,
        Self::Traces,
        Self::Spans,
        Self::Approvals,
        Self::Compactions,
        Self::Components,
        Self::ComponentConfigs,
        Self::ComponentLinks,
        Self::ServiceAccounts,
    ];

    /// The table's configured name.
    pub(crate) fn name(self, t: &crate::TableNames) -> &str {
        match self {
            Self::Sessions => &t.sessions,
            Self::Runs => &t.runs,
            Self::Memories => &t.memories,
            Self::Evals => &t.evals,
            Self::Knowledge => &t.knowledge,
            Self::Metrics => &t.metrics,
            Self::Schedules => &t.schedules,
            Self::ScheduleRuns => &t.schedule_runs,
            Self::Jobs => &t.jobs,
            Self::Events => &t.events,
            Self::Traces => &t.traces,
            Self::Spans => &t.spans,
            Self::Approvals => &t.approvals,
            Self::Compactions => &t.compactions,
            Self::Components => &t.components,
            Self::ComponentConfigs => &t.component_configs,
            Self::ComponentLinks => &t.component_links,
            Self::ServiceAccounts => &t.service_accounts,
        }
    }
}

/// The match of [`SqlSchema::ddl`] for a dialect whose DDL functions take unqualified table names
/// (SQLite, MySQL): expanded in `<dialect>/migrate.rs`, where each table's DDL function has the
/// same path (`super::<area>::<table>_ddl`) in both.
macro_rules! unqualified_ddl {
    ($table:expr, $t:expr) => {
        match $table {
            Table::Sessions => super::schema::sessions_ddl(&$t.sessions),
            Table::Runs => super::schema::runs_ddl(&$t.runs, &$t.sessions),
            Table::Memories => super::memories::memories_ddl(&$t.memories),
            Table::Evals => super::evals::evals_ddl(&$t.evals),
            Table::Knowledge => super::knowledge::knowledge_ddl(&$t.knowledge),
            Table::Metrics => super::metrics::metrics_ddl(&$t.metrics),
            Table::Schedules => super::schedules::schedules_ddl(&$t.schedules),
            Table::ScheduleRuns => super::schedules::schedule_runs_ddl(&$t.schedule_runs, &$t.schedules),
            Table::Jobs => super::jobs::jobs_ddl(&$t.jobs),
            Table::Events => super::jobs::events_ddl(&$t.events),
            Table::Traces => super::traces::traces_ddl(&$t.traces),
            Table::Spans => super::traces::spans_ddl(&$t.spans, &$t.traces),
            Table::Approvals => super::approvals::approvals_ddl(&$t.approvals),
            Table::Compactions => super::compactions::compactions_ddl(&$t.compactions),
            Table::Components => super::components::components_ddl(&$t.components),
            Table::ComponentConfigs => super::components::component_configs_ddl(&$t.component_configs),
            Table::ComponentLinks => super::components::component_links_ddl(&$t.component_links),
            Table::ServiceAccounts => super::service_accounts::service_accounts_ddl(&$t.service_accounts),
        }
    };
}
pub(crate) use unqualified_ddl;

/// A database's DDL and migration steps.
#[async_trait::async_trait]
pub(crate) trait SqlSchema: SqlAdapter {
    /// Creates the schema versions table when missing (the database's DDL).
    async fn ensure_versions_table(&self) -> DbResult<()>;

    /// The statements creating `table` (its indexes too) as Python Agno 3.1 creates it.
    fn ddl(&self, table: Table) -> Vec<String>;

    /// Runs `ddl` unless the table `name` exists; true when this call created it.
    async fn create_missing(&self, name: &str, ddl: &[String]) -> DbResult<bool>;

    /// `Migrate::migrate_table`: the database's step to `step.version` on one table.
    async fn migrate_step(&self, step: crate::migration::MigrationStep<'_>) -> DbResult<bool>;
}

/// Legacy runs inserted per statement (13 binds each, under every database's bind limit).
const INSERT_CHUNK: usize = 2_000;

/// Sessions read per statement when counting legacy runs.
const SCAN_BATCH: u64 = 200;

/// Run ids looked up per statement when counting legacy runs.
const LOOKUP_CHUNK: usize = 500;

/// One run of a legacy blob, ready for the runs table.
pub(crate) struct BlobRun {
    /// Its id.
    pub(crate) run_id: String,
    /// Its position in the blob (Python Agno's `run_index`).
    pub(crate) run_index: i64,
    /// The run as stored.
    pub(crate) run: Value,
}

/// The runs of a legacy blob (a JSON list, or a JSON string holding one, as Agno 2.x sometimes
/// double-encoded it) with their position in it, skipping entries without a `run_id`: the index
/// counts every entry, as Agno's `enumerate` does.
pub(crate) fn blob_runs(blob: Option<Value>) -> Vec<BlobRun> {
    let list = match blob {
        Some(Value::Array(list)) => list,
        Some(Value::String(text)) => match serde_json::from_str(&text) {
            Ok(Value::Array(list)) => list,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    list.into_iter()
        .enumerate()
        .filter_map(|(i, run)| {
            let run_id = run.get("run_id")?.as_str()?.to_owned();
            Some(BlobRun { run_id, run_index: i64::try_from(i).unwrap_or(i64::MAX), run })
        })
        .collect()
}

/// The runs-table row of a legacy run of `session_id`, in [`RUN_COLUMNS`] order.
fn blob_row<D: Dialect>(session_id: &str, user_id: Option<&str>, blob: BlobRun, now: i64) -> DbResult<Vec<SimpleExpr>> {
    let BlobRun { run_id, run_index, run } = blob;
    let text = |v: Option<&str>| D::value(Cell::Text(v.map(str::to_owned))).map(Expr::val);
    let field = |k: &str| text(run.get(k).and_then(Value::as_str));
    // Epoch seconds; Python Agno takes `created_at or now`.
    let created_at = run.get("created_at").and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)));
    Ok(vec![
        text(Some(&run_id))?,
        text(Some(session_id))?,
        text(Some(run_type(&run)))?,
        field("agent_id")?,
        field("team_id")?,
        field("workflow_id")?,
        text(user_id)?,
        field("parent_run_id")?,
        field("status")?,
        Expr::val(run_index),
        Expr::val(D::value(Cell::Json(Some(run)))?),
        Expr::val(created_at.filter(|t| *t != 0).unwrap_or(now)),
        Expr::val(now),
    ])
}

/// `MigrationStep` 3.0.0 on sessions: copies every legacy blob run into the runs table (which
/// the adapter has created), in batches of `options.batch_size` sessions, in one transaction;
/// runs already in the table are left as they are. False when there is no legacy column or no
/// legacy run.
///
/// # Errors
/// A storage error (or the injected failure of `options`); nothing is copied then.
pub(crate) async fn copy_blob_runs<A: SqlAdapter>(
    db: &A,
    options: &MigrationOptions,
    progress: Progress<'_>,
) -> DbResult<bool> {
    let t = db.tables();
    if !db.column_exists(&t.sessions, "runs").await? {
        return Ok(false);
    }
    let mut tx = Tx::begin(db).await?;
    let count = Query::select()
        .expr_as(Func::count(Expr::col(Asterisk)), "n")
        .from(db.table_ref(&t.sessions))
        .and_where(Expr::col("runs").is_not_null())
        .build_sqlx(A::D::builder());
    let counted = tx.rows(count, "cannot count legacy sessions").await?;
    let total = counted.first().map(|r| Columns::<A::D>::of(r, "agno_sessions").int("n")).transpose()?.flatten();
    let total = u64::try_from(total.unwrap_or(0)).unwrap_or(0);
    let now = now_epoch_secs();
    let (mut done, mut batches, mut after) = (0u64, 0usize, String::new());
    loop {
        let select = Query::select()
            .columns(["session_id", "user_id", "runs"])
            .from(db.table_ref(&t.sessions))
            .and_where(Expr::col("runs").is_not_null())
            .and_where(Expr::col("session_id").gt(after.as_str()))
            .order_by("session_id", Order::Asc)
            .limit(options.batch_size.max(1) as u64)
            .build_sqlx(A::D::builder());
        let found = tx.rows(select, "cannot read legacy sessions").await?;
        if found.is_empty() {
            break;
        }
        if options.fail_after_batches.is_some_and(|n| batches >= n) {
            return Err(DbError::new(DbErrorKind::Other, "injected failure after copying some batches"));
        }
        let mut values = Vec::new();
        for row in &found {
            let cols = Columns::<A::D>::of(row, "agno_sessions");
            let session_id = cols.text("session_id")?.unwrap_or_default();
            let user_id = cols.text("user_id")?;
            for blob in blob_runs(cols.json("runs")?) {
                values.push(blob_row::<A::D>(&session_id, user_id.as_deref(), blob, now)?);
            }
            after = session_id;
        }
        for chunk in values.chunks(INSERT_CHUNK) {
            let mut insert = Query::insert();
            insert.into_table(db.table_ref(&t.runs)).columns(RUN_COLUMNS);
            for row in chunk {
                insert.values(row.iter().cloned()).map_err(|e| DbError::new(DbErrorKind::Other, e.to_string()))?;
            }
            // Only a duplicate run id is skipped: the runs table wins over the blob.
            insert.on_conflict(OnConflict::column("run_id").do_nothing_on(["run_id"]).to_owned());
            tx.changed(insert.build_sqlx(A::D::builder()), "cannot copy legacy runs").await?;
        }
        done += found.len() as u64;
        batches += 1;
        progress(done, total);
    }
    tx.commit("cannot commit the runs copy").await?;
    Ok(done > 0)
}

#[async_trait::async_trait]
impl<A: SqlFamily> crate::migration::Migrate for SqlDb<A> {
    fn job_store(self: std::sync::Arc<Self>) -> Option<std::sync::Arc<dyn JobStore>> {
        Some(self)
    }

    async fn existing_tables(&self) -> DbResult<Vec<(crate::migration::TableKind, String)>> {
        crate::sql::existing_tables(&self.0).await
    }

    async fn migrate_table(&self, step: crate::migration::MigrationStep<'_>) -> DbResult<bool> {
        self.0.migrate_step(step).await
    }

    /// Every missing table of [`Table::ALL`], in order, each stamped with the latest version
    /// once created; existing tables are left as they are (the migrations change those).
    async fn create_tables(&self) -> DbResult<()> {
        let db = &self.0;
        db.ensure_versions_table().await?;
        for table in Table::ALL {
            let name = table.name(db.tables());
            if db.create_missing(name, &db.ddl(table)).await? {
                super::versions::stamp_version(db, name, crate::migration::LATEST_VERSION).await?;
            }
        }
        // The runs table only ever exists in its v3 shape (the 3.0.0 step may have created it).
        let runs = &db.tables().runs;
        if super::versions::latest_version(db, runs).await?.is_none() {
            super::versions::stamp_version(db, runs, crate::migration::LATEST_VERSION).await?;
        }
        db.refresh_legacy_runs().await
    }

    /// The runs of the legacy blobs that the runs table lacks, the sessions read in batches (memory
    /// stays bounded however many there are).
    async fn legacy_runs_pending(&self) -> DbResult<u64> {
        let db = &self.0;
        let t = db.tables();
        if !db.column_exists(&t.sessions, "runs").await? {
            return Ok(0);
        }
        let runs_table = db.table_exists(&t.runs).await?;
        let mut missing = 0u64;
        let mut after = String::new();
        loop {
            let batch = Query::select()
                .columns(["session_id", "runs"])
                .from(db.table_ref(&t.sessions))
                .and_where(Expr::col("runs").is_not_null())
                .and_where(Expr::col("session_id").gt(after.as_str()))
                .order_by("session_id", Order::Asc)
                .limit(SCAN_BATCH)
                .build_sqlx(A::D::builder());
            let found = rows(db, batch, "cannot read legacy runs").await?;
            let Some(last) = found.last() else { break };
            after = Columns::<A::D>::of(last, "agno_sessions").text("session_id")?.unwrap_or_default();
            let mut ids = Vec::new();
            for row in &found {
                ids.extend(
                    blob_runs(Columns::<A::D>::of(row, "agno_sessions").json("runs")?).into_iter().map(|r| r.run_id),
                );
            }
            let mut have = HashSet::new();
            if runs_table {
                for chunk in ids.chunks(LOOKUP_CHUNK) {
                    let lookup = Query::select()
                        .column("run_id")
                        .from(db.table_ref(&t.runs))
                        .and_where(Expr::col("run_id").is_in(chunk.iter().map(String::as_str)))
                        .build_sqlx(A::D::builder());
                    for row in &rows(db, lookup, "cannot list runs").await? {
                        have.extend(Columns::<A::D>::of(row, "agno_runs").text("run_id")?);
                    }
                }
            }
            missing += ids.iter().filter(|id| !have.contains(*id)).count() as u64;
            if (found.len() as u64) < SCAN_BATCH {
                break;
            }
        }
        Ok(missing)
    }

    /// Drops the legacy `runs` column once every run it holds is in the runs table (or anyway, with
    /// `force`).
    ///
    /// # Errors
    /// A conflict naming how many runs would be lost, without `force`; a storage error.
    async fn cleanup_legacy_runs(&self, force: bool) -> DbResult<CleanupReport> {
        let db = &self.0;
        let t = db.tables();
        if !db.column_exists(&t.sessions, "runs").await? {
            return Ok(CleanupReport { removed: false, missing_runs: 0 });
        }
        let missing = self.legacy_runs_pending().await?;
        if missing > 0 && !force {
            return Err(DbError::new(
                DbErrorKind::Conflict,
                format!(
                    "{missing} legacy runs are not in {}: run `agno db migrate` first, or force the cleanup to drop them",
                    db.table(&t.runs)
                ),
            ));
        }
        let drop = format!("ALTER TABLE {} DROP COLUMN runs", db.table(&t.sessions));
        let dropped =
            changed(db, (drop, SqlxValues(sea_query::Values(Vec::new()))), "cannot drop the legacy runs column").await;
        // Another process dropping it meanwhile is the same outcome.
        if let Err(e) = dropped
            && db.column_exists(&t.sessions, "runs").await?
        {
            return Err(e);
        }
        db.refresh_legacy_runs().await?;
        Ok(CleanupReport { removed: true, missing_runs: missing })
    }
}
