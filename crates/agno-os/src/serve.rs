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

/// Binds `addr` (after [`check_exposure`]).
///
/// # Errors
/// As [`check_exposure`], or the bind error.
pub async fn bind(os: &AgentOs, addr: SocketAddr, insecure: bool) -> Result<TcpListener, ServeError> {
    check_exposure(os, addr, insecure)?;
    TcpListener::bind(addr).await.map_err(|source| ServeError::Io { addr, source })
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
    let connections = Connections::default();
    let router = os.router();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new());
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        match accepted {
            Ok((tcp, _peer)) => connections.serve(&http, tcp, router.clone()),
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(error = %e, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    drop(listener);
    let grace = os.shutdown_grace;
    let deadline = Instant::now() + grace;
    tracing::info!(%addr, ?grace, "shutting down: no new connections; letting in-flight runs finish");
    connections.draining.cancel();
    stop_claiming.cancel();
    if let Some(workers) = workers {
        let _ = workers.await;
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
#[derive(Debug, Default)]
struct Connections {
    tasks: TaskTracker,
    /// Shutdown began: connections without a request in progress close now, the others after
    /// their response.
    draining: CancellationToken,
    /// The grace is over: every connection still open is dropped.
    closing: CancellationToken,
}

impl Connections {
    /// Serves HTTP/1.1 on `tcp` with `router` on a task of its own.
    fn serve(&self, http: &hyper::server::conn::http1::Builder, tcp: tokio::net::TcpStream, router: axum::Router) {
        // Without TCP_NODELAY, small SSE frames wait for delayed ACKs (~40 ms per event).
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let activity = Arc::new(Activity::default());
        let service = {
            let activity = activity.clone();
            hyper::service::service_fn(move |request: axum::http::Request<hyper::body::Incoming>| {
                let busy = Busy::start(&activity);
                let response = router.clone().oneshot(without_trailing_slash(request.map(axum::body::Body::new)));
                async move {
                    let response = response.await?;
                    Ok::<_, std::convert::Infallible>(response.map(|body| TrackedBody { body, _busy: busy }))
                }
            })
        };
        let connection = http.serve_connection(TokioIo::new(tcp), service);
        let (draining, closing) = (self.draining.clone(), self.closing.clone());
        self.tasks.spawn(async move {
            tokio::pin!(connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => ended,
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

/// Requests of one connection whose response has not been fully sent.
#[derive(Debug, Default)]
struct Activity {
    requests: AtomicUsize,
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
        self.0.requests.fetch_sub(1, Ordering::AcqRel);
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
