//! What a paused workflow run waits for, shaped as Agno 3.1's `StepRequirement` and
//! `ErrorRequirement` (`to_dict()`), kept in a workflow run's `step_requirements` /
//! `error_requirements`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::workflow::StepOutput;

/// A value the reviewer supplies (Agno's workflow `UserInputField`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepInputField {
    /// Field name (the key in `user_input`).
    pub name: String,
    /// `str`, `int`, `float`, `bool`, `list` or `dict`.
    #[serde(default = "str_type")]
    pub field_type: String,
    /// What the reviewer is asked for.
    #[serde(default)]
    pub description: Option<String>,
    /// The value, once given.
    #[serde(default)]
    pub value: Option<Value>,
    /// Whether an answer must give it.
    #[serde(default = "yes")]
    pub required: bool,
    /// The only values accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_values: Option<Vec<Value>>,
}

fn str_type() -> String {
    "str".to_owned()
}

fn yes() -> bool {
    true
}

fn cancel() -> String {
    "cancel".to_owned()
}

impl StepInputField {
    /// Checks `value` against the field's type and allowed values.
    ///
    /// # Errors
    /// A sentence naming the field and what is wrong.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        let ok = match self.field_type.as_str() {
            "str" => value.is_string(),
            "int" => value.is_i64() || value.is_u64(),
            "float" => value.is_number(),
            "bool" => value.is_boolean(),
            "list" => value.is_array(),
            "dict" => value.is_object(),
            _ => true,
        };
        if !ok {
            return Err(format!("field {:?} expects a {}, got {value}", self.name, self.field_type));
        }
        if let Some(allowed) = &self.allowed_values
            && !allowed.contains(value)
        {
            return Err(format!("field {:?}: {value} is not one of {}", self.name, Value::Array(allowed.clone())));
        }
        Ok(())
    }
}

/// A workflow pause waiting for a reviewer: confirm or reject a step, give input, pick routes,
/// or review a step's output (Agno's `StepRequirement`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepRequirement {
    /// Id of the paused step.
    pub step_id: String,
    /// Its name.
    #[serde(default)]
    pub step_name: Option<String>,
    /// Its position (a number at top level, a path inside containers).
    #[serde(default)]
    pub step_index: Option<Value>,
    /// `Step`, `Steps`, `Loop`, `Condition` or `Router`.
    #[serde(default)]
    pub step_type: Option<String>,
    /// The step waits for a yes or no before it runs.
    #[serde(default)]
    pub requires_confirmation: bool,
    /// What the reviewer is asked.
    #[serde(default)]
    pub confirmation_message: Option<String>,
    /// The answer: `true` confirms (or approves the output), `false` rejects.
    #[serde(default)]
    pub confirmed: Option<bool>,
    /// What a rejection does: `skip`, `cancel`, `else` (Condition) or `retry`.
    #[serde(default = "cancel")]
    pub on_reject: String,
    /// The step waits for input values.
    #[serde(default)]
    pub requires_user_input: bool,
    /// What the reviewer is asked for.
    #[serde(default)]
    pub user_input_message: Option<String>,
    /// The values given.
    #[serde(default)]
    pub user_input: Option<Map<String, Value>>,
    /// A router waits for the reviewer to pick its route(s).
    #[serde(default)]
    pub requires_route_selection: bool,
    /// The routes that can be picked.
    #[serde(default)]
    pub available_choices: Option<Vec<String>>,
    /// More than one route may be picked.
    #[serde(default)]
    pub allow_multiple_selections: bool,
    /// The routes picked.
    #[serde(default)]
    pub selected_choices: Option<Vec<String>>,
    /// The step ran and its output waits for approval.
    #[serde(default)]
    pub requires_output_review: bool,
    /// What the reviewer is asked.
    #[serde(default)]
    pub output_review_message: Option<String>,
    /// True when the step already ran (output or iteration review).
    #[serde(default)]
    pub is_post_execution: bool,
    /// Why the reviewer rejected (a retried step sees it).
    #[serde(default)]
    pub rejection_feedback: Option<String>,
    /// Reviews of this step so far that asked for a retry.
    #[serde(default)]
    pub retry_count: u32,
    /// Most retries a reviewer may ask for.
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// When the pause times out (RFC 3339), after which `on_timeout` applies.
    #[serde(default)]
    pub timeout_at: Option<String>,
    /// What a timeout does: `cancel`, `skip` or `approve`.
    #[serde(default = "cancel")]
    pub on_timeout: String,
    /// The fields to fill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_input_schema: Option<Vec<StepInputField>>,
    /// The output under review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_output: Option<StepOutput>,
    /// The reviewer's replacement for the output (approves it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_output: Option<Value>,
    /// Fields this version does not know, kept for round trips (agno-rs keeps the pause's
    /// position in the run here).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl StepRequirement {
    /// A requirement for the step `step_id`, nothing asked yet.
    pub fn new(step_id: impl Into<String>) -> Self {
        Self {
            step_id: step_id.into(),
            step_name: None,
            step_index: None,
            step_type: None,
            requires_confirmation: false,
            confirmation_message: None,
            confirmed: None,
            on_reject: cancel(),
            requires_user_input: false,
            user_input_message: None,
            user_input: None,
            requires_route_selection: false,
            available_choices: None,
            allow_multiple_selections: false,
            selected_choices: None,
            requires_output_review: false,
            output_review_message: None,
            is_post_execution: false,
            rejection_feedback: None,
            retry_count: 0,
            max_retries: None,
            timeout_at: None,
            on_timeout: cancel(),
            user_input_schema: None,
            step_output: None,
            edited_output: None,
            extra: Map::new(),
        }
    }

    /// Confirms the step (or approves its output).
    pub fn confirm(&mut self) {
        self.confirmed = Some(true);
    }

    /// Rejects the step, with feedback a retry sees.
    pub fn reject(&mut self, feedback: Option<String>) {
        self.confirmed = Some(false);
        if feedback.is_some() {
            self.rejection_feedback = feedback;
        }
    }

    /// Approves the output with a replacement.
    pub fn edit(&mut self, output: Value) {
        self.confirmed = Some(true);
        self.edited_output = Some(output);
    }

    /// Picks the routes of a router.
    pub fn select(&mut self, choices: &[&str]) {
        self.selected_choices = Some(choices.iter().map(|c| (*c).to_owned()).collect());
    }

    /// Gives input values.
    pub fn set_user_input(&mut self, values: Map<String, Value>) {
        if let Some(schema) = &mut self.user_input_schema {
            for field in schema.iter_mut() {
                if let Some(v) = values.get(&field.name) {
                    field.value = Some(v.clone());
                }
            }
        }
        self.user_input.get_or_insert_with(Map::new).extend(values);
    }

    /// What is still missing before the run can continue, or `None` when resolved.
    pub fn missing(&self) -> Option<String> {
        if (self.requires_confirmation || self.requires_output_review) && self.confirmed.is_none() {
            return Some(if self.requires_output_review {
                "approve (confirmed = true, or edited_output) or reject (confirmed = false) the output".to_owned()
            } else {
                "confirm (confirmed = true) or reject (confirmed = false)".to_owned()
            });
        }
        if self.requires_user_input && self.confirmed != Some(false) {
            let given = self.user_input.clone().unwrap_or_default();
            match &self.user_input_schema {
                Some(schema) => {
                    let absent: Vec<&str> = schema
                        .iter()
                        .filter(|f| f.required && given.get(&f.name).is_none_or(|v| v.is_null() || v == ""))
                        .map(|f| f.name.as_str())
                        .collect();
                    if !absent.is_empty() {
                        return Some(format!("user_input is missing {}", absent.join(", ")));
                    }
                }
                None if given.is_empty() => return Some("give user_input".to_owned()),
                None => {}
            }
        }
        if self.requires_route_selection && self.selected_choices.as_ref().is_none_or(Vec::is_empty) {
            return Some("pick a route in selected_choices".to_owned());
        }
        None
    }
}

/// A workflow pause after a step failed with `on_error = pause`: the reviewer decides `retry` or
/// `skip` (Agno's `ErrorRequirement`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorRequirement {
    /// Id of the failed step.
    pub step_id: String,
    /// Its name.
    #[serde(default)]
    pub step_name: Option<String>,
    /// Its position.
    #[serde(default)]
    pub step_index: Option<Value>,
    /// What failed.
    #[serde(default)]
    pub error_message: String,
    /// The error's kind.
    #[serde(default)]
    pub error_type: Option<String>,
    /// Retries so far.
    #[serde(default)]
    pub retry_count: u32,
    /// `retry` or `skip`, once decided.
    #[serde(default)]
    pub decision: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
