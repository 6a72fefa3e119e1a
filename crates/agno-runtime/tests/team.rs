//! Teams: each mode (coordinate, route, broadcast), nested teams, storage (the team run with its
//! member runs, each member run also its own row), the leader's history, streaming with Agno's
//! team event names, cancel of a running member, Python Agno 3.1 reading what agno-rs stored, and
//! build-time refusals.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agno_core::{Db, Model, ModelRequest, ModelResponse, Role, RunQuery, RunStatus, ToolCall};
use agno_db::{InMemoryDb, SqliteDb};
use agno_models::FunctionModel;
use agno_runtime::team::{Team, TeamMode};
use agno_runtime::{Agent, BuildError, RunRequest};
use futures::StreamExt;
use serde_json::{Value, json};

/// A model answering `f(request)`, reporting token usage as a provider does.
fn model(f: impl Fn(&ModelRequest) -> ModelResponse + Send + Sync + 'static) -> Arc<dyn Model> {
    Arc::new(FunctionModel::new(move |req| {
        let mut response = f(req);
        response.usage =
            Some(agno_core::Usage { input_tokens: 10, output_tokens: 5, total_tokens: 15, ..Default::default() });
        Ok(response)
    }))
}

fn last_user(req: &ModelRequest) -> String {
    req.messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .and_then(|m| m.content_text())
        .unwrap_or_default()
        .to_owned()
}

/// A member answering `<name>: <task>`.
fn member(id: &str) -> Agent {
    let name = id.to_owned();
    Agent::builder(model(move |req| ModelResponse {
        content: format!("{name}: {}", last_user(req)),
        ..Default::default()
    }))
    .id(id)
    .name(id.to_uppercase())
    .build()
    .unwrap()
}

/// A leader that makes `calls` on its first turn, then answers with the tool results joined.
fn leader(calls: Vec<(&'static str, Value)>) -> Arc<dyn Model> {
    model(move |req| {
        if req.messages.last().is_some_and(|m| m.role == Role::User) {
            ModelResponse {
                tool_calls: calls
                    .iter()
                    .enumerate()
                    .map(|(i, (name, args))| ToolCall::new(format!("c{i}"), *name, args.to_string()))
                    .collect(),
                ..Default::default()
            }
        } else {
            let results: Vec<String> = req
                .messages
                .iter()
                .filter(|m| m.role == Role::Tool)
                .map(|m| m.content_text().unwrap_or_default().to_owned())
                .collect();
            ModelResponse { content: format!("summary: {}", results.join(" | ")), ..Default::default() }
        }
    })
}

fn delegate(member_id: &str, task: &str) -> (&'static str, Value) {
    ("delegate_task_to_member", json!({"member_id": member_id, "task": task}))
}

#[tokio::test]
async fn coordinate_mode_delegates_to_the_members_the_leader_picks_and_stores_their_runs() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let team = Team::builder()
        .id("desk")
        .name("Desk")
        .model(leader(vec![delegate("writer", "draft it"), delegate("checker", "check it")]))
        .member(member("writer"))
        .member(member("checker"))
        .member(member("idle"))
        .db(Arc::clone(&db))
        .build()
        .unwrap();
    let run = team.arun(RunRequest::new("news").session_id("t1").user_id("u")).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.content_text(), "summary: writer: draft it | checker: check it");
    assert_eq!(run.extra["team_id"], "desk");
    assert_eq!(run.extra["team_name"], "Desk");
    assert!(run.agent_id.is_none());
    let members = run.extra["member_responses"].as_array().unwrap();
    let mut names: Vec<&str> = members.iter().map(|m| m["agent_id"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["checker", "writer"], "the idle member never ran");
    assert!(members.iter().all(|m| m["parent_run_id"] == run.id()));

    // Stored: the team run and each member run as its own row, linked by parent_run_id.
    let page = db.get_runs(&RunQuery { session_id: Some("t1".into()), ..Default::default() }).await.unwrap();
    assert_eq!(page.runs.len(), 3);
    let team_row = page.runs.iter().find(|r| r.id() == run.id()).unwrap();
    assert_eq!(team_row.extra["member_responses"].as_array().unwrap().len(), 2);
    for m in page.runs.iter().filter(|r| r.id() != run.id()) {
        assert_eq!(m.parent_run_id.as_deref(), Some(run.id()));
    }
    let session = db.get_session("t1", Some("u"), Some(0)).await.unwrap().unwrap();
    assert_eq!(session.team_id.as_deref(), Some("desk"));
    // Agno's `team_data`: the team, its name and its model.
    assert_eq!(session.extra["team_data"]["team_id"], "desk");
    assert_eq!(session.extra["team_data"]["name"], "Desk");

    // An unknown member id comes back to the leader as text naming the members.
    let team = Team::builder().model(leader(vec![delegate("nobody", "x")])).member(member("writer")).build().unwrap();
    let run = team.arun("go").await.unwrap();
    assert!(run.content_text().contains("Member with ID nobody not found"), "{}", run.content_text());
}

#[tokio::test]
async fn route_mode_answers_with_the_chosen_members_answer() {
    let team = Team::builder()
        .mode(TeamMode::Route)
        .model(leader(vec![delegate("fr", "bonjour please")]))
        .member(member("en"))
        .member(member("fr"))
        .build()
        .unwrap();
    let run = team.arun("hello").await.unwrap();
    assert_eq!(run.content_text(), "fr: bonjour please", "the member's answer, not a summary by the leader");
}

#[tokio::test]
async fn broadcast_mode_sends_the_task_to_every_member_at_once() {
    let team = Team::builder()
        .mode(TeamMode::Broadcast)
        .model(leader(vec![("delegate_task_to_members", json!({"task": "vote"}))]))
        .member(member("a"))
        .member(member("b"))
        .member(member("c"))
        .build()
        .unwrap();
    let run = team.arun("decide").await.unwrap();
    assert_eq!(run.content_text(), "summary: Agent A: a: vote\nAgent B: b: vote\nAgent C: c: vote");
    assert_eq!(run.extra["member_responses"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn a_nested_team_runs_as_a_member_and_its_runs_nest_too() {
    let inner = Team::builder()
        .id("inner")
        .name("Inner")
        .model(leader(vec![delegate("deep", "dig")]))
        .member(member("deep"))
        .build()
        .unwrap();
    let outer = Team::builder()
        .id("outer")
        .model(leader(vec![delegate("inner", "investigate")]))
        .member(inner)
        .member(member("side"))
        .build()
        .unwrap();
    let run = outer.arun("go").await.unwrap();
    assert_eq!(run.content_text(), "summary: summary: deep: dig");
    let nested = &run.extra["member_responses"][0];
    assert_eq!(nested["team_id"], "inner");
    assert_eq!(nested["member_responses"][0]["agent_id"], "deep");
}

#[tokio::test]
async fn the_leader_reads_the_teams_history_not_its_members() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let seen: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let recorded = Arc::clone(&seen);
    let leader = model(move |req| {
        recorded
            .lock()
            .unwrap()
            .push(req.messages.iter().filter_map(|m| m.content_text().map(str::to_owned)).collect());
        if req.messages.last().is_some_and(|m| m.role == Role::User) && last_user(req) == "first" {
            ModelResponse {
                tool_calls: vec![ToolCall::new("c0", "delegate_task_to_member", r#"{"member_id":"m","task":"t"}"#)],
                ..Default::default()
            }
        } else {
            ModelResponse { content: format!("answer to {}", last_user(req)), ..Default::default() }
        }
    });
    let team = Team::builder()
        .model(leader)
        .member(member("m"))
        .db(Arc::clone(&db))
        .add_history_to_context(true)
        .build()
        .unwrap();
    team.arun(RunRequest::new("first").session_id("h")).await.unwrap();
    team.arun(RunRequest::new("second").session_id("h")).await.unwrap();
    let last = seen.lock().unwrap().last().unwrap().clone();
    assert!(last.contains(&"first".to_owned()), "{last:?}");
    assert!(last.contains(&"answer to first".to_owned()) || last.iter().any(|m| m.starts_with("answer")), "{last:?}");
    assert!(!last.contains(&"t".to_owned()), "the member's own messages stay out of the leader's history: {last:?}");
}

#[tokio::test]
async fn a_streamed_team_run_names_the_leaders_events_as_agno_and_passes_on_the_members() {
    let team = Team::builder()
        .id("desk")
        .name("Desk")
        .model(leader(vec![delegate("writer", "draft")]))
        .member(member("writer"))
        .build()
        .unwrap();
    let mut stream = team.run_stream("go");
    let mut events = Vec::new();
    while let Some(e) = stream.next().await {
        events.push(serde_json::to_value(&e).unwrap());
    }
    let run = stream.output().await.unwrap();
    let names: Vec<&str> = events.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(names.first(), Some(&"TeamRunStarted"));
    assert_eq!(names.last(), Some(&"TeamRunCompleted"));
    assert!(names.contains(&"TeamToolCallStarted") && names.contains(&"TeamToolCallCompleted"), "{names:?}");
    let member_started = events.iter().find(|e| e["event"] == "RunStarted").expect("the member's own events");
    assert_eq!(member_started["agent_id"], "writer");
    assert_eq!(member_started["parent_run_id"], run.id());
    let team_started = &events[0];
    assert_eq!(team_started["team_id"], "desk");
    assert_eq!(team_started["team_name"], "Desk");
    assert!(team_started.get("agent_id").is_none());
    let indexes: Vec<u64> = events.iter().map(|e| e["event_index"].as_u64().unwrap()).collect();
    assert!(indexes.windows(2).all(|w| w[0] < w[1]), "one sequence: {indexes:?}");
}

#[tokio::test]
async fn a_cancel_of_the_team_run_stops_its_running_member_and_both_are_stored_cancelled() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    // The member's model call takes a minute; the test sees it start, then cancels the team.
    let hanging = agno_models::TestModel::new().with_latency(Duration::from_secs(60));
    let slow = Agent::builder(Arc::new(hanging) as Arc<dyn Model>).id("slow").build().unwrap();
    let team = Team::builder()
        .model(leader(vec![delegate("slow", "take your time")]))
        .member(slow)
        .db(Arc::clone(&db))
        .build()
        .unwrap();
    let mut stream = team.run_stream(RunRequest::new("go").run_id("team-cancel").session_id("tc"));
    let mut asked = None;
    while let Some(e) = stream.next().await {
        let v = serde_json::to_value(&e).unwrap();
        if v["event"] == "ModelRequestStarted" && v["agent_id"] == "slow" {
            // The member is inside its model call.
            assert!(agno_runtime::cancel_run("team-cancel"));
            asked = Some(Instant::now());
        }
    }
    let run = tokio::time::timeout(Duration::from_secs(20), stream.output()).await.expect("stopped").unwrap();
    let took = asked.expect("the member's model call started").elapsed();
    assert!(took < Duration::from_secs(15), "the 60 s model call was interrupted ({took:?})");
    assert_eq!(run.status, RunStatus::Cancelled);
    let members = run.extra["member_responses"].as_array().unwrap();
    assert_eq!(members.len(), 1);
    assert_eq!(members[0]["status"], "CANCELLED");
    let page = db.get_runs(&RunQuery { session_id: Some("tc".into()), ..Default::default() }).await.unwrap();
    assert_eq!(page.runs.len(), 2);
    assert!(page.runs.iter().all(|r| r.status == RunStatus::Cancelled), "team and member both stored CANCELLED");
}

#[tokio::test]
async fn teams_with_bad_members_are_refused_when_built() {
    let refused = |b: agno_runtime::team::TeamBuilder| match b.build() {
        Err(e) => e.to_string(),
        Ok(t) => panic!("expected a refusal, built {t:?}"),
    };
    let m = || leader(vec![]);
    assert!(refused(Team::builder().member(member("a"))).contains("needs a model"));
    assert!(refused(Team::builder().model(m())).contains("at least one member"));
    assert!(
        refused(Team::builder().model(m()).member(member("a")).member(member("a")))
            .contains(r#"two members have the id "a""#)
    );
    let inner = Team::builder().id("loop").model(m()).member(member("x")).build().unwrap();
    assert!(refused(Team::builder().id("loop").model(m()).member(inner)).contains("cycle"));
    assert!(matches!(
        Team::builder().model(m()).member(member("a")).mode(TeamMode::Tasks).max_iterations(0).build(),
        Err(BuildError::Invalid { option: "max_iterations", .. })
    ));
    // Memory settings carry Agent's v3 names; team memories are not built yet.
    let memory = agno_runtime::MemoryConfig { update_memory_on_run: true, ..Default::default() };
    assert!(matches!(
        Team::builder().model(m()).member(member("a")).memory(memory).build(),
        Err(BuildError::Unsupported { .. })
    ));
}

/// Python Agno 3.1 reads the team run and its member runs agno-rs stored, field for field.
#[tokio::test]
async fn python_agno_reads_the_team_runs_agno_rs_stored() {
    let Some(py) = agno_testkit::agno_python("the team interop check with Python Agno") else { return };
    let dir = std::env::temp_dir().join("agno-rs-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("team-rs-{}.db", agno_core::new_id()));
    let sqlite = SqliteDb::connect(file.to_str().unwrap()).await.unwrap();
    sqlite.create_tables().await.unwrap();
    let db: Arc<dyn Db> = Arc::new(sqlite);
    let team = Team::builder()
        .id("desk")
        .name("Desk")
        .model(leader(vec![delegate("writer", "draft it")]))
        .member(member("writer"))
        .db(Arc::clone(&db))
        .build()
        .unwrap();
    // The probe reads "<id>" as a workflow session and "<id>-team" as a team session. Streamed,
    // so the team run keeps its (team and member) events, as Agno keeps a streamed team run's.
    let mut stream = team.run_stream(RunRequest::new("news").session_id("rs-x-team").user_id("py-user"));
    while stream.next().await.is_some() {}
    let run = stream.output().await.unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/agno_interop.py");
    let out = Command::new(&py)
        .arg(&script)
        .args(["read-workflow", file.to_str().unwrap(), "rs-x"])
        .env("AGNO_TELEMETRY", "false")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let theirs: Value = serde_json::from_str(stdout.lines().rev().find(|l| l.starts_with('{')).unwrap()).unwrap();
    assert_eq!(theirs["team_session"]["team_id"], "desk");
    let py_runs = theirs["team_runs"].as_array().unwrap();
    assert_eq!(py_runs.len(), 2);
    let ours = db.get_runs(&RunQuery { session_id: Some("rs-x-team".into()), ..Default::default() }).await.unwrap();
    for ours in &ours.runs {
        let theirs = py_runs.iter().find(|r| r["run_id"] == ours.id()).expect("Python reads every run");
        assert_eq!(&serde_json::to_value(ours).unwrap(), theirs, "run {}", ours.id());
    }
    let team_run = py_runs.iter().find(|r| r["run_id"] == run.id()).unwrap();
    assert_eq!(team_run["team_id"], "desk");
    let events: Vec<&str> =
        team_run["events"].as_array().unwrap().iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(events.first(), Some(&"TeamRunStarted"));
    assert_eq!(events.last(), Some(&"TeamRunCompleted"));
    assert!(events.contains(&"RunStarted"), "the member's events too: {events:?}");
    assert_eq!(team_run["member_responses"][0]["agent_id"], "writer");
}

#[tokio::test]
async fn a_team_runs_as_a_workflow_step_kept_inside_the_workflow_run() {
    use agno_runtime::workflow::{Executor, Step, Workflow};
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let team = Team::builder()
        .id("desk")
        .name("Desk")
        .model(leader(vec![delegate("writer", "draft it")]))
        .member(member("writer"))
        .db(Arc::clone(&db))
        .build()
        .unwrap();
    let wf = Workflow::builder()
        .id("with-team")
        .db(Arc::clone(&db))
        .step(Step { name: "desk".into(), executor: Executor::team(team), ..Step::default() })
        .build()
        .unwrap();
    let run = wf.arun(agno_runtime::workflow::WorkflowRunRequest::from("news").session_id("wt")).await.unwrap();
    assert_eq!(run.content_text(), "summary: writer: draft it");
    let step = &run.extra["step_results"][0];
    assert_eq!(step["executor_type"], "team");
    assert_eq!(step["executor_name"], "Desk");
    let team_run = &run.extra["step_executor_runs"][0];
    assert_eq!(team_run["team_id"], "desk");
    assert_eq!(team_run["parent_run_id"], run.id());
    assert_eq!(team_run["member_responses"][0]["agent_id"], "writer");
    // Only the workflow run is stored: the team's run lives inside it.
    let page = db.get_runs(&RunQuery { session_id: Some("wt".into()), ..Default::default() }).await.unwrap();
    assert_eq!(page.runs.len(), 1);
}

/// A streamed workflow passes a team step's events on: the leader's as Agno's team events, the
/// members' as their own, each stamped with the step, in the workflow's one `event_index` order.
#[tokio::test]
async fn a_streamed_workflow_passes_on_a_team_steps_events() {
    use agno_runtime::workflow::{Executor, Step, Workflow, WorkflowRunRequest};
    let team = Team::builder()
        .id("desk")
        .name("Desk")
        .model(leader(vec![delegate("writer", "draft it")]))
        .member(member("writer"))
        .build()
        .unwrap();
    let wf = Workflow::builder()
        .id("with-team")
        .step(Step { name: "desk".into(), executor: Executor::team(team), ..Step::default() })
        .build()
        .unwrap();
    let mut stream = wf.run_stream(WorkflowRunRequest::from("news"));
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        let json = serde_json::to_value(&event).unwrap();
        // Each event reads back as itself.
        let back: agno_core::WorkflowStreamEvent =
            serde_json::from_value(json.clone()).unwrap_or_else(|e| panic!("{e}: {json}"));
        assert_eq!(serde_json::to_value(&back).unwrap(), json);
        assert_eq!(back.name(), event.name());
        events.push(json);
    }
    let names: Vec<&str> = events.iter().map(|e| e["event"].as_str().unwrap()).collect();
    let pos = |n: &str| names.iter().position(|x| *x == n).unwrap_or_else(|| panic!("{n} missing: {names:?}"));
    assert!(pos("StepStarted") < pos("TeamRunStarted"), "{names:?}");
    assert!(pos("TeamRunStarted") < pos("RunStarted"), "the member runs inside: {names:?}");
    assert!(pos("TeamRunCompleted") < pos("StepCompleted"), "{names:?}");
    assert_eq!(names.last(), Some(&"WorkflowCompleted"));
    let started = &events[pos("TeamRunStarted")];
    assert_eq!(started["team_id"], "desk");
    assert_eq!(started["step_name"], "desk");
    assert_eq!(started["workflow_id"], "with-team");
    let member = &events[pos("RunStarted")];
    assert_eq!(member["agent_id"], "writer");
    assert_eq!(member["step_name"], "desk");
    let ids: Vec<u64> = events.iter().map(|e| e["event_index"].as_u64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert_eq!(stream.output().await.unwrap().content_text(), "summary: writer: draft it");
}
