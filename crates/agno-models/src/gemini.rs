//! `Gemini`: Google's Gemini API (`POST /v1beta/models/{model}:generateContent`, streamed with
//! `:streamGenerateContent?alt=sse`; reference <https://ai.google.dev/api/generate-content>,
//! function calling <https://ai.google.dev/gemini-api/docs/function-calling>).
//!
//! The system message is `systemInstruction`; the assistant is role `model`; tool calls are
//! `functionCall` parts and their results `functionResponse` parts (matched by name and id);
//! images and files are `inlineData` / `fileData` parts. Structured output is
//! `responseMimeType: application/json` with `responseJsonSchema`. Thoughts (`thought: true`
//! parts, with `with_thinking`) become reasoning. A prompt or an answer blocked for safety
//! (`promptFeedback.blockReason`, `finishReason: SAFETY`) is a
//! [`ModelErrorKind::ContentFiltered`] error naming the reason.

use std::sync::Arc;

use agno_core::{
    Capabilities, Message, Model, ModelChunk, ModelError, ModelErrorKind, ModelRequest, ModelResponse, ModelStream,
    ResponseAssembler, ResponseFormat, Role, Usage,
};
use async_trait::async_trait;
use serde_json::{Map, Value, json};

use crate::http::{
    ClientConfig, EventParser, event_stream, http_client, invalid, invalid_event, json_body, response_id, send,
};
use crate::parts::{Part, ToolChoice, Turns, parts};

/// The Gemini API.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// A Gemini model on the Gemini API (Agno's `Gemini`).
#[derive(Debug, Clone)]
pub struct Gemini {
    id: String,
    config: Arc<ClientConfig>,
    client: reqwest::Client,
    temperature: Option<f64>,
    max_output_tokens: Option<u32>,
    thinking_budget: Option<i64>,
}

impl Gemini {
    /// Model `id` at the API `config` describes (its `api_key` is sent as `x-goog-api-key`).
    ///
    /// # Errors
    /// [`ModelErrorKind::Connection`] when the HTTP client cannot be built.
    pub fn new(id: &str, config: ClientConfig) -> Result<Self, ModelError> {
        Ok(Self {
            id: id.to_owned(),
            client: http_client(config.timeout)?,
            config: Arc::new(config),
            temperature: None,
            max_output_tokens: None,
            thinking_budget: None,
        })
    }

    /// Sampling temperature.
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Most tokens of an answer.
    pub fn with_max_output_tokens(mut self, max: u32) -> Self {
        self.max_output_tokens = Some(max);
        self
    }

    /// Thinking with this budget (`-1`: the model decides), its thoughts returned as reasoning.
    pub fn with_thinking(mut self, budget: i64) -> Self {
        self.thinking_budget = Some(budget);
        self
    }

    fn label(&self) -> String {
        format!("Google model {}", self.id)
    }

    fn body(&self, request: &ModelRequest) -> Value {
        let mut system = Vec::new();
        let mut contents = Turns::default();
        // Function responses name the function: remember which call id was which tool.
        let mut names = std::collections::HashMap::new();
        for m in &request.messages {
            let (role, parts) = match m.role {
                Role::System | Role::Developer => {
                    system.push(json!({"text": crate::parts::text_of(m.content.as_ref())}));
                    continue;
                }
                Role::Assistant => {
                    for call in m.tool_calls() {
                        names.insert(call.id.clone(), call.function.name.clone());
                    }
                    ("model", model_parts(m))
                }
                Role::Tool => {
                    let id = m.tool_call_id.clone().unwrap_or_default();
                    let name = m
                        .tool_name
                        .clone()
                        .or_else(|| names.get(&id).cloned())
                        .or_else(|| m.name.clone())
                        .unwrap_or_default();
                    let text = crate::parts::text_of(m.content.as_ref());
                    let key = if m.tool_call_error == Some(true) { "error" } else { "result" };
                    ("user", vec![json!({"functionResponse": {"id": id, "name": name, "response": {key: text}}})])
                }
                _ => ("user", user_parts(m)),
            };
            contents.push(role, parts);
        }
        let mut body = json!({
            "contents": contents.into_json("parts"),
        });
        if !system.is_empty() {
            body["systemInstruction"] = json!({"parts": system});
        }
        if !request.tools.is_empty() {
            let declarations: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    let mut d = json!({"name": t.name, "parametersJsonSchema": t.parameters.as_ref()});
                    if let Some(desc) = &t.description {
                        d["description"] = json!(desc);
                    }
                    d
                })
                .collect();
            body["tools"] = json!([{"functionDeclarations": declarations}]);
            if let Some(choice) = request.tool_choice.as_ref().and_then(ToolChoice::of) {
                body["toolConfig"] = json!({"functionCallingConfig": calling_config(choice)});
            }
        }
        let mut generation = Map::new();
        match &request.response_format {
            Some(ResponseFormat::JsonSchema { schema, .. }) => {
                generation.insert("responseMimeType".into(), json!("application/json"));
                generation.insert("responseJsonSchema".into(), schema.clone());
            }
            Some(ResponseFormat::JsonObject) => {
                generation.insert("responseMimeType".into(), json!("application/json"));
            }
            _ => {}
        }
        if let Some(t) = self.temperature {
            generation.insert("temperature".into(), json!(t));
        }
        if let Some(max) = self.max_output_tokens {
            generation.insert("maxOutputTokens".into(), json!(max));
        }
        if let Some(budget) = self.thinking_budget {
            generation.insert("thinkingConfig".into(), json!({"thinkingBudget": budget, "includeThoughts": true}));
        }
        if !generation.is_empty() {
            body["generationConfig"] = Value::Object(generation);
        }
        body
    }

    async fn send(&self, body: &Value, stream: bool) -> Result<reqwest::Response, ModelError> {
        let method = if stream { "streamGenerateContent?alt=sse" } else { "generateContent" };
        let url = format!("{}/v1beta/models/{}:{method}", self.config.base(), self.id);
        send(&self.config, &self.label(), || {
            let request = self.client.post(&url).json(body);
            match &self.config.api_key {
                Some(key) => request.header("x-goog-api-key", key),
                None => request,
            }
        })
        .await
    }
}

/// `tool_choice` as a `functionCallingConfig`.
fn calling_config(choice: ToolChoice<'_>) -> Value {
    match choice {
        ToolChoice::Auto => json!({"mode": "AUTO"}),
        ToolChoice::None => json!({"mode": "NONE"}),
        ToolChoice::Required => json!({"mode": "ANY"}),
        ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
    }
}

fn user_parts(m: &Message) -> Vec<Value> {
    parts(m.content.as_ref())
        .into_iter()
        .filter_map(|p| match p {
            Part::Text(t) if t.is_empty() => None,
            Part::Text(t) => Some(json!({"text": t})),
            Part::ImageUrl(url) => Some(json!({"fileData": {"mimeType": mime_of(&url), "fileUri": url}})),
            Part::ImageData { mime, data } | Part::File { mime, data, .. } => {
                Some(json!({"inlineData": {"mimeType": mime, "data": data}}))
            }
        })
        .collect()
}

/// A media type from a URL's extension (Gemini's `fileData` needs one).
fn mime_of(url: &str) -> &'static str {
    let lower = url.to_lowercase();
    let ext = lower.rsplit('.').next().unwrap_or_default();
    match ext {
        "png" => "image/png",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        _ => "image/jpeg",
    }
}

fn model_parts(m: &Message) -> Vec<Value> {
    let mut out = user_parts(m);
    for call in m.tool_calls() {
        let args = match serde_json::from_str::<Value>(&call.function.arguments) {
            Ok(Value::Object(o)) => Value::Object(o),
            _ => json!({}),
        };
        out.push(json!({"functionCall": {"id": call.id, "name": call.function.name, "args": args}}));
    }
    out
}

fn usage_of(u: &Value) -> Usage {
    let n = |key: &str| u.get(key).and_then(Value::as_u64).unwrap_or(0);
    let input = n("promptTokenCount");
    let reasoning = n("thoughtsTokenCount");
    let output = n("candidatesTokenCount") + reasoning;
    Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: u.get("totalTokenCount").and_then(Value::as_u64).unwrap_or(input + output),
        cache_read_tokens: n("cachedContentTokenCount"),
        reasoning_tokens: reasoning,
    }
}

fn blocked(label: &str, what: &str, reason: &str) -> ModelError {
    ModelError::new(ModelErrorKind::ContentFiltered, format!("{label} blocked the {what} ({reason})"))
}

/// The chunks of one `GenerateContentResponse` (a stream chunk or the whole answer); `calls`
/// counts the function calls seen so far (each is one whole tool call).
fn response_chunks(label: &str, doc: &Value, calls: &mut usize) -> Result<(Vec<ModelChunk>, bool), ModelError> {
    if let Some(error) = doc.get("error") {
        let message = error.get("message").and_then(Value::as_str).unwrap_or("unknown error");
        let code = error.get("code").and_then(Value::as_u64).unwrap_or(500) as u16;
        return Err(ModelError::new(
            crate::http::refusal_kind(code, message),
            format!("{label} reported an error: {message}"),
        ));
    }
    if let Some(reason) = doc.pointer("/promptFeedback/blockReason").and_then(Value::as_str) {
        return Err(blocked(label, "prompt", reason));
    }
    if doc.get("candidates").is_none() && doc.get("usageMetadata").is_none() {
        return Err(invalid(label, "JSON that is not a GenerateContentResponse", &doc.to_string()));
    }
    let mut out = Vec::new();
    out.extend(response_id(doc.get("responseId")));
    let mut done = false;
    if let Some(candidate) = doc.pointer("/candidates/0") {
        for part in candidate.pointer("/content/parts").and_then(Value::as_array).into_iter().flatten() {
            if let Some(call) = part.get("functionCall") {
                out.push(ModelChunk::ToolCallDelta {
                    index: *calls,
                    id: call.get("id").and_then(Value::as_str).map(str::to_owned),
                    name: call.get("name").and_then(Value::as_str).map(str::to_owned),
                    arguments: call.get("args").map_or_else(|| "{}".to_owned(), Value::to_string),
                });
                *calls += 1;
            } else if let Some(text) = part.get("text").and_then(Value::as_str) {
                if part.get("thought").and_then(Value::as_bool) == Some(true) {
                    out.push(ModelChunk::Reasoning(text.to_owned()));
                } else if !text.is_empty() {
                    out.push(ModelChunk::Content(text.to_owned()));
                }
            }
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            match reason {
                "SAFETY" | "PROHIBITED_CONTENT" | "BLOCKLIST" | "SPII" | "RECITATION" => {
                    return Err(blocked(label, "answer", reason));
                }
                "STOP" => out.push(ModelChunk::Finish(if *calls > 0 { "tool_calls" } else { "stop" }.to_owned())),
                "MAX_TOKENS" => out.push(ModelChunk::Finish("length".to_owned())),
                other => out.push(ModelChunk::Finish(other.to_lowercase())),
            }
            done = true;
        }
    }
    if done && let Some(usage) = doc.get("usageMetadata") {
        out.push(ModelChunk::Usage(usage_of(usage)));
    }
    Ok((out, done))
}

struct Events {
    label: String,
    calls: usize,
}

impl EventParser for Events {
    fn event(&mut self, data: String) -> Result<(Vec<ModelChunk>, bool), ModelError> {
        let data = data.as_str();
        let doc: Value =
            serde_json::from_str(data).map_err(|e| invalid_event(&self.label, &format!("not JSON: {e}"), data))?;
        response_chunks(&self.label, &doc, &mut self.calls)
    }
}

#[async_trait]
impl Model for Gemini {
    fn id(&self) -> &str {
        &self.id
    }

    fn provider(&self) -> &str {
        "Google"
    }

    fn name(&self) -> &str {
        "Gemini"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { tools: true, native_structured_output: true, json_mode: true, parallel_tool_calls: true }
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let resp = self.send(&self.body(&request), true).await?;
        Ok(event_stream(self.label(), resp, Events { label: self.label(), calls: 0 }, false))
    }

    async fn invoke(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        let label = self.label();
        let resp = self.send(&self.body(&request), false).await?;
        let doc = json_body(&self.config, &label, resp).await?;
        let (chunks, _) = response_chunks(&label, &doc, &mut 0)?;
        Ok(ResponseAssembler::assemble(&chunks))
    }
}
