//! The fake provider server's wire formats checked by the providers' own SDKs (PyPI, in the
//! test venv): each SDK makes a plain, a streamed and a tool call against the fake server
//! (`scripts/interop/provider_sdks.py`), which must accept the SDK's requests and answer in a
//! shape the SDK parses.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agno_testkit::{FakeProvider, Reply};
use serde_json::{Value, json};

/// Runs the SDK of `provider` against `base` and returns what it parsed.
async fn sdk(provider: &str, base: &str) -> Option<Value> {
    let python = agno_testkit::agno_python(&format!("the {provider} SDK against the fake provider"))?;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/interop/provider_sdks.py");
    let (provider, base) = (provider.to_owned(), base.to_owned());
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python).args([script, &provider, &base]).output()
    })
    .await
    .unwrap()
    .unwrap();
    assert!(out.status.success(), "the SDK failed: {}", String::from_utf8_lossy(&out.stderr));
    Some(
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("bad output ({e}): {}", String::from_utf8_lossy(&out.stdout))),
    )
}

async fn scripted() -> FakeProvider {
    let fake = FakeProvider::start().await.unwrap();
    fake.push(Reply::text("plain"));
    fake.push(Reply::text("streamed"));
    fake.push(Reply::tool_call("get_weather", r#"{"city":"Oslo"}"#));
    fake
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_sdk_talks_to_the_fake_messages_api() {
    let fake = scripted().await;
    let Some(got) = sdk("anthropic", &fake.root_url()).await else { return };
    assert_eq!(got["plain"], "plain");
    assert!(got["plain_usage"][0].as_u64().unwrap() > 0);
    assert_eq!((got["streamed"].as_str(), got["streamed_stop"].as_str()), (Some("streamed"), Some("end_turn")));
    assert_eq!(got["tool"], json!({"name": "get_weather", "input": {"city": "Oslo"}, "stop": "tool_use"}));
    assert!(fake.requests().iter().all(|r| r.path == "/v1/messages"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_google_genai_sdk_talks_to_the_fake_gemini_api() {
    let fake = scripted().await;
    let Some(got) = sdk("google", &fake.root_url()).await else { return };
    assert_eq!(got["plain"], "plain");
    assert!(got["plain_usage"][0].as_u64().unwrap() > 0);
    assert_eq!(got["streamed"], "streamed");
    assert_eq!(got["tool"], json!({"name": "get_weather", "input": {"city": "Oslo"}, "stop": "STOP"}));
    let methods: Vec<String> =
        fake.requests().iter().map(|r| r.path.rsplit(':').next().unwrap_or_default().to_owned()).collect();
    assert_eq!(methods, ["generateContent", "streamGenerateContent", "generateContent"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ollama_sdk_talks_to_the_fake_chat_api() {
    let fake = scripted().await;
    let Some(got) = sdk("ollama", &fake.root_url()).await else { return };
    assert_eq!(got["plain"], "plain");
    assert!(got["plain_usage"][0].as_u64().unwrap() > 0);
    assert_eq!((got["streamed"].as_str(), got["streamed_stop"].as_str()), (Some("streamed"), Some("stop")));
    assert_eq!(got["tool"], json!({"name": "get_weather", "input": {"city": "Oslo"}, "stop": "stop"}));
    assert!(fake.requests().iter().all(|r| r.path == "/api/chat"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_sdk_talks_to_the_fake_responses_api() {
    let fake = scripted().await;
    let Some(got) = sdk("openai-responses", &fake.base_url()).await else { return };
    assert_eq!(got["plain"], "plain");
    assert!(got["plain_usage"][0].as_u64().unwrap() > 0);
    assert_eq!((got["streamed"].as_str(), got["streamed_stop"].as_str()), (Some("streamed"), Some("completed")));
    assert_eq!(got["tool"], json!({"name": "get_weather", "input": {"city": "Oslo"}, "stop": "completed"}));
    assert!(fake.requests().iter().all(|r| r.path == "/v1/responses"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boto3_signs_and_the_fake_converse_api_verifies_and_answers() {
    let fake = scripted().await;
    let Some(got) = sdk("aws-bedrock", &fake.root_url()).await else { return };
    assert_eq!(got["plain"], "plain");
    assert!(got["plain_usage"][0].as_u64().unwrap() > 0);
    assert_eq!((got["streamed"].as_str(), got["streamed_stop"].as_str()), (Some("streamed"), Some("end_turn")));
    assert_eq!(got["tool"], json!({"name": "get_weather", "input": {"city": "Oslo"}, "stop": "tool_use"}));
    assert!(
        fake.requests().iter().all(|r| r.header("authorization").is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256")))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_azure_openai_sdk_talks_to_the_fake_deployment_route() {
    let fake = scripted().await;
    let Some(got) = sdk("azure-openai", &fake.root_url()).await else { return };
    assert_eq!(got["plain"], "plain");
    assert_eq!((got["streamed"].as_str(), got["streamed_stop"].as_str()), (Some("streamed"), Some("stop")));
    assert_eq!(got["tool"], json!({"name": "get_weather", "input": {"city": "Oslo"}, "stop": "tool_calls"}));
    assert!(
        fake.requests()
            .iter()
            .all(|r| r.path == "/openai/deployments/my-deployment/chat/completions"
                && r.query == "api-version=2024-10-21")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_sdk_talks_to_the_fake_chat_completions_api() {
    let fake = scripted().await;
    let Some(got) = sdk("openai-chat", &fake.base_url()).await else { return };
    assert_eq!(got["plain"], "plain");
    assert_eq!((got["streamed"].as_str(), got["streamed_stop"].as_str()), (Some("streamed"), Some("stop")));
    assert_eq!(got["tool"], json!({"name": "get_weather", "input": {"city": "Oslo"}, "stop": "tool_calls"}));
    assert!(fake.requests().iter().all(|r| r.path == "/v1/chat/completions"));
}
