//! Agno's tasks mode: the leader keeps a task list in the session state (`_team_tasks`), creates
//! tasks with dependencies, has members execute them (one, or several at once), marks the goal
//! complete, and works in iterations (the task list as the next message) until the goal is
//! complete or `max_iterations` is reached. Streamed with Agno's task events.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agno_core::{Db, Model, ModelRequest, ModelResponse, Role, RunStatus, ToolCall};
use agno_db::InMemoryDb;
use agno_models::FunctionModel;
use agno_runtime::team::{Team, TeamMode};
use agno_runtime::{Agent, RunRequest};
use futures::StreamExt;
use serde_json::{Value, json};

fn model(f: impl Fn(&ModelRequest) -> ModelResponse + Send + Sync + 'static) -> Arc<dyn Model> {
    Arc::new(FunctionModel::new(move |req| Ok(f(req))))
}

/// A member answering `<id>: <task>`.
fn member(id: &str) -> Agent {
    let name = id.to_owned();
    Agent::builder(model(move |req| {
        let task = req.messages.iter().rev().find(|m| m.role == Role::User).and_then(|m| m.content_text());
        ModelResponse { content: format!("{name}: {}", task.unwrap_or_default()), ..Default::default() }
    }))
    .id(id)
    .build()
    .unwrap()
}

fn call(name: &str, args: &Value) -> ModelResponse {
    ModelResponse { tool_calls: vec![ToolCall::new(agno_core::new_id(), name, args.to_string())], ..Default::default() }
}

fn text(t: &str) -> ModelResponse {
    ModelResponse { content: t.to_owned(), ..Default::default() }
}

/// The task ids the leader read in `Task created: [id] ...` results, in order.
fn created_ids(req: &ModelRequest) -> Vec<String> {
    req.messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.content_text()?.strip_prefix("Task created: [")?.split(']').next().map(str::to_owned))
        .collect()
}

/// A leader that plans two tasks (`check` depends on `draft`), runs both in one batch (`check`
/// is still blocked), ends its first iteration, runs `check` in the second, marks the goal
/// complete and answers.
fn planner() -> Arc<dyn Model> {
    model(|req| {
        let turn = req.messages.iter().filter(|m| m.role == Role::Assistant).count();
        let ids = created_ids(req);
        match turn {
            0 => call("create_task", &json!({"title": "draft", "description": "draft the news", "assignee": "writer"})),
            1 => call(
                "create_task",
                &json!({"title": "check", "description": "check the draft", "assignee": "checker", "depends_on": [ids[0]]}),
            ),
            2 => call("execute_tasks_parallel", &json!({"task_ids": [ids[0], ids[1]]})),
            3 => text("the draft is done; the check waits for it"),
            4 => {
                let last = req.messages.last().and_then(|m| m.content_text()).unwrap_or_default();
                assert!(last.starts_with("<current_task_state>"), "the second iteration starts with the list: {last}");
                assert!(last.contains("check - PENDING (assigned: checker)"), "{last}");
                call("execute_task", &json!({"task_id": ids[1], "member_id": "checker"}))
            }
            5 => call("mark_all_complete", &json!({"summary": "drafted and checked"})),
            _ => text("final report"),
        }
    })
}

fn desk(leader: Arc<dyn Model>) -> agno_runtime::team::TeamBuilder {
    Team::builder().id("desk").mode(TeamMode::Tasks).model(leader).member(member("writer")).member(member("checker"))
}

#[tokio::test]
async fn the_leader_plans_tasks_has_members_run_them_in_order_and_finishes_when_the_goal_is_complete() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let team = desk(planner()).db(Arc::clone(&db)).build().unwrap();
    let run = team.arun(RunRequest::new("publish the news").session_id("t1")).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.content_text(), "final report");
    let list = &run.session_state.as_ref().unwrap()["_team_tasks"];
    assert_eq!(list["goal_complete"], true);
    assert_eq!(list["completion_summary"], "drafted and checked");
    let tasks = list["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2);
    assert_eq!(tasks[0]["status"], "completed");
    assert_eq!(tasks[0]["result"], "writer: draft the news");
    assert_eq!(tasks[1]["status"], "completed");
    assert_eq!(tasks[1]["result"], "checker: check the draft");
    assert_eq!(tasks[1]["dependencies"][0], tasks[0]["id"]);
    // The batch ran only the task that was ready; the check ran once, in the second iteration.
    let batch = run.tools.as_ref().unwrap().iter().find(|t| t.tool_name.as_deref() == Some("execute_tasks_parallel"));
    let batch = batch.unwrap().result.clone().unwrap();
    assert!(batch.contains("completed by writer") && batch.contains("is blocked and cannot be executed"), "{batch}");
    let members = run.extra["member_responses"].as_array().unwrap();
    let ran: Vec<&str> = members.iter().map(|m| m["agent_id"].as_str().unwrap()).collect();
    assert_eq!(ran, ["writer", "checker"]);
    // The task list is kept in the team's session state.
    let session = db.get_session("t1", None, Some(0)).await.unwrap().unwrap();
    assert_eq!(session.session_state().unwrap()["_team_tasks"]["tasks"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn a_streamed_tasks_run_sends_agnos_task_events() {
    let team = desk(planner()).build().unwrap();
    let mut stream = team.run_stream("publish the news");
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(serde_json::to_value(&event).unwrap());
    }
    let names: Vec<&str> = events.iter().map(|e| e["event"].as_str().unwrap()).collect();
    let count = |n: &str| names.iter().filter(|x| **x == n).count();
    assert_eq!(count("TeamTaskCreated"), 2, "{names:?}");
    assert_eq!(count("TeamTaskIterationStarted"), 2, "{names:?}");
    assert_eq!(count("TeamTaskIterationCompleted"), 2, "{names:?}");
    assert!(count("TeamTaskUpdated") >= 4, "in progress, then completed, for each task: {names:?}");
    assert_eq!(names.last(), Some(&"TeamRunCompleted"));
    let created = events.iter().find(|e| e["event"] == "TeamTaskCreated").unwrap();
    assert_eq!(created["title"], "draft");
    assert_eq!(created["assignee"], "writer");
    assert_eq!(created["status"], "pending");
    assert_eq!(created["team_id"], "desk");
    let state = events.iter().rev().find(|e| e["event"] == "TeamTaskStateUpdated").unwrap();
    assert_eq!(state["goal_complete"], true);
    assert_eq!(state["tasks"].as_array().unwrap().len(), 2);
    let ids: Vec<u64> = events.iter().map(|e| e["event_index"].as_u64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert_eq!(stream.output().await.unwrap().content_text(), "final report");
}

#[tokio::test]
async fn a_request_without_tasks_ends_on_the_second_plain_answer_and_max_iterations_bounds_the_loop() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let team = desk(model(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
        text("hello")
    }))
    .build()
    .unwrap();
    let run = team.arun("hi").await.unwrap();
    assert_eq!(run.content_text(), "hello");
    assert_eq!(calls.load(Ordering::SeqCst), 2, "one reminder, then the plain answer is final");

    // A task that is never run: the loop stops at max_iterations.
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let team = desk(model(move |req| {
        counted.fetch_add(1, Ordering::SeqCst);
        if req.messages.iter().any(|m| m.role == Role::Tool) {
            text("still thinking")
        } else {
            call("create_task", &json!({"title": "never run", "assignee": "writer"}))
        }
    }))
    .max_iterations(3)
    .build()
    .unwrap();
    let run = team.arun("go").await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(calls.load(Ordering::SeqCst), 4, "the create, then one answer per iteration");
    assert_eq!(run.session_state.as_ref().unwrap()["_team_tasks"]["tasks"][0]["status"], "pending");
}

#[tokio::test]
async fn bad_task_tool_calls_come_back_to_the_leader_as_text() {
    let team = desk(model(|req| {
        let turn = req.messages.iter().filter(|m| m.role == Role::Assistant).count();
        match turn {
            0 => call("update_task_status", &json!({"task_id": "nope", "status": "completed"})),
            1 => call("create_task", &json!({"title": "x", "assignee": "writer"})),
            2 => call("create_task", &json!({"title": "X ", "assignee": "writer"})),
            3 => call("update_task_status", &json!({"task_id": created_ids(req)[0], "status": "blocked"})),
            4 => call("update_task_status", &json!({"task_id": created_ids(req)[0], "status": "sideways"})),
            5 => call("execute_task", &json!({"task_id": created_ids(req)[0], "member_id": "ghost"})),
            6 => call("create_task", &json!({"title": 7})),
            7 => call("mark_all_complete", &json!({"summary": "gave up"})),
            _ => text("done"),
        }
    }))
    .max_iterations(2)
    .build()
    .unwrap();
    let run = team.arun("go").await.unwrap();
    let results: Vec<String> = run.tools.unwrap().iter().filter_map(|t| t.result.clone()).collect();
    assert_eq!(results[0], "Task with ID 'nope' not found.");
    assert!(results[2].starts_with("Task already exists: ["), "titles are unique: {}", results[2]);
    assert!(results[3].starts_with("Cannot manually set status to 'blocked'"), "{}", results[3]);
    assert!(results[4].starts_with("Invalid status 'sideways'"), "{}", results[4]);
    assert!(
        results[5].starts_with("Member with ID ghost not found. Available members: writer, checker"),
        "{}",
        results[5]
    );
    assert!(results[6].contains("`title` must be a string"), "{}", results[6]);
}
