//! MCP toolkits declared in `agentos.toml`, connected once at startup:
//!
//! ```toml
//! tools = [
//!   { toolkit = "mcp", command = "npx -y @modelcontextprotocol/server-everything", include_tools = ["echo"] },
//!   { toolkit = "mcp", url = "http://127.0.0.1:3001/mcp", transport = "streamable-http", headers = { Authorization = "Bearer ..." } },
//!   { toolkit = "mcp", url = "http://127.0.0.1:3002/sse", transport = "sse", headers = { "X-User" = "{user_id}" } },
//! ]
//! ```
//!
//! A header value naming `{user_id}`, `{session_id}`, `{run_id}` or `{agent_id}` is filled from
//! each call (Agno's `header_provider`): under JWT auth `{user_id}` is the caller's `sub`.
//!
//! A server that fails to start or initialise is a startup error naming it, unless the table says
//! `optional = true` (the agent then starts without those tools, with a warning).

use std::collections::HashMap;
use std::time::Duration;

use std::sync::Arc;

use agno_mcp::{HeaderTemplates, McpConfig, McpToolkit, Transport};
use serde_json::{Map, Value};

use crate::config::{OsConfig, ToolSpec};

/// The connected MCP toolkits of a config, by their table (`None`: optional and unavailable).
#[derive(Debug, Default)]
pub struct McpToolkits(HashMap<String, Option<McpToolkit>>);

impl McpToolkits {
    /// The toolkit of an `mcp` tool table.
    pub fn get(&self, table: &Map<String, Value>) -> Option<&Option<McpToolkit>> {
        self.0.get(&key(table))
    }
}

fn key(table: &Map<String, Value>) -> String {
    Value::Object(table.clone()).to_string()
}

const FIELDS: &[&str] = &[
    "toolkit",
    "id",
    "command",
    "args",
    "env",
    "url",
    "transport",
    "headers",
    "include_tools",
    "exclude_tools",
    "tool_name_prefix",
    "timeout_seconds",
    "max_result_bytes",
    "optional",
];

fn strings(table: &Map<String, Value>, field: &str) -> Result<Option<Vec<String>>, String> {
    match table.get(field) {
        None => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| format!("{field} must be a list of strings")))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!("{field} must be a list of strings")),
    }
}

fn pairs(table: &Map<String, Value>, field: &str) -> Result<Vec<(String, String)>, String> {
    match table.get(field) {
        None => Ok(Vec::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| {
                v.as_str().map(|s| (k.clone(), s.to_owned())).ok_or_else(|| format!("{field}.{k} must be a string"))
            })
            .collect(),
        Some(_) => Err(format!("{field} must be a table of strings")),
    }
}

/// An `mcp` tool table as a connection config, and whether the server is optional.
///
/// # Errors
/// A message naming the field to fix.
pub fn parse(table: &Map<String, Value>) -> Result<(McpConfig, bool), String> {
    if let Some(unknown) = table.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        if matches!(unknown.as_str(), "auth_tokens" | "auth_headers") {
            return Err(format!("{unknown} was removed in Agno v3: use headers (or auth_token_getters on MCPToolbox)"));
        }
        return Err(format!("unknown field {unknown:?} in an mcp toolkit (fields: {})", FIELDS.join(", ")));
    }
    let text = |field: &str| table.get(field).and_then(Value::as_str).map(str::to_owned);
    let headers = pairs(table, "headers")?;
    let templates = HeaderTemplates::parse(&headers)?;
    // Headers that name a call's value are filled per call; fixed ones go with the transport.
    let (fixed, per_call) = if templates.is_dynamic() { (Vec::new(), Some(templates)) } else { (headers, None) };
    let http_url = |url: String| {
        if url.starts_with("http://") || url.starts_with("https://") {
            Ok(url)
        } else {
            Err(format!("url must be an http(s) URL, not {url:?}"))
        }
    };
    let transport = match (text("transport").as_deref(), text("command"), text("url")) {
        (_, Some(_), Some(_)) => return Err("give command (stdio) or url (streamable-http, sse), not both".to_owned()),
        (Some("stdio") | None, Some(command), None) => {
            let mut words = command.split_whitespace().map(str::to_owned);
            let program = words.next().ok_or("command must not be empty")?;
            let mut args: Vec<String> = words.collect();
            args.extend(strings(table, "args")?.unwrap_or_default());
            Transport::Stdio { command: program, args, env: pairs(table, "env")? }
        }
        (Some("streamable-http" | "streamable_http" | "http") | None, None, Some(url)) => {
            Transport::StreamableHttp { url: http_url(url)?, headers: fixed }
        }
        (Some("sse"), None, Some(url)) => Transport::Sse { url: http_url(url)?, headers: fixed },
        (Some(other), _, _) if !matches!(other, "stdio" | "streamable-http" | "streamable_http" | "http" | "sse") => {
            return Err(format!("transport must be \"stdio\", \"streamable-http\" or \"sse\", not {other:?}"));
        }
        (Some(transport), _, _) => {
            return Err(format!(
                "transport \"{transport}\" needs {}",
                if transport == "stdio" { "command = \"...\"" } else { "url = \"http://...\"" }
            ));
        }
        _ => {
            return Err(
                "an mcp toolkit needs command = \"...\" (stdio) or url = \"http://...\" (streamable-http, sse)"
                    .to_owned(),
            );
        }
    };
    let mut config = McpConfig::new(transport);
    if let Some(id) = text("id") {
        config.id = id;
    }
    config.include_tools = strings(table, "include_tools")?;
    config.exclude_tools = strings(table, "exclude_tools")?.unwrap_or_default();
    config.tool_name_prefix = text("tool_name_prefix");
    if let Some(t) = table.get("timeout_seconds") {
        let seconds = t.as_f64().filter(|s| *s > 0.0).ok_or("timeout_seconds must be a positive number")?;
        config.timeout = Duration::from_secs_f64(seconds);
    }
    if let Some(limit) = table.get("max_result_bytes") {
        config.max_result_bytes =
            limit.as_u64().filter(|n| *n > 0).ok_or("max_result_bytes must be a positive integer")? as usize;
    }
    config.header_provider = per_call.map(|t| Arc::new(t) as Arc<dyn agno_mcp::HeaderProvider>);
    let optional = table.get("optional").and_then(Value::as_bool).unwrap_or(false);
    Ok((config, optional))
}

/// Connects every `mcp` toolkit the config's agents declare (each distinct table once).
///
/// # Errors
/// The agent and the reason, for a bad table or a server that cannot be used (unless optional).
pub async fn connect_all(config: &OsConfig) -> Result<McpToolkits, crate::app::StartError> {
    let mut kits = McpToolkits::default();
    for agent in &config.agents {
        for tool in &agent.tools {
            let ToolSpec::Table(table) = tool else { continue };
            if table.get("toolkit").and_then(Value::as_str) != Some("mcp") || kits.0.contains_key(&key(table)) {
                continue;
            }
            let fail = |message: String| crate::app::StartError::Agent { id: agent.id.clone(), message };
            let (mcp, optional) = parse(table).map_err(fail)?;
            let server = mcp.transport.describe();
            let kit = match McpToolkit::connect(mcp).await {
                Ok(kit) => Some(kit),
                Err(e) if optional => {
                    tracing::warn!(agent = %agent.id, %server, error = %e, "optional MCP server unavailable; the agent starts without its tools");
                    None
                }
                Err(e) => return Err(fail(format!("{e} (mark the toolkit optional = true to start without it)"))),
            };
            kits.0.insert(key(table), kit);
        }
    }
    Ok(kits)
}
