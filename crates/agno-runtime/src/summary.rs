//! Session summaries (Agno's `SessionSummaryManager`): a model reads a session's conversation
//! and writes `{summary, topics}` into the session's `summary` column.
//!
//! An agent with `enable_session_summaries` refreshes its session's summary after each completed
//! run, on its own task after the run is stored (so `RunCompleted` never waits for it);
//! `add_session_summary_to_context` puts the stored summary in the system message.

use std::sync::Arc;

use agno_core::{AgentSession, Db, Message, Model, ModelError, Role, SessionSummary, StateUpdate};
use serde_json::{Value, json};

use crate::config::OutputSchema;

/// Agno's default summary prompt.
const PROMPT: &str = "Analyze the following conversation between a user and an assistant, and extract the following details:
- Summary (str): Provide a concise summary of the session, focusing on important information that would be helpful for future interactions.
- Topics (Optional[List[str]]): List the topics discussed in the session.
Keep the summary concise and to the point. Only include relevant information.
";

/// Writes session summaries with a model. Cheap to clone.
#[derive(Clone)]
pub struct SessionSummaryManager {
    model: Arc<dyn Model>,
    prompt: Option<String>,
    request_message: String,
    last_n_runs: Option<usize>,
    conversation_limit: Option<usize>,
}

impl std::fmt::Debug for SessionSummaryManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionSummaryManager").field("model", &self.model.id()).finish_non_exhaustive()
    }
}

impl SessionSummaryManager {
    /// A manager summarizing with `model`, over the whole conversation.
    pub fn new(model: Arc<dyn Model>) -> Self {
        Self {
            model,
            prompt: None,
            request_message: "Provide the summary of the conversation.".to_owned(),
            last_n_runs: None,
            conversation_limit: None,
        }
    }

    setters! {
        /// Replaces Agno's summary prompt (`session_summary_prompt`); the conversation is appended.
        prompt(prompt: impl Into<String>) => prompt = Some(prompt.into());

        /// The user message asking for the summary (`summary_request_message`).
        request_message(message: impl Into<String>) => request_message = message.into();

        /// Summarize only the latest `n` runs (`last_n_runs`; 0 means all).
        last_n_runs(n: usize) => last_n_runs = (n > 0).then_some(n);

        /// Summarize at most the latest `n` messages (`conversation_limit`; 0 means all).
        conversation_limit(n: usize) => conversation_limit = (n > 0).then_some(n);
    }

    /// The manager's model.
    pub fn model(&self) -> &Arc<dyn Model> {
        &self.model
    }

    /// The summary of `session`'s conversation (Agno's `create_session_summary`), or `None`
    /// when there is nothing to summarize or the model's answer is not a summary.
    ///
    /// # Errors
    /// The model's error.
    pub async fn create_session_summary(&self, session: &AgentSession) -> Result<Option<SessionSummary>, ModelError> {
        let conversation = session.history_messages(self.last_n_runs, self.conversation_limit);
        let lines: Vec<String> = conversation.iter().filter_map(line).collect();
        if lines.is_empty() {
            return Ok(None);
        }
        let mut system = self.prompt.clone().unwrap_or_else(|| PROMPT.to_owned());
        system.push_str("<conversation>");
        system.push_str(&lines.join("\n"));
        system.push_str("</conversation>");
        let schema = OutputSchema::new(
            "SessionSummaryResponse",
            json!({
                "type": "object",
                "properties": {
                    "summary": {
                        "type": "string",
                        "description": "Summary of the session. Be concise and focus on only important information. \
                                        Do not make anything up."
                    },
                    "topics": {
                        "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                        "description": "Topics discussed in the session."
                    }
                },
                "required": ["summary"]
            }),
        );
        let answer =
            crate::structured::ask_structured(self.model.as_ref(), system, self.request_message.clone(), &schema)
                .await?;
        Ok(answer.and_then(|v| {
            let summary = v.get("summary")?.as_str()?.to_owned();
            let topics = v
                .get("topics")
                .and_then(Value::as_array)
                .map(|t| t.iter().filter_map(Value::as_str).map(str::to_owned).collect::<Vec<_>>());
            Some(SessionSummary {
                summary,
                topics,
                updated_at: Some(chrono::Local::now().naive_local().format("%Y-%m-%dT%H:%M:%S%.6f").to_string()),
            })
        }))
    }

    /// Summarizes the stored session `session_id` of `user_id` and writes the summary into it,
    /// changing nothing else of the session (its state and metrics are merged as stored).
    /// Returns the summary written, if any.
    ///
    /// # Errors
    /// A message saying what failed (reading, the model, writing).
    pub async fn refresh(
        &self,
        db: &dyn Db,
        session_id: &str,
        user_id: Option<&str>,
    ) -> Result<Option<SessionSummary>, String> {
        let read = |what: &'static str| move |e: agno_core::DbError| format!("cannot read session for {what}: {e}");
        let Some(session) = db.get_session(session_id, user_id, None).await.map_err(read("the summary"))? else {
            return Ok(None);
        };
        let Some(summary) = self.create_session_summary(&session).await.map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        // Read again right before writing: the row may have changed while the model worked.
        let Some(mut latest) = db.get_session(session_id, user_id, Some(0)).await.map_err(read("writing"))? else {
            return Ok(None);
        };
        latest.summary = Some(summary.clone());
        latest.runs = None;
        db.upsert_session(&latest, &StateUpdate::keep()).await.map_err(|e| format!("cannot store the summary: {e}"))?;
        Ok(Some(summary))
    }
}

/// A conversation line as Agno writes it for the summary model.
fn line(message: &Message) -> Option<String> {
    match message.role {
        Role::User => match message.content_text() {
            Some(text) if !text.trim().is_empty() => Some(format!("User: {text}")),
            _ => None,
        },
        Role::Assistant => Some(format!("Assistant: {}\n", message.content_text().unwrap_or_default())),
        _ => None,
    }
}
