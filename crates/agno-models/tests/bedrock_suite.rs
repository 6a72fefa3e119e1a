//! `AwsBedrock` (the Converse API) against the fake server, which verifies every request's SigV4
//! signature: the shared scenarios, then what only Bedrock has (the binary event stream, a
//! signature the server refuses, Bedrock API keys, guardrails, `toolResult` blocks).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod scenarios;

use std::sync::Arc;

use agno_core::{Message, Model, ModelErrorKind, ModelRequest, ToolDefinition};
use agno_models::{AwsBedrock, AwsCredentials, BedrockAuth, ClientConfig, RetryPolicy};
use agno_testkit::bedrock::{ACCESS_KEY_ID, SECRET_ACCESS_KEY};
use agno_testkit::{FakeProvider, RecordedRequest, Reply};
use scenarios::{Harness, Mode, Structured, WireMessage, WireRequest, ask, run_err, run_ok};
use serde_json::{Value, json};

const MODEL: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";

fn creds(secret: &str) -> BedrockAuth {
    BedrockAuth::SigV4(AwsCredentials {
        access_key_id: ACCESS_KEY_ID.to_owned(),
        secret_access_key: secret.to_owned(),
        session_token: Some("session-token".to_owned()),
    })
}

#[derive(Debug)]
struct Bedrock {
    server: FakeProvider,
}

impl Harness for Bedrock {
    const MODEL_ID: &'static str = MODEL;

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
        cfg.retry = retry;
        Arc::new(AwsBedrock::new(MODEL, "us-east-1", creds(SECRET_ACCESS_KEY), cfg).expect("client builds"))
    }

    fn auth_header(&self) -> (&'static str, String) {
        ("x-amz-security-token", "session-token".to_owned())
    }

    fn inspect(&self, request: &RecordedRequest) -> WireRequest {
        let stream = match request.path.as_str() {
            "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse" => false,
            "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream" => true,
            other => panic!("not a Converse path: {other}"),
        };
        assert!(request.header("authorization").unwrap().starts_with("AWS4-HMAC-SHA256 Credential="));
        let body = &request.body;
        let mut messages = Vec::new();
        for s in body.get("system").and_then(Value::as_array).into_iter().flatten() {
            messages.push(WireMessage::text("system", s["text"].as_str().unwrap()));
        }
        for m in body["messages"].as_array().unwrap() {
            let role = m["role"].as_str().unwrap();
            let blocks = m["content"].as_array().unwrap();
            for r in blocks.iter().filter_map(|b| b.get("toolResult")) {
                messages.push(WireMessage {
                    role: "tool".into(),
                    text: r["content"][0]["text"].as_str().unwrap_or_default().to_owned(),
                    tool_call_ids: Vec::new(),
                    tool_call_id: r["toolUseId"].as_str().map(str::to_owned),
                });
            }
            let text: String = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
            let ids: Vec<String> = blocks
                .iter()
                .filter_map(|b| b.pointer("/toolUse/toolUseId"))
                .map(|i| i.as_str().unwrap().to_owned())
                .collect();
            if blocks.iter().any(|b| b.get("toolResult").is_none()) {
                messages.push(WireMessage { role: role.to_owned(), text, tool_call_ids: ids, tool_call_id: None });
            }
        }
        let tools = body
            .pointer("/toolConfig/tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|t| ToolDefinition {
                name: t["toolSpec"]["name"].as_str().unwrap().to_owned(),
                description: t["toolSpec"]["description"].as_str().map(str::to_owned),
                parameters: t["toolSpec"]["inputSchema"]["json"].clone().into(),
                strict: false,
            })
            .collect();
        WireRequest {
            model: Some(MODEL.to_owned()),
            stream,
            messages,
            tools,
            structured: Structured::None,
            usage_requested: true,
        }
    }
}

scenarios::provider_suite!(Bedrock);

#[tokio::test]
async fn a_wrong_secret_is_refused_by_the_signature_check() {
    let h = Bedrock::start().await;
    h.push(Reply::text("must not be served"));
    let model = AwsBedrock::new(MODEL, "us-east-1", creds("not-the-secret"), ClientConfig::new(h.base_url())).unwrap();
    let err = run_err(&model, ask("hi"), Mode::Invoke).await;
    assert_eq!(err.kind, ModelErrorKind::Auth, "{}", err.message);
    assert!(err.message.contains("signature we calculated does not match"), "{}", err.message);
}

#[tokio::test]
async fn a_bedrock_api_key_is_a_bearer_token() {
    let h = Bedrock::start().await;
    h.push(Reply::text("hello"));
    let model = AwsBedrock::new(
        MODEL,
        "us-east-1",
        BedrockAuth::ApiKey("bedrock-api-key".into()),
        ClientConfig::new(h.base_url()),
    )
    .unwrap();
    let out = run_ok(&model, ask("hi"), Mode::Stream).await;
    assert_eq!(out.response.content, "hello");
    assert_eq!(h.server().requests()[0].header("authorization"), Some("Bearer bedrock-api-key"));
}

#[tokio::test]
async fn a_guardrail_is_content_filtered_and_throttling_is_retried() {
    for mode in [Mode::Stream, Mode::Invoke] {
        let h = Bedrock::start().await;
        h.push(Reply::Filtered("guardrail".into()));
        let err = run_err(&*h.model(), ask("..."), mode).await;
        assert_eq!(err.kind, ModelErrorKind::ContentFiltered, "{}", err.message);
        h.push(Reply::Error {
            status: 429,
            message: "Too many requests, please wait before trying again.".into(),
            retry_after: None,
        });
        h.push(Reply::text("after"));
        assert_eq!(run_ok(&*h.model(), ask("again"), mode).await.response.content, "after");
    }
}

#[tokio::test]
async fn reasoning_and_documents_are_bedrock_blocks() {
    let h = Bedrock::start().await;
    h.push(Reply::Reasoning("thinking".into(), Box::new(Reply::text("done"))));
    let mut user = Message::user("");
    user.content = Some(json!([
        {"type": "text", "text": "Read"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "report.pdf"}},
    ]));
    let out = run_ok(
        &*h.model(),
        ModelRequest { messages: vec![Message::system("Be brief."), user], ..ModelRequest::default() },
        Mode::Stream,
    )
    .await;
    assert_eq!(out.response.reasoning.as_deref(), Some("thinking"));
    let body = &h.server().requests()[0].body;
    assert_eq!(body["system"], json!([{"text": "Be brief."}]));
    let content = &body["messages"][0]["content"];
    assert_eq!(content[1], json!({"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}}));
    assert_eq!(content[2]["document"]["format"], "pdf");
}
