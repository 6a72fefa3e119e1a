//! Workflows: every primitive, content chaining, retries and skips, session state, agent steps,
//! storage in Agno's shape (read back by Python Agno 3.1), cancellation, and build-time checks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agno_core::{Db, ModelResponse, RunQuery, RunStatus, StepOutput, WorkflowEvent};
use agno_db::{InMemoryDb, SqliteDb};
use agno_models::FunctionModel;
use agno_runtime::workflow::{
    Condition, EndCondition, Evaluator, Executor, Loop, Parallel, Router, Selector, Step, StepError, StepNode, Steps,
    Workflow, WorkflowRunRequest,
};
use agno_runtime::{Agent, BuildError, RunError};
use futures::StreamExt;
use serde_json::{Value, json};

fn shout() -> Executor {
    Executor::function(|input| async move { Ok(StepOutput::content(input.input_text().to_uppercase())) })
}

fn add_x() -> Executor {
    Executor::function(|input| async move { Ok(StepOutput::content(format!("{}x", input.previous_step_text()))) })
}

fn step(name: &str, executor: Executor) -> StepNode {
    Step { name: name.into(), executor, ..Step::default() }.into()
}

/// The reference workflow of `scripts/interop/agno_interop.py workflow-shape`: one of each
/// primitive over function steps.
fn reference_workflow(db: Option<Arc<dyn Db>>) -> Workflow {
    let mut builder = Workflow::builder()
        .id("shape")
        .name("Shape")
        .step(step("shout", shout()))
        .step(Steps { name: "group".into(), steps: vec![step("g1", add_x()), step("g2", add_x())], ..Steps::default() })
        .step(Loop { name: "loop".into(), steps: vec![step("l1", add_x())], max_iterations: 2, ..Loop::default() })
        .step(Condition {
            name: "yes".into(),
            evaluator: Evaluator::Bool(true),
            steps: vec![step("c1", add_x())],
            ..Condition::default()
        })
        .step(Condition {
            name: "no".into(),
            evaluator: Evaluator::Bool(false),
            steps: vec![step("c2", add_x())],
            ..Condition::default()
        })
        .step(Router {
            name: "route".into(),
            choices: vec![step("a", add_x()), step("b", add_x())],
            selector: Selector::new(|_, _| vec!["b".to_owned()]),
            ..Router::default()
        })
        .step(Parallel {
            name: "par".into(),
            steps: vec![step("p1", add_x()), step("p2", add_x())],
            ..Parallel::default()
        });
    if let Some(db) = db {
        builder = builder.db(db);
    }
    builder.build().unwrap()
}

/// What both implementations must agree on in a step result (ids differ by nature; a Rust
/// closure has no name, so a function step's `executor_name` is its step's name).
fn comparable(steps: &Value) -> Value {
    Value::Array(
        steps
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let mut out = serde_json::Map::new();
                for key in
                    ["content", "step_name", "step_type", "executor_type", "success", "error", "stop", "is_paused"]
                {
                    out.insert(key.to_owned(), s[key].clone());
                }
                if s["executor_type"] != "function" {
                    out.insert("executor_name".to_owned(), s["executor_name"].clone());
                }
                if let Some(inner) = s.get("steps") {
                    out.insert("steps".to_owned(), comparable(inner));
                }
                Value::Object(out)
            })
            .collect(),
    )
}

fn event_triples(events: &[WorkflowEvent]) -> Vec<Value> {
    events.iter().map(|e| json!([e.name(), e.step_name, e.step_index])).collect()
}

/// The workflow events of a stream, to its end.
async fn workflow_events(stream: &mut agno_runtime::workflow::WorkflowStream) -> Vec<WorkflowEvent> {
    let mut events = Vec::new();
    while let Some(e) = stream.next().await {
        events.extend(e.as_workflow().cloned());
    }
    events
}

#[tokio::test]
async fn every_primitive_chains_content_and_streams_agnos_events() {
    let wf = reference_workflow(None);
    let mut stream = wf.run_stream(WorkflowRunRequest::from("hello world").session_id("s"));
    let events = workflow_events(&mut stream).await;
    let run = stream.output().await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.content_text(), "HELLO WORLDxxxxxx");
    let indexes: Vec<u64> = events.iter().map(|e| e.event_index.unwrap()).collect();
    assert!(indexes.windows(2).all(|w| w[0] < w[1]), "event_index strictly increases: {indexes:?}");
    let names: Vec<&str> = events.iter().map(WorkflowEvent::name).collect();
    assert_eq!(names.first(), Some(&"WorkflowStarted"));
    assert_eq!(names.last(), Some(&"WorkflowCompleted"));
    let results = run.extra["step_results"].as_array().unwrap();
    let top: Vec<&str> = results.iter().map(|r| r["step_name"].as_str().unwrap()).collect();
    // The unmet condition without an else branch leaves no result, as in Agno.
    assert_eq!(top, ["shout", "group", "loop", "yes", "route", "par"]);
    assert_eq!(results[2]["steps"][1]["content"], "HELLO WORLDxxx", "each iteration starts from the loop's input");
    assert_eq!(results[4]["steps"][0]["step_name"], "b");
}

/// The same workflow run by Python Agno 3.1 streams the same events (name, step, index) and
/// stores the same step results.
#[tokio::test]
async fn the_reference_workflow_matches_python_agno_event_for_event() {
    let Some(py) = agno_testkit::agno_python("the workflow shape comparison with Python Agno") else { return };
    let dir = std::env::temp_dir().join("agno-rs-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("wf-shape-{}.db", agno_core::new_id()));
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/agno_interop.py");
    let out = Command::new(&py)
        .arg(&script)
        .args(["workflow-shape", file.to_str().unwrap(), "py-shape"])
        .env("AGNO_TELEMETRY", "false")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let theirs: Value = serde_json::from_str(stdout.lines().rev().find(|l| l.starts_with('{')).unwrap()).unwrap();

    let wf = reference_workflow(None);
    let mut stream = wf.run_stream("hello world");
    let events = workflow_events(&mut stream).await;
    let run = stream.output().await.unwrap();
    assert_eq!(Value::Array(event_triples(&events)), theirs["events"]);
    assert_eq!(comparable(&run.extra["step_results"]), comparable(&theirs["run"]["step_results"]));
    assert_eq!(run.content, Some(theirs["run"]["content"].clone()));
}

#[tokio::test]
async fn loops_end_on_their_condition_and_can_forward_each_iteration() {
    let wf = Workflow::builder()
        .step(step("seed", Executor::function(|_| async { Ok(StepOutput::content("")) })))
        .step(Loop {
            name: "grow".into(),
            steps: vec![step("add", add_x())],
            max_iterations: 10,
            forward_iteration_output: true,
            end_condition: Some(EndCondition::new(|outputs| {
                outputs.last().is_some_and(|o| o.content_text().len() >= 3)
            })),
            ..Loop::default()
        })
        .build()
        .unwrap();
    let mut stream = wf.run_stream("go");
    let mut completed = Vec::new();
    for e in workflow_events(&mut stream).await {
        if let agno_core::WorkflowEventData::LoopIterationCompleted { iteration, should_continue, .. } = e.data {
            completed.push((iteration, should_continue));
        }
    }
    let run = stream.output().await.unwrap();
    assert_eq!(run.content_text(), "xxx");
    assert_eq!(completed, [(1, true), (2, true), (3, false)]);

    // Without forwarding, every iteration starts from the loop's input; the limit ends it.
    let wf = Workflow::builder()
        .step(step("seed", Executor::function(|_| async { Ok(StepOutput::content("s")) })))
        .step(Loop { name: "same".into(), steps: vec![step("add", add_x())], max_iterations: 4, ..Loop::default() })
        .build()
        .unwrap();
    let run = wf.arun("go").await.unwrap();
    let inner = run.extra["step_results"][1]["steps"].as_array().unwrap();
    assert_eq!(inner.len(), 4);
    assert!(inner.iter().all(|o| o["content"] == "sx"));
    assert_eq!(run.extra["step_results"][1]["content"], "Loop same completed 4 iterations with 4 total steps");
}

#[tokio::test]
async fn conditions_take_the_else_branch_and_evaluate_expressions_over_input_and_state() {
    let branchy = |evaluator: Evaluator| {
        Workflow::builder()
            .session_state(json!({"tier": "pro"}).as_object().unwrap().clone())
            .step(Condition {
                name: "check".into(),
                evaluator,
                steps: vec![step("then", Executor::function(|_| async { Ok(StepOutput::content("then")) }))],
                else_steps: vec![step("otherwise", Executor::function(|_| async { Ok(StepOutput::content("else")) }))],
                ..Condition::default()
            })
            .build()
            .unwrap()
    };
    let pro = Evaluator::expression(r#"session_state.tier == "pro" && input.contains("refund")"#).unwrap();
    assert_eq!(branchy(pro.clone()).arun("refund please").await.unwrap().content_text(), "then");
    assert_eq!(branchy(pro).arun("hello").await.unwrap().content_text(), "else");
    let by_fn = Evaluator::function(|input| input.input_text().len() > 3);
    assert_eq!(branchy(by_fn.clone()).arun("long input").await.unwrap().content_text(), "then");
    assert_eq!(branchy(by_fn).arun("abc").await.unwrap().content_text(), "else");
    let run = branchy(Evaluator::Bool(false)).arun("x").await.unwrap();
    assert_eq!(run.extra["step_results"][0]["content"], "Condition check completed with 1 results (else branch)");
    let err = Evaluator::expression("session_state.tier ==").unwrap_err();
    assert!(err.to_string().contains("offset 21"), "{err}");
}

#[tokio::test]
async fn routers_run_every_selected_choice_in_order_and_refuse_an_unknown_one() {
    let choices = || {
        vec![
            step("english", Executor::function(|_| async { Ok(StepOutput::content("hello")) })),
            step("french", Executor::function(|_| async { Ok(StepOutput::content("bonjour")) })),
            step("german", Executor::function(|_| async { Ok(StepOutput::content("hallo")) })),
        ]
    };
    let wf = Workflow::builder()
        .step(Router {
            name: "lang".into(),
            choices: choices(),
            selector: Selector::new(|input, names| {
                assert_eq!(names, ["english", "french", "german"]);
                input.input_text().split(',').map(str::to_owned).collect()
            }),
            ..Router::default()
        })
        .build()
        .unwrap();
    let run = wf.arun("german,english").await.unwrap();
    let ran: Vec<&str> = run.extra["step_results"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step_name"].as_str().unwrap())
        .collect();
    assert_eq!(ran, ["german", "english"]);
    assert_eq!(run.content_text(), "hello");

    let err = wf.arun("klingon").await.unwrap_err();
    let RunError::StepFailed { step, message, run } = err else { panic!("expected StepFailed") };
    assert_eq!(step, "lang");
    assert!(message.contains(r#"selected "klingon""#) && message.contains("english, french, german"), "{message}");
    assert_eq!(run.status, RunStatus::Error);
}

#[tokio::test]
async fn parallel_branches_run_at_the_same_time_on_the_same_input() {
    // Each branch waits for the other: run one after the other, they would never finish.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let branch = |name: &'static str| {
        let barrier = Arc::clone(&barrier);
        step(
            name,
            Executor::function(move |input| {
                let barrier = Arc::clone(&barrier);
                async move {
                    barrier.wait().await;
                    Ok(StepOutput::content(format!("{name}:{}", input.previous_step_text())))
                }
            }),
        )
    };
    let wf = Workflow::builder()
        .step(step("seed", Executor::function(|_| async { Ok(StepOutput::content("in")) })))
        .step(Parallel { name: "both".into(), steps: vec![branch("left"), branch("right")], ..Parallel::default() })
        .build()
        .unwrap();
    let run =
        tokio::time::timeout(Duration::from_secs(10), wf.arun("go")).await.expect("branches ran concurrently").unwrap();
    let par = &run.extra["step_results"][1];
    assert_eq!(par["steps"][0]["content"], "left:in");
    assert_eq!(par["steps"][1]["content"], "right:in");
    assert_eq!(
        par["content"],
        "## Parallel Execution Results\n\n### ✅ SUCCESS: left\nleft:in\n\n### ✅ SUCCESS: right\nright:in"
    );
}

#[tokio::test]
async fn a_loop_inside_a_condition_inside_parallel_runs_with_nested_indexes() {
    let wf = Workflow::builder()
        .step(step("seed", Executor::function(|_| async { Ok(StepOutput::content("")) })))
        .step(Parallel {
            name: "outer".into(),
            steps: vec![
                Condition {
                    name: "gate".into(),
                    evaluator: Evaluator::expression(r#"previous_step_content == """#).unwrap(),
                    steps: vec![
                        Loop {
                            name: "spin".into(),
                            steps: vec![step("tick", add_x())],
                            max_iterations: 3,
                            forward_iteration_output: true,
                            ..Loop::default()
                        }
                        .into(),
                    ],
                    ..Condition::default()
                }
                .into(),
                step("side", add_x()),
            ],
            ..Parallel::default()
        })
        .build()
        .unwrap();
    let mut stream = wf.run_stream("go");
    let mut ticks = Vec::new();
    for e in workflow_events(&mut stream).await {
        if e.name() == "StepStarted" && e.step_name.as_deref() == Some("tick") {
            ticks.push(e.step_index.clone().unwrap());
        }
    }
    let run = stream.output().await.unwrap();
    assert_eq!(ticks, vec![json!([1, 0, 0, 0]); 3]);
    let gate = &run.extra["step_results"][1]["steps"][0];
    assert_eq!(gate["step_type"], "Condition");
    assert_eq!(gate["steps"][0]["steps"][2]["content"], "xxx");
    assert_eq!(run.extra["step_results"][1]["steps"][1]["content"], "x");
}

#[tokio::test]
async fn failing_steps_are_retried_then_skipped_or_fail_the_run() {
    let calls = Arc::new(AtomicUsize::new(0));
    let flaky = {
        let calls = Arc::clone(&calls);
        Executor::function(move |_| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if n < 2 { Err(StepError::new(format!("attempt {n} failed"))) } else { Ok(StepOutput::content("ok")) }
            }
        })
    };
    let wf = Workflow::builder()
        .step(Step { name: "flaky".into(), executor: flaky, max_retries: 3, ..Step::default() })
        .build()
        .unwrap();
    assert_eq!(wf.arun("go").await.unwrap().content_text(), "ok");
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    let always = Arc::new(AtomicUsize::new(0));
    let broken = {
        let always = Arc::clone(&always);
        Executor::function(move |_| {
            always.fetch_add(1, Ordering::SeqCst);
            async { Err(StepError::new("boom")) }
        })
    };
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let skipping = Workflow::builder()
        .db(Arc::clone(&db))
        .step(Step {
            name: "broken".into(),
            executor: broken.clone(),
            max_retries: 1,
            skip_on_failure: true,
            ..Step::default()
        })
        .step(step("after", add_x()))
        .build()
        .unwrap();
    let run = skipping.arun("go").await.unwrap();
    assert_eq!(always.load(Ordering::SeqCst), 2, "one try and one retry");
    let first = &run.extra["step_results"][0];
    assert_eq!(first["success"], false);
    assert_eq!(first["error"], "boom");
    assert_eq!(run.content_text(), "Step broken failed but skippedx", "Agno's text; the error is in `error`");

    let failing = Workflow::builder()
        .db(Arc::clone(&db))
        .step(step("first", shout()))
        .step(Step { name: "broken".into(), executor: broken, max_retries: 0, ..Step::default() })
        .step(step("never", add_x()))
        .build()
        .unwrap();
    let err = failing.arun(WorkflowRunRequest::from("go").session_id("fail-session")).await.unwrap_err();
    assert_eq!(err.error_id(), "workflow_step_failed");
    let stored = db.get_run(err.run().unwrap().id(), None).await.unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::Error);
    let names: Vec<&str> =
        stored.extra["step_results"].as_array().unwrap().iter().map(|s| s["step_name"].as_str().unwrap()).collect();
    assert_eq!(names, ["first"], "what completed before the failure is kept; nothing after it ran");
}

#[tokio::test]
async fn steps_share_session_state_which_is_stored_on_the_workflow_session() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let counter = Executor::function(|input| async move {
        let n = input.session_state.get("count").and_then(|v| v.as_i64()).unwrap_or(0) + 1;
        input.session_state.set("count", json!(n));
        Ok(StepOutput::content(format!("count={n}")))
    });
    let wf = Workflow::builder()
        .id("counter")
        .db(Arc::clone(&db))
        .session_state(json!({"count": 10}).as_object().unwrap().clone())
        .step(Step { name: "one".into(), executor: counter.clone(), ..Step::default() })
        .step(Parallel {
            name: "two".into(),
            steps: vec![step("a", counter.clone()), step("b", counter)],
            ..Parallel::default()
        })
        .build()
        .unwrap();
    wf.arun(WorkflowRunRequest::from("go").session_id("state").user_id("u")).await.unwrap();
    let run = wf.arun(WorkflowRunRequest::from("again").session_id("state").user_id("u")).await.unwrap();
    assert_eq!(run.extra["step_results"][0]["content"], "count=14");
    let session = db.get_session("state", Some("u"), None).await.unwrap().unwrap();
    assert_eq!(session.session_state().unwrap()["count"], 16);
    assert_eq!(session.workflow_id.as_deref(), Some("counter"));
    assert_eq!(session.runs().len(), 2);
    assert_eq!(
        session.extra["workflow_data"]["steps"][1],
        json!({"name": "two", "description": null, "type": "Parallel"})
    );
}

#[tokio::test]
async fn agent_steps_answer_the_previous_content_and_are_kept_inside_the_workflow_run() {
    let model = Arc::new(FunctionModel::new(|req| {
        let last = req.messages.last().and_then(|m| m.content_text()).unwrap_or_default().to_owned();
        Ok(ModelResponse { content: format!("agent saw [{last}]"), ..Default::default() })
    }));
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let agent = Agent::builder(model).id("writer").name("Writer").db(Arc::clone(&db)).build().unwrap();
    let wf = Workflow::builder()
        .id("pipeline")
        .db(Arc::clone(&db))
        .step(step("shout", shout()))
        .step(step("write", Executor::agent(agent)))
        .build()
        .unwrap();
    let run = wf.arun(WorkflowRunRequest::from("topic").session_id("wf-s").user_id("u")).await.unwrap();
    assert_eq!(run.content_text(), "agent saw [TOPIC]");
    let write = &run.extra["step_results"][1];
    assert_eq!(write["executor_type"], "agent");
    assert_eq!(write["executor_name"], "Writer");
    let agent_run_id = write["step_run_id"].as_str().unwrap();
    let executor_runs = run.extra["step_executor_runs"].as_array().unwrap();
    assert_eq!(executor_runs.len(), 1);
    assert_eq!(executor_runs[0]["run_id"], agent_run_id);
    assert_eq!(executor_runs[0]["parent_run_id"], run.id());
    assert!(executor_runs[0].get("workflow_id").is_none(), "as Agno: the step's agent run names its parent run only");
    // As in Agno, the agent's run lives inside the workflow run, not as a session of its own.
    assert!(db.get_run(agent_run_id, None).await.unwrap().is_none());
    let page = db.get_runs(&RunQuery { session_id: Some("wf-s".into()), ..Default::default() }).await.unwrap();
    assert_eq!(page.runs.len(), 1);
    assert_eq!(page.runs[0].id(), run.id());
}

#[tokio::test]
async fn a_cancel_stops_a_running_step_and_stores_the_run_cancelled() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let slow = Executor::function(|_| async {
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok(StepOutput::content("too late"))
    });
    let wf = Workflow::builder()
        .db(Arc::clone(&db))
        .step(step("quick", shout()))
        .step(step("slow", slow))
        .step(step("never", add_x()))
        .build()
        .unwrap();
    let mut stream = wf.run_stream(WorkflowRunRequest::from("go").run_id("wf-cancel-1"));
    let mut last = None;
    while let Some(e) = stream.next().await {
        let Some(e) = e.as_workflow() else { continue };
        if e.name() == "StepStarted" && e.step_name.as_deref() == Some("slow") {
            assert!(agno_runtime::cancel_run("wf-cancel-1"));
            last = Some(Instant::now());
        }
        if e.name() == "WorkflowCancelled" {
            break;
        }
    }
    let run = stream.output().await.unwrap();
    let stopped_in = last.expect("the slow step started").elapsed();
    assert!(stopped_in < Duration::from_secs(30), "the 60 s step was interrupted ({stopped_in:?})");
    assert_eq!(run.status, RunStatus::Cancelled);
    let stored = db.get_run("wf-cancel-1", None).await.unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::Cancelled);
    let names: Vec<&str> =
        stored.extra["step_results"].as_array().unwrap().iter().map(|s| s["step_name"].as_str().unwrap()).collect();
    assert_eq!(names, ["quick"]);
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[tokio::test]
async fn a_cancel_reaches_an_agent_inside_its_tool_call() {
    // The agent's model calls `hang`, which tells the test it started and then waits 60 s.
    let entered = Arc::new(tokio::sync::Notify::new());
    let hang = {
        let entered = Arc::clone(&entered);
        agno_tools::Function::new("hang", "Wait a minute.", move |_: NoArgs| {
            let entered = Arc::clone(&entered);
            async move {
                entered.notify_one();
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok("too late")
            }
        })
    };
    let agent = Agent::builder(Arc::new(agno_models::TestModel::new()) as Arc<dyn agno_core::Model>)
        .id("stuck")
        .function(hang)
        .build()
        .unwrap();
    let wf = Workflow::builder().step(step("think", Executor::agent(agent))).build().unwrap();
    let stream = wf.run_stream(WorkflowRunRequest::from("go").run_id("wf-cancel-agent"));
    tokio::time::timeout(Duration::from_secs(10), entered.notified()).await.expect("the tool call started");
    let asked = Instant::now();
    assert!(agno_runtime::cancel_run("wf-cancel-agent"));
    let run = tokio::time::timeout(Duration::from_secs(10), stream.output()).await.expect("stopped promptly").unwrap();
    eprintln!("workflow stopped {:?} after the cancel, inside the agent's tool call", asked.elapsed());
    assert_eq!(run.status, RunStatus::Cancelled);
    let executor_runs = run.extra["step_executor_runs"].as_array().unwrap();
    assert_eq!(executor_runs[0]["status"], "CANCELLED", "the agent's own run ended cancelled");
}

#[tokio::test]
async fn workflows_with_bad_steps_are_refused_when_built_naming_the_step() {
    let refused = |b: agno_runtime::workflow::WorkflowBuilder| match b.build() {
        Err(BuildError::Invalid { why, .. }) => why,
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert!(refused(Workflow::builder()).contains("at least one step"));
    assert!(
        refused(Workflow::builder().step(Step { name: "empty".into(), ..Step::default() }))
            .contains(r#"steps[0] "empty" has no executor"#)
    );
    assert!(refused(Workflow::builder().step(step("", shout()))).contains("steps[0] (Step) has no name"));
    assert!(
        refused(Workflow::builder().step(step("same", shout())).step(step("same", shout())))
            .contains(r#"named "same""#)
    );
    let why = refused(Workflow::builder().step(Loop {
        name: "l".into(),
        steps: vec![step("s", shout())],
        max_iterations: 0,
        ..Loop::default()
    }));
    assert!(why.contains("max_iterations"), "{why}");
    let why = refused(Workflow::builder().step(Steps {
        name: "outer".into(),
        steps: vec![
                Parallel {
                    name: "p".into(),
                    steps: vec![Step { name: "bare".into(), ..Step::default() }.into()],
                    ..Parallel::default()
                }
                .into(),
            ],
        ..Steps::default()
    }));
    assert!(why.contains(r#"steps[0] "outer".steps[0] "p".steps[0] "bare" has no executor"#), "{why}");
    assert!(refused(Workflow::builder().step(Router { name: "r".into(), ..Router::default() })).contains("no choices"));
}

/// A workflow run stored by agno-rs is read by Python Agno 3.1 (`get_runs`, `get_session`) and
/// equals, field for field, what agno-rs reads back.
#[tokio::test]
async fn python_agno_reads_the_workflow_runs_agno_rs_stored() {
    let Some(py) = agno_testkit::agno_python("the workflow interop check with Python Agno") else { return };
    let dir = std::env::temp_dir().join("agno-rs-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("wf-rs-{}.db", agno_core::new_id()));
    let sqlite = SqliteDb::connect(file.to_str().unwrap()).await.unwrap();
    sqlite.create_tables().await.unwrap();
    let db: Arc<dyn Db> = Arc::new(sqlite);
    let wf = reference_workflow(Some(Arc::clone(&db)));
    for input in ["hello world", "second"] {
        wf.arun(WorkflowRunRequest::from(input).session_id("rs-wf").user_id("py-user")).await.unwrap();
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/agno_interop.py");
    let out = Command::new(&py)
        .arg(&script)
        .args(["read-workflow", file.to_str().unwrap(), "rs-wf"])
        .env("AGNO_TELEMETRY", "false")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let theirs: Value = serde_json::from_str(stdout.lines().rev().find(|l| l.starts_with('{')).unwrap()).unwrap();
    let session = &theirs["workflow_session"];
    assert_eq!(session["workflow_id"], "shape");
    assert_eq!(session["workflow_data"]["name"], "Shape");
    let py_runs = theirs["workflow_runs"].as_array().unwrap();
    assert_eq!(py_runs.len(), 2);
    let ours = db.get_runs(&RunQuery { session_id: Some("rs-wf".into()), ..Default::default() }).await.unwrap();
    assert_eq!(ours.runs.len(), 2);
    for ours in &ours.runs {
        let theirs = py_runs.iter().find(|r| r["run_id"] == ours.id()).expect("Python reads every run");
        assert_eq!(&serde_json::to_value(ours).unwrap(), theirs, "run {}", ours.id());
    }
    let first = py_runs.iter().find(|r| r["input"] == "hello world").unwrap();
    assert_eq!(first["status"], "COMPLETED");
    assert_eq!(first["content"], "HELLO WORLDxxxxxx");
    assert_eq!(first["step_results"].as_array().unwrap().len(), 6);
}
