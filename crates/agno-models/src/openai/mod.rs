//! OpenAI Chat Completions: client settings, wire types, request building and stream parsing.

mod chat;
mod streaming;
mod wire;

pub use crate::http::{ClientConfig, RetryPolicy, Sleeper};
pub use chat::OpenAIChat;
