//! `agno_metrics` (the daily buckets) as every SQL adapter reads it back. Each adapter selects
//! `date` as `YYYY-MM-DD` text (sqlx has no date codec enabled here).

use agno_core::{DbError, DbErrorKind, DbResult, MetricsBucket};
use chrono::NaiveDate;
use serde_json::Value;
use sqlx::Database;

use super::{Columns, Dialect};

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
