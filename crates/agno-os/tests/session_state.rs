//! `session_state` sent with a run reaches the stored session, merged over what other runs set:
//! sequential runs on one session each adding a key keep every key, and so do concurrent runs,
//! on SQLite and PostgreSQL, through HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{PgSchema, TestOs, config, sqlite_url};
use serde_json::{Map, Value, json};

fn os_config(db_url: &str) -> String {
    format!("[db]\nurl = \"{db_url}\"\n[[agents]]\nid = \"calc\"\nmodel = \"test\"\n")
}

async fn run_with_state(os: &TestOs, session_id: &str, state: &Value) -> Value {
    let state = state.to_string();
    let fields = [("message", "hello"), ("stream", "false"), ("session_id", session_id), ("session_state", &state)];
    let r = os.post_form("/agents/calc/runs", &fields, None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["status"], "COMPLETED");
    r.body
}

async fn stored_state(os: &TestOs, session_id: &str) -> Map<String, Value> {
    let r = os.get(&format!("/sessions/{session_id}"), None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body["session_state"].as_object().cloned().unwrap_or_default()
}

async fn request_state_is_merged_into_the_session(db_url: &str) {
    let os = TestOs::start(config(&os_config(db_url))).await;

    let session = format!("seq-{}", agno_core::new_id());
    for k in 1..=5 {
        let run = run_with_state(&os, &session, &json!({ format!("s{k}"): k })).await;
        // The run saw the stored keys and its own.
        let seen = run["session_state"].as_object().unwrap();
        assert_eq!(seen.len(), k, "run {k} saw {seen:?}");
    }
    let expected: Map<String, Value> = (1..=5).map(|k| (format!("s{k}"), json!(k))).collect();
    assert_eq!(stored_state(&os, &session).await, expected);

    // A later run changes one key and keeps the others.
    run_with_state(&os, &session, &json!({"s3": "three"})).await;
    let state = stored_state(&os, &session).await;
    assert_eq!(state["s3"], "three");
    assert_eq!(state.len(), 5);

    // Fifty concurrent runs on one existing session, each with its own key: none is lost.
    let session = format!("burst-{}", agno_core::new_id());
    run_with_state(&os, &session, &json!({"first": true})).await;
    let tasks: Vec<_> = (0..50)
        .map(|k| {
            let (client, base, session) = (os.client.clone(), os.base.clone(), session.clone());
            tokio::spawn(async move {
                let form = reqwest::multipart::Form::new()
                    .text("message", "hi")
                    .text("stream", "false")
                    .text("session_id", session)
                    .text("session_state", json!({ format!("c{k}"): k }).to_string());
                let resp = client.post(format!("{base}/agents/calc/runs")).multipart(form).send().await.unwrap();
                assert_eq!(resp.status(), 200);
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let state = stored_state(&os, &session).await;
    let missing: Vec<String> = (0..50).map(|k| format!("c{k}")).filter(|k| !state.contains_key(k)).collect();
    assert!(missing.is_empty(), "lost {} of 50 keys: {missing:?}", missing.len());
    assert_eq!(state["first"], true);
    assert_eq!(state.len(), 51);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_request_state_is_merged_into_the_session() {
    request_state_is_merged_into_the_session(&sqlite_url("state")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_request_state_is_merged_into_the_session() {
    let Some(schema) = PgSchema::new("state") else { return };
    request_state_is_merged_into_the_session(&schema.url).await;
}
