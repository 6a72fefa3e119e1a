//! The A2A interface (`[a2a] enabled`) end to end on a real server: cards, `message/send`
//! (blocking and queued), `message/stream`, `tasks/get`, `tasks/cancel` on an agent, a team and a
//! workflow; a paused run as an `input-required` task continued by the next message; JSON-RPC
//! errors for bad input with nothing stored; user isolation of contexts and tasks; and the
//! official A2A Python SDK (0.3.x) as the client.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{SECRET, TestOs, config, token};
use futures::StreamExt;
use serde_json::{Value, json};

const OS: &str = r#"
[db]
url = "memory://"
[queue]
poll_interval_ms = 50
[a2a]
enabled = true
[[agents]]
id = "calc"
name = "Calc"
description = "Adds numbers"
model = "test"
[[agents]]
id = "guarded"
model = "test"
tools = [{ toolkit = "calculator", include_tools = ["add"], requires_confirmation_tools = ["add"] }]
[[teams]]
id = "desk"
name = "Desk"
model = "test"
members = ["calc"]
[[workflows]]
id = "flow"
name = "Flow"
[[workflows.steps]]
name = "first"
agent = "calc"
"#;

fn message(text: &str) -> Value {
    json!({"role": "user", "messageId": agno_core::new_id(), "parts": [{"kind": "text", "text": text}]})
}

fn rpc(method: &str, params: Value) -> Value {
    let mut request = json!({"jsonrpc": "2.0", "id": "req-1", "method": method});
    request["params"] = params;
    request
}

/// Reads an SSE answer to its end: the `data` of every frame, as JSON.
async fn stream(os: &TestOs, path: &str, body: &Value, token: Option<&str>) -> (u16, Vec<Value>) {
    let mut req = os.client.post(format!("{}{path}", os.base)).json(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    assert_eq!(resp.headers()["content-type"].to_str().unwrap().split(';').next(), Some("text/event-stream"));
    let mut frames = Vec::new();
    let mut events = eventsource_stream::EventStream::new(resp.bytes_stream());
    while let Some(ev) = events.next().await {
        frames.push(serde_json::from_str(&ev.unwrap().data).unwrap());
    }
    (status, frames)
}

#[tokio::test]
async fn cards_describe_every_component_kind_and_the_interface_is_listed() {
    let os = TestOs::start(config(OS)).await;
    for (path, name, streaming) in
        [("agents/calc", "Calc", true), ("teams/desk", "Desk", true), ("workflows/flow", "Flow", false)]
    {
        let r = os.get(&format!("/a2a/{path}/.well-known/agent-card.json"), None).await;
        assert_eq!(r.status, 200, "{path}: {:?}", r.body);
        assert_eq!(r.body["name"], name);
        assert_eq!(r.body["protocolVersion"], "0.3.0");
        assert_eq!(r.body["capabilities"]["streaming"], streaming);
        let host = os.base.trim_start_matches("http://");
        assert_eq!(r.body["url"], format!("http://{host}/a2a/{path}/v1/message:stream"));
        assert_eq!(r.body["skills"][0]["id"], path.split('/').nth(1).unwrap());
    }
    assert_eq!(os.get("/a2a/agents/calc/.well-known/agent-card.json", None).await.body["description"], "Adds numbers");
    assert_eq!(os.get("/a2a/agents/nope/.well-known/agent-card.json", None).await.status, 404);
    let interfaces = os.get("/config", None).await.body["interfaces"].clone();
    assert_eq!(interfaces, json!([{"type": "a2a", "version": "1.0", "route": "/a2a"}]));

    let off = TestOs::start(config(&OS.replace("[a2a]\nenabled = true", ""))).await;
    let r = off.get("/a2a/agents/calc/.well-known/agent-card.json", None).await;
    assert_eq!(r.status, 404);
    assert!(common::detail(&r.body).contains("[a2a] enabled"), "{:?}", r.body);
    let r = off.post_json("/a2a/agents/calc/v1/message:send", &rpc("message/send", json!({})), None).await;
    assert_eq!(r.status, 404);
    assert_eq!(off.get("/config", None).await.body["interfaces"], json!([]));
}

#[tokio::test]
async fn send_get_and_a_second_turn_in_the_same_context() {
    let os = TestOs::start(config(OS)).await;
    for path in ["agents/calc", "teams/desk", "workflows/flow"] {
        let mut first = message("first question");
        first["contextId"] = json!(format!("ctx-{}", path.replace('/', "-")));
        let r = os
            .post_json(&format!("/a2a/{path}/v1/message:send"), &rpc("message/send", json!({"message": first})), None)
            .await;
        assert_eq!(r.status, 200, "{path}: {:?}", r.body);
        assert_eq!(r.body["id"], "req-1");
        let task = &r.body["result"];
        assert_eq!(
            (task["kind"].as_str(), task["status"]["state"].as_str()),
            (Some("task"), Some("completed")),
            "{path}"
        );
        assert_eq!(task["contextId"], first["contextId"]);
        let answer = task["history"][0]["parts"][0]["text"].as_str().unwrap();
        assert!(answer.contains("first question"), "{path}: {answer}");
        let task_id = task["id"].as_str().unwrap().to_owned();

        // The task is the stored run, in the session the context names.
        let r = os
            .post_json(&format!("/a2a/{path}/v1/message:stream"), &rpc("tasks/get", json!({"id": task_id})), None)
            .await;
        assert_eq!(r.status, 200, "{path}: {:?}", r.body);
        assert_eq!(r.body["result"]["id"], task_id);
        assert_eq!(r.body["result"]["status"]["state"], "completed");
        let session = os.get(&format!("/sessions/{}/runs", first["contextId"].as_str().unwrap()), None).await;
        let runs = session.body.as_array().unwrap();
        assert!(runs.iter().any(|r| r["run_id"] == task_id), "{path}: {runs:?}");

        let mut second = message("second question");
        second["contextId"] = first["contextId"].clone();
        let r = os
            .post_json(&format!("/a2a/{path}/v1/message:send"), &rpc("message/send", json!({"message": second})), None)
            .await;
        assert_eq!(r.body["result"]["contextId"], first["contextId"]);
        assert_ne!(r.body["result"]["id"], task_id);
    }
    // tasks:get at its own endpoint (no method named), with Agno's contextId.
    let r = os
        .post_json("/a2a/agents/calc/v1/message:send", &rpc("message/send", json!({"message": message("x")})), None)
        .await;
    let (task_id, context) = (r.body["result"]["id"].clone(), r.body["result"]["contextId"].clone());
    let body = json!({"jsonrpc": "2.0", "id": 9, "params": {"id": task_id, "contextId": context}});
    let r = os.post_json("/a2a/agents/calc/v1/tasks:get", &body, None).await;
    assert_eq!((r.body["id"].as_i64(), r.body["result"]["id"].clone()), (Some(9), task_id.clone()));
    // Another component's task is not found there.
    let r = os.post_json("/a2a/agents/guarded/v1/tasks:get", &rpc("tasks/get", json!({"id": task_id})), None).await;
    assert_eq!(r.body["error"]["code"], -32001, "{:?}", r.body);
}

#[tokio::test]
async fn a_stream_sends_status_updates_and_artifact_deltas_and_ends_with_the_answer() {
    let os = TestOs::start(config(OS)).await;
    for path in ["agents/calc", "teams/desk", "workflows/flow"] {
        let (status, frames) = stream(
            &os,
            &format!("/a2a/{path}/v1/message:stream"),
            &rpc("message/stream", json!({"message": message("stream me")})),
            None,
        )
        .await;
        assert_eq!(status, 200);
        assert!(frames.iter().all(|f| f["jsonrpc"] == "2.0" && f["id"] == "req-1"), "{path}");
        let first = &frames[0]["result"];
        assert_eq!(
            (first["kind"].as_str(), first["status"]["state"].as_str()),
            (Some("status-update"), Some("working")),
            "{path}"
        );
        let task_id = first["taskId"].as_str().unwrap().to_owned();
        assert!(frames.iter().all(|f| f["result"]["taskId"] == task_id), "{path}: one task throughout");
        let deltas: String = frames
            .iter()
            .filter(|f| f["result"]["kind"] == "artifact-update")
            .map(|f| f["result"]["artifact"]["parts"][0]["text"].as_str().unwrap().to_owned())
            .collect();
        let last = &frames.last().unwrap()["result"];
        assert_eq!(
            (last["final"].as_bool(), last["status"]["state"].as_str()),
            (Some(true), Some("completed")),
            "{path}"
        );
        let answer = last["status"]["message"]["parts"][0]["text"].as_str().unwrap();
        assert!(answer.contains("stream me"), "{path}: {answer}");
        if path != "workflows/flow" {
            assert_eq!(deltas, answer, "{path}: the deltas add up to the answer");
        }
        assert_eq!(frames.iter().filter(|f| f["result"]["final"] == true).count(), 1);
        // The streamed task is stored like any run.
        let kind = path.split('/').next().unwrap();
        if kind != "workflows" {
            let r = os
                .post_json(&format!("/a2a/{path}/v1/tasks:get"), &rpc("tasks/get", json!({"id": task_id})), None)
                .await;
            assert_eq!(r.body["result"]["status"]["state"], "completed", "{path}");
        }
    }
    // The team's members' events are not its task's end; the workflow's step events ride status updates.
    let (_, frames) = stream(
        &os,
        "/a2a/workflows/flow/v1/message:stream",
        &rpc("message/stream", json!({"message": message("w")})),
        None,
    )
    .await;
    let types: Vec<&str> = frames.iter().filter_map(|f| f["result"]["metadata"]["agno_event_type"].as_str()).collect();
    assert!(types.contains(&"workflow_step_started") && types.contains(&"workflow_step_completed"), "{types:?}");
}

#[tokio::test]
async fn a_non_blocking_send_is_queued_and_its_task_ends_completed() {
    let os = TestOs::start(config(OS)).await;
    let params = json!({"message": message("later"), "configuration": {"blocking": false}});
    let r = os.post_json("/a2a/agents/calc/v1/message:send", &rpc("message/send", params), None).await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    assert_eq!(r.body["result"]["status"]["state"], "submitted");
    let task_id = r.body["result"]["id"].as_str().unwrap().to_owned();
    let job = os.get(&format!("/queue/jobs/{task_id}"), None).await;
    assert_eq!(job.status, 200, "a committed job: {:?}", job.body);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = os.post_json("/a2a/agents/calc/v1/tasks:get", &rpc("tasks/get", json!({"id": task_id})), None).await;
        if r.body["result"]["status"]["state"] == "completed" {
            assert!(r.body["result"]["history"][0]["parts"][0]["text"].as_str().unwrap().contains("later"));
            break;
        }
        assert!(Instant::now() < deadline, "the queued task did not complete: {:?}", r.body);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // An ended task cannot be canceled; an unknown one is not found.
    let r = os.post_json("/a2a/agents/calc/v1/tasks:cancel", &rpc("tasks/cancel", json!({"id": task_id})), None).await;
    assert_eq!(r.body["error"]["code"], -32002, "{:?}", r.body);
    assert_eq!(r.body["error"]["data"]["state"], "completed");
    let r = os.post_json("/a2a/agents/calc/v1/tasks:cancel", &rpc("tasks/cancel", json!({"id": "nope"})), None).await;
    assert_eq!(r.body["error"]["code"], -32001);
}

#[tokio::test]
async fn a_paused_run_is_an_input_required_task_continued_by_the_next_message() {
    let os = TestOs::start(config(OS)).await;
    let r = os
        .post_json(
            "/a2a/agents/guarded/v1/message:send",
            &rpc("message/send", json!({"message": message("add them")})),
            None,
        )
        .await;
    let task = r.body["result"].clone();
    assert_eq!(task["status"]["state"], "input-required", "{task:?}");
    let open = &task["status"]["message"]["parts"][1]["data"]["requirements"];
    assert_eq!(open[0]["tool_name"], "add");
    assert_eq!(open[0]["needs_confirmation"], true);
    let task_id = task["id"].as_str().unwrap().to_owned();

    // An answer that answers nothing is refused, and the run stays paused.
    let mut vague = message("perhaps");
    vague["taskId"] = json!(task_id);
    let r = os
        .post_json("/a2a/agents/guarded/v1/message:send", &rpc("message/send", json!({"message": vague})), None)
        .await;
    assert_eq!(r.body["error"]["code"], -32602, "{:?}", r.body);
    let r = os.post_json("/a2a/agents/guarded/v1/tasks:get", &rpc("tasks/get", json!({"id": task_id})), None).await;
    assert_eq!(r.body["result"]["status"]["state"], "input-required");

    // "yes" confirms the call: the run carries on under its id, streamed.
    let mut yes = message("yes");
    yes["taskId"] = json!(task_id);
    let (_, frames) =
        stream(&os, "/a2a/agents/guarded/v1/message:stream", &rpc("message/stream", json!({"message": yes})), None)
            .await;
    let last = &frames.last().unwrap()["result"];
    assert_eq!(
        (last["taskId"].as_str(), last["status"]["state"].as_str()),
        (Some(task_id.as_str()), Some("completed"))
    );
    assert!(frames.iter().any(|f| f["result"]["metadata"]["agno_event_type"] == "tool_call_completed"), "{frames:?}");
    let run = os.get(&format!("/agents/guarded/runs/{task_id}"), None).await;
    assert_eq!(run.body["status"], "COMPLETED");
    assert_eq!(run.body["tools"][0]["confirmed"], true, "{:?}", run.body["tools"]);

    // An ended task takes no answer.
    let r = os
        .post_json("/a2a/agents/guarded/v1/message:send", &rpc("message/send", json!({"message": vague})), None)
        .await;
    assert_eq!(r.body["error"]["code"], -32602);

    // A rejection by data part, and a cancel of a paused task.
    let r = os
        .post_json(
            "/a2a/agents/guarded/v1/message:send",
            &rpc("message/send", json!({"message": message("again")})),
            None,
        )
        .await;
    let second = r.body["result"]["id"].as_str().unwrap().to_owned();
    let mut no = message("");
    no["parts"] = json!([{"kind": "data", "data": {"confirmed": false, "note": "not today"}}]);
    no["taskId"] = json!(second);
    let r =
        os.post_json("/a2a/agents/guarded/v1/message:send", &rpc("message/send", json!({"message": no})), None).await;
    assert_eq!(r.body["result"]["status"]["state"], "completed", "{:?}", r.body);
    let run = os.get(&format!("/agents/guarded/runs/{second}"), None).await;
    assert_eq!(run.body["tools"][0]["confirmed"], false);
    let r = os
        .post_json(
            "/a2a/agents/guarded/v1/message:send",
            &rpc("message/send", json!({"message": message("third")})),
            None,
        )
        .await;
    let third = r.body["result"]["id"].as_str().unwrap().to_owned();
    let r = os.post_json("/a2a/agents/guarded/v1/tasks:cancel", &rpc("tasks/cancel", json!({"id": third})), None).await;
    assert_eq!(r.body["result"]["status"]["state"], "canceled", "{:?}", r.body);
    assert_eq!(os.get(&format!("/agents/guarded/runs/{third}"), None).await.body["status"], "CANCELLED");
}

#[tokio::test]
async fn bad_requests_are_json_rpc_errors_and_store_nothing() {
    let os = TestOs::start(config(OS)).await;
    let url = format!("{}/a2a/agents/calc/v1/message:send", os.base);
    let send_raw = |body: &'static str| {
        let client = os.client.clone();
        let url = url.clone();
        async move {
            let resp = client.post(url).header("content-type", "application/json").body(body).send().await.unwrap();
            (resp.status().as_u16(), resp.json::<Value>().await.unwrap())
        }
    };
    let (status, body) = send_raw("{bad").await;
    assert_eq!((status, body["error"]["code"].as_i64(), body["id"].clone()), (200, Some(-32700), Value::Null));
    let cases = [
        (json!({"jsonrpc": "1.0", "id": 1, "method": "message/send"}), -32600),
        (json!({"id": 1, "method": "message/send"}), -32600),
        (json!({"jsonrpc": "2.0", "id": 1, "method": "message/teleport"}), -32601),
        (json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/resubscribe", "params": {"id": "x"}}), -32001),
        (json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/pushNotificationConfig/set", "params": {}}), -32003),
        (json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": "x"}), -32602),
        (json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}), -32602),
        (rpc("message/send", json!({"message": {"role": "user", "messageId": "m", "parts": []}})), -32602),
        (
            rpc(
                "message/send",
                json!({"message": {"role": "agent", "messageId": "m", "parts": [{"kind": "text", "text": "x"}]}}),
            ),
            -32602,
        ),
        (
            rpc("message/send", json!({"message": {"role": "user", "messageId": "m", "parts": [{"kind": "blob"}]}})),
            -32602,
        ),
        (
            rpc(
                "message/send",
                json!({"message": {"role": "user", "messageId": "m", "taskId": "nope", "parts": [{"kind": "text", "text": "yes"}]}}),
            ),
            -32001,
        ),
        (rpc("tasks/get", json!({})), -32602),
        (rpc("tasks/get", json!({"id": "nope"})), -32001),
    ];
    for (body, code) in cases {
        let r = os.post_json("/a2a/agents/calc/v1/message:send", &body, None).await;
        assert_eq!(r.status, 200, "{body}");
        assert_eq!(r.body["error"]["code"], code, "{body} -> {:?}", r.body);
        assert!(r.body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    // None of them stored a run or a session.
    assert_eq!(os.get("/sessions", None).await.body["data"], json!([]));
    // A stream's bad request is answered as JSON, not as a stream.
    let r =
        os.post_json("/a2a/agents/calc/v1/message:stream", &rpc("message/stream", json!({"message": {}})), None).await;
    assert_eq!(r.body["error"]["code"], -32602);
}

#[tokio::test]
async fn contexts_and_tasks_are_the_callers_own() {
    let cfg = format!(
        "[auth]\nmode = \"jwt\"\nverification_keys = [{}]\nuser_isolation = true\n{}",
        serde_json::to_string(SECRET).unwrap(),
        OS
    );
    let os = TestOs::start(config(&cfg)).await;
    let all =
        ["agents:read", "agents:run", "teams:read", "teams:run", "workflows:read", "workflows:run", "sessions:read"];
    let (alice, bob) = (token("alice", &all), token("bob", &all));

    // No token: 401 on every A2A route.
    for path in
        ["/a2a/agents/calc/v1/message:send", "/a2a/teams/desk/v1/tasks:get", "/a2a/workflows/flow/v1/message:stream"]
    {
        assert_eq!(os.post_json(path, &rpc("message/send", json!({})), None).await.status, 401, "{path}");
    }
    assert_eq!(os.get("/a2a/agents/calc/.well-known/agent-card.json", None).await.status, 401);
    // A scope short of running: 403.
    let reader = token("carol", &["agents:read"]);
    assert_eq!(
        os.post_json("/a2a/agents/calc/v1/message:send", &rpc("message/send", json!({})), Some(&reader)).await.status,
        403
    );

    for path in ["agents/calc", "teams/desk", "workflows/flow"] {
        let mut m = message("alice's secret");
        m["contextId"] = json!(format!("alice-{}", path.replace('/', "-")));
        // A client-sent user id does not override the token's.
        m["metadata"] = json!({"userId": "bob"});
        let r = os
            .post_json(
                &format!("/a2a/{path}/v1/message:send"),
                &rpc("message/send", json!({"message": m})),
                Some(&alice),
            )
            .await;
        assert_eq!(r.body["result"]["status"]["state"], "completed", "{path}: {:?}", r.body);
        assert_eq!(r.body["result"]["history"][0]["metadata"]["userId"], "alice");
        let task_id = r.body["result"]["id"].clone();

        // Bob cannot run in Alice's context ...
        let mut intrude = message("bob was here");
        intrude["contextId"] = m["contextId"].clone();
        let r = os
            .post_json(
                &format!("/a2a/{path}/v1/message:send"),
                &rpc("message/send", json!({"message": intrude})),
                Some(&bob),
            )
            .await;
        assert_eq!(r.status, 404, "{path}: {:?}", r.body);
        // ... nor read, cancel or continue her task.
        for method in ["tasks/get", "tasks/cancel"] {
            let r = os
                .post_json(&format!("/a2a/{path}/v1/message:send"), &rpc(method, json!({"id": task_id})), Some(&bob))
                .await;
            assert_eq!(r.body["error"]["code"], -32001, "{path} {method}: {:?}", r.body);
        }
        // The same over A2A v1.0, and her tasks are not in his listing.
        let v1 = |method: &str, params: Value, who: &str| {
            let req = os.client.post(format!("{}/a2a/{path}/v1/message:send", os.base)).bearer_auth(who);
            let req = req.header("A2A-Version", "1.0").json(&rpc(method, params));
            async move { req.send().await.unwrap().json::<Value>().await.unwrap() }
        };
        for method in ["GetTask", "CancelTask", "SubscribeToTask"] {
            let r = v1(method, json!({"id": task_id}), &bob).await;
            assert_eq!(r["error"]["code"], -32001, "{path} {method}: {r}");
        }
        let theirs = v1("ListTasks", json!({}), &bob).await;
        assert_eq!(theirs["result"]["tasks"], json!([]), "{path}: {theirs}");
        let hers = v1("ListTasks", json!({"contextId": m["contextId"]}), &alice).await;
        assert_eq!(hers["result"]["tasks"][0]["id"], task_id, "{path}: {hers}");
        let mut answer = message("yes");
        answer["taskId"] = task_id.clone();
        let r = os
            .post_json(
                &format!("/a2a/{path}/v1/message:send"),
                &rpc("message/send", json!({"message": answer})),
                Some(&bob),
            )
            .await;
        assert_eq!(r.body["error"]["code"], -32001, "{path}: {:?}", r.body);
        // Alice reads it.
        let r = os
            .post_json(&format!("/a2a/{path}/v1/message:send"), &rpc("tasks/get", json!({"id": task_id})), Some(&alice))
            .await;
        assert_eq!(r.body["result"]["id"], task_id);
    }
    // Bob's session list holds none of Alice's contexts.
    let r = os.get("/sessions", Some(&bob)).await;
    assert_eq!(r.body["data"], json!([]), "{:?}", r.body);
}

fn sdk_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/a2a_sdk_client.py")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_a2a_python_sdk_drives_an_agent_a_team_and_a_workflow() {
    let Some(python) = agno_testkit::agno_python("the A2A Python SDK check") else { return };
    let os = TestOs::start(config(OS)).await;
    let paths = ["/a2a/agents/calc", "/a2a/teams/desk", "/a2a/workflows/flow"];
    let mut client = tokio::process::Command::new(&python);
    client.arg(sdk_script()).arg(&os.base).args(paths);
    let (result, stderr) = common::client_json(client, Duration::from_secs(180)).await;
    assert_eq!(result["errors"], json!({}), "{stderr}");
    for path in paths {
        let r = &result[path];
        assert_eq!(r["send"]["state"], "completed", "{path}: {r}");
        assert!(r["send"]["text"].as_str().unwrap().contains("first turn"), "{path}: {r}");
        assert_eq!(r["second"]["context_id"], r["send"]["context_id"], "{path}");
        assert_eq!(r["get"]["id"], r["send"]["task_id"]);
        assert_eq!(r["get"]["state"], "completed");
        assert_eq!(r["get_unknown"], -32001);
        assert_eq!(r["cancel_ended"], -32002);
        assert_eq!(r["background"]["states"][0], "submitted", "{path}: {r}");
        assert_eq!(r["background"]["states"].as_array().unwrap().last().unwrap(), "completed", "{path}: {r}");
    }
    for path in ["/a2a/agents/calc", "/a2a/teams/desk"] {
        let s = &result[path]["stream"];
        assert_eq!(s["last_state"], "completed", "{path}: {s}");
        assert!(s["answer"].as_str().unwrap().contains("stream turn"), "{path}: {s}");
        assert_eq!(s["artifact_text"], s["answer"], "{path}: the artifact holds the streamed answer");
        assert_eq!(s["kinds"], json!(["artifact-update", "status-update"]), "{path}: {s}");
    }
    // The workflow's card says it does not stream: the SDK sent message/send instead.
    assert_eq!(result["/a2a/workflows/flow"]["card"]["streaming"], false);
    assert_eq!(result["/a2a/workflows/flow"]["stream"]["last_state"], "completed");
}

/// The local OS of the remote-agent test: agent `far` is the remote's `calc` over A2A, alone, as
/// the member of team `crew` and as the step of workflow `relay`.
fn local_config(remote: &str, leader: &agno_testkit::FakeProvider) -> String {
    let leader = format!(
        "{{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}",
        leader.base_url()
    );
    format!(
        "[db]\nurl = \"memory://\"\n\
         [[agents]]\nid = \"far\"\nname = \"Far\"\na2a_url = \"{remote}/a2a/agents/calc\"\n\
         [[agents]]\nid = \"gone\"\na2a_url = \"http://127.0.0.1:9/a2a/agents/calc\"\n\
         [[teams]]\nid = \"crew\"\nmodel = {leader}\nmembers = [\"far\"]\n\
         [[workflows]]\nid = \"relay\"\n[[workflows.steps]]\nname = \"ask\"\nagent = \"far\"\n"
    )
}

/// How many runs the OS has stored, over all its sessions.
async fn stored_runs(os: &TestOs) -> usize {
    let sessions = os.get("/sessions?limit=100", None).await;
    let mut n = 0;
    for s in sessions.body["data"].as_array().unwrap() {
        let runs = os.get(&format!("/sessions/{}/runs", s["session_id"].as_str().unwrap()), None).await;
        n += runs.body.as_array().map_or(0, Vec::len);
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_a2a_agent_answers_alone_as_a_team_member_and_as_a_workflow_step() {
    let remote = TestOs::start(config(OS)).await;
    let leader = agno_testkit::FakeProvider::start().await.unwrap();
    let local = TestOs::start(config(&local_config(&remote.base, &leader))).await;

    // Alone: each run is a task in the remote's context named after the local session.
    let form = [("message", "hello remote"), ("stream", "false"), ("session_id", "far-session")];
    let r = local.post_form("/agents/far/runs", &form, None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["status"], "COMPLETED", "{:?}", r.body);
    assert!(r.body["content"].as_str().unwrap().contains("hello remote"), "{:?}", r.body["content"]);
    assert_eq!(r.body["model_provider"], "A2A");
    let form = [("message", "and again"), ("stream", "true"), ("session_id", "far-session")];
    let (_, events) = local.post_sse("/agents/far/runs", &form, None).await;
    let streamed: String = events
        .iter()
        .filter(|(n, _)| n == "RunContent")
        .filter_map(|(_, e)| e["content"].as_str().map(str::to_owned))
        .collect();
    assert!(streamed.contains("and again"), "{events:?}");
    let remote_runs = remote.get("/sessions/far-session/runs", None).await;
    let inputs: Vec<&str> =
        remote_runs.body.as_array().unwrap().iter().map(|r| r["run_input"].as_str().unwrap_or_default()).collect();
    assert_eq!(inputs, ["hello remote", "and again"], "{:?}", remote_runs.body);

    // As a team member and as a workflow step.
    let before = stored_runs(&remote).await;
    leader.push(agno_testkit::Reply::tool_call(
        "delegate_task_to_member",
        r#"{"member_id": "far", "task": "team task"}"#,
    ));
    leader.push(agno_testkit::Reply::text("the crew is done"));
    let r = local.post_form("/teams/crew/runs", &[("message", "team task"), ("stream", "false")], None).await;
    assert_eq!(r.body["status"], "COMPLETED", "{:?}", r.body);
    let delegation = &r.body["tools"][0];
    assert!(delegation["tool_name"].as_str().unwrap().starts_with("delegate"), "{:?}", r.body["tools"]);
    let remote_answer = delegation["result"].as_str().unwrap_or_default();
    assert!(remote_answer.contains("team task"), "the remote agent's answer: {delegation}");
    assert_eq!(stored_runs(&remote).await, before + 1, "the member's run went to the remote");
    let r = local.post_form("/workflows/relay/runs", &[("message", "workflow task"), ("stream", "false")], None).await;
    assert_eq!(r.body["status"], "COMPLETED", "{:?}", r.body);
    assert!(r.body["content"].as_str().unwrap().contains("workflow task"), "{:?}", r.body["content"]);
    assert_eq!(stored_runs(&remote).await, before + 2);

    // A remote that cannot be reached fails the run with the reason; the server goes on.
    let r = local.post_form("/agents/gone/runs", &[("message", "anyone?"), ("stream", "false")], None).await;
    assert_eq!(r.body["status"], "ERROR", "{:?}", r.body);
    assert!(r.body["content"].as_str().unwrap().contains("127.0.0.1:9"), "{:?}", r.body["content"]);

    // An agent needs a model or an a2a_url, not both.
    let both = "[[agents]]\nid = \"x\"\nmodel = \"test\"\na2a_url = \"http://h\"\n";
    let err = agno_os::config::OsConfig::parse(both, false, "x.toml").unwrap_err().to_string();
    assert!(err.contains("both a model and an a2a_url"), "{err}");
    let none = "[[agents]]\nid = \"x\"\n";
    let err = agno_os::config::OsConfig::parse(none, false, "x.toml").unwrap_err().to_string();
    assert!(err.contains("needs a model"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_javascript_a2a_sdk_sends_and_streams() {
    let Some(dir) = agno_testkit::services::a2a_js("the @a2a-js/sdk client check") else { return };
    let os = TestOs::start(config(OS)).await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/a2a_js_client.cjs");
    let paths = ["/a2a/agents/calc", "/a2a/teams/desk", "/a2a/workflows/flow"];
    let mut client = tokio::process::Command::new("node");
    client.arg(script).arg(&os.base).args(paths).env("NODE_PATH", dir.join("node_modules"));
    let (result, _) = common::client_json(client, Duration::from_secs(120)).await;
    assert_eq!(result["errors"], json!({}), "{result}");
    for path in paths {
        let r = &result[path];
        assert_eq!(
            (r["send"]["kind"].as_str(), r["send"]["state"].as_str()),
            (Some("task"), Some("completed")),
            "{path}: {r}"
        );
        assert!(r["send"]["text"].as_str().unwrap().contains("hello from js"), "{path}: {r}");
    }
    for path in ["/a2a/agents/calc", "/a2a/teams/desk"] {
        let s = &result[path]["stream"];
        assert_eq!((s["final"].as_bool(), s["state"].as_str()), (Some(true), Some("completed")), "{path}: {s}");
        assert!(s["text"].as_str().unwrap().contains("stream from js"), "{path}: {s}");
        assert_eq!(s["kinds"], json!(["status-update", "artifact-update"]), "{path}: {s}");
    }
    // The workflow's card does not stream: the SDK sends it message/send and yields the task.
    assert_eq!(result["/a2a/workflows/flow"]["stream"]["state"], "completed");
}

/// A2A v1.0 requests by hand: the method names the version, its header is needed, the answers
/// are v1.0's spelling (one-of results, `TASK_STATE_*`, parts without `kind`), a v0.3 request to
/// the same endpoint is still answered in v0.3's.
#[tokio::test]
async fn v1_requests_are_answered_in_v1_and_v03_ones_in_v03_on_the_same_endpoint() {
    let os = TestOs::start(config(OS)).await;
    let card = os.get("/a2a/agents/calc/.well-known/agent-card.json", None).await.body;
    let url = card["url"].as_str().unwrap().to_owned();
    assert_eq!(
        card["supportedInterfaces"],
        json!([
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ])
    );
    let endpoint = "/a2a/agents/calc/v1/message:stream";
    let send = |text: &str| {
        rpc(
            "SendMessage",
            json!({"message": {"messageId": agno_core::new_id(), "role": "ROLE_USER", "parts": [{"text": text}]}}),
        )
    };
    let post = |body: Value, version: Option<&'static str>| {
        let mut req = os.client.post(format!("{}{endpoint}", os.base)).json(&body);
        if let Some(v) = version {
            req = req.header("A2A-Version", v);
        }
        async move {
            let resp = req.send().await.unwrap();
            (resp.status().as_u16(), resp.json::<Value>().await.unwrap())
        }
    };
    // Without the header a v1.0 method is refused (0.3 is assumed), and nothing runs.
    let (status, body) = post(send("no header"), None).await;
    assert_eq!((status, body["error"]["code"].as_i64()), (200, Some(-32009)), "{body}");
    assert_eq!(body["error"]["data"][0]["reason"], "VERSION_NOT_SUPPORTED");
    assert_eq!(stored_runs(&os).await, 0);

    let (status, body) = post(send("hello v1"), Some("1.0")).await;
    assert_eq!(status, 200, "{body}");
    let task = &body["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{body}");
    assert!(task.get("kind").is_none(), "{body}");
    let answer = &task["history"][0];
    assert_eq!(answer["role"], "ROLE_AGENT");
    assert!(answer["parts"][0]["text"].as_str().unwrap().contains("hello v1"), "{body}");
    assert!(answer["parts"][0].get("kind").is_none());
    let task_id = task["id"].as_str().unwrap().to_owned();

    let (_, got) = post(rpc("GetTask", json!({"id": task_id, "historyLength": 0})), Some("1.0")).await;
    assert_eq!(got["result"]["id"], task_id.as_str(), "{got}");
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(got["result"].get("history").is_none_or(|h| h == &json!([])), "historyLength 0: {got}");
    let (_, missing) = post(rpc("GetTask", json!({"id": "nope"})), Some("1.0")).await;
    assert_eq!(missing["error"]["code"], -32001);
    assert_eq!(missing["error"]["data"][0]["reason"], "TASK_NOT_FOUND");
    assert_eq!(missing["error"]["data"][0]["metadata"]["taskId"], "nope");

    // The same endpoint still speaks v0.3 to a v0.3 request, header or not.
    let (_, old) = post(rpc("tasks/get", json!({"id": task_id})), Some("1.0")).await;
    assert_eq!(
        (old["result"]["kind"].as_str(), old["result"]["status"]["state"].as_str()),
        (Some("task"), Some("completed"))
    );

    // A v1.0 stream: the task first, then updates without `kind` or `final`.
    let mut req = os.client.post(format!("{}{endpoint}", os.base)).header("A2A-Version", "1.0");
    req = req.json(&rpc(
        "SendStreamingMessage",
        json!({"message": {"messageId": "s1", "role": "ROLE_USER", "parts": [{"text": "stream v1"}]}}),
    ));
    let resp = req.send().await.unwrap();
    let mut frames = Vec::new();
    let mut events = eventsource_stream::EventStream::new(resp.bytes_stream());
    while let Some(ev) = events.next().await {
        let ev = ev.unwrap();
        assert_eq!(ev.event, "message", "v1.0 frames carry no event name");
        frames.push(serde_json::from_str::<Value>(&ev.data).unwrap());
    }
    assert_eq!(frames[0]["result"]["task"]["status"]["state"], "TASK_STATE_SUBMITTED", "{frames:?}");
    let last = &frames.last().unwrap()["result"]["statusUpdate"];
    assert_eq!(last["status"]["state"], "TASK_STATE_COMPLETED", "{frames:?}");
    assert!(last.get("final").is_none() && last.get("kind").is_none(), "{last}");
    assert!(frames.iter().any(|f| f["result"].get("artifactUpdate").is_some()), "{frames:?}");

    // ListTasks: the caller's tasks of this agent, newest first, in pages.
    let (_, listed) = post(rpc("ListTasks", json!({"pageSize": 1})), Some("1.0")).await;
    let listed = &listed["result"];
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["pageSize"], 1);
    let token = listed["nextPageToken"].as_str().unwrap().to_owned();
    assert!(!token.is_empty(), "{listed}");
    let (_, rest) = post(rpc("ListTasks", json!({"pageSize": 100, "pageToken": token})), Some("1.0")).await;
    let rest = rest["result"]["tasks"].as_array().unwrap().clone();
    assert_eq!(rest.len(), 1, "two tasks in all: {rest:?}");
    // The two pages hold the two tasks (newest first by the second they started in; tasks of
    // the same second in a stable order), each once.
    let mut ids = vec![listed["tasks"][0]["id"].as_str().unwrap(), rest[0]["id"].as_str().unwrap()];
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 2, "{listed} {rest:?}");
    assert!(ids.contains(&task_id.as_str()));
    let (_, all) = post(rpc("ListTasks", json!({"status": "TASK_STATE_COMPLETED"})), Some("1.0")).await;
    assert_eq!(all["result"]["totalSize"], 2, "{all}");
    for bad in [json!({"pageSize": 101}), json!({"pageToken": "garbage!"}), json!({"status": "TASK_STATE_NAPPING"})] {
        let (_, refused) = post(rpc("ListTasks", bad.clone()), Some("1.0")).await;
        assert_eq!(refused["error"]["code"], -32602, "{bad}: {refused}");
    }
    // An ended task cannot be followed; push notifications are not offered.
    let (_, ended) = post(rpc("SubscribeToTask", json!({"id": task_id})), Some("1.0")).await;
    assert_eq!(ended["error"]["code"], -32004, "{ended}");
    let (_, push) = post(rpc("CreateTaskPushNotificationConfig", json!({})), Some("1.0")).await;
    assert_eq!(push["error"]["code"], -32003, "{push}");
}

fn v1_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/a2a_v1_client.py")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_a2a_sdk_1x_drives_an_agent_a_team_and_a_workflow_over_v1() {
    let Some(python) = agno_testkit::a2a_v1_python("the A2A 1.x Python SDK check") else { return };
    // `slow` answers after 700 ms: its queued task is still going when the client subscribes.
    let provider = agno_testkit::FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(agno_testkit::Reply::text("slow answer")));
    provider.set_latency(Duration::from_millis(700));
    let slow = format!(
        "[[agents]]\nid = \"slow\"\nname = \"Slow\"\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        provider.base_url()
    );
    let os = TestOs::start(config(&format!("{OS}{slow}"))).await;
    let paths = ["/a2a/agents/calc", "/a2a/teams/desk", "/a2a/workflows/flow", "/a2a/agents/slow"];
    let mut client = tokio::process::Command::new(&python);
    client.arg(v1_script()).arg(&os.base).args(paths).args(["--follow", "/a2a/agents/slow"]);
    let (result, stderr) = common::client_json(client, Duration::from_secs(180)).await;
    assert_eq!(result["errors"], json!({}), "{stderr}");
    for path in paths {
        let r = &result[path];
        assert_eq!(r["card"]["interfaces"][0], json!(["JSONRPC", "1.0"]), "{path}: {r}");
        assert_eq!(r["send"]["state"], "TASK_STATE_COMPLETED", "{path}: {r}");
        let expected = if path.ends_with("slow") { "slow answer" } else { "first turn" };
        assert!(r["send"]["text"].as_str().unwrap().contains(expected), "{path}: {r}");
        assert_eq!(r["second"]["context_id"], r["send"]["context_id"], "{path}");
        assert_eq!(
            (r["get"]["id"].as_str(), r["get"]["state"].as_str()),
            (r["send"]["task_id"].as_str(), Some("TASK_STATE_COMPLETED"))
        );
        assert_eq!(r["get_unknown"], "TaskNotFoundError", "{path}");
        assert_eq!(r["cancel_ended"], "TaskNotCancelableError", "{path}");
        assert_eq!(r["stream"]["last_state"], "TASK_STATE_COMPLETED", "{path}: {r}");
        // Both turns of the context (the stream ran in a context of its own), two per page.
        assert_eq!(r["list"]["first_page"].as_array().unwrap().len(), 2, "{path}: {r}");
        assert_eq!(r["list"]["states"], json!(["TASK_STATE_COMPLETED"]), "{path}: {r}");
        assert_eq!(r["background"]["states"][0], "TASK_STATE_SUBMITTED", "{path}: {r}");
        assert_eq!(
            r["background"]["states"].as_array().unwrap().last().unwrap(),
            "TASK_STATE_COMPLETED",
            "{path}: {r}"
        );
    }
    for path in ["/a2a/agents/calc", "/a2a/teams/desk"] {
        let s = &result[path]["stream"];
        assert_eq!(s["first"], "task", "{path}: {s}");
        assert_eq!(s["payloads"], json!(["artifact_update", "status_update", "task"]), "{path}: {s}");
        assert!(s["answer"].as_str().unwrap().contains("stream turn"), "{path}: {s}");
    }
    // The workflow's card does not stream: the client sent SendMessage instead.
    assert_eq!(result["/a2a/workflows/flow"]["card"]["streaming"], false);
    // The queued task of `slow` was followed from its start to its end.
    let followed = &result["/a2a/agents/slow"]["background"];
    assert_eq!(followed["followed_first"][0], "task", "{followed}");
    assert_eq!(followed["followed_last"], json!(["status_update", "TASK_STATE_COMPLETED"]), "{followed}");
}

/// A workflow step under Agno's `HumanReview` over A2A: the paused workflow is an
/// `input-required` task naming the step's review, and the next message answers it (a wrong
/// answer is `-32602` and changes nothing; yes runs the step, no applies its `on_reject`).
#[tokio::test]
async fn a_reviewed_workflow_step_is_an_input_required_task_answered_by_the_next_message() {
    let reviewed = "[[workflows]]\nid = \"reviewed\"\n[[workflows.steps]]\nname = \"publish\"\nagent = \"calc\"\n\
                    human_review = { requires_confirmation = true, confirmation_message = \"Publish it?\", on_reject = \"cancel\" }\n\
                    [[workflows.steps]]\nname = \"tone\"\ntype = \"router\"\n\
                    steps = [{ name = \"formal\", agent = \"calc\" }, { name = \"casual\", agent = \"calc\" }]\n\
                    human_review = { requires_user_input = true, user_input_message = \"Which tone?\" }\n";
    let os = TestOs::start(config(&format!("{OS}{reviewed}"))).await;
    let endpoint = "/a2a/workflows/reviewed/v1/message:send";
    let send = |m: Value| {
        let os = &os;
        async move { os.post_json(endpoint, &rpc("message/send", json!({"message": m})), None).await.body }
    };
    let task = send(message("news")).await["result"].clone();
    assert_eq!(task["status"]["state"], "input-required", "{task}");
    let step = &task["status"]["message"]["parts"][1]["data"]["step_requirements"][0];
    assert_eq!(
        (step["step_name"].as_str(), step["confirmation_message"].as_str()),
        (Some("publish"), Some("Publish it?"))
    );
    let task_id = task["id"].as_str().unwrap().to_owned();
    let answer = |text: &str, data: Option<Value>| {
        let mut m = message(text);
        m["taskId"] = json!(task_id);
        if let Some(data) = data {
            m["parts"] = json!([{"kind": "data", "data": data}]);
        }
        m
    };

    // Values where a confirmation is asked: refused, and the run still waits.
    let r = send(answer("", Some(json!({"values": {"x": 1}})))).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let run = os.get(&format!("/workflows/reviewed/runs/{task_id}"), None).await;
    assert_eq!(run.body["status"], "PAUSED", "{:?}", run.body);

    // Yes: the step runs, and the router's review waits for a route.
    let r = send(answer("yes", None)).await;
    assert_eq!(r["result"]["status"]["state"], "input-required", "{r}");
    let step = &r["result"]["status"]["message"]["parts"][1]["data"]["step_requirements"][0];
    assert_eq!(step["step_name"], "tone", "{r}");
    assert_eq!(step["available_choices"], json!(["formal", "casual"]), "{r}");
    let r = send(answer("", Some(json!({"choices": ["casual"]})))).await;
    assert_eq!(r["result"]["status"]["state"], "completed", "{r}");
    let run = os.get(&format!("/workflows/reviewed/runs/{task_id}"), None).await;
    assert_eq!(run.body["status"], "COMPLETED", "{:?}", run.body);
    let steps: Vec<&str> =
        run.body["step_results"].as_array().unwrap().iter().filter_map(|s| s["step_name"].as_str()).collect();
    assert!(steps.contains(&"publish") && steps.contains(&"tone"), "{steps:?}");

    // No: the step's on_reject (cancel) ends the task.
    let task = send(message("more news")).await["result"].clone();
    let mut no = message("no");
    no["taskId"] = task["id"].clone();
    let r = send(no).await;
    assert_eq!(r["result"]["status"]["state"], "canceled", "{r}");
}
