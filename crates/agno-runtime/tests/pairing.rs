//! Property: whatever mix of tool calls, tool failures, bad arguments and cancellations a run
//! goes through, the stored run pairs every tool call with exactly one tool result.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agno_core::{Db, Model, ModelResponse, Role, RunStatus, ToolCall, ToolError, tool_calls_paired};
use agno_db::InMemoryDb;
use agno_models::FunctionModel;
use agno_runtime::{Agent, RunRequest};
use agno_tools::Function;
use proptest::prelude::*;

#[derive(Debug, Clone, Copy)]
enum Call {
    Ok,
    Fails,
    BadArgs,
    Unknown,
    Hangs,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {
    n: i64,
}

fn call_strategy() -> impl Strategy<Value = Call> {
    prop_oneof![Just(Call::Ok), Just(Call::Fails), Just(Call::BadArgs), Just(Call::Unknown), Just(Call::Hangs)]
}

fn script_strategy() -> impl Strategy<Value = Vec<Vec<Call>>> {
    prop::collection::vec(prop::collection::vec(call_strategy(), 1..4), 0..4)
}

fn run_script(script: Vec<Vec<Call>>, case: usize) -> (RunStatus, Vec<agno_core::Message>, usize) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async move {
        let hang_started = Arc::new(tokio::sync::Notify::new());
        let turn = Arc::new(AtomicUsize::new(0));
        let script = Arc::new(script);
        let (s, t) = (Arc::clone(&script), Arc::clone(&turn));
        let model: Arc<dyn Model> = Arc::new(FunctionModel::new(move |req| {
            // Each model turn after a user or tool message plays the next batch of the script.
            assert!(matches!(req.messages.last().map(|m| m.role), Some(Role::User | Role::Tool)));
            let i = t.fetch_add(1, Ordering::SeqCst);
            let Some(batch) = s.get(i) else {
                return Ok(ModelResponse { content: "done".into(), ..Default::default() });
            };
            let tool_calls = batch
                .iter()
                .enumerate()
                .map(|(j, c)| {
                    let id = format!("call_{i}_{j}");
                    match c {
                        Call::Ok => ToolCall::new(id, "ok", r#"{"n": 1}"#),
                        Call::Fails => ToolCall::new(id, "fails", r#"{"n": 1}"#),
                        Call::BadArgs => ToolCall::new(id, "ok", r#"{"n": "#),
                        Call::Unknown => ToolCall::new(id, "missing", "{}"),
                        Call::Hangs => ToolCall::new(id, "hangs", r#"{"n": 1}"#),
                    }
                })
                .collect();
            Ok(ModelResponse { tool_calls, ..Default::default() })
        }));
        let hs = Arc::clone(&hang_started);
        let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
        let agent = Agent::builder(model)
            .function(Function::new("ok", "Works.", |a: Args| async move { Ok(a.n) }))
            .function(Function::new("fails", "Fails.", |_: Args| async move {
                Err::<i64, _>(ToolError::execution("it broke"))
            }))
            .function(Function::new("hangs", "Hangs.", move |_: Args| {
                let hs = Arc::clone(&hs);
                async move {
                    hs.notify_one();
                    std::future::pending::<()>().await;
                    Ok(0)
                }
            }))
            .db(Arc::clone(&db))
            .build()
            .unwrap();
        let run_id = format!("prop-{case}-{}", agno_core::new_id());
        let has_hang = script.iter().flatten().any(|c| matches!(c, Call::Hangs));
        let task = tokio::spawn({
            let agent = agent.clone();
            let run_id = run_id.clone();
            async move { agent.arun(RunRequest::new("go").run_id(run_id)).await }
        });
        if has_hang {
            tokio::time::timeout(Duration::from_secs(20), hang_started.notified()).await.unwrap();
            Agent::cancel_run(&run_id);
        }
        let out = tokio::time::timeout(Duration::from_secs(20), task).await.unwrap().unwrap().unwrap();
        let stored = db.get_run(&run_id, None).await.unwrap().unwrap();
        let results = stored.tools.iter().flatten().filter(|t| t.result.is_some()).count();
        let executions = stored.tools.iter().flatten().count();
        assert_eq!(results, executions, "every tool execution has a result");
        assert_eq!(out.status, stored.status);
        (stored.status, stored.messages.unwrap_or_default(), executions)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_stored_tool_call_is_paired_with_a_result(script in script_strategy()) {
        let has_hang = script.iter().flatten().any(|c| matches!(c, Call::Hangs));
        let (status, messages, _) = run_script(script, 0);
        prop_assert!(tool_calls_paired(&messages), "unpaired calls in {messages:#?}");
        let expected = if has_hang { RunStatus::Cancelled } else { RunStatus::Completed };
        prop_assert_eq!(status, expected);
    }
}

proptest! {
    #[test]
    fn pairing_repairs_any_message_sequence(ops in prop::collection::vec(0u8..5, 0..30)) {
        use agno_core::{Message, pair_tool_calls};
        let mut messages = Vec::new();
        let mut n = 0;
        for op in ops {
            n += 1;
            match op {
                0 => messages.push(Message::user("u")),
                1 => messages.push(Message::assistant("a", vec![])),
                2 => messages.push(Message::assistant("", vec![ToolCall::new(format!("c{n}"), "t", "{}"), ToolCall::new(format!("d{n}"), "t", "{}")])),
                3 => messages.push(Message::tool_result(format!("c{}", n - 1), "t", "r", false)),
                _ => messages.push(Message::tool_result("orphan", "t", "r", false)),
            }
        }
        pair_tool_calls(&mut messages);
        prop_assert!(tool_calls_paired(&messages));
    }
}
