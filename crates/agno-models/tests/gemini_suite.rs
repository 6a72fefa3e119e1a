//! `Gemini` (Google's Gemini API) against the fake server's `generateContent` /
//! `streamGenerateContent`: the shared scenarios, then what only Gemini has (safety blocks as
//! clear errors, thoughts as reasoning, function responses named after their call, media parts).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod scenarios;

use std::sync::Arc;

use agno_core::{Message, Model, ModelErrorKind, ModelRequest, ToolDefinition};
use agno_models::{ClientConfig, Gemini, RetryPolicy};
use agno_testkit::{FakeProvider, RecordedRequest, Reply};
use scenarios::{Harness, Mode, Structured, WireMessage, WireRequest, ask, run_err, run_ok};
use serde_json::{Value, json};

#[derive(Debug)]
struct Google {
    server: FakeProvider,
}

impl Harness for Google {
    const MODEL_ID: &'static str = "gemini-2.5-flash";
    const SCHEMA_NAMES: bool = false;
    const STREAMS_TOOL_ARGUMENTS: bool = false;

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
        cfg.api_key = Some("gm-test".into());
        cfg.retry = retry;
        Arc::new(Gemini::new(Self::MODEL_ID, cfg).expect("client builds"))
    }

    fn auth_header(&self) -> (&'static str, String) {
        ("x-goog-api-key", "gm-test".to_owned())
    }

    fn inspect(&self, request: &RecordedRequest) -> WireRequest {
        gemini_wire(request)
    }
}

fn gemini_wire(request: &RecordedRequest) -> WireRequest {
    let (model, method) = request
        .path
        .strip_prefix("/v1beta/models/")
        .and_then(|rest| rest.split_once(':'))
        .unwrap_or_else(|| panic!("not a Gemini path: {}", request.path));
    assert!(matches!(method, "generateContent" | "streamGenerateContent"), "{method}");
    let body = &request.body;
    let mut messages = Vec::new();
    if let Some(system) = body.get("systemInstruction") {
        let text: String = system["parts"].as_array().unwrap().iter().filter_map(|p| p["text"].as_str()).collect();
        messages.push(WireMessage::text("system", &text));
    }
    for content in body["contents"].as_array().expect("contents") {
        let role = match content["role"].as_str() {
            Some("model") => "assistant",
            _ => "user",
        };
        let parts = content["parts"].as_array().expect("parts");
        for response in parts.iter().filter_map(|p| p.get("functionResponse")) {
            messages.push(WireMessage {
                role: "tool".into(),
                text: response["response"]["result"].as_str().unwrap_or_default().to_owned(),
                tool_call_ids: Vec::new(),
                tool_call_id: response["id"].as_str().map(str::to_owned),
            });
        }
        let text: String =
            parts.iter().filter(|p| p.get("thought").is_none()).filter_map(|p| p["text"].as_str()).collect();
        let ids: Vec<String> = parts
            .iter()
            .filter_map(|p| p.pointer("/functionCall/id"))
            .map(|id| id.as_str().unwrap().to_owned())
            .collect();
        if parts.iter().any(|p| p.get("functionResponse").is_none()) {
            messages.push(WireMessage { role: role.to_owned(), text, tool_call_ids: ids, tool_call_id: None });
        }
    }
    let tools = body
        .pointer("/tools/0/functionDeclarations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|d| ToolDefinition {
            name: d["name"].as_str().unwrap().to_owned(),
            description: d["description"].as_str().map(str::to_owned),
            parameters: d["parametersJsonSchema"].clone().into(),
            strict: false,
        })
        .collect();
    let generation = body.get("generationConfig").cloned().unwrap_or(json!({}));
    let structured = match (generation["responseMimeType"].as_str(), generation.get("responseJsonSchema")) {
        (Some("application/json"), Some(schema)) => {
            Structured::JsonSchema { name: String::new(), schema: schema.clone(), strict: false }
        }
        (Some("application/json"), None) => Structured::JsonObject,
        _ => Structured::None,
    };
    WireRequest {
        model: Some(model.to_owned()),
        stream: method == "streamGenerateContent",
        messages,
        tools,
        structured,
        usage_requested: true,
    }
}

scenarios::provider_suite!(Google);

async fn both(f: impl AsyncFn(Mode)) {
    f(Mode::Stream).await;
    f(Mode::Invoke).await;
}

#[tokio::test]
async fn a_safety_block_is_a_clear_content_filtered_error() {
    both(async |mode| {
        let h = Google::start().await;
        h.push(Reply::Filtered("dangerous".into()));
        let err = run_err(&*h.model(), ask("how to ..."), mode).await;
        assert_eq!(err.kind, ModelErrorKind::ContentFiltered, "{}", err.message);
        assert!(err.message.contains("blocked the answer (SAFETY)"), "{}", err.message);
        assert_eq!(err.kind.id(), "model_content_filtered_error");
    })
    .await;
}

#[tokio::test]
async fn thoughts_are_reasoning_and_the_budget_is_sent() {
    both(async |mode| {
        let h = Google::start().await;
        h.push(Reply::Reasoning("Think: 2 and 2 make 4.".into(), Box::new(Reply::text("4"))));
        let mut cfg = ClientConfig::new(h.base_url());
        cfg.api_key = Some("gm-test".into());
        let model = Gemini::new("gemini-2.5-pro", cfg).unwrap().with_thinking(1024);
        let out = run_ok(&model, ask("2+2?"), mode).await;
        assert_eq!(out.response.content, "4");
        assert_eq!(out.response.reasoning.as_deref(), Some("Think: 2 and 2 make 4."));
        assert_eq!(
            h.server().requests()[0].body["generationConfig"]["thinkingConfig"],
            json!({"thinkingBudget": 1024, "includeThoughts": true})
        );
    })
    .await;
}

#[tokio::test]
async fn function_responses_name_their_function_and_media_become_parts() {
    let h = Google::start().await;
    h.push(Reply::text("done"));
    let mut user = Message::user("");
    user.content = Some(json!([
        {"type": "text", "text": "Describe"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.webp"}},
    ]));
    let calls = vec![agno_core::ToolCall::new("call_9", "get_weather", r#"{"city":"Oslo"}"#)];
    let mut result = Message::tool_result("call_9", "get_weather", "cold", false);
    result.tool_name = None;
    let request = ModelRequest {
        messages: vec![user, Message::assistant("", calls), result],
        tools: vec![scenarios::weather_tool()],
        tool_choice: Some(json!({"type": "function", "function": {"name": "get_weather"}})),
        ..ModelRequest::default()
    };
    run_ok(&*h.model(), request, Mode::Invoke).await;
    let body = &h.server().requests()[0].body;
    let parts = body["contents"][0]["parts"].as_array().unwrap();
    assert_eq!(parts[1]["inlineData"], json!({"mimeType": "image/png", "data": "iVBORw0KGgo="}));
    assert_eq!(parts[2]["fileData"], json!({"mimeType": "image/webp", "fileUri": "https://example.com/cat.webp"}));
    assert_eq!(
        body["contents"][2]["parts"][0]["functionResponse"],
        json!({"id": "call_9", "name": "get_weather", "response": {"result": "cold"}})
    );
    assert_eq!(
        body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}})
    );
}

#[tokio::test]
async fn a_missing_key_is_an_auth_error_with_googles_message() {
    let h = Google::start().await;
    let model = Gemini::new("gemini-2.5-flash", ClientConfig::new(h.base_url())).unwrap();
    let err = run_err(&model, ask("hi"), Mode::Invoke).await;
    assert_eq!(err.kind, ModelErrorKind::Auth, "{}", err.message);
    assert!(err.message.contains("API Key"), "{}", err.message);
}
