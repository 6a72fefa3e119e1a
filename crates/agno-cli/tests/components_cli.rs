//! `agno component` against an OS config's database: publish agentos.toml-style tables (created,
//! then a new version), list, read a version, roll back; a config that does not build and another
//! user's write are refused with the route's reason and a failing exit, nothing changed. A
//! second process (`agno serve` on the same file) reads what the CLI published.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{get_json, scratch_dir, start_serve_logged};
use serde_json::Value;

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
