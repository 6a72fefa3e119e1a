//! The maintenance commands as a user runs them: `agno db status|migrate [--dry-run]|
//! cleanup-legacy-runs` on a database Python Agno 2.9 wrote, `agno queue stats|list|requeue` on
//! the queue of a real `agno serve`, and `agno chat --db --session-id` keeping a conversation in
//! SQLite across invocations.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::io::Write;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use agno::core::{RunQuery, RunStore};
use agno_testkit::{FakeProvider, Reply};
use common::{agno, get_json, scratch_dir, slow_agent_config, start_serve_logged};

fn run(args: &[&str]) -> (Output, String, String) {
    let out = agno().args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

fn ok(args: &[&str]) -> String {
    let (out, stdout, stderr) = run(args);
    assert!(out.status.success(), "agno {args:?} failed:\n{stdout}\n{stderr}");
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn db_commands_migrate_a_python_agno_2_database() {
    let dir = scratch_dir("dbcmd");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/legacy_v2/agno_v2.sqlite");
    let path = dir.join("legacy.db");
    std::fs::copy(&fixture, &path).unwrap();
    let url = format!("sqlite://{}", path.display());

    let status = ok(&["db", "status", "--db", &url]);
    assert!(status.contains("migrations pending: run `agno db migrate"), "{status}");
    assert!(status.lines().any(|l| l.starts_with("agno_sessions") && l.contains("3.0.0")), "{status}");

    // A dry run prints the planned steps per table and changes nothing.
    let dry = ok(&["db", "migrate", "--db", &url, "--dry-run"]);
    assert!(dry.lines().any(|l| l.starts_with("agno_sessions:") && l.ends_with("3.0.0")), "{dry}");
    assert!(dry.contains("dry run: nothing changed"), "{dry}");
    assert_eq!(ok(&["db", "status", "--db", &url]), status, "the dry run changed nothing");

    let migrated = ok(&["db", "migrate", "--db", &url]);
    assert!(migrated.contains("migrated."), "{migrated}");
    let status = ok(&["db", "status", "--db", &url]);
    assert!(status.contains("schema is current"), "{status}");
    assert!(ok(&["db", "migrate", "--db", &url]).contains("nothing to migrate"));

    // The runs Python wrote are rows now; the legacy column goes only when asked.
    let db = agno::db::SqliteDb::connect(&url).await.unwrap();
    let runs = RunStore::get_runs(&db, &RunQuery::default()).await.unwrap().runs;
    assert!(!runs.is_empty(), "the migrated runs are readable");
    drop(db);
    assert!(ok(&["db", "cleanup-legacy-runs", "--db", &url]).contains("legacy runs column removed"));
    assert!(ok(&["db", "cleanup-legacy-runs", "--db", &url]).contains("no legacy runs column"));

    // Bad input: an unknown scheme says what is supported.
    let (out, _, stderr) = run(&["db", "status", "--db", "oracle://x"]);
    assert!(!out.status.success());
    assert!(stderr.contains("sqlite://"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_commands_show_and_requeue_a_failed_background_run() {
    let provider = FakeProvider::start().await.unwrap();
    provider.push(Reply::Error { status: 400, message: "bad request on purpose".into(), retry_after: None });
    provider.set_fallback(Some(Reply::text("second time lucky")));
    let dir = scratch_dir("queuecmd");
    let url = format!("sqlite://{}", dir.join("os.db").display());
    let config = slow_agent_config(
        &dir,
        "agentos.toml",
        &url,
        &provider.base_url(),
        "[queue]\nmax_attempts = 1\npoll_interval_ms = 50",
    );
    let (mut served, port) = start_serve_logged(&config, &dir.join("serve.log")).await;

    let form = reqwest::multipart::Form::new()
        .text("message", "fails once")
        .text("stream", "false")
        .text("background", "true");
    let resp = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/agents/slow/runs"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 202);
    let run_id = resp.json::<serde_json::Value>().await.unwrap()["run_id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    while get_json(port, &format!("/queue/jobs/{run_id}")).await["status"] != "failed" {
        assert!(Instant::now() < deadline, "the job never failed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let stats = ok(&["queue", "--db", &url, "stats"]);
    assert!(stats.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["failed", "1"]), "{stats}");
    let listed = ok(&["queue", "--db", &url, "list", "--status", "failed"]);
    assert!(listed.contains(&run_id) && listed.contains("1 job(s)"), "{listed}");
    assert!(listed.contains("bad request on purpose"), "the error is shown: {listed}");

    let requeued = ok(&["queue", "--db", &url, "requeue", &run_id]);
    assert!(requeued.contains("requeued"), "{requeued}");
    // The running server picks it up and completes it.
    let deadline = Instant::now() + Duration::from_secs(20);
    while get_json(port, &format!("/agents/slow/runs/{run_id}")).await["status"] != "COMPLETED" {
        assert!(Instant::now() < deadline, "the requeued run never completed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(ok(&["queue", "--db", &url, "stats"]).lines().any(|l| l.starts_with("completed") && l.ends_with(" 1")));

    // Bad input: requeueing a completed or unknown job says why.
    let (out, _, stderr) = run(&["queue", "--db", &url, "requeue", &run_id]);
    assert!(!out.status.success() && stderr.contains("only failed or cancelled"), "{stderr}");
    let (out, _, stderr) = run(&["queue", "--db", &url, "requeue", "no-such-job"]);
    assert!(!out.status.success() && stderr.contains("no job"), "{stderr}");
    let (out, _, stderr) = run(&["queue", "stats"]);
    assert!(!out.status.success() && stderr.contains("--db"), "{stderr}");
    common::sigterm(&served);
    common::wait_exit(&mut served, Duration::from_secs(40)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_keeps_a_conversation_in_sqlite_across_invocations() {
    let dir = scratch_dir("chatdb");
    let url = format!("sqlite://{}", dir.join("chat.db").display());
    for (session, lines) in [
        ("ada", "my name is Ada\n/exit\n"),
        ("ada", "what is my name?\n/exit\n"),
        ("fresh", "what is my name?\n/exit\n"),
    ] {
        let mut child = agno()
            .args(["chat", "--model", "test", "--db", &url, "--session-id", session])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.as_mut().unwrap().write_all(lines.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let db = agno::db::SqliteDb::connect(&url).await.unwrap();
    // In the session's order (run_index): both invocations wrote to one session.
    let session = agno::core::SessionStore::get_session(&db, "ada", None, None).await.unwrap().unwrap();
    let runs = session.runs().to_vec();
    let input = |r: &agno::core::RunOutput| {
        r.input.as_ref().and_then(|i| i.input_content.as_ref()).and_then(|c| c.as_str()).unwrap_or_default().to_owned()
    };
    let inputs: Vec<String> = runs.iter().map(input).collect();
    assert_eq!(inputs, ["my name is Ada", "what is my name?"]);
    // The second run was sent the first as history: its prompt is longer than the same question
    // asked in a fresh session.
    let tokens = |r: &agno::core::RunOutput| r.metrics.as_ref().map_or(0, |m| m.input_tokens);
    let fresh = RunStore::get_runs(&db, &RunQuery { session_id: Some("fresh".into()), ..RunQuery::default() })
        .await
        .unwrap()
        .runs;
    assert_eq!(fresh.len(), 1);
    assert!(tokens(&runs[1]) > tokens(&fresh[0]), "{} vs {}", tokens(&runs[1]), tokens(&fresh[0]));
}
