//! The control plane (`/ui`) in a real browser: headless Debian Chromium driven by playwright-core
//! (`scripts/browser/control_plane.mjs`) signs in, chats with an agent (a streamed answer with a
//! tool call; a call executed by the user, its result typed in the page; a team, its member's answer apart; a workflow and its steps), confirms a paused call
//! in the page, opens the run's trace and its waterfall,
//! resolves an approval as the admin, creates and triggers a schedule and sees its run, and
//! checks that a second user sees none of the first user's sessions, traces or approvals; on a
//! server with JWT auth and user isolation, storing in SQLite. Screenshots of each page are
//! written to `$CARGO_TARGET_DIR/ui-screenshots/` (or `AGNO_UI_SHOTS`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use agno_testkit::{FakeProvider, Reply as Scripted};
use common::{SECRET, TestOs, client_json, config, sqlite_url, token};

fn os_config(provider: &FakeProvider) -> String {
    let model = format!(
        "model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        provider.base_url()
    );
    format!(
        "[auth]\nmode = \"jwt\"\nverification_keys = [{secret}]\nuser_isolation = true\n\
         [db]\nurl = \"{db}\"\n[tracing]\nenabled = true\n\
         [[knowledge]]\nid = \"docs\"\nembedder = \"hash:64\"\n\
         [[agents]]\nid = \"helper\"\nname = \"Helper\"\n{model}\
         tools = [{{ toolkit = \"calculator\", include_tools = [\"add\", \"multiply\", \"square_root\"], requires_confirmation_tools = [\"add\"], external_execution_required_tools = [\"square_root\"] }}]\n\
         [[agents]]\nid = \"ops\"\nname = \"Ops\"\n{model}\
         tools = [{{ toolkit = \"calculator\", include_tools = [\"add\"], approval_required_tools = [\"add\"] }}]\n\
         [[agents]]\nid = \"writer\"\nname = \"Writer\"\nmodel = \"test\"\n\
         [[teams]]\nid = \"desk\"\nname = \"Desk\"\nmembers = [\"writer\"]\n{model}\
         [[workflows]]\nid = \"pipeline\"\nname = \"Pipeline\"\n\
         [[workflows.steps]]\nname = \"draft\"\nagent = \"writer\"\n\
         [[workflows]]\nid = \"reviewed\"\nname = \"Reviewed\"\n\
         [[workflows.steps]]\nname = \"publish\"\nagent = \"writer\"\n\
         human_review = {{ requires_confirmation = true, confirmation_message = \"Publish it?\", on_reject = \"cancel\" }}\n\
         [[workflows.steps]]\nname = \"tone\"\ntype = \"router\"\n\
         steps = [{{ name = \"formal\", agent = \"writer\" }}, {{ name = \"casual\", agent = \"writer\" }}]\n\
         human_review = {{ requires_user_input = true, user_input_message = \"Which tone?\" }}\n",
        secret = serde_json::to_string(SECRET).unwrap(),
        db = sqlite_url("control-plane-browser"),
    )
}

fn shots_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("AGNO_UI_SHOTS") {
        return PathBuf::from(dir);
    }
    let target = std::env::var("CARGO_TARGET_DIR")
        .map_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"), PathBuf::from);
    target.join("ui-screenshots")
}

#[tokio::test]
async fn the_control_plane_walked_in_a_browser() {
    let Some((chromium, playwright)) = agno_testkit::browser("the control plane browser test") else { return };
    let provider = FakeProvider::start().await.unwrap();
    // The model's turns, in the order the walk asks for them.
    provider.push_all([
        Scripted::tool_call("multiply", r#"{"a": 6, "b": 7}"#),
        Scripted::text("6 times 7 is 42"),
        Scripted::tool_call("add", r#"{"a": 2, "b": 3}"#),
        Scripted::text("2 plus 3 is 5"),
        Scripted::text("<img src=x onerror=\"window.__pwned = 1\"> onerror <b>not bold</b>"),
        Scripted::tool_call("square_root", r#"{"n": 81}"#),
        Scripted::text("the root is 9"),
        Scripted::ToolCalls {
            content: None,
            calls: vec![(
                "delegate_task_to_member".into(),
                r#"{"member_id": "writer", "task": "draft the news"}"#.into(),
            )],
        },
        Scripted::text("the desk is done"),
        Scripted::tool_call("add", r#"{"a": 1, "b": 1}"#),
        Scripted::text("scheduled answer"),
    ]);
    let os = TestOs::start(config(&os_config(&provider))).await;
    let root = token("root", &["agent_os:admin"]);
    let draft = serde_json::json!({"name": "Support Bot", "component_id": "support-bot", "component_type": "agent",
        "config": {"name": "Support Bot", "instructions": "Be kind.",
                   "model": {"provider": "openai-chat", "id": "gpt-4o-mini", "base_url": provider.base_url(), "api_key": "sk"}}});
    let created = os.post_json("/components", &draft, Some(&root)).await;
    assert_eq!(created.status, 201, "{}", created.body);
    // Version 1 published and served, version 2 a draft: the walk publishes 2, then rolls back to 1.
    let published = os
        .patch_json("/components/support-bot/configs/1", &serde_json::json!({"stage": "published"}), Some(&root))
        .await;
    assert_eq!(published.status, 200, "{}", published.body);
    let mut second = draft["config"].clone();
    second["instructions"] = serde_json::json!("Be kinder.");
    let v2 = os.post_json("/components/support-bot/configs", &serde_json::json!({"config": second}), Some(&root)).await;
    assert_eq!(v2.status, 201, "{}", v2.body);
    let user = [
        "agents:read",
        "agents:run",
        "teams:read",
        "teams:run",
        "workflows:read",
        "workflows:run",
        "sessions:read",
        "traces:read",
        "approvals:read",
        "memories:read",
    ];
    let shots = shots_dir();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/browser/control_plane.mjs");
    let mut node = tokio::process::Command::new("node");
    node.arg(script)
        .env("AGNO_BASE", &os.base)
        .env("ANN", token("ann", &user))
        .env("BOB", token("bob", &user))
        .env("ROOT", &root)
        .env("SHOTS", &shots)
        .env("CHROMIUM", chromium)
        .env("PLAYWRIGHT_CORE", playwright);
    let (walk, stderr) = client_json(node, Duration::from_secs(240)).await;
    assert_eq!(walk["ok"], true, "{walk}\n{stderr}");
    let seen = &walk["seen"];

    // The catalog's published agent is served beside the configuration's.
    assert_eq!(
        seen["homeAgents"],
        serde_json::json!(["Helper", "Ops", "Writer", "Support Bot", "Desk", "Pipeline", "Reviewed"]),
        "{walk}"
    );
    assert_eq!(seen["firstTab"], "Skip to content", "the first Tab reaches the skip link: {walk}");
    // Chat: the streamed answer and the tool call with its result.
    assert_eq!(seen["toolCall"], "multiply", "{walk}");
    assert!(seen["toolResult"].as_str().unwrap().contains("\"result\":42"), "{walk}");
    assert_eq!(seen["answer"], "6 times 7 is 42", "{walk}");
    // The paused call, confirmed in the page, ran.
    assert_eq!(seen["pausedTool"], "add", "{walk}");
    assert!(seen["confirmedResult"].as_str().unwrap().contains("\"result\":5"), "{walk}");
    // Markup from the user and the model is text.
    let escaped = &seen["escaped"];
    assert_eq!(escaped["userText"], "<b>bold</b><script>window.__typed = 1</script>", "{walk}");
    assert!(escaped["answerText"].as_str().unwrap().starts_with("<img src=x"), "{walk}");
    assert_eq!((escaped["images"].as_u64(), escaped["bolds"].as_u64()), (Some(0), Some(0)), "{walk}");
    assert_eq!(escaped["pwned"], false, "{walk}");
    // The result typed in the page reached the model as the call's result.
    assert_eq!(seen["externalAnswer"], "the root is 9", "{walk}");
    let told = provider.requests().iter().any(|r| {
        r.body["messages"].as_array().is_some_and(|m| {
            m.iter().any(|m| {
                m["role"] == "tool" && m["content"].as_str().is_some_and(|c| c.contains("9 (computed by hand)"))
            })
        })
    });
    assert!(told, "the model was sent the typed result");
    // A team's answer, with its member's in a box of its own; a workflow's step and answer.
    assert_eq!(seen["teamAnswer"], "the desk is done", "{walk}");
    assert!(seen["teamMember"].as_str().unwrap().contains("draft the news"), "{walk}");
    assert!(seen["workflowSteps"].as_array().unwrap().iter().any(|s| s.as_str().unwrap().contains("draft")), "{walk}");
    assert!(seen["workflowAnswer"].as_str().unwrap().contains("test model"), "{walk}");
    // A workflow's reviewed step confirmed in the page, then its router's route chosen there.
    assert_eq!(seen["reviewAsked"], "Publish it?", "{walk}");
    assert_eq!(seen["routeChoices"], serde_json::json!(["formal", "casual"]), "{walk}");
    assert!(seen["reviewedSteps"].as_array().unwrap().iter().any(|s| s == "Step started: casual"), "{walk}");
    // The session lists its runs; the run's trace has a waterfall of its spans.
    assert_eq!(seen["annSessions"], 1, "{walk}");
    assert_eq!(seen["sessionRuns"], 4, "the four turns of the conversation (a continued one is one run): {walk}");
    assert!(seen["waterfallBars"].as_u64().unwrap() >= 3, "the agent, its model calls and its tool: {walk}");
    let spans: Vec<&str> = seen["waterfallSpans"].as_array().unwrap().iter().filter_map(|s| s.as_str()).collect();
    assert!(spans.iter().any(|s| s.contains("multiply")), "the tool's span: {spans:?}");
    assert!(spans.iter().any(|s| s.contains("tokens in 4 · out 4")), "a model call's tokens: {spans:?}");
    // The admin saw the pending approval and approved it.
    assert_eq!(seen["pendingForAdmin"], 1, "{walk}");
    assert!(seen["approvedStatus"].as_str().unwrap().contains("approved"), "{walk}");
    // The schedule ran once, from the page.
    assert_eq!(seen["scheduleRun"], serde_json::json!(["success"]), "{walk}");
    // Knowledge uploaded in the page was ingested and is found.
    assert!(seen["knowledgeStatus"][0].as_str().unwrap().starts_with("completed"), "{walk}");
    assert!(seen["knowledgeHits"][0].as_str().unwrap().contains("opens at nine"), "{walk}");
    // The draft published from the page is served.
    assert_eq!(seen["componentStages"], serde_json::json!(["published", "published"]), "{walk}");
    assert_eq!(seen["componentServing"], "version 1", "rolled back from the page: {walk}");
    assert_eq!(seen["scheduleDisabled"], "no", "disabled from the page: {walk}");
    assert!(seen["queueJobs"].as_array().unwrap().iter().any(|s| s == "completed"), "the ingestion's job: {walk}");
    // Bob sees nothing of Ann's, and no admin section.
    assert!(!seen["bobNav"].as_array().unwrap().iter().any(|s| s == "Queue"), "{walk}");
    assert_eq!((seen["bobSessions"].as_u64(), seen["bobTraces"].as_u64()), (Some(0), Some(0)), "{walk}");
    assert_eq!(seen["bobApprovals"], 0, "{walk}");
    // A phone's width fits.
    assert_eq!((seen["phoneOverflow"].as_i64(), seen["phoneTraceOverflow"].as_i64()), (Some(0), Some(0)), "{walk}");
    assert!(seen["pageErrors"].is_null(), "no script error on any page: {walk}");
    let written = walk["screenshots"].as_array().unwrap();
    assert_eq!(written.len(), 19, "{walk}");
    for name in written {
        assert!(shots.join(name.as_str().unwrap()).exists(), "{name} was written");
    }
}
