//! Memory, metrics, eval-run and database-migration routes against a real server: shapes as
//! Agno answers them, validation errors, 404s, and user isolation between two JWT users.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::sync::Arc;

use agno_core::{Db, EvalRunRecord, EvalType, UserMemory};
use common::{SECRET, TestOs, config, detail, token};
use serde_json::{Map, Value, json};

const OPEN: &str = r#"
[os]
id = "records-os"
[db]
url = "memory://"
[[agents]]
id = "calc"
model = "test"
"#;

fn isolated_config() -> String {
    format!(
        r#"
[os]
id = "records-os"
[db]
url = "memory://"
[auth]
mode = "jwt"
verification_keys = ["{SECRET}"]
user_isolation = true
[[agents]]
id = "calc"
model = "test"
"#
    )
}

const USER_SCOPES: &[&str] = &[
    "memories:read",
    "memories:write",
    "memories:delete",
    "evals:read",
    "evals:write",
    "evals:delete",
    "metrics:read",
    "metrics:write",
    "agents:run",
];

struct Users {
    alice: String,
    bob: String,
    admin: String,
}

fn users() -> Users {
    Users {
        alice: token("alice", USER_SCOPES),
        bob: token("bob", USER_SCOPES),
        admin: token("root", &["agent_os:admin"]),
    }
}

fn db(os: &TestOs) -> Arc<dyn Db> {
    os.os.state.db.clone().unwrap()
}

fn ids(body: &Value, field: &str) -> Vec<String> {
    body["data"].as_array().unwrap().iter().map(|m| m[field].as_str().unwrap().to_owned()).collect()
}

fn assert_iso(v: &Value) {
    let s = v.as_str().unwrap_or_else(|| panic!("not a timestamp: {v}"));
    assert!(chrono::DateTime::parse_from_rfc3339(s).is_ok() && s.ends_with('Z'), "{s}");
}

fn today() -> String {
    chrono::Utc::now().date_naive().to_string()
}

async fn create_memory(os: &TestOs, body: Value, token: Option<&str>) -> Value {
    let r = os.post_json("/memories", &body, token).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

#[tokio::test]
async fn memories_are_created_listed_updated_and_deleted() {
    let os = TestOs::start(config(OPEN)).await;
    let m1 =
        create_memory(&os, json!({"memory": "likes tea", "user_id": "u1", "topics": ["food", "drinks"]}), None).await;
    assert_eq!(m1["memory"], "likes tea");
    assert_eq!(m1["user_id"], "u1");
    assert_eq!(m1["topics"], json!(["food", "drinks"]));
    assert_eq!(m1["agent_id"], Value::Null);
    assert_iso(&m1["updated_at"]);
    let keys: Vec<&str> = m1.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 7, "UserMemorySchema fields: {keys:?}");
    let m1_id = m1["memory_id"].as_str().unwrap().to_owned();
    let m2 = create_memory(&os, json!({"memory": "works at night", "user_id": "u1"}), None).await;
    assert_eq!(m2["topics"], json!([]), "missing topics are stored empty");
    create_memory(&os, json!({"memory": "plays chess", "user_id": "u2", "topics": ["games"]}), None).await;
    let mut by_agent = UserMemory::new("made by an agent", Some("u2"));
    by_agent.agent_id = Some("calc".to_owned());
    db(&os).upsert_user_memory(&by_agent).await.unwrap();

    // Validation.
    let r = os.post_json("/memories", &json!({"memory": "no owner"}), None).await;
    assert_eq!((r.status, r.body["detail"].as_str()), (400, Some("User ID is required")));
    assert_eq!(os.post_json("/memories", &json!({"memory": "", "user_id": "u1"}), None).await.status, 422);
    assert_eq!(os.post_json("/memories", &json!({"user_id": "u1"}), None).await.status, 422);
    let long = "x".repeat(5001);
    assert_eq!(os.post_json("/memories", &json!({"memory": long, "user_id": "u1"}), None).await.status, 422);
    let r = os
        .client
        .post(format!("{}/memories", os.base))
        .header("content-type", "application/json")
        .body("{bad json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert!(detail(&body).contains("JSON"), "{body}");

    // Listing, filters and paging.
    let r = os.get("/memories", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["meta"]["total_count"], 4);
    assert_eq!(r.body["meta"]["page"], 1);
    assert_eq!(r.body["meta"]["limit"], 20);
    assert_eq!(r.body["meta"]["total_pages"], 1);
    assert!(r.body["meta"]["search_time_ms"].as_f64().unwrap() >= 0.0);
    let r = os.get("/memories?user_id=u1", None).await;
    assert_eq!(r.body["meta"]["total_count"], 2);
    let r = os.get("/memories?topics=games,drinks", None).await;
    assert_eq!(r.body["meta"]["total_count"], 2, "topics match any of the list");
    let r = os.get("/memories?topics=games&topics=drinks", None).await;
    assert_eq!((r.status, &r.body["meta"]["total_count"]), (200, &json!(2)), "a repeated parameter is a list");
    let r = os.get("/memories?search_content=CHESS", None).await;
    assert_eq!(ids(&r.body, "memory"), ["plays chess"]);
    let r = os.get("/memories?agent_id=calc", None).await;
    assert_eq!(ids(&r.body, "memory"), ["made by an agent"]);
    let r = os.get("/memories?limit=3&page=2", None).await;
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["meta"]["total_pages"], 2);
    assert_eq!(r.body["meta"]["page"], 2);
    let asc = os.get("/memories?sort_by=created_at&sort_order=asc", None).await;
    let desc = os.get("/memories?sort_by=created_at&sort_order=desc", None).await;
    let mut reversed = ids(&desc.body, "memory_id");
    reversed.reverse();
    assert_eq!(ids(&asc.body, "memory_id").len(), 4);
    // Same-second timestamps tie-break by id, so the two orders are exact reverses.
    assert_eq!(ids(&asc.body, "memory_id"), reversed);
    for bad in ["limit=0", "limit=abc", "page=-1", "sort_order=sideways", "sort_by=memory"] {
        let r = os.get(&format!("/memories?{bad}"), None).await;
        assert_eq!(r.status, 422, "{bad}: {}", r.body);
        assert!(r.body["detail"][0]["msg"].is_string(), "FastAPI's validation error list for {bad}: {}", r.body);
    }
    assert_eq!(os.get("/memories?db_id=other", None).await.status, 404);
    assert_eq!(os.get("/memories?db_id=default", None).await.status, 200);
    // One database: `table` alone is taken (Python asks for `db_id` with it).
    assert_eq!(os.get("/memories?table=agno_memories", None).await.status, 200);

    // One memory.
    let r = os.get(&format!("/memories/{m1_id}"), None).await;
    assert_eq!((r.status, &r.body["memory"]), (200, &json!("likes tea")));
    let r = os.get("/memories/nope", None).await;
    assert_eq!((r.status, r.body["detail"].as_str()), (404, Some("Memory with ID nope not found")));
    assert_eq!(os.get(&format!("/memories/{m1_id}?user_id=u2"), None).await.status, 404);

    // Update: text and topics replaced, the owner kept.
    let r = os
        .patch_json(&format!("/memories/{m1_id}"), &json!({"memory": "likes green tea", "topics": ["tea"]}), None)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["memory"], "likes green tea");
    assert_eq!(r.body["topics"], json!(["tea"]));
    assert_eq!(r.body["user_id"], "u1");
    assert_eq!(r.body["memory_id"], json!(m1_id));
    assert_eq!(os.patch_json("/memories/nope", &json!({"memory": "x", "user_id": "u1"}), None).await.status, 404);
    assert_eq!(os.patch_json(&format!("/memories/{m1_id}"), &json!({"memory": ""}), None).await.status, 422);

    // Topics and stats.
    let r = os.get("/memory_topics", None).await;
    assert_eq!(r.body, json!(["games", "tea"]));
    let r = os.get("/memory_topics?user_id=u2", None).await;
    assert_eq!(r.body, json!(["games"]));
    let r = os.get("/user_memory_stats", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["meta"]["total_count"], 2);
    let mut stats: Vec<(String, u64)> = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert_iso(&s["last_memory_updated_at"]);
            (s["user_id"].as_str().unwrap().to_owned(), s["total_memories"].as_u64().unwrap())
        })
        .collect();
    stats.sort();
    assert_eq!(stats, [("u1".to_owned(), 2), ("u2".to_owned(), 2)]);
    let r = os.get("/user_memory_stats?limit=1", None).await;
    assert_eq!((r.body["data"].as_array().unwrap().len(), &r.body["meta"]["total_pages"]), (1, &json!(2)));
    assert_eq!(os.get("/user_memory_stats?limit=0", None).await.status, 422);

    // Deletes.
    let r = os.delete(&format!("/memories/{m1_id}"), None).await;
    assert_eq!(r.status, 204);
    assert_eq!(os.delete(&format!("/memories/{m1_id}"), None).await.status, 204, "again: 204, as Agno");
    assert_eq!(os.get(&format!("/memories/{m1_id}"), None).await.status, 404);
    let m2_id = m2["memory_id"].as_str().unwrap();
    let r = os.delete_json("/memories", &json!({"memory_ids": [m2_id, "missing"]}), None).await;
    assert_eq!(r.status, 204);
    assert_eq!(os.get("/memories?user_id=u1", None).await.body["meta"]["total_count"], 0);
    assert_eq!(os.delete_json("/memories", &json!({"memory_ids": []}), None).await.status, 422);
    assert_eq!(os.delete_json("/memories", &json!({"ids": ["x"]}), None).await.status, 422);
    assert_eq!(os.delete("/memories", None).await.status, 422, "a bulk delete needs its body");
}

#[tokio::test]
async fn memories_are_isolated_per_user() {
    let os = TestOs::start(config(&isolated_config())).await;
    let u = users();
    assert_eq!(os.get("/memories", None).await.status, 401);
    let reader = token("carol", &["memories:read"]);
    assert_eq!(os.post_json("/memories", &json!({"memory": "x"}), Some(&reader)).await.status, 403);
    assert_eq!(os.delete_json("/memories", &json!({"memory_ids": ["x"]}), Some(&reader)).await.status, 403);

    // A created memory belongs to its creator whatever user_id says.
    let a = create_memory(&os, json!({"memory": "alice likes tea", "user_id": "bob", "topics": ["a"]}), Some(&u.alice))
        .await;
    assert_eq!(a["user_id"], "alice");
    let a_id = a["memory_id"].as_str().unwrap().to_owned();
    let b = create_memory(&os, json!({"memory": "bob likes coffee", "topics": ["b"]}), Some(&u.bob)).await;
    assert_eq!(b["user_id"], "bob");
    let b_id = b["memory_id"].as_str().unwrap().to_owned();

    // Alice sees only hers, whatever she asks for.
    for path in ["/memories", "/memories?user_id=bob"] {
        let r = os.get(path, Some(&u.alice)).await;
        assert_eq!(ids(&r.body, "memory_id"), [a_id.as_str()], "{path}");
        assert_eq!(r.body["meta"]["total_count"], 1);
    }
    assert_eq!(os.get("/memory_topics?user_id=bob", Some(&u.alice)).await.body, json!(["a"]));
    let r = os.get("/user_memory_stats", Some(&u.alice)).await;
    assert_eq!(ids(&r.body, "user_id"), ["alice"]);
    assert_eq!(r.body["meta"]["total_count"], 1);

    // Bob's memory does not exist for Alice.
    let r = os.get(&format!("/memories/{b_id}"), Some(&u.alice)).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.body["detail"], format!("Memory with ID {b_id} not found"));
    let patch = json!({"memory": "hijacked", "user_id": "alice"});
    assert_eq!(os.patch_json(&format!("/memories/{b_id}"), &patch, Some(&u.alice)).await.status, 404);
    // Deleting answers 204 whatever the id (as Agno), so it reveals nothing; Bob's memory stays
    // (checked below).
    assert_eq!(os.delete(&format!("/memories/{b_id}"), Some(&u.alice)).await.status, 204);
    assert_eq!(os.delete(&format!("/memories/{b_id}?user_id=bob"), Some(&u.alice)).await.status, 204);
    let r = os.delete_json("/memories", &json!({"memory_ids": [b_id], "user_id": "bob"}), Some(&u.alice)).await;
    assert_eq!(r.status, 204);
    let r = os.get(&format!("/memories/{b_id}"), Some(&u.bob)).await;
    assert_eq!((r.status, &r.body["memory"]), (200, &json!("bob likes coffee")), "Bob's memory is untouched");

    // Alice's own update keeps her as owner.
    let r = os
        .patch_json(
            &format!("/memories/{a_id}"),
            &json!({"memory": "alice likes green tea", "user_id": "bob"}),
            Some(&u.alice),
        )
        .await;
    assert_eq!((r.status, &r.body["user_id"]), (200, &json!("alice")));

    // The admin sees everyone's and filters by user.
    let r = os.get("/memories", Some(&u.admin)).await;
    assert_eq!(r.body["meta"]["total_count"], 2);
    let r = os.get("/memories?user_id=bob", Some(&u.admin)).await;
    assert_eq!(ids(&r.body, "memory_id"), [b_id.as_str()]);
    // Alice's update sent no topics: Agno replaces them with none.
    assert_eq!(os.get("/memory_topics", Some(&u.admin)).await.body, json!(["b"]));
    assert_eq!(os.get("/user_memory_stats", Some(&u.admin)).await.body["meta"]["total_count"], 2);
    let r = os.post_json("/memories", &json!({"memory": "for bob", "user_id": "bob"}), Some(&u.admin)).await;
    assert_eq!(r.body["user_id"], "bob");
    assert_eq!(os.delete(&format!("/memories/{b_id}"), Some(&u.admin)).await.status, 204);
}

#[tokio::test]
async fn memories_are_optimized_for_the_caller_only() {
    let os = TestOs::start(config(&isolated_config())).await;
    let u = users();
    for text in ["alice likes green tea", "alice lives in Oslo"] {
        create_memory(&os, json!({"memory": text, "topics": ["a"]}), Some(&u.alice)).await;
    }
    let b = create_memory(&os, json!({"memory": "bob likes coffee"}), Some(&u.bob)).await;
    let optimize = |body: Value, who: &str| {
        let (os, who) = (&os, who.to_owned());
        async move { os.post_json("/optimize-memories", &body, Some(&who)).await }
    };

    // A preview: Alice's two memories (whatever user_id says) become one, nothing is stored.
    let r = optimize(json!({"user_id": "bob", "model": "test", "apply": false}), &u.alice).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!((r.body["memories_before"].as_u64(), r.body["memories_after"].as_u64()), (Some(2), Some(1)));
    let summary = &r.body["memories"][0];
    assert_eq!((&summary["user_id"], &summary["topics"]), (&json!("alice"), &json!(["a"])));
    assert!(!summary["memory"].as_str().unwrap().is_empty());
    assert_iso(&summary["updated_at"]);
    let before = r.body["tokens_before"].as_u64().unwrap();
    let saved = r.body["tokens_saved"].as_u64().unwrap();
    assert_eq!(before, ("alice likes green tea".len() / 4 + "alice lives in Oslo".len() / 4) as u64);
    assert_eq!(before.saturating_sub(r.body["tokens_after"].as_u64().unwrap()), saved);
    assert!(r.body["reduction_percentage"].is_number());
    assert_eq!(os.get("/memories", Some(&u.alice)).await.body["meta"]["total_count"], 2);

    // Applied: Alice has the one summary; Bob's memory is untouched.
    let r = optimize(json!({"user_id": "alice", "model": "test"}), &u.alice).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let listed = os.get("/memories", Some(&u.alice)).await;
    assert_eq!(ids(&listed.body, "memory_id"), [r.body["memories"][0]["memory_id"].as_str().unwrap()]);
    let bob = os.get("/memories", Some(&u.bob)).await;
    assert_eq!(ids(&bob.body, "memory_id"), [b["memory_id"].as_str().unwrap()]);

    // Errors: no memories 404, a model that cannot be built 400, no user_id 422, no write scope 403.
    let carol = token("carol", USER_SCOPES);
    let r = optimize(json!({"user_id": "carol", "model": "test"}), &carol).await;
    assert_eq!((r.status, detail(&r.body)), (404, "No memories found for user carol".to_owned()));
    let r = optimize(json!({"user_id": "alice", "model": "nowhere:x"}), &u.alice).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(detail(&r.body).contains("unknown model provider"), "{}", r.body);
    assert_eq!(optimize(json!({"model": "test"}), &u.alice).await.status, 422);
    assert_eq!(optimize(json!({"user_id": "alice"}), &token("dave", &["memories:read"])).await.status, 403);
    assert_eq!(os.get("/memories", Some(&u.alice)).await.body["meta"]["total_count"], 1, "failed calls change nothing");
}

fn eval_run(id: &str, kind: EvalType, user: Option<&str>, target: (&str, &str), model: &str, at: i64) -> EvalRunRecord {
    let mut data = Map::new();
    data.insert("eval_status".to_owned(), json!("PASSED"));
    EvalRunRecord {
        run_id: id.to_owned(),
        eval_type: kind,
        eval_data: data,
        eval_input: Some(Map::from_iter([("input".to_owned(), json!("2+2"))])),
        name: Some(format!("eval {id}")),
        agent_id: (target.0 == "agent").then(|| target.1.to_owned()),
        team_id: (target.0 == "team").then(|| target.1.to_owned()),
        workflow_id: None,
        model_id: Some(model.to_owned()),
        model_provider: Some("OpenAI".to_owned()),
        evaluated_component_name: None,
        user_id: user.map(str::to_owned),
        created_at: Some(at),
        updated_at: Some(at),
    }
}

async fn seed_evals(os: &TestOs, owners: [Option<&str>; 3]) {
    let db = db(os);
    let runs = [
        eval_run("e1", EvalType::Accuracy, owners[0], ("agent", "calc"), "gpt-4o", 1_700_000_000),
        eval_run("e2", EvalType::Performance, owners[1], ("team", "crew"), "gpt-4o-mini", 1_700_000_100),
        eval_run("e3", EvalType::Reliability, owners[2], ("agent", "calc"), "gpt-4o", 1_700_000_200),
    ];
    for run in &runs {
        db.create_eval_run(run).await.unwrap();
    }
}

#[tokio::test]
async fn eval_runs_are_listed_renamed_and_deleted() {
    let os = TestOs::start(config(OPEN)).await;
    seed_evals(&os, [None, None, None]).await;
    let r = os.get("/eval-runs", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(ids(&r.body, "id"), ["e3", "e2", "e1"], "newest first");
    assert_eq!(
        r.body["meta"],
        json!({"page": 1, "limit": 20, "total_pages": 1, "total_count": 3, "search_time_ms": r.body["meta"]["search_time_ms"]})
    );
    let e1 = &r.body["data"][2];
    assert_eq!(e1["eval_type"], "accuracy");
    assert_eq!(e1["agent_id"], "calc");
    assert_eq!(e1["eval_data"], json!({"eval_status": "PASSED"}));
    assert_eq!(e1["eval_input"], json!({"input": "2+2"}));
    assert_eq!(e1["created_at"], "2023-11-14T22:13:20Z");
    assert_eq!(e1["user_id"], Value::Null);
    assert_eq!(e1.as_object().unwrap().len(), 14, "EvalSchema fields");

    let cases = [
        ("sort_order=asc", vec!["e1", "e2", "e3"]),
        ("type=team", vec!["e2"]),
        ("type=agent", vec!["e3", "e1"]),
        ("filter_type=agent", vec!["e3", "e1"]),
        ("agent_id=calc", vec!["e3", "e1"]),
        ("team_id=crew", vec!["e2"]),
        ("model_id=gpt-4o-mini", vec!["e2"]),
        ("eval_types=accuracy,reliability", vec!["e3", "e1"]),
        ("eval_types=performance", vec!["e2"]),
        ("limit=2&page=2", vec!["e1"]),
        ("sort_by=created_at&sort_order=desc", vec!["e3", "e2", "e1"]),
    ];
    for (q, want) in cases {
        let r = os.get(&format!("/eval-runs?{q}"), None).await;
        assert_eq!(r.status, 200, "{q}: {}", r.body);
        assert_eq!(ids(&r.body, "id"), want, "{q}");
    }
    let r = os.get("/eval-runs?limit=2", None).await;
    assert_eq!(r.body["meta"]["total_pages"], 2);
    let r = os.get("/eval-runs?eval_types=accuracy,bogus", None).await;
    assert_eq!(r.status, 422);
    assert!(detail(&r.body).contains("Valid types: accuracy, agent_as_judge"), "{}", r.body);
    for bad in ["type=robot", "limit=0", "page=x", "sort_by=name", "sort_order=up"] {
        assert_eq!(os.get(&format!("/eval-runs?{bad}"), None).await.status, 422, "{bad}");
    }

    let r = os.get("/eval-runs/e2", None).await;
    assert_eq!((r.status, &r.body["id"], &r.body["team_id"]), (200, &json!("e2"), &json!("crew")));
    let r = os.get("/eval-runs/nope", None).await;
    assert_eq!((r.status, r.body["detail"].as_str()), (404, Some("Eval run with id 'nope' not found")));

    let r = os.patch_json("/eval-runs/e2", &json!({"name": "renamed"}), None).await;
    assert_eq!((r.status, &r.body["name"]), (200, &json!("renamed")));
    assert_eq!(os.get("/eval-runs/e2", None).await.body["name"], "renamed");
    assert_eq!(os.patch_json("/eval-runs/nope", &json!({"name": "x"}), None).await.status, 404);
    assert_eq!(os.patch_json("/eval-runs/e2", &json!({"name": ""}), None).await.status, 422);
    assert_eq!(os.patch_json("/eval-runs/e2", &json!({"name": "x".repeat(256)}), None).await.status, 422);
    assert_eq!(os.patch_json("/eval-runs/e2", &json!({}), None).await.status, 422);
    assert_eq!(os.patch_json("/eval-runs/e2", &json!("just a string"), None).await.status, 422);

    let r = os.delete_json("/eval-runs", &json!({"eval_run_ids": ["e1", "e2", "missing"]}), None).await;
    assert_eq!(r.status, 204);
    assert_eq!(ids(&os.get("/eval-runs", None).await.body, "id"), ["e3"]);
    assert_eq!(os.delete_json("/eval-runs", &json!({"eval_run_ids": []}), None).await.status, 422);
    assert_eq!(os.delete_json("/eval-runs", &json!({"eval_run_ids": "e3"}), None).await.status, 422);
    assert_ne!(os.post_json("/eval-runs", &json!({}), None).await.status, 200, "running evals is not offered");
}

#[tokio::test]
async fn eval_runs_are_isolated_per_user() {
    let os = TestOs::start(config(&isolated_config())).await;
    let u = users();
    seed_evals(&os, [Some("alice"), Some("bob"), Some("alice")]).await;
    assert_eq!(os.get("/eval-runs", Some(&token("carol", &["memories:read"]))).await.status, 403);
    let r = os.get("/eval-runs", Some(&u.alice)).await;
    assert_eq!(ids(&r.body, "id"), ["e3", "e1"]);
    assert_eq!(r.body["meta"]["total_count"], 2);
    assert_eq!(ids(&os.get("/eval-runs?team_id=crew", Some(&u.alice)).await.body, "id"), Vec::<String>::new());
    assert_eq!(os.get("/eval-runs/e2", Some(&u.alice)).await.status, 404);
    assert_eq!(os.patch_json("/eval-runs/e2", &json!({"name": "mine"}), Some(&u.alice)).await.status, 404);
    assert_eq!(os.delete_json("/eval-runs", &json!({"eval_run_ids": ["e2"]}), Some(&u.alice)).await.status, 204);
    let r = os.get("/eval-runs/e2", Some(&u.bob)).await;
    assert_eq!((r.status, &r.body["name"]), (200, &json!("eval e2")), "Bob's eval run is untouched");
    assert_eq!(ids(&os.get("/eval-runs", Some(&u.bob)).await.body, "id"), ["e2"]);
    let r = os.patch_json("/eval-runs/e1", &json!({"name": "alice's"}), Some(&u.alice)).await;
    assert_eq!((r.status, &r.body["name"]), (200, &json!("alice's")));
    assert_eq!(ids(&os.get("/eval-runs", Some(&u.admin)).await.body, "id"), ["e3", "e2", "e1"]);
    assert_eq!(os.get("/eval-runs/e2", Some(&u.admin)).await.status, 200);
}

async fn run_agent(os: &TestOs, token: &str) {
    let r = os.post_form("/agents/calc/runs", &[("message", "hello"), ("stream", "false")], Some(token)).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

fn day_ids(body: &Value) -> Vec<String> {
    body["metrics"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn metrics_are_per_user_and_refreshed() {
    let os = TestOs::start(config(&isolated_config())).await;
    let u = users();
    let empty = os.get("/metrics", Some(&u.alice)).await;
    assert_eq!((empty.status, &empty.body), (200, &json!({"metrics": [], "updated_at": null})));
    run_agent(&os, &u.alice).await;
    run_agent(&os, &u.bob).await;
    // The first read recalculated; within the minute reads trust it, so refresh explicitly.
    let r = os.post_json("/metrics/refresh", &json!({}), Some(&u.alice)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let rows = r.body.as_array().unwrap();
    assert_eq!(rows.len(), 1, "Alice's refresh answers her buckets only: {}", r.body);
    assert_eq!(rows[0]["id"], format!("{}_alice_daily", today()));

    let today = today();
    let r = os.get("/metrics", Some(&u.alice)).await;
    assert_eq!(r.status, 200);
    assert_eq!(day_ids(&r.body), [format!("{today}_alice_daily")]);
    let day = &r.body["metrics"][0];
    assert_eq!(day["agent_runs_count"], 1);
    assert_eq!(day["agent_sessions_count"], 1);
    assert_eq!(day["users_count"], 1);
    assert_eq!(day["date"], format!("{today}T00:00:00Z"));
    assert_iso(&day["created_at"]);
    assert_iso(&day["updated_at"]);
    assert_iso(&r.body["updated_at"]);
    assert!(day["token_metrics"].is_object());
    assert!(day["model_metrics"].is_array());
    assert!(day.get("user_id").is_none(), "DayAggregatedMetrics has no user_id");
    assert_eq!(day.as_object().unwrap().len(), 13);
    // Alice cannot ask for Bob's.
    assert_eq!(day_ids(&os.get("/metrics?user_id=bob", Some(&u.alice)).await.body), [format!("{today}_alice_daily")]);

    // The admin sees the day as a whole, or one user's.
    let r = os.get("/metrics", Some(&u.admin)).await;
    assert_eq!(day_ids(&r.body), [format!("{today}_daily")]);
    let day = &r.body["metrics"][0];
    assert_eq!((&day["agent_runs_count"], &day["users_count"]), (&json!(2), &json!(2)));
    let models = day["model_metrics"].as_array().unwrap();
    assert_eq!(models.len(), 1, "{models:?}");
    assert_eq!(models[0]["count"], 2);
    let r = os.get("/metrics?user_id=bob", Some(&u.admin)).await;
    assert_eq!(day_ids(&r.body), [format!("{today}_bob_daily")]);

    // Date range and validation.
    let tomorrow = (chrono::Utc::now().date_naive() + chrono::Days::new(1)).to_string();
    let r = os.get(&format!("/metrics?starting_date={tomorrow}"), Some(&u.admin)).await;
    assert_eq!(r.body["metrics"], json!([]));
    let r = os.get(&format!("/metrics?starting_date={today}&ending_date={today}"), Some(&u.admin)).await;
    assert_eq!(r.body["metrics"].as_array().unwrap().len(), 1);
    for bad in ["starting_date=2024-13-01", "ending_date=yesterday", "db_id=other"] {
        let r = os.get(&format!("/metrics?{bad}"), Some(&u.admin)).await;
        assert!(r.status == 422 || (bad.starts_with("db_id") && r.status == 404), "{bad}: {}", r.status);
    }

    // Reads within the minute do not recalculate; a refresh does.
    run_agent(&os, &u.alice).await;
    assert_eq!(os.get("/metrics", Some(&u.alice)).await.body["metrics"][0]["agent_runs_count"], 1);
    let r = os.post_json("/metrics/refresh", &json!({}), Some(&u.admin)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body[0]["id"], format!("{today}_daily"));
    assert_eq!(r.body[0]["agent_runs_count"], 3);
    assert_eq!(os.get("/metrics", Some(&u.alice)).await.body["metrics"][0]["agent_runs_count"], 2);

    // Background refresh and its status.
    let r = os.post_json("/metrics/refresh?background=true", &json!({}), Some(&u.alice)).await;
    assert_eq!(r.status, 202);
    assert!(["started", "already_running"].contains(&r.body["status"].as_str().unwrap()), "{}", r.body);
    let mut status = Value::Null;
    for _ in 0..100 {
        status = os.get("/metrics/refresh/status", Some(&u.alice)).await.body;
        if status["status"] != "running" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(status["status"], "completed", "{status}");
    assert_iso(&status["finished_at"]);
    assert_eq!(os.post_json("/metrics/refresh?background=maybe", &json!({}), Some(&u.alice)).await.status, 422);

    // Scopes.
    let reader = token("carol", &["metrics:read"]);
    assert_eq!(os.get("/metrics", Some(&reader)).await.status, 200);
    assert_eq!(os.post_json("/metrics/refresh", &json!({}), Some(&reader)).await.status, 403);
    assert_eq!(os.get("/metrics", Some(&token("dave", &["memories:read"]))).await.status, 403);
}

#[tokio::test]
async fn databases_migrate_up_and_refuse_unknown_ids() {
    let os = TestOs::start(config(OPEN)).await;
    let r = os.post_json("/databases/default/migrate", &json!({}), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body, json!({"message": "Database migrated successfully to latest version"}));
    let r = os.post_json("/databases/default/migrate?target_version=3.0.0", &json!({}), None).await;
    assert_eq!(r.body, json!({"message": "Database migrated successfully to version 3.0.0"}));
    let r = os.post_json("/databases/default/migrate?target_version=9.9.9", &json!({}), None).await;
    assert_eq!(r.status, 422);
    assert!(detail(&r.body).contains("3.0.0"), "{}", r.body);
    let r = os.post_json("/databases/nope/migrate", &json!({}), None).await;
    assert_eq!((r.status, r.body["detail"].as_str()), (404, Some("No database found with id 'nope'")));
    let r = os.post_json("/databases/all/migrate", &json!({}), None).await;
    assert_eq!(
        (r.status, &r.body),
        (200, &json!({"message": "All databases migrated successfully to latest version"}))
    );
    assert_eq!(os.post_json("/databases/all/migrate?target_version=bogus", &json!({}), None).await.status, 422);
}

#[tokio::test]
async fn databases_migrate_a_sqlite_file_and_need_config_write() {
    let path = std::env::temp_dir().join(format!("agno-os-records-{}.db", agno_core::new_id()));
    let toml = format!(
        r#"
[os]
id = "records-os"
[db]
id = "main-db"
url = "sqlite://{}"
[auth]
mode = "jwt"
verification_keys = ["{SECRET}"]
"#,
        path.display()
    );
    let os = TestOs::start(config(&toml)).await;
    let writer = token("ops", &["config:write"]);
    assert_eq!(os.post_json("/databases/main-db/migrate", &json!({}), None).await.status, 401);
    assert_eq!(
        os.post_json("/databases/main-db/migrate", &json!({}), Some(&token("x", &["config:read"]))).await.status,
        403
    );
    assert_eq!(os.post_json("/databases/default/migrate", &json!({}), Some(&writer)).await.status, 404);
    let r = os.post_json("/databases/main-db/migrate", &json!({}), Some(&writer)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    // The tables are at 3.0.0: going down is refused (agno-rs only migrates up).
    let r = os.post_json("/databases/main-db/migrate?target_version=2.5.0", &json!({}), Some(&writer)).await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(detail(&r.body).contains("only migrates up"), "{}", r.body);
    let r = os.post_json("/databases/all/migrate?target_version=2.5.0", &json!({}), Some(&writer)).await;
    assert_eq!(r.status, 207, "{}", r.body);
    assert_eq!(r.body["message"], "Migrated 0/1 databases to version 2.5.0");
    assert!(r.body["failed"]["main-db"].is_string(), "{}", r.body);
    // The OS keeps serving the migrated file.
    let m = os
        .post_json("/memories", &json!({"memory": "kept", "user_id": "u"}), Some(&token("root", &["agent_os:admin"])))
        .await;
    assert_eq!(m.status, 200, "{}", m.body);
    assert_eq!(
        os.get("/memories?db_id=main-db", Some(&token("root", &["agent_os:admin"]))).await.body["meta"]["total_count"],
        1
    );
    drop(os);
    let _ = std::fs::remove_file(&path);
}
