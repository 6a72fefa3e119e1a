//! What the SQL adapters' migrations share: the runs of Agno 2.x's legacy session blobs, how many
//! of them the runs table still lacks, and the cleanup that drops the legacy column. The steps
//! themselves (column types, JSON to JSONB, copying the blobs in batches) differ per database
//! and stay with each adapter.

use std::collections::HashSet;

use agno_core::{DbError, DbErrorKind, DbResult};
use sea_query::{Expr, ExprTrait, Order, Query};
use sea_query_sqlx::{SqlxBinder, SqlxValues};
use serde_json::Value;

use super::{Columns, Dialect, SqlDb, changed, rows};
use crate::migration::CleanupReport;

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

/// `Migrate::legacy_runs_pending`: the runs of the legacy blobs that the runs table lacks, the
/// sessions read in batches (memory stays bounded however many there are).
pub(crate) async fn missing_blob_runs<A: SqlDb>(db: &A) -> DbResult<u64> {
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

/// `Migrate::cleanup_legacy_runs`: drops the legacy `runs` column once every run it holds is in
/// the runs table (or anyway, with `force`).
///
/// # Errors
/// A conflict naming how many runs would be lost, without `force`; a storage error.
pub(crate) async fn cleanup_legacy_runs<A: SqlDb>(db: &A, force: bool) -> DbResult<CleanupReport> {
    let t = db.tables();
    if !db.column_exists(&t.sessions, "runs").await? {
        return Ok(CleanupReport { removed: false, missing_runs: 0 });
    }
    let missing = missing_blob_runs(db).await?;
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
