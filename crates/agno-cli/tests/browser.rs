//! A real browser on another origin drives `agno serve`, as Agent UI and the control plane do:
//! headless Chromium (Debian's `chromium`) through `playwright-core` (npm; no browser download)
//! loads `scripts/browser/cors_page.html` from a second local server and calls the OS with
//! Agent UI's requests: JSON-typed GETs (preflighted), bearer tokens (also on a credentialed
//! request, `credentials: "include"`, as Agent UI and os.agno.com send), a multipart run, a streamed
//! run read as SSE, an error it must be able to read, a session read and delete. The same page
//! against an OS that does not allow its origin must fail: CORS is what makes it work.
//!
//! Needs `/usr/bin/chromium` (or `CHROMIUM`) and playwright-core (`AGNO_PLAYWRIGHT_CORE`, else
//! `$HOME/.cache/agno-browser/node_modules/playwright-core`, where `.ci/run` installs it).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use agno_testkit::{FakeProvider, Reply};
use common::{scratch_dir, slow_agent_config, start_serve_logged};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn repo_file(path: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

/// Serves `page` at `/` (whatever the path) on a free port of its own: the browser's origin.
async fn serve_page(page: String) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut conn, _)) = listener.accept().await else { return };
            let page = page.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut read = 0;
                while !buf[..read].windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf[read..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => read += n,
                    }
                    if read == buf.len() {
                        return;
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    page.len()
                );
                let _ = conn.write_all(head.as_bytes()).await;
                let _ = conn.write_all(page.as_bytes()).await;
            });
        }
    });
    port
}

/// Runs the page against the OS at `api_port` and returns what it recorded.
fn run_page(browser: &(String, String), page_port: u16, api_port: u16, token: &str) -> Value {
    let url = format!("http://127.0.0.1:{page_port}/?api=http://127.0.0.1:{api_port}&token={token}&agent=demo");
    let out = Command::new("node")
        .arg(repo_file("scripts/browser/cors_check.mjs"))
        .arg(&url)
        .env("CHROMIUM", &browser.0)
        .env("PLAYWRIGHT_CORE", &browser.1)
        .output()
        .expect("node (Node.js) must be installed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "cors_check.mjs failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

async fn os_for(dir: &std::path::Path, name: &str, provider: &FakeProvider, origins: &str) -> (common::Served, u16) {
    let url = format!("sqlite://{}", dir.join(format!("{name}.db")).display());
    let extra =
        format!("[os]\ncors_allowed_origins = [{origins}]\n[auth]\nmode = \"key\"\nsecurity_key = \"browser-key\"");
    let config = slow_agent_config(dir, &format!("{name}.toml"), &url, &provider.base_url(), &extra);
    let toml = std::fs::read_to_string(&config).unwrap().replace("id = \"slow\"", "id = \"demo\"");
    std::fs::write(&config, toml).unwrap();
    start_serve_logged(&config, &dir.join(format!("{name}.log"))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_on_another_origin_drives_the_os_in_chromium() {
    let Some(browser) = agno_testkit::browser("the browser test") else { return };
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::Echo));
    let dir = scratch_dir("browser");
    let page = std::fs::read_to_string(repo_file("scripts/browser/cors_page.html")).unwrap();
    let page_port = serve_page(page).await;
    let origin = format!("\"http://127.0.0.1:{page_port}\"");

    let (_allowed, port) = os_for(&dir, "allowed", &provider, &origin).await;
    let r = run_page(&browser, page_port, port, "browser-key");
    assert_eq!(r["health"]["status"], 200, "{r}");
    assert_eq!(r["health"]["body"]["status"], "ok", "{r}");
    assert_eq!(r["agents"]["status"], 200, "{r}");
    assert_eq!(r["agents"]["ids"], serde_json::json!(["demo"]), "{r}");
    assert_eq!(r["credentialed"]["status"], 200, "a credentialed request (credentials: include): {r}");
    assert_eq!(r["credentialed"]["ids"], serde_json::json!(["demo"]), "{r}");
    assert_eq!(r["unauthorized"]["status"], 401, "the error is readable by the page: {r}");
    assert_eq!(r["run"]["status"], 200, "{r}");
    assert_eq!(r["run"]["run_status"], "COMPLETED", "{r}");
    assert_eq!(r["run"]["content"], "echo: hello from the browser", "{r}");
    assert_eq!(r["stream"]["status"], 200, "{r}");
    assert_eq!(r["stream"]["content_type"], "text/event-stream; charset=utf-8", "{r}");
    let events: Vec<&str> = r["stream"]["events"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(events.first(), Some(&"RunStarted"), "{r}");
    assert_eq!(events.last(), Some(&"RunCompleted"), "{r}");
    assert!(events.contains(&"RunContent"), "{r}");
    assert_eq!(r["session_runs"]["status"], 200, "{r}");
    assert_eq!(r["session_runs"]["run_input"], "hello from the browser", "{r}");
    assert_eq!(r["delete_session"]["status"], 204, "{r}");

    // The same page against an OS that does not allow its origin: the browser blocks it all.
    let (_refused, port) = os_for(&dir, "refused", &provider, "\"http://localhost:3000\"").await;
    let r = run_page(&browser, page_port, port, "browser-key");
    for step in ["health", "agents", "credentialed", "unauthorized", "run", "stream"] {
        let error = r[step]["error"].as_str().unwrap_or_else(|| panic!("{step} went through without CORS: {r}"));
        assert!(error.contains("Failed to fetch"), "{step}: {error}");
    }
    let console = r["console"].to_string();
    assert!(console.contains("CORS"), "Chromium names CORS as the reason: {console}");
}
