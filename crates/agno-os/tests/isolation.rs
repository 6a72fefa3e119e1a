//! The isolation matrix: with `user_isolation = true`, user B calls every read, write and delete
//! route with user A's ids (and with `user_id=A` in queries and bodies); nothing of A's leaks,
//! changes or disappears. A then still sees all of it; an admin sees both users.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use agno_core::{EvalRunRecord, EvalType};
use common::{SECRET, TestOs, config, token};
use serde_json::{Value, json};

const ALL: &[&str] = &[
    "agents:read",
    "agents:run",
    "sessions:read",
    "sessions:write",
    "sessions:delete",
    "memories:read",
    "memories:write",
    "memories:delete",
    "metrics:read",
    "metrics:write",
    "evals:read",
    "evals:write",
    "evals:delete",
    "config:read",
];

fn ids(body: &Value, field: &str) -> Vec<String> {
    let list = body.get("data").unwrap_or(body);
    list.as_array().unwrap().iter().filter_map(|x| x[field].as_str().map(str::to_owned)).collect()
}

fn eval(id: &str, user: &str) -> EvalRunRecord {
    EvalRunRecord {
        run_id: id.to_owned(),
        eval_type: EvalType::Accuracy,
        eval_data: json!({"score": 1}).as_object().unwrap().clone(),
        eval_input: None,
        name: Some(format!("eval of {user}")),
        agent_id: Some("calc".into()),
        team_id: None,
        workflow_id: None,
        model_id: Some("test".into()),
        model_provider: Some("Test".into()),
        evaluated_component_name: None,
        user_id: Some(user.to_owned()),
        created_at: None,
        updated_at: None,
    }
}

/// What user A owns: a session with a completed run and a paused run, a memory, an eval run.
struct Owned {
    session: String,
    run: String,
    paused: String,
    memory: String,
    eval: String,
}

async fn seed(os: &TestOs, who: &str, t: &str) -> Owned {
    let session = format!("{who}-session");
    let r = os
        .post_form(
            "/agents/calc/runs",
            &[("message", "secret plan"), ("stream", "false"), ("session_id", &session)],
            Some(t),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let run = r.body["run_id"].as_str().unwrap().to_owned();
    let r = os
        .post_form(
            "/agents/guarded/runs",
            &[("message", "add"), ("stream", "false"), ("session_id", &format!("{who}-hitl"))],
            Some(t),
        )
        .await;
    assert_eq!(r.body["status"], "PAUSED");
    let paused = r.body["run_id"].as_str().unwrap().to_owned();
    let r = os
        .post_json(
            "/memories",
            &json!({"memory": format!("{who} likes secrets"), "topics": [format!("{who}-topic")]}),
            Some(t),
        )
        .await;
    assert!(r.status == 200 || r.status == 201, "{:?}", r.body);
    let memory = r.body["memory_id"].as_str().unwrap().to_owned();
    let eval_id = format!("{who}-eval");
    os.os.state.db.as_ref().unwrap().create_eval_run(&eval(&eval_id, who)).await.unwrap();
    Owned { session, run, paused, memory, eval: eval_id }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_route_leaks_or_touches_another_users_data() {
    let cfg = format!(
        "[auth]\nmode = \"jwt\"\nverification_keys = [{}]\nuser_isolation = true\n[db]\nurl = \"memory://\"\n\
         [[agents]]\nid = \"calc\"\nmodel = \"test\"\n[[agents]]\nid = \"guarded\"\nmodel = \"test\"\n\
         tools = [{{ toolkit = \"calculator\", include_tools = [\"add\"], requires_confirmation_tools = [\"add\"] }}]\n",
        serde_json::to_string(SECRET).unwrap()
    );
    let os = TestOs::start(config(&cfg)).await;
    let a_tok = token("alice", ALL);
    let b_tok = token("bob", ALL);
    let (a, b) = (Some(a_tok.as_str()), Some(b_tok.as_str()));
    let alice = seed(&os, "alice", &a_tok).await;
    let bob = seed(&os, "bob", &b_tok).await;

    // Reads of A's objects by B: 404, exactly like a missing id.
    let reads = [
        format!("/agents/calc/runs/{}", alice.run),
        format!("/agents/calc/runs?session_id={}", alice.session),
        format!("/sessions/{}", alice.session),
        format!("/sessions/{}/runs", alice.session),
        format!("/sessions/{}/runs/{}", alice.session, alice.run),
        format!("/sessions/{}/run-previews", alice.session),
        format!("/memories/{}", alice.memory),
        format!("/eval-runs/{}", alice.eval),
    ];
    for path in &reads {
        let theirs = os.get(path, b).await;
        assert_eq!(theirs.status, 404, "B reading {path}: {:?}", theirs.body);
        let missing = os.get(&path.replace("alice", "nobody"), b).await;
        assert_eq!(missing.status, 404, "a missing id answers the same");
        assert_eq!(os.get(path, a).await.status, 200, "A reads {path}");
    }

    // Listings: filtered, even when B names A.
    for (path, field) in [
        ("/sessions", "session_id"),
        ("/sessions?user_id=alice", "session_id"),
        ("/memories", "memory_id"),
        ("/memories?user_id=alice", "memory_id"),
        ("/eval-runs", "id"),
        ("/eval-runs?user_id=alice", "id"),
    ] {
        let r = os.get(path, b).await;
        assert_eq!(r.status, 200, "{path}: {:?}", r.body);
        let seen = ids(&r.body, field);
        assert!(!seen.is_empty(), "B sees its own in {path}");
        assert!(seen.iter().all(|id| !id.contains("alice") && *id != alice.memory), "{path} leaked {seen:?}");
    }
    // A session search never reaches past the caller, whatever it filters on.
    for (body, own) in [(json!({}), true), (json!({"filter": {"op": "EQ", "key": "user_id", "value": "alice"}}), false)]
    {
        let r = os.post_json("/sessions/search", &body, b).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        let seen = ids(&r.body, "session_id");
        assert_eq!(!seen.is_empty(), own, "B's search {body}: {seen:?}");
        assert!(seen.iter().all(|id| !id.contains("alice")), "search leaked {seen:?}");
    }
    let topics = os.get("/memory_topics", b).await;
    assert!(!topics.body.to_string().contains("alice"), "topics leaked: {}", topics.body);
    let stats = os.get("/user_memory_stats", b).await;
    assert!(!stats.body.to_string().contains("alice"), "stats leaked: {}", stats.body);
    let metrics = os.get("/metrics?user_id=alice", b).await;
    assert_eq!(metrics.status, 200);
    assert!(!metrics.body.to_string().contains("alice"), "metrics leaked: {}", metrics.body);

    // Writes and deletes of A's objects by B: 404 (or a no-op for bulk deletes).
    let writes = [
        os.patch_json(&format!("/sessions/{}", alice.session), &json!({"session_name": "pwned"}), b).await,
        os.post_json(&format!("/sessions/{}/rename", alice.session), &json!({"session_name": "pwned"}), b).await,
        os.delete(&format!("/sessions/{}", alice.session), b).await,
        os.patch_json(&format!("/memories/{}", alice.memory), &json!({"memory": "pwned", "user_id": "alice"}), b).await,
        os.delete(&format!("/memories/{}", alice.memory), b).await,
        os.patch_json(&format!("/eval-runs/{}", alice.eval), &json!({"name": "pwned"}), b).await,
        os.post_form(&format!("/agents/calc/runs/{}/cancel", alice.run), &[], b).await,
        os.post_form(&format!("/agents/calc/runs/{}/resume", alice.run), &[], b).await,
        os.post_form(&format!("/agents/calc/runs/{}/resume", alice.run), &[("session_id", &alice.session)], b).await,
        os.post_form(
            &format!("/agents/guarded/runs/{}/continue", alice.paused),
            &[("tools", "[]"), ("stream", "false")],
            b,
        )
        .await,
        os.post_form(
            "/agents/calc/runs",
            &[("message", "into her session"), ("stream", "false"), ("session_id", &alice.session)],
            b,
        )
        .await,
    ];
    for (i, r) in writes.iter().enumerate() {
        // Deleting a memory answers 204 whether it exists or not (as Agno), so it reveals nothing;
        // that it was not deleted is checked below.
        let expected = if i == 4 { 204 } else { 404 };
        assert_eq!(r.status, expected, "write #{i} by B on A's object: {:?}", r.body);
    }
    for (path, body) in [
        ("/sessions", json!({"session_ids": [alice.session], "session_types": ["agent"]})),
        ("/memories", json!({"memory_ids": [alice.memory], "user_id": "alice"})),
        ("/eval-runs", json!({"eval_run_ids": [alice.eval]})),
    ] {
        let r = os.delete_json(path, &body, b).await;
        assert!(r.status == 204 || r.status == 404, "bulk delete {path} by B: {} {:?}", r.status, r.body);
    }
    // Optimizing "alice's" memories summarizes B's own (B has one) and leaves A's alone.
    let r = os.post_json("/optimize-memories", &json!({"user_id": "alice", "model": "test"}), b).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["memories"][0]["user_id"], "bob");
    // A spoofed user_id on create is replaced by the caller's sub.
    let r = os.post_json("/memories", &json!({"memory": "planted", "user_id": "alice"}), b).await;
    assert_eq!(r.body["user_id"], "bob");
    let r = os
        .post_form("/agents/calc/runs", &[("message", "as alice?"), ("stream", "false"), ("user_id", "alice")], b)
        .await;
    assert_eq!(r.body["user_id"], "bob");

    // Nothing of A's changed or disappeared.
    let s = os.get(&format!("/sessions/{}", alice.session), a).await;
    assert_eq!(s.status, 200);
    assert_ne!(s.body["session_name"], "pwned");
    let m = os.get(&format!("/memories/{}", alice.memory), a).await;
    assert_eq!(m.body["memory"], "alice likes secrets");
    let e = os.get(&format!("/eval-runs/{}", alice.eval), a).await;
    assert_eq!(e.body["name"], "eval of alice");
    let paused = os.get(&format!("/agents/guarded/runs/{}", alice.paused), a).await;
    assert_eq!(paused.body["status"], "PAUSED", "B's continue did nothing");
    let runs = os.get(&format!("/sessions/{}/runs", alice.session), a).await;
    assert_eq!(ids(&runs.body, "run_id"), std::slice::from_ref(&alice.run), "no run of B landed in A's session");

    // The admin sees both users.
    let admin = token("root", &["agent_os:admin"]);
    let all = os.get("/sessions", Some(&admin)).await;
    let seen = ids(&all.body, "session_id");
    assert!(seen.contains(&alice.session) && seen.contains(&bob.session), "{seen:?}");
    let _ = bob.memory;
}

/// How the matrix above covers each route of the route table. A route added to the table
/// fails this test until it is placed here (and, if it touches a user's data, exercised above).
const COVERAGE: &[(&str, &str, &str)] = &[
    ("GET", "/", "public"),
    ("GET", "/health", "public"),
    ("GET", "/info", "public"),
    ("GET", "/openapi.json", "public"),
    ("GET", "/docs", "public"),
    ("GET", "/redoc", "public"),
    ("GET", "/docs/", "public"),
    ("GET", "/docs/{*file}", "public"),
    ("GET", "/config", "no user data"),
    ("GET", "/sessions/filter-schema", "no user data"),
    ("POST", "/sessions/search", "listing: own sessions only, whatever the filter (above)"),
    ("GET", "/sessions/{session_id}/media/{*storage_key}", "read: A's session is not found (tests/media.rs)"),
    ("GET", "/agents", "no user data"),
    ("GET", "/agents/{agent_id}", "no user data"),
    ("GET", "/teams", "no user data"),
    ("GET", "/teams/{team_id}", "no user data"),
    ("POST", "/teams/{team_id}/runs", "write: run into A's session (tests/teams.rs)"),
    ("GET", "/teams/{team_id}/runs", "read: A's session runs (tests/teams.rs)"),
    ("GET", "/teams/{team_id}/runs/{run_id}", "read: A's run (tests/teams.rs)"),
    ("POST", "/teams/{team_id}/runs/{run_id}/cancel", "write: cancel A's run (tests/teams.rs)"),
    ("POST", "/teams/{team_id}/runs/{run_id}/continue", "write: continue A's paused run (tests/teams.rs)"),
    ("POST", "/teams/{team_id}/runs/{run_id}/resume", "read: A's run events (tests/teams.rs)"),
    ("GET", "/workflows", "no user data"),
    ("GET", "/workflows/{workflow_id}", "no user data"),
    ("POST", "/workflows/{workflow_id}/runs", "write: run into A's session (tests/workflows.rs)"),
    ("GET", "/workflows/{workflow_id}/runs", "read: A's session runs (tests/workflows.rs)"),
    ("GET", "/workflows/{workflow_id}/runs/{run_id}", "read: A's run (tests/workflows.rs)"),
    ("POST", "/workflows/{workflow_id}/runs/{run_id}/cancel", "write: cancel A's run (tests/workflows.rs)"),
    ("POST", "/workflows/{workflow_id}/runs/{run_id}/continue", "write: continue A's paused run (tests/workflows.rs)"),
    ("POST", "/workflows/{workflow_id}/runs/{run_id}/resume", "read: A's run events (tests/workflows.rs)"),
    ("GET", "/traces", "listing: own traces (tests/traces.rs)"),
    ("GET", "/traces/filter-schema", "no user data"),
    ("GET", "/traces/{trace_id}", "read: A's trace is not found (tests/traces.rs)"),
    ("GET", "/trace_session_stats", "listing: own sessions' traces (tests/traces.rs)"),
    ("POST", "/traces/search", "listing: own traces (tests/traces.rs)"),
    ("GET", "/knowledge/config", "no user data"),
    ("GET", "/agents/{agent_id}/runs/{run_id}/checkpoints", "read: A's run is not found (tests/lineage.rs)"),
    (
        "GET",
        "/agents/{agent_id}/runs/{run_id}/checkpoints/{message_index}",
        "read: A's run is not found (tests/lineage.rs)",
    ),
    ("GET", "/teams/{team_id}/runs/{run_id}/checkpoints", "read: A's run is not found (tests/lineage.rs)"),
    (
        "GET",
        "/teams/{team_id}/runs/{run_id}/checkpoints/{message_index}",
        "read: A's run is not found (tests/lineage.rs)",
    ),
    (
        "POST",
        "/agents/{agent_id}/sessions/{session_id}/fork",
        "write: A's session is nothing to fork (tests/lineage.rs)",
    ),
    ("POST", "/teams/{team_id}/sessions/{session_id}/fork", "write: A's session is nothing to fork (tests/lineage.rs)"),
    (
        "POST",
        "/agents/{agent_id}/sessions/{session_id}/compact",
        "write: A's session is not found (tests/compaction.rs)",
    ),
    ("GET", "/approvals", "listing: own approvals (tests/approvals.rs)"),
    ("GET", "/approvals/count", "listing: own pending count (tests/approvals.rs)"),
    ("GET", "/approvals/{approval_id}", "read: A's approval is not found (tests/approvals.rs)"),
    ("GET", "/approvals/{approval_id}/status", "read: A's approval is not found (tests/approvals.rs)"),
    ("POST", "/approvals/{approval_id}/resolve", "write: admin only under isolation, 404 (tests/approvals.rs)"),
    ("DELETE", "/approvals/{approval_id}", "write: admin only under isolation, 404 (tests/approvals.rs)"),
    ("POST", "/service-accounts", "write: owned by its minter (tests/service_accounts.rs)"),
    ("GET", "/service-accounts", "listing: own and workspace-level accounts (tests/service_accounts.rs)"),
    (
        "DELETE",
        "/service-accounts/{service_account_id}",
        "write: another's account is not found, a workspace-level one 403 (tests/service_accounts.rs)",
    ),
    ("GET", "/learnings", "listing: own and ownerless records (tests/learnings.rs)"),
    ("POST", "/learnings", "write: owned by the caller; another user's is 403 (tests/learnings.rs)"),
    ("GET", "/learnings/users", "listing: the caller only (tests/learnings.rs)"),
    ("DELETE", "/learnings/users/{user_id}", "write: another user's is 403 (tests/learnings.rs)"),
    ("GET", "/learnings/{learning_id}", "read: another user's record is not found (tests/learnings.rs)"),
    (
        "PATCH",
        "/learnings/{learning_id}",
        "write: another user's is not found, an ownerless one 403 (tests/learnings.rs)",
    ),
    (
        "DELETE",
        "/learnings/{learning_id}",
        "write: another user's is not found, an ownerless one 403 (tests/learnings.rs)",
    ),
    ("POST", "/knowledge/remote-content", "write: the contents made are the caller's (as POST /knowledge/content)"),
    (
        "POST",
        "/knowledge/content/{content_id}/refresh",
        "write: another user's content is not found (the lookup of GET /knowledge/content/{content_id})",
    ),
    ("GET", "/knowledge/{knowledge_id}/sources", "no user data"),
    ("GET", "/knowledge/{knowledge_id}/sources/{source_id}/files", "no user data"),
    ("GET", "/filesystem/files", "listing: own partition; an admin every partition (tests/filesystem.rs)"),
    ("GET", "/filesystem/entries", "listing: own partition; an admin every partition (tests/filesystem.rs)"),
    ("GET", "/filesystem/content", "read: another user's partition is 403 (tests/filesystem.rs)"),
    ("GET", "/filesystem/search", "listing: own partition; another user's is 403 (tests/filesystem.rs)"),
    ("GET", "/components", "listing: own, shared and published (tests/components.rs)"),
    ("POST", "/components", "write: owned by the caller; pins only what the caller sees (tests/components.rs)"),
    ("GET", "/components/{component_id}", "read: A's draft-only component is not found (tests/components.rs)"),
    ("PATCH", "/components/{component_id}", "write: A's component, 403/404 (tests/components.rs)"),
    ("DELETE", "/components/{component_id}", "write: A's component, 403/404 (tests/components.rs)"),
    ("POST", "/components/{component_id}/restore", "write: A's component, 404 (tests/components.rs)"),
    ("GET", "/components/{component_id}/configs", "read: A's drafts left out, db redacted (tests/components.rs)"),
    ("POST", "/components/{component_id}/configs", "write: A's component, 403 (tests/components.rs)"),
    ("GET", "/components/{component_id}/configs/current", "read: as the configs (tests/components.rs)"),
    ("PATCH", "/components/{component_id}/configs/{version}", "write: A's draft, 403 (tests/components.rs)"),
    ("GET", "/components/{component_id}/configs/{version}", "read: A's draft is not found (tests/components.rs)"),
    ("DELETE", "/components/{component_id}/configs/{version}", "write: A's draft, 403 (tests/components.rs)"),
    (
        "POST",
        "/components/{component_id}/configs/{version}/set-current",
        "write: A's component, 403 (tests/components.rs)",
    ),
    ("GET", "/registry", "no user data"),
    ("GET", "/a2a/agents/{id}/.well-known/agent-card.json", "no user data"),
    ("POST", "/a2a/agents/{id}/v1/message:send", "write: run into A's context, continue A's task (tests/a2a.rs)"),
    ("POST", "/a2a/agents/{id}/v1/message:stream", "write: run into A's context (tests/a2a.rs)"),
    ("POST", "/a2a/agents/{id}/v1/tasks:get", "read: A's task is not found (tests/a2a.rs)"),
    ("POST", "/a2a/agents/{id}/v1/tasks:cancel", "write: cancel A's task (tests/a2a.rs)"),
    ("GET", "/a2a/teams/{id}/.well-known/agent-card.json", "no user data"),
    ("POST", "/a2a/teams/{id}/v1/message:send", "write: run into A's context, continue A's task (tests/a2a.rs)"),
    ("POST", "/a2a/teams/{id}/v1/message:stream", "write: run into A's context (tests/a2a.rs)"),
    ("POST", "/a2a/teams/{id}/v1/tasks:get", "read: A's task is not found (tests/a2a.rs)"),
    ("POST", "/a2a/teams/{id}/v1/tasks:cancel", "write: cancel A's task (tests/a2a.rs)"),
    ("GET", "/a2a/workflows/{id}/.well-known/agent-card.json", "no user data"),
    ("POST", "/a2a/workflows/{id}/v1/message:send", "write: run into A's context, continue A's task (tests/a2a.rs)"),
    ("POST", "/a2a/workflows/{id}/v1/message:stream", "write: run into A's context (tests/a2a.rs)"),
    ("POST", "/agui", "write: run into A's thread, answer A's paused run (tests/agui.rs)"),
    ("GET", "/status", "no user data"),
    ("POST", "/mcp", "write: runs as the caller, never in another's session (tests/mcp.rs)"),
    ("GET", "/mcp", "read: the caller's own MCP session stream (tests/mcp.rs)"),
    ("DELETE", "/mcp", "write: ends the caller's MCP session (tests/mcp.rs)"),
    ("GET", "/schedules", "listing: own schedules (tests/schedules.rs)"),
    ("POST", "/schedules", "write: owned by the caller (tests/schedules.rs)"),
    ("GET", "/schedules/{schedule_id}", "read: A's schedule (tests/schedules.rs)"),
    ("PATCH", "/schedules/{schedule_id}", "write: A's schedule (tests/schedules.rs)"),
    ("DELETE", "/schedules/{schedule_id}", "write: A's schedule (tests/schedules.rs)"),
    ("POST", "/schedules/{schedule_id}/enable", "write: A's schedule (tests/schedules.rs)"),
    ("POST", "/schedules/{schedule_id}/disable", "write: A's schedule (tests/schedules.rs)"),
    ("POST", "/schedules/{schedule_id}/trigger", "write: fires A's schedule as A (tests/schedules.rs)"),
    ("GET", "/schedules/{schedule_id}/runs", "read: A's schedule runs (tests/schedules.rs)"),
    ("GET", "/schedules/{schedule_id}/runs/{run_id}", "read: A's schedule run (tests/schedules.rs)"),
    ("POST", "/knowledge/content", "write: owned by the caller (tests/knowledge.rs)"),
    ("GET", "/knowledge/content", "listing (tests/knowledge.rs)"),
    ("GET", "/knowledge/content/{content_id}", "read: A's content (tests/knowledge.rs)"),
    ("GET", "/knowledge/content/{content_id}/status", "read: A's content (tests/knowledge.rs)"),
    ("PATCH", "/knowledge/content/{content_id}", "write: A's content (tests/knowledge.rs)"),
    ("DELETE", "/knowledge/content", "bulk delete: only the caller's (tests/knowledge.rs)"),
    ("DELETE", "/knowledge/content/{content_id}", "write: A's content (tests/knowledge.rs)"),
    ("POST", "/knowledge/search", "listing: own and shared chunks (tests/knowledge.rs)"),
    ("POST", "/agents/{agent_id}/runs", "write: run into A's session"),
    ("GET", "/agents/{agent_id}/runs", "read: A's session runs"),
    ("GET", "/agents/{agent_id}/runs/{run_id}", "read: A's run"),
    ("POST", "/agents/{agent_id}/runs/{run_id}/cancel", "write: cancel A's run"),
    ("POST", "/agents/{agent_id}/runs/{run_id}/continue", "write: continue A's paused run"),
    ("POST", "/agents/{agent_id}/runs/{run_id}/resume", "write: resume A's run"),
    ("POST", "/memories", "write: spoofed user_id replaced"),
    ("GET", "/memories", "listing"),
    ("DELETE", "/memories", "bulk delete"),
    ("GET", "/memories/{memory_id}", "read: A's memory"),
    ("PATCH", "/memories/{memory_id}", "write: A's memory"),
    ("DELETE", "/memories/{memory_id}", "write: A's memory"),
    ("POST", "/optimize-memories", "write: only the caller's memories (also tests/records.rs)"),
    ("GET", "/memory_topics", "listing"),
    ("GET", "/user_memory_stats", "listing"),
    ("GET", "/metrics", "listing"),
    ("POST", "/metrics/refresh", "listing (own buckets)"),
    ("GET", "/metrics/refresh/status", "no user data"),
    ("POST", "/eval-runs", "write: the eval and its runs are the caller's (tests/evals.rs)"),
    ("GET", "/eval-runs", "listing"),
    ("DELETE", "/eval-runs", "bulk delete"),
    ("GET", "/eval-runs/{eval_run_id}", "read: A's eval run"),
    ("PATCH", "/eval-runs/{eval_run_id}", "write: A's eval run"),
    ("POST", "/databases/all/migrate", "no user data (config:write)"),
    ("POST", "/databases/{db_id}/migrate", "no user data (config:write)"),
    ("GET", "/queue/jobs", "admin only"),
    ("GET", "/queue/jobs/{job_id}", "admin only"),
    ("POST", "/queue/jobs/{job_id}/requeue", "admin only"),
    ("GET", "/queue/stats", "admin only"),
    ("GET", "/sessions", "listing"),
    ("POST", "/sessions", "write: spoofed user_id replaced"),
    ("DELETE", "/sessions", "bulk delete"),
    ("GET", "/sessions/{session_id}", "read: A's session"),
    ("PATCH", "/sessions/{session_id}", "write: A's session"),
    ("DELETE", "/sessions/{session_id}", "write: A's session"),
    ("POST", "/sessions/{session_id}/rename", "write: A's session"),
    ("GET", "/sessions/{session_id}/runs", "read: A's session"),
    ("GET", "/sessions/{session_id}/run-previews", "read: A's session"),
    ("GET", "/sessions/{session_id}/runs/{run_id}", "read: A's run"),
];

#[test]
fn every_route_of_the_table_is_placed_in_the_isolation_matrix() {
    for route in agno_os::routes::ROUTES {
        let placed = COVERAGE.iter().any(|(m, p, _)| *m == route.method.as_str() && *p == route.path);
        assert!(placed, "{} {} is not placed in the isolation matrix", route.method, route.path);
    }
    for (m, p, _) in COVERAGE {
        let exists = agno_os::routes::ROUTES.iter().any(|r| r.method.as_str() == *m && r.path == *p);
        assert!(exists, "{m} {p} is in the matrix but not in the route table");
    }
    // Admin-only routes refuse a non-admin under isolation.
    for (m, p, how) in COVERAGE {
        if *how == "admin only" {
            let route = agno_os::routes::ROUTES.iter().find(|r| r.method.as_str() == *m && r.path == *p).unwrap();
            assert_eq!(route.access, agno_os::routes::Access::Scope("agent_os:admin"), "{m} {p}");
        }
    }
}
