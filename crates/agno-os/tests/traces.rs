//! Tracing against a real server: `[tracing] enabled` stores a span tree per run (a team's
//! delegations with its member's run nested under them, a workflow's parallel branches under their
//! step), served on `/traces`, `/traces/{id}`, `/trace_session_stats` and `POST /traces/search`
//! as Python AgentOS shapes them, with bad filters refused and user isolation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use agno_testkit::{FakeProvider, Reply as Scripted};
use common::{SECRET, TestOs, config, detail, token};
use serde_json::{Value, json};

fn delegate(member: &str, task: &str) -> Scripted {
    Scripted::ToolCalls {
        content: None,
        calls: vec![("delegate_task_to_member".into(), json!({"member_id": member, "task": task}).to_string())],
    }
}

/// A team `desk` (leader on the fake provider) over the `test`-model agent `writer`, and a
/// workflow `fan` with a parallel step, traced in a SQLite file.
fn traced(provider: &FakeProvider, extra: &str) -> String {
    format!(
        "[db]\nurl = \"{}\"\n[tracing]\nenabled = true\n{extra}\n\
         [[agents]]\nid = \"writer\"\nname = \"Writer\"\nmodel = \"test\"\n\
         [[teams]]\nid = \"desk\"\nname = \"News Desk\"\nmembers = [\"writer\"]\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n\
         [[workflows]]\nid = \"fan\"\nname = \"Fan\"\ndescription = \"Draft then fan out\"\n\
         [[workflows.steps]]\nname = \"draft\"\nagent = \"writer\"\n\
         [[workflows.steps]]\nname = \"fanout\"\ntype = \"parallel\"\n\
         steps = [{{ name = \"left\", agent = \"writer\" }}, {{ name = \"right\", agent = \"writer\" }}]\n",
        common::sqlite_url("traces"),
        provider.base_url()
    )
}

/// Every span ended so far is stored.
async fn flushed(os: &TestOs) {
    os.os.state.tracing.as_ref().expect("tracing is on").flush().await;
}

/// `(name, type, children)` of a node and its descendants.
fn shape(node: &Value) -> Value {
    let children: Vec<Value> = node["spans"].as_array().map(|c| c.iter().map(shape).collect()).unwrap_or_default();
    json!([node["name"], node["type"], children])
}

#[tokio::test]
async fn a_team_run_is_one_trace_with_its_members_run_nested_under_the_delegation() {
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&traced(&provider, ""))).await;
    provider.push_all([delegate("writer", "draft the news"), Scripted::text("the desk is done")]);
    let r =
        os.post_form("/teams/desk/runs", &[("message", "news"), ("stream", "false"), ("session_id", "t1")], None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    flushed(&os).await;

    let list = os.get("/traces", None).await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert_eq!(list.body["meta"]["total_count"], 1, "{}", list.body);
    let summary = &list.body["data"][0];
    assert_eq!(summary["name"], "News_Desk.run");
    assert_eq!(summary["status"], "OK");
    assert_eq!(summary["run_id"], run_id.as_str());
    assert_eq!(summary["session_id"], "t1");
    assert_eq!(summary["team_id"], "desk");
    assert_eq!(summary["input"], "news");
    assert_eq!(summary["total_spans"], 6, "team, 2 model calls, delegation, member run, its model call");
    assert_eq!(summary["error_count"], 0);
    assert!(summary.get("agent_id").is_none() && summary.get("user_id").is_none(), "nulls are left out");
    assert!(
        summary["duration"].as_str().unwrap().ends_with("ms") || summary["duration"].as_str().unwrap().ends_with('s')
    );
    assert!(summary["start_time"].as_str().unwrap().ends_with('Z'));
    let trace_id = summary["trace_id"].as_str().unwrap().to_owned();
    assert_eq!(trace_id.len(), 32);

    let detail_r = os.get(&format!("/traces/{trace_id}"), None).await;
    assert_eq!(detail_r.status, 200, "{}", detail_r.body);
    let d = &detail_r.body;
    assert_eq!((&d["input"], &d["output"]), (&json!("news"), &json!("the desk is done")));
    assert_eq!(d["tree"].as_array().unwrap().len(), 1);
    assert_eq!(
        shape(&d["tree"][0]),
        json!([
            "News_Desk.run",
            "TEAM",
            [
                ["OpenAIChat.invoke", "LLM", []],
                ["delegate_task_to_member", "TOOL", [["Writer.run", "AGENT", [["Test.invoke", "LLM", []]]]]],
                ["OpenAIChat.invoke", "LLM", []],
            ]
        ])
    );
    let root = &d["tree"][0];
    assert!(root.get("input").is_none(), "the root's input is the trace's");
    let llm = &root["spans"][0];
    assert_eq!(llm["metadata"]["model"], "gpt-4o-mini");
    let tool = &root["spans"][1];
    assert_eq!(tool["metadata"]["tool_name"], "delegate_task_to_member");
    assert_eq!(
        serde_json::from_str::<Value>(tool["metadata"]["parameters"].as_str().unwrap()).unwrap()["member_id"],
        "writer"
    );
    let member = &tool["spans"][0];
    assert_eq!(member["input"], "draft the news");
    assert_eq!(member["output"], "This is the test model answering: draft the news");
    assert_eq!(member["metadata"]["run_id"], r.body["member_responses"][0]["run_id"]);

    // One span alone, and the refusals of a span of another trace and of no trace.
    let span_id = member["id"].as_str().unwrap();
    let one = os.get(&format!("/traces/{trace_id}?span_id={span_id}"), None).await;
    assert_eq!((one.status, &one.body["name"], &one.body["type"]), (200, &json!("Writer.run"), &json!("AGENT")));
    assert!(one.body.get("spans").is_none());
    let stray = os.get(&format!("/traces/{trace_id}?span_id=ffffffffffffffff"), None).await;
    assert_eq!(stray.status, 404);
    assert_eq!(detail(&stray.body), format!("Span ffffffffffffffff does not belong to trace {trace_id}"));
    let missing = os.get("/traces/00000000000000000000000000000000", None).await;
    assert_eq!((missing.status, detail(&missing.body)), (404, "Trace not found".to_owned()));

    let by_run = os.get(&format!("/traces?run_id={run_id}"), None).await;
    assert_eq!(by_run.body["meta"]["total_count"], 1);
    let none = os.get("/traces?status=ERROR", None).await;
    assert_eq!(none.body["meta"]["total_count"], 0);
    let bad_time = os.get("/traces?start_time=yesterday", None).await;
    assert_eq!(bad_time.status, 422, "{}", bad_time.body);
    assert!(detail(&bad_time.body).contains("Invalid start_time format"), "{}", bad_time.body);

    let stats = os.get("/trace_session_stats", None).await;
    assert_eq!(stats.status, 200, "{}", stats.body);
    assert_eq!(stats.body["data"][0]["session_id"], "t1");
    assert_eq!(stats.body["data"][0]["total_traces"], 1);
    assert_eq!(stats.body["data"][0]["team_id"], "desk");
}

#[tokio::test]
async fn a_workflow_run_nests_its_parallel_branches_under_their_step() {
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&traced(&provider, ""))).await;
    let r = os.post_form("/workflows/fan/runs", &[("message", "topic"), ("stream", "false")], None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    flushed(&os).await;
    let list = os.get(&format!("/traces?workflow_id=fan&run_id={}", r.body["run_id"].as_str().unwrap()), None).await;
    assert_eq!(list.body["meta"]["total_count"], 1, "{}", list.body);
    let trace_id = list.body["data"][0]["trace_id"].as_str().unwrap();
    let d = os.get(&format!("/traces/{trace_id}"), None).await.body;
    assert_eq!(d["name"], "Fan.run");
    let writer = |step: &str| {
        json!([format!("{step}.execute"), "WORKFLOW", [["Writer.run", "AGENT", [["Test.invoke", "LLM", []]]]]])
    };
    assert_eq!(
        shape(&d["tree"][0]),
        json!([
            "Fan.run",
            "WORKFLOW",
            [writer("draft"), ["fanout.execute", "WORKFLOW", [writer("left"), writer("right")]]]
        ])
    );
    let root = &d["tree"][0];
    assert_eq!(root["metadata"]["steps_count"], 2);
    assert_eq!(root["metadata"]["steps"], json!(["draft", "fanout"]));
    assert_eq!(root["metadata"]["step_types"], json!(["Step", "Parallel"]));
    assert_eq!(root["metadata"]["description"], "Draft then fan out");
    assert_eq!((&root["spans"][0]["step_type"], &root["spans"][1]["step_type"]), (&json!("Step"), &json!("Parallel")));
    assert_eq!(d["output"], r.body["content"], "a workflow's output is its run's");
}

#[tokio::test]
async fn search_filters_by_expression_and_refuses_what_it_cannot_run() {
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&traced(&provider, ""))).await;
    for (i, session) in ["s-a", "s-a", "s-b"].iter().enumerate() {
        provider.push_all([delegate("writer", &format!("task {i}")), Scripted::text("done")]);
        let r = os
            .post_form("/teams/desk/runs", &[("message", "go"), ("stream", "false"), ("session_id", session)], None)
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        // Stored now: each run's trace is created after the one before (a batch shares one time).
        flushed(&os).await;
    }
    let w = os.post_form("/workflows/fan/runs", &[("message", "topic"), ("stream", "false")], None).await;
    assert_eq!(w.status, 200, "{}", w.body);
    flushed(&os).await;

    let schema = os.get("/traces/filter-schema", None).await;
    assert_eq!(schema.status, 200);
    assert_eq!(schema.body["fields"].as_array().unwrap().len(), 13);
    assert_eq!(
        schema.body["fields"][0],
        json!({"key": "status", "label": "Status", "type": "enum", "operators": ["EQ", "NEQ", "IN"], "values": ["OK", "ERROR"]})
    );

    let search = |body: Value| {
        let os = &os;
        async move { os.post_json("/traces/search", &body, None).await }
    };
    let teams = search(json!({"filter": {"op": "AND", "conditions": [
        {"op": "EQ", "key": "team_id", "value": "desk"},
        {"op": "STARTSWITH", "key": "name", "value": "news_"},
    ]}}))
    .await;
    assert_eq!(teams.status, 200, "{}", teams.body);
    assert_eq!(teams.body["meta"]["total_count"], 3);
    assert!(teams.body["data"][0]["tree"].is_array(), "group_by run answers traces with their trees");

    let not_s_a = search(
        json!({"filter": {"op": "NOT", "condition": {"op": "IN", "key": "session_id", "values": ["s-a"]}}, "limit": 1}),
    )
    .await;
    assert_eq!(not_s_a.body["meta"]["total_count"], 2, "{}", not_s_a.body);
    assert_eq!(not_s_a.body["data"].as_array().unwrap().len(), 1);

    let sessions =
        search(json!({"filter": {"op": "EQ", "key": "team_id", "value": "desk"}, "group_by": "session"})).await;
    assert_eq!(sessions.status, 200, "{}", sessions.body);
    let counts: Vec<(Value, Value)> = sessions.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["session_id"].clone(), s["total_traces"].clone()))
        .collect();
    assert_eq!(counts, vec![(json!("s-b"), json!(1)), (json!("s-a"), json!(2))], "latest activity first");

    for (body, names) in [
        (json!({"filter": {"op": "EQ", "key": "password", "value": "x"}}), "Invalid filter field"),
        (json!({"filter": {"op": "LIKE", "key": "name", "value": "x"}}), "Unknown filter operator: LIKE"),
        (json!({"filter": {"op": "GT", "key": "start_time", "value": "soon"}}), "Invalid start_time format"),
        (json!({"filter": {"op": "EQ", "key": "name"}}), "EQ filter requires 'key' and 'value'"),
        (json!({"limit": 101}), "less than or equal to 100"),
        (json!({"group_by": "user"}), "'run' or 'session'"),
    ] {
        let r = search(body.clone()).await;
        assert_eq!(r.status, 422, "{body}: {}", r.body);
        assert!(detail(&r.body).contains(names), "{body}: {}", r.body);
    }
    let malformed = os
        .client
        .post(format!("{}/traces/search", os.base))
        .header("content-type", "application/json")
        .body("{\"filter\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status().as_u16(), 422);
}

#[tokio::test]
async fn under_isolation_a_user_sees_only_the_traces_of_their_runs() {
    let provider = FakeProvider::start().await.unwrap();
    let auth = format!("[auth]\nmode = \"jwt\"\nverification_keys = [\"{SECRET}\"]\nuser_isolation = true");
    let os = TestOs::start(config(&traced(&provider, &auth))).await;
    let alice = token("alice", &["teams:read", "teams:run", "traces:read"]);
    let bob = token("bob", &["teams:read", "teams:run", "traces:read"]);
    provider.push_all([delegate("writer", "x"), Scripted::text("alice's answer")]);
    let r = os
        .post_form("/teams/desk/runs", &[("message", "mine"), ("stream", "false"), ("session_id", "a-s")], Some(&alice))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    flushed(&os).await;

    let mine = os.get("/traces", Some(&alice)).await;
    assert_eq!(mine.body["meta"]["total_count"], 1, "{}", mine.body);
    assert_eq!(mine.body["data"][0]["user_id"], "alice");
    let trace_id = mine.body["data"][0]["trace_id"].as_str().unwrap().to_owned();
    assert_eq!(os.get(&format!("/traces/{trace_id}"), Some(&alice)).await.status, 200);

    let theirs = os.get("/traces?user_id=alice", Some(&bob)).await;
    assert_eq!(theirs.body["meta"]["total_count"], 0, "a spoofed user_id is replaced by the caller's");
    let stolen = os.get(&format!("/traces/{trace_id}"), Some(&bob)).await;
    assert_eq!((stolen.status, detail(&stolen.body)), (404, "Trace not found".to_owned()));
    let span = os.get(&format!("/traces/{trace_id}?span_id=0000000000000000"), Some(&bob)).await;
    assert_eq!(span.status, 404);
    let stats = os.get("/trace_session_stats", Some(&bob)).await;
    assert_eq!(stats.body["meta"]["total_count"], 0);
    let search = os
        .post_json("/traces/search", &json!({"filter": {"op": "EQ", "key": "user_id", "value": "alice"}}), Some(&bob))
        .await;
    assert_eq!(search.body["meta"]["total_count"], 0, "{}", search.body);
    let grouped = os.post_json("/traces/search", &json!({"group_by": "session"}), Some(&bob)).await;
    assert_eq!(grouped.body["meta"]["total_count"], 0);
    let alices = os.post_json("/traces/search", &json!({"group_by": "session"}), Some(&alice)).await;
    assert_eq!(alices.body["data"][0]["session_id"], "a-s");
}

/// The traces of run `run_id`, waited for (each attempt's spans are stored a moment after it
/// ends, off its path) until there are `n`.
async fn traces_of_run(os: &TestOs, run_id: &str, n: usize) -> Vec<Value> {
    traces_of_run_as(os, run_id, n, None).await
}

/// [`traces_of_run`] as the holder of token `who`.
async fn traces_of_run_as(os: &TestOs, run_id: &str, n: usize, who: Option<&str>) -> Vec<Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        flushed(os).await;
        let list = os.get(&format!("/traces?run_id={run_id}"), who).await;
        let data = list.body["data"].as_array().cloned().unwrap_or_default();
        if data.len() >= n {
            return data;
        }
        assert!(std::time::Instant::now() < deadline, "{n} traces of run {run_id} within 30 s: {}", list.body);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn background_and_continued_runs_are_traced_each_attempt_with_their_runs_ids() {
    let provider = FakeProvider::start().await.unwrap();
    let guarded = "[[agents]]\nid = \"guarded\"\nmodel = \"test\"\n\
                   tools = [{ toolkit = \"calculator\", include_tools = [\"add\"], requires_confirmation_tools = [\"add\"] }]\n";
    let os = TestOs::start(config(&traced(&provider, guarded))).await;

    // A background run: traced by the worker that ran it, with the run's ids.
    let r = os
        .post_form(
            "/agents/writer/runs",
            &[("message", "later"), ("stream", "false"), ("background", "true"), ("session_id", "bg")],
            None,
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let traces = traces_of_run(&os, &run_id, 1).await;
    assert_eq!((&traces[0]["name"], &traces[0]["session_id"]), (&json!("Writer.run"), &json!("bg")));
    assert_eq!(traces[0]["agent_id"], "writer");
    assert_eq!(traces[0]["total_spans"], 2, "the run and its model call");

    // A run paused on a confirmation, then continued: one trace per attempt, both of the run.
    let paused = os
        .post_form(
            "/agents/guarded/runs",
            &[("message", "add please"), ("stream", "false"), ("session_id", "hitl")],
            None,
        )
        .await;
    assert_eq!(paused.body["status"], "PAUSED", "{}", paused.body);
    let run_id = paused.body["run_id"].as_str().unwrap().to_owned();
    let mut tools = paused.body["tools"].as_array().unwrap().clone();
    for t in &mut tools {
        t["confirmed"] = json!(true);
    }
    let done = os
        .post_form(
            &format!("/agents/guarded/runs/{run_id}/continue"),
            &[("tools", &Value::Array(tools).to_string()), ("stream", "false"), ("session_id", "hitl")],
            None,
        )
        .await;
    assert_eq!(done.body["status"], "COMPLETED", "{}", done.body);
    let traces = traces_of_run(&os, &run_id, 2).await;
    let mut names: Vec<&str> = traces.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["Agent.continue_run", "Agent.run"]);
    let continued = traces.iter().find(|t| t["name"] == "Agent.continue_run").unwrap();
    assert_eq!(continued["session_id"], "hitl");
    let tree = os.get(&format!("/traces/{}", continued["trace_id"].as_str().unwrap()), None).await.body;
    let kinds: Vec<Value> =
        tree["tree"][0]["spans"].as_array().unwrap().iter().map(|s| json!([s["name"], s["type"]])).collect();
    assert_eq!(kinds[0], json!(["add", "TOOL"]), "the confirmed tool runs in the continue: {tree}");
    assert_eq!(tree["tree"][0]["spans"][0]["output"], r#"{"operation":"addition","result":2.0}"#, "{tree}");
    assert_eq!(tree["tree"][0]["spans"][1]["name"], "Test.invoke", "then the model answers: {tree}");
}

/// A Phoenix server (`phoenix serve`) on free ports with a working directory of its own, killed
/// when dropped.
struct Phoenix {
    child: std::process::Child,
    base: String,
    /// Its OTLP gRPC receiver.
    grpc: String,
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

async fn start_phoenix(command: &str) -> Phoenix {
    let dir = std::env::temp_dir().join(format!("agno-phoenix-{}", agno_core::new_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (port, grpc_port) = (free_port(), free_port());
    let log = std::fs::File::create(dir.join("phoenix.log")).unwrap();
    let child = std::process::Command::new(command)
        .arg("serve")
        .current_dir(&dir)
        .env("PHOENIX_WORKING_DIR", &dir)
        .env("PHOENIX_HOST", "127.0.0.1")
        .env("PHOENIX_PORT", port.to_string())
        .env("PHOENIX_GRPC_PORT", grpc_port.to_string())
        .env("PHOENIX_TELEMETRY_ENABLED", "false")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let phoenix =
        Phoenix { child, base: format!("http://127.0.0.1:{port}"), grpc: format!("http://127.0.0.1:{grpc_port}") };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    let client = reqwest::Client::new();
    loop {
        if client.get(format!("{}/healthz", phoenix.base)).send().await.is_ok_and(|r| r.status().is_success()) {
            return phoenix;
        }
        let log = std::fs::read_to_string(dir.join("phoenix.log")).unwrap_or_default();
        assert!(std::time::Instant::now() < deadline, "Phoenix did not start within 180 s:\n{log}");
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

/// `(name, parent name)` of each span Phoenix holds, read back through its REST API, once it
/// holds at least `n`.
async fn phoenix_spans(phoenix: &Phoenix, n: usize) -> Vec<(String, Option<String>)> {
    let client = reqwest::Client::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let body: Value = client
            .get(format!("{}/v1/projects/default/spans?limit=1000", phoenix.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap_or(Value::Null);
        let spans = body["data"].as_array().cloned().unwrap_or_default();
        if spans.len() >= n {
            let name_of = |id: &Value| {
                spans
                    .iter()
                    .find(|s| s["context"]["span_id"] == *id)
                    .and_then(|s| s["name"].as_str())
                    .map(str::to_owned)
            };
            return spans
                .iter()
                .map(|s| (s["name"].as_str().unwrap_or_default().to_owned(), name_of(&s["parent_id"])))
                .collect();
        }
        assert!(std::time::Instant::now() < deadline, "Phoenix holds {} spans, not {n}: {body}", spans.len());
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_collector_receives_the_spans_over_otlp_nested_as_stored() {
    let Some(command) = agno_testkit::phoenix("the OTLP export to Arize Phoenix") else { return };
    let phoenix = start_phoenix(&command).await;
    let provider = FakeProvider::start().await.unwrap();
    let otlp = format!("otlp_endpoint = \"{}\"", phoenix.base);
    let os = TestOs::start(config(&traced(&provider, &otlp))).await;
    provider.push_all([delegate("writer", "draft the news"), Scripted::text("the desk is done")]);
    let team = os.post_form("/teams/desk/runs", &[("message", "news"), ("stream", "false")], None).await;
    assert_eq!(team.status, 200, "{}", team.body);
    let flow = os.post_form("/workflows/fan/runs", &[("message", "topic"), ("stream", "false")], None).await;
    assert_eq!(flow.status, 200, "{}", flow.body);
    flushed(&os).await;

    // The team: 6 spans; the workflow: its run, 3 steps, 3 agent runs and their model calls.
    let spans = phoenix_spans(&phoenix, 6 + 10).await;
    let parent_of = |name: &str| {
        let found: Vec<&Option<String>> = spans.iter().filter(|(n, _)| n == name).map(|(_, p)| p).collect();
        assert!(!found.is_empty(), "Phoenix has no span {name}: {spans:?}");
        found[0].clone()
    };
    assert_eq!(parent_of("News_Desk.run"), None, "the team's run is its trace's root");
    assert_eq!(parent_of("delegate_task_to_member").as_deref(), Some("News_Desk.run"));
    assert_eq!(parent_of("OpenAIChat.invoke").as_deref(), Some("News_Desk.run"));
    assert_eq!(parent_of("Fan.run"), None);
    assert_eq!(parent_of("fanout.execute").as_deref(), Some("Fan.run"));
    assert_eq!(parent_of("left.execute").as_deref(), Some("fanout.execute"));
    assert_eq!(parent_of("right.execute").as_deref(), Some("fanout.execute"));
    let writers: Vec<&Option<String>> = spans.iter().filter(|(n, _)| n == "Writer.run").map(|(_, p)| p).collect();
    let mut parents: Vec<&str> = writers.iter().filter_map(|p| p.as_deref()).collect();
    parents.sort_unstable();
    assert_eq!(
        parents,
        ["delegate_task_to_member", "draft.execute", "left.execute", "right.execute"],
        "the member's run under its delegation, each step's agent run under its step"
    );
    // The same spans are stored: the collector and /traces agree.
    let stored = os.get("/traces", None).await;
    assert_eq!(stored.body["meta"]["total_count"], 2, "{}", stored.body);
    let stats = os.os.state.tracing.as_ref().unwrap().stats();
    assert!(stats.otlp_handed >= 16 && stats.otlp_exported == stats.otlp_handed, "all exported: {stats:?}");
    assert_eq!(stats.otlp_failed, 0);
    drop(os);

    // Over gRPC, to Phoenix's gRPC receiver: the team's trace again, nested the same way.
    let otlp = format!("otlp_endpoint = \"{}\"\notlp_protocol = \"grpc\"", phoenix.grpc);
    let os = TestOs::start(config(&traced(&provider, &otlp))).await;
    provider.push_all([delegate("writer", "draft again"), Scripted::text("the desk is done again")]);
    let team = os.post_form("/teams/desk/runs", &[("message", "more news"), ("stream", "false")], None).await;
    assert_eq!(team.status, 200, "{}", team.body);
    flushed(&os).await;
    let spans = phoenix_spans(&phoenix, 6 + 10 + 6).await;
    let roots = spans.iter().filter(|(n, p)| n == "News_Desk.run" && p.is_none()).count();
    assert_eq!(roots, 2, "the team's second run arrived over gRPC: {spans:?}");
    let delegations: Vec<&Option<String>> =
        spans.iter().filter(|(n, _)| n == "delegate_task_to_member").map(|(_, p)| p).collect();
    assert_eq!(delegations, [&Some("News_Desk.run".to_owned()); 2]);
}

#[test]
fn a_bad_otlp_protocol_is_refused_at_start_naming_the_setting() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let toml = "[db]\nurl = \"memory://\"\n[tracing]\nenabled = true\notlp_endpoint = \"http://127.0.0.1:4317\"\n\
                otlp_protocol = \"carrier-pigeon\"\n";
    let Err(err) = rt.block_on(agno_os::app::AgentOs::from_config(&config(toml))) else { panic!("started") };
    let text = err.to_string();
    assert!(text.contains("otlp_protocol") && text.contains("carrier-pigeon") && text.contains("grpc"), "{text}");
}

#[tokio::test]
async fn traces_past_the_retention_are_deleted_with_their_spans() {
    let url = common::sqlite_url("retention");
    let db = agno_db::open(&url).await.unwrap();
    db.create_tables().await.unwrap();
    // A trace of two days ago and one of now, written as the tracing writer writes them.
    let at = |ago: chrono::Duration| (chrono::Utc::now() - ago).to_rfc3339_opts(chrono::SecondsFormat::Micros, false);
    for (trace, ago) in [("0000000000000000000000000000000a", 48), ("0000000000000000000000000000000b", 0)] {
        let span = agno_core::SpanRecord {
            span_id: format!("{}000000000000001", &trace[31..]),
            trace_id: trace.to_owned(),
            parent_span_id: None,
            name: "Writer.run".to_owned(),
            span_kind: "INTERNAL".to_owned(),
            status_code: "OK".to_owned(),
            status_message: None,
            start_time: at(chrono::Duration::hours(ago)),
            end_time: at(chrono::Duration::hours(ago)),
            duration_ms: 0,
            attributes: serde_json::Map::new(),
            created_at: at(chrono::Duration::hours(ago)),
        };
        let traces: Vec<_> = agno_core::trace_of_spans(&[&span]).into_iter().collect();
        db.write_spans(&traces, &[span]).await.unwrap();
    }
    drop(db);
    let provider = FakeProvider::start().await.unwrap();
    // The OS on that database (traced()'s own file swapped for it).
    let toml = traced(&provider, "retention_days = 1");
    let own = &toml[toml.find("url = \"").unwrap()..toml.find("\n[tracing]").unwrap()];
    let toml = toml.replacen(own, &format!("url = \"{url}\""), 1);
    let os = TestOs::start(config(&toml)).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let list = os.get("/traces", None).await;
        let ids: Vec<&str> =
            list.body["data"].as_array().unwrap().iter().filter_map(|t| t["trace_id"].as_str()).collect();
        if ids == ["0000000000000000000000000000000b"] {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the old trace is still listed: {}", list.body);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let gone = os.get("/traces/0000000000000000000000000000000a", None).await;
    assert_eq!(gone.status, 404);
    let kept = os.get("/traces/0000000000000000000000000000000b", None).await;
    assert_eq!(kept.body["total_spans"], 1, "{}", kept.body);
}

/// The spans of trace `trace_id` as stored, once one named `name` is among them (spans of work
/// that outlives the run, a memory update, are stored a moment after it ends).
async fn spans_with(os: &TestOs, trace_id: &str, name: &str) -> Vec<agno_core::SpanRecord> {
    let db = os.os.state.db.clone().expect("a database");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        flushed(os).await;
        let spans = db.get_spans(trace_id).await.unwrap();
        if spans.iter().any(|s| s.name == name) {
            return spans;
        }
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        assert!(std::time::Instant::now() < deadline, "no span {name} in trace {trace_id} within 30 s: {names:?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The one trace of run `run_id` and its spans (as stored) once `name` is among them.
async fn trace_with(os: &TestOs, run_id: &str, name: &str) -> (String, Vec<agno_core::SpanRecord>) {
    let trace = traces_of_run(os, run_id, 1).await.remove(0);
    let trace_id = trace["trace_id"].as_str().unwrap().to_owned();
    let spans = spans_with(os, &trace_id, name).await;
    (trace_id, spans)
}

fn span<'a>(spans: &'a [agno_core::SpanRecord], name: &str) -> &'a agno_core::SpanRecord {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| {
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        panic!("no span {name} among {names:?}")
    })
}

fn parent<'a>(spans: &'a [agno_core::SpanRecord], child: &agno_core::SpanRecord) -> &'a str {
    let id = child.parent_span_id.as_deref().expect("a parent");
    &spans.iter().find(|s| s.span_id == id).expect("the parent is in the trace").name
}

#[tokio::test]
async fn knowledge_searches_and_memory_updates_are_spans_of_the_run() {
    let provider = FakeProvider::start().await.unwrap();
    let toml = format!(
        "[db]\nurl = \"{}\"\n[tracing]\nenabled = true\n\
         [[knowledge]]\nid = \"docs\"\nembedder = \"hash:64\"\n\
         [[agents]]\nid = \"helper\"\nname = \"Helper\"\nknowledge = \"docs\"\nupdate_memory_on_run = true\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        common::sqlite_url("traces-kb"),
        provider.base_url()
    );
    let os = TestOs::start(config(&toml)).await;
    let up = os
        .post_file("/knowledge/content", &[], ("ferris.md", b"Ferris the crab is the Rust mascot.".to_vec()), None)
        .await;
    assert_eq!(up.status, 202, "{}", up.body);
    let content = up.body["id"].as_str().unwrap().to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        let status = os.get(&format!("/knowledge/content/{content}/status"), None).await.body;
        if status["status"] != "processing" {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "the content is still processing");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    assert_eq!(status["status"], "completed", "{status}");
    provider.push_all([
        Scripted::tool_call("search_knowledge_base", r#"{"query": "Rust mascot"}"#),
        Scripted::text("Ferris."),
        // The memory manager, after the run.
        Scripted::tool_call("add_memory", r#"{"memory": "Ann likes Rust", "topics": ["rust"]}"#),
        Scripted::text("added"),
    ]);
    let form = [("message", "Who is the Rust mascot?"), ("stream", "false"), ("user_id", "ann")];
    let r = os.post_form("/agents/helper/runs", &form, None).await;
    assert_eq!((r.status, &r.body["content"]), (200, &json!("Ferris.")), "{}", r.body);
    let run_id = r.body["run_id"].as_str().unwrap();

    let (trace_id, spans) = trace_with(&os, run_id, "MemoryManager.run").await;
    // The search: a RETRIEVER span under the tool call, with the query and what it found.
    let search = span(&spans, "docs.search");
    assert_eq!(search.span_kind, "INTERNAL");
    assert_eq!(search.attribute("openinference.span.kind"), Some("RETRIEVER"));
    assert_eq!(parent(&spans, search), "search_knowledge_base");
    assert_eq!(search.attribute("input.value"), Some("Rust mascot"));
    assert_eq!(search.attribute("agno.knowledge.name"), Some("docs"));
    assert_eq!(search.attribute("agno.user.id"), Some("ann"));
    assert_eq!(search.attribute("retrieval.documents.0.document.content"), Some("Ferris the crab is the Rust mascot."));
    assert!(search.attributes["retrieval.documents.0.document.id"].as_str().is_some_and(|id| id.starts_with(&content)));
    assert_eq!(search.attributes["agno.knowledge.documents"], 1);
    // The memory update: the manager's own run under the run it read, its model and tool calls
    // under it; the trace stays the run's.
    let memory = span(&spans, "MemoryManager.run");
    assert_eq!(parent(&spans, memory), "Helper.run");
    assert_eq!(memory.attribute("openinference.span.kind"), Some("AGENT"));
    assert_eq!(memory.attribute("input.value"), Some("Who is the Rust mascot?"));
    assert_eq!(memory.attribute("user.id"), Some("ann"));
    assert_eq!(memory.attribute("agno.agent.id"), Some("memory-manager"));
    let add = span(&spans, "add_memory");
    assert_eq!(parent(&spans, add), "MemoryManager.run");
    let llm_under_memory = spans.iter().filter(|s| s.parent_span_id.as_deref() == Some(memory.span_id.as_str()));
    assert_eq!(llm_under_memory.filter(|s| s.name == "OpenAIChat.invoke").count(), 2);

    let list = os.get(&format!("/traces?run_id={run_id}"), None).await;
    assert_eq!(list.body["meta"]["total_count"], 1, "{}", list.body);
    let summary = &list.body["data"][0];
    assert_eq!((&summary["name"], &summary["agent_id"]), (&json!("Helper.run"), &json!("helper")));
    assert_eq!(summary["total_spans"], spans.len(), "every span, the later ones too");
    let detail_r = os.get(&format!("/traces/{trace_id}"), None).await;
    let root = &detail_r.body["tree"][0];
    let children: Vec<&str> = root["spans"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(
        children,
        ["OpenAIChat.invoke", "search_knowledge_base", "OpenAIChat.invoke", "MemoryManager.run"],
        "{}",
        detail_r.body
    );
    assert_eq!(root["spans"][1]["spans"][0]["type"], "RETRIEVER");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_call_is_a_tool_span_naming_its_server() {
    let Some(entry) = agno_testkit::services::mcp_reference_server("MCP tool call spans", "server-everything") else {
        return;
    };
    let provider = FakeProvider::start().await.unwrap();
    let tools = format!(
        "{{ toolkit = \"mcp\", command = \"node {}\", args = [\"stdio\"], include_tools = [\"get-sum\"], tool_name_prefix = \"ev_\" }}",
        entry.display()
    );
    let toml = format!(
        "[db]\nurl = \"{}\"\n[tracing]\nenabled = true\n[[agents]]\nid = \"helper\"\nname = \"Helper\"\ntools = [{tools}]\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        common::sqlite_url("traces-mcp"),
        provider.base_url()
    );
    let os = TestOs::start(config(&toml)).await;
    provider.push_all([Scripted::tool_call("ev_get-sum", r#"{"a": 20, "b": 22}"#), Scripted::text("42")]);
    let r = os.post_form("/agents/helper/runs", &[("message", "20 + 22?"), ("stream", "false")], None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let (_, spans) = trace_with(&os, r.body["run_id"].as_str().unwrap(), "ev_get-sum").await;
    let call = span(&spans, "ev_get-sum");
    assert_eq!(parent(&spans, call), "Helper.run");
    assert_eq!(call.attribute("openinference.span.kind"), Some("TOOL"));
    assert_eq!(call.attribute("mcp.method.name"), Some("tools/call"));
    assert_eq!(call.attribute("gen_ai.tool.name"), Some("get-sum"), "the tool's name on the server");
    assert_eq!(call.attribute("network.transport"), Some("pipe"));
    assert_eq!(call.attribute("mcp.server.command"), Some("node"));
    assert_eq!(call.attribute("output.value"), Some("The sum of 20 and 22 is 42."));
    assert_eq!(call.status_code, "OK");
}

#[tokio::test]
async fn a_schedule_firing_is_traced_as_its_run_for_the_schedules_owner() {
    let toml = format!(
        "[db]\nurl = \"{}\"\n[auth]\nmode = \"jwt\"\nverification_keys = [\"{SECRET}\"]\nuser_isolation = true\n\
         [tracing]\nenabled = true\n[queue]\npoll_interval_ms = 20\n\
         [scheduler]\nenabled = true\npoll_interval_seconds = 0.05\nrun_poll_interval_ms = 20\n\
         [[agents]]\nid = \"echo\"\nname = \"Echo\"\nmodel = \"test\"\n",
        common::sqlite_url("traces-schedule")
    );
    let os = TestOs::start(config(&toml)).await;
    let ann = token("ann", &["schedules:read", "schedules:write", "agents:run", "traces:read"]);
    let body = json!({
        "name": "nightly", "cron_expr": "0 3 * * *", "endpoint": "/agents/echo/runs",
        "payload": {"message": "report please", "user_id": "mallory"},
    });
    let r = os.post_json("/schedules", &body, Some(&ann)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let fired =
        os.post_json(&format!("/schedules/{}/trigger", r.body["id"].as_str().unwrap()), &json!({}), Some(&ann)).await;
    assert_eq!((fired.status, &fired.body["status"]), (200, &json!("success")), "{}", fired.body);
    let run_id = fired.body["run_id"].as_str().unwrap();

    let traces = traces_of_run_as(&os, run_id, 1, Some(&ann)).await;
    assert_eq!(traces.len(), 1, "one trace per firing: {traces:?}");
    let trace = &traces[0];
    assert_eq!((&trace["name"], &trace["agent_id"]), (&json!("Echo.run"), &json!("echo")));
    assert_eq!(trace["user_id"], "ann", "the schedule's owner, not the payload's user");
    assert_eq!(trace["session_id"], fired.body["session_id"]);
    assert_eq!(trace["input"], "report please");
    let mine = os.get(&format!("/traces?run_id={run_id}"), Some(&ann)).await;
    assert_eq!(mine.body["meta"]["total_count"], 1, "{}", mine.body);
    let bob = token("bob", &["traces:read"]);
    let theirs = os.get(&format!("/traces?run_id={run_id}"), Some(&bob)).await;
    assert_eq!(theirs.body["meta"]["total_count"], 0, "{}", theirs.body);
}
