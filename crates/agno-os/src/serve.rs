//! Serving: bind, refuse an open OS on a non-loopback address, accept connections, and stop
//! gracefully on SIGINT or SIGTERM.
//!
//! Shutdown has one deadline, the grace (`[os] shutdown_grace_seconds`, 30 s by default),
//! counted from the signal:
//! 1. stop accepting; idle and half-open connections are closed at once, connections with a
//!    request in flight after its response; no new background job is claimed;
//! 2. runs executing in this process (their clients may be gone: runs outlive requests) and
//!    claimed background jobs finish and are stored;
//! 3. what is still running when [`cancel_margin`] of the grace is left is cancelled, and stores
//!    itself `CANCELLED` with its partial output;
//! 4. tails of other replicas' runs end (their clients resume elsewhere), responses still being
//!    written get the rest of the grace, and [`serve`] returns — at the deadline at the latest,
//!    whatever a client holds open.

use std::net::SocketAddr;
use std::time::Duration;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::app::AgentOs;

/// The default grace of a shutdown (`[os] shutdown_grace_seconds`).
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// How connections are accepted, kept and timed out, and how long a shutdown may take
/// (`[os]` settings).
#[derive(Debug, Clone, Copy)]
pub struct HttpSettings {
    /// How long a shutdown may take.
    pub shutdown_grace: Duration,
    /// How long an idle keep-alive connection stays open.
    pub keep_alive: Duration,
    /// How long a client has to send a request's headers.
    pub header_read_timeout: Duration,
    /// How long a request body may stall between two reads (408 beyond).
    pub body_read_timeout: Duration,
    /// Connections served at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// Length of the listen backlog.
    pub listen_backlog: u32,
}

impl HttpSettings {
    /// The settings of an `[os]` section.
    pub fn from_config(os: &crate::config::OsSection) -> Self {
        Self {
            shutdown_grace: Duration::from_secs(os.shutdown_grace_seconds),
            keep_alive: Duration::from_secs(os.keep_alive_timeout_seconds),
            header_read_timeout: Duration::from_secs(os.header_read_timeout_seconds),
            body_read_timeout: Duration::from_secs(os.body_read_timeout_seconds),
            max_connections: os.max_connections,
            listen_backlog: os.listen_backlog,
        }
    }
}

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// An open OS on a public address.
    #[error(
        "refusing to serve {addr} without authentication: anyone who can reach it could run your agents. \
         Configure [auth] in agentos.toml, bind to 127.0.0.1, or pass --insecure if this is really what you want"
    )]
    Insecure {
        /// The address.
        addr: SocketAddr,
    },
    /// Binding or serving failed.
    #[error("cannot serve on {addr}: {source}")]
    Io {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// Checks the OS may listen on `addr`: without auth only on loopback, unless `insecure`.
///
/// # Errors
/// [`ServeError::Insecure`].
pub fn check_exposure(os: &AgentOs, addr: SocketAddr, insecure: bool) -> Result<(), ServeError> {
    if !os.state.auth.required() && !addr.ip().is_loopback() && !insecure {
        return Err(ServeError::Insecure { addr });
    }
    Ok(())
}

/// Binds `addr` (after [`check_exposure`]) with the configured listen backlog.
///
/// # Errors
/// As [`check_exposure`], or the bind error.
pub async fn bind(os: &AgentOs, addr: SocketAddr, insecure: bool) -> Result<TcpListener, ServeError> {
    check_exposure(os, addr, insecure)?;
    let fail = |source| ServeError::Io { addr, source };
    let socket =
        if addr.is_ipv4() { tokio::net::TcpSocket::new_v4() } else { tokio::net::TcpSocket::new_v6() }.map_err(fail)?;
    socket.set_reuseaddr(true).map_err(fail)?;
    socket.bind(addr).map_err(fail)?;
    socket.listen(os.http.listen_backlog).map_err(fail)
}

/// How long before the deadline the runs still executing are cancelled, so they can store
/// themselves before it: a quarter of the grace, at most 5 s.
pub fn cancel_margin(grace: Duration) -> Duration {
    (grace / 4).min(Duration::from_secs(5))
}

/// Serves until `shutdown` resolves, then shuts down as the module documentation describes,
/// within `os.shutdown_grace`.
///
/// # Errors
/// [`ServeError::Io`] when the listener's address cannot be read.
pub async fn serve(
    os: &AgentOs,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let addr = listener.local_addr().map_err(|source| ServeError::Io { addr: ([0, 0, 0, 0], 0).into(), source })?;
    let stop_claiming = CancellationToken::new();
    let workers = os.state.queue.clone().map(|q| crate::queue::start(os.state.clone(), q, stop_claiming.clone()));
    let scheduler = (os.state.scheduler.enabled && os.state.db.is_some())
        .then(|| crate::scheduler::start(os.state.clone(), (*os.state.scheduler).clone(), stop_claiming.clone()));
    let settings = os.http;
    let connections = Connections::new(settings);
    let router = os.router();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(settings.header_read_timeout);
    let slots = Arc::new(tokio::sync::Semaphore::new(settings.max_connections));
    tokio::pin!(shutdown);
    loop {
        // At the cap, new connections wait in the listen backlog until one closes.
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                tracing::warn!(
                    max_connections = settings.max_connections,
                    "connection limit reached ([os] max_connections); new connections wait until one closes"
                );
                tokio::select! {
                    slot = slots.clone().acquire_owned() => match slot {
                        Ok(slot) => slot,
                        Err(_) => break,
                    },
                    () = &mut shutdown => break,
                }
            }
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        match accepted {
            Ok((tcp, _peer)) => connections.serve(&http, tcp, router.clone(), slot),
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(error = %e, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    drop(listener);
    let grace = settings.shutdown_grace;
    let deadline = Instant::now() + grace;
    tracing::info!(%addr, ?grace, "shutting down: no new connections; letting in-flight runs finish");
    connections.draining.cancel();
    stop_claiming.cancel();
    if let Some(workers) = workers {
        let _ = workers.await;
    }
    if let Some(scheduler) = scheduler {
        // Executions stop following their runs at once; this waits for their records.
        if tokio::time::timeout_at(deadline - cancel_margin(grace), scheduler).await.is_err() {
            tracing::warn!("the scheduler did not record its executions before the shutdown deadline");
        }
    }
    if !runs_done(os, deadline - cancel_margin(grace)).await {
        let left = agno_runtime::running_runs();
        tracing::warn!(runs = left.len(), "cancelling runs still executing at the end of the shutdown grace");
        for run_id in &left {
            agno_runtime::cancel_run(run_id);
        }
        if !runs_done(os, deadline).await {
            tracing::warn!("runs did not store their cancellation before the shutdown deadline");
        }
    }
    os.state.stopping.cancel();
    connections.tasks.close();
    if tokio::time::timeout_at(deadline, connections.tasks.wait()).await.is_err() {
        tracing::warn!("closing connections still open at the end of the shutdown grace");
    }
    connections.closing.cancel();
    Ok(())
}

/// The connections being served, and the two moments of a shutdown they react to.
#[derive(Debug)]
struct Connections {
    settings: HttpSettings,
    tasks: TaskTracker,
    /// Shutdown began: connections without a request in progress close now, the others after
    /// their response.
    draining: CancellationToken,
    /// The grace is over: every connection still open is dropped.
    closing: CancellationToken,
}

impl Connections {
    fn new(settings: HttpSettings) -> Self {
        Self {
            settings,
            tasks: TaskTracker::new(),
            draining: CancellationToken::new(),
            closing: CancellationToken::new(),
        }
    }

    /// Serves HTTP/1.1 on `tcp` with `router` on a task of its own, holding `slot` until the
    /// connection ends.
    fn serve(
        &self,
        http: &hyper::server::conn::http1::Builder,
        tcp: tokio::net::TcpStream,
        router: axum::Router,
        slot: tokio::sync::OwnedSemaphorePermit,
    ) {
        // Without TCP_NODELAY, small SSE frames wait for delayed ACKs (~40 ms per event).
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let activity = Arc::new(Activity::new());
        let body_timeout = self.settings.body_read_timeout;
        let service = {
            let activity = activity.clone();
            hyper::service::service_fn(move |request: axum::http::Request<hyper::body::Incoming>| {
                let busy = Busy::start(&activity);
                let request = request.map(|body| axum::body::Body::new(TimedBody::new(body, body_timeout)));
                let response = router.clone().oneshot(without_trailing_slash(request));
                async move {
                    let response = response.await?;
                    Ok::<_, std::convert::Infallible>(response.map(|body| TrackedBody { body, _busy: busy }))
                }
            })
        };
        let connection = http.serve_connection(TokioIo::new(tcp), service);
        let (draining, closing) = (self.draining.clone(), self.closing.clone());
        let keep_alive = self.settings.keep_alive;
        self.tasks.spawn(async move {
            let _slot = slot;
            tokio::pin!(connection);
            let idle_closed = async {
                // hyper times out a request's headers; a connection idle between requests is
                // closed here after the keep-alive time.
                loop {
                    let idle = activity.idle_for();
                    match idle {
                        Some(idle) if idle >= keep_alive => return,
                        Some(idle) => tokio::time::sleep(keep_alive - idle).await,
                        None => tokio::time::sleep(keep_alive).await,
                    }
                }
            };
            let ended = tokio::select! {
                ended = connection.as_mut() => ended,
                () = idle_closed => return,
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
                    }
                }
            };
            if let Err(e) = ended {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
}

/// `/agents/` as `/agents` (FastAPI, and so Python AgentOS, answers both); `/` and the Swagger UI
/// under `/docs/` keep theirs.
fn without_trailing_slash(mut request: axum::http::Request<axum::body::Body>) -> axum::http::Request<axum::body::Body> {
    let path = request.uri().path();
    if path.len() > 1 && path.ends_with('/') && !path.starts_with("/docs/") {
        let trimmed = path.trim_end_matches('/');
        let trimmed = if trimmed.is_empty() { "/" } else { trimmed };
        let rewritten = match request.uri().query() {
            Some(q) => format!("{trimmed}?{q}"),
            None => trimmed.to_owned(),
        };
        if let Ok(uri) = rewritten.parse() {
            *request.uri_mut() = uri;
        }
    }
    request
}

/// Requests of one connection whose response has not been fully sent, and since when it has
/// been idle after its last response.
#[derive(Debug)]
struct Activity {
    requests: AtomicUsize,
    /// Milliseconds since `epoch` when the last response was sent (0: none yet).
    idle_since_ms: std::sync::atomic::AtomicU64,
    epoch: std::time::Instant,
}

impl Activity {
    fn new() -> Self {
        Self {
            requests: AtomicUsize::new(0),
            idle_since_ms: std::sync::atomic::AtomicU64::new(0),
            epoch: std::time::Instant::now(),
        }
    }

    /// How long the connection has been idle between requests (`None` while a request is in
    /// progress, or before the first one: hyper's header timeout covers that).
    fn idle_for(&self) -> Option<Duration> {
        if self.requests.load(Ordering::Acquire) > 0 {
            return None;
        }
        let since = self.idle_since_ms.load(Ordering::Acquire);
        (since > 0).then(|| self.epoch.elapsed().saturating_sub(Duration::from_millis(since)))
    }
}

/// One request in progress, until its response body is sent or dropped.
#[derive(Debug)]
struct Busy(Arc<Activity>);

impl Busy {
    fn start(activity: &Arc<Activity>) -> Self {
        activity.requests.fetch_add(1, Ordering::AcqRel);
        Self(activity.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let now = u64::try_from(self.0.epoch.elapsed().as_millis()).unwrap_or(u64::MAX).max(1);
        self.0.idle_since_ms.store(now, Ordering::Release);
        self.0.requests.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A request body that fails when the client stalls longer than `timeout` between two reads
/// (or before the first), so a slow client cannot hold a handler (or anything it would hold).
#[derive(Debug)]
struct TimedBody {
    body: hyper::body::Incoming,
    timeout: Duration,
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl TimedBody {
    fn new(body: hyper::body::Incoming, timeout: Duration) -> Self {
        Self { body, timeout, deadline: Box::pin(tokio::time::sleep(timeout)) }
    }
}

/// The error of a request body that stalled.
#[derive(Debug, thiserror::Error)]
#[error("the request body stalled for more than {0:?}")]
pub struct BodyTimeout(pub Duration);

impl http_body::Body for TimedBody {
    type Data = axum::body::Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        use std::future::Future;
        let this = &mut *self;
        match std::pin::Pin::new(&mut this.body).poll_frame(cx) {
            std::task::Poll::Ready(frame) => {
                let next = tokio::time::Instant::now() + this.timeout;
                this.deadline.as_mut().reset(next);
                std::task::Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            std::task::Poll::Pending => match this.deadline.as_mut().poll(cx) {
                std::task::Poll::Ready(()) => std::task::Poll::Ready(Some(Err(Box::new(BodyTimeout(this.timeout))))),
                std::task::Poll::Pending => std::task::Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// A response body that keeps its request counted as in progress until it is sent or dropped.
#[derive(Debug)]
struct TrackedBody {
    body: axum::body::Body,
    _busy: Busy,
}

impl http_body::Body for TrackedBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Waits until no run executes in this process and no claimed background job is unfinished, or
/// until `until`; true when everything finished.
async fn runs_done(os: &AgentOs, until: Instant) -> bool {
    let jobs = os.state.queue.as_ref().map(|q| q.tasks.clone());
    if let Some(jobs) = &jobs {
        jobs.close();
    }
    loop {
        let jobs_done = jobs.as_ref().is_none_or(tokio_util::task::TaskTracker::is_empty);
        if jobs_done && agno_runtime::running_runs().is_empty() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
