//! Run events streamed while a run executes, with Agno's event names and JSON shapes.
//!
//! Every event of a run carries a strictly increasing `event_index` (assigned by the runtime's
//! emitter), which AgentOS puts in the SSE payload and uses for resume.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::clock::now_epoch_secs;
use crate::metrics::Metrics;
use crate::requirement::RunRequirement;
use crate::tool_execution::ToolExecution;

/// One event of an agent run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunEvent {
    /// Epoch seconds.
    #[serde(default = "now_epoch_secs")]
    pub created_at: i64,
    /// The event name and its specific fields.
    #[serde(flatten)]
    pub data: EventData,
    /// Agent id.
    #[serde(default)]
    pub agent_id: String,
    /// Agent name.
    #[serde(default)]
    pub agent_name: String,
    /// Run id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Parent run id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// Session id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Nesting depth inside workflows; 0 at top level.
    #[serde(default)]
    pub nested_depth: u32,
    /// The workflow, when the agent runs a workflow step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// The workflow run, when the agent runs a workflow step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_run_id: Option<String>,
    /// The step's id, when the agent runs a workflow step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    /// The step's name, when the agent runs a workflow step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_name: Option<String>,
    /// The step's position, when the agent runs a workflow step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_index: Option<Value>,
    /// Position of the event in its run: strictly increasing, not necessarily gapless.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_index: Option<u64>,
}

/// The event-specific part of a [`RunEvent`], tagged by Agno's event name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "event")]
#[non_exhaustive]
pub enum EventData {
    /// The run started.
    RunStarted {
        /// Model id.
        model: String,
        /// Model provider.
        model_provider: String,
    },
    /// A piece of content (a token delta when streaming).
    RunContent {
        /// The delta.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Value>,
        /// True when a workflow's agent streams it (never for an agent run).
        #[serde(default)]
        workflow_agent: bool,
        /// `"str"` or the output schema name.
        #[serde(default = "str_type")]
        content_type: String,
        /// Reasoning delta (`""` when none, as Agno sends it).
        #[serde(default)]
        reasoning_content: String,
        /// Provider metadata of the response being streamed (OpenAI: its `id`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model_provider_data: Option<Map<String, Value>>,
    },
    /// Content of an intermediate model turn (before tool calls).
    RunIntermediateContent {
        /// The content.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Value>,
        /// `"str"` or the output schema name.
        #[serde(default = "str_type")]
        content_type: String,
    },
    /// All content of the run has been streamed.
    RunContentCompleted {},
    /// The run finished.
    RunCompleted {
        /// Final content.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Value>,
        /// `"str"` or the output schema name.
        #[serde(default = "str_type")]
        content_type: String,
        /// Reasoning text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
        /// Usage of the run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metrics: Option<Metrics>,
        /// Session state after the run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_state: Option<Map<String, Value>>,
        /// Run metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Map<String, Value>>,
        /// Provider metadata of the last model response (OpenAI: its `id`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model_provider_data: Option<Map<String, Value>>,
    },
    /// The run paused for the user.
    RunPaused {
        /// The paused tool calls.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tools: Option<Vec<ToolExecution>>,
        /// What the run waits for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        requirements: Option<Vec<RunRequirement>>,
    },
    /// A paused run continued.
    RunContinued {},
    /// The run failed; this is always the last event of a failed run.
    RunError {
        /// Error message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Value>,
        /// Error class (`ModelProviderError`, ...).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_type: Option<String>,
        /// Stable error id (`model_provider_error`, ...).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_id: Option<String>,
        /// Extra details.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        additional_data: Option<Map<String, Value>>,
    },
    /// The run was cancelled.
    RunCancelled {
        /// Why.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The reasoning model started (`reasoning_model`).
    ReasoningStarted {},
    /// A piece of the reasoning model's reasoning, as it streams.
    ReasoningContentDelta {
        /// The delta.
        #[serde(default)]
        reasoning_content: String,
    },
    /// The reasoning model finished; `content` is its reasoning.
    ReasoningCompleted {
        /// The reasoning.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Value>,
        /// `"str"`.
        #[serde(default = "str_type")]
        content_type: String,
    },
    /// A pre-hook started.
    PreHookStarted {
        /// Hook name.
        pre_hook_name: String,
    },
    /// A pre-hook finished.
    PreHookCompleted {
        /// Hook name.
        pre_hook_name: String,
    },
    /// A post-hook started.
    PostHookStarted {
        /// Hook name.
        post_hook_name: String,
    },
    /// A post-hook finished.
    PostHookCompleted {
        /// Hook name.
        post_hook_name: String,
    },
    /// A tool call started.
    ToolCallStarted {
        /// The call.
        tool: ToolExecution,
    },
    /// A tool call finished (successfully or with a tool error the model will see).
    ToolCallCompleted {
        /// The call, with its result.
        tool: ToolExecution,
        /// The result text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Value>,
        /// The session state after the call, when the call changed it and the run's client
        /// follows the state (an agno-rs addition, absent otherwise: AG-UI's `STATE_DELTA`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_state: Option<Map<String, Value>>,
    },
    /// A tool call failed.
    ToolCallError {
        /// The call.
        tool: ToolExecution,
        /// Error text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A model request started.
    ModelRequestStarted {
        /// Model id.
        model: String,
        /// Model provider.
        model_provider: String,
    },
    /// A model request finished.
    ModelRequestCompleted {
        /// Model id.
        model: String,
        /// Model provider.
        model_provider: String,
        /// Prompt tokens.
        #[serde(default)]
        input_tokens: u64,
        /// Completion tokens.
        #[serde(default)]
        output_tokens: u64,
        /// Total tokens.
        #[serde(default)]
        total_tokens: u64,
        /// Seconds from the request to the first token.
        #[serde(default)]
        time_to_first_token: Option<f64>,
        /// Reasoning tokens.
        #[serde(default)]
        reasoning_tokens: u64,
        /// Prompt tokens served from the provider's cache.
        #[serde(default)]
        cache_read_tokens: u64,
        /// Prompt tokens written to the provider's cache.
        #[serde(default)]
        cache_write_tokens: u64,
    },
    /// Tasks mode: an iteration of the leader's work on the task list started
    /// (`TeamTaskIterationStarted`).
    TaskIterationStarted {
        /// 1-based iteration.
        iteration: u32,
        /// The team's bound.
        max_iterations: u32,
    },
    /// Tasks mode: an iteration ended (`TeamTaskIterationCompleted`).
    TaskIterationCompleted {
        /// 1-based iteration.
        iteration: u32,
        /// The team's bound.
        max_iterations: u32,
        /// The task list as the leader reads it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_summary: Option<String>,
    },
    /// Tasks mode: the task list after an iteration (`TeamTaskStateUpdated`), for UIs.
    TaskStateUpdated {
        /// The task list as the leader reads it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_summary: Option<String>,
        /// The leader called `mark_all_complete`.
        #[serde(default)]
        goal_complete: bool,
        /// Every task (`id`, `title`, `description`, `status`, `assignee`, `dependencies`, `result`).
        #[serde(default)]
        tasks: Vec<Value>,
        /// The leader's summary when it marked the goal complete.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        completion_summary: Option<String>,
    },
    /// Tasks mode: a task was created (`TeamTaskCreated`).
    TaskCreated {
        /// The task's id.
        task_id: String,
        /// Its title.
        title: String,
        /// What to do.
        #[serde(default)]
        description: String,
        /// The member it is for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        assignee: Option<String>,
        /// `pending` or `blocked`.
        status: String,
        /// Tasks it waits for.
        #[serde(default)]
        dependencies: Vec<String>,
    },
    /// Tasks mode: a task changed status (`TeamTaskUpdated`).
    TaskUpdated {
        /// The task's id.
        task_id: String,
        /// Its title.
        title: String,
        /// The new status.
        status: String,
        /// The status before.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        previous_status: Option<String>,
        /// Its result, once it ended.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
        /// The member working on it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        assignee: Option<String>,
    },
    /// A user-defined event.
    CustomEvent {
        /// Arbitrary payload.
        #[serde(flatten)]
        data: Map<String, Value>,
    },
}

fn str_type() -> String {
    "str".to_owned()
}

impl EventData {
    /// Agno's name for the event (`"RunContent"`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            EventData::RunStarted { .. } => "RunStarted",
            EventData::RunContent { .. } => "RunContent",
            EventData::RunIntermediateContent { .. } => "RunIntermediateContent",
            EventData::RunContentCompleted {} => "RunContentCompleted",
            EventData::RunCompleted { .. } => "RunCompleted",
            EventData::RunPaused { .. } => "RunPaused",
            EventData::RunContinued {} => "RunContinued",
            EventData::RunError { .. } => "RunError",
            EventData::RunCancelled { .. } => "RunCancelled",
            EventData::ReasoningStarted {} => "ReasoningStarted",
            EventData::ReasoningContentDelta { .. } => "ReasoningContentDelta",
            EventData::ReasoningCompleted { .. } => "ReasoningCompleted",
            EventData::PreHookStarted { .. } => "PreHookStarted",
            EventData::PreHookCompleted { .. } => "PreHookCompleted",
            EventData::PostHookStarted { .. } => "PostHookStarted",
            EventData::PostHookCompleted { .. } => "PostHookCompleted",
            EventData::ToolCallStarted { .. } => "ToolCallStarted",
            EventData::ToolCallCompleted { .. } => "ToolCallCompleted",
            EventData::ToolCallError { .. } => "ToolCallError",
            EventData::ModelRequestStarted { .. } => "ModelRequestStarted",
            EventData::ModelRequestCompleted { .. } => "ModelRequestCompleted",
            EventData::TaskIterationStarted { .. } => "TaskIterationStarted",
            EventData::TaskIterationCompleted { .. } => "TaskIterationCompleted",
            EventData::TaskStateUpdated { .. } => "TaskStateUpdated",
            EventData::TaskCreated { .. } => "TaskCreated",
            EventData::TaskUpdated { .. } => "TaskUpdated",
            EventData::CustomEvent { .. } => "CustomEvent",
        }
    }

    /// True for the events that end a run's stream.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            EventData::RunCompleted { .. }
                | EventData::RunError { .. }
                | EventData::RunCancelled { .. }
                | EventData::RunPaused { .. }
        )
    }
}

impl RunEvent {
    /// An event of the top-level run `run_id` (of the agent or team `agent_id`) in
    /// `session_id`, stamped now: not part of a workflow, not yet numbered.
    pub fn new(data: EventData, agent_id: String, agent_name: String, run_id: String, session_id: String) -> Self {
        Self {
            created_at: crate::now_epoch_secs(),
            data,
            agent_id,
            agent_name,
            run_id: Some(run_id),
            parent_run_id: None,
            session_id: Some(session_id),
            nested_depth: 0,
            workflow_id: None,
            workflow_run_id: None,
            step_id: None,
            step_name: None,
            step_index: None,
            event_index: None,
        }
    }

    /// Agno's name for the event.
    pub fn name(&self) -> &'static str {
        self.data.name()
    }

    /// The text delta of a `RunContent` event.
    pub fn content_delta(&self) -> Option<&str> {
        match &self.data {
            EventData::RunContent { content: Some(Value::String(s)), .. } => Some(s),
            _ => None,
        }
    }
}
