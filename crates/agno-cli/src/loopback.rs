//! What the commands that go through the OS's own routes in process (`agno schedule`, `agno
//! component`) share: one call, answered with its JSON or with the route's reason as the error.

use std::path::Path;

use agno_os::app::AgentOs;
use agno_os::config::OsConfig;
use agno_os::scheduler::Executor;
use anyhow::{Context, Result, bail};
use axum::http::{Method, StatusCode};
use serde_json::Value;

/// The OS of `config` and an executor over its routes; an error saying what to add when the
/// config has no database (`kept`: what the command keeps there, "schedules are stored").
pub(crate) async fn open(config: &Path, kept: &str) -> Result<(AgentOs, Executor)> {
    let loaded = OsConfig::load(config).with_context(|| format!("cannot load {}", config.display()))?;
    if loaded.db.is_none() {
        bail!("{} has no [db]: {kept} in the OS database; add [db] url = \"sqlite://agno.db\"", config.display());
    }
    let os = AgentOs::from_config(&loaded).await?;
    let executor = Executor::new(&os.state, std::time::Duration::from_millis(200));
    Ok((os, executor))
}

/// Calls `method uri` with `body` as `user`; the answer's JSON, or an error with the route's
/// `detail` (a 404 adds `hint`, the command that lists what exists).
pub(crate) async fn call(
    executor: &Executor,
    method: Method,
    uri: &str,
    body: Option<Value>,
    user: Option<&str>,
    hint: &str,
) -> Result<Value> {
    let (status, text) = executor.request(&method, uri, body, user).await.map_err(anyhow::Error::msg)?;
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    if !status.is_success() {
        let detail = match &body["detail"] {
            Value::String(s) => s.clone(),
            Value::Array(items) => items.iter().filter_map(|i| i["msg"].as_str()).collect::<Vec<_>>().join("; "),
            _ => body.to_string(),
        };
        let hint = if status == StatusCode::NOT_FOUND { format!(" (see `{hint}`)") } else { String::new() };
        bail!("{detail}{hint}");
    }
    Ok(body)
}

/// A JSON value as a line of text shows it: a string as itself, anything else as JSON.
pub(crate) fn text(v: &serde_json::Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}
