//! `RunOutput` and friends: the record of one agent run, shaped as Agno's `RunOutput.to_dict()`.
//!
//! This is the JSON stored in `agno_runs.run_data`. Fields Agno omits when `None` are omitted
//! here too, and unknown fields survive in [`RunOutput::extra`].

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::clock::now_epoch_secs;
use crate::event::RunEvent;
use crate::message::Message;
use crate::metrics::Metrics;
use crate::requirement::RunRequirement;
use crate::tool_execution::ToolExecution;

/// Lifecycle state of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum RunStatus {
    /// Accepted, not started.
    Pending,
    /// Executing.
    #[default]
    Running,
    /// Finished successfully.
    Completed,
    /// Waiting for the user (HITL).
    Paused,
    /// Cancelled by request.
    Cancelled,
    /// Failed.
    Error,
    /// Replaced by a regenerated run.
    Regenerated,
}

impl RunStatus {
    /// The stored string value (`"COMPLETED"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Pending => "PENDING",
            RunStatus::Running => "RUNNING",
            RunStatus::Completed => "COMPLETED",
            RunStatus::Paused => "PAUSED",
            RunStatus::Cancelled => "CANCELLED",
            RunStatus::Error => "ERROR",
            RunStatus::Regenerated => "REGENERATED",
        }
    }

    /// True for states a run never leaves on its own.
    pub fn is_terminal(self) -> bool {
        matches!(self, RunStatus::Completed | RunStatus::Cancelled | RunStatus::Error | RunStatus::Regenerated)
    }

    /// Statuses whose messages are left out of history (Agno's `HISTORY_SKIP_STATUSES`).
    pub fn skipped_in_history(self) -> bool {
        matches!(self, RunStatus::Paused | RunStatus::Cancelled | RunStatus::Error | RunStatus::Regenerated)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The input of a run.
///
/// Agents and teams store an object (`{"input_content": ..., "images": ...}`); Agno's workflow
/// runs store their input bare: a string, a list, or the dict of an input schema. A bare value is
/// kept in [`RunInput::bare`] and written back exactly as it was read.
#[derive(Debug, Clone, Default, PartialEq, schemars::JsonSchema)]
pub struct RunInput {
    /// What the user sent: a string, or structured JSON.
    #[serde(default)]
    pub input_content: Option<Value>,
    /// Fields this version does not know (media lists, ...), kept for round trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// The input when it was stored as a bare value rather than an object (workflow runs).
    #[serde(skip)]
    pub bare: Option<Value>,
}

impl RunInput {
    /// Input from a text message.
    pub fn text(text: impl Into<String>) -> Self {
        Self { input_content: Some(Value::String(text.into())), ..Self::default() }
    }

    /// Input stored as a bare value, as Agno stores a workflow run's input.
    pub fn bare(value: Value) -> Self {
        Self { bare: Some(value), ..Self::default() }
    }

    /// What was sent: `input_content`, or the bare value.
    pub fn content(&self) -> Option<&Value> {
        self.bare.as_ref().or(self.input_content.as_ref())
    }

    /// The input as text: the string itself, or compact JSON for structured input.
    pub fn as_text(&self) -> String {
        match self.content() {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        }
    }

    /// Attaches an image, kept in `images` as Agno's `Image.to_dict()` writes it.
    pub fn add_image(&mut self, media: Media) {
        self.push_media("images", media.into_agno());
    }

    /// Attaches a file (a PDF, a text document), kept in `files` as Agno's `File.to_dict()`.
    pub fn add_file(&mut self, media: Media) {
        self.push_media("files", media.into_agno());
    }

    fn push_media(&mut self, key: &str, item: Value) {
        match self.extra.get_mut(key) {
            Some(Value::Array(items)) => items.push(item),
            _ => {
                self.extra.insert(key.to_owned(), Value::Array(vec![item]));
            }
        }
    }

    /// The attached images (Agno's shape: `id`, `url`, `content` as base64, `mime_type`, ...).
    pub fn images(&self) -> &[Value] {
        self.extra.get("images").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
    }

    /// The attached files.
    pub fn files(&self) -> &[Value] {
        self.extra.get("files").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
    }
}

/// An image or a file attached to a run's input: its bytes (base64) or a URL.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Media {
    /// Base64 of the bytes.
    pub content: Option<String>,
    /// Where it is, instead of the bytes.
    pub url: Option<String>,
    /// Its media type (`image/png`, `application/pdf`).
    pub mime_type: Option<String>,
    /// Its file name.
    pub filename: Option<String>,
}

impl Media {
    /// Bytes (as base64) of `mime_type`.
    pub fn bytes(base64: String, mime_type: &str) -> Self {
        Self { content: Some(base64), mime_type: Some(mime_type.to_owned()), ..Self::default() }
    }

    /// A URL.
    pub fn url(url: impl Into<String>) -> Self {
        Self { url: Some(url.into()), ..Self::default() }
    }

    fn into_agno(self) -> Value {
        let format = self.mime_type.as_deref().and_then(|m| m.rsplit('/').next()).map(str::to_owned);
        let mut out = Map::new();
        out.insert("id".into(), Value::String(crate::clock::new_id()));
        for (key, value) in [
            ("url", self.url),
            ("content", self.content),
            ("mime_type", self.mime_type),
            ("format", format),
            ("filename", self.filename),
        ] {
            if let Some(v) = value {
                out.insert(key.into(), Value::String(v));
            }
        }
        Value::Object(out)
    }
}

/// The object form of [`RunInput`] on the wire.
#[derive(Serialize, Deserialize)]
struct RunInputFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input_content: Option<Value>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

impl Serialize for RunInput {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.bare {
            Some(value) => value.serialize(serializer),
            None => RunInputFields { input_content: self.input_content.clone(), extra: self.extra.clone() }
                .serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for RunInput {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Object(map) => {
                let fields: RunInputFields =
                    serde_json::from_value(Value::Object(map)).map_err(serde::de::Error::custom)?;
                Ok(Self { input_content: fields.input_content, extra: fields.extra, bare: None })
            }
            other => Ok(Self::bare(other)),
        }
    }
}

/// The complete record of one agent run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunOutput {
    /// Run id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Agent id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Agent name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_name: Option<String>,
    /// Session id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Parent run (team member runs, workflow steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// Workflow id, when run as a workflow step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// User id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The run's input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<RunInput>,
    /// Final content: text, or JSON for structured output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    /// `"str"` for text, the schema name for structured output.
    #[serde(default = "default_content_type")]
    pub content_type: String,
    /// Reasoning text from reasoning models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Model id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Model provider name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
    /// Provider metadata of the last model response (OpenAI: its `id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_provider_data: Option<Map<String, Value>>,
    /// The messages of this run (system, user, assistant, tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Message>>,
    /// Token usage and timings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    /// Tool executions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolExecution>>,
    /// Caller-supplied metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Session state after the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_state: Option<Map<String, Value>>,
    /// Epoch seconds.
    #[serde(default = "now_epoch_secs")]
    pub created_at: i64,
    /// Stored events (`store_events`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<RunEvent>>,
    /// Lifecycle state.
    #[serde(default)]
    pub status: RunStatus,
    /// Queue-attempt generation that wrote this run (durable background runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_attempt: Option<i64>,
    /// What a paused run waits for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirements: Option<Vec<RunRequirement>>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn default_content_type() -> String {
    "str".to_owned()
}

impl RunOutput {
    /// An empty run record with the given ids, status `RUNNING`.
    pub fn new(run_id: impl Into<String>, session_id: impl Into<String>) -> Self {
        Self {
            run_id: Some(run_id.into()),
            agent_id: None,
            agent_name: None,
            session_id: Some(session_id.into()),
            parent_run_id: None,
            workflow_id: None,
            user_id: None,
            input: None,
            content: None,
            content_type: default_content_type(),
            reasoning_content: None,
            model: None,
            model_provider: None,
            model_provider_data: None,
            messages: None,
            metrics: None,
            tools: None,
            metadata: None,
            session_state: None,
            created_at: now_epoch_secs(),
            events: None,
            status: RunStatus::Running,
            queue_attempt: None,
            requirements: None,
            extra: Map::new(),
        }
    }

    /// The run id, or `""`.
    pub fn id(&self) -> &str {
        self.run_id.as_deref().unwrap_or_default()
    }

    /// The content as text: the string, or compact JSON for structured content.
    pub fn content_text(&self) -> String {
        match &self.content {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        }
    }

    /// True when the run waits for the user.
    pub fn is_paused(&self) -> bool {
        self.status == RunStatus::Paused
    }

    /// Requirements not yet resolved.
    pub fn active_requirements(&self) -> Vec<&RunRequirement> {
        self.requirements.iter().flatten().filter(|r| !r.is_resolved()).collect()
    }

    /// Tool executions waiting for confirmation.
    pub fn tools_requiring_confirmation(&self) -> Vec<&ToolExecution> {
        self.tools.iter().flatten().filter(|t| t.requires_confirmation == Some(true)).collect()
    }

    /// Tool executions waiting for user input.
    pub fn tools_requiring_user_input(&self) -> Vec<&ToolExecution> {
        self.tools.iter().flatten().filter(|t| t.requires_user_input == Some(true)).collect()
    }

    /// Tool executions waiting for an external result.
    pub fn tools_awaiting_external_execution(&self) -> Vec<&ToolExecution> {
        self.tools.iter().flatten().filter(|t| t.external_execution_required == Some(true)).collect()
    }

    /// The messages, or an empty slice.
    pub fn messages(&self) -> &[Message] {
        self.messages.as_deref().unwrap_or_default()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_input_reads_and_writes_back_exactly_as_stored() {
        for stored in [
            json!("hello world"),
            json!(["a", 1]),
            json!(42),
            json!({"input_content": "hi", "images": [{"url": "x"}]}),
            json!({"topic": "a workflow input schema"}),
        ] {
            let input: RunInput = serde_json::from_value(stored.clone()).unwrap();
            assert_eq!(serde_json::to_value(&input).unwrap(), stored);
        }
        let bare: RunInput = serde_json::from_value(json!("hello world")).unwrap();
        assert_eq!(bare.as_text(), "hello world");
        assert_eq!(bare.content(), Some(&json!("hello world")));
        let object: RunInput = serde_json::from_value(json!({"input_content": {"a": 1}})).unwrap();
        assert_eq!(object.as_text(), r#"{"a":1}"#);
        assert!(object.bare.is_none());
    }
}
