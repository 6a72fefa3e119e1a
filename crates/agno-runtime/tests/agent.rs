//! Behaviour of the agent run loop: tools (sync and async), bad tool arguments, HITL pauses and
//! continue, cancellation, streaming events, history and storage.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agno_core::{
    Db, DynTool, EventData, Message, Model, ModelRequest, ModelResponse, Role, RunStatus, ToolCall, ToolError,
    tool_calls_paired,
};
use agno_db::InMemoryDb;
use agno_models::FunctionModel;
use agno_runtime::{Agent, ContinueRequest, OutputSchema, RunError, RunRequest};
use agno_tools::{Function, Toolkit};
use futures::StreamExt;
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: f64,
    b: f64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NameArgs {
    name: String,
}

fn add_tool() -> Function {
    Function::new("add", "Add two numbers.", |args: AddArgs| async move { Ok(args.a + args.b) })
}

fn model(f: impl Fn(&ModelRequest) -> ModelResponse + Send + Sync + 'static) -> Arc<dyn Model> {
    Arc::new(FunctionModel::new(move |req| Ok(f(req))))
}

fn calls(list: &[(&str, &str, &str)]) -> ModelResponse {
    ModelResponse {
        tool_calls: list.iter().map(|(id, name, args)| ToolCall::new(*id, *name, *args)).collect(),
        ..Default::default()
    }
}

fn text(t: &str) -> ModelResponse {
    ModelResponse { content: t.to_owned(), ..Default::default() }
}

/// Replies with `first` on the first turn of a run, then with the tool results as text.
fn tool_then_answer(first: ModelResponse) -> Arc<dyn Model> {
    model(move |req| {
        if req.messages.last().is_some_and(|m| m.role == Role::User) {
            first.clone()
        } else {
            let results: Vec<String> = req
                .messages
                .iter()
                .filter(|m| m.role == Role::Tool)
                .map(|m| m.content_text().unwrap_or_default().to_owned())
                .collect();
            text(&results.join(" | "))
        }
    })
}

#[test]
fn sync_run_executes_async_and_blocking_tools() {
    let blocking = Function::blocking("greet", "Greet someone.", |args: NameArgs| {
        Ok::<_, ToolError>(format!("hello {}", args.name))
    });
    let agent = Agent::builder(tool_then_answer(calls(&[
        ("c1", "add", r#"{"a": 2, "b": 3}"#),
        ("c2", "greet", r#"{"name": "ann"}"#),
    ])))
    .function(add_tool())
    .function(blocking)
    .build()
    .unwrap();
    let out = agent.run("go").unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.content_text(), "5.0 | hello ann");
    let tools = out.tools.as_ref().unwrap();
    assert_eq!(tools.len(), 2);
    assert!(tools.iter().all(|t| t.tool_call_error == Some(false)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_run_executes_parallel_tool_calls_concurrently() {
    // Each call waits until both have started: sequential execution would never finish.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let b = Arc::clone(&barrier);
    let wait = Function::new("wait_for_peer", "Wait.", move |_: NameArgs| {
        let b = Arc::clone(&b);
        async move {
            b.wait().await;
            Ok("both started")
        }
    });
    let agent = Agent::builder(tool_then_answer(calls(&[
        ("c1", "wait_for_peer", r#"{"name":"x"}"#),
        ("c2", "wait_for_peer", r#"{"name":"y"}"#),
    ])))
    .function(wait)
    .build()
    .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(20), agent.arun("go"))
        .await
        .expect("parallel tool calls must run concurrently")
        .unwrap();
    assert_eq!(out.content_text(), "both started | both started");
}

#[tokio::test]
async fn invalid_tool_arguments_become_an_error_result_and_the_run_completes() {
    let agent = Agent::builder(tool_then_answer(calls(&[
        ("c1", "add", "{not json"),
        ("c2", "add", r#"{"a": "two", "b": 1}"#),
        ("c3", "nope", "{}"),
        ("c4", "add", "[1,2]"),
    ])))
    .function(add_tool())
    .build()
    .unwrap();
    let out = agent.arun("go").await.unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    let tools = out.tools.as_ref().unwrap();
    assert_eq!(tools.len(), 4);
    assert!(tools.iter().all(|t| t.tool_call_error == Some(true)), "{tools:?}");
    let results: Vec<&str> = tools.iter().map(|t| t.result.as_deref().unwrap()).collect();
    assert!(results[0].starts_with("Invalid arguments: arguments are not valid JSON"), "{}", results[0]);
    assert!(results[1].starts_with("Invalid arguments:"), "{}", results[1]);
    assert!(results[2].starts_with("Unknown tool:") && results[2].contains("add"), "{}", results[2]);
    assert!(results[3].contains("must be a JSON object"), "{}", results[3]);
    assert!(tool_calls_paired(out.messages()));
}

#[tokio::test]
async fn a_panicking_tool_is_contained_as_a_tool_error() {
    let boom = Function::new("boom", "Explode.", |_: NameArgs| async move {
        if true {
            panic!("kaboom");
        }
        Ok("unreachable")
    });
    let slow = Function::new("slow", "Too slow.", |_: NameArgs| async move {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Ok("late")
    })
    .timeout(Duration::from_millis(50));
    let agent = Agent::builder(tool_then_answer(calls(&[
        ("c1", "boom", r#"{"name":"x"}"#),
        ("c2", "slow", r#"{"name":"x"}"#),
    ])))
    .function(boom)
    .function(slow)
    .build()
    .unwrap();
    let out = agent.arun("go").await.unwrap();
    let tools = out.tools.unwrap();
    assert!(tools[0].result.as_deref().unwrap().contains("kaboom"));
    assert!(tools[1].result.as_deref().unwrap().starts_with("Tool timed out"));
}

#[tokio::test]
async fn tool_call_limit_turns_extra_calls_into_errors() {
    let agent = Agent::builder(tool_then_answer(calls(&[
        ("c1", "add", r#"{"a":1,"b":1}"#),
        ("c2", "add", r#"{"a":2,"b":2}"#),
    ])))
    .function(add_tool())
    .tool_call_limit(1)
    .build()
    .unwrap();
    let out = agent.arun("go").await.unwrap();
    let tools = out.tools.unwrap();
    assert_eq!(tools[0].result.as_deref(), Some("2.0"));
    assert!(tools[1].result.as_deref().unwrap().starts_with("Tool call limit reached"));
}

fn hitl_agent(tool: Function, db: Arc<dyn Db>) -> Agent {
    Agent::builder(tool_then_answer(calls(&[("c1", DynTool::name(&tool), r#"{"a": 4, "b": 5}"#)])))
        .function(tool)
        .db(db)
        .build()
        .unwrap()
}

#[tokio::test]
async fn confirmation_pause_round_trips_through_continue_run() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let agent = hitl_agent(add_tool().requires_confirmation(), Arc::clone(&db));
    let paused = agent.arun("add please").await.unwrap();
    assert_eq!(paused.status, RunStatus::Paused);
    let mut reqs = paused.requirements.clone().unwrap();
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].needs_confirmation());
    assert_eq!(paused.tools_requiring_confirmation().len(), 1);
    // The paused run is stored.
    let stored = db.get_run(paused.id(), None).await.unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::Paused);

    // Continuing without an answer is refused before anything runs.
    let err = agent.acontinue_run(ContinueRequest::run_id(paused.id(), vec![])).await.unwrap_err();
    assert!(matches!(err, RunError::UnresolvedRequirement { .. }), "{err}");

    reqs[0].confirm();
    let done = agent.acontinue_run(ContinueRequest::run_id(paused.id(), reqs)).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.id(), paused.id());
    assert_eq!(done.content_text(), "9.0");
    let tool = &done.tools.as_ref().unwrap()[0];
    assert_eq!(tool.confirmed, Some(true));
    assert_eq!(tool.result.as_deref(), Some("9.0"));
    assert!(tool_calls_paired(done.messages()));

    // A finished run cannot be continued again.
    let again = agent.acontinue_run(ContinueRequest::run_id(paused.id(), vec![])).await.unwrap_err();
    assert!(matches!(again, RunError::NotPaused { status: RunStatus::Completed, .. }), "{again}");
}

#[tokio::test]
async fn rejection_with_note_reaches_the_model_as_an_error_result() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let agent = hitl_agent(add_tool().requires_confirmation(), db);
    let paused = agent.arun("add please").await.unwrap();
    let mut reqs = paused.requirements.clone().unwrap();
    reqs[0].reject(Some("not today".to_owned()));
    let done = agent.acontinue_run(ContinueRequest::output(paused, reqs)).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    let tool = &done.tools.as_ref().unwrap()[0];
    assert_eq!(tool.confirmed, Some(false));
    assert_eq!(tool.tool_call_error, Some(true));
    assert!(done.content_text().contains("not today"), "{}", done.content_text());
}

#[tokio::test]
async fn user_input_pause_fills_the_arguments() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let agent = hitl_agent(add_tool().requires_user_input(&["b"]), db);
    let paused = agent.arun("add please").await.unwrap();
    assert_eq!(paused.status, RunStatus::Paused);
    let mut reqs = paused.requirements.clone().unwrap();
    assert!(reqs[0].needs_user_input());
    let schema = reqs[0].user_input_schema.clone().unwrap();
    assert_eq!(schema.len(), 1);
    assert_eq!(schema[0].name, "b");
    assert_eq!(schema[0].field_type, "float");
    reqs[0].provide_user_input(json!({"b": 10}).as_object().unwrap());
    let done = agent.acontinue_run(ContinueRequest::run_id(paused.id(), reqs)).await.unwrap();
    assert_eq!(done.content_text(), "14.0");
    assert_eq!(done.tools.as_ref().unwrap()[0].answered, Some(true));
}

#[tokio::test]
async fn external_execution_result_is_used_as_the_tool_result() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let agent = hitl_agent(add_tool().external_execution(), db);
    let paused = agent.arun("add please").await.unwrap();
    assert_eq!(paused.tools_awaiting_external_execution().len(), 1);
    let mut reqs = paused.requirements.clone().unwrap();
    assert!(reqs[0].needs_external_execution());
    reqs[0].set_external_execution_result("42 (computed outside)");
    let done = agent.acontinue_run(ContinueRequest::run_id(paused.id(), reqs)).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.content_text(), "42 (computed outside)");
}

#[test]
fn blocking_continue_run_works_from_sync_code() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let agent = hitl_agent(add_tool().requires_confirmation(), db);
    let paused = agent.run("add please").unwrap();
    let mut request = ContinueRequest::from_paused(paused);
    request.requirements[0].confirm();
    let done = agent.continue_run(request).unwrap();
    assert_eq!(done.content_text(), "9.0");
}

#[tokio::test]
async fn cancelling_a_run_during_a_tool_call_ends_it_cancelled_with_paired_history() {
    let started = Arc::new(tokio::sync::Notify::new());
    let s = Arc::clone(&started);
    let hang = Function::new("hang", "Never returns.", move |_: NameArgs| {
        let s = Arc::clone(&s);
        async move {
            s.notify_one();
            std::future::pending::<()>().await;
            Ok("never")
        }
    });
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let agent = Agent::builder(tool_then_answer(calls(&[("c1", "hang", r#"{"name":"x"}"#)])))
        .function(hang)
        .db(Arc::clone(&db))
        .build()
        .unwrap();
    let run_id = "run-to-cancel";
    let task = tokio::spawn({
        let agent = agent.clone();
        async move { agent.arun(RunRequest::new("go").run_id(run_id)).await }
    });
    tokio::time::timeout(Duration::from_secs(20), started.notified()).await.unwrap();
    assert!(Agent::cancel_run(run_id));
    let out = tokio::time::timeout(Duration::from_secs(20), task).await.unwrap().unwrap().unwrap();
    assert_eq!(out.status, RunStatus::Cancelled);
    assert!(tool_calls_paired(out.messages()));
    let stored = db.get_run(run_id, None).await.unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::Cancelled);
    assert!(stored.tools.unwrap()[0].result.as_deref().unwrap().contains("cancelled"));
}

#[tokio::test]
async fn a_cancel_before_start_is_honoured() {
    let agent = Agent::builder("test").build().unwrap();
    assert!(!Agent::cancel_run("early-cancel"));
    let out = agent.arun(RunRequest::new("hi").run_id("early-cancel")).await.unwrap();
    assert_eq!(out.status, RunStatus::Cancelled);
}

#[tokio::test]
async fn streamed_events_have_strictly_increasing_indexes_and_end_with_completed() {
    let agent = Agent::builder("test").function(add_tool()).build().unwrap();
    let mut stream = agent.run_stream("hello there");
    let mut events = Vec::new();
    while let Some(e) = stream.next().await {
        events.push(e);
    }
    let out = stream.output().await.unwrap();
    let names: Vec<&str> = events.iter().map(|e| e.name()).collect();
    assert_eq!(names.first(), Some(&"RunStarted"));
    assert_eq!(names.last(), Some(&"RunCompleted"));
    for needed in ["ToolCallStarted", "ToolCallCompleted", "RunContent", "RunContentCompleted"] {
        assert!(names.contains(&needed), "{needed} missing from {names:?}");
    }
    let indexes: Vec<u64> = events.iter().map(|e| e.event_index.unwrap()).collect();
    assert!(indexes.windows(2).all(|w| w[0] < w[1]), "{indexes:?}");
    assert!(events.iter().all(|e| e.run_id.as_deref() == Some(out.id())));
    let streamed: String = events.iter().filter_map(|e| e.content_delta()).collect();
    assert_eq!(streamed, out.content_text());
    // Events serialize with Agno's event names.
    let json = serde_json::to_value(&events[0]).unwrap();
    assert_eq!(json["event"], "RunStarted");
}

#[tokio::test]
async fn a_failing_model_ends_the_stream_with_run_error_carrying_the_cause() {
    let failing: Arc<dyn Model> = Arc::new(FunctionModel::new(|_| {
        Err(agno_core::ModelError::new(agno_core::ModelErrorKind::Auth, "provider said: bad key"))
    }));
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let agent = Agent::builder(failing).db(Arc::clone(&db)).build().unwrap();
    let mut stream = agent.run_stream("hi");
    let mut last = None;
    while let Some(e) = stream.next().await {
        last = Some(e);
    }
    let last = last.unwrap();
    match &last.data {
        EventData::RunError { content, error_id, .. } => {
            assert!(content.as_ref().unwrap().as_str().unwrap().contains("bad key"));
            assert_eq!(error_id.as_deref(), Some("model_authentication_error"));
        }
        other => panic!("last event is {other:?}"),
    }
    let err = stream.output().await.unwrap_err();
    let run = err.run().unwrap();
    assert_eq!(run.status, RunStatus::Error);
    let stored = db.get_run(run.id(), None).await.unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::Error);
}

#[tokio::test]
async fn history_from_the_db_is_sent_on_the_next_run() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::<Vec<Message>>::new()));
    let s = Arc::clone(&seen);
    let m = model(move |req| {
        s.lock().unwrap().push(req.messages.clone());
        text(&format!("answer {}", req.messages.len()))
    });
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let agent = Agent::builder(m).db(Arc::clone(&db)).add_history_to_context(true).build().unwrap();
    agent.arun(RunRequest::new("first").session_id("s1")).await.unwrap();
    agent.arun(RunRequest::new("second").session_id("s1")).await.unwrap();
    agent.arun(RunRequest::new("other session").session_id("s2")).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    let second: Vec<&str> = seen[1].iter().filter_map(Message::content_text).collect();
    assert_eq!(second, vec!["first", "answer 1", "second"]);
    assert!(seen[1][0].from_history && seen[1][1].from_history && !seen[1][2].from_history);
    assert_eq!(seen[2].len(), 1, "a different session has no history");
    let session = db.get_session("s1", None, None).await.unwrap().unwrap();
    assert_eq!(session.runs().len(), 2);
    // Stored runs keep only their own messages.
    assert!(session.runs()[1].messages().iter().all(|m| !m.from_history));
}

#[tokio::test]
async fn session_state_is_visible_to_tools_and_persisted() {
    let counter = Function::with_context("bump", "Bump a counter.", |_: NameArgs, ctx| async move {
        let mut state = ctx.session_state.lock().map_err(|_| ToolError::execution("state lock"))?;
        let n = state.get("count").and_then(Value::as_i64).unwrap_or(0) + 1;
        state.insert("count".to_owned(), json!(n));
        Ok(n)
    });
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let agent = Agent::builder(tool_then_answer(calls(&[("c1", "bump", r#"{"name":"x"}"#)])))
        .function(counter)
        .db(Arc::clone(&db))
        .build()
        .unwrap();
    agent.arun(RunRequest::new("go").session_id("st")).await.unwrap();
    let out = agent.arun(RunRequest::new("go").session_id("st")).await.unwrap();
    assert_eq!(out.content_text(), "2");
    let session = db.get_session("st", None, None).await.unwrap().unwrap();
    assert_eq!(session.session_state().unwrap()["count"], json!(2));
}

#[tokio::test]
async fn structured_output_from_the_test_model_matches_the_schema() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct City {
        name: String,
        population: u64,
    }
    let agent = Agent::builder("test").output_schema(OutputSchema::of::<City>()).build().unwrap();
    let out = agent.arun("Tell me about Paris").await.unwrap();
    assert_eq!(out.content_type, "City");
    let city: City = serde_json::from_value(out.content.clone().unwrap()).unwrap();
    assert_eq!(city.name, "test");
}

#[tokio::test]
async fn structured_output_gets_one_corrective_turn_then_fails_clearly() {
    let turns = Arc::new(AtomicUsize::new(0));
    let t = Arc::clone(&turns);
    let m = model(move |_| {
        t.fetch_add(1, Ordering::SeqCst);
        text("not json at all")
    });
    let schema =
        OutputSchema::new("Thing", json!({"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}));
    let agent = Agent::builder(m).output_schema(schema).build().unwrap();
    let err = agent.arun("go").await.unwrap_err();
    assert!(matches!(err, RunError::OutputSchema { .. }), "{err}");
    assert_eq!(turns.load(Ordering::SeqCst), 2);
}

#[test]
fn toolkit_flags_new_names_old_names_and_stable_ids() {
    let calc = agno_tools::builtin::calculator();
    assert_eq!(calc.id(), "calculator");
    let names = |t: &Toolkit| t.tools().iter().map(|t| t.name().to_owned()).collect::<Vec<_>>();
    let new_style = calc.clone().set("factorial", false).unwrap();
    assert!(!names(&new_style).contains(&"factorial".to_owned()));
    let old_style = calc.clone().set_legacy("enable_factorial", false).unwrap();
    assert_eq!(names(&old_style), names(&new_style));
    let configured = calc.configure(json!({"enable_add": false}).as_object().unwrap(), &[]).unwrap();
    assert!(!names(&configured).contains(&"add".to_owned()));
    let agent = Agent::builder("test").toolkit(&new_style).build().unwrap();
    assert_eq!(agent.tools().len(), 7);
}

#[test]
fn duplicate_tool_names_and_unknown_providers_are_build_errors() {
    let err = Agent::builder("test").function(add_tool()).function(add_tool()).build().unwrap_err();
    assert!(err.to_string().contains("duplicate tool name"), "{err}");
    let err = Agent::builder("nope:model").build().unwrap_err();
    assert!(err.to_string().contains("unknown model provider"), "{err}");
}
