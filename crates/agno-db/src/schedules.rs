//! What every adapter's schedule store (and job queue) shares: column lists, defaults, filter and
//! order semantics, the claim predicate and the release. SQL adapters express the same rules in
//! their queries; the document and key-value adapters call these directly.

use std::cmp::Ordering;

use agno_core::{Schedule, ScheduleQuery, ScheduleRun};

/// Python Agno 3.x: nullable TEXT provenance columns on schedules, two of them indexed.
pub(crate) const SCHEDULE_PROVENANCE_COLUMNS: &[&str] = &[
    "managed_by",
    "target_type",
    "target_id",
    "created_by_run_id",
    "created_by_session_id",
    "updated_by_run_id",
    "updated_by_session_id",
    "disabled_reason",
];

/// Page size of a schedule listing without a limit (Agno's default).
pub(crate) const SCHEDULES_PAGE: usize = 100;
/// Page size of a schedule-run listing without a limit (Agno's default).
pub(crate) const SCHEDULE_RUNS_PAGE: usize = 20;

/// (offset, limit) of a schedule listing.
pub(crate) fn schedule_page(q: &ScheduleQuery) -> (usize, usize) {
    crate::memories::page_bounds(Some(q.limit.unwrap_or(SCHEDULES_PAGE)), q.page)
}

/// (offset, limit) of a schedule-run listing.
pub(crate) fn schedule_run_page(limit: Option<usize>, page: Option<usize>) -> (usize, usize) {
    crate::memories::page_bounds(Some(limit.unwrap_or(SCHEDULE_RUNS_PAGE)), page)
}

/// True when `s` passes the listing's filters.
pub(crate) fn schedule_matches(s: &Schedule, q: &ScheduleQuery) -> bool {
    q.enabled.is_none_or(|e| s.enabled == e) && q.user_id.as_deref().is_none_or(|u| s.user_id.as_deref() == Some(u))
}

/// Listing order: newest `created_at` first, then `id` descending.
pub(crate) fn newest_schedule_first(a: &Schedule, b: &Schedule) -> Ordering {
    b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id))
}

/// Run listing order: newest `created_at` first, then `id` descending.
pub(crate) fn newest_run_first(a: &ScheduleRun, b: &ScheduleRun) -> Ordering {
    b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id))
}

/// Which run is a schedule's latest: greatest `(triggered_at, created_at, id)`, a missing
/// `triggered_at` counting lowest.
pub(crate) fn later_run<'a>(a: &'a ScheduleRun, b: &'a ScheduleRun) -> &'a ScheduleRun {
    let key = |r: &'a ScheduleRun| (r.triggered_at, r.created_at, r.id.as_str());
    if key(b) > key(a) { b } else { a }
}

/// True when the poller may claim `s` at `now`.
pub(crate) fn claimable(s: &Schedule, now: i64, lock_grace_seconds: i64) -> bool {
    s.enabled
        && s.next_run_at.is_some_and(|t| t <= now)
        && (s.locked_by.is_none() || s.locked_at.is_some_and(|t| t <= now - lock_grace_seconds))
}

/// Renews `worker_id`'s claim of `s` at `now`; returns whether it holds the claim.
pub(crate) fn renew(s: &mut Schedule, worker_id: &str, now: i64) -> bool {
    if s.locked_by.as_deref() != Some(worker_id) {
        return false;
    }
    s.locked_at = Some(now);
    true
}

/// Applies a release to `s` when it matches the claim; returns whether it did.
pub(crate) fn release(
    s: &mut Schedule,
    next_run_at: Option<i64>,
    worker_id: Option<&str>,
    locked_at: Option<i64>,
    now: i64,
) -> bool {
    if worker_id.is_some_and(|w| s.locked_by.as_deref() != Some(w)) || locked_at.is_some_and(|t| s.locked_at != Some(t))
    {
        return false;
    }
    s.locked_by = None;
    s.locked_at = None;
    s.updated_at = Some(now);
    // An on-demand schedule (no cron) is never re-armed from the executor's snapshot.
    s.next_run_at = if s.cron_expr.is_empty() { None } else { next_run_at.or(s.next_run_at) };
    true
}
