//! Learnings (Agno 3.1's `LearningMachine` over `agno_learnings`): an agent with `learning` on
//! extracts user A's profile and entity facts after A's runs (off the response path), puts them
//! in A's next system message and never in B's; `/learnings` shows each user their own and the
//! ownerless records, with Agno's deterministic ids, 409/403/404/422 answers; `hitl` pauses a
//! save for the user's confirmation; and Python Agno 3.1 reads the rows agno-rs wrote (and the
//! table as it creates it) and the reverse.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use agno_testkit::{FakeProvider, Reply};
use common::{SECRET, TestOs, config, detail, token};
use serde_json::{Value, json};

fn os_config(provider: &FakeProvider, db_url: &str) -> String {
    let model = format!(
        "model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        provider.base_url()
    );
    format!(
        "[db]\nurl = \"{db_url}\"\n\
         [auth]\nmode = \"jwt\"\nverification_keys = [\"{SECRET}\"]\nuser_isolation = true\n\
         [[agents]]\nid = \"assistant\"\nlearning = {{ user_profile = \"always\", entity_memory = \"always\" }}\n{model}\
         [[agents]]\nid = \"careful\"\nlearning = {{ user_profile = \"hitl\" }}\n{model}"
    )
}

const SCOPES: [&str; 6] =
    ["agents:read", "agents:run", "learnings:read", "learnings:write", "learnings:delete", "sessions:read"];

/// The system message of the newest run asked `message` (not of the learning that follows it);
/// empty when it has none.
fn system_of(provider: &FakeProvider, message: &str) -> String {
    let requests = provider.requests();
    let asked = |q: &&agno_testkit::RecordedRequest| {
        q.body["messages"].as_array().is_some_and(|m| m.iter().any(|m| m["role"] == "user" && m["content"] == message))
    };
    let first = &requests.iter().rev().find(asked).unwrap().body["messages"][0];
    if first["role"] == "system" { first["content"].as_str().unwrap().to_owned() } else { String::new() }
}

async fn run(os: &TestOs, agent: &str, bearer: &str, message: &str) -> Value {
    let r = os
        .post_form(&format!("/agents/{agent}/runs"), &[("message", message), ("stream", "false")], Some(bearer))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

/// Waits until `GET /learnings` shows the holder of `bearer` `count` records.
async fn learnings_of(os: &TestOs, bearer: &str, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = os.get("/learnings", Some(bearer)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let data = r.body["data"].as_array().unwrap().clone();
        if data.len() >= count {
            return data;
        }
        assert!(Instant::now() < deadline, "only {} learnings: {}", data.len(), r.body);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_learns_about_each_user_and_the_routes_keep_them_apart() {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("No changes")));
    let os = TestOs::start(config(&os_config(&provider, &common::sqlite_url("learnings")))).await;
    let ann = token("ann", &SCOPES);
    let bob = token("bob", &SCOPES);
    let admin = token("root", &["agent_os:admin"]);

    // Ann's run; then the extraction of each `always` store (profile, then entities).
    provider.push(Reply::text("Nice to meet you."));
    provider.push(Reply::tool_call("update_profile", r#"{"name": "Ann Lee", "preferred_name": "Annie"}"#));
    provider.push(Reply::text("saved"));
    provider.push(Reply::tool_call(
        "remember_about",
        r#"{"entity": "Acme Corp", "entity_type": "company", "facts": ["Uses PostgreSQL 16"]}"#,
    ));
    provider.push(Reply::text("saved"));
    let first =
        run(&os, "assistant", &ann, "I'm Ann Lee, call me Annie. Our vendor Acme Corp runs PostgreSQL 16.").await;
    assert_eq!(first["content"], "Nice to meet you.", "the answer does not wait for the learning");
    let learned = learnings_of(&os, &ann, 2).await;
    let by_type = |t: &str| learned.iter().find(|l| l["learning_type"] == t).unwrap().clone();
    let profile = by_type("user_profile");
    assert_eq!(profile["learning_id"], "user_profile_ann");
    assert_eq!(profile["content"], json!({"user_id": "ann", "name": "Ann Lee", "preferred_name": "Annie"}));
    assert_eq!((profile["user_id"].as_str(), profile["agent_id"].as_str()), (Some("ann"), Some("assistant")));
    let entity = by_type("entity_memory");
    assert_eq!(
        entity["learning_id"], "entity_user_49915e0d7d4b402e_company_acme_corp",
        "Agno's id for (ann, company, Acme Corp)"
    );
    assert_eq!((entity["namespace"].as_str(), entity["entity_id"].as_str()), (Some("user"), Some("acme_corp")));
    assert_eq!(entity["content"]["facts"][0]["content"], "Uses PostgreSQL 16");

    // Ann's next run carries them; Bob's does not.
    run(&os, "assistant", &ann, "What does Acme Corp run?").await;
    let system = system_of(&provider, "What does Acme Corp run?");
    for expected in [
        "<user_profile>",
        "Name: Ann Lee",
        "Preferred Name: Annie",
        "<entity_memory>",
        "Acme Corp (company)",
        "Uses PostgreSQL 16",
    ] {
        assert!(system.contains(expected), "{expected} missing from:\n{system}");
    }
    run(&os, "assistant", &bob, "What does Acme Corp run, for me?").await;
    let system = system_of(&provider, "What does Acme Corp run, for me?");
    assert!(!system.contains("Ann") && !system.contains("PostgreSQL"), "bob sees ann's learnings:\n{system}");
    assert_eq!(os.get("/learnings", Some(&bob)).await.body["meta"]["total_count"], 0);

    // The routes.
    let create = |who: &str, body: Value| {
        let (os, who) = (&os, who.to_owned());
        async move { os.post_json("/learnings", &body, Some(&who)).await }
    };
    let r = create(&ann, json!({"learning_type": "user_profile", "content": {"name": "A"}})).await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(detail(&r.body).contains("Use PATCH /learnings/user_profile_ann"), "{}", r.body);
    let r = create(&ann, json!({"learning_type": "user_profile", "user_id": "bob", "content": {}})).await;
    assert_eq!((r.status, detail(&r.body)), (403, "Cannot create learnings for another user".to_owned()));
    let r = create(&bob, json!({"learning_type": "note", "content": {"text": "hi"}})).await;
    assert_eq!((r.status, r.body["user_id"].as_str()), (201, Some("bob")), "{}", r.body);
    let bobs_note = r.body["learning_id"].as_str().unwrap().to_owned();
    assert_eq!(bobs_note.len(), 36, "a uuid");
    let r = create(&ann, json!({"learning_type": "entity_memory", "content": {}, "entity_id": "x"})).await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(detail(&r.body).contains("keyed by its identity fields"), "{}", r.body);
    let r = create(&ann, json!({"learning_type": "entity_memory", "namespace": "user_0123456789abcdef", "entity_id": "x", "entity_type": "y", "content": {}})).await;
    assert!(r.status == 422 && detail(&r.body).contains("is reserved"), "{}", r.body);
    let r = create(&ann, json!({"learning_type": "user_profile", "content": "not an object"})).await;
    assert_eq!(r.status, 422, "{}", r.body);
    let r = create(&admin, json!({"learning_type": "entity_memory", "entity_id": "globex", "entity_type": "company", "content": {"name": "Globex"}})).await;
    assert_eq!(
        (r.status, r.body["learning_id"].as_str(), r.body["namespace"].as_str()),
        (201, Some("entity_global_company_globex"), Some("global"))
    );
    assert!(r.body["user_id"].is_null());

    assert_eq!(os.get(&format!("/learnings/{bobs_note}"), Some(&ann)).await.status, 404, "another's record");
    assert_eq!(os.get("/learnings/entity_global_company_globex", Some(&ann)).await.status, 200, "ownerless: readable");
    let r = os.patch_json("/learnings/entity_global_company_globex", &json!({"content": {}}), Some(&ann)).await;
    assert_eq!(
        (r.status, detail(&r.body)),
        (403, "Only admins can modify learnings that have no owner (user_id is null)".to_owned())
    );
    assert_eq!(os.delete("/learnings/entity_global_company_globex", Some(&ann)).await.status, 403);
    let r = os
        .patch_json(
            "/learnings/entity_global_company_globex",
            &json!({"content": {"name": "Globex Inc"}, "metadata": {"by": "admin"}}),
            Some(&admin),
        )
        .await;
    assert_eq!(
        (r.status, r.body["content"]["name"].as_str(), r.body["metadata"]["by"].as_str()),
        (200, Some("Globex Inc"), Some("admin"))
    );
    let r = os.patch_json("/learnings/user_profile_ann", &json!({"content": null}), Some(&ann)).await;
    assert_eq!(r.status, 422, "{}", r.body);
    let r = os
        .patch_json(
            "/learnings/user_profile_ann",
            &json!({"content": {"user_id": "ann", "name": "Ann Lee", "preferred_name": "Ann"}}),
            Some(&ann),
        )
        .await;
    assert_eq!((r.status, r.body["content"]["preferred_name"].as_str()), (200, Some("Ann")));
    let listed = os.get("/learnings?sort_by=created_at&sort_order=asc&limit=2", Some(&ann)).await;
    assert_eq!(
        (listed.body["meta"]["total_count"].as_i64(), listed.body["meta"]["total_pages"].as_i64()),
        (Some(3), Some(2)),
        "own two and the ownerless one: {}",
        listed.body
    );
    assert_eq!(os.get("/learnings?user_id=bob", Some(&ann)).await.status, 403);
    for bad in ["/learnings?limit=0", "/learnings?limit=1001", "/learnings?page=0", "/learnings?sort_order=up"] {
        assert_eq!(os.get(bad, Some(&ann)).await.status, 422, "{bad}");
    }
    let users = os.get("/learnings/users", Some(&ann)).await;
    assert_eq!(
        users.body["data"].as_array().unwrap().iter().map(|u| u["user_id"].clone()).collect::<Vec<_>>(),
        [json!("ann")]
    );
    let users = os.get("/learnings/users?sort_by=user_id&sort_order=asc", Some(&admin)).await;
    assert_eq!(
        users.body["data"].as_array().unwrap().iter().map(|u| u["user_id"].clone()).collect::<Vec<_>>(),
        [json!("ann"), json!("bob")]
    );
    assert_eq!(os.delete("/learnings/users/bob", Some(&ann)).await.status, 403);
    assert_eq!(os.delete(&format!("/learnings/{bobs_note}"), Some(&bob)).await.status, 204);
    assert_eq!(os.delete(&format!("/learnings/{bobs_note}"), Some(&bob)).await.status, 404);
    assert_eq!(os.delete("/learnings/users/ann", Some(&ann)).await.status, 204);
    assert_eq!(os.get("/learnings", Some(&ann)).await.body["meta"]["total_count"], 1, "the ownerless one is left");

    // `hitl`: the save pauses the run until the user confirms it.
    provider.push(Reply::tool_call("update_profile", r#"{"name": "Annabel"}"#));
    provider.push(Reply::text("Saved."));
    let paused = run(&os, "careful", &ann, "My name is Annabel").await;
    assert_eq!(paused["status"], "PAUSED", "{paused}");
    assert_eq!(
        os.get("/learnings/user_profile_ann", Some(&ann)).await.status,
        404,
        "nothing saved before the confirmation"
    );
    let run_id = paused["run_id"].as_str().unwrap();
    let mut tools = paused["tools"].as_array().unwrap().clone();
    for t in &mut tools {
        t["confirmed"] = json!(true);
    }
    let tools = Value::Array(tools).to_string();
    let done = os
        .post_form(
            &format!("/agents/careful/runs/{run_id}/continue"),
            &[("tools", &tools), ("stream", "false")],
            Some(&ann),
        )
        .await;
    assert_eq!((done.status, done.body["status"].as_str()), (200, Some("COMPLETED")), "{}", done.body);
    let r = os.get("/learnings/user_profile_ann", Some(&ann)).await;
    assert_eq!(r.body["content"]["name"], "Annabel", "{}", r.body);
}

/// Python Agno 3.1 reads the records agno-rs wrote, creates the table as agno-rs does, and what
/// its own `LearningMachine` saves reaches agno-rs's routes and system message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_agno_shares_the_learnings_table() {
    let Some(python) = agno_testkit::agno_python("learnings shared with Python Agno") else { return };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("No changes")));
    let url = common::sqlite_url("learnings-python");
    let os = TestOs::start(config(&os_config(&provider, &url))).await;
    let ann = token("ann", &SCOPES);
    let bob = token("bob", &SCOPES);
    provider.push(Reply::text("Hello"));
    provider.push(Reply::tool_call("update_profile", r#"{"name": "Ann Lee"}"#));
    provider.push(Reply::text("saved"));
    run(&os, "assistant", &ann, "I am Ann Lee").await;
    learnings_of(&os, &ann, 1).await;

    let file = url.trim_start_matches("sqlite://");
    let fresh = format!("{file}.python.db");
    let script = r#"
import json, sqlite3, sys
from agno.db.sqlite import SqliteDb
from agno.learn import LearningMachine
from agno.learn.config import LearningMode, UserProfileConfig
db = SqliteDb(db_file=sys.argv[1])
ann = db.get_learning(learning_type="user_profile", user_id="ann")
machine = LearningMachine(db=db, user_profile=UserProfileConfig(mode=LearningMode.AGENTIC))
tools = {t.__name__: t for t in machine.get_tools(user_id="bob", agent_id="assistant")}
said = tools["update_profile"](name="Bob Stone")
fresh = SqliteDb(db_file=sys.argv[2])
fresh.upsert_learning(id="x", learning_type="note", content={})
def ddl(path):
    c = sqlite3.connect(path)
    rows = c.execute("select sql from sqlite_master where tbl_name='agno_learnings' and sql is not null")
    return sorted(r[0].replace("IF NOT EXISTS ", "") for r in rows)
print(json.dumps({"ann": ann, "said": said, "same_ddl": ddl(sys.argv[1]) == ddl(sys.argv[2]), "ddl": ddl(sys.argv[1]), "python_ddl": ddl(sys.argv[2])}))
"#;
    let out = tokio::process::Command::new(&python).arg("-c").arg(script).arg(file).arg(&fresh).output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let seen: Value =
        serde_json::from_slice(out.stdout.rsplit(|b| *b == b'\n').find(|l| !l.is_empty()).unwrap()).unwrap();
    assert_eq!(seen["ann"], json!({"content": {"user_id": "ann", "name": "Ann Lee"}}));
    assert_eq!(seen["said"], "Profile updated: name=Bob Stone");
    assert_eq!(seen["same_ddl"], true, "{seen}");

    let r = os.get("/learnings/user_profile_bob", Some(&bob)).await;
    assert_eq!((r.status, r.body["content"]["name"].as_str()), (200, Some("Bob Stone")), "{}", r.body);
    provider.push(Reply::text("Hi Bob"));
    run(&os, "assistant", &bob, "hello").await;
    assert!(system_of(&provider, "hello").contains("Name: Bob Stone"));
}
