//! Conformance cases of learnings (`agno_learnings`): kept by the SQL databases, refused as
//! unsupported by the others (as Python Agno's are).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic, clippy::needless_pass_by_value)]

use std::sync::Arc;

use agno_core::{Db, DbErrorKind, LearningQuery, LearningRecord, SortOrder};
use serde_json::{Map, Value, json};

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn record(id: &str, kind: &str, user: Option<&str>, at: i64, content: Value) -> LearningRecord {
    LearningRecord {
        learning_id: id.to_owned(),
        learning_type: kind.to_owned(),
        namespace: None,
        user_id: user.map(str::to_owned),
        agent_id: Some("helper".to_owned()),
        team_id: None,
        workflow_id: None,
        session_id: None,
        entity_id: None,
        entity_type: None,
        content: object(content),
        metadata: None,
        created_at: at,
        updated_at: Some(at),
    }
}

fn ids(found: &(Vec<LearningRecord>, u64)) -> Vec<&str> {
    found.0.iter().map(|r| r.learning_id.as_str()).collect()
}

/// Records round-trip every column (JSON content with non-ASCII text too); an upsert of an
/// existing id changes only content, metadata and `updated_at`; listings filter (a user's own
/// with or without the ownerless ones), sort (`updated_at`, newest first by default), page and
/// count; updates and deletes answer whether the record existed; a user's records are deleted by
/// type; the users holding records are listed with their newest change.
pub async fn learnings_round_trip_list_and_delete(db: Arc<dyn Db>) {
    let run = agno_core::new_id();
    let (ann, bob) = (format!("ann-{run}"), format!("bob-{run}"));
    let profile_id = format!("user_profile_{ann}");
    let mut profile =
        record(&profile_id, "user_profile", Some(&ann), 100, json!({"user_id": ann, "name": "Ann Müller"}));
    profile.metadata = Some(object(json!({"src": "api"})));
    db.upsert_learning(&profile).await.unwrap();
    assert_eq!(db.get_learning_by_id(&profile_id).await.unwrap().unwrap(), profile);

    // An upsert keeps identity and created_at.
    let mut again =
        record(&profile_id, "user_profile", Some("someone-else"), 200, json!({"user_id": ann, "name": "Ann M."}));
    again.created_at = 200;
    db.upsert_learning(&again).await.unwrap();
    let stored = db.get_learning_by_id(&profile_id).await.unwrap().unwrap();
    assert_eq!((stored.user_id.as_deref(), stored.created_at, stored.updated_at), (Some(ann.as_str()), 100, Some(200)));
    assert_eq!(stored.content["name"], "Ann M.");
    assert!(stored.metadata.is_none(), "metadata is replaced too");

    let memories = format!("memories_{ann}");
    db.upsert_learning(&record(&memories, "user_memory", Some(&ann), 150, json!({"memories": []}))).await.unwrap();
    let shared = format!("entity_global_company_acme-{run}");
    let mut entity = record(&shared, "entity_memory", None, 300, json!({"name": "Acme"}));
    entity.namespace = Some("global".to_owned());
    entity.entity_id = Some(format!("acme-{run}"));
    entity.entity_type = Some("company".to_owned());
    db.upsert_learning(&entity).await.unwrap();
    db.upsert_learning(&record(
        &format!("user_profile_{bob}"),
        "user_profile",
        Some(&bob),
        400,
        json!({"name": "Bob"}),
    ))
    .await
    .unwrap();

    let mut q = LearningQuery { user_id: Some(ann.clone()), limit: 10, page: 1, ..Default::default() };
    let own = db.list_learnings(&q).await.unwrap();
    assert_eq!(ids(&own), [profile_id.as_str(), memories.as_str()], "newest first");
    assert_eq!(own.1, 2);
    q.include_global = true;
    q.entity_type = None;
    let with_shared = db.list_learnings(&q).await.unwrap();
    assert!(ids(&with_shared).contains(&shared.as_str()) && with_shared.1 >= 3, "{:?}", ids(&with_shared));
    q.include_global = false;
    q.sort_by = Some("created_at");
    q.sort_order = SortOrder::Asc;
    q.limit = 1;
    q.page = 2;
    let paged = db.list_learnings(&q).await.unwrap();
    assert_eq!((ids(&paged), paged.1), (vec![memories.as_str()], 2));
    let typed = LearningQuery {
        learning_type: Some("entity_memory".into()),
        entity_id: Some(format!("acme-{run}")),
        limit: 10,
        page: 1,
        ..Default::default()
    };
    assert_eq!(ids(&db.list_learnings(&typed).await.unwrap()), [shared.as_str()]);

    assert!(
        db.update_learning(&memories, &object(json!({"memories": [1]})), Some(&object(json!({"k": 1}))), 500)
            .await
            .unwrap()
    );
    let updated = db.get_learning_by_id(&memories).await.unwrap().unwrap();
    assert_eq!(
        (updated.content["memories"].clone(), updated.updated_at, updated.metadata.unwrap()["k"].clone()),
        (json!([1]), Some(500), json!(1))
    );
    assert!(!db.update_learning("nope", &Map::new(), None, 500).await.unwrap());

    let (users, total) = db.learning_users(None, Some(&ann), true, SortOrder::Asc, 10, 1).await.unwrap();
    assert_eq!((users.len(), total, users[0].last_learning_updated_at), (1, 1, Some(500)));
    let (all, total) = db.learning_users(Some("user_profile"), None, true, SortOrder::Asc, 100, 1).await.unwrap();
    assert!(total >= 2 && all.iter().any(|u| u.user_id == bob) && all.iter().all(|u| !u.user_id.is_empty()));

    assert_eq!(db.delete_user_learnings(&ann, Some("user_memory")).await.unwrap(), 1);
    assert!(db.get_learning_by_id(&profile_id).await.unwrap().is_some(), "only that type");
    assert!(db.delete_learning(&profile_id).await.unwrap());
    assert!(!db.delete_learning(&profile_id).await.unwrap());
    assert_eq!(db.delete_user_learnings(&bob, None).await.unwrap(), 1);
    assert!(db.get_learning_by_id(&shared).await.unwrap().is_some(), "ownerless records stay");
    db.delete_learning(&shared).await.unwrap();
}

/// A database that keeps no learnings says so (Agno's 501).
pub async fn learnings_unsupported(db: Arc<dyn Db>) {
    let e = db.get_learning_by_id("x").await.unwrap_err();
    assert_eq!(e.kind(), DbErrorKind::Unsupported);
}
