//! OpenAI: Chat Completions (client settings, wire types, request building and stream parsing)
//! and the Responses API.

mod chat;
mod responses;
mod streaming;
mod wire;

pub use crate::http::{ClientConfig, RetryPolicy, Sleeper};
pub use chat::{AZURE_API_VERSION, OpenAIChat};
pub use responses::OpenAIResponses;
