//! `OpenAIChat` and the OpenAI-compatible presets against the fake OpenAI server of `agno-testkit`.
//!
//! The provider-neutral scenarios live in `scenarios/mod.rs`; this file supplies the OpenAI
//! harness (Chat Completions wire format) and the tests that only make sense for OpenAI-compatible
//! servers: presets, `model_from_str`/`build_model`, request options and errors inside a 200.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod scenarios;

use std::sync::Arc;

use agno_core::{Message, Model, ModelErrorKind, ModelRequest, ResponseFormat};
use agno_models::{ClientConfig, ModelConfig, OpenAIChat, RetryPolicy, build_model, find_preset, model_from_str};
use agno_testkit::{FakeProvider, RecordedRequest, Reply};
use scenarios::{Harness, Mode, WireMessage, WireRequest, ask, run_err, run_ok, test_retry, weather_tool};
use serde_json::{Value, json};

/// An environment variable no test environment sets.
const UNSET_VAR: &str = "AGNO_TEST_UNSET_KEY_VAR";

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// `OpenAIChat` with key `sk-test` against a fresh fake server.
#[derive(Debug)]
struct OpenAi {
    server: FakeProvider,
}

impl Harness for OpenAi {
    const MODEL_ID: &'static str = "fake-model";

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
        Arc::new(OpenAIChat::new(Self::MODEL_ID, "OpenAI", cfg).expect("client builds"))
    }

    fn auth_header(&self) -> (&'static str, String) {
        ("authorization", "Bearer sk-test".to_owned())
    }

    fn inspect(&self, request: &RecordedRequest) -> WireRequest {
        openai_wire(request)
    }
}

/// Reads a Chat Completions request, asserting its OpenAI shape.
fn openai_wire(request: &RecordedRequest) -> WireRequest {
    assert_eq!(request.path, "/v1/chat/completions");
    scenarios::chat_completions_wire(request)
}

scenarios::provider_suite!(OpenAi);

// ---------------------------------------------------------------------------------------------
// OpenAI-specific behaviour
// ---------------------------------------------------------------------------------------------

const MODES: [Mode; 2] = [Mode::Stream, Mode::Invoke];

/// `build_model` settings for `provider` at the fake server.
fn preset_config(provider: &str, id: &str, server: &FakeProvider, key: Option<&str>) -> ModelConfig {
    ModelConfig {
        provider: provider.to_owned(),
        id: Some(id.to_owned()),
        base_url: Some(server.base_url()),
        api_key: key.map(str::to_owned),
        api_key_env: Some(UNSET_VAR.to_owned()),
        retry: Some(test_retry()),
        fallbacks: Vec::new(),
    }
}

#[tokio::test]
async fn the_raw_body_is_chat_completions_shaped() {
    let h = OpenAi::start().await;
    h.push(Reply::text("a"));
    h.push(Reply::text("b"));
    let model = h.model();
    let request = || ModelRequest {
        tools: vec![weather_tool()],
        tool_choice: Some(json!("auto")),
        response_format: Some(ResponseFormat::JsonSchema {
            name: "r".into(),
            schema: json!({"type": "object"}),
            strict: true,
        }),
        ..ask("Hi")
    };
    run_ok(&*model, request(), Mode::Stream).await;
    run_ok(&*model, request(), Mode::Invoke).await;

    let requests = h.server().requests();
    let expected = |stream: bool| {
        let mut body = json!({
            "model": "fake-model",
            "messages": [{"role": "user", "content": "Hi"}],
            "tools": [{"type": "function", "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": weather_tool().parameters,
            }}],
            "tool_choice": "auto",
            "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}, "strict": true}},
            "stream": stream,
        });
        if stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        body
    };
    assert_eq!(requests[0].body, expected(true));
    assert_eq!(requests[1].body, expected(false));
}

#[tokio::test]
async fn tool_choice_is_dropped_without_tools() {
    let h = OpenAi::start().await;
    h.push(Reply::text("ok"));
    let request = ModelRequest { tool_choice: Some(json!("required")), ..ask("Hi") };
    run_ok(&*h.model(), request, Mode::Invoke).await;
    let body = &h.server().requests()[0].body;
    assert!(body.get("tool_choice").is_none(), "{body}");
    assert!(body.get("tools").is_none(), "{body}");
}

#[tokio::test]
async fn sampling_options_headers_and_trailing_slash() {
    let h = OpenAi::start().await;
    h.push(Reply::text("ok"));
    let mut cfg = ClientConfig::new(format!("{}/", h.base_url()));
    cfg.api_key = Some("sk-test".into());
    cfg.retry = test_retry();
    cfg.headers.push(("x-org".into(), "agno".into()));
    let model = OpenAIChat::new("fake-model", "OpenAI", cfg).unwrap().with_temperature(0.25).with_max_tokens(64);
    assert_eq!(model.base_url(), format!("{}/", h.base_url()));
    let caps = model.capabilities();
    assert!(caps.tools && caps.native_structured_output && caps.json_mode && caps.parallel_tool_calls);

    let out = run_ok(&model, ask("Hi"), Mode::Invoke).await;

    assert_eq!(out.response.content, "ok");
    let request = &h.server().requests()[0];
    assert_eq!(request.path, "/v1/chat/completions", "a trailing slash does not double");
    assert_eq!(request.header("x-org"), Some("agno"));
    assert_eq!(request.body["temperature"], json!(0.25));
    assert_eq!(request.body["max_tokens"], json!(64));
}

#[tokio::test]
async fn tool_result_messages_are_strings_and_developer_role_is_kept() {
    let h = OpenAi::start().await;
    h.push(Reply::text("done"));
    let mut result = Message::tool_result("call_1", "get_weather", "", false);
    result.content = Some(json!({"temp": 21}));
    let request = ModelRequest {
        messages: vec![
            Message::new(agno_core::Role::Developer, "Be terse."),
            Message::user("Weather?"),
            Message::assistant("", vec![agno_core::ToolCall::new("call_1", "get_weather", r#"{"city":"Paris"}"#)]),
            result,
        ],
        tools: vec![weather_tool()],
        ..ModelRequest::default()
    };
    run_ok(&*h.model(), request, Mode::Invoke).await;
    let body = &h.server().requests()[0].body;
    assert_eq!(body["messages"][0], json!({"role": "developer", "content": "Be terse."}));
    assert!(body["messages"][2].get("content").is_none(), "assistant tool-call message has no content: {body}");
    let tool_msg = &body["messages"][3];
    assert_eq!(tool_msg["role"], "tool");
    assert_eq!(tool_msg["tool_call_id"], "call_1");
    let content: Value = serde_json::from_str(tool_msg["content"].as_str().expect("tool content is a string")).unwrap();
    assert_eq!(content, json!({"temp": 21}));
}

#[tokio::test]
async fn stream_chunk_order_is_provider_data_content_finish_usage() {
    let h = OpenAi::start().await;
    h.push(Reply::text("Hello there"));
    let out = run_ok(&*h.model(), ask("Hi"), Mode::Stream).await;
    let kinds: Vec<&str> = out
        .chunks
        .iter()
        .map(|c| match c {
            agno_core::ModelChunk::Content(_) => "content",
            agno_core::ModelChunk::Finish(_) => "finish",
            agno_core::ModelChunk::Usage(_) => "usage",
            agno_core::ModelChunk::ProviderData(_) => "provider_data",
            _ => "other",
        })
        .collect();
    // The response id comes once, with the first chunk, although every chunk repeats it.
    assert_eq!(kinds, ["provider_data", "content", "content", "content", "finish", "usage"]);
    assert_eq!(out.response.finish_reason.as_deref(), Some("stop"));
    let id = out.response.provider_data.as_ref().and_then(|d| d.get("id")).and_then(Value::as_str);
    assert!(id.is_some_and(|id| id.starts_with("chatcmpl-")), "{:?}", out.response.provider_data);
}

#[tokio::test]
async fn finish_reason_of_tool_calls() {
    for mode in MODES {
        let h = OpenAi::start().await;
        h.push(Reply::tool_call("get_weather", "{}"));
        let out = run_ok(&*h.model(), ModelRequest { tools: vec![weather_tool()], ..ask("Hi") }, mode).await;
        assert_eq!(out.response.finish_reason.as_deref(), Some("tool_calls"), "{mode:?}");
        assert_eq!(out.response.tool_calls[0].id, "call_1_0", "{mode:?}: the server's id is kept");
    }
}

#[tokio::test]
async fn error_object_inside_a_200_answer() {
    for mode in MODES {
        let h = OpenAi::start().await;
        h.push(Reply::Garbage(r#"{"error":{"message":"The server is overloaded","type":"server_error"}}"#.into()));
        h.push(Reply::Garbage(r#"{"error":{"message":"Slow down","type":"rate_limit_exceeded"}}"#.into()));
        h.push(Reply::Garbage(r#"{"error":{"message":"Bad field","type":"invalid_request_error"}}"#.into()));
        let model = h.model();
        let expected = [
            (ModelErrorKind::Server, "The server is overloaded"),
            (ModelErrorKind::RateLimited, "Slow down"),
            (ModelErrorKind::BadRequest, "Bad field"),
        ];
        for (kind, text) in expected {
            let err = run_err(&*model, ask("Hi"), mode).await;
            assert_eq!(err.kind, kind, "{mode:?}: {}", err.message);
            assert!(err.message.contains(text), "{mode:?}: {}", err.message);
            assert!(err.message.contains("OpenAI model fake-model"), "{mode:?}: {}", err.message);
        }
        assert_eq!(h.request_count(), 3, "{mode:?}: an error inside a 200 is not retried");
    }
}

#[tokio::test]
async fn retry_messages_count_attempts() {
    let h = OpenAi::start().await;
    h.set_fallback(Reply::Error { status: 503, message: "busy".into(), retry_after: Some(0) });
    let err = run_err(&*h.model(), ask("Hi"), Mode::Invoke).await;
    assert_eq!(err.kind, ModelErrorKind::Server);
    assert_eq!(err.status, Some(503));
    assert!(err.message.contains("gave up after 3 attempts"), "{}", err.message);
    assert_eq!(err.retry_after, Some(std::time::Duration::ZERO));
    assert_eq!(h.request_count(), 3);

    let h = OpenAi::start().await;
    h.set_fallback(Reply::Error { status: 500, message: "down".into(), retry_after: None });
    let err = run_err(&*h.model_with_retry(RetryPolicy::none()), ask("Hi"), Mode::Stream).await;
    assert_eq!(err.kind, ModelErrorKind::Server);
    assert!(!err.message.contains("gave up"), "no retry, nothing to give up: {}", err.message);
    assert_eq!(h.request_count(), 1);
}

// ---------------------------------------------------------------------------------------------
// Presets, build_model and model_from_str
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn groq_preset_against_the_server() {
    for mode in MODES {
        let server = FakeProvider::start().await.unwrap();
        server.push(Reply::text("Hi from Groq."));
        let config = preset_config("groq", "llama-3.3-70b-versatile", &server, Some("gsk-test"));
        let model = build_model(&config).unwrap();
        assert_eq!(model.provider(), "Groq");
        assert_eq!(model.id(), "llama-3.3-70b-versatile");

        let out = run_ok(&*model, ask("Hi"), mode).await;

        assert_eq!(out.response.content, "Hi from Groq.");
        let request = &server.requests()[0];
        assert_eq!(request.header("authorization"), Some("Bearer gsk-test"));
        let wire = openai_wire(request);
        assert_eq!(wire.model.as_deref(), Some("llama-3.3-70b-versatile"));
        assert_eq!(wire.stream, mode.is_stream());
        assert_eq!(wire.messages, vec![WireMessage::text("user", "Hi")]);
    }
}

#[tokio::test]
async fn preset_tool_call_against_the_server() {
    let server = FakeProvider::start().await.unwrap();
    server.push(Reply::tool_call("get_weather", r#"{"city":"Oslo"}"#));
    let model = build_model(&preset_config("together", "meta-llama/Llama-3-70b", &server, Some("tg-key"))).unwrap();
    assert_eq!(model.provider(), "Together");
    let out = run_ok(&*model, ModelRequest { tools: vec![weather_tool()], ..ask("Oslo?") }, Mode::Stream).await;
    assert_eq!(out.response.tool_calls.len(), 1);
    assert_eq!(out.response.tool_calls[0].function.arguments, r#"{"city":"Oslo"}"#);
    assert_eq!(openai_wire(&server.requests()[0]).tools, vec![weather_tool()]);
}

#[tokio::test]
async fn deepseek_preset_uses_json_mode_for_schemas() {
    for mode in MODES {
        let server = FakeProvider::start().await.unwrap();
        server.push(Reply::text(r#"{"city":"Paris"}"#));
        let model = build_model(&preset_config("deepseek", "deepseek-chat", &server, Some("ds-key"))).unwrap();
        assert_eq!(model.provider(), "DeepSeek");
        assert!(!model.capabilities().native_structured_output);
        let request = ModelRequest {
            response_format: Some(ResponseFormat::JsonSchema {
                name: "city".into(),
                schema: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
                strict: true,
            }),
            ..ask("City?")
        };

        let out = run_ok(&*model, request, mode).await;

        assert_eq!(out.response.content, r#"{"city":"Paris"}"#);
        let body = &server.requests()[0].body;
        assert_eq!(body["response_format"], json!({"type": "json_object"}), "{mode:?}");
    }
}

#[tokio::test]
async fn key_optional_preset_sends_no_authorization() {
    let server = FakeProvider::start().await.unwrap();
    server.push(Reply::text("local answer"));
    let model = build_model(&preset_config("vllm", "qwen2.5", &server, None)).unwrap();
    assert_eq!(model.provider(), "VLLM");
    let out = run_ok(&*model, ask("Hi"), Mode::Invoke).await;
    assert_eq!(out.response.content, "local answer");
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[tokio::test]
async fn build_model_wires_configured_fallbacks() {
    let primary = FakeProvider::start().await.unwrap();
    primary.set_fallback(Some(Reply::Error { status: 500, message: "groq down".into(), retry_after: None }));
    let secondary = FakeProvider::start().await.unwrap();
    secondary.push(Reply::text("from together"));
    let mut config = preset_config("groq", "llama-3.3-70b-versatile", &primary, Some("gsk-test"));
    config.retry = Some(RetryPolicy::none());
    config.fallbacks = vec![preset_config("together", "mixtral", &secondary, Some("tg-key"))];
    let model = build_model(&config).unwrap();
    assert_eq!(model.provider(), "Groq", "a fallback model reports its primary");

    let out = run_ok(&*model, ask("Hi"), Mode::Invoke).await;

    assert_eq!(out.response.content, "from together");
    assert_eq!(primary.request_count(), 1);
    let request = &secondary.requests()[0];
    assert_eq!(request.body["model"], "mixtral");
    assert_eq!(request.header("authorization"), Some("Bearer tg-key"));
}

#[test]
fn missing_api_key_names_the_variable() {
    assert!(std::env::var_os(UNSET_VAR).is_none(), "{UNSET_VAR} must not be set for this test");
    let config = ModelConfig {
        provider: "openai".into(),
        id: Some("gpt-4o".into()),
        api_key_env: Some(UNSET_VAR.into()),
        ..ModelConfig::default()
    };
    let err = build_model(&config).unwrap_err();
    assert_eq!(err.kind, ModelErrorKind::MissingApiKey, "{}", err.message);
    assert!(err.message.contains(UNSET_VAR), "{}", err.message);
    assert!(err.message.contains("gpt-4o"), "{}", err.message);
    assert_eq!(err.kind.id(), "missing_api_key");

    // A fallback without a key fails the whole build.
    let with_bad_fallback = ModelConfig {
        provider: "test".into(),
        fallbacks: vec![ModelConfig {
            provider: "groq".into(),
            id: Some("x".into()),
            api_key_env: Some(UNSET_VAR.into()),
            ..ModelConfig::default()
        }],
        ..ModelConfig::default()
    };
    assert_eq!(build_model(&with_bad_fallback).unwrap_err().kind, ModelErrorKind::MissingApiKey);
}

#[test]
fn unknown_provider_names_known_ones() {
    let err = model_from_str("nope:x").unwrap_err();
    assert_eq!(err.kind, ModelErrorKind::UnknownProvider);
    for name in ["\"nope\"", "test", "openai", "groq", "deepseek", "ollama"] {
        assert!(err.message.contains(name), "{name} missing from: {}", err.message);
    }
    assert_eq!(model_from_str(":gpt-4o").unwrap_err().kind, ModelErrorKind::UnknownProvider);
    let err = model_from_str("groq").unwrap_err();
    assert_eq!(err.kind, ModelErrorKind::UnknownProvider);
    assert!(err.message.contains("groq:<model>"), "{}", err.message);
}

#[tokio::test]
async fn model_from_str_test_model_runs_offline() {
    let model = model_from_str(" test ").unwrap();
    let out = run_ok(&*model, ask("ping"), Mode::Invoke).await;
    assert!(!out.response.content.is_empty());
    let out = run_ok(&*model, ask("ping"), Mode::Stream).await;
    assert!(!out.response.content.is_empty());
}

#[test]
fn preset_lookup_accepts_spellings() {
    assert_eq!(find_preset("LM-Studio").map(|p| p.name), Some("lmstudio"));
    assert_eq!(find_preset("llama.cpp").map(|p| p.name), Some("llamacpp"));
    assert_eq!(find_preset("GROQ").map(|p| p.provider), Some("Groq"));
    assert_eq!(find_preset("openai_chat").map(|p| p.name), Some("openai-chat"));
    assert!(find_preset("nope").is_none());
    assert!(find_preset("").is_none());
    let deepseek = find_preset("deepseek").unwrap();
    assert!(!deepseek.native_structured_output);
    assert!(deepseek.key_required);
}

#[test]
fn model_config_parse() {
    let config = ModelConfig::parse(" openrouter : anthropic/claude-3.5-sonnet ").unwrap();
    assert_eq!(config.provider, "openrouter");
    assert_eq!(config.id.as_deref(), Some("anthropic/claude-3.5-sonnet"));
    let config = ModelConfig::parse("ollama:llama3.2:3b").unwrap();
    assert_eq!(config.id.as_deref(), Some("llama3.2:3b"), "only the first colon splits");
}

// ---------------------------------------------------------------------------------------------
// Regression tests for bugs found by this suite
// ---------------------------------------------------------------------------------------------

/// A stream that stops after a content chunk, with neither a finish reason nor `[DONE]`, is a
/// truncated answer: the stream ends in an error rather than as if it succeeded.
#[tokio::test]
async fn truncated_stream_is_an_error() {
    let h = OpenAi::start().await;
    h.push(Reply::Garbage(r#"{"choices":[{"index":0,"delta":{"content":"partial"}}]}"#.into()));
    let err = run_err(&*h.model(), ask("Hi"), Mode::Stream).await;
    assert!(matches!(err.kind, ModelErrorKind::Connection | ModelErrorKind::InvalidResponse), "{err:?}");
}

/// JSON that is not a chat completion (`{}`, `[]`, a model list) has no `choices` and no
/// `error`; it is accepted as an empty answer instead of `InvalidResponse`.
#[tokio::test]
async fn json_that_is_not_a_completion_is_invalid() {
    for mode in MODES {
        for raw in ["{}", "[]", r#"{"object":"list","data":[]}"#] {
            let h = OpenAi::start().await;
            h.push(Reply::Garbage(raw.into()));
            let err = run_err(&*h.model(), ask("Hi"), mode).await;
            assert_eq!(err.kind, ModelErrorKind::InvalidResponse, "{mode:?} {raw}: {}", err.message);
        }
    }
}

/// `FallbackModel` does not override `Model::invoke`, so `invoke` streams, and a primary whose
/// answer is broken (here: not JSON) is not replaced by the fallback.
#[tokio::test]
async fn fallback_invoke_falls_back_on_a_broken_answer() {
    let primary = OpenAi::start().await;
    primary.push(Reply::Garbage("broken{".into()));
    let secondary = OpenAi::start().await;
    secondary.push(Reply::text("good"));
    let model = agno_models::FallbackModel::new(primary.model(), vec![secondary.model()]);
    let out = run_ok(&model, ask("Hi"), Mode::Invoke).await;
    assert_eq!(out.response.content, "good");
    assert!(!secondary.server().requests()[0].is_stream(), "invoke makes a non-streaming request");
}
