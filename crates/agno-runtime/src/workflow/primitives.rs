//! The building blocks of a workflow, built with named fields (struct literals over `Default`):
//! [`Step`] (a function, an agent or a nested workflow), [`Steps`], [`Loop`], [`Condition`],
//! [`Router`] and [`Parallel`], all convertible into a [`StepNode`].
//!
//! ```
//! use agno_runtime::workflow::{Executor, Loop, Step, StepOutput};
//!
//! let draft = Step {
//!     name: "draft".into(),
//!     executor: Executor::function(|input| async move {
//!         Ok(StepOutput::content(format!("draft of {}", input.input_text())))
//!     }),
//!     ..Step::default()
//! };
//! let polish = Loop { name: "polish".into(), steps: vec![draft.clone().into()], max_iterations: 2, ..Loop::default() };
//! # let _ = polish;
//! ```

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use agno_core::{StepOutput, StepType};
use futures::future::BoxFuture;

use super::expr::Expression;
use super::input::StepInput;
use super::review::HumanReview;
use crate::agent::Agent;

/// Why a step function failed. The step is retried (`max_retries`), then skipped
/// (`skip_on_failure`) or fails the workflow run with this text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StepError(pub String);

impl StepError {
    /// An error with this text.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

type StepFuture = BoxFuture<'static, Result<StepOutput, StepError>>;

/// What a [`Step`] runs.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum Executor {
    /// Nothing yet: building the workflow refuses it, naming the step.
    #[default]
    Unset,
    /// An async function of the [`StepInput`].
    Function(Arc<dyn Fn(StepInput) -> StepFuture + Send + Sync>),
    /// An agent, run on the previous step's content (or the workflow input for the first step).
    Agent(Agent),
    /// A nested workflow, run on the previous step's content.
    Workflow(super::Workflow),
    /// A team, run on the previous step's content.
    Team(crate::team::Team),
}

impl Executor {
    /// A step function: `async fn(StepInput) -> Result<StepOutput, StepError>`.
    pub fn function<F, Fut>(f: F) -> Self
    where
        F: Fn(StepInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<StepOutput, StepError>> + Send + 'static,
    {
        Executor::Function(Arc::new(move |input| Box::pin(f(input))))
    }

    /// An agent step.
    pub fn agent(agent: Agent) -> Self {
        Executor::Agent(agent)
    }

    /// A nested workflow step.
    pub fn workflow(workflow: super::Workflow) -> Self {
        Executor::Workflow(workflow)
    }

    /// A team step.
    pub fn team(team: crate::team::Team) -> Self {
        Executor::Team(team)
    }

    /// Agno's `executor_type`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Executor::Unset => "unset",
            Executor::Function(_) => "function",
            Executor::Agent(_) => "agent",
            Executor::Workflow(_) => "workflow",
            Executor::Team(_) => "team",
        }
    }
}

impl fmt::Debug for Executor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Executor::Unset => f.write_str("Unset"),
            Executor::Function(_) => f.write_str("Function(..)"),
            Executor::Agent(agent) => f.debug_tuple("Agent").field(&agent.id()).finish(),
            Executor::Workflow(wf) => f.debug_tuple("Workflow").field(&wf.id()).finish(),
            Executor::Team(team) => f.debug_tuple("Team").field(&team.id()).finish(),
        }
    }
}

/// One unit of work.
#[derive(Debug, Clone)]
pub struct Step {
    /// Name, unique among its siblings (events, `previous_step_outputs` and routers use it).
    pub name: String,
    /// Id (default: assigned when the workflow is built).
    pub step_id: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// What runs.
    pub executor: Executor,
    /// Further attempts after a failure (default 3, as Agno).
    pub max_retries: u32,
    /// After the last failed attempt, record a failed output and go on instead of failing the
    /// workflow run.
    pub skip_on_failure: bool,
    /// Review by a person: confirmation, input, output approval, what an error does.
    pub human_review: Option<HumanReview>,
}

impl Default for Step {
    fn default() -> Self {
        Self {
            name: String::new(),
            step_id: None,
            description: None,
            executor: Executor::Unset,
            max_retries: 3,
            skip_on_failure: false,
            human_review: None,
        }
    }
}

/// Steps run one after the other, as one step.
#[derive(Debug, Clone, Default)]
pub struct Steps {
    /// Name.
    pub name: String,
    /// Id (default: assigned when the workflow is built).
    pub step_id: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// The steps.
    pub steps: Vec<StepNode>,
    /// Review by a person (confirmation before the group runs).
    pub human_review: Option<HumanReview>,
}

/// Decides when a [`Loop`] ends: called with the outputs of the iteration that just ran.
#[derive(Clone)]
pub struct EndCondition(Arc<EndFn>);

type EndFn = dyn Fn(&[StepOutput]) -> bool + Send + Sync;

impl EndCondition {
    /// `f(outputs)` returns true to end the loop.
    pub fn new(f: impl Fn(&[StepOutput]) -> bool + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    pub(crate) fn ends(&self, outputs: &[StepOutput]) -> bool {
        (self.0)(outputs)
    }
}

impl fmt::Debug for EndCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EndCondition(..)")
    }
}

/// Steps repeated until the end condition holds or `max_iterations` ran.
#[derive(Debug, Clone)]
pub struct Loop {
    /// Name.
    pub name: String,
    /// Id (default: assigned when the workflow is built).
    pub step_id: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// The steps of one iteration.
    pub steps: Vec<StepNode>,
    /// Iteration limit (default 3, as Agno).
    pub max_iterations: u32,
    /// Ends the loop early.
    pub end_condition: Option<EndCondition>,
    /// Each iteration starts from the previous iteration's output (default: every iteration
    /// starts from the loop's input).
    pub forward_iteration_output: bool,
    /// Review by a person: confirmation before the loop, approval after each iteration.
    pub human_review: Option<HumanReview>,
}

impl Default for Loop {
    fn default() -> Self {
        Self {
            name: String::new(),
            step_id: None,
            description: None,
            steps: Vec::new(),
            max_iterations: 3,
            end_condition: None,
            forward_iteration_output: false,
            human_review: None,
        }
    }
}

/// Decides which branch of a [`Condition`] runs.
#[derive(Clone)]
#[non_exhaustive]
pub enum Evaluator {
    /// A fixed answer.
    Bool(bool),
    /// A function of the step input.
    Function(Arc<dyn Fn(&StepInput) -> bool + Send + Sync>),
    /// An expression over the step input and session state (see [`Expression`]).
    Expression(Expression),
}

impl Evaluator {
    /// A function of the step input.
    pub fn function(f: impl Fn(&StepInput) -> bool + Send + Sync + 'static) -> Self {
        Evaluator::Function(Arc::new(f))
    }

    /// An expression such as `session_state.tier == "pro" && input contains "refund"`.
    ///
    /// # Errors
    /// The expression does not parse; the error says where.
    pub fn expression(text: &str) -> Result<Self, super::expr::ExpressionError> {
        Ok(Evaluator::Expression(Expression::parse(text)?))
    }
}

impl Default for Evaluator {
    fn default() -> Self {
        Evaluator::Bool(true)
    }
}

impl fmt::Debug for Evaluator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Evaluator::Bool(b) => f.debug_tuple("Bool").field(b).finish(),
            Evaluator::Function(_) => f.write_str("Function(..)"),
            Evaluator::Expression(e) => f.debug_tuple("Expression").field(&e.source()).finish(),
        }
    }
}

/// `steps` when the evaluator says true, else `else_steps`.
#[derive(Debug, Clone, Default)]
pub struct Condition {
    /// Name.
    pub name: String,
    /// Id (default: assigned when the workflow is built).
    pub step_id: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// The decision (default: always true).
    pub evaluator: Evaluator,
    /// The "if" branch.
    pub steps: Vec<StepNode>,
    /// The "else" branch (may be empty: nothing runs).
    pub else_steps: Vec<StepNode>,
    /// Review by a person (confirmation; a rejection with `OnReject::Else` runs `else_steps`).
    pub human_review: Option<HumanReview>,
}

/// Chooses among a [`Router`]'s choices: called with the step input and the choices' names,
/// returns the names to run (in that order).
#[derive(Clone)]
pub struct Selector(Arc<SelectFn>);

type SelectFn = dyn Fn(&StepInput, &[&str]) -> Vec<String> + Send + Sync;

impl Selector {
    /// `f(input, choice_names)` returns the names of the choices to run.
    pub fn new(f: impl Fn(&StepInput, &[&str]) -> Vec<String> + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// An expression naming the choice (a string) or choices (a list of strings), such as
    /// `session_state.language` (see [`Expression`]).
    ///
    /// # Errors
    /// The expression does not parse.
    pub fn expression(text: &str) -> Result<Self, super::expr::ExpressionError> {
        let expression = Expression::parse(text)?;
        Ok(Self::new(move |input, _| match expression.evaluate(&super::expr::step_context(input)) {
            serde_json::Value::String(name) => vec![name],
            serde_json::Value::Array(items) => items.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
            _ => Vec::new(),
        }))
    }

    pub(crate) fn select(&self, input: &StepInput, names: &[&str]) -> Vec<String> {
        (self.0)(input, names)
    }
}

impl Default for Selector {
    /// Runs the first choice.
    fn default() -> Self {
        Self::new(|_, names| names.first().map(|n| vec![(*n).to_owned()]).unwrap_or_default())
    }
}

impl fmt::Debug for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Selector(..)")
    }
}

/// Runs the choices its selector picks, one after the other.
#[derive(Debug, Clone, Default)]
pub struct Router {
    /// Name.
    pub name: String,
    /// Id (default: assigned when the workflow is built).
    pub step_id: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// What can be chosen.
    pub choices: Vec<StepNode>,
    /// The choice (default: the first).
    pub selector: Selector,
    /// Review by a person: confirmation, the route picked by the reviewer
    /// (`requires_user_input`), output approval.
    pub human_review: Option<HumanReview>,
}

/// Runs its steps at the same time, each on the same input.
#[derive(Debug, Clone, Default)]
pub struct Parallel {
    /// Name.
    pub name: String,
    /// Id (default: assigned when the workflow is built).
    pub step_id: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// The branches.
    pub steps: Vec<StepNode>,
}

/// Any workflow primitive.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum StepNode {
    /// A [`Step`].
    Step(Step),
    /// A [`Steps`] group.
    Steps(Steps),
    /// A [`Loop`].
    Loop(Loop),
    /// A [`Condition`].
    Condition(Condition),
    /// A [`Router`].
    Router(Router),
    /// A [`Parallel`] group.
    Parallel(Parallel),
}

macro_rules! into_node {
    ($($t:ident),*) => {$(
        impl From<$t> for StepNode {
            fn from(value: $t) -> Self {
                StepNode::$t(value)
            }
        }
    )*};
}
into_node!(Step, Steps, Loop, Condition, Router, Parallel);

impl StepNode {
    /// The node's name.
    pub fn name(&self) -> &str {
        match self {
            StepNode::Step(s) => &s.name,
            StepNode::Steps(s) => &s.name,
            StepNode::Loop(s) => &s.name,
            StepNode::Condition(s) => &s.name,
            StepNode::Router(s) => &s.name,
            StepNode::Parallel(s) => &s.name,
        }
    }

    /// The node's description.
    pub fn description(&self) -> Option<&str> {
        match self {
            StepNode::Step(s) => s.description.as_deref(),
            StepNode::Steps(s) => s.description.as_deref(),
            StepNode::Loop(s) => s.description.as_deref(),
            StepNode::Condition(s) => s.description.as_deref(),
            StepNode::Router(s) => s.description.as_deref(),
            StepNode::Parallel(s) => s.description.as_deref(),
        }
    }

    /// The node's id (assigned when the workflow is built).
    pub fn step_id(&self) -> Option<&str> {
        self.id_slot().as_deref()
    }

    /// Agno's `StepType` of the node.
    pub fn step_type(&self) -> StepType {
        match self {
            StepNode::Step(_) => StepType::Step,
            StepNode::Steps(_) => StepType::Steps,
            StepNode::Loop(_) => StepType::Loop,
            StepNode::Condition(_) => StepType::Condition,
            StepNode::Router(_) => StepType::Router,
            StepNode::Parallel(_) => StepType::Parallel,
        }
    }

    fn id_slot(&self) -> &Option<String> {
        match self {
            StepNode::Step(s) => &s.step_id,
            StepNode::Steps(s) => &s.step_id,
            StepNode::Loop(s) => &s.step_id,
            StepNode::Condition(s) => &s.step_id,
            StepNode::Router(s) => &s.step_id,
            StepNode::Parallel(s) => &s.step_id,
        }
    }

    pub(crate) fn id_slot_mut(&mut self) -> &mut Option<String> {
        match self {
            StepNode::Step(s) => &mut s.step_id,
            StepNode::Steps(s) => &mut s.step_id,
            StepNode::Loop(s) => &mut s.step_id,
            StepNode::Condition(s) => &mut s.step_id,
            StepNode::Router(s) => &mut s.step_id,
            StepNode::Parallel(s) => &mut s.step_id,
        }
    }

    /// The node's human review.
    pub fn human_review(&self) -> Option<&HumanReview> {
        match self {
            StepNode::Step(s) => s.human_review.as_ref(),
            StepNode::Steps(s) => s.human_review.as_ref(),
            StepNode::Loop(s) => s.human_review.as_ref(),
            StepNode::Condition(s) => s.human_review.as_ref(),
            StepNode::Router(s) => s.human_review.as_ref(),
            StepNode::Parallel(_) => None,
        }
    }

    /// The nodes directly inside this one (both branches of a condition, every router choice).
    pub(crate) fn children_mut(&mut self) -> Vec<&mut StepNode> {
        match self {
            StepNode::Step(_) => Vec::new(),
            StepNode::Steps(s) => s.steps.iter_mut().collect(),
            StepNode::Loop(s) => s.steps.iter_mut().collect(),
            StepNode::Condition(s) => s.steps.iter_mut().chain(s.else_steps.iter_mut()).collect(),
            StepNode::Router(s) => s.choices.iter_mut().collect(),
            StepNode::Parallel(s) => s.steps.iter_mut().collect(),
        }
    }
}
