//! The storage conformance suite: the same cases run against every adapter.
//!
//! Each case takes the narrowest store it exercises (an `Arc<dyn Db>` coerces to any of them);
//! [`db_conformance!`](crate::db_conformance) expands into one `#[tokio::test]` per case for an
//! adapter, so failures are named by case and adapter.

// This module is a test suite: failing loudly on an unexpected error is its job.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic, clippy::needless_pass_by_value)]

use std::collections::HashSet;
use std::sync::Arc;

use agno_core::{
    AgentSession, Db, DbErrorKind, RunOutput, RunQuery, RunStatus, RunWrite, SessionQuery, SortOrder, StateUpdate,
};
use serde_json::{Map, Value, json};

fn session(id: &str, user: Option<&str>) -> AgentSession {
    let mut s = AgentSession::new(id);
    s.agent_id = Some("agent-1".to_owned());
    s.user_id = user.map(str::to_owned);
    s
}

fn run(id: &str, session_id: &str, created_at: i64) -> RunOutput {
    let mut r = RunOutput::new(id, session_id);
    r.agent_id = Some("agent-1".to_owned());
    r.created_at = created_at;
    r.status = RunStatus::Completed;
    r.content = Some(Value::String(format!("content of {id}")));
    r
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

async fn save_session(db: &Arc<dyn Db>, s: &AgentSession) {
    db.upsert_session(s, &StateUpdate::Replace).await.expect("upsert session");
}

/// Sessions round-trip with every field, unknown ones included; a missing session is `None`.
pub async fn session_round_trip(db: Arc<dyn Db>) {
    assert!(db.get_session("nope", None, None).await.expect("get").is_none());
    let mut s = session("s1", Some("u1"));
    s.session_data = Some(obj(json!({"session_state": {"a": 1}, "session_name": "first"})));
    s.metadata = Some(obj(json!({"tag": "x"})));
    s.agent_data = Some(obj(json!({"name": "A", "agent_id": "agent-1"})));
    s.extra.insert("team_data".to_owned(), json!({"k": "v"}));
    save_session(&db, &s).await;
    let got = db.get_session("s1", None, None).await.expect("get").expect("present");
    assert_eq!(got.session_data, s.session_data);
    assert_eq!(got.metadata, s.metadata);
    assert_eq!(got.agent_data, s.agent_data);
    assert_eq!(got.user_id.as_deref(), Some("u1"));
    assert_eq!(got.extra.get("team_data"), Some(&json!({"k": "v"})));
    assert_eq!(got.runs.as_deref().map(<[RunOutput]>::len), Some(0));
    assert_eq!(got.session_name(), Some("first"));
}

/// Saving a session never writes runs; runs come back from the runs table in order.
pub async fn runs_are_stored_apart_and_read_in_order(db: Arc<dyn Db>) {
    save_session(&db, &session("s1", None)).await;
    for (i, id) in ["r-c", "r-a", "r-b"].iter().enumerate() {
        let idx = db.upsert_run(&run(id, "s1", 100 + i as i64), "s1", None).await.expect("upsert run");
        assert_eq!(idx, i as i64, "run_index is assigned in insertion order");
    }
    let mut with_runs = db.get_session("s1", None, None).await.expect("get").expect("present");
    let ids: Vec<&str> = with_runs.runs().iter().map(RunOutput::id).collect();
    assert_eq!(ids, ["r-c", "r-a", "r-b"]);
    // Saving the session (even carrying runs) does not touch the runs.
    with_runs.runs = Some(Vec::new());
    save_session(&db, &with_runs).await;
    assert_eq!(db.get_session("s1", None, None).await.expect("get").expect("present").runs().len(), 3);
}

/// `run_index` is kept when a run is updated; the update is visible.
pub async fn run_update_keeps_its_index(db: Arc<dyn Db>) {
    save_session(&db, &session("s1", None)).await;
    let mut r0 = run("r0", "s1", 1);
    r0.status = RunStatus::Paused;
    assert_eq!(db.upsert_run(&r0, "s1", None).await.expect("upsert"), 0);
    assert_eq!(db.upsert_run(&run("r1", "s1", 2), "s1", None).await.expect("upsert"), 1);
    r0.status = RunStatus::Completed;
    r0.content = Some(json!("updated"));
    assert_eq!(db.upsert_run(&r0, "s1", None).await.expect("upsert"), 0);
    let got = db.get_run("r0", None).await.expect("get").expect("present");
    assert_eq!(got.status, RunStatus::Completed);
    assert_eq!(got.content, Some(json!("updated")));
    let ids: Vec<String> = db
        .get_session("s1", None, None)
        .await
        .expect("get")
        .expect("s")
        .runs()
        .iter()
        .map(|r| r.id().to_owned())
        .collect();
    assert_eq!(ids, ["r0", "r1"]);
}

/// `save_run_write` stores a run with its session (merging the state change, assigning the
/// run's index); a refused run (another user's) writes neither.
pub async fn run_writes_store_session_and_run_together(db: Arc<dyn Db>) {
    let save = |session: AgentSession, update: StateUpdate, run: RunOutput, user: Option<&'static str>| {
        let db = Arc::clone(&db);
        async move { db.save_run_write(RunWrite { session: &session, state: &update, run: &run, user_id: user }).await }
    };
    // A session carrying the state `{k: v}`, written as a change from no state: the second write
    // (of a process that never saw `a`) merges into what the first stored.
    let with_state = |id: &str, user: &str, k: &str, v: i64| {
        let mut s = session(id, Some(user));
        s.set_session_state(obj(json!({ k: v })));
        let update = StateUpdate::diff(&Map::new(), &obj(json!({ k: v })));
        (s, update)
    };
    let (s1, update) = with_state("s1", "u1", "a", 1);
    assert_eq!(save(s1, update, run("r0", "s1", 1), Some("u1")).await.expect("first write"), 0);
    let (s1, update) = with_state("s1", "u1", "b", 2);
    assert_eq!(save(s1, update, run("r1", "s1", 2), Some("u1")).await.expect("second write"), 1);
    let got = db.get_session("s1", None, None).await.expect("get").expect("stored");
    assert_eq!(got.session_state(), Some(&obj(json!({"a": 1, "b": 2}))));
    let ids: Vec<&str> = got.runs().iter().map(RunOutput::id).collect();
    assert_eq!(ids, ["r0", "r1"]);

    // r0 is u1's run: another user's write of it is refused, and the session of the refused
    // write is not written either.
    let (s2, update) = with_state("s2", "u2", "c", 3);
    let err = save(s2, update, run("r0", "s2", 3), Some("u2")).await.expect_err("another user's run");
    assert_eq!(err.kind(), DbErrorKind::Conflict, "{err}");
    assert!(db.get_session("s2", None, None).await.expect("get").is_none(), "the refused write's session");
    let r0 = db.get_run("r0", None).await.expect("get").expect("kept");
    assert_eq!(r0.session_id.as_deref(), Some("s1"));
    assert_eq!(r0.created_at, 1);
}

/// 96 concurrent run writes over four sessions, each merging its own state key and adding its
/// run's tokens to the session's metrics, with a refused write among every twelve (another
/// user's run id): every accepted run is stored with its own index, every key and every token
/// counted, and each refused write gets its conflict and leaves nothing (where the store commits
/// concurrent writes together, a refused write must not take its neighbours down, nor be
/// half-kept with them).
pub async fn concurrent_run_writes_with_their_sessions_lose_nothing(db: Arc<dyn Db>) {
    save_session(&db, &session("taken", Some("other"))).await;
    let mut theirs = run("theirs", "taken", 1);
    theirs.user_id = Some("other".to_owned());
    db.upsert_run(&theirs, "taken", Some("other")).await.expect("another user's run");
    let tasks: Vec<_> = (0..96u64)
        .map(|i| {
            let db = Arc::clone(&db);
            tokio::spawn(async move {
                let sid = format!("s{}", i % 4);
                let refused = i % 12 == 5;
                let id = if refused { "theirs".to_owned() } else { format!("r{i}") };
                let mut s = session(&sid, Some("u1"));
                let key = format!("k{i}");
                s.set_session_state(obj(json!({ key.clone(): i })));
                let tokens = agno_core::Metrics { input_tokens: 1, output_tokens: i, ..Default::default() };
                let update = StateUpdate::diff(&Map::new(), &obj(json!({ key: i }))).with_metrics(tokens);
                let mut r = run(&id, &sid, i64::try_from(i).expect("small"));
                r.user_id = Some("u1".to_owned());
                let written =
                    db.save_run_write(RunWrite { session: &s, state: &update, run: &r, user_id: Some("u1") }).await;
                (i, refused, written)
            })
        })
        .collect();
    let mut indexes: Vec<HashSet<i64>> = vec![HashSet::new(); 4];
    for t in tasks {
        let (i, refused, written) = t.await.expect("join");
        if refused {
            let err = written.expect_err("another user's run id");
            assert_eq!(err.kind(), DbErrorKind::Conflict, "write {i}: {err}");
        } else {
            indexes[usize::try_from(i % 4).expect("small")]
                .insert(written.unwrap_or_else(|e| panic!("write {i}: {e}")));
        }
    }
    for n in 0..4u64 {
        let sid = format!("s{n}");
        let got = db.get_session(&sid, None, None).await.expect("get").expect("stored");
        let accepted: Vec<u64> = (0..96u64).filter(|i| i % 4 == n && i % 12 != 5).collect();
        let keys: HashSet<String> = got.session_state().map(|m| m.keys().cloned().collect()).unwrap_or_default();
        assert_eq!(keys, accepted.iter().map(|i| format!("k{i}")).collect(), "{sid}: state keys");
        let metrics = got.session_data.as_ref().and_then(|d| d.get("session_metrics")).expect("metrics");
        assert_eq!(metrics["input_tokens"], json!(accepted.len()), "{sid}: one token per accepted run");
        assert_eq!(metrics["output_tokens"], json!(accepted.iter().sum::<u64>()), "{sid}: output tokens");
        assert_eq!(got.runs().len(), accepted.len(), "{sid}: runs");
        let n = usize::try_from(n).expect("small");
        assert_eq!(indexes[n].len(), accepted.len(), "{sid}: one index per run");
    }
    let theirs = db.get_run("theirs", None).await.expect("get").expect("kept");
    assert_eq!(theirs.session_id.as_deref(), Some("taken"), "the refused writes left another user's run alone");
}

/// `runs_limit` reads only the latest N runs, oldest first.
pub async fn runs_limit_reads_the_latest_runs(db: Arc<dyn Db>) {
    save_session(&db, &session("s1", None)).await;
    for i in 0..10 {
        db.upsert_run(&run(&format!("r{i}"), "s1", i), "s1", None).await.expect("upsert");
    }
    let s = db.get_session("s1", None, Some(3)).await.expect("get").expect("present");
    let ids: Vec<&str> = s.runs().iter().map(RunOutput::id).collect();
    assert_eq!(ids, ["r7", "r8", "r9"]);
}

/// `get_runs` filters and pages by cursor without gaps or duplicates.
pub async fn get_runs_filters_and_pages_by_cursor(db: Arc<dyn Db>) {
    save_session(&db, &session("s1", None)).await;
    save_session(&db, &session("s2", None)).await;
    for i in 0..7 {
        let mut r = run(&format!("a{i}"), "s1", 1000 + i % 3);
        if i == 3 {
            r.status = RunStatus::Error;
        }
        db.upsert_run(&r, "s1", None).await.expect("upsert");
    }
    db.upsert_run(&run("b0", "s2", 5), "s2", None).await.expect("upsert");
    for sort in [SortOrder::Asc, SortOrder::Desc] {
        let mut seen = Vec::new();
        let mut query = RunQuery { session_id: Some("s1".into()), limit: Some(3), sort, ..RunQuery::default() };
        loop {
            let page = db.get_runs(&query).await.expect("page");
            assert!(page.runs.len() <= 3);
            seen.extend(page.runs.iter().map(|r| (r.created_at, r.id().to_owned())));
            match page.next_cursor {
                Some(c) => query.cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(seen.len(), 7, "{sort:?}: {seen:?}");
        let unique: HashSet<_> = seen.iter().collect();
        assert_eq!(unique.len(), 7);
        let mut sorted = seen.clone();
        sorted.sort();
        if sort == SortOrder::Desc {
            sorted.reverse();
        }
        assert_eq!(seen, sorted);
    }
    let errors =
        db.get_runs(&RunQuery { status: Some(RunStatus::Error), ..RunQuery::default() }).await.expect("filter");
    assert_eq!(errors.runs.iter().map(RunOutput::id).collect::<Vec<_>>(), ["a3"]);
    let by_agent =
        db.get_runs(&RunQuery { agent_id: Some("agent-1".into()), ..RunQuery::default() }).await.expect("agent");
    assert_eq!(by_agent.runs.len(), 8);
}

/// Deleting runs and sessions; deleting a session deletes its runs.
pub async fn deletes_cascade_from_sessions_to_runs(db: Arc<dyn Db>) {
    save_session(&db, &session("s1", None)).await;
    save_session(&db, &session("s2", None)).await;
    for i in 0..3 {
        db.upsert_run(&run(&format!("r{i}"), "s1", i), "s1", None).await.expect("upsert");
    }
    db.upsert_run(&run("x", "s2", 1), "s2", None).await.expect("upsert");
    assert!(db.delete_run("r0", None).await.expect("delete"));
    assert!(!db.delete_run("r0", None).await.expect("delete again"));
    assert_eq!(db.delete_runs(&["r1".into(), "zz".into()], None).await.expect("delete"), 1);
    assert!(db.delete_session("s1", None).await.expect("delete"));
    assert!(db.get_run("r2", None).await.expect("get").is_none(), "runs go with their session");
    assert!(db.get_session("s1", None, None).await.expect("get").is_none());
    assert_eq!(db.delete_sessions(&["s2".into(), "s1".into()], None).await.expect("delete"), 1);
    assert!(db.get_run("x", None).await.expect("get").is_none());
}

/// Listing sessions filters, sorts and pages, counts the total, and never carries runs.
pub async fn session_listing_pages_without_run_bodies(db: Arc<dyn Db>) {
    for i in 0..5 {
        let mut s = session(&format!("s{i}"), Some(if i % 2 == 0 { "even" } else { "odd" }));
        s.created_at = Some(1000 + i);
        save_session(&db, &s).await;
        db.upsert_run(&run(&format!("r{i}"), &format!("s{i}"), i), &format!("s{i}"), s.user_id.as_deref())
            .await
            .expect("upsert");
    }
    let page = db
        .get_sessions(&SessionQuery { limit: Some(2), page: Some(1), ..SessionQuery::default() })
        .await
        .expect("list");
    assert_eq!(page.total, 5);
    assert_eq!(page.sessions.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), ["s4", "s3"]);
    assert!(page.sessions.iter().all(|s| s.runs.is_none()), "listing never reads runs");
    let page3 = db
        .get_sessions(&SessionQuery { limit: Some(2), page: Some(3), ..SessionQuery::default() })
        .await
        .expect("list");
    assert_eq!(page3.sessions.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), ["s0"]);
    let even = db
        .get_sessions(&SessionQuery {
            user_id: Some("even".into()),
            sort_order: SortOrder::Asc,
            ..SessionQuery::default()
        })
        .await
        .expect("list");
    assert_eq!(even.total, 3);
    assert_eq!(even.sessions.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), ["s0", "s2", "s4"]);
    let ranged = db
        .get_sessions(&SessionQuery {
            start_timestamp: Some(1001),
            end_timestamp: Some(1002),
            ..SessionQuery::default()
        })
        .await
        .expect("list");
    assert_eq!(ranged.total, 2);
}

/// A session search (`SessionQuery::filter`) gives the same sessions on every adapter, whether
/// the store compiles it to SQL or evaluates it in process: types, ids, names (case-insensitive,
/// `%` and `_` literal), times, IN, NOT and OR with SQL's NULL, within the caller's user scope.
pub async fn session_search_filters_in_the_store(db: Arc<dyn Db>) {
    use agno_core::{CompareOp, FilterExpr as Filter, FilterValue, SessionField as F};
    let make = |id: &str, user: Option<&str>, name: Option<&str>, at: i64, set: &dyn Fn(&mut AgentSession)| {
        let mut s = AgentSession::new(id);
        s.user_id = user.map(str::to_owned);
        if let Some(n) = name {
            s.session_data = Some(obj(json!({"session_name": n})));
        }
        s.created_at = Some(at);
        set(&mut s);
        s
    };
    let sessions = [
        make("a1", Some("alice"), Some("Q3 report_final"), 1000, &|s| s.agent_id = Some("writer".into())),
        make("a2", Some("bob"), Some("groceries 100%"), 2000, &|s| s.agent_id = Some("writer".into())),
        make("t1", Some("alice"), Some("Team sync"), 3000, &|s| s.team_id = Some("desk".into())),
        make("w1", None, None, 4000, &|s| s.workflow_id = Some("flow".into())),
    ];
    for s in &sessions {
        save_session(&db, s).await;
    }
    let text = |f: F, op: CompareOp, v: &str| Filter::Compare(f, op, FilterValue::Text(v.into()));
    let time = |op: CompareOp, at: f64| Filter::Compare(F::CreatedAt, op, FilterValue::Number(at));
    let cases: Vec<(Filter<F>, &[&str])> = vec![
        (text(F::SessionType, CompareOp::Eq, "team"), &["t1"]),
        (text(F::SessionName, CompareOp::Contains, "REPORT"), &["a1"]),
        (text(F::SessionName, CompareOp::StartsWith, "q3 report_"), &["a1"]),
        (text(F::SessionName, CompareOp::StartsWith, "q3 report%"), &[]),
        (text(F::SessionName, CompareOp::Contains, "100%"), &["a2"]),
        (text(F::SessionName, CompareOp::Contains, "_"), &["a1"]),
        (
            Filter::In(F::AgentId, vec![FilterValue::Text("writer".into()), FilterValue::Text("x".into())]),
            &["a1", "a2"],
        ),
        (Filter::Not(Box::new(text(F::UserId, CompareOp::Eq, "alice"))), &["a2"]),
        (Filter::And(vec![time(CompareOp::Gte, 2000.0), time(CompareOp::Lt, 4000.0)]), &["a2", "t1"]),
        (
            Filter::Or(vec![text(F::TeamId, CompareOp::Eq, "desk"), text(F::WorkflowId, CompareOp::Eq, "flow")]),
            &["t1", "w1"],
        ),
        (text(F::SessionId, CompareOp::Neq, "a1"), &["a2", "t1", "w1"]),
    ];
    for (filter, want) in cases {
        let q = SessionQuery { filter: Some(filter.clone()), sort_order: SortOrder::Asc, ..SessionQuery::default() };
        let found = db.get_sessions(&q).await.expect("search");
        let ids: Vec<&str> = found.sessions.iter().map(|s| s.session_id.as_str()).collect();
        assert_eq!(ids, want, "{filter:?}");
        assert_eq!(found.total, want.len() as u64, "{filter:?}");
    }
    // Within a user's scope the filter never reaches another user's sessions.
    let q = SessionQuery {
        user_id: Some("alice".into()),
        filter: Some(text(F::UserId, CompareOp::Neq, "nobody")),
        sort_order: SortOrder::Asc,
        ..SessionQuery::default()
    };
    let found = db.get_sessions(&q).await.expect("search");
    assert_eq!(found.sessions.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), ["a1", "t1"]);
}

/// The largest limits a client can send (`usize::MAX`, pages after the first) are answered like
/// any other limit, never a panic or an error.
pub async fn oversized_limits_are_answered(db: Arc<dyn Db>) {
    let s = session("huge", Some("u"));
    save_session(&db, &s).await;
    db.upsert_run(&run("huge-r0", "huge", 0), "huge", Some("u")).await.expect("upsert");
    let all = db
        .get_sessions(&SessionQuery { limit: Some(usize::MAX), page: Some(1), ..SessionQuery::default() })
        .await
        .expect("list with the largest limit");
    assert_eq!((all.total, all.sessions.len()), (1, 1));
    let beyond = db
        .get_sessions(&SessionQuery { limit: Some(usize::MAX), page: Some(2), ..SessionQuery::default() })
        .await
        .expect("a page past the end");
    assert!(beyond.sessions.is_empty());
    let got = db.get_session("huge", None, Some(usize::MAX)).await.expect("read").expect("session");
    assert_eq!(got.runs().len(), 1);
    let runs = db.get_runs(&RunQuery { limit: Some(usize::MAX), ..RunQuery::default() }).await.expect("runs");
    assert_eq!(runs.runs.len(), 1);
    let memories = db
        .get_user_memories(&MemoryQuery { limit: Some(usize::MAX), page: Some(2), ..MemoryQuery::default() })
        .await
        .expect("memories");
    assert!(memories.memories.is_empty());
}

/// Renaming sets `session_data.session_name`.
pub async fn rename_session_sets_the_name(db: Arc<dyn Db>) {
    save_session(&db, &session("s1", Some("u1"))).await;
    let renamed = db.rename_session("s1", "new name", Some("u1")).await.expect("rename").expect("present");
    assert_eq!(renamed.session_name(), Some("new name"));
    assert_eq!(db.get_session("s1", None, None).await.expect("get").expect("s").session_name(), Some("new name"));
    assert!(db.rename_session("missing", "x", None).await.expect("rename").is_none());
    let named = db
        .get_sessions(&SessionQuery { session_name: Some("new".into()), ..SessionQuery::default() })
        .await
        .expect("list");
    assert_eq!(named.total, 1);
}

/// User B can neither read, change nor delete user A's session and runs.
pub async fn users_are_isolated(db: Arc<dyn Db>) {
    save_session(&db, &session("sa", Some("alice"))).await;
    db.upsert_run(&run("ra", "sa", 1), "sa", Some("alice")).await.expect("upsert");
    let bob = Some("bob");
    assert!(db.get_session("sa", bob, None).await.expect("get").is_none());
    assert!(db.get_run("ra", bob).await.expect("get").is_none());
    assert!(
        db.get_runs(&RunQuery { user_id: Some("bob".into()), ..RunQuery::default() })
            .await
            .expect("runs")
            .runs
            .is_empty()
    );
    assert!(
        db.get_runs(&RunQuery { session_id: Some("sa".into()), user_id: Some("bob".into()), ..RunQuery::default() })
            .await
            .expect("runs")
            .runs
            .is_empty()
    );
    assert_eq!(
        db.get_sessions(&SessionQuery { user_id: Some("bob".into()), ..SessionQuery::default() })
            .await
            .expect("list")
            .total,
        0
    );
    assert!(db.rename_session("sa", "hijack", bob).await.expect("rename").is_none());
    assert!(!db.delete_session("sa", bob).await.expect("delete"));
    assert_eq!(db.delete_sessions(&["sa".into()], bob).await.expect("delete"), 0);
    assert!(!db.delete_run("ra", bob).await.expect("delete"));
    assert_eq!(db.delete_runs(&["ra".into()], bob).await.expect("delete"), 0);
    let err = db.upsert_session(&session("sa", bob), &StateUpdate::Replace).await.expect_err("overwrite refused");
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    let err = db.upsert_run(&run("ra", "sa", 1), "sa", bob).await.expect_err("overwrite refused");
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    // Alice still has everything, unchanged.
    let s = db.get_session("sa", Some("alice"), None).await.expect("get").expect("present");
    assert_eq!(s.user_id.as_deref(), Some("alice"));
    assert_eq!(s.session_name(), None);
    assert_eq!(s.runs().len(), 1);
    assert_eq!(s.runs()[0].content, Some(json!("content of ra")));
}

/// Merged state updates from two writers keep both writers' keys.
pub async fn session_state_updates_merge(db: Arc<dyn Db>) {
    let mut s = session("s1", None);
    s.set_session_state(obj(json!({"a": 1, "b": 1, "gone": true})));
    save_session(&db, &s).await;
    let base = obj(json!({"a": 1, "b": 1, "gone": true}));
    let mut one = s.clone();
    one.set_session_state(obj(json!({"a": 2, "b": 1, "gone": true})));
    db.upsert_session(&one, &StateUpdate::diff(&base, &obj(json!({"a": 2, "b": 1, "gone": true})))).await.expect("w1");
    let mut two = s.clone();
    two.set_session_state(obj(json!({"a": 1, "b": 3})));
    db.upsert_session(&two, &StateUpdate::diff(&base, &obj(json!({"a": 1, "b": 3})))).await.expect("w2");
    let got = db.get_session("s1", None, None).await.expect("get").expect("present");
    assert_eq!(got.session_state(), Some(&obj(json!({"a": 2, "b": 3}))));
}

/// A merge that changes no state key (a run's first write) keeps the stored state and metrics,
/// whatever the writer's copy holds, and writes the rest of the session; it removes metrics the
/// stored session does not have, creates a missing session as written, and refuses another
/// user's session.
pub async fn session_merge_that_changes_nothing_keeps_what_is_stored(db: Arc<dyn Db>) {
    let data = |v: Value| Some(obj(v));
    let mut stored = session("kept", Some("alice"));
    stored.session_data =
        data(json!({"session_state": {"a": 1}, "session_metrics": {"input_tokens": 5}, "session_name": "old"}));
    stored.agent_data = data(json!({"name": "old"}));
    save_session(&db, &stored).await;
    let mut stale = session("kept", Some("alice"));
    stale.session_data = data(json!({"session_state": {}, "session_name": "new"}));
    stale.agent_data = data(json!({"name": "new"}));
    db.upsert_session(&stale, &StateUpdate::keep()).await.expect("keep");
    let got = db.get_session("kept", Some("alice"), Some(0)).await.expect("get").expect("present");
    let got_data = got.session_data.clone().unwrap_or_default();
    assert_eq!(got_data.get("session_state"), Some(&json!({"a": 1})), "stored state kept");
    assert_eq!(got_data.get("session_metrics"), Some(&json!({"input_tokens": 5})), "stored metrics kept");
    assert_eq!(got_data.get("session_name"), Some(&json!("new")), "the rest is the writer's");
    assert_eq!(got.agent_data.and_then(|d| d.get("name").cloned()), Some(json!("new")));

    let mut bare = session("bare", None);
    bare.session_data = data(json!({"session_state": {"b": 2}}));
    save_session(&db, &bare).await;
    let mut counted = session("bare", None);
    counted.session_data = data(json!({"session_state": {}, "session_metrics": {"input_tokens": 9}}));
    db.upsert_session(&counted, &StateUpdate::keep()).await.expect("keep");
    let got = db.get_session("bare", None, Some(0)).await.expect("get").expect("present").session_data;
    assert_eq!(got, data(json!({"session_state": {"b": 2}})), "no stored metrics: none kept");

    let mut fresh = session("fresh-keep", Some("bob"));
    fresh.session_data = data(json!({"session_state": {"c": 3}}));
    db.upsert_session(&fresh, &StateUpdate::keep()).await.expect("create");
    let got = db.get_session("fresh-keep", Some("bob"), Some(0)).await.expect("get").expect("created");
    assert_eq!(got.session_state(), Some(&obj(json!({"c": 3}))));

    let mut intruder = session("kept", Some("mallory"));
    intruder.agent_data = data(json!({"name": "mallory's"}));
    let err = db.upsert_session(&intruder, &StateUpdate::keep()).await.expect_err("another user's session");
    assert_eq!(err.kind(), agno_core::DbErrorKind::Conflict, "{err}");
    let got = db.get_session("kept", Some("alice"), Some(0)).await.expect("get").expect("present");
    assert_eq!(got.agent_data.and_then(|d| d.get("name").cloned()), Some(json!("new")), "untouched");
}

/// 100 concurrent run writes on one session give 100 rows with distinct indexes.
pub async fn concurrent_run_writes_lose_nothing(db: Arc<dyn Db>) {
    save_session(&db, &session("s1", None)).await;
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let db = Arc::clone(&db);
            tokio::spawn(async move { db.upsert_run(&run(&format!("r{i}"), "s1", 1), "s1", None).await })
        })
        .collect();
    let mut indexes = HashSet::new();
    for t in tasks {
        indexes.insert(t.await.expect("join").expect("upsert"));
    }
    assert_eq!(indexes.len(), 100);
    assert_eq!(indexes.iter().copied().max(), Some(99));
    assert_eq!(db.get_session("s1", None, None).await.expect("get").expect("s").runs().len(), 100);
}

/// 100 concurrent session writers, each setting its own state key, lose no key.
pub async fn concurrent_state_merges_lose_nothing(db: Arc<dyn Db>) {
    save_session(&db, &session("s1", None)).await;
    merge_100_keys(db, "s1").await;
}

/// 100 concurrent merges into a session nobody stored yet: one of them creates it, the others
/// merge into it, and no key is lost.
pub async fn concurrent_first_merges_lose_nothing(db: Arc<dyn Db>) {
    merge_100_keys(db, "fresh").await;
}

/// 100 concurrent writers of session `id`, each merging its own state key; every key is stored.
async fn merge_100_keys(db: Arc<dyn Db>, id: &'static str) {
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let db = Arc::clone(&db);
            tokio::spawn(async move {
                let mut s = session(id, None);
                let key = format!("k{i}");
                s.set_session_state(obj(json!({ key.clone(): i })));
                db.upsert_session(&s, &StateUpdate::diff(&Map::new(), &obj(json!({ key: i })))).await
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("join").expect("upsert");
    }
    let got = db.get_session(id, None, None).await.expect("get").expect("s");
    assert_eq!(got.session_state().map(Map::len), Some(100));
}

/// Schema versions are stamped and read per table.
pub async fn schema_versions_are_tracked(db: Arc<dyn Db>) {
    db.upsert_schema_version("agno_test_table", "2.5.0").await.expect("stamp");
    assert_eq!(db.get_latest_schema_version("agno_test_table").await.expect("read").as_deref(), Some("2.5.0"));
    db.upsert_schema_version("agno_test_table", "3.0.0").await.expect("stamp");
    assert_eq!(db.get_latest_schema_version("agno_test_table").await.expect("read").as_deref(), Some("3.0.0"));
    assert_eq!(db.get_latest_schema_version("agno_unknown").await.expect("read"), None);
}

/// Expands into one `#[tokio::test]` per conformance case for an adapter.
///
/// `$make` is an async expression evaluating to `Arc<dyn Db>`, fresh for each test.
#[macro_export]
macro_rules! db_conformance {
    ($adapter:ident, $make:expr) => {
        mod $adapter {
            #[allow(unused_imports)]
            use super::*;
            $crate::db_conformance!(@cases stringify!($adapter), $make;
                session_round_trip,
                runs_are_stored_apart_and_read_in_order,
                run_update_keeps_its_index,
                run_writes_store_session_and_run_together,
                concurrent_run_writes_with_their_sessions_lose_nothing,
                runs_limit_reads_the_latest_runs,
                get_runs_filters_and_pages_by_cursor,
                deletes_cascade_from_sessions_to_runs,
                session_listing_pages_without_run_bodies,
                session_search_filters_in_the_store,
                oversized_limits_are_answered,
                rename_session_sets_the_name,
                users_are_isolated,
                session_state_updates_merge,
                session_merge_that_changes_nothing_keeps_what_is_stored,
                concurrent_run_writes_lose_nothing,
                concurrent_state_merges_lose_nothing,
                concurrent_first_merges_lose_nothing,
                schema_versions_are_tracked,
                memory_round_trip,
                memory_listing_filters_and_pages,
                memory_topics_and_stats,
                memory_users_are_isolated,
                memory_deletes_and_clear,
                eval_runs_round_trip_and_filter,
                eval_runs_users_are_isolated,
                knowledge_round_trip_and_filter,
                knowledge_users_are_isolated,
                metrics_buckets_per_user,
                schedules_round_trip_and_update,
                schedules_users_are_isolated,
                schedule_claims_are_exclusive,
                schedule_runs_record_history,
                traces_fold_batches_and_count_spans,
                traces_list_filter_and_stats,
                old_traces_are_deleted_with_their_spans,
                approvals_round_trip_filter_and_count,
                approvals_resolve_once_and_expire,
                compactions_round_trip_search_and_cascade,
                components_version_publish_and_pin,
                components_refuse_cycles_and_serialise_appends
            );
        }
    };
    (@cases $adapter:expr, $make:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                if !$crate::services::for_adapter($adapter, concat!(module_path!(), "::", stringify!($case))) {
                    return;
                }
                let db = $make;
                $crate::conformance::$case(db).await;
            }
        )*
    };
}

pub use crate::conformance_agent_files::{
    agent_files_follow_agnos_rules, agent_files_round_trip_and_isolate, agent_files_unsupported,
};
pub use crate::conformance_approvals::{approvals_resolve_once_and_expire, approvals_round_trip_filter_and_count};
pub use crate::conformance_compactions::compactions_round_trip_search_and_cascade;
pub use crate::conformance_components::{
    components_interop, components_refuse_cycles_and_serialise_appends, components_version_publish_and_pin,
};
pub use crate::conformance_learnings::{learnings_round_trip_list_and_delete, learnings_unsupported};
pub use crate::conformance_service_accounts::{service_accounts_mint_find_list_revoke, service_accounts_unsupported};
pub use crate::conformance_traces::{
    old_traces_are_deleted_with_their_spans, traces_fold_batches_and_count_spans, traces_list_filter_and_stats,
};

// ----- Memories -------------------------------------------------------------------------------

use agno_core::{MemoryQuery, MemorySort, MemoryStore, UserMemory};

fn memory(id: &str, user: Option<&str>, text: &str, topics: &[&str]) -> UserMemory {
    let mut m = UserMemory::new(text, user);
    m.memory_id = Some(id.to_owned());
    m.topics = Some(topics.iter().map(|t| (*t).to_owned()).collect());
    m.agent_id = Some("agent-1".to_owned());
    m
}

/// Memories round-trip; ids and `created_at` are filled in; updates keep `created_at`.
pub async fn memory_round_trip(db: Arc<dyn MemoryStore>) {
    let mut m = UserMemory::new("likes otters", Some("u1"));
    m.topics = Some(vec!["animals".into()]);
    m.input = Some("I like otters".into());
    m.feedback = Some("good".into());
    let stored = db.upsert_user_memory(&m).await.expect("upsert");
    let id = stored.memory_id.clone().expect("id generated");
    assert!(stored.created_at.is_some() && stored.updated_at.is_some());
    let got = db.get_user_memory(&id, None).await.expect("get").expect("present");
    assert_eq!(got.memory, "likes otters");
    assert_eq!(got.topics, Some(vec!["animals".to_owned()]));
    assert_eq!(got.input.as_deref(), Some("I like otters"));
    assert_eq!(got.feedback.as_deref(), Some("good"));
    assert_eq!(got.user_id.as_deref(), Some("u1"));
    let mut changed = got.clone();
    changed.memory = "loves otters".into();
    changed.created_at = None;
    db.upsert_user_memory(&changed).await.expect("update");
    let again = db.get_user_memory(&id, Some("u1")).await.expect("get").expect("present");
    assert_eq!(again.memory, "loves otters");
    assert_eq!(again.created_at, got.created_at, "created_at is kept on update");
    assert!(db.get_user_memory("missing", None).await.expect("get").is_none());
}

/// Listing filters by user, agent, topics and text, sorts, pages and counts.
pub async fn memory_listing_filters_and_pages(db: Arc<dyn MemoryStore>) {
    db.upsert_user_memory(&memory("m1", Some("ann"), "Ann likes Otters", &["animals", "rivers"])).await.expect("w");
    db.upsert_user_memory(&memory("m2", Some("ann"), "Ann lives in Paris", &["places"])).await.expect("w");
    db.upsert_user_memory(&memory("m3", Some("ann"), "Ann runs marathons", &["sport"])).await.expect("w");
    let mut other = memory("m4", Some("bob"), "Bob likes otters too", &["animals"]);
    other.agent_id = Some("agent-2".into());
    db.upsert_user_memory(&other).await.expect("w");
    let q = |f: &dyn Fn(&mut MemoryQuery)| {
        let mut q = MemoryQuery::default();
        f(&mut q);
        q
    };
    let ann = db.get_user_memories(&q(&|q| q.user_id = Some("ann".into()))).await.expect("list");
    assert_eq!(ann.total, 3);
    let animals =
        db.get_user_memories(&q(&|q| q.topics = Some(vec!["animals".into(), "sport".into()]))).await.expect("list");
    let mut ids: Vec<String> = animals.memories.iter().filter_map(|m| m.memory_id.clone()).collect();
    ids.sort();
    assert_eq!(ids, ["m1", "m3", "m4"]);
    let otters = db.get_user_memories(&q(&|q| q.search_content = Some("OTTERS".into()))).await.expect("list");
    assert_eq!(otters.total, 2, "search is case-insensitive");
    let wildcard = db.get_user_memories(&q(&|q| q.search_content = Some("%".into()))).await.expect("list");
    assert_eq!(wildcard.total, 0, "the search text is a plain substring, not a pattern");
    let agent2 = db.get_user_memories(&q(&|q| q.agent_id = Some("agent-2".into()))).await.expect("list");
    assert_eq!(agent2.total, 1);
    let page = db
        .get_user_memories(&q(&|q| {
            q.user_id = Some("ann".into());
            q.limit = Some(2);
            q.page = Some(2);
            q.sort_by = MemorySort::CreatedAt;
            q.sort_order = SortOrder::Asc;
        }))
        .await
        .expect("list");
    assert_eq!(page.total, 3);
    assert_eq!(page.memories.len(), 1);
}

/// Topics and per-user stats.
pub async fn memory_topics_and_stats(db: Arc<dyn MemoryStore>) {
    db.upsert_user_memory(&memory("m1", Some("ann"), "a", &["b-topic", "a-topic"])).await.expect("w");
    db.upsert_user_memory(&memory("m2", Some("ann"), "b", &["a-topic"])).await.expect("w");
    db.upsert_user_memory(&memory("m3", Some("bob"), "c", &["c-topic"])).await.expect("w");
    assert_eq!(db.get_all_memory_topics(Some("ann")).await.expect("topics"), ["a-topic", "b-topic"]);
    assert_eq!(db.get_all_memory_topics(None).await.expect("topics"), ["a-topic", "b-topic", "c-topic"]);
    let (stats, total) = db.get_user_memory_stats(None, None, None).await.expect("stats");
    assert_eq!(total, 2);
    let ann = stats.iter().find(|s| s.user_id.as_deref() == Some("ann")).expect("ann");
    assert_eq!(ann.total_memories, 2);
    assert!(ann.last_memory_updated_at.is_some());
    let (only_bob, total) = db.get_user_memory_stats(Some(10), Some(1), Some("bob")).await.expect("stats");
    assert_eq!(total, 1);
    assert_eq!(only_bob[0].total_memories, 1);
}

/// User B cannot read, change or delete user A's memories.
pub async fn memory_users_are_isolated(db: Arc<dyn MemoryStore>) {
    db.upsert_user_memory(&memory("ma", Some("alice"), "alice secret", &["private"])).await.expect("w");
    let bob = Some("bob");
    assert!(db.get_user_memory("ma", bob).await.expect("get").is_none());
    let listed = db.get_user_memories(&MemoryQuery { user_id: Some("bob".into()), ..MemoryQuery::default() }).await;
    assert_eq!(listed.expect("list").total, 0);
    assert!(db.get_all_memory_topics(bob).await.expect("topics").is_empty());
    assert_eq!(db.get_user_memory_stats(None, None, bob).await.expect("stats").1, 0);
    assert!(!db.delete_user_memory("ma", bob).await.expect("delete"));
    assert_eq!(db.delete_user_memories(&["ma".into()], bob).await.expect("delete"), 0);
    let err = db.upsert_user_memory(&memory("ma", bob, "hijacked", &[])).await.expect_err("refused");
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    // A user id differing only in case is another user (MySQL's collations ignore case).
    let upper = Some("ALICE");
    assert!(db.get_user_memory("ma", upper).await.expect("get").is_none());
    let listed = db.get_user_memories(&MemoryQuery { user_id: Some("ALICE".into()), ..MemoryQuery::default() }).await;
    assert_eq!(listed.expect("list").total, 0);
    assert_eq!(db.delete_user_memories(&["ma".into()], upper).await.expect("delete"), 0);
    let kept = db.get_user_memory("ma", Some("alice")).await.expect("get").expect("present");
    assert_eq!(kept.memory, "alice secret");
}

/// Deleting one, several, and clearing all.
pub async fn memory_deletes_and_clear(db: Arc<dyn MemoryStore>) {
    for i in 0..4 {
        db.upsert_user_memory(&memory(&format!("m{i}"), Some("u"), "x", &[])).await.expect("w");
    }
    assert!(db.delete_user_memory("m0", Some("u")).await.expect("delete"));
    assert_eq!(db.delete_user_memories(&["m1".into(), "m2".into(), "nope".into()], None).await.expect("delete"), 2);
    assert_eq!(db.get_user_memories(&MemoryQuery::default()).await.expect("list").total, 1);
    db.clear_memories().await.expect("clear");
    assert_eq!(db.get_user_memories(&MemoryQuery::default()).await.expect("list").total, 0);
}

// ----- Evals and knowledge ----------------------------------------------------------------------

use agno_core::{
    EvalFilterType, EvalQuery, EvalRunRecord, EvalStore, EvalType, KnowledgeQuery, KnowledgeRow, KnowledgeSort,
    KnowledgeStore,
};

fn eval(id: &str, user: Option<&str>, kind: EvalType, agent: Option<&str>, team: Option<&str>) -> EvalRunRecord {
    EvalRunRecord {
        run_id: id.to_owned(),
        eval_type: kind,
        eval_data: obj(json!({"score": 0.9, "id": id})),
        eval_input: Some(obj(json!({"input": "question"}))),
        name: Some(format!("eval {id}")),
        agent_id: agent.map(str::to_owned),
        team_id: team.map(str::to_owned),
        workflow_id: None,
        model_id: Some("gpt-test".into()),
        model_provider: Some("OpenAI".into()),
        evaluated_component_name: None,
        user_id: user.map(str::to_owned),
        created_at: None,
        updated_at: None,
    }
}

/// Eval runs round-trip, filter, page and rename; a duplicate id is a conflict.
pub async fn eval_runs_round_trip_and_filter(db: Arc<dyn EvalStore>) {
    let stored = db.create_eval_run(&eval("e1", Some("ann"), EvalType::Accuracy, Some("a1"), None)).await.expect("w");
    assert!(stored.created_at.is_some());
    db.create_eval_run(&eval("e2", Some("ann"), EvalType::Performance, None, Some("t1"))).await.expect("w");
    db.create_eval_run(&eval("e3", Some("bob"), EvalType::Reliability, Some("a1"), None)).await.expect("w");
    let err = db.create_eval_run(&eval("e1", Some("ann"), EvalType::Accuracy, None, None)).await.expect_err("dup");
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    let got = db.get_eval_run("e1", None).await.expect("get").expect("present");
    assert_eq!(got.eval_data, obj(json!({"score": 0.9, "id": "e1"})));
    assert_eq!(got.eval_type, EvalType::Accuracy);
    assert_eq!(got.model_id.as_deref(), Some("gpt-test"));
    let (all, total) = db.get_eval_runs(&EvalQuery::default()).await.expect("list");
    assert_eq!((all.len(), total), (3, 3));
    let (agents, n) = db
        .get_eval_runs(&EvalQuery { filter_type: Some(EvalFilterType::Agent), ..EvalQuery::default() })
        .await
        .expect("list");
    assert_eq!(n, 2);
    assert!(agents.iter().all(|e| e.agent_id.is_some()));
    let (_, n) = db
        .get_eval_runs(&EvalQuery {
            eval_types: Some(vec![EvalType::Performance, EvalType::Reliability]),
            ..EvalQuery::default()
        })
        .await
        .expect("list");
    assert_eq!(n, 2);
    let (page, n) =
        db.get_eval_runs(&EvalQuery { limit: Some(2), page: Some(2), ..EvalQuery::default() }).await.expect("list");
    assert_eq!((page.len(), n), (1, 3));
    let renamed = db.rename_eval_run("e2", "renamed", Some("ann")).await.expect("rename").expect("present");
    assert_eq!(renamed.name.as_deref(), Some("renamed"));
    assert_eq!(db.delete_eval_runs(&["e1".into(), "e2".into()], None).await.expect("delete"), 2);
    assert!(db.get_eval_run("e1", None).await.expect("get").is_none());
}

/// User B cannot read, rename or delete user A's eval runs.
pub async fn eval_runs_users_are_isolated(db: Arc<dyn EvalStore>) {
    db.create_eval_run(&eval("ea", Some("alice"), EvalType::Accuracy, Some("a1"), None)).await.expect("w");
    let bob = Some("bob");
    assert!(db.get_eval_run("ea", bob).await.expect("get").is_none());
    let (list, n) =
        db.get_eval_runs(&EvalQuery { user_id: Some("bob".into()), ..EvalQuery::default() }).await.expect("l");
    assert!(list.is_empty() && n == 0);
    assert!(db.rename_eval_run("ea", "hijack", bob).await.expect("rename").is_none());
    assert_eq!(db.delete_eval_runs(&["ea".into()], bob).await.expect("delete"), 0);
    // Another user whose id differs only in case is another user (MySQL's default collations
    // ignore case; the comparison must not).
    let alice_upper = Some("ALICE");
    assert!(db.get_eval_run("ea", alice_upper).await.expect("get").is_none());
    let upper = EvalQuery { user_id: Some("ALICE".into()), ..EvalQuery::default() };
    assert_eq!(db.get_eval_runs(&upper).await.expect("l").1, 0);
    assert!(db.rename_eval_run("ea", "hijack", alice_upper).await.expect("rename").is_none());
    assert_eq!(db.delete_eval_runs(&["ea".into()], alice_upper).await.expect("delete"), 0);
    let kept = db.get_eval_run("ea", Some("alice")).await.expect("get").expect("present");
    assert_eq!(kept.name.as_deref(), Some("eval ea"));
}

fn knowledge(id: &str, user: Option<&str>, name: &str, linked_to: &str) -> KnowledgeRow {
    KnowledgeRow {
        id: Some(id.to_owned()),
        name: name.to_owned(),
        description: format!("about {name}"),
        metadata: Some(obj(json!({"source": "test"}))),
        kind: Some("text".into()),
        size: Some(42),
        linked_to: Some(linked_to.to_owned()),
        access_count: Some(0),
        status: Some("completed".into()),
        status_message: None,
        user_id: user.map(str::to_owned),
        created_at: None,
        updated_at: None,
        external_id: None,
    }
}

/// Knowledge rows round-trip, filter by instance, sort, page, and update in place.
pub async fn knowledge_round_trip_and_filter(db: Arc<dyn KnowledgeStore>) {
    let stored = db.upsert_knowledge_content(&knowledge("k1", None, "b-doc", "docs")).await.expect("w");
    assert!(stored.created_at.is_some());
    db.upsert_knowledge_content(&knowledge("k2", Some("ann"), "a-doc", "docs")).await.expect("w");
    db.upsert_knowledge_content(&knowledge("k3", Some("ann"), "c-doc", "faq")).await.expect("w");
    let mut generated = knowledge("x", None, "d-doc", "faq");
    generated.id = None;
    let generated = db.upsert_knowledge_content(&generated).await.expect("w");
    assert!(generated.id.is_some(), "an id is generated");
    let got = db.get_knowledge_content("k2", None).await.expect("get").expect("present");
    assert_eq!(got.metadata, Some(obj(json!({"source": "test"}))));
    assert_eq!((got.size, got.kind.as_deref()), (Some(42), Some("text")));
    let (docs, n) = db
        .get_knowledge_contents(&KnowledgeQuery {
            linked_to: Some("docs".into()),
            sort_by: KnowledgeSort::Name,
            sort_order: SortOrder::Asc,
            ..KnowledgeQuery::default()
        })
        .await
        .expect("list");
    assert_eq!(n, 2);
    assert_eq!(docs.iter().map(|k| k.name.as_str()).collect::<Vec<_>>(), ["a-doc", "b-doc"]);
    let (page, n) = db
        .get_knowledge_contents(&KnowledgeQuery { limit: Some(3), page: Some(2), ..KnowledgeQuery::default() })
        .await
        .expect("list");
    assert_eq!((page.len(), n), (1, 4));
    let mut changed = got.clone();
    changed.status = Some("failed".into());
    changed.status_message = Some("bad pdf".into());
    db.upsert_knowledge_content(&changed).await.expect("update");
    let again = db.get_knowledge_content("k2", Some("ann")).await.expect("get").expect("present");
    assert_eq!(again.status_message.as_deref(), Some("bad pdf"));
    assert_eq!(again.created_at, got.created_at, "created_at is kept");
    assert!(db.delete_knowledge_content("k2", Some("ann")).await.expect("delete"));
    assert!(db.get_knowledge_content("k2", None).await.expect("get").is_none());
}

/// Users see their own and shared rows; they never see, change or delete another user's rows,
/// and cannot delete shared rows.
pub async fn knowledge_users_are_isolated(db: Arc<dyn KnowledgeStore>) {
    db.upsert_knowledge_content(&knowledge("shared", None, "handbook", "docs")).await.expect("w");
    db.upsert_knowledge_content(&knowledge("ka", Some("alice"), "alice notes", "docs")).await.expect("w");
    let bob = Some("bob");
    assert!(db.get_knowledge_content("ka", bob).await.expect("get").is_none());
    assert!(db.get_knowledge_content("shared", bob).await.expect("get").is_some(), "shared rows are visible");
    let (list, n) = db
        .get_knowledge_contents(&KnowledgeQuery { user_id: Some("bob".into()), ..KnowledgeQuery::default() })
        .await
        .expect("list");
    assert_eq!(n, 1);
    assert_eq!(list[0].id.as_deref(), Some("shared"));
    assert!(!db.delete_knowledge_content("ka", bob).await.expect("delete"));
    assert!(!db.delete_knowledge_content("shared", bob).await.expect("delete"), "a user cannot delete shared rows");
    let err = db.upsert_knowledge_content(&knowledge("ka", bob, "hijack", "docs")).await.expect_err("refused");
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    let err = db.upsert_knowledge_content(&knowledge("shared", bob, "claimed", "docs")).await.expect_err("refused");
    assert_eq!(err.kind(), DbErrorKind::Conflict, "a user cannot claim or change a shared row");
    let shared = db.get_knowledge_content("shared", Some("alice")).await.expect("get").expect("still shared");
    assert_eq!((shared.name.as_str(), shared.user_id.as_deref()), ("handbook", None));
    let kept = db.get_knowledge_content("ka", Some("alice")).await.expect("get").expect("present");
    assert_eq!(kept.name, "alice notes");
    let (alice, n) = db
        .get_knowledge_contents(&KnowledgeQuery { user_id: Some("alice".into()), ..KnowledgeQuery::default() })
        .await
        .expect("list");
    assert_eq!(n, 2, "alice sees hers and the shared one: {alice:?}");
    // A user id differing only in case is another user (MySQL's collations ignore case).
    let upper = Some("ALICE");
    assert!(db.get_knowledge_content("ka", upper).await.expect("get").is_none());
    let query = KnowledgeQuery { user_id: Some("ALICE".into()), ..KnowledgeQuery::default() };
    assert_eq!(db.get_knowledge_contents(&query).await.expect("list").1, 1, "only the shared row");
    assert!(!db.delete_knowledge_content("ka", upper).await.expect("delete"));
}

// ----- Metrics and schedules --------------------------------------------------------------------

use agno_core::{
    MetricsBucket, MetricsQuery, MetricsStore, NaiveDate, Schedule, ScheduleQuery, ScheduleRun, ScheduleRunUpdate,
    ScheduleStore, ScheduleUpdate,
};

fn day(s: &str) -> NaiveDate {
    s.parse().expect("date")
}

fn bucket(user: Option<&str>, date: &str, runs: i64, completed: bool) -> MetricsBucket {
    MetricsBucket {
        id: agno_core::new_id(),
        user_id: user.map(str::to_owned),
        date: day(date),
        aggregation_period: "daily".to_owned(),
        agent_runs_count: runs,
        team_runs_count: 1,
        workflow_runs_count: 2,
        agent_sessions_count: 3,
        team_sessions_count: 4,
        workflow_sessions_count: 5,
        users_count: i64::from(user.is_some()),
        token_metrics: obj(json!({"input_tokens": 10 * runs, "output_tokens": 7, "total_tokens": 10 * runs + 7})),
        model_metrics: json!([{"model_id": "gpt-4o", "model_provider": "OpenAI", "count": runs}]),
        created_at: 1_000 + runs,
        updated_at: Some(2_000 + runs),
        completed,
    }
}

/// Buckets are keyed by `(user_id, date, aggregation_period)`: a second write replaces the values
/// but keeps the row's id; the shared bucket is stored apart from users' and reads back without
/// a user; date and owner filters apply; progress finds where a recalculation resumes.
pub async fn metrics_buckets_per_user<D: MetricsStore + ?Sized>(db: Arc<D>) {
    assert_eq!(db.get_metrics(&MetricsQuery::default()).await.expect("empty"), (vec![], None));
    assert_eq!(db.metrics_progress().await.expect("progress"), (None, None));
    let first = bucket(Some("u1"), "2026-11-01", 1, true);
    db.upsert_metrics(&[
        first.clone(),
        bucket(None, "2026-11-01", 2, true),
        bucket(Some("u2"), "2026-11-02", 3, true),
        bucket(Some("u1"), "2026-11-03", 4, false),
    ])
    .await
    .expect("upsert");
    let mut replaced = bucket(Some("u1"), "2026-11-01", 9, true);
    replaced.created_at = 5;
    db.upsert_metrics(&[replaced]).await.expect("upsert again");

    let (all, latest) = db.get_metrics(&MetricsQuery::default()).await.expect("all");
    assert_eq!(all.len(), 4, "one row per (user, date, period): {all:?}");
    assert_eq!(latest, Some(2_009));
    let keys: Vec<(String, Option<String>)> = all.iter().map(|b| (b.date.to_string(), b.user_id.clone())).collect();
    assert_eq!(
        keys,
        vec![
            ("2026-11-01".to_owned(), None),
            ("2026-11-01".to_owned(), Some("u1".to_owned())),
            ("2026-11-02".to_owned(), Some("u2".to_owned())),
            ("2026-11-03".to_owned(), Some("u1".to_owned())),
        ],
        "ordered by date then owner; the shared bucket has no user"
    );
    let u1 = &all[1];
    assert_eq!(u1.id, first.id, "a replaced bucket keeps its id");
    assert_eq!(u1.created_at, first.created_at, "a replaced bucket keeps created_at");
    assert_eq!(u1.agent_runs_count, 9);
    assert_eq!(u1.token_metrics["input_tokens"], json!(90));
    assert_eq!(u1.model_metrics, json!([{"model_id": "gpt-4o", "model_provider": "OpenAI", "count": 9}]));
    assert_eq!(
        (u1.team_runs_count, u1.workflow_runs_count, u1.agent_sessions_count, u1.team_sessions_count),
        (1, 2, 3, 4)
    );
    assert_eq!((u1.workflow_sessions_count, u1.users_count, u1.completed), (5, 1, true));
    assert_eq!(all[0].users_count, 0);
    assert!(!all[3].completed);

    let only = |user: Option<&str>, from: Option<&str>, to: Option<&str>| MetricsQuery {
        user_id: user.map(str::to_owned),
        starting_date: from.map(day),
        ending_date: to.map(day),
    };
    let (u1s, u1_latest) = db.get_metrics(&only(Some("u1"), None, None)).await.expect("u1");
    assert_eq!(u1s.len(), 2);
    assert!(u1s.iter().all(|b| b.user_id.as_deref() == Some("u1")));
    assert_eq!(u1_latest, Some(2_009));
    let (shared, shared_latest) = db.get_metrics(&only(Some(""), None, None)).await.expect("shared");
    assert_eq!(shared.len(), 1);
    assert_eq!(shared[0].user_id, None);
    assert_eq!(shared_latest, Some(2_002), "latest updated_at is scoped to the owner");
    let (ranged, _) = db.get_metrics(&only(None, Some("2026-11-02"), Some("2026-11-03"))).await.expect("range");
    assert_eq!(ranged.len(), 2);
    assert_eq!(db.get_metrics(&only(Some("nobody"), None, None)).await.expect("none"), (vec![], None));

    assert_eq!(
        db.metrics_progress().await.expect("progress"),
        (Some(day("2026-11-02")), Some(day("2026-11-03"))),
        "resume at the first incomplete day after the last completed one"
    );
}

fn schedule(name: &str, user: Option<&str>, created_at: i64) -> Schedule {
    let mut s = Schedule::new(name, "/agents/a1/runs", "*/5 * * * *");
    s.user_id = user.map(str::to_owned);
    s.created_at = created_at;
    s.payload = Some(json!({"message": format!("hello from {name}"), "nested": {"n": 1}}));
    s
}

/// Schedules round-trip; names are unique per owner (not across owners); updates change only the
/// given columns, enabling clears `disabled_reason`, a rename onto a taken name conflicts;
/// listings are newest first, filtered, paged and counted.
pub async fn schedules_round_trip_and_update<D: ScheduleStore + ?Sized>(db: Arc<D>) {
    let mut a = schedule("nightly", Some("u1"), 100);
    a.description = Some("the nightly report".to_owned());
    a.next_run_at = Some(500);
    let stored = db.create_schedule(&a).await.expect("create");
    assert_eq!(stored, a);
    assert_eq!(db.get_schedule(&a.id, None).await.expect("get"), Some(a.clone()));
    assert_eq!(db.get_schedule(&a.id, Some("u1")).await.expect("get scoped"), Some(a.clone()));
    assert_eq!(db.get_schedule("missing", None).await.expect("missing"), None);

    // The same name in another owner bucket is fine; in the same bucket it conflicts.
    let shared = schedule("nightly", None, 101);
    db.create_schedule(&shared).await.expect("same name, no owner");
    let dup = schedule("nightly", Some("u1"), 102);
    let err = db.create_schedule(&dup).await.expect_err("duplicate name for u1");
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    let err = db.create_schedule(&a).await.expect_err("duplicate id");
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    assert_eq!(
        db.get_schedule_by_name("nightly", Some("u1")).await.expect("by name").map(|s| s.id),
        Some(a.id.clone())
    );
    assert_eq!(db.get_schedule_by_name("nightly", None).await.expect("by name").map(|s| s.id), Some(shared.id.clone()));
    assert_eq!(db.get_schedule_by_name("nightly", Some("u2")).await.expect("by name"), None);

    // A partial update touches only its columns.
    let disable = ScheduleUpdate {
        enabled: Some(false),
        disabled_reason: Some(Some("target archived".to_owned())),
        payload: Some(Some(json!({"message": "changed"}))),
        ..ScheduleUpdate::default()
    };
    let updated = db.update_schedule(&a.id, Some("u1"), &disable).await.expect("update").expect("found");
    assert!(!updated.enabled);
    assert_eq!(updated.disabled_reason.as_deref(), Some("target archived"));
    assert_eq!(updated.payload, Some(json!({"message": "changed"})));
    assert_eq!(updated.description.as_deref(), Some("the nightly report"), "untouched column kept");
    assert_eq!(updated.next_run_at, Some(500), "untouched column kept");
    assert!(updated.updated_at.is_some());
    assert_eq!(db.get_schedule(&a.id, None).await.expect("reread").as_ref(), Some(&updated));
    let enable = ScheduleUpdate { enabled: Some(true), description: Some(None), ..ScheduleUpdate::default() };
    let enabled = db.update_schedule(&a.id, None, &enable).await.expect("enable").expect("found");
    assert!(enabled.enabled);
    assert_eq!(enabled.disabled_reason, None, "enabling clears the reason");
    assert_eq!(enabled.description, None, "Some(None) clears a column");

    let other = schedule("hourly", Some("u1"), 103);
    db.create_schedule(&other).await.expect("create hourly");
    let rename = ScheduleUpdate { name: Some("nightly".to_owned()), ..ScheduleUpdate::default() };
    let err = db.update_schedule(&other.id, Some("u1"), &rename).await.expect_err("rename onto a taken name");
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    assert_eq!(db.get_schedule(&other.id, None).await.expect("kept").map(|s| s.name), Some("hourly".to_owned()));
    assert_eq!(db.update_schedule("missing", None, &rename).await.expect("missing"), None);

    // Listing: newest first, filters, paging, counts.
    for i in 0..5 {
        db.create_schedule(&schedule(&format!("bulk-{i}"), Some("u3"), 200 + i)).await.expect("bulk");
    }
    let q = |user: Option<&str>, enabled: Option<bool>, limit: Option<usize>, page: Option<usize>| ScheduleQuery {
        user_id: user.map(str::to_owned),
        enabled,
        limit,
        page,
    };
    let (all, total) = db.get_schedules(&q(None, None, None, None)).await.expect("list");
    assert_eq!((all.len(), total), (8, 8));
    let created: Vec<i64> = all.iter().map(|s| s.created_at).collect();
    let mut sorted = created.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(created, sorted, "newest first");
    let (page2, total) = db.get_schedules(&q(Some("u3"), None, Some(2), Some(2))).await.expect("page 2");
    assert_eq!(total, 5);
    assert_eq!(page2.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), vec!["bulk-2", "bulk-1"]);
    db.update_schedule(&other.id, None, &ScheduleUpdate { enabled: Some(false), ..ScheduleUpdate::default() })
        .await
        .expect("disable")
        .expect("found");
    let (disabled, total) = db.get_schedules(&q(None, Some(false), None, None)).await.expect("disabled");
    assert_eq!(total, 1);
    assert_eq!(disabled[0].id, other.id);
}

/// Another owner's schedules and schedule runs are invisible: reads return nothing, updates and
/// deletes touch nothing, listings are filtered; a delete cascades to the owner's runs only.
pub async fn schedules_users_are_isolated<D: ScheduleStore + ?Sized>(db: Arc<D>) {
    let mine = schedule("mine", Some("u1"), 100);
    let theirs = schedule("theirs", Some("u2"), 101);
    db.create_schedule(&mine).await.expect("create");
    db.create_schedule(&theirs).await.expect("create");
    let run = db.create_schedule_run(&ScheduleRun::new(&theirs.id)).await.expect("run");
    assert_eq!(run.user_id.as_deref(), Some("u2"));

    assert_eq!(db.get_schedule(&theirs.id, Some("u1")).await.expect("get"), None);
    assert_eq!(db.get_schedule_by_name("theirs", Some("u1")).await.expect("by name"), None);
    assert_eq!(db.get_schedule_run(&run.id, Some("u1")).await.expect("run"), None);
    assert_eq!(db.get_schedule_run(&run.id, Some("u2")).await.expect("run").map(|r| r.id), Some(run.id.clone()));
    let (runs, total) = db.get_schedule_runs(&theirs.id, Some("u1"), None, None).await.expect("runs");
    assert_eq!((runs.len(), total), (0, 0));
    let rename = ScheduleUpdate { name: Some("stolen".to_owned()), ..ScheduleUpdate::default() };
    assert_eq!(db.update_schedule(&theirs.id, Some("u1"), &rename).await.expect("update"), None);
    assert!(!db.delete_schedule(&theirs.id, Some("u1")).await.expect("delete"));
    let kept = db.get_schedule(&theirs.id, None).await.expect("kept").expect("present");
    assert_eq!(kept.name, "theirs");
    assert!(db.get_schedule_run(&run.id, None).await.expect("run kept").is_some(), "their runs are kept");
    let (list, total) = db
        .get_schedules(&ScheduleQuery { user_id: Some("u1".to_owned()), ..ScheduleQuery::default() })
        .await
        .expect("list");
    assert_eq!(total, 1);
    assert_eq!(list[0].id, mine.id);

    assert!(db.delete_schedule(&theirs.id, Some("u2")).await.expect("owner deletes"));
    assert_eq!(db.get_schedule(&theirs.id, None).await.expect("gone"), None);
    assert_eq!(db.get_schedule_run(&run.id, None).await.expect("runs cascade"), None);
    assert!(db.delete_schedule(&mine.id, None).await.expect("unscoped delete"));
    assert!(!db.delete_schedule(&mine.id, None).await.expect("second delete"));
}

/// The poller claims due, enabled, unlocked (or stale) schedules, soonest first, each by exactly
/// one of many concurrent workers; releases match the claim and re-arm the next run, except for
/// on-demand schedules.
pub async fn schedule_claims_are_exclusive<D: ScheduleStore + ?Sized + 'static>(db: Arc<D>) {
    let now = 10_000;
    let mut due = Vec::new();
    for (i, at) in [now - 30, now - 10, now - 20].into_iter().enumerate() {
        let mut s = schedule(&format!("due-{i}"), Some(&format!("u{i}")), 100);
        s.next_run_at = Some(at);
        db.create_schedule(&s).await.expect("create");
        due.push(s);
    }
    let mut future = schedule("future", None, 100);
    future.next_run_at = Some(now + 60);
    let mut disabled = schedule("disabled", None, 100);
    disabled.next_run_at = Some(now - 60);
    disabled.enabled = false;
    let unarmed = schedule("unarmed", None, 100);
    for s in [&future, &disabled, &unarmed] {
        db.create_schedule(s).await.expect("create");
    }

    let mut tasks = Vec::new();
    for w in 0..10 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move { db.claim_due_schedule(&format!("worker-{w}"), 300, now).await }));
    }
    let mut claimed = Vec::new();
    for t in tasks {
        if let Some(s) = t.await.expect("join").expect("claim") {
            assert_eq!(s.locked_at, Some(now));
            assert!(s.locked_by.as_deref().is_some_and(|w| w.starts_with("worker-")), "post-claim state returned");
            claimed.push(s);
        }
    }
    let ids: HashSet<String> = claimed.iter().map(|s| s.id.clone()).collect();
    assert_eq!(claimed.len(), 3, "every due schedule claimed exactly once: {claimed:?}");
    assert_eq!(ids, due.iter().map(|s| s.id.clone()).collect::<HashSet<_>>());
    assert_eq!(db.claim_due_schedule("late", 300, now).await.expect("claim"), None);

    // Soonest first, and a stale lock is taken over.
    let stale_at = now + 400;
    let first = db.claim_due_schedule("sweeper", 300, stale_at).await.expect("claim").expect("stale");
    assert_eq!(first.id, due[0].id, "the schedule due soonest comes first");
    assert_eq!(first.locked_by.as_deref(), Some("sweeper"));

    // Releases must match the claim.
    assert!(!db.release_schedule(&first.id, Some(now + 900), Some("someone-else"), None).await.expect("release"));
    assert!(!db.release_schedule(&first.id, Some(now + 900), Some("sweeper"), Some(now)).await.expect("release"));
    assert!(db.release_schedule(&first.id, Some(now + 900), Some("sweeper"), Some(stale_at)).await.expect("release"));
    let released = db.get_schedule(&first.id, None).await.expect("get").expect("present");
    assert_eq!((released.locked_by, released.locked_at, released.next_run_at), (None, None, Some(now + 900)));
    let holder = claimed.iter().find(|s| s.id == due[1].id).expect("claimed");
    assert!(db.release_schedule(&holder.id, None, holder.locked_by.as_deref(), None).await.expect("release"));
    let kept = db.get_schedule(&holder.id, None).await.expect("get").expect("present");
    assert_eq!(kept.next_run_at, Some(now - 10), "no new time keeps the old one");
    assert_eq!(kept.locked_by, None);

    // An on-demand schedule (no cron) is never re-armed by a release.
    let mut once = schedule("once", None, 100);
    once.cron_expr = String::new();
    once.next_run_at = Some(now - 1);
    db.create_schedule(&once).await.expect("create");
    let got = db.claim_due_schedule("w", 300, now).await.expect("claim").expect("once or re-due");
    let got =
        if got.id == once.id { got } else { db.claim_due_schedule("w", 300, now).await.expect("claim").expect("once") };
    assert_eq!(got.id, once.id);
    assert!(db.release_schedule(&once.id, Some(now + 60), Some("w"), None).await.expect("release"));
    assert_eq!(db.get_schedule(&once.id, None).await.expect("get").expect("present").next_run_at, None);
    assert!(!db.release_schedule("missing", None, None, None).await.expect("missing"));

    // A claim its holder renews is not taken for abandoned; nobody else can renew it.
    let t = now + 1000;
    let mut held = Vec::new();
    while let Some(s) = db.claim_due_schedule("holder", 300, t).await.expect("claim") {
        held.push(s.id);
    }
    assert_eq!(held.len(), 4, "every due schedule: {held:?}");
    assert!(db.renew_schedule_claim(&held[0], "holder", t + 250).await.expect("renew"));
    assert!(!db.renew_schedule_claim(&held[1], "thief", t + 250).await.expect("renew"));
    assert!(!db.renew_schedule_claim("missing", "holder", t + 250).await.expect("renew"));
    let mut taken = Vec::new();
    while let Some(s) = db.claim_due_schedule("thief", 300, t + 400).await.expect("claim") {
        taken.push(s.id);
    }
    assert_eq!(taken.len(), 3, "the stale claims only: {taken:?}");
    assert!(!taken.contains(&held[0]), "the renewed claim stays with its holder");
}

/// Schedule runs take their owner from the schedule, need an existing schedule, update in
/// place, list newest first, report each schedule's latest run, and expire only completed
/// history older than a cutoff.
pub async fn schedule_runs_record_history<D: ScheduleStore + ?Sized>(db: Arc<D>) {
    let s = schedule("history", Some("owner"), 100);
    db.create_schedule(&s).await.expect("create");
    let other = schedule("other", None, 100);
    db.create_schedule(&other).await.expect("create");

    let mut forged = ScheduleRun::new(&s.id);
    forged.user_id = Some("intruder".to_owned());
    forged.created_at = 150;
    let stored = db.create_schedule_run(&forged).await.expect("create run");
    assert_eq!(stored.user_id.as_deref(), Some("owner"), "user_id comes from the schedule");
    let err = db.create_schedule_run(&ScheduleRun::new("missing")).await.expect_err("no parent");
    assert_eq!(err.kind(), DbErrorKind::NotFound);
    let err = db.create_schedule_run(&forged).await.expect_err("duplicate id");
    assert_eq!(err.kind(), DbErrorKind::Conflict);

    let done = ScheduleRunUpdate {
        status: Some("success".to_owned()),
        completed_at: Some(Some(150)),
        status_code: Some(Some(200)),
        run_id: Some(Some("run-1".to_owned())),
        session_id: Some(Some("sess-1".to_owned())),
        output: Some(Some(json!({"content": "done", "n": [1, 2]}))),
        ..ScheduleRunUpdate::default()
    };
    let updated = db.update_schedule_run(&stored.id, &done).await.expect("update").expect("found");
    assert_eq!(updated.status, "success");
    assert_eq!(updated.completed_at, Some(150));
    assert_eq!(updated.status_code, Some(200));
    assert_eq!(updated.output, Some(json!({"content": "done", "n": [1, 2]})));
    assert_eq!(updated.user_id.as_deref(), Some("owner"));
    assert_eq!(db.get_schedule_run(&stored.id, None).await.expect("get").as_ref(), Some(&updated));
    assert_eq!(db.update_schedule_run("missing", &done).await.expect("missing"), None);

    // More history: created_at 200.., triggered_at decreasing so "latest" is by trigger time.
    let mut ids = Vec::new();
    for i in 0..4 {
        let mut r = ScheduleRun::new(&s.id);
        r.created_at = 200 + i;
        r.triggered_at = Some(1_000 - i);
        r.completed_at = if i < 2 { Some(300 + i) } else { None };
        r.status = if i < 2 { "failed".to_owned() } else { "running".to_owned() };
        r.input = Some(json!({"i": i}));
        db.create_schedule_run(&r).await.expect("create");
        ids.push(r.id);
    }
    let mut o = ScheduleRun::new(&other.id);
    o.triggered_at = Some(5);
    db.create_schedule_run(&o).await.expect("other run");

    let (page, total) = db.get_schedule_runs(&s.id, None, Some(2), Some(1)).await.expect("runs");
    assert_eq!(total, 5);
    assert_eq!(page.iter().map(|r| r.id.clone()).collect::<Vec<_>>(), vec![ids[3].clone(), ids[2].clone()]);
    let (mine, total) = db.get_schedule_runs(&s.id, Some("owner"), None, None).await.expect("owner runs");
    assert_eq!((mine.len(), total), (5, 5));

    let latest =
        db.get_latest_schedule_runs(&[s.id.clone(), other.id.clone(), "missing".to_owned()]).await.expect("latest");
    assert_eq!(latest.len(), 2);
    assert_eq!(latest[&s.id].id, ids[0], "greatest triggered_at wins");
    assert_eq!(latest[&s.id].input, Some(json!({"i": 0})));
    assert_eq!(latest[&other.id].id, o.id);
    assert!(db.get_latest_schedule_runs(&[]).await.expect("none").is_empty());

    // Expire completed runs before 301: the first update (150) and ids[0] (300); not ids[1]
    // (301), not running ones, not the other schedule's.
    assert_eq!(db.delete_schedule_runs(&s.id, 301).await.expect("expire"), 2);
    let (left, total) = db.get_schedule_runs(&s.id, None, None, None).await.expect("left");
    assert_eq!(total, 3);
    assert!(left.iter().all(|r| r.id != stored.id && r.id != ids[0]));
    assert!(db.get_schedule_run(&o.id, None).await.expect("other kept").is_some());
}

// ----- Job queue ------------------------------------------------------------------------------

use agno_core::{Enqueued, Job, JobLease, JobOutcome, JobStatus, JobStore};

fn job(id: &str, user: Option<&str>, key: Option<&str>, created_at: i64) -> Job {
    let mut j = Job::agent_run(id, "agent-1", format!("session-{id}"), json!({"message": format!("run {id}")}));
    j.user_id = user.map(str::to_owned);
    j.idempotency_key = key.map(str::to_owned);
    j.created_at = created_at;
    j.available_at = 0;
    j
}

/// An idempotency key is unique per user (also under concurrent duplicates); a full queue
/// refuses; jobs read back whole, scoped to their user.
pub async fn jobs_enqueue_dedups_and_bounds<D: JobStore + ?Sized + 'static>(db: Arc<D>) {
    let first = job("j1", Some("u1"), Some("key-1"), 1);
    assert_eq!(db.enqueue_job(&first, 0).await.expect("enqueue"), Enqueued::Accepted(first.clone()));
    match db.enqueue_job(&job("j2", Some("u1"), Some("key-1"), 2), 0).await.expect("dup") {
        Enqueued::Duplicate(original) => assert_eq!(original.id, "j1"),
        other => panic!("expected the original job, got {other:?}"),
    }
    assert!(matches!(
        db.enqueue_job(&job("j3", Some("u2"), Some("key-1"), 3), 0).await.expect("other user"),
        Enqueued::Accepted(_)
    ));
    assert!(matches!(db.enqueue_job(&job("j4", None, Some("anon"), 4), 0).await.expect("anon"), Enqueued::Accepted(_)));
    assert!(matches!(
        db.enqueue_job(&job("j5", None, Some("anon"), 5), 0).await.expect("anon dup"),
        Enqueued::Duplicate(_)
    ));
    assert_eq!(db.enqueue_job(&job("j6", None, None, 6), 3).await.expect("full"), Enqueued::QueueFull);
    assert!(matches!(db.enqueue_job(&job("j6", None, None, 6), 4).await.expect("room"), Enqueued::Accepted(_)));
    let err = db.enqueue_job(&job("j6", None, None, 6), 0).await.expect_err("same id");
    assert_eq!(err.kind(), DbErrorKind::Conflict);

    // 50 concurrent submissions of one key: exactly one job.
    let mut tasks = Vec::new();
    for i in 0..50 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            db.enqueue_job(&job(&format!("c{i}"), Some("u9"), Some("burst"), 10), 0).await
        }));
    }
    let mut accepted = Vec::new();
    for t in tasks {
        match t.await.expect("join").expect("enqueue") {
            Enqueued::Accepted(j) => accepted.push(j.id),
            Enqueued::Duplicate(_) => {}
            Enqueued::QueueFull => panic!("no depth limit"),
        }
    }
    assert_eq!(accepted.len(), 1, "one job for one key: {accepted:?}");

    let got = db.get_job("j1", None).await.expect("get").expect("present");
    assert_eq!(got, first);
    assert!(db.get_job("j1", Some("u1")).await.expect("owner").is_some());
    assert!(db.get_job("j1", Some("u2")).await.expect("other").is_none());
    let (queued, total) = db.list_jobs(Some(JobStatus::Queued), Some(3), Some(1)).await.expect("list");
    assert_eq!((queued.len(), total), (3, 5));
    assert_eq!(queued[0].id, accepted[0], "newest first");
}

/// Claims are exclusive under concurrency, oldest first; every write is fenced by worker and
/// attempt; an expired lease with attempts left is reclaimed and the old holder is fenced out.
pub async fn jobs_claims_are_exclusive_and_fenced<D: JobStore + ?Sized + 'static>(db: Arc<D>) {
    let now = 1_000;
    for i in 0..5 {
        let mut j = job(&format!("j{i}"), None, None, 100 + i);
        j.max_attempts = 2;
        db.enqueue_job(&j, 0).await.expect("enqueue");
    }
    let mut later = job("later", None, None, 50);
    later.available_at = now + 10_000;
    db.enqueue_job(&later, 0).await.expect("enqueue");
    let mut tasks = Vec::new();
    for w in 0..10 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move { db.claim_job(&format!("w{w}"), 60, now).await }));
    }
    let mut claimed = Vec::new();
    for t in tasks {
        if let Some(j) = t.await.expect("join").expect("claim") {
            assert_eq!((j.status, j.attempt, j.locked_at), (JobStatus::Running, 1, Some(now)));
            claimed.push(j);
        }
    }
    let mut ids: Vec<String> = claimed.iter().map(|j| j.id.clone()).collect();
    ids.sort();
    assert_eq!(ids, ["j0", "j1", "j2", "j3", "j4"], "each available job claimed once; `later` is not available");
    assert!(db.claim_job("w-late", 60, now).await.expect("claim").is_none());

    let j0 = claimed.iter().find(|j| j.id == "j0").expect("j0").clone();
    let holder = j0.locked_by.clone().expect("holder");
    let done = JobOutcome::Settled(JobStatus::Completed, None);
    assert!(
        !db.finish_job(&JobLease::new("j0", "someone-else", 1), &done, now).await.expect("finish"),
        "another worker"
    );
    assert!(!db.finish_job(&JobLease::new("j0", &holder, 2), &done, now).await.expect("finish"), "another attempt");
    assert!(db.heartbeat_jobs(&holder, &["j0".to_owned(), "j1".to_owned()], now + 30).await.expect("beat") >= 1);
    // The other workers finish theirs, so j0's is the one lease left to go stale (with several
    // stale, which one a claim takes first is the index's order, not this test's).
    for other in claimed.iter().filter(|j| j.id != "j0") {
        let lease = JobLease::new(&other.id, other.locked_by.as_deref().expect("holder"), 1);
        assert!(db.finish_job(&lease, &done, now + 10).await.expect("finish"), "{} by its holder", other.id);
    }

    // The holder goes silent: after the grace its lease is taken over (attempts left).
    let stolen = db.claim_job("w-new", 60, now + 30 + 61).await.expect("claim").expect("reclaimed");
    assert_eq!(stolen.id, "j0");
    assert_eq!((stolen.attempt, stolen.locked_by.as_deref()), (2, Some("w-new")));
    assert!(
        !db.finish_job(&JobLease::new("j0", &holder, 1), &done, now + 100).await.expect("stale"),
        "the stale attempt is fenced out"
    );
    assert_eq!(db.heartbeat_jobs(&holder, &["j0".to_owned()], now + 100).await.expect("beat"), 0);
    assert!(db.finish_job(&JobLease::new("j0", "w-new", 2), &done, now + 100).await.expect("finish"));
    let j = db.get_job("j0", None).await.expect("get").expect("present");
    assert_eq!((j.status, j.completed_at, j.locked_by), (JobStatus::Completed, Some(now + 100), None));
    assert!(
        !db.finish_job(&JobLease::new("j0", "w-new", 2), &done, now + 101).await.expect("again"),
        "a finished job stays finished"
    );
}

/// Retries wait for `available_at` while attempts remain, then fail; a lease that expires with no
/// attempt left is swept to `failed`; anyone cancels queued or running jobs (fencing out the worker); operators requeue failed ones.
pub async fn jobs_retry_sweep_cancel_requeue<D: JobStore + ?Sized>(db: Arc<D>) {
    let now = 5_000;
    let mut r = job("retry", None, None, 1);
    r.max_attempts = 2;
    db.enqueue_job(&r, 0).await.expect("enqueue");
    let c = db.claim_job("w", 60, now).await.expect("claim").expect("job");
    let retry = JobOutcome::Retry { error: "model timed out".into(), available_at: now + 30 };
    assert!(db.finish_job(&JobLease::new(&c.id, "w", 1), &retry, now).await.expect("retry"));
    let j = db.get_job("retry", None).await.expect("get").expect("present");
    assert_eq!((j.status, j.error.as_deref()), (JobStatus::Queued, Some("model timed out")));
    assert!(db.claim_job("w", 60, now + 10).await.expect("claim").is_none(), "not before available_at");
    let c = db.claim_job("w", 60, now + 30).await.expect("claim").expect("due again");
    assert_eq!(c.attempt, 2);
    assert!(db.finish_job(&JobLease::new("retry", "w", 2), &retry, now + 31).await.expect("retry"));
    let j = db.get_job("retry", None).await.expect("get").expect("present");
    assert_eq!(j.status, JobStatus::Failed, "no attempts left: failed");

    let dead = job("dead", None, None, 2);
    db.enqueue_job(&dead, 0).await.expect("enqueue");
    db.claim_job("crashed", 60, now).await.expect("claim").expect("dead");
    assert!(db.sweep_jobs(60, now + 30, "worker lost").await.expect("sweep").is_empty(), "lease still fresh");
    assert!(db.claim_job("other", 60, now + 61).await.expect("claim").is_none(), "no attempts left to reclaim");
    let swept = db.sweep_jobs(60, now + 61, "worker lost").await.expect("sweep");
    assert_eq!(swept.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(), ["dead"]);
    let j = db.get_job("dead", None).await.expect("get").expect("present");
    assert_eq!((j.status, j.error.as_deref()), (JobStatus::Failed, Some("worker lost")));
    assert!(db.sweep_jobs(60, now + 120, "worker lost").await.expect("sweep").is_empty(), "swept once");

    assert!(db.requeue_job("dead", now + 200).await.expect("requeue"));
    let again = db.claim_job("w2", 60, now + 200).await.expect("claim").expect("requeued");
    assert_eq!((again.id.as_str(), again.attempt), ("dead", 2));
    assert!(!db.requeue_job("dead", now + 201).await.expect("running"), "a running job is not requeued");

    db.enqueue_job(&job("queued", None, None, 3), 0).await.expect("enqueue");
    assert_eq!(db.cancel_job("queued", now).await.expect("cancel"), Some(JobStatus::Queued));
    assert_eq!(db.get_job("queued", None).await.expect("get").expect("present").status, JobStatus::Cancelled);
    // A running job cancelled from anywhere: its heartbeats fail (so the worker stops the run),
    // it is never claimed again, but its worker still holds it to record how the run ended.
    assert_eq!(db.cancel_job("dead", now + 202).await.expect("cancel running"), Some(JobStatus::Running));
    let j = db.get_job("dead", None).await.expect("get").expect("present");
    assert_eq!((j.status, j.locked_by.as_deref()), (JobStatus::Cancelled, Some("w2")));
    assert_eq!(db.heartbeat_jobs("w2", &["dead".to_owned()], now + 203).await.expect("beat"), 0);
    assert_eq!(db.cancelled_jobs("w2").await.expect("cancelled"), ["dead"]);
    assert!(db.claim_job("w3", 60, now + 400).await.expect("claim").is_none(), "a cancelled job is not claimed");
    assert!(
        db.holds_job(&JobLease::new("dead", "w2", 2), now + 203).await.expect("holds"),
        "the worker records the end"
    );
    assert!(!db.holds_job(&JobLease::new("dead", "w3", 2), now + 203).await.expect("holds"), "not another worker");
    let done = JobOutcome::Settled(JobStatus::Completed, None);
    assert!(db.finish_job(&JobLease::new("dead", "w2", 2), &done, now + 204).await.expect("finish"));
    let j = db.get_job("dead", None).await.expect("get").expect("present");
    assert_eq!((j.status, j.locked_by), (JobStatus::Cancelled, None), "the cancellation stands");
    assert!(db.cancelled_jobs("w2").await.expect("cancelled").is_empty());
    assert!(!db.holds_job(&JobLease::new("dead", "w2", 2), now + 205).await.expect("holds"), "released");
    assert_eq!(db.cancel_job("dead", now + 205).await.expect("cancel again"), None, "already cancelled");
    assert_eq!(db.cancel_job("missing", now).await.expect("cancel missing"), None);

    // A worker that died after its job was cancelled: the sweeper releases the lease and hands
    // the job back (still cancelled) so its run can be ended.
    db.enqueue_job(&job("gone", None, None, 4), 0).await.expect("enqueue");
    let g = db.claim_job("w4", 60, now + 300).await.expect("claim").expect("gone");
    assert_eq!(g.id, "gone");
    assert_eq!(db.cancel_job("gone", now + 301).await.expect("cancel"), Some(JobStatus::Running));
    assert!(db.sweep_jobs(60, now + 320, "lost").await.expect("sweep").is_empty(), "lease fresh");
    let swept = db.sweep_jobs(60, now + 400, "lost").await.expect("sweep");
    assert_eq!(swept.iter().map(|j| (j.id.as_str(), j.status)).collect::<Vec<_>>(), [("gone", JobStatus::Cancelled)]);
    assert!(db.sweep_jobs(60, now + 500, "lost").await.expect("sweep").is_empty(), "swept once");

    // A failed, released job whose run turned out COMPLETED is marked completed; nothing else is.
    assert!(!db.complete_swept_job("gone", now + 501).await.expect("complete"), "cancelled stays cancelled");
    assert!(db.complete_swept_job("retry", now + 501).await.expect("complete"));
    let j = db.get_job("retry", None).await.expect("get").expect("present");
    assert_eq!((j.status, j.error), (JobStatus::Completed, None));
    assert!(!db.complete_swept_job("retry", now + 502).await.expect("complete"), "once");
    assert!(!db.complete_swept_job("missing", now + 502).await.expect("complete"));
}

fn event(index: i64, attempt: i64, name: &str) -> agno_core::StoredEvent {
    agno_core::StoredEvent {
        event_index: index,
        attempt,
        event: name.to_owned(),
        data: format!("{{\"event\":\"{name}\",\"event_index\":{index},\"content\":\"caf\u{e9} \u{1f980}\"}}"),
        created_at: 1_000 + index,
    }
}

/// The event log: appends are fenced by the claim (a stale attempt writes nothing), reads page by
/// index and give back exactly the text written, a taken index is a conflict, and a job
/// cancelled while running still takes its worker's last events.
pub async fn jobs_event_log_is_fenced<D: JobStore + ?Sized>(db: Arc<D>) {
    let now = 20_000;
    let mut ev = job("ev", None, None, 1);
    ev.max_attempts = 2;
    db.enqueue_job(&ev, 0).await.expect("enqueue");
    let first = db.claim_job("a", 60, now).await.expect("claim").expect("ev");
    assert_eq!(db.last_event_index("ev").await.expect("last"), None);
    let batch: Vec<_> = (0..3).map(|i| event(i, 1, if i == 0 { "RunStarted" } else { "RunContent" })).collect();
    assert!(db.append_events(&JobLease::new("ev", "a", first.attempt), &batch).await.expect("append"));
    assert!(
        db.append_events(&JobLease::new("ev", "a", first.attempt), &[event(3, 1, "RunContent")]).await.expect("append")
    );
    let read = db.read_events("ev", -1, 100).await.expect("read");
    assert_eq!(read.iter().map(|e| e.event_index).collect::<Vec<_>>(), [0, 1, 2, 3]);
    assert_eq!(read[0], batch[0], "the text comes back byte for byte");
    assert_eq!(db.read_events("ev", 1, 1).await.expect("read")[0].event_index, 2, "after and limit");
    assert!(db.read_events("other", -1, 10).await.expect("read").is_empty());
    assert_eq!(db.last_event_index("ev").await.expect("last"), Some(3));
    let dup = db.append_events(&JobLease::new("ev", "a", first.attempt), &[event(3, 1, "RunContent")]).await;
    assert!(dup.is_err_and(|e| e.kind() == agno_core::DbErrorKind::Conflict), "an index is written once");

    // The lease expires; another worker takes attempt 2; the first worker is fenced out.
    let second = db.claim_job("b", 60, now + 61).await.expect("claim").expect("reclaimed");
    assert_eq!(second.attempt, 2);
    assert!(
        !db.append_events(&JobLease::new("ev", "a", 1), &[event(4, 1, "RunCompleted")]).await.expect("stale append")
    );
    assert!(!db.holds_job(&JobLease::new("ev", "a", 1), now + 62).await.expect("holds"));
    assert!(db.holds_job(&JobLease::new("ev", "b", 2), now + 62).await.expect("holds"));
    assert!(db.append_events(&JobLease::new("ev", "b", 2), &[event(4, 2, "RunStarted")]).await.expect("append"));
    let read = db.read_events("ev", 3, 100).await.expect("read");
    assert_eq!(read.iter().map(|e| (e.event_index, e.attempt)).collect::<Vec<_>>(), [(4, 2)], "nothing from a");

    // Cancelled while running: the worker records its last events, then nobody can.
    assert_eq!(db.cancel_job("ev", now + 63).await.expect("cancel"), Some(JobStatus::Running));
    assert!(
        db.append_events(&JobLease::new("ev", "b", 2), &[event(5, 2, "RunCancelled")])
            .await
            .expect("append after cancel")
    );
    let done = JobOutcome::Settled(JobStatus::Cancelled, None);
    assert!(db.finish_job(&JobLease::new("ev", "b", 2), &done, now + 64).await.expect("finish"));
    assert!(
        !db.append_events(&JobLease::new("ev", "b", 2), &[event(6, 2, "RunContent")]).await.expect("append after end")
    );
    assert!(db.read_events("ev", 5, 10).await.expect("read").is_empty());
    assert!(db.read_events("ev", -1, 100).await.expect("read").last().is_some_and(agno_core::StoredEvent::ends_stream));

    // Retention: ended jobs older than the cutoff go with their logs; paused jobs stay.
    db.enqueue_job(&job("waits", None, None, 2), 0).await.expect("enqueue");
    let w = db.claim_job("c", 60, now + 70).await.expect("claim").expect("waits");
    let paused = JobOutcome::Settled(JobStatus::Paused, None);
    assert!(
        db.append_events(&JobLease::new("waits", "c", w.attempt), &[event(0, 1, "RunPaused")]).await.expect("append")
    );
    assert!(db.finish_job(&JobLease::new("waits", "c", w.attempt), &paused, now + 71).await.expect("pause"));
    assert_eq!(db.cleanup_jobs(now + 62).await.expect("cleanup"), 0, "ev ended after the cutoff");
    assert_eq!(db.cleanup_jobs(now + 1_000).await.expect("cleanup"), 1);
    assert!(db.get_job("ev", None).await.expect("get").is_none());
    assert!(db.read_events("ev", -1, 10).await.expect("read").is_empty(), "its log went with it");
    assert_eq!(db.get_job("waits", None).await.expect("get").map(|j| j.status), Some(JobStatus::Paused));
    assert_eq!(db.read_events("waits", -1, 10).await.expect("read").len(), 1);
}

/// A paused job continues under the same id: queued again with the continuation in its payload and
/// exactly one more attempt; a repeated continue attaches; an ended job cannot be continued.
pub async fn jobs_continue_requeues_paused<D: JobStore + ?Sized>(db: Arc<D>) {
    let now = 30_000;
    db.enqueue_job(&job("hitl", None, None, 1), 0).await.expect("enqueue");
    let c = db.claim_job("w", 60, now).await.expect("claim").expect("hitl");
    let paused = JobOutcome::Settled(JobStatus::Paused, None);
    assert!(db.finish_job(&JobLease::new("hitl", "w", c.attempt), &paused, now + 1).await.expect("pause"));
    let answer = serde_json::json!({"tools": [{"tool_call_id": "t1", "confirmed": true}]});
    let queued = match db.continue_job("hitl", &answer, now + 2).await.expect("continue") {
        agno_core::Continued::Queued(j) => j,
        other => panic!("expected Queued, got {other:?}"),
    };
    assert_eq!((queued.status, queued.max_attempts, queued.id.as_str()), (JobStatus::Queued, 2, "hitl"));
    assert_eq!(queued.payload["continue"], answer);
    assert_eq!(queued.payload["message"], "run hitl", "the submission stays");
    assert!(matches!(db.continue_job("hitl", &answer, now + 3).await.expect("again"), agno_core::Continued::Attach(_)));
    let again = db.claim_job("w", 60, now + 3).await.expect("claim").expect("hitl again");
    assert_eq!((again.id.as_str(), again.attempt), ("hitl", 2));
    assert_eq!(again.payload["continue"], answer);
    let done = JobOutcome::Settled(JobStatus::Completed, None);
    assert!(db.finish_job(&JobLease::new("hitl", "w", 2), &done, now + 4).await.expect("finish"));
    assert!(matches!(
        db.continue_job("hitl", &answer, now + 5).await.expect("ended"),
        agno_core::Continued::Conflict(Some(_))
    ));
    assert!(matches!(
        db.continue_job("nope", &answer, now).await.expect("missing"),
        agno_core::Continued::Conflict(None)
    ));
}

/// One live run per session, in submission order; a paused run holds its session's place until it
/// ends. Other sessions are not held up.
pub async fn jobs_run_one_at_a_time_per_session<D: JobStore + ?Sized>(db: Arc<D>) {
    let now = 9_000;
    let mk = |id: &str, session: &str, at: i64| {
        let mut j = job(id, None, None, at);
        j.session_id = session.to_owned();
        j
    };
    for j in [mk("s-1", "s", 1), mk("s-2", "s", 2), mk("o-1", "o", 3)] {
        db.enqueue_job(&j, 0).await.expect("enqueue");
    }
    let first = db.claim_job("w", 60, now).await.expect("claim").expect("s-1");
    assert_eq!(first.id, "s-1");
    let second = db.claim_job("w", 60, now).await.expect("claim").expect("o-1");
    assert_eq!(second.id, "o-1", "s-2 waits for s-1; the other session goes ahead");
    assert!(db.claim_job("w", 60, now).await.expect("claim").is_none());
    let paused = JobOutcome::Settled(JobStatus::Paused, None);
    assert!(db.finish_job(&JobLease::new("s-1", "w", 1), &paused, now).await.expect("pause"));
    assert!(db.claim_job("w", 60, now).await.expect("claim").is_none(), "a paused run holds its session");
    assert_eq!(db.cancel_job("s-1", now).await.expect("cancel"), Some(JobStatus::Paused));
    let third = db.claim_job("w", 60, now).await.expect("claim").expect("s-2");
    assert_eq!(third.id, "s-2");
}

fn lease(job: &Job) -> JobLease {
    JobLease { job_id: job.id.clone(), worker_id: job.locked_by.clone().expect("claimed"), attempt: job.attempt }
}

/// The session and run a worker writes for its job's run, with `writer` in both.
fn claimed_write(job: &Job, writer: &str, status: RunStatus) -> (AgentSession, RunOutput) {
    let mut s = session(&job.session_id, job.user_id.as_deref());
    s.set_session_state(obj(json!({"writer": writer})));
    let mut r = run(&job.id, &job.session_id, 10);
    r.status = status;
    r.content = Some(Value::String(writer.to_owned()));
    (s, r)
}

async fn save_claimed<D: JobStore + ?Sized>(db: &D, lease: &JobLease, job: &Job, writer: &str, now: i64) -> bool {
    let (s, r) = claimed_write(job, writer, RunStatus::Running);
    let write = RunWrite { session: &s, state: &StateUpdate::Replace, run: &r, user_id: job.user_id.as_deref() };
    db.save_claimed_run(lease, write, now).await.expect("save claimed run")
}

/// Who wrote the stored run and session last: (run content, session state's `writer`).
async fn last_writer<D: Db + ?Sized>(db: &D, job: &Job) -> (Option<Value>, Option<Value>) {
    let run = db.get_run(&job.id, None).await.expect("get run").map(|r| r.content.unwrap_or_default());
    let session = db.get_session(&job.session_id, None, Some(0)).await.expect("get session");
    (run, session.and_then(|s| s.session_state().and_then(|st| st.get("writer").cloned())))
}

/// A claimed run's session and run are written only while the claim holds, the check and both
/// writes in one transaction: a stale attempt writes nothing (also when it races the takeover),
/// a cancelled run's worker still records its end, a refused session write leaves no run behind.
pub async fn jobs_claimed_run_writes_are_fenced<D: JobStore + Db + ?Sized + 'static>(db: Arc<D>) {
    let now = 7_000;
    let mut j = job("fenced", Some("u1"), None, 1);
    j.max_attempts = 3;
    db.enqueue_job(&j, 0).await.expect("enqueue");
    let first = db.claim_job("w1", 60, now).await.expect("claim").expect("job");
    let lease1 = lease(&first);
    assert!(save_claimed(db.as_ref(), &lease1, &first, "w1", now + 5).await);
    assert_eq!(last_writer(db.as_ref(), &first).await, (Some(json!("w1")), Some(json!("w1"))));
    let held = db.get_job("fenced", None).await.expect("get").expect("job");
    assert_eq!(held.locked_at, Some(now + 5), "a write refreshes the lease");

    // Taken over after the grace: the first attempt's writes are refused and change nothing.
    let second = db.claim_job("w2", 60, now + 5 + 61).await.expect("claim").expect("taken over");
    assert_eq!((second.id.as_str(), second.attempt), ("fenced", 2));
    let lease2 = lease(&second);
    assert!(!save_claimed(db.as_ref(), &lease1, &first, "stale", now + 70).await, "stale attempt fenced out");
    assert_eq!(last_writer(db.as_ref(), &first).await, (Some(json!("w1")), Some(json!("w1"))));
    assert!(save_claimed(db.as_ref(), &lease2, &second, "w2", now + 70).await);
    assert_eq!(last_writer(db.as_ref(), &second).await, (Some(json!("w2")), Some(json!("w2"))));

    // All or nothing: the session belongs to someone else, so the run is not written either.
    let other = session("session-of-u2", Some("u2"));
    db.upsert_session(&other, &StateUpdate::Replace).await.expect("u2's session");
    let mut s = session("session-of-u2", Some("u1"));
    s.set_session_state(obj(json!({"writer": "w2"})));
    let r = run("fenced-elsewhere", "session-of-u2", 11);
    let write = RunWrite { session: &s, state: &StateUpdate::Replace, run: &r, user_id: Some("u1") };
    let err = db.save_claimed_run(&lease2, write, now + 71).await.expect_err("another user's session");
    assert_eq!(err.kind(), DbErrorKind::Conflict);
    assert!(db.get_run("fenced-elsewhere", None).await.expect("get").is_none(), "no run without its session");
    let kept = db.get_session("session-of-u2", None, Some(0)).await.expect("get").expect("kept");
    assert_eq!(kept.user_id.as_deref(), Some("u2"));
    assert!(kept.session_state().is_none_or(|st| st.get("writer").is_none()));

    // Cancelled while running: the worker still records how the run ended; once it released the
    // job, nothing more.
    assert_eq!(db.cancel_job("fenced", now + 72).await.expect("cancel"), Some(JobStatus::Running));
    assert!(save_claimed(db.as_ref(), &lease2, &second, "w2-cancelled", now + 73).await);
    let cancelled = JobOutcome::Settled(JobStatus::Cancelled, None);
    assert!(db.finish_job(&JobLease::new("fenced", "w2", 2), &cancelled, now + 74).await.expect("finish"));
    assert!(!save_claimed(db.as_ref(), &lease2, &second, "after-release", now + 75).await);
    assert_eq!(last_writer(db.as_ref(), &second).await, (Some(json!("w2-cancelled")), Some(json!("w2-cancelled"))));

    // A stale writer racing the takeover never lands after the new owner's write: whatever it
    // wrote before the claim moved, the last write is the new owner's.
    for round in 0..20 {
        let mut j = job(&format!("race-{round}"), None, None, 100 + round);
        j.max_attempts = 2;
        db.enqueue_job(&j, 0).await.expect("enqueue");
        let t0 = now + 1_000 * (round + 1);
        let old = db.claim_job("old", 60, t0).await.expect("claim").expect("job");
        let stale = tokio::spawn({
            let (db, old) = (db.clone(), old.clone());
            async move {
                let lease = lease(&old);
                // Bounded: the takeover below ends this loop long before the bound. Returns how
                // many writes landed before the first refusal.
                for landed in 0..100_000 {
                    if !save_claimed(db.as_ref(), &lease, &old, &format!("old-{landed}"), t0 + 1).await {
                        return landed;
                    }
                }
                panic!("the stale writer was never fenced out");
            }
        });
        // Take over once the old owner has written at least once.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while last_writer(db.as_ref(), &old).await.0.is_none() {
            assert!(std::time::Instant::now() < deadline, "the first owner never wrote");
            tokio::task::yield_now().await;
        }
        // A claim skips a job whose row a write is holding (PostgreSQL's SKIP LOCKED): the
        // takeover lands at a later poll, between two of the old owner's writes.
        let new = loop {
            if let Some(new) = db.claim_job("new", 60, t0 + 62).await.expect("claim") {
                break new;
            }
            assert!(std::time::Instant::now() < deadline, "the job was never taken over");
            tokio::task::yield_now().await;
        };
        assert!(save_claimed(db.as_ref(), &lease(&new), &new, "new", t0 + 62).await);
        let landed = stale.await.expect("stale writer");
        assert!(landed >= 1);
        assert_eq!(
            last_writer(db.as_ref(), &new).await,
            (Some(json!("new")), Some(json!("new"))),
            "round {round}: a stale write landed after the takeover"
        );
    }
}

/// A claimed run's first write (`StateUpdate::keep`) keeps the stored state and metrics; its
/// last (a merge with the run's metrics) changes only the keys the run changed and adds its
/// metrics, so a key another run wrote meanwhile survives. Both hold for a run accepted with its
/// `PENDING` row and for one that was not stored yet; both are refused after a takeover and for
/// another user's session, writing nothing. (Where a database writes these in fewer statements
/// than the generic transaction, PostgreSQL, every branch of that path is here.)
pub async fn jobs_claimed_run_writes_keep_and_merge_state<D: JobStore + Db + ?Sized + 'static>(db: Arc<D>) {
    use agno_core::{Metrics, PendingRun};
    let now = 9_000;
    let metrics = |tokens: u64| Metrics { input_tokens: tokens, total_tokens: tokens, ..Metrics::default() };
    let stored_metrics = |s: &AgentSession| {
        s.session_data.as_ref().and_then(|d| d.get("session_metrics")).and_then(|m| m.get("input_tokens")).cloned()
    };
    for (n, pending) in [(0, true), (1, false)] {
        let mut j = job(&format!("kept-{n}"), Some("u1"), None, 10 + n);
        j.max_attempts = 2;
        let mut stored = session(&j.session_id, Some("u1"));
        stored.set_session_state(obj(json!({"a": 1, "b": 1})));
        let mut data = stored.session_data.clone().unwrap_or_default();
        data.insert("session_metrics".to_owned(), json!({"input_tokens": 5, "total_tokens": 5}));
        stored.session_data = Some(data);
        db.upsert_session(&stored, &StateUpdate::Replace).await.expect("stored session");
        if pending {
            let mut r = run(&j.id, &j.session_id, j.created_at);
            r.status = RunStatus::Pending;
            let s = session(&j.session_id, Some("u1"));
            db.enqueue_run(&j, 0, PendingRun { session: &s, run: &r }).await.expect("enqueue run");
        } else {
            db.enqueue_job(&j, 0).await.expect("enqueue");
        }
        let claimed = db.claim_job("w1", 60, now).await.expect("claim").expect("job");
        let lease1 = lease(&claimed);

        // The first write: the worker's copy of the session has no state, the stored one stays.
        let blank = session(&j.session_id, Some("u1"));
        let mut r = run(&j.id, &j.session_id, j.created_at);
        r.status = RunStatus::Running;
        r.content = None;
        let keep = StateUpdate::keep();
        let write = RunWrite { session: &blank, state: &keep, run: &r, user_id: Some("u1") };
        assert!(db.save_claimed_run(&lease1, write, now + 1).await.expect("first write"), "case {n}");
        let s = db.get_session(&j.session_id, Some("u1"), None).await.expect("get").expect("session");
        assert_eq!(s.session_state().cloned(), Some(obj(json!({"a": 1, "b": 1}))), "case {n}: state kept");
        assert_eq!(stored_metrics(&s), Some(json!(5)), "case {n}: metrics kept");
        let runs = s.runs.unwrap_or_default();
        assert_eq!(runs.len(), 1, "case {n}: one run");
        assert_eq!(runs[0].status, RunStatus::Running, "case {n}");
        let index = db.get_runs(&agno_core::RunQuery::default()).await.expect("runs");
        assert!(index.runs.iter().any(|x| x.id() == j.id), "case {n}: the run is listed");
        let held = db.get_job(&j.id, None).await.expect("get").expect("job");
        assert_eq!(held.locked_at, Some(now + 1), "case {n}: the write refreshed the lease");

        // Meanwhile another run of the session changes `b`.
        let mut other = session(&j.session_id, Some("u1"));
        other.set_session_state(obj(json!({"b": 2})));
        let changed = StateUpdate::Merge { set: obj(json!({"b": 2})), removed: Vec::new(), metrics: None };
        db.upsert_session(&other, &changed).await.expect("another run's merge");

        // The last write: `a` removed, `c` set, metrics added; `b` is the other run's.
        let mut mine = session(&j.session_id, Some("u1"));
        mine.set_session_state(obj(json!({"b": 1, "c": 3})));
        r.status = RunStatus::Completed;
        r.content = Some(json!("done"));
        let merge = StateUpdate::Merge { set: obj(json!({"c": 3})), removed: vec!["a".to_owned()], metrics: None }
            .with_metrics(metrics(7));
        let write = RunWrite { session: &mine, state: &merge, run: &r, user_id: Some("u1") };
        assert!(db.save_claimed_run(&lease1, write, now + 2).await.expect("last write"), "case {n}");
        let s = db.get_session(&j.session_id, Some("u1"), None).await.expect("get").expect("session");
        assert_eq!(s.session_state().cloned(), Some(obj(json!({"b": 2, "c": 3}))), "case {n}: merged");
        assert_eq!(stored_metrics(&s), Some(json!(12)), "case {n}: metrics added");
        let runs = s.runs.unwrap_or_default();
        assert_eq!(runs.len(), 1, "case {n}: still one run");
        assert_eq!((runs[0].status, runs[0].content.clone()), (RunStatus::Completed, Some(json!("done"))));

        // Taken over: the old claim's writes, first or last, change nothing.
        let second = db.claim_job("w2", 60, now + 2 + 61).await.expect("claim").expect("taken over");
        assert_eq!(second.attempt, 2, "case {n}");
        r.content = Some(json!("stale"));
        for state in [StateUpdate::keep(), merge.clone()] {
            let write = RunWrite { session: &mine, state: &state, run: &r, user_id: Some("u1") };
            assert!(!db.save_claimed_run(&lease1, write, now + 70).await.expect("stale write"), "case {n}");
        }
        let s = db.get_session(&j.session_id, Some("u1"), None).await.expect("get").expect("session");
        assert_eq!(s.session_state().cloned(), Some(obj(json!({"b": 2, "c": 3}))), "case {n}: untouched");
        assert_eq!(stored_metrics(&s), Some(json!(12)), "case {n}: metrics untouched");
        assert_eq!(db.get_run(&j.id, None).await.expect("get").and_then(|x| x.content), Some(json!("done")));

        // Another user's session: refused, nothing written, whichever write it is.
        let theirs = format!("theirs-{n}");
        let mut owned = session(&theirs, Some("u2"));
        owned.set_session_state(obj(json!({"owner": "u2"})));
        db.upsert_session(&owned, &StateUpdate::Replace).await.expect("u2's session");
        let lease2 = lease(&second);
        for (k, state) in [StateUpdate::keep(), merge.clone()].into_iter().enumerate() {
            let intruder = session(&theirs, Some("u1"));
            let r = run(&format!("intruding-{n}-{k}"), &theirs, 20);
            let write = RunWrite { session: &intruder, state: &state, run: &r, user_id: Some("u1") };
            let err = db.save_claimed_run(&lease2, write, now + 71).await.expect_err("another user's session");
            assert_eq!(err.kind(), DbErrorKind::Conflict, "case {n}.{k}");
            assert!(db.get_run(r.id(), None).await.expect("get").is_none(), "case {n}.{k}: no run written");
        }
        let kept = db.get_session(&theirs, None, Some(0)).await.expect("get").expect("kept");
        assert_eq!(kept.user_id.as_deref(), Some("u2"));
        assert_eq!(kept.session_state().cloned(), Some(obj(json!({"owner": "u2"}))));
    }
}

/// A batch claim takes the oldest claimable jobs, up to its limit, never two of one session
/// (the newer waits for the older); concurrent batches never share a job.
pub async fn jobs_claim_in_batches<D: JobStore + ?Sized + 'static>(db: Arc<D>) {
    let now = 11_000;
    let mk = |id: &str, session: &str, at: i64| {
        let mut j = job(id, None, None, at);
        j.session_id = session.to_owned();
        j
    };
    for j in [mk("a-1", "a", 1), mk("a-2", "a", 2), mk("b-1", "b", 3), mk("c-1", "c", 4), mk("d-1", "d", 5)] {
        db.enqueue_job(&j, 0).await.expect("enqueue");
    }
    assert!(db.claim_jobs("w", 0, 60, now).await.expect("claim none").is_empty());
    let batch = db.claim_jobs("w", 2, 60, now).await.expect("claim");
    let ids: Vec<&str> = batch.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["a-1", "b-1"], "the two oldest, oldest first");
    assert!(batch.iter().all(|j| j.status == JobStatus::Running && j.attempt == 1));
    assert!(batch.iter().all(|j| j.locked_by.as_deref() == Some("w")));
    let rest = db.claim_jobs("w", 10, 60, now).await.expect("claim");
    let ids: Vec<&str> = rest.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["c-1", "d-1"], "a-2 waits for a-1 of its session");
    let done = JobOutcome::Settled(JobStatus::Completed, None);
    assert!(db.finish_job(&JobLease::new("a-1", "w", 1), &done, now).await.expect("finish"));
    let last = db.claim_jobs("w", 10, 60, now).await.expect("claim");
    assert_eq!(last.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(), ["a-2"]);

    // 60 jobs, 6 workers claiming batches of 4 at once: every job claimed exactly once.
    for i in 0..60 {
        db.enqueue_job(&mk(&format!("many-{i:02}"), &format!("m{i}"), 100 + i), 0).await.expect("enqueue");
    }
    let mut tasks = Vec::new();
    for w in 0..6 {
        let db = Arc::clone(&db);
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let batch = db.claim_jobs(&format!("w{w}"), 4, 60, now).await.expect("claim");
                if batch.is_empty() {
                    break mine;
                }
                assert!(batch.len() <= 4);
                mine.extend(batch.into_iter().map(|j| j.id));
            }
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("join"));
    }
    all.sort();
    let expected: Vec<String> = (0..60).map(|i| format!("many-{i:02}")).collect();
    assert_eq!(all, expected, "each job claimed once");
}

/// A run job is stored with its `PENDING` run and (when new) its session, all or nothing: an
/// existing session is left as it is; a duplicate key, a full queue or a run id of another user
/// leaves no run, session or job behind.
pub async fn jobs_enqueue_run_is_all_or_nothing<D: JobStore + Db + ?Sized + 'static>(db: Arc<D>) {
    use agno_core::PendingRun;
    let pending = |j: &Job| {
        let s = session(&j.session_id, j.user_id.as_deref());
        let mut r = run(&j.id, &j.session_id, j.created_at);
        r.status = RunStatus::Pending;
        r.content = None;
        (s, r)
    };
    let enqueue = |j: Job, depth: usize| {
        let db = Arc::clone(&db);
        async move {
            let (s, r) = pending(&j);
            db.enqueue_run(&j, depth, PendingRun { session: &s, run: &r }).await
        }
    };
    let nothing_of = |id: &'static str, session_id: String| {
        let db = Arc::clone(&db);
        async move {
            assert!(db.get_run(id, None).await.expect("get run").is_none(), "no run {id} left behind");
            assert!(db.get_job(id, None).await.expect("get job").is_none(), "no job {id} left behind");
            let s = db.get_session(&session_id, None, Some(0)).await.expect("get session");
            assert!(s.is_none(), "no session {session_id} left behind");
        }
    };

    // Into a stored session: the session is left as it is, the run is PENDING beside the job.
    let mut stored = session("shared", Some("u1"));
    stored.set_session_state(obj(json!({"kept": 1})));
    stored.agent_data = Some(obj(json!({"name": "stored agent"})));
    db.upsert_session(&stored, &StateUpdate::Replace).await.expect("upsert session");
    let mut first = job("r1", Some("u1"), Some("key-1"), 1);
    first.session_id = "shared".to_owned();
    assert!(matches!(enqueue(first.clone(), 0).await.expect("enqueue"), Enqueued::Accepted(_)));
    let s = db.get_session("shared", Some("u1"), None).await.expect("get").expect("session kept");
    assert_eq!(s.session_state().and_then(|st| st.get("kept").cloned()), Some(json!(1)), "state kept");
    assert_eq!(s.agent_data.as_ref().and_then(|d| d.get("name").cloned()), Some(json!("stored agent")));
    assert_eq!(s.runs.as_ref().map(Vec::len), Some(1), "the pending run is the session's");
    let r = db.get_run("r1", Some("u1")).await.expect("get run").expect("pending run");
    assert_eq!((r.status, r.session_id.as_deref()), (RunStatus::Pending, Some("shared")));
    assert_eq!(db.get_job("r1", Some("u1")).await.expect("get job").map(|j| j.status), Some(JobStatus::Queued));

    // Into a new session: created as the pending session says.
    assert!(matches!(enqueue(job("r2", Some("u1"), None, 2), 0).await.expect("enqueue"), Enqueued::Accepted(_)));
    let s = db.get_session("session-r2", Some("u1"), Some(0)).await.expect("get").expect("new session");
    assert_eq!(s.agent_id.as_deref(), Some("agent-1"));
    assert_eq!(db.get_run("r2", None).await.expect("get").map(|r| r.status), Some(RunStatus::Pending));

    // Refused: nothing of the refused job is kept.
    match enqueue(job("r3", Some("u1"), Some("key-1"), 3), 0).await.expect("duplicate") {
        Enqueued::Duplicate(original) => assert_eq!(original.id, "r1"),
        other => panic!("expected the original job, got {other:?}"),
    }
    nothing_of("r3", "session-r3".to_owned()).await;
    assert_eq!(enqueue(job("r4", Some("u1"), None, 4), 2).await.expect("full"), Enqueued::QueueFull);
    nothing_of("r4", "session-r4".to_owned()).await;
    let theirs = run("r5", "their-session", 5);
    db.upsert_session(&session("their-session", Some("u2")), &StateUpdate::Replace).await.expect("their session");
    db.upsert_run(&theirs, "their-session", Some("u2")).await.expect("their run");
    let err = enqueue(job("r5", Some("u1"), None, 5), 0).await.expect_err("another user's run id");
    assert_eq!(err.kind(), agno_core::DbErrorKind::Conflict, "{err}");
    assert!(db.get_job("r5", None).await.expect("get job").is_none(), "no job for a refused run");
    assert!(db.get_session("session-r5", None, Some(0)).await.expect("get").is_none(), "no session left behind");
    let kept = db.get_run("r5", Some("u2")).await.expect("get").expect("their run kept");
    assert_eq!((kept.status, kept.content), (RunStatus::Completed, theirs.content));
}

/// 60 concurrent background submissions: 30 with distinct keys, 30 resubmitting one key
/// (where a store commits concurrent writes together, a refused resubmission, whose pending
/// session and run are taken back, must not take the accepted ones down with it). 31 jobs,
/// each with its `PENDING` run and session; the 29 duplicates leave nothing.
pub async fn jobs_concurrent_submissions_keep_only_the_accepted<D: JobStore + Db + ?Sized + 'static>(db: Arc<D>) {
    use agno_core::PendingRun;
    let tasks: Vec<_> = (0..60)
        .map(|i| {
            let db = Arc::clone(&db);
            tokio::spawn(async move {
                let key = if i % 2 == 0 { format!("own-{i}") } else { "shared-key".to_owned() };
                let j = job(&format!("c{i}"), Some("u1"), Some(&key), i);
                let s = session(&j.session_id, Some("u1"));
                let mut r = run(&j.id, &j.session_id, j.created_at);
                r.status = RunStatus::Pending;
                let enqueued = db.enqueue_run(&j, 0, PendingRun { session: &s, run: &r }).await;
                (i, enqueued)
            })
        })
        .collect();
    let mut accepted = Vec::new();
    for t in tasks {
        let (i, enqueued) = t.await.expect("join");
        match enqueued.unwrap_or_else(|e| panic!("submission {i}: {e}")) {
            Enqueued::Accepted(j) => accepted.push(j.id),
            Enqueued::Duplicate(j) => assert_eq!(j.idempotency_key.as_deref(), Some("shared-key"), "submission {i}"),
            Enqueued::QueueFull => panic!("submission {i}: no depth bound, yet refused"),
        }
    }
    assert_eq!(accepted.len(), 31, "30 own keys and one of the shared key: {accepted:?}");
    for i in 0..60 {
        let id = format!("c{i}");
        let kept = accepted.contains(&id);
        let run = db.get_run(&id, None).await.expect("get run");
        let session = db.get_session(&format!("session-{id}"), None, Some(0)).await.expect("get session");
        assert_eq!(run.is_some(), kept, "run {id}: stored exactly when its job was accepted");
        assert_eq!(session.is_some(), kept, "session of {id}: stored exactly when its job was accepted");
        assert_eq!(db.get_job(&id, None).await.expect("get job").is_some(), kept, "job {id}");
    }
}

/// Expands into one `#[tokio::test]` per job-queue conformance case for an adapter.
#[macro_export]
macro_rules! jobs_conformance {
    ($adapter:ident, $make:expr) => {
        mod $adapter {
            #[allow(unused_imports)]
            use super::*;
            $crate::db_conformance!(@cases stringify!($adapter), $make;
                jobs_enqueue_dedups_and_bounds,
                jobs_claims_are_exclusive_and_fenced,
                jobs_retry_sweep_cancel_requeue,
                jobs_run_one_at_a_time_per_session,
                jobs_claim_in_batches,
                jobs_event_log_is_fenced,
                jobs_continue_requeues_paused,
                jobs_claimed_run_writes_are_fenced,
                jobs_claimed_run_writes_keep_and_merge_state,
                jobs_enqueue_run_is_all_or_nothing,
                jobs_concurrent_submissions_keep_only_the_accepted
            );
        }
    };
}
