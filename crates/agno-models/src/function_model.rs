//! `FunctionModel`: a model whose every reply is decided by a user closure, for tests that need
//! exact control over what the "model" says.

use std::fmt;
use std::sync::Arc;

use agno_core::{Capabilities, Model, ModelChunk, ModelError, ModelRequest, ModelResponse, ModelStream};
use async_trait::async_trait;
use futures::StreamExt;

type Reply = dyn Fn(&ModelRequest) -> Result<ModelResponse, ModelError> + Send + Sync;

/// A model driven by a closure.
///
/// ```
/// use agno_core::{ModelResponse, ToolCall};
/// use agno_models::FunctionModel;
/// let model = FunctionModel::new(|req| {
///     let turn = req.messages.len();
///     Ok(ModelResponse { content: format!("turn {turn}"), ..Default::default() })
/// });
/// ```
#[derive(Clone)]
pub struct FunctionModel {
    reply: Arc<Reply>,
    id: String,
}

impl fmt::Debug for FunctionModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FunctionModel").field("id", &self.id).finish_non_exhaustive()
    }
}

impl FunctionModel {
    /// A model whose replies come from `reply`.
    pub fn new(reply: impl Fn(&ModelRequest) -> Result<ModelResponse, ModelError> + Send + Sync + 'static) -> Self {
        Self { reply: Arc::new(reply), id: "function".to_owned() }
    }

    /// Reports this model id.
    pub fn with_id(mut self, id: &str) -> Self {
        self.id = id.to_owned();
        self
    }
}

/// Splits a complete response into the chunks a provider would stream.
pub fn response_chunks(response: ModelResponse) -> Vec<ModelChunk> {
    let mut chunks = Vec::new();
    if let Some(reasoning) = response.reasoning {
        chunks.push(ModelChunk::Reasoning(reasoning));
    }
    if !response.content.is_empty() {
        chunks.push(ModelChunk::Content(response.content));
    }
    for (index, call) in response.tool_calls.into_iter().enumerate() {
        chunks.push(ModelChunk::ToolCallDelta {
            index,
            id: Some(call.id),
            name: Some(call.function.name),
            arguments: call.function.arguments,
        });
    }
    if let Some(usage) = response.usage {
        chunks.push(ModelChunk::Usage(usage));
    }
    chunks.push(ModelChunk::Finish(response.finish_reason.unwrap_or_else(|| "stop".to_owned())));
    chunks
}

#[async_trait]
impl Model for FunctionModel {
    fn id(&self) -> &str {
        &self.id
    }

    fn provider(&self) -> &str {
        "Function"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { tools: true, native_structured_output: true, json_mode: true, parallel_tool_calls: true }
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let response = (self.reply)(&request)?;
        Ok(futures::stream::iter(response_chunks(response).into_iter().map(Ok)).boxed())
    }
}
