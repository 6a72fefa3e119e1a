//! Workflows: steps (functions, agents, nested workflows) composed with [`Steps`], [`Loop`],
//! [`Condition`], [`Router`] and [`Parallel`], as Agno's workflow v2 primitives.
//!
//! A workflow run is stored like any run (one row in `agno_runs`, `run_type` `workflow`) in
//! Agno 3.1's `WorkflowRunOutput` shape, in a workflow session (`session_type` `workflow`) whose
//! `session_data.session_state` every step can read and change. The run is written when it
//! starts (`RUNNING`), after each top-level step (its `step_results` so far), and when it ends.
//! Agent steps run without a session of their own: their runs are kept inside the workflow run
//! (`step_executor_runs`, `parent_run_id` = the workflow run), as Agno keeps them.
//!
//! ```no_run
//! use agno_runtime::workflow::{Executor, Step, StepOutput, Workflow};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let workflow = Workflow::builder()
//!     .id("shout")
//!     .name("Shout")
//!     .step(Step {
//!         name: "upper".into(),
//!         executor: Executor::function(|input| async move { Ok(StepOutput::content(input.input_text().to_uppercase())) }),
//!         ..Step::default()
//!     })
//!     .build()?;
//! let run = workflow.arun("hello").await?;
//! assert_eq!(run.content_text(), "HELLO");
//! # Ok(())
//! # }
//! ```

mod engine;
mod executors;
pub mod expr;
mod input;
mod pause;
mod primitives;
mod review;
mod store;
mod walk;

use std::sync::Arc;

use agno_core::{Db, ErrorRequirement, RunOutput, RunStatus, StepRequirement, WorkflowStreamEvent};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

pub use crate::fence::Durable;
pub use input::{SessionState, StepInput};
pub use primitives::{
    Condition, EndCondition, Evaluator, Executor, Loop, Parallel, Router, Selector, Step, StepError, StepNode, Steps,
};
pub use review::{HumanReview, OnError, OnReject, OnTimeout, OutputReview};

pub use agno_core::{StepOutput, StepType, WorkflowEvent, WorkflowEventData, WorkflowStreamEvent as StreamEvent};

use crate::error::{BuildError, RunError};
use crate::event_stream::{EventStream, spawn_run};

/// A workflow: named steps run in order. Cheap to clone (shared inside).
#[derive(Clone)]
pub struct Workflow {
    inner: Arc<WorkflowInner>,
}

impl std::fmt::Debug for Workflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workflow").field("id", &self.inner.id).field("steps", &self.inner.steps.len()).finish()
    }
}

pub(crate) struct WorkflowInner {
    pub(crate) id: String,
    pub(crate) name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) steps: Vec<StepNode>,
    pub(crate) db: Option<Arc<dyn Db>>,
    pub(crate) session_state: Map<String, Value>,
    pub(crate) store_events: bool,
    pub(crate) tracing: Option<crate::Tracing>,
}

/// Builds a [`Workflow`] with named settings.
#[derive(Default)]
pub struct WorkflowBuilder {
    id: Option<String>,
    name: Option<String>,
    description: Option<String>,
    steps: Vec<StepNode>,
    db: Option<Arc<dyn Db>>,
    session_state: Map<String, Value>,
    store_events: bool,
    tracing: Option<crate::Tracing>,
}

impl std::fmt::Debug for WorkflowBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkflowBuilder").field("id", &self.id).field("steps", &self.steps.len()).finish()
    }
}

impl WorkflowBuilder {
    setters! {
        /// Workflow id (default: a new id).
        id(id: impl Into<String>) => id = Some(id.into());

        /// Display name.
        name(name: impl Into<String>) => name = Some(name.into());

        /// Description.
        description(description: impl Into<String>) => description = Some(description.into());
    }

    /// Appends a step (any primitive).
    pub fn step(mut self, step: impl Into<StepNode>) -> Self {
        self.steps.push(step.into());
        self
    }

    /// Appends steps.
    pub fn steps(mut self, steps: impl IntoIterator<Item = StepNode>) -> Self {
        self.steps.extend(steps);
        self
    }

    setters! {
        /// Storage for the workflow's sessions and runs.
        db(db: Arc<dyn Db>) => db = Some(db);

        /// Default session state (stored values win, then the run's).
        session_state(state: Map<String, Value>) => session_state = state;

        /// Keep the run's events on the stored run (`events`), as Agno's `store_events`.
        store_events(on: bool) => store_events = on;

        /// Traces the workflow's runs (its steps and their agents' runs nested in them) with
        /// `tracing`, unless they start in a context that traces already.
        tracing(tracing: crate::Tracing) => tracing = Some(tracing);
    }

    /// Checks the steps and builds the workflow.
    ///
    /// # Errors
    /// [`BuildError::Invalid`] naming the step: no steps, a step without a name or executor,
    /// two siblings with one name, a loop with `max_iterations = 0`, a router or parallel
    /// group without steps.
    pub fn build(self) -> Result<Workflow, BuildError> {
        let mut steps = self.steps;
        if steps.is_empty() {
            return Err(BuildError::Invalid { option: "steps", why: "a workflow needs at least one step".to_owned() });
        }
        validate(&mut steps, "steps")?;
        Ok(Workflow {
            inner: Arc::new(WorkflowInner {
                id: self.id.unwrap_or_else(agno_core::new_id),
                name: self.name,
                description: self.description,
                steps,
                db: self.db,
                session_state: self.session_state,
                store_events: self.store_events,
                tracing: self.tracing,
            }),
        })
    }
}

/// Checks names and shapes, and gives every node an id.
fn validate(nodes: &mut [StepNode], path: &str) -> Result<(), BuildError> {
    let mut seen = std::collections::HashSet::new();
    for (i, node) in nodes.iter_mut().enumerate() {
        let here = format!("{path}[{i}]");
        let invalid = |why: String| BuildError::Invalid { option: "steps", why };
        if node.name().trim().is_empty() {
            return Err(invalid(format!("{here} ({}) has no name", node.step_type())));
        }
        if !seen.insert(node.name().to_owned()) {
            return Err(invalid(format!("{here}: two steps here are named {:?}; names must be unique", node.name())));
        }
        let label = format!("{here} {:?}", node.name());
        match &*node {
            StepNode::Step(s) if matches!(s.executor, Executor::Unset) => {
                return Err(invalid(format!("{label} has no executor (a function, an agent or a workflow)")));
            }
            StepNode::Loop(l) if l.max_iterations == 0 => {
                return Err(invalid(format!("{label}: max_iterations must be at least 1")));
            }
            StepNode::Loop(l) if l.steps.is_empty() => return Err(invalid(format!("{label} has no steps"))),
            StepNode::Steps(s) if s.steps.is_empty() => return Err(invalid(format!("{label} has no steps"))),
            StepNode::Router(r) if r.choices.is_empty() => return Err(invalid(format!("{label} has no choices"))),
            StepNode::Parallel(p) if p.steps.is_empty() => return Err(invalid(format!("{label} has no steps"))),
            StepNode::Condition(c) if c.steps.is_empty() => return Err(invalid(format!("{label} has no steps"))),
            _ => {}
        }
        if let Some(review) = node.human_review() {
            let refused = review.unsupported(node.step_type());
            if !refused.is_empty() {
                return Err(invalid(format!(
                    "{label}: human_review.{} is not supported on a {}",
                    refused.join(", human_review."),
                    node.step_type()
                )));
            }
        }
        if node.step_id().is_none() {
            *node.id_slot_mut() = Some(agno_core::new_id());
        }
        let inner_path = format!("{label}.steps");
        if let StepNode::Condition(c) = node {
            validate(&mut c.steps, &inner_path)?;
            validate(&mut c.else_steps, &format!("{label}.else_steps"))?;
        } else {
            let mut children: Vec<StepNode> = node.children_mut().into_iter().map(|c| c.clone()).collect();
            if !children.is_empty() {
                validate(&mut children, &inner_path)?;
                for (slot, checked) in node.children_mut().into_iter().zip(children) {
                    *slot = checked;
                }
            }
        }
    }
    Ok(())
}

/// A request for one workflow run.
#[derive(Debug, Clone, Default)]
pub struct WorkflowRunRequest {
    /// The input: text or JSON (stored bare, as Agno stores it).
    pub input: Value,
    /// Run id (default: a new id).
    pub run_id: Option<String>,
    /// Session id (default: a new session).
    pub session_id: Option<String>,
    /// User id.
    pub user_id: Option<String>,
    /// Session state merged over the stored state for this run.
    pub session_state: Option<Map<String, Value>>,
    /// Data every step sees in `StepInput::additional_data`.
    pub additional_data: Option<Map<String, Value>>,
    /// Metadata stored on the run.
    pub metadata: Option<Map<String, Value>>,
    /// `Some(false)`: keep no events on the run nor on its steps' runs, even when it is streamed
    /// (a run asked for without streaming, which a background worker streams to log its events).
    pub store_events: Option<bool>,
}

impl From<&str> for WorkflowRunRequest {
    fn from(input: &str) -> Self {
        Self { input: Value::String(input.to_owned()), ..Self::default() }
    }
}

impl From<String> for WorkflowRunRequest {
    fn from(input: String) -> Self {
        Self { input: Value::String(input), ..Self::default() }
    }
}

impl WorkflowRunRequest {
    setters! {
        /// Sets the session id.
        session_id(id: impl Into<String>) => session_id = Some(id.into());

        /// Sets the user id.
        user_id(id: impl Into<String>) => user_id = Some(id.into());

        /// Sets the run id.
        run_id(id: impl Into<String>) => run_id = Some(id.into());
    }
}

/// The answers that continue a paused workflow run.
#[derive(Debug, Clone, Default)]
pub struct WorkflowContinueRequest {
    /// The paused run.
    pub run_id: String,
    /// Its session (checked when given).
    pub session_id: Option<String>,
    /// Its user (another user's run is not found).
    pub user_id: Option<String>,
    /// The paused run itself, when the workflow has no storage.
    pub run: Option<Box<RunOutput>>,
    /// The answer to the active review: its `step_id` and the decision (`confirmed`,
    /// `rejection_feedback`, `user_input`, `selected_choices`, `edited_output`).
    pub step_requirements: Vec<StepRequirement>,
    /// The decision after a failure (`decision`: `retry` or `skip`).
    pub error_requirements: Vec<ErrorRequirement>,
}

/// The events of a workflow run as they happen (its own, and its agents' and teams'), and its
/// record via [`EventStream::output`].
pub type WorkflowStream = EventStream<WorkflowStreamEvent>;

impl Workflow {
    /// A builder.
    pub fn builder() -> WorkflowBuilder {
        WorkflowBuilder::default()
    }

    /// The workflow id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The display name.
    pub fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }

    /// The description.
    pub fn description(&self) -> Option<&str> {
        self.inner.description.as_deref()
    }

    /// The top-level steps.
    pub fn steps(&self) -> &[StepNode] {
        &self.inner.steps
    }

    /// The storage, when configured.
    pub fn db(&self) -> Option<&Arc<dyn Db>> {
        self.inner.db.as_ref()
    }

    /// Runs the workflow to its end and returns the stored run (`COMPLETED`, or `CANCELLED`
    /// when cancelled with [`crate::cancel_run`] by its run id).
    ///
    /// # Errors
    /// [`RunError::StepFailed`] (the run is stored as `ERROR` and travels in the error) when a
    /// step failed after its retries without `skip_on_failure`; [`RunError::Storage`] when the
    /// session or run cannot be read or written.
    pub async fn arun(&self, request: impl Into<WorkflowRunRequest>) -> Result<RunOutput, RunError> {
        engine::execute(
            Arc::clone(&self.inner),
            engine::Start::New(Box::new(request.into())),
            None,
            0,
            Durable::default(),
        )
        .await
    }

    /// Blocking version of [`Workflow::arun`].
    ///
    /// # Errors
    /// As [`Workflow::arun`].
    pub fn run(&self, request: impl Into<WorkflowRunRequest>) -> Result<RunOutput, RunError> {
        let request = request.into();
        crate::blocking::block_on(self.arun(request)).map_err(RunError::Internal)?
    }

    /// Starts a run on its own task and streams its events (`WorkflowStarted`, `StepStarted`,
    /// ..., one terminal `WorkflowCompleted` / `WorkflowError` / `WorkflowCancelled`), each with
    /// a strictly increasing `event_index`; agent steps stream their agent's events in between,
    /// as Agno does. Dropping the stream does not stop the run.
    pub fn run_stream(&self, request: impl Into<WorkflowRunRequest>) -> WorkflowStream {
        self.spawn(engine::Start::New(Box::new(request.into())), Durable::default())
    }

    /// [`Workflow::run_stream`] for a background worker: every write goes through `durable`'s
    /// fence, and events are numbered after its `after_event_index`.
    pub fn run_stream_durable(&self, request: WorkflowRunRequest, durable: Durable) -> WorkflowStream {
        self.spawn(engine::Start::New(Box::new(request)), durable)
    }

    /// Resumes a stored run that did not end (its worker died): what its journal holds (every
    /// step completed before) is replayed without running again, and the run goes on from the
    /// first step that had not completed.
    pub fn resume_stream(&self, run: RunOutput, durable: Durable) -> WorkflowStream {
        self.spawn(engine::Start::Continue(Box::new(run)), durable)
    }

    /// Applies a reviewer's answers to a paused run and continues it from the step that paused
    /// (what ran before is not run again), to its end or its next pause. Answers that do not fit
    /// (a step that is not waiting, a route that is not a choice, a missing or mistyped input)
    /// change nothing.
    ///
    /// # Errors
    /// [`RunError::RunNotFound`], [`RunError::NotPaused`], [`RunError::InvalidContinue`]
    /// before anything runs; then as [`Workflow::arun`].
    pub async fn continue_run(&self, request: WorkflowContinueRequest) -> Result<RunOutput, RunError> {
        let run = self.prepare_continue(request).await?;
        engine::execute(Arc::clone(&self.inner), engine::Start::Continue(Box::new(run)), None, 0, Durable::default())
            .await
    }

    /// [`Workflow::continue_run`], streaming the continued run's events.
    ///
    /// # Errors
    /// As [`Workflow::continue_run`], before the stream starts.
    pub async fn continue_run_stream(&self, request: WorkflowContinueRequest) -> Result<WorkflowStream, RunError> {
        self.continue_run_stream_durable(request, Durable::default()).await
    }

    /// [`Workflow::continue_run_stream`] for a background worker (see
    /// [`Workflow::run_stream_durable`]).
    ///
    /// # Errors
    /// As [`Workflow::continue_run`], before the stream starts.
    pub async fn continue_run_stream_durable(
        &self,
        request: WorkflowContinueRequest,
        durable: Durable,
    ) -> Result<WorkflowStream, RunError> {
        let run = self.prepare_continue(request).await?;
        Ok(self.spawn(engine::Start::Continue(Box::new(run)), durable))
    }

    /// Checks a continue's answers against the paused run (nothing runs): the run with the
    /// answers applied, ready for [`Workflow::resume_stream`].
    ///
    /// # Errors
    /// As [`Workflow::continue_run`] before anything runs.
    pub async fn answered(&self, request: WorkflowContinueRequest) -> Result<RunOutput, RunError> {
        self.prepare_continue(request).await
    }

    /// The record of a run about to be queued (`PENDING`), in Agno's workflow run shape.
    pub fn pending_run(&self, request: &WorkflowRunRequest) -> RunOutput {
        let run_id = request.run_id.clone().unwrap_or_else(agno_core::new_id);
        let session_id = request.session_id.clone().unwrap_or_else(agno_core::new_id);
        let mut run = store::new_record(
            &self.inner,
            &run_id,
            &session_id,
            request.user_id.as_deref(),
            &request.input,
            request.metadata.clone(),
        );
        run.status = RunStatus::Pending;
        run
    }

    fn spawn(&self, start: engine::Start, durable: Durable) -> WorkflowStream {
        let (tx, rx) = mpsc::unbounded_channel();
        let inner = Arc::clone(&self.inner);
        let task = spawn_run("workflow run", engine::execute(inner, start, Some(tx), 0, durable));
        EventStream::unbounded(rx, task)
    }

    async fn prepare_continue(&self, request: WorkflowContinueRequest) -> Result<RunOutput, RunError> {
        let mut run = match request.run {
            Some(run) => *run,
            None => {
                let Some(db) = &self.inner.db else { return Err(RunError::RunNotFound(request.run_id)) };
                db.get_run(&request.run_id, request.user_id.as_deref())
                    .await?
                    .filter(|r| r.workflow_id.as_deref() == Some(self.id()) && r.agent_id.is_none())
                    .filter(|r| request.session_id.as_ref().is_none_or(|s| r.session_id.as_ref() == Some(s)))
                    .ok_or(RunError::RunNotFound(request.run_id))?
            }
        };
        if run.status != RunStatus::Paused {
            return Err(RunError::NotPaused { run_id: run.id().to_owned(), status: run.status });
        }
        pause::resolve(&mut run, &request.step_requirements, &request.error_requirements)
            .map_err(RunError::InvalidContinue)?;
        Ok(run)
    }
}
