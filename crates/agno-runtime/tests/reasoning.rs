//! `reasoning_model` on each native reasoning family, against the fake provider server: the
//! reasoning model's own reasoning (Claude thinking, Gemini thoughts, Responses reasoning
//! summaries, Ollama thinking, Bedrock reasoning content, DeepSeek-style `reasoning_content`)
//! streams as `ReasoningStarted` / `ReasoningContentDelta` / `ReasoningCompleted`, lands in
//! `RunOutput.reasoning_content`, and reaches the main model.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::{Arc, Mutex};

use agno_core::{EventData, Model, ModelResponse, Role};
use agno_models::{
    AwsBedrock, AwsCredentials, BedrockAuth, Claude, ClientConfig, FunctionModel, Gemini, Ollama, OpenAIChat,
    OpenAIResponses,
};
use agno_runtime::Agent;
use agno_testkit::{FakeProvider, Reply};
use futures::StreamExt;

fn config(base: String, key: &str) -> ClientConfig {
    let mut c = ClientConfig::new(base);
    c.api_key = Some(key.to_owned());
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_native_reasoning_family_streams_its_reasoning_into_the_run() {
    let fake = FakeProvider::start().await.unwrap();
    let root = fake.root_url();
    let bedrock = BedrockAuth::SigV4(AwsCredentials {
        access_key_id: agno_testkit::bedrock::ACCESS_KEY_ID.into(),
        secret_access_key: agno_testkit::bedrock::SECRET_ACCESS_KEY.into(),
        session_token: None,
    });
    let reasoners: Vec<(&str, Arc<dyn Model>)> = vec![
        (
            "Anthropic",
            Arc::new(Claude::new("claude-sonnet-4-5", config(root.clone(), "k")).unwrap().with_thinking(1024)),
        ),
        ("Google", Arc::new(Gemini::new("gemini-2.5-pro", config(root.clone(), "k")).unwrap().with_thinking(-1))),
        (
            "OpenAI",
            Arc::new(
                OpenAIResponses::new("o4-mini", "OpenAI", config(fake.base_url(), "k"))
                    .unwrap()
                    .with_reasoning_effort("low"),
            ),
        ),
        ("Ollama", Arc::new(Ollama::new("qwen3", ClientConfig::new(root.clone())).unwrap().with_thinking())),
        (
            "AwsBedrock",
            Arc::new(
                AwsBedrock::new(
                    "anthropic.claude-sonnet-4-5-20250929-v1:0",
                    "us-east-1",
                    bedrock,
                    ClientConfig::new(root.clone()),
                )
                .unwrap(),
            ),
        ),
        ("DeepSeek", Arc::new(OpenAIChat::new("deepseek-reasoner", "DeepSeek", config(fake.base_url(), "k")).unwrap())),
    ];
    for (family, reasoner) in reasoners {
        let thought = format!("{family} thinks: the answer is 42.");
        fake.push(Reply::Reasoning(thought.clone(), Box::new(Reply::text("42"))));
        let seen = Arc::new(Mutex::new(String::new()));
        let record = Arc::clone(&seen);
        let main = FunctionModel::new(move |req| {
            let last_assistant = req
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::Assistant)
                .and_then(|m| m.content_text())
                .unwrap_or_default();
            *record.lock().unwrap() = last_assistant.to_owned();
            Ok(ModelResponse { content: "The answer is 42.".into(), ..Default::default() })
        });
        let agent =
            Agent::builder(Arc::new(main) as Arc<dyn Model>).reasoning_model(reasoner).unwrap().build().unwrap();
        let mut stream = agent.run_stream("What is six times seven?");
        let mut names = Vec::new();
        let mut deltas = String::new();
        let mut completed = None;
        while let Some(event) = stream.next().await {
            match &event.data {
                EventData::ReasoningContentDelta { reasoning_content } => deltas.push_str(reasoning_content),
                EventData::ReasoningCompleted { content, .. } => completed = content.clone(),
                _ => {}
            }
            names.push(event.name());
        }
        let out = stream.output().await.unwrap();
        let reasoning: Vec<&str> = names.iter().copied().filter(|n| n.starts_with("Reasoning")).collect();
        assert_eq!(reasoning.first(), Some(&"ReasoningStarted"), "{family}: {names:?}");
        assert_eq!(reasoning.last(), Some(&"ReasoningCompleted"), "{family}: {names:?}");
        assert!(reasoning.len() > 3, "{family}: the reasoning streams in several deltas: {names:?}");
        assert!(deltas.starts_with(&thought), "{family}: {deltas:?}");
        assert_eq!(completed, Some(serde_json::json!(thought)), "{family}");
        assert_eq!(out.reasoning_content.as_deref(), Some(thought.as_str()), "{family}");
        assert!(seen.lock().unwrap().contains(&thought), "{family}: the main model saw the reasoning");
        println!("{family}: {} reasoning events", reasoning.len());
    }
}
