//! Sessions with one MCP server: started or reached on demand, shared by calls with the same
//! headers, replaced when they close.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::sync::Mutex;

/// Why an MCP server could not be used.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The server could not be started or reached, or did not initialise.
    #[error("cannot connect to the MCP server {server}: {why}")]
    Connect {
        /// The command or URL.
        server: String,
        /// What failed.
        why: String,
    },
    /// A request to the server failed.
    #[error("the MCP server {server} failed: {why}")]
    Request {
        /// The command or URL.
        server: String,
        /// What failed.
        why: String,
    },
    /// The server did not answer in time.
    #[error("the MCP server {server} did not answer within {seconds} s")]
    Timeout {
        /// The command or URL.
        server: String,
        /// The timeout.
        seconds: u64,
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
}

impl Transport {
    /// The command or URL, for messages.
    pub fn describe(&self) -> String {
        match self {
            Transport::Stdio { command, args, .. } => {
                std::iter::once(command.as_str()).chain(args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
            }
            Transport::StreamableHttp { url, .. } => url.clone(),
        }
    }
}

/// Headers for one call, from its context (user, session). Calls with the same headers share a
/// session; the provider is called on every call.
pub trait HeaderProvider: Send + Sync + std::fmt::Debug {
    /// The headers of a call by `user_id` in `session_id`.
    fn headers(&self, user_id: Option<&str>, session_id: &str) -> Vec<(String, String)>;
}

type Client = RunningService<RoleClient, ()>;

/// Extra headers of a session (sorted), its key.
type HeaderSet = Vec<(String, String)>;

/// The sessions with one server, keyed by the extra headers they were opened with.
#[derive(Debug)]
pub(crate) struct Sessions {
    pub(crate) transport: Transport,
    pub(crate) timeout: Duration,
    open: Mutex<HashMap<HeaderSet, Arc<Client>>>,
}

impl Sessions {
    pub(crate) fn new(transport: Transport, timeout: Duration) -> Self {
        Self { transport, timeout, open: Mutex::new(HashMap::new()) }
    }

    fn fail(&self, why: impl std::fmt::Display) -> McpError {
        McpError::Request { server: self.transport.describe(), why: why.to_string() }
    }

    async fn connect(&self, extra: &[(String, String)]) -> Result<Client, McpError> {
        let server = self.transport.describe();
        let connect_err = |why: String| McpError::Connect { server: server.clone(), why };
        let started = async {
            match &self.transport {
                Transport::Stdio { command, args, env } => {
                    let mut cmd = tokio::process::Command::new(command);
                    cmd.args(args).envs(env.iter().cloned()).kill_on_drop(true);
                    let child = TokioChildProcess::new(cmd).map_err(|e| connect_err(e.to_string()))?;
                    ().serve(child).await.map_err(|e| connect_err(e.to_string()))
                }
                Transport::StreamableHttp { url, headers } => {
                    let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                    for (name, value) in headers.iter().chain(extra) {
                        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                            .map_err(|e| connect_err(format!("bad header name {name:?}: {e}")))?;
                        let value = reqwest::header::HeaderValue::from_str(value)
                            .map_err(|e| connect_err(format!("bad header value for {name}: {e}")))?;
                        config.custom_headers.insert(name, value);
                    }
                    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
                    ().serve(transport).await.map_err(|e| connect_err(e.to_string()))
                }
            }
        };
        tokio::time::timeout(self.timeout, started)
            .await
            .map_err(|_| McpError::Timeout { server: server.clone(), seconds: self.timeout.as_secs() })?
    }

    /// The open session for these headers, opened if needed.
    async fn session(&self, extra: &[(String, String)]) -> Result<Arc<Client>, McpError> {
        let mut open = self.open.lock().await;
        if let Some(client) = open.get(extra).filter(|c| !c.is_closed()) {
            return Ok(Arc::clone(client));
        }
        let client = Arc::new(self.connect(extra).await?);
        open.insert(extra.to_vec(), Arc::clone(&client));
        Ok(client)
    }

    /// Forgets a session that failed, so the next call opens a new one. A session that stopped
    /// answering usually means the server restarted, which ends every session with it: with
    /// `all`, the other headers' sessions are forgotten too.
    async fn drop_session(&self, extra: &[(String, String)], failed: &Arc<Client>, all: bool) {
        let mut open = self.open.lock().await;
        if all {
            open.clear();
        } else if open.get(extra).is_some_and(|c| Arc::ptr_eq(c, failed)) {
            open.remove(extra);
        }
    }

    /// The server's tools (as JSON: `name`, `description`, `inputSchema`, ...).
    pub(crate) async fn list_tools(&self) -> Result<Vec<Value>, McpError> {
        let client = self.session(&[]).await?;
        let tools = tokio::time::timeout(self.timeout, client.list_all_tools())
            .await
            .map_err(|_| McpError::Timeout { server: self.transport.describe(), seconds: self.timeout.as_secs() })?
            .map_err(|e| self.fail(e))?;
        tools.into_iter().map(|t| serde_json::to_value(t).map_err(|e| self.fail(e))).collect()
    }

    /// Calls `name` with `args`; a session found closed is reopened and the call retried once.
    /// Returns the result as JSON (`content`, `structuredContent`, `isError`).
    pub(crate) async fn call(
        &self,
        name: &str,
        args: Map<String, Value>,
        extra: &[(String, String)],
    ) -> Result<Value, McpError> {
        let mut retried = false;
        loop {
            let client = self.session(extra).await?;
            let params = rmcp::model::CallToolRequestParams::new(name.to_owned()).with_arguments(args.clone());
            match tokio::time::timeout(self.timeout, client.call_tool(params)).await {
                Err(_) => {
                    // A session that stops answering (a server restarted under it) is replaced
                    // on the next call.
                    self.drop_session(extra, &client, true).await;
                    return Err(McpError::Timeout {
                        server: self.transport.describe(),
                        seconds: self.timeout.as_secs(),
                    });
                }
                Ok(Ok(result)) => return serde_json::to_value(result).map_err(|e| self.fail(e)),
                Ok(Err(e)) => {
                    let closed = client.is_closed() || is_transport_error(&e);
                    self.drop_session(extra, &client, closed).await;
                    if closed && !retried {
                        tracing::warn!(server = %self.transport.describe(), error = %e, "MCP session lost; reconnecting");
                        retried = true;
                        continue;
                    }
                    return Err(self.fail(e));
                }
            }
        }
    }
}

/// Whether a service error means the connection is gone (rather than the server refusing).
fn is_transport_error(e: &rmcp::ServiceError) -> bool {
    !matches!(e, rmcp::ServiceError::McpError(_))
}
