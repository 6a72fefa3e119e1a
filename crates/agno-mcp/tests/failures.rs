//! MCP servers that fail: one that exits, one that hangs, one that answers with output that is
//! not JSON-RPC, one whose tool schema is not JSON Schema, one whose result is too large
//! (`tests/fixtures/misbehaving_server.py`, Python's standard library only), and an HTTP server
//! that answers garbage. Each failure is a tool error that says what happened, the agent run
//! goes on, and the next call works on a new connection.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{args, tool, tool_results};

use std::sync::Arc;
use std::time::{Duration, Instant};

use agno_core::{DynTool, Model, ModelResponse, RunStatus, ToolCall, ToolContext, ToolErrorKind};
use agno_mcp::{McpConfig, McpToolkit, Transport};
use agno_models::FunctionModel;
use agno_runtime::Agent;
use serde_json::{Map, json};

const TIMEOUT: Duration = Duration::from_millis(1500);

fn misbehaving() -> Option<McpConfig> {
    if !agno_testkit::services::program("MCP failure tests (a misbehaving server in Python)", "python3") {
        return None;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/misbehaving_server.py");
    let mut config = McpConfig::new(Transport::Stdio {
        command: "python3".to_owned(),
        args: vec!["-u".to_owned(), script.to_owned()],
        env: Vec::new(),
    });
    config.timeout = TIMEOUT;
    config.max_result_bytes = 100_000;
    Some(config)
}

async fn echo_works(tools: &[Arc<dyn DynTool>], message: &str) {
    let out = tool(tools, "echo").call(args(json!({"message": message})), ToolContext::default()).await;
    assert_eq!(out.unwrap(), format!("echo: {message}"), "the next call works on a new connection");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_failure_is_a_clear_tool_error_and_the_next_call_reconnects() {
    let Some(config) = misbehaving() else { return };
    let tools = McpToolkit::connect(config).await.unwrap().tools();
    echo_works(&tools, "first").await;

    // A schema that is not JSON Schema: the tool is listed with an empty schema (so the
    // provider accepts the request) and its calls say why they cannot run.
    let bad = tool(&tools, "bad_schema");
    assert_eq!(bad.definition().parameters["properties"], json!({}));
    let err = bad.call(args(json!({"x": 1})), ToolContext::default()).await.unwrap_err();
    assert!(
        err.model_text().contains("unusable input schema") && err.model_text().contains("not valid JSON Schema"),
        "{}",
        err.model_text()
    );

    // A result over the limit.
    let err = tool(&tools, "huge").call(args(json!({"bytes": 200_000})), ToolContext::default()).await.unwrap_err();
    assert!(err.model_text().contains("200000 bytes, over the limit of 100000 bytes"), "{}", err.model_text());
    echo_works(&tools, "after huge").await;

    // Output that is not JSON-RPC instead of an answer: the call times out saying what came.
    let started = Instant::now();
    let err = tool(&tools, "garbage").call(Map::new(), ToolContext::default()).await.unwrap_err();
    assert!(started.elapsed() < TIMEOUT + Duration::from_secs(2), "bounded by the timeout: {:?}", started.elapsed());
    assert_eq!(err.kind, ToolErrorKind::Timeout);
    assert!(err.model_text().contains("did not answer within 1.5 s"), "{}", err.model_text());
    assert!(err.model_text().contains("not JSON-RPC, the last: this is not json-rpc"), "{}", err.model_text());
    echo_works(&tools, "after garbage").await;

    // The server exits in the middle of a call: the call fails at once (it is not repeated: it
    // may have run), naming the exit status and the server's last words.
    let started = Instant::now();
    let err = tool(&tools, "exit_now").call(Map::new(), ToolContext::default()).await.unwrap_err();
    assert!(started.elapsed() < TIMEOUT, "an exit is seen before the timeout: {:?}", started.elapsed());
    assert!(err.model_text().contains("exit status: 3"), "{}", err.model_text());
    assert!(err.model_text().contains("fatal: asked to exit"), "{}", err.model_text());
    echo_works(&tools, "after exit").await;

    // The server hangs: a timeout, and the hung process is replaced.
    let started = Instant::now();
    let err = tool(&tools, "hang").call(Map::new(), ToolContext::default()).await.unwrap_err();
    assert!(started.elapsed() < TIMEOUT + Duration::from_secs(2), "bounded by the timeout: {:?}", started.elapsed());
    assert_eq!(err.kind, ToolErrorKind::Timeout);
    echo_works(&tools, "after hang").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_run_goes_on_through_failing_mcp_tools() {
    let Some(config) = misbehaving() else { return };
    let kit = McpToolkit::connect(config).await.unwrap();
    // One failing tool per turn, then echo, then the answer lists what the tools returned.
    let model: Arc<dyn Model> = Arc::new(FunctionModel::new(|req| {
        let done = tool_results(req).len();
        let call = |name: &str, arguments: &str| ModelResponse {
            tool_calls: vec![ToolCall::new(format!("c{done}"), name, arguments)],
            ..Default::default()
        };
        Ok(match done {
            0 => call("exit_now", "{}"),
            1 => call("hang", "{}"),
            2 => call("garbage", "{}"),
            3 => call("echo", r#"{"message": "still here"}"#),
            _ => ModelResponse { content: tool_results(req).join("\n"), ..Default::default() },
        })
    }));
    let mut builder = Agent::builder(model);
    for t in kit.tools() {
        builder = builder.tool_arc(t);
    }
    let agent = builder.build().unwrap();
    let out = agent.arun("go").await.unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    let tools = out.tools.unwrap();
    let errors: Vec<bool> = tools.iter().map(|t| t.tool_call_error == Some(true)).collect();
    assert_eq!(errors, [true, true, true, false], "{tools:?}");
    let answer = out.content.unwrap().as_str().unwrap().to_owned();
    println!("what the model saw:\n{answer}");
    assert!(
        answer.contains("exit status: 3")
            && answer.contains("did not answer within")
            && answer.ends_with("echo: still here"),
        "{answer}"
    );
}

/// A streamable HTTP "server" answering every request with text that is not JSON-RPC.
async fn garbage_http_server() -> String {
    use axum::routing::any;
    let app = axum::Router::new()
        .route("/mcp", any(|| async { ([("content-type", "application/json")], "<html>502 Bad Gateway</html>") }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/mcp")
}

#[tokio::test]
async fn an_http_server_answering_garbage_is_a_clear_connect_error() {
    let url = garbage_http_server().await;
    let mut config = McpConfig::new(Transport::StreamableHttp { url: url.clone(), headers: vec![] });
    config.timeout = TIMEOUT;
    let err = McpToolkit::connect(config).await.unwrap_err().to_string();
    assert!(err.starts_with(&format!("cannot connect to the MCP server {url}")), "{err}");
    // Nothing listening: also a connect error naming the server.
    let mut config =
        McpConfig::new(Transport::StreamableHttp { url: "http://127.0.0.1:9/mcp".to_owned(), headers: vec![] });
    config.timeout = TIMEOUT;
    let err = McpToolkit::connect(config).await.unwrap_err().to_string();
    assert!(err.starts_with("cannot connect to the MCP server http://127.0.0.1:9/mcp"), "{err}");
}
