//! `OpenAIResponses`: OpenAI's Responses API (`POST /v1/responses`, reference
//! <https://platform.openai.com/docs/api-reference/responses>, streaming events
//! <https://platform.openai.com/docs/api-reference/responses-streaming>), Agno v3's default for
//! `openai:` models.
//!
//! The conversation is `input` items: messages (`input_text`, `input_image`, `input_file`
//! parts), `function_call` items for the model's calls and `function_call_output` items for
//! their results, matched by `call_id`. Structured output is `text.format`; reasoning models
//! take `reasoning.effort` and their reasoning summaries come back as reasoning;
//! `max_output_tokens` bounds the answer. Typed stream events (`response.output_text.delta`,
//! `response.function_call_arguments.delta`, `response.completed`, ...) become chunks.

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
use crate::parts::{Part, parts};

/// A model on OpenAI's Responses API (Agno's `OpenAIResponses`).
#[derive(Debug, Clone)]
pub struct OpenAIResponses {
    id: String,
    provider: String,
    config: Arc<ClientConfig>,
    client: reqwest::Client,
    max_output_tokens: Option<u32>,
    temperature: Option<f64>,
    reasoning_effort: Option<String>,
}

impl OpenAIResponses {
    /// Model `id` at the server `config` describes (bearer key), reported as `provider`.
    ///
    /// # Errors
    /// [`ModelErrorKind::Connection`] when the HTTP client cannot be built.
    pub fn new(id: &str, provider: &str, config: ClientConfig) -> Result<Self, ModelError> {
        Ok(Self {
            id: id.to_owned(),
            provider: provider.to_owned(),
            client: http_client(config.timeout)?,
            config: Arc::new(config),
            max_output_tokens: None,
            temperature: None,
            reasoning_effort: None,
        })
    }

    /// Most tokens of an answer, reasoning included.
    pub fn with_max_output_tokens(mut self, max: u32) -> Self {
        self.max_output_tokens = Some(max);
        self
    }

    /// Sampling temperature.
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// `reasoning.effort` of a reasoning model (`minimal`, `low`, `medium`, `high`); its
    /// reasoning summaries come back as reasoning.
    pub fn with_reasoning_effort(mut self, effort: &str) -> Self {
        self.reasoning_effort = Some(effort.to_owned());
        self
    }

    fn label(&self) -> String {
        format!("{} model {}", self.provider, self.id)
    }

    fn body(&self, request: &ModelRequest, stream: bool) -> Value {
        let mut input = Vec::new();
        for m in &request.messages {
            match m.role {
                Role::Tool => input.push(json!({
                    "type": "function_call_output",
                    "call_id": m.tool_call_id.clone().unwrap_or_default(),
                    "output": crate::parts::text_of(m.content.as_ref()),
                })),
                Role::Assistant => {
                    let text = crate::parts::text_of(m.content.as_ref());
                    if !text.is_empty() {
                        input.push(json!({"role": "assistant", "content": [{"type": "output_text", "text": text}]}));
                    }
                    for call in m.tool_calls() {
                        input.push(json!({
                            "type": "function_call",
                            "call_id": call.id,
                            "name": call.function.name,
                            "arguments": call.function.arguments,
                        }));
                    }
                }
                role => input.push(json!({"role": role.as_str(), "content": input_parts(m)})),
            }
        }
        let mut body = json!({"model": self.id, "input": input});
        if stream {
            body["stream"] = json!(true);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    let mut tool = json!({"type": "function", "name": t.name, "parameters": t.parameters.as_ref(), "strict": t.strict});
                    if let Some(d) = &t.description {
                        tool["description"] = json!(d);
                    }
                    tool
                })
                .collect();
            if let Some(choice) = &request.tool_choice {
                // Chat Completions' `{"type": "function", "function": {"name"}}` is flat here.
                body["tool_choice"] = match choice.pointer("/function/name") {
                    Some(name) => json!({"type": "function", "name": name}),
                    None => choice.clone(),
                };
            }
        }
        match &request.response_format {
            Some(ResponseFormat::JsonSchema { name, schema, strict }) => {
                body["text"] =
                    json!({"format": {"type": "json_schema", "name": name, "schema": schema, "strict": strict}});
            }
            Some(ResponseFormat::JsonObject) => body["text"] = json!({"format": {"type": "json_object"}}),
            _ => {}
        }
        if let Some(max) = self.max_output_tokens {
            body["max_output_tokens"] = json!(max);
        }
        if let Some(t) = self.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(effort) = &self.reasoning_effort {
            body["reasoning"] = json!({"effort": effort, "summary": "auto"});
        }
        body
    }

    async fn send(&self, body: &Value) -> Result<reqwest::Response, ModelError> {
        let url = format!("{}/responses", self.config.base());
        send(&self.config, &self.label(), || {
            let request = self.client.post(&url).json(body);
            match &self.config.api_key {
                Some(key) => request.bearer_auth(key),
                None => request,
            }
        })
        .await
    }
}

fn input_parts(m: &Message) -> Value {
    let items: Vec<Value> = parts(m.content.as_ref())
        .into_iter()
        .map(|p| match p {
            Part::Text(t) => json!({"type": "input_text", "text": t}),
            Part::ImageUrl(url) => json!({"type": "input_image", "image_url": url}),
            Part::ImageData { mime, data } => {
                json!({"type": "input_image", "image_url": format!("data:{mime};base64,{data}")})
            }
            Part::File { mime, data, name } => json!({
                "type": "input_file",
                "filename": name.unwrap_or_else(|| "file".to_owned()),
                "file_data": format!("data:{mime};base64,{data}"),
            }),
        })
        .collect();
    if items.is_empty() { json!([{"type": "input_text", "text": ""}]) } else { Value::Array(items) }
}

fn usage_of(u: &Value) -> Usage {
    let n = |path: &str| u.pointer(path).and_then(Value::as_u64).unwrap_or(0);
    let (input, output) = (n("/input_tokens"), n("/output_tokens"));
    Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: u.get("total_tokens").and_then(Value::as_u64).unwrap_or(input + output),
        cache_read_tokens: n("/input_tokens_details/cached_tokens"),
        reasoning_tokens: n("/output_tokens_details/reasoning_tokens"),
    }
}

/// A response that did not complete (`failed`, `incomplete` for a content filter) as an error.
fn not_completed(label: &str, response: &Value) -> Option<ModelError> {
    match response.get("status").and_then(Value::as_str) {
        Some("failed") => {
            let message = response.pointer("/error/message").and_then(Value::as_str).unwrap_or("the response failed");
            Some(ModelError::new(
                crate::http::refusal_kind(500, message),
                format!("{label} reported an error: {message}"),
            ))
        }
        Some("incomplete")
            if response.pointer("/incomplete_details/reason").and_then(Value::as_str) == Some("content_filter") =>
        {
            Some(ModelError::new(
                ModelErrorKind::ContentFiltered,
                format!("{label} stopped the answer (content_filter)"),
            ))
        }
        _ => None,
    }
}

fn finish_of(response: &Value, calls: usize) -> ModelChunk {
    let reason = match response.get("status").and_then(Value::as_str) {
        Some("incomplete") => "length",
        _ if calls > 0 => "tool_calls",
        _ => "stop",
    };
    ModelChunk::Finish(reason.to_owned())
}

/// The chunks of a whole `response` object.
fn response_chunks(label: &str, doc: &Value) -> Result<Vec<ModelChunk>, ModelError> {
    if let Some(err) = doc.get("error").filter(|e| e.is_object()) {
        let message = err.get("message").and_then(Value::as_str).unwrap_or("unknown error");
        return Err(ModelError::new(
            crate::http::refusal_kind(400, message),
            format!("{label} reported an error: {message}"),
        ));
    }
    let Some(output) = doc.get("output").and_then(Value::as_array) else {
        return Err(invalid(label, "JSON that is not a response (no output)", &doc.to_string()));
    };
    if let Some(err) = not_completed(label, doc) {
        return Err(err);
    }
    let mut out: Vec<ModelChunk> = response_id(doc.get("id")).into_iter().collect();
    let mut calls = 0;
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                    match part.get("type").and_then(Value::as_str) {
                        Some("output_text") => {
                            out.push(ModelChunk::Content(part["text"].as_str().unwrap_or_default().to_owned()))
                        }
                        Some("refusal") => {
                            let why = part["refusal"].as_str().unwrap_or_default();
                            return Err(ModelError::new(
                                ModelErrorKind::ContentFiltered,
                                format!("{label} refused: {why}"),
                            ));
                        }
                        _ => {}
                    }
                }
            }
            Some("function_call") => {
                out.push(ModelChunk::ToolCallDelta {
                    index: calls,
                    id: item["call_id"].as_str().map(str::to_owned),
                    name: item["name"].as_str().map(str::to_owned),
                    arguments: item["arguments"].as_str().unwrap_or_default().to_owned(),
                });
                calls += 1;
            }
            Some("reasoning") => {
                let text: Vec<&str> =
                    item["summary"].as_array().into_iter().flatten().filter_map(|s| s["text"].as_str()).collect();
                if !text.is_empty() {
                    out.push(ModelChunk::Reasoning(text.join("\n")));
                }
            }
            _ => {}
        }
    }
    if let Some(usage) = doc.get("usage").filter(|u| u.is_object()) {
        out.push(ModelChunk::Usage(usage_of(usage)));
    }
    out.push(finish_of(doc, calls));
    Ok(out)
}

/// The typed stream events.
struct Events {
    label: String,
    /// `output_index` -> tool call index, for `function_call` items.
    calls: HashMap<u64, usize>,
}

impl EventParser for Events {
    fn event(&mut self, data: String) -> Result<(Vec<ModelChunk>, bool), ModelError> {
        let data = data.as_str();
        let event: Value =
            serde_json::from_str(data).map_err(|e| invalid_event(&self.label, &format!("not JSON: {e}"), data))?;
        let mut out = Vec::new();
        let kind = event.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "response.created" => {
                out.extend(response_id(event.pointer("/response/id")));
            }
            "response.output_item.added" => {
                let item = &event["item"];
                if item.get("type").and_then(Value::as_str) == Some("function_call") {
                    let call = self.calls.len();
                    self.calls.insert(event["output_index"].as_u64().unwrap_or(0), call);
                    out.push(ModelChunk::ToolCallDelta {
                        index: call,
                        id: item["call_id"].as_str().map(str::to_owned),
                        name: item["name"].as_str().map(str::to_owned),
                        arguments: item["arguments"].as_str().unwrap_or_default().to_owned(),
                    });
                }
            }
            "response.output_text.delta" => {
                out.push(ModelChunk::Content(event["delta"].as_str().unwrap_or_default().to_owned()))
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                out.push(ModelChunk::Reasoning(event["delta"].as_str().unwrap_or_default().to_owned()));
            }
            "response.function_call_arguments.delta" => {
                let Some(call) = self.calls.get(&event["output_index"].as_u64().unwrap_or(u64::MAX)) else {
                    return Err(invalid_event(&self.label, "arguments for an item that is not a function call", data));
                };
                out.push(ModelChunk::ToolCallDelta {
                    index: *call,
                    id: None,
                    name: None,
                    arguments: event["delta"].as_str().unwrap_or_default().to_owned(),
                });
            }
            "response.refusal.delta" | "response.refusal.done" => {
                let why = event["refusal"].as_str().or_else(|| event["delta"].as_str()).unwrap_or_default();
                return Err(ModelError::new(ModelErrorKind::ContentFiltered, format!("{} refused: {why}", self.label)));
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let response = &event["response"];
                if let Some(err) = not_completed(&self.label, response) {
                    return Err(err);
                }
                if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
                    out.push(ModelChunk::Usage(usage_of(usage)));
                }
                out.push(finish_of(response, self.calls.len()));
                return Ok((out, true));
            }
            "error" => {
                let message = event["message"]
                    .as_str()
                    .or_else(|| event.pointer("/error/message").and_then(Value::as_str))
                    .unwrap_or("unknown error");
                return Err(ModelError::new(
                    crate::http::refusal_kind(500, message),
                    format!("{} reported an error: {message}", self.label),
                ));
            }
            k if k.starts_with("response.") => {}
            _ => return Err(invalid_event(&self.label, "not a Responses stream event", data)),
        }
        Ok((out, false))
    }
}

#[async_trait]
impl Model for OpenAIResponses {
    fn id(&self) -> &str {
        &self.id
    }

    fn provider(&self) -> &str {
        &self.provider
    }

    fn name(&self) -> &str {
        "OpenAIResponses"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { tools: true, native_structured_output: true, json_mode: true, parallel_tool_calls: true }
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let resp = self.send(&self.body(&request, true)).await?;
        Ok(event_stream(self.label(), resp, Events { label: self.label(), calls: HashMap::new() }, false))
    }

    async fn invoke(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        let label = self.label();
        let resp = self.send(&self.body(&request, false)).await?;
        let doc = json_body(&self.config, &label, resp).await?;
        Ok(ResponseAssembler::assemble(&response_chunks(&label, &doc)?))
    }
}
