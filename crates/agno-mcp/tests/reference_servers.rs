//! MCP tools from servers we did not write: `@modelcontextprotocol/server-everything` over stdio,
//! streamable HTTP and SSE (restarted mid-test to show the reconnect; 100 parallel agent runs
//! sharing one server), and `@modelcontextprotocol/server-filesystem`, from the npm registry
//! (`scripts/test --all` installs them; `AGNO_MCP_SERVERS` points at the folder holding
//! `node_modules`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{args, tool};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agno_core::{Model, ModelResponse, Role, RunStatus, ToolCall, ToolContext};
use agno_mcp::{HeaderProvider, McpConfig, McpToolkit, Transport};
use agno_models::FunctionModel;
use agno_runtime::{Agent, RunRequest};
use serde_json::{Map, json};

fn everything(what: &str) -> Option<PathBuf> {
    agno_testkit::services::mcp_reference_server(what, "server-everything")
}

fn ctx(user: Option<&str>) -> ToolContext {
    ToolContext { user_id: user.map(str::to_owned), session_id: "s1".to_owned(), ..ToolContext::default() }
}

#[tokio::test]
async fn stdio_tools_are_listed_filtered_prefixed_and_called() {
    let Some(entry) = everything("MCP over stdio") else { return };
    let mut config = McpConfig::new(Transport::Stdio {
        command: "node".to_owned(),
        args: vec![entry.display().to_string(), "stdio".to_owned()],
        env: Vec::new(),
    });
    config.include_tools = Some(vec![
        "echo".into(),
        "get-sum".into(),
        "get-tiny-image".into(),
        "get-structured-content".into(),
        "get-resource-links".into(),
    ]);
    config.tool_name_prefix = Some("ev_".to_owned());
    let kit = McpToolkit::connect(config.clone()).await.unwrap();
    let tools = kit.tools();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["ev_echo", "ev_get-resource-links", "ev_get-structured-content", "ev_get-sum", "ev_get-tiny-image"]
    );
    let sum = tool(&tools, "ev_get-sum");
    assert!(sum.definition().parameters["properties"]["a"].is_object(), "the server's schema is kept");

    assert_eq!(tool(&tools, "ev_echo").call(args(json!({"message": "hi"})), ctx(None)).await.unwrap(), "Echo: hi");
    assert_eq!(sum.call(args(json!({"a": 2, "b": 3})), ctx(None)).await.unwrap(), "The sum of 2 and 3 is 5.");
    let image = tool(&tools, "ev_get-tiny-image").call(Map::new(), ctx(None)).await.unwrap();
    assert!(image.contains("[image (image/png)") && image.contains("MCP logo"), "{image}");
    let structured =
        tool(&tools, "ev_get-structured-content").call(args(json!({"location": "New York"})), ctx(None)).await.unwrap();
    assert!(structured.contains("temperature"), "{structured}");
    let links = tool(&tools, "ev_get-resource-links").call(args(json!({"count": 2})), ctx(None)).await.unwrap();
    assert!(links.contains("[resource "), "{links}");

    // Bad arguments are a tool error for the model, not a crash.
    let err = sum.call(args(json!({"a": "two"})), ctx(None)).await.unwrap_err();
    assert!(!err.model_text().is_empty());

    // Excluding, and naming a tool the server lacks.
    config.include_tools = None;
    config.exclude_tools = vec!["echo".into()];
    let all = McpToolkit::connect(config.clone()).await.unwrap().tools();
    assert!(all.len() > 5 && all.iter().all(|t| t.name() != "ev_echo"));
    config.include_tools = Some(vec!["no-such-tool".into()]);
    let err = McpToolkit::connect(config).await.unwrap_err();
    assert!(err.to_string().contains("no-such-tool"), "{err}");

    // A server that cannot start is a clear error.
    let broken = McpConfig::new(Transport::Stdio { command: "/nonexistent/mcp".into(), args: vec![], env: vec![] });
    let err = McpToolkit::connect(broken).await.unwrap_err();
    assert!(err.to_string().starts_with("cannot connect to the MCP server /nonexistent/mcp"), "{err}");
}

/// Headers from the calling user.
#[derive(Debug)]
struct UserHeader;

impl HeaderProvider for UserHeader {
    fn headers(&self, ctx: &ToolContext) -> Vec<(String, String)> {
        vec![("x-agno-user".to_owned(), ctx.user_id.as_deref().unwrap_or("anonymous").to_owned())]
    }
}

struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_http(entry: &std::path::Path, port: u16) -> Server {
    start_server(entry, "streamableHttp", port)
}

fn start_server(entry: &std::path::Path, mode: &str, port: u16) -> Server {
    Server(
        std::process::Command::new("node")
            .arg(entry)
            .arg(mode)
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    )
}

async fn wait_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(Instant::now() < deadline, "the MCP server did not listen on {port}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_tools_survive_a_server_restart_and_serve_users_in_parallel() {
    let Some(entry) = everything("MCP over streamable HTTP") else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = start_http(&entry, port);
    wait_port(port).await;
    let mut config =
        McpConfig::new(Transport::StreamableHttp { url: format!("http://127.0.0.1:{port}/mcp"), headers: vec![] });
    config.header_provider = Some(Arc::new(UserHeader));
    config.timeout = Duration::from_secs(3);
    let tools = McpToolkit::connect(config).await.unwrap().tools();
    let echo = Arc::clone(tool(&tools, "echo"));
    assert_eq!(echo.call(args(json!({"message": "one"})), ctx(Some("ann"))).await.unwrap(), "Echo: one");

    // 100 parallel calls from 4 users on one server: no session errors.
    let mut calls = Vec::new();
    for i in 0..100 {
        let echo = Arc::clone(&echo);
        let user = ["ann", "bob", "cy", "dee"][i % 4];
        calls.push(tokio::spawn(
            async move { echo.call(args(json!({"message": format!("m{i}")})), ctx(Some(user))).await },
        ));
    }
    let mut errors = 0;
    for (i, c) in calls.into_iter().enumerate() {
        match c.await.unwrap() {
            Ok(text) => assert_eq!(text, format!("Echo: m{i}")),
            Err(e) => {
                errors += 1;
                eprintln!("call {i}: {e}");
            }
        }
    }
    println!("100 parallel calls over one MCP server: {errors} session errors");
    assert_eq!(errors, 0);

    // The server restarts: a call on the old session succeeds (the session is re-initialised)
    // or ends with a tool error within the timeout; the next call reconnects.
    drop(server);
    let _server = start_http(&entry, port);
    wait_port(port).await;
    let started = Instant::now();
    let first = echo.call(args(json!({"message": "after"})), ctx(Some("ann"))).await;
    assert!(
        started.elapsed() < Duration::from_secs(3) + Duration::from_secs(2),
        "bounded by the timeout: {:?}",
        started.elapsed()
    );
    if let Err(e) = first {
        println!("first call after the restart: {}", e.model_text());
        // The session is replaced: within a few calls (each bounded by the timeout) it works.
        let mut attempts = 1;
        loop {
            attempts += 1;
            match echo.call(args(json!({"message": "after"})), ctx(Some("ann"))).await {
                Ok(text) => {
                    assert_eq!(text, "Echo: after");
                    break;
                }
                Err(e) => {
                    println!("call {attempts} after the restart: {}", e.model_text());
                    assert!(attempts < 4, "no reconnect after {attempts} calls");
                }
            }
        }
    }
    // Every user's session went with the old server; theirs reconnects at once too.
    assert_eq!(echo.call(args(json!({"message": "bob"})), ctx(Some("bob"))).await.unwrap(), "Echo: bob");
}

#[tokio::test]
async fn the_filesystem_server_reads_inside_its_root_and_refuses_outside() {
    let Some(entry) =
        agno_testkit::services::mcp_reference_server("MCP filesystem server over stdio", "server-filesystem")
    else {
        return;
    };
    let root = std::env::temp_dir().join(format!("agno-mcp-fs-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("notes.txt"), "bring an umbrella").unwrap();
    let mut config = McpConfig::new(Transport::Stdio {
        command: "node".to_owned(),
        args: vec![entry.display().to_string(), root.display().to_string()],
        env: Vec::new(),
    });
    config.include_tools = Some(vec!["read_text_file".into(), "write_file".into(), "list_directory".into()]);
    let tools = McpToolkit::connect(config).await.unwrap().tools();
    let path = root.join("notes.txt").display().to_string();
    let text = tool(&tools, "read_text_file").call(args(json!({"path": path})), ctx(None)).await.unwrap();
    assert_eq!(text, "bring an umbrella");
    let written = root.join("plan.txt").display().to_string();
    tool(&tools, "write_file").call(args(json!({"path": written, "content": "go at nine"})), ctx(None)).await.unwrap();
    assert_eq!(std::fs::read_to_string(root.join("plan.txt")).unwrap(), "go at nine");
    let listing = tool(&tools, "list_directory")
        .call(args(json!({"path": root.display().to_string()})), ctx(None))
        .await
        .unwrap();
    assert!(listing.contains("notes.txt") && listing.contains("plan.txt"), "{listing}");
    // Outside the root: the server refuses, the model gets a tool error.
    let err = tool(&tools, "read_text_file").call(args(json!({"path": "/etc/hostname"})), ctx(None)).await.unwrap_err();
    assert!(
        err.model_text().to_lowercase().contains("denied") || err.model_text().contains("outside"),
        "{}",
        err.model_text()
    );
    let _ = std::fs::remove_dir_all(&root);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_parallel_agent_runs_share_one_server_without_session_errors() {
    let Some(entry) = everything("100 parallel agent runs over one MCP server") else { return };
    let port = free_port();
    let _server = start_http(&entry, port);
    wait_port(port).await;
    let mut config =
        McpConfig::new(Transport::StreamableHttp { url: format!("http://127.0.0.1:{port}/mcp"), headers: vec![] });
    config.header_provider = Some(Arc::new(UserHeader));
    config.include_tools = Some(vec!["echo".into()]);
    let kit = McpToolkit::connect(config).await.unwrap();
    // Each run echoes its own input through the server, then answers with the tool's result.
    let model: Arc<dyn Model> = Arc::new(FunctionModel::new(|req| {
        let last = req.messages.last().unwrap();
        Ok(if last.role == Role::User {
            let input = last.content_text().unwrap_or_default().to_owned();
            ModelResponse {
                tool_calls: vec![ToolCall::new("c1", "echo", json!({"message": input}).to_string())],
                ..Default::default()
            }
        } else {
            ModelResponse { content: last.content_text().unwrap_or_default().to_owned(), ..Default::default() }
        })
    }));
    let mut builder = Agent::builder(model);
    for t in kit.tools() {
        builder = builder.tool_arc(t);
    }
    let agent = Arc::new(builder.build().unwrap());
    let started = Instant::now();
    let runs: Vec<_> = (0..100)
        .map(|i| {
            let agent = Arc::clone(&agent);
            let user = ["ann", "bob", "cy", "dee"][i % 4];
            tokio::spawn(async move { agent.arun(RunRequest::new(format!("run {i}")).user_id(user)).await })
        })
        .collect();
    let mut session_errors = 0;
    for (i, run) in runs.into_iter().enumerate() {
        let out = run.await.unwrap().unwrap();
        assert_eq!(out.status, RunStatus::Completed);
        let failed = out.tools.as_ref().is_some_and(|t| t.iter().any(|t| t.tool_call_error == Some(true)));
        if failed || out.content != Some(json!(format!("Echo: run {i}"))) {
            session_errors += 1;
            eprintln!("run {i}: {:?}", out.content);
        }
    }
    println!(
        "100 parallel agent runs (4 users) over one MCP server: {session_errors} session errors, {:?} in all",
        started.elapsed()
    );
    assert_eq!(session_errors, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_tools_are_called_in_parallel_and_survive_a_server_restart() {
    let Some(entry) = everything("MCP over SSE") else { return };
    let port = free_port();
    let server = start_server(&entry, "sse", port);
    wait_port(port).await;
    let mut config = McpConfig::new(Transport::Sse { url: format!("http://127.0.0.1:{port}/sse"), headers: vec![] });
    config.timeout = Duration::from_secs(3);
    let tools = McpToolkit::connect(config).await.unwrap().tools();
    let echo = Arc::clone(tool(&tools, "echo"));
    let sum = tool(&tools, "get-sum");
    assert_eq!(sum.call(args(json!({"a": 4, "b": 5})), ctx(None)).await.unwrap(), "The sum of 4 and 5 is 9.");
    let calls: Vec<_> = (0..20)
        .map(|i| {
            let echo = Arc::clone(&echo);
            tokio::spawn(async move { echo.call(args(json!({"message": format!("m{i}")})), ctx(None)).await })
        })
        .collect();
    for (i, c) in calls.into_iter().enumerate() {
        assert_eq!(c.await.unwrap().unwrap(), format!("Echo: m{i}"));
    }

    // The server restarts: the event stream ends and the next calls open a new session.
    drop(server);
    let _server = start_server(&entry, "sse", port);
    wait_port(port).await;
    let mut attempts = 0;
    loop {
        attempts += 1;
        match echo.call(args(json!({"message": "again"})), ctx(None)).await {
            Ok(text) => {
                assert_eq!(text, "Echo: again");
                break;
            }
            Err(e) => {
                println!("SSE call {attempts} after the restart: {}", e.model_text());
                assert!(attempts < 3, "no reconnect after {attempts} calls");
            }
        }
    }
}
