//! `[tracing] retention_days`: traces older than that are deleted with their spans, at start and
//! then every hour, on every replica (the delete is idempotent, so replicas need not agree on who
//! does it).

use std::sync::Arc;
use std::time::Duration;

use agno_core::Db;
use tokio_util::sync::CancellationToken;

/// How often old traces are looked for.
const EVERY: Duration = Duration::from_secs(3600);

/// Deletes the traces created more than `keep` ago, now and every [`EVERY`], until `stop`.
pub(crate) async fn run(db: Arc<dyn Db>, keep: Duration, stop: CancellationToken) {
    let keep = chrono::Duration::from_std(keep).unwrap_or(chrono::Duration::MAX);
    loop {
        let before = agno_core::trace_time(
            chrono::Utc::now().checked_sub_signed(keep).unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC),
        );
        match db.delete_traces_created_before(&before).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(traces = n, before, "deleted traces past [tracing] retention_days"),
            Err(e) => {
                tracing::warn!(error = %e, "cannot delete traces past [tracing] retention_days; trying again later")
            }
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(EVERY) => {}
        }
    }
}
