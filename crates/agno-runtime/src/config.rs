//! Setting groups of an agent. Defaults match Agno's.

use std::sync::Arc;
use std::time::Duration;

use agno_core::Model;
use agno_tools::ToolHook;
use serde_json::Value;

/// Conversation history sent with each run.
#[derive(Debug, Clone, Default)]
pub struct HistoryConfig {
    /// Add earlier runs of the session to the context (`add_history_to_context`).
    pub add_history_to_context: bool,
    /// How many earlier runs (`num_history_runs`; 3 when neither limit is set).
    pub num_history_runs: Option<usize>,
    /// At most this many history messages (`num_history_messages`).
    pub num_history_messages: Option<usize>,
}

impl HistoryConfig {
    pub(crate) fn runs_limit(&self) -> Option<usize> {
        match (self.num_history_runs, self.num_history_messages) {
            (None, None) => Some(3),
            (runs, _) => runs,
        }
    }
}

/// User memories (v3 names).
#[derive(Debug, Clone, Default)]
pub struct MemoryConfig {
    /// Extract memories from each run (`update_memory_on_run`, was `enable_user_memories`).
    pub update_memory_on_run: bool,
    /// Give the model a tool to manage memories (`enable_agentic_memory`).
    pub enable_agentic_memory: bool,
    /// Add the user's memories to the system message (`add_memories_to_context`). Unset: on
    /// when memories are updated (either way above) or a memory manager is given, as in Agno.
    pub add_memories_to_context: Option<bool>,
}

/// How an agent uses its knowledge base (Agno's names and defaults).
#[derive(Debug, Clone)]
pub struct KnowledgeConfig {
    /// Give the model the `search_knowledge_base` tool (`search_knowledge`, default on).
    pub search_knowledge: bool,
    /// Tell the model about the tool in the system message
    /// (`add_search_knowledge_instructions`, default on).
    pub add_search_knowledge_instructions: bool,
    /// Search with the user's input before the run and add the results to the user message
    /// (`add_knowledge_to_context`, default off).
    pub add_knowledge_to_context: bool,
    /// A metadata filter applied to every search (`knowledge_filters`).
    pub knowledge_filters: Option<agno_core::Filter>,
}

impl Default for KnowledgeConfig {
    fn default() -> Self {
        Self {
            search_knowledge: true,
            add_search_knowledge_instructions: true,
            add_knowledge_to_context: false,
            knowledge_filters: None,
        }
    }
}

/// Session summaries (Agno's names).
#[derive(Debug, Clone, Default)]
pub struct SummaryConfig {
    /// Refresh the session's summary after each completed run (`enable_session_summaries`).
    pub enable_session_summaries: bool,
    /// Put the session's summary in the system message (`add_session_summary_to_context`).
    /// Unset: on when summaries are enabled or a summary manager is given, as in Agno.
    pub add_session_summary_to_context: Option<bool>,
}

/// Searching the user's past sessions (v3 names).
#[derive(Debug, Clone, Default)]
pub struct PastSessionsConfig {
    /// Give the model the `search_past_sessions` tool (was `search_session_history`).
    pub search_past_sessions: bool,
    /// How many past sessions it searches (was `num_history_sessions`).
    pub num_past_sessions_to_search: Option<usize>,
    /// How many runs per past session it reads (was `num_past_session_runs`).
    pub num_past_session_runs_in_search: Option<usize>,
}

/// Tool execution settings.
#[derive(Debug, Clone, Default)]
pub struct ToolConfig {
    /// At most this many tool calls per run; further calls get an error result.
    pub tool_call_limit: Option<usize>,
    /// `"auto"`, `"none"`, `"required"` or a specific tool, in OpenAI's shape.
    pub tool_choice: Option<Value>,
    /// Middleware around every tool call.
    pub tool_hooks: Vec<Arc<dyn ToolHook>>,
    /// How long the approval of a paused `required` call waits for an admin before it expires
    /// (the call is then rejected); `None`: it waits until resolved.
    pub approval_timeout: Option<std::time::Duration>,
    /// When a run is written while it executes (Agno's `checkpoint`).
    pub checkpoint: Checkpoint,
}

/// When a run is written while it executes (Agno's `checkpoint`): always when it starts (as
/// `RUNNING`) and when it ends or pauses; with `ToolBatch`, also after each model turn's tool
/// results, marked as a checkpoint it can be read back at (`/runs/{run_id}/checkpoints`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Checkpoint {
    /// Only at its start and end (Agno's `"runs"`, the default).
    #[default]
    Runs,
    /// Also after each batch of tool results (Agno's `"tool-batch"`).
    ToolBatch,
}

impl Checkpoint {
    /// The mode Agno names `name` (`runs`, `tool-batch`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "runs" => Some(Checkpoint::Runs),
            "tool-batch" => Some(Checkpoint::ToolBatch),
            _ => None,
        }
    }
}

/// Reasoning with a separate native reasoning model (`reasoning_model`; v3 removed
/// `reasoning=True`).
#[derive(Debug, Clone, Default)]
pub struct ReasoningConfig {
    /// The reasoning model, called before the main model.
    pub reasoning_model: Option<Arc<dyn Model>>,
}

/// Whole-run retries on retryable model failures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryConfig {
    /// Extra attempts (`retries`, default 0).
    pub retries: u32,
    /// Delay before a retry (`delay_between_retries`, default 1 s).
    pub delay_between_retries: Duration,
    /// Double the delay each time (`exponential_backoff`).
    pub exponential_backoff: bool,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self { retries: 0, delay_between_retries: Duration::from_secs(1), exponential_backoff: false }
    }
}

impl RetryConfig {
    pub(crate) fn delay(&self, attempt: u32) -> Duration {
        if self.exponential_backoff {
            self.delay_between_retries.saturating_mul(2u32.saturating_pow(attempt.min(16)))
        } else {
            self.delay_between_retries
        }
    }
}

/// The schema structured output must match.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OutputSchema {
    /// Schema name (becomes `content_type`).
    pub name: String,
    /// The JSON schema.
    pub schema: Value,
}

impl OutputSchema {
    /// An output schema from a JSON schema value.
    pub fn new(name: &str, schema: Value) -> Self {
        Self { name: name.to_owned(), schema }
    }

    /// An output schema generated from a Rust type.
    pub fn of<T: schemars::JsonSchema>() -> Self {
        let schema = schemars::schema_for!(T);
        let name = T::schema_name().into_owned();
        let mut value = schema.to_value();
        if let Some(obj) = value.as_object_mut() {
            obj.remove("$schema");
        }
        Self { name, schema: value }
    }
}
