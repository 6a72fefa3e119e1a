//! The `agno` binary end to end: `run` and `chat` on the offline test model and against the fake
//! OpenAI server, and clear failures for bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use agno_testkit::{FakeProvider, Reply};
use common::{Served, agno, free_port, get_json, postgres_schema, start_serve};

fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn run_on_the_test_model_prints_an_answer() {
    let out = agno().args(["run", "--model", "test", "What is 2+2?"]).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stderr: {stderr}");
    assert!(stdout.contains("What is 2+2?"), "{stdout}");
}

#[test]
fn run_with_a_toolkit_streams_tool_calls() {
    let out = agno().args(["run", "-t", "calculator", "--stream", "add please"]).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stderr: {stderr}");
    assert!(stdout.contains("→ add("), "{stdout}");
    assert!(stdout.contains("✓ add: {\"operation\":\"addition\""), "{stdout}");
}

#[test]
fn run_trace_prints_the_span_tree_after_the_answer() {
    let out = agno().args(["run", "--trace", "-t", "calculator", "--name", "Math Bot", "add please"]).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("Tool results: add"), "the answer on stdout: {stdout}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(lines[0].starts_with("trace ") && lines[0].contains("spans, 0 failed)"), "{stderr}");
    assert!(lines[1].starts_with("Math_Bot.run  AGENT  "), "the run at the root: {stderr}");
    assert!(lines[2].starts_with("  Test.invoke  LLM  ") && lines[2].contains("tokens"), "{stderr}");
    assert!(lines.iter().any(|l| l.starts_with("  add  TOOL  ")), "each tool call under the run: {stderr}");
    assert!(lines.last().is_some_and(|l| l.starts_with("  Test.invoke  LLM  ")), "then the answer: {stderr}");
}

#[test]
fn run_json_prints_the_run_record() {
    let out = agno().args(["run", "--json", "hi"]).output().unwrap();
    let (stdout, _) = text(&out);
    let run: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(run["status"], "COMPLETED");
    assert_eq!(run["model"], "test");
}

#[test]
fn unknown_provider_and_missing_key_fail_with_guidance() {
    let out = agno().args(["run", "--model", "nope:x", "hi"]).output().unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("unknown model provider") && stderr.contains("--model test"), "{stderr}");

    let out = agno().args(["run", "--model", "openai:gpt-4o-mini", "hi"]).output().unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("OPENAI_API_KEY"), "{stderr}");

    let out = agno().args(["run", "-t", "teleport", "hi"]).output().unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("unknown toolkit") && stderr.contains("calculator"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_against_an_openai_compatible_server_uses_the_env_vars() {
    let server = FakeProvider::start().await.unwrap();
    server.push(Reply::text("four"));
    let base = server.base_url();
    let out = tokio::task::spawn_blocking(move || {
        agno()
            .env("OPENAI_API_KEY", "sk-cli")
            .env("OPENAI_BASE_URL", base)
            .args(["run", "--model", "openai:gpt-4o-mini", "What is 2+2?"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), "four");
    let req = &server.requests()[0];
    assert_eq!(req.header("authorization"), Some("Bearer sk-cli"));
    assert_eq!(req.body["model"], "gpt-4o-mini");
}

/// Each native provider, reached through `agno run --model provider:id` with only its usual
/// environment variables pointing at the fake server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_provider_runs_from_the_terminal_with_only_its_env_override() {
    let server = FakeProvider::start().await.unwrap();
    let root = server.root_url();
    // (model string, its environment, the path the request must reach)
    type Case<'a> = (&'a str, Vec<(&'a str, String)>, &'a str);
    let cases: Vec<Case> = vec![
        (
            "anthropic:claude-sonnet-4-5",
            vec![("ANTHROPIC_BASE_URL", root.clone()), ("ANTHROPIC_API_KEY", "sk-ant-cli".into())],
            "/v1/messages",
        ),
        (
            "google:gemini-2.5-flash",
            vec![("GEMINI_BASE_URL", root.clone()), ("GOOGLE_API_KEY", "gm-cli".into())],
            "/v1beta/models/gemini-2.5-flash:generateContent",
        ),
        ("ollama:llama3.2", vec![("OLLAMA_HOST", root.trim_start_matches("http://").to_owned())], "/api/chat"),
        (
            "openai:gpt-5-mini",
            vec![("OPENAI_BASE_URL", format!("{root}/v1")), ("OPENAI_API_KEY", "sk-cli".into())],
            "/v1/responses",
        ),
        (
            "azure-openai:my-deployment",
            vec![("AZURE_OPENAI_ENDPOINT", root.clone()), ("AZURE_OPENAI_API_KEY", "az-cli".into())],
            "/openai/deployments/my-deployment/chat/completions",
        ),
        (
            "aws-bedrock:anthropic.claude-sonnet-4-5-20250929-v1:0",
            vec![
                ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", root.clone()),
                ("AWS_REGION", "us-east-1".into()),
                ("AWS_ACCESS_KEY_ID", agno_testkit::bedrock::ACCESS_KEY_ID.into()),
                ("AWS_SECRET_ACCESS_KEY", agno_testkit::bedrock::SECRET_ACCESS_KEY.into()),
            ],
            "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse",
        ),
    ];
    for (model, env, path) in cases {
        server.push(Reply::text("four"));
        let model_arg = model.to_owned();
        let out = tokio::task::spawn_blocking(move || {
            agno().envs(env).args(["run", "--model", &model_arg, "What is 2+2?"]).output().unwrap()
        })
        .await
        .unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{model}: {stderr}");
        assert_eq!(stdout.trim(), "four", "{model}");
        assert_eq!(server.requests().last().unwrap().path, path, "{model}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_and_documents_go_to_the_model_as_its_media_blocks() {
    use base64::Engine as _;
    let server = FakeProvider::start().await.unwrap();
    server.push(Reply::text("a red square"));
    let dir = std::env::temp_dir().join(format!("agno-cli-media-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (image, pdf) = (dir.join("square.png"), dir.join("notes.pdf"));
    std::fs::write(&image, b"\x89PNG\r\n\x1a\nfake image bytes").unwrap();
    std::fs::write(&pdf, b"%PDF-1.4 fake document").unwrap();
    let root = server.root_url();
    let args = [
        "run".to_owned(),
        "--model".into(),
        "anthropic:claude-sonnet-4-5".into(),
        "--image".into(),
        image.display().to_string(),
        "--file".into(),
        pdf.display().to_string(),
        "What is in these?".into(),
    ];
    let out = tokio::task::spawn_blocking(move || {
        agno().env("ANTHROPIC_BASE_URL", root).env("ANTHROPIC_API_KEY", "k").args(args).output().unwrap()
    })
    .await
    .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), "a red square");
    let content = server.requests()[0].body["messages"][0]["content"].clone();
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    assert_eq!(content[0]["text"], "What is in these?");
    assert_eq!(
        content[1]["source"],
        serde_json::json!({"type": "base64", "media_type": "image/png", "data": b64(b"\x89PNG\r\n\x1a\nfake image bytes")})
    );
    assert_eq!(content[2]["type"], "document");
    assert_eq!(content[2]["source"]["data"], b64(b"%PDF-1.4 fake document"));

    let bad = dir.join("clip.mp4");
    std::fs::write(&bad, b"x").unwrap();
    let out = agno().args(["run", "--image", &bad.display().to_string(), "hi"]).output().unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success() && stderr.contains("use a png, jpg, gif or webp image"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unknown_provider_is_named_once_with_the_known_ones() {
    let out = agno().args(["run", "--model", "nope:x", "hi"]).output().unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert_eq!(stderr.matches("unknown model provider \"nope\"").count(), 1, "the cause once: {stderr}");
    assert!(stderr.contains("anthropic") && stderr.contains("use --model test"), "{stderr}");
}

#[test]
fn chat_answers_each_line_and_exits_on_command() {
    let mut child = agno()
        .args(["chat", "--model", "test"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.as_mut().unwrap().write_all(b"first message\nsecond message\n/exit\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("answering: first message"), "{stdout}");
    assert!(stdout.contains("answering: second message"), "{stdout}");
    assert!(stderr.contains("Type /exit"), "{stderr}");
}

#[test]
fn help_explains_commands() {
    let out = agno().arg("--help").output().unwrap();
    let (stdout, _) = text(&out);
    for needle in ["run", "chat", "provider:model_id", "OPENAI_API_KEY"] {
        assert!(stdout.contains(needle), "{needle} missing from help:\n{stdout}");
    }
}

#[test]
fn serve_refuses_an_open_os_on_a_public_address() {
    let out = agno().args(["serve", "--host", "0.0.0.0", "--port", "0"]).output().unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("--insecure") && stderr.contains("[auth]"), "{stderr}");
}

/// Submits a background run (`stream=false`) of agent `slow` to the replica on `port`; asserts the
/// 202 and returns the run id.
async fn submit_background(port: u16, message: &str) -> String {
    let form = reqwest::multipart::Form::new()
        .text("message", message.to_owned())
        .text("stream", "false")
        .text("background", "true");
    let resp = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/agents/slow/runs"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 202);
    resp.json::<serde_json::Value>().await.unwrap()["run_id"].as_str().unwrap().to_owned()
}

/// Waits (bounded) until the fake model received its first request.
async fn wait_model_called(provider: &FakeProvider) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while provider.request_count() == 0 {
        assert!(std::time::Instant::now() < deadline, "no replica called the model");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

async fn run_status(port: u16, run_id: &str) -> serde_json::Value {
    get_json(port, &format!("/agents/slow/runs/{run_id}")).await
}

/// `kill -9` of the replica running a background run: another replica on the same database ends
/// the run — ERROR with the reason at max_attempts = 1, COMPLETED by a retry at max_attempts = 3.
async fn killed_replica(max_attempts: u32, expected: &str) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!("agno-kill-{}-{}", std::process::id(), max_attempts));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join(format!("os-{}.db", agno::core::new_id())).display());
    killed_replica_on(&url, &dir, max_attempts, expected).await
}

async fn killed_replica_on(
    db_url: &str,
    dir: &std::path::Path,
    max_attempts: u32,
    expected: &str,
) -> serde_json::Value {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("finished after all")));
    provider.set_latency(std::time::Duration::from_millis(1500));
    let config = dir.join(format!("agentos-{max_attempts}.toml"));
    std::fs::write(
        &config,
        format!(
            "[db]\nurl = \"{db_url}\"\n[queue]\nmax_attempts = {max_attempts}\nlock_grace_seconds = 2\n\
             retry_delay_seconds = 0\npoll_interval_ms = 50\n[[agents]]\nid = \"slow\"\n\
             model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
            provider.base_url()
        ),
    )
    .unwrap();
    let (mut first, port) = start_serve(&config).await;
    let run_id = submit_background(port, "survive").await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while run_status(port, &run_id).await["status"] != "RUNNING" {
        assert!(std::time::Instant::now() < deadline, "the run never started");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    first.kill().unwrap(); // SIGKILL: no drain, no final write
    first.wait().unwrap();

    let (mut second, port) = start_serve(&config).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let run = loop {
        let run = run_status(port, &run_id).await;
        if run["status"] == expected {
            break run;
        }
        assert!(std::time::Instant::now() < deadline, "the run stayed {}: {run}", run["status"]);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let _ = Command::new("kill").args(["-TERM", &second.id().to_string()]).status();
    second.wait().unwrap();
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replica_leaves_its_background_run_in_error_at_one_attempt() {
    let run = killed_replica(1, "ERROR").await;
    assert!(run["content"].as_str().unwrap().contains("lease"), "{run}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replicas_background_run_is_retried_to_completion_with_attempts_left() {
    let run = killed_replica(3, "COMPLETED").await;
    assert_eq!(run["content"], "finished after all");
}

/// The same kill -9 on PostgreSQL, where replicas share the queue through SKIP LOCKED claims.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_killed_replicas_run_ends_in_error_or_is_retried() {
    let dir = std::env::temp_dir().join(format!("agno-kill-pg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let Some(k1) = postgres_schema("k1") else { return };
    let Some(k3) = postgres_schema("k3") else { return };
    let run = killed_replica_on(&k1.url, &dir, 1, "ERROR").await;
    assert!(run["content"].as_str().unwrap().contains("lease"), "{run}");
    let run = killed_replica_on(&k3.url, &dir, 3, "COMPLETED").await;
    assert_eq!(run["content"], "finished after all");
}

/// Three replicas on one PostgreSQL database share the work submitted to one of them. Each runs at
/// most two runs at once and every run holds its worker for 1.5 s, so six runs executing together
/// can only mean that all three replicas claimed work; the test waits for that moment (and checks
/// it by the jobs' `locked_by`), then for every run to complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_one_postgres_database_share_background_work() {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("shared")));
    provider.set_latency(std::time::Duration::from_millis(1500));
    let dir = std::env::temp_dir().join(format!("agno-share-pg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let Some(schema) = postgres_schema("share") else { return };
    let config = dir.join("agentos.toml");
    std::fs::write(
        &config,
        format!(
            "[db]\nurl = \"{}\"\n[queue]\nmax_concurrency = 2\npoll_interval_ms = 50\n[[agents]]\nid = \"slow\"\n\
             model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
            schema.url,
            provider.base_url()
        ),
    )
    .unwrap();
    // One after the other: the first creates the tables.
    let mut replicas = Vec::new();
    let mut worker_ids = std::collections::HashSet::new();
    for _ in 0..3 {
        let (child, port) = start_serve(&config).await;
        let stats = get_json(port, "/queue/stats").await;
        worker_ids.insert(stats["worker_id"].as_str().unwrap().to_owned());
        replicas.push((child, port));
    }
    assert_eq!(worker_ids.len(), 3, "each replica has its own worker id: {worker_ids:?}");
    let ports: Vec<u16> = replicas.iter().map(|(_, port)| *port).collect();

    let mut run_ids = Vec::new();
    for i in 0..12 {
        run_ids.push(submit_background(ports[0], &format!("job {i}")).await);
    }
    // Six running at once: two per replica, the most each may hold.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let holders = loop {
        let running = get_json(ports[1], "/queue/jobs?status=running&limit=100").await;
        let holders: Vec<String> = running["data"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|job| job["locked_by"].as_str().map(str::to_owned))
            .collect();
        if holders.len() == 6 {
            break holders;
        }
        assert!(std::time::Instant::now() < deadline, "never six runs at once; running now: {holders:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let distinct: std::collections::HashSet<&String> = holders.iter().collect();
    assert!(distinct.iter().all(|w| worker_ids.contains(*w)), "{holders:?} are the replicas' workers {worker_ids:?}");
    assert_eq!(distinct.len(), 3, "work landed on every replica, two runs each: {holders:?}");

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let stats = get_json(ports[2], "/queue/stats").await;
        if stats["jobs"]["completed"] == 12 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "runs did not complete: {stats}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    for (id, port) in run_ids.iter().zip(ports.iter().cycle()) {
        let run = run_status(*port, id).await;
        assert_eq!(run["status"], "COMPLETED", "{run}");
        assert_eq!(run["content"], "shared");
    }
    for (child, _) in &mut replicas {
        let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        child.wait().unwrap();
    }
}

/// A cancel sent to replica B stops a background run executing on replica A, through the
/// database alone: A's worker stops the run (told by LISTEN/NOTIFY, or at its next heartbeat) and
/// records it CANCELLED, and nothing A writes afterwards overwrites the outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_on_one_replica_stops_a_run_on_another() {
    let Some(schema) = postgres_schema("cancel") else { return };
    cancel_across_replicas(&schema.url, "lock_grace_seconds = 2").await;
}

/// With a 60 s lease the next heartbeat is 20 s away: only the notification can stop A's run
/// before A's shutdown (which would otherwise wait 30 s for it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_reaches_the_other_replica_by_notification() {
    let Some(schema) = postgres_schema("cancel") else { return };
    cancel_across_replicas(&schema.url, "lock_grace_seconds = 60").await;
}

/// Two processes on one SQLite file: no notifications, the next heartbeat 20 s away; the
/// cancel reaches the running process through its cancelled-jobs poll.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_a_cancel_reaches_the_other_process_by_its_poll() {
    let dir = std::env::temp_dir().join(format!("agno-cancel-sqlite-{}-{}", std::process::id(), agno::core::new_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join("os.db").display());
    cancel_across_replicas(&url, "lock_grace_seconds = 60").await;
}

/// The same with the poll a minute apart: only Redis can carry the cancel in time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_a_cancel_reaches_the_other_process_through_redis() {
    let Some(redis) = PrivateRedis::start().await else { return };
    let dir = std::env::temp_dir().join(format!("agno-cancel-redis-{}-{}", std::process::id(), agno::core::new_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join("os.db").display());
    let queue = format!("lock_grace_seconds = 60\ncancel_poll_ms = 60000\nredis = \"{}\"", redis.url);
    cancel_across_replicas(&url, &queue).await;
}

/// A run held in a model call on replica A is cancelled through replica B; `queue` is the
/// `[queue]` settings beside a 50 ms work poll.
async fn cancel_across_replicas(db_url: &str, queue: &str) {
    let provider = FakeProvider::start().await.unwrap();
    provider.push(Reply::Delayed(std::time::Duration::from_secs(600), Box::new(Reply::text("never"))));
    let dir = std::env::temp_dir().join(format!("agno-cancel-{}-{}", std::process::id(), agno::core::new_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("agentos.toml");
    std::fs::write(
        &config,
        format!(
            "[db]\nurl = \"{db_url}\"\n[queue]\n{queue}\npoll_interval_ms = 50\n[[agents]]\nid = \"slow\"\n\
             model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
            provider.base_url()
        ),
    )
    .unwrap();
    let (mut a, port_a) = start_serve(&config).await;
    let run_id = submit_background(port_a, "long").await;
    wait_model_called(&provider).await;
    let (mut b, port_b) = start_serve(&config).await;
    let resp = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port_b}/agents/slow/runs/{run_id}/cancel"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    // A's worker stops the run and records it CANCELLED (with what it had produced).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while run_status(port_b, &run_id).await["status"] != "CANCELLED" {
        assert!(std::time::Instant::now() < deadline, "the run was never stopped");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    // A noticed (through the notification or its lease) and stopped the run and stops the run, so it shuts down without waiting for it.
    let _ = Command::new("kill").args(["-TERM", &a.id().to_string()]).status();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while a.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "replica A still runs the cancelled run");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(run_status(port_b, &run_id).await["status"], "CANCELLED", "A wrote nothing over the outcome");
    let job: serde_json::Value = get_json(port_b, &format!("/queue/jobs/{run_id}")).await;
    assert_eq!(job["status"], "cancelled");
    let _ = Command::new("kill").args(["-TERM", &b.id().to_string()]).status();
    b.wait().unwrap();
}

/// The SSE frames of a resume request on `port`, read to the end of the stream: `(id, event,
/// data)`.
async fn resume_frames(port: u16, run_id: &str, last_event_id: Option<&str>) -> Vec<(String, String, String)> {
    use futures::StreamExt;
    let mut req = reqwest::Client::new().post(format!("http://127.0.0.1:{port}/agents/slow/runs/{run_id}/resume"));
    if let Some(id) = last_event_id {
        req = req.header("Last-Event-ID", id);
    }
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let mut stream = eventsource_stream::EventStream::new(resp.bytes_stream());
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    while let Ok(Some(ev)) = tokio::time::timeout_at(deadline, stream.next()).await {
        let ev = ev.unwrap();
        out.push((ev.id, ev.event, ev.data));
    }
    assert!(tokio::time::Instant::now() < deadline, "the tail never ended: {out:?}");
    out
}

/// A run executing on one replica is tailed from another through the database log alone; the
/// executing replica is killed with `kill -9`; the survivor retries the run (attempt 2) and the
/// same tail follows it to the end: event ids run on without a gap or a repeat, and a resume with
/// `Last-Event-ID` from any replica yields exactly the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tail_on_another_replica_survives_the_kill_of_the_executing_one() {
    let provider = FakeProvider::start().await.unwrap();
    // The first attempt hangs in the model; the retry answers.
    provider.push(Reply::Delayed(std::time::Duration::from_secs(600), Box::new(Reply::text("never"))));
    provider.set_fallback(Some(Reply::text("answered by the survivor")));
    let dir = std::env::temp_dir().join(format!("agno-tail-pg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let Some(schema) = postgres_schema("tail") else { return };
    let config = dir.join("agentos.toml");
    std::fs::write(
        &config,
        format!(
            "[db]\nurl = \"{}\"\n[queue]\nmax_attempts = 3\nlock_grace_seconds = 3\nretry_delay_seconds = 0\n\
             poll_interval_ms = 50\n[[agents]]\nid = \"slow\"\n\
             model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
            schema.url,
            provider.base_url()
        ),
    )
    .unwrap();
    let (a, port_a) = start_serve(&config).await;
    let run_id = submit_background(port_a, "survive").await;
    wait_model_called(&provider).await;
    // B tails the run A executes, from the start.
    let (b, port_b) = start_serve(&config).await;
    let tail = tokio::spawn({
        let run_id = run_id.clone();
        async move { resume_frames(port_b, &run_id, None).await }
    });
    // Wait until attempt 1's first events are in the log B's tail reads, then kill A.
    let jobs = agno::db::Migrate::job_store(agno::db::open(&schema.url).await.unwrap()).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while agno::core::JobStore::read_events(jobs.as_ref(), &run_id, -1, 1).await.unwrap().is_empty() {
        assert!(std::time::Instant::now() < deadline, "attempt 1 logged no event");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(get_json(port_b, &format!("/queue/jobs/{run_id}")).await["attempt"], 1);
    let mut a = a;
    a.kill().unwrap();
    a.wait().unwrap();

    let frames = tail.await.unwrap();
    let ids: Vec<u64> = frames.iter().map(|(id, _, _)| id.parse().unwrap()).collect();
    assert_eq!(ids, (0..ids.len() as u64).collect::<Vec<_>>(), "no gap and no repeat: {frames:?}");
    let starts = frames.iter().filter(|(_, e, _)| e == "RunStarted").count();
    assert_eq!(starts, 2, "attempt 1 (killed) and attempt 2 (retry) both in the log: {frames:?}");
    assert_eq!(frames.last().map(|(_, e, _)| e.as_str()), Some("RunCompleted"), "{frames:?}");
    assert_eq!(run_status(port_b, &run_id).await["status"], "COMPLETED");
    let job: serde_json::Value = get_json(port_b, &format!("/queue/jobs/{run_id}")).await;
    assert_eq!((job["status"].as_str(), job["attempt"].as_i64()), (Some("completed"), Some(2)));

    // Any replica resumes after any event with exactly the rest.
    let (_c, port_c) = start_serve(&config).await;
    let k = ids.len() / 2;
    let rest = resume_frames(port_c, &run_id, Some(&k.to_string())).await;
    assert_eq!(rest, frames[k + 1..].to_vec());
    drop(b);
}

/// A Redis server of the test's own (so stopping it disturbs nothing else), killed on drop;
/// `None` (the test skipped, failing under `CI=true`) without `redis-server` on `PATH`.
struct PrivateRedis {
    child: std::process::Child,
    url: String,
}

impl PrivateRedis {
    async fn start() -> Option<Self> {
        if !agno_testkit::services::program("agno-cli test with a private Redis", "redis-server") {
            return None;
        }
        let port = free_port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server (Debian package redis-server) must be installed");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "redis-server did not start");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        Some(Self { child, url: format!("redis://127.0.0.1:{port}") })
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two processes on one SQLite file with Redis coordination; returns them (the one executing
/// `run_id` first) after submitting a background run.
async fn sqlite_pair_with_redis(
    dir: &std::path::Path,
    redis: &str,
    poll_ms: u64,
    provider: &FakeProvider,
) -> ((Served, u16), (Served, u16), String) {
    let url = format!("sqlite://{}", dir.join(format!("os-{poll_ms}.db")).display());
    pair_with_redis(dir, &url, redis, poll_ms, provider).await
}

/// Two processes on the database at `db_url` with Redis coordination; returns them (the one
/// executing `run_id` first) after submitting a background run.
async fn pair_with_redis(
    dir: &std::path::Path,
    db_url: &str,
    redis: &str,
    poll_ms: u64,
    provider: &FakeProvider,
) -> ((Served, u16), (Served, u16), String) {
    let config = dir.join(format!("agentos-{poll_ms}.toml"));
    std::fs::write(
        &config,
        format!(
            "[db]\nurl = \"{db_url}\"\n[queue]\npoll_interval_ms = {poll_ms}\nredis = \"{redis}\"\n\
             [[agents]]\nid = \"slow\"\n\
             model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
            provider.base_url()
        ),
    )
    .unwrap();
    let first = start_serve(&config).await;
    let second = start_serve(&config).await;
    let run_id = submit_background(first.1, "coordinate").await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let owner = loop {
        let job = get_json(first.1, &format!("/queue/jobs/{run_id}")).await;
        if !job["locked_by"].is_null() {
            break job["locked_by"].clone();
        }
        assert!(std::time::Instant::now() < deadline, "nobody claimed the run");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    if get_json(first.1, "/queue/stats").await["worker_id"] == owner {
        (first, second, run_id)
    } else {
        (second, first, run_id)
    }
}

/// With Redis, a tail on another process of a shared SQLite file follows the run at once even
/// though its poll is a minute: the events' wake-ups travel through Redis (without them this test
/// misses its deadline).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_carries_event_wakeups_between_processes() {
    let Some(redis) = PrivateRedis::start().await else { return };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("coordinated")));
    provider.set_latency(std::time::Duration::from_millis(1500));
    let dir = std::env::temp_dir().join(format!("agno-redis-wake-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (_owner, (_other, other_port), run_id) = sqlite_pair_with_redis(&dir, &redis.url, 60_000, &provider).await;
    let started = std::time::Instant::now();
    let frames = resume_frames(other_port, &run_id, None).await;
    assert_eq!(frames.last().map(|(_, e, _)| e.as_str()), Some("RunCompleted"), "{frames:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "the tail waited for its poll");
    assert_eq!(run_status(other_port, &run_id).await["status"], "COMPLETED");
}

/// Redis is coordination, never truth: stopped in the middle of a run that another process
/// tails, the run completes, the tail falls back to the database and ends, a resume with
/// `Last-Event-ID` yields exactly the rest, and new submissions still run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_completes_and_resumes_from_the_db_when_redis_stops_mid_stream() {
    let dir = std::env::temp_dir().join(format!("agno-redis-down-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    redis_stops_mid_stream(&dir, &format!("sqlite://{}", dir.join("os.db").display())).await;
}

/// The same on PostgreSQL (where `NOTIFY` also carries the hints).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_run_completes_and_resumes_when_redis_stops_mid_stream() {
    let dir = std::env::temp_dir().join(format!("agno-redis-down-pg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let Some(schema) = postgres_schema("redisdown") else { return };
    redis_stops_mid_stream(&dir, &schema.url).await;
}

async fn redis_stops_mid_stream(dir: &std::path::Path, db_url: &str) {
    let Some(mut redis) = PrivateRedis::start().await else { return };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("despite redis")));
    provider.set_latency(std::time::Duration::from_millis(1500));
    let ((_owner, owner_port), (_other, other_port), run_id) =
        pair_with_redis(dir, db_url, &redis.url, 200, &provider).await;
    let tail = tokio::spawn({
        let run_id = run_id.clone();
        async move { resume_frames(other_port, &run_id, None).await }
    });
    // Mid-stream: the run is in its model call when Redis goes away.
    wait_model_called(&provider).await;
    redis.child.kill().unwrap();
    redis.child.wait().unwrap();

    let frames = tail.await.unwrap();
    assert_eq!(frames.last().map(|(_, e, _)| e.as_str()), Some("RunCompleted"), "{frames:?}");
    let ids: Vec<u64> = frames.iter().map(|(id, _, _)| id.parse().unwrap()).collect();
    assert_eq!(ids, (0..ids.len() as u64).collect::<Vec<_>>());
    assert_eq!(run_status(other_port, &run_id).await["status"], "COMPLETED");
    let rest = resume_frames(owner_port, &run_id, Some("0")).await;
    assert_eq!(rest, frames[1..].to_vec(), "the log in the database is whole");

    // Without Redis, a new submission is still accepted and completed.
    let next = submit_background(other_port, "after").await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while run_status(other_port, &next).await["status"] != "COMPLETED" {
        assert!(std::time::Instant::now() < deadline, "the run after Redis stopped never completed");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
