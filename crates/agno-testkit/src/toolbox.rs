//! A small MCP Toolbox for Databases server (googleapis/genai-toolbox), for `MCPToolbox` tests.
//!
//! It follows the protocol as Toolbox documents it:
//! - <https://googleapis.github.io/genai-toolbox/how-to/connect_via_mcp/>: MCP over HTTP POST at
//!   `/mcp` (`initialize`, `notifications/initialized`, `tools/list`, `tools/call`), a toolset's
//!   tools listed at `/mcp/{toolset}`, an unknown toolset a JSON-RPC error "toolset does not
//!   exist", JSON answers (no session id for protocol 2025-06-18, which sends
//!   `MCP-Protocol-Version` instead);
//! - <https://googleapis.github.io/genai-toolbox/resources/authservices/>: ID tokens sent as
//!   `<authService>_token` headers; "authorized invocation" (a tool listing auth services in
//!   `_meta["toolbox/authInvoke"]` refuses a call without a valid token of one of them) and
//!   "authenticated parameters" (a parameter listed in `_meta["toolbox/authParam"]` is filled
//!   from the verified token's claim, whatever the client sent). Clients speaking MCP 2026-07-28
//!   or later find these under `com.google.cloud/authInvoke` and `com.google.cloud/authParam`
//!   (as Google's `toolbox-core` 1.4 reads them), so the keys follow the request's
//!   `MCP-Protocol-Version`.
//!
//! The tools are the hotel example of Toolbox's quickstart: `search-hotels-by-name(name,
//! region)`, `book-hotel(hotel_id)` (needs `my-google-auth`) and `list-my-bookings(user_email)`
//! (`user_email` from `my-google-auth`). Toolsets: `hotels` (the first two) and `bookings`. A
//! valid ID token here is `test-id-token:<email>`; its claim is the email.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// The auth service the tools use.
pub const AUTH_SERVICE: &str = "my-google-auth";

/// The prefix of a token this server accepts (`test-id-token:<email>`).
pub const TOKEN_PREFIX: &str = "test-id-token:";

/// One `tools/call` the server received.
#[derive(Debug, Clone)]
pub struct ToolboxCall {
    /// The tool.
    pub tool: String,
    /// The arguments as sent.
    pub arguments: Value,
    /// Every request header (lower-case names).
    pub headers: BTreeMap<String, String>,
}

impl ToolboxCall {
    /// The token sent for the test auth service, if any.
    pub fn token(&self) -> Option<&str> {
        self.headers.get(&format!("{AUTH_SERVICE}_token")).map(String::as_str)
    }
}

#[derive(Debug, Default)]
struct Recorded {
    calls: Vec<ToolboxCall>,
    methods: Vec<(String, String)>,
}

/// The running server; stops when dropped.
#[derive(Debug)]
pub struct ToolboxServer {
    addr: SocketAddr,
    recorded: Arc<Mutex<Recorded>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ToolboxServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ToolboxServer {
    /// Serves on `127.0.0.1` at a free port.
    ///
    /// # Errors
    /// When no port can be bound.
    pub async fn start() -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let recorded = Arc::new(Mutex::new(Recorded::default()));
        let app = Router::new()
            // Toolbox strips trailing slashes (toolbox-core posts to `/mcp/`).
            .route("/mcp", post(default_toolset))
            .route("/mcp/", post(default_toolset))
            .route("/mcp/{toolset}", post(named_toolset))
            .with_state(Arc::clone(&recorded));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, recorded, task })
    }

    /// The server's base URL (`MCPToolbox` appends `/mcp`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every `tools/call` received, in order.
    pub fn calls(&self) -> Vec<ToolboxCall> {
        self.recorded.lock().map(|r| r.calls.clone()).unwrap_or_default()
    }

    /// Every JSON-RPC method received with the path it came to, in order.
    pub fn methods(&self) -> Vec<(String, String)> {
        self.recorded.lock().map(|r| r.methods.clone()).unwrap_or_default()
    }
}

type Shared = Arc<Mutex<Recorded>>;

async fn default_toolset(State(recorded): State<Shared>, headers: HeaderMap, body: String) -> Response {
    handle(&recorded, None, &headers, &body)
}

async fn named_toolset(
    State(recorded): State<Shared>,
    Path(toolset): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    handle(&recorded, Some(&toolset), &headers, &body)
}

/// The tools, with their auth metadata under the keys of `protocol` (a `MCP-Protocol-Version`).
fn tools(protocol: &str) -> Vec<Value> {
    let (invoke, param) = if protocol >= "2026-07-28" {
        ("com.google.cloud/authInvoke", "com.google.cloud/authParam")
    } else {
        ("toolbox/authInvoke", "toolbox/authParam")
    };
    let object =
        |properties: Value, required: Value| json!({"type": "object", "properties": properties, "required": required});
    vec![
        json!({
            "name": "search-hotels-by-name",
            "description": "Search for hotels based on name.",
            "inputSchema": object(json!({
                "name": {"type": "string", "description": "The name of the hotel."},
                "region": {"type": "string", "description": "The region to search in."}
            }), json!(["name"])),
        }),
        json!({
            "name": "book-hotel",
            "description": "Book a hotel by its id.",
            "inputSchema": object(json!({"hotel_id": {"type": "integer", "description": "The hotel's id."}}), json!(["hotel_id"])),
            "_meta": {invoke: [AUTH_SERVICE]},
        }),
        json!({
            "name": "list-my-bookings",
            "description": "List the signed-in user's bookings.",
            "inputSchema": object(json!({"user_email": {"type": "string", "description": "The user's email."}}), json!(["user_email"])),
            "_meta": {param: {"user_email": [AUTH_SERVICE]}},
        }),
    ]
}

fn toolset(name: Option<&str>, protocol: &str) -> Option<Vec<Value>> {
    let all = tools(protocol);
    let keep = |names: &[&str]| -> Vec<Value> {
        all.iter().filter(|t| names.contains(&t["name"].as_str().unwrap_or_default())).cloned().collect()
    };
    match name {
        None | Some("") => Some(all.clone()),
        Some("hotels") => Some(keep(&["search-hotels-by-name", "book-hotel"])),
        Some("bookings") => Some(keep(&["list-my-bookings"])),
        Some(_) => None,
    }
}

fn rpc_error(id: &Value, code: i64, message: &str) -> Response {
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})).into_response()
}

fn text_result(id: &Value, text: &str, is_error: bool) -> Response {
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": {
        "content": [{"type": "text", "text": text}], "isError": is_error
    }}))
    .into_response()
}

fn handle(recorded: &Shared, toolset_name: Option<&str>, headers: &HeaderMap, body: &str) -> Response {
    let Ok(message) = serde_json::from_str::<Value>(body) else {
        return rpc_error(&Value::Null, -32700, "parse error");
    };
    let method = message["method"].as_str().unwrap_or_default().to_owned();
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let path = toolset_name.map_or_else(|| "/mcp".to_owned(), |t| format!("/mcp/{t}"));
    let header_pairs: BTreeMap<String, String> = headers
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    if let Ok(mut r) = recorded.lock() {
        r.methods.push((method.clone(), path));
    }
    if message.get("id").is_none() {
        return StatusCode::ACCEPTED.into_response();
    }
    match method.as_str() {
        "initialize" => axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": message.pointer("/params/protocolVersion").cloned().unwrap_or(json!("2025-06-18")),
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": "Toolbox", "version": "test"},
        }}))
        .into_response(),
        "tools/list" => {
            match toolset(toolset_name, header_pairs.get("mcp-protocol-version").map_or("", String::as_str)) {
                Some(tools) => {
                    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}})).into_response()
                }
                None => rpc_error(&id, -32600, "toolset does not exist"),
            }
        }
        "tools/call" => {
            let tool = message.pointer("/params/name").and_then(Value::as_str).unwrap_or_default().to_owned();
            let mut arguments = message.pointer("/params/arguments").cloned().unwrap_or(json!({}));
            if let Ok(mut r) = recorded.lock() {
                r.calls.push(ToolboxCall {
                    tool: tool.clone(),
                    arguments: arguments.clone(),
                    headers: header_pairs.clone(),
                });
            }
            let claim = header_pairs.get(&format!("{AUTH_SERVICE}_token")).and_then(|t| t.strip_prefix(TOKEN_PREFIX));
            let unauthorized = "unauthorized Tool call: Please make sure your specify correct auth headers";
            match tool.as_str() {
                "search-hotels-by-name" => {
                    let Some(name) = arguments["name"].as_str() else {
                        return rpc_error(
                            &id,
                            -32602,
                            "provided parameters were invalid: parameter \"name\" is required",
                        );
                    };
                    let hotels =
                        json!({"hotels": [{"id": 7, "name": format!("Hilton {name}"), "region": arguments["region"]}]});
                    text_result(&id, &hotels.to_string(), false)
                }
                "book-hotel" => match claim {
                    None => rpc_error(&id, -32600, unauthorized),
                    Some(email) => match arguments["hotel_id"].as_i64() {
                        Some(hotel) => text_result(&id, &format!("booked hotel {hotel} for {email}"), false),
                        None => rpc_error(&id, -32602, "provided parameters were invalid: hotel_id must be an integer"),
                    },
                },
                "list-my-bookings" => match claim {
                    None => rpc_error(&id, -32600, unauthorized),
                    Some(email) => {
                        // An authenticated parameter comes from the token, never from the client.
                        arguments["user_email"] = json!(email);
                        let bookings = json!({"user_email": arguments["user_email"], "bookings": [{"hotel_id": 7}]});
                        text_result(&id, &bookings.to_string(), false)
                    }
                },
                other => rpc_error(&id, -32602, &format!("invalid tool name: tool with name {other:?} does not exist")),
            }
        }
        _ => rpc_error(&id, -32601, &format!("method not found: {method}")),
    }
}
