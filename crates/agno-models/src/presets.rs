//! OpenAI-compatible provider presets, and model construction from `"provider:model_id"`.
//!
//! Each preset names the provider as Agno reports it, its default base URL, and the environment
//! variables its official SDK reads for the key and the base URL.

use std::sync::Arc;

use agno_core::{Capabilities, Model, ModelError, ModelErrorKind, model::split_model_string};

use crate::fallback::FallbackModel;
use crate::openai::{ClientConfig, OpenAIChat, RetryPolicy};
use crate::test_model::TestModel;

/// An OpenAI-compatible provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    /// Name used in model strings (`groq`).
    pub name: &'static str,
    /// Name reported as `model_provider` (`Groq`).
    pub provider: &'static str,
    /// Default base URL.
    pub base_url: &'static str,
    /// Environment variable holding the API key.
    pub api_key_env: &'static str,
    /// Environment variable overriding the base URL.
    pub base_url_env: &'static str,
    /// The server refuses requests without a key.
    pub key_required: bool,
    /// Native JSON-schema structured output.
    pub native_structured_output: bool,
}

const fn preset(
    name: &'static str,
    provider: &'static str,
    base_url: &'static str,
    api_key_env: &'static str,
    base_url_env: &'static str,
    key_required: bool,
    native_structured_output: bool,
) -> Preset {
    Preset { name, provider, base_url, api_key_env, base_url_env, key_required, native_structured_output }
}

/// Every known OpenAI-compatible provider.
pub const PRESETS: &[Preset] = &[
    preset("openai-chat", "OpenAI", "https://api.openai.com/v1", "OPENAI_API_KEY", "OPENAI_BASE_URL", true, true),
    preset("groq", "Groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY", "GROQ_BASE_URL", true, true),
    preset("together", "Together", "https://api.together.xyz/v1", "TOGETHER_API_KEY", "TOGETHER_BASE_URL", true, true),
    preset("deepseek", "DeepSeek", "https://api.deepseek.com", "DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", true, false),
    preset(
        "openrouter",
        "OpenRouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
        "OPENROUTER_BASE_URL",
        true,
        true,
    ),
    preset("vllm", "VLLM", "http://localhost:8000/v1", "VLLM_API_KEY", "VLLM_BASE_URL", false, true),
    preset("lmstudio", "LMStudio", "http://127.0.0.1:1234/v1", "LMSTUDIO_API_KEY", "LMSTUDIO_BASE_URL", false, true),
    preset("llamacpp", "LlamaCpp", "http://127.0.0.1:8080/v1", "LLAMA_API_KEY", "LLAMA_CPP_BASE_URL", false, true),
    preset("xai", "xAI", "https://api.x.ai/v1", "XAI_API_KEY", "XAI_BASE_URL", true, true),
    preset("mistral", "Mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY", "MISTRAL_BASE_URL", true, true),
    // Ollama's OpenAI-compatible endpoint (`ollama` is its native API).
    preset("ollama-openai", "Ollama", "http://localhost:11434/v1", "OLLAMA_API_KEY", "OLLAMA_HOST", false, true),
    preset(
        "fireworks",
        "Fireworks",
        "https://api.fireworks.ai/inference/v1",
        "FIREWORKS_API_KEY",
        "FIREWORKS_BASE_URL",
        true,
        true,
    ),
    preset(
        "deepinfra",
        "DeepInfra",
        "https://api.deepinfra.com/v1/openai",
        "DEEPINFRA_API_KEY",
        "DEEPINFRA_BASE_URL",
        true,
        true,
    ),
    preset("nebius", "Nebius", "https://api.studio.nebius.com/v1", "NEBIUS_API_KEY", "NEBIUS_BASE_URL", true, true),
    preset(
        "perplexity",
        "Perplexity",
        "https://api.perplexity.ai",
        "PERPLEXITY_API_KEY",
        "PERPLEXITY_BASE_URL",
        true,
        false,
    ),
    preset(
        "sambanova",
        "Sambanova",
        "https://api.sambanova.ai/v1",
        "SAMBANOVA_API_KEY",
        "SAMBANOVA_BASE_URL",
        true,
        false,
    ),
    preset("cerebras", "Cerebras", "https://api.cerebras.ai/v1", "CEREBRAS_API_KEY", "CEREBRAS_BASE_URL", true, true),
];

/// A provider with a wire format of its own (not Chat Completions).
#[derive(Debug, Clone, Copy)]
pub struct NativeProvider {
    /// Names used in model strings (`anthropic`, `claude`).
    pub names: &'static [&'static str],
    /// Name reported as `model_provider`.
    pub provider: &'static str,
    /// Default base URL.
    pub base_url: &'static str,
    /// Environment variables holding the API key, in order of preference.
    pub api_key_envs: &'static [&'static str],
    /// Environment variable overriding the base URL.
    pub base_url_env: &'static str,
    /// The provider refuses requests without a key.
    pub key_required: bool,
    build: BuildFn,
}

/// Builds a native provider's model from its id and connection settings.
type BuildFn = fn(&str, ClientConfig) -> Result<Arc<dyn Model>, ModelError>;

fn claude(id: &str, config: ClientConfig) -> Result<Arc<dyn Model>, ModelError> {
    Ok(Arc::new(crate::anthropic::Claude::new(id, config)?))
}

fn openai_responses(id: &str, config: ClientConfig) -> Result<Arc<dyn Model>, ModelError> {
    Ok(Arc::new(crate::openai::OpenAIResponses::new(id, "OpenAI", config)?))
}

fn azure_openai(id: &str, config: ClientConfig) -> Result<Arc<dyn Model>, ModelError> {
    if config.base_url.is_empty() {
        return Err(ModelError::new(
            ModelErrorKind::MissingApiKey,
            format!(
                "no endpoint for Azure OpenAI deployment {id}: set AZURE_OPENAI_ENDPOINT (https://<resource>.openai.azure.com)"
            ),
        ));
    }
    let version = env("AZURE_OPENAI_API_VERSION")
        .or_else(|| env("OPENAI_API_VERSION"))
        .unwrap_or_else(|| crate::openai::AZURE_API_VERSION.to_owned());
    Ok(Arc::new(OpenAIChat::azure(id, &version, config)?))
}

fn aws_bedrock(id: &str, mut config: ClientConfig) -> Result<Arc<dyn Model>, ModelError> {
    let missing =
        |what: &str| ModelError::new(ModelErrorKind::MissingApiKey, format!("no {what} for AwsBedrock model {id}"));
    let region = env("AWS_REGION")
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .ok_or_else(|| missing("region: set AWS_REGION (e.g. us-east-1)"))?;
    let auth = match (config.api_key.take(), crate::bedrock::AwsCredentials::from_env()) {
        (Some(key), _) => crate::bedrock::BedrockAuth::ApiKey(key),
        (None, Some(creds)) => crate::bedrock::BedrockAuth::SigV4(creds),
        (None, None) => {
            return Err(missing(
                "credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or a Bedrock API key in AWS_BEARER_TOKEN_BEDROCK)",
            ));
        }
    };
    if config.base_url.is_empty() {
        config.base_url = crate::bedrock::endpoint(&region);
    }
    Ok(Arc::new(crate::bedrock::AwsBedrock::new(id, &region, auth, config)?))
}

fn ollama(id: &str, mut config: ClientConfig) -> Result<Arc<dyn Model>, ModelError> {
    // `OLLAMA_HOST` is a host (`127.0.0.1:11434`), maybe without a scheme.
    config.base_url = crate::ollama::base_url_of_host(&config.base_url);
    Ok(Arc::new(crate::ollama::Ollama::new(id, config)?))
}

fn gemini(id: &str, config: ClientConfig) -> Result<Arc<dyn Model>, ModelError> {
    Ok(Arc::new(crate::gemini::Gemini::new(id, config)?))
}

/// Every provider with its own wire format.
pub const NATIVE_PROVIDERS: &[NativeProvider] = &[
    // Agno v3: `openai` is the Responses API; `openai-chat` (a preset) is Chat Completions.
    NativeProvider {
        names: &["openai", "openai-responses"],
        provider: "OpenAI",
        base_url: "https://api.openai.com/v1",
        api_key_envs: &["OPENAI_API_KEY"],
        base_url_env: "OPENAI_BASE_URL",
        key_required: true,
        build: openai_responses,
    },
    NativeProvider {
        names: &["anthropic", "claude"],
        provider: "Anthropic",
        base_url: crate::anthropic::DEFAULT_BASE_URL,
        api_key_envs: &["ANTHROPIC_API_KEY"],
        base_url_env: "ANTHROPIC_BASE_URL",
        key_required: true,
        build: claude,
    },
    NativeProvider {
        names: &["google", "gemini"],
        provider: "Google",
        base_url: crate::gemini::DEFAULT_BASE_URL,
        api_key_envs: &["GOOGLE_API_KEY", "GEMINI_API_KEY"],
        base_url_env: "GEMINI_BASE_URL",
        key_required: true,
        build: gemini,
    },
    NativeProvider {
        names: &["azure-openai", "azure"],
        provider: "Azure",
        // No default: the resource's endpoint.
        base_url: "",
        api_key_envs: &["AZURE_OPENAI_API_KEY"],
        base_url_env: "AZURE_OPENAI_ENDPOINT",
        key_required: true,
        build: azure_openai,
    },
    NativeProvider {
        names: &["aws-bedrock", "bedrock", "aws"],
        provider: "AwsBedrock",
        // The region's endpoint, unless overridden.
        base_url: "",
        api_key_envs: &["AWS_BEARER_TOKEN_BEDROCK"],
        base_url_env: "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
        key_required: false,
        build: aws_bedrock,
    },
    NativeProvider {
        names: &["ollama"],
        provider: "Ollama",
        base_url: crate::ollama::DEFAULT_BASE_URL,
        api_key_envs: &["OLLAMA_API_KEY"],
        base_url_env: "OLLAMA_HOST",
        key_required: false,
        build: ollama,
    },
];

fn normalized(name: &str) -> String {
    name.to_lowercase().chars().filter(|c| c.is_ascii_alphanumeric()).collect()
}

/// Looks up a native provider by one of its names.
pub fn find_native(name: &str) -> Option<&'static NativeProvider> {
    let norm = normalized(name);
    NATIVE_PROVIDERS.iter().find(|p| p.names.iter().any(|n| normalized(n) == norm))
}

/// Looks up a preset by name (case-insensitive; `lm-studio`, `llama.cpp` and similar spellings
/// are accepted).
pub fn find_preset(name: &str) -> Option<&'static Preset> {
    let norm = normalized(name);
    PRESETS.iter().find(|p| normalized(p.name) == norm)
}

/// Explicit settings for a model, overriding environment variables.
#[derive(Debug, Clone, Default)]
pub struct ModelConfig {
    /// Provider name (`openai`, `groq`, ... or `test`).
    pub provider: String,
    /// Model id.
    pub id: Option<String>,
    /// Base URL override.
    pub base_url: Option<String>,
    /// API key.
    pub api_key: Option<String>,
    /// Environment variable to read the API key from.
    pub api_key_env: Option<String>,
    /// Retry settings.
    pub retry: Option<RetryPolicy>,
    /// Models tried in order when this one fails.
    pub fallbacks: Vec<ModelConfig>,
}

impl ModelConfig {
    /// Settings parsed from a `"provider:model_id"` string.
    ///
    /// # Errors
    /// [`ModelErrorKind::UnknownProvider`] for an empty provider.
    pub fn parse(spec: &str) -> Result<Self, ModelError> {
        let (provider, id) = split_model_string(spec)?;
        Ok(Self { provider: provider.to_owned(), id: id.map(str::to_owned), ..Self::default() })
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// Builds a model from a `"provider:model_id"` string, reading keys and base URLs from the
/// provider's usual environment variables. `"test"` is the offline [`TestModel`].
///
/// # Errors
/// [`ModelErrorKind::UnknownProvider`], or [`ModelErrorKind::MissingApiKey`] when the provider
/// needs a key and none is set.
pub fn model_from_str(spec: &str) -> Result<Arc<dyn Model>, ModelError> {
    build_model(&ModelConfig::parse(spec)?)
}

/// Builds a model from explicit settings (with fallbacks when configured).
///
/// # Errors
/// As [`model_from_str`].
pub fn build_model(config: &ModelConfig) -> Result<Arc<dyn Model>, ModelError> {
    let primary = build_single(config)?;
    if config.fallbacks.is_empty() {
        return Ok(primary);
    }
    let fallbacks = config.fallbacks.iter().map(build_single).collect::<Result<Vec<_>, _>>()?;
    Ok(Arc::new(FallbackModel::new(primary, fallbacks)))
}

fn build_single(config: &ModelConfig) -> Result<Arc<dyn Model>, ModelError> {
    if config.provider.eq_ignore_ascii_case("test") {
        return Ok(Arc::new(TestModel::new()));
    }
    if let Some(native) = find_native(&config.provider) {
        return build_native(native, config);
    }
    let Some(preset) = find_preset(&config.provider) else {
        let known: Vec<&str> =
            NATIVE_PROVIDERS.iter().map(|p| p.names[0]).chain(PRESETS.iter().map(|p| p.name)).collect();
        return Err(ModelError::new(
            ModelErrorKind::UnknownProvider,
            format!("unknown model provider {:?}; known providers: test, {}", config.provider, known.join(", ")),
        ));
    };
    let id = config.id.clone().ok_or_else(|| {
        ModelError::new(
            ModelErrorKind::UnknownProvider,
            format!("model string for {} needs a model id, e.g. {}:<model>", preset.name, preset.name),
        )
    })?;
    let key_env = config.api_key_env.as_deref().unwrap_or(preset.api_key_env);
    let api_key = config.api_key.clone().or_else(|| env(key_env));
    if api_key.is_none() && preset.key_required {
        return Err(ModelError::new(
            ModelErrorKind::MissingApiKey,
            format!("no api key for {} model {id}: set {key_env}", preset.provider),
        ));
    }
    let base_url = config
        .base_url
        .clone()
        .or_else(|| env(preset.base_url_env).map(|u| normalize_base_url(preset, &u)))
        .unwrap_or_else(|| preset.base_url.to_owned());
    let mut client = ClientConfig::new(base_url);
    client.api_key = api_key;
    if let Some(retry) = config.retry {
        client.retry = retry;
    }
    let model = OpenAIChat::new(&id, preset.provider, client)?.with_capabilities(Capabilities {
        tools: true,
        native_structured_output: preset.native_structured_output,
        json_mode: true,
        parallel_tool_calls: true,
    });
    Ok(Arc::new(model))
}

fn build_native(native: &NativeProvider, config: &ModelConfig) -> Result<Arc<dyn Model>, ModelError> {
    let name = native.names[0];
    let id = config.id.clone().ok_or_else(|| {
        ModelError::new(
            ModelErrorKind::UnknownProvider,
            format!("model string for {name} needs a model id, e.g. {name}:<model>"),
        )
    })?;
    let api_key = config.api_key.clone().or_else(|| match &config.api_key_env {
        Some(var) => env(var),
        None => native.api_key_envs.iter().find_map(|var| env(var)),
    });
    if api_key.is_none() && native.key_required {
        let var = config.api_key_env.as_deref().unwrap_or(native.api_key_envs[0]);
        return Err(ModelError::new(
            ModelErrorKind::MissingApiKey,
            format!("no api key for {} model {id}: set {var}", native.provider),
        ));
    }
    let base_url =
        config.base_url.clone().or_else(|| env(native.base_url_env)).unwrap_or_else(|| native.base_url.to_owned());
    let mut client = ClientConfig::new(base_url);
    client.api_key = api_key;
    if let Some(retry) = config.retry {
        client.retry = retry;
    }
    (native.build)(&id, client)
}

/// `OLLAMA_HOST` is a host (`127.0.0.1:11434`), not an OpenAI base URL.
fn normalize_base_url(preset: &Preset, url: &str) -> String {
    if preset.name == "ollama-openai" {
        let base = crate::ollama::base_url_of_host(url);
        if base.ends_with("/v1") { base } else { format!("{base}/v1") }
    } else {
        url.to_owned()
    }
}
