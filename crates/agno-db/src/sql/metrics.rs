//! `agno_metrics` (the daily buckets) as every SQL adapter writes and reads it back, and the
//! set-based reads of the sessions and runs a day's metrics are computed from. `date` is read as
//! `YYYY-MM-DD` text (sqlx has no date codec enabled here).

use std::collections::HashMap;

use agno_core::{Cell, DbError, DbErrorKind, DbResult, MetricsBucket, MetricsQuery, MetricsStore, SessionFacts};
use chrono::NaiveDate;
use sea_query::{Expr, ExprTrait, OnConflict, Order, Query};
use sea_query_sqlx::{SqlxBinder, SqlxValues};
use serde_json::Value;
use sqlx::Database;

use super::listing::readable;
use super::{Columns, Dialect, SqlAdapter, SqlDb, SqlFamily, Tx, owned_by, retrying, rows, unbound};

/// Buckets per multi-row insert (16 values each: far below every database's limit).
const INSERT_CHUNK: usize = 500;

/// The columns of the metrics table but `date`, in table order.
const COLUMNS: [&str; 15] = [
    "id",
    "agent_runs_count",
    "team_runs_count",
    "workflow_runs_count",
    "agent_sessions_count",
    "team_sessions_count",
    "workflow_sessions_count",
    "users_count",
    "token_metrics",
    "model_metrics",
    "aggregation_period",
    "user_id",
    "created_at",
    "updated_at",
    "completed",
];

/// The columns a replaced bucket takes from the new one: all but its key (`user_id`, `date`,
/// `aggregation_period`), `id` and `created_at`, as Python Agno's `bulk_upsert_metrics`.
pub(crate) fn replaced() -> impl Iterator<Item = &'static str> {
    COLUMNS.into_iter().filter(|c| !matches!(*c, "id" | "aggregation_period" | "user_id" | "created_at"))
}

/// A bucket's values in [`COLUMNS`] order, then its `date`.
fn bucket_values<D: Dialect>(b: &MetricsBucket) -> DbResult<Vec<Expr>> {
    let counts = [
        b.agent_runs_count,
        b.team_runs_count,
        b.workflow_runs_count,
        b.agent_sessions_count,
        b.team_sessions_count,
        b.workflow_sessions_count,
        b.users_count,
    ];
    let cells = std::iter::once(Cell::Text(Some(b.id.clone()))).chain(counts.map(|n| Cell::Int(Some(n)))).chain([
        Cell::Json(Some(Value::Object(b.token_metrics.clone()))),
        Cell::Json(Some(b.model_metrics.clone())),
        Cell::Text(Some(b.aggregation_period.clone())),
        Cell::Text(Some(b.bucket_key().to_owned())),
        Cell::Int(Some(b.created_at)),
        Cell::Int(b.updated_at),
        Cell::Bool(b.completed),
    ]);
    let mut values = super::values::<D>(cells)?;
    values.push(D::date_value(&b.date.format("%Y-%m-%d").to_string()));
    Ok(values)
}

/// Upserts `buckets` in one transaction (again when it loses a race), by multi-row inserts that
/// replace the stored bucket of the same owner, day and period; as Python Agno's
/// `bulk_upsert_metrics`, a replaced bucket keeps its id, key and `created_at`. Of buckets
/// sharing a key the last wins (one PostgreSQL statement may not change a row twice).
async fn save_metrics<A: SqlAdapter>(db: &A, buckets: &[MetricsBucket]) -> DbResult<()> {
    let key = |b: &MetricsBucket| (b.bucket_key().to_owned(), b.date, b.aggregation_period.clone());
    let last: HashMap<_, usize> = buckets.iter().enumerate().map(|(i, b)| (key(b), i)).collect();
    let kept: Vec<&MetricsBucket> =
        buckets.iter().enumerate().filter(|(i, b)| last.get(&key(b)) == Some(i)).map(|(_, b)| b).collect();
    let mut statements = Vec::new();
    for chunk in kept.chunks(INSERT_CHUNK) {
        let mut insert = Query::insert();
        insert.into_table(db.table_ref(&db.tables().metrics)).columns(COLUMNS.into_iter().chain(["date"])).on_conflict(
            OnConflict::columns(["user_id", "date", "aggregation_period"]).update_columns(replaced()).to_owned(),
        );
        for b in chunk {
            insert.values(bucket_values::<A::D>(b)?).map_err(|e| DbError::new(DbErrorKind::Other, e.to_string()))?;
        }
        statements.push(insert.build_sqlx(A::D::builder()));
    }
    retrying::<A::D, _, _, _>(|| async {
        let mut tx = Tx::begin(db).await?;
        for statement in &statements {
            tx.changed(statement.clone(), "cannot write metrics").await?;
        }
        tx.commit("cannot commit the metrics").await
    })
    .await
}

/// A bucket's day from its stored text (`YYYY-MM-DD`; a time part, as some writers add it, is
/// ignored).
///
/// # Errors
/// The text is not a date.
pub(crate) fn parse_date(text: &str) -> DbResult<NaiveDate> {
    let day = text.get(..10).unwrap_or(text);
    day.parse().map_err(|e| {
        DbError::new(DbErrorKind::Other, format!("metrics row has an invalid date {text:?}")).with_source(e)
    })
}

/// A daily bucket read back from a row of the metrics table (`user_id` '' is the shared bucket).
///
/// # Errors
/// A column cannot be read, the date is not a date, or a JSON column is not JSON.
pub(crate) fn bucket_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<MetricsBucket> {
    let c = Columns::<D>::of(row, "agno_metrics");
    let count = |col: &str| -> DbResult<i64> { Ok(c.int(col)?.unwrap_or_default()) };
    let id = c.text("id")?.unwrap_or_default();
    let date =
        c.text("date")?.ok_or_else(|| DbError::new(DbErrorKind::Other, format!("metrics row {id} has no date")))?;
    Ok(MetricsBucket {
        user_id: c.text("user_id")?.filter(|u| !u.is_empty()),
        date: parse_date(&date)?,
        aggregation_period: c.text("aggregation_period")?.unwrap_or_default(),
        agent_runs_count: count("agent_runs_count")?,
        team_runs_count: count("team_runs_count")?,
        workflow_runs_count: count("workflow_runs_count")?,
        agent_sessions_count: count("agent_sessions_count")?,
        team_sessions_count: count("team_sessions_count")?,
        workflow_sessions_count: count("workflow_sessions_count")?,
        users_count: count("users_count")?,
        token_metrics: c.object("token_metrics")?.unwrap_or_default(),
        // NOT NULL in every table Agno creates; a NULL written by hand reads as none.
        model_metrics: c.json("model_metrics")?.unwrap_or(Value::Null),
        created_at: count("created_at")?,
        updated_at: c.int("updated_at")?,
        completed: c.bool("completed")?.unwrap_or_default(),
        id,
    })
}

/// `select` limited to the rows whose `created` time falls in `[from, to)` (both bounds bound)
/// and that meet `also` (SQL text ending in `AND`, or empty).
fn in_window<D: Dialect>(select: &str, also: &str, created: &str, from: i64, to: i64) -> (String, SqlxValues) {
    let (a, b) = (D::placeholder(1), D::placeholder(2));
    let sql = format!("{select} WHERE {also} {created} >= {a} AND {created} < {b}");
    (sql, SqlxValues(sea_query::Values(vec![from.into(), to.into()])))
}

#[async_trait::async_trait]
impl<A: SqlFamily> MetricsStore for SqlDb<A> {
    async fn upsert_metrics(&self, buckets: &[MetricsBucket]) -> DbResult<()> {
        if buckets.is_empty() {
            return Ok(());
        }
        save_metrics(&self.0, buckets).await
    }

    /// The buckets of the query's days and owner (`Some("")`: the shared bucket), by day, then
    /// owner and period byte for byte; and the latest update among the owner's buckets whatever
    /// their day (as Python Agno).
    async fn get_metrics(&self, q: &MetricsQuery) -> DbResult<(Vec<MetricsBucket>, Option<i64>)> {
        let db = &self.0;
        let table = db.table_ref(&db.tables().metrics);
        let mut select = Query::select();
        select
            .columns(COLUMNS)
            .expr_as(Expr::cust(A::D::date_text("date")), "date")
            .from(table.clone())
            .cond_where(owned_by::<A::D>(q.user_id.as_deref()));
        if let Some(day) = q.starting_date {
            select.and_where(Expr::col("date").gte(A::D::date_value(&day.to_string())));
        }
        if let Some(day) = q.ending_date {
            select.and_where(Expr::col("date").lte(A::D::date_value(&day.to_string())));
        }
        select
            .order_by("date", Order::Asc)
            .order_by_expr(A::D::byte_order("user_id"), Order::Asc)
            .order_by_expr(A::D::byte_order("aggregation_period"), Order::Asc);
        let found = rows(db, select.build_sqlx(A::D::builder()), "cannot read metrics").await?;
        if found.is_empty() {
            return Ok((Vec::new(), None));
        }
        let buckets = readable::<A::D, _>(&found, "metrics bucket", "id", bucket_from_row::<A::D>);
        let latest = Query::select()
            .expr_as(Expr::cust("MAX(updated_at)"), "latest")
            .from(table)
            .cond_where(owned_by::<A::D>(q.user_id.as_deref()))
            .build_sqlx(A::D::builder());
        let latest = rows(db, latest, "cannot read the latest metrics update").await?;
        let latest = match latest.first() {
            Some(row) => Columns::<A::D>::of(row, "agno_metrics").int("latest")?,
            None => None,
        };
        Ok((buckets, latest))
    }

    /// The latest completed day, and the earliest incomplete day after it.
    async fn metrics_progress(&self) -> DbResult<(Option<NaiveDate>, Option<NaiveDate>)> {
        let db = &self.0;
        let t = db.table(&db.tables().metrics);
        let sql = format!(
            "SELECT {done} AS done, {pending} AS pending FROM (SELECT MAX(CASE WHEN completed THEN date END) AS done \
             FROM {t}) d",
            done = A::D::date_text("d.done"),
            pending = A::D::date_text(&format!(
                "(SELECT MIN(m.date) FROM {t} m WHERE NOT m.completed AND (d.done IS NULL OR m.date > d.done))"
            )),
        );
        let found = rows(db, unbound(sql), "cannot read the metrics progress").await?;
        let Some(row) = found.first() else { return Ok((None, None)) };
        let c = Columns::<A::D>::of(row, "agno_metrics");
        let day = |column: &str| c.text(column)?.as_deref().map(parse_date).transpose();
        Ok((day("done")?, day("pending")?))
    }

    /// The sessions created in `[from, to)` and their runs grouped by model, read as sets; `None`
    /// while a session of the window still holds a legacy runs blob (those are read one by one).
    async fn metrics_facts(&self, from: i64, to: i64) -> DbResult<Option<Vec<SessionFacts>>> {
        let db = &self.0;
        let t = db.tables();
        let (sessions_t, runs_t) = (db.table(&t.sessions), db.table(&t.runs));
        if db.has_legacy_runs() {
            let select = format!("SELECT 1 AS one FROM {sessions_t}");
            let (sql, values) = in_window::<A::D>(&select, "runs IS NOT NULL AND", "created_at", from, to);
            if !rows(db, (format!("{sql} LIMIT 1"), values), "cannot look for legacy runs").await?.is_empty() {
                return Ok(None);
            }
        }
        let select = format!(
            "SELECT session_id, session_type, user_id, created_at, {} AS m FROM {sessions_t}",
            A::D::json_member("session_data", "session_metrics")
        );
        let found = rows(
            db,
            in_window::<A::D>(&select, "", "created_at", from, to),
            "cannot read the sessions of the metrics window",
        )
        .await?;
        let mut sessions = Vec::with_capacity(found.len());
        for row in &found {
            let c = Columns::<A::D>::of(row, "agno_sessions");
            sessions.push((
                c.text("session_id")?.unwrap_or_default(),
                c.text("session_type")?.unwrap_or_default(),
                c.text("user_id")?,
                c.int("created_at")?.unwrap_or_default(),
                c.text("m")?.and_then(|m| serde_json::from_str::<Value>(&m).ok()),
            ));
        }
        let mut runs = Vec::new();
        if db.has_runs_table() {
            // A run's model comes from its facts row; only runs without one (written by Python
            // Agno) have their JSON read, once each.
            let (model, provider) =
                (A::D::json_text("r.run_data", "model"), A::D::json_text("r.run_data", "model_provider"));
            let (model, provider, join) = if db.has_run_facts() {
                (
                    format!("CASE WHEN f.run_id IS NOT NULL THEN f.model ELSE {model} END"),
                    format!("CASE WHEN f.run_id IS NOT NULL THEN f.model_provider ELSE {provider} END"),
                    format!("LEFT JOIN {} f ON f.run_id = r.run_id", db.table(&t.run_facts())),
                )
            } else {
                (model, provider, String::new())
            };
            let select = format!(
                "SELECT r.session_id AS session_id, {model} AS model, {provider} AS provider, COUNT(*) AS n \
                 FROM {runs_t} r JOIN {sessions_t} s ON s.session_id = r.session_id {join}"
            );
            let (sql, values) = in_window::<A::D>(&select, "", "s.created_at", from, to);
            let found =
                rows(db, (format!("{sql} GROUP BY 1, 2, 3"), values), "cannot read the runs of the metrics window")
                    .await?;
            for row in &found {
                let c = Columns::<A::D>::of(row, "agno_runs");
                runs.push((
                    c.text("session_id")?.unwrap_or_default(),
                    c.text("model")?,
                    c.text("provider")?,
                    c.int("n")?.unwrap_or_default(),
                ));
            }
        }
        Ok(Some(crate::metrics::facts_from(sessions, runs)))
    }
}
