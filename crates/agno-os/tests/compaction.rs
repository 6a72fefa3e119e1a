//! Compaction end to end: a 500-run session folded through `POST .../sessions/{id}/compact`
//! keeps its newest runs, the next run's prompt carries the summary and none of the folded
//! messages, the stored session is untouched, and Python Agno 3.1 reads the fold back (its own
//! run in the session sends the same summary). Then the automatic fold past `compact_at_tokens`
//! (PostgreSQL) and bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use agno_testkit::{FakeProvider, Reply as Scripted};
use common::{PgSchema, TestOs, config, detail, sqlite_url};
use serde_json::Value;

const SUMMARY: &str = "## Goal\nAnswer the numbered questions.\n## Critical context\nquestions 0-494 answered";
const PREFIX: &str = "Summary of earlier conversation (compacted):\n\n";

fn model(provider: &FakeProvider) -> String {
    format!(
        "model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        provider.base_url()
    )
}

/// The OS config: agent `chat` (compacting as `compaction` says, or not at all) and `plain`.
fn os_config(db_url: &str, provider: &FakeProvider, compaction: &str, history: bool) -> String {
    let m = model(provider);
    format!(
        "[db]\nurl = \"{db_url}\"\n\
         [[agents]]\nid = \"chat\"\n{m}add_history_to_context = {history}\n{compaction}\n\
         [[agents]]\nid = \"plain\"\n{m}"
    )
}

/// The texts of the messages of the last request the provider got.
fn last_prompt(provider: &FakeProvider) -> Vec<(String, String)> {
    let last = provider.requests().into_iter().last().expect("a request");
    last.body["messages"]
        .as_array()
        .expect("chat messages")
        .iter()
        .map(|m| {
            (m["role"].as_str().unwrap_or_default().to_owned(), m["content"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

async fn run(os: &TestOs, agent: &str, session: &str, message: &str) -> Value {
    let form = [("message", message), ("stream", "false"), ("session_id", session), ("user_id", "alice")];
    let r = os.post_form(&format!("/agents/{agent}/runs"), &form, None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body
}

fn interop_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/agno_interop.py")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_run_session_folds_to_its_newest_runs_and_python_agno_reads_the_fold() {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Scripted::Echo));
    let url = sqlite_url("compaction-500");

    // 500 runs, written by an agent that sends no history (so writing them stays cheap).
    {
        let os = TestOs::start(config(&os_config(&url, &provider, "", false))).await;
        for i in 0..500 {
            run(&os, "chat", "long", &format!("question {i}")).await;
        }
    }

    let os = TestOs::start(config(&os_config(&url, &provider, "compaction = true", true))).await;
    provider.push(Scripted::text(SUMMARY));
    let before = provider.request_count();
    let r = os.post_json("/agents/chat/sessions/long/compact?user_id=alice", &Value::Null, None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let body = &r.body;
    assert_eq!((body["status"].as_str(), body["compacted"].as_bool()), (Some("compacted"), Some(true)), "{body:?}");
    let record = &body["record"];
    assert_eq!(record["messages_compacted"], 990, "495 runs of a question and an answer are folded");
    assert_eq!(record["summary"], SUMMARY);
    assert_eq!(record["archived"], true);
    // Sizes of what the model was sent: before, the run window (3 runs, as no threshold owns the
    // window); after, the summary and the 5 kept runs.
    let (before_tokens, after_tokens) =
        (record["tokens_before"].as_i64().unwrap(), record["tokens_after"].as_i64().unwrap());
    assert!(before_tokens > 0 && after_tokens > i64::try_from(SUMMARY.len() / 4).unwrap(), "{record:?}");
    assert!(body["message"].as_str().unwrap().starts_with("Compacted 990 messages ("), "{body:?}");
    assert!(body["metrics"]["details"]["compaction_model"].is_array(), "the summarizer's usage: {body:?}");
    // The summarizer read the folded transcript: the first question, not the kept ones.
    assert_eq!(provider.request_count(), before + 1, "one summarizer call");
    let asked = last_prompt(&provider);
    assert!(asked[0].1.starts_with("You maintain the running summary"), "{:?}", asked[0]);
    assert!(asked[1].1.contains("## user\n\nquestion 0\n\n## assistant\n\necho: question 0"), "{}", &asked[1].1[..200]);
    assert!(asked[1].1.contains("question 494") && !asked[1].1.contains("question 495"));

    // A second fold has nothing new before the same tail.
    let again = os.post_json("/agents/chat/sessions/long/compact?user_id=alice", &Value::Null, None).await;
    assert_eq!((again.status, again.body["status"].as_str()), (200, Some("already_compacted")), "{:?}", again.body);
    assert_eq!(again.body["compacted"], false);
    assert_eq!(provider.request_count(), before + 1, "a decline asks no model");

    // The next run sends the summary, then the 5 kept runs, then its question; none of the folded.
    provider.push(Scripted::text("after the fold"));
    run(&os, "chat", "long", "question 500").await;
    let prompt = last_prompt(&provider);
    let summary_at = prompt.iter().position(|(_, c)| c.starts_with(PREFIX)).expect("the summary is sent");
    let (role, content) = &prompt[summary_at];
    assert_eq!(role, "user");
    assert!(content.starts_with(&format!("{PREFIX}{SUMMARY}")), "{content}");
    assert!(content.contains("The full text of the folded conversation is stored and searchable."));
    let rest: Vec<&str> = prompt[summary_at + 1..].iter().map(|(_, c)| c.as_str()).collect();
    let expected: Vec<String> = (495..500)
        .flat_map(|i| [format!("question {i}"), format!("echo: question {i}")])
        .chain(["question 500".to_owned()])
        .collect();
    assert_eq!(rest, expected.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(!prompt.iter().any(|(_, c)| c == "question 0" || c == "question 494"), "no folded message is sent");
    let tools = &provider.requests().into_iter().last().unwrap().body["tools"];
    assert!(
        tools.as_array().is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "search_compacted_history")),
        "the folded messages can be searched: {tools:?}"
    );

    // Nothing stored changed: 501 runs, the new one without the summary.
    let db = agno_db::open(&url).await.unwrap();
    let session = db.get_session("long", Some("alice"), None).await.unwrap().unwrap();
    assert_eq!(session.runs().len(), 501, "every run stays stored");
    let newest = session.runs().last().unwrap();
    assert!(newest.messages().iter().all(|m| !m.content_text().unwrap_or_default().starts_with(PREFIX)));
    let folds = db.get_compactions("long", None).await.unwrap();
    assert_eq!(folds.len(), 1);
    assert!(folds[0].archived_messages.as_deref().unwrap().contains("## user\n\nquestion 17"));

    // Python Agno 3.1, on the same file, applies the same fold to its own run in the session.
    let Some(py) = agno_testkit::agno_python("Python Agno reads a fold agno-rs made") else { return };
    drop(os);
    provider.push(Scripted::text("python saw the fold"));
    let out = Command::new(&py)
        .arg(interop_script())
        .args(["compacted-run", url.trim_start_matches("sqlite://"), "long", "chat", &provider.base_url(), "alice"])
        .output()
        .unwrap();
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let read: Value = serde_json::from_str(stdout.lines().rev().find(|l| l.starts_with('{')).unwrap()).unwrap();
    assert_eq!(read["run"]["content"], "python saw the fold");
    assert_eq!(read["folds"].as_array().unwrap().len(), 1, "Python made no fold of its own");
    let prompt = last_prompt(&provider);
    let summary_at = prompt.iter().position(|(_, c)| c.starts_with(PREFIX)).expect("Python sends our summary");
    assert!(prompt[summary_at].1.starts_with(&format!("{PREFIX}{SUMMARY}")), "{:?}", prompt[summary_at]);
    let rest: Vec<&str> = prompt[summary_at + 1..].iter().map(|(_, c)| c.as_str()).collect();
    let mut want: Vec<&str> = expected[..expected.len() - 1].iter().map(String::as_str).collect();
    want.extend(["question 500", "after the fold", "question from python"]);
    assert_eq!(rest, want, "Python keeps the same tail, from the same anchor");
}

/// Past `compact_at_tokens`, a run folds before it calls the model: the fold is recorded with
/// the run's id, the summarizer's usage is in the run's metrics, and the run sends the summary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_the_threshold_folds_first_on_postgres() {
    let Some(pg) = PgSchema::new("compaction") else { return };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Scripted::Echo));
    let compaction =
        "compaction = { compact_at_tokens = 300, uncompacted_runs = 2, search_compacted_messages = false }";
    let os = TestOs::start(config(&os_config(&pg.url, &provider, compaction, true))).await;
    let long = "x".repeat(200);
    let mut folded_by = None;
    for i in 0..6 {
        let out = run(&os, "chat", "auto", &format!("turn {i} {long}")).await;
        if out["metrics"]["details"]["compaction_model"].is_array() {
            folded_by = Some((i, out["run_id"].as_str().unwrap().to_owned()));
            break;
        }
    }
    let (turn, run_id) = folded_by.expect("a run folded once the context passed 300 tokens");
    assert!(turn >= 2, "no fold before the context is over the threshold (turn {turn})");
    let db = agno_db::open(&pg.url).await.unwrap();
    let folds = db.get_compactions("auto", None).await.unwrap();
    assert_eq!(folds.len(), 1);
    assert_eq!(folds[0].run_id.as_deref(), Some(run_id.as_str()), "the fold is the run's");
    assert_eq!(folds[0].user_id.as_deref(), Some("alice"));
    let prompt = last_prompt(&provider);
    assert!(prompt.iter().any(|(_, c)| c.starts_with(PREFIX)), "the folding run sends the summary");
    assert!(!prompt.iter().any(|(_, c)| c.starts_with("turn 0 ")), "and not the first turn");
}

/// Unknown or foreign sessions are 404; a declined fold is 200 with the reason; nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compacting_bad_targets_is_refused_precisely() {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Scripted::Echo));
    let url = sqlite_url("compaction-bad");
    let os = TestOs::start(config(&os_config(&url, &provider, "compaction = true", true))).await;
    for i in 0..3 {
        run(&os, "chat", "short", &format!("q{i}")).await;
    }
    run(&os, "plain", "plains", "hello").await;
    let asked = provider.request_count();

    let r = os.post_json("/agents/chat/sessions/nope/compact", &Value::Null, None).await;
    assert_eq!((r.status, detail(&r.body)), (404, "Session not found".to_owned()), "{:?}", r.body);
    let r = os.post_json("/agents/plain/sessions/short/compact", &Value::Null, None).await;
    assert_eq!((r.status, detail(&r.body)), (404, "Session not found".to_owned()), "another agent's session");
    let r = os.post_json("/agents/chat/sessions/short/compact?user_id=bob", &Value::Null, None).await;
    assert_eq!(r.status, 404, "another user's session: {:?}", r.body);
    let r = os.post_json("/agents/nobody/sessions/short/compact", &Value::Null, None).await;
    assert_eq!(r.status, 404, "{:?}", r.body);

    let r = os.post_json("/agents/chat/sessions/short/compact", &Value::Null, None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!((r.body["status"].as_str(), r.body["compacted"].as_bool()), (Some("nothing_to_fold"), Some(false)));
    assert!(r.body["message"].as_str().unwrap().contains("uncompacted_runs=5"), "{:?}", r.body);
    assert_eq!(r.body["record"], Value::Null);
    let r = os.post_json("/agents/plain/sessions/plains/compact", &Value::Null, None).await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("not_enabled")), "{:?}", r.body);
    assert_eq!(provider.request_count(), asked, "no summarizer was asked");
    drop(os);

    // Under user isolation, one user's session is another's 404, whatever user_id they name.
    let jwt = format!(
        "[auth]\nmode = \"jwt\"\nverification_keys = [{}]\nuser_isolation = true\n{}",
        serde_json::to_string(common::SECRET).unwrap(),
        os_config(&url, &provider, "compaction = true", true)
    );
    let os = TestOs::start(config(&jwt)).await;
    let scopes = ["agents:read", "agents:run"];
    let (alice, bob) = (common::token("alice", &scopes), common::token("bob", &scopes));
    for path in ["/agents/chat/sessions/short/compact", "/agents/chat/sessions/short/compact?user_id=alice"] {
        let r = os.post_json(path, &Value::Null, Some(&bob)).await;
        assert_eq!((r.status, detail(&r.body)), (404, "Session not found".to_owned()), "{path}: {:?}", r.body);
    }
    let r = os.post_json("/agents/chat/sessions/short/compact", &Value::Null, Some(&alice)).await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("nothing_to_fold")), "{:?}", r.body);
    assert_eq!(provider.request_count(), asked, "no summarizer was asked");
    let db = agno_db::open(&url).await.unwrap();
    assert!(db.get_compactions("short", None).await.unwrap().is_empty(), "nothing was written");
}

/// A fold far behind the history window (25 runs after it, the window being 3) is still found
/// and applied: the run reads back to the fold's anchor, and sends the summary and every run from
/// the anchor on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fold_far_behind_the_window_is_still_applied() {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Scripted::Echo));
    let url = sqlite_url("compaction-far");
    let compaction = "compaction = { compact_at_tokens = 0, uncompacted_runs = 1, search_compacted_messages = false }";
    let os = TestOs::start(config(&os_config(&url, &provider, compaction, true))).await;
    for i in 0..3 {
        run(&os, "chat", "far", &format!("q{i}")).await;
    }
    provider.push(Scripted::text("the first two questions"));
    let r = os.post_json("/agents/chat/sessions/far/compact", &Value::Null, None).await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("compacted")), "{:?}", r.body);
    for i in 3..28 {
        run(&os, "chat", "far", &format!("q{i}")).await;
    }
    let prompt = last_prompt(&provider);
    let at = prompt.iter().position(|(_, c)| c.starts_with(PREFIX)).expect("the summary is sent");
    assert_eq!(prompt[at].1, format!("{PREFIX}the first two questions"), "no search promised without the tool");
    let rest: Vec<&str> = prompt[at + 1..].iter().map(|(_, c)| c.as_str()).collect();
    let mut want: Vec<String> = (2..27).flat_map(|i| [format!("q{i}"), format!("echo: q{i}")]).collect();
    want.push("q27".into());
    assert_eq!(rest, want.iter().map(String::as_str).collect::<Vec<_>>());
}
