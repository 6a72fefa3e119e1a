//! Approvals end to end (`/approvals` and the continue gate), on two replicas sharing one
//! database: a user's background run pauses on a tool that needs an admin's approval; the user
//! cannot continue it; an admin lists and resolves it on the other replica; the user's continue
//! then completes the run without resending the decision; a second resolve is 409; another user
//! sees nothing of it. Then expiry, audit records and bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use common::{PgSchema, SECRET, TestOs, config, detail, sqlite_url, token};
use serde_json::{Value, json};

const USER: &[&str] = &["agents:read", "agents:run", "approvals:read"];

/// The OS config of one replica: JWT with user isolation, the queue polling fast, and agent
/// `ops` whose `add` needs an admin's approval (expiring after `timeout` seconds when given).
fn replica(db_url: &str, extra_agent: &str) -> String {
    format!(
        "[auth]\nmode = \"jwt\"\nverification_keys = [{secret}]\nuser_isolation = true\n\
         [db]\nurl = \"{db_url}\"\n[queue]\npoll_interval_ms = 20\n\
         [[agents]]\nid = \"ops\"\nname = \"Ops\"\nmodel = \"test\"\n{extra_agent}\
         tools = [{{ toolkit = \"calculator\", include_tools = [\"add\"], approval_required_tools = [\"add\"] }}]\n\
         [[agents]]\nid = \"audited\"\nmodel = \"test\"\n\
         tools = [{{ toolkit = \"calculator\", include_tools = [\"add\"], requires_confirmation_tools = [\"add\"], approval_audit_tools = [\"add\"] }}]\n",
        secret = serde_json::to_string(SECRET).unwrap()
    )
}

/// Submits a background run of `agent` as `token`; its run id.
async fn submit(os: &TestOs, agent: &str, token: &str) -> String {
    let form = [("message", "add 2 and 3"), ("stream", "false"), ("background", "true")];
    let r = os.post_form(&format!("/agents/{agent}/runs"), &form, Some(token)).await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    r.body["run_id"].as_str().unwrap().to_owned()
}

/// Waits (bounded) until `run_id` has one of `want` statuses, read by `token`; the run.
async fn wait_status(os: &TestOs, agent: &str, run_id: &str, token: &str, want: &[&str]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = os.get(&format!("/agents/{agent}/runs/{run_id}"), Some(token)).await;
        if r.status == 200 && want.iter().any(|w| r.body["status"] == *w) {
            return r.body;
        }
        assert!(Instant::now() < deadline, "run {run_id} never reached {want:?}: {} {:?}", r.status, r.body);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (bounded) until approval `id`, read by `token`, has `status`; the approval.
async fn wait_approval(os: &TestOs, id: &str, token: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = os.get(&format!("/approvals/{id}"), Some(token)).await;
        if r.status == 200 && r.body["status"] == status {
            return r.body;
        }
        assert!(Instant::now() < deadline, "approval {id} never became {status}: {:?}", r.body);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn approval_lifecycle_across_replicas(db_url: &str) {
    let one = TestOs::start(config(&replica(db_url, ""))).await;
    let two = TestOs::start(config(&replica(db_url, ""))).await;
    let alice = token("alice", USER);
    let bob = token("bob", USER);
    let admin = token("root", &["agent_os:admin"]);

    // A's background run pauses on `add`, whatever replica claimed it.
    let run_id = submit(&one, "ops", &alice).await;
    let paused = wait_status(&two, "ops", &run_id, &alice, &["PAUSED"]).await;
    let tool = &paused["tools"][0];
    assert_eq!((tool["tool_name"].as_str(), tool["approval_type"].as_str()), (Some("add"), Some("required")));
    let approval_id = tool["approval_id"].as_str().expect("the paused call carries its approval id").to_owned();
    assert_eq!(paused["requirements"][0]["tool_execution"]["approval_id"], approval_id.as_str());

    // A cannot continue it, on either replica, with or without a decision of their own.
    for os in [&one, &two] {
        let c =
            os.post_form(&format!("/agents/ops/runs/{run_id}/continue"), &[("stream", "false")], Some(&alice)).await;
        assert_eq!(c.status, 403, "{:?}", c.body);
        assert!(detail(&c.body).contains("requires admin approval"), "{:?}", c.body);
    }
    let mut tools = paused["tools"].clone();
    tools[0]["confirmed"] = json!(true);
    let c = one
        .post_form(
            &format!("/agents/ops/runs/{run_id}/continue"),
            &[("tools", &tools.to_string()), ("stream", "false")],
            Some(&alice),
        )
        .await;
    assert_eq!(c.status, 403, "a confirmation of one's own does not pass: {:?}", c.body);

    // A sees their own approval; B sees neither it nor its count.
    let mine = two.get("/approvals", Some(&alice)).await;
    assert_eq!(mine.status, 200, "{:?}", mine.body);
    assert_eq!(mine.body["meta"]["total_count"], 1);
    assert_eq!(mine.body["data"][0]["id"], approval_id.as_str());
    assert_eq!(two.get("/approvals/count", Some(&alice)).await.body, json!({"count": 1}));
    let theirs = two.get("/approvals?user_id=alice", Some(&bob)).await;
    assert_eq!(theirs.body["meta"]["total_count"], 0, "{:?}", theirs.body);
    assert_eq!(two.get("/approvals/count?user_id=alice", Some(&bob)).await.body, json!({"count": 0}));
    for path in [format!("/approvals/{approval_id}"), format!("/approvals/{approval_id}/status")] {
        let r = two.get(&path, Some(&bob)).await;
        assert_eq!((r.status, detail(&r.body)), (404, "Approval not found".to_owned()), "{path}");
    }
    // Resolving and deleting are an admin's, even for the requester: 404, nothing changes.
    let resolve = format!("/approvals/{approval_id}/resolve");
    for who in [&alice, &bob] {
        let r = two.post_json(&resolve, &json!({"status": "approved"}), Some(who)).await;
        assert!(r.status == 403 || r.status == 404, "{} {:?}", r.status, r.body);
        let r = two.delete(&format!("/approvals/{approval_id}"), Some(who)).await;
        assert!(r.status == 403 || r.status == 404, "{} {:?}", r.status, r.body);
    }

    // The admin, on the other replica, lists it pending and resolves it.
    let listed = two.get("/approvals?status=pending&approval_type=required", Some(&admin)).await;
    let found = listed.body["data"].as_array().unwrap().iter().find(|a| a["id"] == approval_id.as_str()).cloned();
    let found = found.expect("the admin lists it");
    assert_eq!(found["user_id"], "alice");
    assert_eq!(found["run_id"], run_id.as_str());
    assert_eq!(found["agent_id"], "ops");
    assert_eq!(found["source_type"], "agent");
    assert_eq!(found["source_name"], "Ops");
    assert_eq!(found["pause_type"], "confirmation");
    assert_eq!(found["run_status"], "PAUSED");
    assert_eq!(found["context"]["tool_names"], json!(["add"]));
    let status = two.get(&format!("/approvals/{approval_id}/status"), Some(&admin)).await;
    assert_eq!(
        status.body,
        json!({"approval_id": approval_id, "status": "pending", "run_id": run_id, "resolved_at": null, "resolved_by": null})
    );
    let r = two.post_json(&resolve, &json!({"status": "approved", "resolved_by": "spoofed"}), Some(&admin)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!((r.body["status"].as_str(), r.body["resolved_by"].as_str()), (Some("approved"), Some("root")));
    assert!(r.body["resolved_at"].as_i64().is_some());
    let again = one.post_json(&resolve, &json!({"status": "rejected"}), Some(&admin)).await;
    assert_eq!(again.status, 409, "{:?}", again.body);
    assert_eq!(detail(&again.body), "Approval is already 'approved' and cannot be resolved");
    assert_eq!(two.get("/approvals/count", Some(&alice)).await.body, json!({"count": 0}));

    // A's continue, with no decision of their own, runs the approved call and completes.
    let c = one.post_form(&format!("/agents/ops/runs/{run_id}/continue"), &[("stream", "false")], Some(&alice)).await;
    assert_eq!(c.status, 202, "the run is queued again under its id: {:?}", c.body);
    let done = wait_status(&two, "ops", &run_id, &alice, &["COMPLETED"]).await;
    assert!(done["tools"][0]["result"].is_string(), "the approved call ran: {done}");
    assert_eq!(done["tools"][0]["confirmed"], true);
    // The approval follows its run.
    let followed = wait_approval(&two, &approval_id, &admin, "approved").await;
    assert_eq!(followed["run_status"], "COMPLETED", "{followed}");
    // No longer paused: a continue is a fork (a new run), the approved original kept.
    let c = two.post_form(&format!("/agents/ops/runs/{run_id}/continue"), &[("stream", "false")], Some(&alice)).await;
    assert_eq!(c.status, 200, "{:?}", c.body);
    assert_eq!(c.body["forked_from_run_id"], run_id.as_str());
    assert_ne!(c.body["run_id"], run_id.as_str());

    // The admin deletes it; a second delete finds nothing.
    assert_eq!(one.delete(&format!("/approvals/{approval_id}"), Some(&admin)).await.status, 204);
    assert_eq!(two.delete(&format!("/approvals/{approval_id}"), Some(&admin)).await.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_an_admin_approves_what_a_users_background_run_asked_for() {
    approval_lifecycle_across_replicas(&sqlite_url("approvals")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_an_admin_approves_what_a_users_background_run_asked_for() {
    let Some(schema) = PgSchema::new("approvals") else { return };
    approval_lifecycle_across_replicas(&schema.url).await;
}

/// A rejected approval: the continue goes on without running the call, and the model hears why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_approval_continues_the_run_without_the_call() {
    let os = TestOs::start(config(&replica("memory://", ""))).await;
    let (alice, admin) = (token("alice", USER), token("root", &["agent_os:admin"]));
    let r = os.post_form("/agents/ops/runs", &[("message", "add"), ("stream", "false")], Some(&alice)).await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("PAUSED")), "{:?}", r.body);
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let approval_id = r.body["tools"][0]["approval_id"].as_str().unwrap().to_owned();
    let body = json!({"status": "rejected", "resolution_data": {"note": "not today"}});
    let resolved = os.post_json(&format!("/approvals/{approval_id}/resolve"), &body, Some(&admin)).await;
    assert_eq!(resolved.status, 200, "{:?}", resolved.body);
    assert_eq!(resolved.body["resolution_data"], json!({"note": "not today"}));
    let c = os.post_form(&format!("/agents/ops/runs/{run_id}/continue"), &[("stream", "false")], Some(&alice)).await;
    assert_eq!(c.status, 200, "{:?}", c.body);
    assert_eq!(c.body["status"], "COMPLETED");
    assert_eq!(c.body["tools"][0]["confirmed"], false);
    let said = c.body["messages"].to_string();
    assert!(said.contains("not today"), "the model is told the admin's note: {said}");
}

/// An approval left undecided past its timeout expires: nobody can resolve it any more, and the
/// run continues with the call rejected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecided_approval_expires_and_rejects_the_call() {
    let os = TestOs::start(config(&replica("memory://", "approval_timeout_seconds = 1\n"))).await;
    let (alice, admin) = (token("alice", USER), token("root", &["agent_os:admin"]));
    let r = os.post_form("/agents/ops/runs", &[("message", "add"), ("stream", "false")], Some(&alice)).await;
    assert_eq!(r.body["status"], "PAUSED", "{:?}", r.body);
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let approval_id = r.body["tools"][0]["approval_id"].as_str().unwrap().to_owned();
    let pending = os.get(&format!("/approvals/{approval_id}"), Some(&admin)).await;
    let (created, expires) = (pending.body["created_at"].as_i64().unwrap(), pending.body["expires_at"].as_i64());
    assert_eq!(expires, Some(created + 1), "{:?}", pending.body);
    wait_approval(&os, &approval_id, &admin, "expired").await;
    let late =
        os.post_json(&format!("/approvals/{approval_id}/resolve"), &json!({"status": "approved"}), Some(&admin)).await;
    assert_eq!(late.status, 409, "{:?}", late.body);
    assert_eq!(detail(&late.body), "Approval is already 'expired' and cannot be resolved");
    let c = os.post_form(&format!("/agents/ops/runs/{run_id}/continue"), &[("stream", "false")], Some(&alice)).await;
    assert_eq!((c.status, c.body["status"].as_str()), (200, Some("COMPLETED")), "{:?}", c.body);
    assert_eq!(c.body["tools"][0]["confirmed"], false, "an expired approval rejects the call");
}

/// An `audit` tool never waits for an admin: the user's own decision is recorded, resolved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_approval_records_the_users_decision() {
    let os = TestOs::start(config(&replica("memory://", ""))).await;
    let (alice, admin) = (token("alice", USER), token("root", &["agent_os:admin"]));
    let r = os.post_form("/agents/audited/runs", &[("message", "add"), ("stream", "false")], Some(&alice)).await;
    assert_eq!(r.body["status"], "PAUSED", "{:?}", r.body);
    assert_eq!(r.body["tools"][0]["approval_type"], "audit");
    assert!(r.body["tools"][0]["approval_id"].is_null(), "an audit call gets no pending record");
    assert_eq!(os.get("/approvals/count", Some(&admin)).await.body, json!({"count": 0}));
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let mut tools = r.body["tools"].clone();
    tools[0]["confirmed"] = json!(true);
    let c = os
        .post_form(
            &format!("/agents/audited/runs/{run_id}/continue"),
            &[("tools", &tools.to_string()), ("stream", "false")],
            Some(&alice),
        )
        .await;
    assert_eq!((c.status, c.body["status"].as_str()), (200, Some("COMPLETED")), "{:?}", c.body);
    let audits = os.get("/approvals?approval_type=audit", Some(&alice)).await;
    assert_eq!(audits.body["meta"]["total_count"], 1, "{:?}", audits.body);
    let a = &audits.body["data"][0];
    assert_eq!((a["status"].as_str(), a["run_id"].as_str()), (Some("approved"), Some(run_id.as_str())));
    assert_eq!((a["user_id"].as_str(), a["tool_name"].as_str()), (Some("alice"), Some("add")));
    assert!(a["resolved_at"].as_i64().is_some());
}

/// Bad input: a precise 4xx naming the problem, nothing changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_approval_requests_are_refused_precisely() {
    let os = TestOs::start(config(&replica("memory://", ""))).await;
    let (alice, admin) = (token("alice", USER), token("root", &["agent_os:admin"]));
    let r = os.post_form("/agents/ops/runs", &[("message", "add"), ("stream", "false")], Some(&alice)).await;
    let approval_id = r.body["tools"][0]["approval_id"].as_str().unwrap().to_owned();
    let resolve = format!("/approvals/{approval_id}/resolve");
    for (body, field) in [
        (json!({"status": "maybe"}), "status"),
        (json!({}), "status"),
        (json!({"status": "approved", "resolution_data": "yes"}), "resolution_data"),
    ] {
        let r = os.post_json(&resolve, &body, Some(&admin)).await;
        assert_eq!(r.status, 422, "{body}: {:?}", r.body);
        assert!(detail(&r.body).contains(field), "{body}: {:?}", r.body);
    }
    let raw = os
        .client
        .post(format!("{}{resolve}", os.base))
        .bearer_auth(&admin)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 422);
    let unknown = os.post_json("/approvals/no-such-id/resolve", &json!({"status": "approved"}), Some(&admin)).await;
    assert_eq!((unknown.status, detail(&unknown.body)), (404, "Approval not found".to_owned()));
    for query in ["status=bogus", "approval_type=maybe", "limit=0", "limit=1001", "page=0"] {
        let r = os.get(&format!("/approvals?{query}"), Some(&admin)).await;
        assert_eq!(r.status, 422, "{query}: {:?}", r.body);
    }
    let still = os.get(&format!("/approvals/{approval_id}"), Some(&admin)).await;
    assert_eq!(still.body["status"], "pending", "nothing changed");
    let anonymous = os.get("/approvals", None).await;
    assert_eq!(anonymous.status, 401);
    let no_scope = os.get("/approvals", Some(&token("carol", &["agents:read"]))).await;
    assert_eq!(no_scope.status, 403);
}

/// A team member's call that needs an approval pauses the team: its owner cannot continue the
/// team run (not even with answers of their own) until an admin approves, and then continues it
/// without resending the decision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_members_approval_pauses_the_team_until_an_admin_resolves_it() {
    use agno_testkit::{FakeProvider, Reply as Scripted};
    let provider = FakeProvider::start().await.unwrap();
    let model = format!(
        "model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        provider.base_url()
    );
    let cfg = format!(
        "[auth]\nmode = \"jwt\"\nverification_keys = [{secret}]\nuser_isolation = true\n[db]\nurl = \"memory://\"\n\
         [[agents]]\nid = \"clerk\"\nname = \"Clerk\"\n{model}\
         tools = [{{ toolkit = \"calculator\", include_tools = [\"add\"], approval_required_tools = [\"add\"] }}]\n\
         [[teams]]\nid = \"desk\"\nmembers = [\"clerk\"]\n{model}",
        secret = serde_json::to_string(SECRET).unwrap()
    );
    let os = TestOs::start(config(&cfg)).await;
    let alice = token("alice", &["teams:read", "teams:run", "approvals:read"]);
    let admin = token("root", &["agent_os:admin"]);
    let delegate = Scripted::ToolCalls {
        content: None,
        calls: vec![(
            "delegate_task_to_member".into(),
            json!({"member_id": "clerk", "task": "add 2 and 3"}).to_string(),
        )],
    };
    let add = Scripted::ToolCalls { content: None, calls: vec![("add".into(), json!({"a": 2, "b": 3}).to_string())] };
    provider.push_all([delegate, add]);
    let form = [("message", "sum?"), ("stream", "false"), ("session_id", "t1")];
    let r = os.post_form("/teams/desk/runs", &form, Some(&alice)).await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("PAUSED")), "{}", r.body);
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let req = r.body["requirements"][0].clone();
    let approval_id = req["tool_execution"]["approval_id"].as_str().expect("the member's call carries it").to_owned();
    let listed = os.get("/approvals", Some(&alice)).await;
    assert_eq!(listed.body["meta"]["total_count"], 1, "{}", listed.body);
    assert_eq!(listed.body["data"][0]["tool_args"], json!({"a": 2, "b": 3}));

    let path = format!("/teams/desk/runs/{run_id}/continue");
    let mut own = req.clone();
    own["confirmation"] = json!(true);
    own["tool_execution"]["confirmed"] = json!(true);
    let own = Value::Array(vec![own]).to_string();
    for fields in [
        vec![("session_id", "t1"), ("stream", "false")],
        vec![("session_id", "t1"), ("stream", "false"), ("requirements", own.as_str())],
    ] {
        let c = os.post_form(&path, &fields, Some(&alice)).await;
        assert_eq!(c.status, 403, "{:?}", c.body);
    }
    let resolved =
        os.post_json(&format!("/approvals/{approval_id}/resolve"), &json!({"status": "approved"}), Some(&admin)).await;
    assert_eq!(resolved.status, 200, "{:?}", resolved.body);

    provider.push_all([Scripted::text("it is 5"), Scripted::text("the desk says 5")]);
    let c = os.post_form(&path, &[("session_id", "t1"), ("stream", "false")], Some(&alice)).await;
    assert_eq!((c.status, c.body["status"].as_str()), (200, Some("COMPLETED")), "{}", c.body);
    assert_eq!(c.body["content"], "the desk says 5");
    assert_eq!(c.body["member_responses"][0]["tools"][0]["result"], r#"{"operation":"addition","result":5.0}"#);
}

/// A workflow step's agent that calls a tool needing approval pauses the workflow; the run's
/// owner cannot answer the call until an admin approved it (a pending or rejected approval keeps
/// it an admin's), then continues with the step's answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_steps_approval_keeps_the_workflow_paused_for_an_admin() {
    let cfg = format!(
        "{}[[workflows]]\nid = \"flow\"\n[[workflows.steps]]\nname = \"compute\"\nagent = \"ops\"\n",
        replica("memory://", "")
    );
    let os = TestOs::start(config(&cfg)).await;
    let alice = token("alice", &["workflows:read", "workflows:run", "approvals:read"]);
    let admin = token("root", &["agent_os:admin"]);
    let form = [("message", "add"), ("stream", "false"), ("session_id", "w1")];
    let r = os.post_form("/workflows/flow/runs", &form, Some(&alice)).await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("PAUSED")), "{}", r.body);
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let step = r.body["step_requirements"].as_array().unwrap().last().cloned().unwrap();
    let call = &step["executor_requirements"][0]["tool_execution"];
    assert_eq!(call["approval_type"], "required", "{step}");
    let approval_id = call["approval_id"].as_str().expect("the step's call carries its approval").to_owned();
    let mut answered = step.clone();
    answered["executor_requirements"][0]["confirmation"] = json!(true);
    answered["executor_requirements"][0]["tool_execution"]["confirmed"] = json!(true);
    let answers = Value::Array(vec![answered]).to_string();
    let path = format!("/workflows/flow/runs/{run_id}/continue");
    let fields = [("step_requirements", answers.as_str()), ("session_id", "w1"), ("stream", "false")];
    let c = os.post_form(&path, &fields, Some(&alice)).await;
    assert_eq!(c.status, 403, "pending: {:?}", c.body);
    let body = json!({"status": "approved"});
    let resolved = os.post_json(&format!("/approvals/{approval_id}/resolve"), &body, Some(&admin)).await;
    assert_eq!(resolved.status, 200, "{:?}", resolved.body);
    // Approved: the owner continues without sending the step's answers again.
    let c = os.post_form(&path, &[("session_id", "w1"), ("stream", "false")], Some(&alice)).await;
    assert_eq!((c.status, c.body["status"].as_str()), (200, Some("COMPLETED")), "{:?}", c.body);
    let ran = c.body["step_executor_runs"][0]["tools"][0].clone();
    assert_eq!((ran["confirmed"].as_bool(), ran["result"].is_string()), (Some(true), true), "{ran}");
}
