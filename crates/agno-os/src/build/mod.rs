//! Building what the OS serves from its configuration, once at startup (only [`crate::app`]
//! calls this): agents ([`build_agent`]), teams ([`team`]), workflows ([`workflow`]), knowledge
//! bases ([`knowledge`]) and the MCP toolkits agents use ([`mcp`]); and why a start fails
//! ([`StartError`]).

pub mod knowledge;
pub mod mcp;
pub mod team;
pub mod workflow;

use std::sync::Arc;

use agno_core::Db;
use agno_models::ModelConfig;
use agno_runtime::Agent;
use serde_json::{Map, Value};

use crate::config::{AgentSpec, ModelSpec, ToolSpec};
use crate::state::ServedAgent;

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
    Workflow(#[from] workflow::WorkflowConfigError),
    /// The queue settings are unusable.
    #[error("invalid [queue]: {0}")]
    Queue(String),
    /// A setting is unusable.
    #[error("{0}")]
    Config(String),
}

/// The model a `model` setting names, and the `provider:id` it is shown as; the reason otherwise.
pub(crate) fn model(spec: &ModelSpec) -> Result<(Arc<dyn agno_core::Model>, String), String> {
    let (config, shown) = model_config(spec)?;
    let model = agno_models::build_model(&config).map_err(|e| e.to_string())?;
    Ok((model, shown))
}

/// Whether the model a `model` setting names can be built here, a missing API key aside (a key
/// is the environment's, and may come before the first run); the reason otherwise.
pub(crate) fn check_model(spec: &ModelSpec) -> Result<(), String> {
    let (config, _) = model_config(spec)?;
    match agno_models::build_model(&config) {
        Err(e) if e.kind != agno_core::ModelErrorKind::MissingApiKey => Err(e.to_string()),
        _ => Ok(()),
    }
}

fn model_config(spec: &ModelSpec) -> Result<(ModelConfig, String), String> {
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

/// The remote A2A agent at `url` as the model of an agent, with `headers` on every request.
fn remote_a2a(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<Arc<dyn agno_core::Model>, String> {
    let mut config = agno_models::ClientConfig::new(url);
    config.headers = headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let agent = agno_models::A2aAgent::new(config).map_err(|e| format!("a2a_url: {e}"))?;
    Ok(Arc::new(agent))
}

pub(crate) fn build_agent(
    spec: &AgentSpec,
    db: Option<Arc<dyn Db>>,
    knowledge: &[Arc<agno_knowledge::Knowledge>],
    mcp: &crate::build::mcp::McpToolkits,
    tracing: Option<&agno_runtime::Tracing>,
    user_isolation: bool,
) -> Result<ServedAgent, StartError> {
    let fail = |message: String| StartError::Agent { id: spec.id.clone(), message };
    let (model, model_spec) = match (&spec.model, &spec.a2a_url) {
        (Some(m), _) => model(m).map_err(fail)?,
        (None, Some(url)) => (remote_a2a(url, &spec.a2a_headers).map_err(fail)?, format!("a2a:{url}")),
        (None, None) => return Err(fail("a model or an a2a_url is required".to_owned())),
    };
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
            ToolSpec::Table(t) if crate::build::mcp::is_mcp_table(t) => {
                // Connected at startup (`mcp::connect_all`); `None`: optional and down.
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
    if let Some(mode) = &spec.checkpoint {
        let mode = agno_runtime::Checkpoint::parse(mode)
            .ok_or_else(|| fail(format!("checkpoint must be \"runs\" or \"tool-batch\", not {mode:?}")))?;
        builder = builder.checkpoint(mode);
    }
    if let Some(compaction) = &spec.compaction {
        let settings = compaction.settings().map_err(|why| fail(format!("compaction: {why}")))?;
        if let Some(settings) = settings {
            if db.is_none() {
                return Err(fail("compaction keeps its folds in the database: configure [db] url".to_owned()));
            }
            builder = builder.compaction(agno_runtime::Compaction::with_settings(settings));
        }
    }
    if let Some(filesystem) = &spec.filesystem
        && let Some(settings) = filesystem.settings(user_isolation).map_err(|why| fail(format!("filesystem: {why}")))?
    {
        if db.is_none() {
            return Err(fail("filesystem keeps the agent's files in the database: configure [db] url".to_owned()));
        }
        builder = builder.filesystem(settings);
    }
    if let Some(learning) = &spec.learning
        && let Some(config) = learning.config().map_err(|why| fail(format!("learning: {why}")))?
    {
        if db.is_none() {
            return Err(fail("learning keeps what it learns in the database: configure [db] url".to_owned()));
        }
        builder = builder.learning(config);
    }
    if let Some(seconds) = spec.approval_timeout_seconds {
        builder = builder.approval_timeout(std::time::Duration::from_secs(seconds));
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
    builder = builder
        .enable_agentic_state(spec.enable_agentic_state.unwrap_or(false))
        .add_session_state_to_context(spec.add_session_state_to_context.unwrap_or(false));
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
    if let Some(tracing) = tracing {
        builder = builder.tracing(tracing.clone());
    }
    let agent = builder.build().map_err(|e| fail(e.to_string()))?;
    Ok(ServedAgent { agent, model_spec, tool_names })
}

/// The tracing of `[tracing]`: spans stored in the OS's database.
///
/// # Errors
/// [`StartError::Config`] when it cannot start (outside a tokio runtime).
pub(crate) fn tracing(
    settings: &crate::config::TracingSettings,
    os_id: &str,
    db: Arc<dyn Db>,
) -> Result<agno_runtime::Tracing, StartError> {
    // Every database stores traces (`Db` has `TraceStore` among its parts).
    let store: Arc<dyn agno_core::TraceStore> = db;
    let mut builder = agno_runtime::Tracing::builder()
        .store(store)
        .service_name(os_id)
        .buffer(settings.buffer)
        .max_attribute_len(settings.max_attribute_len);
    if let Some(ratio) = settings.sample_ratio {
        builder = builder.sample_ratio(ratio);
    }
    let from_env = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()));
    if settings.otlp_endpoint.is_some() || from_env {
        let protocol = match settings.otlp_protocol.as_deref() {
            Some(p) => Some(p.parse().map_err(|e| StartError::Config(format!("[tracing] otlp_protocol: {e}")))?),
            None => None,
        };
        builder = builder
            .otlp(settings.otlp_endpoint.as_deref(), protocol)
            .map_err(|e| StartError::Config(format!("[tracing] otlp_endpoint: {e}")))?;
    }
    builder.build().map_err(StartError::Config)
}
