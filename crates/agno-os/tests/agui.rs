//! The AG-UI interface (`[agui]`) end to end on a real server: a streamed turn as AG-UI events
//! with the thread stored as the session, a tool call waiting for the user's confirmation and
//! answered by a trailing tool message, bad input ending in `RUN_ERROR` with nothing stored, user
//! isolation of threads, and AG-UI's own TypeScript client (`@ag-ui/client`'s `HttpAgent`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use agno_testkit::{FakeProvider, Reply as Scripted};
use common::{SECRET, TestOs, config, token};
use futures::StreamExt;
use serde_json::{Value, json};

fn os_config(provider: &FakeProvider, auth: &str) -> String {
    format!(
        "{auth}[db]\nurl = \"memory://\"\n[agui]\nenabled = true\nagent = \"helper\"\n\
         [[agents]]\nid = \"helper\"\nname = \"Helper\"\nadd_history_to_context = true\nenable_agentic_state = true\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n\
         tools = [{{ toolkit = \"calculator\", include_tools = [\"add\"], requires_confirmation_tools = [\"add\"] }}]\n",
        provider.base_url()
    )
}

fn input(thread: &str, run: &str, messages: Value) -> Value {
    let mut input = json!({"threadId": thread, "runId": run, "tools": [], "context": [], "forwardedProps": {}});
    input["messages"] = messages;
    input
}

/// POSTs `/agui` and reads the SSE answer to its end: every event, as JSON.
async fn agui(os: &TestOs, body: &Value, token: Option<&str>) -> (u16, Vec<Value>) {
    let mut req = os.client.post(format!("{}/agui", os.base)).json(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    if status != 200 {
        return (status, vec![resp.json().await.unwrap_or(Value::Null)]);
    }
    let mut events = Vec::new();
    let mut stream = eventsource_stream::EventStream::new(resp.bytes_stream());
    while let Some(ev) = stream.next().await {
        events.push(serde_json::from_str(&ev.unwrap().data).unwrap());
    }
    (status, events)
}

/// The event types, without `RAW` and with each run of text deltas as one (how many deltas a
/// reply streams is the provider's business).
fn types(events: &[Value]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for t in events.iter().map(|e| e["type"].as_str().unwrap()).filter(|t| *t != "RAW") {
        if !(t == "TEXT_MESSAGE_CONTENT" && out.last() == Some(&t)) {
            out.push(t);
        }
    }
    out
}

#[tokio::test]
async fn a_turn_streams_as_ag_ui_events_into_the_threads_session() {
    let provider = FakeProvider::start().await.unwrap();
    provider.push(Scripted::text("Hello from the helper"));
    let os = TestOs::start(config(&os_config(&provider, ""))).await;
    assert_eq!(os.get("/status", None).await.body, json!({"status": "available"}));
    let interfaces = os.get("/config", None).await.body["interfaces"].clone();
    assert_eq!(interfaces, json!([{"type": "agui", "version": "1.0", "route": ""}]));

    let mut body = input("thread-1", "run-1", json!([{"id": "m1", "role": "user", "content": "hi there"}]));
    body["state"] = json!({"theme": "dark"});
    let (status, events) = agui(&os, &body, None).await;
    assert_eq!(status, 200);
    assert_eq!(
        types(&events),
        [
            "RUN_STARTED",
            "STATE_SNAPSHOT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "STATE_SNAPSHOT",
            "RUN_FINISHED"
        ],
        "{events:?}"
    );
    assert_eq!((events[0]["threadId"].as_str(), events[0]["runId"].as_str()), (Some("thread-1"), Some("run-1")));
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(text, "Hello from the helper");
    assert_eq!(events.last().unwrap()["runId"], "run-1");
    // Every other Agno event rides along as RAW, as Agno sends it.
    assert!(events.iter().any(|e| e["type"] == "RAW" && e["event"]["event"] == "RunStarted"));
    let prompt = provider.requests().last().unwrap().body["messages"].to_string();
    assert!(prompt.contains("hi there"), "{prompt}");

    // The thread is the session; the run has the client's id and the state the client sent.
    let run = os.get("/agents/helper/runs/run-1?session_id=thread-1", None).await;
    assert_eq!(run.status, 200, "{:?}", run.body);
    assert_eq!(run.body["status"], "COMPLETED");
    let session = os.get("/sessions/thread-1", None).await;
    assert_eq!(session.body["session_state"]["theme"], "dark", "{:?}", session.body);

    // A second turn in the thread sends the first as history.
    provider.push(Scripted::text("again"));
    let body = input("thread-1", "run-2", json!([{"id": "m2", "role": "user", "content": "and now?"}]));
    agui(&os, &body, None).await;
    let prompt = provider.requests().last().unwrap().body["messages"].to_string();
    assert!(prompt.contains("hi there") && prompt.contains("Hello from the helper"), "{prompt}");
}

#[tokio::test]
async fn a_tool_call_waits_for_confirmation_and_a_tool_message_answers_it() {
    let provider = FakeProvider::start().await.unwrap();
    provider.push(Scripted::tool_call("add", r#"{"a": 2, "b": 3}"#));
    let os = TestOs::start(config(&os_config(&provider, ""))).await;
    let body = input("thread-2", "ask", json!([{"id": "m1", "role": "user", "content": "add 2 and 3"}]));
    let (_, events) = agui(&os, &body, None).await;
    let seen = types(&events);
    assert_eq!(
        &seen[seen.len() - 4..],
        ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"],
        "{events:?}"
    );
    let start = events.iter().find(|e| e["type"] == "TOOL_CALL_START").unwrap();
    assert_eq!(start["toolCallName"], "add");
    let call = start["toolCallId"].as_str().unwrap().to_owned();
    let args = events.iter().rev().find(|e| e["type"] == "TOOL_CALL_ARGS").unwrap();
    assert_eq!(serde_json::from_str::<Value>(args["delta"].as_str().unwrap()).unwrap(), json!({"a": 2, "b": 3}));
    assert_eq!(os.get("/agents/helper/runs/ask", None).await.body["status"], "PAUSED");

    // A tool message answering a call nobody waits for is a RUN_ERROR, and nothing changes.
    let stray = input(
        "thread-2",
        "stray",
        json!([{"id": "m1", "role": "user", "content": "add 2 and 3"}, {"id": "t0", "role": "tool", "toolCallId": "nope", "content": "{\"accepted\": true}"}]),
    );
    let (_, events) = agui(&os, &stray, None).await;
    assert_eq!(types(&events), ["RUN_STARTED", "RUN_ERROR"]);
    assert!(events[1]["message"].as_str().unwrap().contains("No paused run"), "{events:?}");
    assert_eq!(os.get("/agents/helper/runs/ask", None).await.body["status"], "PAUSED");
    assert_eq!(os.get("/agents/helper/runs/stray", None).await.status, 404);

    // The confirmation carries the run on under its own id.
    provider.push(Scripted::text("2 + 3 = 5"));
    let answer = input(
        "thread-2",
        "answer",
        json!([
            {"id": "m1", "role": "user", "content": "add 2 and 3"},
            {"id": "a1", "role": "assistant", "toolCalls": [{"id": call, "type": "function", "function": {"name": "add", "arguments": "{}"}}]},
            {"id": "t1", "role": "tool", "toolCallId": call, "content": "{\"accepted\": true}"}
        ]),
    );
    let (_, events) = agui(&os, &answer, None).await;
    let seen = types(&events);
    assert_eq!(seen.first(), Some(&"RUN_STARTED"));
    assert_eq!(seen.last(), Some(&"RUN_FINISHED"), "{events:?}");
    let result = events.iter().find(|e| e["type"] == "TOOL_CALL_RESULT").expect("the call ran");
    assert_eq!(result["toolCallId"].as_str(), Some(call.as_str()));
    let content: Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["result"], 5.0, "the calculator's answer: {content}");
    let run = os.get("/agents/helper/runs/ask", None).await;
    assert_eq!(run.body["status"], "COMPLETED");
    assert_eq!(run.body["content"], "2 + 3 = 5");

    // A rejection: the call does not run.
    provider.push(Scripted::tool_call("add", r#"{"a": 1, "b": 1}"#));
    let (_, events) =
        agui(&os, &input("thread-2", "ask2", json!([{"id": "m3", "role": "user", "content": "again"}])), None).await;
    let call =
        events.iter().find(|e| e["type"] == "TOOL_CALL_START").unwrap()["toolCallId"].as_str().unwrap().to_owned();
    provider.push(Scripted::text("not added"));
    let reject = input(
        "thread-2",
        "reject",
        json!([{"id": "t2", "role": "tool", "toolCallId": call, "content": "{\"accepted\": false, \"note\": \"no\"}"}]),
    );
    let (_, events) = agui(&os, &reject, None).await;
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
    let run = os.get("/agents/helper/runs/ask2", None).await;
    assert_eq!(
        (run.body["status"].as_str(), run.body["tools"][0]["confirmed"].as_bool()),
        (Some("COMPLETED"), Some(false))
    );
}

#[tokio::test]
async fn bad_input_is_refused_before_anything_is_stored() {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Scripted::text("ok")));
    let os = TestOs::start(config(&os_config(&provider, ""))).await;
    let r = os.post_json("/agui", &json!({"runId": "r", "messages": []}), None).await;
    assert_eq!(r.status, 422, "{:?}", r.body);
    let r = os.post_json("/agui", &json!({"threadId": "t", "runId": "r", "messages": "x"}), None).await;
    assert_eq!(r.status, 422, "{:?}", r.body);
    // A runId that names a stored run is refused rather than overwritten.
    agui(&os, &input("t", "taken", json!([{"id": "m", "role": "user", "content": "one"}])), None).await;
    let (_, events) =
        agui(&os, &input("t", "taken", json!([{"id": "m", "role": "user", "content": "two"}])), None).await;
    assert_eq!(types(&events), ["RUN_STARTED", "RUN_ERROR"]);
    assert!(events[1]["message"].as_str().unwrap().contains("exists already"));
    let run = os.get("/agents/helper/runs/taken", None).await;
    assert_eq!(run.body["input"]["input_content"], "one");

    let off =
        TestOs::start(config(&os_config(&provider, "").replace("[agui]\nenabled = true\nagent = \"helper\"\n", "")))
            .await;
    assert_eq!(off.post_json("/agui", &input("t", "r", json!([])), None).await.status, 404);
    assert_eq!(off.get("/config", None).await.body["interfaces"], json!([]));
    let err = agno_os::config::OsConfig::parse(
        &os_config(&provider, "").replace("agent = \"helper\"\n[[agents]]", "agent = \"ghost\"\n[[agents]]"),
        false,
        "x.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("ghost"), "{err}");
}

#[tokio::test]
async fn threads_are_their_users_own() {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Scripted::tool_call("add", r#"{"a": 1, "b": 2}"#)));
    let auth = format!(
        "[auth]\nmode = \"jwt\"\nverification_keys = [{}]\nuser_isolation = true\n",
        serde_json::to_string(SECRET).unwrap()
    );
    let os = TestOs::start(config(&os_config(&provider, &auth))).await;
    let (alice, bob) = (token("alice", &["agents:run", "agents:read"]), token("bob", &["agents:run", "agents:read"]));
    let body = input("alice-thread", "a1", json!([{"id": "m", "role": "user", "content": "mine"}]));
    assert_eq!(os.post_json("/agui", &body, None).await.status, 401);
    assert_eq!(os.post_json("/agui", &body, Some(&token("carol", &["agents:read"]))).await.status, 403);
    let mut forged = body.clone();
    forged["forwardedProps"] = json!({"user_id": "bob"});
    let (status, events) = agui(&os, &forged, Some(&alice)).await;
    assert_eq!(status, 200);
    let call =
        events.iter().find(|e| e["type"] == "TOOL_CALL_START").unwrap()["toolCallId"].as_str().unwrap().to_owned();
    let run = os.get("/agents/helper/runs/a1", Some(&alice)).await;
    assert_eq!(run.body["user_id"], "alice", "the token's user, not the forwarded one");

    // Bob can neither run in Alice's thread nor answer her paused run.
    let (status, _) =
        agui(&os, &input("alice-thread", "b1", json!([{"id": "m", "role": "user", "content": "hi"}])), Some(&bob))
            .await;
    assert_eq!(status, 404);
    let answer = input(
        "alice-thread",
        "b2",
        json!([{"id": "t", "role": "tool", "toolCallId": call, "content": "{\"accepted\": true}"}]),
    );
    let (status, _) = agui(&os, &answer, Some(&bob)).await;
    assert_eq!(status, 404);
    assert_eq!(os.get("/agents/helper/runs/a1", Some(&alice)).await.body["status"], "PAUSED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_run_is_re_attached_to_by_its_run_id_on_another_replica() {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Scripted::text("durable answer")));
    let url = common::sqlite_url("agui-background");
    let cfg = os_config(&provider, "")
        .replace("memory://", &url)
        .replace("agent = \"helper\"\n", "agent = \"helper\"\nbackground = true\n[queue]\npoll_interval_ms = 50\n");
    let (a, b) = (TestOs::start(config(&cfg)).await, TestOs::start(config(&cfg)).await);
    let body = input("durable-thread", "durable-run", json!([{"id": "m", "role": "user", "content": "keep going"}]));
    let (_, first) = agui(&a, &body, None).await;
    let seen = types(&first);
    assert_eq!(
        seen,
        ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"],
        "{first:?}"
    );
    let job = a.get("/queue/jobs/durable-run", None).await;
    assert_eq!(job.status, 200, "a queued run: {:?}", job.body);
    // The same runId again, on the other replica: the run's events again, from its log.
    let (_, again) = agui(&b, &body, None).await;
    assert_eq!(types(&again), seen);
    let text = |events: &[Value]| -> String {
        events
            .iter()
            .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
            .map(|e| e["delta"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(text(&again), "durable answer");
    assert_eq!(text(&first), text(&again));
    // One run was made, not two.
    let runs = b.get("/sessions/durable-thread/runs", None).await;
    assert_eq!(runs.body.as_array().unwrap().len(), 1, "{:?}", runs.body);

    // A client that leaves while the run goes on re-attaches on the other replica and gets it all.
    provider.push(Scripted::Delayed(Duration::from_millis(800), Box::new(Scripted::text("slow but sure"))));
    let body = input("durable-thread", "slow-run", json!([{"id": "m2", "role": "user", "content": "take your time"}]));
    let resp = a.client.post(format!("{}/agui", a.base)).json(&body).send().await.unwrap();
    let mut stream = eventsource_stream::EventStream::new(resp.bytes_stream());
    let first: Value = serde_json::from_str(&stream.next().await.unwrap().unwrap().data).unwrap();
    assert_eq!(first["type"], "RUN_STARTED");
    drop(stream);
    let (_, again) = agui(&b, &body, None).await;
    assert_eq!(types(&again).last(), Some(&"RUN_FINISHED"), "{again:?}");
    assert_eq!(text(&again), "slow but sure");
    assert_eq!(b.get("/agents/helper/runs/slow-run", None).await.body["status"], "COMPLETED");

    // A background run waiting for a confirmation carries on on the queue once answered.
    provider.push(Scripted::tool_call("add", r#"{"a": 4, "b": 4}"#));
    let body = input("durable-thread", "ask-run", json!([{"id": "m3", "role": "user", "content": "add"}]));
    let (_, paused) = agui(&a, &body, None).await;
    let call = paused.iter().find(|e| e["type"] == "TOOL_CALL_START").expect("a waiting call")["toolCallId"]
        .as_str()
        .unwrap()
        .to_owned();
    provider.push(Scripted::text("8"));
    let answer = input(
        "durable-thread",
        "answer-run",
        json!([{"id": "t", "role": "tool", "toolCallId": call, "content": "{\"accepted\": true}"}]),
    );
    let (_, resumed) = agui(&b, &answer, None).await;
    assert!(resumed.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"), "{resumed:?}");
    assert_eq!(types(&resumed).last(), Some(&"RUN_FINISHED"));
    assert_eq!(text(&resumed), "8");
    assert_eq!(a.get("/agents/helper/runs/ask-run", None).await.body["status"], "COMPLETED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ag_uis_own_client_chats_and_answers_a_confirmation() {
    let Some(dir) = agno_testkit::services::agui_client("the @ag-ui/client HttpAgent check") else { return };
    let provider = FakeProvider::start().await.unwrap();
    provider.push(Scripted::text("Hello from the helper"));
    provider.push(Scripted::tool_call("add", r#"{"a": 2, "b": 3}"#));
    provider.push(Scripted::text("2 + 3 = 5"));
    provider.push(Scripted::tool_call("update_session_state", r#"{"session_state_updates": {"theme": "light"}}"#));
    provider.push(Scripted::tool_call("change_background", r#"{"color": "blue"}"#));
    provider.push(Scripted::text("Light and blue"));
    let os = TestOs::start(config(&os_config(&provider, ""))).await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/agui_client.cjs");
    let mut client = tokio::process::Command::new("node");
    client.arg(script).arg(format!("{}/agui", os.base)).arg("ts-thread").env("NODE_PATH", dir.join("node_modules"));
    let (result, _) = common::client_json(client, Duration::from_secs(120)).await;
    assert_eq!(result["errors"], json!([]), "{result}");
    assert_eq!(result["chat_answer"], "Hello from the helper", "{result}");
    assert_eq!(result["chat"][0], "RUN_STARTED");
    assert_eq!(result["chat"].as_array().unwrap().last().unwrap(), "RUN_FINISHED");
    assert_eq!(result["waiting"]["name"], "add", "{result}");
    let resumed = result["resumed"].as_array().unwrap();
    assert!(resumed.iter().any(|t| t == "TOOL_CALL_RESULT"), "{result}");
    assert_eq!(resumed.last().unwrap(), "RUN_FINISHED");
    assert_eq!(result["last"]["role"], "assistant", "{result}");
    assert_eq!(result["last"]["content"], "2 + 3 = 5", "{result}");
    let run = os.get("/sessions/ts-thread/runs", None).await;
    assert!(run.body.as_array().unwrap().iter().any(|r| r["status"] == "COMPLETED" && r["content"] == "2 + 3 = 5"));

    // The front-end tool: the client applied the state delta, executed the call it was asked
    // for and sent its result back; the run ended with the answer after it.
    let frontend = result["frontend"].as_array().unwrap();
    assert!(frontend.iter().any(|t| t == "STATE_DELTA"), "{result}");
    assert_eq!(result["state_after_frontend"], json!({"theme": "light"}), "{result}");
    assert_eq!(result["frontend_call"], json!({"name": "change_background", "arguments": {"color": "blue"}}));
    assert_eq!(result["final"]["content"], "Light and blue", "{result}");
    assert_eq!(result["state"], json!({"theme": "light"}), "{result}");
}

#[tokio::test]
async fn client_tools_pause_for_the_clients_result_and_state_changes_stream_as_deltas() {
    let provider = FakeProvider::start().await.unwrap();
    provider.push(Scripted::tool_call("update_session_state", r#"{"session_state_updates": {"theme": "light"}}"#));
    provider.push(Scripted::tool_call("change_background", r#"{"color": "blue"}"#));
    provider.push(Scripted::text("Done: light and blue"));
    let os = TestOs::start(config(&os_config(&provider, ""))).await;
    let tools = json!([{
        "name": "change_background",
        "description": "Changes the page's background colour",
        "parameters": {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]},
    }]);
    let user = json!({"id": "m1", "role": "user", "content": "make it light and blue"});
    let mut body = input("thread-c", "front-1", json!([user]));
    body["tools"] = tools.clone();
    body["state"] = json!({"theme": "dark", "size": 2});
    let (status, events) = agui(&os, &body, None).await;
    assert_eq!(status, 200);
    let seen = types(&events);
    assert_eq!(
        seen,
        [
            "RUN_STARTED",
            "STATE_SNAPSHOT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "STATE_DELTA",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "STATE_SNAPSHOT",
            "RUN_FINISHED"
        ],
        "{events:?}"
    );
    let delta = events.iter().find(|e| e["type"] == "STATE_DELTA").unwrap();
    assert_eq!(delta["delta"], json!([{"op": "replace", "path": "/theme", "value": "light"}]));
    let snapshot = events.iter().rev().find(|e| e["type"] == "STATE_SNAPSHOT").unwrap();
    assert_eq!(snapshot["snapshot"], json!({"theme": "light", "size": 2}));
    let waiting = events.iter().filter(|e| e["type"] == "TOOL_CALL_START").nth(1).unwrap();
    assert_eq!(waiting["toolCallName"], "change_background");
    let call = waiting["toolCallId"].as_str().unwrap().to_owned();
    // The model was offered the client's tool beside the agent's own.
    let offered: Vec<String> = provider.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(offered.contains(&"change_background".to_owned()) && offered.contains(&"add".to_owned()), "{offered:?}");
    let run = os.get("/agents/helper/runs/front-1?session_id=thread-c", None).await;
    assert_eq!(run.body["status"], "PAUSED", "{:?}", run.body);

    // The client executed the call and sends its result as a tool message (with its tools again).
    let assistant = json!({"id": "a1", "role": "assistant", "toolCalls": [{"id": call, "type": "function", "function": {"name": "change_background", "arguments": "{\"color\": \"blue\"}"}}]});
    let result = json!({"id": "t1", "role": "tool", "toolCallId": call, "content": "the background is blue"});
    let mut body = input("thread-c", "front-2", json!([user, assistant, result]));
    body["tools"] = tools;
    let (_, events) = agui(&os, &body, None).await;
    let seen = types(&events);
    assert_eq!(seen.last(), Some(&"RUN_FINISHED"), "{events:?}");
    assert!(!seen.contains(&"RUN_ERROR"), "{events:?}");
    let last = provider.requests().last().unwrap().body.clone();
    assert!(last["messages"].to_string().contains("the background is blue"), "{last}");
    assert!(last["tools"].to_string().contains("change_background"), "the continued run offers the tool again");
    let run = os.get("/agents/helper/runs/front-1?session_id=thread-c", None).await;
    assert_eq!(
        (run.body["status"].as_str(), run.body["content"].as_str()),
        (Some("COMPLETED"), Some("Done: light and blue"))
    );
    let session = os.get("/sessions/thread-c", None).await;
    assert_eq!(session.body["session_state"]["theme"], "light", "{:?}", session.body);

    // A tool without a name is refused before anything runs.
    let mut body = input("thread-c", "front-3", json!([{"id": "m9", "role": "user", "content": "x"}]));
    body["tools"] = json!([{"description": "nameless"}]);
    let (status, body) = agui(&os, &body, None).await;
    assert_eq!(status, 422, "{body:?}");
    assert!(body[0].to_string().contains("tools[0] needs a name"), "{body:?}");
}

#[tokio::test]
async fn a_prefix_mounts_the_interface_under_it() {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Scripted::text("under a prefix")));
    let config_text =
        os_config(&provider, "").replace("[agui]\nenabled = true\n", "[agui]\nenabled = true\nprefix = \"/copilot\"\n");
    let os = TestOs::start(config(&config_text)).await;
    assert_eq!(os.get("/copilot/status", None).await.body, json!({"status": "available"}));
    assert_eq!(os.get("/status", None).await.status, 404);
    let interfaces = os.get("/config", None).await.body["interfaces"].clone();
    assert_eq!(interfaces, json!([{"type": "agui", "version": "1.0", "route": "/copilot"}]));
    let doc = os.get("/openapi.json", None).await.body;
    assert!(doc["paths"].get("/copilot/agui").is_some() && doc["paths"].get("/agui").is_none(), "{:?}", doc["paths"]);
    let body = input("thread-p", "run-p", json!([{"id": "m1", "role": "user", "content": "hi"}]));
    let resp = os.client.post(format!("{}/agui", os.base)).json(&body).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    let resp = os.client.post(format!("{}/copilot/agui", os.base)).json(&body).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let text = resp.text().await.unwrap();
    assert!(text.contains("TEXT_MESSAGE_CONTENT") && text.contains("RUN_FINISHED"), "{text}");
    // The REST routes are where they were.
    assert_eq!(os.get("/agents", None).await.status, 200);
}
