//! `TestModel` (model string `test`): deterministic and offline, for examples and users' tests.
//!
//! Each turn: if tools are available and some have not been called since the last user message,
//! it calls each of them once (in parallel), with arguments generated to match their schema.
//! Otherwise it answers: JSON valid for the output schema when one is requested, else a fixed
//! sentence that quotes the input and any tool results.

use std::time::Duration;

use agno_core::{
    Capabilities, Message, Model, ModelChunk, ModelError, ModelRequest, ModelStream, ResponseFormat, Role, Usage,
};
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::Value;

use agno_core::{SchemaLimits, example_within};

/// The offline test model.
#[derive(Debug, Clone, Default)]
pub struct TestModel {
    call_tools: bool,
    latency: Option<Duration>,
    reply: Option<String>,
}

impl TestModel {
    /// A test model that calls every available tool once, then answers.
    pub fn new() -> Self {
        Self { call_tools: true, latency: None, reply: None }
    }

    /// Never call tools; answer straight away.
    pub fn without_tool_calls(mut self) -> Self {
        self.call_tools = false;
        self
    }

    /// Wait this long before each response (simulates network latency).
    pub fn with_latency(mut self, latency: Duration) -> Self {
        self.latency = Some(latency);
        self
    }

    /// Always answer with this text (when no output schema is requested).
    pub fn with_reply(mut self, reply: &str) -> Self {
        self.reply = Some(reply.to_owned());
        self
    }

    /// The chunks of one answer; a schema (a tool's or the output's) whose example would pass
    /// [`SchemaLimits::DEFAULT`] is refused rather than built.
    fn respond(&self, request: &ModelRequest) -> Result<Vec<ModelChunk>, ModelError> {
        let last_user = request.messages.iter().rposition(|m| m.role == Role::User);
        let since_user = &request.messages[last_user.map_or(0, |i| i + 1)..];
        let called: Vec<&str> =
            since_user.iter().flat_map(Message::tool_calls).map(|c| c.function.name.as_str()).collect();
        let mut chunks = Vec::new();
        if self.call_tools {
            let pending: Vec<_> = request.tools.iter().filter(|t| !called.contains(&t.name.as_str())).collect();
            if !pending.is_empty() && called.is_empty() {
                for (index, tool) in pending.iter().enumerate() {
                    chunks.push(ModelChunk::ToolCallDelta {
                        index,
                        id: Some(format!("call_test_{}_{index}", since_user.len())),
                        name: Some(tool.name.clone()),
                        arguments: example(&tool.parameters, &format!("tool {}", tool.name))?.to_string(),
                    });
                }
                chunks.push(ModelChunk::Finish("tool_calls".to_owned()));
                chunks.push(ModelChunk::Usage(usage(request, 10)));
                return Ok(chunks);
            }
        }
        let text = match &request.response_format {
            Some(ResponseFormat::JsonSchema { schema, .. }) => example(schema, "the output schema")?.to_string(),
            Some(_) => {
                // JSON mode: the schema travels in the system prompt; answer a generic object.
                let schema = request
                    .messages
                    .iter()
                    .filter(|m| m.role == Role::System)
                    .find_map(|m| m.content_text().and_then(embedded_schema));
                match schema {
                    Some(s) => example(&s, "the output schema")?.to_string(),
                    None => "{}".to_owned(),
                }
            }
            None => self.reply.clone().unwrap_or_else(|| answer(request, since_user)),
        };
        for word in text.split_inclusive(' ') {
            chunks.push(ModelChunk::Content(word.to_owned()));
        }
        chunks.push(ModelChunk::Finish("stop".to_owned()));
        let output = u64::try_from(text.len() / 4).unwrap_or(0).max(1);
        chunks.push(ModelChunk::Usage(usage(request, output)));
        Ok(chunks)
    }
}

/// An example value of `schema`, or a request error naming `what` and the limit.
fn example(schema: &Value, what: &str) -> Result<Value, ModelError> {
    example_within(schema, SchemaLimits::DEFAULT)
        .map_err(|e| ModelError::new(agno_core::ModelErrorKind::BadRequest, format!("cannot answer {what}: {e}")))
}

fn answer(request: &ModelRequest, since_user: &[Message]) -> String {
    let input = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .and_then(Message::content_text)
        .unwrap_or_default();
    let results: Vec<String> = since_user
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| format!("{} -> {}", m.tool_name.as_deref().unwrap_or("tool"), m.content_text().unwrap_or_default()))
        .collect();
    if results.is_empty() {
        format!("This is the test model answering: {input}")
    } else {
        format!("This is the test model answering: {input} Tool results: {}", results.join("; "))
    }
}

/// Finds a JSON schema in a system prompt (between the first `{` and the last `}`).
fn embedded_schema(text: &str) -> Option<Value> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    serde_json::from_str(text.get(start..=end)?).ok()
}

fn usage(request: &ModelRequest, output: u64) -> Usage {
    let chars: usize = request.messages.iter().map(|m| m.content_text().map_or(0, str::len)).sum();
    let input = u64::try_from(chars / 4).unwrap_or(0).max(1);
    Usage { input_tokens: input, output_tokens: output, total_tokens: input + output, ..Usage::default() }
}

#[async_trait]
impl Model for TestModel {
    fn id(&self) -> &str {
        "test"
    }

    fn provider(&self) -> &str {
        "Test"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { tools: true, native_structured_output: true, json_mode: true, parallel_tool_calls: true }
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        if let Some(latency) = self.latency {
            tokio::time::sleep(latency).await;
        }
        let chunks = self.respond(&request)?;
        Ok(futures::stream::iter(chunks.into_iter().map(Ok)).boxed())
    }
}
