//! How the server accepts, keeps and times out connections, and how long a shutdown may take
//! (`[os]` settings).

use std::time::Duration;

use super::body::BodyPace;

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
    /// How long a whole request body may take (408 beyond).
    pub body_read_deadline: Duration,
    /// Slowest average rate of a request body after [`super::RATE_GRACE`] (0: no check).
    pub min_body_bytes_per_second: u64,
    /// Connections served at once (see `serve/connections.rs` for who gives way at the cap).
    pub max_connections: usize,
    /// Connections from one client address.
    pub max_connections_per_client: usize,
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
            body_read_deadline: Duration::from_secs(os.body_read_deadline_seconds),
            min_body_bytes_per_second: os.min_body_bytes_per_second,
            max_connections: os.max_connections,
            max_connections_per_client: os.max_connections_per_client,
            listen_backlog: os.listen_backlog,
        }
    }
}

impl HttpSettings {
    /// How fast request bodies must arrive.
    pub fn body_pace(&self) -> BodyPace {
        BodyPace {
            stall: self.body_read_timeout,
            deadline: self.body_read_deadline,
            min_bytes_per_second: self.min_body_bytes_per_second,
        }
    }
}
