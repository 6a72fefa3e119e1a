//! `RunRequirement`: what a paused run needs from the user before it can continue.
//!
//! Shaped as Agno's `RunRequirement.to_dict()`: `None` fields are omitted and `created_at` is an
//! ISO-8601 string.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::clock::new_id;
use crate::tool_execution::{ToolExecution, UserInputField};

/// Why a requirement paused the run, in Agno's priority order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PauseType {
    /// The user must answer questions.
    UserFeedback,
    /// The caller must run the tool and supply its result.
    ExternalExecution,
    /// The user must supply argument values.
    UserInput,
    /// The user must confirm or reject the call.
    Confirmation,
}

/// A pending decision on one paused tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunRequirement {
    /// Requirement id.
    #[serde(default = "new_id")]
    pub id: String,
    /// When it was created (ISO-8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// The user's decision on a confirmation: `true` confirmed, `false` rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<bool>,
    /// The user's note, for example why the call was rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation_note: Option<String>,
    /// The result of an externally executed tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_execution_result: Option<String>,
    /// For team runs: the member that paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_agent_id: Option<String>,
    /// For team runs: the member's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_agent_name: Option<String>,
    /// For team runs: the member's run id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_run_id: Option<String>,
    /// The paused tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_execution: Option<ToolExecution>,
    /// Values to ask the user for; filled in by [`RunRequirement::provide_user_input`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_input_schema: Option<Vec<UserInputField>>,
    /// Questions for the user, kept as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_feedback_schema: Option<Vec<Value>>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RunRequirement {
    /// A requirement for a paused tool call.
    pub fn for_tool(tool: ToolExecution, created_at: String) -> Self {
        Self {
            id: new_id(),
            created_at: Some(created_at),
            confirmation: None,
            confirmation_note: None,
            external_execution_result: None,
            member_agent_id: None,
            member_agent_name: None,
            member_run_id: None,
            user_input_schema: tool.user_input_schema.clone(),
            user_feedback_schema: tool.user_feedback_schema.clone(),
            tool_execution: Some(tool),
            extra: Map::new(),
        }
    }

    fn tool_flag(&self, f: impl Fn(&ToolExecution) -> Option<bool>) -> bool {
        self.tool_execution.as_ref().and_then(f).unwrap_or(false)
    }

    /// The call waits for a confirmation that has not been given.
    pub fn needs_confirmation(&self) -> bool {
        self.confirmation.is_none() && self.tool_flag(|t| t.requires_confirmation)
    }

    /// The call waits for user input that has not been given.
    pub fn needs_user_input(&self) -> bool {
        self.tool_flag(|t| t.requires_user_input) && !self.tool_flag(|t| t.answered)
    }

    /// The call waits for an external result that has not been given.
    pub fn needs_external_execution(&self) -> bool {
        self.external_execution_result.is_none() && self.tool_flag(|t| t.external_execution_required)
    }

    /// Why this requirement paused the run.
    pub fn pause_type(&self) -> PauseType {
        if self.user_feedback_schema.is_some() {
            PauseType::UserFeedback
        } else if self.tool_flag(|t| t.external_execution_required) {
            PauseType::ExternalExecution
        } else if self.tool_flag(|t| t.requires_user_input) {
            PauseType::UserInput
        } else {
            PauseType::Confirmation
        }
    }

    /// Confirms the tool call.
    pub fn confirm(&mut self) {
        self.confirmation = Some(true);
        if let Some(t) = self.tool_execution.as_mut() {
            t.confirmed = Some(true);
        }
    }

    /// Rejects the tool call; the note is what the model is told.
    pub fn reject(&mut self, note: Option<String>) {
        self.confirmation = Some(false);
        self.confirmation_note.clone_from(&note);
        if let Some(t) = self.tool_execution.as_mut() {
            t.confirmed = Some(false);
            t.confirmation_note = note;
        }
    }

    /// Supplies values for the user-input fields, by field name.
    pub fn provide_user_input(&mut self, values: &Map<String, Value>) {
        let fill = |fields: &mut Vec<UserInputField>| {
            for field in fields.iter_mut() {
                if let Some(v) = values.get(&field.name) {
                    field.value = Some(v.clone());
                }
            }
        };
        if let Some(fields) = self.user_input_schema.as_mut() {
            fill(fields);
        }
        if let Some(t) = self.tool_execution.as_mut() {
            if let Some(fields) = t.user_input_schema.as_mut() {
                fill(fields);
            } else {
                t.user_input_schema.clone_from(&self.user_input_schema);
            }
            t.answered = Some(true);
        }
    }

    /// Supplies the result of an externally executed tool.
    pub fn set_external_execution_result(&mut self, result: impl Into<String>) {
        let result = result.into();
        if let Some(t) = self.tool_execution.as_mut() {
            t.result = Some(result.clone());
        }
        self.external_execution_result = Some(result);
    }

    /// True when nothing is pending any more.
    pub fn is_resolved(&self) -> bool {
        !self.needs_confirmation() && !self.needs_user_input() && !self.needs_external_execution()
    }

    /// The paused call's id, if any.
    pub fn tool_call_id(&self) -> Option<&str> {
        self.tool_execution.as_ref().and_then(|t| t.tool_call_id.as_deref())
    }
}
