//! OpenAI Chat Completions: client settings, wire types, request building and stream parsing.

mod chat;
mod client;
mod streaming;
mod wire;

pub use chat::OpenAIChat;
pub use client::{ClientConfig, RetryPolicy};
