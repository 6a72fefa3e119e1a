//! `OpenAIChat`: the OpenAI Chat Completions API, and every OpenAI-compatible server through
//! presets (see `presets.rs`).

use std::sync::Arc;

use agno_core::{
    Capabilities, Message, Model, ModelChunk, ModelError, ModelErrorKind, ModelRequest, ModelResponse, ModelStream,
    ResponseAssembler, ResponseFormat, Role,
};
use async_trait::async_trait;
use serde_json::{Value, json};

use super::streaming::{ChatEvents, chunks_of};
use super::wire::{ChatRequest, ChatResponse, StreamOptions, WireFunction, WireMessage, WireTool};
use crate::http::{ClientConfig, body_text, event_stream, http_client, invalid, send};

/// A model served by an OpenAI Chat Completions compatible API.
#[derive(Debug, Clone)]
pub struct OpenAIChat {
    id: String,
    provider: String,
    config: Arc<ClientConfig>,
    client: reqwest::Client,
    capabilities: Capabilities,
    temperature: Option<f64>,
    max_tokens: Option<u32>,
    /// Other request options, sent as given.
    options: serde_json::Map<String, Value>,
    /// Where requests go: `{base}/chat/completions`, or an Azure deployment's URL.
    url: String,
    /// The header carrying the key (`api-key` on Azure); a bearer token when `None`.
    key_header: Option<&'static str>,
}

/// Azure OpenAI's API version when none is configured.
pub const AZURE_API_VERSION: &str = "2024-10-21";

impl OpenAIChat {
    /// A model `id` at the server described by `config`, reported as `provider`.
    ///
    /// # Errors
    /// [`ModelErrorKind::Connection`] when the HTTP client cannot be built.
    pub fn new(id: &str, provider: &str, config: ClientConfig) -> Result<Self, ModelError> {
        let client = http_client(config.timeout)?;
        Ok(Self {
            url: format!("{}/chat/completions", config.base()),
            key_header: None,
            options: serde_json::Map::new(),
            id: id.to_owned(),
            provider: provider.to_owned(),
            config: Arc::new(config),
            client,
            capabilities: Capabilities {
                tools: true,
                native_structured_output: true,
                json_mode: true,
                parallel_tool_calls: true,
            },
            temperature: None,
            max_tokens: None,
        })
    }

    /// A deployment of Azure OpenAI: requests go to
    /// `{endpoint}/openai/deployments/{deployment}/chat/completions?api-version={api_version}`
    /// with the key as `api-key` (Azure's URL shape,
    /// <https://learn.microsoft.com/en-us/azure/ai-services/openai/reference>). `config.base_url`
    /// is the resource endpoint (`https://my-resource.openai.azure.com`).
    ///
    /// # Errors
    /// [`ModelErrorKind::Connection`] when the HTTP client cannot be built.
    pub fn azure(deployment: &str, api_version: &str, config: ClientConfig) -> Result<Self, ModelError> {
        let endpoint = config.base().trim_end_matches("/openai").to_owned();
        let url = format!("{endpoint}/openai/deployments/{deployment}/chat/completions?api-version={api_version}");
        let mut model = Self::new(deployment, "Azure", config)?;
        model.url = url;
        model.key_header = Some("api-key");
        Ok(model)
    }

    /// Overrides what the server supports.
    pub fn with_capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Sampling temperature.
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Maximum completion tokens: sent as `max_completion_tokens` to the OpenAI models that
    /// refuse `max_tokens` (the o-series and GPT-5), as `max_tokens` elsewhere.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Any other request option of the Chat Completions API, sent as given: `top_p`, `seed`,
    /// `stop`, `frequency_penalty`, `presence_penalty`, `logit_bias`, `logprobs`,
    /// `top_logprobs`, `user`, `reasoning_effort`, `verbosity`, `service_tier`, `store`,
    /// `metadata`, `parallel_tool_calls`, `prediction`, `modalities`, `audio`, ...
    pub fn with_option(mut self, key: &str, value: Value) -> Self {
        self.options.insert(key.to_owned(), value);
        self
    }

    /// Whether this model takes `max_completion_tokens` instead of `max_tokens`.
    fn uses_max_completion_tokens(&self) -> bool {
        let id = self.id.to_lowercase();
        let id = id.rsplit('/').next().unwrap_or(&id);
        matches!(self.provider.as_str(), "OpenAI" | "Azure")
            && (["o1", "o3", "o4", "gpt-5"].iter().any(|p| id.starts_with(p)))
    }

    /// The base URL requests go to.
    pub fn base_url(&self) -> &str {
        &self.config.base_url
    }

    fn label(&self) -> String {
        format!("{} model {}", self.provider, self.id)
    }

    fn body(&self, request: &ModelRequest, stream: bool) -> Value {
        let response_format = request.response_format.as_ref().map(|f| match f {
            ResponseFormat::JsonSchema { name, schema, strict } if self.capabilities.native_structured_output => {
                json!({"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": strict}})
            }
            _ => json!({"type": "json_object"}),
        });
        let body = ChatRequest {
            model: &self.id,
            messages: request.messages.iter().map(wire_message).collect(),
            tools: request
                .tools
                .iter()
                .map(|t| WireTool {
                    kind: "function",
                    function: WireFunction {
                        name: &t.name,
                        description: t.description.as_deref(),
                        parameters: &t.parameters,
                        strict: t.strict,
                    },
                })
                .collect(),
            tool_choice: if request.tools.is_empty() { None } else { request.tool_choice.as_ref() },
            response_format,
            stream,
            stream_options: stream.then_some(StreamOptions { include_usage: true }),
            temperature: self.temperature,
            max_tokens: self.max_tokens.filter(|_| !self.uses_max_completion_tokens()),
            max_completion_tokens: self.max_tokens.filter(|_| self.uses_max_completion_tokens()),
            options: &self.options,
        };
        serde_json::to_value(&body).unwrap_or(Value::Null)
    }

    /// Sends the request, retrying what can be retried; returns the successful response.
    async fn send(&self, body: &Value) -> Result<reqwest::Response, ModelError> {
        send(&self.config, &self.label(), || {
            let request = self.client.post(&self.url).json(body);
            match (&self.config.api_key, self.key_header) {
                (Some(key), Some(header)) => request.header(header, key),
                (Some(key), None) => request.bearer_auth(key),
                (None, _) => request,
            }
        })
        .await
    }
}

fn wire_message(m: &Message) -> WireMessage {
    let content = match (&m.content, m.role) {
        // Tool results must be strings.
        (Some(Value::String(s)), _) => Some(Value::String(s.clone())),
        (Some(other), Role::Tool) => Some(Value::String(other.to_string())),
        (Some(other), _) => Some(other.clone()),
        (None, Role::Assistant) if !m.tool_calls().is_empty() => None,
        (None, _) => Some(Value::String(String::new())),
    };
    WireMessage {
        role: m.role.as_str(),
        content,
        name: m.name.clone(),
        tool_call_id: m.tool_call_id.clone(),
        tool_calls: m.tool_calls.clone().filter(|c| !c.is_empty()),
    }
}

#[async_trait]
impl Model for OpenAIChat {
    fn id(&self) -> &str {
        &self.id
    }

    fn provider(&self) -> &str {
        &self.provider
    }

    fn name(&self) -> &str {
        // Agno's class names for the Chat Completions models it reports under these providers.
        match self.provider.as_str() {
            "OpenAI" => "OpenAIChat",
            "Mistral" => "MistralChat",
            "Azure" => "AzureOpenAI",
            other => other,
        }
    }

    fn metrics_provider(&self) -> std::borrow::Cow<'_, str> {
        // Agno's OpenAIChat (and every OpenAI-compatible class built on it) appends " Chat";
        // MistralChat is its own class.
        match self.provider.as_str() {
            "Mistral" => std::borrow::Cow::Borrowed("Mistral"),
            other => std::borrow::Cow::Owned(format!("{other} Chat")),
        }
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let body = self.body(&request, true);
        let resp = self.send(&body).await?;
        Ok(event_stream(self.label(), resp, ChatEvents::new(self.label()), false))
    }

    async fn invoke(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        let body = self.body(&request, false);
        let resp = self.send(&body).await?;
        let label = self.label();
        let text = body_text(&self.config, &label, resp).await?;
        let doc: ChatResponse =
            serde_json::from_str(&text).map_err(|e| invalid(&label, &format!("with invalid JSON ({e})"), &text))?;
        let mut chunks: Vec<ModelChunk> = Vec::new();
        if doc.choices.is_empty() && doc.error.is_none() {
            return Err(ModelError::new(
                ModelErrorKind::InvalidResponse,
                format!(
                    "{label} answered JSON that is not a chat completion (no choices): {}",
                    text.chars().take(200).collect::<String>()
                ),
            ));
        }
        chunks_of(&label, doc, &mut chunks)?;
        Ok(ResponseAssembler::assemble(&chunks))
    }
}
