//! Optional Redis coordination (`[queue] redis = "redis://..."`): a pub/sub channel carrying the
//! same hints PostgreSQL `NOTIFY` carries (a job became claimable, a run was cancelled, a run's
//! event log grew), so replicas on any database (SQLite files shared by several processes
//! included) learn of them at once instead of at their next poll.
//!
//! Redis is never the truth: a hint only makes a replica read the database sooner. Every publish
//! is best-effort with a short timeout; when Redis is down, flushed or slow, replicas fall back
//! to their polls and nothing is lost or corrupted.

use std::sync::Arc;
use std::time::Duration;

use agno_core::JobSignal;
use futures::StreamExt;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// Longest a publish may take before it is given up (the poll covers the lost hint).
const PUBLISH_TIMEOUT: Duration = Duration::from_millis(250);
/// Wait before reconnecting a lost subscription.
const RECONNECT: Duration = Duration::from_secs(1);

/// A Redis pub/sub channel shared by every replica of a deployment.
pub struct Coordination {
    client: redis::Client,
    channel: String,
    publisher: Mutex<Option<redis::aio::MultiplexedConnection>>,
}

impl std::fmt::Debug for Coordination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordination").field("channel", &self.channel).finish_non_exhaustive()
    }
}

/// The wire form of a hint: `claimable:<id>`, `cancel:<id>` or `events:<id>`.
fn encode(signal: &JobSignal) -> String {
    match signal {
        JobSignal::Claimable(id) => format!("claimable:{id}"),
        JobSignal::Cancelled(id) => format!("cancel:{id}"),
        JobSignal::Events(id) => format!("events:{id}"),
    }
}

fn decode(text: &str) -> Option<JobSignal> {
    let (kind, id) = text.split_once(':')?;
    let id = id.to_owned();
    match kind {
        "claimable" => Some(JobSignal::Claimable(id)),
        "cancel" => Some(JobSignal::Cancelled(id)),
        "events" => Some(JobSignal::Events(id)),
        _ => None,
    }
}

impl Coordination {
    /// Coordination over the Redis at `url` on `channel`. Nothing connects yet.
    ///
    /// # Errors
    /// A URL Redis does not accept, with what to write instead.
    pub fn new(url: &str, channel: &str) -> Result<Self, String> {
        let client = redis::Client::open(url)
            .map_err(|e| format!("[queue] redis = {url:?} is not a Redis URL ({e}); use redis://host:6379"))?;
        Ok(Self { client, channel: channel.to_owned(), publisher: Mutex::new(None) })
    }

    /// Publishes a hint; failures are logged and dropped (the polls cover them).
    pub async fn publish(&self, signal: &JobSignal) {
        let message = encode(signal);
        let attempt = async {
            let mut guard = self.publisher.lock().await;
            if guard.is_none() {
                *guard = Some(self.client.get_multiplexed_async_connection().await?);
            }
            let Some(conn) = guard.as_mut() else { return Ok(()) };
            let sent: redis::RedisResult<i64> =
                redis::cmd("PUBLISH").arg(&self.channel).arg(&message).query_async(conn).await;
            if sent.is_err() {
                // Reconnect next time.
                *guard = None;
            }
            sent.map(|_| ())
        };
        match tokio::time::timeout(PUBLISH_TIMEOUT, attempt).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!(error = %e, "redis publish failed; replicas fall back to polling"),
            Err(_) => tracing::debug!("redis publish timed out; replicas fall back to polling"),
        }
    }

    /// Follows the channel until `stop`, passing each hint to `on_signal`; reconnects after a
    /// failure, for as long as the replica runs.
    pub fn subscribe(
        self: Arc<Self>,
        stop: CancellationToken,
        on_signal: impl Fn(JobSignal) + Send + Sync + 'static,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut warned = false;
            loop {
                let connected = async {
                    let mut pubsub = self.client.get_async_pubsub().await?;
                    pubsub.subscribe(&self.channel).await?;
                    Ok::<_, redis::RedisError>(pubsub)
                };
                match tokio::time::timeout(Duration::from_secs(5), connected).await {
                    Ok(Ok(pubsub)) => {
                        if warned {
                            tracing::info!(channel = %self.channel, "redis coordination restored");
                        }
                        warned = false;
                        let mut messages = pubsub.into_on_message();
                        loop {
                            tokio::select! {
                                () = stop.cancelled() => return,
                                msg = messages.next() => match msg {
                                    Some(msg) => {
                                        if let Some(signal) = msg.get_payload::<String>().ok().as_deref().and_then(decode) {
                                            on_signal(signal);
                                        }
                                    }
                                    None => break,
                                },
                            }
                        }
                        tracing::warn!("redis coordination lost; replicas poll the database until it is back");
                    }
                    Ok(Err(e)) if !warned => {
                        tracing::warn!(error = %e, "redis coordination unavailable; replicas poll the database");
                        warned = true;
                    }
                    _ => {}
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(RECONNECT) => {}
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_round_trip() {
        for s in [JobSignal::Claimable("a".into()), JobSignal::Cancelled("b:c".into()), JobSignal::Events("d".into())] {
            assert_eq!(decode(&encode(&s)), Some(s));
        }
        assert_eq!(decode("nonsense"), None);
        assert_eq!(decode("other:x"), None);
    }
}
