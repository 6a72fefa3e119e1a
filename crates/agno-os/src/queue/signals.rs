//! How a replica hears of jobs: the store's push notifications (a claimable job wakes an idle
//! worker, a cancelled one stops its run at once), else a poll for cancelled jobs.

use std::time::Duration;

use agno_runtime::Agent;
use tokio_util::sync::CancellationToken;

use super::Queue;

/// Follows the store's push notifications, when it has them: a claimable job wakes an idle
/// worker at once, a cancelled job stops its run here at once (instead of at the next heartbeat).
pub(super) fn listen(queue: Queue, stop: CancellationToken) {
    tokio::spawn(async move {
        use futures::StreamExt;
        let mut signals = match queue.store.job_signals().await {
            Ok(Some(s)) => s,
            Ok(None) => return watch_cancels(queue, stop).await,
            Err(e) => {
                tracing::warn!(error = %e, "no job notifications; workers poll");
                return watch_cancels(queue, stop).await;
            }
        };
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                signal = signals.next() => match signal {
                    Some(signal) => queue.on_signal(signal),
                    None => {
                        tracing::warn!("job notifications ended; workers poll");
                        break;
                    }
                },
            }
        }
    });
}

/// Without push notifications (SQLite, memory), a cancel recorded by another process reaches this
/// replica's runs through a cheap poll (`[queue] cancel_poll_ms`) while it runs any background
/// job.
pub(super) async fn watch_cancels(queue: Queue, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(Duration::from_millis(queue.settings.cancel_poll_ms.max(10))) => {}
        }
        if agno_runtime::running_runs().is_empty() {
            continue;
        }
        match queue.store.cancelled_jobs(&queue.worker_id).await {
            Ok(ids) => {
                for id in ids {
                    if Agent::cancel_run(&id) {
                        tracing::info!(run = %id, "cancelled on request of another process");
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot look for cancelled jobs"),
        }
    }
}
