//! MCP toolkits in `agentos.toml`: an agent served by AgentOS calls a tool of
//! `@modelcontextprotocol/server-everything` (npm) over stdio; a server that cannot start is a
//! startup error unless optional; a bad table is refused with the field to fix.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::path::PathBuf;

use agno_os::app::AgentOs;
use agno_testkit::{FakeProvider, Reply};
use common::{TestOs, config};

fn everything(what: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("AGNO_MCP_SERVERS")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/agno-mcp-servers")))?;
    let entry = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if entry.exists() && agno_testkit::services::program(what, "node") {
        Some(entry)
    } else {
        agno_testkit::services::skip(what, "the MCP reference servers (scripts/test --all installs them)");
        None
    }
}

fn agent_config(provider: &str, tools: &str) -> String {
    format!(
        "[db]\nurl = \"memory://\"\n[[agents]]\nid = \"helper\"\ntools = [{tools}]\n\
         model = {{ provider = \"openai\", id = \"gpt-4o-mini\", base_url = \"{provider}\", api_key = \"sk\" }}\n"
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
        ("{ toolkit = \"mcp\", url = \"http://x/mcp\", transport = \"sse\" }", "transport \"sse\" is not supported"),
        ("{ toolkit = \"mcp\" }", "needs command"),
    ] {
        let err = AgentOs::from_config(&config(&agent_config(&provider.base_url(), table))).await.unwrap_err();
        assert!(err.to_string().contains(reason), "{table}: {err}");
    }
}
