//! Chat messages as Agno stores them in `RunOutput.messages`.
//!
//! The JSON shape follows Agno's `Message.to_dict()`: `None` fields are left out and unknown
//! fields are kept in [`Message::extra`] so a read-modify-write never drops them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::clock::{new_id, now_epoch_secs};
use crate::metrics::Metrics;

// As Agno's `Message.to_dict`: a field that is None or an empty collection is left out.
fn none_or_empty_list<T>(v: &Option<Vec<T>>) -> bool {
    v.as_ref().is_none_or(Vec::is_empty)
}

fn none_or_empty_map(v: &Option<Map<String, Value>>) -> bool {
    v.as_ref().is_none_or(Map::is_empty)
}

fn none_or_empty_value(v: &Option<Value>) -> bool {
    match v {
        None => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

/// The role of a message in a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Role {
    /// Instructions for the model.
    System,
    /// Instructions for the model, in the newer OpenAI spelling.
    Developer,
    /// The user's input.
    User,
    /// The model's reply.
    Assistant,
    /// The result of a tool call.
    Tool,
}

impl Role {
    /// The lowercase wire name of the role.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// A tool call requested by the model, in OpenAI's shape (which Agno stores verbatim).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolCall {
    /// Provider-assigned id that the tool result must echo.
    pub id: String,
    /// Always `"function"`.
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    /// The function name and its JSON-encoded arguments.
    pub function: FunctionCall,
}

fn function_type() -> String {
    "function".to_owned()
}

/// The function part of a [`ToolCall`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FunctionCall {
    /// Name of the tool.
    pub name: String,
    /// Arguments as the model produced them: a JSON string, possibly malformed.
    #[serde(default)]
    pub arguments: String,
}

impl ToolCall {
    /// A tool call with the given id, tool name and raw argument text.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            kind: function_type(),
            function: FunctionCall { name: name.into(), arguments: arguments.into() },
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Message {
    /// Unique id of the message.
    #[serde(default = "new_id")]
    pub id: String,
    /// Who wrote it.
    pub role: Role,
    /// Text content. Multimodal content arrives as a JSON array and is kept as is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    /// Optional participant name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// For `tool` messages: the call this result answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For `assistant` messages: the tool calls requested.
    #[serde(default, skip_serializing_if = "none_or_empty_list")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// Reasoning text returned by reasoning models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// For `tool` messages: the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// For `tool` messages: the parsed arguments the tool ran with.
    #[serde(default, skip_serializing_if = "none_or_empty_value")]
    pub tool_args: Option<Value>,
    /// For `tool` messages: whether the tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_error: Option<bool>,
    /// For `tool` messages: whether the run stops after this call.
    #[serde(default)]
    pub stop_after_tool_call: bool,
    /// True for copies of earlier runs' messages added as history.
    #[serde(default)]
    pub from_history: bool,
    /// Token usage of the model call that produced this message.
    #[serde(default, skip_serializing_if = "Metrics::is_empty")]
    pub metrics: Metrics,
    /// Provider metadata of the response that produced this message (OpenAI: its `id`).
    #[serde(default, skip_serializing_if = "none_or_empty_map")]
    pub provider_data: Option<Map<String, Value>>,
    /// Creation time, epoch seconds.
    #[serde(default = "now_epoch_secs")]
    pub created_at: i64,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Message {
    /// A message with `role` and text `content`.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            id: new_id(),
            role,
            content: Some(Value::String(content.into())),
            name: None,
            tool_call_id: None,
            tool_calls: None,
            reasoning_content: None,
            tool_name: None,
            tool_args: None,
            tool_call_error: None,
            stop_after_tool_call: false,
            from_history: false,
            metrics: Metrics::default(),
            provider_data: None,
            created_at: now_epoch_secs(),
            extra: Map::new(),
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant message with text and tool calls; `content` is omitted when empty.
    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        let content: String = content.into();
        let mut msg = Self::new(Role::Assistant, content);
        if msg.content_text().is_some_and(str::is_empty) {
            msg.content = None;
        }
        if !tool_calls.is_empty() {
            msg.tool_calls = Some(tool_calls);
        }
        msg
    }

    /// A tool result answering `tool_call_id`.
    pub fn tool_result(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Self {
        let mut msg = Self::new(Role::Tool, content);
        msg.tool_call_id = Some(tool_call_id.into());
        msg.tool_name = Some(tool_name.into());
        msg.tool_call_error = Some(is_error);
        msg
    }

    /// The content as text, when it is a plain string.
    pub fn content_text(&self) -> Option<&str> {
        self.content.as_ref().and_then(Value::as_str)
    }

    /// The tool calls of this message (empty for non-assistant messages).
    pub fn tool_calls(&self) -> &[ToolCall] {
        self.tool_calls.as_deref().unwrap_or_default()
    }
}

/// Makes a message list safe to send to a provider: every assistant tool call gets a tool result
/// (an interrupted call gets an error result) and tool results that answer no call are dropped.
/// Returns how many results were added.
pub fn pair_tool_calls(messages: &mut Vec<Message>) -> usize {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut added = 0;
    // Calls of the latest assistant message still waiting for their result.
    let mut open: Vec<ToolCall> = Vec::new();
    let close = |open: &mut Vec<ToolCall>, out: &mut Vec<Message>, added: &mut usize| {
        for call in open.drain(..) {
            out.push(Message::tool_result(
                call.id.clone(),
                call.function.name.clone(),
                "Tool call was interrupted before it produced a result.",
                true,
            ));
            *added += 1;
        }
    };
    for msg in messages.drain(..) {
        match msg.role {
            Role::Tool => {
                let answered = msg.tool_call_id.as_deref();
                if let Some(pos) = open.iter().position(|c| Some(c.id.as_str()) == answered) {
                    open.remove(pos);
                    out.push(msg);
                }
            }
            Role::Assistant => {
                close(&mut open, &mut out, &mut added);
                open = msg.tool_calls().to_vec();
                out.push(msg);
            }
            _ => {
                close(&mut open, &mut out, &mut added);
                out.push(msg);
            }
        }
    }
    close(&mut open, &mut out, &mut added);
    *messages = out;
    added
}

/// True when every assistant tool call is followed by its result and every result answers a call.
pub fn tool_calls_paired(messages: &[Message]) -> bool {
    let mut check = messages.to_vec();
    let before = check.len();
    pair_tool_calls(&mut check) == 0 && check.len() == before
}
