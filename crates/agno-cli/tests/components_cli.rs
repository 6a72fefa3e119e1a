//! `agno component` against an OS config's database: publish agentos.toml-style tables (created,
//! then a new version), list, read a version, roll back; a config that does not build and another
//! user's write are refused with the route's reason and a failing exit, nothing changed. A
//! second process (`agno serve` on the same file) reads what the CLI published. Two replicas on
//! one database: what one publishes or rolls back, the other serves, told by PostgreSQL's
//! notifications or by its poll on SQLite (the delays are printed); a background run queued
//! before a publish runs its version on either replica. A Python AgentOS 3.1.10 and `agno serve`
//! share one catalog. And the other OS-database object replicas must agree on at once: a
//! service-account token revoked through one replica is refused by the other (delay printed).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use common::{get_json, postgres_schema, scratch_dir, start_serve_logged};
use serde_json::{Value, json};

fn agno_component(config: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    common::agno_command("component", config, args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agno_component_publishes_lists_reads_and_rolls_back() {
    let dir = scratch_dir("component-cli");
    let config = dir.join("agentos.toml");
    let url = format!("sqlite://{}", dir.join("os.db").display());
    std::fs::write(&config, format!("[db]\nurl = \"{url}\"\n[[agents]]\nid = \"code-agent\"\nmodel = \"test\"\n"))
        .unwrap();
    let file = dir.join("helper.toml");
    std::fs::write(
        &file,
        "[[agents]]\nid = \"helper\"\nname = \"Helper\"\nmodel = \"test\"\ninstructions = [\"Be brief.\"]\ntools = [\"calculator\"]\n\n\
         [[teams]]\nid = \"crew\"\nname = \"Crew\"\nmodel = \"test\"\nmembers = [\"helper\", \"code-agent\"]\n",
    )
    .unwrap();

    let (ok, out, err) = agno_component(&config, &["list"]);
    assert!(ok && out.contains("no components"), "{out}{err}");
    let (ok, out, err) = agno_component(&config, &["publish", file.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["created and published agent helper v1 (now current)", "created and published team crew v1 (now current)"]
    );
    let (ok, out, err) = agno_component(&config, &["publish", file.to_str().unwrap()]);
    assert!(ok && out.contains("published agent helper v2 (now current)"), "{out}{err}");
    let (ok, out, _) = agno_component(&config, &["list"]);
    assert!(ok && out.lines().any(|l| l.starts_with("helper") && l.contains(" v2 ") && l.contains("live")), "{out}");

    // Rollback, then read: the served version and the one asked for.
    let (ok, out, err) = agno_component(&config, &["rollback", "helper", "1"]);
    assert!(ok && out.contains("helper now serves v1"), "{out}{err}");
    let (ok, out, err) = agno_component(&config, &["get", "helper", "--at", "2"]);
    assert!(ok, "{err}");
    let got: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((got["component"]["current_version"].as_i64(), got["config"]["version"].as_i64()), (Some(1), Some(2)));
    assert_eq!(got["config"]["config"]["instructions"], serde_json::json!(["Be brief."]));
    assert_eq!(got["versions"].as_array().unwrap().len(), 2);

    // Refusals: a config that does not build, another user's write, an unknown id, a file without tables.
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[[agents]]\nid = \"helper\"\nmodel = \"test\"\ntools = [\"teleport\"]\n").unwrap();
    let (ok, _, err) = agno_component(&config, &["publish", bad.to_str().unwrap()]);
    assert!(!ok && err.contains("unknown toolkit \"teleport\""), "{err}");
    let (ok, _, err) = agno_component(&config, &["--user", "bob", "publish", file.to_str().unwrap()]);
    assert!(!ok && err.contains("Cannot modify shared component"), "{err}");
    let (ok, _, err) = agno_component(&config, &["rollback", "ghost", "1"]);
    assert!(!ok && err.contains("(see `agno component list`)"), "{err}");
    std::fs::write(&bad, "[os]\nid = \"x\"\n").unwrap();
    let (ok, _, err) = agno_component(&config, &["publish", bad.to_str().unwrap()]);
    assert!(!ok && err.contains("holds no [[agents]], [[teams]] or [[workflows]] table"), "{err}");
    let (_, out, _) = agno_component(&config, &["get", "helper"]);
    let got: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(got["component"]["current_version"].as_i64(), Some(1), "nothing changed");

    // Another process on the same database reads what the CLI published.
    let (_served, port) = start_serve_logged(&config, &dir.join("serve.log")).await;
    let listed = get_json(port, "/components").await;
    let ids: Vec<&str> =
        listed["data"].as_array().unwrap().iter().map(|c| c["component_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2, "{listed}");
    assert!(ids.contains(&"helper") && ids.contains(&"crew"));
}

/// Waits (bounded) until `GET path` on `port` answers 200 with `field` equal to `want`; how long
/// it took from `since`.
async fn served_within(port: u16, path: &str, field: &str, want: &Value, since: Instant) -> Duration {
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let r = client.get(format!("http://127.0.0.1:{port}{path}")).send().await.unwrap();
        if r.status() == 200 {
            let body: Value = r.json().await.unwrap();
            if &body[field] == want {
                return since.elapsed();
            }
        }
        assert!(Instant::now() < deadline, "{path} on port {port} never had {field} = {want}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// On PostgreSQL the replicas hear of each other's catalog writes (`LISTEN`): the poll is set to
/// a minute, so only the notification can make the other replica serve within the deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_postgres_serve_what_either_publishes_and_rolls_back() {
    let Some(schema) = postgres_schema("components") else { return };
    replicas_follow_each_other(&schema.url, 60_000, "component-replicas-pg").await;
}

/// On one SQLite file (two processes) the replicas poll the catalog.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_one_sqlite_file_serve_what_either_publishes_and_rolls_back() {
    let dir = scratch_dir("component-replicas-sqlite-db");
    replicas_follow_each_other(&format!("sqlite://{}", dir.join("os.db").display()), 200, "component-replicas-sqlite")
        .await;
}

async fn replicas_follow_each_other(db_url: &str, poll_ms: u64, tag: &str) {
    let dir = scratch_dir(tag);
    let config = dir.join("agentos.toml");
    std::fs::write(
        &config,
        format!(
            "[db]\nurl = \"{db_url}\"\n[components]\npoll_interval_ms = {poll_ms}\n[[agents]]\nid = \"code-agent\"\nmodel = \"test\"\n"
        ),
    )
    .unwrap();
    let (_a, a) = start_serve_logged(&config, &dir.join("a.log")).await;
    let (_b, b) = start_serve_logged(&config, &dir.join("b.log")).await;
    let client = reqwest::Client::new();
    let post = |port: u16, path: &str, body: Value| {
        let req = client.post(format!("http://127.0.0.1:{port}{path}")).json(&body);
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let agent = |name: &str| json!({"name": name, "model": "test", "instructions": ["Be brief."]});

    let since = Instant::now();
    let created = post(
        a,
        "/components",
        json!({"name": "Helper", "component_id": "helper", "component_type": "agent",
                                               "stage": "published", "config": agent("Helper")}),
    )
    .await;
    assert_eq!(created.0, 201, "{}", created.1);
    let published = served_within(b, "/agents/helper", "name", &json!("Helper"), since).await;
    let run = client
        .post(format!("http://127.0.0.1:{b}/agents/helper/runs"))
        .form(&[("message", "hi"), ("stream", "false")])
        .send()
        .await
        .unwrap();
    assert_eq!(run.status(), 200);
    assert_eq!(run.json::<Value>().await.unwrap()["status"], "COMPLETED", "replica B runs what A published");

    let since = Instant::now();
    assert_eq!(
        post(a, "/components/helper/configs", json!({"config": agent("Helper Two"), "stage": "published"})).await.0,
        201
    );
    let second = served_within(b, "/agents/helper", "name", &json!("Helper Two"), since).await;
    let since = Instant::now();
    assert_eq!(post(a, "/components/helper/configs/1/set-current", json!({})).await.0, 200);
    let rollback = served_within(b, "/agents/helper", "name", &json!("Helper"), since).await;
    eprintln!(
        "publish -> served on the other replica ({db_url:.10}.., poll {poll_ms} ms): first {} ms, new version {} ms, rollback {} ms",
        published.as_millis(),
        second.as_millis(),
        rollback.as_millis()
    );
    let listed = get_json(b, "/agents").await;
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
}

/// Agno's own model dict, which both servers build from `OPENAI_BASE_URL` and `OPENAI_API_KEY`.
fn agno_model() -> Value {
    json!({"id": "gpt-4o-mini", "provider": "OpenAI", "name": "OpenAIChat"})
}

/// Runs `scripts/interop/agno_client_check.py` (Python Agno's `AgentOSClient`) against `base` on
/// agent `agent`: it lists, reads and runs the agent (JSON and SSE); its JSON report.
async fn client_check(python: &str, base: &str, agent: &str) -> Value {
    let run = tokio::process::Command::new(python)
        .arg(common::repo_file("scripts/interop/agno_client_check.py"))
        .args([base, "--agent", agent, "--message", "catalog check"])
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(180), run).await.expect("the client check ends").unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "agno_client_check.py failed: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| panic!("no JSON line: {stderr}"));
    serde_json::from_str(last).unwrap()
}

/// What every client check of a catalog agent must show: `AgentOSClient` found the agent in the
/// listing, read it by id, and ran it to completion both ways on the fake model.
fn assert_client_ran(report: &Value, agent: &str, name: &str, server: &str) {
    assert_eq!(report["errors"], json!({}), "{server}: AgentOSClient steps failed: {report}");
    let listed: Vec<&str> = report["agents"].as_array().unwrap().iter().filter_map(|a| a["id"].as_str()).collect();
    assert!(listed.contains(&agent), "{server}: /agents lists {agent}: {listed:?}");
    assert_eq!(
        (report["agent"]["id"].as_str(), report["agent"]["name"].as_str()),
        (Some(agent), Some(name)),
        "{server}"
    );
    assert_eq!(report["run"]["status"], "COMPLETED", "{server}: {report}");
    assert!(report["run"]["content"].as_str().unwrap().contains("catalog check"), "{server}: the fake model echoes");
    assert_eq!(report["stream"]["final_content"], report["stream"]["streamed_content"], "{server}");
}

/// A component as `GET /components/{id}` answers it, from each server.
async fn component_on(base: &str, id: &str) -> Value {
    let r = reqwest::get(format!("{base}/components/{id}")).await.unwrap();
    assert_eq!(r.status(), 200, "{base}/components/{id}");
    r.json().await.unwrap()
}

async fn post_json(base: &str, path: &str, body: Value) -> (u16, Value) {
    let r = reqwest::Client::new().post(format!("{base}{path}")).json(&body).send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// Python AgentOS 3.1.10 and `agno serve` on one SQLite file: each serves, and Python Agno's
/// `AgentOSClient` runs, what the other stored through `/components`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_agentos_and_agno_serve_share_one_catalog_on_sqlite() {
    let dir = scratch_dir("component-python-sqlite-db");
    catalog_shared_with_python(&format!("sqlite://{}", dir.join("os.db").display()), "component-python-sqlite").await;
}

/// As on SQLite, on one PostgreSQL schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_agentos_and_agno_serve_share_one_catalog_on_postgres() {
    let Some(schema) = postgres_schema("component_python") else { return };
    catalog_shared_with_python(&schema.url, "component-python-pg").await;
}

async fn catalog_shared_with_python(db_url: &str, tag: &str) {
    let Some(python) = agno_testkit::agno_python("the catalog shared with Python AgentOS") else { return };
    let provider = agno_testkit::FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(agno_testkit::Reply::Echo));
    let dir = scratch_dir(tag);
    let (_py, py) = common::start_python_agentos(&python, &provider, &dir, db_url, &["--components".into()]).await;
    let config = dir.join("agentos.toml");
    std::fs::write(
        &config,
        format!("[db]\nurl = \"{db_url}\"\n[components]\npoll_interval_ms = 200\n[[agents]]\nid = \"code-agent\"\nmodel = \"test\"\n"),
    )
    .unwrap();
    let base_url = provider.base_url();
    let env = [("OPENAI_BASE_URL", base_url.as_str()), ("OPENAI_API_KEY", "sk-test")];
    let (_rs, rs_port) = common::start_serve_with_env(&config, &dir.join("agno-rs.log"), &env).await;
    let rs = format!("http://127.0.0.1:{rs_port}");
    let agent =
        |name: &str, instructions: &str| json!({"name": name, "model": agno_model(), "instructions": instructions});

    // agno-rs stores and publishes; Python AgentOS reads the same rows and runs the agent.
    let scribe = json!({"name": "Scribe", "component_id": "scribe", "component_type": "agent", "stage": "published",
                        "description": "Writes it down", "config": agent("Scribe", "Write it down.")});
    let (status, created) = post_json(&rs, "/components", scribe).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(component_on(&py, "scribe").await, component_on(&rs, "scribe").await, "one row, read alike");
    let current: Value =
        reqwest::get(format!("{py}/components/scribe/configs/current")).await.unwrap().json().await.unwrap();
    assert_eq!((current["version"].as_i64(), &current["config"]), (Some(1), &agent("Scribe", "Write it down.")));
    assert_client_ran(&client_check(&python, &py, "scribe").await, "scribe", "Scribe", "Python AgentOS");

    // Python AgentOS stores and publishes; agno-rs reads the rows, serves the agent within its
    // poll, and AgentOSClient runs it there.
    let clerk = json!({"name": "Clerk", "component_id": "clerk", "component_type": "agent", "stage": "published",
                       "config": agent("Clerk", "File it.")});
    let (status, created) = post_json(&py, "/components", clerk).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(component_on(&rs, "clerk").await, component_on(&py, "clerk").await, "one row, read alike");
    served_within(rs_port, "/agents/clerk", "name", &json!("Clerk"), Instant::now()).await;
    let report = client_check(&python, &rs, "clerk").await;
    assert_client_ran(&report, "clerk", "Clerk", "agno serve");
    // agno-rs also lists catalog agents in `/config` (Python AgentOS 3.1.10 lists its code agents only).
    assert!(report["config"]["agent_ids"].as_array().unwrap().contains(&json!("clerk")), "{}", report["config"]);

    // A version published by Python is served by agno-rs; agno-rs's rollback is what Python serves.
    let v2 = json!({"config": agent("Clerk Two", "File it twice."), "stage": "published"});
    assert_eq!(post_json(&py, "/components/clerk/configs", v2).await.0, 201);
    served_within(rs_port, "/agents/clerk", "name", &json!("Clerk Two"), Instant::now()).await;
    assert_eq!(post_json(&rs, "/components/clerk/configs/1/set-current", json!({})).await.0, 200);
    let on_python: Value = reqwest::get(format!("{py}/agents/clerk")).await.unwrap().json().await.unwrap();
    assert_eq!(on_python["name"], "Clerk", "Python AgentOS serves the version agno-rs rolled back to");

    // A team stored by agno-rs pins Scribe v1: Python refuses to archive Scribe while it does.
    let crew = json!({"name": "Crew", "component_id": "crew", "component_type": "team", "stage": "published",
                      "config": {"name": "Crew", "mode": "coordinate", "model": agno_model(),
                                 "members": [{"type": "agent", "agent_id": "scribe"}]}});
    assert_eq!(post_json(&rs, "/components", crew).await.0, 201);
    let refused = reqwest::Client::new().delete(format!("{py}/components/scribe")).send().await.unwrap();
    assert_eq!(refused.status(), 409, "{}", refused.text().await.unwrap());
    let scribe = component_on(&rs, "scribe").await;
    assert_eq!((&scribe["deleted_at"], &scribe["current_version"]), (&Value::Null, &json!(1)), "nothing changed");
}

/// Waits (bounded) until run `run_id` of `agent` on `port` has one of the statuses `want`.
async fn run_reaches(port: u16, agent: &str, run_id: &str, want: &[&str]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = reqwest::get(format!("http://127.0.0.1:{port}/agents/{agent}/runs/{run_id}")).await.unwrap();
        let status = r.status();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        if status == 200 && want.iter().any(|w| body["status"] == *w) {
            return body;
        }
        assert!(Instant::now() < deadline, "run {run_id} never reached {want:?}: {status} {body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Two replicas on one PostgreSQL, one worker each, both busy: a background run of a catalog
/// agent queued through A is pinned to v1; v2 is published through A and served by both; when
/// the workers free up, whichever replica claims the run builds v1 for it. A run asked for
/// afterwards runs v2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_run_queued_before_a_publish_runs_that_version_on_either_postgres_replica() {
    let Some(schema) = postgres_schema("component_pinned") else { return };
    let provider = agno_testkit::FakeProvider::start().await.unwrap();
    // The two blockers hold each replica's only worker until the test cancels them.
    for _ in 0..2 {
        let held =
            agno_testkit::Reply::Delayed(Duration::from_secs(600), Box::new(agno_testkit::Reply::text("blocker")));
        provider.push(held);
    }
    let dir = scratch_dir("component-pinned-pg");
    let extra = "[components]\npoll_interval_ms = 60000\n[queue]\nmax_concurrency = 1\npoll_interval_ms = 20\n";
    let config = common::slow_agent_config(&dir, "agentos.toml", &schema.url, &provider.base_url(), extra);
    let (_a, a) = start_serve_logged(&config, &dir.join("a.log")).await;
    let (_b, b) = start_serve_logged(&config, &dir.join("b.log")).await;
    let (base_a, client) = (format!("http://127.0.0.1:{a}"), reqwest::Client::new());
    let helper = |name: &str| json!({"name": name, "model": "test"});
    let body = json!({"name": "Helper", "component_id": "helper", "component_type": "agent", "stage": "published",
                      "config": helper("Helper")});
    assert_eq!(post_json(&base_a, "/components", body).await.0, 201);
    served_within(b, "/agents/helper", "name", &json!("Helper"), Instant::now()).await;

    let background = [("message", "hi"), ("stream", "false"), ("background", "true")];
    let queue = |agent: &'static str| {
        let req = client.post(format!("{base_a}/agents/{agent}/runs")).form(&background);
        async move {
            let r = req.send().await.unwrap();
            assert_eq!(r.status(), 202);
            r.json::<Value>().await.unwrap()["run_id"].as_str().unwrap().to_owned()
        }
    };
    let blockers = [queue("slow").await, queue("slow").await];
    for blocker in &blockers {
        run_reaches(a, "slow", blocker, &["RUNNING"]).await;
    }
    let run_id = queue("helper").await;
    let job = get_json(a, &format!("/queue/jobs/{run_id}")).await;
    assert_eq!((&job["status"], &job["payload"]["component_version"]), (&json!("queued"), &json!(1)), "{job}");

    let v2 = json!({"config": helper("Helper Two"), "stage": "published"});
    assert_eq!(post_json(&base_a, "/components/helper/configs", v2).await.0, 201);
    for port in [a, b] {
        served_within(port, "/agents/helper", "name", &json!("Helper Two"), Instant::now()).await;
    }
    for blocker in &blockers {
        let r = client.post(format!("{base_a}/agents/slow/runs/{blocker}/cancel")).send().await.unwrap();
        assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    }
    let run = run_reaches(b, "helper", &run_id, &["COMPLETED", "ERROR"]).await;
    assert_eq!((&run["status"], &run["agent_name"]), (&json!("COMPLETED"), &json!("Helper")), "{run}");

    let now =
        client.post(format!("http://127.0.0.1:{b}/agents/helper/runs")).form(&[("message", "hi"), ("stream", "false")]);
    let now: Value = now.send().await.unwrap().json().await.unwrap();
    assert_eq!((&now["status"], &now["agent_name"]), (&json!("COMPLETED"), &json!("Helper Two")), "{now}");
}

/// Two replicas on one PostgreSQL: a service-account token minted through A works on B; once
/// revoked through A, B refuses it within its token cache's time (printed; `[auth]
/// service_account_cache_ms`, 500 ms by default), A at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_account_revoked_on_one_replica_is_refused_by_the_other() {
    let Some(schema) = postgres_schema("service_accounts") else { return };
    let dir = scratch_dir("service-accounts-pg");
    let config = dir.join("agentos.toml");
    let url = &schema.url;
    std::fs::write(
        &config,
        format!("[auth]\nmode = \"key\"\nsecurity_key = \"root-key\"\n[db]\nurl = \"{url}\"\n[[agents]]\nid = \"echo\"\nmodel = \"test\"\n"),
    )
    .unwrap();
    let (_a, a) = start_serve_logged(&config, &dir.join("a.log")).await;
    let (_b, b) = start_serve_logged(&config, &dir.join("b.log")).await;
    let client = reqwest::Client::new();
    let minted = client
        .post(format!("http://127.0.0.1:{a}/service-accounts"))
        .bearer_auth("root-key")
        .json(&json!({"name": "ci", "scopes": [{"scope": "agents:read"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(minted.status(), 201);
    let minted: Value = minted.json().await.unwrap();
    let token = minted["token"].as_str().unwrap().to_owned();
    let agents_on = |port: u16| client.get(format!("http://127.0.0.1:{port}/agents")).bearer_auth(&token).send();
    assert_eq!(agents_on(b).await.unwrap().status(), 200, "a token minted through A works on B");

    let revoked_at = Instant::now();
    let id = minted["id"].as_str().unwrap();
    let revoke = client.delete(format!("http://127.0.0.1:{a}/service-accounts/{id}")).bearer_auth("root-key");
    assert_eq!(revoke.send().await.unwrap().status(), 204);
    assert_eq!(agents_on(a).await.unwrap().status(), 401, "the revoking replica refuses it at once");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if agents_on(b).await.unwrap().status() == 401 {
            break;
        }
        assert!(Instant::now() < deadline, "replica B still accepts a token revoked through A");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    eprintln!("revoked through A -> refused by B after {} ms", revoked_at.elapsed().as_millis());
}
