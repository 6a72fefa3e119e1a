//! An agent with a knowledge base: the `search_knowledge_base` tool (scoped to the run's user),
//! Agno's instructions for it, references added to the user message, and bad tool arguments fed
//! back to the model.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::{Arc, Mutex};

use agno_core::{Filter, KnowledgeBase, Model, ModelRequest, ModelResponse, Role, ToolCall};
use agno_knowledge::{Content, HashEmbedder, Knowledge, SqliteVectorDb};
use agno_models::FunctionModel;
use agno_runtime::{Agent, RunRequest};
use serde_json::json;

async fn garden() -> Arc<dyn KnowledgeBase> {
    let dir = std::env::temp_dir().join(format!("agno-rt-knowledge-{}", agno_core::new_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteVectorDb::connect(&format!("sqlite://{}", dir.join("kb.db").display()), "vectors").await.unwrap();
    let knowledge = Knowledge::new("garden", Arc::new(store)).embedder(Arc::new(HashEmbedder::new(128)));
    knowledge.create().await.unwrap();
    let meta = |v: serde_json::Value| v.as_object().cloned().unwrap();
    knowledge
        .insert(Content::text("ann", "Ann's tulips are blue").user("ann").metadata(meta(json!({"kind": "note"}))))
        .await
        .unwrap();
    knowledge
        .insert(Content::text("bob", "Bob's tulips are red").user("bob").metadata(meta(json!({"kind": "note"}))))
        .await
        .unwrap();
    knowledge
        .insert(Content::text("guide", "Tulips need water weekly").metadata(meta(json!({"kind": "guide"}))))
        .await
        .unwrap();
    Arc::new(knowledge)
}

fn text(req: &ModelRequest, role: Role) -> String {
    req.messages.iter().filter(|m| m.role == role).filter_map(|m| m.content_text()).collect::<Vec<_>>().join("\n")
}

/// Calls `search_knowledge_base` with `args` once, then answers with the tool's result.
fn searcher(args: &'static str, seen: Arc<Mutex<Vec<ModelRequest>>>) -> Arc<dyn Model> {
    Arc::new(FunctionModel::new(move |req| {
        seen.lock().unwrap().push(req.clone());
        Ok(match req.messages.last().unwrap().role {
            Role::Tool => ModelResponse { content: text(req, Role::Tool), ..Default::default() },
            _ if req.tools.iter().any(|t| t.name == "search_knowledge_base") => ModelResponse {
                tool_calls: vec![ToolCall::new("k1", "search_knowledge_base", args)],
                ..Default::default()
            },
            _ => ModelResponse { content: "no tool".into(), ..Default::default() },
        })
    }))
}

#[tokio::test]
async fn the_search_tool_finds_the_users_and_shared_documents_only() {
    let knowledge = garden().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::builder(searcher(r#"{"query": "tulips"}"#, Arc::clone(&seen)))
        .knowledge(Arc::clone(&knowledge))
        .build()
        .unwrap();
    let run = agent.arun(RunRequest::new("what about my tulips?").user_id("ann")).await.unwrap();
    let answer = run.content_text();
    assert!(answer.contains("Ann's tulips are blue") && answer.contains("Tulips need water weekly"), "{answer}");
    assert!(!answer.contains("Bob"), "another user's document reached the model: {answer}");
    let docs: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert!(docs[0].get("meta_data").is_some() && docs[0].get("name").is_some(), "{docs}");
    let system = text(&seen.lock().unwrap()[0], Role::System);
    assert!(
        system.contains(
            "<knowledge_base>\nYou have a knowledge base you can search using the search_knowledge_base tool."
        )
    );

    // knowledge_filters apply to every search.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let filtered = Agent::builder(searcher(r#"{"query": "tulips"}"#, seen))
        .knowledge(Arc::clone(&knowledge))
        .knowledge_filters(Filter::from_json(&json!({"kind": "guide"})).unwrap())
        .build()
        .unwrap();
    let answer = filtered.arun(RunRequest::new("tulips?").user_id("ann")).await.unwrap().content_text();
    assert!(answer.contains("water weekly") && !answer.contains("blue"), "{answer}");
}

#[tokio::test]
async fn bad_tool_arguments_come_back_to_the_model_as_an_error() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::builder(searcher(r#"{"q": 1}"#, Arc::clone(&seen))).knowledge(garden().await).build().unwrap();
    let run = agent.arun(RunRequest::new("tulips?").user_id("ann")).await.unwrap();
    assert_eq!(run.status, agno_core::RunStatus::Completed);
    let fed_back = text(seen.lock().unwrap().last().unwrap(), Role::Tool);
    assert!(fed_back.contains("query"), "{fed_back}");
}

#[tokio::test]
async fn references_are_added_to_the_user_message_when_asked() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::builder(searcher("{}", Arc::clone(&seen)))
        .knowledge(garden().await)
        .search_knowledge(false)
        .add_knowledge_to_context(true)
        .build()
        .unwrap();
    let run = agent.arun(RunRequest::new("tulips").user_id("bob")).await.unwrap();
    assert_eq!(run.content_text(), "no tool", "search_knowledge(false) gives no tool");
    let req = seen.lock().unwrap()[0].clone();
    let user = text(&req, Role::User);
    assert!(
        user.starts_with("tulips\n\nUse the following references from the knowledge base if it helps:\n<references>\n"),
        "{user}"
    );
    assert!(user.contains("Bob's tulips are red") && !user.contains("Ann"), "{user}");
    assert!(!text(&req, Role::System).contains("<knowledge_base>"), "no instructions without the tool");
}
