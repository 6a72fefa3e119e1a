//! Interop with Python Agno 3.1.x on SQLite: Agno reads sessions and runs written by agno-rs, and
//! agno-rs reads what Agno wrote. Needs `AGNO_PYTHON` (a Python with `agno==3.1.*`); `.ci/run`
//! creates that venv. Without it the tests fail under `CI=true` and say so elsewhere.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::PathBuf;
use std::process::Command;

use agno_core::{
    AgentSession, Message, RunOutput, RunStatus, RunStore, SessionStore, StateUpdate, ToolCall, ToolExecution,
};
use agno_db::SqliteDb;
use serde_json::{Value, json};

fn python() -> Option<String> {
    agno_testkit::agno_python("the Python Agno interop check on SQLite")
}

fn probe(py: &str, args: &[&str]) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/agno_interop.py");
    let out = Command::new(py).arg(script).args(args).output().expect("python runs");
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().rev().find(|l| l.starts_with('{')).expect("json line");
    serde_json::from_str(last).unwrap()
}

async fn fresh_db() -> (SqliteDb, PathBuf) {
    let dir = std::env::temp_dir().join("agno-rs-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("interop-{}.db", agno_core::new_id()));
    let db = SqliteDb::connect(path.to_str().unwrap()).await.unwrap();
    db.create_tables().await.unwrap();
    (db, path)
}

/// The session `rust_run`'s runs belong to (agent `rs-agent`, user `rs-user`).
fn rust_session() -> AgentSession {
    let mut session = AgentSession::new("rs-session");
    session.agent_id = Some("rs-agent".into());
    session.user_id = Some("rs-user".into());
    session
}

fn rust_run(i: usize) -> RunOutput {
    let mut run = RunOutput::new(format!("rs-run-{i}"), "rs-session");
    run.agent_id = Some("rs-agent".into());
    run.agent_name = Some("Rusty".into());
    run.user_id = Some("rs-user".into());
    run.input = Some(agno_core::RunInput::text(format!("q{i}")));
    run.content = Some(json!(format!("a{i}")));
    run.status = RunStatus::Completed;
    run.created_at = 1_700_000_000 + i64::try_from(i).unwrap();
    let call = ToolCall::new(format!("c{i}"), "add", r#"{"a":1,"b":2}"#);
    run.messages = Some(vec![
        Message::user(format!("q{i}")),
        Message::assistant("", vec![call]),
        Message::tool_result(format!("c{i}"), "add", "3", false),
        Message::assistant(format!("a{i}"), vec![]),
    ]);
    let mut tool =
        ToolExecution::new(format!("c{i}"), "add", Some(json!({"a": 1, "b": 2}).as_object().unwrap().clone()));
    tool.result = Some("3".into());
    run.tools = Some(vec![tool]);
    run
}

#[tokio::test]
async fn python_agno_reads_what_agno_rs_wrote() {
    let Some(py) = python() else { return };
    let (db, path) = fresh_db().await;
    let mut session = rust_session();
    session.set_session_state(json!({"from": "rust"}).as_object().unwrap().clone());
    db.upsert_session(&session, &StateUpdate::Replace).await.unwrap();
    for i in 0..3 {
        db.upsert_run(&rust_run(i), "rs-session", Some("rs-user")).await.unwrap();
    }
    let seen = probe(&py, &["read", path.to_str().unwrap(), "rs-session"]);
    let s = &seen["session"];
    assert_eq!(s["session_id"], "rs-session");
    assert_eq!(s["user_id"], "rs-user");
    assert_eq!(s["session_data"]["session_state"], json!({"from": "rust"}));
    let ids: Vec<&str> = s["runs"].as_array().unwrap().iter().map(|r| r["run_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["rs-run-0", "rs-run-1", "rs-run-2"]);
    let runs = seen["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    for run in runs {
        let i: usize = run["run_id"].as_str().unwrap().trim_start_matches("rs-run-").parse().unwrap();
        let ours = serde_json::to_value(rust_run(i)).unwrap();
        for key in ["content", "status", "input", "agent_id", "user_id", "created_at"] {
            assert_eq!(run[key], ours[key], "{key} of run {i}");
        }
        assert_eq!(run["messages"].as_array().unwrap().len(), 4);
        assert_eq!(run["tools"][0]["tool_name"], "add");
        assert_eq!(run["tools"][0]["result"], "3");
    }
    assert!(seen["first_run_by_id"]["run_id"].as_str().unwrap().starts_with("rs-run-"));
}

/// A background run's session and `PENDING` run, written beside its job by `enqueue_run` (the
/// session by a plain insert, not the upsert above), read by Python Agno.
#[tokio::test]
async fn python_agno_reads_a_queued_run_and_its_new_session() {
    use agno_core::{Enqueued, JobStore, PendingRun};
    let Some(py) = python() else { return };
    let (db, path) = fresh_db().await;
    let session = rust_session();
    let mut run = rust_run(0);
    run.status = RunStatus::Pending;
    run.content = None;
    let mut job = agno_core::Job::agent_run("rs-run-0", "rs-agent", "rs-session", json!({"message": "q0"}));
    job.user_id = Some("rs-user".into());
    let queued = db.enqueue_run(&job, 0, PendingRun { session: &session, run: &run }).await.unwrap();
    assert!(matches!(queued, Enqueued::Accepted(_)), "{queued:?}");
    let seen = probe(&py, &["read", path.to_str().unwrap(), "rs-session"]);
    let s = &seen["session"];
    assert_eq!((s["session_id"].as_str(), s["user_id"].as_str()), (Some("rs-session"), Some("rs-user")));
    assert_eq!(s["agent_id"], "rs-agent");
    assert_eq!(s["session_data"], json!({}), "an empty session_data object, as Agno writes one");
    let runs = seen["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!((runs[0]["run_id"].as_str(), runs[0]["status"].as_str()), (Some("rs-run-0"), Some("PENDING")));
    let _ = std::fs::remove_file(path);
}

#[tokio::test]
async fn agno_rs_reads_what_python_agno_wrote() {
    let Some(py) = python() else { return };
    let (db, path) = fresh_db().await;
    drop(db);
    let written = probe(&py, &["write", path.to_str().unwrap(), "py-session"]);
    let db = SqliteDb::connect(path.to_str().unwrap()).await.unwrap();
    let session = db.get_session("py-session", Some("py-user"), None).await.unwrap().expect("session");
    assert_eq!(session.session_name(), Some("from python"));
    assert_eq!(session.session_state().unwrap()["written_by"], "python");
    assert_eq!(session.runs().len(), 2);
    assert_eq!(written["runs"].as_array().unwrap().len(), 2);
    // Exactly what Python Agno reads back (`RunOutput.from_dict(...).to_dict()`), field for field.
    let theirs = probe(&py, &["read", path.to_str().unwrap(), "py-session"]);
    for (ours, theirs) in session.runs().iter().zip(theirs["runs"].as_array().unwrap()) {
        assert_eq!(&serde_json::to_value(ours).unwrap(), theirs);
    }
    let run = db.get_run("py-run-1", Some("py-user")).await.unwrap().expect("run");
    assert_eq!(run.content_text(), "answer 1");
    assert!(db.get_run("py-run-1", Some("someone-else")).await.unwrap().is_none());
}

#[tokio::test]
async fn python_agno_reads_schedules_and_metrics_agno_rs_wrote() {
    use agno_core::{MetricsBucket, MetricsStore, Schedule, ScheduleRun, ScheduleRunUpdate, ScheduleStore};
    let Some(py) = python() else { return };
    let (db, path) = fresh_db().await;
    let mut s = Schedule::new("rs-nightly", "/agents/rs-agent/runs", "0 3 * * *");
    s.user_id = Some("rs-user".into());
    s.payload = Some(json!({"message": "from rust"}));
    s.next_run_at = Some(1_800_000_000);
    db.create_schedule(&s).await.unwrap();
    let run = db.create_schedule_run(&ScheduleRun::new(&s.id)).await.unwrap();
    let done = ScheduleRunUpdate {
        status: Some("success".into()),
        status_code: Some(Some(200)),
        output: Some(Some(json!({"content": "ok"}))),
        ..ScheduleRunUpdate::default()
    };
    db.update_schedule_run(&run.id, &done).await.unwrap();
    let bucket = |user: Option<&str>| MetricsBucket {
        id: agno_core::new_id(),
        user_id: user.map(str::to_owned),
        date: "2026-11-29".parse().unwrap(),
        aggregation_period: "daily".into(),
        agent_runs_count: 3,
        team_runs_count: 0,
        workflow_runs_count: 0,
        agent_sessions_count: 1,
        team_sessions_count: 0,
        workflow_sessions_count: 0,
        users_count: i64::from(user.is_some()),
        token_metrics: json!({"input_tokens": 7}).as_object().unwrap().clone(),
        model_metrics: json!([{"model_id": "gpt-4o", "model_provider": "OpenAI", "count": 3}]),
        created_at: 1_764_000_000,
        updated_at: Some(1_764_000_001),
        completed: true,
    };
    db.upsert_metrics(&[bucket(Some("rs-user")), bucket(None)]).await.unwrap();

    let seen = probe(&py, &["read-schedules", path.to_str().unwrap(), &s.id]);
    let theirs = &seen["schedule"];
    let ours = serde_json::to_value(&s).unwrap();
    for (key, value) in ours.as_object().unwrap() {
        assert_eq!(&theirs[key], value, "schedule.{key} as Agno reads it");
    }
    assert_eq!(seen["owned"], true);
    assert_eq!(seen["foreign"], false, "Agno's owner filter applies to our rows");
    assert_eq!(seen["runs_total"], 1);
    assert_eq!(seen["runs"][0]["user_id"], "rs-user");
    assert_eq!(seen["runs"][0]["status"], "success");
    assert_eq!(seen["runs"][0]["output"], json!({"content": "ok"}));
    let metrics = seen["metrics"].as_array().unwrap();
    assert_eq!(metrics.len(), 2);
    let shared = metrics.iter().find(|m| m["user_id"].is_null()).expect("shared bucket reads as no user");
    assert_eq!(shared["date"], "2026-11-29");
    assert_eq!(shared["agent_runs_count"], 3);
    assert_eq!(shared["token_metrics"], json!({"input_tokens": 7}));
    assert_eq!(shared["completed"], true);
    assert_eq!(seen["metrics_latest"], 1_764_000_001);
}

#[tokio::test]
async fn agno_rs_reads_schedules_and_calculates_metrics_like_python_agno() {
    use agno_core::{MetricsQuery, MetricsStore, ScheduleStore};
    let Some(py) = python() else { return };
    let (db, path) = fresh_db().await;
    drop(db);
    let written = probe(&py, &["write-schedules", path.to_str().unwrap(), "py-schedule"]);
    let db = SqliteDb::connect(path.to_str().unwrap()).await.unwrap();
    let s = db.get_schedule("py-schedule", Some("py-user")).await.unwrap().expect("schedule");
    let mine = serde_json::to_value(&s).unwrap();
    for (key, value) in written["schedule"].as_object().unwrap() {
        assert_eq!(&mine[key], value, "schedule.{key} as agno-rs reads it");
    }
    assert!(db.get_schedule("py-schedule", Some("other")).await.unwrap().is_none());
    let (runs, total) = db.get_schedule_runs("py-schedule", Some("py-user"), None, None).await.unwrap();
    assert_eq!(total, 1);
    assert_eq!(runs[0].output, Some(json!({"content": "ok"})));

    // Python's buckets read back, then recalculated by agno-rs in place: the same numbers.
    let (python_buckets, _) = db.get_metrics(&MetricsQuery::default()).await.unwrap();
    assert_eq!(python_buckets.len(), 2, "{python_buckets:?}");
    let comparable = |b: &agno_core::MetricsBucket| {
        let mut v = serde_json::to_value(b).unwrap();
        for key in ["id", "created_at", "updated_at"] {
            v.as_object_mut().unwrap().remove(key);
        }
        v
    };
    let theirs: Vec<Value> = python_buckets.iter().map(comparable).collect();
    let mut ids: Vec<&str> = python_buckets.iter().map(|b| b.id.as_str()).collect();
    let mut raw_ids: Vec<&str> =
        written["metrics"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    raw_ids.sort_unstable();
    assert_eq!(ids, raw_ids, "the rows Python wrote");
    // On Python's day, so a run straddling midnight compares the same day.
    agno_db::calculate_metrics_until(&db, python_buckets[0].date).await.unwrap();
    let (ours, _) = db.get_metrics(&MetricsQuery::default()).await.unwrap();
    let ours: Vec<Value> = ours.iter().map(comparable).collect();
    assert_eq!(ours, theirs, "agno-rs computes the buckets Python Agno computed");
}

/// Every run's JSON as agno-rs reads it equals what Python Agno reads (`from_dict().to_dict()`).
fn assert_runs_match(ours: &[RunOutput], theirs: &Value) {
    let theirs = theirs.as_array().expect("a list of runs");
    assert_eq!(ours.len(), theirs.len(), "run count");
    for (ours, theirs) in ours.iter().zip(theirs) {
        assert_eq!(&serde_json::to_value(ours).unwrap(), theirs, "run {}", ours.id());
    }
}

/// Agno 3.1 stores a workflow run's input bare (`"input": "hello world"`), its steps in
/// `step_results`, and a team run's member runs both as their own rows (`parent_run_id`) and in
/// `member_responses`. agno-rs reads all of them as Agno does, field for field.
#[tokio::test]
async fn agno_rs_reads_workflow_and_team_sessions_python_agno_wrote() {
    let Some(py) = python() else { return };
    let (db, path) = fresh_db().await;
    drop(db);
    let file = path.to_str().unwrap();
    let written = probe(&py, &["write-workflow", file, "py-wf"]);
    assert_eq!(written["workflow_run"]["input"], "hello world", "the fixture stores a bare input");
    let db = SqliteDb::connect(file).await.unwrap();
    let theirs = probe(&py, &["read-workflow", file, "py-wf"]);

    let session = db.get_session("py-wf", Some("py-user"), None).await.unwrap().expect("workflow session");
    assert_eq!(session.workflow_id.as_deref(), Some("py-workflow"));
    assert_runs_match(session.runs(), &theirs["workflow_runs"]);
    let run = &session.runs()[0];
    assert_eq!(run.input.as_ref().map(agno_core::RunInput::as_text).as_deref(), Some("hello world"));
    assert_eq!(run.extra["step_results"].as_array().map(Vec::len), Some(4));
    let page =
        db.get_runs(&agno_core::RunQuery { session_id: Some("py-wf".into()), ..Default::default() }).await.unwrap();
    assert_runs_match(&page.runs, &theirs["workflow_runs"]);

    let team = db.get_session("py-wf-team", Some("py-user"), None).await.unwrap().expect("team session");
    assert_eq!(team.team_id.as_deref(), Some("py-team"));
    assert_runs_match(team.runs(), &theirs["team_runs"]);
    let member = db.get_run("py-member-run", Some("py-user")).await.unwrap().expect("member run");
    assert_eq!(member.parent_run_id.as_deref(), Some("py-team-run"));
    let team_run = db.get_run("py-team-run", Some("py-user")).await.unwrap().expect("team run");
    assert_eq!(team_run.extra["member_responses"][0]["run_id"], "py-member-run");

    // Written back unchanged by agno-rs, Python still reads the same runs.
    for run in session.runs().iter().chain(team.runs()) {
        db.upsert_run(run, run.session_id.as_deref().unwrap(), Some("py-user")).await.unwrap();
    }
    let again = probe(&py, &["read-workflow", file, "py-wf"]);
    assert_eq!(again["workflow_runs"], theirs["workflow_runs"]);
    assert_eq!(again["team_runs"], theirs["team_runs"]);
}

/// One stored run that cannot be read never hides the others: listings leave it out (with a
/// warning), and reading it alone says why.
#[tokio::test]
async fn an_unreadable_run_is_left_out_of_listings_and_reported_when_read_alone() {
    let (db, path) = fresh_db().await;
    let mut session = AgentSession::new("rs-session");
    session.user_id = Some("rs-user".into());
    session.agent_id = Some("rs-agent".into());
    db.upsert_session(&session, &StateUpdate::Replace).await.unwrap();
    for i in 0..3 {
        db.upsert_run(&rust_run(i), "rs-session", Some("rs-user")).await.unwrap();
    }
    drop(db);
    // A row another program corrupted: a status no Agno version writes, and one that is not JSON.
    let out = Command::new("sqlite3")
        .arg(&path)
        .arg(
            "UPDATE agno_runs SET run_data = json_set(run_data, '$.status', 'EXPLODED') WHERE run_id = 'rs-run-1'; \
             UPDATE agno_runs SET run_data = '{not json' WHERE run_id = 'rs-run-2';",
        )
        .output()
        .expect("the sqlite3 program runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let db = SqliteDb::connect(path.to_str().unwrap()).await.unwrap();
    let session = db.get_session("rs-session", Some("rs-user"), None).await.unwrap().expect("session");
    let ids: Vec<&str> = session.runs().iter().map(RunOutput::id).collect();
    assert_eq!(ids, ["rs-run-0"]);
    let page = db
        .get_runs(&agno_core::RunQuery { session_id: Some("rs-session".into()), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(page.runs.iter().map(RunOutput::id).collect::<Vec<_>>(), ["rs-run-0"]);
    let err = db.get_run("rs-run-1", Some("rs-user")).await.unwrap_err();
    assert!(err.to_string().contains("EXPLODED"), "{err}");
    let err = db.get_run("rs-run-2", Some("rs-user")).await.unwrap_err();
    assert!(err.to_string().contains("corrupt"), "{err}");
}
