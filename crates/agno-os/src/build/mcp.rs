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
//! An MCP Toolbox for Databases server (Agno's `MCPToolbox`) is a `mcp_toolbox` table:
//!
//! ```toml
//! tools = [{ toolkit = "mcp_toolbox", url = "http://127.0.0.1:5000", toolsets = ["hotels"],
//!            auth_token_getters = { my-google-auth = { file = "/var/run/secrets/id-token" } },
//!            bound_params = { region = "eu", user = "{user_id}" } }]
//! ```
//!
//! A getter is `{ env = "VAR" }`, `{ file = "PATH" }` or `{ command = "program args" }`, read
//! or run on every call (so a rotated token is picked up); a bound value is any TOML value, a
//! string with placeholders filled per call.
//!
//! A server that fails to start or initialise is a startup error naming it, unless the table says
//! `optional = true` (the agent then starts without those tools, with a warning).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agno_core::{DynTool, ToolContext};
use agno_mcp::{
    AuthTokenGetter, BoundValue, CallTemplate, HeaderTemplates, McpConfig, McpToolbox, McpToolkit, ToolboxConfig,
    Transport,
};
use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::config::{OsConfig, ToolSpec};

/// A connected server's tools: an `mcp` or `mcp_toolbox` table's.
#[derive(Debug, Clone)]
pub struct ConnectedKit {
    id: String,
    tools: Vec<Arc<dyn DynTool>>,
}

impl ConnectedKit {
    /// The toolkit's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Its tools.
    pub fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        self.tools.clone()
    }
}

/// The connected MCP toolkits of a config, by their table (`None`: optional and unavailable).
#[derive(Debug, Default)]
pub struct McpToolkits(HashMap<String, Option<ConnectedKit>>);

impl McpToolkits {
    /// The toolkit of an `mcp` or `mcp_toolbox` tool table.
    pub fn get(&self, table: &Map<String, Value>) -> Option<&Option<ConnectedKit>> {
        self.0.get(&key(table))
    }
}

/// Whether a tool table is one this module connects (`mcp`, `mcp_toolbox`).
pub fn is_mcp_table(table: &Map<String, Value>) -> bool {
    matches!(table.get("toolkit").and_then(Value::as_str), Some("mcp" | "mcp_toolbox"))
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

/// The `timeout_seconds` and `max_result_bytes` of a table, when given.
fn limits(table: &Map<String, Value>) -> Result<(Option<Duration>, Option<usize>), String> {
    let timeout = match table.get("timeout_seconds") {
        None => None,
        Some(t) => Some(Duration::from_secs_f64(
            t.as_f64().filter(|s| *s > 0.0).ok_or("timeout_seconds must be a positive number")?,
        )),
    };
    let max = match table.get("max_result_bytes") {
        None => None,
        Some(n) => Some(n.as_u64().filter(|n| *n > 0).ok_or("max_result_bytes must be a positive integer")? as usize),
    };
    Ok((timeout, max))
}

/// Fixed headers, and the provider of per-call ones.
type Headers = (Vec<(String, String)>, Option<Arc<dyn agno_mcp::HeaderProvider>>);

/// A table's `headers`: fixed ones, or (when any names a call's value) templates filled per call.
fn headers(table: &Map<String, Value>) -> Result<Headers, String> {
    let headers = pairs(table, "headers")?;
    let templates = HeaderTemplates::parse(&headers)?;
    Ok(if templates.is_dynamic() { (Vec::new(), Some(Arc::new(templates))) } else { (headers, None) })
}

/// `url` when it is an http(s) URL.
fn http_url(url: &str) -> Option<&str> {
    (url.starts_with("http://") || url.starts_with("https://")).then_some(url)
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
    // Headers that name a call's value are filled per call; fixed ones go with the transport.
    let (fixed, per_call) = headers(table)?;
    let http_url = |url: String| match http_url(&url) {
        Some(_) => Ok(url),
        None => Err(format!("url must be an http(s) URL, not {url:?}")),
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
    let (timeout, max_result_bytes) = limits(table)?;
    config.timeout = timeout.unwrap_or(config.timeout);
    config.max_result_bytes = max_result_bytes.unwrap_or(config.max_result_bytes);
    config.header_provider = per_call;
    let optional = table.get("optional").and_then(Value::as_bool).unwrap_or(false);
    Ok((config, optional))
}

const TOOLBOX_FIELDS: &[&str] = &[
    "toolkit",
    "id",
    "url",
    "transport",
    "append_mcp_to_url",
    "toolsets",
    "tool_name",
    "headers",
    "auth_token_getters",
    "bound_params",
    "timeout_seconds",
    "max_result_bytes",
    "optional",
];

/// A token read or made on every call.
#[derive(Debug)]
enum ConfigGetter {
    Env(String),
    File(PathBuf),
    Command(Vec<String>),
}

/// Longest a token command may run.
const TOKEN_COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

#[async_trait]
impl AuthTokenGetter for ConfigGetter {
    async fn token(&self, _ctx: &ToolContext) -> Result<String, String> {
        let token = match self {
            ConfigGetter::Env(var) => {
                std::env::var(var).map_err(|_| format!("the environment variable {var} is not set"))?
            }
            ConfigGetter::File(path) => tokio::fs::read_to_string(path)
                .await
                .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?,
            ConfigGetter::Command(words) => {
                let (program, args) = words.split_first().ok_or("the token command is empty")?;
                let run = tokio::process::Command::new(program).args(args).kill_on_drop(true).output();
                let out = tokio::time::timeout(TOKEN_COMMAND_TIMEOUT, run)
                    .await
                    .map_err(|_| format!("the token command {program} did not finish within 10 s"))?
                    .map_err(|e| format!("cannot run the token command {program}: {e}"))?;
                if !out.status.success() {
                    let err = String::from_utf8_lossy(&out.stderr);
                    return Err(format!("the token command {program} failed ({}): {}", out.status, err.trim()));
                }
                String::from_utf8(out.stdout).map_err(|_| format!("the token command {program} printed non-UTF-8"))?
            }
        };
        let token = token.trim();
        if token.is_empty() {
            return Err("the token is empty".to_owned());
        }
        Ok(token.to_owned())
    }
}

fn getter(service: &str, spec: &Value) -> Result<Arc<dyn AuthTokenGetter>, String> {
    let fix = || {
        format!(
            "auth_token_getters.{service} must be {{ env = \"VAR\" }}, {{ file = \"PATH\" }} or {{ command = \"program args\" }}"
        )
    };
    let table = spec.as_object().filter(|t| t.len() == 1).ok_or_else(fix)?;
    let (kind, value) = table.iter().next().ok_or_else(fix)?;
    let value = value.as_str().filter(|v| !v.trim().is_empty()).ok_or_else(fix)?;
    Ok(Arc::new(match kind.as_str() {
        "env" => ConfigGetter::Env(value.to_owned()),
        "file" => ConfigGetter::File(PathBuf::from(value)),
        "command" => ConfigGetter::Command(value.split_whitespace().map(str::to_owned).collect()),
        _ => return Err(fix()),
    }))
}

fn bound_value(name: &str, value: &Value) -> Result<BoundValue, String> {
    if let Value::String(text) = value {
        let template = CallTemplate::parse(&format!("bound_params.{name}"), text)?;
        if template.is_dynamic() {
            return Ok(BoundValue::Computed(Arc::new(move |ctx: &ToolContext| {
                template.render(ctx).map(Value::String)
            })));
        }
    }
    Ok(BoundValue::Fixed(value.clone()))
}

/// An `mcp_toolbox` tool table as a Toolbox config, and whether the server is optional.
///
/// # Errors
/// A message naming the field to fix.
pub fn parse_toolbox(table: &Map<String, Value>) -> Result<(ToolboxConfig, bool), String> {
    if let Some(unknown) = table.keys().find(|k| !TOOLBOX_FIELDS.contains(&k.as_str())) {
        if matches!(unknown.as_str(), "auth_tokens" | "auth_headers") {
            return Err(format!(
                "{unknown} was removed in Agno v3: use auth_token_getters = {{ <auth service> = {{ env = \"VAR\" }} }}"
            ));
        }
        return Err(format!(
            "unknown field {unknown:?} in an mcp_toolbox toolkit (fields: {})",
            TOOLBOX_FIELDS.join(", ")
        ));
    }
    let url = table
        .get("url")
        .and_then(Value::as_str)
        .and_then(http_url)
        .ok_or("an mcp_toolbox toolkit needs url = \"http(s)://...\" (the Toolbox server)")?;
    match table.get("transport").and_then(Value::as_str) {
        None | Some("streamable-http" | "streamable_http" | "http") => {}
        Some(other) => return Err(format!("an mcp_toolbox toolkit speaks streamable-http, not {other:?}")),
    }
    let mut config = ToolboxConfig::new(url);
    if let Some(id) = table.get("id").and_then(Value::as_str) {
        config.id = id.to_owned();
    }
    if let Some(append) = table.get("append_mcp_to_url") {
        config.append_mcp_to_url = append.as_bool().ok_or("append_mcp_to_url must be true or false")?;
    }
    config.toolsets = strings(table, "toolsets")?.unwrap_or_default();
    config.tool_name = table.get("tool_name").and_then(Value::as_str).map(str::to_owned);
    let (fixed, per_call) = headers(table)?;
    config.headers = fixed;
    config.header_provider = per_call;
    if let Some(getters) = table.get("auth_token_getters") {
        let getters = getters.as_object().ok_or("auth_token_getters must be a table of auth service = getter")?;
        config.auth_token_getters = getters
            .iter()
            .map(|(service, spec)| Ok((service.clone(), getter(service, spec)?)))
            .collect::<Result<BTreeMap<_, _>, String>>()?;
    }
    if let Some(bound) = table.get("bound_params") {
        let bound = bound.as_object().ok_or("bound_params must be a table of parameter = value")?;
        config.bound_params = bound
            .iter()
            .map(|(name, value)| Ok((name.clone(), bound_value(name, value)?)))
            .collect::<Result<BTreeMap<_, _>, String>>()?;
    }
    let (timeout, max_result_bytes) = limits(table)?;
    config.timeout = timeout.unwrap_or(config.timeout);
    config.max_result_bytes = max_result_bytes.unwrap_or(config.max_result_bytes);
    let optional = table.get("optional").and_then(Value::as_bool).unwrap_or(false);
    Ok((config, optional))
}

/// Connects one `mcp` or `mcp_toolbox` table: the server's description and its tools.
async fn connect(
    table: &Map<String, Value>,
) -> Result<(String, bool, Result<ConnectedKit, agno_mcp::McpError>), String> {
    if table.get("toolkit").and_then(Value::as_str) == Some("mcp_toolbox") {
        let (config, optional) = parse_toolbox(table)?;
        let server = config.url.clone();
        let kit = McpToolbox::connect(config).await.map(|k| ConnectedKit { id: k.id().to_owned(), tools: k.tools() });
        return Ok((server, optional, kit));
    }
    let (config, optional) = parse(table)?;
    let server = config.transport.describe();
    let kit = McpToolkit::connect(config).await.map(|k| ConnectedKit { id: k.id().to_owned(), tools: k.tools() });
    Ok((server, optional, kit))
}

/// Connects every `mcp` and `mcp_toolbox` toolkit the config's agents declare (each distinct
/// table once).
///
/// # Errors
/// The agent and the reason, for a bad table or a server that cannot be used (unless optional).
pub async fn connect_all(config: &OsConfig) -> Result<McpToolkits, crate::build::StartError> {
    let mut kits = McpToolkits::default();
    for agent in &config.agents {
        for tool in &agent.tools {
            let ToolSpec::Table(table) = tool else { continue };
            if !is_mcp_table(table) || kits.0.contains_key(&key(table)) {
                continue;
            }
            let fail = |message: String| crate::build::StartError::Agent { id: agent.id.clone(), message };
            let (server, optional, connected) = connect(table).await.map_err(fail)?;
            let kit = match connected {
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
