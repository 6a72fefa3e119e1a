//! What Agno's web clients (Agent UI, the control plane) read, pinned beyond shapes: session
//! titles in listings, in-flight runs kept out of the session routes the UIs replace their
//! messages with, token metrics on sessions and daily metrics, the routes of features agno-rs
//! has not built answering as an empty Python AgentOS does, trailing slashes, and the SSE
//! content type.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use agno_testkit::{FakeProvider, Reply};
use common::{PgSchema, TestOs, config, sqlite_url};
use futures::StreamExt;
use serde_json::{Value, json};

fn agent_on(db_url: &str, base_url: &str) -> String {
    format!(
        "[db]\nurl = \"{db_url}\"\n[[agents]]\nid = \"chat\"\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{base_url}\", api_key = \"sk-test\" }}\n"
    )
}

async fn run(os: &TestOs, session: &str, message: &str) -> Value {
    let r = os
        .post_form("/agents/chat/runs", &[("message", message), ("stream", "false"), ("session_id", session)], None)
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body
}

fn names(list: &Value) -> Vec<(String, String)> {
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["session_id"].as_str().unwrap().to_owned(), s["session_name"].as_str().unwrap().to_owned()))
        .collect()
}

async fn titles_and_token_metrics(db_url: &str) {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::Echo));
    let os = TestOs::start(config(&agent_on(db_url, &provider.base_url()))).await;

    // Session titles: the first message of the session, unless it was named.
    run(&os, "first", "What is the capital of France?").await;
    run(&os, "first", "And of Spain?").await;
    run(&os, "named", "hello").await;
    let r = os.post_json("/sessions/named/rename", &json!({"session_name": "Alice's v3 chat"}), None).await;
    assert_eq!(r.status, 200);
    let listed = names(&os.get("/sessions?sort_order=asc", None).await.body);
    assert_eq!(
        listed,
        [("first".into(), "What is the capital of France?".into()), ("named".into(), "Alice's v3 chat".into())]
    );

    // Token metrics: the session sums its runs, per model as Agno (one entry per provider/id).
    let runs: Vec<Value> = os.get("/sessions/first/runs", None).await.body.as_array().unwrap().clone();
    let run_tokens: u64 = runs.iter().map(|r| r["metrics"]["total_tokens"].as_u64().unwrap()).sum();
    assert!(run_tokens > 0);
    for r in &runs {
        assert!(r["metrics"]["duration"].as_f64().unwrap() > 0.0, "run duration: {}", r["metrics"]);
        let assistant = r["messages"].as_array().unwrap().iter().find(|m| m["role"] == "assistant").unwrap();
        assert!(assistant["metrics"]["duration"].as_f64().unwrap() > 0.0);
        assert!(assistant["metrics"]["time_to_first_token"].as_f64().is_some());
        assert!(assistant["provider_data"]["id"].as_str().unwrap().starts_with("chatcmpl-"));
    }
    let session = os.get("/sessions/first", None).await.body;
    assert_eq!(session["total_tokens"], run_tokens);
    assert_eq!(session["metrics"]["total_tokens"], run_tokens);
    let details = session["metrics"]["details"]["model"].as_array().unwrap();
    assert_eq!(details.len(), 1, "one entry for the one model: {details:?}");
    assert_eq!(details[0]["provider"], "OpenAI Chat");
    assert_eq!(details[0]["total_tokens"], run_tokens);
    let row = os.get("/sessions", None).await.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == "first")
        .cloned()
        .unwrap();
    assert_eq!(row["total_tokens"], run_tokens);

    // Concurrent runs on one session all count.
    let before = os.get("/sessions/first", None).await.body["total_tokens"].as_u64().unwrap();
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let (client, base) = (os.client.clone(), os.base.clone());
            tokio::spawn(async move {
                let form = reqwest::multipart::Form::new()
                    .text("message", format!("burst {i}"))
                    .text("stream", "false")
                    .text("session_id", "first");
                let r: Value = client
                    .post(format!("{base}/agents/chat/runs"))
                    .multipart(form)
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                r["metrics"]["total_tokens"].as_u64().unwrap()
            })
        })
        .collect();
    let mut added = 0;
    for t in tasks {
        added += t.await.unwrap();
    }
    assert_eq!(os.get("/sessions/first", None).await.body["total_tokens"], before + added, "no run's tokens lost");

    // The daily metrics sum the real tokens.
    let r = os.post_json("/metrics/refresh", &json!({}), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let day = &os.get("/metrics", None).await.body["metrics"][0];
    assert_eq!(day["token_metrics"]["total_tokens"], before + added + run_tokens_of(&os, "named").await, "{day}");
}

async fn run_tokens_of(os: &TestOs, session: &str) -> u64 {
    os.get(&format!("/sessions/{session}"), None).await.body["total_tokens"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_titles_and_token_metrics_are_as_agno_shows_them() {
    titles_and_token_metrics(&sqlite_url("ui")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_titles_and_token_metrics_are_as_agno_shows_them() {
    let Some(schema) = PgSchema::new("ui") else { return };
    titles_and_token_metrics(&schema.url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_memory_titles_and_token_metrics_are_as_agno_shows_them() {
    titles_and_token_metrics("memory://").await;
}

/// Agent UI reads `GET /sessions/{id}/runs` on `RunStarted` and replaces its messages with the
/// answer: a run in flight must not be in it (it would wipe the reply being streamed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_in_flight_stay_out_of_the_session_routes_the_uis_read() {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::Echo));
    provider.set_latency(Duration::from_millis(800));
    let os = TestOs::start(config(&agent_on("memory://", &provider.base_url()))).await;

    let form = reqwest::multipart::Form::new().text("message", "first question").text("session_id", "fresh");
    let resp = os.client.post(format!("{}/agents/chat/runs", os.base)).multipart(form).send().await.unwrap();
    assert_eq!(resp.headers()["content-type"], "text/event-stream; charset=utf-8");
    let mut stream = resp.bytes_stream();
    let first = stream.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("RunStarted"));
    // The first run is in flight: the session has nothing to show yet (Agno: 404).
    assert_eq!(os.get("/sessions/fresh/runs", None).await.status, 404);
    assert_eq!(os.get("/sessions/fresh/runs?status=RUNNING", None).await.body.as_array().map(Vec::len), Some(1));
    // Our own run route shows it running.
    let body: String = String::from_utf8_lossy(&first).into_owned();
    let run_id = body
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str::<Value>(d).unwrap()["run_id"].as_str().unwrap().to_owned())
        .unwrap();
    assert_eq!(os.get(&format!("/agents/chat/runs/{run_id}"), None).await.body["status"], "RUNNING");
    while stream.next().await.is_some() {}
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = os.get("/sessions/fresh/runs", None).await;
        if r.status == 200 {
            assert_eq!(r.body[0]["status"], "COMPLETED");
            assert_eq!(r.body[0]["run_input"], "first question");
            break;
        }
        assert!(Instant::now() < deadline, "the finished run never showed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // A second run in flight: only the finished one is listed.
    let form = reqwest::multipart::Form::new().text("message", "second").text("session_id", "fresh");
    let resp = os.client.post(format!("{}/agents/chat/runs", os.base)).multipart(form).send().await.unwrap();
    let mut stream = resp.bytes_stream();
    stream.next().await.unwrap().unwrap();
    let r = os.get("/sessions/fresh/runs", None).await;
    assert_eq!(r.body.as_array().map(Vec::len), Some(1), "{:?}", r.body);
    assert_eq!(os.get("/sessions/fresh/run-previews", None).await.body.as_array().map(Vec::len), Some(1));
    while stream.next().await.is_some() {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unbuilt_features_answer_as_an_empty_python_agentos() {
    let os = TestOs::start(config("[db]\nurl = \"memory://\"\n[[agents]]\nid = \"calc\"\nmodel = \"test\"\n")).await;
    for (path, status, body) in [
        ("/teams", 200, json!([])),
        ("/workflows", 200, json!([])),
        ("/teams/t1", 404, Value::Null),
        ("/workflows/w1", 404, Value::Null),
    ] {
        let r = os.get(path, None).await;
        assert_eq!(r.status, status, "{path}");
        if !body.is_null() {
            assert_eq!(r.body, body, "{path}");
        }
    }
    let traces = os.get("/traces", None).await;
    assert_eq!(
        (traces.status, &traces.body["data"], &traces.body["meta"]["total_count"]),
        (200, &json!([]), &json!(0))
    );
    let knowledge = os.get("/knowledge/config", None).await;
    assert_eq!(knowledge.status, 503);
    assert!(common::detail(&knowledge.body).contains("No knowledge base"));
    // Trailing slashes as FastAPI answers them.
    for path in ["/health/", "/agents/", "/sessions/", "/teams/"] {
        assert_eq!(os.get(path, None).await.status, 200, "{path}");
    }
    let redoc = os.client.get(format!("{}/redoc", os.base)).send().await.unwrap();
    assert_eq!(redoc.status(), 200);
    assert!(redoc.text().await.unwrap().contains("/openapi.json"));
    // 204s carry the JSON content type FastAPI sends.
    let r = os.post_json("/memories", &json!({"memory": "x", "user_id": "u"}), None).await;
    let id = r.body["memory_id"].as_str().unwrap();
    let del = os.client.delete(format!("{}/memories/{id}", os.base)).send().await.unwrap();
    assert_eq!(del.status(), 204);
    assert_eq!(del.headers()["content-type"], "application/json");
}
