//! Agent features beyond the core loop: pre/post hooks, tool hooks, the reasoning model, past
//! session search, whole-run retries, system message assembly and removed v2 options.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agno_core::{
    Db, Model, ModelError, ModelErrorKind, ModelRequest, ModelResponse, Role, RunInput, RunOutput, RunStatus, ToolCall,
    ToolContext, ToolError,
};
use agno_db::InMemoryDb;
use agno_models::FunctionModel;
use agno_runtime::{Agent, HookError, PostHook, PreHook, RetryConfig, RunError, RunRequest};
use agno_tools::{Function, Next, ToolHook};
use async_trait::async_trait;
use serde_json::{Map, Value, json};

fn recording_model(seen: Arc<Mutex<Vec<ModelRequest>>>, answer: &'static str) -> Arc<dyn Model> {
    Arc::new(FunctionModel::new(move |req| {
        seen.lock().unwrap().push(req.clone());
        Ok(ModelResponse { content: answer.to_owned(), ..Default::default() })
    }))
}

#[derive(Debug)]
struct Redact;

#[async_trait]
impl PreHook for Redact {
    fn name(&self) -> &str {
        "redact"
    }
    async fn run(&self, input: &mut RunInput) -> Result<(), HookError> {
        let text = input.as_text();
        if text.contains("forbidden") {
            return Err(HookError("input mentions a forbidden topic".to_owned()));
        }
        *input = RunInput::text(text.replace("secret", "[redacted]"));
        Ok(())
    }
}

#[derive(Debug)]
struct Shout;

#[async_trait]
impl PostHook for Shout {
    fn name(&self) -> &str {
        "shout"
    }
    async fn run(&self, output: &mut RunOutput) -> Result<(), HookError> {
        output.content = Some(Value::String(output.content_text().to_uppercase()));
        Ok(())
    }
}

#[tokio::test]
async fn pre_hooks_rewrite_or_refuse_input_and_post_hooks_rewrite_output() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let agent = Agent::builder(recording_model(Arc::clone(&seen), "fine"))
        .pre_hook(Arc::new(Redact))
        .post_hook(Arc::new(Shout))
        .db(Arc::clone(&db))
        .build()
        .unwrap();
    let out = agent.arun("my secret plan").await.unwrap();
    assert_eq!(out.content_text(), "FINE");
    assert_eq!(out.input.as_ref().unwrap().as_text(), "my [redacted] plan");
    let sent = seen.lock().unwrap()[0].messages.last().unwrap().content_text().unwrap().to_owned();
    assert_eq!(sent, "my [redacted] plan");

    let err = agent.arun("a forbidden topic").await.unwrap_err();
    assert!(matches!(&err, RunError::Hook { hook, .. } if hook == "redact"), "{err}");
    assert_eq!(err.run().unwrap().status, RunStatus::Error);
    assert_eq!(seen.lock().unwrap().len(), 1, "a refused run never reaches the model");
    let stored = db.get_run(err.run().unwrap().id(), None).await.unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::Error);
}

#[derive(Debug)]
struct DoubleArgs {
    calls: Arc<AtomicUsize>,
}

#[async_trait]
impl ToolHook for DoubleArgs {
    async fn around(
        &self,
        _tool: &str,
        mut args: Map<String, Value>,
        ctx: ToolContext,
        next: Next<'_>,
    ) -> Result<String, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some(n) = args.get("n").and_then(Value::as_i64) {
            args.insert("n".to_owned(), json!(n * 2));
        }
        let out = next.run(args, ctx).await?;
        Ok(format!("<{out}>"))
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct N {
    n: i64,
}

#[tokio::test]
async fn tool_hooks_wrap_every_call_as_middleware() {
    let calls = Arc::new(AtomicUsize::new(0));
    let model: Arc<dyn Model> = Arc::new(FunctionModel::new(|req| {
        Ok(if req.messages.last().unwrap().role == Role::User {
            ModelResponse { tool_calls: vec![ToolCall::new("c1", "echo", r#"{"n": 21}"#)], ..Default::default() }
        } else {
            ModelResponse {
                content: req.messages.last().unwrap().content_text().unwrap().to_owned(),
                ..Default::default()
            }
        })
    }));
    let agent = Agent::builder(model)
        .function(Function::new("echo", "Echo.", |a: N| async move { Ok(a.n) }))
        .tool_hook(Arc::new(DoubleArgs { calls: Arc::clone(&calls) }))
        .build()
        .unwrap();
    let out = agent.arun("go").await.unwrap();
    assert_eq!(out.content_text(), "<42>");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_reasoning_model_runs_first_and_its_thoughts_reach_the_main_model() {
    let reasoner: Arc<dyn Model> = Arc::new(FunctionModel::new(|_| {
        Ok(ModelResponse { reasoning: Some("think step by step".to_owned()), ..Default::default() })
    }));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent =
        Agent::builder(recording_model(Arc::clone(&seen), "42")).reasoning_model(reasoner).unwrap().build().unwrap();
    let out = agent.arun("hard question").await.unwrap();
    assert_eq!(out.reasoning_content.as_deref(), Some("think step by step"));
    let last = seen.lock().unwrap()[0].messages.last().unwrap().clone();
    assert_eq!(last.role, Role::Assistant);
    assert!(last.content_text().unwrap().contains("think step by step"));
}

#[tokio::test]
async fn past_session_tools_list_and_read_only_the_users_other_sessions() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let plain = Agent::builder("test").db(Arc::clone(&db)).build().unwrap();
    plain.arun(RunRequest::new("alpha topic").session_id("a1").user_id("ann")).await.unwrap();
    plain.arun(RunRequest::new("bob private").session_id("b1").user_id("bob")).await.unwrap();
    plain.arun(RunRequest::new("nobody's note").session_id("n1")).await.unwrap();

    // The model calls the tool named in the user's message with the arguments after it, then
    // answers with the tool's result.
    let model: Arc<dyn Model> = Arc::new(FunctionModel::new(|req| {
        let last = req.messages.last().unwrap();
        Ok(if last.role == Role::User {
            let text = last.content_text().unwrap();
            let (tool, args) = text.split_once(' ').unwrap_or((text, "{}"));
            ModelResponse { tool_calls: vec![ToolCall::new("c1", tool, args)], ..Default::default() }
        } else {
            ModelResponse { content: last.content_text().unwrap().to_owned(), ..Default::default() }
        })
    }));
    let agent = Agent::builder(model)
        .db(Arc::clone(&db))
        .search_past_sessions(true)
        .num_past_sessions_to_search(5)
        .build()
        .unwrap();
    let ask = |input: &str, session: &str, user: Option<&str>| {
        let mut req = RunRequest::new(input).session_id(session);
        if let Some(user) = user {
            req = req.user_id(user);
        }
        let agent = agent.clone();
        async move { agent.arun(req).await.unwrap().content_text() }
    };

    // ann sees her other session (not the current one, not bob's, not the user-less one).
    let listed: Value = serde_json::from_str(&ask("search_past_sessions", "a2", Some("ann")).await).unwrap();
    let ids: Vec<&str> = listed.as_array().unwrap().iter().map(|s| s["session_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["a1"], "{listed}");
    assert_eq!(listed[0]["runs"][0]["user"], "alpha topic", "{listed}");
    let read = ask(r#"read_past_session {"session_id":"a1"}"#, "a3", Some("ann")).await;
    assert!(read.starts_with("Session: a1") && read.contains("User: alpha topic"), "{read}");
    // ... and cannot read bob's or the user-less session by id.
    for other in ["b1", "n1"] {
        let read = ask(&format!(r#"read_past_session {{"session_id":"{other}"}}"#), "a3", Some("ann")).await;
        assert_eq!(read, "Session not found.");
    }
    // A run without a user sees only the sessions without a user.
    let listed: Value = serde_json::from_str(&ask("search_past_sessions", "n2", None).await).unwrap();
    let ids: Vec<&str> = listed.as_array().unwrap().iter().map(|s| s["session_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["n1"], "{listed}");
    let read = ask(r#"read_past_session {"session_id":"a1"}"#, "n3", None).await;
    assert_eq!(read, "Session not found.");

    let err = Agent::builder("test").search_past_sessions(true).build().unwrap_err();
    assert!(err.to_string().contains("needs a db"), "{err}");
}

#[tokio::test]
async fn retries_repeat_the_run_on_retryable_model_errors_only() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let a = Arc::clone(&attempts);
    let flaky: Arc<dyn Model> = Arc::new(FunctionModel::new(move |_| {
        if a.fetch_add(1, Ordering::SeqCst) < 2 {
            Err(ModelError::new(ModelErrorKind::Server, "overloaded"))
        } else {
            Ok(ModelResponse { content: "finally".to_owned(), ..Default::default() })
        }
    }));
    let retry = RetryConfig { retries: 2, delay_between_retries: Duration::from_millis(1), exponential_backoff: true };
    let agent = Agent::builder(flaky).retries(retry).build().unwrap();
    assert_eq!(agent.arun("go").await.unwrap().content_text(), "finally");
    assert_eq!(attempts.load(Ordering::SeqCst), 3);

    let refused = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&refused);
    let bad: Arc<dyn Model> = Arc::new(FunctionModel::new(move |_| {
        r.fetch_add(1, Ordering::SeqCst);
        Err(ModelError::new(ModelErrorKind::BadRequest, "bad request"))
    }));
    let agent = Agent::builder(bad).retries(retry).build().unwrap();
    assert!(matches!(agent.arun("go").await.unwrap_err(), RunError::Model { .. }));
    assert_eq!(refused.load(Ordering::SeqCst), 1, "non-retryable errors are not retried");
}

#[tokio::test]
async fn system_message_is_assembled_from_description_role_and_instructions() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::builder(recording_model(Arc::clone(&seen), "ok"))
        .name("Ada")
        .description("You are a careful assistant.")
        .role("Reviewer")
        .instructions(["Be brief.", "Cite sources."])
        .expected_output("A list.")
        .add_name_to_context(true)
        .markdown(true)
        .build()
        .unwrap();
    agent.arun("hi").await.unwrap();
    let system = seen.lock().unwrap()[0].messages[0].clone();
    assert_eq!(system.role, Role::System);
    let text = system.content_text().unwrap();
    for needle in [
        "You are a careful assistant.",
        "<your_role>\nReviewer\n</your_role>",
        "<instructions>\n- Be brief.\n- Cite sources.\n- Use markdown to format your answers.\n</instructions>",
        "Your name is: Ada.",
        "<expected_output>\nA list.\n</expected_output>",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
    assert_eq!(agent.id(), "ada");
}

#[test]
fn memory_options_without_a_db_are_refused_not_ignored() {
    let err = Agent::builder("test").update_memory_on_run(true).build().unwrap_err();
    let text = err.to_string();
    assert!(text.contains("update_memory_on_run") && text.contains("give the agent a db"), "{text}");
}

#[tokio::test(flavor = "current_thread")]
async fn blocking_tools_run_on_the_blocking_pool_not_the_executor() {
    // The blocking tool waits for a message that only the async tool can send. On a
    // single-threaded runtime this finishes only if the blocking tool is off the executor thread.
    let (tx, rx) = std::sync::mpsc::channel::<&'static str>();
    let rx = Arc::new(Mutex::new(rx));
    let blocking = Function::blocking("wait_blocking", "Blocks until signalled.", move |_: N| {
        let got = rx.lock().unwrap().recv_timeout(Duration::from_secs(30));
        got.map_err(|_| ToolError::execution("never signalled: the blocking tool ran on the executor"))
    });
    let tx = Arc::new(Mutex::new(tx));
    let signal = Function::new("signal", "Signals.", move |_: N| {
        let tx = Arc::clone(&tx);
        async move {
            tx.lock().unwrap().send("signalled").map_err(|_| ToolError::execution("receiver gone"))?;
            Ok("sent")
        }
    });
    let model: Arc<dyn Model> = Arc::new(FunctionModel::new(|req| {
        Ok(if req.messages.last().unwrap().role == Role::User {
            ModelResponse {
                tool_calls: vec![
                    ToolCall::new("c1", "wait_blocking", r#"{"n":1}"#),
                    ToolCall::new("c2", "signal", r#"{"n":1}"#),
                ],
                ..Default::default()
            }
        } else {
            ModelResponse { content: "done".to_owned(), ..Default::default() }
        })
    }));
    let agent = Agent::builder(model).function(blocking).function(signal).build().unwrap();
    let out = agent.arun("go").await.unwrap();
    let tools = out.tools.unwrap();
    assert_eq!(tools[0].result.as_deref(), Some("signalled"));
    assert_eq!(tools[1].result.as_deref(), Some("sent"));
}

#[tokio::test]
async fn toolkit_hitl_lists_and_dependencies_reach_the_tools() {
    let read_dep = Function::with_context("read_dep", "Reads a dependency.", |_: N, ctx: ToolContext| async move {
        Ok(ctx.dependencies.get("tenant").cloned().unwrap_or(Value::Null))
    });
    let guarded = Function::new("guarded", "Needs confirmation.", |a: N| async move { Ok(a.n) });
    let toolkit =
        agno_tools::Toolkit::new("Ops Tools").tool(read_dep).tool(guarded).requires_confirmation_tools(&["guarded"]);
    assert_eq!(toolkit.id(), "ops-tools");
    let model: Arc<dyn Model> = Arc::new(FunctionModel::new(|req| {
        Ok(if req.messages.last().unwrap().role == Role::User {
            ModelResponse {
                tool_calls: vec![
                    ToolCall::new("c1", "read_dep", "{\"n\":0}"),
                    ToolCall::new("c2", "guarded", "{\"n\":7}"),
                ],
                ..Default::default()
            }
        } else {
            ModelResponse { content: "done".to_owned(), ..Default::default() }
        })
    }));
    let agent = Agent::builder(model).toolkit(&toolkit).dependency("tenant", json!("acme")).build().unwrap();
    let paused = agent.arun("go").await.unwrap();
    assert_eq!(paused.status, RunStatus::Paused);
    let tools = paused.tools.as_ref().unwrap();
    assert_eq!(tools[0].result.as_deref(), Some("acme"));
    assert_eq!(tools[1].requires_confirmation, Some(true));
    assert_eq!(paused.active_requirements().len(), 1);
}

#[tokio::test]
async fn token_usage_is_accounted_in_run_metrics() {
    let agent = Agent::builder("test").build().unwrap();
    let out = agent.arun("count my tokens please").await.unwrap();
    let metrics = out.metrics.unwrap();
    assert!(metrics.input_tokens > 0 && metrics.output_tokens > 0);
    assert_eq!(metrics.total_tokens, metrics.input_tokens + metrics.output_tokens);
    assert_eq!(metrics.details["model"][0]["id"], "test");
}

/// The session's `session_metrics` add each run's tokens once: a run paused (and saved) then
/// continued is not counted twice, and the model appears once in the details however many
/// calls it served.
#[tokio::test]
async fn session_metrics_count_every_token_once_across_a_pause() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Noop {}
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let guarded = Function::new("guarded", "Needs confirmation.", |_: Noop| async { Ok("ok") }).requires_confirmation();
    let agent = Agent::builder("test").function(guarded).db(Arc::clone(&db)).build().unwrap();
    let paused = agent.arun(RunRequest::new("use the tool").session_id("m")).await.unwrap();
    assert_eq!(paused.status, RunStatus::Paused);
    let mut request = agno_runtime::ContinueRequest::from_paused(paused);
    request.requirements[0].confirm();
    let done = agent.acontinue_run(request).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    let after_first = agent.arun(RunRequest::new("plain").session_id("m")).await.unwrap();
    let run_total = done.metrics.as_ref().unwrap().total_tokens + after_first.metrics.as_ref().unwrap().total_tokens;

    let session = db.get_session("m", None, Some(0)).await.unwrap().unwrap();
    let stored = &session.session_data.as_ref().unwrap()["session_metrics"];
    assert_eq!(stored["total_tokens"], run_total, "{stored}");
    let details = stored["details"]["model"].as_array().unwrap();
    assert_eq!(details.len(), 1, "{details:?}");
    assert_eq!(details[0]["total_tokens"], run_total);
    assert!(stored.get("duration").is_none(), "a session has no duration: {stored}");
}
