//! The agent on SQLite storage: runs persist one row each, history reads back from the database,
//! and 100 concurrent runs on one session keep every run and every state update.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;

use agno_core::{Db, ModelResponse, RunQuery, RunStatus, ToolError};
use agno_db::SqliteDb;
use agno_models::FunctionModel;
use agno_runtime::{Agent, RunRequest};
use agno_tools::Function;
use serde_json::json;

async fn sqlite() -> Arc<dyn Db> {
    let dir = std::env::temp_dir().join("agno-rs-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let db = SqliteDb::connect(dir.join(format!("agent-{}.db", agno_core::new_id())).to_str().unwrap()).await.unwrap();
    db.create_tables().await.unwrap();
    Arc::new(db)
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Key {
    key: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_concurrent_runs_on_one_session_keep_every_run_and_state_update() {
    let db = sqlite().await;
    // Each run's tool sets its own state key; the model calls it once, then answers.
    let set_key = Function::with_context("set_key", "Set a key.", |a: Key, ctx| async move {
        ctx.session_state.lock().map_err(|_| ToolError::execution("lock"))?.insert(a.key.clone(), json!(true));
        Ok("set")
    });
    let model = Arc::new(FunctionModel::new(|req| {
        let last = req.messages.last().unwrap();
        Ok(if last.role == agno_core::Role::User {
            let key = last.content_text().unwrap().to_owned();
            ModelResponse {
                tool_calls: vec![agno_core::ToolCall::new("c1", "set_key", json!({ "key": key }).to_string())],
                ..Default::default()
            }
        } else {
            ModelResponse { content: "done".into(), ..Default::default() }
        })
    }));
    let agent = Agent::builder(model).function(set_key).db(Arc::clone(&db)).build().unwrap();
    // The session exists before the burst, as in a chat that is already going.
    agent.arun(RunRequest::new("k-first").session_id("busy")).await.unwrap();
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let agent = agent.clone();
            tokio::spawn(async move { agent.arun(RunRequest::new(format!("k{i}")).session_id("busy")).await })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap().status, RunStatus::Completed);
    }
    let runs = db.get_runs(&RunQuery { session_id: Some("busy".into()), ..RunQuery::default() }).await.unwrap();
    assert_eq!(runs.runs.len(), 101);
    let session = db.get_session("busy", None, None).await.unwrap().unwrap();
    let state = session.session_state().unwrap();
    assert_eq!(state.len(), 101, "every run's state key survived: {state:?}");
    assert_eq!(session.runs().len(), 101);
}

#[tokio::test]
async fn history_is_read_back_from_sqlite() {
    let db = sqlite().await;
    let model = Arc::new(FunctionModel::new(|req| {
        Ok(ModelResponse { content: format!("seen {} messages", req.messages.len()), ..Default::default() })
    }));
    let agent = Agent::builder(model).db(Arc::clone(&db)).add_history_to_context(true).build().unwrap();
    agent.arun(RunRequest::new("one").session_id("h")).await.unwrap();
    agent.arun(RunRequest::new("two").session_id("h")).await.unwrap();
    // A new agent value over the same database sees the same history.
    let again = Agent::builder(Arc::new(FunctionModel::new(|req| {
        Ok(ModelResponse { content: format!("seen {} messages", req.messages.len()), ..Default::default() })
    })))
    .db(Arc::clone(&db))
    .add_history_to_context(true)
    .build()
    .unwrap();
    let out = again.arun(RunRequest::new("three").session_id("h")).await.unwrap();
    assert_eq!(out.content_text(), "seen 5 messages");
}
