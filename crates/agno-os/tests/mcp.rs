//! MCP toolkits in `agentos.toml`: an agent served by AgentOS calls a tool of
//! `@modelcontextprotocol/server-everything` (npm) over stdio; a server that cannot start is a
//! startup error unless optional; a bad table is refused with the field to fix.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::path::PathBuf;

use agno_os::app::AgentOs;
use agno_testkit::{FakeProvider, Reply};
use common::{TestOs, config};
use serde_json::json;

fn everything(what: &str) -> Option<PathBuf> {
    agno_testkit::services::mcp_reference_server(what, "server-everything")
}

fn agent_config(provider: &str, tools: &str) -> String {
    format!(
        "[db]\nurl = \"memory://\"\n[[agents]]\nid = \"helper\"\ntools = [{tools}]\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{provider}\", api_key = \"sk\" }}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_calls_a_tool_of_an_mcp_server_declared_in_the_config() {
    let Some(entry) = everything("MCP toolkit in agentos.toml") else { return };
    let provider = FakeProvider::start().await.unwrap();
    let tools = format!(
        "{{ toolkit = \"mcp\", command = \"node {}\", args = [\"stdio\"], include_tools = [\"echo\", \"get-sum\"], tool_name_prefix = \"ev_\" }}",
        entry.display()
    );
    let os = TestOs::start(config(&agent_config(&provider.base_url(), &tools))).await;
    provider.push(Reply::tool_call("ev_get-sum", r#"{"a": 20, "b": 22}"#));
    provider.push(Reply::text("It is 42."));
    let r = os.post_form("/agents/helper/runs", &[("message", "20 + 22?"), ("stream", "false")], None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let tool = &r.body["tools"][0];
    assert_eq!(
        (tool["tool_name"].as_str(), tool["result"].as_str()),
        (Some("ev_get-sum"), Some("The sum of 20 and 22 is 42."))
    );
    let first = &provider.requests()[0].body;
    let offered: Vec<&str> =
        first["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(offered, ["ev_echo", "ev_get-sum"], "the included tools, prefixed");
    let r = os.get("/agents/helper", None).await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn a_server_that_cannot_start_fails_the_start_unless_optional() {
    let provider = FakeProvider::start().await.unwrap();
    let down = "{ toolkit = \"mcp\", command = \"/nonexistent/mcp-server\" }";
    let err = AgentOs::from_config(&config(&agent_config(&provider.base_url(), down))).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("helper") && text.contains("/nonexistent/mcp-server") && text.contains("optional = true"),
        "{text}"
    );
    let optional = "{ toolkit = \"mcp\", command = \"/nonexistent/mcp-server\", optional = true }";
    assert!(AgentOs::from_config(&config(&agent_config(&provider.base_url(), optional))).await.is_ok());
    for (table, reason) in [
        ("{ toolkit = \"mcp\", command = \"x\", auth_tokens = \"t\" }", "auth_tokens was removed in Agno v3"),
        ("{ toolkit = \"mcp\", command = \"x\", inclde_tools = [] }", "unknown field \"inclde_tools\""),
        ("{ toolkit = \"mcp\", command = \"x\", transport = \"sse\" }", "transport \"sse\" needs url"),
        ("{ toolkit = \"mcp\", url = \"http://x/mcp\", transport = \"ws\" }", "transport must be"),
        ("{ toolkit = \"mcp\", url = \"http://x/mcp\", headers = { A = \"{token}\" } }", "unknown placeholder {token}"),
        ("{ toolkit = \"mcp\", url = \"http://x/mcp\", max_result_bytes = 0 }", "max_result_bytes must be"),
        ("{ toolkit = \"mcp\" }", "needs command"),
        ("{ toolkit = \"mcp_toolbox\" }", "needs url"),
        (
            "{ toolkit = \"mcp_toolbox\", url = \"http://x\", auth_tokens = { a = \"t\" } }",
            "auth_tokens was removed in Agno v3: use auth_token_getters",
        ),
        (
            "{ toolkit = \"mcp_toolbox\", url = \"http://x\", auth_headers = { a = \"t\" } }",
            "auth_headers was removed in Agno v3",
        ),
        (
            "{ toolkit = \"mcp_toolbox\", url = \"http://x\", auth_token_getters = { a = \"t\" } }",
            "auth_token_getters.a must be",
        ),
        (
            "{ toolkit = \"mcp_toolbox\", url = \"http://x\", bound_params = { a = \"{nope}\" } }",
            "bound_params.a: unknown placeholder",
        ),
    ] {
        let err = AgentOs::from_config(&config(&agent_config(&provider.base_url(), table))).await.unwrap_err();
        assert!(err.to_string().contains(reason), "{table}: {err}");
    }
}

/// The Python `mcp` server of `scripts/interop/mcp_server.py` on a free port.
struct PythonMcpServer(std::process::Child, u16);

impl Drop for PythonMcpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn python_mcp_server(python: &str) -> PythonMcpServer {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/mcp_server.py");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = std::process::Command::new(python)
        .arg(script)
        .arg(port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let server = PythonMcpServer(child, port);
    agno_testkit::until("the Python MCP server listens", std::time::Duration::from_secs(30), || async move {
        tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok()
    })
    .await;
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_from_the_config_carry_the_authenticated_user_to_the_mcp_server() {
    let Some(python) = agno_testkit::agno_python("per-user MCP headers from agentos.toml") else { return };
    let server = python_mcp_server(&python).await;
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&format!(
        "[db]\nurl = \"memory://\"\n[auth]\nmode = \"jwt\"\nverification_keys = [\"{}\"]\nuser_isolation = true\n\
         [[agents]]\nid = \"helper\"\n\
         tools = [{{ toolkit = \"mcp\", url = \"http://127.0.0.1:{}/mcp\", headers = {{ \"x-agno-user\" = \"{{user_id}}\" }}, include_tools = [\"whoami\"] }}]\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        common::SECRET,
        server.1,
        provider.base_url()
    )))
    .await;
    for user in ["ann", "bob", "ann"] {
        provider.push(Reply::tool_call("whoami", "{}"));
        provider.push(Reply::text("done"));
        let token = common::token(user, &["agents:read", "agents:run"]);
        let r =
            os.post_form("/agents/helper/runs", &[("message", "who am I?"), ("stream", "false")], Some(&token)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["tools"][0]["result"], user, "the server saw the caller's own header: {}", r.body);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toolbox_from_the_config_sends_fresh_tokens_and_bound_values_per_user() {
    use agno_testkit::toolbox::ToolboxServer;
    let toolbox = ToolboxServer::start().await.unwrap();
    let provider = FakeProvider::start().await.unwrap();
    let dir = std::env::temp_dir().join(format!("agno-toolbox-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let token = dir.join("id-token");
    std::fs::write(&token, "test-id-token:ann@example.com\n").unwrap();
    let tools = format!(
        "{{ toolkit = \"mcp_toolbox\", url = \"{}\", toolsets = [\"hotels\"], \
         auth_token_getters = {{ my-google-auth = {{ file = \"{}\" }} }}, bound_params = {{ region = \"eu-{{user_id}}\" }} }}",
        toolbox.url(),
        token.display()
    );
    let os = TestOs::start(config(&agent_config(&provider.base_url(), &tools))).await;
    let run = |message: &'static str| {
        let os = &os;
        async move {
            let r = os
                .post_form(
                    "/agents/helper/runs",
                    &[("message", message), ("stream", "false"), ("user_id", "ann")],
                    None,
                )
                .await;
            assert_eq!(r.status, 200, "{}", r.body);
            r.body["tools"][0]["result"].as_str().unwrap().to_owned()
        }
    };
    provider.push(Reply::tool_call("search-hotels-by-name", r#"{"name": "Basel"}"#));
    provider.push(Reply::text("found"));
    let found: serde_json::Value = serde_json::from_str(&run("find Basel").await).unwrap();
    assert_eq!(found["hotels"][0]["region"], "eu-ann", "the bound value, filled for the caller");
    let offered = &provider.requests()[0].body["tools"];
    let search = offered.as_array().unwrap().iter().find(|t| t["function"]["name"] == "search-hotels-by-name").unwrap();
    assert!(search["function"]["parameters"]["properties"].get("region").is_none(), "bound: not shown: {search}");

    provider.push(Reply::tool_call("book-hotel", r#"{"hotel_id": 7}"#));
    provider.push(Reply::text("booked"));
    assert_eq!(run("book 7").await, "booked hotel 7 for ann@example.com");
    // The token rotates on disk: the next call carries the new one.
    std::fs::write(&token, "test-id-token:ann-rotated@example.com").unwrap();
    provider.push(Reply::tool_call("book-hotel", r#"{"hotel_id": 8}"#));
    provider.push(Reply::text("booked"));
    assert_eq!(run("book 8").await, "booked hotel 8 for ann-rotated@example.com");
    let tokens: Vec<Option<String>> = toolbox.calls().iter().map(|c| c.token().map(str::to_owned)).collect();
    assert_eq!(
        tokens,
        [
            Some("test-id-token:ann@example.com".to_owned()),
            Some("test-id-token:ann@example.com".to_owned()),
            Some("test-id-token:ann-rotated@example.com".to_owned())
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the official Python MCP client (`scripts/interop/mcp_client.py`) against `url`.
fn python_client(python: &str, url: &str, token: Option<&str>, extra: &[&str]) -> serde_json::Value {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/mcp_client.py");
    let mut cmd = std::process::Command::new(python);
    cmd.arg(script).args(["--url", url]).args(extra);
    if let Some(t) = token {
        cmd.args(["--token", t]);
    }
    let out = cmd.output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "bad client output ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// One call of `python_client`: the tool and its arguments.
fn call(tool: &str, args: &serde_json::Value) -> [String; 3] {
    ["--call".to_owned(), tool.to_owned(), args.to_string()]
}

fn calls(list: &[[String; 3]]) -> Vec<&str> {
    list.iter().flatten().map(String::as_str).collect()
}

/// Python AgentOS 3.1's MCP tools and their parameters (`mcp_server=True`, read from a running
/// Python AgentOS by the same client; `agentos_mcp_surface_matches_python` checks it live).
const PYTHON_TOOLS: &[&str] = &[
    "cancel_run",
    "continue_run",
    "get_agentos_config",
    "get_session_runs",
    "get_sessions",
    "run_agent",
    "run_team",
    "run_workflow",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_endpoint_serves_an_official_client_as_each_user() {
    let Some(python) = agno_testkit::agno_python("the /mcp endpoint with the Python mcp client") else { return };
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&format!(
        "[db]\nurl = \"memory://\"\n[auth]\nmode = \"jwt\"\nverification_keys = [\"{}\"]\nuser_isolation = true\n\
         [mcp_server]\nenabled = true\n[[agents]]\nid = \"echo\"\nmodel = \"test\"\n[[agents]]\nid = \"other\"\nmodel = \"test\"\n\
         [[agents]]\nid = \"guarded\"\ntools = [{{ toolkit = \"calculator\", requires_confirmation_tools = [\"add\"] }}]\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n\
         [[teams]]\nid = \"desk\"\nmembers = [\"echo\"]\nmodel = \"test\"\n\
         [[workflows]]\nid = \"flow\"\n[[workflows.steps]]\nname = \"say\"\nagent = \"echo\"\n",
        common::SECRET,
        provider.base_url()
    )))
    .await;
    let url = format!("{}/mcp", os.base);
    let ann = common::token("ann", &["agents:read", "agents:echo:run", "agents:guarded:run", "sessions:read"]);
    let bob = common::token(
        "bob",
        &[
            "agents:read",
            "agents:run",
            "teams:read",
            "teams:run",
            "workflows:read",
            "workflows:run",
            "sessions:read",
            "config:read",
        ],
    );

    // Ann: the tools Python AgentOS serves; her run is hers.
    let out = python_client(
        &python,
        &url,
        Some(&ann),
        &calls(&[
            call("run_agent", &json!({"agent_id": "echo", "message": "remember tulips"})),
            call("run_agent", &json!({"agent_id": "other", "message": "hi"})),
            call("run_team", &json!({"team_id": "desk", "message": "hi"})),
        ]),
    );
    let mut names: Vec<&str> =
        out["tools"].as_object().unwrap_or_else(|| panic!("{out}")).keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, PYTHON_TOOLS, "{out}");
    assert_eq!(out["tools"]["run_agent"]["required"], json!(["agent_id", "message"]));
    let ran = &out["calls"][0];
    assert_eq!(ran["is_error"], false, "{out}");
    assert!(ran["text"].as_str().unwrap().contains("remember tulips"), "{out}");
    assert_eq!(
        (ran["structured"]["status"].as_str(), ran["structured"]["agent_id"].as_str()),
        (Some("COMPLETED"), Some("echo"))
    );
    let session = ran["structured"]["session_id"].as_str().unwrap().to_owned();
    let stored = os.os.state.db.as_ref().unwrap().get_session(&session, Some("ann"), Some(0)).await.unwrap();
    assert!(stored.is_some(), "the session belongs to ann");
    // Agents, teams she may not run: refused as over REST.
    for refused in [&out["calls"][1], &out["calls"][2]] {
        assert_eq!(refused["is_error"], true, "{out}");
        assert!(refused["text"].as_str().unwrap().contains("Insufficient permissions"), "{out}");
    }

    // Bob runs a team and a workflow, sees only his sessions, and cannot touch Ann's.
    let out = python_client(
        &python,
        &url,
        Some(&bob),
        &calls(&[
            call("get_agentos_config", &json!({})),
            call("run_team", &json!({"team_id": "desk", "message": "hello team"})),
            call("run_workflow", &json!({"workflow_id": "flow", "message": "hello flow"})),
            call("run_agent", &json!({"agent_id": "echo", "message": "hi", "session_id": session})),
            call("get_session_runs", &json!({"session_id": session})),
            call("get_sessions", &json!({"session_type": "team"})),
        ]),
    );
    let config_ids = |family: &str| -> Vec<String> {
        let listed = out["calls"][0]["structured"][family].as_array().unwrap_or_else(|| panic!("{family}: {out}"));
        listed.iter().map(|a| a["id"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(config_ids("agents"), ["echo", "other", "guarded"], "{out}");
    assert_eq!((config_ids("teams"), config_ids("workflows")), (vec!["desk".to_owned()], vec!["flow".to_owned()]));
    let team = &out["calls"][1]["structured"];
    assert_eq!((team["status"].as_str(), team["team_id"].as_str()), (Some("COMPLETED"), Some("desk")), "{out}");
    let flow = &out["calls"][2]["structured"];
    assert_eq!((flow["status"].as_str(), flow["workflow_id"].as_str()), (Some("COMPLETED"), Some("flow")), "{out}");
    assert_eq!(out["calls"][3]["is_error"], true, "Ann's session is not Bob's to continue: {out}");
    assert_eq!(out["calls"][4]["is_error"], true, "nor to read: {out}");
    let team_sessions = out["calls"][5]["structured"]["data"].as_array().unwrap_or_else(|| panic!("{out}"));
    assert_eq!(team_sessions.len(), 1, "{out}");
    assert_eq!(team_sessions[0]["session_id"], team["session_id"]);

    // A paused run is continued over MCP with its requirements resolved.
    provider.push(Reply::tool_call("add", r#"{"a": 2, "b": 3}"#));
    let out = python_client(
        &python,
        &url,
        Some(&ann),
        &calls(&[call("run_agent", &json!({"agent_id": "guarded", "message": "2+3?"}))]),
    );
    let paused = out["calls"][0]["structured"].clone();
    assert_eq!(paused["status"], "PAUSED", "{out}");
    let mut requirements = paused["requirements"].as_array().unwrap().clone();
    assert_eq!(requirements.len(), 1, "{out}");
    requirements[0]["confirmation"] = json!(true);
    provider.push(Reply::text("It is 5."));
    let continued = json!({"run_id": paused["run_id"], "session_id": paused["session_id"], "agent_id": "guarded", "requirements": requirements});
    let history = json!({"session_id": paused["session_id"]});
    let out = python_client(
        &python,
        &url,
        Some(&ann),
        &calls(&[call("continue_run", &continued), call("get_session_runs", &history)]),
    );
    let done = &out["calls"][0]["structured"];
    assert_eq!((done["status"].as_str(), done["content"].as_str()), (Some("COMPLETED"), Some("It is 5.")), "{out}");
    let runs = out["calls"][1]["structured"]["result"].as_array().unwrap_or_else(|| panic!("{out}"));
    assert_eq!(runs.len(), 1);
    let kept: Vec<&str> = runs[0].as_object().unwrap().keys().map(String::as_str).collect();
    assert!(
        kept.iter().all(|k| [
            "run_id",
            "run_input",
            "content",
            "status",
            "created_at",
            "agent_id",
            "team_id",
            "workflow_id"
        ]
        .contains(k)),
        "{kept:?}"
    );

    // Without a token: refused before MCP sees the request.
    let out = python_client(&python, &url, None, &[]);
    assert!(out["error"].is_string() && out.get("tools").is_none(), "{out}");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = os.post_json("/mcp", &init, None).await;
    assert_eq!((r.status, common::detail(&r.body)), (401, "Authorization header missing".to_owned()));
}

/// Over MCP as over REST: a run paused on a call that needs an admin's approval cannot be
/// continued by its owner (not even with a confirmation of their own) until an admin approved
/// it; then the owner's `continue_run` without any answer runs the approved call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_mcp_a_run_waiting_for_approval_continues_only_once_approved() {
    let Some(python) = agno_testkit::agno_python("approvals over /mcp with the Python mcp client") else { return };
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&format!(
        "[db]\nurl = \"memory://\"\n[auth]\nmode = \"jwt\"\nverification_keys = [\"{}\"]\nuser_isolation = true\n\
         [mcp_server]\nenabled = true\n\
         [[agents]]\nid = \"ops\"\ntools = [{{ toolkit = \"calculator\", include_tools = [\"add\"], approval_required_tools = [\"add\"] }}]\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        common::SECRET,
        provider.base_url()
    )))
    .await;
    let url = format!("{}/mcp", os.base);
    let ann = common::token("ann", &["agents:read", "agents:run", "sessions:read"]);
    provider.push(Reply::tool_call("add", r#"{"a": 2, "b": 3}"#));
    let out = python_client(
        &python,
        &url,
        Some(&ann),
        &calls(&[call("run_agent", &json!({"agent_id": "ops", "message": "2+3?"}))]),
    );
    let paused = out["calls"][0]["structured"].clone();
    assert_eq!(paused["status"], "PAUSED", "{out}");
    let approval_id = paused["requirements"][0]["tool_execution"]["approval_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{out}"))
        .to_owned();
    let mut own = paused["requirements"].as_array().unwrap().clone();
    own[0]["confirmation"] = json!(true);
    let ids = json!({"run_id": paused["run_id"], "session_id": paused["session_id"], "agent_id": "ops"});
    let mut with_own = ids.clone();
    with_own["requirements"] = json!(own);
    let out = python_client(
        &python,
        &url,
        Some(&ann),
        &calls(&[call("continue_run", &ids), call("continue_run", &with_own)]),
    );
    for refused in [&out["calls"][0], &out["calls"][1]] {
        assert_eq!(refused["is_error"], true, "{out}");
        assert!(refused["text"].as_str().unwrap().contains("requires admin approval"), "{out}");
    }
    let admin = common::token("root", &["agent_os:admin"]);
    let r =
        os.post_json(&format!("/approvals/{approval_id}/resolve"), &json!({"status": "approved"}), Some(&admin)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    provider.push(Reply::text("It is 5."));
    let out = python_client(&python, &url, Some(&ann), &calls(&[call("continue_run", &ids)]));
    let done = &out["calls"][0]["structured"];
    assert_eq!((done["status"].as_str(), done["content"].as_str()), (Some("COMPLETED"), Some("It is 5.")), "{out}");
    let bodies: Vec<String> = provider.requests().iter().map(|r| r.body.to_string()).collect();
    assert!(bodies.iter().any(|b| b.contains(r#"\"result\":5.0"#)), "the approved call ran: {bodies:?}");
}
