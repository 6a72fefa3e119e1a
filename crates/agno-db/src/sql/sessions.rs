//! `agno_sessions` as every SQL adapter reads it back.

use agno_core::{AgentSession, DbResult};
use sqlx::Database;

use super::{Columns, Dialect};

/// A session (without its runs) read back from a row of the sessions table: the JSON columns
/// as stored (an object column holding anything else reads as none; a summary that is not
/// Agno's shape is dropped), `team_data` and `workflow_data` kept as extra fields.
///
/// # Errors
/// A column cannot be read, or a JSON column holds text that is not JSON.
pub(crate) fn session_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<AgentSession> {
    let c = Columns::<D>::of(row, "agno_sessions");
    let mut session = AgentSession::new(c.text("session_id")?.unwrap_or_default());
    session.agent_id = c.text("agent_id")?;
    session.team_id = c.text("team_id")?;
    session.workflow_id = c.text("workflow_id")?;
    session.user_id = c.text("user_id")?;
    session.session_data = c.object("session_data")?;
    session.agent_data = c.object("agent_data")?;
    session.metadata = c.object("metadata")?;
    session.summary = c.json("summary")?.and_then(|v| serde_json::from_value(v).ok());
    for col in ["team_data", "workflow_data"] {
        if let Some(v) = c.json(col)? {
            session.extra.insert(col.to_owned(), v);
        }
    }
    session.created_at = c.int("created_at")?;
    session.updated_at = c.int("updated_at")?;
    session.runs = None;
    Ok(session)
}
