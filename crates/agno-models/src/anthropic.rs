//! `Claude`: Anthropic's Messages API (`POST /v1/messages`, API reference
//! <https://docs.anthropic.com/en/api/messages>, streaming
//! <https://docs.anthropic.com/en/docs/build-with-claude/streaming>).
//!
//! The system message goes in `system`; tool calls are `tool_use` blocks and their results
//! `tool_result` blocks of the next user message; images and PDFs are `image` and `document`
//! blocks. Extended thinking (`with_thinking`) comes back as `thinking` blocks, which become
//! `reasoning_content`. Structured output uses `output_config.format` (a JSON schema). Usage
//! counts cached prompt tokens (`cache_read_input_tokens`, `cache_creation_input_tokens`). A
//! `refusal` stop is a [`ModelErrorKind::ContentFiltered`] error.

use std::collections::HashMap;
use std::sync::Arc;

use agno_core::{
    Capabilities, Message, Model, ModelChunk, ModelError, ModelErrorKind, ModelRequest, ModelResponse, ModelStream,
    ResponseAssembler, ResponseFormat, Role, Usage,
};
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::http::{
    ClientConfig, EventParser, event_stream, http_client, invalid, invalid_event, json_body, response_id, send,
};
use crate::parts::{Part, ToolChoice, Turns, parts};

/// Anthropic's API.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The API version sent as `anthropic-version`.
const API_VERSION: &str = "2023-06-01";

/// A Claude model on Anthropic's Messages API (Agno's `Claude`).
#[derive(Debug, Clone)]
pub struct Claude {
    id: String,
    config: Arc<ClientConfig>,
    client: reqwest::Client,
    max_tokens: u32,
    temperature: Option<f64>,
    thinking_budget: Option<u32>,
}

impl Claude {
    /// Model `id` at the API `config` describes (its `api_key` is sent as `x-api-key`).
    ///
    /// # Errors
    /// [`ModelErrorKind::Connection`] when the HTTP client cannot be built.
    pub fn new(id: &str, config: ClientConfig) -> Result<Self, ModelError> {
        Ok(Self {
            id: id.to_owned(),
            client: http_client(config.timeout)?,
            config: Arc::new(config),
            max_tokens: 8192,
            temperature: None,
            thinking_budget: None,
        })
    }

    /// Most tokens of an answer (Anthropic requires it; default 8192).
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Sampling temperature.
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Extended thinking with this many tokens of budget; the thinking comes back as
    /// reasoning.
    pub fn with_thinking(mut self, budget_tokens: u32) -> Self {
        self.thinking_budget = Some(budget_tokens);
        self
    }

    fn label(&self) -> String {
        format!("Anthropic model {}", self.id)
    }

    fn body(&self, request: &ModelRequest, stream: bool) -> Value {
        let mut system = Vec::new();
        let mut messages = Turns::default();
        for m in &request.messages {
            let (role, blocks) = match m.role {
                Role::System | Role::Developer => {
                    system.push(crate::parts::text_of(m.content.as_ref()));
                    continue;
                }
                Role::User => ("user", content_blocks(m)),
                Role::Assistant => ("assistant", assistant_blocks(m)),
                Role::Tool => ("user", vec![tool_result_block(m)]),
                _ => ("user", content_blocks(m)),
            };
            messages.push(role, blocks);
        }
        let mut body = json!({
            "model": self.id,
            "max_tokens": self.max_tokens,
            "messages": messages.into_json("content"),
        });
        if !system.is_empty() {
            body["system"] = json!(system.join("\n\n"));
        }
        if stream {
            body["stream"] = json!(true);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    let mut tool = json!({"name": t.name, "input_schema": t.parameters.as_ref()});
                    if let Some(d) = &t.description {
                        tool["description"] = json!(d);
                    }
                    tool
                })
                .collect();
            if let Some(choice) = request.tool_choice.as_ref().and_then(ToolChoice::of) {
                body["tool_choice"] = tool_choice(choice);
            }
        }
        if let Some(ResponseFormat::JsonSchema { schema, .. }) = &request.response_format {
            body["output_config"] = json!({"format": {"type": "json_schema", "schema": schema}});
        }
        if let Some(t) = self.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(budget) = self.thinking_budget {
            body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
        }
        body
    }

    async fn send(&self, body: &Value) -> Result<reqwest::Response, ModelError> {
        let url = format!("{}/v1/messages", self.config.base());
        send(&self.config, &self.label(), || {
            let request = self.client.post(&url).header("anthropic-version", API_VERSION).json(body);
            match &self.config.api_key {
                Some(key) => request.header("x-api-key", key),
                None => request,
            }
        })
        .await
    }
}

/// `tool_choice` in Anthropic's shape.
fn tool_choice(choice: ToolChoice<'_>) -> Value {
    match choice {
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::None => json!({"type": "none"}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
    }
}

fn content_blocks(m: &Message) -> Vec<Value> {
    parts(m.content.as_ref())
        .into_iter()
        .filter_map(|p| match p {
            Part::Text(t) if t.is_empty() => None,
            Part::Text(t) => Some(json!({"type": "text", "text": t})),
            Part::ImageUrl(url) => Some(json!({"type": "image", "source": {"type": "url", "url": url}})),
            Part::ImageData { mime, data } => {
                Some(json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}))
            }
            Part::File { mime, data, .. } => {
                Some(json!({"type": "document", "source": {"type": "base64", "media_type": mime, "data": data}}))
            }
        })
        .collect()
}

fn assistant_blocks(m: &Message) -> Vec<Value> {
    let mut blocks = content_blocks(m);
    for call in m.tool_calls() {
        // Anthropic takes the input as an object; arguments that are not one are kept as text.
        let input = match serde_json::from_str::<Value>(&call.function.arguments) {
            Ok(Value::Object(o)) => Value::Object(o),
            _ if call.function.arguments.trim().is_empty() => json!({}),
            _ => json!({"arguments": call.function.arguments}),
        };
        blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.function.name, "input": input}));
    }
    blocks
}

fn tool_result_block(m: &Message) -> Value {
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
        "content": crate::parts::text_of(m.content.as_ref()),
    });
    if m.tool_call_error == Some(true) {
        block["is_error"] = json!(true);
    }
    block
}

/// Anthropic's usage in ours: `input_tokens` counts the uncached prompt only, so the cached
/// parts are added back.
fn usage_of(u: &Value) -> Usage {
    let n = |key: &str| u.get(key).and_then(Value::as_u64).unwrap_or(0);
    let cache_read = n("cache_read_input_tokens");
    let input = n("input_tokens") + cache_read + n("cache_creation_input_tokens");
    let output = n("output_tokens");
    Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
        cache_read_tokens: cache_read,
        ..Usage::default()
    }
}

/// `stop_reason` as a finish reason, or the error a refusal is.
fn finish(label: &str, reason: &str) -> Result<ModelChunk, ModelError> {
    match reason {
        "refusal" => Err(ModelError::new(
            ModelErrorKind::ContentFiltered,
            format!("{label} refused to answer (stop reason refusal)"),
        )),
        "tool_use" => Ok(ModelChunk::Finish("tool_calls".to_owned())),
        "max_tokens" => Ok(ModelChunk::Finish("length".to_owned())),
        other => Ok(ModelChunk::Finish(if other == "end_turn" { "stop".to_owned() } else { other.to_owned() })),
    }
}

/// An `{"type": "error"}` body or event as an error.
fn reported_error(label: &str, error: &Value) -> ModelError {
    let kind = error.get("type").and_then(Value::as_str).unwrap_or_default();
    let message = error.get("message").and_then(Value::as_str).unwrap_or("unknown error");
    let kind = match kind {
        "overloaded_error" | "api_error" => ModelErrorKind::Server,
        "rate_limit_error" => ModelErrorKind::RateLimited,
        "authentication_error" | "permission_error" => ModelErrorKind::Auth,
        "not_found_error" => ModelErrorKind::ModelNotFound,
        _ => crate::http::refusal_kind(400, message),
    };
    ModelError::new(kind, format!("{label} reported an error: {message}"))
}

/// The chunks of a whole `message` object.
fn message_chunks(label: &str, doc: &Value) -> Result<Vec<ModelChunk>, ModelError> {
    if doc.get("type").and_then(Value::as_str) == Some("error") {
        return Err(reported_error(label, &doc["error"]));
    }
    let Some(content) = doc.get("content").and_then(Value::as_array) else {
        return Err(invalid(label, "JSON that is not a message (no content)", &doc.to_string()));
    };
    let mut out: Vec<ModelChunk> = response_id(doc.get("id")).into_iter().collect();
    let mut calls = 0;
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => out.push(ModelChunk::Content(block["text"].as_str().unwrap_or_default().to_owned())),
            Some("thinking") => {
                out.push(ModelChunk::Reasoning(block["thinking"].as_str().unwrap_or_default().to_owned()))
            }
            Some("tool_use") => {
                out.push(ModelChunk::ToolCallDelta {
                    index: calls,
                    id: block["id"].as_str().map(str::to_owned),
                    name: block["name"].as_str().map(str::to_owned),
                    arguments: block.get("input").map_or_else(|| "{}".to_owned(), Value::to_string),
                });
                calls += 1;
            }
            _ => {}
        }
    }
    if let Some(usage) = doc.get("usage") {
        out.push(ModelChunk::Usage(usage_of(usage)));
    }
    if let Some(reason) = doc.get("stop_reason").and_then(Value::as_str) {
        out.push(finish(label, reason)?);
    }
    Ok(out)
}

/// The streaming events: `message_start`, `content_block_start` / `_delta` / `_stop`,
/// `message_delta` (stop reason, output tokens), `message_stop`, `ping`, `error`.
struct Events {
    label: String,
    /// Content block index -> tool call index, for `tool_use` blocks.
    calls: HashMap<u64, usize>,
    usage: Value,
}

impl EventParser for Events {
    fn event(&mut self, data: String) -> Result<(Vec<ModelChunk>, bool), ModelError> {
        let data = data.as_str();
        let event: Value =
            serde_json::from_str(data).map_err(|e| invalid_event(&self.label, &format!("not JSON: {e}"), data))?;
        let mut out = Vec::new();
        match event.get("type").and_then(Value::as_str) {
            Some("message_start") => {
                out.extend(response_id(event.pointer("/message/id")));
                if let Some(usage) = event.pointer("/message/usage") {
                    self.usage = usage.clone();
                }
            }
            Some("content_block_start") => {
                let index = event["index"].as_u64().unwrap_or(0);
                let block = &event["content_block"];
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        let call = self.calls.len();
                        self.calls.insert(index, call);
                        out.push(ModelChunk::ToolCallDelta {
                            index: call,
                            id: block["id"].as_str().map(str::to_owned),
                            name: block["name"].as_str().map(str::to_owned),
                            arguments: String::new(),
                        });
                    }
                    Some("text") => {
                        if let Some(t) = block["text"].as_str().filter(|t| !t.is_empty()) {
                            out.push(ModelChunk::Content(t.to_owned()));
                        }
                    }
                    _ => {}
                }
            }
            Some("content_block_delta") => {
                let index = event["index"].as_u64().unwrap_or(0);
                let delta = &event["delta"];
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        out.push(ModelChunk::Content(delta["text"].as_str().unwrap_or_default().to_owned()))
                    }
                    Some("thinking_delta") => {
                        out.push(ModelChunk::Reasoning(delta["thinking"].as_str().unwrap_or_default().to_owned()));
                    }
                    Some("input_json_delta") => {
                        let Some(call) = self.calls.get(&index) else {
                            return Err(invalid_event(
                                &self.label,
                                "arguments for a block that is not a tool call",
                                data,
                            ));
                        };
                        out.push(ModelChunk::ToolCallDelta {
                            index: *call,
                            id: None,
                            name: None,
                            arguments: delta["partial_json"].as_str().unwrap_or_default().to_owned(),
                        });
                    }
                    _ => {}
                }
            }
            Some("message_delta") => {
                if let Some(usage) = event.get("usage").and_then(Value::as_object) {
                    if let Some(fields) = self.usage.as_object_mut() {
                        fields.extend(usage.clone());
                    } else {
                        self.usage = Value::Object(usage.clone());
                    }
                }
                out.push(ModelChunk::Usage(usage_of(&self.usage)));
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    out.push(finish(&self.label, reason)?);
                }
            }
            Some("message_stop") => return Ok((out, true)),
            Some("error") => return Err(reported_error(&self.label, &event["error"])),
            Some("ping" | "content_block_stop") => {}
            _ => return Err(invalid_event(&self.label, "not an Anthropic stream event", data)),
        }
        Ok((out, false))
    }
}

#[async_trait]
impl Model for Claude {
    fn id(&self) -> &str {
        &self.id
    }

    fn provider(&self) -> &str {
        "Anthropic"
    }

    fn name(&self) -> &str {
        "Claude"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { tools: true, native_structured_output: true, json_mode: false, parallel_tool_calls: true }
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let resp = self.send(&self.body(&request, true)).await?;
        let parser = Events { label: self.label(), calls: HashMap::new(), usage: json!({}) };
        Ok(event_stream(self.label(), resp, parser, false))
    }

    async fn invoke(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        let label = self.label();
        let resp = self.send(&self.body(&request, false)).await?;
        let doc = json_body(&self.config, &label, resp).await?;
        Ok(ResponseAssembler::assemble(&message_chunks(&label, &doc)?))
    }
}
