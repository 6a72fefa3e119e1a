//! `/workflows` against a real server: workflows declared in `agentos.toml` over the configured
//! agents, listed and described, run as JSON and SSE, their runs read and cancelled, bad input
//! and bad configurations refused naming the field, and user isolation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::time::Duration;

use agno_testkit::{FakeProvider, Reply as Scripted};
use common::{SECRET, TestOs, config, detail, token};
use futures::StreamExt;
use serde_json::{Value, json};

const WORKFLOWS: &str = r#"
[[agents]]
id = "writer"
name = "Writer"
model = "test"

[[workflows]]
id = "pipeline"
name = "Pipeline"
description = "Draft, route, fan out"
session_state = { lang = "fr" }

[[workflows.steps]]
name = "draft"
agent = "writer"

[[workflows.steps]]
name = "gate"
type = "condition"
condition = 'input.contains("urgent")'
steps = [{ name = "escalate", agent = "writer" }]
else_steps = [{ name = "file", agent = "writer" }]

[[workflows.steps]]
name = "translate"
type = "router"
selector = "session_state.lang"
steps = [{ name = "en", agent = "writer" }, { name = "fr", agent = "writer" }]

[[workflows.steps]]
name = "fanout"
type = "parallel"
steps = [{ name = "left", agent = "writer" }, { name = "right", agent = "writer" }]

[[workflows]]
id = "outer"
[[workflows.steps]]
name = "inner"
workflow = "pipeline"
"#;

async fn os() -> TestOs {
    TestOs::start(config(&format!("[db]\nurl = \"memory://\"\n{WORKFLOWS}"))).await
}

fn names(results: &Value) -> Vec<String> {
    results.as_array().unwrap().iter().map(|s| s["step_name"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn workflows_are_listed_and_described_with_their_steps() {
    let os = os().await;
    let list = os.get("/workflows", None).await;
    assert_eq!(list.status, 200);
    let ids: Vec<&str> = list.body.as_array().unwrap().iter().map(|w| w["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["pipeline", "outer"]);
    let first = &list.body[0];
    assert_eq!(first["name"], "Pipeline");
    assert_eq!(first["description"], "Draft, route, fan out");
    assert_eq!(first["db_id"], "default");
    let detail = os.get("/workflows/pipeline", None).await;
    assert_eq!(detail.status, 200);
    let steps = &detail.body["steps"];
    assert_eq!((&steps[0]["name"], &steps[0]["type"]), (&json!("draft"), &json!("Step")));
    let writer = os.get("/agents/writer", None).await;
    assert_eq!(steps[0]["agent"], writer.body, "an agent step describes its agent as /agents/{{id}} does");
    assert_eq!(steps[1]["type"], "Condition");
    assert_eq!(steps[1]["steps"][0]["name"], "escalate");
    assert_eq!(steps[1]["else_steps"][0]["name"], "file");
    assert_eq!(steps[3]["steps"][1]["name"], "right");
    assert_eq!(detail.body["workflow_agent"], false);
    let config = os.get("/config", None).await;
    assert_eq!(config.body["workflows"].as_array().unwrap().len(), 2);
    let missing = os.get("/workflows/nope", None).await;
    assert_eq!(missing.status, 404);
    assert_eq!(detail_text(&missing.body), "Workflow not found");
}

fn detail_text(body: &Value) -> String {
    detail(body)
}

#[tokio::test]
async fn a_run_chains_agents_through_condition_router_and_parallel_and_is_stored() {
    let os = os().await;
    let r = os
        .post_form(
            "/workflows/pipeline/runs",
            &[("message", "urgent: fix it"), ("stream", "false"), ("session_id", "s1")],
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let run = &r.body;
    assert_eq!(run["status"], "COMPLETED");
    assert_eq!(run["input"], "urgent: fix it", "stored bare, as Agno stores a workflow input");
    assert_eq!(names(&run["step_results"]), ["draft", "gate", "translate", "fanout"]);
    assert_eq!(names(&run["step_results"][1]["steps"]), ["escalate"], "the condition's expression held");
    assert_eq!(names(&run["step_results"][2]["steps"]), ["fr"], "the router followed session_state.lang");
    let draft = run["step_results"][0]["content"].as_str().unwrap();
    assert_eq!(draft, "This is the test model answering: urgent: fix it");
    let escalate = run["step_results"][1]["steps"][0]["content"].as_str().unwrap();
    assert_eq!(escalate, format!("This is the test model answering: {draft}"), "each step answers the previous one");
    // draft, escalate, fr, left, right: one agent run each, kept inside the workflow run.
    assert_eq!(run["step_executor_runs"].as_array().unwrap().len(), 5);
    let run_id = run["run_id"].as_str().unwrap();

    // Read back: the run, the workflow's runs in the session, and the session.
    let got = os.get(&format!("/workflows/pipeline/runs/{run_id}?session_id=s1"), None).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.body["step_results"], run["step_results"]);
    let runs = os.get("/workflows/pipeline/runs?session_id=s1", None).await;
    assert_eq!(runs.status, 200);
    assert_eq!(runs.body[0]["run_id"], run_id);
    assert_eq!(runs.body[0]["run_input"], "urgent: fix it");
    let completed = os.get("/workflows/pipeline/runs?session_id=s1&status=COMPLETED", None).await;
    assert_eq!(completed.body.as_array().map(Vec::len), Some(1), "{}", completed.body);
    let errored = os.get("/workflows/pipeline/runs?session_id=s1&status=error", None).await;
    assert_eq!(errored.body, serde_json::json!([]));
    let sessions = os.get("/sessions?type=workflow", None).await;
    assert_eq!(sessions.body["data"][0]["session_id"], "s1");
    assert_eq!(sessions.body["data"][0]["session_name"], "urgent: fix it");
    let session_runs = os.get("/sessions/s1/runs?type=workflow", None).await;
    assert_eq!(session_runs.status, 200, "{}", session_runs.body);
    assert_eq!(session_runs.body.as_array().unwrap().len(), 1);

    // Without "urgent" the else branch runs; a nested workflow runs the whole pipeline.
    let r = os.post_form("/workflows/pipeline/runs", &[("message", "routine"), ("stream", "false")], None).await;
    assert_eq!(names(&r.body["step_results"][1]["steps"]), ["file"]);
    let r = os.post_form("/workflows/outer/runs", &[("message", "urgent"), ("stream", "false")], None).await;
    assert_eq!(r.body["status"], "COMPLETED", "{}", r.body);
    assert_eq!(r.body["step_results"][0]["executor_type"], "workflow");
    let nested = &r.body["step_executor_runs"][0];
    assert_eq!(nested["workflow_id"], "pipeline");
    assert_eq!(nested["parent_run_id"], r.body["run_id"]);
}

#[tokio::test]
async fn a_streamed_run_sends_agnos_workflow_events_with_increasing_ids() {
    let os = os().await;
    let (reply, events) =
        os.post_sse("/workflows/pipeline/runs", &[("message", "hello"), ("session_id", "streamed")], None).await;
    assert_eq!(reply.status, 200);
    let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names.first(), Some(&"WorkflowStarted"));
    assert_eq!(names.last(), Some(&"WorkflowCompleted"));
    for expected in [
        "StepStarted",
        "StepCompleted",
        "ConditionExecutionStarted",
        "RouterExecutionCompleted",
        "ParallelExecutionStarted",
    ] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    let indexes: Vec<u64> = events.iter().map(|(_, data)| data["event_index"].as_u64().unwrap()).collect();
    assert!(indexes.windows(2).all(|w| w[0] < w[1]), "{indexes:?}");
    assert!(events.iter().all(|(name, data)| data["event"] == name.as_str()));
    assert!(events.iter().filter(|(n, _)| n.starts_with("Workflow")).all(|(_, d)| d["workflow_id"] == "pipeline"));
    let run_id = events[0].1["run_id"].as_str().unwrap();
    // Agent steps stream their agent's events between the step's events, as Agno does.
    let draft_started = names.iter().position(|n| *n == "StepStarted").unwrap();
    assert_eq!(names[draft_started + 1], "RunStarted");
    assert_eq!(events[draft_started + 1].1["agent_id"], "writer");
    let stored = os.get(&format!("/workflows/pipeline/runs/{run_id}"), None).await;
    assert_eq!(stored.body["status"], "COMPLETED");
    let kept = stored.body.get("events").and_then(Value::as_array).map_or(0, Vec::len);
    assert_eq!(kept, 0, "as Agno (store_events off), events are not kept");
}

#[tokio::test]
async fn bad_requests_are_refused_with_the_field_named_and_nothing_stored() {
    let os = os().await;
    let r = os.post_form("/workflows/pipeline/runs", &[("stream", "false")], None).await;
    assert_eq!(r.status, 422);
    assert!(detail(&r.body).contains("message"), "{}", r.body);
    let r = os.post_form("/workflows/nope/runs", &[("message", "x")], None).await;
    assert_eq!(r.status, 404);
    let r = os.post_form("/workflows/pipeline/runs", &[("message", "x"), ("session_state", "[1]")], None).await;
    assert_eq!(r.status, 422);
    assert!(detail(&r.body).contains("session_state"), "{}", r.body);
    let r = os.get("/workflows/pipeline/runs", None).await;
    assert_eq!(r.status, 422, "session_id is required, as in Agno");
    let r = os.get("/workflows/pipeline/runs/unknown-run", None).await;
    assert_eq!(r.status, 404);
    let r = os.post_json("/workflows/pipeline/runs/unknown-run/cancel", &json!({}), None).await;
    assert_eq!(r.status, 404);
    let sessions = os.get("/sessions?type=workflow", None).await;
    assert_eq!(sessions.body["data"], json!([]), "no refused request stored anything");
}

#[tokio::test]
async fn a_cancel_over_http_stops_a_running_workflow_and_stores_it_cancelled() {
    let provider = FakeProvider::start().await.unwrap();
    // The second step's model call hangs for a minute.
    provider.push_all([
        Scripted::Text("drafted".into()),
        Scripted::Delayed(Duration::from_secs(60), Box::new(Scripted::Text("too late".into()))),
    ]);
    let toml = format!(
        "[db]\nurl = \"memory://\"\n[[agents]]\nid = \"slow\"\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n\
         [[workflows]]\nid = \"two\"\n[[workflows.steps]]\nname = \"one\"\nagent = \"slow\"\n\
         [[workflows.steps]]\nname = \"two\"\nagent = \"slow\"\n[[workflows.steps]]\nname = \"three\"\nagent = \"slow\"\n",
        provider.base_url()
    );
    let os = TestOs::start(config(&toml)).await;
    let mut form = reqwest::multipart::Form::new();
    for (k, v) in [("message", "go"), ("session_id", "c1")] {
        form = form.text(k, v);
    }
    let resp = os.client.post(format!("{}/workflows/two/runs", os.base)).multipart(form).send().await.unwrap();
    let mut stream = eventsource_stream::EventStream::new(resp.bytes_stream());
    let mut seen = Vec::new();
    let mut cancelled_at = None;
    while let Some(ev) = stream.next().await {
        let ev = ev.unwrap();
        let data: Value = serde_json::from_str(&ev.data).unwrap();
        if ev.event == "StepStarted" && data["step_name"] == "two" {
            // The model call is under way once the provider has the second request.
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while provider.request_count() < 2 {
                assert!(std::time::Instant::now() < deadline, "the second model call never started");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let run_id = data["run_id"].as_str().unwrap();
            let r = os.post_json(&format!("/workflows/two/runs/{run_id}/cancel?session_id=c1"), &json!({}), None).await;
            assert_eq!(r.status, 200, "{}", r.body);
            cancelled_at = Some(std::time::Instant::now());
        }
        seen.push((ev.event, data));
    }
    let took = cancelled_at.expect("cancelled").elapsed();
    assert!(took < Duration::from_secs(30), "the 60 s model call was interrupted ({took:?})");
    let (last, data) = seen.last().unwrap();
    assert_eq!(last, "WorkflowCancelled");
    let run_id = data["run_id"].as_str().unwrap();
    let stored = os.get(&format!("/workflows/two/runs/{run_id}"), None).await;
    assert_eq!(stored.body["status"], "CANCELLED");
    assert_eq!(names(&stored.body["step_results"]), ["one"]);
    assert_eq!(provider.request_count(), 2, "step three never ran");
    // A second cancel of the ended run changes nothing.
    let again = os.post_json(&format!("/workflows/two/runs/{run_id}/cancel"), &json!({}), None).await;
    assert_eq!(again.status, 200);
}

#[tokio::test]
async fn workflow_configurations_with_bad_references_are_refused_naming_the_field() {
    let base = "[db]\nurl = \"memory://\"\n[[agents]]\nid = \"a\"\nmodel = \"test\"\n";
    let cases = [
        (
            "[[workflows]]\nid = \"w\"\n[[workflows.steps]]\nname = \"s\"\nagent = \"ghost\"\n",
            r#"steps[0].agent: no agent has the id "ghost""#,
        ),
        (
            "[[workflows]]\nid = \"x\"\n[[workflows.steps]]\nname = \"s\"\nworkflow = \"y\"\n\
             [[workflows]]\nid = \"y\"\n[[workflows.steps]]\nname = \"s\"\nworkflow = \"x\"\n",
            "would run inside itself (x -> y -> x)",
        ),
        (
            "[[workflows]]\nid = \"w\"\n[[workflows.steps]]\nname = \"s\"\ntype = \"maybe\"\n",
            r#"steps[0].type: unknown step type "maybe""#,
        ),
        (
            "[[workflows]]\nid = \"w\"\n[[workflows.steps]]\nname = \"s\"\nagent = \"a\"\nmax_iterations = 2\n",
            "steps[0].max_iterations: only a loop takes it",
        ),
        (
            "[[workflows]]\nid = \"w\"\n[[workflows.steps]]\nname = \"c\"\ntype = \"condition\"\ncondition = \"input ==\"\nsteps = [{ name = \"s\", agent = \"a\" }]\n",
            "steps[0].condition: invalid expression",
        ),
        ("[[workflows]]\nid = \"w\"\n[[workflows.steps]]\nname = \"s\"\n", "a step needs agent"),
        ("[[workflows]]\nid = \"w\"\n", "at least one step"),
    ];
    for (workflows, expected) in cases {
        let err = agno_os::app::AgentOs::from_config(&config(&format!("{base}{workflows}"))).await.unwrap_err();
        assert!(err.to_string().contains(expected), "{workflows}\n=> {err}");
    }
}

#[tokio::test]
async fn under_isolation_another_users_workflow_runs_and_sessions_are_not_found() {
    let toml = format!(
        "[db]\nurl = \"memory://\"\n[auth]\nmode = \"jwt\"\nverification_keys = [\"{SECRET}\"]\nuser_isolation = true\n{WORKFLOWS}"
    );
    let os = TestOs::start(config(&toml)).await;
    let alice = token("alice", &["workflows:read", "workflows:run", "sessions:read"]);
    let bob = token("bob", &["workflows:read", "workflows:run", "sessions:read"]);
    let r = os
        .post_form(
            "/workflows/pipeline/runs",
            &[("message", "mine"), ("stream", "false"), ("session_id", "alice-s"), ("user_id", "bob")],
            Some(&alice),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["user_id"], "alice", "the token's sub is the run's user");
    let run_id = r.body["run_id"].as_str().unwrap();
    for path in [
        format!("/workflows/pipeline/runs/{run_id}"),
        format!("/workflows/pipeline/runs/{run_id}?session_id=alice-s"),
        "/workflows/pipeline/runs?session_id=alice-s".to_owned(),
    ] {
        assert_eq!(os.get(&path, Some(&bob)).await.status, 404, "{path}");
        assert_eq!(os.get(&path, Some(&alice)).await.status, 200, "{path}");
    }
    let cancel = os.post_json(&format!("/workflows/pipeline/runs/{run_id}/cancel"), &json!({}), Some(&bob)).await;
    assert_eq!(cancel.status, 404);
    let into = os
        .post_form(
            "/workflows/pipeline/runs",
            &[("message", "sneak"), ("stream", "false"), ("session_id", "alice-s")],
            Some(&bob),
        )
        .await;
    assert_eq!(into.status, 404, "bob cannot run into alice's session");
    let runs = os.get("/workflows/pipeline/runs?session_id=alice-s", Some(&alice)).await;
    assert_eq!(runs.body.as_array().unwrap().len(), 1, "nothing of bob's landed in alice's session");
    // A token limited to another workflow sees neither this one nor its runs.
    let narrow = token("carol", &["workflows:outer:read", "workflows:outer:run"]);
    let list = os.get("/workflows", Some(&narrow)).await;
    let ids: Vec<&str> = list.body.as_array().unwrap().iter().map(|w| w["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["outer"]);
    assert_eq!(
        os.get("/workflows/pipeline", Some(&narrow)).await.status,
        403,
        "as for agents: the scope names another workflow"
    );
    let refused =
        os.post_form("/workflows/pipeline/runs", &[("message", "x"), ("stream", "false")], Some(&narrow)).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
}

const REVIEWED: &str = r#"
[[agents]]
id = "writer"
model = "test"

[[workflows]]
id = "publish"
[[workflows.steps]]
name = "draft"
agent = "writer"
[[workflows.steps]]
name = "publish"
agent = "writer"
human_review = { requires_confirmation = true, confirmation_message = "Publish it?", on_reject = "cancel" }
[[workflows.steps]]
name = "tone"
type = "router"
steps = [{ name = "formal", agent = "writer" }, { name = "casual", agent = "writer" }]
human_review = { requires_user_input = true, user_input_message = "Which tone?" }
"#;

#[tokio::test]
async fn a_paused_workflow_is_continued_over_http_and_bad_answers_change_nothing() {
    let os = TestOs::start(config(&format!("[db]\nurl = \"memory://\"\n{REVIEWED}"))).await;
    let r = os
        .post_form("/workflows/publish/runs", &[("message", "news"), ("stream", "false"), ("session_id", "p1")], None)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["status"], "PAUSED");
    assert_eq!(r.body["paused_step_name"], "publish");
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let req = r.body["step_requirements"][0].clone();
    assert_eq!(req["requires_confirmation"], true);
    assert_eq!(req["confirmation_message"], "Publish it?");
    let path = format!("/workflows/publish/runs/{run_id}/continue");

    // Answers that do not fit: 422 naming what is wrong, and the run stays as it was.
    let mut wrong = req.clone();
    wrong["step_id"] = json!("not-a-step");
    wrong["step_name"] = json!("ghost");
    wrong["confirmed"] = json!(true);
    for (fields, expected) in [
        (vec![("step_requirements", json!([wrong]).to_string())], "ghost"),
        (vec![("step_requirements", json!([req]).to_string())], "confirm (confirmed = true) or reject"),
        (vec![("step_requirements", "{not json".to_owned())], "step_requirements must be a JSON list"),
    ] {
        let mut fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        fields.push(("stream", "false"));
        let r = os.post_form(&path, &fields, None).await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(detail(&r.body).contains(expected), "{}", r.body);
    }
    let still = os.get(&format!("/workflows/publish/runs/{run_id}"), None).await;
    assert_eq!(still.body["status"], "PAUSED");
    assert_eq!(still.body["step_requirements"][0]["confirmed"], Value::Null);

    // Confirmed: the router's reviewer is asked next, over SSE this time.
    let mut yes = req.clone();
    yes["confirmed"] = json!(true);
    let (reply, events) = os.post_sse(&path, &[("step_requirements", &json!([yes]).to_string())], None).await;
    assert_eq!(reply.status, 200);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"StepContinued"), "{names:?}");
    assert!(names.contains(&"RouterPaused"), "{names:?}");
    assert_eq!(names.last(), Some(&"WorkflowPaused"));
    let paused = os.get(&format!("/workflows/publish/runs/{run_id}"), None).await;
    let route = paused.body["step_requirements"][1].clone();
    assert_eq!(route["requires_route_selection"], true);
    assert_eq!(route["available_choices"], json!(["formal", "casual"]));
    let mut outside = route.clone();
    outside["selected_choices"] = json!(["angry"]);
    let r =
        os.post_form(&path, &[("step_requirements", &json!([outside]).to_string()), ("stream", "false")], None).await;
    assert_eq!(r.status, 422);
    assert!(detail(&r.body).contains(r#""angry" is not a route"#), "{}", r.body);
    let mut pick = route;
    pick["selected_choices"] = json!(["casual"]);
    let r = os.post_form(&path, &[("step_requirements", &json!([pick]).to_string()), ("stream", "false")], None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["status"], "COMPLETED");
    let steps: Vec<&str> =
        r.body["step_results"].as_array().unwrap().iter().map(|s| s["step_name"].as_str().unwrap()).collect();
    assert_eq!(steps, ["draft", "publish", "tone"]);
    assert_eq!(r.body["step_results"][2]["steps"][0]["step_name"], "casual");
    assert_eq!(r.body["step_executor_runs"].as_array().unwrap().len(), 3, "each agent ran once over three walks");
    // Not paused any more.
    let r = os.post_form(&path, &[("step_requirements", &json!([pick]).to_string()), ("stream", "false")], None).await;
    assert_eq!(r.status, 409);
    let r = os.post_form("/workflows/publish/runs/unknown/continue", &[("stream", "false")], None).await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn another_users_paused_workflow_cannot_be_continued() {
    let toml = format!(
        "[db]\nurl = \"memory://\"\n[auth]\nmode = \"jwt\"\nverification_keys = [\"{SECRET}\"]\nuser_isolation = true\n{REVIEWED}"
    );
    let os = TestOs::start(config(&toml)).await;
    let alice = token("alice", &["workflows:read", "workflows:run"]);
    let bob = token("bob", &["workflows:read", "workflows:run"]);
    let r = os.post_form("/workflows/publish/runs", &[("message", "x"), ("stream", "false")], Some(&alice)).await;
    assert_eq!(r.body["status"], "PAUSED");
    let run_id = r.body["run_id"].as_str().unwrap();
    let mut yes = r.body["step_requirements"][0].clone();
    yes["confirmed"] = json!(true);
    let path = format!("/workflows/publish/runs/{run_id}/continue");
    let body = json!([yes]).to_string();
    let r = os.post_form(&path, &[("step_requirements", &body), ("stream", "false")], Some(&bob)).await;
    assert_eq!(r.status, 404);
    let still = os.get(&format!("/workflows/publish/runs/{run_id}"), Some(&alice)).await;
    assert_eq!(still.body["status"], "PAUSED", "bob's continue did nothing");
    let r = os.post_form(&path, &[("step_requirements", &body), ("stream", "false")], Some(&alice)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["status"], "PAUSED", "the router's review is next");
}

/// Polls the run until its status is one of `want` (bounded).
async fn wait_status(os: &TestOs, workflow: &str, run_id: &str, want: &[&str]) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let r = os.get(&format!("/workflows/{workflow}/runs/{run_id}"), None).await;
        if r.status == 200 && want.iter().any(|w| r.body["status"] == *w) {
            return r.body;
        }
        assert!(std::time::Instant::now() < deadline, "run {run_id} never reached {want:?}: {}", r.body);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls the run's job until it is `status` (bounded): a worker records the job's outcome just
/// after the run's.
async fn wait_job(os: &TestOs, run_id: &str, status: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let job = os.get(&format!("/queue/jobs/{run_id}"), None).await;
        if job.body["status"] == status {
            return job.body;
        }
        assert!(std::time::Instant::now() < deadline, "job {run_id} never became {status}: {}", job.body);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

const QUEUED: &str = "[db]\nurl = \"memory://\"\n[queue]\npoll_interval_ms = 50\nlock_grace_seconds = 2\n";

#[tokio::test]
async fn a_background_workflow_runs_on_the_queue_and_its_events_can_be_tailed_and_resumed() {
    let os = TestOs::start(config(&format!("{QUEUED}{WORKFLOWS}"))).await;
    let r = os
        .post_form(
            "/workflows/pipeline/runs",
            &[("message", "urgent"), ("stream", "false"), ("background", "true"), ("session_id", "bg")],
            None,
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.body["status"], "PENDING");
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let done = wait_status(&os, "pipeline", &run_id, &["COMPLETED"]).await;
    assert_eq!(done["input"], "urgent");
    assert_eq!(done["step_results"].as_array().unwrap().len(), 4);
    let job = wait_job(&os, &run_id, "completed").await;
    assert_eq!(job["component_type"], "workflow");

    // The logged events replay from any index, ids without gaps.
    let (reply, events) = os.post_sse(&format!("/workflows/pipeline/runs/{run_id}/resume"), &[], None).await;
    assert_eq!(reply.status, 200);
    let ids: Vec<u64> = events.iter().map(|(_, d)| d["event_index"].as_u64().unwrap()).collect();
    assert_eq!(ids, (0..ids.len() as u64).collect::<Vec<_>>());
    assert_eq!(events.first().unwrap().0, "WorkflowStarted");
    assert_eq!(events.last().unwrap().0, "WorkflowCompleted");
    let after = ids.len() / 2;
    let (_, rest) = os
        .post_sse(
            &format!("/workflows/pipeline/runs/{run_id}/resume"),
            &[("last_event_index", &after.to_string())],
            None,
        )
        .await;
    assert_eq!(rest.len(), ids.len() - after - 1);
    assert_eq!(rest[0].1["event_index"], after as u64 + 1);

    // stream=true tails the queued run.
    let (reply, tailed) =
        os.post_sse("/workflows/pipeline/runs", &[("message", "tail me"), ("background", "true")], None).await;
    assert_eq!(reply.status, 200);
    assert_eq!(tailed.last().unwrap().0, "WorkflowCompleted");
    // An inline run has no log: a resume replays what was stored with the run, as Agno replays
    // from the run's row.
    let inline = os.post_form("/workflows/pipeline/runs", &[("message", "x"), ("stream", "false")], None).await;
    let inline_id = inline.body["run_id"].as_str().unwrap();
    let (r, replayed) = os.post_sse(&format!("/workflows/pipeline/runs/{inline_id}/resume"), &[], None).await;
    assert_eq!(r.status, 200);
    assert_eq!(replayed[0].0, "replay");
    assert_eq!(replayed[0].1["run_id"], inline_id);
    assert_eq!(replayed[0].1["status"], "COMPLETED");
}

#[tokio::test]
async fn a_paused_background_workflow_is_continued_on_the_queue() {
    let os = TestOs::start(config(&format!("{QUEUED}{REVIEWED}"))).await;
    let r = os
        .post_form("/workflows/publish/runs", &[("message", "news"), ("stream", "false"), ("background", "true")], None)
        .await;
    assert_eq!(r.status, 202);
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let paused = wait_status(&os, "publish", &run_id, &["PAUSED"]).await;
    wait_job(&os, &run_id, "paused").await;
    let path = format!("/workflows/publish/runs/{run_id}/continue");
    let mut bad = paused["step_requirements"][0].clone();
    bad["step_id"] = json!("ghost");
    let r = os
        .post_form(
            &path,
            &[("step_requirements", &json!([bad]).to_string()), ("stream", "false"), ("background", "true")],
            None,
        )
        .await;
    assert_eq!(r.status, 422, "checked before anything is queued: {}", r.body);
    let mut yes = paused["step_requirements"][0].clone();
    yes["confirmed"] = json!(true);
    let r = os
        .post_form(
            &path,
            &[("step_requirements", &json!([yes]).to_string()), ("stream", "false"), ("background", "true")],
            None,
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    // Then the router's reviewer, again through the queue.
    let paused = wait_status(&os, "publish", &run_id, &["PAUSED"]).await;
    let route = paused["step_requirements"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(route["requires_route_selection"], true, "{paused}");
    let mut pick = route;
    pick["selected_choices"] = json!(["formal"]);
    let (reply, events) =
        os.post_sse(&path, &[("step_requirements", &json!([pick]).to_string()), ("background", "true")], None).await;
    assert_eq!(reply.status, 200);
    assert_eq!(events.last().unwrap().0, "WorkflowCompleted", "{:?}", events.iter().map(|e| &e.0).collect::<Vec<_>>());
    let done = wait_status(&os, "publish", &run_id, &["COMPLETED"]).await;
    let steps: Vec<&str> =
        done["step_results"].as_array().unwrap().iter().map(|s| s["step_name"].as_str().unwrap()).collect();
    assert_eq!(steps, ["draft", "publish", "tone"]);
    assert_eq!(done["step_executor_runs"].as_array().unwrap().len(), 3, "no step ran twice over three attempts");
}

#[tokio::test]
async fn a_background_workflow_is_cancelled_inside_its_model_call() {
    let provider = FakeProvider::start().await.unwrap();
    provider.push_all([
        Scripted::Text("drafted".into()),
        Scripted::Delayed(Duration::from_secs(60), Box::new(Scripted::Text("too late".into()))),
    ]);
    let toml = format!(
        "{QUEUED}[[agents]]\nid = \"slow\"\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n\
         [[workflows]]\nid = \"two\"\n[[workflows.steps]]\nname = \"one\"\nagent = \"slow\"\n\
         [[workflows.steps]]\nname = \"two\"\nagent = \"slow\"\n",
        provider.base_url()
    );
    let os = TestOs::start(config(&toml)).await;
    let r = os
        .post_form("/workflows/two/runs", &[("message", "go"), ("stream", "false"), ("background", "true")], None)
        .await;
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while provider.request_count() < 2 {
        assert!(std::time::Instant::now() < deadline, "the second model call never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let asked = std::time::Instant::now();
    let r = os.post_json(&format!("/workflows/two/runs/{run_id}/cancel"), &json!({}), None).await;
    assert_eq!(r.status, 200);
    let done = wait_status(&os, "two", &run_id, &["CANCELLED"]).await;
    assert!(asked.elapsed() < Duration::from_secs(10), "stopped long before the 60 s model call ended");
    let steps: Vec<&str> =
        done["step_results"].as_array().unwrap().iter().map(|s| s["step_name"].as_str().unwrap()).collect();
    assert_eq!(steps, ["one"]);
    assert_eq!(done["step_executor_runs"][1]["status"], "CANCELLED", "the member agent's run ended cancelled too");
}
