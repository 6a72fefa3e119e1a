//! Building the OS from its configuration: open (never silently migrate) the database, build the
//! agents, assemble the router with the authorisation layer and the body limit.

use std::sync::Arc;

use agno_core::Db;
use axum::Router;

use crate::auth::AuthSettings;
use crate::build::build_agent;
use crate::config::OsConfig;
use crate::state::AppState;

pub use crate::build::StartError;

/// A ready-to-serve OS: its state and router.
#[derive(Debug, Clone)]
pub struct AgentOs {
    /// Shared state.
    pub state: AppState,
    /// Largest accepted body.
    pub max_body_bytes: usize,
    /// Connection limits and timeouts, and the shutdown grace (see [`crate::serve`]).
    pub http: crate::serve::settings::HttpSettings,
    /// Browser origins allowed to call the OS.
    pub cors: crate::cors::OriginPolicy,
    /// Where the control plane's pages are served (`/ui`), when they are.
    pub ui: Option<String>,
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
        let tracing = match (&db, config.tracing.enabled) {
            (Some(db), true) => Some(crate::build::tracing(&config.tracing, config.os.id.as_str(), Arc::clone(db))?),
            (None, true) => {
                return Err(StartError::Config(
                    "[tracing] enabled = true stores traces in the OS's database: configure [db]".to_owned(),
                ));
            }
            (_, false) => None,
        };
        let db_url = config.db.as_ref().map(|d| d.url.as_str());
        let knowledge = crate::build::knowledge::build_knowledge(&config.knowledge, db.as_ref(), db_url).await?;
        let mcp = crate::build::mcp::connect_all(config).await?;
        let user_isolation = config.auth.as_ref().is_some_and(|a| a.user_isolation);
        let agents = config
            .agents
            .iter()
            .map(|spec| build_agent(spec, db.clone(), &knowledge, &mcp, tracing.as_ref(), user_isolation))
            .collect::<Result<Vec<_>, _>>()?;
        let teams = crate::build::team::build_teams(&config.teams, &agents, db.as_ref(), tracing.as_ref())?;
        let workflows =
            crate::build::workflow::build_workflows(&config.workflows, &agents, &teams, db.clone(), tracing.as_ref())?;
        let queue = match migrate.clone().and_then(|m| m.job_store()) {
            Some(store) => Some(crate::queue::Queue::new(store, config.queue.clone()).map_err(StartError::Queue)?),
            None => None,
        };
        let db_id = config.db.as_ref().and_then(|d| d.id.clone()).unwrap_or_else(|| "default".to_owned());
        let cors = config.os.cors_policy().map_err(|e| StartError::Config(e.to_string()))?;
        let ui = config.ui.served_at(&config.os.host).map_err(StartError::Config)?;
        let media_storage =
            match &config.media_storage {
                None => None,
                Some(m) if m.backend.as_deref().is_some_and(|b| b != "local") => {
                    return Err(StartError::Config(format!(
                        "[media_storage] backend {:?} is not one agno-rs has: use \"local\"",
                        m.backend.as_deref().unwrap_or_default()
                    )));
                }
                Some(m) => Some(crate::media::LocalMediaStorage::open(std::path::Path::new(&m.path)).map_err(|e| {
                    StartError::Config(format!("[media_storage] path {:?} cannot be used: {e}", m.path))
                })?),
            };
        let agents = Arc::new(agents);
        let published = match (&db, config.components.enabled) {
            (Some(db), true) => {
                let mut reserved: Vec<String> = agents.iter().map(|a| a.agent.id().to_owned()).collect();
                reserved.extend(teams.iter().map(|t| t.id().to_owned()));
                reserved.extend(workflows.iter().map(|w| w.id().to_owned()));
                let context = crate::published::BuildContext {
                    db: Arc::clone(db),
                    knowledge: Arc::new(knowledge.clone()),
                    tracing: tracing.clone(),
                    configured: Arc::clone(&agents),
                    configured_teams: Arc::new(teams.clone()),
                    reserved,
                    user_isolation,
                };
                let published = Arc::new(crate::published::Published::new(context));
                published
                    .refresh()
                    .await
                    .map_err(|source| StartError::Db { url: url.clone().unwrap_or_default(), source })?;
                Some(published)
            }
            _ => None,
        };
        let state = AppState {
            os_id: config.os.id.as_str().into(),
            name: config.os.name.as_deref().map(Into::into),
            description: config.os.description.as_deref().map(Into::into),
            agents,
            published,
            components: Arc::new(config.components.clone()),
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
            media_storage,
            mcp_server: Arc::new(config.mcp_server.clone()),
            a2a: config.a2a.enabled,
            agui: config.agui.enabled.then(|| {
                let (kind, id) = match (&config.agui.agent, &config.agui.team) {
                    (Some(agent), _) => (agno_core::ComponentKind::Agent, agent.clone()),
                    (None, team) => (agno_core::ComponentKind::Team, team.clone().unwrap_or_default()),
                };
                crate::state::AguiTarget {
                    kind,
                    id,
                    background: config.agui.background,
                    prefix: config.agui.prefix.clone(),
                }
            }),
            mcp: None,
            tracing,
            trace_retention: config
                .tracing
                .retention_days
                .map(|days| std::time::Duration::from_secs(u64::from(days) * 24 * 3600)),
        };
        let mut state = state;
        if config.mcp_server.enabled {
            state.mcp = Some(crate::mcp_server::service(
                crate::routes::loopback(&state),
                &state.mcp_server.allowed_hosts,
                state.stopping.child_token(),
            ));
        }
        let http = crate::serve::settings::HttpSettings::from_config(&config.os);
        Ok(Self { state, max_body_bytes: config.os.max_body_bytes, http, cors, ui })
    }

    /// The HTTP app: every route of [`crate::routes::ROUTES`] behind the authorisation layer,
    /// with the body limit, and CORS outside everything (preflights never reach auth).
    pub fn router(&self) -> Router {
        let routes = crate::routes::guarded(&self.state);
        let routes = match &self.ui {
            Some(base) => routes.merge(crate::ui::router(&self.state, base)),
            None => routes,
        };
        routes
            .fallback(|| async { crate::error::ApiError::not_found("Not Found") })
            // One body limit for every route and encoding: the configured one (axum's own 2 MB
            // default for extractors is lifted).
            .layer(tower_http::limit::RequestBodyLimitLayer::new(self.max_body_bytes))
            .layer(axum::extract::DefaultBodyLimit::disable())
            .layer(tower::layer::layer_fn(crate::error::json_errors))
            .layer(self.cors.layer())
            .layer(tower::layer::layer_fn({
                let policy = self.cors.clone();
                move |inner| crate::cors::preflight_and_expose(policy.clone(), inner)
            }))
            .with_state(self.state.clone())
    }
}

/// A service wrapping a route (or a router) as axum's `layer` and `route_layer` take it.
pub trait Wrapped:
    tower::Service<
        axum::extract::Request,
        Response = axum::response::Response,
        Error = std::convert::Infallible,
        Future: Send + 'static,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<T> Wrapped for T where
    T: tower::Service<
            axum::extract::Request,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
            Future: Send + 'static,
        > + Clone
        + Send
        + Sync
        + 'static
{
}
