//! Test kit for agno-rs: a fake model-provider HTTP server speaking real wire formats (OpenAI Chat
//! Completions, embeddings; the Tavily, Brave and SearXNG search APIs and Slack's Web API for the
//! built-in toolkits), the storage conformance suite ([`conformance`], [`db_conformance!`]), a small MCP
//! Toolbox server ([`toolbox`]), and [`agno_python`] for the checks against Python Agno.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use agno_testkit::{FakeProvider, Reply};
//!
//! let provider = FakeProvider::start().await?;
//! provider.push(Reply::text("Hello!"));
//! provider.push(Reply::tool_call("get_weather", r#"{"city":"Paris"}"#));
//! // Point an OpenAI client at `provider.base_url()` ...
//! assert_eq!(provider.request_count(), 0);
//! # Ok(())
//! # }
//! ```

mod anthropic;
pub mod bedrock;
pub mod conformance;
mod conformance_agent_files;
mod conformance_approvals;
mod conformance_compactions;
mod conformance_components;
mod conformance_learnings;
mod conformance_service_accounts;
mod conformance_traces;
mod embeddings;
mod gemini;
pub mod legacy;
pub mod moto;
mod ollama;
mod openai;
mod python;
mod responses;
mod script;
mod search;
mod server;
pub mod services;
mod slack;
pub mod toolbox;
mod wait;
mod wire;

pub use embeddings::bag_of_words_embedding;
pub use python::{a2a_v1_python, agno_python, browser, moto_python, phoenix};
pub use script::{RecordedRequest, Reply};
pub use server::FakeProvider;
pub use wait::{Gate, until};
