//! `OpenAIResponses` (OpenAI's Responses API, Agno v3's `openai:` default) against the fake
//! server's `/v1/responses`: the shared scenarios, then what only the Responses API has
//! (reasoning summaries, `max_output_tokens`, refusals, input items for media and tool results).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod scenarios;

use std::sync::Arc;

use agno_core::{Message, Model, ModelErrorKind, ModelRequest, ToolDefinition};
use agno_models::{ClientConfig, OpenAIResponses, RetryPolicy, model_from_str};
use agno_testkit::{FakeProvider, RecordedRequest, Reply};
use scenarios::{Harness, Mode, Structured, WireMessage, WireRequest, ask, run_err, run_ok};
use serde_json::{Value, json};

#[derive(Debug)]
struct Responses {
    server: FakeProvider,
}

impl Harness for Responses {
    const MODEL_ID: &'static str = "gpt-5-mini";

    async fn start() -> Self {
        Self { server: FakeProvider::start().await.expect("fake server starts") }
    }

    fn server(&self) -> &FakeProvider {
        &self.server
    }

    fn model_at(&self, base_url: &str, retry: RetryPolicy) -> Arc<dyn Model> {
        let mut cfg = ClientConfig::new(base_url);
        cfg.api_key = Some("sk-test".into());
        cfg.retry = retry;
        Arc::new(OpenAIResponses::new(Self::MODEL_ID, "OpenAI", cfg).expect("client builds"))
    }

    fn auth_header(&self) -> (&'static str, String) {
        ("authorization", "Bearer sk-test".to_owned())
    }

    fn inspect(&self, request: &RecordedRequest) -> WireRequest {
        assert_eq!(request.path, "/v1/responses");
        let body = &request.body;
        let mut messages: Vec<WireMessage> = Vec::new();
        for item in body["input"].as_array().expect("input items") {
            match item["type"].as_str() {
                Some("function_call") => {
                    let id = item["call_id"].as_str().unwrap().to_owned();
                    match messages.last_mut() {
                        Some(last) if last.role == "assistant" => last.tool_call_ids.push(id),
                        _ => messages.push(WireMessage {
                            role: "assistant".into(),
                            text: String::new(),
                            tool_call_ids: vec![id],
                            tool_call_id: None,
                        }),
                    }
                }
                Some("function_call_output") => messages.push(WireMessage {
                    role: "tool".into(),
                    text: item["output"].as_str().unwrap().to_owned(),
                    tool_call_ids: Vec::new(),
                    tool_call_id: item["call_id"].as_str().map(str::to_owned),
                }),
                _ => {
                    let text: String = match &item["content"] {
                        Value::String(s) => s.clone(),
                        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
                        other => panic!("content: {other}"),
                    };
                    messages.push(WireMessage::text(item["role"].as_str().unwrap(), &text));
                }
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
                parameters: t["parameters"].clone().into(),
                strict: t["strict"].as_bool().unwrap_or(false),
            })
            .collect();
        let structured = match body.pointer("/text/format") {
            Some(f) if f["type"] == "json_schema" => Structured::JsonSchema {
                name: f["name"].as_str().unwrap().to_owned(),
                schema: f["schema"].clone(),
                strict: f["strict"].as_bool().unwrap_or(false),
            },
            Some(f) if f["type"] == "json_object" => Structured::JsonObject,
            _ => Structured::None,
        };
        WireRequest {
            model: body["model"].as_str().map(str::to_owned),
            stream: body["stream"].as_bool().unwrap_or(false),
            messages,
            tools,
            structured,
            // The Responses API always reports usage.
            usage_requested: true,
        }
    }
}

scenarios::provider_suite!(Responses);

#[tokio::test]
async fn reasoning_summaries_are_reasoning_and_the_effort_and_limit_are_sent() {
    for mode in [Mode::Stream, Mode::Invoke] {
        let h = Responses::start().await;
        h.push(Reply::Reasoning("Two plus two is four.".into(), Box::new(Reply::text("4"))));
        let mut cfg = ClientConfig::new(h.base_url());
        cfg.api_key = Some("sk-test".into());
        let model = OpenAIResponses::new("o4-mini", "OpenAI", cfg)
            .unwrap()
            .with_reasoning_effort("high")
            .with_max_output_tokens(500);
        let out = run_ok(&model, ask("2+2?"), mode).await;
        assert_eq!(
            (out.response.content.as_str(), out.response.reasoning.as_deref()),
            ("4", Some("Two plus two is four."))
        );
        let body = &h.server().requests()[0].body;
        assert_eq!(body["reasoning"], json!({"effort": "high", "summary": "auto"}));
        assert_eq!(body["max_output_tokens"], 500);
        assert!(out.response.usage.unwrap().reasoning_tokens > 0);
    }
}

#[tokio::test]
async fn a_refusal_is_content_filtered() {
    for mode in [Mode::Stream, Mode::Invoke] {
        let h = Responses::start().await;
        h.push(Reply::Filtered("policy".into()));
        let err = run_err(&*h.model(), ask("no"), mode).await;
        assert_eq!(err.kind, ModelErrorKind::ContentFiltered, "{}", err.message);
        assert!(err.message.contains("refused"), "{}", err.message);
    }
}

#[tokio::test]
async fn media_are_input_parts() {
    let h = Responses::start().await;
    h.push(Reply::text("ok"));
    let mut user = Message::user("");
    user.content = Some(json!([
        {"type": "text", "text": "Look"},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"}},
    ]));
    run_ok(&*h.model(), ModelRequest { messages: vec![user], ..ModelRequest::default() }, Mode::Invoke).await;
    let content = &h.server().requests()[0].body["input"][0]["content"];
    assert_eq!(content[1], json!({"type": "input_image", "image_url": "https://example.com/a.png"}));
    assert_eq!(
        content[2],
        json!({"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0="})
    );
}

#[tokio::test]
async fn openai_is_the_responses_api_and_openai_chat_is_chat_completions() {
    let responses = model_from_str("openai:gpt-5-mini");
    let chat = model_from_str("openai-chat:gpt-4o-mini");
    match (responses, chat) {
        (Ok(r), Ok(c)) => {
            assert_eq!((r.name(), c.name()), ("OpenAIResponses", "OpenAIChat"));
            assert_eq!(r.metrics_provider(), "OpenAI");
        }
        (r, c) => {
            // Without OPENAI_API_KEY both refuse naming it.
            for e in [r.err(), c.err()].into_iter().flatten() {
                assert_eq!(e.kind, ModelErrorKind::MissingApiKey, "{}", e.message);
                assert!(e.message.contains("OPENAI_API_KEY"), "{}", e.message);
            }
        }
    }
}
