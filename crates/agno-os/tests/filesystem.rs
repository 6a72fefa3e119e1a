//! An agent's durable files (`filesystem = true`, Agno 3.1's `DbFileSystem` over `agno_fs`): the
//! agent writes them with its tools in its user's partition (user isolation on), the
//! `/filesystem/*` routes show each user their own and an admin every partition, bad paths from
//! the model come back to it as tool errors, bad queries are 4xx, and Python Agno 3.1 reads the
//! rows agno-rs wrote and the reverse.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use agno_testkit::{FakeProvider, Reply};
use common::{SECRET, TestOs, config, detail, token};
use serde_json::{Value, json};

fn os_config(provider: &FakeProvider, db_url: &str) -> String {
    format!(
        "[db]\nurl = \"{db_url}\"\n\
         [auth]\nmode = \"jwt\"\nverification_keys = [\"{SECRET}\"]\nuser_isolation = true\n\
         [[agents]]\nid = \"notes\"\nfilesystem = true\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{url}\", api_key = \"sk\" }}\n\
         [[agents]]\nid = \"plain\"\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{url}\", api_key = \"sk\" }}\n",
        url = provider.base_url()
    )
}

const USER_SCOPES: [&str; 4] = ["agents:read", "agents:run", "filesystem:read", "sessions:read"];

/// One run of `notes` by the holder of `bearer` in which the model calls `tool` with `args`;
/// the tool's result.
async fn tool_run(os: &TestOs, provider: &FakeProvider, bearer: &str, tool: &str, args: Value) -> String {
    provider.push(Reply::tool_call(tool, args.to_string()));
    provider.push(Reply::text("done"));
    let r = os.post_form("/agents/notes/runs", &[("message", "go"), ("stream", "false")], Some(bearer)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["tools"][0]["result"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_keep_files_per_user_and_the_routes_show_each_their_own() {
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&os_config(&provider, &common::sqlite_url("filesystem")))).await;
    let ann = token("ann", &USER_SCOPES);
    let bob = token("bob", &USER_SCOPES);
    let admin = token("root", &["agent_os:admin"]);

    let wrote = tool_run(
        &os,
        &provider,
        &ann,
        "write_file",
        json!({"path": "notes/plan.md", "content": "step one\nstep two\n"}),
    )
    .await;
    assert_eq!(wrote, "Wrote 18 bytes to notes/plan.md");
    // Agno's instructions reach the model's system message.
    let system = provider.requests().iter().rev().find(|q| q.path == "/v1/chat/completions").unwrap().body["messages"]
        [0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.contains("private, durable filesystem"), "{system}");
    let appended = tool_run(
        &os,
        &provider,
        &ann,
        "append_file",
        json!({"path": "notes/plan.md", "content": "step three", "unique": true}),
    )
    .await;
    assert_eq!(appended, "Appended 11 bytes to notes/plan.md, skipping lines already present (now 29 bytes)");
    let read = tool_run(&os, &provider, &ann, "read_file", json!({"path": "notes/plan.md", "start_line": 2})).await;
    assert_eq!(read, "     2\tstep two\n     3\tstep three");
    assert_eq!(
        tool_run(&os, &provider, &bob, "write_file", json!({"path": "notes/plan.md", "content": "bob's plan\n"})).await,
        "Wrote 11 bytes to notes/plan.md"
    );
    assert_eq!(
        tool_run(&os, &provider, &bob, "write_file", json!({"path": "todo.md", "content": "x\n"})).await,
        "Wrote 2 bytes to todo.md"
    );

    // Bad input from the model is a tool error it reads; nothing is written.
    let escaped =
        tool_run(&os, &provider, &ann, "write_file", json!({"path": "../../etc/passwd", "content": "x"})).await;
    assert!(escaped.starts_with("Error: invalid path"), "{escaped}");
    let missing = tool_run(&os, &provider, &ann, "read_file", json!({"path": "nope.md"})).await;
    assert_eq!(missing, "Error: file not found: nope.md");
    let replaced = tool_run(
        &os,
        &provider,
        &ann,
        "replace_lines",
        json!({"path": "notes/plan.md", "start_line": 9, "end_line": 9, "content": "x"}),
    )
    .await;
    assert!(replaced.starts_with("Error: start_line 9 is past the end"), "{replaced}");

    // Each user sees their own partition.
    let r = os.get("/filesystem/entries?agent_id=notes", Some(&ann)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["namespace"], "notes");
    assert_eq!(r.body["agent_ids"], json!(["notes"]));
    assert_eq!(
        r.body["entries"],
        json!([{"path": "notes", "type": "directory", "size_bytes": 29, "version": null, "updated_at": r.body["entries"][0]["updated_at"], "user_id": "ann"}])
    );
    assert_eq!(r.body["usage"], json!({"file_count": 1, "total_bytes": 29, "bytes_limit": 20_000_000}));
    assert_eq!(r.body["meta"]["total_count"], 1);
    let r = os.get("/filesystem/content?agent_id=notes&path=notes/plan.md", Some(&ann)).await;
    assert_eq!(
        (r.status, r.body["content"].as_str(), r.body["user_id"].as_str()),
        (200, Some("step one\nstep two\nstep three\n"), Some("ann"))
    );
    assert_eq!(
        (r.body["line_count"].as_i64(), r.body["version"].as_i64(), r.body["truncated"].as_bool()),
        (Some(3), Some(2), Some(false))
    );
    let r = os.get("/filesystem/content?namespace=notes&path=notes/plan.md&offset=5&limit=3", Some(&bob)).await;
    assert_eq!((r.body["content"].as_str(), r.body["next_offset"].as_i64()), (Some(" pl"), Some(8)), "{}", r.body);
    let r = os.get("/filesystem/search?agent_id=notes&query=STEP", Some(&ann)).await;
    assert_eq!(r.body["entries"].as_array().unwrap().len(), 1, "{}", r.body);
    assert_eq!(
        (r.body["entries"][0]["line"].as_i64(), r.body["entries"][0]["match_count"].as_i64()),
        (Some(1), Some(3))
    );
    assert_eq!(os.get("/filesystem/search?agent_id=notes&query=step", Some(&bob)).await.body["meta"]["total_count"], 0);
    let r = os.get("/filesystem/content?agent_id=notes&path=notes/plan.md&user_id=bob", Some(&ann)).await;
    assert_eq!((r.status, detail(&r.body)), (403, "Only an admin may browse another user's files".to_owned()));

    // `/config` lists the store (its namespace, partitioned by user) and the agent holding it.
    let config = os.get("/config", Some(&token("ann", &["config:read", "agents:read"]))).await.body;
    let ns = &config["filesystem"]["namespaces"];
    assert_eq!(ns.as_array().map(Vec::len), Some(1), "{config}");
    assert_eq!(
        (ns[0]["namespace"].as_str(), ns[0]["user_isolation"].as_bool(), ns[0]["table_name"].as_str()),
        (Some("notes"), Some(true), Some("agno_fs"))
    );
    assert_eq!(ns[0]["agents"], json!([{"id": "notes"}]));

    // An admin sees every partition.
    let r = os.get("/filesystem/entries?agent_id=notes", Some(&admin)).await;
    let entries: Vec<(String, Value)> = r.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap().to_owned(), e["user_id"].clone()))
        .collect();
    assert_eq!(entries, [("notes".to_owned(), Value::Null), ("todo.md".to_owned(), json!("bob"))], "{}", r.body);
    assert_eq!(r.body["entries"][0]["size_bytes"], 40);
    assert_eq!(r.body["usage"]["file_count"], 3);
    let r = os.get("/filesystem/files?sort_by=size&sort_order=desc", Some(&admin)).await;
    let rows: Vec<(String, String, i64)> = r.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_owned(),
                e["user_id"].as_str().unwrap().to_owned(),
                e["size_bytes"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("notes/plan.md".to_owned(), "ann".to_owned(), 29),
            ("notes/plan.md".to_owned(), "bob".to_owned(), 11),
            ("todo.md".to_owned(), "bob".to_owned(), 2)
        ]
    );
    let r = os.get("/filesystem/files?query=plan", Some(&admin)).await;
    assert_eq!(r.body["entries"].as_array().unwrap().len(), 1, "only bob's file holds 'plan': {}", r.body);
    let r = os.get("/filesystem/content?agent_id=notes&path=todo.md&user_id=bob", Some(&admin)).await;
    assert_eq!(r.body["content"], "x\n");
    assert_eq!(
        os.get("/filesystem/content?agent_id=notes&path=todo.md", Some(&admin)).await.status,
        404,
        "the shared partition"
    );
    let r = os.get("/filesystem/files", Some(&bob)).await;
    assert_eq!(r.body["meta"]["total_count"], 2, "bob's own: {}", r.body);

    // Bad requests: precise 4xx.
    for (path, status, why) in [
        ("/filesystem/content?agent_id=notes&path=../x", 400, "invalid path"),
        ("/filesystem/entries", 400, "Provide a namespace, an agent_id, or both"),
        ("/filesystem/entries?agent_id=plain", 404, "This agent does not have a filesystem"),
        ("/filesystem/entries?agent_id=ghost", 404, "Agent not found"),
        ("/filesystem/entries?namespace=elsewhere", 404, "Filesystem not found"),
        ("/filesystem/entries?agent_id=notes&limit=101", 422, "limit"),
        ("/filesystem/search?agent_id=notes", 422, "query"),
        ("/filesystem/files?sort_by=name", 422, "sort_by"),
        ("/filesystem/content?agent_id=notes", 422, "path"),
    ] {
        let r = os.get(path, Some(&ann)).await;
        assert_eq!(r.status, status, "{path}: {}", r.body);
        assert!(detail(&r.body).contains(why), "{path}: {}", r.body);
    }
    let narrow = token("ann", &["agents:plain:read", "filesystem:read"]);
    assert_eq!(os.get("/filesystem/entries?agent_id=notes", Some(&narrow)).await.status, 403);
    assert_eq!(
        os.get("/filesystem/entries?namespace=notes", Some(&narrow)).await.status,
        404,
        "not held by an agent it reads"
    );
    let unscoped = token("ann", &["agents:read"]);
    assert_eq!(os.get("/filesystem/files", Some(&unscoped)).await.status, 403);
}

/// Python Agno 3.1 reads the rows agno-rs wrote, and agno-rs serves the ones Python wrote: the
/// same `agno_fs` table, namespace encoding and partitions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_agno_reads_the_files_agno_rs_wrote_and_the_reverse() {
    let Some(python) = agno_testkit::agno_python("agent files shared with Python Agno") else { return };
    let provider = FakeProvider::start().await.unwrap();
    let url = common::sqlite_url("filesystem-python");
    let os = TestOs::start(config(&os_config(&provider, &url))).await;
    let ann = token("Ann Smith", &USER_SCOPES);
    tool_run(&os, &provider, &ann, "write_file", json!({"path": "ideas/é.md", "content": "from rust\n"})).await;

    let file = url.trim_start_matches("sqlite://");
    let script = r#"
import json, sys
from agno.db.sqlite import SqliteDb
from agno.fs import FileSystem
fs = FileSystem(SqliteDb(db_file=sys.argv[1]), namespace="{agent_id}", user_scoped=True)
ann = fs.resolve(agent_id="notes", user_id="Ann Smith")
read = ann.read_with_meta("ideas/é.md")
ann.append("ideas/é.md", "from python")
ann.write("py/made.md", "python wrote this\n")
print(json.dumps({"content": read.content, "version": read.metadata.version, "namespace": ann.namespace,
                  "partitions": fs.resolve(agent_id="notes").partition(None).partitions()}))
"#;
    let out = tokio::process::Command::new(&python).arg("-c").arg(script).arg(file).output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let seen: Value =
        serde_json::from_slice(out.stdout.rsplit(|b| *b == b'\n').find(|l| !l.is_empty()).unwrap()).unwrap();
    assert_eq!(
        seen,
        json!({"content": "from rust\n", "version": 1, "namespace": "notes", "partitions": ["Ann Smith"]})
    );

    let r = os.get("/filesystem/content?agent_id=notes&path=ideas/%C3%A9.md", Some(&ann)).await;
    assert_eq!(
        (r.body["content"].as_str(), r.body["version"].as_i64()),
        (Some("from rust\nfrom python\n"), Some(2)),
        "{}",
        r.body
    );
    let read = tool_run(&os, &provider, &ann, "read_file", json!({"path": "py/made.md"})).await;
    assert_eq!(read, "     1\tpython wrote this");
}
