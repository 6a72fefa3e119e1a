//! Pre- and post-hooks around a run (guardrails, input rewriting, output checks).

use std::fmt::Debug;

use agno_core::{RunInput, RunOutput};
use async_trait::async_trait;

/// A hook refusal; the run ends with `ERROR` and this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HookError(pub String);

/// Runs before the model sees the input; may rewrite it or refuse the run.
#[async_trait]
pub trait PreHook: Send + Sync + Debug {
    /// Name shown in events.
    fn name(&self) -> &str;

    /// Checks or rewrites the input.
    ///
    /// # Errors
    /// A [`HookError`] refuses the run.
    async fn run(&self, input: &mut RunInput) -> Result<(), HookError>;
}

/// Runs after the output is ready; may rewrite it or refuse it.
#[async_trait]
pub trait PostHook: Send + Sync + Debug {
    /// Name shown in events.
    fn name(&self) -> &str;

    /// Checks or rewrites the output.
    ///
    /// # Errors
    /// A [`HookError`] fails the run.
    async fn run(&self, output: &mut RunOutput) -> Result<(), HookError>;
}
