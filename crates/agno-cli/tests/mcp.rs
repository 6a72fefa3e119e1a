//! `agno run --mcp ...`: the agent gets the tools of an MCP server we did not write
//! (`@modelcontextprotocol/server-everything` from npm, over stdio); a server that cannot start
//! is a clear error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::path::PathBuf;

use agno_testkit::{FakeProvider, Reply};
use common::agno;

fn everything(what: &str) -> Option<PathBuf> {
    agno_testkit::services::mcp_reference_server(what, "server-everything")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agno_run_uses_the_tools_of_an_mcp_server() {
    let Some(entry) = everything("agno run --mcp") else { return };
    let provider = FakeProvider::start().await.unwrap();
    provider.push(Reply::tool_call("get-sum", r#"{"a": 20, "b": 22}"#));
    provider.push(Reply::text("It is 42."));
    let out = agno()
        .args([
            "run",
            "--model",
            "openai-chat:gpt-4o-mini",
            "--mcp",
            &format!("node {} stdio", entry.display()),
            "20 + 22?",
        ])
        .env("OPENAI_BASE_URL", provider.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert_eq!(stdout.trim(), "It is 42.");
    let second = &provider.requests()[1].body;
    let result = second["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(result["content"], "The sum of 20 and 22 is 42.");

    let out = agno().args(["run", "--model", "test", "--mcp", "/nonexistent/server", "hi"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("cannot connect to the MCP server /nonexistent/server"),
        "{stderr}"
    );
}
