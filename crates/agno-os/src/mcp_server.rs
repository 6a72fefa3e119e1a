//! AgentOS as an MCP server (`[mcp_server] enabled = true`): streamable HTTP at `/mcp`, with the
//! tools Python AgentOS 3.1 serves there: `get_agentos_config`, `run_agent`, `run_team`,
//! `run_workflow`, `continue_run`, `cancel_run`, `get_sessions` and `get_session_runs`.
//!
//! Each tool is the REST route it stands for (`run_agent` is `POST /agents/{agent_id}/runs`,
//! `get_sessions` is `GET /sessions`, ...), called in process with the caller's own
//! `Authorization` header: the same authentication, scopes, user isolation, session ownership and
//! errors as over REST, by construction rather than by a second copy of the checks. The `/mcp`
//! route itself is in the route table, so the caller is authenticated before MCP sees the
//! request. Run results are Python's "trimmed" results: the answer as text, and
//! `structuredContent` with `run_id`, `session_id`, `status`, `content`, the component's id and,
//! for a paused run, its `requirements`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer};
use serde_json::{Map, Value, json};
use tower::ServiceExt;

use crate::in_process::{Loopback, path_segment};
use tokio_util::sync::CancellationToken;

pub use crate::config::McpServerSettings;

/// Largest REST answer a tool reads back.
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// The MCP view of the OS: its own routes, behind its own authorisation layer.
#[derive(Clone)]
struct OsMcp {
    routes: Loopback,
}

/// The MCP service of one OS.
#[derive(Clone)]
pub struct McpService(StreamableHttpService<OsMcp, LocalSessionManager>);

impl std::fmt::Debug for McpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("McpService")
    }
}

/// The service over the OS's `routes` (built once per OS): `allowed_hosts` besides localhost, and
/// its sessions end with `stop`.
pub(crate) fn service(routes: Loopback, allowed_hosts: &[String], stop: CancellationToken) -> McpService {
    let mcp = OsMcp { routes };
    let mut config = StreamableHttpServerConfig::default();
    config.allowed_hosts.extend(allowed_hosts.iter().cloned());
    config.cancellation_token = stop;
    McpService(StreamableHttpService::new(move || Ok(mcp.clone()), Arc::new(LocalSessionManager::default()), config))
}

impl McpService {
    /// Answers one request to `/mcp`.
    pub async fn handle(&self, request: Request) -> Response {
        match self.0.clone().oneshot(request).await {
            Ok(response) => response.into_response(),
            Err(never) => match never {},
        }
    }
}

/// The caller's `Authorization` header (absent when the OS has no auth).
fn credentials(ctx: &RequestContext<RoleServer>) -> Result<Option<header::HeaderValue>, ErrorData> {
    let parts = ctx
        .extensions
        .get::<axum::http::request::Parts>()
        .ok_or_else(|| ErrorData::invalid_request("the request carries no HTTP parts", None))?;
    Ok(parts.headers.get(header::AUTHORIZATION).cloned())
}

/// A REST answer: its status and JSON body.
struct Answer {
    status: StatusCode,
    body: Value,
}

impl Answer {
    /// The error text of a refused call (the route's `detail`).
    fn detail(&self) -> String {
        match self.body.get("detail") {
            Some(Value::String(d)) => d.clone(),
            Some(other) => other.to_string(),
            None => format!("HTTP {}", self.status.as_u16()),
        }
    }
}

impl OsMcp {
    /// Calls one of the OS's routes as the caller.
    async fn rest(
        &self,
        auth: Option<&header::HeaderValue>,
        method: Method,
        uri: &str,
        form: Option<&[(&str, String)]>,
    ) -> Result<Answer, ErrorData> {
        let mut builder = axum::http::Request::builder().method(method).uri(uri);
        if let Some(auth) = auth {
            builder = builder.header(header::AUTHORIZATION, auth);
        }
        let body = match form {
            Some(fields) => {
                builder = builder.header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
                Body::from(query_string(fields))
            }
            None => Body::empty(),
        };
        let request = builder.body(body).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let (status, bytes) =
            self.routes.send(request, BODY_LIMIT).await.map_err(|e| ErrorData::internal_error(e, None))?;
        let body = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        Ok(Answer { status, body })
    }
}

/// A refused call as Python's MCP server words it.
fn refused(tool: &str, answer: &Answer) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(format!("Error calling tool '{tool}': {}", answer.detail()))]).into()
}

/// A listed component as `get_agentos_config` shows it (Python's `AgentSummaryResponse`,
/// `TeamSummaryResponse`, `WorkflowSummaryResponse`).
fn summary(family: &str, item: &Value) -> Value {
    let field = |key: &str| item.get(key).cloned().unwrap_or(Value::Null);
    let model = item.get("model").map(|m| json!({"id": m.get("model"), "provider": m.get("provider")}));
    let mut out =
        json!({"id": field("id"), "name": field("name"), "description": field("description"), "db_id": field("db_id")});
    match family {
        "workflows" => {
            out["is_factory"] = item.get("is_factory").cloned().unwrap_or(json!(false));
            out["factory_input_schema"] = Value::Null;
            out["is_component"] = item.get("is_component").cloned().unwrap_or(json!(false));
            out["current_version"] = Value::Null;
            out["stage"] = Value::Null;
        }
        family => {
            if family == "teams" {
                out["mode"] = field("mode");
            }
            out["model"] = model.unwrap_or(Value::Null);
            out["metadata"] = field("metadata");
        }
    }
    out["sandboxed"] = item.get("sandboxed").cloned().unwrap_or(json!(false));
    out
}

/// A session of `get_sessions` with every field Python's shows (REST leaves out the empty ones).
fn full_session(mut session: Value) -> Value {
    if let Some(fields) = session.as_object_mut() {
        for key in ["user_id", "agent_id", "team_id", "workflow_id", "session_summary", "metadata"] {
            fields.entry(key).or_insert(Value::Null);
        }
    }
    session
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Python's trimmed run result.
fn run_result(run: &Value) -> CallToolResponse {
    let status = run.get("status").and_then(Value::as_str).unwrap_or_default().to_owned();
    let requirements: Option<Vec<Value>> = (status == "PAUSED").then(|| {
        run.get("requirements")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|r| !is_resolved(r))
            .cloned()
            .collect()
    });
    let mut text = text_of(run.get("content").unwrap_or(&Value::Null));
    if text.is_empty()
        && let Some(open) = &requirements
    {
        text = format!("Run paused: {} requirement(s) awaiting resolution.", open.len());
    }
    let mut structured = json!({
        "run_id": run.get("run_id"),
        "session_id": run.get("session_id"),
        "status": status,
        "content": text,
    });
    for key in ["agent_id", "team_id", "workflow_id"] {
        if let Some(v) = run.get(key).filter(|v| v.as_str().is_some_and(|s| !s.is_empty())) {
            structured[key] = v.clone();
        }
    }
    if let Some(open) = requirements {
        structured["requirements"] = Value::Array(open);
    }
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result.into()
}

/// Whether a stored requirement already has its answer.
fn is_resolved(requirement: &Value) -> bool {
    let set = |key: &str| requirement.get(key).is_some_and(|v| !v.is_null());
    set("confirmation")
        || set("external_execution_result")
        || requirement.get("resolved").and_then(Value::as_bool) == Some(true)
}

/// A JSON answer as a tool result (its text, and the object as structured content).
fn json_result(value: Value) -> CallToolResponse {
    let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
    result.structured_content = Some(if value.is_object() { value } else { json!({"result": value}) });
    result.into()
}

/// The component a lifecycle call names: exactly one of `agent_id`, `team_id`, `workflow_id`.
fn lifecycle_target(args: &Map<String, Value>) -> Result<(&'static str, String), ErrorData> {
    let given: Vec<(&'static str, String)> =
        [("agents", "agent_id"), ("teams", "team_id"), ("workflows", "workflow_id")]
            .into_iter()
            .filter_map(|(family, key)| Some((family, args.get(key)?.as_str().filter(|s| !s.is_empty())?.to_owned())))
            .collect();
    match given.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(ErrorData::invalid_params("give exactly one of agent_id, team_id or workflow_id", None)),
    }
}

fn text_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn required<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, ErrorData> {
    text_arg(args, key).ok_or_else(|| ErrorData::invalid_params(format!("{key} is required"), None))
}

fn query_string(pairs: &[(&str, String)]) -> String {
    let mut encoded = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        encoded.append_pair(k, v);
    }
    encoded.finish()
}

/// A tool's input schema from `(name, JSON type, description, required)`.
fn schema(params: &[(&str, &str, &str, bool)]) -> Arc<Map<String, Value>> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, kind, description, needed) in params {
        properties.insert((*name).to_owned(), json!({"type": kind, "description": description}));
        if *needed {
            required.push(json!(name));
        }
    }
    let schema = json!({"type": "object", "properties": properties, "required": required});
    Arc::new(schema.as_object().cloned().unwrap_or_default())
}

fn tools() -> Vec<Tool> {
    let message = ("message", "string", "What to send to the agent, team or workflow.", true);
    let user = ("user_id", "string", "The user to run as (authenticated callers always run as themselves).", false);
    let session = ("session_id", "string", "A session to continue; omitted, a new one is started.", false);
    let owner = |key: &'static str, what: &'static str| (key, "string", what, false);
    let run_tool = |name: &str, id: &'static str, what: &str| {
        let id_doc: &'static str = match id {
            "agent_id" => "The agent's id (see get_agentos_config).",
            "team_id" => "The team's id (see get_agentos_config).",
            _ => "The workflow's id (see get_agentos_config).",
        };
        Tool::new(
            name.to_owned(),
            format!("Run {what} with a message and get the answer. A PAUSED result lists the requirements to resolve with continue_run."),
            schema(&[(id, "string", id_doc, true), message, user, session]),
        )
        .annotate(ToolAnnotations::new().read_only(false).destructive(true).open_world(true))
    };
    vec![
        Tool::new(
            "get_agentos_config",
            "What this AgentOS serves: its agents, teams and workflows (ids, names, descriptions) and database ids. Call it first.",
            schema(&[]),
        )
        .annotate(ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false)),
        run_tool("run_agent", "agent_id", "an agent"),
        run_tool("run_team", "team_id", "a team of agents"),
        run_tool("run_workflow", "workflow_id", "a workflow"),
        Tool::new(
            "continue_run",
            "Continue a PAUSED run: pass its requirements back with each one resolved (confirmation = true or false, user input values, or an external result).",
            schema(&[
                ("run_id", "string", "The paused run's id.", true),
                ("session_id", "string", "The paused run's session.", true),
                owner("agent_id", "The agent that owns the run."),
                owner("team_id", "The team that owns the run."),
                owner("workflow_id", "The workflow that owns the run."),
                ("requirements", "array", "The PAUSED result's requirements, resolved.", false),
                user,
            ]),
        )
        .annotate(ToolAnnotations::new().read_only(false).destructive(true).open_world(true)),
        Tool::new(
            "cancel_run",
            "Cancel a running run; it stops and is stored CANCELLED (a run that has not started yet is cancelled when it starts).",
            schema(&[
                ("run_id", "string", "The run to cancel.", true),
                ("session_id", "string", "The run's session.", false),
                owner("agent_id", "The agent that owns the run."),
                owner("team_id", "The team that owns the run."),
                owner("workflow_id", "The workflow that owns the run."),
            ]),
        )
        .annotate(ToolAnnotations::new().read_only(false).destructive(true).idempotent(true).open_world(true)),
        Tool::new(
            "get_sessions",
            "List sessions, newest first by default (yours only under user isolation).",
            schema(&[
                ("session_type", "string", "agent (default), team or workflow.", false),
                ("component_id", "string", "Only sessions of this agent, team or workflow.", false),
                ("user_id", "string", "Only sessions of this user.", false),
                ("session_name", "string", "Only sessions with this name.", false),
                ("db_id", "string", "The database (see get_agentos_config), when there are several.", false),
                ("limit", "integer", "Sessions per page (default 20).", false),
                ("page", "integer", "The page, from 1.", false),
                ("sort_by", "string", "created_at (default) or updated_at.", false),
                ("sort_order", "string", "desc (default) or asc.", false),
            ]),
        )
        .annotate(ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false)),
        Tool::new(
            "get_session_runs",
            "A session's runs: a compact history of each, or one run in full with run_id.",
            schema(&[
                ("session_id", "string", "The session.", true),
                ("run_id", "string", "One run, with everything stored of it.", false),
                ("session_type", "string", "agent, team or workflow (default: found out).", false),
                ("user_id", "string", "The session's user.", false),
                ("db_id", "string", "The database, when there are several.", false),
            ]),
        )
        .annotate(ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false)),
    ]
}

/// The fields of a run that the history of `get_session_runs` keeps (as Python's).
const HISTORY_FIELDS: &[&str] =
    &["run_id", "run_input", "content", "status", "created_at", "agent_id", "team_id", "workflow_id"];

/// A requirement answered over MCP as the agents' continue route takes it: a tool execution
/// with `confirmed`, the user's values, or the external result.
fn as_tool_answer(requirement: &Value) -> Option<Value> {
    let mut tool = requirement.get("tool_execution")?.clone();
    if let Some(confirmed) = requirement.get("confirmation").filter(|v| v.is_boolean()) {
        tool["confirmed"] = confirmed.clone();
    }
    if let Some(note) = requirement.get("confirmation_note").filter(|v| !v.is_null()) {
        tool["confirmation_note"] = note.clone();
    }
    if let Some(result) = requirement.get("external_execution_result").filter(|v| !v.is_null()) {
        tool["result"] = result.clone();
    }
    if let Some(fields) = requirement.get("user_input_schema").filter(|v| v.is_array()) {
        tool["user_input_schema"] = fields.clone();
    }
    Some(tool)
}

impl ServerHandler for OsMcp {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("agno-rs AgentOS", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let auth = credentials(&ctx)?;
        let auth = auth.as_ref();
        let args = request.arguments.unwrap_or_default();
        match request.name.as_ref() {
            "get_agentos_config" => {
                let config = self.rest(auth, Method::GET, "/config", None).await?;
                if !config.status.is_success() {
                    return Ok(refused("get_agentos_config", &config));
                }
                let mut out = json!({"os_id": config.body["os_id"], "description": config.body["description"], "databases": config.body["databases"]});
                // The lists the caller may read, as the REST list routes filter them, in Python's
                // compact summaries.
                for family in ["agents", "teams", "workflows"] {
                    let listed = self.rest(auth, Method::GET, &format!("/{family}"), None).await?;
                    let items = if listed.status.is_success() {
                        listed.body.as_array().cloned().unwrap_or_default()
                    } else {
                        Vec::new()
                    };
                    out[family] = items.iter().map(|item| summary(family, item)).collect();
                }
                Ok(json_result(out))
            }
            name @ ("run_agent" | "run_team" | "run_workflow") => {
                let (family, id_key) = match name {
                    "run_agent" => ("agents", "agent_id"),
                    "run_team" => ("teams", "team_id"),
                    _ => ("workflows", "workflow_id"),
                };
                let id = required(&args, id_key)?;
                let message = required(&args, "message")?;
                // A new session per call when none is named (as REST), never a shared default.
                let session = text_arg(&args, "session_id").map_or_else(agno_core::new_id, str::to_owned);
                let mut form =
                    vec![("message", message.to_owned()), ("stream", "false".to_owned()), ("session_id", session)];
                if let Some(user) = text_arg(&args, "user_id") {
                    form.push(("user_id", user.to_owned()));
                }
                let answer =
                    self.rest(auth, Method::POST, &format!("/{family}/{}/runs", path_segment(id)), Some(&form)).await?;
                Ok(if answer.status.is_success() { run_result(&answer.body) } else { refused(name, &answer) })
            }
            "continue_run" => {
                let (family, id) = lifecycle_target(&args)?;
                let run_id = required(&args, "run_id")?;
                let session = required(&args, "session_id")?;
                let requirements: Vec<Value> =
                    args.get("requirements").and_then(Value::as_array).cloned().unwrap_or_default();
                let mut form = vec![("session_id", session.to_owned()), ("stream", "false".to_owned())];
                if let Some(user) = text_arg(&args, "user_id") {
                    form.push(("user_id", user.to_owned()));
                }
                match family {
                    "agents" => {
                        let tools: Vec<Value> = requirements.iter().filter_map(as_tool_answer).collect();
                        form.push(("tools", Value::Array(tools).to_string()));
                    }
                    "teams" => form.push(("requirements", Value::Array(requirements).to_string())),
                    _ => {
                        let (errors, steps): (Vec<Value>, Vec<Value>) = requirements
                            .into_iter()
                            .partition(|r| r.get("error_message").is_some() || r.get("error").is_some());
                        form.push(("step_requirements", Value::Array(steps).to_string()));
                        form.push(("error_requirements", Value::Array(errors).to_string()));
                    }
                }
                let uri = format!("/{family}/{}/runs/{}/continue", path_segment(&id), path_segment(run_id));
                let answer = self.rest(auth, Method::POST, &uri, Some(&form)).await?;
                Ok(if answer.status.is_success() { run_result(&answer.body) } else { refused("continue_run", &answer) })
            }
            "cancel_run" => {
                let (family, id) = lifecycle_target(&args)?;
                let run_id = required(&args, "run_id")?;
                let mut form = Vec::new();
                if let Some(session) = text_arg(&args, "session_id") {
                    form.push(("session_id", session.to_owned()));
                }
                let uri = format!("/{family}/{}/runs/{}/cancel", path_segment(&id), path_segment(run_id));
                let answer = self.rest(auth, Method::POST, &uri, Some(&form)).await?;
                if !answer.status.is_success() {
                    return Ok(refused("cancel_run", &answer));
                }
                Ok(CallToolResult::success(vec![ContentBlock::text(format!("Run {run_id} cancellation requested"))])
                    .into())
            }
            "get_sessions" => {
                let mut pairs = vec![("type", text_arg(&args, "session_type").unwrap_or("agent").to_owned())];
                for key in ["component_id", "user_id", "session_name", "db_id", "sort_by", "sort_order"] {
                    if let Some(v) = text_arg(&args, key) {
                        pairs.push((key, v.to_owned()));
                    }
                }
                for key in ["limit", "page"] {
                    if let Some(n) = args.get(key).and_then(Value::as_u64) {
                        pairs.push((key, n.to_string()));
                    }
                }
                let uri = format!("/sessions?{}", query_string(&pairs));
                let mut answer = self.rest(auth, Method::GET, &uri, None).await?;
                if !answer.status.is_success() {
                    return Ok(refused("get_sessions", &answer));
                }
                if let Some(data) = answer.body.get_mut("data").and_then(Value::as_array_mut) {
                    for session in data.iter_mut() {
                        *session = full_session(std::mem::take(session));
                    }
                }
                Ok(json_result(answer.body))
            }
            "get_session_runs" => {
                let session = required(&args, "session_id")?;
                let pairs: Vec<(&str, String)> = [("session_type", "type"), ("user_id", "user_id"), ("db_id", "db_id")]
                    .into_iter()
                    .filter_map(|(arg, param)| Some((param, text_arg(&args, arg)?.to_owned())))
                    .collect();
                let query = query_string(&pairs);
                let uri = match text_arg(&args, "run_id") {
                    Some(run) => format!("/sessions/{}/runs/{}?{query}", path_segment(session), path_segment(run)),
                    None => format!("/sessions/{}/runs?{query}", path_segment(session)),
                };
                let answer = self.rest(auth, Method::GET, &uri, None).await?;
                if !answer.status.is_success() {
                    return Ok(refused("get_session_runs", &answer));
                }
                if text_arg(&args, "run_id").is_some() {
                    return Ok(json_result(json!([answer.body])));
                }
                let history: Vec<Value> = answer
                    .body
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|run| {
                        let kept: Map<String, Value> = HISTORY_FIELDS
                            .iter()
                            .filter_map(|k| run.get(*k).map(|v| ((*k).to_owned(), v.clone())))
                            .collect();
                        Value::Object(kept)
                    })
                    .collect();
                Ok(json_result(Value::Array(history)))
            }
            other => Err(ErrorData::invalid_params(format!("unknown tool {other}"), None)),
        }
    }
}
