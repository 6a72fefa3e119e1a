//! `Ollama`: Ollama's native chat API (`POST /api/chat`, reference
//! <https://github.com/ollama/ollama/blob/main/docs/api.md#generate-a-chat-completion>),
//! streamed as NDJSON (one JSON object per line, the last with `done: true`).
//!
//! Tool calls carry no ids on this API (the assembler gives them ids; results go back as `tool`
//! messages with `tool_name`); arguments are objects, each call arrives whole. Images are base64
//! in `images` (Ollama takes no URLs). Structured output is `format` (a JSON schema, or
//! `"json"`); `keep_alive` keeps the model loaded; `think` returns the model's thinking as
//! reasoning.

use std::sync::Arc;

use agno_core::{
    Capabilities, Message, Model, ModelChunk, ModelError, ModelErrorKind, ModelRequest, ModelResponse, ModelStream,
    ResponseAssembler, ResponseFormat, Role, Usage,
};
use async_trait::async_trait;
use serde_json::{Map, Value, json};

use crate::http::{ClientConfig, EventParser, event_stream, http_client, invalid, invalid_event, json_body, send};
use crate::parts::{Part, parts};

/// Ollama's default address.
pub const DEFAULT_BASE_URL: &str = "http://localhost:11434";

/// A model served by Ollama (Agno's `Ollama`).
#[derive(Debug, Clone)]
pub struct Ollama {
    id: String,
    config: Arc<ClientConfig>,
    client: reqwest::Client,
    keep_alive: Option<String>,
    think: bool,
    options: Map<String, Value>,
}

/// `OLLAMA_HOST` is a host (`127.0.0.1:11434`), maybe without a scheme.
pub fn base_url_of_host(host: &str) -> String {
    let with_scheme = if host.contains("://") { host.to_owned() } else { format!("http://{host}") };
    with_scheme.trim_end_matches('/').to_owned()
}

impl Ollama {
    /// Model `id` at the Ollama server `config` describes (no key needed; one given is sent as
    /// a bearer token, for proxies).
    ///
    /// # Errors
    /// [`ModelErrorKind::Connection`] when the HTTP client cannot be built.
    pub fn new(id: &str, config: ClientConfig) -> Result<Self, ModelError> {
        Ok(Self {
            id: id.to_owned(),
            client: http_client(config.timeout)?,
            config: Arc::new(config),
            keep_alive: None,
            think: false,
            options: Map::new(),
        })
    }

    /// How long the server keeps the model loaded after the call (`"5m"`, `"-1"`, `"0"`).
    pub fn with_keep_alive(mut self, keep_alive: &str) -> Self {
        self.keep_alive = Some(keep_alive.to_owned());
        self
    }

    /// Asks thinking models to think; their thinking comes back as reasoning.
    pub fn with_thinking(mut self) -> Self {
        self.think = true;
        self
    }

    /// A model option (`temperature`, `num_ctx`, `num_predict`, ...).
    pub fn with_option(mut self, key: &str, value: Value) -> Self {
        self.options.insert(key.to_owned(), value);
        self
    }

    fn label(&self) -> String {
        format!("Ollama model {}", self.id)
    }

    fn body(&self, request: &ModelRequest, stream: bool) -> Result<Value, ModelError> {
        let messages = request.messages.iter().map(|m| self.message(m)).collect::<Result<Vec<_>, _>>()?;
        let mut body = json!({"model": self.id, "messages": messages, "stream": stream});
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters.as_ref()}}))
                .collect();
        }
        match &request.response_format {
            Some(ResponseFormat::JsonSchema { schema, .. }) => body["format"] = schema.clone(),
            Some(ResponseFormat::JsonObject) => body["format"] = json!("json"),
            _ => {}
        }
        if let Some(k) = &self.keep_alive {
            body["keep_alive"] = json!(k);
        }
        if self.think {
            body["think"] = json!(true);
        }
        if !self.options.is_empty() {
            body["options"] = Value::Object(self.options.clone());
        }
        Ok(body)
    }

    fn message(&self, m: &Message) -> Result<Value, ModelError> {
        let mut text = Vec::new();
        let mut images = Vec::new();
        for part in parts(m.content.as_ref()) {
            match part {
                Part::Text(t) => text.push(t),
                Part::ImageData { data, .. } => images.push(json!(data)),
                Part::ImageUrl(url) => {
                    return Err(ModelError::new(
                        ModelErrorKind::BadRequest,
                        format!(
                            "{} takes images as bytes, not URLs: give the image's data instead of {url}",
                            self.label()
                        ),
                    ));
                }
                Part::File { mime, .. } => {
                    return Err(ModelError::new(
                        ModelErrorKind::BadRequest,
                        format!("{} takes no files ({mime}); send their text instead", self.label()),
                    ));
                }
            }
        }
        let role = match m.role {
            Role::Developer => "system",
            other => other.as_str(),
        };
        let mut out = json!({"role": role, "content": text.join("\n")});
        if !images.is_empty() {
            out["images"] = Value::Array(images);
        }
        if !m.tool_calls().is_empty() {
            out["tool_calls"] = m
                .tool_calls()
                .iter()
                .map(|c| {
                    let args = serde_json::from_str::<Value>(&c.function.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or(json!({}));
                    json!({"function": {"name": c.function.name, "arguments": args}})
                })
                .collect();
        }
        if m.role == Role::Tool
            && let Some(name) = m.tool_name.clone().or_else(|| m.name.clone())
        {
            out["tool_name"] = json!(name);
        }
        Ok(out)
    }

    async fn send(&self, body: &Value) -> Result<reqwest::Response, ModelError> {
        let url = format!("{}/api/chat", self.config.base());
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

/// The chunks of one response object (a stream line or the whole answer); `calls` counts the
/// tool calls so far.
fn line_chunks(label: &str, doc: &Value, calls: &mut usize) -> Result<(Vec<ModelChunk>, bool), ModelError> {
    if let Some(error) = doc.get("error") {
        let message = error.as_str().map_or_else(|| error.to_string(), str::to_owned);
        return Err(ModelError::new(
            crate::http::refusal_kind(500, &message),
            format!("{label} reported an error: {message}"),
        ));
    }
    if doc.get("done").is_none() {
        return Err(invalid(label, "JSON that is not a chat response (no done)", &doc.to_string()));
    }
    let mut out = Vec::new();
    let message = &doc["message"];
    if let Some(thinking) = message.get("thinking").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        out.push(ModelChunk::Reasoning(thinking.to_owned()));
    }
    if let Some(text) = message.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        out.push(ModelChunk::Content(text.to_owned()));
    }
    for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
        out.push(ModelChunk::ToolCallDelta {
            index: *calls,
            id: call.get("id").and_then(Value::as_str).map(str::to_owned),
            name: call.pointer("/function/name").and_then(Value::as_str).map(str::to_owned),
            arguments: match call.pointer("/function/arguments") {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => "{}".to_owned(),
            },
        });
        *calls += 1;
    }
    let done = doc["done"].as_bool() == Some(true);
    if done {
        let n = |key: &str| doc.get(key).and_then(Value::as_u64).unwrap_or(0);
        let (input, output) = (n("prompt_eval_count"), n("eval_count"));
        out.push(ModelChunk::Usage(Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: input + output,
            ..Usage::default()
        }));
        let reason = doc.get("done_reason").and_then(Value::as_str).unwrap_or("stop");
        out.push(ModelChunk::Finish(if *calls > 0 && reason == "stop" {
            "tool_calls".to_owned()
        } else {
            reason.to_owned()
        }));
    }
    Ok((out, done))
}

struct Lines {
    label: String,
    calls: usize,
}

impl EventParser for Lines {
    fn event(&mut self, data: String) -> Result<(Vec<ModelChunk>, bool), ModelError> {
        let data = data.as_str();
        let doc: Value =
            serde_json::from_str(data).map_err(|e| invalid_event(&self.label, &format!("not JSON: {e}"), data))?;
        line_chunks(&self.label, &doc, &mut self.calls)
    }
}

#[async_trait]
impl Model for Ollama {
    fn id(&self) -> &str {
        &self.id
    }

    fn provider(&self) -> &str {
        "Ollama"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { tools: true, native_structured_output: true, json_mode: true, parallel_tool_calls: true }
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let resp = self.send(&self.body(&request, true)?).await?;
        Ok(event_stream(self.label(), resp, Lines { label: self.label(), calls: 0 }, true))
    }

    async fn invoke(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        let label = self.label();
        let resp = self.send(&self.body(&request, false)?).await?;
        let doc = json_body(&self.config, &label, resp).await?;
        let (chunks, _) = line_chunks(&label, &doc, &mut 0)?;
        Ok(ResponseAssembler::assemble(&chunks))
    }
}
