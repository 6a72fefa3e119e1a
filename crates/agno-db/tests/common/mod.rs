//! What several agno-db test binaries share.

/// The keys of a run row, in order, as Python Agno writes one to JSON files and to Redis.
pub(crate) const RUN_ROW_KEYS: [&str; 13] = [
    "run_id",
    "session_id",
    "run_type",
    "agent_id",
    "team_id",
    "workflow_id",
    "user_id",
    "parent_run_id",
    "status",
    "run_index",
    "run_data",
    "created_at",
    "updated_at",
];

/// Memory `id` of `user` with `text`, about animals, written by agent `a1`.
pub(crate) fn memory(id: &str, user: Option<&str>, text: &str) -> agno_core::UserMemory {
    let mut m = agno_core::UserMemory::new(text, user);
    m.memory_id = Some(id.to_owned());
    m.topics = Some(vec!["animals".to_owned()]);
    m.agent_id = Some("a1".to_owned());
    m
}

/// The memory exchange with Python Agno, on any store: `seen` is what Python read of memory
/// `rs-1` (`bob`'s, `written` by agno-rs) before it rewrote its text and wrote memory `py-1` (of
/// `ann`); agno-rs then reads both back with their owners enforced, and `bob` cannot take `py-1`.
pub(crate) async fn assert_memories_shared_with_python(
    db: &dyn agno_core::MemoryStore,
    seen: &serde_json::Value,
    written: &agno_core::UserMemory,
) {
    use serde_json::json;
    assert_eq!(seen["raw"]["memory"], json!("rust memory"));
    assert_eq!(seen["raw"]["topics"], json!(["animals"]));
    assert_eq!(seen["raw"]["feedback"], json!("good"));
    assert_eq!(seen["raw"]["updated_at"], json!(written.updated_at.unwrap()));
    assert_eq!(seen["other_user"], json!(true));
    assert_eq!(seen["listed"][1], json!(1));
    assert_eq!(seen["listed"][0][0]["memory_id"], json!("rs-1"));
    assert_eq!(seen["topics"], json!(["animals"]));
    assert_eq!(seen["stats"][1], json!(1));
    assert_eq!(seen["stats"][0][0]["user_id"], json!("bob"));

    // What Python wrote and changed reads back.
    let edited = db.get_user_memory("rs-1", Some("bob")).await.unwrap().unwrap();
    assert_eq!(edited.memory, "rust memory, edited by python");
    assert_eq!(edited.created_at, Some(200));
    let theirs = db.get_user_memory("py-1", Some("ann")).await.unwrap().unwrap();
    assert_eq!(theirs.memory, "from python");
    assert_eq!(theirs.topics, Some(vec!["py".to_owned()]));
    assert_eq!((theirs.input.as_deref(), theirs.agent_id.as_deref()), (Some("hello"), Some("py-agent")));
    assert_eq!(theirs.created_at, Some(100));
    assert!(theirs.updated_at.is_some());
    assert!(db.get_user_memory("py-1", Some("bob")).await.unwrap().is_none());
    let err = db.upsert_user_memory(&memory("py-1", Some("bob"), "hijacked")).await.unwrap_err();
    assert_eq!(err.kind(), agno_core::DbErrorKind::Conflict);
    let all = db.get_user_memories(&agno_core::MemoryQuery::default()).await.unwrap();
    assert_eq!(all.total, 2);
    assert_eq!(db.get_all_memory_topics(None).await.unwrap(), ["animals", "py"]);
    assert!(db.delete_user_memory("py-1", Some("ann")).await.unwrap());
}
