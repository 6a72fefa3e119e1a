//! `GET /sessions/{session_id}/media/{storage_key}`: media a Python Agno 3.1 agent offloaded to
//! its `LocalMediaStorage` is served by agno-rs from the same database and directory, byte for
//! byte, with Python AgentOS's headers; keys of other sessions, outside the directory or of
//! another backend are 404; another user's session is 404 under isolation; without
//! `[media_storage]` the route answers 503.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use agno_testkit::{FakeProvider, Reply as Scripted};
use base64::Engine;
use common::{SECRET, TestOs, config, detail, token};
use serde_json::Value;

fn interop_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/agno_interop.py")
}

/// The `media_reference` of the first input image of a stored run.
fn reference(run: &Value) -> &Value {
    &run["input"]["images"][0]["media_reference"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn media_python_agno_offloaded_is_served_from_the_same_directory() {
    let Some(py) = agno_testkit::agno_python("agno-rs serves media Python Agno offloaded") else { return };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Scripted::text("a pixel")));
    let dir = std::env::temp_dir().join(format!("agno-os-media-{}", agno_core::new_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (db_file, media_dir) = (dir.join("shared.db"), dir.join("media"));
    let out = Command::new(&py)
        .arg(interop_script())
        .args([
            "media-run",
            db_file.to_str().unwrap(),
            "pics",
            &provider.base_url(),
            media_dir.to_str().unwrap(),
            "alice",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let written: Value = serde_json::from_str(stdout.lines().rev().find(|l| l.starts_with('{')).unwrap()).unwrap();
    let png = base64::engine::general_purpose::STANDARD.decode(written["png"].as_str().unwrap()).unwrap();
    let r = reference(&written["run"]);
    assert_eq!(r["storage_backend"], "local", "Python offloaded the image: {r}");
    let key = r["storage_key"].as_str().unwrap().to_owned();

    let db_url = format!("sqlite://{}", db_file.display());
    let media = format!("[media_storage]\npath = \"{}\"\n", media_dir.display());
    let os = TestOs::start(config(&format!("[db]\nurl = \"{db_url}\"\n{media}"))).await;
    let got = os.get(&format!("/sessions/pics/media/{key}"), None).await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    assert_eq!(got.headers["content-type"], "image/png");
    assert_eq!(got.headers["x-content-type-options"], "nosniff");
    let raw = reqwest::get(format!("{}/sessions/pics/media/{key}?type=agent&user_id=alice", os.base)).await.unwrap();
    assert_eq!(raw.bytes().await.unwrap().as_ref(), png.as_slice(), "the bytes Python stored");
    // A `type` other than the session's does not narrow the lookup, as in Python AgentOS 3.1.10
    // (compared with it in crates/agno-cli/tests/parity.rs).
    assert_eq!(os.get(&format!("/sessions/pics/media/{key}?type=team"), None).await.status, 200);

    for (path, status, says) in [
        (format!("/sessions/nope/media/{key}"), 404, "Session 'nope' not found".to_owned()),
        ("/sessions/pics/media/not-a-key.png".to_owned(), 404, "Media not found in this session".to_owned()),
        ("/sessions/pics/media/..%2F..%2Fetc%2Fpasswd".to_owned(), 404, "Media not found in this session".to_owned()),
        (
            format!("/sessions/pics/media/{key}?type=robot"),
            422,
            "Input should be 'agent', 'team' or 'workflow'".to_owned(),
        ),
    ] {
        let r = os.get(&path, None).await;
        assert_eq!(r.status, status, "{path}: {:?}", r.body);
        assert!(detail(&r.body).contains(&says), "{path}: {}", detail(&r.body));
    }
    // The object gone from the directory: 404, not a 500.
    std::fs::rename(media_dir.join(&key), dir.join("moved")).unwrap();
    let r = os.get(&format!("/sessions/pics/media/{key}"), None).await;
    assert_eq!((r.status, detail(&r.body)), (404, "Media object not found".to_owned()));
    std::fs::rename(dir.join("moved"), media_dir.join(&key)).unwrap();
    drop(os);

    // Another directory is another bucket: the reference is not its to serve.
    let other = format!("[media_storage]\npath = \"{}\"\n", dir.join("other").display());
    let os = TestOs::start(config(&format!("[db]\nurl = \"{db_url}\"\n{other}"))).await;
    let r = os.get(&format!("/sessions/pics/media/{key}"), None).await;
    assert_eq!((r.status, detail(&r.body)), (404, "Media is not served by the configured storage backend".to_owned()));
    drop(os);

    // Under isolation only the session's owner reads it.
    let jwt = format!(
        "[auth]\nmode = \"jwt\"\nverification_keys = [{}]\nuser_isolation = true\n[db]\nurl = \"{db_url}\"\n{media}",
        serde_json::to_string(SECRET).unwrap()
    );
    let os = TestOs::start(config(&jwt)).await;
    let (alice, bob) = (token("alice", &["sessions:read"]), token("bob", &["sessions:read"]));
    assert_eq!(os.get(&format!("/sessions/pics/media/{key}"), Some(&alice)).await.status, 200);
    for path in [format!("/sessions/pics/media/{key}"), format!("/sessions/pics/media/{key}?user_id=alice")] {
        let r = os.get(&path, Some(&bob)).await;
        assert_eq!(r.status, 404, "{path}: {:?}", r.body);
    }
    drop(os);

    // Without [media_storage]: 503, as Python AgentOS without a media storage.
    let os = TestOs::start(config(&format!("[db]\nurl = \"{db_url}\"\n"))).await;
    let r = os.get(&format!("/sessions/pics/media/{key}"), None).await;
    assert_eq!((r.status, detail(&r.body)), (503, "Media storage is not configured on AgentOS".to_owned()));
}
