//! `agno_traces` and `agno_spans` as every SQL adapter writes and reads them: a batch of spans
//! and the traces they fold into in one transaction, the span counts of a trace counted on read
//! (never stored), listings and per-session stats, and Agno's filter expression as a condition.

use std::collections::{BTreeSet, HashMap};

use agno_core::{
    DbError, DbErrorKind, DbResult, SortOrder, SpanRecord, TraceQuery, TraceRecord, TraceSessionStats, TraceStatsQuery,
    TraceStore, fold_trace,
};
use sea_query::{Condition, Expr, ExprTrait, LockType, OnConflict, Order, Query};
use sea_query_sqlx::SqlxBinder;

use super::listing::{Listing, count_of};
use super::record::{SqlRecord, readable, sql_record};
use super::{Columns, Dialect, SqlAdapter, SqlDb, SqlFamily, Tx, rows, values};

sql_record! {
    TraceRecord {
        noun: "trace", table: "agno_traces", key: "trace_id",
        columns: [
            trace_id: text required, name: free_text required, status: text required,
            start_time: text required, end_time: text required, duration_ms: int required, run_id: text,
            session_id: text, user_id: text, agent_id: text, team_id: text, workflow_id: text,
            created_at: text required,
        ],
    }
}

sql_record! {
    SpanRecord {
        noun: "span", table: "agno_spans", key: "span_id",
        columns: [
            span_id: text required, trace_id: text required, parent_span_id: text, name: free_text required,
            span_kind: text required, status_code: text required, status_message: free_text,
            start_time: text required, end_time: text required, duration_ms: int required,
            attributes: object required, created_at: text required,
        ],
    }
}

/// The indexed columns of the traces table, as Agno indexes them (each alone).
pub(crate) const TRACE_INDEXES: [&str; 9] =
    ["status", "start_time", "run_id", "session_id", "user_id", "agent_id", "team_id", "workflow_id", "created_at"];

/// The indexed columns of the spans table.
pub(crate) const SPAN_INDEXES: [&str; 4] = ["trace_id", "parent_span_id", "start_time", "created_at"];

/// Traces upserted per statement.
const TRACE_CHUNK: usize = 400;

/// Spans inserted per statement (12 binds each, under every database's bind limit).
const SPAN_CHUNK: usize = 400;

/// Trace ids whose spans are counted per statement.
const COUNT_CHUNK: usize = 500;

fn build_error(what: &str, e: impl std::fmt::Display) -> DbError {
    DbError::new(DbErrorKind::Other, format!("{what}: {e}"))
}

/// The traces a query asks for (all of its filters but the paging); `by_creation` bounds
/// `created_at` by the query's times (the session stats) rather than `start_time`/`end_time`.
fn query_condition<D: Dialect>(q: &TraceQuery, by_creation: bool) -> Condition {
    let mut c = Condition::all();
    for (column, value) in [
        ("run_id", &q.run_id),
        ("session_id", &q.session_id),
        ("user_id", &q.user_id),
        ("agent_id", &q.agent_id),
        ("team_id", &q.team_id),
        ("workflow_id", &q.workflow_id),
        ("status", &q.status),
    ] {
        if let Some(v) = value {
            c = c.add(D::exact(column, v));
        }
    }
    let (from, to) = if by_creation { ("created_at", "created_at") } else { ("start_time", "end_time") };
    if let Some(t) = &q.start_time {
        c = c.add(Expr::col(from).gte(t.as_str()));
    }
    if let Some(t) = &q.end_time {
        c = c.add(Expr::col(to).lte(t.as_str()));
    }
    if let Some(f) = &q.filter {
        c = c.add(super::filter::condition::<D, _>(f));
    }
    c
}

/// Sets the span counts of `traces` from the spans table.
async fn count_spans<A: SqlAdapter>(db: &A, traces: &mut [TraceRecord]) -> DbResult<()> {
    let spans_table = &db.tables().spans;
    let mut counts: HashMap<String, (u64, u64)> = HashMap::new();
    let ids: Vec<&str> = traces.iter().map(|t| t.trace_id.as_str()).collect();
    for chunk in ids.chunks(COUNT_CHUNK) {
        let select = Query::select()
            .column("trace_id")
            .expr_as(Expr::col("span_id").count(), "total")
            // COUNT, not SUM: an integer on every database (MySQL's SUM is a DECIMAL).
            .expr_as(Expr::expr(Expr::case(Expr::col("status_code").eq("ERROR"), 1)).count(), "errors")
            .from(db.table_ref(spans_table))
            .and_where(Expr::col("trace_id").is_in(chunk.iter().copied()))
            .group_by_col("trace_id")
            .build_sqlx(A::D::builder());
        for row in rows(db, select, "cannot count spans").await? {
            let c = Columns::<A::D>::of(&row, "agno_spans");
            let id = c.text("trace_id")?.unwrap_or_default();
            let total = c.int("total")?.unwrap_or_default();
            let errors = c.int("errors")?.unwrap_or_default();
            counts.insert(id, (u64::try_from(total).unwrap_or(0), u64::try_from(errors).unwrap_or(0)));
        }
    }
    for t in traces {
        (t.total_spans, t.error_count) = counts.get(&t.trace_id).copied().unwrap_or_default();
    }
    Ok(())
}

#[async_trait::async_trait]
impl<A: SqlFamily> TraceStore for SqlDb<A> {
    /// One transaction: the stored traces of the batch locked and folded with the new ones, the
    /// traces written, then the spans (a span written before is left as it is).
    async fn write_spans(&self, traces: &[TraceRecord], spans: &[SpanRecord]) -> DbResult<()> {
        let db = &self.0;
        if traces.is_empty() && spans.is_empty() {
            return Ok(());
        }
        let t = db.tables();
        let what = "cannot write traces";
        let mut tx = Tx::begin(db).await?;
        let outcome = async {
            let ids: BTreeSet<&str> = traces.iter().map(|t| t.trace_id.as_str()).collect();
            let stored = if ids.is_empty() {
                Vec::new()
            } else {
                let lock = Query::select()
                    .columns(TraceRecord::names())
                    .from(db.table_ref(&t.traces))
                    .and_where(Expr::col("trace_id").is_in(ids.iter().copied()))
                    .lock(LockType::Update)
                    .build_sqlx(A::D::builder());
                tx.rows(lock, what).await?
            };
            let mut stored: HashMap<String, TraceRecord> = stored
                .iter()
                .map(TraceRecord::from_row::<A::D>)
                .map(|r| r.map(|t| (t.trace_id.clone(), t)))
                .collect::<DbResult<_>>()?;
            // Each trace once, folded over what is stored (and over its other folds in the batch).
            let mut order: Vec<&str> = Vec::new();
            for new in traces {
                let merged = match stored.get(&new.trace_id) {
                    Some(old) => fold_trace(old, new),
                    None => new.clone(),
                };
                if !order.contains(&new.trace_id.as_str()) {
                    order.push(&new.trace_id);
                }
                stored.insert(merged.trace_id.clone(), merged);
            }
            // One statement per chunk of traces (13 binds each, under every database's bind limit).
            for chunk in order.chunks(TRACE_CHUNK) {
                let mut upsert = Query::insert();
                upsert.into_table(db.table_ref(&t.traces)).columns(TraceRecord::names());
                for id in chunk {
                    let Some(trace) = stored.get(*id) else { continue };
                    upsert.values(values::<A::D>(trace.cells::<A::D>()?)?).map_err(|e| build_error(what, e))?;
                }
                upsert.on_conflict(
                    OnConflict::column("trace_id").update_columns(TraceRecord::names().skip(1).take(11)).to_owned(),
                );
                tx.changed(upsert.build_sqlx(A::D::builder()), what).await?;
            }
            for chunk in spans.chunks(SPAN_CHUNK) {
                let mut insert = Query::insert();
                insert.into_table(db.table_ref(&t.spans)).columns(SpanRecord::names());
                for span in chunk {
                    insert.values(values::<A::D>(span.cells::<A::D>()?)?).map_err(|e| build_error(what, e))?;
                }
                insert.on_conflict(OnConflict::column("span_id").do_nothing_on(["span_id"]).to_owned());
                tx.changed(insert.build_sqlx(A::D::builder()), "cannot write spans").await?;
            }
            Ok(())
        }
        .await;
        tx.end(outcome, what).await
    }

    async fn get_trace(&self, trace_id: Option<&str>, run_id: Option<&str>) -> DbResult<Option<TraceRecord>> {
        let db = &self.0;
        let by = match (trace_id, run_id) {
            (Some(id), _) if !id.is_empty() => Expr::col("trace_id").eq(id),
            (_, Some(run)) if !run.is_empty() => Expr::col("run_id").eq(run),
            _ => return Ok(None),
        };
        let select = Query::select()
            .columns(TraceRecord::names())
            .from(db.table_ref(&db.tables().traces))
            .and_where(by)
            .order_by("start_time", Order::Desc)
            .limit(1)
            .build_sqlx(A::D::builder());
        let found = rows(db, select, "cannot read trace").await?;
        let Some(row) = found.first() else { return Ok(None) };
        let mut trace = [TraceRecord::from_row::<A::D>(row)?];
        count_spans(db, &mut trace).await?;
        let [trace] = trace;
        Ok(Some(trace))
    }

    async fn get_traces(&self, q: &TraceQuery) -> DbResult<(Vec<TraceRecord>, u64)> {
        let db = &self.0;
        let (found, total) = Listing::<A::D>::of(
            db.table_ref(&db.tables().traces),
            TraceRecord::names(),
            query_condition::<A::D>(q, false),
        )
        .by_never_null("start_time", SortOrder::Desc)
        .then_by_bytes("trace_id", SortOrder::Desc)
        .page(q.limit, q.page)
        .fetch(db, "traces")
        .await?;
        let mut list = readable::<A::D, TraceRecord>(&found);
        count_spans(db, &mut list).await?;
        Ok((list, total))
    }

    async fn get_spans(&self, trace_id: &str) -> DbResult<Vec<SpanRecord>> {
        let db = &self.0;
        let select = Query::select()
            .columns(SpanRecord::names())
            .from(db.table_ref(&db.tables().spans))
            .and_where(Expr::col("trace_id").eq(trace_id))
            .order_by("start_time", Order::Asc)
            .build_sqlx(A::D::builder());
        let found = rows(db, select, &format!("cannot read the spans of trace {trace_id}")).await?;
        Ok(readable::<A::D, SpanRecord>(&found))
    }

    /// Spans first (their foreign key), then the traces, in one transaction.
    async fn delete_traces_created_before(&self, before: &str) -> DbResult<u64> {
        let db = &self.0;
        let t = db.tables();
        let what = "cannot delete old traces";
        let old = Query::select()
            .column("trace_id")
            .from(db.table_ref(&t.traces))
            .and_where(Expr::col("created_at").lt(before))
            .to_owned();
        let spans = Query::delete()
            .from_table(db.table_ref(&t.spans))
            .and_where(Expr::col("trace_id").in_subquery(old))
            .build_sqlx(A::D::builder());
        let traces = Query::delete()
            .from_table(db.table_ref(&t.traces))
            .and_where(Expr::col("created_at").lt(before))
            .build_sqlx(A::D::builder());
        let mut tx = Tx::begin(db).await?;
        let outcome = async {
            tx.changed(spans, what).await?;
            tx.changed(traces, what).await
        }
        .await;
        tx.end(outcome, what).await
    }

    async fn get_trace_session_stats(&self, q: &TraceStatsQuery) -> DbResult<(Vec<TraceSessionStats>, u64)> {
        let db = &self.0;
        let table = db.table_ref(&db.tables().traces);
        let filter = query_condition::<A::D>(q, true).add(Expr::col("session_id").is_not_null());
        let mut select = Query::select();
        select
            .column("session_id")
            .expr_as(Expr::col("user_id").max(), "user_id")
            .expr_as(Expr::col("agent_id").max(), "agent_id")
            .expr_as(Expr::col("team_id").max(), "team_id")
            .expr_as(Expr::col("workflow_id").max(), "workflow_id")
            .expr_as(Expr::col("trace_id").count(), "total_traces")
            .expr_as(Expr::col("created_at").min(), "first_trace_at")
            .expr_as(Expr::col("created_at").max(), "last_trace_at")
            .from(table.clone())
            .cond_where(filter.clone())
            .group_by_col("session_id")
            .order_by_expr(Expr::col("created_at").max(), Order::Desc)
            .order_by_expr(A::D::byte_order("session_id"), Order::Asc);
        super::listing::limit_to(&mut select, q.limit, q.page);
        let found = rows(db, select.build_sqlx(A::D::builder()), "cannot read trace session stats").await?;
        let count = Query::select()
            .expr_as(Expr::col("session_id").count_distinct(), "total")
            .from(table)
            .cond_where(filter)
            .build_sqlx(A::D::builder());
        let total = count_of(db, count, "cannot count trace sessions").await?;
        let list = found
            .iter()
            .map(|row| {
                let c = Columns::<A::D>::of(row, "agno_traces");
                Ok(TraceSessionStats {
                    session_id: c.text("session_id")?.unwrap_or_default(),
                    user_id: c.text("user_id")?,
                    agent_id: c.text("agent_id")?,
                    team_id: c.text("team_id")?,
                    workflow_id: c.text("workflow_id")?,
                    total_traces: u64::try_from(c.int("total_traces")?.unwrap_or_default()).unwrap_or(0),
                    first_trace_at: c.text("first_trace_at")?.unwrap_or_default(),
                    last_trace_at: c.text("last_trace_at")?.unwrap_or_default(),
                })
            })
            .collect::<DbResult<Vec<_>>>()?;
        Ok((list, total))
    }
}
