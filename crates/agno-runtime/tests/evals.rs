//! Each eval type with `FunctionModel`: accuracy (a judge scores the answer against the
//! expected one), agent-as-judge (binary and numeric, and as a post-hook), performance and
//! reliability; records in Agno's shape, stored per user; a judge answering garbage is an error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeMap;
use std::sync::Arc;

use agno_core::{Db, EvalQuery, EvalType, Model, ModelResponse, Role, ToolCall};
use agno_db::InMemoryDb;
use agno_models::FunctionModel;
use agno_runtime::Agent;
use agno_runtime::eval::{
    AccuracyEval, AgentAsJudgeEval, EvalError, EvalSink, JudgeHook, PerformanceEval, ReliabilityEval, ScoringStrategy,
};
use agno_tools::Function;
use serde_json::{Value, json};

/// A model answering `answer` to every question.
fn answering(answer: &'static str) -> Arc<dyn Model> {
    Arc::new(FunctionModel::new(move |_| Ok(ModelResponse { content: answer.to_owned(), ..Default::default() })))
}

/// A judge answering `verdict` (a JSON object) when asked for structured output.
fn judge(verdict: Value) -> Arc<dyn Model> {
    Arc::new(FunctionModel::new(move |req| {
        assert!(req.response_format.is_some(), "a judge is asked for JSON");
        Ok(ModelResponse { content: verdict.to_string(), ..Default::default() })
    }))
}

fn sink(db: &Arc<dyn Db>, user: &str) -> EvalSink {
    EvalSink { db: Some(Arc::clone(db)), user_id: Some(user.to_owned()), name: Some(format!("{user}'s eval")) }
}

#[tokio::test]
async fn accuracy_scores_answers_against_the_expected_output_and_stores_them_per_user() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let agent = Agent::builder(answering("Paris")).id("geo").name("Geo").build().unwrap();
    let mut eval = AccuracyEval::new(
        agent.clone(),
        "Capital of France?",
        "Paris",
        judge(json!({"accuracy_score": 9, "accuracy_reason": "same city"})),
    );
    eval.num_iterations = 2;
    let out = eval.run(&sink(&db, "ann")).await.unwrap();
    assert!(out.passed);
    let data = &out.record.eval_data;
    assert_eq!(
        (data["avg_score"].as_f64(), data["min_score"].as_f64(), data["std_dev_score"].as_f64()),
        (Some(9.0), Some(9.0), Some(0.0))
    );
    assert_eq!(data["results"].as_array().unwrap().len(), 2);
    assert_eq!(data["results"][0]["output"], "Paris");
    assert_eq!(data["results"][0]["reason"], "same city");
    assert_eq!(
        (out.record.eval_type, out.record.agent_id.as_deref(), out.record.model_id.as_deref()),
        (EvalType::Accuracy, Some("geo"), Some("function"))
    );

    // A low score fails; another user's eval is theirs alone.
    let low = AccuracyEval::new(
        agent,
        "Capital of France?",
        "Lyon",
        judge(json!({"accuracy_score": 2, "accuracy_reason": "wrong"})),
    );
    assert!(!low.run(&sink(&db, "bob")).await.unwrap().passed);
    let mine = |user: &str| EvalQuery { user_id: Some(user.to_owned()), ..EvalQuery::default() };
    let (ann, _) = db.get_eval_runs(&mine("ann")).await.unwrap();
    let (bob, _) = db.get_eval_runs(&mine("bob")).await.unwrap();
    assert_eq!((ann.len(), bob.len()), (1, 1));
    assert_eq!(ann[0].run_id, out.record.run_id);
    assert!(db.get_eval_run(&out.record.run_id, Some("bob")).await.unwrap().is_none(), "Bob cannot read Ann's eval");

    // A judge answering garbage is an error, not a score.
    let garbage = AccuracyEval::new(
        Agent::builder(answering("Paris")).build().unwrap(),
        "q",
        "a",
        Arc::new(FunctionModel::new(|_| Ok(ModelResponse { content: "ten out of ten".into(), ..Default::default() }))),
    );
    let err = garbage.run(&EvalSink::default()).await.unwrap_err();
    assert!(matches!(err, EvalError::Judge(_)), "{err}");
    let out_of_range = AccuracyEval::new(
        Agent::builder(answering("Paris")).build().unwrap(),
        "q",
        "a",
        judge(json!({"accuracy_score": 11, "accuracy_reason": "very"})),
    );
    assert!(matches!(out_of_range.run(&EvalSink::default()).await, Err(EvalError::Judge(_))));
}

#[tokio::test]
async fn agent_as_judge_grades_binary_and_numeric_and_works_as_a_post_hook() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let agent = Agent::builder(answering("Dear customer, thank you.")).id("mail").build().unwrap();
    let binary = AgentAsJudgeEval::new("The answer is polite.", judge(json!({"passed": true, "reason": "polite"})));
    let out = binary.run(&agent, "Write a reply", 1, &sink(&db, "ann")).await.unwrap();
    assert!(out.passed);
    assert_eq!(out.record.eval_type, EvalType::AgentAsJudge);
    assert_eq!(out.record.eval_data["pass_rate"], 100.0);
    assert_eq!(out.record.eval_data["results"][0]["score"], Value::Null);

    let mut numeric =
        AgentAsJudgeEval::new("The answer is polite.", judge(json!({"score": 6, "reason": "a bit curt"})));
    numeric.scoring_strategy = ScoringStrategy::Numeric;
    let out = numeric.run(&agent, "Write a reply", 1, &EvalSink::default()).await.unwrap();
    assert!(!out.passed, "6 is below the threshold of 7");
    numeric.threshold = 6;
    assert!(numeric.run(&agent, "Write a reply", 1, &EvalSink::default()).await.unwrap().passed);
    numeric.threshold = 11;
    assert!(matches!(numeric.run(&agent, "x", 1, &EvalSink::default()).await, Err(EvalError::Config(_))));

    // As a post-hook: every answer is graded and stored as the run's user; fail_run fails it.
    let hook = JudgeHook {
        eval: AgentAsJudgeEval::new("No apologies.", judge(json!({"passed": false, "reason": "it apologises"}))),
        sink: EvalSink { db: Some(Arc::clone(&db)), ..EvalSink::default() },
        fail_run: true,
    };
    let hooked = Agent::builder(answering("Sorry, sorry.")).post_hook(Arc::new(hook)).build().unwrap();
    let mut request = agno_runtime::RunRequest::from("hello");
    request.user_id = Some("carl".to_owned());
    let err = hooked.arun(request).await.unwrap_err();
    assert!(err.to_string().contains("it apologises"), "{err}");
    let (carl, _) =
        db.get_eval_runs(&EvalQuery { user_id: Some("carl".to_owned()), ..EvalQuery::default() }).await.unwrap();
    assert_eq!(carl.len(), 1);
    assert_eq!(carl[0].eval_data["results"][0]["output"], "Sorry, sorry.");
}

#[tokio::test]
async fn performance_measures_run_time_and_memory_over_iterations() {
    let agent = Agent::builder(answering("ok")).id("fast").build().unwrap();
    let mut eval = PerformanceEval::of_agent(agent, "ping", None);
    eval.warmup_runs = 2;
    eval.num_iterations = 5;
    let out = eval.run(&EvalSink::default()).await.unwrap();
    assert!(out.passed);
    let data = &out.record.eval_data;
    assert_eq!(data["run_times"].as_array().unwrap().len(), 5);
    assert_eq!(data["memory_usages"].as_array().unwrap().len(), 5);
    let (min, med, max) = (
        data["min_run_time"].as_f64().unwrap(),
        data["median_run_time"].as_f64().unwrap(),
        data["max_run_time"].as_f64().unwrap(),
    );
    assert!(0.0 < min && min <= med && med <= max, "{data:?}");
    assert!(data["p95_run_time"].as_f64().unwrap() <= max);
    // A limit below any possible run time fails it.
    eval.max_avg_run_time = Some(0.0);
    assert!(!eval.run(&EvalSink::default()).await.unwrap().passed);
}

#[tokio::test]
async fn reliability_checks_the_tools_called_and_their_arguments() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Args {
        a: i64,
        b: i64,
    }
    // Calls add(2, 3) then answers with the result.
    let model: Arc<dyn Model> = Arc::new(FunctionModel::new(|req| {
        Ok(if req.messages.last().unwrap().role == Role::User {
            ModelResponse { tool_calls: vec![ToolCall::new("c1", "add", r#"{"a": 2, "b": 3}"#)], ..Default::default() }
        } else {
            ModelResponse { content: "5".to_owned(), ..Default::default() }
        })
    }));
    let agent = Agent::builder(model)
        .function(Function::new("add", "Adds.", |x: Args| async move { Ok(x.a + x.b) }))
        .function(Function::new("sub", "Subtracts.", |x: Args| async move { Ok(x.a - x.b) }))
        .build()
        .unwrap();
    let run = agent.arun("2 + 3?").await.unwrap();
    let check = |tools: &[&str], args: Option<Value>| ReliabilityEval {
        expected_tool_calls: tools.iter().map(|t| (*t).to_owned()).collect(),
        allow_additional_tool_calls: false,
        expected_tool_call_arguments: args
            .map(|a| BTreeMap::from([("add".to_owned(), a.as_object().unwrap().clone())]))
            .unwrap_or_default(),
    };
    let out = check(&["add"], Some(json!({"a": 2}))).check(&run, Some(&agent), &EvalSink::default()).await.unwrap();
    assert!(out.passed, "{}", Value::Object(out.record.eval_data.clone()));
    assert_eq!(out.record.eval_data["eval_status"], "PASSED");
    assert_eq!(out.record.eval_data["passed_tool_calls"], json!(["add"]));
    let out = check(&["add", "sub"], None).check(&run, Some(&agent), &EvalSink::default()).await.unwrap();
    assert!(!out.passed);
    assert_eq!(out.record.eval_data["missing_tool_calls"], json!(["sub"]));
    let out = check(&["add"], Some(json!({"a": 7}))).check(&run, None, &EvalSink::default()).await.unwrap();
    assert!(!out.passed);
    assert_eq!(out.record.eval_data["failed_argument_checks"].as_array().unwrap().len(), 1);
    let out = check(&["sub"], None).check(&run, None, &EvalSink::default()).await.unwrap();
    assert_eq!(
        (out.passed, &out.record.eval_data["failed_tool_calls"]),
        (false, &json!(["add"])),
        "strict: add was not expected"
    );
}
