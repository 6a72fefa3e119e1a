//! `agno_eval_runs` as every SQL adapter reads it back.

use agno_core::{DbError, DbErrorKind, DbResult, EvalRunRecord, EvalType};
use serde_json::Value;
use sqlx::Database;

use super::{Columns, Dialect};

/// An eval type as stored (`accuracy`, `agent_as_judge`, ...).
///
/// # Errors
/// The text names no eval type.
pub(crate) fn parse_eval_type(text: &str, run_id: &str) -> DbResult<EvalType> {
    serde_json::from_value(Value::String(text.to_owned())).map_err(|e| {
        DbError::new(DbErrorKind::Other, format!("eval run {run_id} has an unknown eval_type {text:?}")).with_source(e)
    })
}

/// An eval run read back from a row of the eval runs table.
///
/// # Errors
/// A column cannot be read, the eval type is unknown, or a JSON column is not JSON.
pub(crate) fn eval_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<EvalRunRecord> {
    let c = Columns::<D>::of(row, "agno_eval_runs");
    let run_id = c.text("run_id")?.unwrap_or_default();
    Ok(EvalRunRecord {
        eval_type: parse_eval_type(&c.text("eval_type")?.unwrap_or_default(), &run_id)?,
        eval_data: c.object("eval_data")?.unwrap_or_default(),
        eval_input: c.object("eval_input")?,
        name: c.text("name")?,
        agent_id: c.text("agent_id")?,
        team_id: c.text("team_id")?,
        workflow_id: c.text("workflow_id")?,
        model_id: c.text("model_id")?,
        model_provider: c.text("model_provider")?,
        evaluated_component_name: c.text("evaluated_component_name")?,
        user_id: c.text("user_id")?,
        created_at: c.int("created_at")?,
        updated_at: c.int("updated_at")?,
        run_id,
    })
}
