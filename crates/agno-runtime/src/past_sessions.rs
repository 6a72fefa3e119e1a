//! The `search_past_sessions` tool (`search_past_sessions = true`): lets the model read the
//! user's recent other sessions, as Agno's past-session search does.

use std::sync::Arc;

use agno_core::{Db, DynTool, SessionQuery, ToolError};
use agno_tools::Function;
use serde::Deserialize;
use serde_json::json;

use crate::config::PastSessionsConfig;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SearchArgs {
    /// Words to look for in past inputs and answers; empty returns the most recent sessions.
    #[serde(default)]
    query: Option<String>,
}

/// Builds the tool for one run: it sees the user's sessions except the current one.
pub(crate) fn past_sessions_tool(
    db: Arc<dyn Db>,
    config: &PastSessionsConfig,
    current_session: &str,
    user_id: Option<String>,
) -> Arc<dyn DynTool> {
    let sessions = config.num_past_sessions_to_search.unwrap_or(3);
    let runs = config.num_past_session_runs_in_search.unwrap_or(3);
    let current = current_session.to_owned();
    let tool = Function::new(
        "search_past_sessions",
        "Search the user's previous sessions with you. Returns the inputs and answers of recent runs.",
        move |args: SearchArgs| {
            let db = Arc::clone(&db);
            let current = current.clone();
            let user_id = user_id.clone();
            async move {
                let query =
                    SessionQuery { user_id: user_id.clone(), limit: Some(sessions + 1), ..SessionQuery::default() };
                let list = db
                    .get_sessions(&query)
                    .await
                    .map_err(|e| ToolError::execution(format!("cannot read past sessions: {e}")))?
                    .sessions;
                let needle = args.query.unwrap_or_default().to_lowercase();
                let mut found = Vec::new();
                for summary in list.into_iter().filter(|s| s.session_id != current).take(sessions) {
                    let Some(session) =
                        db.get_session(&summary.session_id, user_id.as_deref(), Some(runs)).await.map_err(|e| {
                            ToolError::execution(format!("cannot read session {}: {e}", summary.session_id))
                        })?
                    else {
                        continue;
                    };
                    let exchanges: Vec<_> = session
                        .runs()
                        .iter()
                        .map(|r| {
                            json!({
                                "input": r.input.as_ref().map(agno_core::RunInput::as_text),
                                "output": r.content_text(),
                            })
                        })
                        .filter(|e| needle.is_empty() || e.to_string().to_lowercase().contains(&needle))
                        .collect();
                    if !exchanges.is_empty() {
                        found.push(json!({"session_id": session.session_id, "runs": exchanges}));
                    }
                }
                Ok(json!({"sessions": found}))
            }
        },
    );
    Arc::new(tool)
}
