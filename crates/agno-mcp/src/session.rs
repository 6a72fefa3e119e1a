//! Sessions with one MCP server: started or reached on demand, shared by calls with the same
//! headers, replaced when they close.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use agno_core::ToolContext;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::sync::Mutex;

use crate::notes::Notes;
use crate::sse::SseTransport;
use crate::stdio::ChildTransport;

/// Why an MCP server could not be used.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The server could not be started or reached, or did not initialise.
    #[error("cannot connect to the MCP server {server}: {why}")]
    Connect {
        /// The command or URL.
        server: String,
        /// What failed, and what the connection saw.
        why: String,
    },
    /// A request to the server failed.
    #[error("the MCP server {server} failed: {why}")]
    Request {
        /// The command or URL.
        server: String,
        /// What failed, and what the connection saw.
        why: String,
    },
    /// The server did not answer in time.
    #[error("the MCP server {server} did not answer within {seconds} s{seen}")]
    Timeout {
        /// The command or URL.
        server: String,
        /// The timeout.
        seconds: f64,
        /// What the connection saw meanwhile (`"; ..."`), or empty.
        seen: String,
    },
    /// The configuration is wrong.
    #[error("{0}")]
    Config(String),
}

/// How to reach a server.
#[derive(Debug, Clone)]
pub enum Transport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: Vec<(String, String)>,
    },
    /// Streamable HTTP at `url`, with fixed `headers`.
    StreamableHttp {
        /// The endpoint (e.g. `http://127.0.0.1:3001/mcp`).
        url: String,
        /// Headers sent with every request.
        headers: Vec<(String, String)>,
    },
    /// The older HTTP+SSE transport (MCP 2024-11-05): an event stream at `url` (e.g.
    /// `http://127.0.0.1:3001/sse`), messages posted where its `endpoint` event says.
    Sse {
        /// The event stream's URL.
        url: String,
        /// Headers sent with every request.
        headers: Vec<(String, String)>,
    },
}

impl Transport {
    /// The command or URL, for messages.
    pub fn describe(&self) -> String {
        match self {
            Transport::Stdio { command, args, .. } => {
                std::iter::once(command.as_str()).chain(args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
            }
            Transport::StreamableHttp { url, .. } | Transport::Sse { url, .. } => url.clone(),
        }
    }

    /// The attributes of a span of a call over this transport (OpenTelemetry's MCP conventions:
    /// `network.transport` is `pipe` for stdio, `tcp` for HTTP, with the server's address).
    pub fn trace_attributes(&self) -> Vec<(&'static str, String)> {
        match self {
            Transport::Stdio { command, .. } => {
                vec![("network.transport", "pipe".to_owned()), ("mcp.server.command", command.clone())]
            }
            Transport::StreamableHttp { url, .. } | Transport::Sse { url, .. } => {
                let mut attributes = vec![("network.transport", "tcp".to_owned()), ("url.full", url.clone())];
                if let Ok(parsed) = reqwest::Url::parse(url) {
                    attributes.extend(parsed.host_str().map(|h| ("server.address", h.to_owned())));
                    attributes.extend(parsed.port_or_known_default().map(|p| ("server.port", p.to_string())));
                }
                attributes
            }
        }
    }

    /// Whether the transport carries HTTP headers (stdio does not).
    pub fn has_headers(&self) -> bool {
        !matches!(self, Transport::Stdio { .. })
    }
}

/// Headers for one call, from its context (user, session, run, agent). Calls with the same
/// headers share a session; the provider is called on every call.
pub trait HeaderProvider: Send + Sync + std::fmt::Debug {
    /// The headers of the call made in `ctx`.
    fn headers(&self, ctx: &ToolContext) -> Vec<(String, String)>;
}

type Client = RunningService<RoleClient, ()>;

/// One open session and what its transport saw.
#[derive(Debug)]
struct Connection {
    client: Client,
    notes: Arc<Notes>,
}

impl Connection {
    fn is_open(&self) -> bool {
        !self.client.is_closed() && !self.notes.ended()
    }

    /// `"; <what was seen>"`, or empty.
    fn seen(&self) -> String {
        self.notes.suffix()
    }
}

/// Extra headers of a session (sorted), its key.
type HeaderSet = Vec<(String, String)>;

/// The sessions with one server, keyed by the extra headers they were opened with.
#[derive(Debug)]
pub(crate) struct Sessions {
    pub(crate) transport: Transport,
    pub(crate) timeout: Duration,
    http: reqwest::Client,
    open: Mutex<HashMap<HeaderSet, Arc<Connection>>>,
}

/// Headers from `(name, value)` pairs, refusing names and values HTTP does not allow.
pub(crate) fn header_map(pairs: &[(String, String)]) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|e| format!("bad header name {name:?}: {e}"))?;
        let value = HeaderValue::from_str(value).map_err(|e| format!("bad header value for {name}: {e}"))?;
        map.insert(header, value);
    }
    Ok(map)
}

impl Sessions {
    pub(crate) fn new(transport: Transport, timeout: Duration) -> Self {
        Self { transport, timeout, http: reqwest::Client::new(), open: Mutex::new(HashMap::new()) }
    }

    fn request_error(&self, why: String) -> McpError {
        McpError::Request { server: self.transport.describe(), why }
    }

    fn timeout_error(&self, seen: String) -> McpError {
        McpError::Timeout { server: self.transport.describe(), seconds: self.timeout.as_secs_f64(), seen }
    }

    async fn connect(&self, extra: &[(String, String)]) -> Result<Connection, McpError> {
        let server = self.transport.describe();
        let notes = Arc::new(Notes::default());
        let connect_err =
            |why: String| McpError::Connect { server: server.clone(), why: format!("{why}{}", notes.suffix()) };
        let started = async {
            match &self.transport {
                Transport::Stdio { command, args, env } => {
                    let child = ChildTransport::spawn(command, args, env, Arc::clone(&notes))
                        .map_err(|e| format!("cannot start {command}: {e}"))?;
                    ().serve(child).await.map_err(|e| e.to_string())
                }
                Transport::StreamableHttp { url, headers } => {
                    let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                    config.custom_headers = header_map(&[headers.as_slice(), extra].concat())?
                        .into_iter()
                        .filter_map(|(k, v)| Some((k?, v)))
                        .collect();
                    let transport = StreamableHttpClientTransport::with_client(self.http.clone(), config);
                    ().serve(transport).await.map_err(|e| e.to_string())
                }
                Transport::Sse { url, headers } => {
                    let headers = header_map(&[headers.as_slice(), extra].concat())?;
                    let transport = SseTransport::connect(self.http.clone(), url, headers, Arc::clone(&notes)).await?;
                    ().serve(transport).await.map_err(|e| e.to_string())
                }
            }
        };
        match tokio::time::timeout(self.timeout, started).await {
            Err(_) => Err(self.timeout_error(notes.suffix())),
            Ok(Err(why)) => Err(connect_err(why)),
            Ok(Ok(client)) => Ok(Connection { client, notes }),
        }
    }

    /// The open session for these headers, opened if needed.
    async fn session(&self, extra: &[(String, String)]) -> Result<Arc<Connection>, McpError> {
        let mut open = self.open.lock().await;
        if let Some(conn) = open.get(extra).filter(|c| c.is_open()) {
            return Ok(Arc::clone(conn));
        }
        let conn = Arc::new(self.connect(extra).await?);
        open.insert(extra.to_vec(), Arc::clone(&conn));
        Ok(conn)
    }

    /// Forgets a session that failed, so the next call opens a new one. A session that stopped
    /// answering usually means the server restarted or hangs, which ends every session with it:
    /// with `all`, the other headers' sessions are forgotten too.
    async fn drop_session(&self, extra: &[(String, String)], failed: &Arc<Connection>, all: bool) {
        let mut open = self.open.lock().await;
        if all {
            open.clear();
        } else if open.get(extra).is_some_and(|c| Arc::ptr_eq(c, failed)) {
            open.remove(extra);
        }
    }

    /// The server's tools (as JSON: `name`, `description`, `inputSchema`, ...).
    pub(crate) async fn list_tools(&self) -> Result<Vec<Value>, McpError> {
        let conn = self.session(&[]).await?;
        let tools = tokio::time::timeout(self.timeout, conn.client.list_all_tools())
            .await
            .map_err(|_| self.timeout_error(conn.seen()))?
            .map_err(|e| self.request_error(format!("{e}{}", conn.seen())))?;
        tools.into_iter().map(|t| serde_json::to_value(t).map_err(|e| self.request_error(e.to_string()))).collect()
    }

    /// Calls `name` with `args`. A message that could not be delivered (the session was gone:
    /// a restarted server) is sent again once on a new session; a call in flight when the
    /// session ends is not repeated (it may have run) and fails, and the next call reconnects.
    /// Returns the result as JSON (`content`, `structuredContent`, `isError`).
    pub(crate) async fn call(
        &self,
        name: &str,
        args: Map<String, Value>,
        extra: &[(String, String)],
    ) -> Result<Value, McpError> {
        let extra = if self.transport.has_headers() { extra } else { &[] };
        let mut retried = false;
        loop {
            let conn = self.session(extra).await?;
            let params = rmcp::model::CallToolRequestParams::new(name.to_owned()).with_arguments(args.clone());
            match tokio::time::timeout(self.timeout, conn.client.call_tool(params)).await {
                Err(_) => {
                    // A session that stops answering (a server restarted under it, or hangs)
                    // is replaced on the next call.
                    self.drop_session(extra, &conn, true).await;
                    return Err(self.timeout_error(conn.seen()));
                }
                Ok(Ok(result)) => {
                    return serde_json::to_value(result).map_err(|e| self.request_error(e.to_string()));
                }
                Ok(Err(e)) => {
                    let lost = !conn.is_open() || !matches!(e, rmcp::ServiceError::McpError(_));
                    self.drop_session(extra, &conn, lost).await;
                    let undelivered = matches!(e, rmcp::ServiceError::TransportSend(_));
                    if undelivered && !retried {
                        tracing::warn!(server = %self.transport.describe(), error = %e, "MCP session lost; reconnecting");
                        retried = true;
                        continue;
                    }
                    let why = match e {
                        rmcp::ServiceError::TransportClosed => "the session closed while the call was in flight (the \
                            server restarted or died); the call is not repeated, as it may have run"
                            .to_owned(),
                        other => other.to_string(),
                    };
                    return Err(self.request_error(format!("{why}{}", conn.seen())));
                }
            }
        }
    }
}
