//! An MCP server written with the official Python SDK (PyPI `mcp` 2.x, in the Agno test venv:
//! `scripts/interop/mcp_server.py`), over streamable HTTP and SSE: an agent run whose
//! server is restarted between two of its tool calls goes on over a new session; a call in
//! flight when the server dies fails within the timeout and the next call reconnects; headers
//! derived from the run's user reach the server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{args, tool, tool_results};

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agno_core::{Model, ModelResponse, RunStatus, ToolCall, ToolContext};
use agno_mcp::{HeaderTemplates, McpConfig, McpToolkit, Transport};
use agno_models::FunctionModel;
use agno_runtime::{Agent, RunRequest};
use agno_tools::{Function, NoArgs};
use serde_json::{Map, json};

const TIMEOUT: Duration = Duration::from_secs(3);

/// The Python server on a port; restarted and killed by the test.
struct PythonServer {
    python: String,
    port: u16,
    transport: &'static str,
    child: Option<std::process::Child>,
}

impl PythonServer {
    fn start(python: &str, transport: &'static str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut server = Self { python: python.to_owned(), port, transport, child: None };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/interop/mcp_server.py");
        let child = std::process::Command::new(&self.python)
            .args([script, &self.port.to_string(), self.transport])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    async fn ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await.is_err() {
            assert!(Instant::now() < deadline, "the Python MCP server did not listen on {}", self.port);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn url(&self) -> String {
        match self.transport {
            "sse" => format!("http://127.0.0.1:{}/sse", self.port),
            _ => format!("http://127.0.0.1:{}/mcp", self.port),
        }
    }

    fn config(&self) -> McpConfig {
        let headers = vec![("x-agno-user".to_owned(), "{user_id}".to_owned())];
        let transport = match self.transport {
            "sse" => Transport::Sse { url: self.url(), headers: vec![] },
            _ => Transport::StreamableHttp { url: self.url(), headers: vec![] },
        };
        let mut config = McpConfig::new(transport);
        config.timeout = TIMEOUT;
        config.header_provider = Some(Arc::new(HeaderTemplates::parse(&headers).unwrap()));
        config
    }
}

impl Drop for PythonServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn python() -> Option<String> {
    agno_testkit::agno_python("MCP tests against a server written with the Python mcp package")
}

fn ctx(user: &str) -> ToolContext {
    ToolContext { user_id: Some(user.to_owned()), session_id: "s1".to_owned(), ..ToolContext::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_server_restarts_mid_run_goes_on_over_a_new_session() {
    let Some(python) = python() else { return };
    let server = Arc::new(tokio::sync::Mutex::new(PythonServer::start(&python, "streamable-http")));
    server.lock().await.ready().await;
    let kit = McpToolkit::connect(server.lock().await.config()).await.unwrap();

    // The agent has the server's tools and one of ours that restarts the server.
    let restarter = Arc::clone(&server);
    let restart = Function::new("restart_server", "Restart the MCP server.", move |_: NoArgs| {
        let server = Arc::clone(&restarter);
        async move {
            let mut server = server.lock().await;
            server.kill();
            server.spawn();
            server.ready().await;
            Ok("restarted")
        }
    });
    let model: Arc<dyn Model> = Arc::new(FunctionModel::new(|req| {
        let done = tool_results(req).len();
        let call = |name: &str, arguments: &str| ModelResponse {
            tool_calls: vec![ToolCall::new(format!("c{done}"), name, arguments)],
            ..Default::default()
        };
        Ok(match done {
            0 => call("calls", "{}"),
            1 => call("add", r#"{"a": 2, "b": 3}"#),
            2 => call("restart_server", "{}"),
            3 => call("calls", "{}"),
            4 => call("whoami", "{}"),
            _ => ModelResponse { content: tool_results(req).join(","), ..Default::default() },
        })
    }));
    let mut builder = Agent::builder(model).function(restart);
    for t in kit.tools() {
        builder = builder.tool_arc(t);
    }
    let agent = builder.build().unwrap();
    let out = agent.arun(RunRequest::new("go").user_id("ann")).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    let tools = out.tools.clone().unwrap();
    assert!(tools.iter().all(|t| t.tool_call_error == Some(false)), "no tool failed: {tools:?}");
    // "1" after the restart: a new process answered, over a new session; the user's header
    // reached it.
    assert_eq!(out.content.unwrap(), json!("1,5,restarted,1,ann"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_flight_when_the_server_dies_fails_within_the_timeout_and_the_next_reconnects() {
    let Some(python) = python() else { return };
    let mut server = PythonServer::start(&python, "streamable-http");
    server.ready().await;
    let tools = McpToolkit::connect(server.config()).await.unwrap().tools();
    let slow = Arc::clone(tool(&tools, "slow"));
    let in_flight = tokio::spawn(async move { slow.call(args(json!({"seconds": 60})), ctx("ann")).await });
    // Wait until the server is inside `slow` (its call counter, asked by another user).
    let calls = Arc::clone(tool(&tools, "calls"));
    agno_testkit::until("the slow call reached the server", Duration::from_secs(20), || {
        let calls = Arc::clone(&calls);
        async move { calls.call(Map::new(), ctx("bob")).await.ok().and_then(|n| n.parse::<u32>().ok()).unwrap_or(0) >= 2 }
    })
    .await;
    server.kill();
    let killed = Instant::now();
    let outcome = tokio::time::timeout(TIMEOUT + Duration::from_secs(2), in_flight).await.expect("bounded").unwrap();
    let err = outcome.unwrap_err();
    println!("in-flight call, server killed: failed after {:?}: {}", killed.elapsed(), err.model_text());
    assert!(killed.elapsed() <= TIMEOUT + Duration::from_millis(500), "{:?}", killed.elapsed());

    server.spawn();
    server.ready().await;
    let add = tool(&tools, "add");
    let mut attempts = 0;
    let answer = loop {
        attempts += 1;
        match add.call(args(json!({"a": 20, "b": 22})), ctx("ann")).await {
            Ok(text) => break text,
            Err(e) => {
                println!("call {attempts} after the restart: {}", e.model_text());
                assert!(attempts < 3, "no reconnect after {attempts} calls");
            }
        }
    };
    assert_eq!(answer, "42");
    println!("calls after the restart until one succeeded: {attempts}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sse_transport_reaches_a_python_server_with_per_user_headers() {
    let Some(python) = python() else { return };
    let mut server = PythonServer::start(&python, "sse");
    server.ready().await;
    let tools = McpToolkit::connect(server.config()).await.unwrap().tools();
    assert_eq!(tool(&tools, "add").call(args(json!({"a": 1, "b": 2})), ctx("ann")).await.unwrap(), "3");
    assert_eq!(tool(&tools, "whoami").call(Map::new(), ctx("ann")).await.unwrap(), "ann");
    assert_eq!(tool(&tools, "whoami").call(Map::new(), ctx("bob")).await.unwrap(), "bob");

    // Killed and restarted: the event stream ends, the session is replaced.
    server.kill();
    server.spawn();
    server.ready().await;
    let results = Mutex::new(Vec::new());
    for _ in 0..3 {
        let r = tool(&tools, "add").call(args(json!({"a": 2, "b": 2})), ctx("ann")).await;
        let ok = r.is_ok();
        results.lock().unwrap().push(r.map_err(|e| e.model_text()));
        if ok {
            break;
        }
    }
    let results = results.into_inner().unwrap();
    assert_eq!(results.last().unwrap().as_deref(), Ok("4"), "reconnected over SSE: {results:?}");
}
