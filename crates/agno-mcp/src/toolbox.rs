//! `MCPToolbox`: the tools of an MCP Toolbox for Databases server (googleapis/genai-toolbox),
//! loaded by toolset or by name, with `auth_token_getters` and `bound_params`.
//!
//! Toolbox speaks MCP over plain HTTP POSTs (`<url>/mcp`; a toolset's tools are listed at
//! `<url>/mcp/<toolset>`). Its tools name, in `_meta`, the auth services a call needs
//! (`toolbox/authInvoke`) and the parameters the server fills from a verified token
//! (`toolbox/authParam`; `com.google.cloud/...` in MCP 2026-07-28 and later); a token travels as the header `<service>_token`. Tokens change per
//! user and expire, so they are headers of each call, not of a session: this client is its own
//! small JSON-RPC client rather than an rmcp session (whose headers are fixed when it opens).
//!
//! On each call: every getter is asked for its token (a getter is called once per request,
//! never cached), bound parameters are computed and override the model's, parameters the server
//! fills from a token are dropped from what the model sent (the model can neither see nor forge
//! them), and the result's text blocks are joined. Unlike Python Agno (whose functions are plain
//! MCP calls, so getters and bound values it accepts at load time never reach a call), both
//! take effect on every call here.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agno_core::{DynTool, ToolContext, ToolDefinition, ToolError, ToolErrorKind, ToolFlags, ToolOutput};
use async_trait::async_trait;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};
use tokio::sync::RwLock;

use crate::session::{HeaderProvider, McpError, Transport, header_map};
use crate::toolkit::{DEFAULT_MAX_RESULT_BYTES, check_result_size, empty_schema, mcp_call_attributes};

/// The MCP protocol version asked for (Toolbox serves 2024-11-05 to 2025-11-25).
const PROTOCOL_VERSION: &str = "2025-06-18";

/// Produces the token of one auth service for a call (Agno's `auth_token_getters` values).
/// Called on every call, so a rotating or per-user token is always fresh.
#[async_trait]
pub trait AuthTokenGetter: Send + Sync + fmt::Debug {
    /// The token for the call made in `ctx`.
    ///
    /// # Errors
    /// Why no token could be had; the call fails with it.
    async fn token(&self, ctx: &ToolContext) -> Result<String, String>;
}

/// A getter from a closure.
pub struct TokenFn<F>(pub F);

impl<F> fmt::Debug for TokenFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenFn")
    }
}

#[async_trait]
impl<F> AuthTokenGetter for TokenFn<F>
where
    F: Fn(&ToolContext) -> Result<String, String> + Send + Sync,
{
    async fn token(&self, ctx: &ToolContext) -> Result<String, String> {
        (self.0)(ctx)
    }
}

/// Computes a bound value from a call (`None`: leave the parameter out).
pub type BoundFn = dyn Fn(&ToolContext) -> Option<Value> + Send + Sync;

/// A value bound to a parameter: fixed, or computed from each call.
#[derive(Clone)]
pub enum BoundValue {
    /// The same value on every call.
    Fixed(Value),
    /// Computed on every call (Agno: a callable bound parameter).
    Computed(Arc<BoundFn>),
}

impl fmt::Debug for BoundValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BoundValue::Fixed(v) => write!(f, "Fixed({v})"),
            BoundValue::Computed(_) => f.write_str("Computed"),
        }
    }
}

/// A Toolbox server to load tools from (Agno's `MCPToolbox`).
#[derive(Debug, Clone)]
pub struct ToolboxConfig {
    /// The toolkit's id (Agno's toolkit name is `toolbox_client`).
    pub id: String,
    /// The server, e.g. `http://127.0.0.1:5000` (`/mcp` is appended unless there, or unless
    /// `append_mcp_to_url` is off).
    pub url: String,
    /// Append `/mcp` to `url` (default on).
    pub append_mcp_to_url: bool,
    /// Load these toolsets (none, and no `tool_name`: the default toolset, every tool).
    pub toolsets: Vec<String>,
    /// Load only this tool.
    pub tool_name: Option<String>,
    /// Headers sent with every request (toolbox-core's `client_headers`).
    pub headers: Vec<(String, String)>,
    /// Headers per call, from the call's context.
    pub header_provider: Option<Arc<dyn HeaderProvider>>,
    /// Auth service name -> token getter; each token is sent as `<service>_token`.
    pub auth_token_getters: BTreeMap<String, Arc<dyn AuthTokenGetter>>,
    /// Parameter -> value, hidden from the model and set on every call.
    pub bound_params: BTreeMap<String, BoundValue>,
    /// Longest a request may take (default 30 s).
    pub timeout: Duration,
    /// Longest result passed to the model, in bytes.
    pub max_result_bytes: usize,
}

impl ToolboxConfig {
    /// The server at `url`, every tool of its default toolset.
    pub fn new(url: &str) -> Self {
        Self {
            id: "toolbox-client".to_owned(),
            url: url.to_owned(),
            append_mcp_to_url: true,
            toolsets: Vec::new(),
            tool_name: None,
            headers: Vec::new(),
            header_provider: None,
            auth_token_getters: BTreeMap::new(),
            bound_params: BTreeMap::new(),
            timeout: Duration::from_secs(30),
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
        }
    }
}

/// The MCP endpoint for `url`: `/mcp` appended unless already there.
fn endpoint(url: &str, append: bool) -> String {
    let url = url.trim_end_matches('/');
    if append && !url.ends_with("/mcp") { format!("{url}/mcp") } else { url.to_owned() }
}

/// A minimal MCP client over HTTP POST, as Toolbox's own SDKs speak it.
#[derive(Debug)]
struct Client {
    http: reqwest::Client,
    endpoint: String,
    timeout: Duration,
    /// The session id the server gave at `initialize`, if any; replaced on re-initialisation.
    session: RwLock<Option<String>>,
}

/// A JSON-RPC error from the server, or a failure of the exchange.
#[derive(Debug)]
enum RpcError {
    /// The server answered with a JSON-RPC error.
    Server { code: i64, message: String },
    /// The server no longer knows the session (HTTP 404 with a session).
    SessionExpired,
    /// Anything else.
    Exchange(String),
    /// No answer in time.
    Timeout,
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RpcError::Server { code, message } => write!(f, "{message} (JSON-RPC error {code})"),
            RpcError::SessionExpired => f.write_str("the server no longer knows the session"),
            RpcError::Exchange(why) => f.write_str(why),
            RpcError::Timeout => f.write_str("no answer in time"),
        }
    }
}

impl Client {
    /// Sends one request (`id` set) or notification (`id` none) to `url`; the result of a request.
    async fn send(
        &self,
        url: &str,
        method: &str,
        params: Value,
        headers: &HeaderMap,
        notification: bool,
    ) -> Result<Value, RpcError> {
        let id = agno_core::new_id();
        let mut body = json!({"jsonrpc": "2.0", "method": method, "params": params});
        if !notification {
            body["id"] = json!(id);
        }
        let mut request = self
            .http
            .post(url)
            .headers(headers.clone())
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL_VERSION)
            .json(&body);
        let session = self.session.read().await.clone();
        if let Some(session) = &session {
            request = request.header("mcp-session-id", session);
        }
        let exchange = async {
            let response = request.send().await.map_err(|e| RpcError::Exchange(format!("POST {url} failed: {e}")))?;
            let status = response.status();
            if status == reqwest::StatusCode::NOT_FOUND && session.is_some() {
                return Err(RpcError::SessionExpired);
            }
            if method == "initialize"
                && let Some(sid) = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok())
            {
                *self.session.write().await = Some(sid.to_owned());
            }
            if notification {
                return if status.is_success() {
                    Ok(Value::Null)
                } else {
                    Err(RpcError::Exchange(format!("{method} answered HTTP {status}")))
                };
            }
            let is_sse = response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|t| t.starts_with("text/event-stream"));
            let message = if is_sse {
                let mut events = response.bytes_stream().eventsource();
                loop {
                    match events.next().await {
                        Some(Ok(event)) => {
                            let Ok(message) = serde_json::from_str::<Value>(&event.data) else { continue };
                            if message.get("id") == Some(&json!(id)) {
                                break message;
                            }
                        }
                        Some(Err(e)) => {
                            return Err(RpcError::Exchange(format!("the answer's event stream failed: {e}")));
                        }
                        None => {
                            return Err(RpcError::Exchange(format!(
                                "the server's stream ended without answering {method}"
                            )));
                        }
                    }
                }
            } else {
                let text =
                    response.text().await.map_err(|e| RpcError::Exchange(format!("reading the answer failed: {e}")))?;
                serde_json::from_str::<Value>(&text).map_err(|e| {
                    let start: String = text.chars().take(200).collect();
                    RpcError::Exchange(format!("HTTP {status}, and the answer is not JSON-RPC ({e}): {start}"))
                })?
            };
            if let Some(error) = message.get("error") {
                return Err(RpcError::Server {
                    code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: error.get("message").and_then(Value::as_str).unwrap_or("error").to_owned(),
                });
            }
            message
                .get("result")
                .cloned()
                .ok_or_else(|| RpcError::Exchange(format!("the answer to {method} has neither result nor error")))
        };
        tokio::time::timeout(self.timeout, exchange).await.map_err(|_| RpcError::Timeout)?
    }

    /// `initialize` then `notifications/initialized`.
    async fn initialize(&self, headers: &HeaderMap) -> Result<(), RpcError> {
        *self.session.write().await = None;
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "agno-rs", "version": env!("CARGO_PKG_VERSION")},
        });
        let result = self.send(&self.endpoint, "initialize", params, headers, false).await?;
        if result.pointer("/capabilities/tools").is_none() {
            return Err(RpcError::Exchange("the server does not offer tools (no tools capability)".to_owned()));
        }
        self.send(&self.endpoint, "notifications/initialized", json!({}), headers, true).await?;
        Ok(())
    }
}

/// The tools of a Toolbox server.
#[derive(Debug, Clone)]
pub struct McpToolbox {
    id: String,
    tools: Vec<Arc<ToolboxTool>>,
}

/// One Toolbox tool as an agent tool.
#[derive(Debug)]
pub struct ToolboxTool {
    server_name: String,
    definition: ToolDefinition,
    flags: ToolFlags,
    client: Arc<Client>,
    shared: Arc<Shared>,
    /// Parameters the server fills from a token: never sent by us.
    auth_params: BTreeSet<String>,
    /// Auth services the call needs, each a set of alternatives (any one satisfies it).
    needs: Vec<Vec<String>>,
    /// Bound parameters this tool has.
    bound: Vec<String>,
}

/// What every tool of a toolbox shares.
#[derive(Debug)]
struct Shared {
    headers: Vec<(String, String)>,
    header_provider: Option<Arc<dyn HeaderProvider>>,
    getters: BTreeMap<String, Arc<dyn AuthTokenGetter>>,
    bound_params: BTreeMap<String, BoundValue>,
    max_result_bytes: usize,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect()
}

impl McpToolbox {
    /// Connects, loads the toolsets (or the one tool) and checks the getters and bound
    /// parameters against them.
    ///
    /// # Errors
    /// [`McpError::Connect`] when the server cannot be reached or initialised, or a toolset
    /// cannot be listed; [`McpError::Config`] for a tool that does not exist, or for getters or
    /// bound parameters no loaded tool uses (as toolbox-core refuses them).
    pub async fn connect(config: ToolboxConfig) -> Result<Self, McpError> {
        let endpoint = endpoint(&config.url, config.append_mcp_to_url);
        let connect_err = |why: String| McpError::Connect { server: endpoint.clone(), why };
        if !config.toolsets.is_empty() && config.tool_name.is_some() {
            return Err(McpError::Config("give toolsets or tool_name, not both".to_owned()));
        }
        let client = Arc::new(Client {
            http: reqwest::Client::new(),
            endpoint: endpoint.clone(),
            timeout: config.timeout,
            session: RwLock::new(None),
        });
        let headers = header_map(&config.headers).map_err(McpError::Config)?;
        client.initialize(&headers).await.map_err(|e| connect_err(e.to_string()))?;
        let mut listed = Vec::new();
        let lists: Vec<(String, String)> = if config.toolsets.is_empty() {
            vec![("default".to_owned(), endpoint.clone())]
        } else {
            config.toolsets.iter().map(|t| (t.clone(), format!("{endpoint}/{t}"))).collect()
        };
        for (toolset, url) in lists {
            let result = client
                .send(&url, "tools/list", json!({}), &headers, false)
                .await
                .map_err(|e| connect_err(format!("listing toolset {toolset:?} failed: {e}")))?;
            for tool in result.get("tools").and_then(Value::as_array).cloned().unwrap_or_default() {
                if !listed.iter().any(|t: &Value| t.get("name") == tool.get("name")) {
                    listed.push(tool);
                }
            }
        }
        if let Some(only) = &config.tool_name {
            listed.retain(|t| t.get("name").and_then(Value::as_str) == Some(only));
            if listed.is_empty() {
                return Err(McpError::Config(format!("tool {only:?} not found on the Toolbox server {endpoint}")));
            }
        }
        let shared = Arc::new(Shared {
            headers: config.headers.clone(),
            header_provider: config.header_provider.clone(),
            getters: config.auth_token_getters.clone(),
            bound_params: config.bound_params.clone(),
            max_result_bytes: config.max_result_bytes,
        });
        let mut tools = Vec::new();
        let mut used_services = BTreeSet::new();
        let mut used_bound = BTreeSet::new();
        for tool in listed {
            let Some(name) = tool.get("name").and_then(Value::as_str).map(str::to_owned) else { continue };
            // `toolbox/...` up to MCP 2025-11-25, `com.google.cloud/...` from 2026-07-28.
            let meta = tool.get("_meta").cloned().unwrap_or(Value::Null);
            let meta_key =
                |key: &str| meta.get(format!("toolbox/{key}")).or_else(|| meta.get(format!("com.google.cloud/{key}")));
            let auth_param_map = meta_key("authParam").and_then(Value::as_object).cloned().unwrap_or_default();
            let mut needs: Vec<Vec<String>> = auth_param_map.values().map(|v| strings(Some(v))).collect();
            let invoke = strings(meta_key("authInvoke"));
            if !invoke.is_empty() {
                needs.push(invoke);
            }
            for services in &needs {
                used_services.extend(services.iter().filter(|s| config.auth_token_getters.contains_key(*s)).cloned());
            }
            let auth_params: BTreeSet<String> = auth_param_map.keys().cloned().collect();
            let mut schema = tool.get("inputSchema").filter(|s| s.is_object()).cloned().unwrap_or_else(empty_schema);
            let properties: Vec<String> = schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            let bound: Vec<String> = properties
                .iter()
                .filter(|p| config.bound_params.contains_key(*p) && !auth_params.contains(*p))
                .cloned()
                .collect();
            used_bound.extend(bound.iter().cloned());
            // What the model sees: neither the token-filled nor the bound parameters.
            let hidden = |p: &str| auth_params.contains(p) || bound.iter().any(|b| b == p);
            if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
                props.retain(|k, _| !hidden(k));
            }
            if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
                required.retain(|r| r.as_str().is_none_or(|r| !hidden(r)));
            }
            tools.push(Arc::new(ToolboxTool {
                definition: ToolDefinition {
                    name: name.clone(),
                    description: tool.get("description").and_then(Value::as_str).map(str::to_owned),
                    parameters: Arc::new(schema),
                    strict: false,
                },
                server_name: name,
                flags: ToolFlags::default(),
                client: Arc::clone(&client),
                shared: Arc::clone(&shared),
                auth_params,
                needs,
                bound,
            }));
        }
        let unused_tokens: Vec<&String> =
            config.auth_token_getters.keys().filter(|s| !used_services.contains(*s)).collect();
        let unused_bound: Vec<&String> = config.bound_params.keys().filter(|p| !used_bound.contains(*p)).collect();
        let mut problems = Vec::new();
        if !unused_tokens.is_empty() {
            problems.push(format!(
                "auth_token_getters name services no loaded tool uses: {}",
                unused_tokens.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
        if !unused_bound.is_empty() {
            problems.push(format!(
                "bound_params name parameters no loaded tool has: {}",
                unused_bound.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
        if !problems.is_empty() {
            return Err(McpError::Config(format!("Toolbox server {endpoint}: {}", problems.join("; "))));
        }
        Ok(Self { id: config.id, tools })
    }

    /// The toolkit's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tools, for an agent.
    pub fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        self.tools.iter().map(|t| Arc::clone(t) as Arc<dyn DynTool>).collect()
    }
}

/// The text of a `tools/call` result: its text blocks, joined (several JSON objects as a JSON
/// array, as toolbox-core does).
fn result_text(result: &Value) -> String {
    let texts: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    match texts.as_slice() {
        [] => "null".to_owned(),
        [one] => (*one).to_owned(),
        many if many.iter().all(|t| serde_json::from_str::<Value>(t).is_ok_and(|v| v.is_object())) => {
            format!("[{}]", many.join(","))
        }
        many => many.join("\n"),
    }
}

impl ToolboxTool {
    /// The call's headers: fixed ones, per-call ones, then every getter's token.
    async fn headers(&self, ctx: &ToolContext) -> Result<HeaderMap, ToolError> {
        let mut pairs = self.shared.headers.clone();
        if let Some(provider) = &self.shared.header_provider {
            pairs.extend(provider.headers(ctx));
        }
        for (service, getter) in &self.shared.getters {
            let token = getter.token(ctx).await.map_err(|why| {
                ToolError::execution(format!("the token getter of auth service {service} failed: {why}"))
            })?;
            pairs.push((format!("{service}_token"), token));
        }
        header_map(&pairs).map_err(ToolError::execution)
    }
}

#[async_trait]
impl DynTool for ToolboxTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn flags(&self) -> &ToolFlags {
        &self.flags
    }

    async fn call(&self, mut args: Map<String, Value>, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let missing: Vec<String> = self
            .needs
            .iter()
            .filter(|services| !services.iter().any(|s| self.shared.getters.contains_key(s)))
            .map(|services| services.join(","))
            .collect();
        if !missing.is_empty() {
            return Err(ToolError::execution(format!(
                "{} needs a token of one of these auth services, and none has a getter: {}",
                self.server_name,
                missing.join("; ")
            )));
        }
        // The server fills these from the token: whatever the model sent is dropped.
        args.retain(|k, _| !self.auth_params.contains(k));
        for name in &self.bound {
            let value = match self.shared.bound_params.get(name) {
                Some(BoundValue::Fixed(v)) => Some(v.clone()),
                Some(BoundValue::Computed(f)) => f(&ctx),
                None => None,
            };
            match value {
                Some(v) => args.insert(name.clone(), v),
                None => args.remove(name),
            };
        }
        let headers = self.headers(&ctx).await?;
        let params = json!({"name": self.server_name, "arguments": args});
        let mut reinitialised = false;
        let result = loop {
            match self.client.send(&self.client.endpoint, "tools/call", params.clone(), &headers, false).await {
                Err(RpcError::SessionExpired) if !reinitialised => {
                    reinitialised = true;
                    let fixed = header_map(&self.shared.headers).map_err(ToolError::execution)?;
                    self.client.initialize(&fixed).await.map_err(|e| {
                        ToolError::execution(format!("the Toolbox server {} failed: {e}", self.client.endpoint))
                    })?;
                }
                Err(RpcError::Timeout) => {
                    return Err(ToolError::new(
                        ToolErrorKind::Timeout,
                        format!(
                            "the Toolbox server {} did not answer within {} s",
                            self.client.endpoint,
                            self.client.timeout.as_secs_f64()
                        ),
                    ));
                }
                Err(e) => {
                    return Err(ToolError::execution(format!(
                        "the Toolbox server {} refused {}: {e}",
                        self.client.endpoint, self.server_name
                    )));
                }
                Ok(result) => break result,
            }
        };
        let text = result_text(&result);
        check_result_size(&self.server_name, &text, self.shared.max_result_bytes)?;
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            return Err(ToolError::execution(text));
        }
        Ok(text)
    }

    fn trace_attributes(&self) -> Vec<(&'static str, String)> {
        let transport = Transport::StreamableHttp { url: self.client.endpoint.clone(), headers: Vec::new() };
        mcp_call_attributes(&self.server_name, &transport)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_mcp_path_is_appended_once() {
        assert_eq!(endpoint("http://h:5000", true), "http://h:5000/mcp");
        assert_eq!(endpoint("http://h:5000/", true), "http://h:5000/mcp");
        assert_eq!(endpoint("http://h:5000/mcp/", true), "http://h:5000/mcp");
        assert_eq!(endpoint("http://h:5000/api", false), "http://h:5000/api");
    }

    #[test]
    fn text_blocks_are_joined_as_toolbox_core_does() {
        let r = |blocks: Value| json!({"content": blocks});
        assert_eq!(result_text(&r(json!([]))), "null");
        assert_eq!(result_text(&r(json!([{"type": "text", "text": "a"}]))), "a");
        let objects = json!([{"type": "text", "text": "{\"a\":1}"}, {"type": "text", "text": "{\"b\":2}"}]);
        assert_eq!(result_text(&r(objects)), r#"[{"a":1},{"b":2}]"#);
        assert_eq!(result_text(&r(json!([{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]))), "x\ny");
    }
}
