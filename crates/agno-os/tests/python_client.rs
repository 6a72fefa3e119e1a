//! Python Agno 3.1's own client (`agno.client.AgentOSClient`, and `RemoteAgent` on top of it)
//! against a real server: config, agents, runs as JSON and as SSE, run reads, with and without JWT.
//! Needs `AGNO_PYTHON` (a Python with `agno==3.1.*` and `fastapi`); `.ci/run` creates that venv.
//! Without it the tests fail under `CI=true` and say so elsewhere.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use axum::http::Method;
use common::{SECRET, TestOs, config, token};
use serde_json::Value;

const AGENTS: &str = r#"
[db]
url = "memory://"
[[agents]]
id = "echo"
name = "Echo"
model = "test"
[[agents]]
id = "second"
model = "test"
"#;

const MESSAGE: &str = "hello from the agno python client";

fn python() -> Option<String> {
    agno_testkit::agno_python("the Python Agno client check")
}

/// Runs `scripts/interop/agno_client_check.py` against `os` and returns its JSON line.
async fn check(py: &str, os: &TestOs, args: &[&str]) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/agno_client_check.py");
    let run = tokio::process::Command::new(py).arg(script).arg(&os.base).args(args).kill_on_drop(true).output();
    let out = tokio::time::timeout(Duration::from_secs(180), run).await.expect("the client check ends").unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "python failed: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| panic!("no JSON line: {stderr}"));
    let result: Value = serde_json::from_str(last).unwrap();
    assert_no_errors(&result, &stderr);
    result
}

/// Every step succeeded, except the session-run reads while this server has no `/sessions` routes.
fn assert_no_errors(result: &Value, stderr: &str) {
    let sessions_served = agno_os::routes::find_route(&Method::GET, "/sessions/{session_id}/runs").is_some();
    for (step, error) in result["errors"].as_object().unwrap() {
        let session_read = step == "get_session_runs" || step == "get_session_run";
        let route_absent = error.as_str().is_some_and(|e| e.contains(": 404 GET /sessions/"));
        assert!(session_read && !sessions_served && route_absent, "step {step} failed: {error}\n{stderr}");
    }
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect()
}

/// The assertions every client check shares: the agent `echo` ran in `session`, as JSON and as SSE.
fn assert_runs(result: &Value, session: &str) -> (String, String) {
    assert_eq!(strs(&result["config"]["agent_ids"]), ["echo", "second"]);
    let listed: Vec<&str> = result["agents"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(listed, ["echo", "second"]);
    assert_eq!(result["agent"]["id"], "echo");
    assert_eq!(result["agent"]["model"]["model"], "test");
    assert_eq!(result["aagent_id"], "echo");
    assert_eq!(result["missing_agent_status"], 404);

    // Non-streaming: a RunOutput that Agno reads back field for field.
    let run = &result["run"];
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    assert_eq!(run["status"], "COMPLETED");
    assert_eq!(run["agent_id"], "echo");
    assert_eq!(run["session_id"], session);
    assert_eq!(run["input"], MESSAGE);
    assert!(run["content"].as_str().unwrap().contains(MESSAGE), "the test model echoes: {run}");
    assert_eq!(strs(&run["messages"]), ["user", "assistant"]);
    assert!(run["total_tokens"].as_u64().unwrap() > 0);
    assert_eq!(result["run_roundtrip_diffs"], Value::Array(vec![]), "RunOutput.from_dict keeps every field");

    // Streaming: typed events, none dropped by the client's parser.
    let stream = &result["stream"];
    let events = strs(&stream["events"]);
    assert_eq!(events.first(), Some(&"RunStarted"));
    assert_eq!(events.last(), Some(&"RunCompleted"));
    assert!(events.contains(&"RunContent"));
    assert_eq!(stream["raw_data_lines"].as_u64().unwrap() as usize, events.len(), "the client parsed every event");
    assert_eq!(stream["roundtrip_diffs"], Value::Array(vec![]), "every event is read back field for field");
    let stream_ids = strs(&stream["run_ids"]);
    assert_eq!(stream_ids.len(), 1, "one run id across the stream");
    let stream_run_id = stream_ids[0].to_owned();
    assert_ne!(stream_run_id, run_id);
    assert_eq!(strs(&stream["session_ids"]), [session]);
    let final_content = stream["final_content"].as_str().unwrap();
    assert!(final_content.contains(MESSAGE));
    assert_eq!(stream["streamed_content"], final_content, "the RunContent deltas add up to the final content");

    // Reads: both runs of the session, and the first one by id.
    let listed: BTreeSet<&str> =
        result["agent_runs"].as_array().unwrap().iter().map(|r| r["run_id"].as_str().unwrap()).collect();
    assert_eq!(listed, BTreeSet::from([run_id.as_str(), stream_run_id.as_str()]));
    assert!(result["agent_runs"].as_array().unwrap().iter().all(|r| r["agent_id"] == "echo"));
    assert_eq!(result["agent_run"]["run_id"], run_id.as_str());
    assert_eq!(result["agent_run"]["session_id"], session);
    assert_eq!(result["agent_run"]["content"], run["content"]);
    if let Some(session_runs) = result["session_runs"].as_array() {
        let ids: BTreeSet<&str> = session_runs.iter().map(|r| r["run_id"].as_str().unwrap()).collect();
        assert!(ids.contains(run_id.as_str()) && ids.contains(stream_run_id.as_str()), "{session_runs:?}");
        assert_eq!(result["session_run"]["run_id"], run_id.as_str());
    }

    // RemoteAgent, Agno's agent proxy, runs the agent both ways.
    assert!(result["remote_agent_run"]["content"].as_str().unwrap().contains(MESSAGE));
    let remote_events = strs(&result["remote_agent_stream"]["events"]);
    assert_eq!((remote_events.first(), remote_events.last()), (Some(&"RunStarted"), Some(&"RunCompleted")));
    assert!(result["remote_agent_stream"]["final_content"].as_str().unwrap().contains(MESSAGE));
    (run_id, stream_run_id)
}

#[tokio::test]
async fn agno_client_drives_the_os() {
    let Some(py) = python() else { return };
    let os = TestOs::start(config(&format!("[os]\nid = \"py-client-os\"\nname = \"Py Client OS\"\n{AGENTS}"))).await;
    let result =
        check(&py, &os, &["--agent", "echo", "--message", MESSAGE, "--session-id", "py-s1", "--user-id", "u1"]).await;
    assert_eq!(result["config"]["os_id"], "py-client-os");
    assert_eq!(result["config"]["name"], "Py Client OS");
    assert_eq!(result["aconfig_os_id"], "py-client-os");
    assert_eq!(result["config"]["available_models"][0]["id"], "test");
    let (run_id, _) = assert_runs(&result, "py-s1");
    assert_eq!(result["run"]["user_id"], "u1");

    // The server stored what the client did: its two runs and RemoteAgent's two.
    let stored = os.get("/agents/echo/runs?session_id=py-s1", None).await;
    assert_eq!(stored.body.as_array().unwrap().len(), 4, "{:?}", stored.body);
    let got = os.get(&format!("/agents/echo/runs/{run_id}?session_id=py-s1"), None).await;
    assert_eq!(got.body["user_id"], "u1");
}

fn jwt_config(isolation: bool) -> String {
    format!(
        "[os]\nid = \"py-jwt-os\"\n[auth]\nmode = \"jwt\"\nverification_keys = [\"{SECRET}\"]\n\
         user_isolation = {isolation}\n{AGENTS}"
    )
}

/// The scopes the client's calls need, per Agno's default mapping.
const SCOPES: &[&str] = &["config:read", "agents:read", "agents:run", "sessions:read"];

#[tokio::test]
async fn agno_client_sends_the_token() {
    let Some(py) = python() else { return };
    let os = TestOs::start(config(&jwt_config(false))).await;
    let alice = token("alice", SCOPES);
    let result = check(&py, &os, &["--token", &alice, "--message", MESSAGE, "--session-id", "py-jwt"]).await;
    assert_eq!(result["agent_id"], "echo", "the first listed agent");
    assert_eq!(result["unauthenticated_status"], 401, "the same call without the token is refused");
    assert_runs(&result, "py-jwt");
    assert_eq!(result["run"]["user_id"], "alice", "as Agno, the token's sub is the run's user");
}

#[tokio::test]
async fn agno_client_under_user_isolation() {
    let Some(py) = python() else { return };
    let os = TestOs::start(config(&jwt_config(true))).await;
    let alice = token("alice", SCOPES);
    let args =
        ["--token", &alice, "--agent", "echo", "--message", MESSAGE, "--session-id", "py-iso", "--user-id", "mallory"];
    let result = check(&py, &os, &args).await;
    assert_runs(&result, "py-iso");
    assert_eq!(result["run"]["user_id"], "alice", "the requested user_id gives way to the token's sub");

    // Another user sees none of it.
    let bob = token("bob", SCOPES);
    let theirs = os.get("/agents/echo/runs?session_id=py-iso", Some(&bob)).await;
    assert_eq!(theirs.status, 404, "another user's session is not found: {:?}", theirs.body);
    let run_id = result["run"]["run_id"].as_str().unwrap();
    assert_eq!(os.get(&format!("/agents/echo/runs/{run_id}"), Some(&bob)).await.status, 404);
}

/// Methods of the features that once were missing, each of which must pass.
const SWEPT: &[&str] = &[
    "get_traces",
    "get_trace",
    "get_trace (span)",
    "get_trace_session_stats",
    "search_traces",
    "search_traces (by session)",
    "get_team",
    "aget_team",
    "run_team",
    "run_team_stream",
    "cancel_team_run",
    "get_workflow",
    "aget_workflow",
    "run_workflow",
    "run_workflow_stream",
    "cancel_workflow_run",
    "optimize_memories",
    "run_eval",
    "upload_knowledge_content",
    "get_knowledge_content_status",
    "get_knowledge_content",
    "list_knowledge_content",
    "update_knowledge_content",
    "search_knowledge",
    "get_knowledge_config",
    "delete_knowledge_content",
    "delete_all_knowledge_content",
];

/// Every `AgentOSClient` method whose feature agno-rs has, each answer parsed by Agno's models:
/// config, agents, runs (JSON, SSE, cancel, a paused run continued), sessions (list, read, runs,
/// previews, rename, update, create, delete one and many), memories (CRUD, topics, stats), evals
/// (run, list, bulk delete), metrics (refresh, read, status), traces, migrations, a team and a
/// workflow (get, run, stream, cancel), a knowledge base (every content method). Without auth and
/// with a JWT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agno_client_sweep_passes_every_built_method() {
    let Some(py) = python() else { return };
    let agents = "[db]\nurl = \"memory://\"\n[tracing]\nenabled = true\n[[agents]]\nid = \"echo\"\nmodel = \"test\"\n[[agents]]\nid = \"guarded\"\n\
                  model = \"test\"\ntools = [{ toolkit = \"calculator\", include_tools = [\"add\"], requires_confirmation_tools = [\"add\"] }]\n\
                  [[teams]]\nid = \"desk\"\nmodel = \"test\"\nmembers = [\"echo\"]\n\
                  [[workflows]]\nid = \"flow\"\n[[workflows.steps]]\nname = \"answer\"\nagent = \"echo\"\n\
                  [[knowledge]]\nid = \"docs\"\nembedder = \"hash:64\"\n";
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts/interop/agno_client_sweep.py")
        .canonicalize()
        .unwrap();
    let jwt = format!("[auth]\nmode = \"jwt\"\nverification_keys = [\"{SECRET}\"]\n{agents}");
    for (cfg, token) in [(agents.to_owned(), None), (jwt, Some(token("sweeper", &["agent_os:admin"])))] {
        let os = TestOs::start(config(&cfg)).await;
        let mut args: Vec<String> =
            [os.base.as_str(), "--agent", "echo", "--paused-agent", "guarded", "--team", "desk", "--workflow", "flow"]
                .into_iter()
                .chain(["--knowledge", "docs"])
                .map(str::to_owned)
                .collect();
        if let Some(t) = &token {
            args.extend(["--token".to_owned(), t.clone(), "--user".to_owned(), "sweeper".to_owned()]);
        }
        let mut client = tokio::process::Command::new(&py);
        client.arg(&script).args(&args);
        let (result, _) = common::client_json(client, Duration::from_secs(180)).await;
        assert_eq!(
            result["errors"],
            serde_json::json!({}),
            "AgentOSClient methods failed (token: {})",
            token.is_some()
        );
        let passed: Vec<&str> = result["passed"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        for method in SWEPT {
            assert!(passed.contains(method), "{method} was not swept: {result}");
        }
        assert!(passed.len() >= 59, "only {} methods passed: {result}", passed.len());
    }
}
