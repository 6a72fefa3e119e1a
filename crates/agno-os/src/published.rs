//! The agents, teams and workflows published in the database's catalog (`/components`), built
//! with the same builders as `agentos.toml`'s and served beside them: in `/agents`, `/teams`,
//! `/workflows`, `/config`, their run routes, the queue's workers and the interfaces. What is
//! served is the component's current (published) version; a team's members and a workflow's step
//! agents and teams are built at the versions its version pins.
//!
//! Every replica keeps its own [`Snapshot`] and refreshes it when the catalog changes: after each
//! catalog write it answers, when PostgreSQL announces another replica's write (`LISTEN`), and by
//! polling the catalog's listing (`[components] poll_interval_ms`), so a component published or
//! rolled back through one replica is served by every replica without restart. A refresh rebuilds only what changed;
//! a version that fails to build (a key its config names went missing, a member archived) is
//! logged and the version served before stays served. A component `agentos.toml` also defines
//! is the configuration's (the catalog's is not served under that id).

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use agno_core::{ComponentQuery, ComponentRecord, ConfigChoice, Db, DbResult};
use agno_runtime::team::Team;
use tokio_util::sync::CancellationToken;

use crate::config::stored::{agent_spec, team_spec, workflow_spec};
use crate::state::ServedAgent;

/// A component served from the catalog: what was built of its served version.
#[derive(Debug, Clone)]
pub struct Versioned<T> {
    /// The version served.
    pub version: i64,
    /// The component's row.
    pub record: ComponentRecord,
    /// The built agent, team or workflow.
    pub built: T,
}

/// An agent served from the catalog.
pub type PublishedAgent = Versioned<ServedAgent>;
/// A team served from the catalog.
pub type PublishedTeam = Versioned<Team>;
/// A workflow served from the catalog.
pub type PublishedWorkflow = Versioned<agno_runtime::workflow::Workflow>;

/// What `record` serves after a refresh: `old` when it already serves `version` (with the new
/// row); else what `build` makes of `version`; else, the build having failed (logged), `old`, the
/// version served before (none when there was none).
async fn next_version<T: Clone>(
    old: Option<&Versioned<T>>,
    record: &ComponentRecord,
    version: i64,
    build: impl std::future::Future<Output = Result<T, String>>,
) -> Option<Versioned<T>> {
    if let Some(same) = old.filter(|o| o.version == version) {
        return Some(Versioned { record: record.clone(), ..same.clone() });
    }
    match build.await {
        Ok(built) => Some(Versioned { version, record: record.clone(), built }),
        Err(message) => {
            let (kind, id) = (&record.component_type, &record.component_id);
            tracing::warn!(%kind, %id, version, %message, "cannot build a published component; the version served before stays served");
            old.cloned()
        }
    }
}

/// `config` with Agno's default model (`OpenAIResponses` `gpt-5.4`, what an Agno agent or team
/// leader without a model runs on) when it names none: a draft saved without one, or a version
/// a Python AgentOS published (agno-rs refuses to publish one, naming the field).
fn with_agno_default_model(
    mut config: serde_json::Map<String, serde_json::Value>,
) -> serde_json::Map<String, serde_json::Value> {
    if !config.contains_key("model") && !config.contains_key("a2a_url") {
        let default = serde_json::json!({"provider": "openai-responses", "id": "gpt-5.4"});
        config.insert("model".to_owned(), default);
    }
    config
}

/// What one replica serves from the catalog, as of its last refresh.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Agents by id.
    pub agents: BTreeMap<String, PublishedAgent>,
    /// Teams by id.
    pub teams: BTreeMap<String, PublishedTeam>,
    /// Workflows by id.
    pub workflows: BTreeMap<String, PublishedWorkflow>,
    /// What the catalog's listing said (id, current version, last change) when this was built.
    seen: Vec<(String, Option<i64>, Option<i64>)>,
}

/// What a catalog component is built with: the OS's database, knowledge bases, tracing and the
/// agents of its configuration (team members may name them).
#[derive(Debug, Clone)]
pub struct BuildContext {
    /// The OS database (the catalog's, and the built components').
    pub db: Arc<dyn Db>,
    /// The knowledge bases agents may name.
    pub knowledge: Arc<Vec<Arc<agno_knowledge::Knowledge>>>,
    /// Where runs are traced.
    pub tracing: Option<agno_runtime::Tracing>,
    /// The agents of `agentos.toml`.
    pub configured: Arc<Vec<ServedAgent>>,
    /// The teams of `agentos.toml` (workflow steps may name them).
    pub configured_teams: Arc<Vec<Team>>,
    /// The ids `agentos.toml` serves (agents, teams, workflows): the catalog's are not served
    /// under them.
    pub reserved: Vec<String>,
    /// `[auth] user_isolation`: agent filesystems are partitioned by user when on.
    pub user_isolation: bool,
}

/// The catalog's published components, built, for one replica.
#[derive(Debug)]
pub struct Published {
    context: BuildContext,
    snapshot: RwLock<Arc<Snapshot>>,
    refreshing: tokio::sync::Mutex<()>,
    /// Versions built for runs asked of a version no longer served (a few, newest kept).
    earlier: tokio::sync::Mutex<Earlier>,
}

/// Versions built for runs asked of them after another was published.
#[derive(Debug, Default)]
struct Earlier {
    agents: BTreeMap<(String, i64), ServedAgent>,
    teams: BTreeMap<(String, i64), Team>,
    workflows: BTreeMap<(String, i64), agno_runtime::workflow::Workflow>,
}

/// How many earlier versions of each kind are kept built.
const EARLIER_KEPT: usize = 32;

impl Published {
    /// Nothing served yet: [`Published::refresh`] builds what the catalog holds.
    pub fn new(context: BuildContext) -> Self {
        Self {
            context,
            snapshot: RwLock::default(),
            refreshing: tokio::sync::Mutex::new(()),
            earlier: tokio::sync::Mutex::default(),
        }
    }

    /// What is served now.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        match self.snapshot.read() {
            Ok(s) => Arc::clone(&s),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// The published agent `id`.
    pub fn agent(&self, id: &str) -> Option<PublishedAgent> {
        self.snapshot().agents.get(id).cloned()
    }

    /// The published team `id`.
    pub fn team(&self, id: &str) -> Option<PublishedTeam> {
        self.snapshot().teams.get(id).cloned()
    }

    /// The published workflow `id`.
    pub fn workflow(&self, id: &str) -> Option<PublishedWorkflow> {
        self.snapshot().workflows.get(id).cloned()
    }

    /// Agent `id` at `version` (published or a draft): the one served when it is that version,
    /// else built (and kept when published).
    ///
    /// # Errors
    /// Why that version cannot be built (it is not stored, or its config no longer builds).
    pub async fn agent_version(&self, id: &str, version: i64) -> Result<ServedAgent, String> {
        if let Some(a) = self.agent(id).filter(|a| a.version == version) {
            return Ok(a.built);
        }
        self.earlier_or(|e| &mut e.agents, id, version, self.agent_at(id, version)).await
    }

    /// Team `id` at `version`, as [`Published::agent_version`].
    ///
    /// # Errors
    /// As [`Published::agent_version`].
    pub async fn team_version(&self, id: &str, version: i64) -> Result<Team, String> {
        if let Some(t) = self.team(id).filter(|t| t.version == version) {
            return Ok(t.built);
        }
        let record = self.record(id).await?;
        self.earlier_or(|e| &mut e.teams, id, version, self.team_at(&record, version, &mut BTreeMap::new())).await
    }

    /// Workflow `id` at `version`, as [`Published::agent_version`]: its steps' components at the
    /// versions it pins, else the ones served now.
    ///
    /// # Errors
    /// As [`Published::agent_version`].
    pub async fn workflow_version(&self, id: &str, version: i64) -> Result<agno_runtime::workflow::Workflow, String> {
        if let Some(w) = self.workflow(id).filter(|w| w.version == version) {
            return Ok(w.built);
        }
        let record = self.record(id).await?;
        let (now, mut versions) = (self.snapshot(), BTreeMap::new());
        let build = self.workflow_at(&record, version, &now, &mut versions);
        self.earlier_or(|e| &mut e.workflows, id, version, build).await
    }

    /// The catalog row of `id` (archived too: a run queued before the archive still runs).
    async fn record(&self, id: &str) -> Result<ComponentRecord, String> {
        let found = self.context.db.get_component(id, None, true).await.map_err(|e| e.to_string())?;
        found.ok_or_else(|| format!("component {id} is not in the catalog"))
    }

    /// What `slot` keeps of `id` at `version`, else what `build` makes of it, kept when that
    /// version is published (a draft may still change, so it is built for each run). The build
    /// runs without the lock: a workflow's build asks for its teams' versions.
    async fn earlier_or<T: Clone>(
        &self,
        slot: fn(&mut Earlier) -> &mut BTreeMap<(String, i64), T>,
        id: &str,
        version: i64,
        build: impl std::future::Future<Output = Result<T, String>>,
    ) -> Result<T, String> {
        let key = (id.to_owned(), version);
        if let Some(kept) = slot(&mut *self.earlier.lock().await).get(&key) {
            return Ok(kept.clone());
        }
        let built = build.await?;
        let configs = self.context.db.component_configs(id, false).await.map_err(|e| e.to_string())?;
        if configs.iter().any(|c| c.version == version && c.published()) {
            let mut earlier = self.earlier.lock().await;
            let kept = slot(&mut earlier);
            if kept.len() >= EARLIER_KEPT {
                kept.clear();
            }
            kept.insert(key, built.clone());
        }
        Ok(built)
    }

    /// Reads the catalog and rebuilds what changed since the last refresh; whether anything did.
    ///
    /// # Errors
    /// The catalog cannot be read (what is served stays as it was).
    pub async fn refresh(&self) -> DbResult<bool> {
        let _turn = self.refreshing.lock().await;
        let db = &self.context.db;
        let (listed, _) = db.list_components(&ComponentQuery::default()).await?;
        let live: Vec<ComponentRecord> = listed
            .into_iter()
            .filter(|c| c.current_version.is_some() && !self.context.reserved.contains(&c.component_id))
            .collect();
        let seen: Vec<_> = live.iter().map(|c| (c.component_id.clone(), c.current_version, c.updated_at)).collect();
        let before = self.snapshot();
        if seen == before.seen {
            return Ok(false);
        }
        let mut next = Snapshot { seen, ..Snapshot::default() };
        let mut versions: BTreeMap<(String, i64), ServedAgent> = BTreeMap::new();
        let of = |kind: &'static str| live.iter().filter(move |c| c.component_type == kind);
        // Agents first: teams and workflows are built of them.
        for c in of("agent") {
            let (Some(version), id) = (c.current_version, &c.component_id) else { continue };
            if let Some(a) = next_version(before.agents.get(id), c, version, self.agent_at(id, version)).await {
                versions.insert((id.clone(), version), a.built.clone());
                next.agents.insert(id.clone(), a);
            }
        }
        for c in of("team") {
            let (Some(version), id) = (c.current_version, &c.component_id) else { continue };
            let team = next_version(before.teams.get(id), c, version, self.team_at(c, version, &mut versions)).await;
            next.teams.extend(team.map(|t| (id.clone(), t)));
        }
        // Workflows last: their steps may run the teams just built.
        for c in of("workflow") {
            let (Some(version), id) = (c.current_version, &c.component_id) else { continue };
            let build = self.workflow_at(c, version, &next, &mut versions);
            let workflow = next_version(before.workflows.get(id), c, version, build).await;
            next.workflows.extend(workflow.map(|w| (id.clone(), w)));
        }
        let published = Arc::new(next);
        match self.snapshot.write() {
            Ok(mut s) => *s = published,
            Err(poisoned) => *poisoned.into_inner() = published,
        }
        Ok(true)
    }

    /// The stored config of `id` at `version`, with the version's links when `links`.
    async fn stored(
        &self,
        id: &str,
        version: i64,
        links: bool,
    ) -> Result<(serde_json::Map<String, serde_json::Value>, Vec<agno_core::ComponentLink>), String> {
        let db = &self.context.db;
        let configs = db.component_configs(id, false).await.map_err(|e| e.to_string())?;
        let config = ConfigChoice::Version(version)
            .pick(&configs, None)
            .ok_or_else(|| format!("version {version} is not stored"))?
            .config
            .clone();
        let links = if links { db.component_links(id, version).await.map_err(|e| e.to_string())? } else { Vec::new() };
        Ok((config, links))
    }

    /// Agent `id` built at `version`.
    async fn agent_at(&self, id: &str, version: i64) -> Result<ServedAgent, String> {
        let ctx = &self.context;
        let (config, _) = self.stored(id, version, false).await?;
        let spec = agent_spec(id, &with_agno_default_model(config)).map_err(|e| e.to_string())?;
        let mcp = crate::build::mcp::McpToolkits::default();
        crate::build::build_agent(
            &spec,
            Some(Arc::clone(&ctx.db)),
            &ctx.knowledge,
            &mcp,
            ctx.tracing.as_ref(),
            ctx.user_isolation,
        )
        .map_err(|e| e.to_string())
    }

    /// Team `c` built at `version`, its members at the versions the version's links pin
    /// (`versions`: agents built so far, by id and version).
    async fn team_at(
        &self,
        c: &ComponentRecord,
        version: i64,
        versions: &mut BTreeMap<(String, i64), ServedAgent>,
    ) -> Result<Team, String> {
        let ctx = &self.context;
        let id = &c.component_id;
        let (config, links) = self.stored(id, version, true).await?;
        let spec = team_spec(id, &with_agno_default_model(config)).map_err(|e| e.to_string())?;
        let mut members: Vec<ServedAgent> = Vec::new();
        for (i, member) in spec.members.iter().enumerate() {
            if let Some(agent) = ctx.configured.iter().find(|a| a.agent.id() == member) {
                members.push(agent.clone());
                continue;
            }
            let pinned = links.iter().find(|l| &l.child_component_id == member).and_then(|l| l.child_version);
            let Some(pinned) = pinned else {
                return Err(format!("members[{i}]: {member:?} is neither served nor pinned at a published version"));
            };
            let key = (member.clone(), pinned);
            let agent = match versions.get(&key) {
                Some(a) => a.clone(),
                None => {
                    let a = self
                        .agent_at(member, pinned)
                        .await
                        .map_err(|e| format!("members[{i}]: {member} v{pinned}: {e}"))?;
                    versions.insert(key, a.clone());
                    a
                }
            };
            members.push(agent);
        }
        let teams =
            crate::build::team::build_teams(std::slice::from_ref(&spec), &members, Some(&ctx.db), ctx.tracing.as_ref())
                .map_err(|e| e.to_string())?;
        teams.into_iter().next().ok_or_else(|| "the team was not built".to_owned())
    }
}

impl Published {
    /// Workflow `c` built at `version`: its steps' agents at the versions its links pin (else the
    /// ones served), its teams the configuration's or the catalog's (`next`, being built).
    async fn workflow_at(
        &self,
        c: &ComponentRecord,
        version: i64,
        next: &Snapshot,
        versions: &mut BTreeMap<(String, i64), ServedAgent>,
    ) -> Result<agno_runtime::workflow::Workflow, String> {
        let ctx = &self.context;
        let id = &c.component_id;
        let (config, links) = self.stored(id, version, true).await?;
        let spec = workflow_spec(id, &config).map_err(|e| e.to_string())?;
        let mut agents: Vec<ServedAgent> = ctx.configured.as_ref().clone();
        let mut teams: Vec<Team> = ctx.configured_teams.as_ref().clone();
        for link in &links {
            let Some(pinned) = link.child_version else { continue };
            let child = &link.child_component_id;
            match link.link_kind.as_str() {
                "step_agent" if !agents.iter().any(|a| a.agent.id() == child) => {
                    let key = (child.clone(), pinned);
                    let agent = match versions.get(&key) {
                        Some(a) => a.clone(),
                        None => self
                            .agent_at(child, pinned)
                            .await
                            .map_err(|e| format!("step agent {child} v{pinned}: {e}"))?,
                    };
                    versions.insert(key, agent.clone());
                    agents.push(agent);
                }
                "step_team" if !teams.iter().any(|t| t.id() == child) => {
                    let team = self
                        .team_version(child, pinned)
                        .await
                        .map_err(|e| format!("step team {child} v{pinned}: {e}"))?;
                    teams.push(team);
                }
                _ => {}
            }
        }
        // Steps naming a catalog component that is not pinned (published after this version)
        // run the version served now.
        for (child, a) in &next.agents {
            if !agents.iter().any(|x| x.agent.id() == child) {
                agents.push(a.built.clone());
            }
        }
        for (child, t) in &next.teams {
            if !teams.iter().any(|x| x.id() == child) {
                teams.push(t.built.clone());
            }
        }
        let built = crate::build::workflow::build_workflows(
            std::slice::from_ref(&spec),
            &agents,
            &teams,
            Some(Arc::clone(&ctx.db)),
            ctx.tracing.as_ref(),
        )
        .map_err(|e| e.to_string())?;
        built.into_iter().next().ok_or_else(|| "the workflow was not built".to_owned())
    }
}

/// Refreshes `published` when the database announces a catalog write (PostgreSQL) and every
/// `every` in any case, until `stop`: a replica's view of what others publish.
pub(crate) async fn follow(published: Arc<Published>, every: Duration, stop: CancellationToken) {
    use futures::StreamExt;
    let mut announced = match published.context.db.catalog_changes().await {
        Ok(stream) => stream,
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for catalog writes; polling the catalog only");
            None
        }
    };
    loop {
        let heard = async {
            match announced.as_mut() {
                Some(stream) => stream.next().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(every) => {}
            change = heard => {
                if change.is_none() {
                    // The subscription ended: polling alone from now on.
                    announced = None;
                }
            }
        }
        if let Err(e) = published.refresh().await {
            tracing::warn!(error = %e, "cannot read the component catalog; serving what was published before");
        }
    }
}
