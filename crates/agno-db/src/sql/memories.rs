//! `agno_memories` as every SQL adapter reads it back.

use agno_core::{DbResult, UserMemory};
use serde_json::Value;
use sqlx::Database;

use super::{Columns, Dialect};

/// A memory read back from a row of the memories table: `memory` is a JSON column holding the
/// text (anything else reads as its JSON text), `topics` a JSON list of texts.
///
/// # Errors
/// A column cannot be read, or a JSON column holds text that is not JSON.
pub(crate) fn memory_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<UserMemory> {
    let c = Columns::<D>::of(row, "agno_memories");
    let memory = match c.json("memory")? {
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let topics = match c.json("topics")? {
        Some(Value::Array(list)) => Some(list.into_iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()),
        _ => None,
    };
    Ok(UserMemory {
        memory_id: c.text("memory_id")?,
        memory,
        topics,
        user_id: c.text("user_id")?,
        input: c.text("input")?,
        agent_id: c.text("agent_id")?,
        team_id: c.text("team_id")?,
        feedback: c.text("feedback")?,
        created_at: c.int("created_at")?,
        updated_at: c.int("updated_at")?,
    })
}
