//! One tool call of a run, as Agno records it in `RunOutput.tools` (`ToolExecution.to_dict()`).
//!
//! Agno serialises this with `dataclasses.asdict`, so every field is present (`null` when unset).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::clock::now_epoch_secs;

/// A value the user must supply before a `requires_user_input` tool can run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UserInputField {
    /// Argument name.
    pub name: String,
    /// Python type name of the field: `str`, `int`, `float`, `bool`, `list` or `dict`.
    pub field_type: String,
    /// What the user is asked for.
    #[serde(default)]
    pub description: Option<String>,
    /// The value supplied by the user, once answered.
    #[serde(default)]
    pub value: Option<Value>,
}

impl UserInputField {
    /// A field of type `field_type` (Python type name) with a description.
    pub fn new(name: impl Into<String>, field_type: impl Into<String>, description: impl Into<String>) -> Self {
        Self { name: name.into(), field_type: field_type.into(), description: Some(description.into()), value: None }
    }
}

/// Timing of a tool call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolCallMetrics {
    /// Epoch seconds (fractional) when the call started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<f64>,
    /// Epoch seconds (fractional) when the call ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<f64>,
    /// Seconds the call took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<f64>,
}

/// One execution (or pending execution) of a tool within a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolExecution {
    /// The provider's tool call id.
    pub tool_call_id: Option<String>,
    /// Tool name.
    pub tool_name: Option<String>,
    /// Parsed arguments (an object), or `null` when the model sent unparseable arguments.
    pub tool_args: Option<Map<String, Value>>,
    /// True when the call failed; its `result` is then the error text the model saw.
    pub tool_call_error: Option<bool>,
    /// The result text the model saw.
    pub result: Option<String>,
    /// Timing of the call.
    pub metrics: Option<ToolCallMetrics>,
    /// Run id of an agent/team/workflow run the tool started.
    pub child_run_id: Option<String>,
    /// The run stops after this call.
    #[serde(default)]
    pub stop_after_tool_call: bool,
    /// Epoch seconds.
    #[serde(default = "now_epoch_secs")]
    pub created_at: i64,
    /// The call waits for the user's confirmation.
    pub requires_confirmation: Option<bool>,
    /// The user's decision.
    pub confirmed: Option<bool>,
    /// The user's note on a rejection (or confirmation).
    pub confirmation_note: Option<String>,
    /// The call waits for values from the user.
    pub requires_user_input: Option<bool>,
    /// The values to ask the user for.
    pub user_input_schema: Option<Vec<UserInputField>>,
    /// Questions for the user (Agno's `ask_user`), kept as JSON.
    pub user_feedback_schema: Option<Vec<Value>>,
    /// The user answered.
    pub answered: Option<bool>,
    /// The call is executed outside the agent and its result supplied on continue.
    pub external_execution_required: Option<bool>,
    /// Suppresses verbose paused messages for external execution.
    pub external_execution_silent: Option<bool>,
    /// Approval type (`required` / `audit`).
    pub approval_type: Option<String>,
    /// Approval record id.
    pub approval_id: Option<String>,
    /// Enclosing tool invocation, when a harness delegates work to a subagent.
    pub parent_tool_call_id: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolExecution {
    /// A new execution record for a call of `tool_name`.
    pub fn new(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        tool_args: Option<Map<String, Value>>,
    ) -> Self {
        Self {
            tool_call_id: Some(tool_call_id.into()),
            tool_name: Some(tool_name.into()),
            tool_args,
            tool_call_error: None,
            result: None,
            metrics: None,
            child_run_id: None,
            stop_after_tool_call: false,
            created_at: now_epoch_secs(),
            requires_confirmation: None,
            confirmed: None,
            confirmation_note: None,
            requires_user_input: None,
            user_input_schema: None,
            user_feedback_schema: None,
            answered: None,
            external_execution_required: None,
            external_execution_silent: None,
            approval_type: None,
            approval_id: None,
            parent_tool_call_id: None,
            extra: Map::new(),
        }
    }

    /// True when the call waits for the user (confirmation, input or an external result).
    pub fn is_paused(&self) -> bool {
        self.requires_confirmation == Some(true)
            || self.requires_user_input == Some(true)
            || self.external_execution_required == Some(true)
    }

    /// The tool call id, or `""` when missing.
    pub fn call_id(&self) -> &str {
        self.tool_call_id.as_deref().unwrap_or_default()
    }

    /// The tool name, or `""` when missing.
    pub fn name(&self) -> &str {
        self.tool_name.as_deref().unwrap_or_default()
    }
}
