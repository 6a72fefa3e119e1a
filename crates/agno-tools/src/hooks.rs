//! Tool hooks: middleware around every tool call (logging, argument rewriting, caching, policy).
//!
//! Hooks form a chain, outermost first. Each hook receives the call and a [`Next`] that runs the
//! rest of the chain; not calling it short-circuits the tool.

use std::fmt::Debug;
use std::sync::Arc;

use agno_core::{DynTool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::{Map, Value};

/// Middleware around tool calls.
#[async_trait]
pub trait ToolHook: Send + Sync + Debug {
    /// Handles one call. Call `next.run(args, ctx)` to continue to the tool.
    ///
    /// # Errors
    /// A [`ToolError`] the model will see.
    async fn around(
        &self,
        tool_name: &str,
        args: Map<String, Value>,
        ctx: ToolContext,
        next: Next<'_>,
    ) -> Result<ToolOutput, ToolError>;
}

/// The rest of a hook chain.
#[derive(Debug)]
pub struct Next<'a> {
    tool: &'a dyn DynTool,
    hooks: &'a [Arc<dyn ToolHook>],
}

impl<'a> Next<'a> {
    /// Runs the remaining hooks and then the tool.
    ///
    /// # Errors
    /// The tool's or a later hook's [`ToolError`].
    pub fn run(self, args: Map<String, Value>, ctx: ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            match self.hooks.split_first() {
                None => self.tool.call(args, ctx).await,
                Some((hook, rest)) => {
                    let next = Next { tool: self.tool, hooks: rest };
                    hook.around(self.tool.name(), args, ctx, next).await
                }
            }
        })
    }
}

/// Calls `tool` through `hooks` (outermost first).
///
/// # Errors
/// The [`ToolError`] of the tool or of a hook.
pub async fn call_with_hooks(
    tool: &dyn DynTool,
    hooks: &[Arc<dyn ToolHook>],
    args: Map<String, Value>,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    Next { tool, hooks }.run(args, ctx).await
}
