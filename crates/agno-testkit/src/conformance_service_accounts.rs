//! Conformance cases of service accounts (`agno_service_accounts`): kept by the SQL databases,
//! refused as unsupported by the others (as Python Agno's are).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic, clippy::needless_pass_by_value)]

use std::sync::Arc;

use agno_core::{DbErrorKind, ServiceAccount, ServiceAccountQuery, ServiceAccountStore, SortOrder};

fn account(id: &str, name: &str, user: Option<&str>, created_at: i64) -> ServiceAccount {
    ServiceAccount {
        id: id.to_owned(),
        name: name.to_owned(),
        user_id: user.map(str::to_owned),
        token_hash: format!("hash-of-{id}"),
        token_prefix: "agno_pat_abcdefg".to_owned(),
        scopes: vec!["agents:run".to_owned(), "sessions:read".to_owned()],
        created_at,
        expires_at: Some(created_at + 86_400),
        last_used_at: None,
        revoked_at: None,
        created_by: user.map(str::to_owned),
    }
}

fn query(user: Option<&str>, include_revoked: bool, sort_by: &'static str, order: SortOrder) -> ServiceAccountQuery {
    ServiceAccountQuery {
        include_revoked,
        limit: 20,
        page: 1,
        sort_by,
        sort_order: order,
        user_id: user.map(str::to_owned),
    }
}

fn names(found: &(Vec<ServiceAccount>, u64)) -> Vec<&str> {
    found.0.iter().map(|a| a.name.as_str()).collect()
}

/// Accounts round-trip every column; a name is unique among live accounts only; the token hash
/// finds its account; listings filter by owner (own and workspace-level), hide revoked ones on
/// request, sort and count; a revoke happens once.
pub async fn service_accounts_mint_find_list_revoke<D: ServiceAccountStore + ?Sized>(db: Arc<D>) {
    let ci = account("a1", "ci", Some("ann"), 100);
    db.create_service_account(&ci).await.expect("create");
    assert_eq!(db.get_service_account("a1", None).await.unwrap().as_ref(), Some(&ci), "every column round-trips");
    db.create_service_account(&account("a2", "bot", None, 200)).await.expect("a workspace-level account");
    db.create_service_account(&account("a3", "bobs", Some("bob"), 300)).await.expect("create");
    let taken = db.create_service_account(&account("a4", "ci", Some("bob"), 400)).await;
    assert_eq!(taken.map_err(|e| e.kind()), Err(DbErrorKind::Conflict), "a live name is taken");
    let same_hash = ServiceAccount { token_hash: "hash-of-a1".into(), ..account("a5", "other", None, 500) };
    assert_eq!(db.create_service_account(&same_hash).await.map_err(|e| e.kind()), Err(DbErrorKind::Conflict));

    assert_eq!(db.service_account_by_token("hash-of-a3").await.unwrap().map(|a| a.name), Some("bobs".to_owned()));
    assert!(db.service_account_by_token("hash-of-nothing").await.unwrap().is_none());
    assert_eq!(db.get_active_service_account("ci").await.unwrap().map(|a| a.id), Some("a1".to_owned()));
    // Scoped reads: own and workspace-level accounts only.
    assert!(db.get_service_account("a3", Some("ann")).await.unwrap().is_none(), "bob's account is not ann's");
    assert!(db.get_service_account("a2", Some("ann")).await.unwrap().is_some(), "workspace-level accounts are");

    let all = db.get_service_accounts(&query(None, true, "created_at", SortOrder::Desc)).await.unwrap();
    assert_eq!((names(&all), all.1), (vec!["bobs", "bot", "ci"], 3));
    let by_name = db.get_service_accounts(&query(None, true, "name", SortOrder::Asc)).await.unwrap();
    assert_eq!(names(&by_name), ["bobs", "bot", "ci"]);
    let anns = db.get_service_accounts(&query(Some("ann"), true, "created_at", SortOrder::Asc)).await.unwrap();
    assert_eq!((names(&anns), anns.1), (vec!["ci", "bot"], 2));
    let paged = ServiceAccountQuery { limit: 1, page: 2, ..query(None, true, "created_at", SortOrder::Asc) };
    let paged = db.get_service_accounts(&paged).await.unwrap();
    assert_eq!((names(&paged), paged.1), (vec!["bot"], 3));

    // A use is recorded on a live account.
    db.touch_service_account("a3", 700).await.unwrap();
    assert_eq!(db.get_service_account("a3", None).await.unwrap().unwrap().last_used_at, Some(700));

    // A revoke happens once, frees the name, and keeps the row.
    assert!(db.revoke_service_account("a1", 900).await.unwrap());
    assert!(!db.revoke_service_account("a1", 950).await.unwrap(), "revocation is one way and happens once");
    assert!(!db.revoke_service_account("missing", 950).await.unwrap());
    let revoked = db.get_service_account("a1", None).await.unwrap().unwrap();
    assert_eq!(revoked.revoked_at, Some(900));
    assert!(!revoked.usable_at(901));
    assert!(db.get_active_service_account("ci").await.unwrap().is_none());
    db.create_service_account(&account("a6", "ci", Some("ann"), 1000)).await.expect("a revoked name is free again");
    let live = db.get_service_accounts(&query(None, false, "created_at", SortOrder::Desc)).await.unwrap();
    assert_eq!((names(&live), live.1), (vec!["ci", "bobs", "bot"], 3));
    assert_eq!(live.0[0].id, "a6");
}

/// A database that does not keep service accounts says so for every call (Agno's 503), and
/// never answers as if there were none.
pub async fn service_accounts_unsupported<D: ServiceAccountStore + ?Sized>(db: Arc<D>) {
    let unsupported = |kind: Option<DbErrorKind>| assert_eq!(kind, Some(DbErrorKind::Unsupported));
    unsupported(db.create_service_account(&account("a1", "ci", None, 1)).await.err().map(|e| e.kind()));
    unsupported(db.get_service_account("a1", None).await.err().map(|e| e.kind()));
    unsupported(db.get_active_service_account("ci").await.err().map(|e| e.kind()));
    unsupported(db.service_account_by_token("h").await.err().map(|e| e.kind()));
    unsupported(
        db.get_service_accounts(&query(None, true, "created_at", SortOrder::Desc)).await.err().map(|e| e.kind()),
    );
    unsupported(db.revoke_service_account("a1", 1).await.err().map(|e| e.kind()));
    unsupported(db.touch_service_account("a1", 1).await.err().map(|e| e.kind()));
}
