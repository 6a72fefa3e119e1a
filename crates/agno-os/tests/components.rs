//! `/components` and `/registry` over HTTP, as Python AgentOS 3.1 serves them: a component's
//! life (create, draft, publish, guard, rollback, tombstone, archive, restore), a team pinning
//! its member's version, bad input refused with nothing changed, and the isolation matrix of
//! every component route (own, shared and published components; drafts only for their owner).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{SECRET, TestOs, config, detail, sqlite_url, token};
use serde_json::{Value, json};

const USER: &[&str] = &["components:read", "components:write", "components:delete", "registry:read"];

fn open_os(tag: &str) -> String {
    format!(
        "[db]\nurl = \"{}\"\n[[agents]]\nid = \"code-agent\"\nname = \"Code Agent\"\nmodel = \"test\"\ntools = [\"calculator\"]\n\
         [[knowledge]]\nid = \"docs\"\nembedder = \"hash:16\"\n",
        sqlite_url(tag)
    )
}

fn isolated_os(tag: &str) -> String {
    format!(
        "[auth]\nmode = \"jwt\"\nverification_keys = [{}]\nuser_isolation = true\n[db]\nurl = \"{}\"\n\
         [[agents]]\nid = \"code-agent\"\nmodel = \"test\"\n",
        serde_json::to_string(SECRET).unwrap(),
        sqlite_url(tag)
    )
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

fn ids(body: &Value) -> Vec<String> {
    let list = body.get("data").unwrap_or(body);
    list.as_array().unwrap().iter().map(|c| c["component_id"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn a_component_is_drafted_published_rolled_back_archived_and_restored() {
    let os = TestOs::start(config(&open_os("components-life"))).await;
    let r = os.post_json("/components", &json!({"name": "My First Agent!", "component_type": "agent"}), None).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["component_id"], "my-first-agent", "the id is made from the name");
    assert_eq!(keys(&r.body), ["component_id", "component_type", "created_at", "name"], "nulls are left out");

    let body = json!({"name": "Support", "component_id": "support", "component_type": "agent", "description": "Tickets",
                      "metadata": {"team": "cx"}, "config": {"name": "Support", "instructions": "Be kind."},
                      "label": "initial", "notes": "first"});
    assert_eq!(os.post_json("/components", &body, None).await.status, 201);
    let configs = os.get("/components/support/configs", None).await;
    assert_eq!(configs.status, 200);
    assert_eq!(configs.body[0]["version"], 1);
    assert_eq!(configs.body[0]["stage"], "draft");
    assert_eq!(configs.body[0]["config"]["instructions"], "Be kind.");
    let current = os.get("/components/support/configs/current", None).await;
    assert_eq!(
        (current.status, &current.body["version"]),
        (200, &json!(1)),
        "a draft-only component's current is its draft"
    );

    // v2, guarded; a stale guard is 409; publishing v2 serves it with its name.
    let v2 = json!({"config": {"name": "Support Two", "instructions": "Be brief.", "model": {"id": "gpt-4o-mini", "provider": "OpenAI", "name": "OpenAIChat"}},
                    "guard": {"latest_version": 1}});
    let r = os.post_json("/components/support/configs", &v2, None).await;
    assert_eq!((r.status, &r.body["version"], &r.body["stage"]), (201, &json!(2), &json!("draft")), "{}", r.body);
    let stale = os.post_json("/components/support/configs", &v2, None).await;
    assert_eq!(
        (stale.status, detail(&stale.body)),
        (409, "Component support latest version is 2, expected 1".to_owned())
    );
    let wrong_guard = os
        .post_json("/components/support/configs", &json!({"config": {}, "guard": {"current_version": 0}}), None)
        .await;
    assert_eq!(wrong_guard.status, 400, "this route checks the latest version only");
    let publish = os.patch_json("/components/support/configs/2", &json!({"stage": "published"}), None).await;
    assert_eq!((publish.status, &publish.body["stage"]), (200, &json!("published")), "{}", publish.body);
    let c = os.get("/components/support", None).await.body;
    assert_eq!((&c["current_version"], &c["name"]), (&json!(2), &json!("Support Two")));
    let frozen = os.patch_json("/components/support/configs/2", &json!({"notes": "x"}), None).await;
    assert_eq!((frozen.status, detail(&frozen.body)), (400, "Cannot update published config support v2".to_owned()));

    // v3 published at once; rollback to v2 (guarded); a draft cannot be current.
    let v3 = json!({"config": {"name": "Support Three", "model": "test"}, "stage": "published", "label": "stable"});
    assert_eq!(os.post_json("/components/support/configs", &v3, None).await.status, 201);
    let stale = os
        .post_json("/components/support/configs/2/set-current", &json!({"guard": {"current_version": 2}}), None)
        .await;
    assert_eq!(
        (stale.status, detail(&stale.body)),
        (409, "Component support current version is 3, expected 2".to_owned())
    );
    let back = os
        .post_json("/components/support/configs/2/set-current", &json!({"guard": {"current_version": 3}}), None)
        .await;
    assert_eq!(
        (back.status, &back.body["current_version"], &back.body["name"]),
        (200, &json!(2), &json!("Support Two"))
    );
    let draft = os.post_json("/components/support/configs/1/set-current", &json!({}), None).await;
    assert_eq!(draft.status, 400, "{}", draft.body);
    let current = os.get("/components/support/configs/current", None).await.body;
    assert_eq!(current["version"], 2);

    // Drafts are deleted (204), published ones are not; numbers are not reused.
    assert_eq!(os.delete("/components/support/configs/2", None).await.status, 400);
    assert_eq!(os.delete("/components/support/configs/1", None).await.status, 204);
    assert_eq!(os.delete("/components/support/configs/1", None).await.status, 404);
    let v4 = os.post_json("/components/support/configs", &json!({"config": {}}), None).await;
    assert_eq!(v4.body["version"], 4);
    let versions: Vec<i64> = os
        .get("/components/support/configs", None)
        .await
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["version"].as_i64().unwrap())
        .collect();
    assert_eq!(versions, [4, 3, 2]);
    let last = os
        .post_json("/components", &json!({"name": "Lonely", "component_id": "lonely", "component_type": "agent"}), None)
        .await;
    assert_eq!(last.status, 201);
    let r = os.delete("/components/lonely/configs/1", None).await;
    assert_eq!((r.status, detail(&r.body)), (409, "Cannot delete the last visible config of lonely".to_owned()));

    // The listing leaves out what the OS serves from its configuration; pages.
    let list = os.get("/components?component_type=agent&limit=2&page=1", None).await;
    assert_eq!(list.status, 200);
    assert_eq!(
        (list.body["meta"]["total_count"].as_u64(), list.body["meta"]["total_pages"].as_u64()),
        (Some(3), Some(2))
    );
    assert!(!ids(&os.get("/components", None).await.body).contains(&"code-agent".to_owned()));

    // Archive (stale guard refused), hidden, its id reserved; restore.
    let stale = os.delete("/components/support?expected_current_version=3", None).await;
    assert_eq!(stale.status, 409);
    assert_eq!(os.delete("/components/support?expected_current_version=2", None).await.status, 204);
    assert_eq!(os.get("/components/support", None).await.status, 404);
    assert_eq!(os.get("/components/support?include_deleted=true", None).await.body["component_id"], "support");
    let again = os
        .post_json("/components", &json!({"name": "S", "component_id": "support", "component_type": "agent"}), None)
        .await;
    assert_eq!((again.status, detail(&again.body)), (400, "Component ID support is not available".to_owned()));
    assert_eq!(os.post_json("/components/support/restore", &json!({}), None).await.status, 200);
    let r = os.post_json("/components/support/restore", &json!({}), None).await;
    assert_eq!((r.status, detail(&r.body)), (409, "Component is not archived".to_owned()));

    // The registry lists what a component can be built from.
    let reg = os.get("/registry", None).await;
    assert_eq!(reg.status, 200, "{}", reg.body);
    let names: Vec<(String, String)> = reg.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["type"].as_str().unwrap().to_owned(), e["name"].as_str().unwrap().to_owned()))
        .collect();
    for want in [("agent", "Code Agent"), ("db", "agno-rs-db"), ("knowledge", "docs"), ("tool", "calculator")] {
        assert!(names.iter().any(|(t, n)| t == want.0 && (n == want.1 || want.0 == "db")), "{want:?} in {names:?}");
    }
    let tools = os.get("/registry?resource_type=tool&name=CALC", None).await.body;
    assert_eq!(tools["meta"]["total_count"], 1);
    assert!(tools["data"][0]["metadata"]["functions"].as_array().unwrap().iter().any(|f| f["name"] == "add"));
    assert_eq!(os.get("/registry?resource_type=robot", None).await.status, 422);
}

#[tokio::test]
async fn a_team_pins_its_members_version_and_the_member_cannot_be_archived_under_it() {
    let os = TestOs::start(config(&open_os("components-pins"))).await;
    let agent = json!({"name": "Helper", "component_id": "helper", "component_type": "agent", "stage": "published",
                       "config": {"name": "Helper", "model": "test", "tools": ["calculator"]}});
    assert_eq!(os.post_json("/components", &agent, None).await.status, 201);
    let team = json!({"name": "Crew", "component_id": "crew", "component_type": "team", "stage": "published",
                      "config": {"name": "Crew", "mode": "coordinate", "model": "test",
                                 "members": [{"type": "agent", "agent_id": "helper"}, {"type": "agent", "agent_id": "code-agent"}]}});
    let r = os.post_json("/components", &team, None).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let db = os.os.state.db.clone().unwrap();
    let links = db.component_links("crew", 1).await.unwrap();
    assert_eq!(links.len(), 1, "the served code agent is not pinned: {links:?}");
    assert_eq!(
        (links[0].child_component_id.as_str(), links[0].child_version, links[0].link_key.as_str()),
        ("helper", Some(1), "member_0")
    );

    let v2 = json!({"config": {"name": "Helper Two", "model": "test"}, "stage": "published"});
    assert_eq!(os.post_json("/components/helper/configs", &v2, None).await.status, 201);
    assert_eq!(db.component_links("crew", 1).await.unwrap()[0].child_version, Some(1), "the team keeps v1");
    let r = os.delete("/components/helper", None).await;
    assert_eq!((r.status, detail(&r.body)), (409, "Cannot delete helper: referenced by crew".to_owned()));

    // A workflow's steps are pinned too; a new team version pins the member's new version.
    let flow = json!({"name": "Flow", "component_id": "flow", "component_type": "workflow",
                      "config": {"steps": [{"type": "Step", "name": "triage", "agent_id": "helper"},
                                           {"type": "Step", "name": "escalate", "team_id": "crew"}]}});
    assert_eq!(os.post_json("/components", &flow, None).await.status, 201);
    let steps = db.component_links("flow", 1).await.unwrap();
    let pins: Vec<(&str, &str, Option<i64>)> =
        steps.iter().map(|l| (l.link_kind.as_str(), l.child_component_id.as_str(), l.child_version)).collect();
    assert_eq!(pins, [("step_agent", "helper", Some(2)), ("step_team", "crew", Some(1))]);
    let crew2 = os.post_json("/components/crew/configs", &json!({"config": team["config"].clone()}), None).await;
    assert_eq!(crew2.status, 201);
    assert_eq!(db.component_links("crew", 2).await.unwrap()[0].child_version, Some(2));

    // A link back from the member to the team is a cycle.
    let cycle = json!({"config": {}, "links": [{"link_kind": "member", "link_key": "m", "child_component_id": "crew", "child_version": 1, "position": 0}]});
    let r = os.post_json("/components/helper/configs", &cycle, None).await;
    assert_eq!((r.status, detail(&r.body)), (409, "Linking helper -> crew would close a reference cycle".to_owned()));
}

#[tokio::test]
async fn bad_input_is_refused_naming_what_is_wrong_and_changes_nothing() {
    let os = TestOs::start(config(&open_os("components-bad"))).await;
    let base = json!({"name": "A", "component_id": "a", "component_type": "agent", "config": {"x": 1}});
    assert_eq!(os.post_json("/components", &base, None).await.status, 201);
    let before = os.get("/components?include_deleted=true", None).await.body;
    let configs_before = os.get("/components/a/configs", None).await.body;

    let cases: Vec<(&str, &str, Value, u16, &str)> = vec![
        (
            "POST",
            "/components",
            json!({"name": "X", "component_type": "robot"}),
            422,
            "body.component_type: Input should be 'agent', 'team' or 'workflow'",
        ),
        ("POST", "/components", json!({"component_type": "agent"}), 422, ""),
        (
            "POST",
            "/components",
            json!({"name": "X", "component_id": "a/b", "component_type": "agent"}),
            400,
            "component_id must not contain '/'",
        ),
        (
            "POST",
            "/components",
            json!({"name": "X", "component_type": "agent", "stage": "live"}),
            400,
            "Invalid stage: live",
        ),
        (
            "POST",
            "/components",
            json!({"name": "T", "component_type": "team", "config": {"members": [{"type": "agent", "agent_id": "ghost"}]}}),
            400,
            "Cannot create team 'T': the following members could not be resolved: ghost. Referenced agents/teams must exist as components or be registered with the AgentOS instance.",
        ),
        ("POST", "/components/a/configs", json!({"notes": "no config"}), 422, ""),
        ("POST", "/components/a/configs", json!({"config": {}, "guard": {"latest_version": true}}), 422, ""),
        (
            "POST",
            "/components/a/configs",
            json!({"config": {}, "links": [{"link_kind": "member", "link_key": "m", "child_component_id": "b", "child_version": 2.5}]}),
            400,
            "Link child_version 2.5 is not an integer version number",
        ),
        (
            "POST",
            "/components/a/configs",
            json!({"config": {}, "links": [{"link_kind": "member", "link_key": "m", "child_component_id": "a", "child_version": 1}]}),
            409,
            "Component a cannot reference itself",
        ),
        ("PATCH", "/components/a/configs/99", json!({"notes": "x"}), 400, "Config a v99 not found"),
        (
            "PATCH",
            "/components/a/configs/abc",
            json!({"notes": "x"}),
            422,
            "path.version: Input should be a valid integer, unable to parse string as an integer",
        ),
        (
            "PATCH",
            "/components/a",
            json!({"component_type": "team"}),
            400,
            "Cannot change component a from agent to team; a component's type is fixed at creation.",
        ),
        ("PATCH", "/components/a", json!({"current_version": 77}), 404, "Config a v77 not found"),
        ("PATCH", "/components/a", json!({"guard": {"latest_version": 1}}), 400, ""),
        ("PATCH", "/components/nope", json!({"name": "x"}), 404, "Component nope not found"),
        ("POST", "/components/a/configs/9/set-current", json!({}), 404, "Component a or config version 9 not found"),
        // A published config must build here: each refusal names the field.
        (
            "POST",
            "/components/a/configs",
            json!({"config": {"name": "no model"}, "stage": "published"}),
            422,
            "Cannot publish this config: config.model: is required (\"provider:id\", or {\"provider\", \"id\"})",
        ),
        ("POST", "/components/a/configs", json!({"config": {"model": "nope:x"}, "stage": "published"}), 422, ""),
        (
            "POST",
            "/components/a/configs",
            json!({"config": {"model": "test", "tools": ["teleport"]}, "stage": "published"}),
            422,
            "",
        ),
        (
            "POST",
            "/components/a/configs",
            json!({"config": {"model": "test", "knowledge": "missing"}, "stage": "published"}),
            422,
            "",
        ),
        (
            "POST",
            "/components/a/configs",
            json!({"config": {"model": "test", "respond_in_haiku": true}, "stage": "published"}),
            422,
            "Cannot publish this config: config.respond_in_haiku: is not a setting this OS knows",
        ),
        ("PATCH", "/components/a/configs/1", json!({"stage": "published"}), 422, ""),
        (
            "POST",
            "/components",
            json!({"name": "T2", "component_type": "team", "stage": "published", "config": {"model": "test", "mode": "chaos"}}),
            422,
            "Cannot publish this config: config.mode: \"chaos\" is not one of coordinate, route, broadcast, tasks",
        ),
    ];
    for (method, path, body, status, message) in cases {
        let r = match method {
            "POST" => os.post_json(path, &body, None).await,
            _ => os.patch_json(path, &body, None).await,
        };
        assert_eq!(r.status, status, "{method} {path} {body}: {}", r.body);
        if !message.is_empty() {
            assert_eq!(detail(&r.body), message, "{method} {path}");
        }
    }
    let bad_json = os
        .client
        .post(format!("{}/components", os.base))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(bad_json.status(), 422);
    assert_eq!(os.get("/components?limit=101", None).await.status, 422);
    assert_eq!(os.get("/components/a/configs/abc", None).await.status, 422);
    assert_eq!(
        os.get("/components?include_deleted=true", None).await.body["data"],
        before["data"],
        "no component changed"
    );
    assert_eq!(os.get("/components/a/configs", None).await.body, configs_before, "no config changed");
}

#[tokio::test]
async fn under_isolation_users_see_own_shared_and_published_components_and_change_only_their_own() {
    let os = TestOs::start(config(&isolated_os("components-isolation"))).await;
    let (ann, bob) = (token("ann", USER), token("bob", USER));
    let admin = token("root", &["agent_os:admin"]);
    let create = |id: &str, stage: &str| json!({"name": id, "component_id": id, "component_type": "agent", "stage": stage, "config": {"name": id, "model": "test", "db": {"id": "x", "db_url": "secret://", "session_table": "s"}}});
    for (id, stage) in [("ann-draft", "draft"), ("ann-live", "published")] {
        let r = os.post_json("/components", &create(id, stage), Some(&ann)).await;
        assert_eq!((r.status, &r.body["user_id"]), (201, &json!("ann")), "{}", r.body);
    }
    let r = os.post_json("/components/ann-live/configs", &json!({"config": {"name": "next"}}), Some(&ann)).await;
    assert_eq!(r.status, 201);
    let by_admin = os.post_json("/components", &create("admins", "draft"), Some(&admin)).await;
    assert_eq!((by_admin.status, &by_admin.body["user_id"]), (201, &json!("root")), "owned by its creator, as in Agno");
    // A shared component (no owner), as the store keeps one written without a user.
    let db = os.os.state.db.clone().unwrap();
    let shared = agno_core::NewComponent {
        component_id: "shared".into(),
        component_type: "agent".into(),
        config: agno_core::ConfigWrite { config: Some(serde_json::Map::new()), ..Default::default() },
        ..Default::default()
    };
    db.create_component(&shared, 1).await.unwrap();
    let minted = os.post_json("/components", &json!({"name": "Support", "component_type": "agent"}), Some(&bob)).await;
    assert!(
        minted.body["component_id"].as_str().unwrap().starts_with("support-"),
        "a scoped id carries its owner's hash"
    );
    let bobs = minted.body["component_id"].as_str().unwrap().to_owned();

    // Listing: own, shared and published.
    let mut seen = ids(&os.get("/components", Some(&bob)).await.body);
    seen.sort();
    let mut want = vec!["ann-live".to_owned(), bobs.clone(), "shared".to_owned()];
    want.sort();
    assert_eq!(seen, want);
    assert_eq!(ids(&os.get("/components", Some(&admin)).await.body).len(), 5);

    // Reads: another's draft-only component is not found; of a published one, published versions only, db redacted.
    assert_eq!(os.get("/components/ann-draft", Some(&bob)).await.status, 404);
    assert_eq!(os.get("/components/ann-draft/configs", Some(&bob)).await.status, 404);
    let configs = os.get("/components/ann-live/configs", Some(&bob)).await.body;
    let versions: Vec<i64> = configs.as_array().unwrap().iter().map(|c| c["version"].as_i64().unwrap()).collect();
    assert_eq!(versions, [1], "ann's draft v2 is hers");
    assert_eq!(
        configs[0]["config"]["db"],
        json!({"id": "x", "session_table": "s"}),
        "another owner's db settings are redacted"
    );
    assert_eq!(os.get("/components/ann-live/configs/2", Some(&bob)).await.status, 404);
    assert_eq!(os.get("/components/ann-live/configs/2", Some(&ann)).await.status, 200);
    assert_eq!(os.get("/components/ann-live/configs/1", Some(&ann)).await.body["config"]["db"]["db_url"], "secret://");

    // Writes: 403 on visible ones not theirs, 404 on invisible ones; nothing changes.
    let writes: Vec<(&str, String, Value, u16)> = vec![
        ("PATCH", "/components/ann-live".into(), json!({"name": "mine"}), 403),
        ("PATCH", "/components/shared".into(), json!({"name": "mine"}), 403),
        ("PATCH", "/components/ann-draft".into(), json!({"name": "mine"}), 404),
        ("POST", "/components/ann-live/configs".into(), json!({"config": {}}), 403),
        ("PATCH", "/components/ann-live/configs/2".into(), json!({"stage": "published"}), 403),
        ("POST", "/components/ann-live/configs/1/set-current".into(), json!({}), 403),
        ("DELETE", "/components/ann-live/configs/2".into(), json!({}), 403),
        ("DELETE", "/components/ann-live".into(), json!({}), 403),
        ("DELETE", "/components/ann-draft".into(), json!({}), 404),
        ("POST", "/components/ann-draft/restore".into(), json!({}), 404),
    ];
    for (method, path, body, status) in writes {
        let r = match method {
            "POST" => os.post_json(&path, &body, Some(&bob)).await,
            "PATCH" => os.patch_json(&path, &body, Some(&bob)).await,
            _ => os.delete_json(&path, &body, Some(&bob)).await,
        };
        assert_eq!(r.status, status, "bob {method} {path}: {}", r.body);
    }
    let live = os.get("/components/ann-live", Some(&ann)).await.body;
    assert_eq!((&live["name"], &live["current_version"]), (&json!("ann-live"), &json!(1)), "unchanged");
    assert_eq!(os.get("/components/ann-live/configs", Some(&ann)).await.body.as_array().unwrap().len(), 2);
    assert_eq!(os.get("/components/ann-draft", Some(&ann)).await.status, 200);

    // A team of bob's cannot pin ann's draft-only agent (not found to him).
    let team = json!({"name": "T", "component_type": "team", "config": {"members": [{"type": "agent", "agent_id": "ann-draft"}]}});
    let r = os.post_json("/components", &team, Some(&bob)).await;
    assert_eq!((r.status, detail(&r.body)), (404, "Component ann-draft not found".to_owned()));

    // Ann changes her own; an admin changes anyone's.
    assert_eq!(os.patch_json("/components/ann-live", &json!({"name": "renamed"}), Some(&ann)).await.status, 200);
    assert_eq!(os.patch_json("/components/shared", &json!({"name": "by admin"}), Some(&admin)).await.status, 200);
    assert_eq!(os.delete("/components/ann-draft", Some(&admin)).await.status, 204);
    // Without the scope, 403.
    let reader = token("carl", &["components:read"]);
    assert_eq!(os.post_json("/components", &create("carl", "draft"), Some(&reader)).await.status, 403);
}

#[tokio::test]
async fn a_published_agent_and_team_are_served_run_and_follow_a_rollback() {
    let os = TestOs::start(config(&open_os("components-served"))).await;
    let agent =
        |name: &str| json!({"name": name, "model": "test", "instructions": ["Be brief."], "tools": ["calculator"]});
    let body = json!({"name": "Helper", "component_id": "helper", "component_type": "agent", "stage": "published", "config": agent("Helper")});
    assert_eq!(os.post_json("/components", &body, None).await.status, 201);
    let draft_only =
        json!({"name": "Draft", "component_id": "draft-only", "component_type": "agent", "config": agent("Draft")});
    assert_eq!(os.post_json("/components", &draft_only, None).await.status, 201);

    // Served beside the configuration's agent, marked as Agno marks catalog components.
    let agents = os.get("/agents", None).await.body;
    let ids: Vec<&str> = agents.as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["code-agent", "helper", "draft-only"], "a draft-only component is listed last, as a draft");
    assert_eq!((&agents[2]["stage"], agents[2].get("current_version")), (&json!("draft"), None));
    let helper = &agents[1];
    assert_eq!(
        (&helper["is_component"], &helper["current_version"], &helper["stage"]),
        (&json!(true), &json!(1), &json!("published"))
    );
    assert!(os.get("/config", None).await.body["agents"].as_array().unwrap().iter().any(|a| a["id"] == "helper"));
    let run = os.post_form("/agents/helper/runs", &[("message", "hi"), ("stream", "false")], None).await;
    assert_eq!((run.status, &run.body["status"]), (200, &json!("COMPLETED")), "{}", run.body);
    assert_eq!(
        os.post_form("/agents/draft-only/runs", &[("message", "hi"), ("stream", "false")], None).await.status,
        404
    );

    // A new version is served at once; a rollback too.
    let v2 = json!({"config": agent("Helper Two"), "stage": "published"});
    assert_eq!(os.post_json("/components/helper/configs", &v2, None).await.status, 201);
    assert_eq!(os.get("/agents/helper", None).await.body["name"], "Helper Two");
    assert_eq!(os.post_json("/components/helper/configs/1/set-current", &json!({}), None).await.status, 200);
    let back = os.get("/agents/helper", None).await.body;
    assert_eq!((&back["name"], &back["current_version"]), (&json!("Helper"), &json!(1)));

    // A team of the published agent (pinned at v1) and the configured one runs.
    let team = json!({"name": "Crew", "component_id": "crew", "component_type": "team", "stage": "published",
                      "config": {"name": "Crew", "model": "test", "members": [{"type": "agent", "agent_id": "helper"}, "code-agent"]}});
    assert_eq!(os.post_json("/components", &team, None).await.status, 201);
    let crew = os.get("/teams/crew", None).await;
    assert_eq!((crew.status, &crew.body["is_component"]), (200, &json!(true)), "{}", crew.body);
    let members: Vec<&str> =
        crew.body["members"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(members, ["helper", "code-agent"]);
    let run = os.post_form("/teams/crew/runs", &[("message", "hi"), ("stream", "false")], None).await;
    assert_eq!((run.status, &run.body["status"]), (200, &json!("COMPLETED")), "{}", run.body);

    // A workflow over the published agent (Agno's step dicts) is served and runs.
    let flow = json!({"name": "Flow", "component_id": "flow", "component_type": "workflow", "stage": "published",
                      "config": {"name": "Flow", "steps": [{"type": "Step", "name": "triage", "agent_id": "helper"},
                                                           {"type": "Step", "name": "check", "agent_id": "code-agent"}]}});
    let r = os.post_json("/components", &flow, None).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let listed = os.get("/workflows", None).await.body;
    let mine = listed.as_array().unwrap().iter().find(|w| w["id"] == "flow").cloned().expect("listed");
    assert_eq!((&mine["is_component"], &mine["current_version"]), (&json!(true), &json!(1)));
    let run = os.post_form("/workflows/flow/runs", &[("message", "hi"), ("stream", "false")], None).await;
    assert_eq!((run.status, &run.body["status"]), (200, &json!("COMPLETED")), "{}", run.body);
    let ghost = json!({"name": "G", "component_type": "workflow", "stage": "published",
                       "config": {"steps": [{"type": "Step", "name": "s", "agent_id": "ghost"}]}});
    let r = os.post_json("/components", &ghost, None).await;
    assert_eq!(
        (r.status, detail(&r.body)),
        (
            422,
            "Cannot publish this config: config.steps[0]: agent \"ghost\" is neither served here nor a component"
                .to_owned()
        )
    );
    assert_eq!(os.delete("/components/flow", None).await.status, 204);
    assert_eq!(os.get("/workflows/flow", None).await.status, 404);

    // A schedule of the agent (another user's too) is disabled when the agent is archived.
    let schedule = json!({"name": "nightly", "cron_expr": "0 3 * * *", "endpoint": "/agents/helper/runs", "method": "POST",
                          "payload": {"message": "hi"}, "user_id": "ann"});
    let created = os.post_json("/schedules", &schedule, None).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let schedule_id = created.body["id"].as_str().unwrap().to_owned();

    // Archived: no longer served.
    assert_eq!(os.delete("/components/crew", None).await.status, 204);
    assert_eq!(os.get("/teams/crew", None).await.status, 404);
    assert_eq!(os.delete("/components/helper", None).await.status, 204);
    assert_eq!(os.post_form("/agents/helper/runs", &[("message", "hi"), ("stream", "false")], None).await.status, 404);
    let agents = os.get("/agents", None).await.body;
    let ids: Vec<&str> = agents.as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["code-agent", "draft-only"], "an archived component is neither served nor listed");
    let schedule = os.get(&format!("/schedules/{schedule_id}"), None).await.body;
    assert_eq!(
        (&schedule["enabled"], &schedule["disabled_reason"]),
        (&json!(false), &json!("target_archived:agent:helper"))
    );
}

/// Waits (bounded) until run `run_id` of agent `agent` has one of `want` statuses; the run.
async fn run_reaches(os: &TestOs, agent: &str, run_id: &str, want: &[&str]) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let r = os.get(&format!("/agents/{agent}/runs/{run_id}"), None).await;
        if r.status == 200 && want.iter().any(|w| r.body["status"] == *w) {
            return r.body;
        }
        assert!(std::time::Instant::now() < deadline, "run {run_id} never reached {want:?}: {} {}", r.status, r.body);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_run_queued_before_a_publish_runs_the_version_it_was_asked_of() {
    use agno_testkit::{FakeProvider, Reply};
    let provider = FakeProvider::start().await.unwrap();
    // The first run holds the only worker until the test cancels it.
    provider.push(Reply::Delayed(std::time::Duration::from_secs(600), Box::new(Reply::text("blocker"))));
    let cfg = format!(
        "[db]\nurl = \"{}\"\n[queue]\nmax_concurrency = 1\npoll_interval_ms = 20\n\
         [[agents]]\nid = \"slow\"\nmodel = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        sqlite_url("components-pinned-run"),
        provider.base_url()
    );
    let os = TestOs::start(config(&cfg)).await;
    let helper = |name: &str| json!({"name": name, "model": "test"});
    let body = json!({"name": "Helper", "component_id": "helper", "component_type": "agent", "stage": "published", "config": helper("Helper")});
    assert_eq!(os.post_json("/components", &body, None).await.status, 201);

    let background = [("message", "hi"), ("stream", "false"), ("background", "true")];
    let blocker =
        os.post_form("/agents/slow/runs", &background, None).await.body["run_id"].as_str().unwrap().to_owned();
    run_reaches(&os, "slow", &blocker, &["RUNNING"]).await;
    let queued = os.post_form("/agents/helper/runs", &background, None).await;
    assert_eq!(queued.status, 202, "{}", queued.body);
    let run_id = queued.body["run_id"].as_str().unwrap().to_owned();
    let job = os.get(&format!("/queue/jobs/{run_id}"), None).await.body;
    assert_eq!(job["payload"]["component_version"], 1, "the job names the version it was asked of: {job}");

    // v2 is published while the run waits; the run still runs v1.
    let v2 = json!({"config": helper("Helper Two"), "stage": "published"});
    assert_eq!(os.post_json("/components/helper/configs", &v2, None).await.status, 201);
    assert_eq!(os.get("/agents/helper", None).await.body["name"], "Helper Two");
    let cancelled = os.post_json(&format!("/agents/slow/runs/{blocker}/cancel"), &json!({}), None).await;
    assert!(cancelled.status < 300, "{}", cancelled.body);
    let run = run_reaches(&os, "helper", &run_id, &["COMPLETED", "ERROR"]).await;
    assert_eq!((&run["status"], &run["agent_name"]), (&json!("COMPLETED"), &json!("Helper")), "{run}");

    // A run asked for now runs v2.
    let now = os.post_form("/agents/helper/runs", &[("message", "hi"), ("stream", "false")], None).await;
    assert_eq!(
        (&now.body["status"], &now.body["agent_name"]),
        (&json!("COMPLETED"), &json!("Helper Two")),
        "{}",
        now.body
    );
}

/// Agno's `version` field of the run routes: a published version is anyone's who may run the
/// component, a draft only its owner's or an admin's (others get the component's 404, as for a
/// version not stored); the version is stamped in the run's metadata (a forged stamp is dropped),
/// a background run is pinned to it, a draft that does not build is a 422 naming it, and a
/// draft-only component runs for its owner only when asked by version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_asks_for_a_version_published_for_anyone_a_draft_for_its_owner() {
    let os = TestOs::start(config(&isolated_os("components-run-version"))).await;
    let runner: Vec<&str> = USER.iter().copied().chain(["agents:read", "agents:run"]).collect();
    let (ann, bob) = (token("ann", &runner), token("bob", &runner));
    let admin = token("root", &["agent_os:admin"]);
    let agent = |name: &str| json!({"name": name, "model": "test"});
    let body = json!({"name": "Helper", "component_id": "helper", "component_type": "agent", "stage": "published", "config": agent("Helper")});
    assert_eq!(os.post_json("/components", &body, Some(&ann)).await.status, 201);
    let draft = json!({"config": agent("Helper Draft")});
    assert_eq!(os.post_json("/components/helper/configs", &draft, Some(&ann)).await.status, 201);

    let run = |version: Option<&'static str>, who: String| {
        let os = &os;
        async move {
            let mut form = vec![("message", "hi"), ("stream", "false")];
            form.extend(version.map(|v| ("version", v)));
            os.post_form("/agents/helper/runs", &form, Some(&who)).await
        }
    };
    let as_ann = run(Some("2"), ann.clone()).await;
    assert_eq!((as_ann.status, &as_ann.body["agent_name"]), (200, &json!("Helper Draft")), "{}", as_ann.body);
    assert_eq!(as_ann.body["metadata"]["agno_component_version"], 2, "the version is stamped on the run");
    let as_admin = run(Some("2"), admin.clone()).await;
    assert_eq!((as_admin.status, &as_admin.body["agent_name"]), (200, &json!("Helper Draft")));
    let as_bob = run(Some("2"), bob.clone()).await;
    assert_eq!(
        (as_bob.status, detail(&as_bob.body).as_str()),
        (404, "Agent helper not found"),
        "another's draft is not disclosed"
    );
    for (version, name) in [(Some("1"), "Helper"), (None, "Helper")] {
        let r = run(version, bob.clone()).await;
        assert_eq!((r.status, &r.body["agent_name"]), (200, &json!(name)), "{version:?}: {}", r.body);
    }
    assert_eq!(run(Some("9"), ann.clone()).await.status, 404, "a version not stored");
    let bad = run(Some("two"), ann.clone()).await;
    assert_eq!((bad.status, &bad.body["detail"][0]["loc"]), (422, &json!(["body", "version"])), "{}", bad.body);

    // A forged stamp in the caller's metadata is dropped; the caller's own keys are kept.
    let forged =
        [("message", "hi"), ("stream", "false"), ("metadata", r#"{"agno_component_version": 2, "ticket": 7}"#)];
    let r = os.post_form("/agents/helper/runs", &forged, Some(&bob)).await;
    assert_eq!((&r.body["agent_name"], &r.body["metadata"]), (&json!("Helper"), &json!({"ticket": 7})), "{}", r.body);

    // A draft that does not build answers 422 naming it; nothing else changes.
    let broken = json!({"config": {"name": "Broken", "model": "test", "tools": ["teleport"]}});
    assert_eq!(os.post_json("/components/helper/configs", &broken, Some(&ann)).await.status, 201);
    let r = run(Some("3"), ann.clone()).await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(detail(&r.body).contains("version 3") && detail(&r.body).contains("teleport"), "{}", r.body);
    assert_eq!(os.get("/agents/helper", Some(&ann)).await.body["name"], "Helper", "v1 is still served");

    // In the background: the job is pinned to the draft asked for.
    let background = [("message", "hi"), ("stream", "false"), ("background", "true"), ("version", "2")];
    let queued = os.post_form("/agents/helper/runs", &background, Some(&ann)).await;
    assert_eq!(queued.status, 202, "{}", queued.body);
    let run_id = queued.body["run_id"].as_str().unwrap().to_owned();
    let job = os.get(&format!("/queue/jobs/{run_id}"), Some(&admin)).await.body;
    assert_eq!(job["payload"]["component_version"], 2, "{job}");
    let session = queued.body["session_id"].as_str().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let done = loop {
        let r = os.get(&format!("/agents/helper/runs/{run_id}?session_id={session}"), Some(&ann)).await;
        if r.status == 200 && r.body["status"] == "COMPLETED" {
            break r.body;
        }
        assert!(std::time::Instant::now() < deadline, "the background run never completed: {} {}", r.status, r.body);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(done["agent_name"], "Helper Draft");

    // A paused run of a draft goes on at that draft (the stamp), not at the version served.
    let guarded = json!({"config": {"name": "Guarded Draft", "model": "test",
        "tools": [{"toolkit": "calculator", "include_tools": ["add"], "requires_confirmation_tools": ["add"]}]}});
    assert_eq!(os.post_json("/components/helper/configs", &guarded, Some(&ann)).await.status, 201);
    let paused = os
        .post_form(
            "/agents/helper/runs",
            &[("message", "add please"), ("stream", "false"), ("version", "4")],
            Some(&ann),
        )
        .await;
    assert_eq!(
        (&paused.body["status"], &paused.body["agent_name"]),
        (&json!("PAUSED"), &json!("Guarded Draft")),
        "{}",
        paused.body
    );
    let (run_id, session) = (paused.body["run_id"].as_str().unwrap(), paused.body["session_id"].as_str().unwrap());
    let mut tools = paused.body["tools"].as_array().unwrap().clone();
    for t in &mut tools {
        t["confirmed"] = json!(true);
    }
    let answers =
        [("tools", Value::Array(tools).to_string()), ("stream", "false".into()), ("session_id", session.into())];
    let answers: Vec<(&str, &str)> = answers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let path = format!("/agents/helper/runs/{run_id}/continue");
    assert_eq!(os.post_form(&path, &answers, Some(&bob)).await.status, 404, "another user's run");
    let carried = os.post_form(&path, &answers, Some(&ann)).await;
    assert_eq!(carried.body["status"], "COMPLETED", "{}", carried.body);
    let call = &carried.body["tools"][0];
    assert_eq!(
        (&call["tool_call_error"], &call["result"]),
        (&json!(false), &json!(r#"{"operation":"addition","result":2.0}"#)),
        "the draft's own toolkit ran the confirmed call (the version served has no tools): {call}"
    );

    // A draft-only component: its owner runs it by version; nobody runs it without one.
    let sketch =
        json!({"name": "Sketch", "component_id": "sketch", "component_type": "agent", "config": agent("Sketch")});
    assert_eq!(os.post_json("/components", &sketch, Some(&ann)).await.status, 201);
    // Listed (as Agno lists it: a draft) and described for its owner and an admin, not for others.
    let listed = |who: String| {
        let os = &os;
        async move {
            let agents = os.get("/agents", Some(&who)).await.body;
            agents
                .as_array()
                .unwrap()
                .iter()
                .map(|a| (a["id"].as_str().unwrap().to_owned(), a["stage"].clone()))
                .collect::<Vec<_>>()
        }
    };
    let anns = listed(ann.clone()).await;
    assert!(anns.contains(&("sketch".to_owned(), json!("draft"))), "{anns:?}");
    assert!(anns.contains(&("helper".to_owned(), json!("published"))), "{anns:?}");
    assert!(listed(admin.clone()).await.contains(&("sketch".to_owned(), json!("draft"))));
    assert!(!listed(bob.clone()).await.iter().any(|(id, _)| id == "sketch"), "another's draft is not listed");
    let described = os.get("/agents/sketch", Some(&ann)).await;
    assert_eq!(
        (described.status, &described.body["name"], &described.body["is_component"]),
        (200, &json!("Sketch"), &json!(true)),
        "described as Agno's GET describes a stored draft (no stage)"
    );
    assert_eq!(os.get("/agents/sketch", Some(&bob)).await.status, 404);

    let by_version = [("message", "hi"), ("stream", "false"), ("version", "1")];
    let r = os.post_form("/agents/sketch/runs", &by_version, Some(&ann)).await;
    assert_eq!((r.status, &r.body["agent_name"]), (200, &json!("Sketch")), "{}", r.body);
    assert_eq!(os.post_form("/agents/sketch/runs", &by_version, Some(&bob)).await.status, 404);
    let unversioned = [("message", "hi"), ("stream", "false")];
    assert_eq!(os.post_form("/agents/sketch/runs", &unversioned, Some(&ann)).await.status, 404);
}
