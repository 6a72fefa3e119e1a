//! Human review of workflows (`HumanReview`): every field and every `on_reject` / `on_error` /
//! `on_timeout` branch, pauses inside containers and parallel branches, five rounds of pause and
//! continue, continuing from another `Workflow` instance on the same database, and answers that
//! do not fit (refused with the field named, nothing changed).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agno_core::{Db, RunOutput, RunStatus, StepInputField, StepOutput, StepRequirement};
use agno_db::SqliteDb;
use agno_runtime::workflow::{
    Condition, Evaluator, Executor, HumanReview, Loop, OnError, OnReject, OnTimeout, OutputReview, Parallel, Router,
    Step, StepError, StepNode, Workflow, WorkflowContinueRequest, WorkflowRunRequest,
};
use agno_runtime::{BuildError, RunError};
use futures::StreamExt;
use serde_json::{Value, json};

/// How many times each step function ran, and what it last saw in `additional_data`.
#[derive(Clone, Default)]
struct Calls {
    count: Arc<Mutex<HashMap<String, usize>>>,
    seen: Arc<Mutex<HashMap<String, Value>>>,
}

impl Calls {
    fn of(&self, name: &str) -> usize {
        self.count.lock().unwrap().get(name).copied().unwrap_or(0)
    }

    fn seen(&self, name: &str) -> Value {
        self.seen.lock().unwrap().get(name).cloned().unwrap_or(Value::Null)
    }

    /// A step function that appends its name to the previous content.
    fn step(&self, name: &str) -> Step {
        let calls = self.clone();
        let label = name.to_owned();
        Step {
            name: name.into(),
            executor: Executor::function(move |input| {
                let calls = calls.clone();
                let label = label.clone();
                async move {
                    *calls.count.lock().unwrap().entry(label.clone()).or_default() += 1;
                    calls
                        .seen
                        .lock()
                        .unwrap()
                        .insert(label.clone(), Value::Object(input.additional_data.clone().unwrap_or_default()));
                    let before = input.previous_step_text();
                    Ok(StepOutput::content(if before.is_empty() { label } else { format!("{before}+{label}") }))
                }
            }),
            ..Step::default()
        }
    }

    fn reviewed(&self, name: &str, review: HumanReview) -> StepNode {
        Step { human_review: Some(review), ..self.step(name) }.into()
    }
}

fn workflow(db: Option<Arc<dyn Db>>, steps: Vec<StepNode>) -> Workflow {
    let mut b = Workflow::builder().id("reviewed").name("Reviewed").steps(steps);
    if let Some(db) = db {
        b = b.db(db);
    }
    b.build().unwrap()
}

async fn sqlite() -> Arc<dyn Db> {
    let dir = std::env::temp_dir().join("agno-rs-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("wf-review-{}.db", agno_core::new_id()));
    let db = SqliteDb::connect(path.to_str().unwrap()).await.unwrap();
    db.create_tables().await.unwrap();
    Arc::new(db)
}

fn active(run: &RunOutput) -> StepRequirement {
    let list = run.extra["step_requirements"].as_array().expect("step_requirements");
    serde_json::from_value(list.last().unwrap().clone()).unwrap()
}

fn names(run: &RunOutput) -> Vec<String> {
    run.extra["step_results"].as_array().unwrap().iter().map(|s| s["step_name"].as_str().unwrap().to_owned()).collect()
}

async fn answer(wf: &Workflow, run: &RunOutput, req: StepRequirement) -> Result<RunOutput, RunError> {
    wf.continue_run(WorkflowContinueRequest {
        run_id: run.id().to_owned(),
        step_requirements: vec![req],
        ..Default::default()
    })
    .await
}

fn confirm() -> HumanReview {
    HumanReview { requires_confirmation: true, confirmation_message: Some("Go?".into()), ..HumanReview::default() }
}

#[tokio::test]
async fn a_confirmation_pauses_the_run_and_a_continue_confirms_skips_or_cancels() {
    let db = sqlite().await;
    let calls = Calls::default();
    let steps = || {
        vec![
            calls.step("first").into(),
            calls.reviewed("gated", HumanReview { on_reject: OnReject::Skip, ..confirm() }),
            calls.step("last").into(),
        ]
    };
    let wf = workflow(Some(Arc::clone(&db)), steps());
    let mut stream = wf.run_stream(WorkflowRunRequest::from("go").session_id("s").user_id("u"));
    let mut seen = Vec::new();
    while let Some(e) = stream.next().await {
        seen.push(e.name());
    }
    let paused = stream.output().await.unwrap();
    assert_eq!(paused.status, RunStatus::Paused);
    assert_eq!(&seen[seen.len() - 2..], ["StepPaused", "WorkflowPaused"]);
    assert_eq!(paused.extra["paused_step_index"], 1);
    assert_eq!(paused.extra["paused_step_name"], "gated");
    let req = active(&paused);
    assert!(req.requires_confirmation);
    assert_eq!(req.confirmation_message.as_deref(), Some("Go?"));
    assert_eq!(req.step_name.as_deref(), Some("gated"));
    assert_eq!(calls.of("gated"), 0, "nothing ran before the confirmation");
    let stored = db.get_run(paused.id(), Some("u")).await.unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::Paused);
    assert_eq!(names(&stored), ["first"]);

    let mut yes = req.clone();
    yes.confirm();
    let done = answer(&wf, &paused, yes).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(names(&done), ["first", "gated", "last"]);
    assert_eq!(done.content_text(), "first+gated+last");
    assert_eq!((calls.of("first"), calls.of("gated")), (1, 1), "first did not run again");

    // Rejected with on_reject = skip: the step leaves no result, the next one runs.
    let paused = wf.arun(WorkflowRunRequest::from("go").session_id("s").user_id("u")).await.unwrap();
    let mut no = active(&paused);
    no.reject(Some("not now".into()));
    let done = answer(&wf, &paused, no).await.unwrap();
    assert_eq!(names(&done), ["first", "last"]);
    assert_eq!(done.content_text(), "first+last");

    // Rejected with on_reject = cancel.
    let wf = workflow(
        Some(Arc::clone(&db)),
        vec![
            calls.step("first").into(),
            calls.reviewed("gated", HumanReview { on_reject: OnReject::Cancel, ..confirm() }),
        ],
    );
    let paused = wf.arun(WorkflowRunRequest::from("go").session_id("s2")).await.unwrap();
    let mut no = active(&paused);
    no.reject(None);
    let done = answer(&wf, &paused, no).await.unwrap();
    assert_eq!(done.status, RunStatus::Cancelled);
    assert_eq!(done.content_text(), "Workflow cancelled: Step 'gated' was rejected");
    let stored = db.get_run(done.id(), None).await.unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::Cancelled);
}

#[tokio::test]
async fn user_input_reaches_the_step_and_bad_input_is_refused_with_nothing_changed() {
    let db = sqlite().await;
    let calls = Calls::default();
    let review = HumanReview {
        requires_user_input: true,
        user_input_message: Some("Details?".into()),
        user_input_schema: vec![
            StepInputField {
                name: "tone".into(),
                field_type: "str".into(),
                description: None,
                value: None,
                required: true,
                allowed_values: Some(vec![json!("formal"), json!("casual")]),
            },
            StepInputField {
                name: "words".into(),
                field_type: "int".into(),
                description: None,
                value: None,
                required: false,
                allowed_values: None,
            },
        ],
        ..HumanReview::default()
    };
    let wf = workflow(Some(Arc::clone(&db)), vec![calls.reviewed("write", review)]);
    let paused = wf.arun("go").await.unwrap();
    let req = active(&paused);
    assert!(req.requires_user_input);
    assert_eq!(req.user_input_schema.as_ref().unwrap().len(), 2);

    let bad = |values: Value| {
        let mut r = req.clone();
        r.user_input = Some(values.as_object().unwrap().clone());
        r
    };
    for (values, expected) in [
        (json!({"words": 10}), "missing tone"),
        (json!({"tone": "angry"}), "not one of"),
        (json!({"tone": "formal", "words": "ten"}), "expects a int"),
        (json!({"tone": "formal", "color": "red"}), "user_input.color"),
    ] {
        let err = answer(&wf, &paused, bad(values.clone())).await.unwrap_err();
        assert!(matches!(err, RunError::InvalidContinue(_)), "{err}");
        assert!(err.to_string().contains(expected), "{values}: {err}");
    }
    let mut wrong_step = req.clone();
    wrong_step.step_id = "someone-else".into();
    wrong_step.step_name = Some("ghost".into());
    let err = answer(&wf, &paused, wrong_step).await.unwrap_err();
    assert!(err.to_string().contains(r#"names ghost, but the run waits for step "write""#), "{err}");
    let stored = db.get_run(paused.id(), None).await.unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::Paused, "refused answers changed nothing");
    assert!(active(&stored).user_input.is_none());
    assert_eq!(calls.of("write"), 0);

    let done = answer(&wf, &paused, bad(json!({"tone": "casual", "words": 5}))).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(calls.seen("write")["user_input"], json!({"tone": "casual", "words": 5}));
    // A second continue of the completed run is refused.
    let err = answer(&wf, &paused, bad(json!({"tone": "casual"}))).await.unwrap_err();
    assert!(matches!(err, RunError::NotPaused { .. }), "{err}");
}

#[tokio::test]
async fn output_review_approves_edits_retries_with_feedback_and_gives_up_after_max_retries() {
    let calls = Calls::default();
    let review = |on_reject| HumanReview {
        requires_output_review: OutputReview::Always,
        output_review_message: Some("Good?".into()),
        on_reject,
        max_retries: 2,
        ..HumanReview::default()
    };
    let db = sqlite().await;
    let wf = workflow(
        Some(Arc::clone(&db)),
        vec![calls.reviewed("draft", review(OnReject::Retry)), calls.step("publish").into()],
    );
    let paused = wf.arun("go").await.unwrap();
    let req = active(&paused);
    assert!(req.requires_output_review && req.is_post_execution);
    assert_eq!(req.step_output.as_ref().unwrap().content_text(), "draft");
    assert_eq!(calls.of("draft"), 1);

    // Rejected: runs again with the feedback; then edited on approval.
    let mut no = req.clone();
    no.reject(Some("shorter".into()));
    let again = answer(&wf, &paused, no).await.unwrap();
    assert_eq!(again.status, RunStatus::Paused);
    assert_eq!(calls.of("draft"), 2);
    assert_eq!(calls.seen("draft")["rejection_feedback"], "shorter");
    assert_eq!(calls.seen("draft")["previous_output"], "draft");
    assert_eq!(active(&again).retry_count, 1);
    let mut edit = active(&again);
    edit.edit(json!("hand-written draft"));
    let done = answer(&wf, &again, edit).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.content_text(), "hand-written draft+publish");
    assert_eq!(calls.of("draft"), 2, "approving did not run the step again");

    // Rejected more than max_retries times: cancelled.
    let paused = wf.arun("go").await.unwrap();
    let mut run = paused;
    for _ in 0..2 {
        let mut no = active(&run);
        no.reject(None);
        run = answer(&wf, &run, no).await.unwrap();
        assert_eq!(run.status, RunStatus::Paused);
    }
    let mut no = active(&run);
    no.reject(None);
    let done = answer(&wf, &run, no).await.unwrap();
    assert_eq!(done.status, RunStatus::Cancelled);
    assert_eq!(done.content_text(), "Max retries (2) reached for step 'draft'");

    // on_reject = skip drops the output; a predicate decides when to review.
    let wf = workflow(None, vec![calls.reviewed("maybe", review(OnReject::Skip)), calls.step("after").into()]);
    let paused = wf.arun("go").await.unwrap();
    let mut no = active(&paused);
    no.reject(None);
    let done = wf
        .continue_run(WorkflowContinueRequest {
            run_id: paused.id().to_owned(),
            run: Some(Box::new(paused.clone())),
            step_requirements: vec![no],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(names(&done), ["after"]);
    let only_long = HumanReview {
        requires_output_review: OutputReview::when(|o| o.content_text().len() > 100),
        ..HumanReview::default()
    };
    let done = workflow(None, vec![calls.reviewed("short", only_long)]).arun("go").await.unwrap();
    assert_eq!(done.status, RunStatus::Completed, "the predicate said no review");
}

#[tokio::test]
async fn loop_iterations_are_reviewed_one_by_one() {
    let calls = Calls::default();
    let make = |on_reject| {
        workflow(
            None,
            vec![
                Loop {
                    name: "refine".into(),
                    steps: vec![calls.step("pass").into()],
                    max_iterations: 3,
                    forward_iteration_output: true,
                    human_review: Some(HumanReview {
                        requires_iteration_review: true,
                        iteration_review_message: Some("Another?".into()),
                        on_reject,
                        ..HumanReview::default()
                    }),
                    ..Loop::default()
                }
                .into(),
            ],
        )
    };
    let cont = |wf: &Workflow, run: RunOutput, confirmed: bool| {
        let wf = wf.clone();
        async move {
            let mut req = active(&run);
            req.confirmed = Some(confirmed);
            wf.continue_run(WorkflowContinueRequest {
                run_id: run.id().to_owned(),
                run: Some(Box::new(run.clone())),
                step_requirements: vec![req],
                ..Default::default()
            })
            .await
            .unwrap()
        }
    };
    // Approve every iteration: three passes, each paused once.
    let wf = make(OnReject::Skip);
    let mut run = wf.arun("go").await.unwrap();
    for expected in 1..=3 {
        assert_eq!(run.status, RunStatus::Paused);
        assert_eq!(active(&run).extra["iteration"], expected);
        assert_eq!(active(&run).step_type.as_deref(), Some("Loop"));
        run = cont(&wf, run, true).await;
    }
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.content_text(), "pass+pass+pass");
    assert_eq!(calls.of("pass"), 3, "approved iterations never ran twice");

    // Reject with skip: the loop ends there, without the rejected iteration.
    let before = calls.of("pass");
    let run = wf.arun("go").await.unwrap();
    let run = cont(&wf, run, true).await;
    let done = cont(&wf, run, false).await;
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.extra["step_results"][0]["content"], "Loop refine completed 1 iterations with 1 total steps");
    assert_eq!(calls.of("pass") - before, 2);

    // Reject with retry: the iteration runs again.
    let wf = make(OnReject::Retry);
    let before = calls.of("pass");
    let run = wf.arun("go").await.unwrap();
    let run = cont(&wf, run, false).await;
    assert_eq!(calls.of("pass") - before, 2, "the rejected iteration ran again");
    assert_eq!(active(&run).extra["iteration"], 1);
    assert_eq!(active(&run).retry_count, 1);
}

#[tokio::test]
async fn a_rejected_condition_can_take_its_else_branch() {
    let calls = Calls::default();
    let wf = workflow(
        None,
        vec![
            Condition {
                name: "gate".into(),
                evaluator: Evaluator::Bool(true),
                steps: vec![calls.step("then").into()],
                else_steps: vec![calls.step("otherwise").into()],
                human_review: Some(HumanReview { on_reject: OnReject::Else, ..confirm() }),
                ..Condition::default()
            }
            .into(),
        ],
    );
    let paused = wf.arun("go").await.unwrap();
    assert_eq!(active(&paused).step_type.as_deref(), Some("Condition"));
    let mut no = active(&paused);
    no.reject(None);
    let done = wf
        .continue_run(WorkflowContinueRequest {
            run_id: paused.id().to_owned(),
            run: Some(Box::new(paused)),
            step_requirements: vec![no],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(done.content_text(), "otherwise");
    assert_eq!(calls.of("then"), 0);
}

#[tokio::test]
async fn a_reviewer_picks_the_routes_and_a_pick_outside_the_choices_is_refused() {
    let calls = Calls::default();
    let router = |multiple: bool| {
        workflow(
            None,
            vec![
                Router {
                    name: "lang".into(),
                    choices: vec![calls.step("en").into(), calls.step("fr").into(), calls.step("de").into()],
                    human_review: Some(HumanReview {
                        requires_user_input: true,
                        user_input_message: Some("Which?".into()),
                        allow_multiple_selections: multiple,
                        ..HumanReview::default()
                    }),
                    ..Router::default()
                }
                .into(),
            ],
        )
    };
    let pick = |wf: &Workflow, run: &RunOutput, choices: &[&str]| {
        let mut req = active(run);
        req.select(choices);
        let wf = wf.clone();
        let run = run.clone();
        async move {
            wf.continue_run(WorkflowContinueRequest {
                run_id: run.id().to_owned(),
                run: Some(Box::new(run)),
                step_requirements: vec![req],
                ..Default::default()
            })
            .await
        }
    };
    let wf = router(false);
    let mut stream = wf.run_stream("go");
    let mut names_seen = Vec::new();
    while let Some(e) = stream.next().await {
        names_seen.push(e.name());
    }
    let paused = stream.output().await.unwrap();
    assert!(names_seen.contains(&"RouterPaused"), "{names_seen:?}");
    let req = active(&paused);
    assert!(req.requires_route_selection);
    assert_eq!(req.available_choices.as_deref().unwrap(), ["en", "fr", "de"]);
    let err = pick(&wf, &paused, &["klingon"]).await.unwrap_err();
    assert!(
        err.to_string().contains(r#"selected_choices: "klingon" is not a route of "lang" (choices: en, fr, de)"#),
        "{err}"
    );
    let err = pick(&wf, &paused, &["en", "fr"]).await.unwrap_err();
    assert!(err.to_string().contains("takes one route"), "{err}");
    let err = pick(&wf, &paused, &[]).await.unwrap_err();
    assert!(err.to_string().contains("pick a route"), "{err}");
    let done = pick(&wf, &paused, &["fr"]).await.unwrap();
    assert_eq!(done.content_text(), "fr");
    let wf = router(true);
    let paused = wf.arun("go").await.unwrap();
    let done = pick(&wf, &paused, &["de", "en"]).await.unwrap();
    assert_eq!(done.content_text(), "de+en");
}

#[tokio::test]
async fn a_failing_step_pauses_for_a_decision_or_fails_or_is_skipped_as_on_error_says() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let flaky = |fail_times: usize| {
        let attempts = Arc::clone(&attempts);
        Executor::function(move |_| {
            let n = attempts.fetch_add(1, Ordering::SeqCst);
            async move {
                if n < fail_times {
                    Err(StepError::new(format!("attempt {n} broke")))
                } else {
                    Ok(StepOutput::content("fixed"))
                }
            }
        })
    };
    let step = |on_error, fail_times| -> StepNode {
        Step {
            name: "flaky".into(),
            executor: flaky(fail_times),
            max_retries: 0,
            human_review: Some(HumanReview { on_error, ..HumanReview::default() }),
            ..Step::default()
        }
        .into()
    };
    let decide = |wf: &Workflow, run: &RunOutput, decision: &str| {
        let list = run.extra["error_requirements"].as_array().unwrap();
        let mut req: agno_core::ErrorRequirement = serde_json::from_value(list.last().unwrap().clone()).unwrap();
        req.decision = Some(decision.to_owned());
        let wf = wf.clone();
        let run = run.clone();
        async move {
            wf.continue_run(WorkflowContinueRequest {
                run_id: run.id().to_owned(),
                run: Some(Box::new(run)),
                error_requirements: vec![req],
                ..Default::default()
            })
            .await
        }
    };
    let wf = workflow(None, vec![step(OnError::Pause, 2)]);
    let paused = wf.arun("go").await.unwrap();
    assert_eq!(paused.status, RunStatus::Paused);
    assert_eq!(attempts.load(Ordering::SeqCst), 1, "{paused:?}");
    let err_req = &paused.extra["error_requirements"][0];
    assert_eq!(err_req["error_message"], "attempt 0 broke");
    assert_eq!(err_req["decision"], Value::Null);
    let err = decide(&wf, &paused, "maybe").await.unwrap_err();
    assert!(err.to_string().contains(r#"decision must be "retry" or "skip""#), "{err}");
    let again = decide(&wf, &paused, "retry").await.unwrap();
    assert_eq!(again.status, RunStatus::Paused, "the retry failed too");
    assert_eq!(again.extra["error_requirements"][1]["retry_count"], 1);
    let done = decide(&wf, &again, "retry").await.unwrap();
    assert_eq!(done.content_text(), "fixed");
    assert_eq!(attempts.load(Ordering::SeqCst), 3);

    attempts.store(0, Ordering::SeqCst);
    let paused = workflow(None, vec![step(OnError::Pause, 9)]).arun("go").await.unwrap();
    let done = decide(&workflow(None, vec![step(OnError::Pause, 9)]), &paused, "skip").await.unwrap();
    assert_eq!(done.content_text(), "Step skipped due to error: attempt 0 broke");
    let skipped = workflow(None, vec![step(OnError::Skip, 99)]).arun("go").await.unwrap();
    assert_eq!(skipped.extra["step_results"][0]["success"], false);
    let failed = workflow(None, vec![step(OnError::Fail, 99)]).arun("go").await.unwrap_err();
    assert!(matches!(failed, RunError::StepFailed { .. }), "{failed}");
}

#[tokio::test]
async fn a_timed_out_review_applies_on_timeout_whatever_the_answer() {
    let calls = Calls::default();
    for (on_timeout, status, content) in [
        (OnTimeout::Approve, RunStatus::Completed, "gated+after"),
        (OnTimeout::Skip, RunStatus::Completed, "after"),
        (OnTimeout::Cancel, RunStatus::Cancelled, "Workflow cancelled: Step 'gated' was rejected"),
    ] {
        let wf = workflow(
            None,
            vec![
                calls.reviewed("gated", HumanReview { timeout: Some(0), on_timeout, ..confirm() }),
                calls.step("after").into(),
            ],
        );
        let paused = wf.arun("go").await.unwrap();
        assert!(active(&paused).timeout_at.is_some());
        let mut req = active(&paused);
        req.reject(None); // ignored: the review timed out
        let done = wf
            .continue_run(WorkflowContinueRequest {
                run_id: paused.id().to_owned(),
                run: Some(Box::new(paused)),
                step_requirements: vec![req],
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!((done.status, done.content_text().as_str()), (status, content), "{on_timeout:?}");
    }
}

#[tokio::test]
async fn a_pause_inside_a_parallel_branch_keeps_the_other_branch_and_nested_loops_continue() {
    let calls = Calls::default();
    let wf = workflow(
        None,
        vec![
            Parallel {
                name: "both".into(),
                steps: vec![
                    calls.step("left").into(),
                    Condition {
                        name: "gate".into(),
                        evaluator: Evaluator::Bool(true),
                        steps: vec![
                            Loop {
                                name: "spin".into(),
                                steps: vec![calls.reviewed("inner", confirm())],
                                max_iterations: 2,
                                ..Loop::default()
                            }
                            .into(),
                        ],
                        ..Condition::default()
                    }
                    .into(),
                ],
                ..Parallel::default()
            }
            .into(),
        ],
    );
    let mut run = wf.arun("go").await.unwrap();
    // The review inside the loop pauses once per iteration.
    for iteration in 1..=2 {
        assert_eq!(run.status, RunStatus::Paused, "iteration {iteration}");
        let req = active(&run);
        assert_eq!(req.step_name.as_deref(), Some("inner"));
        assert_eq!(req.step_index, Some(json!([0, 1, 0, 0])));
        let mut yes = req;
        yes.confirm();
        run = wf
            .continue_run(WorkflowContinueRequest {
                run_id: run.id().to_owned(),
                run: Some(Box::new(run.clone())),
                step_requirements: vec![yes],
                ..Default::default()
            })
            .await
            .unwrap();
    }
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(calls.of("left"), 1, "the finished branch ran once over three walks");
    assert_eq!(calls.of("inner"), 2);
    let branches = run.extra["step_results"][0]["steps"].as_array().unwrap();
    assert_eq!(branches[0]["content"], "left");
    assert_eq!(branches[1]["steps"][0]["steps"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn five_pause_and_continue_rounds_keep_every_earlier_output_and_another_instance_can_continue() {
    let db = sqlite().await;
    let calls = Calls::default();
    let steps = || (1..=5).map(|i| calls.reviewed(&format!("s{i}"), confirm())).collect::<Vec<_>>();
    let mut run =
        workflow(Some(Arc::clone(&db)), steps()).arun(WorkflowRunRequest::from("go").session_id("five")).await.unwrap();
    for round in 1..=5 {
        assert_eq!(run.status, RunStatus::Paused, "round {round}");
        assert_eq!(names(&run).len(), round - 1, "earlier outputs kept");
        // Each continue comes from a new `Workflow` (as another process would build it) over
        // the same database, reading the paused run from there.
        let fresh = workflow(Some(Arc::clone(&db)), steps());
        let mut yes = active(&run);
        yes.confirm();
        run = fresh
            .continue_run(WorkflowContinueRequest {
                run_id: run.id().to_owned(),
                session_id: Some("five".into()),
                step_requirements: vec![yes],
                ..Default::default()
            })
            .await
            .unwrap();
    }
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.content_text(), "s1+s2+s3+s4+s5");
    for i in 1..=5 {
        assert_eq!(calls.of(&format!("s{i}")), 1, "s{i} ran once");
    }
    let stored = db.get_run(run.id(), None).await.unwrap().unwrap();
    assert_eq!(stored.extra["step_requirements"].as_array().unwrap().len(), 5, "the review history is kept");
    assert!(stored.extra.get("agno_rs_journal").is_none(), "the journal goes when the run ends");
}

#[tokio::test]
async fn review_fields_a_primitive_does_not_support_are_refused_when_the_workflow_is_built() {
    let calls = Calls::default();
    let refused = |node: StepNode| match Workflow::builder().step(node).build() {
        Err(BuildError::Invalid { why, .. }) => why,
        other => panic!("expected a refusal, got {other:?}"),
    };
    let why = refused(
        Loop {
            name: "l".into(),
            steps: vec![calls.step("s").into()],
            human_review: Some(HumanReview { requires_user_input: true, ..HumanReview::default() }),
            ..Loop::default()
        }
        .into(),
    );
    assert!(why.contains(r#"steps[0] "l": human_review.requires_user_input is not supported on a Loop"#), "{why}");
    let why = refused(calls.reviewed("s", HumanReview { requires_iteration_review: true, ..HumanReview::default() }));
    assert!(why.contains("requires_iteration_review"), "{why}");
    let why = refused(calls.reviewed(
        "s",
        HumanReview { allow_multiple_selections: true, on_reject: OnReject::Else, ..HumanReview::default() },
    ));
    assert!(why.contains("allow_multiple_selections, human_review.on_reject = Else"), "{why}");
    let why = refused(
        Condition {
            name: "c".into(),
            steps: vec![calls.step("s").into()],
            human_review: Some(HumanReview { requires_output_review: OutputReview::Always, ..HumanReview::default() }),
            ..Condition::default()
        }
        .into(),
    );
    assert!(why.contains("requires_output_review is not supported on a Condition"), "{why}");
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ShipArgs {
    what: String,
}

/// An agent step whose tool needs confirmation pauses the workflow as an executor pause; the
/// answer continues the agent where it paused (twice here), and nothing before it runs again.
#[tokio::test]
async fn an_agent_tool_pause_inside_a_step_pauses_the_workflow_and_continues_the_agent() {
    use agno_core::{Model, ModelResponse, Role, ToolCall};
    let shipped = Arc::new(AtomicUsize::new(0));
    let ship = {
        let shipped = Arc::clone(&shipped);
        agno_tools::Function::new("ship", "Ship something.", move |args: ShipArgs| {
            let shipped = Arc::clone(&shipped);
            async move {
                shipped.fetch_add(1, Ordering::SeqCst);
                Ok(format!("shipped {}", args.what))
            }
        })
        .requires_confirmation()
    };
    // Ships twice, one call per turn, then answers with what the tools said.
    let model: Arc<dyn Model> = Arc::new(agno_models::FunctionModel::new(|req| {
        let results: Vec<String> = req
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .map(|m| m.content_text().unwrap_or_default().to_owned())
            .collect();
        Ok(match results.len() {
            n @ (0 | 1) => ModelResponse {
                tool_calls: vec![ToolCall::new(format!("ship-{n}"), "ship", format!(r#"{{"what":"box {n}"}}"#))],
                ..Default::default()
            },
            _ => ModelResponse { content: results.join(" / "), ..Default::default() },
        })
    }));
    let agent = agno_runtime::Agent::builder(model).id("shipper").name("Shipper").function(ship).build().unwrap();
    let calls = Calls::default();
    let db = sqlite().await;
    let wf = workflow(
        Some(Arc::clone(&db)),
        vec![
            calls.step("prepare").into(),
            Step { name: "ship".into(), executor: Executor::agent(agent), ..Step::default() }.into(),
        ],
    );
    let mut stream = wf.run_stream(WorkflowRunRequest::from("go").session_id("exec"));
    let mut names = Vec::new();
    while let Some(e) = stream.next().await {
        names.push(e.name());
    }
    let mut run = stream.output().await.unwrap();
    assert!(names.contains(&"StepExecutorPaused"), "{names:?}");
    for round in 0..2 {
        assert_eq!(run.status, RunStatus::Paused, "round {round}");
        assert_eq!(run.extra["pause_kind"], "executor");
        let req = active(&run);
        assert_eq!(req.extra["requires_executor_input"], true);
        assert_eq!(req.extra["executor_name"], "Shipper");
        let pending: Vec<agno_core::RunRequirement> =
            serde_json::from_value(req.extra["executor_requirements"].clone()).unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].tool_call_id(), Some(format!("ship-{round}").as_str()));
        assert_eq!(shipped.load(Ordering::SeqCst), round, "nothing ships before it is confirmed");
        // An answer that leaves the tool call unanswered changes nothing.
        let mut bare = req.clone();
        bare.extra.remove("executor_requirements");
        let err = answer(&wf, &run, bare).await.unwrap_err();
        assert!(err.to_string().contains("send executor_requirements"), "{err}");
        let mut unanswered = req.clone();
        unanswered.extra.insert("executor_requirements".into(), serde_json::to_value(&pending).unwrap());
        let err = answer(&wf, &run, unanswered).await.unwrap_err();
        assert!(err.to_string().contains(&format!("tool call ship-{round} is not answered")), "{err}");
        let mut confirmed = pending.clone();
        confirmed[0].confirm();
        let mut yes = req;
        yes.extra.insert("executor_requirements".into(), serde_json::to_value(&confirmed).unwrap());
        run = answer(&wf, &run, yes).await.unwrap();
    }
    assert_eq!(run.status, RunStatus::Completed, "{}", run.content_text());
    assert_eq!(run.content_text(), "shipped box 0 / shipped box 1");
    assert_eq!(shipped.load(Ordering::SeqCst), 2, "each confirmed call ran once");
    assert_eq!(calls.of("prepare"), 1, "the step before ran once over three walks");
    let executor_runs = run.extra["step_executor_runs"].as_array().unwrap();
    assert_eq!(executor_runs.len(), 1, "one agent run, continued twice");
    assert_eq!(executor_runs[0]["status"], "COMPLETED");
    // The agent's own run was never stored apart from the workflow's.
    assert!(db.get_run(executor_runs[0]["run_id"].as_str().unwrap(), None).await.unwrap().is_none());
    let session = db.get_session("exec", None, Some(0)).await.unwrap().unwrap();
    assert_eq!(session.workflow_id.as_deref(), Some("reviewed"), "the session stays a workflow session");
}

/// A team step whose member's tool needs confirmation pauses the workflow as an executor pause
/// of the team (its requirements carry the member's fields); the answer continues the member,
/// then the team's leader.
#[tokio::test]
async fn a_team_members_tool_pause_inside_a_step_pauses_the_workflow_and_continues_the_team() {
    use agno_core::{Model, ModelResponse, Role, ToolCall};
    let shipped = Arc::new(AtomicUsize::new(0));
    let ship = {
        let shipped = Arc::clone(&shipped);
        agno_tools::Function::new("ship", "Ship something.", move |args: ShipArgs| {
            let shipped = Arc::clone(&shipped);
            async move {
                shipped.fetch_add(1, Ordering::SeqCst);
                Ok(format!("shipped {}", args.what))
            }
        })
        .requires_confirmation()
    };
    let tool_results = |req: &agno_core::ModelRequest| -> Vec<String> {
        req.messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .map(|m| m.content_text().unwrap_or_default().to_owned())
            .collect()
    };
    let member_model: Arc<dyn Model> = Arc::new(agno_models::FunctionModel::new(move |req| {
        let results = tool_results(req);
        Ok(if results.is_empty() {
            ModelResponse {
                tool_calls: vec![ToolCall::new("ship-0", "ship", r#"{"what":"crate"}"#)],
                ..Default::default()
            }
        } else {
            ModelResponse { content: results.join(" / "), ..Default::default() }
        })
    }));
    let leader_model: Arc<dyn Model> = Arc::new(agno_models::FunctionModel::new(move |req| {
        let results = tool_results(req);
        Ok(if results.is_empty() {
            ModelResponse {
                tool_calls: vec![ToolCall::new(
                    "d0",
                    "delegate_task_to_member",
                    r#"{"member_id":"shipper","task":"ship it"}"#,
                )],
                ..Default::default()
            }
        } else {
            ModelResponse { content: format!("team says: {}", results.join(" / ")), ..Default::default() }
        })
    }));
    let shipper =
        agno_runtime::Agent::builder(member_model).id("shipper").name("Shipper").function(ship).build().unwrap();
    let team = agno_runtime::team::Team::builder()
        .id("dock")
        .name("Dock")
        .model(leader_model)
        .member(shipper)
        .build()
        .unwrap();
    let calls = Calls::default();
    let db = sqlite().await;
    let wf = workflow(
        Some(Arc::clone(&db)),
        vec![
            calls.step("prepare").into(),
            Step { name: "ship".into(), executor: Executor::team(team), ..Step::default() }.into(),
        ],
    );
    let run = wf.arun(WorkflowRunRequest::from("go").session_id("team-exec")).await.unwrap();
    assert_eq!(run.status, RunStatus::Paused);
    assert_eq!(run.extra["pause_kind"], "executor");
    let req = active(&run);
    assert_eq!(req.extra["executor_type"], "team");
    assert_eq!(req.extra["executor_id"], "dock");
    assert_eq!(req.extra["executor_name"], "Dock");
    let mut pending: Vec<agno_core::RunRequirement> =
        serde_json::from_value(req.extra["executor_requirements"].clone()).unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].member_agent_id.as_deref(), Some("shipper"));
    assert_eq!(shipped.load(Ordering::SeqCst), 0);
    pending[0].confirm();
    let mut yes = req;
    yes.extra.insert("executor_requirements".into(), serde_json::to_value(&pending).unwrap());
    let run = answer(&wf, &run, yes).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed, "{}", run.content_text());
    assert_eq!(run.content_text(), "team says: shipped crate");
    assert_eq!(shipped.load(Ordering::SeqCst), 1);
    assert_eq!(calls.of("prepare"), 1, "the step before ran once");
    let executor_runs = run.extra["step_executor_runs"].as_array().unwrap();
    assert_eq!(executor_runs.len(), 1, "one team run, continued");
    assert_eq!(executor_runs[0]["team_id"], "dock");
    assert_eq!(executor_runs[0]["status"], "COMPLETED");
    assert_eq!(executor_runs[0]["member_responses"][0]["status"], "COMPLETED");
}

/// A review inside a nested workflow pauses the outer run (an executor pause of type
/// `workflow`, the nested run's requirements forwarded); each answer continues the nested run
/// where it paused, twice here, and no step on either level runs twice.
#[tokio::test]
async fn a_review_inside_a_nested_workflow_pauses_the_outer_run_and_continues_the_nested_one() {
    let calls = Calls::default();
    let reviewed = |name: &str| Step { human_review: Some(confirm()), ..calls.step(name) };
    let inner = Workflow::builder()
        .id("inner")
        .name("Inner")
        .steps(vec![calls.step("draft").into(), reviewed("publish").into(), reviewed("announce").into()])
        .build()
        .unwrap();
    let db = sqlite().await;
    let wf = workflow(
        Some(Arc::clone(&db)),
        vec![
            calls.step("prepare").into(),
            Step { name: "nested".into(), executor: Executor::workflow(inner), ..Step::default() }.into(),
            calls.step("final").into(),
        ],
    );
    let mut run = wf.arun(WorkflowRunRequest::from("go").session_id("nested-review")).await.unwrap();
    for expected in ["publish", "announce"] {
        assert_eq!(run.status, RunStatus::Paused, "waiting for {expected}");
        assert_eq!(run.extra["pause_kind"], "executor");
        let req = active(&run);
        assert_eq!(req.step_name.as_deref(), Some("nested"));
        assert_eq!(req.extra["executor_type"], "workflow");
        assert_eq!(req.extra["executor_id"], "inner");
        let mut inner_reqs: Vec<StepRequirement> =
            serde_json::from_value(req.extra["executor_requirements"].clone()).unwrap();
        let last = inner_reqs.last_mut().unwrap();
        assert_eq!(last.step_name.as_deref(), Some(expected));
        assert_eq!(last.confirmation_message.as_deref(), Some("Go?"));
        assert_eq!(calls.of(expected), 0, "nothing runs before it is confirmed");
        // An answer naming another nested step changes nothing.
        let mut stray = last.clone();
        stray.step_id = "ghost".into();
        stray.step_name = Some("ghost".into());
        stray.confirmed = Some(true);
        let mut bad = req.clone();
        bad.extra.insert("executor_requirements".into(), serde_json::to_value(vec![stray]).unwrap());
        let err = answer(&wf, &run, bad).await.unwrap_err();
        assert!(err.to_string().contains("a nested workflow") && err.to_string().contains("ghost"), "{err}");
        last.confirmed = Some(true);
        let mut yes = req;
        yes.extra.insert("executor_requirements".into(), serde_json::to_value(&inner_reqs).unwrap());
        run = answer(&wf, &run, yes).await.unwrap();
    }
    assert_eq!(run.status, RunStatus::Completed, "{}", run.content_text());
    assert_eq!(run.content_text(), "draft+publish+announce+final", "the nested run starts its own chain");
    for name in ["prepare", "draft", "publish", "announce", "final"] {
        assert_eq!(calls.of(name), 1, "{name} ran once over three walks");
    }
    let nested = &run.extra["step_executor_runs"][0];
    assert_eq!(nested["workflow_id"], "inner");
    assert_eq!(nested["status"], "COMPLETED");
    assert_eq!(nested["parent_run_id"], run.id());
}
