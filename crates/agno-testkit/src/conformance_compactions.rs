//! Conformance cases of the compaction store (`agno_compactions`), run against every adapter by
//! [`crate::db_conformance!`].

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic, clippy::needless_pass_by_value)]

use std::sync::Arc;

use agno_core::{CompactionRecord, Db};

fn record(id: &str, session: &str, at: i64, archive: Option<&str>) -> CompactionRecord {
    CompactionRecord {
        compaction_id: id.to_owned(),
        session_id: session.to_owned(),
        run_id: Some(format!("run-{id}")),
        user_id: Some("alice".to_owned()),
        first_kept_message_id: Some(format!("msg-{id}")),
        summary: Some(format!("## Goal\nsummary {id} ✓")),
        archived_messages: archive.map(str::to_owned),
        messages_compacted: Some(12),
        tokens_before: Some(4000),
        tokens_after: Some(900),
        created_at: at,
    }
}

/// Records round-trip with every field, read newest first per session (at most `limit`); a
/// second write of an id changes nothing; the archive search matches any term, ignoring case,
/// in this session only; records go with their session.
pub async fn compactions_round_trip_search_and_cascade(db: Arc<dyn Db>) {
    let first = record("c1", "s1", 100, Some("## user\n\nThe build hash is 9F3C"));
    let second = record("c2", "s1", 200, Some("## assistant\n\nrotation window: 30 days"));
    let other = record("c3", "s2", 150, Some("## user\n\nthe build hash is elsewhere"));
    let bare = record("c4", "s1", 50, None);
    for r in [&first, &second, &other, &bare] {
        db.upsert_compaction(r).await.expect("stored");
    }
    let changed = CompactionRecord { summary: Some("rewritten".into()), ..first.clone() };
    db.upsert_compaction(&changed).await.expect("a second write is not an error");
    let s1 = db.get_compactions("s1", None).await.expect("read");
    assert_eq!(s1, vec![second.clone(), first.clone(), bare.clone()], "newest first, every field, written once");
    assert_eq!(db.get_compactions("s1", Some(1)).await.expect("read"), vec![second.clone()]);
    assert!(db.get_compactions("nobody", None).await.expect("read").is_empty());

    let terms = |t: &[&str]| t.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let found = db.search_compactions("s1", &terms(&["BUILD HASH"]), 10).await.expect("search");
    assert_eq!(found, vec![first.clone()], "case-insensitive, this session only");
    let found = db.search_compactions("s1", &terms(&["hash", "Rotation"]), 10).await.expect("search");
    assert_eq!(found, vec![second.clone(), first.clone()], "any term, newest first");
    assert_eq!(db.search_compactions("s1", &terms(&["hash", "rotation"]), 1).await.expect("search").len(), 1);
    assert!(db.search_compactions("s1", &terms(&["absent"]), 10).await.expect("search").is_empty());
    assert!(db.search_compactions("s1", &[], 10).await.expect("search").is_empty());

    // Deleting a session deletes its folds (they hold its messages verbatim), no one else's.
    let mut session = agno_core::AgentSession::new("s1");
    session.user_id = Some("alice".to_owned());
    db.upsert_session(&session, &agno_core::StateUpdate::default()).await.expect("session");
    assert!(db.delete_session("s1", Some("alice")).await.expect("deleted"));
    assert!(db.get_compactions("s1", None).await.expect("read").is_empty());
    assert_eq!(db.get_compactions("s2", None).await.expect("read"), vec![other]);
    assert_eq!(db.delete_compactions(&["s2".to_owned()]).await.expect("deleted"), 1);
    assert!(db.get_compactions("s2", None).await.expect("read").is_empty());
}
