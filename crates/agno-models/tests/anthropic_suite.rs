//! `Claude` (Anthropic's Messages API) against the fake server's `/v1/messages`: the shared
//! scenarios, then what only Anthropic has (thinking blocks as reasoning, the `refusal` stop,
//! cached-token usage, tool results as `tool_result` blocks of a user message, media blocks).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod scenarios;

use std::sync::Arc;

use agno_core::{Message, Model, ModelErrorKind, ModelRequest, ToolDefinition};
use agno_models::{Claude, ClientConfig, RetryPolicy};
use agno_testkit::{FakeProvider, RecordedRequest, Reply};
use scenarios::{Harness, Mode, Structured, WireMessage, WireRequest, ask, run_err, run_ok};
use serde_json::{Value, json};

#[derive(Debug)]
struct Anthropic {
    server: FakeProvider,
}

impl Harness for Anthropic {
    const MODEL_ID: &'static str = "claude-sonnet-4-5";
    const SCHEMA_NAMES: bool = false;

    async fn start() -> Self {
        Self { server: FakeProvider::start().await.expect("fake server starts") }
    }

    fn server(&self) -> &FakeProvider {
        &self.server
    }

    fn base_url(&self) -> String {
        self.server.root_url()
    }

    fn model_at(&self, base_url: &str, retry: RetryPolicy) -> Arc<dyn Model> {
        let mut cfg = ClientConfig::new(base_url);
        cfg.api_key = Some("sk-ant-test".into());
        cfg.retry = retry;
        Arc::new(Claude::new(Self::MODEL_ID, cfg).expect("client builds"))
    }

    fn auth_header(&self) -> (&'static str, String) {
        ("x-api-key", "sk-ant-test".to_owned())
    }

    fn inspect(&self, request: &RecordedRequest) -> WireRequest {
        anthropic_wire(request)
    }
}

fn block_text(blocks: &[Value]) -> String {
    blocks.iter().filter(|b| b["type"] == "text").filter_map(|b| b["text"].as_str()).collect()
}

/// Reads a Messages request, asserting its Anthropic shape.
fn anthropic_wire(request: &RecordedRequest) -> WireRequest {
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    let body = &request.body;
    assert!(body["max_tokens"].as_u64().is_some_and(|n| n > 0), "max_tokens is required: {body}");
    let mut messages = Vec::new();
    if let Some(system) = body.get("system") {
        messages.push(WireMessage::text("system", system.as_str().expect("system is a string")));
    }
    for m in body["messages"].as_array().expect("messages") {
        let role = m["role"].as_str().unwrap();
        let blocks: Vec<Value> = match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(b) => b.clone(),
            other => panic!("content must be a string or blocks: {other}"),
        };
        for result in blocks.iter().filter(|b| b["type"] == "tool_result") {
            assert_eq!(role, "user", "tool results ride in user messages");
            messages.push(WireMessage {
                role: "tool".into(),
                text: result["content"].as_str().unwrap_or_default().to_owned(),
                tool_call_ids: Vec::new(),
                tool_call_id: result["tool_use_id"].as_str().map(str::to_owned),
            });
        }
        let ids: Vec<String> =
            blocks.iter().filter(|b| b["type"] == "tool_use").map(|b| b["id"].as_str().unwrap().to_owned()).collect();
        let text = block_text(&blocks);
        if !text.is_empty() || !ids.is_empty() || blocks.iter().all(|b| b["type"] != "tool_result") {
            messages.push(WireMessage { role: role.to_owned(), text, tool_call_ids: ids, tool_call_id: None });
        }
    }
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| ToolDefinition {
            name: t["name"].as_str().unwrap().to_owned(),
            description: t["description"].as_str().map(str::to_owned),
            parameters: t["input_schema"].clone().into(),
            strict: false,
        })
        .collect();
    let structured = match body.pointer("/output_config/format") {
        Some(f) => {
            assert_eq!(f["type"], "json_schema");
            Structured::JsonSchema { name: String::new(), schema: f["schema"].clone(), strict: false }
        }
        None => Structured::None,
    };
    WireRequest {
        model: body["model"].as_str().map(str::to_owned),
        stream: body["stream"].as_bool().unwrap_or(false),
        messages,
        tools,
        structured,
        // Anthropic always reports usage.
        usage_requested: true,
    }
}

scenarios::provider_suite!(Anthropic);

async fn both(f: impl AsyncFn(Mode)) {
    f(Mode::Stream).await;
    f(Mode::Invoke).await;
}

#[tokio::test]
async fn thinking_blocks_are_reasoning_and_the_budget_is_sent() {
    both(async |mode| {
        let h = Anthropic::start().await;
        h.push(Reply::Reasoning("Paris is in France; the capital is Paris.".into(), Box::new(Reply::text("Paris."))));
        let mut cfg = ClientConfig::new(h.base_url());
        cfg.api_key = Some("sk-ant-test".into());
        let model = Claude::new("claude-sonnet-4-5", cfg).unwrap().with_thinking(2048);
        let out = run_ok(&model, ask("Capital of France?"), mode).await;
        assert_eq!(out.response.content, "Paris.");
        assert_eq!(out.response.reasoning.as_deref(), Some("Paris is in France; the capital is Paris."));
        let sent = &h.server().requests()[0].body;
        assert_eq!(sent["thinking"], json!({"type": "enabled", "budget_tokens": 2048}));
    })
    .await;
}

#[tokio::test]
async fn a_refusal_is_a_content_filtered_error() {
    both(async |mode| {
        let h = Anthropic::start().await;
        h.push(Reply::Filtered("policy".into()));
        let err = run_err(&*h.model(), ask("Something it will not do"), mode).await;
        assert_eq!(err.kind, ModelErrorKind::ContentFiltered, "{}", err.message);
        assert!(err.message.contains("refusal"), "{}", err.message);
    })
    .await;
}

#[tokio::test]
async fn errors_keep_anthropics_message_and_kind() {
    let h = Anthropic::start().await;
    h.push(Reply::Error { status: 404, message: "model: claude-9 not found".into(), retry_after: None });
    h.push(Reply::Error {
        status: 400,
        message: "prompt is too long: 210000 tokens > 200000 maximum".into(),
        retry_after: None,
    });
    h.push(Reply::Error { status: 529, message: "Overloaded".into(), retry_after: None });
    h.push(Reply::text("back"));
    let model = h.model();
    let err = run_err(&*model, ask("a"), Mode::Invoke).await;
    assert_eq!(err.kind, ModelErrorKind::ModelNotFound, "{}", err.message);
    assert_eq!(err.message.matches("claude-9 not found").count(), 1, "the cause once: {}", err.message);
    let err = run_err(&*model, ask("a"), Mode::Invoke).await;
    assert_eq!(err.kind, ModelErrorKind::ContextTooLong, "{}", err.message);
    assert_eq!(err.kind.id(), "context_window_exceeded_error");
    // 529 overloaded is retried like a 5xx.
    assert_eq!(run_ok(&*model, ask("a"), Mode::Invoke).await.response.content, "back");
}

#[tokio::test]
async fn consecutive_tool_results_and_media_are_anthropic_blocks() {
    let h = Anthropic::start().await;
    h.push(Reply::text("done"));
    let mut user = Message::user("");
    user.content = Some(json!([
        {"type": "text", "text": "What is in these?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"}},
    ]));
    let calls = vec![
        agno_core::ToolCall::new("toolu_1", "get_weather", r#"{"city":"Oslo"}"#),
        agno_core::ToolCall::new("toolu_2", "get_weather", r#"{"city":"Rome"}"#),
    ];
    let request = ModelRequest {
        messages: vec![
            Message::system("Be brief."),
            user,
            Message::assistant("Checking.", calls),
            Message::tool_result("toolu_1", "get_weather", "cold", false),
            Message::tool_result("toolu_2", "get_weather", "warm", true),
        ],
        tools: vec![scenarios::weather_tool()],
        tool_choice: Some(json!("required")),
        ..ModelRequest::default()
    };
    run_ok(&*h.model(), request, Mode::Invoke).await;
    let body = &h.server().requests()[0].body;
    assert_eq!(body["system"], "Be brief.");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "both results in one user message: {body}");
    let media: Vec<&str> =
        messages[0]["content"].as_array().unwrap().iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(media, ["text", "image", "image", "document"]);
    assert_eq!(messages[0]["content"][1]["source"], json!({"type": "url", "url": "https://example.com/cat.png"}));
    assert_eq!(messages[0]["content"][2]["source"]["media_type"], "image/png");
    let results = messages[2]["content"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!((results[1]["tool_use_id"].as_str(), results[1]["is_error"].as_bool()), (Some("toolu_2"), Some(true)));
    assert_eq!(messages[1]["content"][1]["input"], json!({"city": "Oslo"}));
    assert_eq!(body["tool_choice"], json!({"type": "any"}));
}

/// A virtual clock for the retry loop: every delay it is asked to wait is recorded and
/// "passes" at once, so a test sees the exact waits without sleeping.
fn virtual_clock() -> (agno_models::Sleeper, Arc<std::sync::Mutex<Vec<std::time::Duration>>>) {
    let waits = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = Arc::clone(&waits);
    let sleeper = agno_models::Sleeper::new(move |d| {
        record.lock().unwrap().push(d);
        Box::pin(async {})
    });
    (sleeper, waits)
}

#[tokio::test]
async fn retries_wait_what_retry_after_says_and_back_off_with_jitter_otherwise() {
    use std::time::Duration;
    let h = Anthropic::start().await;
    let (sleeper, waits) = virtual_clock();
    let mut cfg = ClientConfig::new(h.base_url());
    cfg.api_key = Some("sk-ant-test".into());
    cfg.sleeper = sleeper;
    cfg.retry =
        RetryPolicy { max_retries: 3, base_delay: Duration::from_millis(400), max_delay: Duration::from_secs(30) };
    let model = Claude::new("claude-sonnet-4-5", cfg).unwrap();

    // The provider says when: 7 s, then 2 s; then it answers.
    h.push(Reply::Error { status: 429, message: "rate limited".into(), retry_after: Some(7) });
    h.push(Reply::Error { status: 529, message: "overloaded".into(), retry_after: Some(2) });
    h.push(Reply::text("finally"));
    let out = run_ok(&model, ask("hi"), Mode::Stream).await;
    assert_eq!(out.response.content, "finally");
    assert_eq!(*waits.lock().unwrap(), [Duration::from_secs(7), Duration::from_secs(2)]);

    // No hint: exponential backoff with jitter, each wait in [base * 2^n / 2, base * 2^n].
    waits.lock().unwrap().clear();
    h.set_fallback(Reply::Error { status: 500, message: "down".into(), retry_after: None });
    let err = run_err(&model, ask("hi"), Mode::Invoke).await;
    assert!(err.message.contains("gave up after 4 attempts"), "{}", err.message);
    let seen = waits.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    for (n, wait) in seen.iter().enumerate() {
        let cap = Duration::from_millis(400) * 2u32.pow(n as u32);
        assert!(*wait >= cap / 2 && *wait <= cap, "retry {n}: {wait:?} outside [{:?}, {cap:?}]", cap / 2);
    }
    println!("waits with retry-after 7 and 2: 7 s, 2 s; without: {seen:?}");
}
