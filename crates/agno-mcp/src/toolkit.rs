//! The toolkit: one server's tools as agent tools.

use std::sync::Arc;
use std::time::Duration;

use agno_core::{DynTool, ToolContext, ToolDefinition, ToolError, ToolErrorKind, ToolFlags, ToolOutput};
use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::session::{HeaderProvider, McpError, Sessions, Transport};

/// An MCP server to take tools from (Agno's `MCPTools`).
#[derive(Debug, Clone)]
pub struct McpConfig {
    /// The toolkit's id (default `mcp`).
    pub id: String,
    /// How to reach the server.
    pub transport: Transport,
    /// Only these tools (server names), when given.
    pub include_tools: Option<Vec<String>>,
    /// Not these tools.
    pub exclude_tools: Vec<String>,
    /// Prefix of the tools' names as the model sees them.
    pub tool_name_prefix: Option<String>,
    /// Longest a connection or a call may take (default 30 s).
    pub timeout: Duration,
    /// Headers per call, from the call's context.
    pub header_provider: Option<Arc<dyn HeaderProvider>>,
    /// Longest result (as text) passed to the model, in bytes (default 1 MiB); a longer one is
    /// a tool error.
    pub max_result_bytes: usize,
}

/// Default of [`McpConfig::max_result_bytes`].
pub const DEFAULT_MAX_RESULT_BYTES: usize = 1024 * 1024;

impl McpConfig {
    /// A server at `transport` with the defaults.
    pub fn new(transport: Transport) -> Self {
        Self {
            id: "mcp".to_owned(),
            transport,
            include_tools: None,
            exclude_tools: Vec::new(),
            tool_name_prefix: None,
            timeout: Duration::from_secs(30),
            header_provider: None,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
        }
    }
}

/// A connected server's tools.
#[derive(Debug, Clone)]
pub struct McpToolkit {
    id: String,
    tools: Vec<Arc<McpTool>>,
}

/// One MCP tool as an agent tool.
#[derive(Debug)]
pub struct McpTool {
    /// The name on the server.
    server_name: String,
    definition: ToolDefinition,
    flags: ToolFlags,
    sessions: Arc<Sessions>,
    header_provider: Option<Arc<dyn HeaderProvider>>,
    max_result_bytes: usize,
    /// Why the server's input schema cannot be used, when it cannot: every call fails saying so.
    bad_schema: Option<String>,
}

impl McpToolkit {
    /// Connects to the server and lists its tools.
    ///
    /// # Errors
    /// [`McpError::Connect`] when the server cannot be started, reached or initialised (a
    /// startup error unless the caller treats the server as optional); [`McpError::Config`]
    /// when an included tool does not exist.
    pub async fn connect(config: McpConfig) -> Result<Self, McpError> {
        let sessions = Arc::new(Sessions::new(config.transport.clone(), config.timeout));
        let listed = sessions.list_tools().await?;
        let mut tools = Vec::new();
        for tool in listed {
            let Some(name) = tool.get("name").and_then(Value::as_str).map(str::to_owned) else { continue };
            if config.include_tools.as_ref().is_some_and(|only| !only.contains(&name))
                || config.exclude_tools.contains(&name)
            {
                continue;
            }
            let (schema, bad_schema) = match tool.get("inputSchema") {
                Some(schema) => match schema_problem(schema) {
                    None => (schema.clone(), None),
                    Some(why) => {
                        tracing::warn!(server = %config.transport.describe(), tool = %name, %why, "MCP tool has an invalid input schema; its calls will fail");
                        (empty_schema(), Some(why))
                    }
                },
                None => (empty_schema(), None),
            };
            let exposed = format!("{}{name}", config.tool_name_prefix.as_deref().unwrap_or_default());
            tools.push(Arc::new(McpTool {
                server_name: name,
                definition: ToolDefinition {
                    name: exposed,
                    description: tool.get("description").and_then(Value::as_str).map(str::to_owned),
                    parameters: Arc::new(schema),
                    strict: false,
                },
                flags: ToolFlags::default(),
                sessions: Arc::clone(&sessions),
                header_provider: config.header_provider.clone(),
                max_result_bytes: config.max_result_bytes,
                bad_schema,
            }));
        }
        if let Some(only) = &config.include_tools {
            let missing: Vec<&String> = only.iter().filter(|n| !tools.iter().any(|t| &t.server_name == *n)).collect();
            if !missing.is_empty() {
                let names: Vec<&str> = tools.iter().map(|t| t.server_name.as_str()).collect();
                return Err(McpError::Config(format!(
                    "include_tools names tools the MCP server {} does not have: {missing:?} (it has: {})",
                    config.transport.describe(),
                    names.join(", ")
                )));
            }
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

/// The input schema of a tool that takes no arguments (or whose own schema cannot be used).
pub(crate) fn empty_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// Refuses a result longer than `limit` bytes, naming the tool and the option.
pub(crate) fn check_result_size(tool: &str, text: &str, limit: usize) -> Result<(), ToolError> {
    if text.len() > limit {
        return Err(ToolError::execution(format!(
            "the result of {tool} is {} bytes, over the limit of {limit} bytes (max_result_bytes); ask for less",
            text.len()
        )));
    }
    Ok(())
}

/// Why an input schema from a server cannot be given to a model: not an object, not valid JSON
/// Schema (checked against its meta-schema), or not compilable (a bad `$ref` or pattern).
fn schema_problem(schema: &Value) -> Option<String> {
    if !schema.is_object() {
        return Some(format!("the input schema is not a JSON object: {schema}"));
    }
    if let Err(e) = jsonschema::meta::validate(schema) {
        return Some(format!("the input schema is not valid JSON Schema: {e}"));
    }
    jsonschema::validator_for(schema).err().map(|e| format!("the input schema cannot be used: {e}"))
}

/// An MCP tool result as the text the model sees.
fn result_text(result: &Value) -> String {
    let mut parts = Vec::new();
    for block in result.get("content").and_then(Value::as_array).into_iter().flatten() {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "text" => parts.push(block.get("text").and_then(Value::as_str).unwrap_or_default().to_owned()),
            "image" | "audio" => parts.push(format!(
                "[{kind} ({}), {} bytes base64]",
                block.get("mimeType").and_then(Value::as_str).unwrap_or("unknown type"),
                block.get("data").and_then(Value::as_str).map_or(0, str::len)
            )),
            "resource_link" => parts.push(format!(
                "[resource {}{}]",
                block.get("uri").and_then(Value::as_str).unwrap_or_default(),
                block.get("name").and_then(Value::as_str).map(|n| format!(" ({n})")).unwrap_or_default()
            )),
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or_default();
                match resource.get("text").and_then(Value::as_str) {
                    Some(text) => parts.push(format!("[resource {uri}]\n{text}")),
                    None => parts.push(format!("[resource {uri}]")),
                }
            }
            _ => parts.push(block.to_string()),
        }
    }
    if let Some(structured) = result.get("structuredContent").filter(|s| !s.is_null() && parts.is_empty()) {
        parts.push(structured.to_string());
    }
    parts.join("\n")
}

#[async_trait]
impl DynTool for McpTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn flags(&self) -> &ToolFlags {
        &self.flags
    }

    async fn call(&self, args: Map<String, Value>, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        if let Some(why) = &self.bad_schema {
            return Err(ToolError::execution(format!(
                "the MCP server {} gave tool {} an unusable input schema, so it cannot be called: {why}",
                self.sessions.transport.describe(),
                self.server_name
            )));
        }
        let mut headers = self.header_provider.as_ref().map(|p| p.headers(&ctx)).unwrap_or_default();
        headers.sort();
        let result = self.sessions.call(&self.server_name, args, &headers).await.map_err(|e| match e {
            McpError::Timeout { .. } => ToolError::new(ToolErrorKind::Timeout, e.to_string()),
            other => ToolError::execution(other.to_string()),
        })?;
        let text = result_text(&result);
        check_result_size(&self.server_name, &text, self.max_result_bytes)?;
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            return Err(ToolError::execution(text));
        }
        Ok(text)
    }

    fn trace_attributes(&self) -> Vec<(&'static str, String)> {
        mcp_call_attributes(&self.server_name, &self.sessions.transport)
    }
}

/// The attributes of a `tools/call` span: the method, the tool's name on the server, and where
/// the server is (OpenTelemetry's MCP conventions).
pub(crate) fn mcp_call_attributes(tool: &str, transport: &Transport) -> Vec<(&'static str, String)> {
    let mut attributes = vec![("mcp.method.name", "tools/call".to_owned()), ("gen_ai.tool.name", tool.to_owned())];
    attributes.extend(transport.trace_attributes());
    attributes
}
