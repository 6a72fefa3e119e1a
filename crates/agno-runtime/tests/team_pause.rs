//! A member's tool pause inside a team run: it pauses the team with the member's requirements
//! (Agno's `member_agent_id`, `member_agent_name`, `member_run_id` set), and `Team::continue_run`
//! continues the member with the answers, then the leader with the member's result. Covers
//! coordinate and broadcast, a nested team, a member that pauses twice, streaming, and bad
//! answers (refused with nothing changed).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agno_core::{Db, Model, ModelRequest, ModelResponse, Role, RunQuery, RunStatus, ToolCall};
use agno_db::InMemoryDb;
use agno_models::FunctionModel;
use agno_runtime::team::{Team, TeamMode};
use agno_runtime::{Agent, ContinueRequest, RunError, RunRequest};
use agno_tools::Function;
use futures::StreamExt;
use serde_json::{Value, json};

fn model(f: impl Fn(&ModelRequest) -> ModelResponse + Send + Sync + 'static) -> Arc<dyn Model> {
    Arc::new(FunctionModel::new(move |req| Ok(f(req))))
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

fn tool_results(req: &ModelRequest) -> Vec<String> {
    req.messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content_text().unwrap_or_default().to_owned())
        .collect()
}

/// A member answering `<id>: <task>`.
fn writer(id: &str) -> Agent {
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

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// A member that calls `add` (which needs a confirmation) `rounds` times, one call per turn,
/// then answers with the results; `calls` counts the tool's executions.
fn clerk(id: &str, rounds: usize, calls: Arc<AtomicUsize>) -> Agent {
    let add = Function::new("add", "Add two numbers.", move |args: AddArgs| {
        let calls = Arc::clone(&calls);
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(args.a + args.b)
        }
    })
    .requires_confirmation();
    Agent::builder(model(move |req| {
        let done = tool_results(req);
        if done.len() < rounds {
            let n = done.len() as i64;
            ModelResponse {
                tool_calls: vec![ToolCall::new(format!("add{n}"), "add", json!({"a": 4, "b": 5 + n}).to_string())],
                ..Default::default()
            }
        } else {
            ModelResponse { content: format!("sum {}", done.join("+")), ..Default::default() }
        }
    }))
    .id(id)
    .name(id.to_uppercase())
    .function(add)
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
            ModelResponse { content: format!("summary: {}", tool_results(req).join(" | ")), ..Default::default() }
        }
    })
}

fn delegate(member_id: &str, task: &str) -> (&'static str, Value) {
    ("delegate_task_to_member", json!({"member_id": member_id, "task": task}))
}

async fn stored(db: &Arc<dyn Db>, session: &str) -> Vec<agno_core::RunOutput> {
    db.get_runs(&RunQuery { session_id: Some(session.into()), ..Default::default() }).await.unwrap().runs
}

#[tokio::test]
async fn a_members_confirmation_pauses_the_team_and_continue_run_finishes_member_and_leader() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let adds = Arc::new(AtomicUsize::new(0));
    let team = Team::builder()
        .id("desk")
        .name("Desk")
        .model(leader(vec![delegate("writer", "draft it"), delegate("clerk", "add up")]))
        .member(writer("writer"))
        .member(clerk("clerk", 1, Arc::clone(&adds)))
        .db(Arc::clone(&db))
        .build()
        .unwrap();
    let paused = team.arun(RunRequest::new("news").session_id("s1").user_id("u")).await.unwrap();
    assert_eq!(paused.status, RunStatus::Paused);
    assert_eq!(adds.load(Ordering::SeqCst), 0, "nothing confirmed yet");
    let reqs = paused.requirements.clone().unwrap();
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    assert!(reqs[0].needs_confirmation());
    assert_eq!(reqs[0].member_agent_id.as_deref(), Some("clerk"));
    assert_eq!(reqs[0].member_agent_name.as_deref(), Some("CLERK"));
    assert_eq!(reqs[0].tool_execution.as_ref().unwrap().tool_name.as_deref(), Some("add"));
    let clerk_run_id = reqs[0].member_run_id.clone().unwrap();

    // Stored: the team paused, the writer's run completed, the clerk's paused, linked.
    let rows = stored(&db, "s1").await;
    assert_eq!(rows.len(), 3);
    let by_id = |id: &str| rows.iter().find(|r| r.id() == id).unwrap().clone();
    assert_eq!(by_id(paused.id()).status, RunStatus::Paused);
    assert_eq!(by_id(paused.id()).requirements.as_ref().unwrap()[0].member_run_id.as_deref(), Some(&*clerk_run_id));
    let clerk_row = by_id(&clerk_run_id);
    assert_eq!(clerk_row.status, RunStatus::Paused);
    assert_eq!(clerk_row.parent_run_id.as_deref(), Some(paused.id()));
    let writer_row = rows.iter().find(|r| r.agent_id.as_deref() == Some("writer")).unwrap();
    assert_eq!(writer_row.status, RunStatus::Completed);

    // Bad answers are refused before anything runs, and change nothing.
    let err = team.acontinue_run(ContinueRequest::run_id(paused.id(), vec![])).await.unwrap_err();
    assert!(matches!(err, RunError::UnresolvedRequirement { .. }), "{err}");
    let mut unanswered = reqs.clone();
    unanswered[0].confirmation = None;
    let err = team.acontinue_run(ContinueRequest::run_id(paused.id(), unanswered)).await.unwrap_err();
    assert!(matches!(err, RunError::UnresolvedRequirement { .. }), "{err}");
    let mut stranger = reqs[0].clone();
    stranger.id = "not-a-requirement".into();
    stranger.confirm();
    let err = team.acontinue_run(ContinueRequest::run_id(paused.id(), vec![stranger])).await.unwrap_err();
    assert!(matches!(&err, RunError::InvalidContinue(m) if m.contains("not-a-requirement")), "{err}");
    let err = team
        .acontinue_run(ContinueRequest::run_id(paused.id(), reqs.clone()).user_id("someone-else"))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::RunNotFound(_)), "another user's run is not found: {err}");
    assert_eq!(db.get_run(paused.id(), None).await.unwrap().unwrap().status, RunStatus::Paused);
    assert_eq!(adds.load(Ordering::SeqCst), 0);

    let mut answers = reqs;
    answers[0].confirm();
    let done = team.acontinue_run(ContinueRequest::run_id(paused.id(), answers).user_id("u")).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.id(), paused.id());
    assert_eq!(adds.load(Ordering::SeqCst), 1);
    assert_eq!(done.content_text(), "summary: writer: draft it | sum 9");
    assert_eq!(done.extra["team_id"], "desk");
    assert!(done.extra.get("member_pauses").is_none() && done.extra.get("leader_requirements").is_none());
    let members = done.extra["member_responses"].as_array().unwrap();
    assert_eq!(members.len(), 2);
    assert!(members.iter().all(|m| m["status"] == "COMPLETED"), "{members:?}");

    let rows = stored(&db, "s1").await;
    assert_eq!(rows.len(), 3, "the continue updates the rows, adds none");
    assert!(rows.iter().all(|r| r.status == RunStatus::Completed));
    let clerk_row = rows.iter().find(|r| r.id() == clerk_run_id).unwrap();
    assert_eq!(clerk_row.tools.as_ref().unwrap()[0].confirmed, Some(true));
    assert_eq!(clerk_row.parent_run_id.as_deref(), Some(done.id()));

    let again = team.acontinue_run(ContinueRequest::run_id(done.id(), vec![])).await.unwrap_err();
    assert!(matches!(again, RunError::NotPaused { status: RunStatus::Completed, .. }), "{again}");
}

#[tokio::test]
async fn broadcast_waits_for_the_paused_member_and_keeps_the_others_answers() {
    let adds = Arc::new(AtomicUsize::new(0));
    let team = Team::builder()
        .mode(TeamMode::Broadcast)
        .model(leader(vec![("delegate_task_to_members", json!({"task": "go"}))]))
        .member(writer("a"))
        .member(clerk("clerk", 1, Arc::clone(&adds)))
        .build()
        .unwrap();
    let paused = team.arun("go").await.unwrap();
    assert_eq!(paused.status, RunStatus::Paused);
    let mut reqs = paused.requirements.clone().unwrap();
    reqs[0].reject(Some("not now".to_owned()));
    let done = team.acontinue_run(ContinueRequest::output(paused, reqs)).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(adds.load(Ordering::SeqCst), 0, "rejected");
    let text = done.content_text();
    assert!(text.starts_with("summary: Agent A: a: go\nAgent CLERK: sum "), "{text}");
    assert!(text.contains("not now"), "the rejection reaches the member: {text}");
}

#[tokio::test]
async fn a_member_that_pauses_again_keeps_the_team_paused_until_its_last_answer() {
    let adds = Arc::new(AtomicUsize::new(0));
    let team = Team::builder()
        .model(leader(vec![delegate("clerk", "add twice")]))
        .member(clerk("clerk", 2, Arc::clone(&adds)))
        .build()
        .unwrap();
    let paused = team.arun("go").await.unwrap();
    let mut reqs = paused.requirements.clone().unwrap();
    let first_call = reqs[0].tool_call_id().unwrap().to_owned();
    reqs[0].confirm();
    let again = team.acontinue_run(ContinueRequest::output(paused, reqs)).await.unwrap();
    assert_eq!(again.status, RunStatus::Paused, "the clerk asks a second time");
    assert_eq!(adds.load(Ordering::SeqCst), 1);
    let mut reqs = again.requirements.clone().unwrap();
    assert_eq!(reqs.len(), 1, "only the new question is active: {reqs:?}");
    assert_ne!(reqs[0].tool_call_id(), Some(first_call.as_str()));
    assert_eq!(reqs[0].member_agent_id.as_deref(), Some("clerk"));
    reqs[0].confirm();
    let done = team.acontinue_run(ContinueRequest::output(again, reqs)).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(adds.load(Ordering::SeqCst), 2);
    assert_eq!(done.content_text(), "summary: sum 9+10");
}

#[tokio::test]
async fn a_pause_inside_a_nested_team_reaches_the_outer_team_and_continues_through_it() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let adds = Arc::new(AtomicUsize::new(0));
    let inner = Team::builder()
        .id("back-office")
        .name("Back office")
        .model(leader(vec![delegate("clerk", "add")]))
        .member(clerk("clerk", 1, Arc::clone(&adds)))
        .build()
        .unwrap();
    let outer = Team::builder()
        .id("front")
        .model(leader(vec![delegate("back-office", "handle it")]))
        .member(inner)
        .db(Arc::clone(&db))
        .build()
        .unwrap();
    let paused = outer.arun(RunRequest::new("go").session_id("n1")).await.unwrap();
    assert_eq!(paused.status, RunStatus::Paused);
    let mut reqs = paused.requirements.clone().unwrap();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].member_agent_id.as_deref(), Some("clerk"), "the member that asked, as Agno keeps it");
    reqs[0].confirm();
    let done = outer.acontinue_run(ContinueRequest::run_id(paused.id(), reqs)).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(adds.load(Ordering::SeqCst), 1);
    assert_eq!(done.content_text(), "summary: summary: sum 9");
    let inner_run = &done.extra["member_responses"][0];
    assert_eq!(inner_run["team_id"], "back-office");
    assert_eq!(inner_run["status"], "COMPLETED");
    assert_eq!(inner_run["member_responses"][0]["status"], "COMPLETED");
}

#[tokio::test]
async fn a_streamed_continue_passes_on_the_members_events_and_ends_with_the_teams() {
    let adds = Arc::new(AtomicUsize::new(0));
    let team = Team::builder()
        .model(leader(vec![delegate("clerk", "add")]))
        .member(clerk("clerk", 1, Arc::clone(&adds)))
        .build()
        .unwrap();
    let mut stream = team.run_stream("go");
    let mut names = Vec::new();
    while let Some(event) = stream.next().await {
        names.push(serde_json::to_value(&event).unwrap()["event"].as_str().unwrap().to_owned());
    }
    assert_eq!(names.last().map(String::as_str), Some("TeamRunPaused"), "{names:?}");
    assert!(names.iter().any(|n| n == "RunPaused"), "the member's pause is passed on: {names:?}");
    let paused = stream.output().await.unwrap();
    let mut reqs = paused.requirements.clone().unwrap();
    reqs[0].confirm();
    let mut stream = team.continue_run_stream(ContinueRequest::output(paused, reqs));
    let mut names = Vec::new();
    while let Some(event) = stream.next().await {
        names.push(serde_json::to_value(&event).unwrap()["event"].as_str().unwrap().to_owned());
    }
    let pos = |n: &str| names.iter().position(|x| x == n).unwrap_or_else(|| panic!("{n} missing: {names:?}"));
    assert!(pos("RunContinued") < pos("TeamRunContinued"), "member first, then the leader: {names:?}");
    assert_eq!(names.last().map(String::as_str), Some("TeamRunCompleted"), "{names:?}");
    assert_eq!(stream.output().await.unwrap().content_text(), "summary: sum 9");
}

#[tokio::test]
async fn route_mode_answers_with_the_paused_members_answer_once_it_continues() {
    let adds = Arc::new(AtomicUsize::new(0));
    let team = Team::builder()
        .mode(TeamMode::Route)
        .model(leader(vec![delegate("clerk", "add")]))
        .member(clerk("clerk", 1, Arc::clone(&adds)))
        .build()
        .unwrap();
    let paused = team.arun("go").await.unwrap();
    assert_eq!(paused.status, RunStatus::Paused);
    let mut reqs = paused.requirements.clone().unwrap();
    reqs[0].confirm();
    let done = team.acontinue_run(ContinueRequest::output(paused, reqs)).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.content_text(), "sum 9", "the member's answer is the team's");
}

#[tokio::test]
async fn in_tasks_mode_a_member_pause_inside_execute_task_pauses_the_team() {
    let adds = Arc::new(AtomicUsize::new(0));
    let leader = model(|req| {
        let turn = req.messages.iter().filter(|m| m.role == Role::Assistant).count();
        let results = tool_results(req);
        match turn {
            0 => ModelResponse {
                tool_calls: vec![ToolCall::new(
                    "t0",
                    "create_task",
                    json!({"title": "sum", "assignee": "clerk"}).to_string(),
                )],
                ..Default::default()
            },
            1 => {
                let id = results[0].strip_prefix("Task created: [").unwrap().split(']').next().unwrap().to_owned();
                ModelResponse {
                    tool_calls: vec![ToolCall::new(
                        "t1",
                        "execute_task",
                        json!({"task_id": id, "member_id": "clerk"}).to_string(),
                    )],
                    ..Default::default()
                }
            }
            2 => ModelResponse {
                tool_calls: vec![ToolCall::new("t2", "mark_all_complete", json!({"summary": "summed"}).to_string())],
                ..Default::default()
            },
            _ => ModelResponse { content: format!("report: {}", results[1]), ..Default::default() },
        }
    });
    let team = Team::builder()
        .mode(TeamMode::Tasks)
        .model(leader)
        .member(clerk("clerk", 1, Arc::clone(&adds)))
        .build()
        .unwrap();
    let paused = team.arun("add up").await.unwrap();
    assert_eq!(paused.status, RunStatus::Paused);
    let mut reqs = paused.requirements.clone().unwrap();
    assert_eq!(reqs[0].member_agent_id.as_deref(), Some("clerk"));
    reqs[0].confirm();
    let done = team.acontinue_run(ContinueRequest::output(paused, reqs)).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(adds.load(Ordering::SeqCst), 1);
    let text = done.content_text();
    assert!(text.starts_with("report: Task ["), "{text}");
    assert!(
        text.ends_with("] completed by clerk:\nsum 9"),
        "the member's answer is the result of execute_task: {text}"
    );
    let task = &done.session_state.as_ref().unwrap()["_team_tasks"]["tasks"][0];
    assert_eq!(task["status"], "completed", "the task ends with the member's answer");
    assert_eq!(task["result"], "sum 9");
}

#[tokio::test]
async fn a_cancel_while_the_team_continues_its_member_stops_the_member_and_ends_both_cancelled() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let started = Arc::new(tokio::sync::Notify::new());
    let slow = {
        let started = Arc::clone(&started);
        Function::new("add", "Add two numbers.", move |args: AddArgs| {
            let started = Arc::clone(&started);
            async move {
                started.notify_one();
                tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                Ok(args.a + args.b)
            }
        })
        .requires_confirmation()
    };
    let member = Agent::builder(model(|req| {
        if tool_results(req).is_empty() {
            ModelResponse {
                tool_calls: vec![ToolCall::new("add0", "add", json!({"a": 1, "b": 2}).to_string())],
                ..Default::default()
            }
        } else {
            ModelResponse { content: "done".into(), ..Default::default() }
        }
    }))
    .id("clerk")
    .function(slow)
    .build()
    .unwrap();
    let team = Team::builder()
        .model(leader(vec![delegate("clerk", "add")]))
        .member(member)
        .db(Arc::clone(&db))
        .build()
        .unwrap();
    let paused = team.arun(RunRequest::new("go").session_id("cc")).await.unwrap();
    let mut reqs = paused.requirements.clone().unwrap();
    let member_run_id = reqs[0].member_run_id.clone().unwrap();
    reqs[0].confirm();
    let continuing = {
        let team = team.clone();
        let run_id = paused.id().to_owned();
        tokio::spawn(async move { team.acontinue_run(ContinueRequest::run_id(run_id, reqs)).await })
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), started.notified()).await.expect("the tool started");
    let asked = std::time::Instant::now();
    assert!(agno_runtime::cancel_run(paused.id()), "the team run is running here");
    let done = tokio::time::timeout(std::time::Duration::from_secs(10), continuing).await.unwrap().unwrap();
    assert!(asked.elapsed() < std::time::Duration::from_secs(10));
    let done = match done {
        Ok(run) => run,
        Err(e) => e.run().cloned().unwrap_or_else(|| panic!("{e}")),
    };
    assert_eq!(done.status, RunStatus::Cancelled);
    let member_row = db.get_run(&member_run_id, None).await.unwrap().unwrap();
    assert_eq!(member_row.status, RunStatus::Cancelled, "the member stopped inside its tool call and says so");
    assert_eq!(db.get_run(paused.id(), None).await.unwrap().unwrap().status, RunStatus::Cancelled);
}
