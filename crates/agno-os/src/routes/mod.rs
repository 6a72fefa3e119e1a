//! Every HTTP route of the OS, in one table: method, path, required scope, summary and handler.
//! The router is built from the table and the authorisation layer reads it, so a route cannot be
//! served without an access rule. The OpenAPI document is generated from it too.

pub mod agents;
pub mod core;
pub mod databases;
pub mod docs;
pub mod evals;
pub mod memories;
pub mod metrics;
pub mod params;
pub mod queue;
pub mod sessions;
pub mod unbuilt;

use axum::Router;
use axum::http::Method;
use axum::routing::{MethodRouter, delete, get, patch, post};

use crate::state::AppState;

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone, without credentials (`/`, `/health`, `/info`, docs).
    Public,
    /// Callers holding this scope (Agno's `resource:action`; per-resource forms accepted on
    /// `/agents/{id}/...` routes).
    Scope(&'static str),
}

/// One route.
#[derive(Debug, Clone)]
pub struct RouteSpec {
    /// HTTP method.
    pub method: Method,
    /// Path template (axum syntax, which is also OpenAPI's).
    pub path: &'static str,
    /// Access rule.
    pub access: Access,
    /// One-line summary (OpenAPI).
    pub summary: &'static str,
    /// OpenAPI tag.
    pub tag: &'static str,
    /// The handler, wrapped for this method.
    pub handler: fn() -> MethodRouter<AppState>,
}

macro_rules! routes {
    ($( $method:ident $path:literal, $access:expr, $tag:literal, $summary:literal => $route:expr; )*) => {
        /// Every route the OS serves.
        pub static ROUTES: &[RouteSpec] = &[
            $( RouteSpec {
                method: Method::$method,
                path: $path,
                access: $access,
                summary: $summary,
                tag: $tag,
                handler: || $route,
            }, )*
        ];
    };
}

use Access::{Public, Scope};

routes! {
    GET "/", Public, "Core", "Landing: links to the docs, info and health" => get(core::landing);
    GET "/health", Public, "Core", "Health check" => get(core::health);
    GET "/info", Public, "Core", "OS metadata (unauthenticated)" => get(core::info);
    GET "/config", Scope("config:read"), "Core", "OS configuration with available models" => get(core::config);
    GET "/openapi.json", Public, "Core", "This API's OpenAPI document" => get(docs::openapi_json);
    GET "/docs", Public, "Core", "Interactive API documentation" => get(docs::docs_index);
    GET "/redoc", Public, "Core", "API documentation (ReDoc)" => get(docs::redoc);
    GET "/docs/", Public, "Core", "Interactive API documentation" => get(docs::docs_file);
    GET "/docs/{*file}", Public, "Core", "Interactive API documentation assets" => get(docs::docs_file);

    GET "/agents", Scope("agents:read"), "Agents", "List agents" => get(agents::list_agents);
    GET "/agents/{agent_id}", Scope("agents:read"), "Agents", "Get an agent" => get(agents::get_agent);
    POST "/agents/{agent_id}/runs", Scope("agents:run"), "Agents", "Create an agent run (form; SSE when stream=true)" => post(agents::create_run);
    GET "/agents/{agent_id}/runs", Scope("agents:read"), "Agents", "List an agent's runs" => get(agents::list_runs);
    GET "/agents/{agent_id}/runs/{run_id}", Scope("agents:read"), "Agents", "Get an agent run" => get(agents::get_run);
    POST "/agents/{agent_id}/runs/{run_id}/cancel", Scope("agents:run"), "Agents", "Cancel an agent run" => post(agents::cancel_run);
    POST "/agents/{agent_id}/runs/{run_id}/continue", Scope("agents:run"), "Agents", "Continue a paused agent run" => post(agents::continue_run);
    POST "/agents/{agent_id}/runs/{run_id}/resume", Scope("agents:run"), "Agents", "Resume an agent run's event stream (SSE)" => post(agents::resume_run);

    POST "/memories", Scope("memories:write"), "Memory", "Create a memory" => post(memories::create_memory);
    GET "/memories", Scope("memories:read"), "Memory", "List memories (paginated, filtered)" => get(memories::list_memories);
    DELETE "/memories", Scope("memories:delete"), "Memory", "Delete memories" => delete(memories::delete_memories);
    GET "/memories/{memory_id}", Scope("memories:read"), "Memory", "Get a memory" => get(memories::get_memory);
    PATCH "/memories/{memory_id}", Scope("memories:write"), "Memory", "Update a memory" => patch(memories::update_memory);
    DELETE "/memories/{memory_id}", Scope("memories:delete"), "Memory", "Delete a memory" => delete(memories::delete_memory);
    GET "/memory_topics", Scope("memories:read"), "Memory", "Topics of the memories" => get(memories::memory_topics);
    GET "/user_memory_stats", Scope("memories:read"), "Memory", "Memory counts per user (paginated)" => get(memories::user_memory_stats);

    GET "/metrics", Scope("metrics:read"), "Metrics", "Daily usage metrics" => get(metrics::get_metrics);
    POST "/metrics/refresh", Scope("metrics:write"), "Metrics", "Recalculate the metrics" => post(metrics::refresh_metrics);
    GET "/metrics/refresh/status", Scope("metrics:read"), "Metrics", "Status of the last metrics recalculation" => get(metrics::refresh_status);

    GET "/eval-runs", Scope("evals:read"), "Evals", "List eval runs (paginated, filtered)" => get(evals::list_eval_runs);
    DELETE "/eval-runs", Scope("evals:delete"), "Evals", "Delete eval runs" => delete(evals::delete_eval_runs);
    GET "/eval-runs/{eval_run_id}", Scope("evals:read"), "Evals", "Get an eval run" => get(evals::get_eval_run);
    PATCH "/eval-runs/{eval_run_id}", Scope("evals:write"), "Evals", "Rename an eval run" => patch(evals::rename_eval_run);

    POST "/databases/all/migrate", Scope("config:write"), "Database", "Migrate every database" => post(databases::migrate_all_databases);
    POST "/databases/{db_id}/migrate", Scope("config:write"), "Database", "Migrate a database" => post(databases::migrate_database);

    GET "/queue/jobs", Scope("agent_os:admin"), "Queue", "List background jobs (admin)" => get(queue::list_jobs);
    GET "/queue/jobs/{job_id}", Scope("agent_os:admin"), "Queue", "Get a background job (admin)" => get(queue::get_job);
    POST "/queue/jobs/{job_id}/requeue", Scope("agent_os:admin"), "Queue", "Requeue a failed or cancelled job (admin)" => post(queue::requeue_job);
    GET "/queue/stats", Scope("agent_os:admin"), "Queue", "Background jobs per status (admin)" => get(queue::stats);

    GET "/sessions", Scope("sessions:read"), "Sessions", "List sessions (paginated)" => get(sessions::list_sessions);
    POST "/sessions", Scope("sessions:write"), "Sessions", "Create a session" => post(sessions::create_session);
    DELETE "/sessions", Scope("sessions:delete"), "Sessions", "Delete sessions" => delete(sessions::delete_sessions);
    GET "/sessions/{session_id}", Scope("sessions:read"), "Sessions", "Get a session" => get(sessions::get_session);
    PATCH "/sessions/{session_id}", Scope("sessions:write"), "Sessions", "Update a session" => patch(sessions::update_session);
    DELETE "/sessions/{session_id}", Scope("sessions:delete"), "Sessions", "Delete a session" => delete(sessions::delete_session);
    POST "/sessions/{session_id}/rename", Scope("sessions:write"), "Sessions", "Rename a session" => post(sessions::rename_session);
    GET "/sessions/{session_id}/runs", Scope("sessions:read"), "Sessions", "List a session's runs" => get(sessions::list_session_runs);
    GET "/sessions/{session_id}/run-previews", Scope("sessions:read"), "Sessions", "List a session's runs as previews" => get(sessions::list_run_previews);
    GET "/sessions/{session_id}/runs/{run_id}", Scope("sessions:read"), "Sessions", "Get a run of a session" => get(sessions::get_session_run);

    GET "/teams", Scope("teams:read"), "Teams", "List teams (none yet in agno-rs)" => get(unbuilt::list_teams);
    GET "/teams/{team_id}", Scope("teams:read"), "Teams", "Get a team" => get(unbuilt::get_team);
    GET "/workflows", Scope("workflows:read"), "Workflows", "List workflows (none yet in agno-rs)" => get(unbuilt::list_workflows);
    GET "/workflows/{workflow_id}", Scope("workflows:read"), "Workflows", "Get a workflow" => get(unbuilt::get_workflow);
    GET "/traces", Scope("traces:read"), "Tracing", "List traces (tracing is off: empty)" => get(unbuilt::list_traces);
    GET "/knowledge/config", Scope("knowledge:read"), "Knowledge", "Knowledge configuration (503: no knowledge base)" => get(unbuilt::knowledge_config);
}

/// The route declared for a method and matched path template.
pub fn find_route(method: &Method, path: &str) -> Option<&'static RouteSpec> {
    ROUTES.iter().find(|r| r.method == *method && r.path == path)
}

/// The router of every route in [`ROUTES`] (without state or layers).
pub fn router() -> Router<AppState> {
    ROUTES.iter().fold(Router::new(), |router, spec| router.route(spec.path, (spec.handler)()))
}
