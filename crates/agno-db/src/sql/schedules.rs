//! `agno_schedules` and `agno_schedule_runs` as every SQL adapter writes and reads them.

use agno_core::{Cell, DbResult, Schedule, ScheduleRun};
use sqlx::Database;

use super::{Columns, Dialect};

pub(crate) use crate::schedules::SCHEDULE_COLUMNS;

/// The placeholders of one schedule's [`SCHEDULE_COLUMNS`], numbered from 1.
pub(crate) fn schedule_placeholders<D: Dialect>() -> String {
    D::placeholders(1, 26)
}

/// The values of [`SCHEDULE_COLUMNS`] for `s`.
pub(crate) fn schedule_cells<D: Dialect>(s: &Schedule) -> Vec<Cell> {
    let text = |v: &Option<String>| Cell::Text(v.clone());
    let given = |v: &str| Cell::Text(Some(v.to_owned()));
    vec![
        given(&s.id),
        Cell::Text(D::storable(Some(&s.name))),
        Cell::Text(D::storable(s.description.as_deref())),
        given(&s.method),
        given(&s.endpoint),
        Cell::Json(s.payload.clone()),
        given(&s.cron_expr),
        given(&s.timezone),
        Cell::Int(Some(s.timeout_seconds)),
        Cell::Int(Some(s.max_retries)),
        Cell::Int(Some(s.retry_delay_seconds)),
        Cell::Bool(s.enabled),
        Cell::Int(s.next_run_at),
        text(&s.locked_by),
        Cell::Int(s.locked_at),
        text(&s.user_id),
        text(&s.managed_by),
        text(&s.target_type),
        text(&s.target_id),
        text(&s.created_by_run_id),
        text(&s.created_by_session_id),
        text(&s.updated_by_run_id),
        text(&s.updated_by_session_id),
        Cell::Text(D::storable(s.disabled_reason.as_deref())),
        Cell::Int(Some(s.created_at)),
        Cell::Int(s.updated_at),
    ]
}

/// A schedule read back from a row holding [`SCHEDULE_COLUMNS`].
///
/// # Errors
/// A column cannot be read, or a JSON column holds text that is not JSON.
pub(crate) fn schedule_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<Schedule> {
    let c = Columns::<D>::of(row, "agno_schedules");
    Ok(Schedule {
        id: c.text("id")?.unwrap_or_default(),
        name: c.text("name")?.unwrap_or_default(),
        description: c.text("description")?,
        method: c.text("method")?.unwrap_or_default(),
        endpoint: c.text("endpoint")?.unwrap_or_default(),
        payload: c.json("payload")?,
        cron_expr: c.text("cron_expr")?.unwrap_or_default(),
        timezone: c.text("timezone")?.unwrap_or_default(),
        timeout_seconds: c.int("timeout_seconds")?.unwrap_or_default(),
        max_retries: c.int("max_retries")?.unwrap_or_default(),
        retry_delay_seconds: c.int("retry_delay_seconds")?.unwrap_or_default(),
        enabled: c.bool("enabled")?.unwrap_or_default(),
        next_run_at: c.int("next_run_at")?,
        locked_by: c.text("locked_by")?,
        locked_at: c.int("locked_at")?,
        user_id: c.text("user_id")?,
        managed_by: c.text("managed_by")?,
        target_type: c.text("target_type")?,
        target_id: c.text("target_id")?,
        created_by_run_id: c.text("created_by_run_id")?,
        created_by_session_id: c.text("created_by_session_id")?,
        updated_by_run_id: c.text("updated_by_run_id")?,
        updated_by_session_id: c.text("updated_by_session_id")?,
        disabled_reason: c.text("disabled_reason")?,
        created_at: c.int("created_at")?.unwrap_or_default(),
        updated_at: c.int("updated_at")?,
    })
}

/// A schedule run read back from a row holding [`SCHEDULE_RUN_COLUMNS`].
///
/// # Errors
/// A column cannot be read, or a JSON column holds text that is not JSON.
pub(crate) fn schedule_run_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<ScheduleRun> {
    let c = Columns::<D>::of(row, "agno_schedule_runs");
    Ok(ScheduleRun {
        id: c.text("id")?.unwrap_or_default(),
        schedule_id: c.text("schedule_id")?.unwrap_or_default(),
        attempt: c.int("attempt")?.unwrap_or(1),
        triggered_at: c.int("triggered_at")?,
        completed_at: c.int("completed_at")?,
        status: c.text("status")?.unwrap_or_default(),
        status_code: c.int("status_code")?,
        run_id: c.text("run_id")?,
        session_id: c.text("session_id")?,
        error: c.text("error")?,
        input: c.json("input")?,
        output: c.json("output")?,
        requirements: c.json("requirements")?,
        user_id: c.text("user_id")?,
        created_at: c.int("created_at")?.unwrap_or_default(),
    })
}
