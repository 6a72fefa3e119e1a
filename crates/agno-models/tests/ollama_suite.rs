//! `Ollama` (the native `/api/chat`) against the fake server: the shared scenarios, then what
//! only Ollama has (NDJSON streaming, `keep_alive`, `think`, images as base64, tool results by
//! name, a model that is not pulled).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod scenarios;

use std::sync::Arc;

use agno_core::{Message, Model, ModelErrorKind, ModelRequest, ToolDefinition};
use agno_models::{ClientConfig, Ollama, RetryPolicy};
use agno_testkit::{FakeProvider, RecordedRequest, Reply};
use scenarios::{Harness, Mode, Structured, WireMessage, WireRequest, ask, run_err, run_ok};
use serde_json::{Value, json};

#[derive(Debug)]
struct Local {
    server: FakeProvider,
}

impl Harness for Local {
    const MODEL_ID: &'static str = "llama3.2";
    const SCHEMA_NAMES: bool = false;
    const STREAMS_TOOL_ARGUMENTS: bool = false;
    const TOOL_CALL_IDS: bool = false;

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
        cfg.api_key = Some("ol-test".into());
        cfg.retry = retry;
        Arc::new(Ollama::new(Self::MODEL_ID, cfg).expect("client builds"))
    }

    fn auth_header(&self) -> (&'static str, String) {
        ("authorization", "Bearer ol-test".to_owned())
    }

    fn inspect(&self, request: &RecordedRequest) -> WireRequest {
        assert_eq!(request.path, "/api/chat");
        let body = &request.body;
        let stream = body["stream"].as_bool().expect("stream is always sent (the API defaults to true)");
        let messages = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| WireMessage {
                role: m["role"].as_str().unwrap().to_owned(),
                text: m["content"].as_str().unwrap_or_default().to_owned(),
                tool_call_ids: Vec::new(),
                tool_call_id: None,
            })
            .collect();
        let tools = body
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|t| ToolDefinition {
                name: t["function"]["name"].as_str().unwrap().to_owned(),
                description: t["function"]["description"].as_str().map(str::to_owned),
                parameters: t["function"]["parameters"].clone().into(),
                strict: false,
            })
            .collect();
        let structured = match body.get("format") {
            Some(Value::String(s)) if s == "json" => Structured::JsonObject,
            Some(schema @ Value::Object(_)) => {
                Structured::JsonSchema { name: String::new(), schema: schema.clone(), strict: false }
            }
            _ => Structured::None,
        };
        WireRequest {
            model: body["model"].as_str().map(str::to_owned),
            stream,
            messages,
            tools,
            structured,
            usage_requested: true,
        }
    }
}

scenarios::provider_suite!(Local);

#[tokio::test]
async fn options_keep_alive_and_thinking_are_sent_and_thinking_comes_back() {
    for mode in [Mode::Stream, Mode::Invoke] {
        let h = Local::start().await;
        h.push(Reply::Reasoning("Count: 1, 2, 3.".into(), Box::new(Reply::text("3"))));
        let model = Ollama::new("qwen3", ClientConfig::new(h.base_url()))
            .unwrap()
            .with_keep_alive("10m")
            .with_thinking()
            .with_option("num_ctx", json!(8192));
        let out = run_ok(&model, ask("How many?"), mode).await;
        assert_eq!((out.response.content.as_str(), out.response.reasoning.as_deref()), ("3", Some("Count: 1, 2, 3.")));
        let body = &h.server().requests()[0].body;
        assert_eq!((body["keep_alive"].as_str(), body["think"].as_bool()), (Some("10m"), Some(true)));
        assert_eq!(body["options"], json!({"num_ctx": 8192}));
        if mode == Mode::Stream {
            let response = h.server().requests().len();
            assert_eq!(response, 1);
        }
    }
}

#[tokio::test]
async fn images_go_as_base64_and_tool_results_name_their_tool() {
    let h = Local::start().await;
    h.push(Reply::text("a cat"));
    let mut user = Message::user("");
    user.content = Some(json!([
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]));
    let calls = vec![agno_core::ToolCall::new("c1", "get_weather", r#"{"city":"Oslo"}"#)];
    let request = ModelRequest {
        messages: vec![user, Message::assistant("", calls), Message::tool_result("c1", "get_weather", "cold", false)],
        ..ModelRequest::default()
    };
    run_ok(&*h.model(), request, Mode::Invoke).await;
    let messages = h.server().requests()[0].body["messages"].clone();
    assert_eq!(messages[0]["images"], json!(["iVBORw0KGgo="]));
    assert_eq!(messages[1]["tool_calls"][0]["function"]["arguments"], json!({"city": "Oslo"}));
    assert_eq!((messages[2]["role"].as_str(), messages[2]["tool_name"].as_str()), (Some("tool"), Some("get_weather")));

    // An image by URL cannot go to Ollama: a clear error before anything is sent.
    let mut by_url = Message::user("");
    by_url.content = Some(json!([{"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]));
    let err =
        run_err(&*h.model(), ModelRequest { messages: vec![by_url], ..ModelRequest::default() }, Mode::Invoke).await;
    assert_eq!(err.kind, ModelErrorKind::BadRequest);
    assert!(err.message.contains("takes images as bytes, not URLs"), "{}", err.message);
    assert_eq!(h.server().request_count(), 1);
}

#[tokio::test]
async fn a_model_that_is_not_pulled_is_model_not_found() {
    let h = Local::start().await;
    let model = Ollama::new("missing-model", ClientConfig::new(h.base_url())).unwrap();
    let err = run_err(&model, ask("hi"), Mode::Stream).await;
    assert_eq!(err.kind, ModelErrorKind::ModelNotFound, "{}", err.message);
    assert!(err.message.contains("try pulling it first"), "{}", err.message);
}
