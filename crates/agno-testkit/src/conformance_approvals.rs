//! Conformance cases of the approval store (`agno_approvals`), run against every adapter by
//! [`crate::db_conformance!`].

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic, clippy::needless_pass_by_value)]

use std::sync::Arc;

use agno_core::{ApprovalDecision, ApprovalQuery, ApprovalRecord, ApprovalStore, Resolved};
use serde_json::json;

/// A pending `required` approval of `run` by `user`, created at `at`.
fn approval(id: &str, run: &str, user: Option<&str>, at: i64) -> ApprovalRecord {
    serde_json::from_value(json!({
        "id": id, "run_id": run, "session_id": format!("s-{run}"), "status": "pending", "source_type": "agent",
        "approval_type": "required", "pause_type": "confirmation", "tool_name": "delete_everything",
        "tool_args": {"path": "/", "force": true}, "expires_at": null, "agent_id": "ops", "team_id": null,
        "workflow_id": null, "user_id": user, "schedule_id": null, "schedule_run_id": null, "source_name": "Ops ✓",
        "requirements": [{"id": "r1", "tool_execution": {"tool_call_id": format!("call-{id}"), "tool_name": "delete_everything"}}],
        "context": {"tool_names": ["delete_everything"], "source_name": "Ops ✓"}, "resolution_data": null,
        "resolved_by": null, "resolved_at": null, "created_at": at, "updated_at": null, "run_status": "PAUSED"
    }))
    .expect("an approval")
}

fn decision(status: &str, by: &str, at: i64) -> ApprovalDecision {
    ApprovalDecision {
        status: status.to_owned(),
        resolved_by: Some(by.to_owned()),
        resolution_data: Some(json!({"note": "checked"}).as_object().cloned().unwrap_or_default()),
        resolved_at: at,
    }
}

/// Approvals round-trip with every field; listing filters (byte for byte), orders newest first,
/// pages and counts; pending counts per user; deletes say whether they found the row.
pub async fn approvals_round_trip_filter_and_count<D: ApprovalStore + ?Sized>(db: Arc<D>) {
    let a = approval("a1", "run-1", Some("alice"), 100);
    db.create_approval(&a).await.expect("created");
    assert_eq!(db.get_approval("a1").await.expect("read"), Some(a.clone()), "every field round-trips");
    let dup = db.create_approval(&a).await.expect_err("the same id twice is refused");
    assert_eq!(dup.kind(), agno_core::DbErrorKind::Conflict);
    let mut audit = approval("a2", "run-1", Some("alice"), 200);
    audit.approval_type = Some("audit".into());
    audit.status = "approved".into();
    db.create_approval(&audit).await.expect("created");
    db.create_approval(&approval("a3", "run-2", Some("Alice"), 300)).await.expect("created");
    db.create_approval(&approval("a4", "run-3", None, 400)).await.expect("created");

    let all = db.get_approvals(&ApprovalQuery::default()).await.expect("listed");
    assert_eq!(all.1, 4);
    let ids: Vec<&str> = all.0.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["a4", "a3", "a2", "a1"], "newest first");
    let alice = ApprovalQuery { user_id: Some("alice".into()), ..Default::default() };
    let (mine, total) = db.get_approvals(&alice).await.expect("listed");
    assert_eq!(total, 2, "user ids compare byte for byte: Alice is another user");
    assert!(mine.iter().all(|a| a.user_id.as_deref() == Some("alice")));
    let pending_required = ApprovalQuery {
        run_id: Some("run-1".into()),
        status: Some("pending".into()),
        approval_type: Some("required".into()),
        ..Default::default()
    };
    let (found, _) = db.get_approvals(&pending_required).await.expect("listed");
    assert_eq!(found.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(), ["a1"]);
    let page = ApprovalQuery { limit: Some(2), page: Some(2), ..Default::default() };
    let (second, total) = db.get_approvals(&page).await.expect("listed");
    assert_eq!((second.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(), total), (vec!["a2", "a1"], 4));

    assert_eq!(db.count_pending_approvals(None).await.expect("counted"), 3);
    assert_eq!(db.count_pending_approvals(Some("alice")).await.expect("counted"), 1);
    assert_eq!(db.count_pending_approvals(Some("nobody")).await.expect("counted"), 0);

    assert!(db.delete_approval("a4").await.expect("deleted"));
    assert!(!db.delete_approval("a4").await.expect("a second delete finds nothing"));
    assert!(db.get_approval("a4").await.expect("read").is_none());
}

/// A resolve is a compare-and-set from pending: the first wins, a second (or a concurrent one)
/// is refused with the row as it stands; an unknown id is not found; the run status follows the
/// run; a lapsed approval expires and cannot be resolved.
pub async fn approvals_resolve_once_and_expire<D: ApprovalStore + ?Sized + 'static>(db: Arc<D>) {
    db.create_approval(&approval("b1", "run-9", Some("bob"), 10)).await.expect("created");
    let done = db.resolve_approval("b1", &decision("approved", "admin", 50)).await.expect("resolved");
    let Resolved::Done(a) = done else { panic!("the first resolve wins: {done:?}") };
    assert_eq!((a.status.as_str(), a.resolved_by.as_deref(), a.resolved_at), ("approved", Some("admin"), Some(50)));
    assert_eq!(a.resolution_data, json!({"note": "checked"}).as_object().cloned());
    let again = db.resolve_approval("b1", &decision("rejected", "other", 60)).await.expect("answered");
    let Resolved::NotPending(a) = again else { panic!("a second resolve is refused: {again:?}") };
    assert_eq!((a.status.as_str(), a.resolved_by.as_deref()), ("approved", Some("admin")), "nothing changed");
    assert_eq!(
        db.resolve_approval("nope", &decision("approved", "admin", 60)).await.expect("answered"),
        Resolved::NotFound
    );

    // Concurrent resolves: exactly one wins.
    db.create_approval(&approval("b2", "run-9", Some("bob"), 20)).await.expect("created");
    let racers: Vec<_> = (0..6)
        .map(|i| {
            let db = Arc::clone(&db);
            tokio::spawn(async move {
                let status = if i % 2 == 0 { "approved" } else { "rejected" };
                db.resolve_approval("b2", &decision(status, &format!("admin-{i}"), 70 + i)).await.expect("answered")
            })
        })
        .collect();
    let mut wins = 0;
    for r in racers {
        if matches!(r.await.expect("joined"), Resolved::Done(_)) {
            wins += 1;
        }
    }
    assert_eq!(wins, 1, "one of six concurrent resolves wins");

    assert_eq!(db.set_approval_run_status("run-9", "COMPLETED", 80).await.expect("updated"), 2);
    let b1 = db.get_approval("b1").await.expect("read").expect("present");
    assert_eq!((b1.run_status.as_deref(), b1.updated_at), (Some("COMPLETED"), Some(80)));
    assert_eq!(db.set_approval_run_status("no-run", "COMPLETED", 80).await.expect("updated"), 0);

    let mut lapsing = approval("b3", "run-10", Some("bob"), 30);
    lapsing.expires_at = Some(100);
    db.create_approval(&lapsing).await.expect("created");
    assert_eq!(db.expire_approvals(99).await.expect("expired"), 0, "not yet");
    let late = db.resolve_approval("b3", &decision("approved", "admin", 100)).await.expect("answered");
    let Resolved::NotPending(a) = late else { panic!("an approval past its expiry is not resolved: {late:?}") };
    assert_eq!(a.status, "expired");
    assert_eq!(db.get_approval("b3").await.expect("read").expect("present").status, "expired");
    let mut other = approval("b4", "run-11", None, 40);
    other.expires_at = Some(150);
    db.create_approval(&other).await.expect("created");
    assert_eq!(db.expire_approvals(150).await.expect("expired"), 1);
    assert_eq!(db.expire_approvals(150).await.expect("expired"), 0, "expiry happens once");
    assert_eq!(db.count_pending_approvals(None).await.expect("counted"), 0);
}
