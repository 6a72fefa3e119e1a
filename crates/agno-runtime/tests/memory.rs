//! User memories: the memory manager adds, updates and deletes a user's memories through its
//! tools (never another user's); `update_memory_on_run` runs it after each run, off the response
//! path; `enable_agentic_memory` gives the agent `update_user_memory`; `add_memories_to_context`
//! puts the user's memories (only theirs) in the system message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agno_core::{Db, MemoryQuery, Model, ModelRequest, ModelResponse, Role, ToolCall, UserMemory};
use agno_db::InMemoryDb;
use agno_models::FunctionModel;
use agno_runtime::memory::{MemoryError, MemoryManager, MemoryRetrieval, count_tokens};
use agno_runtime::{Agent, BuildError, MemoryConfig, RunRequest};
use serde_json::json;

fn model(f: impl Fn(&ModelRequest) -> ModelResponse + Send + Sync + 'static) -> Arc<dyn Model> {
    Arc::new(FunctionModel::new(move |req| Ok(f(req))))
}

fn text(t: &str) -> ModelResponse {
    ModelResponse { content: t.to_owned(), ..Default::default() }
}

fn calls(list: &[(&str, serde_json::Value)]) -> ModelResponse {
    ModelResponse {
        tool_calls: list
            .iter()
            .enumerate()
            .map(|(i, (n, a))| ToolCall::new(format!("m{i}"), *n, a.to_string()))
            .collect(),
        ..Default::default()
    }
}

fn system(req: &ModelRequest) -> String {
    req.messages.iter().find(|m| m.role == Role::System).and_then(|m| m.content_text()).unwrap_or_default().to_owned()
}

fn last_user(req: &ModelRequest) -> String {
    req.messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .and_then(|m| m.content_text())
        .unwrap_or_default()
        .to_owned()
}

/// A memory model: on the user's first message it records "User said: <message>" with topic
/// `facts`; when asked to forget, it deletes every memory it was shown.
fn memory_model() -> Arc<dyn Model> {
    model(memory_answer)
}

/// The memory manager's model: adds what the user said, deletes everything on "forget".
fn memory_answer(req: &ModelRequest) -> ModelResponse {
    if req.messages.iter().any(|m| m.role == Role::Tool) {
        return text("done");
    }
    let input = last_user(req);
    if input.contains("forget") {
        let ids: Vec<String> = system(req).lines().filter_map(|l| l.strip_prefix("ID: ").map(str::to_owned)).collect();
        return calls(&ids.iter().map(|id| ("delete_memory", json!({"memory_id": id}))).collect::<Vec<_>>());
    }
    calls(&[("add_memory", json!({"memory": format!("User said: {input}"), "topics": ["facts"]}))])
}

async fn memories(db: &Arc<dyn Db>, user: &str) -> Vec<UserMemory> {
    db.get_user_memories(&MemoryQuery { user_id: Some(user.to_owned()), ..Default::default() }).await.unwrap().memories
}

/// Waits (bounded) until `user` has `n` memories.
async fn wait_for(db: &Arc<dyn Db>, user: &str, n: usize) -> Vec<UserMemory> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = memories(db, user).await;
        if found.len() == n {
            return found;
        }
        assert!(Instant::now() < deadline, "{user} has {} memories, not {n}: {found:?}", found.len());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn the_memory_manager_adds_and_deletes_memories_of_one_user_only() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let manager = MemoryManager::new(memory_model(), Arc::clone(&db));
    manager.create_user_memories("I live in Lisbon", "ann", Some("helper"), None).await.unwrap();
    manager.create_user_memories("I like tea", "bob", None, Some("desk")).await.unwrap();
    let ann = memories(&db, "ann").await;
    assert_eq!(ann.len(), 1);
    assert_eq!(ann[0].memory, "User said: I live in Lisbon");
    assert_eq!(ann[0].topics.as_deref(), Some(&["facts".to_owned()][..]));
    assert_eq!(ann[0].agent_id.as_deref(), Some("helper"));
    assert_eq!(ann[0].input.as_deref(), Some("I live in Lisbon"));
    let bob = memories(&db, "bob").await;
    assert_eq!(bob[0].team_id.as_deref(), Some("desk"));

    // Forgetting reaches only the user's own memories: the model is shown only Ann's.
    manager.update_memory_task("forget everything", "ann", None).await.unwrap();
    assert!(memories(&db, "ann").await.is_empty());
    assert_eq!(memories(&db, "bob").await.len(), 1, "Bob's memory is untouched");

    // A memory id of another user cannot be changed through a user's tools.
    let bobs = bob[0].memory_id.clone().unwrap();
    let sneaky = MemoryManager::new(
        model(move |req| {
            if req.messages.iter().any(|m| m.role == Role::Tool) {
                let results: Vec<&str> =
                    req.messages.iter().filter(|m| m.role == Role::Tool).filter_map(|m| m.content_text()).collect();
                return text(&results.join(" | "));
            }
            calls(&[
                ("update_memory", json!({"memory_id": bobs, "memory": "hijacked"})),
                ("delete_memory", json!({"memory_id": bobs})),
            ])
        }),
        Arc::clone(&db),
    );
    let answer = sneaky.update_memory_task("change Bob's memory", "ann", None).await.unwrap();
    assert!(answer.contains("not found"), "{answer}");
    assert_eq!(memories(&db, "bob").await[0].memory, "User said: I like tea");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_memory_on_run_records_memories_after_the_run_off_the_response_path() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    // The memory model waits at the gate: the run must answer (and be stored) before it.
    let gate = Arc::new(agno_testkit::Gate::default());
    let held = Arc::clone(&gate);
    let memory = model(move |req| {
        held.wait();
        memory_answer(req)
    });
    let agent = Agent::builder(model(|_| text("hello")))
        .id("helper")
        .db(Arc::clone(&db))
        .memory_manager(MemoryManager::new(memory, Arc::clone(&db)))
        .update_memory_on_run(true)
        .build()
        .unwrap();
    let run = agent.arun(RunRequest::new("My name is Ann").user_id("ann")).await.unwrap();
    assert_eq!(run.content_text(), "hello");
    assert!(memories(&db, "ann").await.is_empty(), "the run answered before its memories were made");
    gate.open();
    let found = wait_for(&db, "ann", 1).await;
    assert_eq!(found[0].memory, "User said: My name is Ann");
    assert_eq!(found[0].agent_id.as_deref(), Some("helper"));
    // A run without a user files its memories under Agno's "default" user.
    agent.arun("I am anonymous").await.unwrap();
    assert_eq!(wait_for(&db, "default", 1).await[0].memory, "User said: I am anonymous");
}

#[tokio::test]
async fn memories_reach_the_system_message_of_their_user_only_and_agentic_memory_is_a_tool() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    for (user, memory) in [("ann", "Ann lives in Lisbon"), ("bob", "Bob likes tea")] {
        db.upsert_user_memory(&UserMemory {
            memory_id: Some(agno_core::new_id()),
            memory: memory.into(),
            user_id: Some(user.into()),
            ..Default::default()
        })
        .await
        .unwrap();
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let agent = Agent::builder(model(move |req| {
        log.lock().unwrap().push(system(req));
        if req.messages.iter().any(|m| m.role == Role::Tool) {
            text("noted")
        } else {
            calls(&[("update_user_memory", json!({"task": "remember that Ann owns a cat"}))])
        }
    }))
    .db(Arc::clone(&db))
    .memory_manager(MemoryManager::new(memory_model(), Arc::clone(&db)))
    .memory(MemoryConfig { add_memories_to_context: Some(true), enable_agentic_memory: true, ..Default::default() })
    .build()
    .unwrap();
    let run = agent.arun(RunRequest::new("hi").user_id("ann")).await.unwrap();
    assert_eq!(run.content_text(), "noted");
    let first = seen.lock().unwrap()[0].clone();
    assert!(first.contains("<memories_from_previous_interactions>\n- Ann lives in Lisbon\n"), "{first}");
    assert!(!first.contains("Bob"), "another user's memories never reach the model: {first}");
    let tool = &run.tools.unwrap()[0];
    assert_eq!(tool.tool_name.as_deref(), Some("update_user_memory"));
    assert_eq!(tool.result.as_deref(), Some("done"));
    let ann = memories(&db, "ann").await;
    assert!(ann.iter().any(|m| m.memory == "User said: remember that Ann owns a cat"), "{ann:?}");
    assert_eq!(memories(&db, "bob").await.len(), 1);

    // A user without memories is told so, as Agno words it.
    seen.lock().unwrap().clear();
    agent.arun(RunRequest::new("hi").user_id("cleo")).await.unwrap();
    assert!(seen.lock().unwrap()[0].contains("have not had any interactions with the user yet"));
}

#[tokio::test]
async fn memory_settings_need_a_db() {
    let err = Agent::builder(model(|_| text("x"))).update_memory_on_run(true).build().unwrap_err();
    assert!(matches!(err, BuildError::Invalid { .. }), "{err}");
    assert!(err.to_string().contains("give the agent a db"), "{err}");
}

/// Stores `texts` as `user`'s memories, updated at 100, 200, ... in order.
async fn seed(db: &Arc<dyn Db>, user: &str, texts: &[&str]) -> Vec<String> {
    let mut ids = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let id = format!("{user}-{i}");
        let at = 100 * (i64::try_from(i).unwrap() + 1);
        db.upsert_user_memory(&UserMemory {
            memory_id: Some(id.clone()),
            memory: (*text).into(),
            topics: Some(vec![format!("t{i}")]),
            user_id: Some(user.into()),
            agent_id: Some("helper".into()),
            created_at: Some(at),
            updated_at: Some(at),
            ..Default::default()
        })
        .await
        .unwrap();
        ids.push(id);
    }
    ids
}

fn texts(found: &[UserMemory]) -> Vec<&str> {
    found.iter().map(|m| m.memory.as_str()).collect()
}

#[tokio::test]
async fn memory_search_takes_the_newest_the_oldest_or_what_the_model_finds_for_one_user() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    seed(&db, "ann", &["Ann lives in Lisbon", "Ann owns a cat", "Ann plays chess"]).await;
    seed(&db, "bob", &["Bob likes tea"]).await;
    let prompts = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&prompts);
    // The search model answers with the ids of the memories mentioning the query's last word,
    // plus an id of another user and a made-up one (both must be ignored).
    let searcher = model(move |req| {
        let sys = system(req);
        log.lock().unwrap().push((sys.clone(), last_user(req)));
        let word = last_user(req).rsplit(' ').next().unwrap_or_default().to_owned();
        let mut ids: Vec<String> = Vec::new();
        let mut current = None;
        for line in sys.lines() {
            if let Some(id) = line.strip_prefix("ID: ") {
                current = Some(id.to_owned());
            } else if line.starts_with("Memory: ") && line.contains(&word) {
                ids.extend(current.clone());
            }
        }
        ids.extend(["bob-0".to_owned(), "made-up".to_owned()]);
        text(&format!("```json\n{}\n```", json!({ "memory_ids": ids })))
    });
    let manager = MemoryManager::new(searcher, Arc::clone(&db));

    let last = manager.search_user_memories(None, Some(2), MemoryRetrieval::LastN, "ann").await.unwrap();
    assert_eq!(texts(&last), ["Ann owns a cat", "Ann plays chess"]);
    let first = manager.search_user_memories(None, Some(2), MemoryRetrieval::FirstN, "ann").await.unwrap();
    assert_eq!(texts(&first), ["Ann lives in Lisbon", "Ann owns a cat"]);
    let all = manager.search_user_memories(None, None, MemoryRetrieval::LastN, "ann").await.unwrap();
    assert_eq!(all.len(), 3);

    let found =
        manager.search_user_memories(Some("who has a cat"), None, MemoryRetrieval::Agentic, "ann").await.unwrap();
    assert_eq!(texts(&found), ["Ann owns a cat"]);
    let (sys, user) = prompts.lock().unwrap()[0].clone();
    assert!(sys.contains("<user_memories>\nID: ann-0\nMemory: Ann lives in Lisbon\nTopics: t0\n"), "{sys}");
    assert!(!sys.contains("Bob"), "the model sees only ann's memories: {sys}");
    assert_eq!(user, "Return the IDs of the memories related to the following query: who has a cat");

    let err = manager.search_user_memories(None, None, MemoryRetrieval::Agentic, "ann").await.unwrap_err();
    assert!(matches!(err, MemoryError::QueryRequired), "{err}");
    // Garbage from the model finds nothing rather than failing.
    let garbage = MemoryManager::new(model(|_| text("no idea")), Arc::clone(&db));
    let none = garbage.search_user_memories(Some("cat"), None, MemoryRetrieval::Agentic, "ann").await.unwrap();
    assert!(none.is_empty());
}

#[tokio::test]
async fn optimization_summarizes_a_users_memories_into_one_and_a_preview_changes_nothing() {
    let db: Arc<dyn Db> = Arc::new(InMemoryDb::new());
    let old = seed(&db, "ann", &["Ann lives in Lisbon and works as a nurse", "Ann owns a cat named Tom"]).await;
    seed(&db, "bob", &["Bob likes tea"]).await;
    let asked = Arc::new(Mutex::new(String::new()));
    let log = Arc::clone(&asked);
    let summarizer = model(move |req| {
        *log.lock().unwrap() = last_user(req);
        text("  Ann, a nurse in Lisbon, owns a cat.  ")
    });
    let manager = MemoryManager::new(summarizer, Arc::clone(&db));

    let preview = manager.optimize_memories("ann", false).await.unwrap();
    assert_eq!(preview.memories_before, 2);
    assert_eq!(texts(&preview.memories), ["Ann, a nurse in Lisbon, owns a cat."]);
    assert!(!preview.applied);
    assert_eq!(memories(&db, "ann").await.len(), 2, "a preview stores nothing");
    assert_eq!(
        asked.lock().unwrap().as_str(),
        "Summarize these memories into a single summary:\n\nMemory 1: Ann lives in Lisbon and works as a nurse\n\n\
         Memory 2: Ann owns a cat named Tom"
    );

    let done = manager.optimize_memories("ann", true).await.unwrap();
    // Agno's fallback estimate: a quarter of each memory's characters.
    assert_eq!((done.tokens_before, done.tokens_after), (10 + 6, 8), "{done:?}");
    assert_eq!(count_tokens(&done.memories), 8);
    let stored = memories(&db, "ann").await;
    assert_eq!(texts(&stored), ["Ann, a nurse in Lisbon, owns a cat."]);
    let summary = &stored[0];
    assert_eq!(summary.topics.clone().unwrap(), ["t0", "t1"]);
    assert_eq!(summary.agent_id.as_deref(), Some("helper"), "kept: every memory had it");
    assert!(!old.contains(summary.memory_id.as_ref().unwrap()));
    assert_eq!(texts(&memories(&db, "bob").await), ["Bob likes tea"], "another user's memories are untouched");

    let err = manager.optimize_memories("cleo", true).await.unwrap_err();
    assert!(matches!(err, MemoryError::NoMemories(ref u) if u == "cleo"), "{err}");
}
