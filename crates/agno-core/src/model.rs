//! The `Model` trait: one streaming call that every provider family implements.
//!
//! Streaming is the primitive. A provider turns its wire format into [`ModelChunk`]s; the
//! non-streaming [`Model::invoke`] collects them with [`ResponseAssembler`], so both paths share
//! one parser per provider.

use std::fmt::Debug;
use std::time::Instant;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::Value;

use crate::error::{ModelError, ModelErrorKind};
use crate::message::{Message, ToolCall};
use crate::metrics::Usage;
use crate::tool::ToolDefinition;

/// How the model is asked for structured output.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ResponseFormat {
    /// Native JSON-schema constrained output.
    JsonSchema {
        /// Schema name.
        name: String,
        /// The JSON schema.
        schema: Value,
        /// Strict mode (OpenAI).
        strict: bool,
    },
    /// JSON mode: any JSON object.
    JsonObject,
}

/// One request to a model.
#[derive(Debug, Clone, Default)]
pub struct ModelRequest {
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    pub tools: Vec<ToolDefinition>,
    /// `"auto"`, `"none"`, `"required"` or a specific tool, in OpenAI's shape.
    pub tool_choice: Option<Value>,
    /// Structured-output request.
    pub response_format: Option<ResponseFormat>,
    /// The run's session, for a model that keeps the conversation itself (a remote A2A agent's
    /// context); providers that are sent the whole conversation ignore it.
    pub session_id: Option<String>,
}

/// What a model supports; the runtime adapts requests to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capabilities {
    /// Tool calling.
    pub tools: bool,
    /// Native JSON-schema structured output.
    pub native_structured_output: bool,
    /// JSON mode.
    pub json_mode: bool,
    /// Parallel tool calls in one turn.
    pub parallel_tool_calls: bool,
}

/// One piece of a streamed model response.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ModelChunk {
    /// A content delta.
    Content(String),
    /// A reasoning delta.
    Reasoning(String),
    /// A piece of a tool call; pieces with the same `index` belong to one call.
    ToolCallDelta {
        /// Position of the call in this response.
        index: usize,
        /// The call id (first piece).
        id: Option<String>,
        /// The function name (first piece).
        name: Option<String>,
        /// A fragment of the JSON argument text.
        arguments: String,
    },
    /// Token usage of the response.
    Usage(Usage),
    /// Provider metadata of the response (OpenAI: its `id`); merged as it arrives.
    ProviderData(serde_json::Map<String, Value>),
    /// The provider's finish reason.
    Finish(String),
}

/// A boxed stream of chunks.
pub type ModelStream = BoxStream<'static, Result<ModelChunk, ModelError>>;

/// A complete model response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelResponse {
    /// Text content.
    pub content: String,
    /// Reasoning text.
    pub reasoning: Option<String>,
    /// Tool calls, in the order the model produced them.
    pub tool_calls: Vec<ToolCall>,
    /// Token usage.
    pub usage: Option<Usage>,
    /// Finish reason.
    pub finish_reason: Option<String>,
    /// Seconds from request to the first chunk with content.
    pub time_to_first_token: Option<f64>,
    /// Provider metadata of the response (OpenAI: its `id`).
    pub provider_data: Option<serde_json::Map<String, Value>>,
}

/// Collects [`ModelChunk`]s into a [`ModelResponse`].
#[derive(Debug)]
pub struct ResponseAssembler {
    started: Instant,
    response: ModelResponse,
    calls: Vec<PartialCall>,
}

#[derive(Debug, Default)]
struct PartialCall {
    index: usize,
    id: Option<String>,
    name: String,
    arguments: String,
}

impl Default for ResponseAssembler {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseAssembler {
    /// Starts assembling; time to first token is measured from now.
    pub fn new() -> Self {
        Self { started: Instant::now(), response: ModelResponse::default(), calls: Vec::new() }
    }

    /// Adds one chunk.
    pub fn push(&mut self, chunk: &ModelChunk) {
        if self.response.time_to_first_token.is_none()
            && matches!(chunk, ModelChunk::Content(_) | ModelChunk::ToolCallDelta { .. } | ModelChunk::Reasoning(_))
        {
            self.response.time_to_first_token = Some(self.started.elapsed().as_secs_f64());
        }
        match chunk {
            ModelChunk::Content(text) => self.response.content.push_str(text),
            ModelChunk::Reasoning(text) => {
                self.response.reasoning.get_or_insert_with(String::new).push_str(text);
            }
            ModelChunk::ToolCallDelta { index, id, name, arguments } => {
                let pos = match self.calls.iter().position(|c| c.index == *index) {
                    Some(pos) => pos,
                    None => {
                        self.calls.push(PartialCall { index: *index, ..PartialCall::default() });
                        self.calls.len() - 1
                    }
                };
                let call = &mut self.calls[pos];
                if let Some(id) = id.as_ref().filter(|s| !s.is_empty()) {
                    call.id = Some(id.clone());
                }
                if let Some(name) = name {
                    call.name.push_str(name);
                }
                call.arguments.push_str(arguments);
            }
            ModelChunk::Usage(usage) => self.response.usage = Some(*usage),
            ModelChunk::ProviderData(data) => {
                self.response.provider_data.get_or_insert_with(Default::default).extend(data.clone());
            }
            ModelChunk::Finish(reason) => self.response.finish_reason = Some(reason.clone()),
        }
    }

    /// The response `chunks` make, in order: a whole answer read at once rather than streamed.
    pub fn assemble<'a>(chunks: impl IntoIterator<Item = &'a ModelChunk>) -> ModelResponse {
        let mut assembler = Self::new();
        for chunk in chunks {
            assembler.push(chunk);
        }
        assembler.finish()
    }

    /// The provider metadata received so far.
    pub fn provider_data(&self) -> Option<&serde_json::Map<String, Value>> {
        self.response.provider_data.as_ref()
    }

    /// The assembled response. Calls without an id get a generated one.
    pub fn finish(mut self) -> ModelResponse {
        self.calls.sort_by_key(|c| c.index);
        self.response.tool_calls = self
            .calls
            .into_iter()
            .map(|c| {
                let id = c.id.unwrap_or_else(|| format!("call_{}", crate::clock::new_id().replace('-', "")));
                ToolCall::new(id, c.name, c.arguments)
            })
            .collect();
        self.response
    }
}

/// A language model. Implementations translate [`ModelRequest`]s into a provider's wire format.
#[async_trait]
pub trait Model: Send + Sync + Debug {
    /// Model id as the provider knows it (`gpt-4o-mini`).
    fn id(&self) -> &str;

    /// Provider name as Agno reports it (`OpenAI`, `Groq`, ...).
    fn provider(&self) -> &str;

    /// The model's name as Agno reports it: its model class (`OpenAIChat`, `MistralChat`,
    /// `Groq`); the provider name unless an implementation says otherwise.
    fn name(&self) -> &str {
        self.provider()
    }

    /// The provider as Agno's metrics name it (its `get_provider()`: `OpenAI Chat` for the Chat
    /// Completions models); the provider name unless an implementation says otherwise.
    fn metrics_provider(&self) -> std::borrow::Cow<'_, str> {
        std::borrow::Cow::Borrowed(self.provider())
    }

    /// What the model supports.
    fn capabilities(&self) -> Capabilities;

    /// Starts a streamed response.
    ///
    /// # Errors
    /// A [`ModelError`] when the request cannot be made or the provider refuses it; errors in the
    /// middle of a stream arrive as stream items.
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError>;

    /// A complete response: the collected stream.
    ///
    /// # Errors
    /// The first error of [`Model::stream`] or of the stream itself.
    async fn invoke(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        let mut assembler = ResponseAssembler::new();
        let mut stream = self.stream(request).await?;
        while let Some(chunk) = stream.next().await {
            assembler.push(&chunk?);
        }
        Ok(assembler.finish())
    }
}

/// Parses a `provider:model_id` string into its parts. A bare name (`test`) has no model id.
///
/// # Errors
/// [`ModelErrorKind::UnknownProvider`] for an empty provider.
pub fn split_model_string(spec: &str) -> Result<(&str, Option<&str>), ModelError> {
    let spec = spec.trim();
    let (provider, id) = match spec.split_once(':') {
        Some((p, id)) => (p.trim(), Some(id.trim()).filter(|s| !s.is_empty())),
        None => (spec, None),
    };
    if provider.is_empty() {
        return Err(ModelError::new(
            ModelErrorKind::UnknownProvider,
            format!("model string {spec:?} has no provider; expected provider:model_id"),
        ));
    }
    Ok((provider, id))
}
