//! The scheduler across processes: two `agno serve` replicas on one database (PostgreSQL, and
//! SQLite with two processes on one file) fire each due schedule exactly once per tick, counted
//! at the target; a replica killed (`kill -9`) while it holds a schedule's claim: another fires
//! the schedule again once the claim's grace has passed. Schedule runs and the runs they start
//! carry the owner's `user_id`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use agno::core::{Db, RunQuery, ScheduleQuery, ScheduleUpdate, now_epoch_secs};
use agno_testkit::{FakeProvider, Reply};
use common::{postgres_schema, scratch_dir, start_serve_logged};
use serde_json::{Value, json};

/// A replica's config: the scheduler polling every 50 ms, claims taken over after `grace` s.
fn replica_config(dir: &std::path::Path, db_url: &str, grace: i64, provider: &str) -> std::path::PathBuf {
    let path = dir.join("agentos.toml");
    std::fs::write(
        &path,
        format!(
            "[db]\nurl = \"{db_url}\"\n[queue]\npoll_interval_ms = 20\n\
             [scheduler]\nenabled = true\npoll_interval_seconds = 0.05\nlock_grace_seconds = {grace}\nrun_poll_interval_ms = 20\n\
             [[agents]]\nid = \"echo\"\nmodel = \"test\"\n\
             [[agents]]\nid = \"slow\"\n\
             model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{provider}\", api_key = \"sk\" }}\n"
        ),
    )
    .unwrap();
    path
}

async fn create_schedule(port: u16, name: &str, agent: &str) -> String {
    let body = json!({
        "name": name, "cron_expr": "0 0 1 1 *", "endpoint": format!("/agents/{agent}/runs"),
        "payload": {"message": format!("from {name}")}, "user_id": "ann",
    });
    let r = reqwest::Client::new().post(format!("http://127.0.0.1:{port}/schedules")).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let body: Value = r.json().await.unwrap();
    body["id"].as_str().unwrap().to_owned()
}

use agno_testkit::until;

/// Two replicas, six schedules, five ticks: each tick makes every schedule due at once (as the
/// clock reaching its time would); both replicas race for them.
async fn fire_once_per_tick(db_url: &str, tag: &str) {
    const SCHEDULES: usize = 6;
    const TICKS: usize = 5;
    let provider = FakeProvider::start().await.unwrap();
    let dir = scratch_dir(tag);
    let config = replica_config(&dir, db_url, 30, &provider.base_url());
    // One after the other: the first creates the tables.
    let (_a, port) = start_serve_logged(&config, &dir.join("a.log")).await;
    let (_b, _) = start_serve_logged(&config, &dir.join("b.log")).await;
    let db: Arc<dyn Db> = agno::db::open_ready(db_url).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..SCHEDULES {
        ids.push(create_schedule(port, &format!("tick-{i}"), "echo").await);
    }
    let released = |db: Arc<dyn Db>| async move {
        let (all, _) = db.get_schedules(&ScheduleQuery::default()).await.unwrap();
        all.iter().all(|s| s.locked_by.is_none() && s.next_run_at.is_some_and(|n| n > now_epoch_secs()))
    };
    for tick in 1..=TICKS {
        for id in &ids {
            let due = ScheduleUpdate { next_run_at: Some(Some(now_epoch_secs() - 1)), ..ScheduleUpdate::default() };
            db.update_schedule(id, None, &due).await.unwrap().unwrap();
        }
        let want = tick * SCHEDULES;
        until(&format!("tick {tick} fired every schedule"), Duration::from_secs(30), || {
            let db = db.clone();
            let ids = ids.clone();
            async move {
                let mut ended = 0;
                for id in &ids {
                    let (runs, _) = db.get_schedule_runs(id, None, Some(1000), None).await.unwrap();
                    ended += runs.iter().filter(|r| r.status != "running").count();
                }
                assert!(ended <= want, "more firings than ticks: {ended} > {want}");
                ended == want
            }
        })
        .await;
        until(&format!("tick {tick} released every schedule"), Duration::from_secs(10), || released(db.clone())).await;
    }
    // Exactly TICKS firings per schedule, each a distinct run of Ann's at the target.
    let mut run_ids = HashSet::new();
    for id in &ids {
        let (runs, total) = db.get_schedule_runs(id, None, Some(1000), None).await.unwrap();
        assert_eq!(total as usize, TICKS, "schedule {id}");
        for r in &runs {
            assert_eq!((r.status.as_str(), r.user_id.as_deref()), ("success", Some("ann")), "{r:?}");
            run_ids.insert(r.run_id.clone().unwrap());
        }
    }
    assert_eq!(run_ids.len(), TICKS * SCHEDULES);
    let page = db
        .get_runs(&RunQuery { user_id: Some("ann".to_owned()), limit: Some(1000), ..RunQuery::default() })
        .await
        .unwrap();
    assert_eq!(page.runs.len(), TICKS * SCHEDULES, "runs at the target");
    assert!(page.runs.iter().all(|r| r.run_id.as_ref().is_some_and(|id| run_ids.contains(id))));
    println!(
        "{tag}: {SCHEDULES} schedules x {TICKS} ticks on two replicas: {} firings, {} runs",
        run_ids.len(),
        page.runs.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_postgres_fire_each_due_schedule_once_per_tick() {
    let Some(schema) = postgres_schema("sched") else { return };
    fire_once_per_tick(&schema.url, "sched-pg").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_on_one_sqlite_file_fire_each_due_schedule_once_per_tick() {
    let dir = scratch_dir("sched-sqlite-db");
    let url = format!("sqlite://{}", dir.join("os.db").display());
    fire_once_per_tick(&url, "sched-sqlite").await;
}

/// A replica killed while its scheduled run is in progress (the model answers after 4 s): the
/// schedule stays claimed by the dead replica until the grace (3 s) has passed, then the other
/// replica fires it again.
async fn killed_while_holding_a_claim(db_url: &str, tag: &str) {
    const GRACE: i64 = 3;
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("slow answer")));
    provider.set_latency(Duration::from_secs(4));
    let dir = scratch_dir(tag);
    let config = replica_config(&dir, db_url, GRACE, &provider.base_url());
    let (mut first, port) = start_serve_logged(&config, &dir.join("first.log")).await;
    let db: Arc<dyn Db> = agno::db::open_ready(db_url).await.unwrap();
    let id = create_schedule(port, "slow-report", "slow").await;
    let due = ScheduleUpdate { next_run_at: Some(Some(now_epoch_secs() - 1)), ..ScheduleUpdate::default() };
    db.update_schedule(&id, None, &due).await.unwrap().unwrap();
    until("the first replica fired the schedule", Duration::from_secs(20), || {
        let db = db.clone();
        let id = id.clone();
        async move { db.get_schedule_runs(&id, None, None, None).await.unwrap().1 == 1 }
    })
    .await;
    let claimed = db.get_schedule(&id, None).await.unwrap().unwrap();
    let (holder, claimed_at) = (claimed.locked_by.clone().unwrap(), claimed.locked_at.unwrap());
    first.kill().unwrap(); // SIGKILL: no release, no final write
    first.wait().unwrap();

    let (_second, _) = start_serve_logged(&config, &dir.join("second.log")).await;
    until("the second replica fired the schedule again", Duration::from_secs(40), || {
        let db = db.clone();
        let id = id.clone();
        async move {
            let (runs, _) = db.get_schedule_runs(&id, None, None, None).await.unwrap();
            runs.iter().any(|r| r.status == "success")
        }
    })
    .await;
    let (runs, total) = db.get_schedule_runs(&id, None, None, None).await.unwrap();
    assert_eq!(total, 2, "{runs:?}");
    let (second, first_run) = (&runs[0], &runs[1]);
    assert_eq!(first_run.status, "running", "the dead replica never ended its record");
    assert!(
        second.triggered_at.unwrap() >= claimed_at + GRACE,
        "fired again only after the grace: claimed at {claimed_at}, fired again at {:?}",
        second.triggered_at
    );
    assert!(runs.iter().all(|r| r.user_id.as_deref() == Some("ann")), "{runs:?}");
    let run = db.get_run(second.run_id.as_deref().unwrap(), None).await.unwrap().unwrap();
    assert_eq!((run.user_id.as_deref(), run.content.as_ref()), (Some("ann"), Some(&json!("slow answer"))));
    until("the schedule was released with its next time", Duration::from_secs(10), || {
        let db = db.clone();
        let id = id.clone();
        let holder = holder.clone();
        async move {
            let s = db.get_schedule(&id, None).await.unwrap().unwrap();
            s.locked_by.as_deref() != Some(holder.as_str())
                && s.locked_by.is_none()
                && s.next_run_at.is_some_and(|n| n > now_epoch_secs())
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_killed_replicas_claim_is_taken_over_after_the_grace() {
    let Some(schema) = postgres_schema("schedkill") else { return };
    killed_while_holding_a_claim(&schema.url, "sched-kill-pg").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_a_killed_replicas_claim_is_taken_over_after_the_grace() {
    let dir = scratch_dir("sched-kill-sqlite-db");
    let url = format!("sqlite://{}", dir.join("os.db").display());
    killed_while_holding_a_claim(&url, "sched-kill-sqlite").await;
}

fn agno_schedule(config: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    common::agno_command("schedule", config, args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agno_schedule_creates_lists_triggers_and_reads_runs() {
    let provider = FakeProvider::start().await.unwrap();
    let dir = scratch_dir("sched-cli");
    let url = format!("sqlite://{}", dir.join("os.db").display());
    let config = replica_config(&dir, &url, 30, &provider.base_url());
    let create = ["create", "nightly", "--cron", "0 3 * * *", "--endpoint", "/agents/echo/runs", "--user", "ann"];

    // Bad input: the route's reasons, a failing exit, nothing stored.
    for (extra, reason) in [
        (&["--timezone", "Mars/Olympus"][..], "Invalid timezone: Mars/Olympus"),
        (&["--payload", "{oops"][..], "--payload is not JSON"),
        (&["--payload", "[1]"][..], "Input should be a valid dictionary"),
    ] {
        let (ok, _, err) = agno_schedule(&config, &[&create[..], extra].concat());
        assert!(!ok && err.contains(reason), "{extra:?}: {err}");
    }
    let (ok, _, err) = agno_schedule(&config, &["create", "x", "--cron", "* * *", "--endpoint", "/agents/echo/runs"]);
    assert!(!ok && err.contains("use 5 fields"), "{err}");
    let (ok, _, err) = agno_schedule(&config, &["create", "x", "--cron", "@daily", "--endpoint", "/nowhere"]);
    assert!(!ok && err.contains("POST /nowhere is not a route of this AgentOS"), "{err}");
    let (ok, out, _) = agno_schedule(&config, &["list"]);
    assert!(ok && out.contains("no schedules"), "{out}");

    let (ok, out, err) =
        agno_schedule(&config, &[&create[..], &["--payload", r#"{"message": "nightly report"}"#]].concat());
    assert!(ok, "{err}");
    assert!(out.starts_with("created schedule nightly (") && out.contains("03:00:00"), "{out}");
    let (ok, _, err) = agno_schedule(&config, &create);
    assert!(!ok && err.contains("Schedule with name 'nightly' already exists"), "{err}");
    let (ok, out, _) = agno_schedule(&config, &["list", "--user", "ann"]);
    assert!(ok && out.contains("nightly") && out.contains("0 3 * * *") && out.contains("/agents/echo/runs"), "{out}");
    let (ok, out, _) = agno_schedule(&config, &["list", "--user", "bob"]);
    assert!(ok && out.contains("no schedules of bob"), "{out}");

    // Trigger: fired now as Ann, through the queue, to its end.
    let (ok, out, err) = agno_schedule(&config, &["trigger", "nightly", "--user", "ann"]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("success") && out.contains("run "), "{out}");
    let (ok, _, err) = agno_schedule(&config, &["trigger", "nightly", "--user", "bob"]);
    assert!(!ok && err.contains("no schedule \"nightly\" of user bob"), "{err}");
    let (ok, out, _) = agno_schedule(&config, &["runs", "nightly", "--user", "ann"]);
    assert!(ok && out.lines().count() == 1 && out.contains("attempt 1") && out.contains("success"), "{out}");
    let db = agno::db::open_ready(&url).await.unwrap();
    let page = db.get_runs(&RunQuery { user_id: Some("ann".to_owned()), ..RunQuery::default() }).await.unwrap();
    assert_eq!(page.runs.len(), 1);
    assert_eq!(page.runs[0].input.as_ref().and_then(|i| i.input_content.as_ref()), Some(&json!("nightly report")));
}
