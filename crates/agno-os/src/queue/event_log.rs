//! The durable event log of a background run: events buffered and written in batches, fenced by
//! the worker's claim, so `/resume` and tails on any replica read them.

use std::time::Duration;

use agno_core::{JobSignal, StoredEvent, StreamEvent};
use agno_runtime::Agent;
use futures::StreamExt;

use super::Queue;

/// Events buffered before a write to the log.
pub(super) const EVENT_BATCH: usize = 128;
/// Longest an event waits in the buffer before it is written.
pub(super) const EVENT_DELAY: Duration = Duration::from_millis(20);

/// Writes a run's events to the durable log in batches, fenced by the worker's claim.
pub(super) struct EventLog {
    queue: Queue,
    lease: agno_core::JobLease,
    buffer: Vec<StoredEvent>,
    /// The claim no longer holds: nothing more is written (and the run is stopped).
    fenced_out: bool,
}

impl EventLog {
    /// The log of `job`'s current attempt.
    pub(super) fn new(queue: &Queue, job: &agno_core::Job) -> Self {
        Self {
            queue: queue.clone(),
            lease: agno_core::JobLease::new(&job.id, queue.worker_id.to_string(), job.attempt),
            buffer: Vec::new(),
            fenced_out: false,
        }
    }

    fn push<E: StreamEvent>(&mut self, event: &E) {
        let Ok(data) = serde_json::to_string(event) else { return };
        self.buffer.push(StoredEvent {
            event_index: event.stream_index().and_then(|i| i64::try_from(i).ok()).unwrap_or_default(),
            attempt: self.lease.attempt,
            event: event.stream_name().into_owned(),
            data,
            created_at: event.created_at(),
        });
    }

    async fn flush(&mut self) {
        if self.buffer.is_empty() || self.fenced_out {
            self.buffer.clear();
            return;
        }
        let q = &self.queue;
        match q.store.append_events(&self.lease, &self.buffer).await {
            Ok(true) => {
                q.signal(JobSignal::Events(self.lease.job_id.clone()));
            }
            Ok(false) => {
                tracing::warn!(job = %self.lease.job_id, attempt = self.lease.attempt, "claim lost: stopping the run");
                self.fenced_out = true;
                Agent::cancel_run(&self.lease.job_id);
            }
            Err(e) => tracing::error!(job = %self.lease.job_id, error = %e, "cannot write run events to the log"),
        }
        self.buffer.clear();
    }

    /// Consumes the run's events into the log until the stream ends.
    pub(super) async fn record<E: StreamEvent>(&mut self, stream: &mut (impl futures::Stream<Item = E> + Unpin)) {
        let mut deadline = tokio::time::Instant::now();
        loop {
            let next = if self.buffer.is_empty() {
                stream.next().await
            } else {
                tokio::select! {
                    ev = stream.next() => ev,
                    () = tokio::time::sleep_until(deadline) => {
                        self.flush().await;
                        continue;
                    }
                }
            };
            let Some(event) = next else { break };
            if self.buffer.is_empty() {
                deadline = tokio::time::Instant::now() + EVENT_DELAY;
            }
            self.push(&event);
            if self.buffer.len() >= EVENT_BATCH || event.ends_run() {
                self.flush().await;
            }
        }
        self.flush().await;
    }
}
