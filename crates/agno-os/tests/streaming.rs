//! SSE behaviour that needs a slow model: heartbeats on idle streams, a client going away does
//! not cancel the run (unless asked), and cancel from another request stops a running run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use agno_testkit::{FakeProvider, Reply};
use common::{TestOs, config};
use futures::StreamExt;

async fn slow_os(latency: Duration) -> (TestOs, FakeProvider) {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("slow answer")));
    provider.set_latency(latency);
    let cfg = format!(
        "[os]\nsse_heartbeat_seconds = 1\n[db]\nurl = \"memory://\"\n[[agents]]\nid = \"slow\"\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk-test\" }}\n",
        provider.base_url()
    );
    (TestOs::start(config(&cfg)).await, provider)
}

async fn start_stream(os: &TestOs, fields: &[(&str, &str)]) -> reqwest::Response {
    let mut form = reqwest::multipart::Form::new();
    for (k, v) in fields {
        form = form.text((*k).to_owned(), (*v).to_owned());
    }
    let resp = os.client.post(format!("{}/agents/slow/runs", os.base)).multipart(form).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    resp
}

/// Polls the stored run until `done` says so, with a deadline.
async fn wait_run(os: &TestOs, run_id: &str, done: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = os.get(&format!("/agents/slow/runs/{run_id}"), None).await;
        if r.status == 200 && done(&r.body) {
            return r.body;
        }
        assert!(Instant::now() < deadline, "run {run_id} never reached the expected state: {:?}", r.body);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn run_id_of(chunk: &[u8]) -> String {
    let text = String::from_utf8_lossy(chunk);
    let data = text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
    let v: serde_json::Value = serde_json::from_str(data).unwrap();
    v["run_id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_streams_carry_heartbeat_comments() {
    let (os, _provider) = slow_os(Duration::from_millis(2500)).await;
    let resp = start_stream(&os, &[("message", "hello")]).await;
    let body = resp.text().await.unwrap();
    let beat = body.find(": heartbeat").unwrap_or_else(|| panic!("no heartbeat in {body}"));
    let content = body.find("event: RunContent").expect("content");
    assert!(beat < content, "the heartbeat came while waiting for the model");
    let last = body.rfind("event: ").map(|i| &body[i..]).unwrap_or_default();
    assert!(last.starts_with("event: RunCompleted"), "the stream ends with the run: {last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_going_away_does_not_cancel_the_run() {
    let (os, _provider) = slow_os(Duration::from_millis(800)).await;
    let resp = start_stream(&os, &[("message", "keep going")]).await;
    let mut bytes = resp.bytes_stream();
    let first = bytes.next().await.unwrap().unwrap();
    let run_id = run_id_of(&first);
    drop(bytes);
    let run = wait_run(&os, &run_id, |r| r["status"] != "RUNNING").await;
    assert_eq!(run["status"], "COMPLETED");
    assert_eq!(run["content"], "slow answer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_on_disconnect_is_honoured_when_asked() {
    let (os, _provider) = slow_os(Duration::from_millis(1500)).await;
    let resp = start_stream(&os, &[("message", "stop if I leave"), ("cancel_on_disconnect", "true")]).await;
    let mut bytes = resp.bytes_stream();
    let first = bytes.next().await.unwrap().unwrap();
    let run_id = run_id_of(&first);
    drop(bytes);
    let run = wait_run(&os, &run_id, |r| r["status"] != "RUNNING").await;
    assert_eq!(run["status"], "CANCELLED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_from_another_request_stops_a_running_run() {
    let (os, _provider) = slow_os(Duration::from_millis(1500)).await;
    let resp = start_stream(&os, &[("message", "long task")]).await;
    let mut events = eventsource_stream::EventStream::new(resp.bytes_stream());
    let first = events.next().await.unwrap().unwrap();
    assert_eq!(first.event, "RunStarted");
    let run_id = serde_json::from_str::<serde_json::Value>(&first.data).unwrap()["run_id"].as_str().unwrap().to_owned();
    // The run row is written when the run starts; wait for it, then cancel.
    wait_run(&os, &run_id, |_| true).await;
    let c = os.post_form(&format!("/agents/slow/runs/{run_id}/cancel"), &[], None).await;
    assert_eq!(c.status, 200, "{:?}", c.body);
    assert_eq!(c.body, serde_json::json!({}));
    let mut names = Vec::new();
    while let Some(ev) = events.next().await {
        names.push(ev.unwrap().event);
    }
    assert_eq!(names.last().map(String::as_str), Some("RunCancelled"), "{names:?}");
    let run = wait_run(&os, &run_id, |r| r["status"] != "RUNNING").await;
    assert_eq!(run["status"], "CANCELLED");
}
