//! The `agno` binary end to end: `run` and `chat` on the offline test model and against the fake
//! OpenAI server, and clear failures for bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

use agno_testkit::{FakeProvider, Reply};

fn agno() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agno"));
    cmd.env_remove("AGNO_MODEL").env_remove("OPENAI_API_KEY").env_remove("OPENAI_BASE_URL");
    cmd
}

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
