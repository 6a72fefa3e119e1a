//! The scheduler: every replica with `[scheduler] enabled = true` polls the database for due
//! schedules of every user, claims one at a time (`claim_due_schedule`: two replicas never hold
//! the same schedule, a claim older than `lock_grace_seconds` is taken over), executes it as its
//! owner ([`executor`]), and releases it with its next time ([`cron`]). A cron expression that no
//! longer computes disables the schedule with the reason.

pub mod cron;
pub mod executor;

use std::sync::Arc;
use std::time::Duration;

use agno_core::{Schedule, ScheduleUpdate, now_epoch_secs};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use crate::config::SchedulerSettings;
use crate::state::AppState;
pub use executor::Executor;

/// Name of the system schedule that recalculates the daily metrics.
pub const METRICS_SCHEDULE: &str = "agno-metrics-refresh";

impl SchedulerSettings {
    /// The executor these settings describe, over `state`.
    pub fn executor(&self, state: &AppState) -> Executor {
        Executor::new(state, Duration::from_millis(self.run_poll_interval_ms))
    }
}

/// Makes the system schedule of the metrics job match `settings.metrics_cron`: created when
/// missing (a replica starting at the same time may win the race; its row is used), its cron
/// updated when the setting changed, disabled when the setting is empty.
///
/// # Errors
/// A [`agno_core::DbError`] other than losing the creation race.
pub async fn ensure_metrics_schedule(db: &dyn agno_core::Db, settings: &SchedulerSettings) -> agno_core::DbResult<()> {
    let cron_expr = settings.metrics_cron.trim();
    let existing = db.get_schedule_by_name(METRICS_SCHEDULE, None).await?;
    let now = now_epoch_secs();
    match existing {
        None if cron_expr.is_empty() => Ok(()),
        None => {
            let mut s = Schedule::new(METRICS_SCHEDULE, "/metrics/refresh", cron_expr);
            s.description = Some("Recalculates the daily metrics (agno-rs [scheduler] metrics_cron)".to_owned());
            s.managed_by = Some("agno".to_owned());
            s.next_run_at = Some(next_run_of(&s, now).unwrap_or(now + 60));
            match db.create_schedule(&s).await {
                Err(e) if e.kind() != agno_core::DbErrorKind::Conflict => Err(e),
                _ => Ok(()),
            }
        }
        Some(s) if cron_expr.is_empty() => {
            if s.enabled {
                let off = ScheduleUpdate { enabled: Some(false), ..ScheduleUpdate::default() };
                db.update_schedule(&s.id, None, &off).await?;
            }
            Ok(())
        }
        Some(s) if s.cron_expr != cron_expr || !s.enabled => {
            let next = cron::CronSchedule::parse(cron_expr, "UTC").and_then(|c| c.next_run(now, now));
            let update = ScheduleUpdate {
                cron_expr: Some(cron_expr.to_owned()),
                timezone: Some("UTC".to_owned()),
                enabled: Some(true),
                next_run_at: Some(Some(next.unwrap_or(now + 60))),
                ..ScheduleUpdate::default()
            };
            db.update_schedule(&s.id, None, &update).await?;
            Ok(())
        }
        Some(_) => Ok(()),
    }
}

/// The next time of `schedule` after `now`, or why it has none.
///
/// # Errors
/// A [`cron::CronError`].
pub fn next_run_of(schedule: &Schedule, now: i64) -> Result<i64, cron::CronError> {
    cron::CronSchedule::parse(&schedule.cron_expr, &schedule.timezone)?.next_run(now, now)
}

/// Starts the poller of this replica. When `stop` is cancelled it claims nothing more, and the
/// schedules it is executing stop following their runs (the runs go on: they are durable), are
/// recorded `cancelled` and released with their next time; the returned task ends then.
pub fn start(state: AppState, settings: SchedulerSettings, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
    let worker_id = format!("scheduler-{}", &agno_core::new_id()[..8]);
    tokio::spawn(async move {
        let Some(db) = state.db.clone() else { return };
        if let Err(e) = ensure_metrics_schedule(db.as_ref(), &settings).await {
            tracing::warn!(error = %e, "cannot set up the metrics job's schedule");
        }
        let executor = settings.executor(&state);
        let slots = Arc::new(Semaphore::new(settings.max_concurrent.max(1)));
        let tasks = TaskTracker::new();
        let poll = Duration::from_secs_f64(settings.poll_interval_seconds.clamp(0.05, 3600.0));
        tracing::info!(worker_id, ?poll, "scheduler polling for due schedules");
        loop {
            // Claim while slots are free and schedules are due.
            loop {
                let Ok(slot) = slots.clone().try_acquire_owned() else { break };
                let claimed =
                    match db.claim_due_schedule(&worker_id, settings.lock_grace_seconds, now_epoch_secs()).await {
                        Ok(Some(schedule)) => schedule,
                        Ok(None) => break,
                        Err(e) => {
                            tracing::warn!(error = %e, "cannot claim a due schedule");
                            break;
                        }
                    };
                let (executor, db, worker_id, stop) = (executor.clone(), db.clone(), worker_id.clone(), stop.clone());
                let renew_every = Duration::from_secs_f64(settings.lock_grace_seconds.max(1) as f64 / 3.0);
                tasks.spawn(async move {
                    let _slot = slot;
                    fire(&executor, db.as_ref(), &claimed, &worker_id, &stop, renew_every).await;
                });
            }
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(poll) => {}
            }
        }
        tasks.close();
        tasks.wait().await;
    })
}

/// Executes a claimed schedule, renewing the claim every `renew_every` (so an execution longer
/// than the grace is not taken for an abandoned one), then releases it with the next time
/// (computed after the execution, so a long run does not fire again at once). A cron that cannot
/// compute disables the schedule with the reason; a failed execution keeps the schedule and its
/// next time.
async fn fire(
    executor: &Executor,
    db: &dyn agno_core::Db,
    schedule: &Schedule,
    worker_id: &str,
    stop: &CancellationToken,
    renew_every: Duration,
) {
    let renew = async {
        loop {
            tokio::time::sleep(renew_every).await;
            match db.renew_schedule_claim(&schedule.id, worker_id, now_epoch_secs()).await {
                Ok(true) => {}
                Ok(false) => tracing::warn!(schedule_id = %schedule.id, "the schedule's claim was taken over"),
                Err(e) => tracing::warn!(schedule_id = %schedule.id, error = %e, "cannot renew the schedule's claim"),
            }
        }
    };
    let executed = tokio::select! {
        executed = executor.execute(schedule, stop) => executed,
        () = renew => unreachable!("renewing never ends"),
    };
    if let Err(e) = executed {
        tracing::error!(schedule_id = %schedule.id, error = %e, "cannot record the schedule's run");
    }
    let now = now_epoch_secs();
    let next = match next_run_of(schedule, now) {
        Ok(next) => Some(next),
        Err(e) => {
            tracing::warn!(schedule_id = %schedule.id, error = %e, "disabling a schedule whose next time cannot be computed");
            let update = ScheduleUpdate {
                enabled: Some(false),
                disabled_reason: Some(Some(format!("cron: {e}"))),
                next_run_at: Some(None),
                ..ScheduleUpdate::default()
            };
            if let Err(e) = db.update_schedule(&schedule.id, None, &update).await {
                tracing::error!(schedule_id = %schedule.id, error = %e, "cannot disable the schedule");
            }
            None
        }
    };
    match db.release_schedule(&schedule.id, next, Some(worker_id), None).await {
        Ok(true) => {}
        Ok(false) => tracing::warn!(schedule_id = %schedule.id, "the claim was taken over before its release"),
        Err(e) => tracing::error!(schedule_id = %schedule.id, error = %e, "cannot release the schedule"),
    }
}
