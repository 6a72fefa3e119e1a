//! Workflow records shaped as Agno 3.1's: [`StepOutput`] (an entry of a workflow run's
//! `step_results`), [`StepType`], and the streamed [`WorkflowEvent`]s with Agno's event names.
//!
//! A workflow run is stored as a [`crate::RunOutput`] row like any other run: its input is bare
//! ([`crate::RunInput::bare`]), and `workflow_name`, `step_results` and `step_executor_runs` are
//! kept in its `extra` fields, exactly where Agno's `WorkflowRunOutput.to_dict()` puts them.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::clock::now_epoch_secs;
use crate::event::RunEvent;
use crate::metrics::Metrics;
use crate::review::{ErrorRequirement, StepRequirement};
use crate::run::RunOutput;

/// The kind of a workflow primitive (Agno's `StepType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum StepType {
    /// A plain function used as a step.
    Function,
    /// A step with an agent, team, function or nested workflow.
    Step,
    /// A sequential group.
    Steps,
    /// A repeated group.
    Loop,
    /// Branches run at the same time.
    Parallel,
    /// An if/else group.
    Condition,
    /// A choice among steps.
    Router,
    /// A nested workflow.
    Workflow,
}

impl StepType {
    /// Agno's spelling (`"Step"`, `"Loop"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            StepType::Function => "Function",
            StepType::Step => "Step",
            StepType::Steps => "Steps",
            StepType::Loop => "Loop",
            StepType::Parallel => "Parallel",
            StepType::Condition => "Condition",
            StepType::Router => "Router",
            StepType::Workflow => "Workflow",
        }
    }
}

impl fmt::Display for StepType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one step produced: Agno's `StepOutput.to_dict()` (every key present, `null` when unset;
/// `steps` only for containers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepOutput {
    /// Content: text, or JSON.
    #[serde(default)]
    pub content: Option<Value>,
    /// Step name.
    #[serde(default)]
    pub step_name: Option<String>,
    /// Step id.
    #[serde(default)]
    pub step_id: Option<String>,
    /// The primitive that produced it.
    #[serde(default)]
    pub step_type: Option<StepType>,
    /// `"function"`, `"agent"`, `"team"`, `"workflow"`, `"parallel"`.
    #[serde(default)]
    pub executor_type: Option<String>,
    /// Name of the function, agent, team or workflow.
    #[serde(default)]
    pub executor_name: Option<String>,
    /// Run id of the agent, team or nested workflow run of the step.
    #[serde(default)]
    pub step_run_id: Option<String>,
    /// Images.
    #[serde(default)]
    pub images: Option<Value>,
    /// Videos.
    #[serde(default)]
    pub videos: Option<Value>,
    /// Audio.
    #[serde(default)]
    pub audio: Option<Value>,
    /// Files.
    #[serde(default)]
    pub files: Option<Value>,
    /// Metrics of the step's model calls.
    #[serde(default)]
    pub metrics: Option<Metrics>,
    /// False when the step failed.
    #[serde(default = "yes")]
    pub success: bool,
    /// Error text of a failed step.
    #[serde(default)]
    pub error: Option<String>,
    /// True when the step asks the workflow to stop after it.
    #[serde(default)]
    pub stop: bool,
    /// True when the step paused.
    #[serde(default)]
    pub is_paused: bool,
    /// The outputs of a container's inner steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<StepOutput>>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn yes() -> bool {
    true
}

impl Default for StepOutput {
    fn default() -> Self {
        Self {
            content: None,
            step_name: None,
            step_id: None,
            step_type: None,
            executor_type: None,
            executor_name: None,
            step_run_id: None,
            images: None,
            videos: None,
            audio: None,
            files: None,
            metrics: None,
            success: true,
            error: None,
            stop: false,
            is_paused: false,
            steps: None,
            extra: Map::new(),
        }
    }
}

impl StepOutput {
    /// An output with this content.
    pub fn content(content: impl Into<Value>) -> Self {
        Self { content: Some(content.into()), ..Self::default() }
    }

    /// A failed step's output.
    pub fn failed(error: impl Into<String>) -> Self {
        Self { success: false, error: Some(error.into()), ..Self::default() }
    }

    /// The content as text: the string itself, compact JSON otherwise, `""` when none.
    pub fn content_text(&self) -> String {
        match &self.content {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        }
    }

    /// The content of the innermost last step (what the next step receives after a container,
    /// as Agno's `_get_deepest_content_from_step_output`).
    pub fn deepest_content(&self) -> Option<&Value> {
        match self.steps.as_deref().and_then(<[StepOutput]>::last) {
            Some(last) => last.deepest_content(),
            None => self.content.as_ref(),
        }
    }
}

/// One streamed event of a workflow run (Agno's `WorkflowRunOutputEvent`s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkflowEvent {
    /// Epoch seconds.
    #[serde(default = "now_epoch_secs")]
    pub created_at: i64,
    /// The event name and its specific fields.
    #[serde(flatten)]
    pub data: WorkflowEventData,
    /// Workflow id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// Workflow name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_name: Option<String>,
    /// Session id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Workflow run id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Id of the step the event is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    /// Id of the container the step is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_step_id: Option<String>,
    /// Nesting depth of workflows inside workflows; 0 at top level.
    #[serde(default)]
    pub nested_depth: u32,
    /// Name of the step the event is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_name: Option<String>,
    /// Position of the step: a number at top level, `[parent, child]` inside a container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_index: Option<Value>,
    /// Position of the event in its run: strictly increasing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_index: Option<u64>,
}

impl WorkflowEvent {
    /// Agno's name for the event.
    pub fn name(&self) -> &'static str {
        self.data.name()
    }
}

/// One item of a workflow run's stream: a workflow event, or an event of an agent running a step
/// (forwarded as Agno forwards them, renumbered into the workflow's `event_index` sequence).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum WorkflowStreamEvent {
    /// A workflow event.
    Workflow(Box<WorkflowEvent>),
    /// An agent step's event (also a team member's, inside a team step).
    Agent(Box<RunEvent>),
    /// A team step's leader event, as Agno's team event (`TeamRunStarted`, ..., `team_id`).
    #[serde(serialize_with = "team_event::serialize", deserialize_with = "team_event::deserialize")]
    #[schemars(with = "RunEvent")]
    Team(Box<RunEvent>),
}

/// The JSON of a team step's leader events.
mod team_event {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    use crate::event::RunEvent;

    #[allow(clippy::borrowed_box)]
    pub(super) fn serialize<S: Serializer>(event: &Box<RunEvent>, serializer: S) -> Result<S::Ok, S::Error> {
        crate::team::team_event_value(event).map_err(serde::ser::Error::custom)?.serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Box<RunEvent>, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let named_as_team = value.get("team_id").is_some()
            && value.get("event").and_then(Value::as_str).is_some_and(|n| n.starts_with("Team"));
        if !named_as_team {
            return Err(serde::de::Error::custom("not a team event"));
        }
        crate::team::team_event_from_value(value).map(Box::new).map_err(serde::de::Error::custom)
    }
}

impl WorkflowStreamEvent {
    /// Agno's name for the event.
    pub fn name(&self) -> &'static str {
        match self {
            WorkflowStreamEvent::Workflow(e) => e.name(),
            WorkflowStreamEvent::Agent(e) => e.name(),
            WorkflowStreamEvent::Team(e) => crate::team::team_event_name(e),
        }
    }

    /// The event's position in the workflow run's stream.
    pub fn event_index(&self) -> Option<u64> {
        match self {
            WorkflowStreamEvent::Workflow(e) => e.event_index,
            WorkflowStreamEvent::Agent(e) | WorkflowStreamEvent::Team(e) => e.event_index,
        }
    }

    /// The workflow event, when it is one.
    pub fn as_workflow(&self) -> Option<&WorkflowEvent> {
        match self {
            WorkflowStreamEvent::Workflow(e) => Some(e),
            WorkflowStreamEvent::Agent(_) | WorkflowStreamEvent::Team(_) => None,
        }
    }

    /// True for the events that end a workflow run's stream.
    pub fn is_terminal(&self) -> bool {
        self.as_workflow().is_some_and(|e| e.data.is_terminal())
    }
}

/// The event-specific part of a [`WorkflowEvent`], tagged by Agno's event name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "event")]
#[non_exhaustive]
pub enum WorkflowEventData {
    /// The workflow run started.
    WorkflowStarted {},
    /// The workflow run finished.
    WorkflowCompleted {
        /// Final content.
        #[serde(default)]
        content: Option<Value>,
        /// `"str"` or the output schema name.
        #[serde(default = "str_type")]
        content_type: String,
        /// Run metadata.
        #[serde(default)]
        metadata: Option<Map<String, Value>>,
        /// Workflow metrics (`steps`, `duration`).
        #[serde(default)]
        metrics: Option<Value>,
        /// Every step's output.
        #[serde(default)]
        step_results: Vec<StepOutput>,
        /// The runs of the agent and workflow steps.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step_executor_runs: Option<Vec<RunOutput>>,
    },
    /// The workflow run failed.
    WorkflowError {
        /// Error text.
        #[serde(default)]
        error: Option<String>,
        /// Error class.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_type: Option<String>,
    },
    /// The workflow run was cancelled.
    WorkflowCancelled {
        /// Why.
        #[serde(default)]
        reason: Option<String>,
    },
    /// The workflow run paused for a reviewer; everything a continue needs is here.
    WorkflowPaused {
        /// `PAUSED`.
        status: String,
        /// Top-level index of the step that paused.
        #[serde(default)]
        paused_step_index: Option<usize>,
        /// Name of the step that paused.
        #[serde(default)]
        paused_step_name: Option<String>,
        /// `step` (a review) or `executor`.
        #[serde(default)]
        pause_kind: Option<String>,
        /// What the reviewer must answer (the last entry is the active one).
        #[serde(default)]
        step_requirements: Option<Vec<StepRequirement>>,
        /// A failed step's pause (`on_error = pause`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_requirements: Option<Vec<ErrorRequirement>>,
        /// The outputs so far.
        #[serde(default)]
        step_results: Vec<StepOutput>,
        /// Content so far.
        #[serde(default)]
        content: Option<Value>,
    },
    /// A step waits for confirmation or input before it runs.
    StepPaused {
        /// It waits for a yes or no.
        #[serde(default)]
        requires_confirmation: bool,
        /// What the reviewer is asked.
        #[serde(default)]
        confirmation_message: Option<String>,
        /// It waits for input.
        #[serde(default)]
        requires_user_input: bool,
        /// What the reviewer is asked for.
        #[serde(default)]
        user_input_message: Option<String>,
        /// The fields to fill.
        #[serde(default)]
        user_input_schema: Option<Value>,
    },
    /// A paused step continues.
    StepContinued {},
    /// A step's agent paused (a tool waits for confirmation, input or an external result).
    StepExecutorPaused {},
    /// A step's output (or a loop iteration) waits for review.
    StepOutputReview {
        /// What the reviewer is asked.
        #[serde(default)]
        output_review_message: Option<String>,
        /// Always true.
        #[serde(default)]
        requires_output_review: bool,
    },
    /// A router waits for the reviewer to pick its route(s).
    RouterPaused {
        /// The routes.
        #[serde(default)]
        available_choices: Vec<String>,
        /// What the reviewer is asked.
        #[serde(default)]
        user_input_message: Option<String>,
        /// More than one may be picked.
        #[serde(default)]
        allow_multiple_selections: bool,
    },
    /// A step started.
    StepStarted {},
    /// A step's output (streamed, not stored).
    StepOutput {
        /// The output.
        step_output: StepOutput,
    },
    /// A step finished.
    StepCompleted {
        /// Its content.
        #[serde(default)]
        content: Option<Value>,
        /// `"str"`.
        #[serde(default = "str_type")]
        content_type: String,
        /// Its output.
        step_response: StepOutput,
    },
    /// A step failed.
    StepError {
        /// Error text.
        #[serde(default)]
        error: Option<String>,
    },
    /// A `Steps` group started.
    StepsExecutionStarted {
        /// Number of steps in the group.
        steps_count: usize,
    },
    /// A `Steps` group finished.
    StepsExecutionCompleted {
        /// Number of steps in the group.
        steps_count: usize,
        /// Steps that ran.
        executed_steps: usize,
        /// Their outputs.
        step_results: Vec<StepOutput>,
    },
    /// A loop started.
    LoopExecutionStarted {
        /// Its iteration limit.
        max_iterations: u32,
    },
    /// A loop iteration started.
    LoopIterationStarted {
        /// 1-based iteration.
        iteration: u32,
        /// Its iteration limit.
        max_iterations: u32,
    },
    /// A loop iteration finished.
    LoopIterationCompleted {
        /// 1-based iteration.
        iteration: u32,
        /// Its iteration limit.
        max_iterations: u32,
        /// False when the end condition (or the limit) ends the loop.
        should_continue: bool,
        /// The iteration's outputs.
        iteration_results: Vec<StepOutput>,
    },
    /// A loop finished.
    LoopExecutionCompleted {
        /// Iterations run.
        total_iterations: u32,
        /// Its iteration limit.
        max_iterations: u32,
        /// Each iteration's outputs.
        all_results: Vec<Vec<StepOutput>>,
    },
    /// Parallel branches started.
    ParallelExecutionStarted {
        /// Number of branches.
        parallel_step_count: usize,
    },
    /// Parallel branches finished.
    ParallelExecutionCompleted {
        /// Number of branches.
        parallel_step_count: usize,
        /// Their outputs, in declaration order.
        step_results: Vec<StepOutput>,
    },
    /// A condition was evaluated and its branch starts.
    ConditionExecutionStarted {
        /// The evaluator's answer.
        condition_result: bool,
    },
    /// A condition's branch finished.
    ConditionExecutionCompleted {
        /// The evaluator's answer.
        condition_result: bool,
        /// Steps that ran.
        executed_steps: usize,
        /// `"if"`, `"else"`, or `null` when no branch ran.
        branch: Option<String>,
        /// Their outputs.
        step_results: Vec<StepOutput>,
    },
    /// A router chose its steps.
    RouterExecutionStarted {
        /// Names of the chosen steps.
        selected_steps: Vec<String>,
    },
    /// A router's chosen steps finished.
    RouterExecutionCompleted {
        /// Names of the chosen steps.
        selected_steps: Vec<String>,
        /// Steps that ran.
        executed_steps: usize,
        /// Their outputs.
        step_results: Vec<StepOutput>,
    },
}

fn str_type() -> String {
    "str".to_owned()
}

impl WorkflowEventData {
    /// Agno's name for the event (`"StepStarted"`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            WorkflowEventData::WorkflowStarted {} => "WorkflowStarted",
            WorkflowEventData::WorkflowCompleted { .. } => "WorkflowCompleted",
            WorkflowEventData::WorkflowError { .. } => "WorkflowError",
            WorkflowEventData::WorkflowCancelled { .. } => "WorkflowCancelled",
            WorkflowEventData::WorkflowPaused { .. } => "WorkflowPaused",
            WorkflowEventData::StepPaused { .. } => "StepPaused",
            WorkflowEventData::StepContinued {} => "StepContinued",
            WorkflowEventData::StepExecutorPaused {} => "StepExecutorPaused",
            WorkflowEventData::StepOutputReview { .. } => "StepOutputReview",
            WorkflowEventData::RouterPaused { .. } => "RouterPaused",
            WorkflowEventData::StepStarted {} => "StepStarted",
            WorkflowEventData::StepOutput { .. } => "StepOutput",
            WorkflowEventData::StepCompleted { .. } => "StepCompleted",
            WorkflowEventData::StepError { .. } => "StepError",
            WorkflowEventData::StepsExecutionStarted { .. } => "StepsExecutionStarted",
            WorkflowEventData::StepsExecutionCompleted { .. } => "StepsExecutionCompleted",
            WorkflowEventData::LoopExecutionStarted { .. } => "LoopExecutionStarted",
            WorkflowEventData::LoopIterationStarted { .. } => "LoopIterationStarted",
            WorkflowEventData::LoopIterationCompleted { .. } => "LoopIterationCompleted",
            WorkflowEventData::LoopExecutionCompleted { .. } => "LoopExecutionCompleted",
            WorkflowEventData::ParallelExecutionStarted { .. } => "ParallelExecutionStarted",
            WorkflowEventData::ParallelExecutionCompleted { .. } => "ParallelExecutionCompleted",
            WorkflowEventData::ConditionExecutionStarted { .. } => "ConditionExecutionStarted",
            WorkflowEventData::ConditionExecutionCompleted { .. } => "ConditionExecutionCompleted",
            WorkflowEventData::RouterExecutionStarted { .. } => "RouterExecutionStarted",
            WorkflowEventData::RouterExecutionCompleted { .. } => "RouterExecutionCompleted",
        }
    }

    /// True for the events that end a workflow run's stream.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            WorkflowEventData::WorkflowCompleted { .. }
                | WorkflowEventData::WorkflowError { .. }
                | WorkflowEventData::WorkflowCancelled { .. }
                | WorkflowEventData::WorkflowPaused { .. }
        )
    }
}
