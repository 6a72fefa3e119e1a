//! Building the OS from its configuration: open (never silently migrate) the database, build the
//! agents, assemble the router with the authorisation layer and the body limit.

use std::sync::Arc;

use agno_core::Db;
use agno_models::ModelConfig;
use agno_runtime::Agent;
use axum::Router;
use axum::middleware;
use serde_json::{Map, Value};

use crate::auth::{AuthSettings, authorize};
use crate::config::{AgentSpec, ModelSpec, OsConfig, ToolSpec};
use crate::state::{AppState, ServedAgent};

/// Why the OS cannot start, with what to do.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The database cannot be used (unreachable, or needs migrating).
    #[error("cannot use database {url}: {source}")]
    Db {
        /// The redacted URL.
        url: String,
        /// The storage error (it names pending migrations and the command to run).
        source: agno_core::DbError,
    },
    /// An agent cannot be built.
    #[error("cannot build agent {id:?}: {message}")]
    Agent {
        /// The agent id.
        id: String,
        /// Why.
        message: String,
    },
    /// The auth settings are unusable.
    #[error("invalid [auth]: {0}")]
    Auth(String),
    /// A team cannot be built.
    #[error("cannot build team {id:?}: {message}")]
    Team {
        /// The team id.
        id: String,
        /// Why.
        message: String,
    },
    /// A workflow cannot be built.
    #[error("cannot build {0}")]
    Workflow(#[from] crate::workflow_config::WorkflowConfigError),
    /// The queue settings are unusable.
    #[error("invalid [queue]: {0}")]
    Queue(String),
    /// A setting is unusable.
    #[error("{0}")]
    Config(String),
}

pub(crate) fn model_config(spec: &ModelSpec) -> Result<(ModelConfig, String), String> {
    match spec {
        ModelSpec::Short(s) => Ok((ModelConfig::parse(s).map_err(|e| e.to_string())?, s.clone())),
        ModelSpec::Full { provider, id, base_url, api_key_env, api_key } => Ok((
            ModelConfig {
                provider: provider.clone(),
                id: id.clone(),
                base_url: base_url.clone(),
                api_key_env: api_key_env.clone(),
                api_key: api_key.clone(),
                ..ModelConfig::default()
            },
            format!("{provider}:{}", id.as_deref().unwrap_or_default()),
        )),
    }
}

fn build_agent(
    spec: &AgentSpec,
    db: Option<Arc<dyn Db>>,
    knowledge: &[Arc<agno_knowledge::Knowledge>],
    mcp: &crate::mcp_config::McpToolkits,
) -> Result<ServedAgent, StartError> {
    let fail = |message: String| StartError::Agent { id: spec.id.clone(), message };
    let (config, model_spec) = model_config(&spec.model).map_err(fail)?;
    let model = agno_models::build_model(&config).map_err(|e| fail(e.to_string()))?;
    // As AgentOS does for every agent it serves: streamed runs keep their events (resume, UIs).
    let mut builder = Agent::builder(model).id(spec.id.clone()).store_events(true);
    if let Some(name) = &spec.name {
        builder = builder.name(name.clone());
    }
    if let Some(d) = &spec.description {
        builder = builder.description(d.clone());
    }
    if let Some(lines) = spec.instructions.clone() {
        builder = builder.instructions(lines.into_vec());
    }
    if let Some(m) = spec.markdown {
        builder = builder.markdown(m);
    }
    let mut tool_names = Vec::new();
    for tool in &spec.tools {
        let (name, options) = match tool {
            ToolSpec::Name(n) => (n.clone(), Map::new()),
            ToolSpec::Table(t) if crate::mcp_config::is_mcp_table(t) => {
                // Connected at startup (`mcp_config::connect_all`); `None`: optional and down.
                if let Some(Some(kit)) = mcp.get(t) {
                    for tool in kit.tools() {
                        builder = builder.tool_arc(tool);
                    }
                    tool_names.push(kit.id().to_owned());
                }
                continue;
            }
            ToolSpec::Table(t) => {
                let mut t = t.clone();
                let name = match t.remove("toolkit") {
                    Some(Value::String(n)) => n,
                    _ => return Err(fail("a tool table needs toolkit = \"<name>\"".to_owned())),
                };
                (name, t)
            }
        };
        let toolkit = agno_tools::builtin::by_name(&name, &options).map_err(|e| fail(e.to_string()))?;
        builder = builder.toolkit(&toolkit);
        tool_names.push(toolkit.id().to_owned());
    }
    if let Some(limit) = spec.tool_call_limit {
        builder = builder.tool_call_limit(limit);
    }
    if let Some(db) = db {
        builder = builder.db(db).add_history_to_context(spec.add_history_to_context.unwrap_or(true));
    } else if let Some(on) = spec.add_history_to_context {
        builder = builder.add_history_to_context(on);
    }
    if let Some(n) = spec.num_history_runs {
        builder = builder.num_history_runs(n);
    }
    builder = builder.memory(agno_runtime::MemoryConfig {
        update_memory_on_run: spec.update_memory_on_run.unwrap_or(false),
        enable_agentic_memory: spec.enable_agentic_memory.unwrap_or(false),
        add_memories_to_context: spec.add_memories_to_context,
    });
    builder = builder.summaries(agno_runtime::SummaryConfig {
        enable_session_summaries: spec.enable_session_summaries.unwrap_or(false),
        add_session_summary_to_context: spec.add_session_summary_to_context,
    });
    if let Some(id) = &spec.knowledge {
        let Some(base) = knowledge.iter().find(|k| k.name() == id) else {
            let known: Vec<&str> = knowledge.iter().map(|k| k.name()).collect();
            return Err(fail(format!("knowledge {id:?} is not a [[knowledge]] id (known: {})", known.join(", "))));
        };
        let base: Arc<dyn agno_core::KnowledgeBase> = base.clone();
        builder = builder
            .knowledge(base)
            .search_knowledge(spec.search_knowledge.unwrap_or(true))
            .add_knowledge_to_context(spec.add_knowledge_to_context.unwrap_or(false));
    }
    builder = builder.past_sessions(agno_runtime::PastSessionsConfig {
        search_past_sessions: spec.search_past_sessions.unwrap_or(false),
        num_past_sessions_to_search: spec.num_past_sessions_to_search,
        num_past_session_runs_in_search: spec.num_past_session_runs_in_search,
    });
    let agent = builder.build().map_err(|e| fail(e.to_string()))?;
    Ok(ServedAgent { agent, model_spec, tool_names })
}

/// A ready-to-serve OS: its state and router.
#[derive(Debug, Clone)]
pub struct AgentOs {
    /// Shared state.
    pub state: AppState,
    /// Largest accepted body.
    pub max_body_bytes: usize,
    /// Connection limits and timeouts, and the shutdown grace (see [`crate::serve`]).
    pub http: crate::serve::HttpSettings,
    /// Browser origins allowed to call the OS.
    pub cors: crate::cors::OriginPolicy,
}

impl AgentOs {
    /// Opens the database and builds the agents and auth of `config`.
    ///
    /// # Errors
    /// [`StartError`] saying what to fix (a database needing migration names the command).
    pub async fn from_config(config: &OsConfig) -> Result<Self, StartError> {
        let auth = AuthSettings::from_config(config.auth.as_ref()).map_err(StartError::Auth)?;
        let (db, migrate, url) = match &config.db {
            Some(section) => {
                let shown = agno_db::redact_url(&section.url);
                let fail = |source| StartError::Db { url: shown.clone(), source };
                // One handle for everything (a second would be a second pool, or for memory:// a
                // second, empty store). A database needing migration is refused, naming the steps.
                let migrate = agno_db::open(&section.url).await.map_err(fail)?;
                let status = agno_db::MigrationManager::new(migrate.as_ref()).status(None).await.map_err(fail)?;
                if !status.is_current() {
                    let message = status.pending_description(&shown);
                    return Err(fail(agno_core::DbError::new(agno_core::DbErrorKind::SchemaTooOld, message)));
                }
                migrate.create_tables().await.map_err(fail)?;
                let db: Arc<dyn Db> = migrate.clone();
                (Some(db), Some(migrate), Some(shown))
            }
            None => (None, None, None),
        };
        let db_url = config.db.as_ref().map(|d| d.url.as_str());
        let knowledge = crate::knowledge_config::build_knowledge(&config.knowledge, db.as_ref(), db_url).await?;
        let mcp = crate::mcp_config::connect_all(config).await?;
        let agents = config
            .agents
            .iter()
            .map(|spec| build_agent(spec, db.clone(), &knowledge, &mcp))
            .collect::<Result<Vec<_>, _>>()?;
        let teams = crate::team_config::build_teams(&config.teams, &agents, db.as_ref())?;
        let workflows = crate::workflow_config::build_workflows(&config.workflows, &agents, &teams, db.clone())?;
        let queue = match migrate.clone().and_then(|m| m.job_store()) {
            Some(store) => Some(crate::queue::Queue::new(store, config.queue.clone()).map_err(StartError::Queue)?),
            None => None,
        };
        let db_id = config.db.as_ref().and_then(|d| d.id.clone()).unwrap_or_else(|| "default".to_owned());
        let cors = config.os.cors_policy().map_err(|e| StartError::Config(e.to_string()))?;
        let state = AppState {
            os_id: config.os.id.as_str().into(),
            name: config.os.name.as_deref().map(Into::into),
            description: config.os.description.as_deref().map(Into::into),
            agents: Arc::new(agents),
            teams: Arc::new(teams),
            workflows: Arc::new(workflows),
            knowledge: Arc::new(knowledge),
            db,
            migrate,
            db_id: db_id.into(),
            db_url_redacted: url.map(Into::into),
            auth: Arc::new(auth),
            started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true).into(),
            heartbeat: std::time::Duration::from_secs(config.os.sse_heartbeat_seconds),
            queue,
            stopping: tokio_util::sync::CancellationToken::new(),
            limits: crate::input::Limits::from_config(&config.os),
            origins: cors.clone(),
            scheduler: Arc::new(config.scheduler.clone()),
            mcp_server: Arc::new(config.mcp_server.clone()),
            mcp: None,
        };
        let mut state = state;
        if config.mcp_server.enabled {
            state.mcp = Some(crate::mcp_server::service(&state));
        }
        let http = crate::serve::HttpSettings::from_config(&config.os);
        Ok(Self { state, max_body_bytes: config.os.max_body_bytes, http, cors })
    }

    /// The HTTP app: every route of [`crate::routes::ROUTES`] behind the authorisation layer,
    /// with the body limit, and CORS outside everything (preflights never reach auth).
    pub fn router(&self) -> Router {
        crate::routes::router()
            .route_layer(middleware::from_fn_with_state(self.state.clone(), authorize))
            .fallback(|| async { crate::error::ApiError::not_found("Not Found") })
            // One body limit for every route and encoding: the configured one (axum's own 2 MB
            // default for extractors is lifted).
            .layer(tower_http::limit::RequestBodyLimitLayer::new(self.max_body_bytes))
            .layer(axum::extract::DefaultBodyLimit::disable())
            .layer(middleware::map_response(crate::error::json_errors))
            .layer(self.cors.layer())
            .layer(middleware::from_fn_with_state(self.cors.clone(), crate::cors::preflight_and_expose))
            .with_state(self.state.clone())
    }
}
