//! Workflows across `agno serve` processes: a run paused for review on one process is continued
//! over HTTP on another process sharing the database (SQLite file, and PostgreSQL), even after the
//! first process is gone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{get_json, scratch_dir, start_serve};
use serde_json::{Value, json};

fn config(dir: &std::path::Path, db_url: &str) -> std::path::PathBuf {
    let path = dir.join("agentos.toml");
    std::fs::write(
        &path,
        format!(
            r#"
[db]
url = "{db_url}"
[[agents]]
id = "writer"
model = "test"
[[workflows]]
id = "publish"
[[workflows.steps]]
name = "draft"
agent = "writer"
[[workflows.steps]]
name = "approve"
agent = "writer"
human_review = {{ requires_confirmation = true, confirmation_message = "Publish?" }}
[[workflows.steps]]
name = "announce"
agent = "writer"
"#
        ),
    )
    .unwrap();
    path
}

async fn post_form(port: u16, path: &str, fields: &[(&str, &str)]) -> (u16, Value) {
    let mut form = reqwest::multipart::Form::new();
    for (k, v) in fields {
        form = form.text((*k).to_owned(), (*v).to_owned());
    }
    let resp =
        reqwest::Client::new().post(format!("http://127.0.0.1:{port}{path}")).multipart(form).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn paused_on_one_process_continued_on_another(db_url: &str, dir: &std::path::Path) {
    let config = config(dir, db_url);
    let (mut first, first_port) = start_serve(&config).await;
    let (_second, second_port) = start_serve(&config).await;
    let (status, run) = post_form(
        first_port,
        "/workflows/publish/runs",
        &[("message", "launch"), ("stream", "false"), ("session_id", "x")],
    )
    .await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "PAUSED");
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    // The process that paused it is gone.
    first.kill().unwrap();
    first.wait().unwrap();
    let mut yes = run["step_requirements"][0].clone();
    yes["confirmed"] = json!(true);
    let (status, done) = post_form(
        second_port,
        &format!("/workflows/publish/runs/{run_id}/continue"),
        &[("step_requirements", &json!([yes]).to_string()), ("session_id", "x"), ("stream", "false")],
    )
    .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "COMPLETED");
    let steps: Vec<&str> =
        done["step_results"].as_array().unwrap().iter().map(|s| s["step_name"].as_str().unwrap()).collect();
    assert_eq!(steps, ["draft", "approve", "announce"]);
    let draft_run = done["step_executor_runs"][0]["run_id"].clone();
    assert_eq!(
        draft_run, run["step_executor_runs"][0]["run_id"],
        "the draft from the first process was kept, not redone"
    );
    let stored = get_json(second_port, &format!("/workflows/publish/runs/{run_id}?session_id=x")).await;
    assert_eq!(stored["status"], "COMPLETED");
    assert_eq!(stored["content"], done["content"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_a_workflow_paused_on_one_process_is_continued_on_another() {
    let dir = scratch_dir("wf-replicas");
    let db_url = format!("sqlite://{}", dir.join("shared.db").display());
    paused_on_one_process_continued_on_another(&db_url, &dir).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_workflow_paused_on_one_process_is_continued_on_another() {
    let Some(schema) = common::postgres_schema("wf_replicas") else { return };
    let dir = scratch_dir("wf-replicas-pg");
    paused_on_one_process_continued_on_another(&schema.url, &dir).await;
}

/// The last user message of a recorded model request.
fn last_user(req: &agno_testkit::RecordedRequest) -> String {
    req.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// A background workflow of four agent steps whose replica is killed (`kill -9`) while step 3's
/// model call is in flight: the retry on another replica resumes at step 3, and steps 1 and 2
/// ran once (each step's prompt reached the model exactly once, but step 3's, which was asked
/// again).
async fn a_killed_workflow_resumes_after_its_last_completed_step(db_url: &str, dir: &std::path::Path) {
    let provider = agno_testkit::FakeProvider::start().await.unwrap();
    provider.push_all([
        agno_testkit::Reply::text("one"),
        agno_testkit::Reply::text("two"),
        agno_testkit::Reply::Delayed(std::time::Duration::from_secs(120), Box::new(agno_testkit::Reply::text("late"))),
    ]);
    provider.set_fallback(Some(agno_testkit::Reply::Echo));
    let config = dir.join("agentos.toml");
    let steps: String =
        (1..=4).map(|i| format!("[[workflows.steps]]\nname = \"s{i}\"\nagent = \"writer\"\n")).collect();
    std::fs::write(
        &config,
        format!(
            "[db]\nurl = \"{db_url}\"\n[queue]\nlock_grace_seconds = 2\nmax_attempts = 2\npoll_interval_ms = 100\nretry_delay_seconds = 0\n\
             [[agents]]\nid = \"writer\"\n\
             model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n\
             [[workflows]]\nid = \"four\"\n{steps}",
            provider.base_url()
        ),
    )
    .unwrap();
    let (mut a, a_port) = start_serve(&config).await;
    let (status, accepted) = post_form(
        a_port,
        "/workflows/four/runs",
        &[("message", "launch"), ("stream", "false"), ("background", "true")],
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let run_id = accepted["run_id"].as_str().unwrap().to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while provider.request_count() < 3 {
        assert!(std::time::Instant::now() < deadline, "step 3 never started");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    a.kill().unwrap();
    a.wait().unwrap();
    let (_b, b_port) = start_serve(&config).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let run = loop {
        let run = get_json(b_port, &format!("/workflows/four/runs/{run_id}")).await;
        if run["status"] == "COMPLETED" {
            break run;
        }
        assert!(std::time::Instant::now() < deadline, "the retried run never completed: {run}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let asked: Vec<String> = provider.requests().iter().map(last_user).collect();
    assert_eq!(asked, ["launch", "one", "two", "two", "echo: two"], "steps 1-2 ran once; step 3 was asked again");
    let steps: Vec<&str> =
        run["step_results"].as_array().unwrap().iter().map(|s| s["content"].as_str().unwrap()).collect();
    assert_eq!(steps, ["one", "two", "echo: two", "echo: echo: two"]);
    let job = get_json(b_port, &format!("/queue/jobs/{run_id}")).await;
    assert_eq!(job["attempt"], 2, "{job}");
    assert_eq!(job["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_a_killed_background_workflow_resumes_after_its_last_completed_step() {
    let dir = scratch_dir("wf-kill");
    let db_url = format!("sqlite://{}", dir.join("shared.db").display());
    a_killed_workflow_resumes_after_its_last_completed_step(&db_url, &dir).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_killed_background_workflow_resumes_after_its_last_completed_step() {
    let Some(schema) = common::postgres_schema("wf_kill") else { return };
    let dir = scratch_dir("wf-kill-pg");
    a_killed_workflow_resumes_after_its_last_completed_step(&schema.url, &dir).await;
}

/// `agno run --config F --workflow ID` answers a review pause from the terminal (stdin).
#[test]
fn agno_run_answers_a_workflow_review_at_the_terminal() {
    use std::io::Write;
    let dir = scratch_dir("wf-run-cli");
    let config = config(&dir, &format!("sqlite://{}", dir.join("cli.db").display()));
    let run = |answer: &str| {
        let mut child = common::agno()
            .args(["run", "--config", config.to_str().unwrap(), "--workflow", "publish", "launch"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(answer.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    let yes = run("y\n");
    let stderr = String::from_utf8_lossy(&yes.stderr);
    assert!(yes.status.success(), "{stderr}");
    assert!(stderr.contains("Publish? [y/n]"), "the question was asked: {stderr}");
    let stdout = String::from_utf8_lossy(&yes.stdout);
    assert!(stdout.contains("This is the test model answering"), "{stdout}");
    // Rejected (on_reject skip, Agno's default): the step is skipped and the run completes.
    let no = run("n\n");
    assert!(no.status.success(), "{}", String::from_utf8_lossy(&no.stderr));
    // No answer at all: a clear error, exit 1.
    let none = run("");
    assert_eq!(none.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("gave no answer"),
        "{}",
        String::from_utf8_lossy(&none.stderr)
    );
    // An unknown workflow names the ones there are.
    let out =
        common::agno().args(["run", "--config", config.to_str().unwrap(), "--workflow", "nope", "x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(r#"no workflow "nope" (it has: publish)"#));
}

/// A workflow whose agent step pauses on a tool needing confirmation asks at the terminal.
#[test]
fn agno_run_answers_an_agent_tool_pause_inside_a_workflow_step() {
    use std::io::Write;
    let dir = scratch_dir("wf-run-exec");
    let config = dir.join("agentos.toml");
    std::fs::write(
        &config,
        format!(
            "[db]\nurl = \"sqlite://{}\"\n[[agents]]\nid = \"writer\"\nmodel = \"test\"\n\
             tools = [{{ toolkit = \"file\", base_dir = \"{}\", requires_confirmation_tools = [\"save_file\"] }}]\n\
             [[workflows]]\nid = \"save\"\n[[workflows.steps]]\nname = \"write\"\nagent = \"writer\"\n",
            dir.join("exec.db").display(),
            dir.display()
        ),
    )
    .unwrap();
    let mut child = common::agno()
        .args(["run", "--config", config.to_str().unwrap(), "--workflow", "save", "save a note"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"n\nn\nn\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("step \"write\": run save_file("),
        "the agent's tool call was put to the terminal: {stderr}"
    );
}

/// Runs `agno run` with `args`, writing `answers` to its stdin; waits off the runtime (a fake
/// provider may serve it from this process).
async fn run_at_terminal(args: Vec<String>, answers: &'static str) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut child = common::agno()
            .args(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(answers.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap()
}

/// A review inside a nested workflow is asked at the terminal as the outer workflow's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agno_run_answers_a_review_inside_a_nested_workflow() {
    let dir = scratch_dir("wf-run-nested");
    let config = dir.join("agentos.toml");
    std::fs::write(
        &config,
        format!(
            "[db]\nurl = \"sqlite://{}\"\n[[agents]]\nid = \"writer\"\nmodel = \"test\"\n\
             [[workflows]]\nid = \"inner\"\n[[workflows.steps]]\nname = \"publish\"\nagent = \"writer\"\n\
             human_review = {{ requires_confirmation = true, confirmation_message = \"Publish inside?\" }}\n\
             [[workflows]]\nid = \"outer\"\n[[workflows.steps]]\nname = \"nested\"\nworkflow = \"inner\"\n",
            dir.join("nested.db").display()
        ),
    )
    .unwrap();
    let args = ["run", "--config", config.to_str().unwrap(), "--workflow", "outer", "launch"].map(str::to_owned);
    let out = run_at_terminal(args.to_vec(), "y\n").await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("Publish inside? [y/n]"), "the nested review was put to the terminal: {stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("This is the test model answering: launch"));
}

/// `agno run --team` asks at the terminal for a member's tool call that needs confirmation, then
/// the team goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agno_run_answers_a_team_members_tool_pause_at_the_terminal() {
    let provider = agno_testkit::FakeProvider::start().await.unwrap();
    provider.push_all([
        agno_testkit::Reply::ToolCalls {
            content: None,
            calls: vec![(
                "delegate_task_to_member".into(),
                json!({"member_id": "clerk", "task": "save a note"}).to_string(),
            )],
        },
        agno_testkit::Reply::text("the desk is done"),
    ]);
    let dir = scratch_dir("team-run-cli");
    let config = dir.join("agentos.toml");
    std::fs::write(
        &config,
        format!(
            "[db]\nurl = \"sqlite://{0}\"\n[[agents]]\nid = \"clerk\"\nname = \"Clerk\"\nmodel = \"test\"\n\
             tools = [{{ toolkit = \"file\", base_dir = \"{1}\", requires_confirmation_tools = [\"save_file\"] }}]\n\
             [[teams]]\nid = \"desk\"\nmembers = [\"clerk\"]\n\
             model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{2}\", api_key = \"sk\" }}\n",
            dir.join("team.db").display(),
            dir.display(),
            provider.base_url()
        ),
    )
    .unwrap();
    let args = ["run", "--config", config.to_str().unwrap(), "--team", "desk", "note it"].map(str::to_owned);
    let out = run_at_terminal(args.to_vec(), "n\nn\nn\n").await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("team \"desk\" (member Clerk): run save_file("),
        "the member's tool call was put to the terminal: {stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "the desk is done");
    // The leader got the member's answer after the rejection.
    let last = provider.requests().last().unwrap().body.to_string();
    assert!(last.contains("delegate_task_to_member") && last.contains("rejected"), "{last}");
}
