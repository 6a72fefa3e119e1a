//! `/knowledge` against a real server: upload (file and text) answered 202 and ingested in the
//! background, status, list, get, search in every mode, delete, bad input, an agent searching
//! the base, and user isolation between two JWT users.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use common::{SECRET, TestOs, config, detail, token};
use serde_json::{Value, json};

fn isolated() -> String {
    format!(
        r#"
[os]
id = "kb-os"
[db]
url = "memory://"
[auth]
mode = "jwt"
verification_keys = ["{SECRET}"]
user_isolation = true
[[knowledge]]
id = "docs"
embedder = "hash:256"
chunker = "MarkdownChunker"
chunk_size = 400
[[agents]]
id = "helper"
model = "test"
knowledge = "docs"
"#
    )
}

const SCOPES: &[&str] = &["knowledge:read", "knowledge:write", "knowledge:delete", "agents:run", "agents:read"];

/// Waits (bounded) until the content is no longer processing; returns its status body.
async fn settled(os: &TestOs, id: &str, who: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = os.get(&format!("/knowledge/content/{id}/status"), Some(who)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        if r.body["status"] != "processing" {
            return r.body;
        }
        assert!(Instant::now() < deadline, "content {id} still processing");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn upload(os: &TestOs, name: &str, text: &str, who: &str) -> String {
    let r = os
        .post_file(
            "/knowledge/content",
            &[("metadata", r#"{"kind": "note"}"#)],
            (name, text.as_bytes().to_vec()),
            Some(who),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.body["status"], "processing");
    assert_eq!(r.body["name"], name);
    let id = r.body["id"].as_str().unwrap().to_owned();
    assert_eq!(settled(os, &id, who).await["status"], "completed");
    id
}

fn names(body: &Value) -> Vec<String> {
    let mut n: Vec<String> =
        body["data"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap().to_owned()).collect();
    n.sort();
    n.dedup();
    n
}

#[tokio::test]
async fn contents_are_uploaded_searched_and_deleted_per_user() {
    let os = TestOs::start(config(&isolated())).await;
    let (ann, bob) = (token("ann", SCOPES), token("bob", SCOPES));
    let admin = token("root", &["agent_os:admin"]);
    let ann_id = upload(&os, "ann.md", "# Garden\n\nAnn grows blue tulips by the lake.", &ann).await;
    let bob_id = upload(&os, "bob.md", "# Garden\n\nBob grows red tulips by the road.", &bob).await;

    // Lists: each sees their own.
    let r = os.get("/knowledge/content", Some(&ann)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(names(&r.body), ["ann.md"]);
    assert_eq!(r.body["meta"]["total_count"], 1);
    let row = &r.body["data"][0];
    for key in [
        "id",
        "name",
        "description",
        "type",
        "size",
        "linked_to",
        "metadata",
        "access_count",
        "status",
        "status_message",
        "created_at",
        "updated_at",
    ] {
        assert!(row.get(key).is_some(), "{key} missing from {row}");
    }
    assert_eq!(
        (&row["type"], &row["status"], &row["metadata"]),
        (&json!("md"), &json!("completed"), &json!({"kind": "note"}))
    );
    assert_eq!(row["size"], json!(ann_text_len()));
    assert_eq!(os.get("/knowledge/content", Some(&admin)).await.body["meta"]["total_count"], 2);

    // Search: own chunks only, in every mode.
    for mode in ["keyword", "vector", "hybrid"] {
        let r = os
            .post_json("/knowledge/search", &json!({"query": "tulips garden", "search_type": mode}), Some(&ann))
            .await;
        assert_eq!(r.status, 200, "{mode}: {}", r.body);
        assert_eq!(names(&r.body), ["ann.md"], "{mode}");
        let doc = &r.body["data"][0];
        assert_eq!(doc["content_id"], ann_id.as_str());
        assert!(doc["reranking_score"].as_f64().unwrap() <= 1.0);
    }
    let r =
        os.post_json("/knowledge/search", &json!({"query": "tulips", "filters": {"kind": "other"}}), Some(&ann)).await;
    assert_eq!(r.body["data"], json!([]));

    // Bob cannot read, see the status of, or delete Ann's content (404, as a missing one).
    for path in [format!("/knowledge/content/{ann_id}"), format!("/knowledge/content/{ann_id}/status")] {
        let r = os.get(&path, Some(&bob)).await;
        assert_eq!((r.status, detail(&r.body)), (404, format!("Content not found: {ann_id}")), "{path}");
    }
    assert_eq!(os.delete(&format!("/knowledge/content/{ann_id}"), Some(&bob)).await.status, 404);
    assert_eq!(os.get(&format!("/knowledge/content/{ann_id}"), Some(&ann)).await.status, 200, "still there");

    // The agent searches as the caller.
    let r = os.post_form("/agents/helper/runs", &[("message", "tulips"), ("stream", "false")], Some(&bob)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let tool =
        r.body["tools"].as_array().unwrap().iter().find(|t| t["tool_name"] == "search_knowledge_base").unwrap().clone();
    let result = tool["result"].as_str().unwrap();
    assert!(result.contains("Bob grows red tulips") && !result.contains("Ann"), "{result}");

    // Deleting: the owner can; then the content and its chunks are gone.
    let r = os.delete(&format!("/knowledge/content/{bob_id}"), Some(&bob)).await;
    assert_eq!((r.status, &r.body), (200, &json!({"id": bob_id})));
    assert_eq!(os.get(&format!("/knowledge/content/{bob_id}"), Some(&bob)).await.status, 404);
    let r =
        os.post_json("/knowledge/search", &json!({"query": "tulips", "search_type": "keyword"}), Some(&admin)).await;
    assert_eq!(names(&r.body), ["ann.md"]);
}

#[tokio::test]
async fn contents_are_patched_and_deleted_in_bulk_only_by_their_owner() {
    let os = TestOs::start(config(&isolated())).await;
    let (ann, bob) = (token("ann", SCOPES), token("bob", SCOPES));
    let admin = token("root", &["agent_os:admin"]);
    let ann_id = upload(&os, "ann.md", "# Garden\n\nAnn grows blue tulips by the lake.", &ann).await;
    let ann2_id = upload(&os, "ann2.md", "# Kitchen\n\nAnn bakes rye bread.", &ann).await;
    let bob_id = upload(&os, "bob.md", "# Garden\n\nBob grows red tulips by the road.", &bob).await;
    let shared_id = upload(&os, "shared.md", "# Garden\n\nEveryone waters the tulips.", &admin).await;

    // The owner patches: name and description replaced, metadata merged, into the chunks too.
    let path = format!("/knowledge/content/{ann_id}");
    let r = os
        .patch_form(
            &path,
            &[("name", "tulips.md"), ("description", "spring"), ("metadata", r#"{"topic": "flowers"}"#)],
            Some(&ann),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        (&r.body["id"], &r.body["name"], &r.body["description"], &r.body["metadata"], &r.body["status"]),
        (
            &json!(ann_id),
            &json!("tulips.md"),
            &json!("spring"),
            &json!({"kind": "note", "topic": "flowers"}),
            &json!("completed")
        )
    );
    assert_eq!(os.get(&path, Some(&ann)).await.body["name"], "tulips.md", "stored");
    for mode in ["keyword", "vector", "hybrid"] {
        let body = json!({"query": "tulips", "search_type": mode, "filters": {"topic": "flowers"}});
        let r = os.post_json("/knowledge/search", &body, Some(&ann)).await;
        assert_eq!(r.status, 200, "{mode}: {}", r.body);
        let ids: Vec<&Value> = r.body["data"].as_array().unwrap().iter().map(|d| &d["content_id"]).collect();
        assert_eq!(ids, [&json!(ann_id)], "{mode}: the patched metadata is searchable");
        assert_eq!(r.body["data"][0]["meta_data"]["kind"], "note", "{mode}: old keys kept");
    }

    // Bad fields are refused before anything changes.
    for bad in ["{not json", "", " "] {
        let r = os.patch_form(&path, &[("name", "x.md"), ("metadata", bad)], Some(&ann)).await;
        assert_eq!((r.status, detail(&r.body)), (400, "Invalid JSON format for metadata".to_owned()), "{bad:?}");
    }
    let r = os.patch_form(&path, &[("name", "x.md"), ("reader_id", "nope")], Some(&ann)).await;
    assert_eq!((r.status, detail(&r.body)), (400, "Invalid reader_id: nope".to_owned()));
    assert_eq!(os.get(&path, Some(&ann)).await.body["name"], "tulips.md", "unchanged");
    // JSON null (which the document allows) changes no metadata.
    let r = os.patch_form(&path, &[("metadata", "null")], Some(&ann)).await;
    assert_eq!((r.status, &r.body["metadata"]["topic"]), (200, &json!("flowers")), "{}", r.body);
    let r = os.patch_form("/knowledge/content/missing", &[("name", "x.md")], Some(&ann)).await;
    assert_eq!((r.status, detail(&r.body)), (404, "Content not found: missing".to_owned()));

    // Another user cannot patch it, nor a user the shared content (404, as a missing one).
    for (id, who) in [(&ann_id, &bob), (&shared_id, &ann)] {
        let r = os.patch_form(&format!("/knowledge/content/{id}"), &[("name", "mine.md")], Some(who)).await;
        assert_eq!((r.status, detail(&r.body)), (404, format!("Content not found: {id}")));
    }
    let r = os.get(&format!("/knowledge/content/{shared_id}"), Some(&admin)).await;
    assert_eq!(r.body["name"], "shared.md");

    // Bulk delete by Bob: his content only.
    let r = os.delete("/knowledge/content", Some(&bob)).await;
    assert_eq!((r.status, &r.body), (200, &json!("success")));
    let r = os.get("/knowledge/content", Some(&admin)).await;
    assert_eq!(names(&r.body), ["ann2.md", "shared.md", "tulips.md"]);
    assert_eq!(os.get(&format!("/knowledge/content/{bob_id}"), Some(&admin)).await.status, 404);
    // By Ann: hers; the shared one stays, and its chunks are all that is searchable.
    assert_eq!(os.delete("/knowledge/content", Some(&ann)).await.status, 200);
    let r = os.get("/knowledge/content", Some(&admin)).await;
    assert_eq!(names(&r.body), ["shared.md"]);
    for id in [&ann_id, &ann2_id] {
        assert_eq!(os.get(&format!("/knowledge/content/{id}"), Some(&admin)).await.status, 404);
    }
    let r = os
        .post_json("/knowledge/search", &json!({"query": "tulips bread", "search_type": "keyword"}), Some(&admin))
        .await;
    let ids: Vec<&Value> = r.body["data"].as_array().unwrap().iter().map(|d| &d["content_id"]).collect();
    assert_eq!(ids, [&json!(shared_id)]);
    // By an admin: everything.
    assert_eq!(os.delete("/knowledge/content", Some(&admin)).await.status, 200);
    assert_eq!(os.get("/knowledge/content", Some(&admin)).await.body["meta"]["total_count"], 0);
    let r =
        os.post_json("/knowledge/search", &json!({"query": "tulips", "search_type": "keyword"}), Some(&admin)).await;
    assert_eq!(r.body["data"], json!([]));
}

fn ann_text_len() -> String {
    "# Garden\n\nAnn grows blue tulips by the lake.".len().to_string()
}

#[tokio::test]
async fn bad_uploads_fail_with_a_reason_or_are_refused_and_lose_nothing() {
    let os = TestOs::start(config(&isolated())).await;
    let ann = token("ann", SCOPES);
    upload(&os, "good.txt", "harbors and anchors", &ann).await;
    for (name, bytes, reason) in [
        ("virus.exe", b"MZ".to_vec(), "unsupported file type .exe"),
        ("empty.txt", Vec::new(), "empty"),
        ("broken.json", b"{\"a\":".to_vec(), "not valid JSON"),
    ] {
        let r = os.post_file("/knowledge/content", &[], (name, bytes), Some(&ann)).await;
        assert_eq!(r.status, 202, "{name}: {}", r.body);
        let status = settled(&os, r.body["id"].as_str().unwrap(), &ann).await;
        assert_eq!(status["status"], "failed", "{name}");
        assert!(status["status_message"].as_str().unwrap().contains(reason), "{name}: {status}");
    }
    // Refused before anything is stored.
    let refused = [
        os.post_form("/knowledge/content", &[("description", "no content")], Some(&ann)).await,
        os.post_form("/knowledge/content", &[("text_content", "x"), ("chunker", "Semantic")], Some(&ann)).await,
        os.post_form("/knowledge/content", &[("text_content", "x"), ("chunk_size", "ten")], Some(&ann)).await,
        os.post_form("/knowledge/content", &[("text_content", "x"), ("chunk_size", "0")], Some(&ann)).await,
        // Past the documented maximum (i64's largest).
        os.post_form(
            "/knowledge/content",
            &[("text_content", "x"), ("chunk_overlap", "118618718254454434289015231944327168")],
            Some(&ann),
        )
        .await,
        os.post_form("/knowledge/content", &[("text_content", "x"), ("chunk_size", "9223372036854775808")], Some(&ann))
            .await,
    ];
    for (i, r) in refused.iter().enumerate() {
        assert!(r.status == 400 || r.status == 422, "#{i}: {} {}", r.status, r.body);
    }
    assert_eq!(os.get("/knowledge/content", Some(&ann)).await.body["meta"]["total_count"], 4);
    // An overlap as large as the chunks fits the API's document (which cannot compare two
    // fields): accepted and failed with the reason, as Python Agno does.
    let r = os
        .post_form(
            "/knowledge/content",
            &[("text_content", "x"), ("chunk_size", "10"), ("chunk_overlap", "10")],
            Some(&ann),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_owned();
    let status = settled(&os, &id, &ann).await;
    assert_eq!(status["status"], "failed", "{status}");
    assert_eq!(status["status_message"], "chunk_overlap (10) must be smaller than chunk_size (10)", "{status}");
    let r = os.post_json("/knowledge/search", &json!({"query": "x", "search_type": "keyword"}), Some(&ann)).await;
    assert_eq!(r.body["meta"]["total_count"], 0, "nothing of it is searchable: {}", r.body);
    let r = os.delete(&format!("/knowledge/content/{id}"), Some(&ann)).await;
    assert_eq!((r.status, &r.body), (200, &json!({"id": id})));
    // Metadata that is not an object is kept under "value", as Agno keeps it, and the API
    // document says so (any JSON).
    let r = os.post_form("/knowledge/content", &[("text_content", "x"), ("metadata", "-9.5")], Some(&ann)).await;
    assert_eq!((r.status, &r.body["metadata"]), (202, &json!({"value": "-9.5"})), "{}", r.body);
    settled(&os, r.body["id"].as_str().unwrap(), &ann).await;
    assert_eq!(
        os.delete(&format!("/knowledge/content/{}", r.body["id"].as_str().unwrap()), Some(&ann)).await.status,
        200
    );
    let doc = os.get("/openapi.json", None).await.body;
    let upload = &doc["paths"]["/knowledge/content"]["post"]["requestBody"]["content"]["multipart/form-data"];
    assert!(upload["schema"]["properties"]["metadata"].get("type").is_none(), "{upload}");
    // Text content with its own name and chunking is indexed too.
    let r = os
        .post_form(
            "/knowledge/content",
            &[
                ("text_content", "lighthouse keepers watch ships"),
                ("name", "keepers"),
                ("chunker", "RecursiveChunker"),
                ("chunk_size", "100"),
            ],
            Some(&ann),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(settled(&os, r.body["id"].as_str().unwrap(), &ann).await["status"], "completed");
    let found =
        os.post_json("/knowledge/search", &json!({"query": "lighthouse", "search_type": "keyword"}), Some(&ann)).await;
    assert_eq!(names(&found.body), ["keepers"]);
    // A URL is downloaded in the background; a bad one fails with the reason. By default the
    // server reads only public addresses, so this local page is refused as internal.
    let page =
        axum::Router::new().route("/harbor.txt", axum::routing::get(|| async { "pilots guide ships in the harbor" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, page).await.unwrap() });
    let local = format!("http://{addr}/harbor.txt");
    let r = os.post_form("/knowledge/content", &[("url", &local)], Some(&ann)).await;
    assert_eq!((r.status, &r.body["name"]), (202, &json!("harbor.txt")), "{}", r.body);
    let status = settled(&os, r.body["id"].as_str().unwrap(), &ann).await;
    assert!(
        status["status"] == "failed" && status["status_message"].as_str().unwrap().contains("internal address"),
        "{status}"
    );
    assert_eq!(os.post_form("/knowledge/content", &[("url", "file:///etc/passwd")], Some(&ann)).await.status, 422);
    // With allow_private_urls the same page is read.
    let open =
        TestOs::start(config(&isolated().replace("chunk_size = 400", "chunk_size = 400\nallow_private_urls = true")))
            .await;
    let r = open.post_form("/knowledge/content", &[("url", &local)], Some(&ann)).await;
    assert_eq!(settled(&open, r.body["id"].as_str().unwrap(), &ann).await["status"], "completed");
    let found = open
        .post_json("/knowledge/search", &json!({"query": "pilots harbor", "search_type": "keyword"}), Some(&ann))
        .await;
    assert_eq!(names(&found.body), ["harbor.txt"], "{}", found.body);
    let r = open.post_form("/knowledge/content", &[("url", "http://127.0.0.1:9/gone.txt")], Some(&ann)).await;
    let status = settled(&open, r.body["id"].as_str().unwrap(), &ann).await;
    assert!(
        status["status"] == "failed" && status["status_message"].as_str().unwrap().contains("cannot download"),
        "{status}"
    );
    // Search input errors.
    let r = os.post_json("/knowledge/search", &json!({"query": "x", "search_type": "semantic"}), Some(&ann)).await;
    assert_eq!(r.status, 422);
    let r = os.post_json("/knowledge/search", &json!({"query": "x", "filters": "kind = 1"}), Some(&ann)).await;
    assert_eq!(r.status, 422, "filters are an object: {}", r.body);
    assert_eq!(os.post_json("/knowledge/search", &json!({}), Some(&ann)).await.status, 422);
    let r = os.get("/knowledge/content?knowledge_id=nope", Some(&ann)).await;
    assert_eq!((r.status, detail(&r.body)), (404, "Knowledge base 'nope' not found".to_owned()));
    // /config lists the base as Python lists its knowledge instances.
    let admin = token("root", &["agent_os:admin"]);
    let os_config = os.get("/config", Some(&admin)).await;
    let instance = &os_config.body["knowledge"]["knowledge_instances"][0];
    assert_eq!(
        (&instance["id"], &instance["name"], &instance["table"]),
        (&json!("docs"), &json!("docs"), &json!("agno_knowledge"))
    );
    assert_eq!(os_config.body["knowledge"]["dbs"][0]["tables"], json!(["agno_knowledge"]));
    let cfg = os.get("/knowledge/config", Some(&ann)).await;
    assert_eq!(cfg.status, 200);
    assert_eq!(cfg.body["vector_dbs"][0]["search_types"], json!(["vector", "keyword", "hybrid"]));
}

/// A replica that died between committing an upload's `processing` row and its ingestion job
/// leaves a content no worker will ever take: the queue's repairs fail it with the reason once it
/// is older than the lease grace, and leave alone the contents whose ingestion is queued.
#[tokio::test]
async fn an_upload_whose_job_was_never_committed_ends_failed_with_the_reason() {
    let os = TestOs::start(config(
        r#"
[db]
url = "memory://"
[queue]
poll_interval_ms = 50
lock_grace_seconds = 2
[[knowledge]]
id = "docs"
embedder = "hash:64"
"#,
    ))
    .await;
    let db = os.os.state.db.clone().unwrap();
    // The row an upload commits first, without the job that would have followed it.
    let orphan: agno_core::KnowledgeRow = serde_json::from_value(json!({
        "id": "orphan-upload", "name": "orphan.md", "description": "", "linked_to": "docs", "status": "processing",
    }))
    .unwrap();
    db.upsert_knowledge_content(&orphan).await.unwrap();
    // An upload made the whole way ends completed, as ever.
    let r = os.post_file("/knowledge/content", &[], ("kept.md", b"# Kept\nbody".to_vec()), None).await;
    assert_eq!(r.status, 202, "{}", r.body);
    let kept = r.body["id"].as_str().unwrap().to_owned();

    let deadline = Instant::now() + Duration::from_secs(30);
    let ended = loop {
        let r = os.get("/knowledge/content/orphan-upload/status", None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        if r.body["status"] != "processing" {
            break r.body;
        }
        assert!(Instant::now() < deadline, "the orphaned upload is still processing: {}", r.body);
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(ended["status"], "failed", "{ended}");
    let why = ended["status_message"].as_str().unwrap();
    assert!(why.contains("never queued") && why.contains("upload it again"), "{why}");
    let r = os.get(&format!("/knowledge/content/{kept}/status"), None).await;
    assert_eq!(r.body["status"], "completed", "{}", r.body);
}

/// A `url` part is checked whenever it is sent, also beside a file (which wins), as the document
/// says: a URL, or Agno's JSON list of one URL.
#[tokio::test]
async fn an_upload_url_is_checked_even_beside_a_file() {
    let os = TestOs::start(config("[db]\nurl = \"memory://\"\n[[knowledge]]\nid = \"docs\"\nembedder = \"hash:64\"\n"))
        .await;
    for (url, why) in [
        ("[null, 1.5]", "a JSON list of one URL"),
        (r#"{"a": false}"#, "http:// or https://"),
        (r#"["https://a.example", "https://b.example"]"#, "one URL per upload"),
    ] {
        let r = os.post_file("/knowledge/content", &[("url", url)], ("a.md", b"# A".to_vec()), None).await;
        assert_eq!(r.status, 422, "{url}: {}", r.body);
        assert!(r.body.to_string().contains(why), "{url}: {}", r.body);
    }
    let r = os
        .post_file("/knowledge/content", &[("url", r#"["https://a.example"]"#)], ("a.md", b"# A".to_vec()), None)
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
}
