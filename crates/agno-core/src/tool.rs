//! The object-safe tool interface the runtime executes, and the context tools receive.
//!
//! Typed tools (see `agno-tools`) are erased into [`DynTool`]; so are MCP and config-defined
//! tools. There is one execution path for all of them.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::ToolError;

/// What the model is told about a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Tool name, unique within a run.
    pub name: String,
    /// What the tool does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON schema of the arguments (an object schema). Shared: tools built from the same
    /// argument type share one schema.
    pub parameters: Arc<Value>,
    /// Ask the provider for strict schema adherence.
    #[serde(default)]
    pub strict: bool,
}

/// Human-in-the-loop and control flags of a tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFlags {
    /// Pause for the user's confirmation before running.
    pub requires_confirmation: bool,
    /// Pause for user-supplied argument values before running.
    pub requires_user_input: bool,
    /// Arguments the user supplies (empty = all arguments).
    pub user_input_fields: Vec<String>,
    /// The caller executes the tool and supplies the result on continue.
    pub external_execution: bool,
    /// End the run after this tool's result.
    pub stop_after_tool_call: bool,
    /// Show the result to the user as the answer.
    pub show_result: bool,
    /// An admin's approval the call needs (`Required`: the run pauses until an admin resolves
    /// it), or a record of the decision a person made on it (`Audit`; the call must pause for
    /// some other reason).
    pub approval: Option<crate::ApprovalType>,
}

impl ToolFlags {
    /// Sets the approval a call needs, as Agno's `@approval` does: a `Required` approval on a
    /// tool that pauses for nothing else pauses it for confirmation.
    pub fn set_approval(&mut self, approval: crate::ApprovalType) {
        if approval == crate::ApprovalType::Required && !self.pauses_for_a_person() {
            self.requires_confirmation = true;
        }
        self.approval = Some(approval);
    }

    /// Whether a call pauses for a confirmation, input or an external result.
    pub fn pauses_for_a_person(&self) -> bool {
        self.requires_confirmation || self.requires_user_input || self.external_execution
    }

    /// True when a call of this tool pauses the run.
    pub fn pauses(&self) -> bool {
        self.pauses_for_a_person() || self.approval == Some(crate::ApprovalType::Required)
    }
}

/// Run context given to every tool call.
#[derive(Debug, Clone, Default)]
pub struct ToolContext {
    /// Run id.
    pub run_id: String,
    /// Session id.
    pub session_id: String,
    /// User id.
    pub user_id: Option<String>,
    /// Agent id.
    pub agent_id: Option<String>,
    /// The call's id.
    pub tool_call_id: String,
    /// Session state; tools may read and change it. Changes are saved with the session.
    pub session_state: Arc<Mutex<Map<String, Value>>>,
    /// Dependencies passed to the run.
    pub dependencies: Arc<BTreeMap<String, Value>>,
}

/// What a tool returns: text for the model.
pub type ToolOutput = String;

/// A tool the runtime can call. Object safe; the registry stores `Arc<dyn DynTool>`.
#[async_trait]
pub trait DynTool: Send + Sync + Debug {
    /// The definition sent to the model.
    fn definition(&self) -> &ToolDefinition;

    /// HITL and control flags.
    fn flags(&self) -> &ToolFlags;

    /// Runs the tool with arguments already parsed into a JSON object.
    ///
    /// # Errors
    /// A [`ToolError`] the model will see as the call's result.
    async fn call(&self, args: Map<String, Value>, ctx: ToolContext) -> Result<ToolOutput, ToolError>;

    /// The tool's name.
    fn name(&self) -> &str {
        &self.definition().name
    }

    /// Attributes its trace span carries beside the call's own (where a remote tool runs: an
    /// MCP server's method, tool and address). None by default.
    fn trace_attributes(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}
