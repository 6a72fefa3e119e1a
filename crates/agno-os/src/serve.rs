//! Serving: bind, refuse an open OS on a non-loopback address, stop gracefully on SIGINT or
//! SIGTERM: stop accepting, let in-flight requests and runs finish within a grace period, then
//! cancel the runs left so they are stored as `CANCELLED`, never lost mid-write.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpListener;

use crate::app::AgentOs;

/// How long in-flight requests may take to finish after a shutdown signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

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

/// Serves until `shutdown` resolves, then stops accepting and waits for in-flight requests
/// (streams included) up to [`SHUTDOWN_GRACE`].
///
/// # Errors
/// [`ServeError::Io`].
pub async fn serve(
    os: &AgentOs,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let addr = listener.local_addr().map_err(|source| ServeError::Io { addr: ([0, 0, 0, 0], 0).into(), source })?;
    let stop_workers = tokio_util::sync::CancellationToken::new();
    let workers = os.state.queue.clone().map(|q| crate::queue::start(os.state.clone(), q, stop_workers.clone()));
    let (signal_tx, signal_rx) = tokio::sync::watch::channel(false);
    // Without TCP_NODELAY, small SSE frames wait for delayed ACKs (~40 ms per event).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
    });
    let server = axum::serve(listener, os.router()).with_graceful_shutdown(async move {
        shutdown.await;
        let _ = signal_tx.send(true);
    });
    let mut watch = signal_rx.clone();
    let forced = async move {
        let _ = watch.wait_for(|stopping| *stopping).await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
        tracing::warn!("in-flight requests did not finish within {:?}; stopping anyway", SHUTDOWN_GRACE);
    };
    let served = tokio::select! {
        result = server => result.map_err(|source| ServeError::Io { addr, source }),
        () = forced => Ok(()),
    };
    // No new background work; runs already claimed finish (or are cancelled) in the drain.
    stop_workers.cancel();
    if let Some(w) = workers {
        let _ = w.await;
    }
    drain_runs(SHUTDOWN_GRACE).await;
    served
}

/// Lets runs still executing (a client may have gone away, they go on) finish within `grace`,
/// then cancels the rest and gives them a moment to store their `CANCELLED` state.
pub async fn drain_runs(grace: Duration) {
    let deadline = tokio::time::Instant::now() + grace;
    while !agno_runtime::running_runs().is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left = agno_runtime::running_runs();
    if left.is_empty() {
        return;
    }
    tracing::warn!(runs = left.len(), "cancelling runs still executing at shutdown");
    for run_id in &left {
        agno_runtime::cancel_run(run_id);
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !agno_runtime::running_runs().is_empty() && tokio::time::Instant::now() < deadline {
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
    tracing::info!("shutting down: no new connections; waiting for in-flight requests");
}
