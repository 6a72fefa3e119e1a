//! The connections being served: what each is doing, and who gives way when the limits are
//! reached.
//!
//! Each connection is in one [`Phase`]: waiting for a request's headers, receiving a request's
//! body, working (its handler runs or its response is being sent) or idle between requests.
//! Only working connections do anything for anyone. When `max_connections` is reached, or one
//! client address holds `max_connections_per_client`, a new connection takes the place of the
//! connection doing least (idle longest, then waiting for headers longest, then the slowest
//! body, then connections accepted within the last second, which have had no time to send their
//! headers), which is closed; working connections are never closed for it. So a flood of
//! connections that never finish their requests cannot lock out `/health` or anyone else, and
//! runs already accepted go on.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use super::HttpSettings;
use super::body::{GuardedBody, TrackedBody};

/// How long a new connection may take to send its first request's headers before it counts as
/// one that sends nothing, when the connection limits make a connection give way.
const HEADERS_GRACE: Duration = Duration::from_secs(1);

/// What a connection is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Phase {
    /// Accepted; its first request's headers have not all arrived.
    Headers = 0,
    /// A request's headers arrived; its body is still arriving.
    Body = 1,
    /// A request is handled or its response sent.
    Working = 2,
    /// Between requests (keep-alive).
    Idle = 3,
    /// Chosen to give way; closing.
    Closing = 4,
}

impl Phase {
    fn from_u8(v: u8) -> Self {
        match v {
            0 => Phase::Headers,
            1 => Phase::Body,
            2 => Phase::Working,
            3 => Phase::Idle,
            _ => Phase::Closing,
        }
    }
}

/// One connection's state, shared by its task, its requests and the registry.
#[derive(Debug)]
pub(crate) struct Activity {
    /// Requests whose response has not been fully sent.
    pub(crate) requests: AtomicUsize,
    phase: AtomicU8,
    /// Milliseconds since `epoch` when the current phase began.
    since_ms: AtomicU64,
    /// Bytes of the current request's body so far.
    body_bytes: AtomicU64,
    epoch: std::time::Instant,
    /// The client's address.
    pub(crate) peer: IpAddr,
    /// Close this connection now (it gave way, or its stream was cut).
    pub(crate) close: CancellationToken,
    /// The connection ended (releases what waits on it).
    pub(crate) ended: CancellationToken,
}

impl Activity {
    fn new(peer: IpAddr) -> Self {
        Self {
            requests: AtomicUsize::new(0),
            phase: AtomicU8::new(Phase::Headers as u8),
            since_ms: AtomicU64::new(0),
            body_bytes: AtomicU64::new(0),
            epoch: std::time::Instant::now(),
            peer,
            close: CancellationToken::new(),
            ended: CancellationToken::new(),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn enter(&self, phase: Phase) {
        // A connection chosen to close stays closing.
        let current = self.phase.load(Ordering::Acquire);
        if Phase::from_u8(current) == Phase::Closing {
            return;
        }
        self.since_ms.store(self.now_ms(), Ordering::Release);
        self.phase.store(phase as u8, Ordering::Release);
    }

    pub(crate) fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Acquire))
    }

    fn in_phase_for(&self) -> Duration {
        Duration::from_millis(self.now_ms().saturating_sub(self.since_ms.load(Ordering::Acquire)))
    }

    /// Bytes of the current body so far.
    pub(crate) fn body_received(&self, bytes: u64) {
        self.body_bytes.store(bytes, Ordering::Release);
    }

    /// The current request's body is complete: the request is working.
    pub(crate) fn body_done(&self) {
        if self.phase() == Phase::Body {
            self.enter(Phase::Working);
        }
    }

    /// How long the connection has been idle between requests (`None` while a request is in
    /// progress, or before the first one: hyper's header timeout covers that).
    pub(crate) fn idle_for(&self) -> Option<Duration> {
        (self.phase() == Phase::Idle && self.requests.load(Ordering::Acquire) == 0).then(|| self.in_phase_for())
    }

    /// How much this connection should give way, or `None` when it is working: the higher the
    /// sooner. Idle before waiting for headers before slow bodies before newcomers; within each,
    /// the longest in that phase (for bodies, the slowest). A connection accepted less than
    /// [`HEADERS_GRACE`] ago has had no time to send its headers: it is not taken for one that
    /// sends nothing, and goes last (else each newcomer would be the first to give way to the
    /// next one, while connections trickling a body byte by byte stayed).
    fn give_way_rank(&self) -> Option<(u8, u64)> {
        let in_phase = self.in_phase_for();
        let waited = u64::try_from(in_phase.as_millis()).unwrap_or(u64::MAX);
        match self.phase() {
            Phase::Idle => Some((3, waited)),
            Phase::Headers if in_phase < HEADERS_GRACE => Some((0, waited)),
            Phase::Headers => Some((2, waited)),
            Phase::Body => {
                let rate = self.body_bytes.load(Ordering::Acquire).saturating_mul(1000) / waited.max(1);
                Some((1, u64::MAX - rate))
            }
            Phase::Working | Phase::Closing => None,
        }
    }
}

/// One request in progress, until its response body is sent or dropped.
#[derive(Debug)]
pub(crate) struct Busy(Arc<Activity>);

impl Busy {
    fn start(activity: &Arc<Activity>, has_body: bool) -> Self {
        activity.requests.fetch_add(1, Ordering::AcqRel);
        activity.body_received(0);
        activity.enter(if has_body { Phase::Body } else { Phase::Working });
        Self(activity.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if self.0.requests.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.enter(Phase::Idle);
        }
    }
}

/// Every connection being served, by client address.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    connections: Mutex<HashMap<u64, Arc<Activity>>>,
    next_id: AtomicU64,
    /// When a warning about a limit was last written (seconds since the Unix epoch).
    last_warning: AtomicU64,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Activity>>> {
        self.connections.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn add(&self, activity: Arc<Activity>) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(id, activity);
        id
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// Open connections from `peer`.
    pub(crate) fn count_from(&self, peer: IpAddr) -> usize {
        self.lock().values().filter(|a| a.peer == peer && a.phase() != Phase::Closing).count()
    }

    /// Closes the connection (of `peer`, or of anyone) doing least; false when every one is
    /// working.
    pub(crate) fn make_room(&self, peer: Option<IpAddr>, why: &str) -> bool {
        let victim = {
            let connections = self.lock();
            connections
                .values()
                .filter(|a| peer.is_none_or(|p| a.peer == p))
                .filter_map(|a| a.give_way_rank().map(|rank| (rank, a)))
                .max_by_key(|(rank, _)| *rank)
                .map(|(_, a)| a.clone())
        };
        let Some(victim) = victim else { return false };
        let phase = victim.phase();
        victim.enter(Phase::Closing);
        victim.phase.store(Phase::Closing as u8, Ordering::Release);
        victim.close.cancel();
        self.warn(|| {
            tracing::warn!(
                limit = why,
                client = %victim.peer,
                phase = ?phase,
                "connection limit reached: closing a connection that was not doing work to make room"
            );
        });
        true
    }

    /// Writes a warning at most once a second.
    pub(crate) fn warn(&self, write: impl FnOnce()) {
        let now = agno_core::now_epoch_secs().max(0).cast_unsigned();
        if self.last_warning.swap(now, Ordering::Relaxed) != now {
            write();
        }
    }
}

/// The connections being served, and the two moments of a shutdown they react to.
#[derive(Debug)]
pub(crate) struct Connections {
    settings: HttpSettings,
    pub(crate) registry: Arc<Registry>,
    pub(crate) tasks: TaskTracker,
    /// Shutdown began: connections without a request in progress close now, the others after
    /// their response.
    pub(crate) draining: CancellationToken,
    /// The grace is over: every connection still open is dropped.
    pub(crate) closing: CancellationToken,
}

impl Connections {
    pub(crate) fn new(settings: HttpSettings) -> Self {
        Self {
            settings,
            registry: Arc::new(Registry::default()),
            tasks: TaskTracker::new(),
            draining: CancellationToken::new(),
            closing: CancellationToken::new(),
        }
    }

    /// Serves HTTP/1.1 on `tcp` with `router` on a task of its own, holding `slot` until the
    /// connection ends.
    pub(crate) fn serve(
        &self,
        http: &hyper::server::conn::http1::Builder,
        tcp: tokio::net::TcpStream,
        peer: IpAddr,
        router: axum::Router,
        slot: tokio::sync::OwnedSemaphorePermit,
    ) {
        // Without TCP_NODELAY, small SSE frames wait for delayed ACKs (~40 ms per event).
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let activity = Arc::new(Activity::new(peer));
        activity.enter(Phase::Headers);
        let id = self.registry.add(activity.clone());
        let pace = self.settings.body_pace();
        let service = {
            let activity = activity.clone();
            hyper::service::service_fn(move |request: axum::http::Request<hyper::body::Incoming>| {
                use http_body::Body as _;
                let busy = Busy::start(&activity, !request.body().is_end_stream());
                let guarded = activity.clone();
                let mut request =
                    request.map(|body| axum::body::Body::new(GuardedBody::new(body, pace, guarded.clone())));
                request.extensions_mut().insert(super::Peer(peer));
                let response = router.clone().oneshot(super::without_trailing_slash(request));
                let activity = activity.clone();
                async move {
                    let response = response.await?;
                    // A response that may ask for its connection to close (a cut stream).
                    if let Some(crate::sse::AbortConnection(abort)) = response.extensions().get().cloned() {
                        let activity = activity.clone();
                        tokio::spawn(async move {
                            tokio::select! {
                                () = abort.cancelled() => activity.close.cancel(),
                                () = activity.ended.cancelled() => {}
                            }
                        });
                    }
                    // The handler answered: whatever of the body it did not read no longer counts.
                    activity.body_done();
                    Ok::<_, std::convert::Infallible>(response.map(|body| TrackedBody { body, _busy: busy }))
                }
            })
        };
        let connection = http.serve_connection(TokioIo::new(tcp), service);
        let (draining, closing) = (self.draining.clone(), self.closing.clone());
        let keep_alive = self.settings.keep_alive;
        let registry = self.registry.clone();
        self.tasks.spawn(async move {
            let _slot = slot;
            let _ended = Ended { registry, id, activity: activity.clone() };
            tokio::pin!(connection);
            let idle_closed = async {
                // hyper times out a request's headers; a connection idle between requests is
                // closed here after the keep-alive time.
                loop {
                    match activity.idle_for() {
                        Some(idle) if idle >= keep_alive => return,
                        Some(idle) => tokio::time::sleep(keep_alive - idle).await,
                        None => tokio::time::sleep(keep_alive).await,
                    }
                }
            };
            let ended = tokio::select! {
                ended = connection.as_mut() => ended,
                () = idle_closed => return,
                () = activity.close.cancelled() => return,
                () = draining.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    // hyper closes a connection idle between requests, and one with a request in
                    // progress after its response; one that has not sent a whole request yet
                    // (a browser's preconnect, a half-sent header) it would wait for: close it.
                    if activity.requests.load(Ordering::Acquire) == 0 {
                        return;
                    }
                    tokio::select! {
                        ended = connection.as_mut() => ended,
                        () = closing.cancelled() => return,
                        () = activity.close.cancelled() => return,
                    }
                }
            };
            if let Err(e) = ended {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
}

/// Removes a connection from the registry when its task ends.
struct Ended {
    registry: Arc<Registry>,
    id: u64,
    activity: Arc<Activity>,
}

impl Drop for Ended {
    fn drop(&mut self) {
        self.activity.ended.cancel();
        self.registry.remove(self.id);
    }
}

/// Answers 503 on a connection refused for its client's limit (after its request's head, which
/// clients expect to send first; a second at most), and closes it.
pub(crate) fn refuse(mut tcp: tokio::net::TcpStream, limit: usize) {
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let head = async {
            let mut seen = Vec::new();
            let mut buf = [0u8; 2048];
            while seen.len() < 16 * 1024 && !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match tcp.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), head).await;
        let body = format!(
            "{{\"detail\":\"this client address already has {limit} connections doing work \
             ([os] max_connections_per_client); retry when one of them is done\"}}"
        );
        let response = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n\
             connection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        let _ = tokio::time::timeout(Duration::from_secs(1), tcp.write_all(response.as_bytes())).await;
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// An activity whose clock started `ago` earlier, in `phase` since then.
    fn activity(phase: Phase, ago: Duration) -> Arc<Activity> {
        let peer = IpAddr::from([127, 0, 0, 1]);
        let a = Activity { epoch: std::time::Instant::now().checked_sub(ago).unwrap(), ..Activity::new(peer) };
        a.phase.store(phase as u8, Ordering::Release);
        Arc::new(a)
    }

    /// At the limit, a connection that has only just arrived is not the one to give way: the
    /// slowest body goes first; a connection that has sent no headers for longer than the grace
    /// goes before any body; the newcomer goes last; working ones never go.
    #[test]
    fn a_newcomer_does_not_give_way_before_the_slow_bodies() {
        let registry = Registry::default();
        let newcomer = activity(Phase::Headers, Duration::ZERO);
        let trickle = activity(Phase::Body, Duration::from_secs(10));
        trickle.body_received(10);
        let working = activity(Phase::Working, Duration::from_secs(60));
        for a in [&newcomer, &trickle, &working] {
            registry.add(Arc::clone(a));
        }
        assert!(registry.make_room(None, "test"));
        assert_eq!(
            (newcomer.phase(), trickle.phase(), working.phase()),
            (Phase::Headers, Phase::Closing, Phase::Working)
        );

        let silent = activity(Phase::Headers, HEADERS_GRACE * 3);
        let trickle = activity(Phase::Body, Duration::from_secs(10));
        registry.add(Arc::clone(&silent));
        registry.add(Arc::clone(&trickle));
        assert!(registry.make_room(None, "test"));
        assert_eq!((silent.phase(), trickle.phase(), newcomer.phase()), (Phase::Closing, Phase::Body, Phase::Headers));
        assert!(registry.make_room(None, "test"), "the slow body goes next");
        assert_eq!(trickle.phase(), Phase::Closing);
        assert!(registry.make_room(None, "test"), "then the newcomer");
        assert_eq!((newcomer.phase(), working.phase()), (Phase::Closing, Phase::Working));
        assert!(!registry.make_room(None, "test"), "only working connections: nobody gives way");
    }
}
