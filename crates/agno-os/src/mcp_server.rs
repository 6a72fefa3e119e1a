//! AgentOS as an MCP server (`[mcp_server] enabled = true`): streamable HTTP at `/mcp`, one tool
//! per agent (`message`, optional `session_id`), answered by running the agent. The route is in
//! the route table like every other, so the caller is authenticated and scoped before MCP sees
//! the request; each call runs as the caller (under user isolation, confined to their own
//! sessions), and only the agents the caller may run are listed or callable.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer};
use serde::Deserialize;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::auth::Principal;
use crate::error::ApiError;
use crate::state::{AppState, ServedAgent};

/// `[mcp_server]` settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerSettings {
    /// Serve `/mcp`.
    #[serde(default)]
    pub enabled: bool,
    /// Host names (with port, if any) clients may address the server by, besides localhost
    /// (DNS-rebinding protection of the MCP transport).
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
}

/// The MCP view of the OS's agents.
#[derive(Clone)]
struct OsMcp {
    agents: Arc<Vec<ServedAgent>>,
    db: Option<Arc<dyn agno_core::Db>>,
}

/// The MCP service of one OS.
#[derive(Clone)]
pub struct McpService(StreamableHttpService<OsMcp, LocalSessionManager>);

impl std::fmt::Debug for McpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("McpService")
    }
}

/// The service for `state` (built once per OS).
pub(crate) fn service(state: &AppState) -> McpService {
    let mcp = OsMcp { agents: Arc::clone(&state.agents), db: state.db.clone() };
    let mut config = StreamableHttpServerConfig::default();
    config.allowed_hosts.extend(state.mcp_server.allowed_hosts.iter().cloned());
    config.cancellation_token = state.stopping.child_token();
    McpService(StreamableHttpService::new(move || Ok(mcp.clone()), Arc::new(LocalSessionManager::default()), config))
}

/// `/mcp` (POST, GET, DELETE): the MCP streamable HTTP endpoint.
pub async fn mcp(State(state): State<AppState>, request: Request) -> Response {
    let Some(service) = state.mcp.as_ref() else {
        return ApiError::not_found("the MCP server is off: set [mcp_server] enabled = true in agentos.toml")
            .into_response();
    };
    match service.0.clone().oneshot(request).await {
        Ok(response) => response.into_response(),
        Err(never) => match never {},
    }
}

fn caller(ctx: &RequestContext<RoleServer>) -> Result<Principal, ErrorData> {
    ctx.extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Principal>().cloned())
        .ok_or_else(|| ErrorData::invalid_request("the request carries no authenticated caller", None))
}

impl OsMcp {
    /// The agents `principal` may run.
    fn runnable<'a>(&'a self, principal: &Principal) -> Vec<&'a ServedAgent> {
        let allowed = principal.accessible("agents", "run");
        self.agents
            .iter()
            .filter(|a| allowed.as_ref().is_none_or(|ids| ids.iter().any(|i| i == a.agent.id())))
            .collect()
    }
}

impl ServerHandler for OsMcp {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("agno-rs AgentOS", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let principal = caller(&ctx)?;
        let schema = json!({
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "What to ask the agent."},
                "session_id": {"type": "string", "description": "Continue this session of yours (default: a new one)."}
            },
            "required": ["message"]
        });
        let schema = Arc::new(schema.as_object().cloned().unwrap_or_default());
        let tools = self
            .runnable(&principal)
            .into_iter()
            .map(|a| {
                let description = a
                    .agent
                    .description()
                    .map_or_else(|| format!("Ask the agent {}", a.agent.name().unwrap_or(a.agent.id())), str::to_owned);
                Tool::new(a.agent.id().to_owned(), description, Arc::clone(&schema))
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let principal = caller(&ctx)?;
        let Some(served) = self.runnable(&principal).into_iter().find(|a| a.agent.id() == request.name) else {
            return Err(ErrorData::invalid_params(format!("no agent {} that you may run", request.name), None));
        };
        let args = request.arguments.unwrap_or_default();
        let Some(message) = args.get("message").and_then(Value::as_str) else {
            return Err(ErrorData::invalid_params("message is required", None));
        };
        let user_id = principal.user_scope(None).or_else(|| principal.subject.clone());
        let mut run = agno_runtime::RunRequest::from(message);
        run.user_id.clone_from(&user_id);
        if let Some(session_id) = args.get("session_id").and_then(Value::as_str) {
            // Another user's session is no one's to continue here.
            if let (Some(db), true) = (&self.db, principal.isolated) {
                let theirs = db.get_session(session_id, None, Some(0)).await.ok().flatten();
                if theirs.is_some_and(|s| s.user_id != user_id) {
                    return Err(ErrorData::invalid_params(format!("session {session_id} not found"), None));
                }
            }
            run.session_id = Some(session_id.to_owned());
        }
        Ok(match served.agent.arun(run).await {
            Ok(out) => {
                let mut result = CallToolResult::success(vec![ContentBlock::text(out.content_text())]);
                result.structured_content =
                    Some(json!({"run_id": out.run_id, "session_id": out.session_id, "content": out.content}));
                result.into()
            }
            Err(e) => CallToolResult::error(vec![ContentBlock::text(format!("the run failed: {e}"))]).into(),
        })
    }
}
