//! `/`, `/health`, `/info` (the one unauthenticated metadata route) and `/config`.

use crate::routes::guard::Caller;
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use super::agents::Agents;
use super::component::summaries;
use super::teams::Teams;
use super::workflows::Workflows;
use crate::state::AppState;

/// Version reported as `os_version`.
pub const OS_VERSION: &str = env!("CARGO_PKG_VERSION");
/// The Agno API version this server implements, reported as `agno_version`.
pub const AGNO_API_VERSION: &str = "3.1.10";

/// `GET /`: a minimal landing pointing at the docs, info and health.
pub async fn landing(State(state): State<AppState>) -> Json<Value> {
    Json(json!({
        "name": state.name.as_deref().unwrap_or(&state.os_id),
        "docs": "/docs",
        "info": "/info",
        "health": "/health",
    }))
}

/// `GET /health`.
pub async fn health(State(state): State<AppState>) -> Json<Value> {
    Json(json!({"status": "ok", "instantiated_at": &*state.started_at}))
}

/// `GET /info`: what a client needs before authenticating; no user data.
pub async fn info(State(state): State<AppState>) -> Json<Value> {
    Json(json!({
        "os_id": &*state.os_id,
        "name": state.name.as_deref(),
        "os_version": OS_VERSION,
        "agno_version": AGNO_API_VERSION,
        "agent_count": state.agents.len(),
        "team_count": 0,
        "workflow_count": 0,
        "mcp": {"enabled": false, "path": null, "oauth": null, "tool_run_endpoint": false},
        "auth_mode": state.auth.mode_name(),
        "user_isolation": state.auth.user_isolation,
    }))
}

/// The `{id, provider}` of a model, as `available_models` lists them.
pub(crate) fn model_json(model: &dyn agno_core::Model) -> Value {
    json!({"id": model.id(), "provider": model.provider()})
}

/// `GET /config`: the OS, its database, its agents and the models in use, as Agno's
/// `ConfigResponse` (unset fields left out; `company` an explicit null; sections of features
/// agno-rs has no instance of are present and empty, as Python answers without them).
pub async fn config(Caller { state, principal }: Caller) -> Json<Value> {
    let mut models: Vec<Value> = Vec::new();
    for a in state.agents.iter() {
        let m = model_json(a.agent.model().as_ref());
        if !models.iter().any(|x| x["id"] == m["id"] && x["provider"] == m["provider"]) {
            models.push(m);
        }
    }
    let db_id = state.db.as_ref().map(|_| &*state.db_id);
    let tables = agno_db::TableNames::default();
    let domain = |table: Option<&str>| {
        let dbs: Vec<Value> = db_id
            .iter()
            .map(|id| {
                let mut db = json!({"db_id": id, "domain_config": {"display_name": id}});
                if let Some(t) = table {
                    db["tables"] = json!([t]);
                }
                db
            })
            .collect();
        json!({ "dbs": dbs })
    };
    // The knowledge bases, listed as Python lists its `knowledge_instances` (their `id` is the
    // `knowledge_id` the /knowledge routes take).
    let knowledge = if state.knowledge.is_empty() {
        json!({"dbs": [], "knowledge_instances": []})
    } else {
        let mut k = domain(Some(&tables.knowledge));
        k["knowledge_instances"] = Value::Array(
            state
                .knowledge
                .iter()
                .map(|kb| json!({"id": kb.name(), "name": kb.name(), "db_id": db_id, "table": tables.knowledge}))
                .collect(),
        );
        k
    };
    let mut config = json!({
        "os_id": &*state.os_id,
        "name": state.name.as_deref(),
        "description": state.description.as_deref(),
        "available_models": models,
        "databases": db_id.into_iter().collect::<Vec<_>>(),
        "session": domain(Some(&tables.sessions)),
        "metrics": domain(Some(&tables.metrics)),
        "memory": domain(Some(&tables.memories)),
        "learning": domain(Some("agno_learnings")),
        "company": null,
        "filesystem": super::filesystem::config_namespaces(&state, &principal),
        "knowledge": knowledge,
        "evals": domain(Some(&tables.evals)),
        "traces": domain(None),
        "queue": {"durable": false, "queue_per_session": false},
        "agents": summaries::<Agents>(&state, &principal),
        "teams": summaries::<Teams>(&state, &principal),
        "workflows": summaries::<Workflows>(&state, &principal),
        "interfaces": interfaces(&state),
    });
    if let Value::Object(m) = &mut config {
        m.retain(|k, v| !v.is_null() || k == "company");
    }
    Json(config)
}

/// The interfaces served, as Agno's `/config` lists them (`InterfaceResponse`: type, version,
/// route).
fn interfaces(state: &AppState) -> Vec<Value> {
    let mut out = Vec::new();
    if state.a2a {
        out.push(json!({"type": "a2a", "version": "1.0", "route": super::a2a::PREFIX}));
    }
    if state.agui.is_some() {
        // Agno's AGUI interface is mounted at its prefix, "" by default.
        let prefix = state.agui.as_ref().map(|a| a.prefix.as_str()).unwrap_or_default();
        out.push(json!({"type": "agui", "version": "1.0", "route": prefix}));
    }
    out
}
