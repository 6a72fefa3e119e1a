//! Session routes against a real server: create, list (filters, paging, sorting), read,
//! update, rename, delete (one and many), the runs of a session, validation errors and user
//! isolation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{SECRET, TestOs, config, detail, token};
use serde_json::{Value, json};

const CONFIG: &str = r#"
[os]
id = "test-os"
[db]
url = "memory://"
[[agents]]
id = "calc"
model = "test"
"#;

async fn os() -> TestOs {
    TestOs::start(config(CONFIG)).await
}

fn isolated_config() -> String {
    format!(
        r#"
[os]
id = "iso-os"
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

fn ids(body: &Value) -> Vec<&str> {
    body["data"].as_array().unwrap().iter().map(|s| s["session_id"].as_str().unwrap()).collect()
}

/// Runs the test agent once in `session_id` and returns the run id.
async fn run_agent(os: &TestOs, session_id: &str, message: &str, user: Option<&str>, tok: Option<&str>) -> String {
    let mut fields = vec![("message", message), ("stream", "false"), ("session_id", session_id)];
    if let Some(u) = user {
        fields.push(("user_id", u));
    }
    let r = os.post_form("/agents/calc/runs", &fields, tok).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body["run_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_session_is_created_with_agnos_detail_shape() {
    let os = os().await;
    let body = json!({
        "session_id": "s1", "session_name": "first", "session_state": {"a": 1},
        "metadata": {"m": 1, "agno_dispatch_depth": 3}, "agent_id": "calc", "user_id": "u1",
    });
    let r = os.post_json("/sessions", &body, None).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(r.body["session_id"], "s1");
    assert_eq!(r.body["agent_session_id"], "s1");
    assert_eq!(r.body["session_name"], "first");
    assert_eq!(r.body["session_state"], json!({"a": 1}));
    assert_eq!(r.body["metadata"], json!({"m": 1}), "reserved metadata keys are stripped");
    assert_eq!(r.body["agent_id"], "calc");
    assert_eq!(r.body["user_id"], "u1");
    assert_eq!(r.body["metrics"], json!({}));
    assert_eq!(r.body["chat_history"], json!([]));
    assert!(r.body["created_at"].as_str().unwrap().ends_with('Z'));
    assert!(r.body.get("total_tokens").is_none(), "nulls are left out of a created session");

    let r = os.post_json("/sessions", &json!({"session_id": "s1"}), None).await;
    assert_eq!(r.status, 409);
    assert!(detail(&r.body).contains("already exists"), "{:?}", r.body);

    let r = os.post_json("/sessions?type=team", &json!({"session_id": "t1", "team_id": "tm"}), None).await;
    assert_eq!(r.status, 201);
    assert_eq!(r.body["team_id"], "tm");
    assert!(r.body.get("agent_session_id").is_none(), "a team session has the team shape");
    assert_eq!(r.body["session_name"], "");

    let r = os.post_json("/sessions?type=workflow", &json!({"workflow_id": "wf"}), None).await;
    assert_eq!(r.status, 201);
    assert_eq!(r.body["workflow_id"], "wf");
    assert!(r.body.get("chat_history").is_none());

    // An empty body creates a session with a generated id.
    let resp = os.client.post(format!("{}/sessions", os.base)).send().await.unwrap();
    assert_eq!(resp.status(), 201);
    let created: Value = resp.json().await.unwrap();
    assert_eq!(created["session_id"].as_str().unwrap().len(), 36);

    // Validation.
    assert_eq!(os.post_json("/sessions?type=robot", &json!({}), None).await.status, 422);
    assert_eq!(os.post_json("/sessions", &json!([1]), None).await.status, 422);
    let r = os.post_json("/sessions", &json!({"session_state": "x"}), None).await;
    assert_eq!(r.status, 422);
    assert!(detail(&r.body).contains("session_state"));
    assert_eq!(os.post_json("/sessions", &json!({"session_id": 7}), None).await.status, 422);
    let resp = os
        .client
        .post(format!("{}/sessions", os.base))
        .header("content-type", "application/json")
        .body("{bad")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 422);
    let body: Value = resp.json().await.unwrap();
    assert!(detail(&body).contains("JSON"));
}

#[tokio::test]
async fn sessions_are_listed_with_filters_paging_and_sorting() {
    let os = os().await;
    for (id, agent, user, name) in
        [("a", "calc", "u1", "alpha"), ("b", "calc", "u2", "beta"), ("c", "other", "u1", "gamma")]
    {
        let body = json!({"session_id": id, "agent_id": agent, "user_id": user, "session_name": name});
        assert_eq!(os.post_json("/sessions", &body, None).await.status, 201);
    }
    os.post_json("/sessions?type=team", &json!({"session_id": "t", "team_id": "tm"}), None).await;

    let r = os.get("/sessions", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(ids(&r.body), ["t", "c", "b", "a"], "all types, newest first");
    assert_eq!(r.body["meta"]["page"], 1);
    assert_eq!(r.body["meta"]["limit"], 20);
    assert_eq!(r.body["meta"]["total_count"], 4);
    assert_eq!(r.body["meta"]["total_pages"], 1);
    assert!(r.body["meta"]["search_time_ms"].is_number());
    let row = &r.body["data"][3];
    assert_eq!(row["session_type"], "agent");
    assert_eq!(row["session_name"], "alpha");
    assert_eq!(row["user_id"], "u1");
    assert_eq!(row["agent_id"], "calc");
    assert!(row["created_at"].as_str().unwrap().ends_with('Z'));
    assert!(row.get("team_id").is_none(), "nulls are left out");
    assert_eq!(r.body["data"][0]["session_type"], "team");

    assert_eq!(ids(&os.get("/sessions?type=agent", None).await.body), ["c", "b", "a"]);
    assert_eq!(ids(&os.get("/sessions?type=team", None).await.body), ["t"]);
    assert_eq!(ids(&os.get("/sessions?type=agent&sort_order=asc", None).await.body), ["a", "b", "c"]);
    assert_eq!(
        ids(&os.get("/sessions?sort_by=updated_at&sort_order=asc&type=agent", None).await.body),
        ["a", "b", "c"]
    );
    assert_eq!(ids(&os.get("/sessions?component_id=calc", None).await.body), ["b", "a"]);
    assert_eq!(ids(&os.get("/sessions?user_id=u1", None).await.body), ["c", "a"]);
    assert_eq!(ids(&os.get("/sessions?session_name=et", None).await.body), ["b"]);
    let r = os.get("/sessions?type=agent&limit=2&page=2", None).await;
    assert_eq!(ids(&r.body), ["a"]);
    assert_eq!(
        r.body["meta"],
        json!({"page": 2, "limit": 2, "total_pages": 2, "total_count": 3, "search_time_ms": r.body["meta"]["search_time_ms"]})
    );
    assert_eq!(ids(&os.get("/sessions?page=9", None).await.body), Vec::<&str>::new());

    for bad in ["limit=0", "limit=x", "page=0", "sort_by=name", "sort_order=up", "type=robot"] {
        let r = os.get(&format!("/sessions?{bad}"), None).await;
        assert_eq!(r.status, 422, "{bad}: {:?}", r.body);
        assert!(!detail(&r.body).is_empty(), "{bad}");
    }
    assert_eq!(os.get("/sessions?db_id=other", None).await.status, 404);
    assert_eq!(os.get("/sessions?table=agno_sessions", None).await.status, 200);
    let db_id = os.get("/config", None).await.body["databases"][0].as_str().unwrap().to_owned();
    assert_eq!(os.get(&format!("/sessions?db_id={db_id}"), None).await.status, 200);
    assert_eq!(os.get(&format!("/sessions?db_id={db_id}&table=agno_sessions"), None).await.status, 200);
}

#[tokio::test]
async fn a_session_is_read_updated_and_renamed() {
    let os = os().await;
    let body = json!({"session_id": "s1", "session_state": {"a": 1}, "metadata": {"m": 1}, "agent_id": "calc"});
    os.post_json("/sessions", &body, None).await;

    let r = os.get("/sessions/s1", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["session_state"], json!({"a": 1}));
    let r = os.get("/sessions/nope", None).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.body["detail"], "Session with id 'nope' not found");
    assert_eq!(os.get("/sessions/nope?type=team", None).await.body["detail"], "Team Session with id 'nope' not found");
    assert_eq!(os.get("/sessions/s1?type=robot", None).await.status, 422);

    let patch = json!({
        "session_name": "renamed", "session_state": {"b": 2}, "metadata": {"k": "v"},
        "summary": {"summary": "talked", "topics": ["x"]},
    });
    let r = os.patch_json("/sessions/s1", &patch, None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["session_name"], "renamed");
    assert_eq!(r.body["session_state"], json!({"b": 2}), "an explicit session_state replaces the stored one");
    assert_eq!(r.body["metadata"], json!({"k": "v"}));
    assert_eq!(r.body["session_summary"], json!({"summary": "talked", "topics": ["x"]}));
    assert!(r.body["total_tokens"].is_null() && r.body.get("total_tokens").is_some(), "PATCH answers every field");

    // Without session_state the stored state is kept.
    let r = os.patch_json("/sessions/s1", &json!({"metadata": {"k": "w"}}), None).await;
    assert_eq!(r.status, 200);
    let r = os.get("/sessions/s1", None).await;
    assert_eq!(r.body["session_state"], json!({"b": 2}));
    assert_eq!(r.body["metadata"], json!({"k": "w"}));
    assert_eq!(r.body["session_name"], "renamed");
    assert_eq!(r.body["session_summary"]["summary"], "talked");

    assert_eq!(os.patch_json("/sessions/nope", &json!({"session_name": "x"}), None).await.status, 404);
    let r = os.patch_json("/sessions/s1", &json!({"summary": {"topics": []}}), None).await;
    assert_eq!(r.status, 422);
    assert!(detail(&r.body).contains("summary"));
    assert_eq!(os.patch_json("/sessions/s1", &json!({"session_state": [1]}), None).await.status, 422);
    assert_eq!(os.patch_json("/sessions/s1", &json!("x"), None).await.status, 422);
    let resp = os.client.patch(format!("{}/sessions/s1", os.base)).send().await.unwrap();
    assert_eq!(resp.status(), 422, "PATCH needs a body");

    let r = os.post_json("/sessions/s1/rename", &json!({"session_name": "third"}), None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["session_name"], "third");
    assert_eq!(r.body["agent_session_id"], "s1");
    assert_eq!(os.get("/sessions/s1", None).await.body["session_name"], "third");
    assert_eq!(os.post_json("/sessions/nope/rename", &json!({"session_name": "x"}), None).await.status, 404);
    let r = os.post_json("/sessions/s1/rename", &json!({}), None).await;
    assert_eq!(r.status, 422);
    assert!(detail(&r.body).contains("session_name"));
    assert_eq!(os.post_json("/sessions/s1/rename", &json!({"session_name": 5}), None).await.status, 422);
}

#[tokio::test]
async fn the_runs_of_a_session_are_listed_and_read() {
    let os = os().await;
    let first = run_agent(&os, "s-run", "hello there", Some("u1"), None).await;
    let second = run_agent(&os, "s-run", "again", Some("u1"), None).await;
    let other = run_agent(&os, "s-other", "elsewhere", None, None).await;

    let r = os.get("/sessions/s-run", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["session_name"], "hello there", "an unnamed session is named by its first message");
    let history = r.body["chat_history"].as_array().unwrap();
    let roles: Vec<&str> = history.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"], "no system or history messages");
    assert_eq!(r.body["agent_id"], "calc");

    let r = os.get("/sessions/s-run/runs", None).await;
    assert_eq!(r.status, 200);
    let runs = r.body.as_array().unwrap();
    let run_ids: Vec<&str> = runs.iter().map(|x| x["run_id"].as_str().unwrap()).collect();
    assert_eq!(run_ids, [first.as_str(), second.as_str()], "oldest first");
    assert_eq!(runs[0]["run_input"], "hello there");
    assert_eq!(runs[0]["status"], "COMPLETED");
    assert_eq!(runs[0]["run_response_format"], "text");
    assert_eq!(runs[0]["agent_id"], "calc");
    assert_eq!(runs[0]["user_id"], "u1");
    assert!(runs[0]["created_at"].as_str().unwrap().ends_with('Z'));
    assert!(runs[0]["content"].as_str().unwrap().contains("hello there"));
    assert!(runs[0].get("citations").is_none(), "nulls are left out of the listing");

    assert_eq!(os.get("/sessions/s-run/runs?status=completed", None).await.body.as_array().unwrap().len(), 2);
    assert_eq!(os.get("/sessions/s-run/runs?status=PAUSED&status=ERROR", None).await.body, json!([]));
    let r = os.get("/sessions/s-run/runs?status=done", None).await;
    assert_eq!(r.status, 422);
    assert!(detail(&r.body).contains("Invalid status value done"), "{:?}", r.body);
    assert_eq!(os.get("/sessions/s-run/runs?created_after=99999999999", None).await.body, json!([]));
    assert_eq!(os.get("/sessions/s-run/runs?created_before=0", None).await.body, json!([]));
    assert_eq!(os.get("/sessions/s-run/runs?created_after=0", None).await.body.as_array().unwrap().len(), 2);
    assert_eq!(os.get("/sessions/s-run/runs?created_after=soon", None).await.status, 422);
    let r = os.get("/sessions/nope/runs", None).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.body["detail"], "Session with ID nope not found");

    let r = os.get("/sessions/s-run/run-previews", None).await;
    assert_eq!(r.status, 200);
    let previews = r.body.as_array().unwrap();
    assert_eq!(previews.len(), 2);
    assert_eq!(previews[0]["run_input"], "hello there");
    assert!(previews[0]["content_preview"].as_str().unwrap().contains("hello there"));
    assert!(previews[0].get("messages").is_none());

    let r = os.get(&format!("/sessions/s-run/runs/{second}"), None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["run_id"], second.as_str());
    assert_eq!(r.body["run_input"], "again");
    assert!(r.body.get("citations").is_some_and(Value::is_null), "the single run answers every field");
    assert_eq!(os.get("/sessions/s-run/runs/missing", None).await.status, 404);
    let r = os.get(&format!("/sessions/s-run/runs/{other}"), None).await;
    assert_eq!(r.status, 404, "a run of another session");
    assert_eq!(os.get(&format!("/sessions/nope/runs/{first}"), None).await.status, 404);

    // Deleting the session deletes its runs.
    assert_eq!(os.delete("/sessions/s-run", None).await.status, 204);
    assert_eq!(os.get("/sessions/s-run/runs", None).await.status, 404);
    assert_eq!(os.get(&format!("/agents/calc/runs/{first}"), None).await.status, 404);
}

#[tokio::test]
async fn sessions_are_deleted_one_or_many() {
    let os = os().await;
    for id in ["a", "b", "c"] {
        os.post_json("/sessions", &json!({"session_id": id}), None).await;
    }
    let r = os.delete("/sessions/a", None).await;
    assert_eq!(r.status, 204);
    assert_eq!(r.body, json!(""), "204 has no body");
    assert_eq!(os.get("/sessions/a", None).await.status, 404);
    assert_eq!(os.delete("/sessions/a", None).await.status, 404);
    // The runs hold their media (no media store): deleting the session deletes it.
    assert_eq!(os.delete("/sessions/b?delete_media=true", None).await.status, 204);
    assert_eq!(os.delete("/sessions/b?delete_media=maybe", None).await.status, 422);

    let bad_bodies = [
        (json!({"session_ids": [], "session_types": []}), 422),
        (json!({"session_ids": ["b"]}), 422),
        (json!({"session_ids": ["b"], "session_types": ["robot"]}), 422),
        (json!({"session_ids": [1], "session_types": ["agent"]}), 422),
    ];
    for (body, status) in bad_bodies {
        let r = os.delete_json("/sessions", &body, None).await;
        assert_eq!(r.status, status, "{body}: {:?}", r.body);
        assert!(!detail(&r.body).is_empty());
    }
    assert_eq!(os.delete("/sessions", None).await.status, 422, "the bulk delete needs a body");
    let r = os
        .delete_json(
            "/sessions",
            &json!({"session_ids": ["b", "c", "zzz"], "session_types": ["agent", "agent", "team"]}),
            None,
        )
        .await;
    assert_eq!(r.status, 204);
    assert_eq!(os.get("/sessions", None).await.body["meta"]["total_count"], 0);
}

#[tokio::test]
async fn without_a_database_the_routes_say_so() {
    let os = TestOs::start(config("[os]\nid = \"no-db\"\n[[agents]]\nid = \"calc\"\nmodel = \"test\"\n")).await;
    let r = os.get("/sessions", None).await;
    assert_eq!(r.status, 400);
    assert!(detail(&r.body).contains("database"));
    assert_eq!(os.post_json("/sessions", &json!({}), None).await.status, 400);
}

#[tokio::test]
async fn users_only_see_and_change_their_own_sessions() {
    let os = TestOs::start(config(&isolated_config())).await;
    let all = ["sessions:read", "sessions:write", "sessions:delete", "agents:run", "agents:read"];
    let a = token("alice", &all);
    let b = token("bob", &all);
    let admin = token("root", &["agent_os:admin"]);
    let (a, b, admin) = (Some(a.as_str()), Some(b.as_str()), Some(admin.as_str()));

    // A spoofed user_id is replaced by the caller's own.
    let r = os.post_json("/sessions", &json!({"session_id": "sa", "user_id": "bob"}), a).await;
    assert_eq!(r.status, 201);
    assert_eq!(r.body["user_id"], "alice");
    assert_eq!(os.post_json("/sessions", &json!({"session_id": "sb"}), b).await.status, 201);
    let run_b = run_agent(&os, "sb", "bob's secret", None, b).await;

    // Lists are filtered, whatever user_id is asked for.
    assert_eq!(ids(&os.get("/sessions", a).await.body), ["sa"]);
    assert_eq!(ids(&os.get("/sessions?user_id=bob", a).await.body), ["sa"]);
    assert_eq!(os.get("/sessions", a).await.body["meta"]["total_count"], 1);
    assert_eq!(ids(&os.get("/sessions", admin).await.body), ["sb", "sa"]);
    assert_eq!(ids(&os.get("/sessions?user_id=bob", admin).await.body), ["sb"]);

    // Bob's session is missing for Alice, on every route.
    let missing = [
        os.get("/sessions/sb", a).await,
        os.patch_json("/sessions/sb", &json!({"session_name": "mine"}), a).await,
        os.post_json("/sessions/sb/rename", &json!({"session_name": "mine"}), a).await,
        os.get("/sessions/sb/runs", a).await,
        os.get("/sessions/sb/run-previews", a).await,
        os.get(&format!("/sessions/sb/runs/{run_b}"), a).await,
        os.get(&format!("/sessions/sa/runs/{run_b}"), a).await,
        os.delete("/sessions/sb", a).await,
    ];
    for r in &missing {
        assert_eq!(r.status, 404, "{:?}", r.body);
    }
    // Creating over Bob's id is answered as every route answers Bob's session: not found.
    let r = os.post_json("/sessions", &json!({"session_id": "sb"}), a).await;
    assert_eq!(r.status, 404, "{:?}", r.body);
    assert_eq!(r.body, os.get("/sessions/sb", a).await.body, "the same answer as a read");
    // A bulk delete only touches Alice's sessions.
    let r = os.delete_json("/sessions", &json!({"session_ids": ["sb"], "session_types": ["agent"]}), a).await;
    assert_eq!(r.status, 204);
    let r = os.get("/sessions/sb", b).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["session_name"], "bob's secret", "untouched by Alice");
    assert_eq!(os.get(&format!("/sessions/sb/runs/{run_b}"), b).await.status, 200);
    assert_eq!(os.get("/sessions/sb", admin).await.status, 200, "the admin sees every session");

    // Alice manages her own.
    assert_eq!(os.patch_json("/sessions/sa", &json!({"session_state": {"x": 1}}), a).await.status, 200);
    let r = os.post_json("/sessions/sa/rename", &json!({"session_name": "hers"}), a).await;
    assert_eq!((r.status, r.body["user_id"].as_str()), (200, Some("alice")));
    assert_eq!(os.delete("/sessions/sa", a).await.status, 204);

    // Scopes: reading is not writing; no token is 401.
    let reader = token("carol", &["sessions:read"]);
    assert_eq!(os.post_json("/sessions", &json!({}), Some(&reader)).await.status, 403);
    assert_eq!(os.delete("/sessions/sb", Some(&reader)).await.status, 403);
    assert_eq!(os.get("/sessions", Some(&reader)).await.status, 200);
    assert_eq!(os.get("/sessions", None).await.status, 401);
}

#[tokio::test]
async fn the_routes_work_on_sqlite_too() {
    let path = std::env::temp_dir().join(format!("agno-os-sessions-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let toml = format!(
        "[os]\nid = \"sq\"\n[db]\nurl = \"sqlite://{}\"\n[[agents]]\nid = \"calc\"\nmodel = \"test\"\n",
        path.display()
    );
    let os = TestOs::start(config(&toml)).await;
    let body = json!({"session_id": "s1", "session_name": "alpha", "session_state": {"a": 1}, "agent_id": "calc"});
    assert_eq!(os.post_json("/sessions", &body, None).await.status, 201);
    assert_eq!(os.post_json("/sessions", &json!({"session_id": "s1"}), None).await.status, 409);
    let run = run_agent(&os, "s2", "hi", None, None).await;
    assert_eq!(ids(&os.get("/sessions?session_name=lph", None).await.body), ["s1"]);
    assert_eq!(ids(&os.get("/sessions?component_id=calc&sort_order=asc", None).await.body), ["s1", "s2"]);
    assert_eq!(os.patch_json("/sessions/s1", &json!({"session_name": "beta"}), None).await.status, 200);
    let r = os.get("/sessions/s1", None).await;
    assert_eq!((r.body["session_name"].as_str(), &r.body["session_state"]), (Some("beta"), &json!({"a": 1})));
    let r = os.patch_json("/sessions/s1", &json!({"session_state": {}}), None).await;
    assert_eq!(r.body["session_state"], json!({}));
    assert_eq!(os.get("/sessions/s1", None).await.body["session_state"], json!({}), "an explicit state replaces");
    assert_eq!(os.get(&format!("/sessions/s2/runs/{run}"), None).await.body["run_input"], "hi");
    assert_eq!(os.get("/sessions/s2/runs", None).await.body.as_array().unwrap().len(), 1);
    assert_eq!(os.post_json("/sessions/s2/rename", &json!({"session_name": "named"}), None).await.status, 200);
    assert_eq!(
        os.delete_json("/sessions", &json!({"session_ids": ["s1", "s2"], "session_types": ["agent", "agent"]}), None)
            .await
            .status,
        204
    );
    assert_eq!(os.get("/sessions", None).await.body["meta"]["total_count"], 0);
    drop(os);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}
