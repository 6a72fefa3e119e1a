//! Session summaries: after a completed run the summary manager rewrites the session's summary
//! on its own task (the run's answer never waits for it), and the next run of the session gets it
//! in its system message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agno_core::{Db, Model, ModelRequest, ModelResponse, Role, SessionSummary};
use agno_db::InMemoryDb;
use agno_models::FunctionModel;
use agno_runtime::summary::SessionSummaryManager;
use agno_runtime::{Agent, BuildError, RunRequest};
use agno_testkit::Gate;
use serde_json::json;

fn system(req: &ModelRequest) -> String {
    req.messages.iter().find(|m| m.role == Role::System).and_then(|m| m.content_text()).unwrap_or_default().to_owned()
}

async fn wait_summary(db: &Arc<dyn Db>, session: &str, user: &str) -> SessionSummary {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(summary) = db.get_session(session, Some(user), Some(0)).await.unwrap().and_then(|s| s.summary) {
            return summary;
        }
        assert!(Instant::now() < deadline, "no summary on session {session}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_is_written_after_the_run_and_reaches_the_next_runs_context() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let gate = Arc::new(Gate::default());
    let summary_prompts = Arc::new(Mutex::new(Vec::new()));
    let run_systems = Arc::new(Mutex::new(Vec::new()));
    let (g, sp, rs) = (Arc::clone(&gate), Arc::clone(&summary_prompts), Arc::clone(&run_systems));
    let model: Arc<dyn Model> = Arc::new(FunctionModel::new(move |req| {
        let sys = system(req);
        if sys.contains("<conversation>") {
            // The summary request: held until the test has seen the run complete.
            g.wait();
            sp.lock().unwrap().push(sys);
            let summary = json!({"summary": "The user likes hiking in the Alps.", "topics": ["hiking"]});
            return Ok(ModelResponse { content: summary.to_string(), ..Default::default() });
        }
        rs.lock().unwrap().push(sys);
        Ok(ModelResponse { content: "Nice!".to_owned(), ..Default::default() })
    }));
    let agent = Agent::builder(model).db(Arc::clone(&db)).enable_session_summaries(true).build().unwrap();

    let run = agent.arun(RunRequest::new("I like hiking in the Alps").session_id("s1").user_id("ann")).await.unwrap();
    assert_eq!(run.content_text(), "Nice!");
    // The run is complete and stored while the summary model is still held at the gate.
    let stored = db.get_session("s1", Some("ann"), Some(0)).await.unwrap().unwrap();
    assert!(stored.summary.is_none());
    gate.open();
    let summary = wait_summary(&db, "s1", "ann").await;
    assert_eq!(summary.summary, "The user likes hiking in the Alps.");
    assert_eq!(summary.topics.as_deref(), Some(&["hiking".to_owned()][..]));
    assert!(summary.updated_at.is_some());
    let prompt = summary_prompts.lock().unwrap()[0].clone();
    assert!(
        prompt.contains("<conversation>User: I like hiking in the Alps\nAssistant: Nice!\n</conversation>"),
        "{prompt}"
    );

    // The next run of the session is told the summary (on by default with summaries).
    agent.arun(RunRequest::new("and now?").session_id("s1").user_id("ann")).await.unwrap();
    let second = run_systems.lock().unwrap()[1].clone();
    assert!(
        second.contains(
            "<summary_of_previous_interactions>\nThe user likes hiking in the Alps.\n</summary_of_previous_interactions>"
        ),
        "{second}"
    );
    // ... but not a run of another session.
    agent.arun(RunRequest::new("hello").session_id("s2").user_id("ann")).await.unwrap();
    assert!(!run_systems.lock().unwrap()[2].contains("summary_of_previous_interactions"));
    // The summary write kept the session's runs.
    let session = db.get_session("s1", Some("ann"), None).await.unwrap().unwrap();
    assert_eq!(session.runs().len(), 2);
}

#[tokio::test]
async fn a_summary_manager_summarizes_only_the_latest_runs_when_asked() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let plain = Agent::builder("test").db(Arc::clone(&db)).build().unwrap();
    for input in ["first question", "second question", "third question"] {
        plain.arun(RunRequest::new(input).session_id("s").user_id("ann")).await.unwrap();
    }
    let seen = Arc::new(Mutex::new(String::new()));
    let log = Arc::clone(&seen);
    let manager = SessionSummaryManager::new(Arc::new(FunctionModel::new(move |req| {
        *log.lock().unwrap() = system(req);
        Ok(ModelResponse { content: r#"{"summary": "three questions"}"#.to_owned(), ..Default::default() })
    })))
    .last_n_runs(1);
    let written = manager.refresh(db.as_ref(), "s", Some("ann")).await.unwrap().unwrap();
    assert_eq!(written.summary, "three questions");
    assert!(written.topics.is_none());
    let prompt = seen.lock().unwrap().clone();
    assert!(prompt.contains("User: third question") && !prompt.contains("second question"), "{prompt}");
    assert_eq!(wait_summary(&db, "s", "ann").await.summary, "three questions");
    // Another user's session is neither read nor written.
    assert!(manager.refresh(db.as_ref(), "s", Some("bob")).await.unwrap().is_none());
    // An answer that is not a summary writes nothing.
    let garbage = SessionSummaryManager::new(Arc::new(FunctionModel::new(|_| {
        Ok(ModelResponse { content: "I cannot".to_owned(), ..Default::default() })
    })));
    assert!(garbage.refresh(db.as_ref(), "s", Some("ann")).await.unwrap().is_none());
    assert_eq!(wait_summary(&db, "s", "ann").await.summary, "three questions");
}

#[test]
fn summaries_need_a_db() {
    let err = Agent::builder("test").enable_session_summaries(true).build().unwrap_err();
    assert!(matches!(err, BuildError::Invalid { .. }), "{err}");
    assert!(err.to_string().contains("give the agent a db"), "{err}");
}
