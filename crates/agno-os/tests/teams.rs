//! `/teams` against a real server: teams declared in `agentos.toml`, described, run as JSON and
//! SSE, their runs read and cancelled (with their running member), bad configurations and
//! requests refused, user isolation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use agno_testkit::{FakeProvider, Reply as Scripted};
use common::{SECRET, TestOs, config, detail, token};
use futures::StreamExt;
use serde_json::{Value, json};

fn delegate(member: &str, task: &str) -> Scripted {
    Scripted::ToolCalls {
        content: None,
        calls: vec![("delegate_task_to_member".into(), json!({"member_id": member, "task": task}).to_string())],
    }
}

/// A team `desk` whose leader runs on the fake provider, over the `test`-model agent `writer`.
fn team_config(provider: &FakeProvider, extra: &str) -> String {
    format!(
        "[db]\nurl = \"memory://\"\n{extra}\n[[agents]]\nid = \"writer\"\nname = \"Writer\"\nmodel = \"test\"\n\
         [[teams]]\nid = \"desk\"\nname = \"Desk\"\ndescription = \"A desk\"\nmembers = [\"writer\"]\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        provider.base_url()
    )
}

#[tokio::test]
async fn teams_are_described_and_run_as_json_and_sse_and_their_runs_are_stored() {
    let provider = FakeProvider::start().await.unwrap();
    let toml = team_config(&provider, "")
        .replace("members = [\"writer\"]\n", "members = [\"writer\"]\nadd_history_to_context = true\n");
    let os = TestOs::start(config(&toml)).await;
    let list = os.get("/teams", None).await;
    assert_eq!(list.status, 200);
    let desk = &list.body[0];
    assert_eq!(desk["id"], "desk");
    assert_eq!(desk["mode"], "coordinate");
    assert_eq!(desk["tools"]["tools"][0]["name"], "delegate_task_to_member");
    let writer = os.get("/agents/writer", None).await;
    assert_eq!(desk["members"][0], writer.body, "a member agent is described as /agents/{{id}} does");
    assert_eq!(os.get("/teams/desk", None).await.body, *desk);
    assert_eq!(os.get("/config", None).await.body["teams"][0]["id"], "desk");
    assert_eq!(os.get("/teams/nope", None).await.status, 404);

    provider.push_all([delegate("writer", "draft the news"), Scripted::text("the desk is done")]);
    let r =
        os.post_form("/teams/desk/runs", &[("message", "news"), ("stream", "false"), ("session_id", "t1")], None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["status"], "COMPLETED");
    assert_eq!(r.body["content"], "the desk is done");
    assert_eq!(r.body["team_id"], "desk");
    let member = &r.body["member_responses"][0];
    assert_eq!(member["agent_id"], "writer");
    assert_eq!(member["content"], "This is the test model answering: draft the news");
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    assert_eq!(member["parent_run_id"], run_id.as_str());

    let runs = os.get("/teams/desk/runs?session_id=t1", None).await;
    assert_eq!(runs.body.as_array().unwrap().len(), 1, "the team's runs, not its members': {}", runs.body);
    assert_eq!(runs.body[0]["run_id"], run_id.as_str());
    // Filtered by status, as Agno's `status` query parameter.
    let completed = os.get("/teams/desk/runs?session_id=t1&status=completed", None).await;
    assert_eq!(completed.body.as_array().map(Vec::len), Some(1), "{}", completed.body);
    let paused = os.get("/teams/desk/runs?session_id=t1&status=PAUSED", None).await;
    assert_eq!(paused.body, serde_json::json!([]));
    assert_eq!(os.get("/teams/desk/runs?session_id=t1&status=done", None).await.status, 422);
    let got = os.get(&format!("/teams/desk/runs/{run_id}?session_id=t1"), None).await;
    // The stored member response is the live one as every store reads a run back (empty `tools`
    // dropped, `events` present).
    let (stored, live) = (&got.body["member_responses"][0], &r.body["member_responses"][0]);
    for key in ["run_id", "agent_id", "parent_run_id", "content", "messages", "metrics", "status"] {
        assert_eq!(stored[key], live[key], "member response {key}");
    }
    assert_eq!(got.body["member_responses"].as_array().map(Vec::len), Some(1));
    let sessions = os.get("/sessions?type=team", None).await;
    assert_eq!(sessions.body["data"][0]["session_id"], "t1");
    let session_runs = os.get("/sessions/t1/runs?type=team", None).await;
    assert_eq!(session_runs.status, 200, "{}", session_runs.body);

    provider.push_all([delegate("writer", "again"), Scripted::text("streamed")]);
    let (reply, events) = os.post_sse("/teams/desk/runs", &[("message", "go"), ("session_id", "t1")], None).await;
    assert_eq!(reply.status, 200);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"TeamRunStarted"));
    assert_eq!(names.last(), Some(&"TeamRunCompleted"));
    assert!(names.contains(&"TeamToolCallStarted") && names.contains(&"RunStarted"), "{names:?}");
    let ids: Vec<u64> = events.iter().map(|(_, d)| d["event_index"].as_u64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    // The leader read the first run as history.
    let last = provider.requests().into_iter().rev().find(|r| r.body["tools"].is_array()).unwrap();
    let texts: Vec<String> = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect();
    assert!(texts.iter().any(|t| t == "news"), "{texts:?}");
}

#[tokio::test]
async fn bad_team_requests_and_configurations_are_refused_naming_the_problem() {
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&team_config(&provider, ""))).await;
    let r = os.post_form("/teams/desk/runs", &[("stream", "false")], None).await;
    assert_eq!(r.status, 422);
    assert!(detail(&r.body).contains("message"), "{}", r.body);
    assert_eq!(os.get("/teams/desk/runs", None).await.status, 422);
    assert_eq!(os.get("/teams/desk/runs/none", None).await.status, 404);
    assert_eq!(os.post_json("/teams/desk/runs/none/cancel", &json!({}), None).await.status, 404);

    let base = "[db]\nurl = \"memory://\"\n[[agents]]\nid = \"a\"\nmodel = \"test\"\n";
    for (teams, expected) in [
        (
            "[[teams]]\nid = \"t\"\nmodel = \"test\"\nmembers = [\"ghost\"]\n",
            r#"members[0]: no agent or team has the id "ghost""#,
        ),
        (
            "[[teams]]\nid = \"x\"\nmodel = \"test\"\nmembers = [\"y\"]\n[[teams]]\nid = \"y\"\nmodel = \"test\"\nmembers = [\"x\"]\n",
            "would contain itself (x -> y -> x)",
        ),
        (
            "[[teams]]\nid = \"t\"\nmodel = \"test\"\nmode = \"chaos\"\nmembers = [\"a\"]\n",
            r#"mode "chaos" is not one of"#,
        ),
        ("[[teams]]\nid = \"t\"\nmodel = \"test\"\nmembers = []\n", "at least one member"),
    ] {
        let err = agno_os::app::AgentOs::from_config(&config(&format!("{base}{teams}"))).await.unwrap_err();
        assert!(err.to_string().contains(expected), "{teams}\n=> {err}");
    }
}

#[tokio::test]
async fn a_cancel_over_http_stops_the_team_and_its_member_inside_its_model_call() {
    let provider = FakeProvider::start().await.unwrap();
    // The leader delegates; the member's model call then hangs for a minute.
    provider.push_all([
        delegate("slow", "take your time"),
        Scripted::Delayed(Duration::from_secs(60), Box::new(Scripted::text("too late"))),
    ]);
    let toml = format!(
        "[db]\nurl = \"memory://\"\n[[agents]]\nid = \"slow\"\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{0}\", api_key = \"sk\" }}\n\
         [[teams]]\nid = \"desk\"\nmembers = [\"slow\"]\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{0}\", api_key = \"sk\" }}\n",
        provider.base_url()
    );
    let os = TestOs::start(config(&toml)).await;
    let mut form = reqwest::multipart::Form::new();
    for (k, v) in [("message", "go"), ("session_id", "c")] {
        form = form.text(k, v);
    }
    let resp = os.client.post(format!("{}/teams/desk/runs", os.base)).multipart(form).send().await.unwrap();
    let mut stream = eventsource_stream::EventStream::new(resp.bytes_stream());
    let mut run_id = None;
    let mut asked = None;
    let mut last = String::new();
    while let Some(ev) = stream.next().await {
        let ev = ev.unwrap();
        let data: Value = serde_json::from_str(&ev.data).unwrap();
        if ev.event == "TeamRunStarted" {
            run_id = data["run_id"].as_str().map(str::to_owned);
        }
        if ev.event == "ModelRequestStarted" && data["agent_id"] == "slow" && asked.is_none() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while provider.request_count() < 2 {
                assert!(Instant::now() < deadline, "the member's model call never reached the provider");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let id = run_id.clone().unwrap();
            let r = os.post_json(&format!("/teams/desk/runs/{id}/cancel?session_id=c"), &json!({}), None).await;
            assert_eq!(r.status, 200, "{}", r.body);
            asked = Some(Instant::now());
        }
        last = ev.event;
    }
    assert!(asked.expect("cancelled").elapsed() < Duration::from_secs(20));
    assert_eq!(last, "TeamRunCancelled");
    let id = run_id.unwrap();
    let stored = os.get(&format!("/teams/desk/runs/{id}"), None).await;
    assert_eq!(stored.body["status"], "CANCELLED");
    assert_eq!(stored.body["member_responses"][0]["status"], "CANCELLED");
}

#[tokio::test]
async fn under_isolation_another_users_team_runs_are_not_found() {
    let provider = FakeProvider::start().await.unwrap();
    let auth = format!("[auth]\nmode = \"jwt\"\nverification_keys = [\"{SECRET}\"]\nuser_isolation = true");
    let os = TestOs::start(config(&team_config(&provider, &auth))).await;
    let alice = token("alice", &["teams:read", "teams:run"]);
    let bob = token("bob", &["teams:read", "teams:run"]);
    provider.push_all([delegate("writer", "x"), Scripted::text("alice's answer")]);
    let r = os
        .post_form("/teams/desk/runs", &[("message", "mine"), ("stream", "false"), ("session_id", "a-s")], Some(&alice))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["user_id"], "alice");
    let run_id = r.body["run_id"].as_str().unwrap();
    for path in [format!("/teams/desk/runs/{run_id}"), "/teams/desk/runs?session_id=a-s".to_owned()] {
        assert_eq!(os.get(&path, Some(&bob)).await.status, 404, "{path}");
        assert_eq!(os.get(&path, Some(&alice)).await.status, 200, "{path}");
    }
    assert_eq!(os.post_json(&format!("/teams/desk/runs/{run_id}/cancel"), &json!({}), Some(&bob)).await.status, 404);
    let into = os
        .post_form("/teams/desk/runs", &[("message", "sneak"), ("stream", "false"), ("session_id", "a-s")], Some(&bob))
        .await;
    assert_eq!(into.status, 404, "bob cannot run into alice's session");

    // A background run's event log: alice's to replay, not bob's.
    provider.push_all([delegate("writer", "y"), Scripted::text("queued answer")]);
    let r = os
        .post_form(
            "/teams/desk/runs",
            &[("message", "later"), ("stream", "false"), ("background", "true"), ("session_id", "a-s")],
            Some(&alice),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    while os.get(&format!("/teams/desk/runs/{run_id}"), Some(&alice)).await.body["status"] != "COMPLETED" {
        assert!(Instant::now() < deadline, "the background run never completed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let resume = format!("/teams/desk/runs/{run_id}/resume");
    assert_eq!(os.post_form(&resume, &[], Some(&bob)).await.status, 404, "bob cannot replay alice's run");
    let (reply, events) = os.post_sse(&resume, &[], Some(&alice)).await;
    assert_eq!(reply.status, 200);
    assert_eq!(events.last().unwrap().0, "TeamRunCompleted");
}

/// A team `desk` whose member `clerk` calls `add`, which needs a confirmation; leader and clerk
/// both run on the fake provider.
fn paused_team_config(provider: &FakeProvider, extra: &str) -> String {
    format!(
        "[db]\nurl = \"memory://\"\n{extra}\n[[agents]]\nid = \"clerk\"\nname = \"Clerk\"\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{0}\", api_key = \"sk\" }}\n\
         tools = [{{ toolkit = \"calculator\", include_tools = [\"add\"], requires_confirmation_tools = [\"add\"] }}]\n\
         [[teams]]\nid = \"desk\"\nmembers = [\"clerk\"]\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{0}\", api_key = \"sk\" }}\n",
        provider.base_url()
    )
}

fn add_call() -> Scripted {
    Scripted::ToolCalls { content: None, calls: vec![("add".into(), json!({"a": 2, "b": 3}).to_string())] }
}

#[tokio::test]
async fn a_members_confirmation_pauses_the_team_and_continue_over_http_finishes_it() {
    let provider = FakeProvider::start().await.unwrap();
    let auth = format!("[auth]\nmode = \"jwt\"\nverification_keys = [\"{SECRET}\"]\nuser_isolation = true");
    let os = TestOs::start(config(&paused_team_config(&provider, &auth))).await;
    let alice = token("alice", &["teams:read", "teams:run"]);
    let bob = token("bob", &["teams:read", "teams:run"]);
    provider.push_all([delegate("clerk", "add 2 and 3"), add_call()]);
    let r = os
        .post_form("/teams/desk/runs", &[("message", "sum?"), ("stream", "false"), ("session_id", "p1")], Some(&alice))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["status"], "PAUSED");
    let reqs = r.body["requirements"].as_array().unwrap().clone();
    assert_eq!(reqs.len(), 1, "{}", r.body);
    assert_eq!(reqs[0]["member_agent_id"], "clerk");
    assert_eq!(reqs[0]["member_agent_name"], "Clerk");
    assert_eq!(r.body["content"], "Team run paused. The following require input:\n- Clerk: add requires confirmation");
    assert_eq!(reqs[0]["tool_execution"]["tool_name"], "add");
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let got = os.get(&format!("/teams/desk/runs/{run_id}?session_id=p1"), Some(&alice)).await;
    assert_eq!(got.body["status"], "PAUSED");
    let path = format!("/teams/desk/runs/{run_id}/continue");
    let mut answered = reqs.clone();
    answered[0]["confirmation"] = json!(true);
    answered[0]["tool_execution"]["confirmed"] = json!(true);
    let answers = Value::Array(answered).to_string();

    // Refused, with nothing changed: another user, no session, bad JSON, no answer, a stranger.
    let form =
        |reqs: &str| vec![("requirements", reqs.to_owned()), ("stream", "false".into()), ("session_id", "p1".into())];
    let post = |fields: Vec<(&'static str, String)>, who: Option<String>| {
        let path = path.clone();
        let os = &os;
        async move {
            let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            os.post_form(&path, &fields, who.as_deref()).await
        }
    };
    assert_eq!(post(form(&answers), Some(bob.clone())).await.status, 404, "bob cannot continue alice's run");
    let r = post(vec![("requirements", answers.clone()), ("stream", "false".into())], Some(alice.clone())).await;
    assert_eq!(r.status, 400);
    assert!(detail(&r.body).contains("session_id"), "{}", r.body);
    let r = post(form("[{"), Some(alice.clone())).await;
    assert_eq!(r.status, 400);
    assert!(detail(&r.body).contains("Invalid JSON in requirements"), "{}", r.body);
    let r = post(form("[]"), Some(alice.clone())).await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(detail(&r.body).contains("not resolved"), "{}", r.body);
    let r = post(form(&json!([{"id": "stranger", "confirmation": true}]).to_string()), Some(alice.clone())).await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(detail(&r.body).contains("stranger"), "{}", r.body);
    let got = os.get(&format!("/teams/desk/runs/{run_id}?session_id=p1"), Some(&alice)).await;
    assert_eq!(got.body["status"], "PAUSED", "nothing changed");

    // The clerk's add runs (2 + 3), the clerk answers, then the leader.
    provider.push_all([Scripted::text("it is 5"), Scripted::text("the desk says 5")]);
    let (reply, events) = os.post_sse(&path, &[("requirements", &answers), ("session_id", "p1")], Some(&alice)).await;
    assert_eq!(reply.status, 200);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"RunContinued") && names.contains(&"TeamRunContinued"), "{names:?}");
    assert_eq!(names.last(), Some(&"TeamRunCompleted"), "{names:?}");
    let done = os.get(&format!("/teams/desk/runs/{run_id}?session_id=p1"), Some(&alice)).await;
    assert_eq!(done.body["status"], "COMPLETED");
    assert_eq!(done.body["content"], "the desk says 5");
    let member = &done.body["member_responses"][0];
    assert_eq!(member["status"], "COMPLETED");
    assert_eq!(member["tools"][0]["result"], r#"{"operation":"addition","result":5.0}"#);
    // The clerk's tool result reached its model, and the clerk's answer reached the leader.
    let bodies: Vec<String> = provider.requests().iter().map(|r| r.body.to_string()).collect();
    assert!(bodies.iter().any(|b| b.contains("it is 5") && b.contains("delegate_task_to_member")), "{bodies:?}");
    // A finished run is no longer paused: answers for its old requirements change nothing, and
    // a continue is a fork of it (a new run, as Agno 3.1 forks it).
    let r = post(form(&answers), Some(alice.clone())).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(detail(&r.body).contains("waits for no answers"), "{}", r.body);
    provider.push_all([Scripted::text("the desk says 5 again")]);
    let r = post(vec![("stream", "false".into()), ("session_id", "p1".into())], Some(alice.clone())).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["forked_from_run_id"], run_id.as_str());
    assert_ne!(r.body["run_id"], run_id.as_str());
    assert_eq!(
        os.get(&format!("/teams/desk/runs/{run_id}?session_id=p1"), Some(&alice)).await.body["status"],
        "COMPLETED"
    );
}

const QUEUED: &str = "[queue]\npoll_interval_ms = 50\nlock_grace_seconds = 2\n";

/// Polls the team run until its status is one of `want` (bounded).
async fn wait_status(os: &TestOs, run_id: &str, want: &[&str]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = os.get(&format!("/teams/desk/runs/{run_id}"), None).await;
        if r.status == 200 && want.iter().any(|w| r.body["status"] == *w) {
            return r.body;
        }
        assert!(Instant::now() < deadline, "run {run_id} never reached {want:?}: {}", r.body);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls the run's job until it is `status` (bounded): a worker records the job's outcome just
/// after the run's.
async fn wait_job(os: &TestOs, run_id: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let job = os.get(&format!("/queue/jobs/{run_id}"), None).await;
        if job.body["status"] == status {
            return job.body;
        }
        assert!(Instant::now() < deadline, "job {run_id} never became {status}: {}", job.body);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `POST /teams/desk/runs` in the background (`stream=false`), with an `Idempotency-Key`.
async fn submit(os: &TestOs, message: &str, key: &str) -> common::Reply {
    let form = reqwest::multipart::Form::new()
        .text("message", message.to_owned())
        .text("stream", "false")
        .text("background", "true")
        .text("session_id", "bg");
    let resp = os
        .client
        .post(format!("{}/teams/desk/runs", os.base))
        .header("Idempotency-Key", key)
        .multipart(form)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    common::Reply { status, headers, body: resp.json().await.unwrap_or(Value::Null) }
}

#[tokio::test]
async fn a_background_team_runs_on_the_queue_and_its_events_can_be_tailed_and_resumed() {
    background_team_round_trip("memory://", true).await;
}

#[tokio::test]
async fn on_sqlite_a_background_team_runs_on_the_queue_through_its_claim() {
    background_team_round_trip(&common::sqlite_url("team-bg"), true).await;
}

#[tokio::test]
async fn on_postgres_a_background_team_runs_on_the_queue_through_its_claim() {
    let Some(schema) = common::PgSchema::new("team_bg") else { return };
    background_team_round_trip(&schema.url, true).await;
}

/// A background team run on `db_url`: 202, the same key answers the same run (`duplicate`), the
/// worker stores the team and member runs through its claim, the log replays, `stream=true` tails.
async fn background_team_round_trip(db_url: &str, duplicate: bool) {
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&team_config(&provider, QUEUED).replace("memory://", db_url))).await;
    provider.push_all([delegate("writer", "draft the news"), Scripted::text("the desk is done")]);
    let r = submit(&os, "news", "order-1").await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.body["status"], "PENDING");
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    if duplicate {
        let again = submit(&os, "news", "order-1").await;
        assert_eq!(again.status, 202, "{}", again.body);
        assert_eq!(again.body["run_id"], run_id.as_str(), "the same key answers the same run");
    }
    let done = wait_status(&os, &run_id, &["COMPLETED"]).await;
    assert_eq!(done["content"], "the desk is done");
    assert_eq!(done["team_id"], "desk");
    assert_eq!(done["member_responses"][0]["agent_id"], "writer");
    assert_eq!(done["member_responses"][0]["parent_run_id"], run_id.as_str());
    let job = wait_job(&os, &run_id, "completed").await;
    assert_eq!(job["component_type"], "team");
    assert_eq!(provider.request_count(), 2, "one run: leader and member, the duplicate ran nothing");

    // The logged events replay from any index, ids without gaps, the team's end last.
    let path = format!("/teams/desk/runs/{run_id}/resume");
    let (reply, events) = os.post_sse(&path, &[], None).await;
    assert_eq!(reply.status, 200);
    let ids: Vec<u64> = events.iter().map(|(_, d)| d["event_index"].as_u64().unwrap()).collect();
    assert_eq!(ids, (0..ids.len() as u64).collect::<Vec<_>>());
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"TeamRunStarted"));
    assert_eq!(names.last(), Some(&"TeamRunCompleted"));
    assert!(names.contains(&"RunStarted") && names.contains(&"RunCompleted"), "the member's events too: {names:?}");
    let after = ids.len() / 2;
    let (_, rest) = os.post_sse(&path, &[("last_event_index", &after.to_string())], None).await;
    assert_eq!(rest.len(), ids.len() - after - 1);

    // stream=true tails the queued run.
    provider.push_all([delegate("writer", "again"), Scripted::text("tailed")]);
    let (reply, tailed) =
        os.post_sse("/teams/desk/runs", &[("message", "tail me"), ("background", "true")], None).await;
    assert_eq!(reply.status, 200);
    assert_eq!(tailed.last().unwrap().0, "TeamRunCompleted");
    assert_eq!(tailed.last().unwrap().1["content"], "tailed");
    // An inline run has no log: a resume replays what was stored with the run, as Agno replays
    // from the run's row.
    provider.push_all([Scripted::text("inline")]);
    let inline = os.post_form("/teams/desk/runs", &[("message", "x"), ("stream", "false")], None).await;
    let inline_id = inline.body["run_id"].as_str().unwrap();
    let (r, replayed) = os.post_sse(&format!("/teams/desk/runs/{inline_id}/resume"), &[], None).await;
    assert_eq!(r.status, 200);
    assert_eq!(replayed[0].0, "replay");
    assert_eq!(replayed[0].1["run_id"], inline_id);
    assert_eq!(replayed[0].1["status"], "COMPLETED");
}

#[tokio::test]
async fn a_background_team_is_cancelled_inside_its_members_model_call() {
    let provider = FakeProvider::start().await.unwrap();
    provider.push_all([
        delegate("slow", "take your time"),
        Scripted::Delayed(Duration::from_secs(60), Box::new(Scripted::text("too late"))),
    ]);
    let toml = format!(
        "[db]\nurl = \"memory://\"\n{QUEUED}[[agents]]\nid = \"slow\"\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{0}\", api_key = \"sk\" }}\n\
         [[teams]]\nid = \"desk\"\nmembers = [\"slow\"]\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{0}\", api_key = \"sk\" }}\n",
        provider.base_url()
    );
    let os = TestOs::start(config(&toml)).await;
    let r = submit(&os, "go", "cancel-me").await;
    assert_eq!(r.status, 202, "{}", r.body);
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    while provider.request_count() < 2 {
        assert!(Instant::now() < deadline, "the member's model call never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let asked = Instant::now();
    let r = os.post_json(&format!("/teams/desk/runs/{run_id}/cancel"), &json!({}), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let done = wait_status(&os, &run_id, &["CANCELLED"]).await;
    assert!(asked.elapsed() < Duration::from_secs(10), "stopped long before the 60 s model call ended");
    assert_eq!(done["member_responses"][0]["status"], "CANCELLED", "{done}");
    wait_job(&os, &run_id, "cancelled").await;
}

#[tokio::test]
async fn a_paused_background_team_is_continued_on_the_queue() {
    paused_background_team("memory://").await;
}

#[tokio::test]
async fn on_postgres_a_paused_background_team_is_continued_on_the_queue() {
    let Some(schema) = common::PgSchema::new("team_pause") else { return };
    paused_background_team(&schema.url).await;
}

/// A background team paused on its member's confirmation, continued through the queue.
async fn paused_background_team(db_url: &str) {
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&paused_team_config(&provider, QUEUED).replace("memory://", db_url))).await;
    provider.push_all([delegate("clerk", "add 2 and 3"), add_call()]);
    let r = submit(&os, "sum?", "sum-1").await;
    assert_eq!(r.status, 202, "{}", r.body);
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let paused = wait_status(&os, &run_id, &["PAUSED"]).await;
    wait_job(&os, &run_id, "paused").await;
    let path = format!("/teams/desk/runs/{run_id}/continue");
    let r = os.post_form(&path, &[("requirements", "[]"), ("stream", "false"), ("session_id", "bg")], None).await;
    assert_eq!(r.status, 422, "checked before anything is queued: {}", r.body);
    let mut answered = paused["requirements"].clone();
    answered[0]["confirmation"] = json!(true);
    answered[0]["tool_execution"]["confirmed"] = json!(true);
    provider.push_all([Scripted::text("it is 5"), Scripted::text("the desk says 5")]);
    let (reply, events) =
        os.post_sse(&path, &[("requirements", &answered.to_string()), ("session_id", "bg")], None).await;
    assert_eq!(reply.status, 200);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    let job = os.get(&format!("/queue/jobs/{run_id}"), None).await;
    assert_eq!(names.last(), Some(&"TeamRunCompleted"), "{names:?} {}", job.body);
    let done = wait_status(&os, &run_id, &["COMPLETED"]).await;
    assert_eq!(done["content"], "the desk says 5");
    assert_eq!(done["member_responses"][0]["status"], "COMPLETED");
    // The continuation numbered its events after the first attempt's.
    let (_, all) = os.post_sse(&format!("/teams/desk/runs/{run_id}/resume"), &[], None).await;
    let ids: Vec<u64> = all.iter().map(|(_, d)| d["event_index"].as_u64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let all_names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    assert!(all_names.contains(&"TeamRunPaused") && all_names.contains(&"TeamRunContinued"), "{all_names:?}");
}

#[tokio::test]
async fn a_tasks_mode_team_is_described_with_its_task_tools_and_runs() {
    let provider = FakeProvider::start().await.unwrap();
    let toml = team_config(&provider, "")
        .replace("members = [\"writer\"]\n", "members = [\"writer\"]\nmode = \"tasks\"\nmax_iterations = 3\n");
    let os = TestOs::start(config(&toml)).await;
    let desk = os.get("/teams/desk", None).await;
    assert_eq!(desk.body["mode"], "tasks");
    let tools: Vec<&str> =
        desk.body["tools"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        [
            "create_task",
            "update_task_status",
            "list_tasks",
            "add_task_note",
            "mark_all_complete",
            "execute_task",
            "execute_tasks_parallel"
        ]
    );
    // A greeting needs no tasks: the second plain answer is final.
    provider.push_all([Scripted::text("hello"), Scripted::text("hello again")]);
    let r = os.post_form("/teams/desk/runs", &[("message", "hi"), ("stream", "false")], None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["content"], "hello again");
    let reminder = &provider.requests()[1].body["messages"];
    let last = reminder.as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_owned();
    assert!(last.starts_with("<current_task_state>\nNo tasks created yet."), "{last}");
}
