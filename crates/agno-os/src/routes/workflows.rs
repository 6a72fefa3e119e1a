//! `/workflows`: list and describe the configured workflows, run them (JSON or SSE), read their
//! runs and cancel them. Under user isolation the caller's `sub` is the run's user and another
//! user's session or run answers 404.

use agno_runtime::RunError;
use agno_runtime::workflow::{Executor, StepNode, Workflow, WorkflowContinueRequest};
use serde_json::{Value, json};

use super::component::Kind;
use super::run_form::fields;
use crate::error::{ApiError, ApiResult};
use crate::form::Form;
use crate::routes::FormField;
use crate::routes::without_nulls;
use crate::state::AppState;

/// Agno's `WorkflowResponse` (`steps` as names and types).
fn workflow_json(state: &AppState, wf: &Workflow) -> Value {
    without_nulls(json!({
        "id": wf.id(),
        "name": wf.name(),
        "db_id": wf.db().map(|_| &*state.db_id),
        "description": wf.description(),
        "steps": wf.steps().iter().map(|n| step_json(state, n)).collect::<Vec<_>>(),
        "workflow_agent": false,
        "is_factory": false,
        "is_component": false,
        "sandboxed": false,
    }))
}

/// A step as Agno's workflow detail lists it: `name`, `type`, an agent step's `agent` (as
/// `GET /agents/{id}` describes it), and a container's inner `steps`.
fn step_json(state: &AppState, node: &StepNode) -> Value {
    let mut out = json!({"name": node.name(), "type": node.step_type().as_str()});
    if let StepNode::Step(step) = node
        && let Executor::Agent(agent) = &step.executor
        && let Some(served) = state.agent(agent.id())
    {
        out["agent"] = super::agents::agent_json(state, served);
    }
    let inner: &[StepNode] = match node {
        StepNode::Steps(s) => &s.steps,
        StepNode::Loop(l) => &l.steps,
        StepNode::Condition(c) => &c.steps,
        StepNode::Router(r) => &r.choices,
        StepNode::Parallel(p) => &p.steps,
        _ => &[],
    };
    if !inner.is_empty() {
        out["steps"] = Value::Array(inner.iter().map(|n| step_json(state, n)).collect());
    }
    if let StepNode::Condition(c) = node
        && !c.else_steps.is_empty()
    {
        out["else_steps"] = Value::Array(c.else_steps.iter().map(|n| step_json(state, n)).collect());
    }
    out
}

/// The form of `POST /workflows/{workflow_id}/runs`.
pub const RUN_FORM: &[FormField] = &[
    FormField::required("message", "string", "The input (text or JSON)."),
    fields::STREAM,
    fields::SESSION,
    fields::USER,
    fields::SESSION_STATE,
    FormField::optional("additional_data", "object", "JSON object every step sees as additional_data."),
    fields::METADATA,
    fields::VERSION,
    fields::BACKGROUND,
];

/// The form of `POST /workflows/{workflow_id}/runs/{run_id}/continue`.
pub const CONTINUE_FORM: &[FormField] = &[
    FormField::optional("step_requirements", "array", "JSON list of the paused run's step requirements, answered."),
    FormField::optional(
        "error_requirements",
        "array",
        "JSON list of error requirements with decision retry or skip (agno-rs).",
    ),
    fields::RUN_SESSION,
    fields::USER,
    fields::STREAM,
    fields::CONTINUE_BACKGROUND,
];

fn json_list<T: serde::de::DeserializeOwned>(form: &Form, field: &str) -> ApiResult<Vec<T>> {
    match form.text(field).map(str::trim) {
        None | Some("") => Ok(Vec::new()),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| ApiError::unprocessable(format!("{field} must be a JSON list of requirements: {e}"))),
    }
}

/// The answers of a workflow's continue form (`step_requirements`: the active requirement
/// answered; `error_requirements`, agno-rs: a failed step's `decision`) applied to the journal of
/// the paused `run`, which then carries on from the step that paused: 409 for a run that is not
/// paused, 422 for answers that do not fit (nothing changes).
pub(crate) async fn answer(wf: &Workflow, run: &agno_core::RunOutput, form: &Form) -> ApiResult<agno_core::RunOutput> {
    let request = WorkflowContinueRequest {
        run_id: run.id().to_owned(),
        session_id: run.session_id.clone(),
        user_id: run.user_id.clone(),
        run: None,
        step_requirements: json_list(form, "step_requirements")?,
        error_requirements: json_list(form, "error_requirements")?,
    };
    wf.answered(request).await.map_err(|e| match e {
        RunError::RunNotFound(id) => ApiError::not_found(format!("Run {id} not found")),
        RunError::NotPaused { .. } => ApiError::conflict(e.to_string()),
        RunError::InvalidContinue(why) => ApiError::unprocessable(why),
        RunError::Storage(db) => db.into(),
        other => ApiError::internal(other.to_string()),
    })
}

/// `/workflows/...` as a component kind.
#[derive(Debug)]
pub struct Workflows;

impl Kind for Workflows {
    type Runner = Workflow;

    fn runner(state: &AppState, id: &str) -> Option<Workflow> {
        state.any_workflow(id)
    }
    async fn at_version(state: &AppState, id: &str, version: i64) -> Result<Workflow, String> {
        crate::queue::Served::workflow_version(state, id, version).await
    }
    fn ids(state: &AppState) -> Vec<String> {
        let configured = state.workflows.iter().map(|w| w.id().to_owned());
        configured.chain(state.published_now().workflows.keys().cloned()).collect()
    }
    fn describe(state: &AppState, id: &str) -> Option<Value> {
        if let Some(wf) = state.workflow(id) {
            return Some(workflow_json(state, wf));
        }
        let published = state.published.as_ref()?.workflow(id)?;
        Some(super::component::from_catalog(workflow_json(state, &published.built), published.version))
    }
    // Agno lists workflows as summaries.
    fn listed(state: &AppState, id: &str) -> Option<Value> {
        Self::summarise(state, id)
    }
    // Agno's `WorkflowSummaryResponse` (its nulls kept).
    fn summarise(state: &AppState, id: &str) -> Option<Value> {
        let (wf, version) = match state.workflow(id) {
            Some(wf) => (wf.clone(), None),
            None => state.published.as_ref()?.workflow(id).map(|p| (p.built, Some(p.version)))?,
        };
        let summary = json!({
            "id": wf.id(),
            "name": wf.name(),
            "description": wf.description(),
            "db_id": wf.db().map(|_| &*state.db_id),
            "is_factory": false,
            "is_component": false,
            "sandboxed": false,
        });
        Some(match version {
            Some(v) => super::component::from_catalog(summary, v),
            None => summary,
        })
    }
    // The answers go into the run's journal.
    async fn answer(
        wf: &Workflow,
        run: agno_core::RunOutput,
        form: &Form,
    ) -> ApiResult<(agno_core::RunOutput, Vec<agno_core::RunRequirement>)> {
        Ok((answer(wf, &run, form).await?, Vec::new()))
    }
}
