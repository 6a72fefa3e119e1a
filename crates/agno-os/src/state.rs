//! What every handler shares: the OS description, its agents, its database and the auth
//! settings. Cheap to clone.

use std::sync::Arc;

use agno_core::Db;
use agno_runtime::Agent;
use futures::future::BoxFuture;

use crate::auth::AuthSettings;

/// One served agent and how it was declared.
#[derive(Debug, Clone)]
pub struct ServedAgent {
    /// The agent.
    pub agent: Agent,
    /// `provider:id` of its model, as configured.
    pub model_spec: String,
    /// Toolkit names.
    pub tool_names: Vec<String>,
}

/// Shared state of the HTTP app.
#[derive(Debug, Clone)]
pub struct AppState {
    /// OS id.
    pub os_id: Arc<str>,
    /// OS display name.
    pub name: Option<Arc<str>>,
    /// OS description.
    pub description: Option<Arc<str>>,
    /// Agents in declaration order.
    pub agents: Arc<Vec<ServedAgent>>,
    /// Teams in declaration order.
    pub teams: Arc<Vec<agno_runtime::team::Team>>,
    /// Workflows in declaration order.
    pub workflows: Arc<Vec<agno_runtime::workflow::Workflow>>,
    /// Knowledge bases in declaration order (`/knowledge`, agents' `knowledge`).
    pub knowledge: Arc<Vec<Arc<agno_knowledge::Knowledge>>>,
    /// The database, if configured.
    pub db: Option<Arc<dyn Db>>,
    /// The same database, for its migrations.
    pub migrate: Option<Arc<dyn agno_db::Migrate>>,
    /// The database's id (`/config`, `/databases/{db_id}/migrate`).
    pub db_id: Arc<str>,
    /// The database URL with any password removed.
    pub db_url_redacted: Option<Arc<str>>,
    /// Auth settings.
    pub auth: Arc<AuthSettings>,
    /// When the OS started (RFC 3339, UTC).
    pub started_at: Arc<str>,
    /// Interval of SSE heartbeat comments.
    pub heartbeat: std::time::Duration,
    /// The durable queue of background runs, when the database has one.
    pub queue: Option<crate::queue::Queue>,
    /// `[mcp_server]` settings.
    pub mcp_server: Arc<crate::config::McpServerSettings>,
    /// Whether the A2A interface is served (`[a2a] enabled`).
    pub a2a: bool,
    /// The component answering AG-UI clients (`[agui] enabled`).
    pub agui: Option<AguiTarget>,
    /// The MCP endpoint's service, when `[mcp_server] enabled`.
    pub mcp: Option<crate::mcp_server::McpService>,
    /// The agents and teams published in the database's catalog, served beside the
    /// configuration's (none without a database, or with `[components] enabled = false`).
    pub published: Option<Arc<crate::published::Published>>,
    /// `[components]` settings.
    pub components: Arc<crate::config::ComponentsSettings>,
    /// Where runs are traced (`[tracing] enabled`); its store is [`AppState::db`].
    pub tracing: Option<agno_runtime::Tracing>,
    /// How long traces are kept (`[tracing] retention_days`); none: for ever.
    pub trace_retention: Option<std::time::Duration>,
    /// Where run media offloaded out of the database is kept (`[media_storage]`).
    pub media_storage: Option<crate::media::LocalMediaStorage>,
    /// `[scheduler]` settings (`/schedules/{id}/trigger` executes with them).
    pub scheduler: Arc<crate::config::SchedulerSettings>,
    /// What a request may carry (`[os]` limits).
    pub limits: crate::input::Limits,
    /// Which browser origins may call the OS (CORS, and state-changing requests).
    pub origins: crate::cors::OriginPolicy,
    /// Cancelled near the end of a shutdown, once this process's runs have ended: tails of
    /// other replicas' runs end then (their clients resume elsewhere).
    pub stopping: tokio_util::sync::CancellationToken,
}

impl AppState {
    /// The agent with this id.
    pub fn agent(&self, id: &str) -> Option<&ServedAgent> {
        self.agents.iter().find(|a| a.agent.id() == id)
    }

    /// The team with this id.
    pub fn team(&self, id: &str) -> Option<&agno_runtime::team::Team> {
        self.teams.iter().find(|t| t.id() == id)
    }

    /// The agent with this id, from the configuration or else the catalog (its published
    /// version).
    pub fn any_agent(&self, id: &str) -> Option<ServedAgent> {
        self.agent(id).cloned().or_else(|| self.published.as_ref()?.agent(id).map(|a| a.built))
    }

    /// The team with this id, from the configuration or else the catalog.
    pub fn any_team(&self, id: &str) -> Option<agno_runtime::team::Team> {
        self.team(id).cloned().or_else(|| self.published.as_ref()?.team(id).map(|t| t.built))
    }

    /// The workflow with this id, from the configuration or else the catalog.
    pub fn any_workflow(&self, id: &str) -> Option<agno_runtime::workflow::Workflow> {
        self.workflow(id).cloned().or_else(|| self.published.as_ref()?.workflow(id).map(|w| w.built))
    }

    /// Whether `agentos.toml` defines the component `id` of `kind` (then the catalog's is not
    /// served under that id).
    pub fn configured(&self, kind: agno_core::ComponentKind, id: &str) -> bool {
        match kind {
            agno_core::ComponentKind::Agent => self.agent(id).is_some(),
            agno_core::ComponentKind::Team => self.team(id).is_some(),
            agno_core::ComponentKind::Workflow => self.workflow(id).is_some(),
        }
    }

    /// The version served of catalog component `id` of `kind` (none: not one, or the
    /// configuration's).
    pub fn published_version(&self, kind: agno_core::ComponentKind, id: &str) -> Option<i64> {
        let published = self.published.as_ref()?;
        match kind {
            agno_core::ComponentKind::Agent if self.agent(id).is_none() => published.agent(id).map(|a| a.version),
            agno_core::ComponentKind::Team if self.team(id).is_none() => published.team(id).map(|t| t.version),
            agno_core::ComponentKind::Workflow if self.workflow(id).is_none() => {
                published.workflow(id).map(|w| w.version)
            }
            _ => None,
        }
    }

    /// The published catalog components served now (nothing without one).
    pub fn published_now(&self) -> Arc<crate::published::Snapshot> {
        self.published.as_ref().map(|p| p.snapshot()).unwrap_or_default()
    }

    /// The workflow with this id.
    pub fn workflow(&self, id: &str) -> Option<&agno_runtime::workflow::Workflow> {
        self.workflows.iter().find(|w| w.id() == id)
    }

    /// The model an agent of this OS uses, named by its `provider:id` (or its id, with `provider`
    /// or alone), with that agent's own settings (key, base URL): what a request naming a model
    /// gets when this OS serves it.
    pub fn served_model(&self, model: &str, provider: Option<&str>) -> Option<Arc<dyn agno_core::Model>> {
        let full = provider.map(|p| format!("{}:{model}", p.to_ascii_lowercase()));
        self.agents
            .iter()
            .find(|a| a.model_spec == model || full.as_deref() == Some(a.model_spec.as_str()))
            .map(|a| Arc::clone(a.agent.model()))
    }

    /// How streams are sent (heartbeat, buffer bound).
    pub fn streaming(&self) -> crate::sse::Streaming {
        crate::sse::Streaming { heartbeat: self.heartbeat, buffer_bytes: self.limits.sse_buffer_bytes }
    }

    /// The database, or 400 saying one is needed.
    ///
    /// # Errors
    /// 400 when the OS has no database.
    pub fn require_db(&self) -> Result<&Arc<dyn Db>, crate::error::ApiError> {
        self.db.as_ref().ok_or_else(|| {
            crate::error::ApiError::bad_request("this AgentOS has no database; configure [db] url in agentos.toml")
        })
    }
}

/// The component a run asked of a catalog version runs: the configuration's (it has no
/// versions) when there is one, else that version from the catalog.
fn at_version<'a, T: Send + 'a>(
    configured: Option<T>,
    published: Option<&'a crate::published::Published>,
    build: impl FnOnce(&'a crate::published::Published) -> BoxFuture<'a, Result<T, String>>,
) -> BoxFuture<'a, Result<T, String>> {
    match (configured, published) {
        (Some(configured), _) => Box::pin(std::future::ready(Ok(configured))),
        (None, Some(published)) => build(published),
        (None, None) => {
            Box::pin(std::future::ready(Err("this AgentOS has no database, so no catalog of components".to_owned())))
        }
    }
}

impl crate::queue::Served for AppState {
    fn database(&self) -> Option<&Arc<dyn Db>> {
        self.db.as_ref()
    }
    fn agent_of(&self, id: &str) -> Option<Agent> {
        self.any_agent(id).map(|served| served.agent)
    }
    fn team_of(&self, id: &str) -> Option<agno_runtime::team::Team> {
        self.any_team(id)
    }
    fn workflow_of(&self, id: &str) -> Option<agno_runtime::workflow::Workflow> {
        self.any_workflow(id)
    }
    fn agent_version<'a>(&'a self, id: &'a str, version: i64) -> BoxFuture<'a, Result<Agent, String>> {
        let configured = self.agent(id).map(|a| a.agent.clone());
        at_version(configured, self.published.as_deref(), move |p| {
            Box::pin(async move { p.agent_version(id, version).await.map(|served| served.agent) })
        })
    }
    fn team_version<'a>(
        &'a self,
        id: &'a str,
        version: i64,
    ) -> BoxFuture<'a, Result<agno_runtime::team::Team, String>> {
        at_version(self.team(id).cloned(), self.published.as_deref(), move |p| Box::pin(p.team_version(id, version)))
    }
    fn workflow_version<'a>(
        &'a self,
        id: &'a str,
        version: i64,
    ) -> BoxFuture<'a, Result<agno_runtime::workflow::Workflow, String>> {
        let configured = self.workflow(id).cloned();
        at_version(configured, self.published.as_deref(), move |p| Box::pin(p.workflow_version(id, version)))
    }
    fn knowledge_of(&self, name: &str) -> Option<&Arc<agno_knowledge::Knowledge>> {
        self.knowledge.iter().find(|k| k.name() == name)
    }
    fn knowledge_names(&self) -> Vec<String> {
        self.knowledge.iter().map(|k| k.name().to_owned()).collect()
    }
}

/// The agent or team the AG-UI interface runs.
#[derive(Debug, Clone)]
pub struct AguiTarget {
    /// Agent or team.
    pub kind: agno_core::ComponentKind,
    /// Its id.
    pub id: String,
    /// Its runs go on the durable queue (`[agui] background`).
    pub background: bool,
    /// Where `/agui` and `/status` are mounted (`[agui] prefix`, `""` by default).
    pub prefix: String,
}
