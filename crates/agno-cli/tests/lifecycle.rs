//! Every run ends in a terminal state, whatever its client and the process do: a client that
//! leaves a non-streaming run mid-call, SIGTERM with runs in flight, idle and half-open
//! connections at shutdown. Every knowledge content (uploaded, or an S3 source's object) ends
//! `completed` or `failed`, even when its replica is killed mid-ingestion. `agno serve` runs as its own process, on SQLite and
//! PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::io::Write;
use std::time::{Duration, Instant};

use agno::core::{RunQuery, RunStatus};
use agno_testkit::{FakeProvider, Reply};
use common::{
    get_json, postgres_schema, scratch_dir, sigterm, slow_agent_config, start_serve_logged, start_serve_with_env,
    wait_exit,
};

/// A non-streaming run whose client gives up after `client_timeout`; the request fails on the
/// client side.
async fn leave_non_streaming_run(port: u16, session_id: &str, extra: &[(&str, &str)], client_timeout: Duration) {
    let mut form = vec![("message", "take your time"), ("stream", "false"), ("session_id", session_id)];
    form.extend_from_slice(extra);
    let result = reqwest::Client::builder()
        .timeout(client_timeout)
        .build()
        .unwrap()
        .post(format!("http://127.0.0.1:{port}/agents/slow/runs"))
        .form(&form)
        .send()
        .await;
    assert!(result.is_err(), "the client was meant to leave before the answer: {result:?}");
}

/// The runs stored in `session_id`, read over HTTP.
async fn session_runs(port: u16, session_id: &str) -> Vec<serde_json::Value> {
    let resp = reqwest::get(format!("http://127.0.0.1:{port}/agents/slow/runs?session_id={session_id}")).await.unwrap();
    if resp.status() == 404 {
        return Vec::new();
    }
    resp.json::<Vec<serde_json::Value>>().await.unwrap()
}

/// Waits (bounded) until the one run of `session_id` is no longer PENDING/RUNNING; returns it.
async fn settled_run(port: u16, session_id: &str) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let runs = session_runs(port, session_id).await;
        if let [run] = runs.as_slice()
            && run["status"] != "RUNNING"
            && run["status"] != "PENDING"
        {
            return run.clone();
        }
        assert!(Instant::now() < deadline, "the run of {session_id} never ended: {runs:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn clients_leaving_non_streaming_runs(db_url: &str, dir: &std::path::Path) {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("answered after all")));
    provider.set_latency(Duration::from_secs(2));
    let config = slow_agent_config(dir, "agentos.toml", db_url, &provider.base_url(), "");
    let (mut served, port) = start_serve_logged(&config, &dir.join("serve.log")).await;

    let tag = agno::core::new_id();
    let (kept, cancelled) = (format!("kept-{tag}"), format!("cancelled-{tag}"));
    let half_second = Duration::from_millis(500);
    leave_non_streaming_run(port, &kept, &[], half_second).await;
    leave_non_streaming_run(port, &cancelled, &[("cancel_on_disconnect", "true")], half_second).await;

    let run = settled_run(port, &kept).await;
    assert_eq!(run["status"], "COMPLETED", "{run}");
    assert_eq!(run["content"], "answered after all");
    let run = settled_run(port, &cancelled).await;
    assert_eq!(run["status"], "CANCELLED", "{run}");

    sigterm(&served);
    let (status, _) = wait_exit(&mut served, Duration::from_secs(40)).await;
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_a_non_streaming_run_finds_it_completed() {
    let dir = scratch_dir("leave");
    let url = format!("sqlite://{}", dir.join("os.db").display());
    clients_leaving_non_streaming_runs(&url, &dir).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_client_leaving_a_non_streaming_run_finds_it_completed() {
    let dir = scratch_dir("leave-pg");
    let Some(schema) = postgres_schema("leave") else { return };
    clients_leaving_non_streaming_runs(&schema.url, &dir).await;
}

/// A raw connection that sent `bytes` and then nothing more.
fn stalled_connection(port: u16, bytes: &[u8]) -> std::net::TcpStream {
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.write_all(bytes).unwrap();
    conn
}

/// A keep-alive connection that made one request and stays open, idle.
fn idle_keep_alive_connection(port: u16) -> std::net::TcpStream {
    use std::io::Read;
    let mut conn = stalled_connection(port, b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n");
    conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; 512];
    let n = conn.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"), "health over the raw connection");
    conn
}

/// Every run stored in these sessions, read from the database after the server exited.
async fn stored_runs(db_url: &str, sessions: &[String]) -> Vec<agno::core::RunOutput> {
    let db = agno::db::open(db_url).await.unwrap();
    let mut runs = Vec::new();
    for session_id in sessions {
        let page =
            db.get_runs(&RunQuery { session_id: Some(session_id.clone()), ..RunQuery::default() }).await.unwrap();
        runs.extend(page.runs);
    }
    runs
}

/// SIGTERM while runs outlast the grace: some clients gone, some waiting (JSON and SSE), plus an
/// idle keep-alive connection, one that sent half its headers and one that sent part of a body.
/// The process exits within the grace, every run is stored CANCELLED and the waiting clients get
/// their answer.
async fn sigterm_with_runs_outlasting_the_grace(db_url: &str, dir: &std::path::Path) {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("too late")));
    provider.set_latency(Duration::from_secs(120));
    let grace = Duration::from_secs(4);
    let extra = format!("[os]\nshutdown_grace_seconds = {}", grace.as_secs());
    let config = slow_agent_config(dir, "agentos.toml", db_url, &provider.base_url(), &extra);
    let (mut served, port) = start_serve_logged(&config, &dir.join("serve.log")).await;

    let tag = agno::core::new_id();
    let sessions: Vec<String> = (0..6).map(|i| format!("grace-{i}-{tag}")).collect();
    for session_id in &sessions[..3] {
        leave_non_streaming_run(port, session_id, &[], Duration::from_millis(300)).await;
    }
    let client = reqwest::Client::new();
    let url = format!("http://127.0.0.1:{port}/agents/slow/runs");
    let waiting: Vec<_> = sessions[3..5]
        .iter()
        .map(|s| {
            let request = client.post(&url).form(&[("message", "wait for me"), ("stream", "false"), ("session_id", s)]);
            tokio::spawn(async move { request.send().await })
        })
        .collect();
    let streaming = {
        let request = client.post(&url).form(&[("message", "stream to me"), ("session_id", sessions[5].as_str())]);
        tokio::spawn(async move { request.send().await.unwrap().text().await })
    };
    let _idle = idle_keep_alive_connection(port);
    let _half_headers = stalled_connection(port, b"POST /agents/slow/runs HTTP/1.1\r\nHost: loc");
    let _half_body = stalled_connection(
        port,
        b"POST /agents/slow/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nmessa",
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while provider.request_count() < sessions.len() {
        assert!(Instant::now() < deadline, "only {} runs reached the model", provider.request_count());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    sigterm(&served);
    let (status, took) = wait_exit(&mut served, grace + Duration::from_secs(30)).await;
    let log = std::fs::read_to_string(dir.join("serve.log")).unwrap();
    assert!(status.success(), "{log}");
    assert!(took <= grace + Duration::from_secs(1), "shutdown took {took:?} with a grace of {grace:?}:\n{log}");
    assert!(log.contains("AgentOS stopped"), "{log}");

    for answer in waiting {
        let resp = answer.await.unwrap().expect("a waiting client gets its answer before the server exits");
        assert_eq!(resp.status(), 200);
        let run: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(run["status"], "CANCELLED", "{run}");
    }
    let body = streaming.await.unwrap().expect("the streaming client gets the end of its stream");
    let last = body.rfind("event: ").map(|i| &body[i..]).unwrap_or_default();
    assert!(last.starts_with("event: RunCancelled"), "the stream ends with the cancellation: {last}");

    let runs = stored_runs(db_url, &sessions).await;
    assert_eq!(runs.len(), sessions.len(), "one stored run per request: {runs:?}");
    for run in &runs {
        assert_eq!(run.status, RunStatus::Cancelled, "run {} of {:?}", run.id(), run.session_id);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_cancels_and_stores_runs_outlasting_the_grace() {
    let dir = scratch_dir("grace");
    let url = format!("sqlite://{}", dir.join("os.db").display());
    sigterm_with_runs_outlasting_the_grace(&url, &dir).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_sigterm_cancels_and_stores_runs_outlasting_the_grace() {
    let dir = scratch_dir("grace-pg");
    let Some(schema) = postgres_schema("grace") else { return };
    sigterm_with_runs_outlasting_the_grace(&schema.url, &dir).await;
}

/// SIGTERM while runs whose clients left are still in flight and idle / half-open connections
/// are held: the runs finish and are stored COMPLETED, and the connections do not hold the
/// process until the grace ends.
async fn sigterm_lets_in_flight_runs_finish(db_url: &str, dir: &std::path::Path) {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("finished in the grace")));
    provider.set_latency(Duration::from_millis(1500));
    let grace = Duration::from_secs(60);
    let extra = format!("[os]\nshutdown_grace_seconds = {}", grace.as_secs());
    let config = slow_agent_config(dir, "agentos.toml", db_url, &provider.base_url(), &extra);
    let (mut served, port) = start_serve_logged(&config, &dir.join("serve.log")).await;

    let tag = agno::core::new_id();
    let sessions: Vec<String> = (0..3).map(|i| format!("finish-{i}-{tag}")).collect();
    for session_id in &sessions {
        leave_non_streaming_run(port, session_id, &[], Duration::from_millis(200)).await;
    }
    let _idle = idle_keep_alive_connection(port);
    let _half_headers = stalled_connection(port, b"GET /docs HTTP/1.1\r\nHost: loc");
    let _silent = stalled_connection(port, b"");

    sigterm(&served);
    let (status, took) = wait_exit(&mut served, grace).await;
    let log = std::fs::read_to_string(dir.join("serve.log")).unwrap();
    assert!(status.success(), "{log}");
    // The runs need 1.5 s; idle connections must not add the rest of the 60 s grace.
    assert!(took < grace / 2, "shutdown took {took:?}:\n{log}");

    let runs = stored_runs(db_url, &sessions).await;
    assert_eq!(runs.len(), sessions.len(), "{runs:?}");
    for run in &runs {
        assert_eq!(run.status, RunStatus::Completed, "run {}", run.id());
        assert_eq!(run.content_text(), "finished in the grace");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_in_flight_runs_finish_despite_idle_connections() {
    let dir = scratch_dir("finish");
    let url = format!("sqlite://{}", dir.join("os.db").display());
    sigterm_lets_in_flight_runs_finish(&url, &dir).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_sigterm_lets_in_flight_runs_finish_despite_idle_connections() {
    let dir = scratch_dir("finish-pg");
    let Some(schema) = postgres_schema("finish") else { return };
    sigterm_lets_in_flight_runs_finish(&schema.url, &dir).await;
}

/// SIGTERM while a streamed run is in flight (its client already gone): the server stops
/// accepting, the run finishes and is stored, and the process exits cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_keeps_a_streamed_run_whose_client_left() {
    a_signal_keeps_a_streamed_run_whose_client_left("TERM").await;
}

/// The same with SIGINT (Ctrl-C).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_keeps_a_streamed_run_whose_client_left() {
    a_signal_keeps_a_streamed_run_whose_client_left("INT").await;
}

async fn a_signal_keeps_a_streamed_run_whose_client_left(signal: &str) {
    use futures::StreamExt;
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("slow answer")));
    provider.set_latency(Duration::from_millis(1500));
    let dir = scratch_dir("serve");
    let url = format!("sqlite://{}", dir.join("os.db").display());
    let config = slow_agent_config(&dir, "agentos.toml", &url, &provider.base_url(), "");
    let (mut served, port) = start_serve_logged(&config, &dir.join("serve.log")).await;

    let resp = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/agents/slow/runs"))
        .form(&[("message", "take your time"), ("session_id", "graceful")])
        .send()
        .await
        .unwrap();
    let mut events = resp.bytes_stream();
    let first = events.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("RunStarted"));
    drop(events); // the client goes away mid-run

    common::signal(&served, signal);
    let (status, _) = wait_exit(&mut served, Duration::from_secs(30)).await;
    let log = std::fs::read_to_string(dir.join("serve.log")).unwrap();
    assert!(status.success(), "{log}");
    assert!(log.contains("AgentOS stopped"), "{log}");

    let runs = stored_runs(&url, &["graceful".to_owned()]).await;
    assert_eq!(runs.len(), 1, "the in-flight run was stored");
    assert_eq!(runs[0].status, RunStatus::Completed);
    assert_eq!(runs[0].content_text(), "slow answer");
}

/// `/knowledge/content/{id}/status` of a content, or `None` once it is gone.
async fn content_status(port: u16, id: &str) -> Option<serde_json::Value> {
    let resp = reqwest::get(format!("http://127.0.0.1:{port}/knowledge/content/{id}/status")).await.unwrap();
    if resp.status() == 404 {
        return None;
    }
    assert_eq!(resp.status(), 200);
    Some(resp.json().await.unwrap())
}

/// Uploads `text` as `name`; answers the content id (202, `processing`).
async fn upload_text(port: u16, name: &str, text: String) -> String {
    let form = reqwest::multipart::Form::new()
        .text("name", name.to_owned())
        .part("file", reqwest::multipart::Part::bytes(text.into_bytes()).file_name(name.to_owned()));
    let resp = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/knowledge/content"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    processing_id(resp).await
}

/// The id of the content an upload answered with: 202, still `processing`.
async fn processing_id(resp: reqwest::Response) -> String {
    assert_eq!(resp.status(), 202);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["status"], "processing", "{body}");
    body["id"].as_str().unwrap().to_owned()
}

/// Embedding requests the fake provider has received.
fn embedding_calls(provider: &FakeProvider) -> usize {
    provider.requests().iter().filter(|r| r.path.ends_with("/embeddings")).count()
}

/// Waits (bounded) until the embedder has received more than `seen` requests: the ingestion is
/// in the middle of embedding.
async fn embedding_started(provider: &FakeProvider, seen: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while embedding_calls(provider) <= seen {
        assert!(Instant::now() < deadline, "the ingestion never reached the embedder");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Where the large content of [`ingestion_survives_a_killed_replica`] comes from.
enum ContentFrom<'a> {
    /// A file uploaded to `POST /knowledge/content`.
    Upload,
    /// An object of an S3 source (`POST /knowledge/remote-content`), which the replica that takes
    /// the ingestion over reads again.
    S3(&'a agno_testkit::moto::Moto),
}

/// The content `text` as `from` gives it to the OS on `port`: its id.
async fn add_content(port: u16, from: &ContentFrom<'_>, name: &str, text: String) -> String {
    let ContentFrom::S3(moto) = from else { return upload_text(port, name, text).await };
    moto.put("handbooks", name, &text);
    let resp = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/knowledge/remote-content"))
        .form(&[("config_id", "bucket"), ("path", name)])
        .send()
        .await
        .unwrap();
    processing_id(resp).await
}

/// The ingestion of a large content (an upload, or an S3 object) survives `kill -9` of the replica
/// embedding it: after a restart the new replica takes the ingestion over and the content ends
/// `completed` and searchable, never `processing`. Deleting a content while it is ingested
/// cancels its ingestion and leaves no chunk behind.
async fn ingestion_survives_a_killed_replica(db_url: &str, dir: &std::path::Path, from: ContentFrom<'_>) {
    let provider = FakeProvider::start().await.unwrap();
    // Each batch of 100 chunks takes a second to embed: the kill lands mid-ingestion.
    provider.set_embedding_latency(Duration::from_secs(1));
    let config = dir.join("agentos.toml");
    std::fs::write(
        &config,
        format!(
            "[db]\nurl = \"{db_url}\"\n[queue]\nlock_grace_seconds = 2\npoll_interval_ms = 50\n[[knowledge]]\n\
             id = \"docs\"\nvector_db = \"sqlite://{}\"\nembedder = \"openai:text-embedding-3-small\"\n\
             dimensions = 16\nchunk_size = 1000\nsearch_type = \"keyword\"\n[[agents]]\nid = \"helper\"\nmodel = \"test\"\n\
             knowledge = \"docs\"\n{}",
            dir.join("vectors.db").display(),
            match &from {
                ContentFrom::Upload => String::new(),
                ContentFrom::S3(moto) => moto.source_toml("bucket", "handbooks", &moto.secret),
            }
        ),
    )
    .unwrap();
    let env = [("OPENAI_BASE_URL", provider.base_url()), ("OPENAI_API_KEY", "sk-test".to_owned())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let log = dir.join("serve.log");
    let (mut first, port) = start_serve_with_env(&config, &log, &env).await;
    // ~300 chunks of 1,000 characters: three embedding calls.
    let large: String =
        (0..3000).map(|i| format!("Paragraph {i} of the handbook describes the zebra crossing rule.\n\n")).collect();
    assert!(large.len() > 190_000);
    let id = add_content(port, &from, "handbook.md", large).await;
    embedding_started(&provider, 0).await;
    assert_eq!(content_status(port, &id).await.unwrap()["status"], "processing");
    first.kill().unwrap(); // SIGKILL: no drain, no final write
    first.wait().unwrap();
    let embedded_before = embedding_calls(&provider);

    let log = dir.join("serve-2.log");
    let (mut second, port) = start_serve_with_env(&config, &log, &env).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        let status = content_status(port, &id).await.expect("the content is still there");
        if status["status"] != "processing" {
            break status;
        }
        assert!(Instant::now() < deadline, "the content stayed processing after the restart");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(status["status"], "completed", "{status}");
    let embedded_after = embedding_calls(&provider);
    assert!(embedded_after >= embedded_before + 3, "the new replica embedded the content again from the start");
    let found = search(port, "zebra crossing").await;
    let hits = found["data"].as_array().unwrap();
    assert!(!hits.is_empty() && hits.iter().all(|h| h["content_id"] == id.as_str()), "{found}");
    let jobs = get_json(port, "/queue/jobs?status=completed&limit=10").await;
    let job = jobs["data"].as_array().unwrap().iter().find(|j| j["session_id"] == id.as_str()).cloned();
    let job = job.unwrap_or_else(|| panic!("the ingestion's job is completed: {jobs}"));
    assert_eq!((job["job_type"].as_str(), job["attempt"].as_i64()), (Some("ingest"), Some(2)), "{job}");

    // A content deleted while it is ingested: its ingestion is cancelled, no chunk stays.
    let seen = embedding_calls(&provider);
    let doomed: String = (0..3000).map(|i| format!("Line {i} about the quokka habitat.\n\n")).collect();
    let doomed_id = add_content(port, &from, "doomed.md", doomed).await;
    embedding_started(&provider, seen).await;
    let resp = reqwest::Client::new()
        .delete(format!("http://127.0.0.1:{port}/knowledge/content/{doomed_id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let deadline = Instant::now() + Duration::from_secs(30);
    let job = loop {
        let jobs = get_json(port, "/queue/jobs?status=cancelled&limit=10").await;
        if let Some(job) = jobs["data"].as_array().unwrap().iter().find(|j| j["session_id"] == doomed_id.as_str()) {
            break job.clone();
        }
        assert!(Instant::now() < deadline, "the deleted content's ingestion was never cancelled");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(job["error"].as_str().unwrap().contains("deleted"), "{job}");
    assert!(content_status(port, &doomed_id).await.is_none());
    let found = search(port, "quokka habitat").await;
    assert_eq!(found["data"], serde_json::json!([]), "no chunk of a deleted content: {found}");
    sigterm(&second);
    wait_exit(&mut second, Duration::from_secs(20)).await;
}

/// `POST /knowledge/search` for `query`.
async fn search(port: u16, query: &str) -> serde_json::Value {
    let resp = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/knowledge/search"))
        .json(&serde_json::json!({"query": query}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_an_ingestion_survives_a_killed_replica() {
    let dir = scratch_dir("ingest-kill");
    ingestion_survives_a_killed_replica(
        &format!("sqlite://{}", dir.join("agno.db").display()),
        &dir,
        ContentFrom::Upload,
    )
    .await;
}

/// The same with the content an object of an S3 source (moto): the replica that takes the
/// ingestion over reads the object again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_an_s3_ingestion_survives_a_killed_replica() {
    let Some(python) = agno_testkit::moto_python("an S3 ingestion across a killed replica") else { return };
    let moto = agno_testkit::moto::Moto::start(&python);
    moto.create_bucket("handbooks");
    let dir = scratch_dir("ingest-kill-s3");
    ingestion_survives_a_killed_replica(
        &format!("sqlite://{}", dir.join("agno.db").display()),
        &dir,
        ContentFrom::S3(&moto),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_an_ingestion_survives_a_killed_replica() {
    let dir = scratch_dir("ingest-kill-pg");
    let Some(schema) = postgres_schema("ingest") else { return };
    ingestion_survives_a_killed_replica(&schema.url, &dir, ContentFrom::Upload).await;
}
