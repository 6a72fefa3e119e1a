//! The server's own settings: `[os]` (listener, limits, timeouts), `[db]` and `[auth]`.

use serde::Deserialize;

use super::ConfigError;

/// `[os]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OsSection {
    /// OS id (`/info`, `/config`).
    #[serde(default = "default_os_id")]
    pub id: String,
    /// Display name.
    pub name: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Address to listen on.
    #[serde(default = "default_host")]
    pub host: String,
    /// Port (7777 by default, as Agno).
    #[serde(default = "default_port")]
    pub port: u16,
    /// Largest accepted request body, in bytes (10 MiB by default).
    #[serde(default = "default_body_limit")]
    pub max_body_bytes: usize,
    /// Seconds between SSE heartbeat comments on an idle stream (15 by default; at most 15).
    #[serde(default = "default_heartbeat")]
    pub sse_heartbeat_seconds: u64,
    /// How long a shutdown (SIGTERM, Ctrl-C) may take, in seconds (30 by default): in-flight
    /// runs finish within it; those still running near its end are cancelled and stored.
    #[serde(default = "default_shutdown_grace")]
    pub shutdown_grace_seconds: u64,
    /// Browser origins allowed to call the OS (CORS); absent or empty: Agno's defaults
    /// (`http://localhost:3000` and Agno's hosted UIs).
    pub cors_allowed_origins: Option<Vec<String>>,
    /// A regular expression for more allowed origins, matched against the whole `Origin`.
    pub cors_origin_regex: Option<String>,
    /// Largest text field of a form, in bytes (1 MiB by default, as Python AgentOS); 413 beyond.
    #[serde(default = "default_form_field_limit")]
    pub max_form_field_bytes: usize,
    /// Seconds an idle keep-alive connection stays open (5 by default, as uvicorn).
    #[serde(default = "default_keep_alive")]
    pub keep_alive_timeout_seconds: u64,
    /// Seconds a client has to send a request's headers (30 by default).
    #[serde(default = "default_header_timeout")]
    pub header_read_timeout_seconds: u64,
    /// Seconds a request body may stall between two reads (60 by default, as nginx); 408 beyond.
    #[serde(default = "default_body_timeout")]
    pub body_read_timeout_seconds: u64,
    /// Seconds a whole request body may take (300 by default); 408 beyond.
    #[serde(default = "default_body_deadline")]
    pub body_read_deadline_seconds: u64,
    /// Slowest average rate of a request body once it has been read for 10 s, in bytes per
    /// second (1024 by default); 408 below, so a client trickling a byte at a time cannot hold a
    /// connection (0 turns the check off).
    #[serde(default = "default_min_body_rate")]
    pub min_body_bytes_per_second: u64,
    /// Connections served at once (1024 by default). At the cap, a new connection takes the place
    /// of the longest-idle connection that is not doing work (waiting for its headers, trickling
    /// a body, idle between requests); when every connection is working, new ones wait to be
    /// accepted.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// Connections from one client address (256 by default). Beyond, the address's own idle or
    /// slow connections are closed first; when all of them are working the new one is answered
    /// 503. Behind a reverse proxy (every connection from one address) set it to
    /// `max_connections`.
    #[serde(default = "default_max_connections_per_client")]
    pub max_connections_per_client: usize,
    /// Length of the listen backlog (2048 by default).
    #[serde(default = "default_backlog")]
    pub listen_backlog: u32,
    /// Deepest nesting of a JSON text a request may carry (a JSON body, or a form field holding
    /// JSON such as `session_state`), 24 by default; 422 beyond. MariaDB stores JSON up to 31
    /// levels and a value is kept up to a few levels inside its record, so raise it only on
    /// other databases.
    #[serde(default = "default_json_depth")]
    pub max_json_depth: usize,
    /// Most values an example of an `output_schema` may hold (10,000 by default): a schema
    /// whose smallest valid answer is larger (`minItems: 1000000000`) is refused with 422.
    #[serde(default = "default_schema_values")]
    pub max_schema_values: usize,
    /// Bytes of events a stream may hold for a client that does not read them (8 MiB by
    /// default); beyond, the stream is cut (the run goes on and is stored, as for a client that
    /// left).
    #[serde(default = "default_sse_buffer")]
    pub sse_buffer_bytes: usize,
}

impl Default for OsSection {
    fn default() -> Self {
        Self {
            id: default_os_id(),
            name: None,
            description: None,
            host: default_host(),
            port: default_port(),
            max_body_bytes: default_body_limit(),
            sse_heartbeat_seconds: default_heartbeat(),
            shutdown_grace_seconds: default_shutdown_grace(),
            cors_allowed_origins: None,
            cors_origin_regex: None,
            max_form_field_bytes: default_form_field_limit(),
            keep_alive_timeout_seconds: default_keep_alive(),
            header_read_timeout_seconds: default_header_timeout(),
            body_read_timeout_seconds: default_body_timeout(),
            body_read_deadline_seconds: default_body_deadline(),
            min_body_bytes_per_second: default_min_body_rate(),
            max_connections: default_max_connections(),
            max_connections_per_client: default_max_connections_per_client(),
            listen_backlog: default_backlog(),
            max_json_depth: default_json_depth(),
            max_schema_values: default_schema_values(),
            sse_buffer_bytes: default_sse_buffer(),
        }
    }
}

impl OsSection {
    /// The CORS origin policy these settings describe.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] for a regular expression that does not compile.
    pub fn cors_policy(&self) -> Result<crate::cors::OriginPolicy, ConfigError> {
        crate::cors::OriginPolicy::new(self.cors_allowed_origins.as_deref(), self.cors_origin_regex.as_deref())
            .map_err(ConfigError::Invalid)
    }
}

fn default_os_id() -> String {
    "agno-rs".to_owned()
}
fn default_host() -> String {
    "127.0.0.1".to_owned()
}
fn default_port() -> u16 {
    7777
}
fn default_body_limit() -> usize {
    10 * 1024 * 1024
}
fn default_heartbeat() -> u64 {
    15
}
fn default_form_field_limit() -> usize {
    1024 * 1024
}
fn default_keep_alive() -> u64 {
    5
}
fn default_header_timeout() -> u64 {
    30
}
fn default_body_timeout() -> u64 {
    60
}
fn default_body_deadline() -> u64 {
    300
}
fn default_min_body_rate() -> u64 {
    1024
}
fn default_max_connections_per_client() -> usize {
    256
}
fn default_max_connections() -> usize {
    1024
}
fn default_backlog() -> u32 {
    2048
}
fn default_json_depth() -> usize {
    24
}
fn default_schema_values() -> usize {
    agno_core::SchemaLimits::DEFAULT.max_values
}
fn default_sse_buffer() -> usize {
    8 * 1024 * 1024
}
fn default_shutdown_grace() -> u64 {
    crate::serve::settings::DEFAULT_SHUTDOWN_GRACE.as_secs()
}

/// `[db]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DbSection {
    /// Database URL (`sqlite://agno.db`, `postgresql://...`, `memory://`, ...).
    pub url: String,
    /// Id of this database in `/config` and `/databases/{db_id}/migrate`.
    pub id: Option<String>,
}

/// How callers authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// Everyone is admin.
    #[default]
    None,
    /// `Authorization: Bearer <security key>`; the key holder is admin.
    Key,
    /// Signed JWTs with scopes.
    Jwt,
}

/// `[auth]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSection {
    /// The mode.
    #[serde(default)]
    pub mode: AuthMode,
    /// Security key for `mode = "key"` (or `OS_SECURITY_KEY`).
    pub security_key: Option<String>,
    /// JWT verification keys, tried in turn: HMAC secrets, or PEM public keys (RSA, EC).
    #[serde(default)]
    pub verification_keys: Vec<String>,
    /// A JWKS file whose keys are tried first (by `kid`).
    pub jwks_file: Option<String>,
    /// Accepted algorithm (`HS256`, `RS256`, `ES256`, ...). Tokens signed otherwise are refused.
    pub algorithm: Option<String>,
    /// Check the `aud` claim against `audience`.
    #[serde(default)]
    pub verify_audience: bool,
    /// Accepted audience(s).
    #[serde(default)]
    pub audience: Vec<String>,
    /// Scope granting everything (`agent_os:admin`).
    pub admin_scope: Option<String>,
    /// Force a non-admin caller's `sub` as `user_id` on every read and write.
    #[serde(default)]
    pub user_isolation: bool,
    /// Removed in Agno v3: refused with a pointer to `verification_keys`.
    pub secret_key: Option<String>,
    /// How long a replica keeps a service-account token's verification (milliseconds; 0: read
    /// the database on every request). A revoked token is refused everywhere within it.
    #[serde(default = "default_service_account_cache_ms")]
    pub service_account_cache_ms: u64,
}

fn default_service_account_cache_ms() -> u64 {
    500
}
