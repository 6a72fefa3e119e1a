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

pub(crate) mod body;
mod connections;
pub mod settings;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioTimer;
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::app::AgentOs;
pub use body::{BodyPace, BodyTooSlow, RATE_GRACE};
use connections::Connections;
pub use settings::{DEFAULT_SHUTDOWN_GRACE, HttpSettings};

/// Most headers a request may carry (431 beyond). Python AgentOS (uvicorn) counts none, only
/// their bytes; here the read buffer bounds their bytes and this their number.
const MAX_HEADERS: usize = 2000;

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
    let workers = os
        .state
        .queue
        .clone()
        .map(|q| crate::queue::start(std::sync::Arc::new(os.state.clone()), q, stop_claiming.clone()));
    if let Some(published) = os.state.published.clone() {
        let every = std::time::Duration::from_millis(os.state.components.poll_interval_ms.max(10));
        tokio::spawn(crate::published::follow(published, every, os.state.stopping.clone()));
    }
    if let (Some(keep), Some(db)) = (os.state.trace_retention, os.state.db.clone()) {
        tokio::spawn(crate::trace_retention::run(db, keep, os.state.stopping.clone()));
    }
    let scheduler = (os.state.scheduler.enabled && os.state.db.is_some())
        .then(|| crate::scheduler::start(os.state.clone(), (*os.state.scheduler).clone(), stop_claiming.clone()));
    let settings = os.http;
    let connections = Connections::new(settings);
    let router = os.router();
    let mut http = hyper::server::conn::http1::Builder::new();
    // As uvicorn, which takes thousands of headers (hyper's default is 100).
    http.timer(TokioTimer::new()).header_read_timeout(settings.header_read_timeout).max_headers(MAX_HEADERS);
    let slots = Arc::new(tokio::sync::Semaphore::new(settings.max_connections));
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(error = %e, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let peer = peer.ip();
        let registry = &connections.registry;
        if registry.count_from(peer) >= settings.max_connections_per_client
            && !registry.make_room(Some(peer), "max_connections_per_client")
        {
            registry.warn(|| {
                tracing::warn!(client = %peer, limit = settings.max_connections_per_client,
                    "refusing a connection: the client's connections are all working ([os] max_connections_per_client)");
            });
            connections::refuse(tcp, settings.max_connections_per_client);
            continue;
        }
        // At the cap, the connection doing least gives way; when all are working, the new one
        // waits (and the others in the listen backlog) until one closes.
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if !registry.make_room(None, "max_connections") {
                    registry.warn(|| {
                        tracing::warn!(
                            max_connections = settings.max_connections,
                            "connection limit reached and every connection is working ([os] max_connections); \
                             new connections wait until one closes"
                        );
                    });
                }
                tokio::select! {
                    slot = slots.clone().acquire_owned() => match slot {
                        Ok(slot) => slot,
                        Err(_) => break,
                    },
                    () = &mut shutdown => break,
                }
            }
        };
        connections.serve(&http, tcp, peer, router.clone(), slot);
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
    if let Some(spans) = os.state.tracing.clone() {
        // The last runs' spans: stored, and handed to the OTLP exporter's last batch.
        if tokio::time::timeout_at(deadline, spans.flush()).await.is_err() {
            tracing::warn!("spans of the last runs were not all stored before the shutdown deadline");
        }
        let _ = tokio::task::spawn_blocking(move || spans.shutdown()).await;
    }
    Ok(())
}

/// The address of the peer a request came from, put in its extensions by the server (the key
/// of per-client limits such as failed service-account token lookups).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer(pub std::net::IpAddr);

/// `/agents/` as `/agents` (FastAPI, and so Python AgentOS, answers both); `/` and the Swagger UI
/// under `/docs/` keep theirs.
pub(crate) fn without_trailing_slash(
    mut request: axum::http::Request<axum::body::Body>,
) -> axum::http::Request<axum::body::Body> {
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
