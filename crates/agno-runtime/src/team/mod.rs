//! Teams: a leader model that delegates to member agents (or nested teams) through Agno's
//! delegation tools, in Agno's modes `coordinate` (the leader picks members, gives them tasks and
//! answers from their results), `route` (the chosen member's answer is the team's answer) and
//! `broadcast` (every member gets the task).
//!
//! A team run is stored as Agno 3.1's `TeamRunOutput` (one row in `agno_runs`, `team_id`,
//! `member_responses`) in a team session; every member run is also stored as its own row with
//! `parent_run_id` = the team run. The leader reads the team's history (`add_history_to_context`).
//! A cancel of the team run stops its running members (also inside their model or tool calls),
//! and every run stopped is stored `CANCELLED`.
//!
//! ```no_run
//! use std::sync::Arc;
//! use agno_runtime::Agent;
//! use agno_runtime::team::{Team, TeamMode};
//!
//! # async fn demo(model: Arc<dyn agno_core::Model>) -> Result<(), Box<dyn std::error::Error>> {
//! let writer = Agent::builder(model.clone()).id("writer").name("Writer").build()?;
//! let team = Team::builder().id("desk").model(model).mode(TeamMode::Coordinate).member(writer).build()?;
//! let run = team.arun("Write a haiku").await?;
//! # let _ = run;
//! # Ok(())
//! # }
//! ```

mod delegate;
mod engine;
mod resume;
mod tasks;

use std::sync::Arc;

use agno_core::{Db, Model, RunOutput, TeamStreamEvent};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::agent::Agent;
use crate::error::{BuildError, RunError};
use crate::event_stream::{EventStream, spawn_run};
use crate::request::{ContinueRequest, RunRequest};

/// How the leader works with its members (Agno's `TeamMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TeamMode {
    /// The leader picks members, gives each a task, and answers from their results.
    #[default]
    Coordinate,
    /// The leader picks one member, whose answer is the team's answer.
    Route,
    /// Every member gets the same task; the leader answers from all results.
    Broadcast,
    /// The leader works from a shared task list (in the session state): it creates tasks,
    /// has members execute them, and goes on in iterations until the goal is complete.
    Tasks,
}

impl TeamMode {
    /// Agno's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TeamMode::Coordinate => "coordinate",
            TeamMode::Route => "route",
            TeamMode::Broadcast => "broadcast",
            TeamMode::Tasks => "tasks",
        }
    }
}

/// A member of a team: an agent, or a nested team.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Member {
    /// An agent.
    Agent(Agent),
    /// A nested team.
    Team(Team),
}

impl From<Agent> for Member {
    fn from(agent: Agent) -> Self {
        Member::Agent(agent)
    }
}

impl From<Team> for Member {
    fn from(team: Team) -> Self {
        Member::Team(team)
    }
}

impl Member {
    /// The member's id (what the leader names in `delegate_task_to_member`).
    pub fn id(&self) -> &str {
        match self {
            Member::Agent(a) => a.id(),
            Member::Team(t) => t.id(),
        }
    }

    /// The member's name.
    pub fn name(&self) -> Option<&str> {
        match self {
            Member::Agent(a) => a.name(),
            Member::Team(t) => t.name(),
        }
    }

    /// The member's description.
    pub fn description(&self) -> Option<&str> {
        match self {
            Member::Agent(a) => a.description(),
            Member::Team(t) => t.description(),
        }
    }
}

/// A team. Cheap to clone (shared inside).
#[derive(Clone)]
pub struct Team {
    inner: Arc<TeamInner>,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team").field("id", &self.inner.id).field("members", &self.inner.members.len()).finish()
    }
}

pub(crate) struct TeamInner {
    pub(crate) id: String,
    pub(crate) name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) mode: TeamMode,
    pub(crate) members: Vec<Member>,
    pub(crate) model: Arc<dyn Model>,
    pub(crate) instructions: Vec<String>,
    pub(crate) db: Option<Arc<dyn Db>>,
    pub(crate) add_history_to_context: bool,
    pub(crate) num_history_runs: usize,
    pub(crate) session_state: Map<String, Value>,
    pub(crate) max_iterations: u32,
    pub(crate) tracing: Option<crate::Tracing>,
}

/// Builds a [`Team`] with named settings.
#[derive(Default)]
pub struct TeamBuilder {
    id: Option<String>,
    name: Option<String>,
    description: Option<String>,
    mode: TeamMode,
    members: Vec<Member>,
    model: Option<Arc<dyn Model>>,
    instructions: Vec<String>,
    db: Option<Arc<dyn Db>>,
    add_history_to_context: bool,
    num_history_runs: Option<usize>,
    session_state: Map<String, Value>,
    max_iterations: Option<u32>,
    memory: crate::config::MemoryConfig,
    tracing: Option<crate::Tracing>,
}

impl std::fmt::Debug for TeamBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamBuilder").field("id", &self.id).field("members", &self.members.len()).finish()
    }
}

impl TeamBuilder {
    setters! {
        /// Team id (default: a new id).
        id(id: impl Into<String>) => id = Some(id.into());

        /// Display name.
        name(name: impl Into<String>) => name = Some(name.into());

        /// Description.
        description(description: impl Into<String>) => description = Some(description.into());

        /// How the leader works with its members (default `Coordinate`).
        mode(mode: TeamMode) => mode = mode;
    }

    /// Adds a member (an agent or a team).
    pub fn member(mut self, member: impl Into<Member>) -> Self {
        self.members.push(member.into());
        self
    }

    /// Adds members.
    pub fn members(mut self, members: impl IntoIterator<Item = Member>) -> Self {
        self.members.extend(members);
        self
    }

    /// The leader's model.
    pub fn model(mut self, model: Arc<dyn Model>) -> Self {
        self.model = Some(model);
        self
    }

    /// Instructions for the leader.
    pub fn instructions<I, S>(mut self, instructions: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.instructions = instructions.into_iter().map(Into::into).collect();
        self
    }

    setters! {
        /// Storage for the team's sessions and runs.
        db(db: Arc<dyn Db>) => db = Some(db);

        /// Send the team's earlier runs to the leader.
        add_history_to_context(on: bool) => add_history_to_context = on;

        /// How many earlier runs (default 3, as Agno).
        num_history_runs(n: usize) => num_history_runs = Some(n);

        /// Default session state.
        session_state(state: Map<String, Value>) => session_state = state;

        /// Memory settings, with Agent's v3 names (`update_memory_on_run`, `enable_agentic_memory`,
        /// `add_memories_to_context`). Refused when built: team memories are not built yet (an
        /// agent's are).
        memory(config: crate::config::MemoryConfig) => memory = config;

        /// Tasks mode: the most iterations of the leader's work on the task list (default 10, as
        /// Agno).
        max_iterations(n: u32) => max_iterations = Some(n);

        /// Traces the team's runs (its members' runs nested in them) with `tracing`, unless they
        /// start in a context that traces already.
        tracing(tracing: crate::Tracing) => tracing = Some(tracing);
    }

    /// Checks the team and builds it.
    ///
    /// # Errors
    /// [`BuildError::Invalid`] naming the problem: no model, no members, two members with one
    /// id, a team that contains itself, `max_iterations = 0`; [`BuildError::Unsupported`] for the
    /// memory settings.
    pub fn build(self) -> Result<Team, BuildError> {
        let model = self.model.ok_or_else(|| BuildError::Invalid {
            option: "model",
            why: "a team needs a model for its leader".to_owned(),
        })?;
        if self.members.is_empty() {
            return Err(BuildError::Invalid { option: "members", why: "a team needs at least one member".to_owned() });
        }
        let memory = &self.memory;
        if memory.update_memory_on_run || memory.enable_agentic_memory || memory.add_memories_to_context == Some(true) {
            return Err(BuildError::Unsupported {
                option: "update_memory_on_run / enable_agentic_memory / add_memories_to_context",
                why: "team memories are not built yet (agents have them)",
            });
        }
        if self.max_iterations == Some(0) {
            return Err(BuildError::Invalid { option: "max_iterations", why: "must be at least 1".to_owned() });
        }
        let id = self.id.unwrap_or_else(agno_core::new_id);
        let mut seen = std::collections::HashSet::new();
        for member in &self.members {
            if !seen.insert(member.id().to_owned()) {
                return Err(BuildError::Invalid {
                    option: "members",
                    why: format!("two members have the id {:?}; member ids must be unique", member.id()),
                });
            }
            if contains(member, &id) {
                return Err(BuildError::Invalid {
                    option: "members",
                    why: format!("member {:?} contains team {id:?} itself: teams cannot nest in a cycle", member.id()),
                });
            }
        }
        Ok(Team {
            inner: Arc::new(TeamInner {
                id,
                name: self.name,
                description: self.description,
                mode: self.mode,
                members: self.members,
                model,
                instructions: self.instructions,
                db: self.db,
                add_history_to_context: self.add_history_to_context,
                num_history_runs: self.num_history_runs.unwrap_or(3),
                session_state: self.session_state,
                max_iterations: self.max_iterations.unwrap_or(10),
                tracing: self.tracing,
            }),
        })
    }
}

/// True when `member` is (or nests) the team `id`.
fn contains(member: &Member, id: &str) -> bool {
    match member {
        Member::Agent(_) => false,
        Member::Team(t) => t.id() == id || t.inner.members.iter().any(|m| contains(m, id)),
    }
}

/// The events of a team run as they happen (the leader's as Agno's team events, the members' as
/// their own), and its record via [`EventStream::output`].
pub type TeamStream = EventStream<TeamStreamEvent>;

impl Team {
    /// A builder.
    pub fn builder() -> TeamBuilder {
        TeamBuilder::default()
    }

    /// The team id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The display name.
    pub fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }

    /// The description.
    pub fn description(&self) -> Option<&str> {
        self.inner.description.as_deref()
    }

    /// The mode.
    pub fn mode(&self) -> TeamMode {
        self.inner.mode
    }

    /// The members.
    pub fn members(&self) -> &[Member] {
        &self.inner.members
    }

    /// The tools the leader gets in this team's mode (delegation, or the task tools), as the
    /// model sees them.
    pub fn leader_tools(&self) -> Vec<agno_core::ToolDefinition> {
        match self.inner.mode {
            TeamMode::Tasks => tasks::definitions(),
            mode => vec![delegate::definition(mode)],
        }
    }

    /// The leader's model.
    pub fn model(&self) -> &Arc<dyn Model> {
        &self.inner.model
    }

    /// The storage, when configured.
    pub fn db(&self) -> Option<&Arc<dyn Db>> {
        self.inner.db.as_ref()
    }

    /// Runs the team to its end and returns the stored team run (`member_responses` holds the
    /// member runs). `CANCELLED` when cancelled with [`crate::cancel_run`] by its run id.
    ///
    /// # Errors
    /// As [`Agent::arun`] for the leader's run (a failed run travels in the error).
    pub async fn arun(&self, request: impl Into<RunRequest>) -> Result<RunOutput, RunError> {
        engine::execute(Arc::clone(&self.inner), request.into(), None, true).await
    }

    /// The record of a run about to be queued (`PENDING`), as the team stores it: a server writes
    /// it before a background worker picks the run up, so the run is visible at once.
    pub fn pending_run(&self, request: &RunRequest) -> RunOutput {
        let run_id = request.run_id.clone().unwrap_or_else(agno_core::new_id);
        let session_id = request.session_id.clone().unwrap_or_else(agno_core::new_id);
        let mut out = engine::new_record(&self.inner, request, &run_id, &session_id);
        out.status = agno_core::RunStatus::Pending;
        out
    }

    /// A run kept inside its caller's run (a workflow step): a new one (`Ok`) or the continuation
    /// of a paused one (`Err`); nothing of its own is stored. Its events go to `tx` when given.
    pub(crate) async fn run_embedded(
        &self,
        start: Result<RunRequest, ContinueRequest>,
        tx: Option<mpsc::UnboundedSender<TeamStreamEvent>>,
    ) -> Result<RunOutput, RunError> {
        match start {
            Ok(request) => engine::execute(Arc::clone(&self.inner), request, tx, false).await,
            Err(request) => resume::continue_run(Arc::clone(&self.inner), request, tx, false).await,
        }
    }

    /// Blocking version of [`Team::arun`].
    ///
    /// # Errors
    /// As [`Team::arun`].
    pub fn run(&self, request: impl Into<RunRequest>) -> Result<RunOutput, RunError> {
        let request = request.into();
        crate::blocking::block_on(self.arun(request)).map_err(RunError::Internal)?
    }

    /// Continues a team run paused on its members' tool calls (Agno's `Team.continue_run`):
    /// `request.requirements` answers the run's requirements (by their `id`; each carries the
    /// member's `member_agent_id`, `member_agent_name` and `member_run_id`). Each paused member
    /// continues with its answers, then the leader with the members' results. A member that
    /// pauses again returns the team run `PAUSED` on its new requirements.
    ///
    /// # Errors
    /// [`RunError::RunNotFound`] (no such run of this team, or another user's),
    /// [`RunError::NotPaused`], [`RunError::UnresolvedRequirement`] (an active requirement not
    /// answered) or [`RunError::InvalidContinue`] (an answer for a requirement that is not
    /// active), all before anything runs or changes; otherwise as [`Team::arun`].
    pub async fn acontinue_run(&self, request: ContinueRequest) -> Result<RunOutput, RunError> {
        let store = request.store.unwrap_or(true);
        resume::continue_run(Arc::clone(&self.inner), request, None, store).await
    }

    /// Checks that `answers` can continue the paused team run `run` (as
    /// [`Team::acontinue_run`] does before anything runs), so a server can refuse bad answers
    /// before it starts streaming.
    ///
    /// # Errors
    /// As [`Team::acontinue_run`]'s refusals.
    pub fn check_continue(&self, run: &RunOutput, answers: &[agno_core::RunRequirement]) -> Result<(), RunError> {
        resume::check_continuable(&self.inner, run, answers).map(|_| ())
    }

    /// Blocking version of [`Team::acontinue_run`].
    ///
    /// # Errors
    /// As [`Team::acontinue_run`].
    pub fn continue_run(&self, request: ContinueRequest) -> Result<RunOutput, RunError> {
        crate::blocking::block_on(self.acontinue_run(request)).map_err(RunError::Internal)?
    }

    /// Continues a paused team run (as [`Team::acontinue_run`]) and streams its events.
    pub fn continue_run_stream(&self, request: ContinueRequest) -> TeamStream {
        let (tx, rx) = mpsc::unbounded_channel();
        let inner = Arc::clone(&self.inner);
        let store = request.store.unwrap_or(true);
        let task = spawn_run("team continuation", resume::continue_run(inner, request, Some(tx), store));
        EventStream::unbounded(rx, task)
    }

    /// Starts a run on its own task and streams the leader's events (as Agno's team events) and
    /// the members' events, in one `event_index` sequence. Dropping the stream does not stop the
    /// run.
    pub fn run_stream(&self, request: impl Into<RunRequest>) -> TeamStream {
        let (tx, rx) = mpsc::unbounded_channel();
        let inner = Arc::clone(&self.inner);
        let request = request.into();
        let task = spawn_run("team run", engine::execute(inner, request, Some(tx), true));
        EventStream::unbounded(rx, task)
    }
}
