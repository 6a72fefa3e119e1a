//! `agno component` against an OS config's database: publish agentos.toml-style tables (created,
//! then a new version), list, read a version, roll back; a config that does not build and another
//! user's write are refused with the route's reason and a failing exit, nothing changed. A
//! second process (`agno serve` on the same file) reads what the CLI published. Two replicas on
//! one database: what one publishes or rolls back, the other serves, told by PostgreSQL's
//! notifications or by its poll on SQLite (the delays are printed).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use common::{get_json, postgres_schema, scratch_dir, start_serve_logged};
use serde_json::{Value, json};

fn agno_component(config: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = common::agno().arg("component").arg("--config").arg(config).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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
