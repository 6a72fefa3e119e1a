//! Conformance cases of the component catalog (`agno_components`, `agno_component_configs`,
//! `agno_component_links`), run against every adapter by [`crate::db_conformance!`].

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic, clippy::needless_pass_by_value)]

use std::sync::Arc;

use agno_core::{
    ComponentChange, ComponentErrorKind as Kind, ComponentQuery, ComponentStore, ConfigChoice, ConfigWrite, LinkSpec,
    NewComponent,
};
use serde_json::{Map, Value, json};

fn object(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

fn new(id: &str, kind: &str, user: Option<&str>, config: Value, stage: &str) -> NewComponent {
    NewComponent {
        component_id: id.to_owned(),
        component_type: kind.to_owned(),
        name: Some(format!("{id} ✓")),
        description: Some("first".to_owned()),
        metadata: Some(object(json!({"team": "core"}))),
        user_id: user.map(str::to_owned),
        config: ConfigWrite { config: Some(object(config)), stage: Some(stage.to_owned()), ..Default::default() },
    }
}

fn member(child: &str, version: i64) -> LinkSpec {
    LinkSpec {
        link_kind: "member".to_owned(),
        link_key: "member_0".to_owned(),
        child_component_id: child.to_owned(),
        child_version: version,
        position: 0,
        meta: Some(json!({"type": "agent"})),
    }
}

fn refusal<T: std::fmt::Debug>(r: Result<T, agno_core::ComponentError>) -> (Kind, String) {
    match r {
        Err(agno_core::ComponentError::Refused(kind, message)) => (kind, message),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// Components, versions and links round-trip with every field; publishing moves the served
/// version and the component's identity; a team keeps the member version it pinned when the
/// member publishes again, and the member cannot be archived under it; rollback, tombstones,
/// guards, listing order, visibility and paging are Agno's.
pub async fn components_version_publish_and_pin<D: ComponentStore + ?Sized>(db: Arc<D>) {
    let agent_config = json!({"name": "Helper", "model": {"id": "gpt-4o-mini", "provider": "OpenAI"},
                              "instructions": ["Be brief ✓"], "nested": {"deep": [1, 2.5, null, true]}});
    let (a, v1) = db
        .create_component(&new("helper", "agent", Some("ann"), agent_config.clone(), "published"), 100)
        .await
        .unwrap();
    assert_eq!((a.current_version, a.created_at, a.user_id.as_deref()), (Some(1), 100, Some("ann")));
    assert_eq!(v1.config, object(agent_config.clone()), "the config round-trips whole");
    let read = db.get_component("helper", None, false).await.unwrap().expect("stored");
    assert_eq!(read, a, "every field of the component round-trips");
    let again = db.create_component(&new("helper", "agent", None, json!({}), "draft"), 101).await;
    assert_eq!(refusal(again), (Kind::Invalid, "Component ID helper is not available".to_owned()));

    // A team pinning helper v1; a published team may not pin a draft.
    let team_config =
        json!({"name": "Crew", "members": [{"type": "agent", "agent_id": "helper"}], "mode": "coordinate"});
    let mut team = new("crew", "team", None, team_config.clone(), "published");
    team.config.links = Some(vec![member("helper", 7)]);
    let (kind, message) = refusal(db.create_component(&team, 110).await);
    assert_eq!(kind, Kind::Dependency);
    assert_eq!(
        message,
        "Cannot create crew as published: pinned member 'helper' v7 is missing; publish the child first."
    );
    assert!(db.get_component("crew", None, true).await.unwrap().is_none(), "a refused create writes nothing");
    team.config.links = Some(vec![member("helper", 1)]);
    db.create_component(&team, 110).await.unwrap();
    let links = db.component_links("crew", 1).await.unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!((links[0].child_version, &links[0].meta), (Some(1), &Some(json!({"type": "agent"}))));

    // helper publishes v2 (a guarded append): served, with v2's identity; the team keeps v1.
    let v2 = ConfigWrite {
        config: Some(object(json!({"name": "Helper Two", "description": null}))),
        stage: Some("published".to_owned()),
        label: Some("stable".to_owned()),
        expected_latest_version: Some(1),
        ..Default::default()
    };
    let written = db.write_config("helper", &v2, Some("ann"), 120).await.unwrap();
    assert_eq!((written.version, written.stage.as_str()), (2, "published"));
    let stale = refusal(db.write_config("helper", &v2, Some("ann"), 121).await);
    assert_eq!(stale, (Kind::VersionConflict, "Component helper latest version is 2, expected 1".to_owned()));
    let a = db.get_component("helper", None, false).await.unwrap().unwrap();
    assert_eq!(
        (a.current_version, a.name.as_deref(), a.description.as_deref()),
        (Some(2), Some("Helper Two"), Some(""))
    );
    assert_eq!(a.metadata, Some(object(json!({"team": "core"}))), "metadata the config does not carry is kept");
    assert_eq!(db.component_links("crew", 1).await.unwrap()[0].child_version, Some(1), "the pin holds");
    let (kind, message) = refusal(db.archive_component("helper", None, None, 122).await);
    assert_eq!((kind, message.as_str()), (Kind::Dependency, "Cannot delete helper: referenced by crew"));

    // Another user neither sees a draft-only component nor writes a published one.
    db.create_component(&new("secret", "agent", Some("ann"), json!({}), "draft"), 130).await.unwrap();
    assert!(db.get_component("secret", Some("bob"), false).await.unwrap().is_none());
    assert!(db.get_component("helper", Some("bob"), false).await.unwrap().is_some(), "published is visible");
    let change = ComponentChange { name: Some("mine".to_owned()), ..Default::default() };
    assert_eq!(refusal(db.update_component("helper", &change, Some("bob"), 131).await).0, Kind::NotFound);

    // Listing: newest first then by id; type filter, visibility, exclusion, paging.
    let ids = |list: &[agno_core::ComponentRecord]| list.iter().map(|c| c.component_id.clone()).collect::<Vec<_>>();
    let (all, total) = db.list_components(&ComponentQuery::default()).await.unwrap();
    assert_eq!((ids(&all), total), (vec!["secret".to_owned(), "crew".to_owned(), "helper".to_owned()], 3));
    let bob = ComponentQuery { viewer: Some("bob".to_owned()), ..Default::default() };
    assert_eq!(ids(&db.list_components(&bob).await.unwrap().0), ["crew", "helper"]);
    let agents = ComponentQuery {
        component_type: Some("agent".to_owned()),
        exclude: vec!["secret".to_owned()],
        ..Default::default()
    };
    assert_eq!(db.list_components(&agents).await.unwrap(), (vec![a.clone()], 1));
    let page = ComponentQuery { limit: Some(2), page: Some(2), ..Default::default() };
    assert_eq!(db.list_components(&page).await.unwrap().1, 3);
    assert_eq!(ids(&db.list_components(&page).await.unwrap().0), ["helper"]);

    // Drafts: edited, deleted as tombstones (numbers never reused); published versions frozen.
    let draft = ConfigWrite { config: Some(object(json!({"name": "Draft"}))), ..Default::default() };
    assert_eq!(db.write_config("helper", &draft, None, 140).await.unwrap().version, 3);
    let edit = ConfigWrite { version: Some(3), notes: Some("wip".to_owned()), ..Default::default() };
    assert_eq!(db.write_config("helper", &edit, None, 141).await.unwrap().notes.as_deref(), Some("wip"));
    let frozen = ConfigWrite { version: Some(2), notes: Some("x".to_owned()), ..Default::default() };
    assert_eq!(
        refusal(db.write_config("helper", &frozen, None, 142).await).1,
        "Cannot update published config helper v2"
    );
    assert_eq!(refusal(db.delete_config("helper", 2, None, 143).await).0, Kind::DraftRequired);
    db.delete_config("helper", 3, None, 143).await.unwrap();
    let versions = |list: Vec<agno_core::ComponentConfig>| list.iter().map(|c| c.version).collect::<Vec<_>>();
    assert_eq!(versions(db.component_configs("helper", false).await.unwrap()), [2, 1], "newest first");
    assert_eq!(versions(db.component_configs("helper", true).await.unwrap()), [3, 2, 1]);
    assert_eq!(db.write_config("helper", &draft, None, 144).await.unwrap().version, 4, "3 is not reused");

    // Rollback to v1 (guarded): served again, with v1's name.
    let stale = refusal(db.set_current_config("helper", 1, Some(1), None, 150).await);
    assert_eq!(stale, (Kind::VersionConflict, "Component helper current version is 2, expected 1".to_owned()));
    let back = db.set_current_config("helper", 1, Some(2), None, 150).await.unwrap();
    assert_eq!((back.current_version, back.name.as_deref()), (Some(1), Some("Helper")));
    let configs = db.component_configs("helper", false).await.unwrap();
    assert_eq!(ConfigChoice::Current.pick(&configs, back.current_version).map(|c| c.version), Some(1));
    assert_eq!(ConfigChoice::Label("stable".to_owned()).pick(&configs, None).map(|c| c.version), Some(2));

    // Archive the team, then the member; restore in the other order is refused.
    db.archive_component("crew", None, None, 160).await.unwrap();
    db.archive_component("helper", Some(1), None, 161).await.unwrap();
    assert!(db.get_component("helper", None, false).await.unwrap().is_none());
    assert_eq!(db.get_component("helper", None, true).await.unwrap().unwrap().deleted_at, Some(161));
    assert_eq!(refusal(db.restore_component("crew", None, 162).await).0, Kind::Dependency);
    db.restore_component("helper", None, 162).await.unwrap();
    db.restore_component("crew", None, 163).await.unwrap();
    assert_eq!(refusal(db.restore_component("crew", None, 164).await).0, Kind::NotArchived);
}

/// Links that would close a cycle are refused and change nothing; concurrent appends to one
/// component each get their own version number.
pub async fn components_refuse_cycles_and_serialise_appends<D: ComponentStore + ?Sized + 'static>(db: Arc<D>) {
    db.create_component(&new("a", "agent", None, json!({}), "published"), 1).await.unwrap();
    let mut team = new("t", "team", None, json!({}), "published");
    team.config.links = Some(vec![member("a", 1)]);
    db.create_component(&team, 2).await.unwrap();
    let back = ConfigWrite { config: Some(Map::new()), links: Some(vec![member("t", 1)]), ..Default::default() };
    let (kind, message) = refusal(db.write_config("a", &back, None, 3).await);
    assert_eq!((kind, message.as_str()), (Kind::Cycle, "Linking a -> t would close a reference cycle"));
    assert_eq!(db.component_configs("a", true).await.unwrap().len(), 1, "nothing was written");

    let writers: Vec<_> = (0..8)
        .map(|i| {
            let db = Arc::clone(&db);
            tokio::spawn(async move {
                let w = ConfigWrite { config: Some(object(json!({"i": i}))), ..Default::default() };
                db.write_config("t", &w, None, 10 + i).await.map(|c| c.version)
            })
        })
        .collect();
    let mut got = Vec::new();
    for w in writers {
        got.push(w.await.expect("joined").expect("appended"));
    }
    got.sort_unstable();
    assert_eq!(got, (2..=9).collect::<Vec<i64>>(), "each append has its own version");
    assert_eq!(db.component_configs("t", false).await.unwrap().len(), 9);
}

/// Runs `scripts/interop/components_interop.py <action> <target...>` with `python` and reads its
/// JSON line.
fn python_catalog(python: &str, action: &str, target: &[String]) -> Value {
    let script =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/components_interop.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(action)
        .args(target)
        .env("AGNO_TELEMETRY", "false")
        .output()
        .expect("Python runs");
    assert!(out.status.success(), "components_interop.py {action} failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.starts_with('{')).expect("a JSON line");
    serde_json::from_str(line).expect("JSON")
}

/// Python Agno 3.1 and agno-rs share one catalog (`target`: the arguments naming the database
/// to the script, `sqlite FILE` or `postgres URL SCHEMA`): Python reads every row agno-rs wrote
/// exactly as agno-rs reads it; agno-rs reads what Python wrote; Python publishes a draft
/// agno-rs wrote and refuses to delete a component agno-rs's team pins.
pub async fn components_interop<D: ComponentStore + ?Sized>(db: Arc<D>, python: &str, target: &[String]) {
    // agno-rs writes: an agent (v1 published, v2 draft) and a team pinning v1.
    let agent =
        json!({"name": "Rs Agent", "model": {"id": "gpt-4o-mini", "provider": "OpenAI"}, "tools": [{"name": "now"}]});
    let mut first = new("rs-agent", "agent", Some("ann"), agent.clone(), "published");
    first.config.label = Some("first".to_owned());
    db.create_component(&first, 1_700_000_000).await.unwrap();
    let draft = ConfigWrite {
        config: Some(object(json!({"name": "Rs Agent Two"}))),
        notes: Some("wip ✓".into()),
        ..Default::default()
    };
    db.write_config("rs-agent", &draft, None, 1_700_000_001).await.unwrap();
    let mut team =
        new("rs-team", "team", None, json!({"members": [{"type": "agent", "agent_id": "rs-agent"}]}), "published");
    team.config.links = Some(vec![member("rs-agent", 1)]);
    db.create_component(&team, 1_700_000_002).await.unwrap();

    // Python reads each row as agno-rs does.
    let read = python_catalog(python, "read", target);
    let theirs = read["components"].as_array().expect("components");
    assert_eq!(theirs.len(), 2, "{read}");
    for entry in theirs {
        let id = entry["component"]["component_id"].as_str().expect("an id");
        let ours = db.get_component(id, None, false).await.unwrap().expect("ours");
        assert_eq!(entry["component"], serde_json::to_value(&ours).unwrap(), "component {id}");
        let configs = db.component_configs(id, false).await.unwrap();
        assert_eq!(entry["configs"], serde_json::to_value(&configs).unwrap(), "configs of {id}");
        for c in &configs {
            let links = db.component_links(id, c.version).await.unwrap();
            assert_eq!(
                entry["links"][c.version.to_string()],
                serde_json::to_value(&links).unwrap(),
                "links of {id} v{}",
                c.version
            );
        }
    }

    // Python publishes agno-rs's draft; its dependency rule holds on agno-rs's links.
    let published = python_catalog(python, "publish", target);
    assert_eq!(
        (published["published"].as_i64(), published["current_version"].as_i64()),
        (Some(2), Some(2)),
        "{published}"
    );
    let refused = published["refused"].as_str().expect("Agno refused to delete a pinned agent");
    assert!(refused.starts_with("ComponentDependencyError") && refused.contains("rs-team"), "{refused}");
    let a = db.get_component("rs-agent", None, false).await.unwrap().expect("still there");
    assert_eq!(
        (a.current_version, a.name.as_deref()),
        (Some(2), Some("Rs Agent Two")),
        "published by Python, read here"
    );

    // agno-rs reads what Python wrote, and its rules hold on Python's rows.
    python_catalog(python, "write", target);
    let py = db.get_component("py-agent", None, false).await.unwrap().expect("Python's agent");
    assert_eq!(
        (py.current_version, py.name.as_deref(), py.description.as_deref()),
        (Some(1), Some("Py Agent"), Some("written by Python"))
    );
    assert_eq!(py.metadata, Some(object(json!({"origin": "python"}))));
    let configs = db.component_configs("py-agent", false).await.unwrap();
    assert_eq!(
        configs.iter().map(|c| (c.version, c.stage.as_str())).collect::<Vec<_>>(),
        [(2, "draft"), (1, "published")]
    );
    assert_eq!(configs[1].config["instructions"], json!(["Be brief"]));
    assert_eq!(configs[1].label.as_deref(), Some("first"));
    let links = db.component_links("py-team", 1).await.unwrap();
    assert_eq!((links[0].child_component_id.as_str(), links[0].child_version), ("py-agent", Some(1)));
    let (kind, _) = refusal(db.archive_component("py-agent", None, None, 1_700_000_010).await);
    assert_eq!(kind, Kind::Dependency, "Python's team pins it");
    let publish = ConfigWrite { version: Some(2), stage: Some("published".into()), ..Default::default() };
    db.write_config("py-agent", &publish, None, 1_700_000_011).await.unwrap();
    let read = python_catalog(python, "read", target);
    let py_agent = read["components"]
        .as_array()
        .expect("components")
        .iter()
        .find(|e| e["component"]["component_id"] == "py-agent")
        .cloned()
        .expect("py-agent");
    assert_eq!(py_agent["component"]["current_version"], 2, "Python reads agno-rs's publish");
    assert_eq!(py_agent["component"]["name"], "Py Agent Two");
}
