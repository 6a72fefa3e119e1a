//! What the process-level tests share: the `agno` binary, free ports, spawned `agno serve`
//! processes that are killed when a test ends, and scratch PostgreSQL schemas.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The `agno` binary under test, without provider settings from the environment.
pub fn agno() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agno"));
    cmd.env_remove("AGNO_MODEL").env_remove("OPENAI_API_KEY").env_remove("OPENAI_BASE_URL");
    cmd
}

/// Runs `agno <command> --config <config> <args>`: whether it succeeded, its stdout and stderr.
pub fn agno_command(command: &str, config: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = agno().arg(command).arg("--config").arg(config).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A TCP port free right now on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Waits (bounded) until `/health` answers on `port`.
pub async fn wait_healthy(port: u16) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if reqwest::get(format!("http://127.0.0.1:{port}/health")).await.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "agno serve did not become healthy");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A spawned `agno serve`, killed if a test ends (or panics) with it still running.
pub struct Served(pub std::process::Child);

impl std::ops::Deref for Served {
    type Target = std::process::Child;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Served {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Starts `agno serve --config` on a free port (stderr discarded) and waits until it is healthy.
pub async fn start_serve(config: &std::path::Path) -> (Served, u16) {
    let port = free_port();
    let child = agno()
        .args(["serve", "--config", config.to_str().unwrap(), "--port", &port.to_string()])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let child = Served(child);
    wait_healthy(port).await;
    (child, port)
}

/// `GET http://127.0.0.1:{port}{path}` as JSON.
pub async fn get_json(port: u16, path: &str) -> serde_json::Value {
    reqwest::get(format!("http://127.0.0.1:{port}{path}")).await.unwrap().json().await.unwrap()
}

/// A fresh schema on the test PostgreSQL, dropped when the guard goes out of scope.
pub struct PgSchema {
    pub url: String,
    name: String,
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        let [end, drop] = agno_testkit::services::drop_schema_statements(&self.name);
        let _ =
            Command::new("psql").args(["-h", "127.0.0.1", "-U", "postgres", "test", "-c", &end, "-c", &drop]).output();
    }
}

/// A scratch schema on the test PostgreSQL (`AGNO_TEST_POSTGRES_URL` to point elsewhere), or
/// `None` when PostgreSQL is not running here: the test is then skipped (failing under `CI=true`).
pub fn postgres_schema(tag: &str) -> Option<PgSchema> {
    if !agno_testkit::services::postgres(&format!("agno-cli test on PostgreSQL ({tag})")) {
        return None;
    }
    let base = std::env::var("AGNO_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".to_owned());
    let sep = if base.contains('?') { '&' } else { '?' };
    let name = format!("agno_cli_{tag}_{}", &agno::core::new_id().replace('-', "")[..12]);
    Some(PgSchema { url: format!("{base}{sep}schema={name}"), name })
}

/// Starts `agno serve --config` on a free port with its stderr written to `log`, and waits until
/// it is healthy.
pub async fn start_serve_logged(config: &std::path::Path, log: &std::path::Path) -> (Served, u16) {
    start_serve_with_env(config, log, &[]).await
}

/// As [`start_serve_logged`], with extra environment variables for the server.
pub async fn start_serve_with_env(
    config: &std::path::Path,
    log: &std::path::Path,
    env: &[(&str, &str)],
) -> (Served, u16) {
    let port = free_port();
    let child = agno()
        .args(["serve", "--config", config.to_str().unwrap(), "--port", &port.to_string()])
        .envs(env.iter().copied())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let child = Served(child);
    wait_healthy(port).await;
    (child, port)
}

/// A config serving agent `slow` on the fake OpenAI server at `base_url`, storing in `db_url`,
/// with `extra` TOML appended (it may open `[os]` or `[queue]`).
pub fn slow_agent_config(
    dir: &std::path::Path,
    name: &str,
    db_url: &str,
    base_url: &str,
    extra: &str,
) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "{extra}\n[db]\nurl = \"{db_url}\"\n[[agents]]\nid = \"slow\"\n\
             model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{base_url}\", api_key = \"sk-test\" }}\n"
        ),
    )
    .unwrap();
    path
}

/// Sends SIGTERM to `child`.
pub fn sigterm(child: &std::process::Child) {
    signal(child, "TERM");
}

/// Sends the signal `name` (`TERM`, `INT`, ...) to `child`.
pub fn signal(child: &std::process::Child, name: &str) {
    let status = Command::new("kill").args([&format!("-{name}"), &child.id().to_string()]).status().unwrap();
    assert!(status.success(), "kill -{name} failed");
}

/// Waits until `child` exits, at most `limit`; returns its status and how long it took.
pub async fn wait_exit(child: &mut std::process::Child, limit: Duration) -> (std::process::ExitStatus, Duration) {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, started.elapsed());
        }
        assert!(started.elapsed() < limit, "agno serve was still running {limit:?} after SIGTERM");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A scratch directory under the system temp dir, unique to this process and `tag`.
pub fn scratch_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("agno-{tag}-{}-{}", std::process::id(), agno::core::new_id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A file of this repository, by its path from the root.
pub fn repo_file(path: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

/// Waits (bounded) until `GET url` answers 200.
pub async fn wait_ready(url: &str, what: &str, log: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if reqwest::get(url).await.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not start: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Starts `scripts/interop/python_agentos.py` on a free port with its database at `db_url`
/// (plus `extra` arguments), models on the fake provider (also for models named by string in
/// requests, as `/optimize-memories` does), and waits until it is healthy.
pub async fn start_python_agentos(
    python: &str,
    provider: &agno_testkit::FakeProvider,
    dir: &std::path::Path,
    db_url: &str,
    extra: &[std::ffi::OsString],
) -> (Served, String) {
    start_python_agentos_with_env(python, provider, dir, db_url, extra, &[]).await
}

/// [`start_python_agentos`] with extra environment variables (`OS_SECURITY_KEY`, ...).
pub async fn start_python_agentos_with_env(
    python: &str,
    provider: &agno_testkit::FakeProvider,
    dir: &std::path::Path,
    db_url: &str,
    extra: &[std::ffi::OsString],
    env: &[(&str, &str)],
) -> (Served, String) {
    let port = free_port();
    let log = dir.join("python.log");
    let child = Command::new(python)
        .arg(repo_file("scripts/interop/python_agentos.py"))
        .args(["--port", &port.to_string(), "--model-base-url", &provider.base_url(), "--db", db_url])
        .args(extra)
        .envs([("OPENAI_BASE_URL", provider.base_url()), ("OPENAI_API_KEY", "sk-test".to_owned())])
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let served = Served(child);
    let base = format!("http://127.0.0.1:{port}");
    wait_ready(&format!("{base}/health"), "Python AgentOS", &log).await;
    (served, base)
}
