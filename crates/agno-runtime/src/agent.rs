//! `Agent` and its builder. An `Agent` is immutable once built and cheap to clone (an `Arc`);
//! every run gets its own state, so one agent serves many concurrent runs.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use agno_core::{Db, DynTool, Model};
use agno_models::model_from_str;
use agno_tools::{Function, ToolHook, Toolkit};
use serde_json::{Map, Value};

use crate::config::{
    HistoryConfig, KnowledgeConfig, MemoryConfig, OutputSchema, PastSessionsConfig, ReasoningConfig, RetryConfig,
    SummaryConfig, ToolConfig,
};
use crate::error::BuildError;
use crate::hooks::{PostHook, PreHook};

#[derive(Debug)]
pub(crate) struct AgentInner {
    pub(crate) id: String,
    pub(crate) name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) role: Option<String>,
    pub(crate) instructions: Vec<String>,
    pub(crate) system_message: Option<String>,
    pub(crate) expected_output: Option<String>,
    pub(crate) additional_context: Option<String>,
    pub(crate) markdown: bool,
    pub(crate) add_name_to_context: bool,
    pub(crate) add_datetime_to_context: bool,
    pub(crate) add_session_state_to_context: bool,
    pub(crate) enable_agentic_state: bool,
    pub(crate) model: Arc<dyn Model>,
    pub(crate) tools: Vec<Arc<dyn DynTool>>,
    pub(crate) tool_instructions: Vec<String>,
    pub(crate) tool_config: ToolConfig,
    pub(crate) history: HistoryConfig,
    pub(crate) past_sessions: PastSessionsConfig,
    pub(crate) reasoning: ReasoningConfig,
    pub(crate) retry: RetryConfig,
    pub(crate) output_schema: Option<OutputSchema>,
    pub(crate) pre_hooks: Vec<Arc<dyn PreHook>>,
    pub(crate) post_hooks: Vec<Arc<dyn PostHook>>,
    pub(crate) db: Option<Arc<dyn Db>>,
    pub(crate) session_id: Option<String>,
    pub(crate) user_id: Option<String>,
    pub(crate) session_state: Map<String, Value>,
    pub(crate) dependencies: BTreeMap<String, Value>,
    pub(crate) store_events: bool,
    pub(crate) metadata: Option<Map<String, Value>>,
    /// Asked when the model answers without a tool call (a team's tasks mode).
    pub(crate) follow_up: Option<Arc<dyn FollowUp>>,
    /// A team's leader: its runs are the team's, traced under the team's span, not as runs of
    /// their own.
    pub(crate) leads_team: bool,
    /// Where its runs are traced when the context they start in does not trace.
    pub(crate) tracing: Option<crate::Tracing>,
    /// User memories: what to do with them, and who manages them (set when any is on).
    pub(crate) memory: MemoryConfig,
    pub(crate) memory_manager: Option<crate::memory::MemoryManager>,
    /// Session summaries: settings, and the manager (set when summaries are enabled).
    pub(crate) summaries: SummaryConfig,
    pub(crate) summary_manager: Option<crate::summary::SessionSummaryManager>,
    /// The knowledge base and how it is used.
    pub(crate) knowledge: Option<Arc<dyn agno_core::KnowledgeBase>>,
    pub(crate) knowledge_config: KnowledgeConfig,
    /// Folding older history into a summary (Agno's `compaction`).
    pub(crate) compaction: Option<crate::Compaction>,
    /// Its durable files (Agno's `filesystem`), when it has them.
    pub(crate) filesystem: Option<agno_core::FileSystemSettings>,
    /// What it learns about its users (Agno's `learning`), when it learns.
    pub(crate) learning: Option<crate::learning::LearningMachine>,
}

/// Asked when the model answers without calling a tool: a message to send it next instead of
/// ending the run (a team in tasks mode keeps its leader working until its task list is done).
pub(crate) trait FollowUp: Send + Sync + std::fmt::Debug {
    /// The next message, or `None` to end the run. `state`: the run's session state;
    /// `tool_calls`: the tool calls the run made so far.
    fn next(&self, state: &Map<String, Value>, tool_calls: usize) -> Option<String>;
}

/// An agent: a model with instructions, tools, history and storage.
///
/// ```
/// use agno_core::RunStatus;
/// use agno_runtime::Agent;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let agent = Agent::builder("test").name("Helper").instructions(["Be brief."]).build()?;
/// let output = agent.run("What is 2+2?")?;
/// assert_eq!(output.status, RunStatus::Completed);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Agent {
    pub(crate) inner: Arc<AgentInner>,
}

impl Agent {
    /// Starts building an agent on `model` (a `"provider:model_id"` string or an
    /// `Arc<dyn Model>`).
    pub fn builder(model: impl Into<ModelChoice>) -> AgentBuilder {
        AgentBuilder::new(model.into())
    }

    /// The agent id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The record of `request` before it runs (`PENDING`): what a queued run shows until a
    /// worker starts it, in the shape the run itself will store.
    pub fn pending_run(&self, request: &crate::RunRequest) -> agno_core::RunOutput {
        let run_id = request.run_id.clone().unwrap_or_else(agno_core::new_id);
        let session_id = request.session_id.clone().unwrap_or_else(agno_core::new_id);
        let mut out = agno_core::RunOutput::new(&run_id, &session_id);
        out.agent_id = Some(self.inner.id.clone());
        out.agent_name.clone_from(&self.inner.name);
        out.user_id.clone_from(&request.user_id);
        out.model = Some(self.inner.model.id().to_owned());
        out.model_provider = Some(self.inner.model.provider().to_owned());
        out.input = Some(request.input.clone());
        out.metadata = request.metadata.clone().or_else(|| self.inner.metadata.clone());
        out.status = agno_core::RunStatus::Pending;
        out
    }

    /// The agent name.
    pub fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }

    /// The description.
    pub fn description(&self) -> Option<&str> {
        self.inner.description.as_deref()
    }

    /// The model.
    pub fn model(&self) -> &Arc<dyn Model> {
        &self.inner.model
    }

    /// The tools the model can call.
    pub fn tools(&self) -> &[Arc<dyn DynTool>] {
        &self.inner.tools
    }

    /// Its durable files' settings (Agno's `filesystem`), when it has them.
    pub fn filesystem(&self) -> Option<&agno_core::FileSystemSettings> {
        self.inner.filesystem.as_ref()
    }

    /// The storage backend, if any.
    pub fn db(&self) -> Option<&Arc<dyn Db>> {
        self.inner.db.as_ref()
    }

    /// The agent's compaction, if it compacts.
    pub fn compaction(&self) -> Option<&crate::Compaction> {
        self.inner.compaction.as_ref()
    }

    /// Folds the older history of session `session_id` (of `user_id`) into a summary now
    /// (Agno's `agent.compact()`), without waiting for the threshold. A fold the rules decline
    /// (nothing before the kept tail, already folded, not compaction-enabled) is an outcome, not
    /// an error.
    ///
    /// # Errors
    /// A [`crate::CompactError`]: no db, or reading the session or storing the record failed.
    pub async fn compact(
        &self,
        session_id: &str,
        user_id: Option<&str>,
    ) -> Result<crate::CompactionOutcome, crate::CompactError> {
        crate::compaction::compact_session(&self.inner, session_id, user_id).await
    }

    /// The agent's settings, read-only (what AgentOS describes in `/agents`).
    pub fn settings(&self) -> AgentSettings<'_> {
        let a = &self.inner;
        AgentSettings {
            role: a.role.as_deref(),
            instructions: &a.instructions,
            system_message: a.system_message.as_deref(),
            expected_output: a.expected_output.as_deref(),
            additional_context: a.additional_context.as_deref(),
            markdown: a.markdown,
            add_name_to_context: a.add_name_to_context,
            add_datetime_to_context: a.add_datetime_to_context,
            tools: &a.tool_config,
            history: &a.history,
            past_sessions: &a.past_sessions,
            reasoning: &a.reasoning,
            retry: &a.retry,
            output_schema: a.output_schema.as_ref(),
            metadata: a.metadata.as_ref(),
            memory: &a.memory,
            memory_model: a.memory_manager.as_ref().map(crate::memory::MemoryManager::model),
            summaries: &a.summaries,
            knowledge: a.knowledge.as_ref().map(|k| k.name()),
            knowledge_config: &a.knowledge_config,
        }
    }
}

/// An agent's settings, borrowed from it ([`Agent::settings`]).
#[derive(Debug, Clone, Copy)]
pub struct AgentSettings<'a> {
    /// `role`.
    pub role: Option<&'a str>,
    /// `instructions`.
    pub instructions: &'a [String],
    /// `system_message`, when it replaces the built one.
    pub system_message: Option<&'a str>,
    /// `expected_output`.
    pub expected_output: Option<&'a str>,
    /// `additional_context`.
    pub additional_context: Option<&'a str>,
    /// `markdown`.
    pub markdown: bool,
    /// `add_name_to_context`.
    pub add_name_to_context: bool,
    /// `add_datetime_to_context`.
    pub add_datetime_to_context: bool,
    /// Tool execution settings.
    pub tools: &'a ToolConfig,
    /// History settings.
    pub history: &'a HistoryConfig,
    /// Past-session search settings.
    pub past_sessions: &'a PastSessionsConfig,
    /// Reasoning settings.
    pub reasoning: &'a ReasoningConfig,
    /// Retry settings.
    pub retry: &'a RetryConfig,
    /// The output schema.
    pub output_schema: Option<&'a OutputSchema>,
    /// `metadata`.
    pub metadata: Option<&'a Map<String, Value>>,
    /// User-memory settings.
    pub memory: &'a MemoryConfig,
    /// The memory manager's model, when memories are on.
    pub memory_model: Option<&'a Arc<dyn Model>>,
    /// Session-summary settings (resolved: `add_session_summary_to_context` is set).
    pub summaries: &'a SummaryConfig,
    /// The knowledge base's name, when the agent has one.
    pub knowledge: Option<&'a str>,
    /// How the knowledge base is used.
    pub knowledge_config: &'a KnowledgeConfig,
}

/// A model given as a string or as an instance.
#[derive(Debug, Clone)]
pub enum ModelChoice {
    /// `"provider:model_id"`, resolved at build time.
    Spec(String),
    /// A ready model.
    Instance(Arc<dyn Model>),
}

impl From<&str> for ModelChoice {
    fn from(s: &str) -> Self {
        ModelChoice::Spec(s.to_owned())
    }
}

impl From<String> for ModelChoice {
    fn from(s: String) -> Self {
        ModelChoice::Spec(s)
    }
}

impl From<Arc<dyn Model>> for ModelChoice {
    fn from(m: Arc<dyn Model>) -> Self {
        ModelChoice::Instance(m)
    }
}

impl<M: Model + 'static> From<Arc<M>> for ModelChoice {
    fn from(m: Arc<M>) -> Self {
        ModelChoice::Instance(m)
    }
}

/// Builder of [`Agent`], with Agno's v3 parameter names.
#[derive(Debug)]
pub struct AgentBuilder {
    model: ModelChoice,
    inner: AgentInnerDraft,
}

#[derive(Debug, Default)]
struct AgentInnerDraft {
    id: Option<String>,
    name: Option<String>,
    description: Option<String>,
    role: Option<String>,
    instructions: Vec<String>,
    system_message: Option<String>,
    expected_output: Option<String>,
    additional_context: Option<String>,
    markdown: bool,
    add_name_to_context: bool,
    add_datetime_to_context: bool,
    add_session_state_to_context: bool,
    enable_agentic_state: bool,
    tools: Vec<Arc<dyn DynTool>>,
    tool_instructions: Vec<String>,
    tool_config: ToolConfig,
    history: HistoryConfig,
    memory: MemoryConfig,
    past_sessions: PastSessionsConfig,
    reasoning: ReasoningConfig,
    retry: RetryConfig,
    output_schema: Option<OutputSchema>,
    pre_hooks: Vec<Arc<dyn PreHook>>,
    post_hooks: Vec<Arc<dyn PostHook>>,
    db: Option<Arc<dyn Db>>,
    session_id: Option<String>,
    user_id: Option<String>,
    session_state: Map<String, Value>,
    dependencies: BTreeMap<String, Value>,
    store_events: bool,
    metadata: Option<Map<String, Value>>,
    follow_up: Option<Arc<dyn FollowUp>>,
    leads_team: bool,
    tracing: Option<crate::Tracing>,
    memory_manager: Option<crate::memory::MemoryManager>,
    summaries: SummaryConfig,
    summary_manager: Option<crate::summary::SessionSummaryManager>,
    knowledge: Option<Arc<dyn agno_core::KnowledgeBase>>,
    knowledge_config: KnowledgeConfig,
    compaction: Option<crate::Compaction>,
    filesystem: Option<agno_core::FileSystemSettings>,
    learning: Option<crate::learning::LearningConfig>,
}

impl AgentBuilder {
    fn new(model: ModelChoice) -> Self {
        Self { model, inner: AgentInnerDraft::default() }
    }

    setters! {
        /// Agent id (default: derived from the name, else a random id).
        id(value: impl Into<String>) => inner.id = Some(value.into());

        /// Agent name.
        name(value: impl Into<String>) => inner.name = Some(value.into());

        /// Description, the first part of the system message.
        description(value: impl Into<String>) => inner.description = Some(value.into());

        /// Role, added to the system message.
        role(value: impl Into<String>) => inner.role = Some(value.into());

        /// A complete system message, replacing the assembled one.
        system_message(value: impl Into<String>) => inner.system_message = Some(value.into());

        /// What the output should look like.
        expected_output(value: impl Into<String>) => inner.expected_output = Some(value.into());

        /// Extra context appended to the system message.
        additional_context(value: impl Into<String>) => inner.additional_context = Some(value.into());

        /// Ask for Markdown output.
        markdown(value: bool) => inner.markdown = value;

        /// Tell the model its name.
        add_name_to_context(value: bool) => inner.add_name_to_context = value;

        /// Tell the model the current date and time.
        add_datetime_to_context(value: bool) => inner.add_datetime_to_context = value;

        /// Add the session state to the system message.
        add_session_state_to_context(value: bool) => inner.add_session_state_to_context = value;

        /// Durable files in the agent's database (Agno's `Agent(filesystem=...)`): the tools
        /// over them, and the instructions on using them in the system message.
        filesystem(settings: agno_core::FileSystemSettings) => inner.filesystem = Some(settings);

        /// Learn about the run's users (Agno's `learning`): their profile, memories and the
        /// entities they mention, kept in the agent's database and put in its system message.
        learning(config: crate::learning::LearningConfig) => inner.learning = Some(config);

        /// Give the model the `update_session_state` tool (Agno's `enable_agentic_state`).
        enable_agentic_state(value: bool) => inner.enable_agentic_state = value;

        /// Default session id of runs that name none.
        session_id(value: impl Into<String>) => inner.session_id = Some(value.into());

        /// Default user id of runs that name none.
        user_id(value: impl Into<String>) => inner.user_id = Some(value.into());

        /// Keep the events of streamed runs on the stored run, content deltas excepted (`store_events`, as Agno: non-streaming runs store none).
        store_events(value: bool) => inner.store_events = value;
    }

    /// Instructions, one per line of the system message.
    pub fn instructions<I, S>(mut self, instructions: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.inner.instructions = instructions.into_iter().map(Into::into).collect();
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: impl DynTool + 'static) -> Self {
        self.inner.tools.push(Arc::new(tool));
        self
    }

    /// Adds a shared tool.
    pub fn tool_arc(mut self, tool: Arc<dyn DynTool>) -> Self {
        self.inner.tools.push(tool);
        self
    }

    /// Traces the agent's runs with `tracing` (as OpenTelemetry spans, stored or exported),
    /// unless they start in a context that traces already (a team's member runs under its
    /// leader's delegation).
    pub fn tracing(mut self, tracing: crate::Tracing) -> Self {
        self.inner.tracing = Some(tracing);
        self
    }

    /// Makes the agent a team's leader (its runs are traced as the team's).
    pub(crate) fn leads_team(mut self) -> Self {
        self.inner.leads_team = true;
        self
    }

    /// Keeps the run going after an answer without tool calls while `follow_up` has a message.
    pub(crate) fn follow_up(mut self, follow_up: Arc<dyn FollowUp>) -> Self {
        self.inner.follow_up = Some(follow_up);
        self
    }

    /// Adds a function tool.
    pub fn function(self, function: Function) -> Self {
        self.tool(function)
    }

    /// Adds the enabled tools of a toolkit, and its instructions.
    pub fn toolkit(mut self, toolkit: &Toolkit) -> Self {
        self.inner.tools.extend(toolkit.tools());
        if let Some(instructions) = toolkit.instructions() {
            self.inner.tool_instructions.push(instructions.to_owned());
        }
        self
    }

    setters! {
        /// Tool execution settings.
        tool_config(config: ToolConfig) => inner.tool_config = config;

        /// At most `limit` tool calls per run.
        tool_call_limit(limit: usize) => inner.tool_config.tool_call_limit = Some(limit);

        /// The approval of a paused `required` call expires after `timeout` undecided (the call
        /// is then rejected).
        approval_timeout(timeout: std::time::Duration) => inner.tool_config.approval_timeout = Some(timeout);

        /// When runs are written while they execute (Agno's `checkpoint`): `ToolBatch` writes the
        /// run after each model turn's tool results, a checkpoint it can be read back at.
        checkpoint(mode: crate::Checkpoint) => inner.tool_config.checkpoint = mode;
    }

    /// Adds a tool hook (middleware around every tool call).
    pub fn tool_hook(mut self, hook: Arc<dyn ToolHook>) -> Self {
        self.inner.tool_config.tool_hooks.push(hook);
        self
    }

    setters! {
        /// History settings.
        history(config: HistoryConfig) => inner.history = config;

        /// Adds earlier runs of the session to the context (`add_history_to_context`).
        add_history_to_context(on: bool) => inner.history.add_history_to_context = on;

        /// How many earlier runs to add (`num_history_runs`).
        num_history_runs(n: usize) => inner.history.num_history_runs = Some(n);

        /// At most this many history messages, the most recent (`num_history_messages`).
        num_history_messages(n: usize) => inner.history.num_history_messages = Some(n);

        /// Fold older history into a summary (Agno's `compaction`): automatically past its
        /// threshold, or when asked ([`Agent::compact`]). Needs a db.
        compaction(compaction: crate::Compaction) => inner.compaction = Some(compaction);

        /// The memory manager (default: one on the agent's own model and db).
        memory_manager(manager: crate::memory::MemoryManager) => inner.memory_manager = Some(manager);

        /// Memory settings (`update_memory_on_run`, ...).
        memory(config: MemoryConfig) => inner.memory = config;

        /// Extract user memories after each run (v3 name of `enable_user_memories`).
        update_memory_on_run(on: bool) => inner.memory.update_memory_on_run = on;

        /// Give the model the `update_user_memory` tool (`enable_agentic_memory`).
        enable_agentic_memory(on: bool) => inner.memory.enable_agentic_memory = on;

        /// Put the user's memories in the system message (`add_memories_to_context`; default: on
        /// when memories are updated or a memory manager is given).
        add_memories_to_context(on: bool) => inner.memory.add_memories_to_context = Some(on);

        /// Session-summary settings.
        summaries(config: SummaryConfig) => inner.summaries = config;

        /// Refresh the session's summary after each completed run (`enable_session_summaries`).
        enable_session_summaries(on: bool) => inner.summaries.enable_session_summaries = on;

        /// Put the session's summary in the system message (`add_session_summary_to_context`;
        /// default: on when summaries are enabled or a summary manager is given).
        add_session_summary_to_context(on: bool) => inner.summaries.add_session_summary_to_context = Some(on);

        /// The session summary manager (default: one on the agent's own model).
        session_summary_manager(manager: crate::summary::SessionSummaryManager) => inner.summary_manager = Some(manager);

        /// The knowledge base (searched with the `search_knowledge_base` tool by default).
        knowledge(knowledge: Arc<dyn agno_core::KnowledgeBase>) => inner.knowledge = Some(knowledge);

        /// How the knowledge base is used.
        knowledge_config(config: KnowledgeConfig) => inner.knowledge_config = config;

        /// Give the model the `search_knowledge_base` tool (`search_knowledge`, default on).
        search_knowledge(on: bool) => inner.knowledge_config.search_knowledge = on;

        /// Search with the user's input before the run and add the results to the user message
        /// (`add_knowledge_to_context`).
        add_knowledge_to_context(on: bool) => inner.knowledge_config.add_knowledge_to_context = on;

        /// A metadata filter for every knowledge search (`knowledge_filters`).
        knowledge_filters(filter: agno_core::Filter) => inner.knowledge_config.knowledge_filters = Some(filter);

        /// Past-session search settings.
        past_sessions(config: PastSessionsConfig) => inner.past_sessions = config;

        /// Give the model a tool to search the user's past sessions (v3 name of
        /// `search_session_history`).
        search_past_sessions(on: bool) => inner.past_sessions.search_past_sessions = on;

        /// How many past sessions to search (v3 name of `num_history_sessions`).
        num_past_sessions_to_search(n: usize) => inner.past_sessions.num_past_sessions_to_search = Some(n);

        /// How many runs per past session to read (v3 name of `num_past_session_runs`).
        num_past_session_runs_in_search(n: usize) => inner.past_sessions.num_past_session_runs_in_search = Some(n);
    }

    /// A native reasoning model called before the main model (v3: replaces `reasoning=True`).
    pub fn reasoning_model(mut self, model: impl Into<ModelChoice>) -> Result<Self, BuildError> {
        self.inner.reasoning.reasoning_model = Some(resolve(model.into())?);
        Ok(self)
    }

    setters! {
        /// Whole-run retries.
        retries(config: RetryConfig) => inner.retry = config;

        /// Structured output.
        output_schema(schema: OutputSchema) => inner.output_schema = Some(schema);
    }

    /// Adds a pre-hook.
    pub fn pre_hook(mut self, hook: Arc<dyn PreHook>) -> Self {
        self.inner.pre_hooks.push(hook);
        self
    }

    /// Adds a post-hook.
    pub fn post_hook(mut self, hook: Arc<dyn PostHook>) -> Self {
        self.inner.post_hooks.push(hook);
        self
    }

    setters! {
        /// Storage for sessions and runs.
        db(db: Arc<dyn Db>) => inner.db = Some(db);

        /// Default session state.
        session_state(state: Map<String, Value>) => inner.session_state = state;
    }

    /// Dependencies available to tools.
    pub fn dependency(mut self, key: &str, value: Value) -> Self {
        self.inner.dependencies.insert(key.to_owned(), value);
        self
    }

    /// Metadata stored on every run.
    pub fn metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.inner.metadata = Some(metadata);
        self
    }

    /// Builds the agent.
    ///
    /// # Errors
    /// A [`BuildError`] for an invalid model, duplicate tool names or unsupported options.
    pub fn build(self) -> Result<Agent, BuildError> {
        let mut d = self.inner;
        let model = resolve(self.model)?;
        // Agno's defaults: memories and summaries go into the context when they are kept.
        let m = &mut d.memory;
        let memories_kept = m.update_memory_on_run || m.enable_agentic_memory || d.memory_manager.is_some();
        m.add_memories_to_context.get_or_insert(memories_kept);
        let summaries_kept = d.summaries.enable_session_summaries || d.summary_manager.is_some();
        d.summaries.add_session_summary_to_context.get_or_insert(summaries_kept);
        let id = d.id.take().unwrap_or_else(|| match &d.name {
            Some(name) => agno_tools::id_from_name(name),
            None => agno_core::new_id(),
        });
        if let Some(settings) = d.filesystem.take() {
            let settings =
                settings.validated().map_err(|e| BuildError::Invalid { option: "filesystem", why: e.to_string() })?;
            let Some(db) = &d.db else {
                return Err(BuildError::Invalid {
                    option: "filesystem",
                    why: "the files are kept in the agent's database: give the agent a db".to_owned(),
                });
            };
            d.tool_instructions.push(settings.system_instructions());
            for tool in crate::filesystem::filesystem_tools(Arc::clone(db), settings.clone(), &id) {
                d.tools.push(Arc::new(tool));
            }
            d.filesystem = Some(settings);
        }
        let learning = match (d.learning.take(), &d.db) {
            (None, _) => None,
            (Some(_), None) => {
                return Err(BuildError::Invalid {
                    option: "learning",
                    why: "learnings are kept in the agent's database: give the agent a db".to_owned(),
                });
            }
            (Some(config), Some(db)) => {
                Some(crate::learning::LearningMachine::new(config, Arc::clone(db), Arc::clone(&model)))
            }
        };
        let mut seen = HashSet::new();
        for tool in &d.tools {
            if !seen.insert(tool.name().to_owned()) {
                return Err(BuildError::DuplicateTool(tool.name().to_owned()));
            }
        }
        let memory_on = d.memory.update_memory_on_run
            || d.memory.enable_agentic_memory
            || d.memory.add_memories_to_context == Some(true);
        let memory_manager = match (&d.db, memory_on) {
            (_, false) => None,
            (None, true) => {
                return Err(BuildError::Invalid {
                    option: "update_memory_on_run / enable_agentic_memory / add_memories_to_context",
                    why: "user memories are stored: give the agent a db".to_owned(),
                });
            }
            (Some(db), true) => Some(
                d.memory_manager
                    .clone()
                    .unwrap_or_else(|| crate::memory::MemoryManager::new(Arc::clone(&model), Arc::clone(db))),
            ),
        };
        let summaries_on =
            d.summaries.enable_session_summaries || d.summaries.add_session_summary_to_context == Some(true);
        if summaries_on && d.db.is_none() {
            return Err(BuildError::Invalid {
                option: "enable_session_summaries / add_session_summary_to_context",
                why: "session summaries are stored on the session: give the agent a db".to_owned(),
            });
        }
        let summary_manager = (summaries_on && d.summaries.enable_session_summaries).then(|| {
            d.summary_manager.clone().unwrap_or_else(|| crate::summary::SessionSummaryManager::new(Arc::clone(&model)))
        });
        if let Some(c) = &d.compaction {
            c.settings().validate().map_err(|why| BuildError::Invalid { option: "compaction", why })?;
            if d.db.is_none() {
                return Err(BuildError::Invalid {
                    option: "compaction",
                    why: "a fold lasts only as long as its record: give the agent a db".to_owned(),
                });
            }
        }
        if d.past_sessions.search_past_sessions && d.db.is_none() {
            return Err(BuildError::Invalid {
                option: "search_past_sessions",
                why: "searching past sessions needs a db".to_owned(),
            });
        }
        Ok(Agent {
            inner: Arc::new(AgentInner {
                id,
                name: d.name,
                description: d.description,
                role: d.role,
                instructions: d.instructions,
                system_message: d.system_message,
                expected_output: d.expected_output,
                additional_context: d.additional_context,
                markdown: d.markdown,
                add_name_to_context: d.add_name_to_context,
                add_datetime_to_context: d.add_datetime_to_context,
                add_session_state_to_context: d.add_session_state_to_context,
                enable_agentic_state: d.enable_agentic_state,
                model,
                tools: d.tools,
                tool_instructions: d.tool_instructions,
                tool_config: d.tool_config,
                history: d.history,
                past_sessions: d.past_sessions,
                reasoning: d.reasoning,
                retry: d.retry,
                output_schema: d.output_schema,
                pre_hooks: d.pre_hooks,
                post_hooks: d.post_hooks,
                db: d.db,
                session_id: d.session_id,
                user_id: d.user_id,
                session_state: d.session_state,
                dependencies: d.dependencies,
                store_events: d.store_events,
                metadata: d.metadata,
                follow_up: d.follow_up,
                leads_team: d.leads_team,
                tracing: d.tracing,
                memory: d.memory,
                memory_manager,
                summaries: d.summaries,
                summary_manager,
                knowledge: d.knowledge,
                knowledge_config: d.knowledge_config,
                compaction: d.compaction,
                filesystem: d.filesystem,
                learning,
            }),
        })
    }
}

fn resolve(model: ModelChoice) -> Result<Arc<dyn Model>, BuildError> {
    match model {
        ModelChoice::Instance(m) => Ok(m),
        ModelChoice::Spec(spec) => Ok(model_from_str(&spec)?),
    }
}
