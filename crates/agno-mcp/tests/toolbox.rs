//! `McpToolbox` against the Toolbox-protocol server of the test kit
//! (`agno_testkit::toolbox`, which cites the Toolbox documents it follows): toolsets, one tool by
//! name, `auth_token_getters` called on every request with their tokens reaching the server as
//! `<service>_token`, authenticated parameters the model can neither see nor forge,
//! `bound_params` fixed and per call, and the refusals toolbox-core makes. Google's own client
//! (PyPI `toolbox-core`) is run against the same server, so the server is not only our reading of
//! the protocol.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{args, tool};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agno_core::{Model, ModelResponse, Role, RunStatus, ToolCall, ToolContext};
use agno_mcp::{AuthTokenGetter, BoundValue, McpToolbox, TokenFn, ToolboxConfig};
use agno_models::FunctionModel;
use agno_runtime::{Agent, RunRequest};
use agno_testkit::toolbox::{AUTH_SERVICE, TOKEN_PREFIX, ToolboxServer};
use serde_json::{Map, Value, json};

fn user(id: &str) -> ToolContext {
    ToolContext { user_id: Some(id.to_owned()), session_id: "s1".to_owned(), ..ToolContext::default() }
}

/// A getter that counts its calls and answers a new token each time.
fn counting_getter(calls: &Arc<AtomicUsize>) -> Arc<dyn AuthTokenGetter> {
    let calls = Arc::clone(calls);
    Arc::new(TokenFn(move |_: &ToolContext| {
        let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(format!("{TOKEN_PREFIX}ann+{n}@example.com"))
    }))
}

#[tokio::test]
async fn tokens_are_fetched_on_every_request_and_reach_the_server() {
    let server = ToolboxServer::start().await.unwrap();
    let getter_calls = Arc::new(AtomicUsize::new(0));
    let mut config = ToolboxConfig::new(&server.url());
    config.toolsets = vec!["hotels".into(), "bookings".into()];
    config.auth_token_getters = BTreeMap::from([(AUTH_SERVICE.to_owned(), counting_getter(&getter_calls))]);
    config.bound_params = BTreeMap::from([("region".to_owned(), BoundValue::Fixed(json!("eu")))]);
    let toolbox = McpToolbox::connect(config).await.unwrap();
    assert_eq!(getter_calls.load(Ordering::SeqCst), 0, "getters are not called to load tools");
    let tools = toolbox.tools();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    names.sort_unstable();
    assert_eq!(names, ["book-hotel", "list-my-bookings", "search-hotels-by-name"]);
    // The toolsets were listed at /mcp/<toolset>.
    let lists: Vec<String> =
        server.methods().into_iter().filter(|(m, _)| m == "tools/list").map(|(_, path)| path).collect();
    assert_eq!(lists, ["/mcp/hotels", "/mcp/bookings"]);

    // Bound and token-filled parameters are not shown to the model.
    let search = tool(&tools, "search-hotels-by-name");
    assert_eq!(search.definition().parameters["properties"].as_object().unwrap().keys().collect::<Vec<_>>(), ["name"]);
    let bookings = tool(&tools, "list-my-bookings");
    assert_eq!(bookings.definition().parameters["properties"], json!({}));
    assert_eq!(bookings.definition().parameters["required"], json!([]));

    let found = search.call(args(json!({"name": "Basel", "region": "us"})), user("ann")).await.unwrap();
    assert_eq!(serde_json::from_str::<Value>(&found).unwrap()["hotels"][0]["region"], "eu", "the bound value wins");
    for _ in 0..3 {
        let booked = tool(&tools, "book-hotel").call(args(json!({"hotel_id": 7})), user("ann")).await.unwrap();
        assert!(booked.starts_with("booked hotel 7 for ann+"), "{booked}");
    }
    // The model names someone else: the server fills the parameter from the token.
    let mine = bookings.call(args(json!({"user_email": "mallory@example.com"})), user("ann")).await.unwrap();
    assert_eq!(serde_json::from_str::<Value>(&mine).unwrap()["user_email"], "ann+5@example.com");

    let calls = server.calls();
    let fetched = getter_calls.load(Ordering::SeqCst);
    println!("{} tool calls, auth_token_getters called {fetched} times", calls.len());
    assert_eq!(fetched, calls.len(), "the getter is called once per request");
    let tokens: Vec<&str> = calls.iter().map(|c| c.token().unwrap()).collect();
    let expected: Vec<String> = (1..=5).map(|n| format!("{TOKEN_PREFIX}ann+{n}@example.com")).collect();
    assert_eq!(tokens, expected, "each request carried its own fresh token");
    assert_eq!(calls[0].arguments, json!({"name": "Basel", "region": "eu"}));
    assert_eq!(calls[4].arguments, json!({}), "the forged authenticated parameter never left the client");
    assert!(calls.iter().all(|c| c.headers.get("mcp-protocol-version").is_some_and(|v| v == "2025-06-18")));
}

#[tokio::test]
async fn per_user_tokens_and_computed_bound_params_follow_the_calling_user() {
    let server = ToolboxServer::start().await.unwrap();
    let mut config = ToolboxConfig::new(&format!("{}/mcp", server.url()));
    config.tool_name = Some("book-hotel".into());
    config.auth_token_getters = BTreeMap::from([(
        AUTH_SERVICE.to_owned(),
        Arc::new(TokenFn(|ctx: &ToolContext| match ctx.user_id.as_deref() {
            Some(u) => Ok(format!("{TOKEN_PREFIX}{u}@example.com")),
            None => Err("no user signed in".to_owned()),
        })) as Arc<dyn AuthTokenGetter>,
    )]);
    let tools = McpToolbox::connect(config).await.unwrap().tools();
    assert_eq!(tools.len(), 1);
    let book = tool(&tools, "book-hotel");

    // An agent run as a user books as that user.
    let model: Arc<dyn Model> = Arc::new(FunctionModel::new(|req| {
        let last = req.messages.last().unwrap();
        Ok(if last.role == Role::User {
            ModelResponse {
                tool_calls: vec![ToolCall::new("c1", "book-hotel", r#"{"hotel_id": 7}"#)],
                ..Default::default()
            }
        } else {
            ModelResponse { content: last.content_text().unwrap_or_default().to_owned(), ..Default::default() }
        })
    }));
    let agent = Agent::builder(model).tool_arc(Arc::clone(book)).build().unwrap();
    for u in ["ann", "bob"] {
        let out = agent.arun(RunRequest::new("book it").user_id(u)).await.unwrap();
        assert_eq!(out.status, RunStatus::Completed);
        assert_eq!(out.content.unwrap(), json!(format!("booked hotel 7 for {u}@example.com")));
    }
    // Without a user the getter fails: a tool error naming the service, nothing sent.
    let before = server.calls().len();
    let err = book.call(args(json!({"hotel_id": 7})), ToolContext::default()).await.unwrap_err();
    assert!(
        err.model_text().contains("token getter of auth service my-google-auth failed: no user signed in"),
        "{}",
        err.model_text()
    );
    assert_eq!(server.calls().len(), before);

    // A bound value computed per call.
    let mut config = ToolboxConfig::new(&server.url());
    config.tool_name = Some("search-hotels-by-name".into());
    config.bound_params = BTreeMap::from([(
        "region".to_owned(),
        BoundValue::Computed(Arc::new(|ctx: &ToolContext| {
            ctx.user_id.as_ref().map(|u| json!(format!("region-of-{u}")))
        })),
    )]);
    let tools = McpToolbox::connect(config).await.unwrap().tools();
    let found = tools[0].call(args(json!({"name": "Bern"})), user("cy")).await.unwrap();
    assert_eq!(serde_json::from_str::<Value>(&found).unwrap()["hotels"][0]["region"], "region-of-cy");
}

#[tokio::test]
async fn toolbox_refusals_name_what_to_fix() {
    let server = ToolboxServer::start().await.unwrap();
    let connect = |f: fn(&mut ToolboxConfig)| {
        let mut config = ToolboxConfig::new(&server.url());
        f(&mut config);
        McpToolbox::connect(config)
    };
    // A tool that needs a token, and no getter for its service: the call fails before sending.
    let tools = connect(|c| c.toolsets = vec!["hotels".into()]).await.unwrap().tools();
    let err = tool(&tools, "book-hotel").call(args(json!({"hotel_id": 1})), user("ann")).await.unwrap_err();
    assert!(
        err.model_text().contains("needs a token of one of these auth services, and none has a getter: my-google-auth"),
        "{}",
        err.model_text()
    );
    assert!(server.calls().is_empty());
    // The server's own refusals are tool errors with its message.
    let err = tool(&tools, "search-hotels-by-name").call(Map::new(), user("ann")).await.unwrap_err();
    assert!(err.model_text().contains("parameter \"name\" is required"), "{}", err.model_text());

    let err = connect(|c| c.toolsets = vec!["nope".into()]).await.unwrap_err().to_string();
    assert!(err.contains("listing toolset \"nope\" failed: toolset does not exist"), "{err}");
    let err = connect(|c| c.tool_name = Some("nope".into())).await.unwrap_err().to_string();
    assert!(err.contains("tool \"nope\" not found"), "{err}");
    let err = connect(|c| {
        c.tool_name = Some("book-hotel".into());
        c.toolsets = vec!["hotels".into()];
    })
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("toolsets or tool_name, not both"), "{err}");
    let err = connect(|c| {
        c.tool_name = Some("search-hotels-by-name".into());
        c.auth_token_getters = BTreeMap::from([(
            "other-auth".to_owned(),
            Arc::new(TokenFn(|_: &ToolContext| Ok("t".to_owned()))) as Arc<dyn AuthTokenGetter>,
        )]);
        c.bound_params = BTreeMap::from([("regoin".to_owned(), BoundValue::Fixed(json!("eu")))]);
    })
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("auth_token_getters name services no loaded tool uses: other-auth"), "{err}");
    assert!(err.contains("bound_params name parameters no loaded tool has: regoin"), "{err}");
    let err = McpToolbox::connect(ToolboxConfig::new("http://127.0.0.1:9")).await.unwrap_err().to_string();
    assert!(err.starts_with("cannot connect to the MCP server http://127.0.0.1:9/mcp"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn googles_toolbox_sdk_talks_to_the_test_server_as_we_do() {
    let Some(python) = agno_testkit::agno_python("the toolbox-core SDK against the test Toolbox server") else {
        return;
    };
    let server = ToolboxServer::start().await.unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/interop/toolbox_client.py");
    let url = server.url();
    let out = tokio::task::spawn_blocking(move || std::process::Command::new(python).arg(script).arg(url).output())
        .await
        .unwrap()
        .unwrap();
    assert!(out.status.success(), "toolbox-core failed: {}", String::from_utf8_lossy(&out.stderr));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["tools"], json!(["book-hotel", "search-hotels-by-name"]));
    assert_eq!(got["parameters"]["search-hotels-by-name"], json!(["name"]), "bound parameters hidden, as we hide them");
    assert_eq!(serde_json::from_str::<Value>(got["search"].as_str().unwrap()).unwrap()["hotels"][0]["region"], "eu");
    assert_eq!(got["book"], "booked hotel 7 for sdk@example.com");
    let calls = server.calls();
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|c| c.token() == Some("test-id-token:sdk@example.com")), "{calls:?}");
}
