//! The workflow run record (Agno 3.1's `WorkflowRunOutput` shape inside a [`RunOutput`]) and
//! its session, and their writes.

use std::sync::Arc;

use agno_core::{AgentSession, Db, DbError, RunInput, RunOutput, RunStatus, RunWrite, StateUpdate, StepOutput};
use serde_json::{Map, Value, json};

use super::WorkflowInner;
use crate::RunFence;

/// Loads the workflow session (without runs), or a new one.
pub(super) async fn load_session(
    wf: &WorkflowInner,
    session_id: &str,
    user_id: Option<&str>,
) -> Result<AgentSession, DbError> {
    let existing = match &wf.db {
        Some(db) => db.get_session(session_id, user_id, Some(0)).await?,
        None => None,
    };
    Ok(existing.unwrap_or_else(|| {
        let mut session = AgentSession::new(session_id);
        session.workflow_id = Some(wf.id.clone());
        session.user_id = user_id.map(str::to_owned);
        session
    }))
}

/// A new run record: `RUNNING`, the input stored bare, Agno's empty media lists.
pub(super) fn new_record(
    wf: &WorkflowInner,
    run_id: &str,
    session_id: &str,
    user_id: Option<&str>,
    input: &Value,
    metadata: Option<Map<String, Value>>,
) -> RunOutput {
    let mut run = RunOutput::new(run_id, session_id);
    run.workflow_id = Some(wf.id.clone());
    run.user_id = user_id.map(str::to_owned);
    run.input = Some(RunInput::bare(input.clone()));
    run.status = RunStatus::Running;
    run.metadata = Some(metadata.unwrap_or_default());
    if let Some(name) = &wf.name {
        run.extra.insert("workflow_name".to_owned(), Value::String(name.clone()));
    }
    for media in ["images", "videos", "audio", "files"] {
        run.extra.insert(media.to_owned(), Value::Array(Vec::new()));
    }
    run
}

/// Puts the step outputs (and executor runs) on the record.
pub(super) fn set_progress(run: &mut RunOutput, steps: &[StepOutput], executor_runs: &[RunOutput]) {
    let results = serde_json::to_value(steps).unwrap_or(Value::Array(Vec::new()));
    run.extra.insert("step_results".to_owned(), results);
    if executor_runs.is_empty() {
        run.extra.remove("step_executor_runs");
    } else {
        let runs = serde_json::to_value(executor_runs).unwrap_or(Value::Array(Vec::new()));
        run.extra.insert("step_executor_runs".to_owned(), runs);
    }
}

/// Workflow metrics as Agno writes them: `steps` (per agent step: its model metrics) and the
/// run's `duration` in seconds.
pub(super) fn set_metrics(run: &mut RunOutput, steps: &[StepOutput], duration: f64) {
    let mut per_step = Map::new();
    collect_step_metrics(steps, &mut per_step);
    run.metrics = serde_json::from_value(json!({"steps": per_step, "duration": duration})).ok();
}

fn collect_step_metrics(steps: &[StepOutput], out: &mut Map<String, Value>) {
    for step in steps {
        if let (Some(name), Some(metrics)) = (&step.step_name, &step.metrics) {
            out.insert(
                name.clone(),
                json!({
                    "step_name": name,
                    "executor_type": step.executor_type,
                    "executor_name": step.executor_name,
                    "metrics": metrics,
                }),
            );
        }
        if let Some(inner) = &step.steps {
            collect_step_metrics(inner, out);
        }
    }
}

/// `workflow_data` as Agno writes it: id, name, and each top-level step's name, description
/// and type.
fn workflow_data(wf: &WorkflowInner) -> Value {
    let steps: Vec<Value> = wf
        .steps
        .iter()
        .map(|s| json!({"name": s.name(), "description": s.description(), "type": s.step_type().as_str()}))
        .collect();
    json!({"workflow_id": wf.id, "name": wf.name, "steps": steps})
}

/// Writes the session (its state as a merge of this run's changes) and then the run.
/// Writes the session (its state as a merge of this run's changes) and then the run; through the
/// fence when one guards the run (a background worker's claim). `Ok(false)`: the fence refused,
/// nothing was written.
pub(super) async fn save(
    db: &Arc<dyn Db>,
    fence: Option<&Arc<dyn RunFence>>,
    wf: &WorkflowInner,
    session: &mut AgentSession,
    initial_state: &Map<String, Value>,
    state: Map<String, Value>,
    run: &RunOutput,
) -> Result<bool, DbError> {
    session.workflow_id = Some(wf.id.clone());
    let update = StateUpdate::diff(initial_state, &state);
    session.set_session_state(state);
    session.extra.insert("workflow_data".to_owned(), workflow_data(wf));
    // As Agno writes a workflow session: metadata and session metrics always present.
    session.metadata.get_or_insert_with(Map::new);
    let data = session.session_data.get_or_insert_with(Map::new);
    data.entry("session_metrics").or_insert_with(|| Value::Object(Map::new()));
    session.runs = None;
    if let Some(fence) = fence {
        let user_id = run.user_id.clone().or_else(|| session.user_id.clone());
        return fence.save(RunWrite { session, state: &update, run, user_id: user_id.as_deref() }).await;
    }
    let user_id = session.user_id.clone();
    db.save_run_write(RunWrite { session, state: &update, run, user_id: user_id.as_deref() }).await?;
    Ok(true)
}
