//! `agno component`: the components an AgentOS keeps in its database, from the terminal. Every
//! command goes through the OS's own `/components` routes, in process (the same checks, rules and
//! answers as over HTTP), on the database of `--config`; a replica serving that database picks
//! up what is published.
//!
//! `publish FILE` takes the tables `agentos.toml` has (`[[agents]]`, `[[teams]]`,
//! `[[workflows]]`, in TOML, YAML or JSON): one config schema for the file and the catalog.

use std::path::Path;

use agno_os::scheduler::Executor;
use anyhow::{Context, Result, bail};
use axum::http::Method;
use serde_json::{Map, Value, json};

use crate::cli::{ComponentArgs, ComponentCommand};
use crate::loopback::text;

pub(crate) async fn component(args: ComponentArgs) -> Result<()> {
    let (_os, executor) = crate::loopback::open(&args.config, "components are kept").await?;
    let user = args.user.as_deref();
    match args.command {
        ComponentCommand::List { component_type, archived } => {
            let mut rows = Vec::new();
            for page in 1.. {
                let mut uri = format!("/components?limit=100&page={page}&include_deleted={archived}");
                if let Some(t) = &component_type {
                    uri.push_str(&format!("&component_type={t}"));
                }
                let body = call(&executor, Method::GET, &uri, None, user).await?;
                let data = body["data"].as_array().cloned().unwrap_or_default();
                let done = data.len() < 100;
                rows.extend(data);
                if done {
                    break;
                }
            }
            if rows.is_empty() {
                println!("no components{}", user.map(|u| format!(" of {u}")).unwrap_or_default());
                return Ok(());
            }
            println!("{:<32}  {:<9}  {:<28}  {:<8}  {:<10}  OWNER", "ID", "TYPE", "NAME", "CURRENT", "STATE");
            for c in rows {
                println!(
                    "{:<32}  {:<9}  {:<28}  {:<8}  {:<10}  {}",
                    text(&c["component_id"]),
                    text(&c["component_type"]),
                    text(&c["name"]),
                    c["current_version"].as_i64().map_or_else(|| "-".to_owned(), |v| format!("v{v}")),
                    if c["deleted_at"].is_null() { "live" } else { "archived" },
                    c["user_id"].as_str().unwrap_or("(shared)"),
                );
            }
            Ok(())
        }
        ComponentCommand::Get { id, at } => {
            let c = call(&executor, Method::GET, &format!("/components/{id}?include_deleted=true"), None, user).await?;
            let which = at.map_or_else(|| "current".to_owned(), |v| v.to_string());
            let config = call(&executor, Method::GET, &format!("/components/{id}/configs/{which}"), None, user).await?;
            let versions =
                call(&executor, Method::GET, &format!("/components/{id}/configs?include_config=false"), None, user)
                    .await?;
            println!(
                "{}",
                serde_json::to_string_pretty(&json!({"component": c, "config": config, "versions": versions}))?
            );
            Ok(())
        }
        ComponentCommand::Publish { file } => {
            for (kind, table) in tables(&file)? {
                let id = table.get("id").and_then(Value::as_str).map(str::to_owned).with_context(|| {
                    format!("a [[{kind}s]] table of {} has no id: every component needs one", file.display())
                })?;
                let (version, created) = publish(&executor, kind, &id, &table, user).await?;
                let how = if created { "created and published" } else { "published" };
                println!("{how} {kind} {id} v{version} (now current)");
            }
            Ok(())
        }
        ComponentCommand::Rollback { id, to } => {
            let c = call(
                &executor,
                Method::POST,
                &format!("/components/{id}/configs/{to}/set-current"),
                Some(json!({})),
                user,
            )
            .await?;
            println!("{id} now serves v{} ({})", c["current_version"], text(&c["name"]));
            Ok(())
        }
    }
}

/// The component tables of `file` (`[[agents]]`, `[[teams]]`, `[[workflows]]`), with their kind.
fn tables(file: &Path) -> Result<Vec<(&'static str, Map<String, Value>)>> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let doc: Value = match file.extension().and_then(|e| e.to_str()) {
        Some("json") => serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?,
        Some("yaml" | "yml") => {
            yaml_serde::from_str(&text).with_context(|| format!("{} is not YAML", file.display()))?
        }
        _ => serde_json::to_value(
            toml::from_str::<toml::Value>(&text).with_context(|| format!("{} is not TOML", file.display()))?,
        )?,
    };
    let mut out = Vec::new();
    for (key, kind) in [("agents", "agent"), ("teams", "team"), ("workflows", "workflow")] {
        for t in doc.get(key).and_then(Value::as_array).into_iter().flatten() {
            let Value::Object(t) = t else { bail!("{}: each [[{key}]] entry must be a table", file.display()) };
            out.push((kind, t.clone()));
        }
    }
    if out.is_empty() {
        bail!("{} holds no [[agents]], [[teams]] or [[workflows]] table to publish", file.display());
    }
    Ok(out)
}

/// Publishes `table` as component `id` of `kind`: a new published version of an existing
/// component, or a new component published at once; its version, and whether it was created.
async fn publish(
    executor: &Executor,
    kind: &str,
    id: &str,
    table: &Map<String, Value>,
    user: Option<&str>,
) -> Result<(i64, bool)> {
    let (status, _) =
        executor.request(&Method::GET, &format!("/components/{id}"), None, user).await.map_err(anyhow::Error::msg)?;
    if status.is_success() {
        let body = json!({"config": table, "stage": "published"});
        let written = call(executor, Method::POST, &format!("/components/{id}/configs"), Some(body), user).await?;
        return Ok((written["version"].as_i64().unwrap_or_default(), false));
    }
    let body = json!({
        "component_id": id,
        "component_type": kind,
        "name": table.get("name").and_then(Value::as_str).unwrap_or(id),
        "description": table.get("description"),
        "config": table,
        "stage": "published",
    });
    let created = call(executor, Method::POST, "/components", Some(body), user).await?;
    Ok((created["current_version"].as_i64().unwrap_or(1), true))
}

async fn call(
    executor: &Executor,
    method: Method,
    uri: &str,
    body: Option<Value>,
    user: Option<&str>,
) -> Result<Value> {
    crate::loopback::call(executor, method, uri, body, user, "agno component list").await
}
