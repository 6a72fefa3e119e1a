//! Model providers for agno-rs.
//!
//! - [`OpenAIChat`]: the OpenAI Chat Completions API, and through [`presets`] every
//!   OpenAI-compatible server (Groq, Together, DeepSeek, OpenRouter, vLLM, LM Studio, llama.cpp,
//!   xAI, Mistral, Ollama's OpenAI endpoint, ...).
//! - Native adapters: [`OpenAIResponses`] (`openai:`, Agno v3's default), [`Claude`]
//!   (`anthropic:`), [`Gemini`] (`google:`), [`Ollama`] (`ollama:`), [`AwsBedrock`]
//!   (`aws-bedrock:`, SigV4) and Azure OpenAI ([`OpenAIChat::azure`], `azure-openai:`).
//! - [`model_from_str`] builds a model from `"provider:model_id"`, reading keys and base URLs from
//!   the provider's usual environment variables (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, ...).
//! - [`FallbackModel`] tries other models when one fails; [`RetryPolicy`] retries 429, 5xx and
//!   connection errors with exponential backoff and jitter, honouring `retry-after`.
//! - [`TestModel`] (`"test"`) and [`FunctionModel`] run offline, for examples and tests.
//!
//! ```no_run
//! # async fn demo() -> Result<(), agno_core::ModelError> {
//! let model = agno_models::model_from_str("groq:llama-3.3-70b-versatile")?;
//! # Ok(()) }
//! ```

pub mod a2a;
pub mod anthropic;
pub mod bedrock;
mod fallback;
mod function_model;
pub mod gemini;
mod http;
pub mod ollama;
pub mod openai;
mod parts;
pub mod presets;
mod test_model;

pub use a2a::A2aAgent;
pub use agno_core::example_value;
pub use anthropic::Claude;
pub use bedrock::{AwsBedrock, AwsCredentials, BedrockAuth};
pub use fallback::FallbackModel;
pub use function_model::{FunctionModel, response_chunks};
pub use gemini::Gemini;
pub use http::{ClientConfig, RetryPolicy, Sleeper};
pub use ollama::Ollama;
pub use openai::{OpenAIChat, OpenAIResponses};
pub use presets::{
    ModelConfig, NATIVE_PROVIDERS, NativeProvider, PRESETS, Preset, build_model, find_native, find_preset,
    model_from_str,
};
pub use test_model::TestModel;
