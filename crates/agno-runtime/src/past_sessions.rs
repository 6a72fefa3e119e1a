//! Past-session search (`search_past_sessions = true`): Agno's two tools, `search_past_sessions`
//! (previews of the user's earlier agent sessions, newest first) and `read_past_session` (one of
//! them in full).
//!
//! Both are bound to the run's user: they list and read that user's sessions only. A run without
//! a user sees only sessions without a user (Agno would list every session of the database).

use std::sync::Arc;

use agno_core::{
    AgentSession, Db, DynTool, Message, Role, SessionQuery, SessionSort, SessionType, SortOrder, ToolError,
};
use agno_tools::Function;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::config::PastSessionsConfig;

/// Sessions listed when `num_past_sessions_to_search` is not set (Agno's default).
const DEFAULT_SESSIONS: usize = 20;
/// Runs previewed per session when `num_past_session_runs_in_search` is not set.
const DEFAULT_RUNS: usize = 3;
/// Characters of a previewed message.
const PREVIEW_CHARS: usize = 200;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SearchArgs {}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ReadArgs {
    /// The session ID to read (from search results).
    session_id: String,
    /// Maximum number of runs to include. Default: all runs.
    #[serde(default)]
    num_runs: Option<usize>,
}

/// Whom the tools work for.
#[derive(Clone)]
struct Scope {
    db: Arc<dyn Db>,
    user_id: Option<String>,
}

impl Scope {
    /// Whether `session` belongs to this scope's user (or, without a user, to nobody).
    fn owns(&self, session: &AgentSession) -> bool {
        session.user_id == self.user_id
    }

    async fn session(&self, session_id: &str) -> Result<Option<AgentSession>, ToolError> {
        let session = self
            .db
            .get_session(session_id, self.user_id.as_deref(), None)
            .await
            .map_err(|e| ToolError::execution(format!("cannot read session {session_id}: {e}")))?;
        Ok(session.filter(|s| self.owns(s) && s.session_type() == SessionType::Agent))
    }
}

/// The text of a message: its string content, or its text parts joined.
fn message_text(message: &Message) -> Option<String> {
    match message.content.as_ref()? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> =
                parts.iter().filter_map(|p| p.as_str().or_else(|| p.get("text").and_then(Value::as_str))).collect();
            (!texts.is_empty()).then(|| texts.join(" "))
        }
        _ => None,
    }
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Agno's preview: per run, the first user and first assistant message, truncated.
fn preview(session: &AgentSession, num_runs: usize) -> Value {
    let mut runs = Vec::new();
    for run in session.runs().iter().take(num_runs) {
        let first = |role: Role| {
            run.messages.iter().flatten().filter(|m| m.role == role).find_map(message_text).map(|t| truncate(&t))
        };
        let (user, assistant) = (first(Role::User), first(Role::Assistant));
        if user.is_some() || assistant.is_some() {
            runs.push(json!({"user": user.unwrap_or_default(), "assistant": assistant.unwrap_or_default()}));
        }
    }
    json!({
        "session_id": session.session_id,
        "created_at": session.created_at.map(|t| t.to_string()),
        "runs": runs,
    })
}

/// Builds the two tools for one run of `current_session` by `user_id`.
pub(crate) fn past_sessions_tools(
    db: Arc<dyn Db>,
    config: &PastSessionsConfig,
    current_session: &str,
    user_id: Option<String>,
) -> [Arc<dyn DynTool>; 2] {
    let limit = config.num_past_sessions_to_search.unwrap_or(DEFAULT_SESSIONS);
    let num_runs = config.num_past_session_runs_in_search.unwrap_or(DEFAULT_RUNS);
    let scope = Scope { db, user_id };
    let current = current_session.to_owned();
    let search_scope = scope.clone();
    let search = Function::new(
        "search_past_sessions",
        "List previous chat sessions with short previews. Use read_past_session to read the full conversation \
         for a specific session. Returns a JSON list of session previews with session_id, created_at, and runs \
         (user/assistant pairs).",
        move |_: SearchArgs| {
            let (scope, current) = (search_scope.clone(), current.clone());
            async move {
                // Without a user the listing cannot filter on "no user" in the query, so it reads
                // more and keeps the sessions without one.
                let fetch = if scope.user_id.is_some() { limit } else { limit.saturating_mul(4) };
                let query = SessionQuery {
                    session_type: Some(SessionType::Agent),
                    user_id: scope.user_id.clone(),
                    limit: Some(fetch.max(1)),
                    sort_by: SessionSort::CreatedAt,
                    sort_order: SortOrder::Desc,
                    ..SessionQuery::default()
                };
                let listed = scope
                    .db
                    .get_sessions(&query)
                    .await
                    .map_err(|e| ToolError::execution(format!("cannot list past sessions: {e}")))?
                    .sessions;
                let mut previews = Vec::new();
                for listed in listed.iter().filter(|s| scope.owns(s) && s.session_id != current).take(limit) {
                    if let Some(session) = scope.session(&listed.session_id).await?
                        && !session.runs().is_empty()
                    {
                        previews.push(preview(&session, num_runs));
                    }
                }
                Ok(Value::Array(previews).to_string())
            }
        },
    );
    let read = Function::new(
        "read_past_session",
        "Read the full conversation from a previous session. Use search_past_sessions first to find relevant \
         sessions. Returns the conversation formatted as User/Assistant message pairs.",
        move |args: ReadArgs| {
            let scope = scope.clone();
            async move {
                let Some(session) = scope.session(&args.session_id).await?.filter(|s| !s.runs().is_empty()) else {
                    return Ok("Session not found.".to_owned());
                };
                let mut lines = vec![format!("Session: {}", session.session_id)];
                if let Some(created) = session.created_at {
                    lines.push(format!("Created: {created}"));
                }
                lines.push(String::new());
                let runs = session.runs();
                for run in runs.iter().take(args.num_runs.unwrap_or(runs.len())) {
                    for message in run.messages.iter().flatten() {
                        let label = match message.role {
                            Role::User => "User",
                            Role::Assistant => "Assistant",
                            _ => continue,
                        };
                        if let Some(text) = message_text(message).filter(|t| !t.is_empty()) {
                            lines.push(format!("{label}: {text}"));
                            lines.push(String::new());
                        }
                    }
                }
                Ok(lines.join("\n"))
            }
        },
    );
    [Arc::new(search), Arc::new(read)]
}
