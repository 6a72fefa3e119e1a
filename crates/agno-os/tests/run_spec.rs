//! One run request for every entry point: the same request to an agent, a team and a workflow,
//! once inline and once with `background=true` (and once fired by a schedule), stores the same
//! run and the same session, field by field (ids and times aside). A job payload no version
//! wrote ends its run `ERROR` with the field named, and the queue goes on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use common::{TestOs, config};
use serde_json::{Value, json};

fn os_config(db: &str) -> String {
    format!(
        r#"
[db]
url = "{db}"
[queue]
poll_interval_ms = 20
[scheduler]
enabled = true
poll_interval_seconds = 3600
run_poll_interval_ms = 20

[[agents]]
id = "a"
model = "test"

[[teams]]
id = "t"
model = "test"
members = ["a"]

[[workflows]]
id = "w"

[[workflows.steps]]
name = "only"
agent = "a"
"#
    )
}

/// Keys whose values differ between any two runs (ids, clocks, durations).
const VOLATILE: &[&str] = &[
    "run_id",
    "session_id",
    "id",
    "created_at",
    "updated_at",
    "timestamp",
    "duration",
    "time_to_first_token",
    "parent_run_id",
    "start_time",
    "step_run_id",
    "workflow_run_id",
    "step_id",
    "end_time",
];

/// `v` with the volatile keys removed, at every depth.
fn stable(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter().filter(|(k, _)| !VOLATILE.contains(&k.as_str())).map(|(k, v)| (k.clone(), stable(v))).collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(stable).collect()),
        other => other.clone(),
    }
}

/// The paths where `a` and `b` differ.
fn differences(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let (va, vb) = (x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null));
                differences(&format!("{path}.{k}"), va, vb, out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                differences(&format!("{path}[{i}]"), va, vb, out);
            }
        }
        _ if a != b => out.push(format!("{path}: {a} != {b}")),
        _ => {}
    }
}

/// Posts a run form (text fields, and `files` parts) and returns the answer's JSON.
async fn post_run(os: &TestOs, path: &str, fields: &[(&str, String)], files: &[(&str, &[u8])]) -> (u16, Value) {
    let mut form = reqwest::multipart::Form::new();
    for (k, v) in fields {
        form = form.text((*k).to_owned(), v.clone());
    }
    for (name, bytes) in files {
        form = form.part("files", reqwest::multipart::Part::bytes(bytes.to_vec()).file_name((*name).to_owned()));
    }
    let resp = os.client.post(format!("{}{path}", os.base)).multipart(form).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

fn db(os: &TestOs) -> &std::sync::Arc<dyn agno_core::Db> {
    os.os.state.db.as_ref().unwrap()
}

/// The stored run once it has ended, as JSON.
async fn ended_run(os: &TestOs, run_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(run) = db(os).get_run(run_id, None).await.unwrap()
            && run.status.is_terminal()
        {
            return serde_json::to_value(&run).unwrap();
        }
        assert!(Instant::now() < deadline, "run {run_id} never ended");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn stored_session(os: &TestOs, session_id: &str) -> Value {
    let session = db(os).get_session(session_id, None, Some(0)).await.unwrap().unwrap();
    serde_json::to_value(&session).unwrap()
}

/// Runs the same request (`fields`, `files`) at `path` in two sessions, each first given one
/// inline run for history: inline in the first, with `background=true` in the second. Asserts
/// the two stored runs and sessions are equal but for ids and times.
async fn same_run_inline_and_in_background(
    os: &TestOs,
    path: &str,
    fields: &[(&str, String)],
    files: &[(&str, &[u8])],
) {
    let mut stored = Vec::new();
    for background in [false, true] {
        let session_id = agno_core::new_id();
        let warm = [
            ("message", "earlier turn".to_owned()),
            ("stream", "false".into()),
            ("session_id", session_id.clone()),
            ("user_id", "ana".into()),
        ];
        let (status, body) = post_run(os, path, &warm, &[]).await;
        assert_eq!(status, 200, "{body}");
        let mut all: Vec<(&str, String)> = fields.to_vec();
        all.extend([
            ("session_id", session_id.clone()),
            ("stream", "false".into()),
            ("background", background.to_string()),
        ]);
        let (status, body) = post_run(os, path, &all, files).await;
        assert_eq!(status, if background { 202 } else { 200 }, "{path} background={background}: {body}");
        let run_id = body["run_id"].as_str().unwrap().to_owned();
        assert_eq!(body["session_id"], json!(session_id));
        let run = ended_run(os, &run_id).await;
        assert_eq!(run["status"], "COMPLETED", "{run}");
        stored.push((run, stored_session(os, &session_id).await));
    }
    let (inline, queued) = (&stored[0], &stored[1]);
    let mut diff = Vec::new();
    differences("run", &stable(&inline.0), &stable(&queued.0), &mut diff);
    differences("session", &stable(&inline.1), &stable(&queued.1), &mut diff);
    assert!(diff.is_empty(), "{path}: the background run differs from the inline one:\n{}", diff.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_runs_the_same_request_inline_and_in_the_background() {
    let url = common::sqlite_url("spec");
    let os = TestOs::start(config(&os_config(&url))).await;
    let state = json!({"lang": "fr", "count": 2}).to_string();
    let metadata = json!({"source": "spec-test"}).to_string();
    let common = [
        ("message", "the question".to_owned()),
        ("user_id", "ana".to_owned()),
        ("session_state", state),
        ("metadata", metadata),
    ];

    // Agents take everything: files, an output schema, the history flag, dependencies.
    let mut agent = common.to_vec();
    agent.extend([
        ("dependencies", json!({"tenant": "acme"}).to_string()),
        (
            "output_schema",
            json!({"title": "Answer", "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}).to_string(),
        ),
        ("add_history_to_context", "true".to_owned()),
    ]);
    let png: &[u8] = b"\x89PNG\r\n\x1a\n not really";
    let files = [("chart.png", png), ("notes.txt", b"some notes".as_slice())];
    same_run_inline_and_in_background(&os, "/agents/a/runs", &agent, &files).await;

    // The stored run carries all of it, inline and queued alike (checked once here).
    let page = db(&os)
        .get_runs(&agno_core::RunQuery { agent_id: Some("a".into()), ..agno_core::RunQuery::default() })
        .await
        .unwrap();
    let queued = page.runs.iter().find(|r| r.input.as_ref().is_some_and(|i| i.extra.contains_key("images"))).unwrap();
    let input = serde_json::to_value(queued.input.as_ref().unwrap()).unwrap();
    assert_eq!(input["images"][0]["mime_type"], "image/png", "{input}");
    assert_eq!(input["files"][0]["filename"], "notes.txt", "{input}");
    assert_eq!(queued.content_type, "Answer");
    assert_eq!(queued.metadata.as_ref().unwrap()["source"], "spec-test");

    // Teams take the message, state and metadata.
    same_run_inline_and_in_background(&os, "/teams/t/runs", &common, &[]).await;

    // Workflows also take additional_data, and a message of JSON as structured input.
    let mut workflow = common.to_vec();
    workflow[0].1 = json!({"topic": "rivers"}).to_string();
    workflow.push(("additional_data", json!({"priority": "high"}).to_string()));
    same_run_inline_and_in_background(&os, "/workflows/w/runs", &workflow, &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_run_is_the_run_its_payload_asks_for() {
    let url = common::sqlite_url("spec");
    let os = TestOs::start(config(&os_config(&url))).await;
    let payload = json!({
        "message": "the scheduled question",
        "session_state": {"lang": "fr"},
        "dependencies": {"tenant": "acme"},
        "metadata": {"source": "cron"},
        "output_schema": {"title": "Report", "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        "add_history_to_context": false,
    });
    let body = json!({"name": "nightly", "cron_expr": "0 3 * * *", "endpoint": "/agents/a/runs", "payload": payload, "user_id": "ana"});
    let r = os.post_json("/schedules", &body, None).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let r = os.post_json(&format!("/schedules/{}/trigger", r.body["id"].as_str().unwrap()), &json!({}), None).await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("success")), "{}", r.body);
    let scheduled = ended_run(&os, r.body["run_id"].as_str().unwrap()).await;
    let scheduled_session = stored_session(&os, r.body["session_id"].as_str().unwrap()).await;

    // The same fields, inline.
    let fields: Vec<(&str, String)> = payload
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
        .chain([("user_id", "ana".to_owned()), ("stream", "false".to_owned())])
        .collect();
    let (status, inline) = post_run(&os, "/agents/a/runs", &fields, &[]).await;
    assert_eq!(status, 200, "{inline}");
    let inline_session = stored_session(&os, inline["session_id"].as_str().unwrap()).await;
    let inline = ended_run(&os, inline["run_id"].as_str().unwrap()).await;
    let mut diff = Vec::new();
    differences("run", &stable(&inline), &stable(&scheduled), &mut diff);
    differences("session", &stable(&inline_session), &stable(&scheduled_session), &mut diff);
    assert!(diff.is_empty(), "the scheduled run differs from the inline one:\n{}", diff.join("\n"));
    assert_eq!(scheduled["content_type"], "Report");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_job_payload_ends_its_run_in_error_naming_the_field() {
    let url = common::sqlite_url("spec");
    let os = TestOs::start(config(&os_config(&url))).await;
    let queue = os.os.state.queue.clone().unwrap();
    // Payloads as a corrupted row or another program could leave them, each behind its PENDING run.
    let cases = [
        ("bad-state", json!({"message": "x", "session_state": "not an object"}), "`session_state` must be an object"),
        (
            "bad-schema",
            json!({"version": 1, "kind": "agent", "component_id": "a", "run_id": "bad-schema", "session_id": "s-bad-schema",
                   "input": {"input_content": "x"}, "output_schema": {"name": 3, "schema": {}}}),
            "`output_schema.name`",
        ),
        ("too-new", json!({"version": 99, "message": "x"}), "version 99, newer than this replica reads"),
        (
            "bad-continue",
            json!({"message": "x", "continue": {"requirements": "all of them"}}),
            "`continue.requirements` invalid type",
        ),
    ];
    for (id, payload, _) in &cases {
        let mut job = agno_core::Job::agent_run(*id, "a", format!("s-{id}"), json!({"message": "x"}));
        let mut run = agno_core::RunOutput::new(*id, format!("s-{id}"));
        run.agent_id = Some("a".into());
        run.status = agno_core::RunStatus::Pending;
        db(&os)
            .upsert_session(&agno_core::AgentSession::new(format!("s-{id}")), &agno_core::StateUpdate::keep())
            .await
            .unwrap();
        db(&os).upsert_run(&run, &format!("s-{id}"), None).await.unwrap();
        job.payload = payload.clone();
        assert!(matches!(queue.store.enqueue_job(&job, 0).await.unwrap(), agno_core::Enqueued::Accepted(_)));
        queue.signal(agno_core::JobSignal::Claimable((*id).to_owned()));
    }
    for (id, _, reason) in &cases {
        let run = ended_run(&os, id).await;
        assert_eq!(run["status"], "ERROR", "{run}");
        assert!(run["content"].as_str().unwrap().contains(reason), "{id}: {}", run["content"]);
        // The run is ended before the job's outcome is recorded: wait for the job to settle.
        let deadline = Instant::now() + Duration::from_secs(30);
        let job = loop {
            let job = queue.store.get_job(id, None).await.unwrap().unwrap();
            if job.status.is_terminal() {
                break job;
            }
            assert!(Instant::now() < deadline, "job {id} never settled: {job:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(job.status, agno_core::JobStatus::Failed);
        assert!(job.error.as_deref().unwrap_or_default().contains(reason), "{id}: {:?}", job.error);
    }
    // The queue goes on: a good run after them completes.
    let (status, body) = post_run(
        &os,
        "/agents/a/runs",
        &[("message", "fine".into()), ("stream", "false".into()), ("background", "true".into())],
        &[],
    )
    .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(ended_run(&os, body["run_id"].as_str().unwrap()).await["status"], "COMPLETED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_fields_of_every_run_form_refuse_what_is_not_an_object() {
    let url = common::sqlite_url("spec-json");
    let os = TestOs::start(config(&os_config(&url))).await;
    for path in ["/agents/a/runs", "/teams/t/runs", "/workflows/w/runs"] {
        for field in ["session_state", "metadata"] {
            for (value, want) in [("", 422), ("  ", 422), ("[1]", 422), ("{\"a\":", 422), ("null", 200), ("{}", 200)] {
                let fields = [("message", "x".to_owned()), ("stream", "false".to_owned()), (field, value.to_owned())];
                let (status, body) = post_run(&os, path, &fields, &[]).await;
                assert_eq!(status, want, "{path} {field}={value:?}: {body}");
                if want == 422 {
                    assert_eq!(body["detail"][0]["loc"], json!(["body", field]), "{path} {field}={value:?}: {body}");
                }
            }
        }
    }
    // The API document says so: JSON parts, null allowed where the field is optional.
    let doc = os.get("/openapi.json", None).await.body;
    let form = &doc["paths"]["/teams/{team_id}/runs"]["post"]["requestBody"]["content"]["multipart/form-data"];
    assert_eq!(form["schema"]["properties"]["session_state"]["type"], json!(["object", "null"]));
    assert_eq!(form["encoding"]["session_state"]["contentType"], "application/json");
}
