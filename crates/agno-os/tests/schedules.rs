//! `/schedules` against a real server with the scheduler on: bad input refused with nothing
//! stored, CRUD and enable/disable, trigger, the poller firing due schedules as their owner
//! (runs and schedule runs carry the owner's `user_id`), a failing target, a cron that stops
//! computing, and user isolation between two JWT users.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::time::Duration;

use agno_core::{Db, RunQuery, Schedule, ScheduleUpdate, now_epoch_secs};
use common::{SECRET, TestOs, config, detail, token};
use serde_json::{Value, json};

fn isolated() -> String {
    format!(
        r#"
[db]
url = "memory://"
[auth]
mode = "jwt"
verification_keys = ["{SECRET}"]
user_isolation = true
[queue]
poll_interval_ms = 20
[scheduler]
enabled = true
poll_interval_seconds = 0.05
run_poll_interval_ms = 20
[[agents]]
id = "echo"
model = "test"
"#
    )
}

const SCOPES: &[&str] = &["schedules:read", "schedules:write", "schedules:delete", "agents:run", "agents:read"];

fn db(os: &TestOs) -> &std::sync::Arc<dyn Db> {
    os.os.state.db.as_ref().unwrap()
}

/// Waits (bounded, 15 s) until `check` holds.
async fn until<F, Fut>(what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    agno_testkit::until(what, Duration::from_secs(15), check).await;
}

/// Makes a schedule due now (as the clock reaching its next time would).
async fn make_due(os: &TestOs, id: &str) {
    let update = ScheduleUpdate { next_run_at: Some(Some(now_epoch_secs() - 1)), ..ScheduleUpdate::default() };
    db(os).update_schedule(id, None, &update).await.unwrap().unwrap();
}

async fn runs_of(os: &TestOs, id: &str, who: &str) -> Vec<Value> {
    let r = os.get(&format!("/schedules/{id}/runs"), Some(who)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["data"].as_array().unwrap().clone()
}

#[tokio::test]
async fn bad_schedules_are_refused_with_the_reason_and_nothing_is_stored() {
    let os = TestOs::start(config(&isolated())).await;
    let ann = token("ann", SCOPES);
    let good = json!({"name": "nightly", "cron_expr": "0 3 * * *", "endpoint": "/agents/echo/runs"});
    let with = |key: &str, value: Value| {
        let mut body = good.clone();
        body[key] = value;
        body
    };
    for (body, field, message) in [
        (with("cron_expr", json!("61 * * * *")), "cron_expr", "Invalid cron expression: 61 * * * *"),
        (with("cron_expr", json!("* * * *")), "cron_expr", "use 5 fields"),
        (with("cron_expr", json!("0 0 30 2 *")), "cron_expr", "has no next time"),
        (with("timezone", json!("Mars/Olympus")), "timezone", "Invalid timezone: Mars/Olympus"),
        (with("endpoint", json!("agents/echo/runs")), "endpoint", "Endpoint must start with '/'"),
        (with("endpoint", json!("/http://evil.example/x")), "endpoint", "Endpoint must be a path, not a full URL"),
        (with("method", json!("TRACE")), "method", "Method must be GET, POST, PUT, PATCH, or DELETE"),
        (with("payload", json!("not an object")), "payload", "Input should be a valid dictionary"),
        (with("payload", json!([1, 2])), "payload", "Input should be a valid dictionary"),
        (with("name", json!("-bad name")), "name", "Name must start with alphanumeric"),
        (with("max_retries", json!(11)), "max_retries", "Input should be less than or equal to 10"),
        (with("timeout_seconds", json!(0)), "timeout_seconds", "Input should be greater than or equal to 1"),
    ] {
        let r = os.post_json("/schedules", &body, Some(&ann)).await;
        assert_eq!(r.status, 422, "{body}: {}", r.body);
        let why = detail(&r.body);
        // Validation errors name their field; the cron and time zone checks answer a plain detail.
        assert!(why.contains(message) && (why.contains(field) || r.body["detail"].is_string()), "{body}: {why}");
    }
    // An endpoint this OS does not serve is a route not found.
    let r = os.post_json("/schedules", &with("endpoint", json!("/nowhere")), Some(&ann)).await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(detail(&r.body).contains("POST /nowhere is not a route of this AgentOS"), "{}", r.body);
    let r = os.post_json("/schedules", &json!({"name": "x"}), Some(&ann)).await;
    assert_eq!(r.status, 422, "{}", r.body);
    let r = os.client.post(format!("{}/schedules", os.base)).bearer_auth(&ann).body("{not json").send().await.unwrap();
    assert_eq!(r.status(), 422);
    // Scheduling a run needs the right to run the target.
    let writer = token("wes", &["schedules:write", "schedules:read", "agents:run:other"]);
    let r = os.post_json("/schedules", &good, Some(&writer)).await;
    assert_eq!((r.status, detail(&r.body)), (403, "Insufficient permissions: agents:run is required".to_owned()));
    assert_eq!(os.get("/schedules", Some(&ann)).await.body["meta"]["total_count"], 0, "nothing stored");

    // A patch with a bad field changes nothing.
    let r = os.post_json("/schedules", &good, Some(&ann)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_owned();
    for (body, message) in [
        (json!({"cron_expr": "bad", "name": "renamed"}), "Invalid cron expression: bad"),
        (json!({"name": null}), "'name' cannot be set to null"),
        (json!({"endpoint": "/elsewhere", "name": "renamed"}), "is not a route of this AgentOS"),
    ] {
        let r = os.patch_json(&format!("/schedules/{id}"), &body, Some(&ann)).await;
        let want = if body.get("endpoint").is_some() { 404 } else { 422 };
        assert_eq!(r.status, want, "{body}: {}", r.body);
        assert!(detail(&r.body).contains(message), "{body}: {}", r.body);
    }
    let r = os.get(&format!("/schedules/{id}"), Some(&ann)).await;
    assert_eq!((&r.body["name"], &r.body["cron_expr"]), (&json!("nightly"), &json!("0 3 * * *")));
}

#[tokio::test]
async fn schedules_fire_as_their_owner_and_each_user_sees_only_their_own() {
    let os = TestOs::start(config(&isolated())).await;
    let (ann, bob) = (token("ann", SCOPES), token("bob", SCOPES));
    let admin = token("root", &["agent_os:admin"]);
    let body = json!({
        "name": "morning report", "cron_expr": "30 7 * * 1-5", "timezone": "Europe/Berlin",
        "endpoint": "/agents/echo/runs", "payload": {"message": "report please", "user_id": "mallory"},
        "description": "weekday mornings",
    });
    let r = os.post_json("/schedules", &body, Some(&ann)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let mut keys: Vec<&String> = r.body.as_object().unwrap().keys().collect();
    keys.sort();
    let want = [
        "created_at",
        "cron_expr",
        "description",
        "disabled_reason",
        "enabled",
        "endpoint",
        "id",
        "managed_by",
        "max_retries",
        "method",
        "name",
        "next_run_at",
        "payload",
        "retry_delay_seconds",
        "target_id",
        "target_type",
        "timeout_seconds",
        "timezone",
        "updated_at",
        "user_id",
    ];
    assert_eq!(keys, want, "Agno 3.1's ScheduleResponse");
    assert_eq!(r.body["user_id"], "ann");
    let id = r.body["id"].as_str().unwrap().to_owned();
    let next = r.body["next_run_at"].as_i64().unwrap();
    assert!(next > now_epoch_secs(), "next time in the future");
    assert_eq!((r.body["method"].as_str(), r.body["enabled"].as_bool()), (Some("POST"), Some(true)));
    assert_eq!(
        db(&os).get_schedule(&id, None).await.unwrap().unwrap().user_id.as_deref(),
        Some("ann"),
        "owned by the caller"
    );
    // The same name is Ann's alone; Bob may use it too.
    assert_eq!(os.post_json("/schedules", &body, Some(&ann)).await.status, 409);
    let r = os.post_json("/schedules", &body, Some(&bob)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let bob_id = r.body["id"].as_str().unwrap().to_owned();

    // Each sees only their own; Bob cannot reach Ann's by id in any way.
    let ids = |r: &Value| {
        r["data"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    assert_eq!(ids(&os.get("/schedules", Some(&ann)).await.body), [id.as_str()]);
    assert_eq!(ids(&os.get("/schedules", Some(&bob)).await.body), [bob_id.as_str()]);
    let all = ids(&os.get("/schedules", Some(&admin)).await.body);
    assert!(all.contains(&id) && all.contains(&bob_id), "an admin sees every schedule: {all:?}");
    for (method, path) in [
        ("GET", format!("/schedules/{id}")),
        ("PATCH", format!("/schedules/{id}")),
        ("DELETE", format!("/schedules/{id}")),
        ("POST", format!("/schedules/{id}/enable")),
        ("POST", format!("/schedules/{id}/disable")),
        ("POST", format!("/schedules/{id}/trigger")),
        ("GET", format!("/schedules/{id}/runs")),
    ] {
        let req = os.client.request(method.parse().unwrap(), format!("{}{path}", os.base)).bearer_auth(&bob);
        let req = if method == "PATCH" { req.json(&json!({"name": "mine"})) } else { req };
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), 404, "{method} {path}");
    }
    assert!(db(&os).get_schedule(&id, None).await.unwrap().unwrap().enabled, "untouched");

    // Trigger: fired now as Ann, followed to its end.
    let r = os.post_json(&format!("/schedules/{id}/trigger"), &json!({}), Some(&ann)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!((r.body["status"].as_str(), r.body["attempt"].as_i64()), (Some("success"), Some(1)), "{}", r.body);
    let run_id = r.body["run_id"].as_str().unwrap().to_owned();
    let session_id = r.body["session_id"].as_str().unwrap().to_owned();
    let run = db(&os).get_run(&run_id, None).await.unwrap().unwrap();
    assert_eq!(run.user_id.as_deref(), Some("ann"), "the payload's user_id is replaced by the owner");
    assert_eq!(r.body["output"]["content"], json!(run.content));
    let path = format!("/agents/echo/runs/{run_id}?session_id={session_id}");
    assert_eq!(os.get(&path, Some(&ann)).await.status, 200);
    assert_eq!(os.get(&path, Some(&bob)).await.status, 404);

    // The poller fires it when due, and gives it its next time.
    make_due(&os, &id).await;
    until("the poller fired the schedule", || async { runs_of(&os, &id, &ann).await.len() == 2 }).await;
    until("the poller released the schedule", || async {
        let s = db(&os).get_schedule(&id, None).await.unwrap().unwrap();
        s.locked_by.is_none() && s.next_run_at.is_some_and(|n| n > now_epoch_secs())
    })
    .await;
    let runs = runs_of(&os, &id, &ann).await;
    assert!(runs.iter().all(|r| r["status"] == "success"), "{runs:?}");
    for r in &runs {
        let stored = db(&os).get_schedule_run(r["id"].as_str().unwrap(), None).await.unwrap().unwrap();
        assert_eq!(stored.user_id.as_deref(), Some("ann"), "a schedule run carries its owner");
    }
    let page = db(&os).get_runs(&RunQuery { user_id: Some("ann".to_owned()), ..RunQuery::default() }).await.unwrap();
    assert_eq!(page.runs.len(), 2, "two runs at the target, both Ann's");
    let page =
        db(&os).get_runs(&RunQuery { user_id: Some("mallory".to_owned()), ..RunQuery::default() }).await.unwrap();
    assert!(page.runs.is_empty());
    let one = runs[0]["id"].as_str().unwrap();
    assert_eq!(os.get(&format!("/schedules/{id}/runs/{one}"), Some(&ann)).await.status, 200);
    assert_eq!(os.get(&format!("/schedules/{bob_id}/runs/{one}"), Some(&bob)).await.status, 404);

    // A schedule fires as its owner, never with more: Ann cannot reach Bob's session through one.
    let r = os.post_json(&format!("/schedules/{bob_id}/trigger"), &json!({}), Some(&bob)).await;
    assert_eq!(r.body["status"], "success", "{}", r.body);
    let bob_session = r.body["session_id"].as_str().unwrap().to_owned();
    let sneaky = json!({"name": "sneaky", "cron_expr": "@daily", "method": "DELETE", "endpoint": format!("/sessions/{bob_session}")});
    let r = os.post_json("/schedules", &sneaky, Some(&ann)).await;
    assert_eq!(
        (r.status, detail(&r.body)),
        (403, "Only admins can schedule an endpoint that is not a run endpoint".to_owned())
    );
    // Even one an admin made for Ann fires as Ann, confined to her data.
    let mut for_ann = sneaky.clone();
    for_ann["user_id"] = json!("ann");
    let r = os.post_json("/schedules", &for_ann, Some(&admin)).await;
    assert_eq!((r.status, &r.body["user_id"]), (201, &json!("ann")), "{}", r.body);
    let r =
        os.post_json(&format!("/schedules/{}/trigger", r.body["id"].as_str().unwrap()), &json!({}), Some(&admin)).await;
    assert_eq!((&r.body["status"], &r.body["status_code"]), (&json!("failed"), &json!(404)), "{}", r.body);
    assert!(db(&os).get_session(&bob_session, None, None).await.unwrap().is_some(), "Bob's session is intact");

    // Disabled: not fired, not triggered; enabled again with a new next time.
    let r = os.post_json(&format!("/schedules/{id}/disable"), &json!({}), Some(&ann)).await;
    assert_eq!((r.status, &r.body["enabled"]), (200, &json!(false)), "{}", r.body);
    assert_eq!(r.body.as_object().unwrap().len(), 5, "{}", r.body);
    assert_eq!(os.post_json(&format!("/schedules/{id}/trigger"), &json!({}), Some(&ann)).await.status, 409);
    let r = os.post_json(&format!("/schedules/{id}/enable"), &json!({}), Some(&ann)).await;
    assert_eq!((r.status, &r.body["enabled"]), (200, &json!(true)));
    assert!(r.body["next_run_at"].as_i64().unwrap() > now_epoch_secs());

    // Patch: a new cron recomputes the next time.
    let r = os
        .patch_json(&format!("/schedules/{id}"), &json!({"cron_expr": "0 12 * * *", "timezone": "UTC"}), Some(&ann))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["next_run_at"].as_i64().unwrap() % 86_400, 12 * 3600);

    // Delete: 204, and its runs go with it.
    let r = os.delete(&format!("/schedules/{id}"), Some(&ann)).await;
    assert_eq!(r.status, 204);
    assert_eq!(os.get(&format!("/schedules/{id}"), Some(&ann)).await.status, 404);
    assert!(db(&os).get_schedule_run(one, None).await.unwrap().is_none());
}

#[tokio::test]
async fn a_failing_target_keeps_the_schedule_and_a_cron_that_stops_computing_disables_it() {
    let os = TestOs::start(config(&isolated())).await;
    let ann = token("ann", SCOPES);
    // A target that answers 404, retried once.
    let body = json!({
        "name": "reader", "cron_expr": "*/5 * * * *", "endpoint": "/sessions/missing", "method": "GET",
        "max_retries": 1, "retry_delay_seconds": 1,
    });
    let r = os.post_json("/schedules", &body, Some(&ann)).await;
    assert_eq!(r.status, 403, "only admins schedule a non-run endpoint: {}", r.body);
    let mut body = body;
    body["user_id"] = json!("ann");
    let r = os.post_json("/schedules", &body, Some(&token("root", &["agent_os:admin"]))).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_owned();
    make_due(&os, &id).await;
    until("both attempts ran", || async {
        runs_of(&os, &id, &ann).await.iter().filter(|r| r["status"] == "failed").count() == 2
    })
    .await;
    until("the schedule was released", || async {
        db(&os).get_schedule(&id, None).await.unwrap().unwrap().locked_by.is_none()
    })
    .await;
    let runs = runs_of(&os, &id, &ann).await;
    assert_eq!(runs[0]["attempt"], 2);
    assert_eq!(runs[0]["status_code"], 404);
    assert!(runs[0]["error"].as_str().unwrap().contains("not found"), "{runs:?}");
    let s = db(&os).get_schedule(&id, None).await.unwrap().unwrap();
    assert!(s.enabled && s.next_run_at.unwrap() > now_epoch_secs(), "keeps its next time: {s:?}");

    // A schedule whose cron cannot compute any more (written by another tool): fired once, then
    // disabled with the reason.
    let mut broken = Schedule::new("broken", "/agents/echo/runs", "0 0 31 2 *");
    broken.user_id = Some("ann".to_owned());
    broken.next_run_at = Some(now_epoch_secs() - 1);
    db(&os).create_schedule(&broken).await.unwrap();
    until("the broken schedule was disabled", || async {
        !db(&os).get_schedule(&broken.id, None).await.unwrap().unwrap().enabled
    })
    .await;
    let s = db(&os).get_schedule(&broken.id, None).await.unwrap().unwrap();
    assert!(s.disabled_reason.as_deref().unwrap_or_default().contains("has no next time"), "{s:?}");
    assert_eq!((s.next_run_at, s.locked_by), (None, None));
}

/// The daily metrics are recalculated in the background by a system schedule: admins see it,
/// users do not; when it is due one replica fires it (`POST /metrics/refresh` as an admin) and
/// the buckets appear.
#[tokio::test]
async fn the_metrics_job_is_a_system_schedule() {
    let os = TestOs::start(config(&isolated())).await;
    let ann = token("ann", SCOPES);
    let admin = token("root", &["agent_os:admin"]);
    let r = os.post_form("/agents/echo/runs", &[("message", "hello"), ("stream", "false")], Some(&ann)).await;
    assert_eq!(r.status, 200, "{}", r.body);

    until("the poller set up the metrics job", || async {
        db(&os).get_schedule_by_name("agno-metrics-refresh", None).await.unwrap().is_some()
    })
    .await;
    let job = db(&os).get_schedule_by_name("agno-metrics-refresh", None).await.unwrap().unwrap();
    assert_eq!(
        (job.user_id.as_deref(), job.managed_by.as_deref(), job.endpoint.as_str()),
        (None, Some("agno"), "/metrics/refresh")
    );
    assert_eq!(job.cron_expr, "*/15 * * * *");
    let listed = |body: &Value| body["data"].as_array().unwrap().iter().any(|s| s["name"] == "agno-metrics-refresh");
    assert!(listed(&os.get("/schedules", Some(&admin)).await.body), "admins see the system schedule");
    assert!(!listed(&os.get("/schedules", Some(&ann)).await.body), "users do not");
    assert!(db(&os).get_metrics(&agno_core::MetricsQuery::default()).await.unwrap().0.is_empty());

    make_due(&os, &job.id).await;
    until("the metrics job ran", || async {
        let (runs, _) = db(&os).get_schedule_runs(&job.id, None, None, None).await.unwrap();
        runs.iter().any(|r| r.status == "success")
    })
    .await;
    let (buckets, _) = db(&os).get_metrics(&agno_core::MetricsQuery::default()).await.unwrap();
    let ann_today = buckets.iter().find(|b| b.user_id.as_deref() == Some("ann")).expect("Ann's bucket");
    assert_eq!((ann_today.agent_sessions_count, ann_today.agent_runs_count), (1, 1));
}
