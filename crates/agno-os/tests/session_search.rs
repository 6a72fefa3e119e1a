//! `POST /sessions/search` and `GET /sessions/filter-schema` over HTTP, on SQLite (the filter
//! compiled to SQL) and in memory (evaluated in process): the same sessions either way, in
//! `GET /sessions`'s shape; bad filters are a 422 naming the problem. (Every adapter's evaluation
//! is checked by the storage conformance case `session_search_filters_in_the_store`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{TestOs, config, detail, sqlite_url};
use serde_json::{Value, json};

async fn create(os: &TestOs, kind: &str, body: Value) {
    let r = os.post_json(&format!("/sessions?type={kind}"), &body, None).await;
    assert!(r.status == 200 || r.status == 201, "{} {:?}", r.status, r.body);
}

fn ids(body: &Value) -> Vec<String> {
    body["data"].as_array().unwrap().iter().map(|s| s["session_id"].as_str().unwrap().to_owned()).collect()
}

async fn search(os: &TestOs, body: Value) -> (u16, Value) {
    let r = os.post_json("/sessions/search", &body, None).await;
    (r.status, r.body)
}

async fn searches_sessions(db_url: &str) {
    let cfg = format!("[db]\nurl = \"{db_url}\"\n[[agents]]\nid = \"writer\"\nmodel = \"test\"\n");
    let os = TestOs::start(config(&cfg)).await;
    create(
        &os,
        "agent",
        json!({"session_id": "s-report", "session_name": "Q3 Report", "user_id": "alice", "agent_id": "writer"}),
    )
    .await;
    create(
        &os,
        "agent",
        json!({"session_id": "s-list", "session_name": "groceries", "user_id": "bob", "agent_id": "writer"}),
    )
    .await;
    create(
        &os,
        "team",
        json!({"session_id": "s-team", "session_name": "team sync", "user_id": "alice", "team_id": "desk"}),
    )
    .await;

    let (status, body) =
        search(&os, json!({"filter": {"op": "CONTAINS", "key": "session_name", "value": "report"}})).await;
    assert_eq!(status, 200, "{body:?}");
    assert_eq!(ids(&body), ["s-report"]);
    assert_eq!(body["meta"]["total_count"], 1);
    // The same shape as GET /sessions: each item as it lists them.
    let listed = os.get("/sessions?type=agent", None).await.body;
    let item = listed["data"].as_array().unwrap().iter().find(|s| s["session_id"] == "s-report").unwrap().clone();
    assert_eq!(body["data"][0], item);

    let either = json!({"filter": {"op": "OR", "conditions": [
        {"op": "EQ", "key": "session_type", "value": "team"},
        {"op": "AND", "conditions": [
            {"op": "IN", "key": "user_id", "values": ["bob"]},
            {"op": "NOT", "condition": {"op": "STARTSWITH", "key": "session_name", "value": "Q3"}}
        ]}
    ]}, "sort_by": "created_at", "sort_order": "asc"});
    let (status, body) = search(&os, either).await;
    assert_eq!(status, 200, "{body:?}");
    let mut found = ids(&body);
    found.sort();
    assert_eq!(found, ["s-list", "s-team"]);
    let (_, all) = search(&os, json!({})).await;
    assert_eq!(all["meta"]["total_count"], 3, "no filter: every session");
    let (_, paged) = search(&os, json!({"limit": 1, "page": 2})).await;
    assert_eq!((ids(&paged).len(), paged["meta"]["total_count"].as_u64()), (1, Some(3)));
    let (_, recent) =
        search(&os, json!({"filter": {"op": "GTE", "key": "created_at", "value": "2020-01-01T00:00:00Z"}})).await;
    assert_eq!(recent["meta"]["total_count"], 3, "times read as ISO-8601 or epoch seconds");

    // Bad input: 422 naming the problem.
    for (body, says) in [
        (json!({"filter": {"op": "EQ", "key": "password", "value": "x"}}), "Invalid filter field: \"password\""),
        (json!({"filter": {"op": "LIKE", "key": "session_name", "value": "x"}}), "Unknown filter operator: LIKE"),
        (json!({"filter": {"op": "EQ", "key": "session_type", "value": "robot"}}), "session_type is one of"),
        (json!({"filter": {"op": "GT", "key": "created_at", "value": "yesterday"}}), "Invalid created_at format"),
        (json!({"filter": {"op": "AND", "conditions": []}}), "AND filter requires 'conditions'"),
        (json!({"limit": 101}), "less than or equal to 100"),
        (json!({"sort_by": "name"}), "'created_at' or 'updated_at'"),
        (json!({"query": "x"}), "query"),
    ] {
        let (status, answer) = search(&os, body.clone()).await;
        assert_eq!(status, 422, "{body}: {answer:?}");
        assert!(detail(&answer).contains(says), "{body}: {}", detail(&answer));
    }
    let r = os.post_form("/sessions/search", &[("filter", "x")], None).await;
    assert_eq!(r.status, 422, "a body that is not JSON: {:?}", r.body);

    let schema = os.get("/sessions/filter-schema", None).await;
    assert_eq!(schema.status, 200);
    let keys: Vec<&str> =
        schema.body["fields"].as_array().unwrap().iter().map(|f| f["key"].as_str().unwrap()).collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        [
            "agent_id",
            "created_at",
            "session_id",
            "session_name",
            "session_type",
            "team_id",
            "updated_at",
            "user_id",
            "workflow_id"
        ],
        "every field the search reads, and no other"
    );
    assert_eq!(schema.body["logical_operators"], json!(["AND", "OR"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_searched_in_sql_on_sqlite() {
    searches_sessions(&sqlite_url("session-search")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_searched_in_process_in_memory() {
    searches_sessions("memory://").await;
}
