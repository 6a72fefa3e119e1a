//! A real AgentOS on 127.0.0.1 (ephemeral port) for HTTP tests, with a reqwest client, form and
//! JSON helpers, an SSE reader and JWT minting.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use agno_os::app::AgentOs;
use agno_os::config::OsConfig;
use futures::StreamExt;
use serde_json::{Value, json};

/// A running server; stopped when dropped.
pub struct TestOs {
    pub base: String,
    pub client: reqwest::Client,
    pub os: AgentOs,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for TestOs {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// A reply: status, headers and body (JSON when it parses, else a string).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Reply {
    async fn from(resp: reqwest::Response) -> Self {
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Reply { status, headers, body }
    }
}

/// Parses a TOML config.
pub fn config(toml: &str) -> OsConfig {
    OsConfig::parse(toml, false, "test.toml").unwrap_or_else(|e| panic!("{e}"))
}

/// The HMAC secret the JWT test configs use.
pub const SECRET: &str = "test-secret-one-0123456789abcdef";
/// A second accepted HMAC secret (key rotation).
pub const SECRET2: &str = "test-secret-two-0123456789abcdef";

/// A JWT for `sub` with `scopes`, signed HS256 with `secret`, valid for an hour.
pub fn token_with(secret: &str, sub: &str, scopes: &[&str], extra: Value) -> String {
    let now = chrono::Utc::now().timestamp();
    let mut claims = json!({"sub": sub, "scopes": scopes, "exp": now + 3600, "iat": now});
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            claims[k] = v;
        }
    }
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()).unwrap(),
    )
    .unwrap()
}

/// A JWT for `sub` with `scopes`, signed with [`SECRET`].
pub fn token(sub: &str, scopes: &[&str]) -> String {
    token_with(SECRET, sub, scopes, json!({}))
}

impl TestOs {
    /// Starts an OS from `config` on an ephemeral port.
    pub async fn start(mut config: OsConfig) -> Self {
        config.os.port = 0;
        let os = AgentOs::from_config(&config).await.unwrap_or_else(|e| panic!("{e}"));
        let listener = agno_os::serve::bind(&os, "127.0.0.1:0".parse().unwrap(), false).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = os.clone();
        let task = tokio::spawn(async move {
            agno_os::serve::serve(&served, listener, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
        TestOs { base: format!("http://{addr}"), client, os, stop: Some(stop), task: Some(task) }
    }

    fn with_token(&self, req: reqwest::RequestBuilder, token: Option<&str>) -> reqwest::RequestBuilder {
        match token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Reply {
        let req = self.with_token(self.client.get(format!("{}{path}", self.base)), token);
        Reply::from(req.send().await.unwrap()).await
    }

    pub async fn delete(&self, path: &str, token: Option<&str>) -> Reply {
        let req = self.with_token(self.client.delete(format!("{}{path}", self.base)), token);
        Reply::from(req.send().await.unwrap()).await
    }

    pub async fn delete_json(&self, path: &str, body: &Value, token: Option<&str>) -> Reply {
        let req = self.with_token(self.client.delete(format!("{}{path}", self.base)).json(body), token);
        Reply::from(req.send().await.unwrap()).await
    }

    pub async fn post_json(&self, path: &str, body: &Value, token: Option<&str>) -> Reply {
        let req = self.with_token(self.client.post(format!("{}{path}", self.base)).json(body), token);
        Reply::from(req.send().await.unwrap()).await
    }

    pub async fn patch_json(&self, path: &str, body: &Value, token: Option<&str>) -> Reply {
        let req = self.with_token(self.client.patch(format!("{}{path}", self.base)).json(body), token);
        Reply::from(req.send().await.unwrap()).await
    }

    /// PATCHes an `application/x-www-form-urlencoded` form.
    pub async fn patch_form(&self, path: &str, fields: &[(&str, &str)], token: Option<&str>) -> Reply {
        let req = self.with_token(self.client.patch(format!("{}{path}", self.base)).form(fields), token);
        Reply::from(req.send().await.unwrap()).await
    }

    /// POSTs a multipart form.
    pub async fn post_form(&self, path: &str, fields: &[(&str, &str)], token: Option<&str>) -> Reply {
        let mut form = reqwest::multipart::Form::new();
        for (k, v) in fields {
            form = form.text((*k).to_owned(), (*v).to_owned());
        }
        let req = self.with_token(self.client.post(format!("{}{path}", self.base)).multipart(form), token);
        Reply::from(req.send().await.unwrap()).await
    }

    /// POSTs a multipart form with one file part `file` (name, bytes) beside text fields.
    pub async fn post_file(
        &self,
        path: &str,
        fields: &[(&str, &str)],
        file: (&str, Vec<u8>),
        token: Option<&str>,
    ) -> Reply {
        let mut form = reqwest::multipart::Form::new();
        for (k, v) in fields {
            form = form.text((*k).to_owned(), (*v).to_owned());
        }
        form = form.part("file", reqwest::multipart::Part::bytes(file.1).file_name(file.0.to_owned()));
        let req = self.with_token(self.client.post(format!("{}{path}", self.base)).multipart(form), token);
        Reply::from(req.send().await.unwrap()).await
    }

    /// POSTs a multipart form and reads the SSE answer to its end: `(name, data)` per event.
    pub async fn post_sse(
        &self,
        path: &str,
        fields: &[(&str, &str)],
        token: Option<&str>,
    ) -> (Reply, Vec<(String, Value)>) {
        let mut form = reqwest::multipart::Form::new();
        for (k, v) in fields {
            form = form.text((*k).to_owned(), (*v).to_owned());
        }
        let req = self.with_token(self.client.post(format!("{}{path}", self.base)).multipart(form), token);
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        if status != 200 {
            return (Reply::from(resp).await, Vec::new());
        }
        let mut events = Vec::new();
        let mut stream = eventsource_stream::EventStream::new(resp.bytes_stream());
        while let Some(ev) = stream.next().await {
            let ev = ev.unwrap();
            events.push((ev.event, serde_json::from_str(&ev.data).unwrap()));
        }
        (Reply { status, headers, body: Value::Null }, events)
    }
}

/// A fresh PostgreSQL schema (`AGNO_TEST_POSTGRES_URL`, default the local server's `test`
/// database), dropped at the end. `None` when PostgreSQL is not running here: the test is then
/// skipped (and fails under `CI=true`).
pub struct PgSchema {
    pub url: String,
    name: String,
}

impl PgSchema {
    pub fn new(tag: &str) -> Option<Self> {
        if !agno_testkit::services::postgres(&format!("agno-os test on PostgreSQL ({tag})")) {
            return None;
        }
        let base = std::env::var("AGNO_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".to_owned());
        let sep = if base.contains('?') { '&' } else { '?' };
        let name = format!("agno_os_{tag}_{}", &agno_core::new_id().replace('-', "")[..12]);
        Some(Self { url: format!("{base}{sep}schema={name}"), name })
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        let [end, drop] = agno_testkit::services::drop_schema_statements(&self.name);
        let _ = std::process::Command::new("psql")
            .args(["-h", "127.0.0.1", "-U", "postgres", "test", "-c", &end, "-c", &drop])
            .output();
    }
}

#[allow(unused_imports)]
pub use agno_testkit::services::MySqlDatabase;

/// A fresh key prefix on the test Redis (`AGNO_TEST_REDIS_URL`, default the local server's db 0),
/// whose keys are deleted at the end. `None` when Redis is not running here: the test is then
/// skipped (and fails under `CI=true`).
pub struct RedisPrefix {
    pub url: String,
    base: String,
    prefix: String,
}

impl RedisPrefix {
    pub fn new(tag: &str) -> Option<Self> {
        if !agno_testkit::services::redis(&format!("agno-os test on Redis ({tag})")) {
            return None;
        }
        let base = std::env::var("AGNO_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".to_owned());
        let prefix = format!("agno-os-test-{tag}-{}", agno_core::new_id());
        let sep = if base.contains('?') { '&' } else { '?' };
        Some(Self { url: format!("{base}{sep}prefix={prefix}"), base, prefix })
    }
}

impl Drop for RedisPrefix {
    fn drop(&mut self) {
        let (base, prefix) = (self.base.clone(), self.prefix.clone());
        // Drop runs inside the test's runtime: a thread with its own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                if let Ok(db) = agno_db::RedisDb::connect_with(&base, &prefix).await {
                    let _ = db.delete_all_keys().await;
                }
            });
        })
        .join();
    }
}

/// A fresh SQLite file under the system temp dir.
pub fn sqlite_url(tag: &str) -> String {
    let dir = std::env::temp_dir().join("agno-os-tests");
    std::fs::create_dir_all(&dir).unwrap();
    format!("sqlite://{}", dir.join(format!("{tag}-{}.db", agno_core::new_id())).display())
}

/// The text of an error's `detail`: the string itself, or for a 422 (FastAPI's list of
/// `{type, loc, msg}`) each `loc: msg`, joined.
pub fn detail(body: &Value) -> String {
    match &body["detail"] {
        Value::String(s) => s.clone(),
        Value::Array(errors) => errors
            .iter()
            .map(|e| {
                let loc: Vec<String> = e["loc"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|l| l.as_str().unwrap_or_default().to_owned())
                    .collect();
                format!("{}: {}", loc.join("."), e["msg"].as_str().unwrap_or_default())
            })
            .collect::<Vec<_>>()
            .join("; "),
        other => panic!("no detail in {other:?} ({body})"),
    }
}

/// Runs a client we did not write (a Python or Node script that prints one JSON line last)
/// within `limit`, and returns that line as JSON with the client's stderr. Panics, showing the
/// client's output, when it prints no JSON or fails.
pub async fn client_json(mut command: tokio::process::Command, limit: Duration) -> (Value, String) {
    let run = command.kill_on_drop(true).output();
    let out = tokio::time::timeout(limit, run).await.expect("the client ends in time").unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let result: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("no JSON line ({e}): {stdout}\n{stderr}"));
    assert!(out.status.success(), "the client failed: {result}\n{stderr}");
    (result, stderr)
}

/// The scopes a caller needs for a route: its table scope, plus run access for reading an
/// agent's runs (Agno's `require_resource_access(agents, run)` on those routes) and read access to
/// agents for browsing their filesystems.
pub fn route_scopes<'a>(path: &str, scope: &'a str) -> Vec<&'a str> {
    if path.starts_with("/agents/{agent_id}/runs") && scope == "agents:read" {
        vec![scope, "agents:run"]
    } else if path.starts_with("/filesystem/") {
        // A store is found through the agents the caller may read (as Agno: 403 without any).
        vec![scope, "agents:read"]
    } else {
        vec![scope]
    }
}
