//! Remote knowledge sources against a real S3-protocol server on loopback (moto, signatures
//! checked): the sources and their files are listed, a folder's objects are ingested through the
//! durable queue (one content each), a refresh re-ingests only the object that changed (its ETag),
//! and wrong credentials, a missing bucket or object and unknown sources are precise 4xx with
//! nothing stored.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use agno_testkit::moto::Moto;
use common::{TestOs, config, detail};
use serde_json::json;

/// moto with signatures checked and bucket `kb-docs` seeded.
fn start_moto(python: &str) -> Moto {
    let moto = Moto::start(python);
    moto.create_bucket("kb-docs");
    moto.put("kb-docs", "docs/a.txt", "alpha apples are red");
    moto.put("kb-docs", "docs/sub/b.md", "# Beta\n\nbananas are yellow");
    moto.put("kb-docs", "other/c.txt", "cherries");
    moto
}

fn os_config(moto: &Moto, db_url: &str) -> String {
    format!(
        "[db]\nurl = \"{db_url}\"\n[queue]\npoll_interval_ms = 50\n[[knowledge]]\nid = \"docs\"\n{}{}{}",
        moto.source_toml("bucket", "kb-docs", &moto.secret),
        moto.source_toml("badkeys", "kb-docs", "not-the-secret"),
        moto.source_toml("nobucket", "missing", &moto.secret)
    )
}

/// Waits until content `id` is no longer `processing`; its status.
async fn settled(os: &TestOs, id: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = os.get(&format!("/knowledge/content/{id}/status"), None).await;
        let status = r.body["status"].as_str().unwrap_or_default().to_owned();
        if status != "processing" {
            return status;
        }
        if Instant::now() > deadline {
            let jobs = os.get("/queue/jobs?limit=100", None).await.body;
            panic!("content {id} still processing: {}; jobs: {jobs}", r.body);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn search(os: &TestOs, query: &str) -> Vec<String> {
    let r = os.post_json("/knowledge/search", &json!({"query": query}), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["data"].as_array().unwrap().iter().map(|d| d["content"].as_str().unwrap_or_default().to_owned()).collect()
}

async fn ingest_jobs(os: &TestOs) -> usize {
    let r = os.get("/queue/jobs?limit=100", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["data"].as_array().unwrap().iter().filter(|j| j["job_type"] == "ingest").count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_is_listed_ingested_and_refreshed_object_by_object() {
    let Some(python) = agno_testkit::moto_python("remote knowledge sources on an S3 server") else { return };
    let moto = start_moto(&python);
    let os = TestOs::start(config(&os_config(&moto, &common::sqlite_url("remote-knowledge")))).await;

    let r = os.get("/knowledge/docs/sources", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body[0],
        json!({"id": "bucket", "name": "bucket source", "type": "s3", "metadata": {"team": "kb"}, "prefix": null})
    );
    assert_eq!(r.body.as_array().unwrap().len(), 3);
    let config = os.get("/knowledge/config", None).await.body;
    assert_eq!(config["remote_content_sources"].as_array().map(Vec::len), Some(3), "{config}");

    let r = os.get("/knowledge/docs/sources/bucket/files?prefix=docs/", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["folders"], json!([{"prefix": "docs/sub/", "name": "sub", "is_empty": false}]));
    let files = r.body["files"].as_array().unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(
        (files[0]["key"].as_str(), files[0]["name"].as_str(), files[0]["size"].as_u64()),
        (Some("docs/a.txt"), Some("a.txt"), Some(20))
    );
    assert_eq!(files[0]["content_type"], "text/plain");
    let all = os.get("/knowledge/docs/sources/bucket/files?delimiter=&limit=2&page=2", None).await.body;
    assert_eq!((all["meta"]["total_count"].as_u64(), all["files"].as_array().unwrap().len()), (Some(3), 1), "{all}");
    for (path, status, why) in [
        ("/knowledge/docs/sources/badkeys/files", 401, "Invalid or missing AWS credentials"),
        ("/knowledge/docs/sources/nobucket/files", 404, "Bucket 'missing' does not exist"),
        ("/knowledge/docs/sources/ghost/files", 404, "Content source not found: ghost"),
        ("/knowledge/nope/sources", 404, "Knowledge base 'nope' not found"),
        ("/knowledge/docs/sources/bucket/files?limit=1001", 422, "limit"),
    ] {
        let r = os.get(path, None).await;
        assert_eq!(r.status, status, "{path}: {}", r.body);
        assert!(detail(&r.body).contains(why), "{path}: {}", r.body);
    }

    // Bad uploads store nothing.
    for (fields, status, why) in [
        (vec![("config_id", "ghost"), ("path", "docs/")], 400, "Unknown content source: ghost"),
        (vec![("config_id", "bucket")], 422, "path"),
        (vec![("config_id", "badkeys"), ("path", "docs/")], 401, "credentials"),
        (vec![("config_id", "nobucket"), ("path", "docs/")], 404, "does not exist"),
        (vec![("config_id", "bucket"), ("path", "docs/nope.txt")], 404, "does not exist"),
    ] {
        let r = os.post_form("/knowledge/remote-content", &fields, None).await;
        assert_eq!(r.status, status, "{fields:?}: {}", r.body);
        assert!(detail(&r.body).contains(why), "{fields:?}: {}", r.body);
    }
    assert_eq!(os.get("/knowledge/content", None).await.body["meta"]["total_count"], 0, "nothing stored");

    // A folder: one content per object, ingested through the queue.
    let r = os
        .post_form("/knowledge/remote-content", &[("config_id", "bucket"), ("path", "docs/"), ("name", "Docs")], None)
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    let contents: Vec<(String, String)> = r.body["contents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap().to_owned(), c["name"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(contents.iter().map(|c| c.1.as_str()).collect::<Vec<_>>(), ["Docs/a.txt", "Docs/sub/b.md"]);
    let r = os.post_form("/knowledge/remote-content", &[("config_id", "bucket"), ("path", "other/c.txt")], None).await;
    assert_eq!((r.status, r.body["name"].as_str()), (202, Some("other/c.txt")), "{}", r.body);
    let single = r.body["id"].as_str().unwrap().to_owned();
    let mut ids: Vec<String> = contents.iter().map(|c| c.0.clone()).collect();
    ids.push(single);
    for id in &ids {
        assert_eq!(settled(&os, id).await, "completed", "{id}");
    }
    let row = os.get(&format!("/knowledge/content/{}", ids[0]), None).await.body;
    assert_eq!(row["metadata"]["_agno"]["s3_object_name"], "docs/a.txt", "{row}");
    assert!(search(&os, "bananas").await.iter().any(|c| c.contains("bananas are yellow")));
    let jobs_after_ingest = ingest_jobs(&os).await;
    assert_eq!(jobs_after_ingest, 3);

    // Refresh: nothing changed, nothing re-ingested; then one object changes.
    for id in &ids {
        let r = os.post_form(&format!("/knowledge/content/{id}/refresh"), &[], None).await;
        assert_eq!((r.status, r.body["status"].as_str()), (200, Some("completed")), "{}", r.body);
    }
    assert_eq!(ingest_jobs(&os).await, jobs_after_ingest, "an unchanged object is left alone");
    moto.put("kb-docs", "docs/a.txt", "alpha apricots are orange");
    let mut reingested = 0;
    for id in &ids {
        let r = os.post_form(&format!("/knowledge/content/{id}/refresh"), &[], None).await;
        assert!([200, 202].contains(&r.status), "{}", r.body);
        if r.status == 202 {
            reingested += 1;
            assert_eq!(id, &ids[0], "only the changed object");
        }
    }
    assert_eq!(settled(&os, &ids[0]).await, "completed");
    let jobs_after_refresh = ingest_jobs(&os).await;
    eprintln!(
        "remote source: {} objects ingested; after one object changed, refresh re-ingested {reingested} of {} \
         (ingest jobs {jobs_after_ingest} -> {jobs_after_refresh})",
        ids.len(),
        ids.len()
    );
    assert_eq!((reingested, jobs_after_refresh), (1, jobs_after_ingest + 1));
    let found = search(&os, "apricots").await;
    assert!(found.iter().any(|c| c.contains("apricots")), "{found:?}");
    assert!(search(&os, "apples").await.iter().all(|c| !c.contains("apples")), "the old text is gone");
    let r = os.post_form("/knowledge/content/nope/refresh", &[], None).await;
    assert_eq!(r.status, 404);
}
