//! Every HTTP route of the OS, in one table: method, path, required scope, summary and handler.
//! The router is built from the table and the authorisation layer reads it, so a route cannot be
//! served without an access rule. The OpenAPI document is generated from it too.

pub mod a2a;
pub mod agents;
pub mod agui;
pub mod approvals;
pub(crate) mod background;
pub mod bodies;
pub mod checkpoints;
pub mod compact;
pub mod component;
pub mod components;
pub mod continuation;
pub mod core;
pub mod databases;
pub mod docs;
pub mod evals;
pub mod filesystem;
pub(crate) mod filter_expr;
pub mod fork;
pub mod guard;
pub mod knowledge;
pub mod learnings;
pub mod mcp;
pub mod media;
pub mod memories;
pub mod metrics;
pub mod params;
pub mod query;
pub mod queue;
pub mod registry;
pub mod resume;
pub(crate) mod run_form;
pub mod run_records;
pub mod schedules;
pub mod service_accounts;
pub mod sessions;
pub mod teams;
pub mod traces;
pub(crate) mod translated;
pub mod unbuilt;
pub(crate) mod validate;
pub mod workflows;

use axum::Router;
use axum::http::Method;
use axum::routing::{MethodRouter, delete, get, patch, post};

use crate::state::AppState;

/// Drops the top-level `null` fields of a JSON object (pydantic's `exclude_none` on a response
/// model); any other value is returned as it is.
pub(crate) fn without_nulls(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => {
            serde_json::Value::Object(m.into_iter().filter(|(_, v)| !v.is_null()).collect())
        }
        other => other,
    }
}

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone, without credentials (`/`, `/health`, `/info`, docs).
    Public,
    /// Any authenticated caller, whatever its scopes: a route Agno's scope mappings leave out
    /// behind its authentication (AG-UI's `GET /status`).
    Authenticated,
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
    /// OpenAPI `operationId`: Python AgentOS's, so generated clients match.
    pub operation_id: &'static str,
    /// The request body (OpenAPI).
    pub body: RequestBody,
    /// The query parameters, as the type the handler reads them into (OpenAPI).
    pub query: Option<fn() -> schemars::Schema>,
    /// The handler, wrapped for this method.
    pub handler: fn() -> MethodRouter<AppState>,
}

/// What a route's request body is, for the OpenAPI document.
#[derive(Debug, Clone, Copy)]
pub enum RequestBody {
    /// No body.
    None,
    /// A JSON object of the type the handler reads.
    Json(fn(&mut schemars::SchemaGenerator) -> schemars::Schema),
    /// A JSON object of this type that may be left out (an empty body is `{}`).
    OptionalJson(fn(&mut schemars::SchemaGenerator) -> schemars::Schema),
    /// A form (`multipart/form-data` or `application/x-www-form-urlencoded`) with these fields.
    Form(&'static [FormField]),
}

/// One field of a form body.
#[derive(Debug, Clone, Copy)]
pub struct FormField {
    /// Field name.
    pub name: &'static str,
    /// JSON-schema type of its value (`string`, `boolean`, `integer`; `object` or `array` for a
    /// field holding JSON text).
    pub kind: &'static str,
    /// Whether it must be given.
    pub required: bool,
    /// What it does.
    pub description: &'static str,
}

impl FormField {
    /// A field that must be given.
    pub const fn required(name: &'static str, kind: &'static str, description: &'static str) -> Self {
        Self { name, kind, required: true, description }
    }

    /// A field that may be left out.
    pub const fn optional(name: &'static str, kind: &'static str, description: &'static str) -> Self {
        Self { name, kind, required: false, description }
    }
}

macro_rules! routes {
    (@body) => { RequestBody::None };
    (@body $body:expr) => { $body };
    (@query) => { None };
    (@query $query:ty) => { Some(|| schemars::schema_for!($query)) };
    ($( $method:ident $path:literal as $op:literal, $access:expr, $tag:literal, $summary:literal
        $(, body: $body:expr)? $(, query: $query:ty)? => $route:expr; )*) => {
        /// Every route the OS serves.
        pub static ROUTES: &[RouteSpec] = &[
            $( RouteSpec {
                method: Method::$method,
                path: $path,
                access: $access,
                summary: $summary,
                tag: $tag,
                operation_id: $op,
                body: routes!(@body $($body)?),
                query: routes!(@query $($query)?),
                handler: || $route,
            }, )*
        ];
    };
}

use Access::{Authenticated, Public, Scope};

routes! {
    GET "/" as "get_landing", Public, "Core", "Landing: links to the docs, info and health" => get(core::landing);
    GET "/health" as "health_check", Public, "Core", "Health check" => get(core::health);
    GET "/info" as "get_info", Public, "Core", "OS metadata (unauthenticated)" => get(core::info);
    GET "/config" as "get_config", Scope("config:read"), "Core", "OS configuration with available models" => get(core::config);
    GET "/openapi.json" as "get_openapi", Public, "Core", "This API's OpenAPI document" => get(docs::openapi_json);
    GET "/docs" as "get_docs", Public, "Core", "Interactive API documentation" => get(docs::docs_index);
    GET "/redoc" as "get_redoc", Public, "Core", "API documentation (ReDoc)" => get(docs::redoc);
    GET "/docs/" as "get_docs_index", Public, "Core", "Interactive API documentation" => get(docs::docs_file);
    GET "/docs/{*file}" as "get_docs_file", Public, "Core", "Interactive API documentation assets" => get(docs::docs_file);

    GET "/agents" as "get_agents", Scope("agents:read"), "Agents", "List agents" => get(component::list::<agents::Agents>);
    GET "/agents/{agent_id}" as "get_agent", Scope("agents:read"), "Agents", "Get an agent" => get(component::get::<agents::Agents>);
    POST "/agents/{agent_id}/runs" as "create_agent_run", Scope("agents:run"), "Agents", "Create an agent run (form; SSE when stream=true)", body: RequestBody::Form(agents::RUN_FORM) => post(component::create_run::<agents::Agents>);
    GET "/agents/{agent_id}/runs" as "list_agent_runs", Scope("agents:read"), "Agents", "List an agent's runs", query: run_records::RunsQuery => get(run_records::list_runs::<agents::Agents>);
    GET "/agents/{agent_id}/runs/{run_id}" as "get_agent_run", Scope("agents:read"), "Agents", "Get an agent run", query: run_records::SessionQuery => get(run_records::get_run::<agents::Agents>);
    POST "/agents/{agent_id}/runs/{run_id}/cancel" as "cancel_agent_run", Scope("agents:run"), "Agents", "Cancel an agent run", query: run_records::SessionQuery => post(run_records::cancel_run::<agents::Agents>);
    POST "/agents/{agent_id}/runs/{run_id}/continue" as "continue_agent_run", Scope("agents:run"), "Agents", "Continue a paused agent run", body: RequestBody::Form(agents::CONTINUE_FORM) => post(continuation::continue_run::<agents::Agents>);
    GET "/agents/{agent_id}/runs/{run_id}/checkpoints" as "list_agent_run_checkpoints", Scope("agents:read"), "Agents", "The boundaries a stored run can be read back and continued at", query: checkpoints::CheckpointQuery => get(checkpoints::list_checkpoints::<agents::Agents>);
    GET "/agents/{agent_id}/runs/{run_id}/checkpoints/{message_index}" as "get_agent_run_checkpoint_snapshot", Scope("agents:read"), "Agents", "The run as it stood after a number of messages (400 past its messages)", query: checkpoints::CheckpointQuery => get(checkpoints::checkpoint_snapshot::<agents::Agents>);
    POST "/agents/{agent_id}/sessions/{session_id}/fork" as "fork_agent_session", Scope("agents:run"), "Agents", "Copy one of the agent's sessions into a new one, every run with a fresh id", query: fork::ForkQuery => post(fork::fork_session::<agents::Agents>);
    POST "/agents/{agent_id}/sessions/{session_id}/compact" as "compact_agent_session", Scope("agents:run"), "Agents", "Fold the session's older history into a summary now (a decline is reported, not raised)", query: compact::CompactQuery => post(compact::compact_session);
    POST "/agents/{agent_id}/runs/{run_id}/resume" as "resume_agent_run_stream", Scope("agents:run"), "Agents", "Resume an agent run's event stream (SSE)", body: RequestBody::Form(resume::RESUME_FORM) => post(resume::resume_run::<agents::Agents>);

    POST "/memories" as "create_memory", Scope("memories:write"), "Memory", "Create a memory", body: RequestBody::Json(|g| g.subschema_for::<memories::MemoryPayload>()), query: params::DbParams => post(memories::create_memory);
    GET "/memories" as "get_memories", Scope("memories:read"), "Memory", "List memories (paginated, filtered)", query: memories::ListMemoriesParams => get(memories::list_memories);
    DELETE "/memories" as "delete_memories", Scope("memories:delete"), "Memory", "Delete memories", body: RequestBody::Json(|g| g.subschema_for::<memories::DeleteMemoriesRequest>()), query: params::DbParams => delete(memories::delete_memories);
    GET "/memories/{memory_id}" as "get_memory", Scope("memories:read"), "Memory", "Get a memory", query: memories::UserParams => get(memories::get_memory);
    PATCH "/memories/{memory_id}" as "update_memory", Scope("memories:write"), "Memory", "Update a memory", body: RequestBody::Json(|g| g.subschema_for::<memories::MemoryPayload>()), query: params::DbParams => patch(memories::update_memory);
    DELETE "/memories/{memory_id}" as "delete_memory", Scope("memories:delete"), "Memory", "Delete a memory", query: memories::UserParams => delete(memories::delete_memory);
    GET "/memory_topics" as "get_memory_topics", Scope("memories:read"), "Memory", "Topics of the memories" => get(memories::memory_topics);
    POST "/optimize-memories" as "optimize_memories", Scope("memories:write"), "Memory", "Optimize User Memories", body: RequestBody::Json(|g| g.subschema_for::<memories::OptimizeMemoriesRequest>()), query: params::DbParams => post(memories::optimize_memories);
    GET "/user_memory_stats" as "get_user_memory_stats", Scope("memories:read"), "Memory", "Memory counts per user (paginated)", query: memories::StatsParams => get(memories::user_memory_stats);

    GET "/metrics" as "get_metrics", Scope("metrics:read"), "Metrics", "Daily usage metrics", query: metrics::MetricsParams => get(metrics::get_metrics);
    POST "/metrics/refresh" as "refresh_metrics", Scope("metrics:write"), "Metrics", "Recalculate the metrics", query: metrics::RefreshParams => post(metrics::refresh_metrics);
    GET "/metrics/refresh/status" as "get_metrics_refresh_status", Scope("metrics:read"), "Metrics", "Status of the last metrics recalculation" => get(metrics::refresh_status);

    POST "/eval-runs" as "run_eval", Scope("evals:write"), "Evals", "Run an eval on an agent and store it", body: RequestBody::Json(|g| g.subschema_for::<evals::EvalRunInput>()), query: params::DbParams => post(evals::run_eval);
    GET "/eval-runs" as "get_eval_runs", Scope("evals:read"), "Evals", "List eval runs (paginated, filtered)", query: evals::ListEvalsParams => get(evals::list_eval_runs);
    DELETE "/eval-runs" as "delete_eval_runs", Scope("evals:delete"), "Evals", "Delete eval runs", body: RequestBody::Json(|g| g.subschema_for::<evals::DeleteEvalRunsRequest>()), query: params::DbParams => delete(evals::delete_eval_runs);
    GET "/eval-runs/{eval_run_id}" as "get_eval_run", Scope("evals:read"), "Evals", "Get an eval run" => get(evals::get_eval_run);
    PATCH "/eval-runs/{eval_run_id}" as "update_eval_run", Scope("evals:write"), "Evals", "Rename an eval run", body: RequestBody::Json(|g| g.subschema_for::<evals::RenameRequest>()), query: params::DbParams => patch(evals::rename_eval_run);

    POST "/databases/all/migrate" as "migrate_all_databases", Scope("config:write"), "Database", "Migrate every database", query: databases::MigrateParams => post(databases::migrate_all_databases);
    POST "/databases/{db_id}/migrate" as "migrate_database", Scope("config:write"), "Database", "Migrate a database", query: databases::MigrateParams => post(databases::migrate_database);

    GET "/queue/jobs" as "list_queue_jobs", Scope("agent_os:admin"), "Queue", "List background jobs (admin)", query: queue::JobsQuery => get(queue::list_jobs);
    GET "/queue/jobs/{job_id}" as "get_queue_job", Scope("agent_os:admin"), "Queue", "Get a background job (admin)" => get(queue::get_job);
    POST "/queue/jobs/{job_id}/requeue" as "requeue_queue_job", Scope("agent_os:admin"), "Queue", "Requeue a failed or cancelled job (admin)" => post(queue::requeue_job);
    GET "/queue/stats" as "get_queue_stats", Scope("agent_os:admin"), "Queue", "Background jobs per status (admin)" => get(queue::stats);

    GET "/sessions" as "get_sessions", Scope("sessions:read"), "Sessions", "List sessions (paginated)", query: sessions::ListQuery => get(sessions::list_sessions);
    POST "/sessions" as "create_session", Scope("sessions:write"), "Sessions", "Create a session", body: RequestBody::OptionalJson(|g| g.subschema_for::<bodies::CreateSessionRequest>()), query: sessions::CreateQuery => post(sessions::create_session);
    DELETE "/sessions" as "delete_sessions", Scope("sessions:delete"), "Sessions", "Delete sessions", body: RequestBody::Json(|g| g.subschema_for::<bodies::DeleteSessionsRequest>()), query: sessions::DeleteQuery => delete(sessions::delete_sessions);
    GET "/sessions/filter-schema" as "get_sessions_filter_schema", Scope("sessions:read"), "Sessions", "The fields, operators and values a session search filters on" => get(sessions::filter_schema);
    POST "/sessions/search" as "search_sessions", Scope("sessions:read"), "Sessions", "Search sessions with a filter expression (paginated)", body: RequestBody::OptionalJson(|g| g.subschema_for::<sessions::SessionSearchRequest>()), query: sessions::SearchQuery => post(sessions::search_sessions);
    GET "/sessions/{session_id}" as "get_session_by_id", Scope("sessions:read"), "Sessions", "Get a session", query: sessions::SessionParams => get(sessions::get_session);
    PATCH "/sessions/{session_id}" as "update_session", Scope("sessions:write"), "Sessions", "Update a session", body: RequestBody::Json(|g| g.subschema_for::<bodies::UpdateSessionRequest>()), query: sessions::SessionParams => patch(sessions::update_session);
    DELETE "/sessions/{session_id}" as "delete_session", Scope("sessions:delete"), "Sessions", "Delete a session", query: sessions::DeleteQuery => delete(sessions::delete_session);
    POST "/sessions/{session_id}/rename" as "rename_session", Scope("sessions:write"), "Sessions", "Rename a session", body: RequestBody::Json(|g| g.subschema_for::<bodies::RenameSessionRequest>()), query: sessions::SessionParams => post(sessions::rename_session);
    GET "/sessions/{session_id}/runs" as "get_session_runs", Scope("sessions:read"), "Sessions", "List a session's runs", query: sessions::RunsQuery => get(sessions::list_session_runs);
    GET "/sessions/{session_id}/run-previews" as "get_session_run_previews", Scope("sessions:read"), "Sessions", "List a session's runs as previews", query: sessions::RunsQuery => get(sessions::list_run_previews);
    GET "/sessions/{session_id}/media/{*storage_key}" as "get_session_media", Scope("sessions:read"), "Media", "The bytes of media a run of the session stored in the media storage", query: media::MediaQuery => get(media::get_session_media);
    GET "/sessions/{session_id}/runs/{run_id}" as "get_session_run", Scope("sessions:read"), "Sessions", "Get a run of a session", query: sessions::SessionParams => get(sessions::get_session_run);

    GET "/teams" as "get_teams", Scope("teams:read"), "Teams", "List teams" => get(component::list::<teams::Teams>);
    GET "/teams/{team_id}" as "get_team", Scope("teams:read"), "Teams", "Get a team" => get(component::get::<teams::Teams>);
    POST "/teams/{team_id}/runs" as "create_team_run", Scope("teams:run"), "Teams", "Create a team run (form; SSE when stream=true)", body: RequestBody::Form(teams::RUN_FORM) => post(component::create_run::<teams::Teams>);
    GET "/teams/{team_id}/runs" as "list_team_runs", Scope("teams:read"), "Teams", "List a team's runs in a session", query: run_records::RunsQuery => get(run_records::list_runs::<teams::Teams>);
    GET "/teams/{team_id}/runs/{run_id}" as "get_team_run", Scope("teams:read"), "Teams", "Get a team run", query: run_records::SessionQuery => get(run_records::get_run::<teams::Teams>);
    POST "/teams/{team_id}/runs/{run_id}/continue" as "continue_team_run", Scope("teams:run"), "Teams", "Continue a team run paused on its members (answers in requirements)", body: RequestBody::Form(teams::CONTINUE_FORM) => post(continuation::continue_run::<teams::Teams>);
    GET "/teams/{team_id}/runs/{run_id}/checkpoints" as "list_team_run_checkpoints", Scope("teams:read"), "Teams", "The boundaries a stored team run can be read back and continued at", query: checkpoints::CheckpointQuery => get(checkpoints::list_checkpoints::<teams::Teams>);
    GET "/teams/{team_id}/runs/{run_id}/checkpoints/{message_index}" as "get_team_run_checkpoint_snapshot", Scope("teams:read"), "Teams", "The team run as it stood after a number of messages (400 past its messages)", query: checkpoints::CheckpointQuery => get(checkpoints::checkpoint_snapshot::<teams::Teams>);
    POST "/teams/{team_id}/sessions/{session_id}/fork" as "fork_team_session", Scope("teams:run"), "Teams", "Copy one of the team's sessions into a new one, every run with a fresh id", query: fork::ForkQuery => post(fork::fork_session::<teams::Teams>);
    POST "/teams/{team_id}/runs/{run_id}/resume" as "resume_team_run_stream", Scope("teams:run"), "Teams", "Replay a background team run's events, then follow it", body: RequestBody::Form(resume::RESUME_FORM) => post(resume::resume_run::<teams::Teams>);
    POST "/teams/{team_id}/runs/{run_id}/cancel" as "cancel_team_run", Scope("teams:run"), "Teams", "Cancel a team run (its running members with it)", query: run_records::SessionQuery => post(run_records::cancel_run::<teams::Teams>);
    GET "/workflows" as "get_workflows", Scope("workflows:read"), "Workflows", "List workflows" => get(component::list::<workflows::Workflows>);
    GET "/workflows/{workflow_id}" as "get_workflow", Scope("workflows:read"), "Workflows", "Get a workflow" => get(component::get::<workflows::Workflows>);
    POST "/workflows/{workflow_id}/runs" as "create_workflow_run", Scope("workflows:run"), "Workflows", "Create a workflow run (form; SSE when stream=true)", body: RequestBody::Form(workflows::RUN_FORM) => post(component::create_run::<workflows::Workflows>);
    GET "/workflows/{workflow_id}/runs" as "list_workflow_runs", Scope("workflows:read"), "Workflows", "List a workflow's runs in a session", query: run_records::RunsQuery => get(run_records::list_runs::<workflows::Workflows>);
    GET "/workflows/{workflow_id}/runs/{run_id}" as "get_workflow_run", Scope("workflows:read"), "Workflows", "Get a workflow run", query: run_records::SessionQuery => get(run_records::get_run::<workflows::Workflows>);
    POST "/workflows/{workflow_id}/runs/{run_id}/continue" as "continue_workflow_run", Scope("workflows:run"), "Workflows", "Continue a paused workflow run (answers in step_requirements)", body: RequestBody::Form(workflows::CONTINUE_FORM) => post(continuation::continue_run::<workflows::Workflows>);
    POST "/workflows/{workflow_id}/runs/{run_id}/resume" as "resume_workflow_run_stream", Scope("workflows:run"), "Workflows", "Resume a background workflow run's event stream (SSE)", body: RequestBody::Form(resume::RESUME_FORM) => post(resume::resume_run::<workflows::Workflows>);
    POST "/workflows/{workflow_id}/runs/{run_id}/cancel" as "cancel_workflow_run", Scope("workflows:run"), "Workflows", "Cancel a workflow run", query: run_records::SessionQuery => post(run_records::cancel_run::<workflows::Workflows>);
    GET "/schedules" as "list_schedules_schedules_get", Scope("schedules:read"), "Schedules", "List schedules", query: schedules::ListParams => get(schedules::list_schedules);
    POST "/schedules" as "create_schedule_schedules_post", Scope("schedules:write"), "Schedules", "Create a schedule (201)", body: RequestBody::Json(|g| g.subschema_for::<schedules::ScheduleCreate>()) => post(schedules::create_schedule);
    GET "/schedules/{schedule_id}" as "get_schedule_schedules__schedule_id__get", Scope("schedules:read"), "Schedules", "Get a schedule" => get(schedules::get_schedule);
    PATCH "/schedules/{schedule_id}" as "update_schedule_schedules__schedule_id__patch", Scope("schedules:write"), "Schedules", "Update a schedule", body: RequestBody::Json(|g| g.subschema_for::<schedules::ScheduleUpdateBody>()) => patch(schedules::update_schedule);
    DELETE "/schedules/{schedule_id}" as "delete_schedule_schedules__schedule_id__delete", Scope("schedules:delete"), "Schedules", "Delete a schedule and its runs (204)" => delete(schedules::delete_schedule);
    POST "/schedules/{schedule_id}/enable" as "enable_schedule_schedules__schedule_id__enable_post", Scope("schedules:write"), "Schedules", "Enable a schedule (next time from now)" => post(schedules::enable_schedule);
    POST "/schedules/{schedule_id}/disable" as "disable_schedule_schedules__schedule_id__disable_post", Scope("schedules:write"), "Schedules", "Disable a schedule" => post(schedules::disable_schedule);
    POST "/schedules/{schedule_id}/trigger" as "trigger_schedule_schedules__schedule_id__trigger_post", Scope("schedules:write"), "Schedules", "Fire a schedule now and follow it to its end" => post(schedules::trigger_schedule);
    GET "/schedules/{schedule_id}/runs" as "list_schedule_runs_schedules__schedule_id__runs_get", Scope("schedules:read"), "Schedules", "A schedule's runs, newest first", query: schedules::ListParams => get(schedules::list_schedule_runs);
    GET "/schedules/{schedule_id}/runs/{run_id}" as "get_schedule_run_schedules__schedule_id__runs__run_id__get", Scope("schedules:read"), "Schedules", "One run of a schedule" => get(schedules::get_schedule_run);
    POST "/mcp" as "mcp_post", Scope("agents:read"), "MCP", "MCP streamable HTTP endpoint ([mcp_server] enabled): Python AgentOS 3.1's tools (run_agent, run_team, run_workflow, continue_run, cancel_run, get_sessions, ...)" => post(mcp::mcp);
    GET "/mcp" as "mcp_get", Scope("agents:read"), "MCP", "MCP server-to-client stream" => get(mcp::mcp);
    DELETE "/mcp" as "mcp_delete", Scope("agents:read"), "MCP", "End an MCP session" => delete(mcp::mcp);
    GET "/traces" as "get_traces", Scope("traces:read"), "Traces", "List traces, newest first", query: traces::TracesQuery => get(traces::list_traces);
    GET "/traces/filter-schema" as "get_traces_filter_schema", Scope("traces:read"), "Traces", "The fields, operators and values a trace search filters on" => get(traces::filter_schema);
    GET "/traces/{trace_id}" as "get_trace", Scope("traces:read"), "Traces", "A trace with its span tree, or one of its spans (span_id)", query: traces::TraceQueryParams => get(traces::get_trace);
    GET "/trace_session_stats" as "get_trace_stats", Scope("traces:read"), "Traces", "Trace counts per session, latest activity first", query: traces::StatsQuery => get(traces::session_stats);
    GET "/approvals" as "list_approvals_approvals_get", Scope("approvals:read"), "Approvals", "List approvals, newest first (paginated, filtered)", query: approvals::ListQuery => get(approvals::list_approvals);
    GET "/approvals/count" as "get_approval_count_approvals_count_get", Scope("approvals:read"), "Approvals", "Count pending approvals", query: approvals::CountQuery => get(approvals::count_approvals);
    GET "/approvals/{approval_id}/status" as "get_approval_status_approvals__approval_id__status_get", Scope("approvals:read"), "Approvals", "An approval's status" => get(approvals::approval_status);
    GET "/approvals/{approval_id}" as "get_approval_approvals__approval_id__get", Scope("approvals:read"), "Approvals", "Get an approval" => get(approvals::get_approval);
    POST "/approvals/{approval_id}/resolve" as "resolve_approval_approvals__approval_id__resolve_post", Scope("approvals:write"), "Approvals", "Approve or reject a pending approval (409 when it is no longer pending)", body: RequestBody::Json(|g| g.subschema_for::<approvals::ResolveRequest>()) => post(approvals::resolve_approval);
    DELETE "/approvals/{approval_id}" as "delete_approval_approvals__approval_id__delete", Scope("approvals:delete"), "Approvals", "Delete an approval (204)" => delete(approvals::delete_approval);
    POST "/service-accounts" as "create_service_account_service_accounts_post", Scope("service_accounts:write"), "Service Accounts", "Mint a service account token (shown once)", body: RequestBody::Json(|g| g.subschema_for::<service_accounts::CreateRequest>()) => post(service_accounts::create_service_account);
    GET "/service-accounts" as "list_service_accounts_service_accounts_get", Scope("service_accounts:read"), "Service Accounts", "List service accounts (never their tokens)", query: service_accounts::ListQuery => get(service_accounts::list_service_accounts);
    DELETE "/service-accounts/{service_account_id}" as "revoke_service_account_service_accounts__service_account_id__delete", Scope("service_accounts:delete"), "Service Accounts", "Revoke a service account (204)" => delete(service_accounts::revoke_service_account);
    GET "/learnings" as "list_learnings", Scope("learnings:read"), "Learnings", "List learnings (own and ownerless ones under isolation)", query: learnings::ListQuery => get(learnings::list_learnings);
    POST "/learnings" as "create_learning", Scope("learnings:write"), "Learnings", "Create a learning (deterministic ids for identity-keyed types)", body: RequestBody::Json(|g| g.subschema_for::<learnings::CreateRequest>()), query: learnings::DbQuery => post(learnings::create_learning);
    GET "/learnings/users" as "list_learning_users", Scope("learnings:read"), "Learnings", "List the users holding learnings", query: learnings::UsersQuery => get(learnings::list_learning_users);
    DELETE "/learnings/users/{user_id}" as "delete_learning_user", Scope("learnings:delete"), "Learnings", "Delete a user's learnings (204)", query: learnings::DeleteUserQuery => delete(learnings::delete_learning_user);
    GET "/learnings/{learning_id}" as "get_learning", Scope("learnings:read"), "Learnings", "Get a learning", query: learnings::DbQuery => get(learnings::get_learning);
    PATCH "/learnings/{learning_id}" as "update_learning", Scope("learnings:write"), "Learnings", "Replace a learning's content or metadata", body: RequestBody::Json(|g| g.subschema_for::<learnings::UpdateRequest>()), query: learnings::DbQuery => patch(learnings::update_learning);
    DELETE "/learnings/{learning_id}" as "delete_learning", Scope("learnings:delete"), "Learnings", "Delete a learning (204)", query: learnings::DbQuery => delete(learnings::delete_learning);
    GET "/filesystem/files" as "list_filesystem_files", Scope("filesystem:read"), "FileSystem", "List files across the agent filesystems the caller may read", query: filesystem::FilesQuery => get(filesystem::list_files);
    GET "/filesystem/entries" as "list_filesystem_entries", Scope("filesystem:read"), "FileSystem", "List the files and directories under a directory of one filesystem", query: filesystem::EntriesQuery => get(filesystem::list_entries);
    GET "/filesystem/content" as "read_filesystem_content", Scope("filesystem:read"), "FileSystem", "Read a preview of one file", query: filesystem::ContentQuery => get(filesystem::read_content);
    GET "/filesystem/search" as "search_filesystem", Scope("filesystem:read"), "FileSystem", "Search file contents within one filesystem", query: filesystem::SearchQuery => get(filesystem::search);
    GET "/components" as "list_components", Scope("components:read"), "Components", "List components, newest first (paginated)", query: components::ListQuery => get(components::list_components);
    POST "/components" as "create_component", Scope("components:write"), "Components", "Create a component with its config version 1 (201)", body: RequestBody::Json(|g| g.subschema_for::<components::ComponentCreate>()) => post(components::create_component);
    GET "/components/{component_id}" as "get_component", Scope("components:read"), "Components", "Get a component", query: components::GetQuery => get(components::get_component);
    PATCH "/components/{component_id}" as "update_component", Scope("components:write"), "Components", "Update a component (name, description, metadata, the version it serves)", body: RequestBody::Json(|g| g.subschema_for::<components::ComponentUpdate>()) => patch(components::update_component);
    DELETE "/components/{component_id}" as "delete_component", Scope("components:delete"), "Components", "Archive a component (204; 409 while a live team or workflow links to it)", body: RequestBody::OptionalJson(|g| g.subschema_for::<components::GuardOnly>()), query: components::DeleteQuery => delete(components::delete_component);
    POST "/components/{component_id}/restore" as "restore_component", Scope("components:delete"), "Components", "Restore an archived component" => post(components::restore_component);
    GET "/components/{component_id}/configs" as "list_configs", Scope("components:read"), "Components", "List a component's config versions, newest first", query: components::ConfigsQuery => get(components::list_configs);
    POST "/components/{component_id}/configs" as "create_config", Scope("components:write"), "Components", "Create a config version (201; stage published publishes it)", body: RequestBody::Json(|g| g.subschema_for::<components::ConfigCreate>()) => post(components::create_config);
    GET "/components/{component_id}/configs/current" as "get_current_config", Scope("components:read"), "Components", "Get the served config version (else the latest draft)" => get(components::get_current_config);
    PATCH "/components/{component_id}/configs/{version}" as "update_config", Scope("components:write"), "Components", "Update a draft config version (stage published publishes it)", body: RequestBody::Json(|g| g.subschema_for::<components::ConfigUpdate>()) => patch(components::update_config);
    GET "/components/{component_id}/configs/{version}" as "get_component_config", Scope("components:read"), "Components", "Get a config version" => get(components::get_config);
    DELETE "/components/{component_id}/configs/{version}" as "delete_config", Scope("components:delete"), "Components", "Delete a draft config version (204)" => delete(components::delete_config);
    POST "/components/{component_id}/configs/{version}/set-current" as "set_current_config", Scope("components:write"), "Components", "Serve a published config version (a rollback)", body: RequestBody::OptionalJson(|g| g.subschema_for::<components::GuardOnly>()) => post(components::set_current_config);
    GET "/registry" as "list_registry", Scope("registry:read"), "Registry", "List what components may be built from (toolkits, models, databases, knowledge, served components)", query: registry::RegistryQuery => get(registry::list_registry);
    POST "/traces/search" as "search_traces", Scope("traces:read"), "Traces", "Search traces with a filter expression, by run or by session", body: RequestBody::Json(|g| g.subschema_for::<traces::TraceSearchRequest>()), query: traces::DbQuery => post(traces::search);
    GET "/a2a/agents/{id}/.well-known/agent-card.json" as "get_agent_card_a2a_agents__id___well_known_agent_card_json_get", Scope("agents:read"), "A2A", "The agent's A2A agent card ([a2a] enabled)" => get(a2a::card::<agents::Agents>);
    POST "/a2a/agents/{id}/v1/message:send" as "run_message_agent", Scope("agents:run"), "A2A", "Send a message to the agent (A2A JSON-RPC; blocking=false queues it)" => post(a2a::message_send::<agents::Agents>);
    POST "/a2a/agents/{id}/v1/message:stream" as "stream_message_agent", Scope("agents:run"), "A2A", "Stream a message to the agent (A2A JSON-RPC, SSE)" => post(a2a::message_stream::<agents::Agents>);
    POST "/a2a/agents/{id}/v1/tasks:get" as "get_agent_task", Scope("agents:read"), "A2A", "A task (a run) of the agent (A2A JSON-RPC)" => post(a2a::tasks_get::<agents::Agents>);
    POST "/a2a/agents/{id}/v1/tasks:cancel" as "cancel_agent_task", Scope("agents:run"), "A2A", "Cancel a task (a run) of the agent (A2A JSON-RPC)" => post(a2a::tasks_cancel::<agents::Agents>);
    GET "/a2a/teams/{id}/.well-known/agent-card.json" as "get_team_card_a2a_teams__id___well_known_agent_card_json_get", Scope("teams:read"), "A2A", "The team's A2A agent card ([a2a] enabled)" => get(a2a::card::<teams::Teams>);
    POST "/a2a/teams/{id}/v1/message:send" as "run_message_team", Scope("teams:run"), "A2A", "Send a message to the team (A2A JSON-RPC; blocking=false queues it)" => post(a2a::message_send::<teams::Teams>);
    POST "/a2a/teams/{id}/v1/message:stream" as "stream_message_team", Scope("teams:run"), "A2A", "Stream a message to the team (A2A JSON-RPC, SSE)" => post(a2a::message_stream::<teams::Teams>);
    POST "/a2a/teams/{id}/v1/tasks:get" as "get_team_task", Scope("teams:read"), "A2A", "A task (a run) of the team (A2A JSON-RPC)" => post(a2a::tasks_get::<teams::Teams>);
    POST "/a2a/teams/{id}/v1/tasks:cancel" as "cancel_team_task", Scope("teams:run"), "A2A", "Cancel a task (a run) of the team (A2A JSON-RPC)" => post(a2a::tasks_cancel::<teams::Teams>);
    GET "/a2a/workflows/{id}/.well-known/agent-card.json" as "get_workflow_card_a2a_workflows__id___well_known_agent_card_json_get", Scope("workflows:read"), "A2A", "The workflow's A2A agent card ([a2a] enabled)" => get(a2a::card::<workflows::Workflows>);
    POST "/a2a/workflows/{id}/v1/message:send" as "run_message_workflow", Scope("workflows:run"), "A2A", "Send a message to the workflow (A2A JSON-RPC; blocking=false queues it)" => post(a2a::message_send::<workflows::Workflows>);
    POST "/a2a/workflows/{id}/v1/message:stream" as "stream_message_workflow", Scope("workflows:run"), "A2A", "Stream a message to the workflow (A2A JSON-RPC, SSE)" => post(a2a::message_stream::<workflows::Workflows>);
    POST "/agui" as "run_agent_agui_post", Scope("agents:run"), "AGUI", "Run the [agui] agent or team on AG-UI's RunAgentInput (SSE of AG-UI events)", body: RequestBody::Json(|g| g.subschema_for::<agui::RunAgentInput>()) => post(agui::run);
    GET "/status" as "get_status_status_get", Authenticated, "AGUI", "The AG-UI interface's status" => get(agui::status);
    GET "/knowledge/config" as "get_knowledge_config", Scope("knowledge:read"), "Knowledge", "Knowledge configuration (503: no knowledge base)", query: knowledge::KnowledgeParams => get(knowledge::config);
    POST "/knowledge/content" as "upload_content", Scope("knowledge:write"), "Knowledge", "Upload content (202; ingested in the background)", body: RequestBody::Form(knowledge::UPLOAD_FORM), query: knowledge::KnowledgeParams => post(knowledge::upload_content);
    GET "/knowledge/content" as "get_content", Scope("knowledge:read"), "Knowledge", "List contents (paginated)", query: knowledge::ListParams => get(knowledge::list_content);
    GET "/knowledge/content/{content_id}" as "get_content_by_id", Scope("knowledge:read"), "Knowledge", "Get a content", query: knowledge::KnowledgeParams => get(knowledge::content::<knowledge::Detail>);
    GET "/knowledge/content/{content_id}/status" as "get_content_status", Scope("knowledge:read"), "Knowledge", "A content's processing status", query: knowledge::KnowledgeParams => get(knowledge::content::<knowledge::Status>);
    PATCH "/knowledge/content/{content_id}" as "update_content", Scope("knowledge:write"), "Knowledge", "Update a content's name, description or metadata", body: RequestBody::Form(knowledge::UPDATE_FORM), query: knowledge::KnowledgeParams => patch(knowledge::update_content);
    DELETE "/knowledge/content" as "delete_all_content", Scope("knowledge:delete"), "Knowledge", "Delete every content the caller may delete", query: knowledge::KnowledgeParams => delete(knowledge::delete_all_content);
    DELETE "/knowledge/content/{content_id}" as "delete_content_by_id", Scope("knowledge:delete"), "Knowledge", "Delete a content and its chunks", query: knowledge::KnowledgeParams => delete(knowledge::delete_content);
    POST "/knowledge/remote-content" as "upload_remote_content", Scope("knowledge:write"), "Knowledge", "Ingest objects of a remote source (202; one content per object)", body: RequestBody::Form(knowledge::remote::REMOTE_FORM), query: knowledge::KnowledgeParams => post(knowledge::remote::upload_remote_content);
    POST "/knowledge/content/{content_id}/refresh" as "refresh_content", Scope("knowledge:write"), "Knowledge", "Re-ingest a content whose source object changed (202), or leave it (200)", query: knowledge::KnowledgeParams => post(knowledge::remote::refresh_content);
    GET "/knowledge/{knowledge_id}/sources" as "list_content_sources", Scope("knowledge:read"), "Knowledge", "The remote content sources of a knowledge base" => get(knowledge::remote::list_sources);
    GET "/knowledge/{knowledge_id}/sources/{source_id}/files" as "list_source_files", Scope("knowledge:read"), "Knowledge", "A page of the files of a remote source", query: knowledge::remote::FilesQuery => get(knowledge::remote::list_files);
    POST "/knowledge/search" as "search_knowledge", Scope("knowledge:read"), "Knowledge", "Search a knowledge base", body: RequestBody::Json(|g| g.subschema_for::<knowledge::SearchRequest>()) => post(knowledge::search);
}

/// The route declared for a method and matched path template.
pub fn find_route(method: &Method, path: &str) -> Option<&'static RouteSpec> {
    ROUTES.iter().find(|r| r.method == *method && r.path == path)
}

/// The route of [`ROUTES`] served at `path` by `state`: as [`find_route`], with the AG-UI
/// routes at `[agui] prefix` when one is set.
pub fn served_route(state: &AppState, method: &Method, path: &str) -> Option<&'static RouteSpec> {
    let Some(prefix) = state.agui.as_ref().map(|a| a.prefix.as_str()).filter(|p| !p.is_empty()) else {
        return find_route(method, path);
    };
    let under_prefix = path.strip_prefix(prefix).filter(|rest| rest.starts_with('/'));
    under_prefix
        .and_then(|rest| find_route(method, rest).filter(|r| r.tag == AGUI_TAG))
        .or_else(|| find_route(method, path).filter(|r| r.tag != AGUI_TAG))
}

/// The OpenAPI tag of the AG-UI interface's routes (mounted at `[agui] prefix`).
pub(crate) const AGUI_TAG: &str = "AGUI";

/// The path `state` serves `spec` at (an AG-UI route under `[agui] prefix`).
pub fn served_path(state: &AppState, spec: &RouteSpec) -> String {
    match state.agui.as_ref().map(|a| a.prefix.as_str()) {
        Some(prefix) if spec.tag == AGUI_TAG => format!("{prefix}{}", spec.path),
        _ => spec.path.to_owned(),
    }
}

/// Every route of [`ROUTES`] behind the authorisation layer ([`guard::layer`]), at the paths
/// `state` serves them at: what the served app ([`crate::app::AgentOs::router`]) and the
/// in-process calls ([`loopback`]) share.
pub fn guarded(state: &AppState) -> Router<AppState> {
    let router =
        ROUTES.iter().fold(Router::new(), |router, spec| router.route(&served_path(state, spec), (spec.handler)()));
    let state = state.clone();
    router.route_layer(tower::layer::layer_fn(move |route| guard::layer(state.clone(), route)))
}

/// The OS's routes of `state`, behind the authorisation layer and with JSON errors, to call in
/// process (the scheduler's executor, the MCP server's tools).
pub(crate) fn loopback(state: &AppState) -> crate::in_process::Loopback {
    crate::in_process::Loopback::new(
        guarded(state).layer(tower::layer::layer_fn(crate::error::json_errors)).with_state(state.clone()),
    )
}

/// The router of every route in [`ROUTES`] (without state or layers).
pub fn router() -> Router<AppState> {
    ROUTES.iter().fold(Router::new(), |router, spec| router.route(spec.path, (spec.handler)()))
}
