//! Workflow benchmark: the framework's own cost per step, beside Python Agno 3.1 running the same
//! shapes on this machine (`scripts/bench/workflow_overhead.py`, when `AGNO_PYTHON` points at a
//! Python with `agno==3.1.*`).
//!
//! Shapes: ten sequential function steps; the same ten leaf steps spread over every primitive
//! (Steps, Loop, Condition, Router, Parallel); ten sequential function steps stored in SQLite
//! (the run written when it starts, after each step and at the end); five agent steps, and a team
//! run whose leader delegates to five members, all on an offline model that answers at once in one
//! piece (Python: the same shapes on the script's `BenchModel`, which answers the same text).
//!
//! Run with `cargo bench -p agno-runtime --bench workflow`. It prints figures and asserts no
//! timings (only that runs complete, so the figures measure the intended work).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::time::Instant;

use agno_core::{Db, Model, RunStatus, StepOutput};
use agno_db::SqliteDb;
use agno_models::TestModel;
use agno_runtime::Agent;
use agno_runtime::workflow::{
    Condition, Evaluator, Executor, Loop, Parallel, Router, Selector, Step, StepNode, Steps, Workflow,
};

const RUNS: usize = 2_000;
const DB_RUNS: usize = 200;
const BATCHES: usize = 5;

fn add_x() -> Executor {
    Executor::function(|input| async move { Ok(StepOutput::content(format!("{}x", input.previous_step_text()))) })
}

fn step(name: &str, executor: Executor) -> StepNode {
    Step { name: name.into(), executor, ..Step::default() }.into()
}

fn sequential(db: Option<Arc<dyn Db>>) -> Workflow {
    let mut b = Workflow::builder().id("seq").steps((0..10).map(|i| step(&format!("s{i}"), add_x())));
    if let Some(db) = db {
        b = b.db(db);
    }
    b.build().unwrap()
}

fn mixed() -> Workflow {
    Workflow::builder()
        .id("mixed")
        .step(step("first", add_x()))
        .step(Steps { name: "group".into(), steps: vec![step("g1", add_x()), step("g2", add_x())], ..Steps::default() })
        .step(Loop { name: "loop".into(), steps: vec![step("l1", add_x())], max_iterations: 3, ..Loop::default() })
        .step(Condition {
            name: "cond".into(),
            evaluator: Evaluator::Bool(true),
            steps: vec![step("c1", add_x())],
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
        })
        .build()
        .unwrap()
}

/// Answers at once, in one piece, as `TestModel` words it ("This is the test model answering:
/// <input>"): the same model as the Python script's `BenchModel`, so both sides measure the
/// framework around the same answer.
fn echo_model() -> Arc<dyn Model> {
    use agno_core::{ModelResponse, Role};
    Arc::new(agno_models::FunctionModel::new(|req| {
        let input = req.messages.iter().rev().find(|m| m.role == Role::User).and_then(|m| m.content_text());
        Ok(ModelResponse {
            content: format!("This is the test model answering: {}", input.unwrap_or_default()),
            ..Default::default()
        })
    }))
}

fn agents() -> Workflow {
    let model = echo_model();
    let agent = Agent::builder(model).id("writer").build().unwrap();
    Workflow::builder()
        .id("agents")
        .steps((0..5).map(|i| step(&format!("a{i}"), Executor::agent(agent.clone()))))
        .build()
        .unwrap()
}

/// A team whose leader (a `FunctionModel`) delegates to each of its five members (on
/// [`echo_model`]) in one turn, then answers.
fn team() -> agno_runtime::team::Team {
    use agno_core::{ModelResponse, Role, ToolCall};
    let leader: Arc<dyn Model> = Arc::new(agno_models::FunctionModel::new(|req| {
        Ok(if req.messages.last().is_some_and(|m| m.role == Role::User) {
            ModelResponse {
                tool_calls: (0..5)
                    .map(|i| {
                        ToolCall::new(
                            format!("c{i}"),
                            "delegate_task_to_member",
                            format!(r#"{{"member_id":"m{i}","task":"part {i}"}}"#),
                        )
                    })
                    .collect(),
                ..Default::default()
            }
        } else {
            ModelResponse { content: "done".into(), ..Default::default() }
        })
    }));
    let member_model = echo_model();
    let mut builder = agno_runtime::team::Team::builder().id("bench-team").model(leader);
    for i in 0..5 {
        builder = builder.member(Agent::builder(Arc::clone(&member_model)).id(format!("m{i}")).build().unwrap());
    }
    builder.build().unwrap()
}

/// Median over batches of µs per team run.
async fn measure_team(team: &agno_runtime::team::Team, runs: usize) -> f64 {
    for _ in 0..(runs / 20).max(10) {
        team.arun("hello").await.unwrap();
    }
    let mut batches = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        let start = Instant::now();
        for _ in 0..runs {
            let run = team.arun("hello").await.unwrap();
            assert_eq!(run.status, RunStatus::Completed);
        }
        batches.push(start.elapsed().as_secs_f64() * 1e6 / runs as f64);
    }
    batches.sort_by(f64::total_cmp);
    batches[BATCHES / 2]
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// Time from `cancel_run` to the cancelled run's end, `runs` times: a workflow whose agent step
/// is inside a tool call that sleeps a minute, and a team whose member is inside a model call
/// that takes a minute. Returns (workflow, team) sorted milliseconds.
async fn measure_cancels(runs: usize) -> (Vec<f64>, Vec<f64>) {
    use futures::StreamExt;
    let entered = Arc::new(tokio::sync::Notify::new());
    let hang = {
        let entered = Arc::clone(&entered);
        agno_tools::Function::new("hang", "Wait a minute.", move |_: NoArgs| {
            let entered = Arc::clone(&entered);
            async move {
                entered.notify_one();
                tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                Ok("too late")
            }
        })
    };
    let tool_agent =
        Agent::builder(Arc::new(TestModel::new()) as Arc<dyn Model>).id("tooling").function(hang).build().unwrap();
    let wf = Workflow::builder().id("cancel").step(step("work", Executor::agent(tool_agent))).build().unwrap();
    let mut wf_ms = Vec::with_capacity(runs);
    for i in 0..runs {
        let run_id = format!("wf-cancel-{i}");
        let stream = wf.run_stream(agno_runtime::workflow::WorkflowRunRequest::from("go").run_id(run_id.clone()));
        entered.notified().await;
        let asked = Instant::now();
        agno_runtime::cancel_run(&run_id);
        let run = stream.output().await.unwrap();
        assert_eq!(run.status, RunStatus::Cancelled);
        wf_ms.push(asked.elapsed().as_secs_f64() * 1e3);
    }
    let slow: Arc<dyn Model> = Arc::new(TestModel::new().with_latency(std::time::Duration::from_secs(60)));
    let member = Agent::builder(slow).id("slow").build().unwrap();
    let leader: Arc<dyn Model> = Arc::new(agno_models::FunctionModel::new(|req| {
        use agno_core::{ModelResponse, Role, ToolCall};
        Ok(if req.messages.last().is_some_and(|m| m.role == Role::User) {
            ModelResponse {
                tool_calls: vec![ToolCall::new("c0", "delegate_task_to_member", r#"{"member_id":"slow","task":"t"}"#)],
                ..Default::default()
            }
        } else {
            ModelResponse { content: "done".into(), ..Default::default() }
        })
    }));
    let team = agno_runtime::team::Team::builder().id("cancel-team").model(leader).member(member).build().unwrap();
    let mut team_ms = Vec::with_capacity(runs);
    for i in 0..runs {
        let run_id = format!("team-cancel-{i}");
        let mut stream = team.run_stream(agno_runtime::RunRequest::new("go").run_id(run_id.clone()));
        // The member's model call has started once its ModelRequestStarted event is out.
        while let Some(e) = stream.next().await {
            if e.name() == "ModelRequestStarted" && e.inner().agent_id == "slow" {
                break;
            }
        }
        let asked = Instant::now();
        agno_runtime::cancel_run(&run_id);
        let run = stream.output().await.unwrap();
        assert_eq!(run.status, RunStatus::Cancelled);
        team_ms.push(asked.elapsed().as_secs_f64() * 1e3);
    }
    wf_ms.sort_by(f64::total_cmp);
    team_ms.sort_by(f64::total_cmp);
    (wf_ms, team_ms)
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(f64::NAN)
}

/// Median over batches of µs per run.
async fn measure(wf: &Workflow, runs: usize) -> f64 {
    for _ in 0..(runs / 20).max(10) {
        wf.arun("hello").await.unwrap();
    }
    let mut batches = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        let start = Instant::now();
        for _ in 0..runs {
            let run = wf.arun("hello").await.unwrap();
            assert_eq!(run.status, RunStatus::Completed);
        }
        batches.push(start.elapsed().as_secs_f64() * 1e6 / runs as f64);
    }
    batches.sort_by(f64::total_cmp);
    batches[BATCHES / 2]
}

/// Python Agno's figures for the same shapes, measured now (µs per step), or `None`.
fn python_figures() -> Option<serde_json::Value> {
    let py = std::env::var("AGNO_PYTHON").ok()?;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/bench/workflow_overhead.py");
    eprintln!("measuring Python Agno 3.1 on the same shapes ({py}) ...");
    let out = std::process::Command::new(py)
        .arg(script)
        .args(["--runs", "200"])
        .env("AGNO_TELEMETRY", "false")
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("the Python measurement failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let dir = std::env::temp_dir().join(format!("agno-rs-wf-bench-{}", agno_core::new_id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sqlite = SqliteDb::connect(dir.join("wf.db").to_str().unwrap()).await.unwrap();
        sqlite.create_tables().await.unwrap();
        let db: Arc<dyn Db> = Arc::new(sqlite);

        eprintln!("workflow overhead: {RUNS} runs x {BATCHES} batches per shape (median batch) ...");
        let shapes: Vec<(&str, &str, Workflow, usize, usize)> = vec![
            ("sequential_10_function_steps", "10 function steps", sequential(None), 10, RUNS),
            ("mixed_primitives_10_steps", "10 steps over every primitive", mixed(), 10, RUNS),
            (
                "sequential_10_function_steps_sqlite",
                "10 function steps, stored in SQLite",
                sequential(Some(db)),
                10,
                DB_RUNS,
            ),
            ("agent_steps_5_test_model", "5 agent steps (offline model)", agents(), 5, RUNS / 4),
        ];
        // `AGNO_BENCH_SHAPE=mixed` measures only the shapes whose key contains it.
        let only = std::env::var("AGNO_BENCH_SHAPE").ok();
        let mut ours = Vec::new();
        for (key, label, wf, steps, runs) in
            shapes.iter().filter(|s| only.as_ref().is_none_or(|o| s.0.contains(o.as_str())))
        {
            let per_run = measure(wf, *runs).await;
            ours.push((*key, *label, per_run, per_run / *steps as f64));
        }
        if only.as_ref().is_none_or(|o| "team_5_delegations".contains(o.as_str())) {
            let per_run = measure_team(&team(), RUNS / 4).await;
            ours.push(("team_5_delegations", "team run, 5 delegations", per_run, per_run / 5.0));
        }
        let python = if only.is_some() { None } else { python_figures() };
        println!();
        println!("workflow framework overhead (µs; median of {BATCHES} batches)");
        println!("{:<40} {:>12} {:>12} {:>16} {:>8}", "shape", "per run", "per step", "Python per step", "ratio");
        for (key, label, per_run, per_step) in &ours {
            let py = python.as_ref().and_then(|p| p.get(*key)).and_then(|s| s["us_per_step"].as_f64());
            let (py_text, ratio) = match py {
                Some(p) => (format!("{p:.2}"), format!("{:.0}x", p / per_step)),
                None => ("-".to_owned(), "-".to_owned()),
            };
            println!("{label:<40} {per_run:>12.1} {per_step:>12.2} {py_text:>16} {ratio:>8}");
        }
        if python.is_none() {
            println!("(set AGNO_PYTHON to a Python with agno==3.1.* to measure Python Agno beside it)");
        }
        if only.is_none() {
            let (wf_ms, team_ms) = measure_cancels(100).await;
            println!();
            println!("cancel to the run's end, 100 each (ms)            p50      p99      max");
            for (label, ms) in
                [("workflow, agent step inside a tool call", &wf_ms), ("team, member inside a model call", &team_ms)]
            {
                println!("{label:<44} {:>7.2} {:>8.2} {:>8.2}", pct(ms, 0.5), pct(ms, 0.99), pct(ms, 1.0));
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
}
