//! `GET /registry`: what a component in the database may be built from, as Python AgentOS 3.1's
//! `RegistryContentResponse` lists it: the built-in toolkits (each with its functions), the
//! models the OS's agents use, its database, its knowledge bases, and the agents, teams and
//! workflows it serves from its configuration. Sorted by type, then name; filtered by type and
//! name (a case-insensitive part of it); paged.

use axum::Json;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::params::Paging;
use crate::error::{ApiError, ApiResult};
use crate::routes::guard::Caller;
use crate::routes::query::Query;
use crate::state::AppState;

/// Agno's `RegistryResourceType` values.
const RESOURCE_TYPES: [&str; 13] = [
    "tool",
    "model",
    "db",
    "vector_db",
    "schema",
    "function",
    "agent",
    "team",
    "workflow",
    "knowledge",
    "memory_manager",
    "session_summary_manager",
    "learning",
];

/// The built-in toolkits a component may name without options of their own.
const TOOLKITS: [&str; 4] = ["calculator", "file", "http", "shell"];

/// Query of `GET /registry`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RegistryQuery {
    /// Only this kind of resource.
    resource_type: Option<String>,
    /// Only resources whose name holds this (any case).
    name: Option<String>,
    /// 1-based page.
    #[schemars(range(min = 1))]
    page: Option<usize>,
    /// Page size (1..100, default 20).
    #[schemars(range(min = 1, max = 100))]
    limit: Option<usize>,
}

fn entry(kind: &str, name: &str, id: Option<&str>, description: Option<&str>, metadata: Value) -> Value {
    let mut e = Map::new();
    e.insert("name".into(), json!(name));
    e.insert("type".into(), json!(kind));
    if let Some(id) = id {
        e.insert("id".into(), json!(id));
    }
    if let Some(d) = description {
        e.insert("description".into(), json!(d));
    }
    e.insert("metadata".into(), metadata);
    e.insert("sandboxed".into(), json!(false));
    Value::Object(e)
}

/// A toolkit as a `tool` entry with its functions.
fn toolkit_entry(toolkit: &agno_tools::Toolkit) -> Value {
    let class_path = format!("agno_rs.tools.{}", toolkit.name());
    let functions: Vec<Value> = toolkit
        .tools()
        .iter()
        .map(|t| {
            let d = t.definition();
            json!({
                "name": d.name,
                "description": d.description,
                "class_path": format!("{class_path}.{}", d.name),
                "has_entrypoint": true,
                "parameters": *d.parameters,
            })
        })
        .collect();
    let metadata = json!({"class_path": class_path, "is_toolkit": true, "functions": functions});
    entry("tool", toolkit.name(), Some(toolkit.name()), toolkit.instructions(), metadata)
}

/// Everything the registry lists, unsorted.
fn entries(state: &AppState) -> Vec<Value> {
    let mut out = Vec::new();
    for name in TOOLKITS {
        if let Ok(toolkit) = agno_tools::builtin::by_name(name, &Map::new()) {
            out.push(toolkit_entry(&toolkit));
        }
    }
    let mut models: Vec<(String, String)> = Vec::new();
    for a in state.agents.iter() {
        let model = a.agent.model();
        let key = (model.id().to_owned(), model.provider().to_owned());
        if !models.contains(&key) {
            models.push(key);
        }
    }
    for (id, provider) in models {
        let metadata =
            json!({"class_path": format!("agno_rs.models.{provider}"), "provider": provider, "model_id": id});
        out.push(entry("model", &id, None, None, metadata));
    }
    if state.db.is_some() {
        let metadata = json!({"class_path": "agno_rs.db", "db_id": &*state.db_id});
        out.push(entry("db", &state.db_id, None, None, metadata));
    }
    for kb in state.knowledge.iter() {
        let metadata = json!({"class_path": "agno_rs.knowledge.Knowledge"});
        out.push(entry("knowledge", kb.name(), None, None, metadata));
    }
    for a in state.agents.iter() {
        let id = a.agent.id();
        let metadata = json!({"id": id, "class_path": "agno_rs.Agent"});
        out.push(entry("agent", a.agent.name().unwrap_or(id), Some(id), None, metadata));
    }
    for t in state.teams.iter() {
        let metadata = json!({"id": t.id(), "class_path": "agno_rs.Team"});
        out.push(entry("team", t.name().unwrap_or(t.id()), Some(t.id()), None, metadata));
    }
    for w in state.workflows.iter() {
        let metadata = json!({"id": w.id(), "class_path": "agno_rs.Workflow"});
        out.push(entry("workflow", w.name().unwrap_or(w.id()), Some(w.id()), None, metadata));
    }
    out
}

/// `GET /registry`.
pub async fn list_registry(Caller { state, .. }: Caller, Query(q): Query<RegistryQuery>) -> ApiResult<Json<Value>> {
    if let Some(kind) = q.resource_type.as_deref().filter(|k| !RESOURCE_TYPES.contains(k)) {
        let expected = RESOURCE_TYPES.iter().map(|t| format!("'{t}'")).collect::<Vec<_>>();
        let (last, rest) = expected.split_last().unwrap_or((&expected[0], &[]));
        let expected = format!("{} or {last}", rest.join(", "));
        return Err(ApiError::unprocessable(format!("Input should be {expected}"))
            .with_type("enum")
            .at("query", "resource_type")
            .with_input(json!(kind))
            .with_ctx(json!({"expected": expected})));
    }
    let paging = Paging::new(q.limit, q.page)?.at_most(100)?;
    let mut all = entries(&state);
    let key = |e: &Value| {
        (e["type"].as_str().unwrap_or_default().to_owned(), e["name"].as_str().unwrap_or_default().to_owned())
    };
    all.sort_by_key(key);
    let needle = q.name.as_deref().map(str::to_lowercase);
    let matching: Vec<Value> = all
        .into_iter()
        .filter(|e| q.resource_type.as_deref().is_none_or(|t| e["type"] == t))
        .filter(|e| needle.as_deref().is_none_or(|n| e["name"].as_str().is_some_and(|s| s.to_lowercase().contains(n))))
        .collect();
    let total = matching.len() as u64;
    let page = matching.into_iter().skip((paging.page - 1).saturating_mul(paging.limit)).take(paging.limit).collect();
    Ok(paging.respond(page, total))
}
