//! Errors of the runtime: building an agent, running it, continuing it.

use agno_core::{DbError, ModelError, RunOutput};

/// Result alias of this crate.
pub type Result<T, E = RunError> = std::result::Result<T, E>;

/// Why an agent could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The model string or settings were invalid.
    #[error("invalid model: {0}")]
    Model(#[from] ModelError),
    /// Two tools share a name.
    #[error("duplicate tool name {0:?}: tool names must be unique within an agent")]
    DuplicateTool(String),
    /// An option needs a feature agno-rs does not have yet.
    #[error("{option} is not supported yet: {why}")]
    Unsupported {
        /// The option.
        option: &'static str,
        /// What is missing.
        why: &'static str,
    },
    /// A setting is invalid.
    #[error("invalid setting {option}: {why}")]
    Invalid {
        /// The option.
        option: &'static str,
        /// What is wrong.
        why: String,
    },
}

/// Why a run failed. The failed run is still stored with status `ERROR`; it travels in the error
/// so nothing is lost.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The model call failed after retries and fallbacks.
    #[error("model call failed: {source}")]
    Model {
        /// The model error.
        #[source]
        source: ModelError,
        /// The run as stored.
        run: Box<RunOutput>,
    },
    /// Loading or saving the session or run failed.
    #[error("storage failed: {0}")]
    Storage(#[from] DbError),
    /// A pre- or post-hook refused the run (a guardrail, for example).
    #[error("hook {hook} refused the run: {message}")]
    Hook {
        /// Hook name.
        hook: String,
        /// Why.
        message: String,
        /// The run as stored.
        run: Box<RunOutput>,
    },
    /// The output did not match the output schema.
    #[error("output does not match the output schema: {message}")]
    OutputSchema {
        /// What did not match.
        message: String,
        /// The run as stored.
        run: Box<RunOutput>,
    },
    /// The run to continue does not exist (or belongs to another user).
    #[error("run {0} not found")]
    RunNotFound(String),
    /// The run to continue is not paused.
    #[error("run {run_id} is {status}, not PAUSED: only paused runs can be continued")]
    NotPaused {
        /// Run id.
        run_id: String,
        /// Its status.
        status: agno_core::RunStatus,
    },
    /// A requirement was not resolved before continuing.
    #[error("requirement for tool call {tool_call_id} is not resolved: {what}")]
    UnresolvedRequirement {
        /// The paused call.
        tool_call_id: String,
        /// What is still needed.
        what: &'static str,
    },
    /// A continue's answers do not fit the paused run (nothing changed).
    #[error("cannot continue: {0}")]
    InvalidContinue(String),
    /// A call's approval does not let the run continue yet (nothing changed).
    #[error("cannot continue: {0}")]
    Approval(#[from] crate::approvals::ApprovalGate),
    /// A workflow step failed after its retries (without `skip_on_failure`).
    #[error("workflow run failed: {message}")]
    StepFailed {
        /// The step's name.
        step: String,
        /// What failed.
        message: String,
        /// The workflow run as stored (`ERROR`).
        run: Box<RunOutput>,
    },
    /// The run's task ended unexpectedly (it panicked).
    #[error("run task failed: {0}")]
    Internal(String),
}

impl RunError {
    /// The run record, when the run got far enough to have one.
    pub fn run(&self) -> Option<&RunOutput> {
        match self {
            RunError::Model { run, .. }
            | RunError::Hook { run, .. }
            | RunError::OutputSchema { run, .. }
            | RunError::StepFailed { run, .. } => Some(run),
            _ => None,
        }
    }

    /// Stable error id, as in Agno's `RunError.error_id`.
    pub fn error_id(&self) -> &'static str {
        match self {
            RunError::Model { source, .. } => source.kind.id(),
            RunError::Storage(_) => "storage_error",
            RunError::Hook { .. } => "hook_refused",
            RunError::OutputSchema { .. } => "output_schema_violation",
            RunError::RunNotFound(_) => "run_not_found",
            RunError::NotPaused { .. } => "run_not_paused",
            RunError::UnresolvedRequirement { .. } => "requirement_unresolved",
            RunError::StepFailed { .. } => "workflow_step_failed",
            RunError::InvalidContinue(_) => "invalid_continue",
            RunError::Approval(_) => "approval_unresolved",
            RunError::Internal(_) => "internal_error",
        }
    }
}
