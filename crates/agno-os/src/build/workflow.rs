//! Builds the `[[workflows]]` of `agentos.toml` into [`Workflow`]s: steps reference the served
//! agents and other workflows by id. A missing reference, an unknown step `type`, a bad
//! expression or a cycle of nested workflows is refused at start, naming the field.

use std::collections::HashMap;
use std::sync::Arc;

use agno_core::Db;
use agno_runtime::workflow::{
    Condition, Evaluator, Executor, HumanReview, Loop, OnError, OnReject, OnTimeout, Parallel, Router, Selector, Step,
    StepNode, Steps, Workflow,
};

use crate::config::{HumanReviewSpec, StepSpec, WorkflowSpec};

/// The `HumanReview` of a `human_review` table.
fn human_review(spec: &HumanReviewSpec, path: &str) -> Result<HumanReview, String> {
    let pick = |field: &str, value: Option<&str>, allowed: &[&str]| -> Result<Option<String>, String> {
        match value {
            None => Ok(None),
            Some(v) if allowed.contains(&v) => Ok(Some(v.to_owned())),
            Some(v) => Err(format!("{path}.human_review.{field}: {v:?} is not one of {}", allowed.join(", "))),
        }
    };
    let on_reject = match pick("on_reject", spec.on_reject.as_deref(), &["skip", "cancel", "else", "retry"])?.as_deref()
    {
        Some("cancel") => OnReject::Cancel,
        Some("else") => OnReject::Else,
        Some("retry") => OnReject::Retry,
        _ => OnReject::Skip,
    };
    let on_error = match pick("on_error", spec.on_error.as_deref(), &["skip", "fail", "pause"])?.as_deref() {
        Some("fail") => OnError::Fail,
        Some("pause") => OnError::Pause,
        _ => OnError::Skip,
    };
    let on_timeout = match pick("on_timeout", spec.on_timeout.as_deref(), &["cancel", "skip", "approve"])?.as_deref() {
        Some("skip") => OnTimeout::Skip,
        Some("approve") => OnTimeout::Approve,
        _ => OnTimeout::Cancel,
    };
    Ok(HumanReview {
        requires_confirmation: spec.requires_confirmation,
        confirmation_message: spec.confirmation_message.clone(),
        requires_user_input: spec.requires_user_input,
        user_input_message: spec.user_input_message.clone(),
        user_input_schema: spec.user_input_schema.clone(),
        allow_multiple_selections: spec.allow_multiple_selections,
        requires_output_review: spec.requires_output_review.into(),
        output_review_message: spec.output_review_message.clone(),
        requires_iteration_review: spec.requires_iteration_review,
        iteration_review_message: spec.iteration_review_message.clone(),
        on_reject,
        on_error,
        max_retries: spec.max_retries.unwrap_or(3),
        timeout: spec.timeout,
        on_timeout,
    })
}
use crate::state::ServedAgent;

/// Why a workflow of the configuration cannot be built.
#[derive(Debug, thiserror::Error)]
#[error("workflow {id:?}: {message}")]
pub struct WorkflowConfigError {
    /// The workflow's id.
    pub id: String,
    /// What is wrong, naming the field.
    pub message: String,
}

/// Builds every configured workflow (nested ones first).
///
/// # Errors
/// The first workflow that cannot be built.
pub fn build_workflows(
    specs: &[WorkflowSpec],
    agents: &[ServedAgent],
    teams: &[agno_runtime::team::Team],
    db: Option<Arc<dyn Db>>,
    tracing: Option<&agno_runtime::Tracing>,
) -> Result<Vec<Workflow>, WorkflowConfigError> {
    let tracing = tracing.cloned();
    let mut builder = Builder { specs, agents, teams, db, tracing, built: HashMap::new(), stack: Vec::new() };
    specs.iter().map(|spec| builder.build(&spec.id)).collect()
}

struct Builder<'a> {
    specs: &'a [WorkflowSpec],
    agents: &'a [ServedAgent],
    teams: &'a [agno_runtime::team::Team],
    db: Option<Arc<dyn Db>>,
    tracing: Option<agno_runtime::Tracing>,
    built: HashMap<String, Workflow>,
    /// Workflows being built (to find cycles).
    stack: Vec<String>,
}

impl Builder<'_> {
    fn build(&mut self, id: &str) -> Result<Workflow, WorkflowConfigError> {
        if let Some(done) = self.built.get(id) {
            return Ok(done.clone());
        }
        let fail = |message: String| WorkflowConfigError { id: id.to_owned(), message };
        let Some(spec) = self.specs.iter().find(|s| s.id == id) else {
            return Err(fail("no such workflow".to_owned()));
        };
        self.stack.push(id.to_owned());
        let steps = spec
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| self.node(s, &format!("steps[{i}]")))
            .collect::<Result<Vec<_>, String>>()
            .map_err(fail)?;
        self.stack.pop();
        // As Agno's default (`store_events=False`): streamed events are not kept on the run.
        let mut builder = Workflow::builder().id(spec.id.clone()).steps(steps);
        if let Some(name) = &spec.name {
            builder = builder.name(name.clone());
        }
        if let Some(d) = &spec.description {
            builder = builder.description(d.clone());
        }
        if let Some(state) = &spec.session_state {
            builder = builder.session_state(state.clone());
        }
        if let Some(db) = &self.db {
            builder = builder.db(Arc::clone(db));
        }
        if let Some(tracing) = &self.tracing {
            builder = builder.tracing(tracing.clone());
        }
        let workflow = builder.build().map_err(|e| fail(e.to_string()))?;
        self.built.insert(id.to_owned(), workflow.clone());
        Ok(workflow)
    }

    fn nodes(&mut self, specs: &[StepSpec], path: &str) -> Result<Vec<StepNode>, String> {
        specs.iter().enumerate().map(|(i, s)| self.node(s, &format!("{path}[{i}]"))).collect()
    }

    fn node(&mut self, spec: &StepSpec, path: &str) -> Result<StepNode, String> {
        let kind = spec.kind.as_deref().unwrap_or("step");
        let container = kind != "step";
        if container && (spec.agent.is_some() || spec.workflow.is_some() || spec.team.is_some()) {
            return Err(format!("{path}: a {kind} has inner steps, not an agent, team or workflow of its own"));
        }
        let only = |field: &str, set: bool, allowed: &[&str]| {
            if set && !allowed.contains(&kind) {
                Err(format!("{path}.{field}: only a {} takes it, this is a {kind}", allowed.join(" or a ")))
            } else {
                Ok(())
            }
        };
        only("max_iterations", spec.max_iterations.is_some(), &["loop"])?;
        only("forward_iteration_output", spec.forward_iteration_output.is_some(), &["loop"])?;
        only("condition", spec.condition.is_some(), &["condition"])?;
        only("else_steps", !spec.else_steps.is_empty(), &["condition"])?;
        only("selector", spec.selector.is_some(), &["router"])?;
        only("max_retries", spec.max_retries.is_some(), &["step"])?;
        only("skip_on_failure", spec.skip_on_failure.is_some(), &["step"])?;
        only("steps", !spec.steps.is_empty(), &["steps", "loop", "condition", "router", "parallel"])?;
        if kind == "parallel" && spec.human_review.is_some() {
            return Err(format!("{path}.human_review: a parallel group takes no review (review its steps)"));
        }
        let review = spec.human_review.as_ref().map(|r| human_review(r, path)).transpose()?;
        let name = spec.name.clone();
        let description = spec.description.clone();
        let inner = |b: &mut Self| b.nodes(&spec.steps, &format!("{path}.steps"));
        Ok(match kind {
            "step" => {
                let set = [spec.agent.is_some(), spec.workflow.is_some(), spec.team.is_some()];
                if set.iter().filter(|s| **s).count() > 1 {
                    return Err(format!("{path}: set one of agent, team or workflow"));
                }
                let executor = match (&spec.agent, &spec.workflow) {
                    (None, None) if spec.team.is_some() => {
                        let id = spec.team.as_deref().unwrap_or_default();
                        match self.teams.iter().find(|t| t.id() == id) {
                            Some(team) => Executor::team(team.clone()),
                            None => return Err(format!("{path}.team: no team has the id {id:?}")),
                        }
                    }
                    (Some(agent), None) => match self.agents.iter().find(|a| a.agent.id() == agent) {
                        Some(served) => Executor::agent(served.agent.clone()),
                        None => return Err(format!("{path}.agent: no agent has the id {agent:?}")),
                    },
                    (None, Some(workflow)) => {
                        if self.stack.contains(workflow) {
                            return Err(format!(
                                "{path}.workflow: {workflow:?} would run inside itself ({} -> {workflow})",
                                self.stack.join(" -> ")
                            ));
                        }
                        if !self.specs.iter().any(|s| &s.id == workflow) {
                            return Err(format!("{path}.workflow: no workflow has the id {workflow:?}"));
                        }
                        Executor::workflow(self.build(workflow).map_err(|e| e.to_string())?)
                    }
                    (Some(_), Some(_)) => return Err(format!("{path}: set agent or workflow, not both")),
                    (None, None) => {
                        return Err(format!(
                            "{path}: a step needs agent = \"<id>\", team = \"<id>\" or workflow = \"<id>\""
                        ));
                    }
                };
                let mut step = Step { name, description, executor, human_review: review, ..Step::default() };
                if let Some(n) = spec.max_retries {
                    step.max_retries = n;
                }
                step.skip_on_failure = spec.skip_on_failure.unwrap_or(false);
                step.into()
            }
            "steps" => {
                Steps { name, description, steps: inner(self)?, human_review: review, ..Steps::default() }.into()
            }
            "parallel" => Parallel { name, description, steps: inner(self)?, ..Parallel::default() }.into(),
            "loop" => Loop {
                name,
                description,
                steps: inner(self)?,
                max_iterations: spec.max_iterations.unwrap_or(3),
                forward_iteration_output: spec.forward_iteration_output.unwrap_or(false),
                human_review: review,
                ..Loop::default()
            }
            .into(),
            "condition" => {
                let evaluator = match &spec.condition {
                    Some(text) => Evaluator::expression(text).map_err(|e| format!("{path}.condition: {e}"))?,
                    None => Evaluator::Bool(true),
                };
                let else_steps = self.nodes(&spec.else_steps, &format!("{path}.else_steps"))?;
                Condition {
                    name,
                    description,
                    evaluator,
                    steps: inner(self)?,
                    else_steps,
                    human_review: review,
                    ..Condition::default()
                }
                .into()
            }
            "router" => {
                let selector = match &spec.selector {
                    Some(text) => Selector::expression(text).map_err(|e| format!("{path}.selector: {e}"))?,
                    None => Selector::default(),
                };
                Router { name, description, choices: inner(self)?, selector, human_review: review, ..Router::default() }
                    .into()
            }
            other => {
                return Err(format!(
                    "{path}.type: unknown step type {other:?} (step, steps, loop, condition, router or parallel)"
                ));
            }
        })
    }
}
