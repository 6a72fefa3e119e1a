//! Built-in toolkits referenced by id from `agentos.toml` with their options: an AgentOS agent
//! searches the web (Tavily's wire format), posts to Slack after a confirmation (the toolkit's
//! `requires_confirmation_tools`), and queries a read-only SQLite database; a bad option stops
//! the start naming the agent and the fix. Model, search and Slack are the fake provider server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use agno_os::app::AgentOs;
use agno_testkit::{FakeProvider, Reply};
use common::{TestOs, config};
use serde_json::{Value, json};

fn agent_config(provider: &FakeProvider, tools: &str) -> String {
    format!(
        "[db]\nurl = \"memory://\"\n[[agents]]\nid = \"helper\"\ntools = [{tools}]\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        provider.base_url()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_searches_posts_after_confirmation_and_queries_sql() {
    let provider = FakeProvider::start().await.unwrap();
    let root = provider.root_url();
    let dir = std::env::temp_dir().join(format!("agno-os-toolkits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("shop.db");
    let _ = std::fs::remove_file(&db);
    // The database, made through the same toolkit with writes allowed.
    let mut writer = serde_json::Map::new();
    writer.insert("db_url".into(), json!(format!("sqlite://{}?mode=rwc", db.display())));
    writer.insert("read_only".into(), json!(false));
    let writer = agno_tools::builtin::by_name("sql", &writer).unwrap();
    let run = writer.tools().into_iter().find(|t| t.name() == "run_sql_query").unwrap();
    for statement in
        ["CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)", "INSERT INTO orders VALUES (1, 9.5), (2, 20.0)"]
    {
        let args = json!({"query": statement}).as_object().unwrap().clone();
        run.call(args, agno_core::ToolContext::default()).await.unwrap();
    }
    let tools = format!(
        "{{ toolkit = \"websearch\", provider = \"tavily\", api_key = \"tvly-test\", base_url = \"{root}/tavily\", search_news = false }}, \
         {{ toolkit = \"slack\", token = \"xoxb-test\", base_url = \"{root}/slack/api/\", send_message = true, \
            requires_confirmation_tools = [\"send_slack_message\"] }}, \
         {{ toolkit = \"sql_tools\", db_url = \"sqlite://{}\" }}",
        db.display()
    );
    let os = TestOs::start(config(&agent_config(&provider, &tools))).await;

    let r = os.get("/agents/helper", None).await;
    assert_eq!(r.status, 200);
    let listed: Vec<(String, bool)> = r.body["tools"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_owned(), t["requires_confirmation"].as_bool().unwrap()))
        .collect();
    for expected in ["web_search", "send_slack_message", "list_slack_channels", "list_sql_tables", "run_sql_query"] {
        assert!(listed.iter().any(|(n, _)| n == expected), "{expected} in {listed:?}");
    }
    assert!(!listed.iter().any(|(n, _)| n == "web_search_news"), "search_news = false");
    assert!(listed.contains(&("send_slack_message".to_owned(), true)), "{listed:?}");

    // Search.
    provider.push(Reply::tool_call("web_search", r#"{"query": "agno v3", "max_results": 2}"#));
    provider.push(Reply::text("searched"));
    let r = os.post_form("/agents/helper/runs", &[("message", "search"), ("stream", "false")], None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let found: Value = serde_json::from_str(r.body["tools"][0]["result"].as_str().unwrap()).unwrap();
    assert_eq!(found["results"][0]["title"], "Result 1 for agno v3");
    // The toolkits' instructions reach the model.
    let system =
        provider.requests().iter().find(|q| q.path == "/v1/chat/completions").unwrap().body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_owned();
    assert!(
        system.contains("cite the URLs") && system.contains("<@USER_ID>") && system.contains("read-only"),
        "{system}"
    );

    // Slack: the post waits for a confirmation, then goes out.
    provider.push(Reply::tool_call("send_slack_message", r#"{"channel": "general", "text": "deploy done"}"#));
    let r = os
        .post_form(
            "/agents/helper/runs",
            &[("message", "tell the team"), ("stream", "false"), ("session_id", "s1")],
            None,
        )
        .await;
    assert_eq!(r.body["status"], "PAUSED", "{}", r.body);
    let posted = |p: &FakeProvider| p.requests().iter().filter(|q| q.path == "/slack/api/chat.postMessage").count();
    assert_eq!(posted(&provider), 0, "nothing is posted before the confirmation");
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let mut pending = r.body["tools"].as_array().unwrap().clone();
    for t in &mut pending {
        t["confirmed"] = json!(true);
    }
    provider.push(Reply::text("posted"));
    let c = os
        .post_form(
            &format!("/agents/helper/runs/{run_id}/continue"),
            &[("tools", &Value::Array(pending).to_string()), ("stream", "false"), ("session_id", "s1")],
            None,
        )
        .await;
    assert_eq!((c.status, c.body["status"].as_str()), (200, Some("COMPLETED")), "{}", c.body);
    assert_eq!(posted(&provider), 1);

    // SQL: read, and a write refused by the database.
    provider.push(Reply::tool_call("run_sql_query", r#"{"query": "SELECT sum(total) AS total FROM orders"}"#));
    provider.push(Reply::tool_call("run_sql_query", r#"{"query": "DELETE FROM orders"}"#));
    provider.push(Reply::text("done"));
    let r = os.post_form("/agents/helper/runs", &[("message", "total?"), ("stream", "false")], None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["tools"][0]["result"], r#"[{"total":29.5}]"#);
    assert_eq!(r.body["tools"][1]["tool_call_error"], true);
    assert!(r.body["tools"][1]["result"].as_str().unwrap().contains("read-only"), "{}", r.body);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn bad_toolkit_options_stop_the_start_naming_the_fix() {
    let provider = FakeProvider::start().await.unwrap();
    for (tools, reason) in [
        ("{ toolkit = \"sql\" }", "give db_url"),
        ("{ toolkit = \"sql\", db_url = \"oracle://x\" }", "not supported"),
        ("{ toolkit = \"websearch\", provider = \"bing\" }", "tavily, brave or searxng"),
        ("{ toolkit = \"slack\", token = \"xoxb-t\", send_messages = true }", "no tool named send_messages"),
        ("{ toolkit = \"slack\", token = \"xoxb-t\", markdown = \"yes\" }", "markdown must be true or false"),
        ("{ toolkit = \"notion\" }", "built-in toolkits are"),
    ] {
        let err = AgentOs::from_config(&config(&agent_config(&provider, tools))).await.unwrap_err().to_string();
        assert!(err.contains("helper") && err.contains(reason), "{tools}: {err}");
    }
}
