//! Human review of workflow steps ([`HumanReview`], Agno's `agno.workflow.types.HumanReview`):
//! confirm before a step runs, give it input, pick a router's routes, approve its output or a
//! loop's iterations, decide after an error; with what a rejection, an error or a timeout does.

use std::fmt;
use std::sync::Arc;

use agno_core::{StepInputField, StepOutput, StepType};

/// What rejecting a review does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnReject {
    /// The step is skipped; the workflow goes on (Agno's default).
    #[default]
    Skip,
    /// The workflow run ends `CANCELLED`.
    Cancel,
    /// A Condition runs its `else_steps`.
    Else,
    /// The step runs again (with the reviewer's feedback), up to `max_retries` times.
    Retry,
}

impl OnReject {
    /// Agno's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            OnReject::Skip => "skip",
            OnReject::Cancel => "cancel",
            OnReject::Else => "else",
            OnReject::Retry => "retry",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "skip" => OnReject::Skip,
            "cancel" => OnReject::Cancel,
            "else" => OnReject::Else,
            "retry" => OnReject::Retry,
            _ => return None,
        })
    }
}

/// What a failing step does when it has a [`HumanReview`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// The workflow run fails.
    Fail,
    /// The step is skipped (Agno's default as coded).
    #[default]
    Skip,
    /// The run pauses with an `ErrorRequirement`: the reviewer decides `retry` or `skip`.
    Pause,
}

/// What a review that times out does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnTimeout {
    /// The workflow run ends `CANCELLED` (Agno's default).
    #[default]
    Cancel,
    /// The step is skipped.
    Skip,
    /// The step is approved.
    Approve,
}

impl OnTimeout {
    /// Agno's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            OnTimeout::Cancel => "cancel",
            OnTimeout::Skip => "skip",
            OnTimeout::Approve => "approve",
        }
    }
}

/// Whether a step's output waits for approval.
#[derive(Clone, Default)]
pub enum OutputReview {
    /// Never.
    #[default]
    Never,
    /// Always.
    Always,
    /// When the predicate holds for the output.
    When(Arc<dyn Fn(&StepOutput) -> bool + Send + Sync>),
}

impl OutputReview {
    /// A predicate over the step's output.
    pub fn when(f: impl Fn(&StepOutput) -> bool + Send + Sync + 'static) -> Self {
        OutputReview::When(Arc::new(f))
    }

    pub(crate) fn is_set(&self) -> bool {
        !matches!(self, OutputReview::Never)
    }

    pub(crate) fn applies(&self, output: &StepOutput) -> bool {
        match self {
            OutputReview::Never => false,
            OutputReview::Always => true,
            OutputReview::When(f) => f(output),
        }
    }
}

impl From<bool> for OutputReview {
    fn from(on: bool) -> Self {
        if on { OutputReview::Always } else { OutputReview::Never }
    }
}

impl fmt::Debug for OutputReview {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutputReview::Never => f.write_str("Never"),
            OutputReview::Always => f.write_str("Always"),
            OutputReview::When(_) => f.write_str("When(..)"),
        }
    }
}

/// Human review of one workflow primitive. Not every field applies to every primitive; building
/// the workflow refuses one that does not:
///
/// | field | Step | Steps | Loop | Condition | Router |
/// |---|---|---|---|---|---|
/// | `requires_confirmation` | ✓ | ✓ | ✓ | ✓ | ✓ |
/// | `requires_user_input` (a router: the reviewer picks the route) | ✓ | | | | ✓ |
/// | `allow_multiple_selections` | | | | | ✓ |
/// | `requires_output_review` | ✓ | | | | ✓ |
/// | `requires_iteration_review` | | | ✓ | | |
/// | `on_reject = Else` | | | | ✓ | |
/// | `on_error` | ✓ | | | | |
#[derive(Debug, Clone)]
pub struct HumanReview {
    /// Ask for a yes or no before the step runs.
    pub requires_confirmation: bool,
    /// The question.
    pub confirmation_message: Option<String>,
    /// Ask for input before the step runs (it reaches the step as `additional_data.user_input`,
    /// and an agent step's message as "User preferences").
    pub requires_user_input: bool,
    /// What is asked for.
    pub user_input_message: Option<String>,
    /// The fields to fill (any keys when empty).
    pub user_input_schema: Vec<StepInputField>,
    /// A router's reviewer may pick several routes.
    pub allow_multiple_selections: bool,
    /// Ask for approval of the output after the step ran.
    pub requires_output_review: OutputReview,
    /// The question.
    pub output_review_message: Option<String>,
    /// Ask for approval after each loop iteration.
    pub requires_iteration_review: bool,
    /// The question.
    pub iteration_review_message: Option<String>,
    /// What a rejection does.
    pub on_reject: OnReject,
    /// What a failing step does.
    pub on_error: OnError,
    /// Most retries a reviewer may ask for (default 3).
    pub max_retries: u32,
    /// Seconds a pause waits before `on_timeout` applies (checked when the run is continued).
    pub timeout: Option<u64>,
    /// What a timeout does.
    pub on_timeout: OnTimeout,
}

impl Default for HumanReview {
    fn default() -> Self {
        Self {
            requires_confirmation: false,
            confirmation_message: None,
            requires_user_input: false,
            user_input_message: None,
            user_input_schema: Vec::new(),
            allow_multiple_selections: false,
            requires_output_review: OutputReview::Never,
            output_review_message: None,
            requires_iteration_review: false,
            iteration_review_message: None,
            on_reject: OnReject::Skip,
            on_error: OnError::Skip,
            max_retries: 3,
            timeout: None,
            on_timeout: OnTimeout::Cancel,
        }
    }
}

impl HumanReview {
    /// The fields set that `kind` does not support, by name.
    pub(crate) fn unsupported(&self, kind: StepType) -> Vec<&'static str> {
        use StepType::{Condition, Loop, Router, Step};
        let mut out = Vec::new();
        let mut refuse = |set: bool, name: &'static str, allowed: &[StepType]| {
            if set && !allowed.contains(&kind) {
                out.push(name);
            }
        };
        refuse(self.requires_user_input, "requires_user_input", &[Step, Router]);
        refuse(!self.user_input_schema.is_empty(), "user_input_schema", &[Step]);
        refuse(self.allow_multiple_selections, "allow_multiple_selections", &[Router]);
        refuse(self.requires_output_review.is_set(), "requires_output_review", &[Step, Router]);
        refuse(self.requires_iteration_review, "requires_iteration_review", &[Loop]);
        refuse(self.on_reject == OnReject::Else, "on_reject = Else", &[Condition]);
        refuse(self.on_error != OnError::Skip, "on_error", &[Step]);
        out
    }
}
