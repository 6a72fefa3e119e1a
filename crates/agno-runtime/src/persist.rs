//! Loading and saving a run's session and run record through the [`agno_core::Db`] traits.
//!
//! The session row is written without runs; the run is written as one row. A storage error is
//! returned to the caller, never swallowed and never turned into a fresh session.

use agno_core::{AgentSession, DbError, Message, RunStatus, StateUpdate, now_epoch_secs, pair_tool_calls};
use serde_json::{Map, Value, json};

use crate::agent::AgentInner;
use crate::run_state::RunState;

/// Loads the session, or creates a new one (not yet saved) when it does not exist.
pub(crate) async fn load_session(
    agent: &AgentInner,
    session_id: &str,
    user_id: Option<&str>,
) -> Result<AgentSession, DbError> {
    let existing = match &agent.db {
        Some(db) => {
            let runs_limit =
                agent.history.add_history_to_context.then(|| agent.history.runs_limit().map(|n| n + 8)).flatten();
            db.get_session(session_id, user_id, runs_limit).await?
        }
        None => None,
    };
    Ok(existing.unwrap_or_else(|| {
        let mut session = AgentSession::new(session_id);
        session.agent_id = Some(agent.id.clone());
        session.user_id = user_id.map(str::to_owned);
        session
    }))
}

/// The messages stored on the run: without history copies; for runs that ended (not paused),
/// every tool call is paired with a result.
pub(crate) fn stored_messages(messages: &[Message], status: RunStatus) -> Vec<Message> {
    let mut own: Vec<Message> = messages.iter().filter(|m| !m.from_history).cloned().collect();
    if status != RunStatus::Paused {
        pair_tool_calls(&mut own);
    }
    own
}

/// Finalises the record and writes session and run.
pub(crate) async fn save(agent: &AgentInner, st: &mut RunState) -> Result<(), DbError> {
    st.output.messages = Some(stored_messages(&st.messages, st.output.status));
    let state = st.state_snapshot();
    st.output.session_state = Some(state.clone());
    let Some(db) = &agent.db else {
        return Ok(());
    };
    if let Some(fence) = &st.fence
        && !fence.still_owner().await
    {
        return Err(DbError::new(
            agno_core::DbErrorKind::Conflict,
            format!("run {} is owned by a newer attempt; this execution's write was refused", st.output.id()),
        ));
    }
    let session = &mut st.session;
    session.agent_id = Some(agent.id.clone());
    session.set_session_state(state);
    let mut agent_data = Map::new();
    if let Some(name) = &agent.name {
        agent_data.insert("name".to_owned(), Value::String(name.clone()));
    }
    agent_data.insert("agent_id".to_owned(), Value::String(agent.id.clone()));
    agent_data.insert(
        "model".to_owned(),
        json!({"name": agent.model.provider(), "id": agent.model.id(), "provider": agent.model.provider()}),
    );
    session.agent_data = Some(agent_data);
    session.updated_at = Some(now_epoch_secs());
    let runs = session.runs.take();
    let update = StateUpdate::diff(&st.initial_state, session.session_state().unwrap_or(&Map::new()));
    let result = db.upsert_session(session, &update).await;
    session.runs = runs;
    result?;
    db.upsert_run(&st.output, &st.session.session_id, st.user_id.as_deref()).await?;
    Ok(())
}
