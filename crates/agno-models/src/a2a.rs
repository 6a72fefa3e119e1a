//! A remote A2A agent (v0.3, any framework) as a [`Model`]: an agent whose model is
//! [`A2aAgent`] is that remote agent, servable, listable, runnable, a team member or a workflow
//! step like any agent, and its runs are stored as any agent's.
//!
//! Each turn sends the newest user message to the remote agent (`message/stream` when its card
//! says it streams, else `message/send`), in the A2A context named after the run's session, so
//! the remote agent keeps the conversation as its own history. The agent card
//! (`<url>/.well-known/agent-card.json`) is read once; requests go to the card's `url`. The
//! answer's deltas (artifact updates, or Agno's streamed messages) are the content; a task that
//! ends failed, canceled, rejected or waiting for input is an error naming its state.

use std::sync::Arc;

use agno_core::{Capabilities, Model, ModelChunk, ModelError, ModelErrorKind, ModelRequest, ModelStream, Role};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use crate::http::{self, ClientConfig, EventParser};

/// What the agent card says about how to reach the agent.
#[derive(Debug, Clone)]
struct Card {
    /// The JSON-RPC endpoint.
    url: String,
    /// Whether it answers `message/stream`.
    streaming: bool,
}

/// A remote A2A agent, called as a model.
#[derive(Debug, Clone)]
pub struct A2aAgent {
    id: String,
    config: Arc<ClientConfig>,
    client: reqwest::Client,
    card: Arc<OnceCell<Card>>,
}

impl A2aAgent {
    /// The agent whose card is at `<url>/.well-known/agent-card.json` (`url` as Python AgentOS
    /// serves one: `http://host/a2a/agents/<id>`), with `config`'s headers (a bearer token) on
    /// every request.
    ///
    /// # Errors
    /// [`ModelErrorKind::Connection`] when the HTTP client cannot be built.
    pub fn new(config: ClientConfig) -> Result<Self, ModelError> {
        let client = http::http_client(config.timeout)?;
        let id = config.base().to_owned();
        Ok(Self { id, config: Arc::new(config), client, card: Arc::new(OnceCell::new()) })
    }

    async fn card(&self) -> Result<&Card, ModelError> {
        self.card
            .get_or_try_init(|| async {
                let url = format!("{}/.well-known/agent-card.json", self.config.base());
                let resp = http::send(&self.config, "a2a", || self.client.get(&url)).await?;
                let card = http::json_body(&self.config, "a2a", resp).await?;
                let endpoint = card
                    .get("url")
                    .and_then(Value::as_str)
                    .filter(|u| !u.is_empty())
                    .ok_or_else(|| http::invalid("a2a", "with an agent card without url", &card.to_string()))?;
                let streaming = card.pointer("/capabilities/streaming").and_then(Value::as_bool).unwrap_or(false);
                Ok(Card { url: endpoint.to_owned(), streaming })
            })
            .await
    }
}

/// The texts of the text parts of an A2A message or artifact.
fn text_of(holder: &Value) -> String {
    holder
        .get("parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("kind").and_then(Value::as_str).is_none_or(|k| k == "text"))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect()
}

/// The error of a task that ended without an answer.
fn ended_without_answer(state: &str, message: &str) -> ModelError {
    let kind = ModelErrorKind::BadRequest;
    let detail = if message.is_empty() { String::new() } else { format!(": {message}") };
    ModelError::new(kind, format!("the remote A2A agent's task ended {state}{detail}"))
}

/// Reads an A2A `message/stream` answer (SSE of JSON-RPC responses), or a `message/send` one.
#[derive(Debug, Default)]
struct StreamParser {
    /// Content already taken from deltas.
    streamed: bool,
    done: bool,
}

impl StreamParser {
    /// The chunks of one JSON-RPC response and whether the answer is complete with it.
    fn response(&mut self, response: &Value) -> Result<(Vec<ModelChunk>, bool), ModelError> {
        if let Some(error) = response.get("error") {
            let message = error.get("message").and_then(Value::as_str).unwrap_or("an error");
            return Err(ModelError::new(
                ModelErrorKind::BadRequest,
                format!("the remote A2A agent answered {message}"),
            ));
        }
        let result = response
            .get("result")
            .ok_or_else(|| http::invalid_event("a2a", "a JSON-RPC response without result", &response.to_string()))?;
        let mut chunks = Vec::new();
        match result.get("kind").and_then(Value::as_str) {
            Some("artifact-update") => {
                let text = result.get("artifact").map(text_of).unwrap_or_default();
                if !text.is_empty() {
                    self.streamed = true;
                    chunks.push(ModelChunk::Content(text));
                }
            }
            // Python AgentOS streams its deltas as messages (reasoning ones marked).
            Some("message") => {
                let text = text_of(result);
                let reasoning =
                    result.pointer("/metadata/agno_content_category").and_then(Value::as_str) == Some("reasoning");
                if reasoning {
                    chunks.push(ModelChunk::Reasoning(text));
                } else if !text.is_empty() {
                    self.streamed = true;
                    chunks.push(ModelChunk::Content(text));
                }
            }
            Some("status-update") if result.get("final").and_then(Value::as_bool) == Some(true) => {
                return self.end(result, chunks);
            }
            Some("task") => return self.end(result, chunks),
            _ => {}
        }
        Ok((chunks, false))
    }

    /// The end of the task `result` (a final status update, or the task): its answer, unless
    /// deltas carried it, or the error of a task that did not complete.
    fn end(&mut self, result: &Value, mut chunks: Vec<ModelChunk>) -> Result<(Vec<ModelChunk>, bool), ModelError> {
        let state = result.pointer("/status/state").and_then(Value::as_str).unwrap_or("completed");
        let status_text = result.pointer("/status/message").map(text_of).unwrap_or_default();
        let answer = if status_text.is_empty() {
            result
                .get("history")
                .and_then(Value::as_array)
                .and_then(|h| h.iter().rev().find(|m| m.get("role").and_then(Value::as_str) == Some("agent")))
                .map(text_of)
                .unwrap_or_default()
        } else {
            status_text
        };
        if state != "completed" {
            return Err(ended_without_answer(state, &answer));
        }
        if !self.streamed && !answer.is_empty() {
            chunks.push(ModelChunk::Content(answer));
        }
        chunks.push(ModelChunk::Finish("stop".to_owned()));
        self.done = true;
        Ok((chunks, true))
    }
}

impl EventParser for StreamParser {
    fn event(&mut self, data: String) -> Result<(Vec<ModelChunk>, bool), ModelError> {
        let response: Value =
            serde_json::from_str(&data).map_err(|e| http::invalid_event("a2a", &e.to_string(), &data))?;
        self.response(&response)
    }

    fn complete(&self) -> bool {
        self.done
    }
}

#[async_trait::async_trait]
impl Model for A2aAgent {
    fn id(&self) -> &str {
        &self.id
    }

    fn provider(&self) -> &str {
        "A2A"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { tools: false, native_structured_output: false, json_mode: false, parallel_tool_calls: false }
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let text = request
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .and_then(|m| m.content_text())
            .unwrap_or_default()
            .to_owned();
        let card = self.card().await?.clone();
        let mut message = json!({
            "kind": "message",
            "messageId": agno_core::new_id(),
            "parts": [{"kind": "text", "text": text}],
            "role": "user",
        });
        if let Some(session) = &request.session_id {
            message["contextId"] = json!(session);
        }
        let method = if card.streaming { "message/stream" } else { "message/send" };
        let body =
            json!({"jsonrpc": "2.0", "id": agno_core::new_id(), "method": method, "params": {"message": message}});
        let resp = http::send(&self.config, "a2a", || self.client.post(&card.url).json(&body)).await?;
        if card.streaming {
            return Ok(http::event_stream("a2a".to_owned(), resp, StreamParser::default(), false));
        }
        let answer = http::json_body(&self.config, "a2a", resp).await?;
        let chunks = StreamParser::default().response(&answer).map(|(chunks, _)| chunks);
        Ok(Box::pin(futures::stream::iter(match chunks {
            Ok(chunks) => chunks.into_iter().map(Ok).collect(),
            Err(e) => vec![Err(e)],
        })))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn read(responses: &[Value]) -> Result<Vec<ModelChunk>, ModelError> {
        let mut parser = StreamParser::default();
        let mut out = Vec::new();
        for r in responses {
            let (chunks, done) = parser.response(r)?;
            out.extend(chunks);
            if done {
                break;
            }
        }
        Ok(out)
    }

    #[test]
    fn agno_rs_and_python_agentos_streams_read_alike() {
        let ours = read(&[
            json!({"result": {"kind": "status-update", "final": false, "status": {"state": "working"}}}),
            json!({"result": {"kind": "artifact-update", "artifact": {"parts": [{"kind": "text", "text": "Hel"}]}}}),
            json!({"result": {"kind": "artifact-update", "artifact": {"parts": [{"kind": "text", "text": "lo"}]}}}),
            json!({"result": {"kind": "status-update", "final": true, "status": {"state": "completed", "message": {"parts": [{"kind": "text", "text": "Hello"}]}}}}),
        ])
        .unwrap();
        let python = read(&[
            json!({"result": {"kind": "message", "parts": [{"kind": "text", "text": "Hel"}]}}),
            json!({"result": {"kind": "message", "parts": [{"kind": "text", "text": "lo"}]}}),
            json!({"result": {"kind": "status-update", "final": true, "status": {"state": "completed"}}}),
            json!({"result": {"kind": "task", "status": {"state": "completed"}}}),
        ])
        .unwrap();
        let expected = vec![
            ModelChunk::Content("Hel".into()),
            ModelChunk::Content("lo".into()),
            ModelChunk::Finish("stop".into()),
        ];
        assert_eq!(ours, expected);
        assert_eq!(python, expected);
        // A send's task carries the answer in its history.
        let sent = read(&[json!({"result": {"kind": "task", "status": {"state": "completed"}, "history": [{"role": "agent", "parts": [{"kind": "text", "text": "Hi"}]}]}})]).unwrap();
        assert_eq!(sent[0], ModelChunk::Content("Hi".into()));
    }

    #[test]
    fn tasks_that_end_otherwise_and_json_rpc_errors_are_errors() {
        let failed = read(&[
            json!({"result": {"kind": "status-update", "final": true, "status": {"state": "failed", "message": {"parts": [{"kind": "text", "text": "Error: boom"}]}}}}),
        ]);
        assert!(failed.unwrap_err().message.contains("failed: Error: boom"));
        let waiting = read(&[json!({"result": {"kind": "task", "status": {"state": "input-required"}}})]);
        assert!(waiting.unwrap_err().message.contains("input-required"));
        let error = read(&[json!({"error": {"code": -32602, "message": "bad params"}})]);
        assert!(error.unwrap_err().message.contains("bad params"));
    }
}
