//! Loading and saving a run's session and run record through the [`agno_core::Db`] traits.
//!
//! The session row is written without runs; the run is written as one row. A storage error is
//! returned to the caller, never swallowed and never turned into a fresh session.

use agno_core::{AgentSession, DbError, Message, RunStatus, RunWrite, StateUpdate, now_epoch_secs, pair_tool_calls};
use serde_json::{Map, Value, json};

use crate::agent::AgentInner;
use crate::run_state::RunState;

/// Loads the session with the stored runs its history needs (none when `history` is off), or
/// creates a new one (not yet saved) when it does not exist. What is read is bounded by the
/// history used, never by the session's length. A compacting agent's history load also reads the
/// fold in force (returned beside the session; `None` otherwise).
pub(crate) async fn load_session(
    agent: &AgentInner,
    session_id: &str,
    user_id: Option<&str>,
    history: bool,
) -> Result<(AgentSession, Option<agno_core::CompactionRecord>), DbError> {
    let existing = match (&agent.db, &agent.compaction) {
        // A compacting agent reads what its fold (or its planner) needs.
        (Some(db), Some(c)) if history => {
            let (session, fold) = crate::compaction::load_session(agent, c, db.as_ref(), session_id, user_id).await?;
            let session = session.unwrap_or_else(|| new_session(agent, session_id, user_id));
            return Ok((session, fold));
        }
        (Some(db), _) if history => {
            load_with_history(
                db.as_ref(),
                session_id,
                user_id,
                agent.history.runs_limit(),
                agent.history.num_history_messages,
            )
            .await?
        }
        (Some(db), _) => db.get_session(session_id, user_id, Some(0)).await?,
        (None, _) => None,
    };
    Ok((existing.unwrap_or_else(|| new_session(agent, session_id, user_id)), None))
}

/// Reads the newest runs of the session until they hold `runs` runs usable as history (or, with
/// only a message limit, `messages` history messages), doubling the read when runs skipped in
/// history (errors, cancellations, member runs) leave too few; stops when the session has no
/// more. Neither limit: every run (Agno's unbounded history).
pub(crate) async fn load_with_history(
    db: &dyn agno_core::Db,
    session_id: &str,
    user_id: Option<&str>,
    runs: Option<usize>,
    messages: Option<usize>,
) -> Result<Option<AgentSession>, DbError> {
    let first = match (runs, messages) {
        (Some(n), _) => n + 8,
        (None, Some(m)) => m.div_ceil(2) + 8,
        (None, None) => return db.get_session(session_id, user_id, None).await,
    };
    let mut limit = first;
    loop {
        let Some(session) = db.get_session(session_id, user_id, Some(limit)).await? else { return Ok(None) };
        let read = session.runs().len();
        let usable: Vec<&agno_core::RunOutput> =
            session.runs().iter().filter(|r| !r.status.skipped_in_history() && r.parent_run_id.is_none()).collect();
        let enough = match runs {
            Some(n) => usable.len() >= n,
            None => {
                let count = |r: &&agno_core::RunOutput| {
                    r.messages().iter().filter(|m| m.role != agno_core::Role::System && !m.from_history).count()
                };
                usable.iter().map(count).sum::<usize>() >= messages.unwrap_or(0)
            }
        };
        if enough || read < limit {
            return Ok(Some(session));
        }
        limit = limit.saturating_mul(2);
    }
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

/// A session that is not stored yet.
pub(crate) fn new_session(agent: &AgentInner, session_id: &str, user_id: Option<&str>) -> AgentSession {
    let mut session = AgentSession::new(session_id);
    session.agent_id = Some(agent.id.clone());
    session.user_id = user_id.map(str::to_owned);
    session
}

/// Finalises the record and writes session and run.
pub(crate) async fn save(agent: &AgentInner, st: &mut RunState) -> Result<(), DbError> {
    st.output.messages = Some(stored_messages(&st.messages, st.output.status));
    let state = st.state_snapshot();
    st.output.session_state = Some(state.clone());
    let Some(db) = agent.db.as_ref().filter(|_| st.store) else {
        return Ok(());
    };
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
    let mut update = StateUpdate::diff(&st.initial_state, session.session_state().unwrap_or(&Map::new()));
    // An ended (or paused) run adds what it used since its last counted save to the session's
    // metrics, in the same locked write as its state.
    let counted_now = match (&st.output.metrics, st.output.status) {
        (Some(metrics), status) if status != RunStatus::Running && status != RunStatus::Pending => {
            let delta = metrics.since(st.metrics_counted.as_ref().unwrap_or(&agno_core::Metrics::default()));
            update = update.with_metrics(delta);
            Some(metrics.clone())
        }
        _ => None,
    };
    // `session_written`: the metrics delta went in with the session (counted even if the run
    // write then fails, so a later save does not count it twice).
    let (session_written, result) = match &st.fence {
        Some(fence) => {
            let write = RunWrite { session, state: &update, run: &st.output, user_id: st.user_id.as_deref() };
            match fence.save(write).await {
                Ok(true) => (true, Ok(())),
                Ok(false) => (
                    false,
                    Err(DbError::new(
                        agno_core::DbErrorKind::Conflict,
                        format!(
                            "run {} is owned by a newer attempt; this execution's write was refused",
                            st.output.id()
                        ),
                    )),
                ),
                Err(e) => (false, Err(e)),
            }
        }
        // Session and run in one transaction: written together or not at all.
        None => {
            let write = RunWrite { session, state: &update, run: &st.output, user_id: st.user_id.as_deref() };
            match db.save_run_write(write).await {
                Ok(_) => (true, Ok(())),
                Err(e) => (false, Err(e)),
            }
        }
    };
    session.runs = runs;
    if session_written && counted_now.is_some() {
        st.metrics_counted = counted_now;
    }
    if result.is_ok() {
        crate::approvals::follow_run_status(db.as_ref(), &st.output).await;
    }
    result
}
