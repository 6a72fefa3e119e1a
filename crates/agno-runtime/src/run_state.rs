//! The mutable state of one run in flight: its output record, the context messages, the tools
//! and session state. Owned by the driver; nothing else touches it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use agno_core::{AgentSession, DynTool, Message, RunOutput, RunRequirement, ToolContext, ToolExecution};
use agno_tools::ToolHook;
use serde_json::{Map, Value};

use crate::config::OutputSchema;

#[derive(Debug)]
pub(crate) struct RunState {
    pub(crate) output: RunOutput,
    /// Everything sent to the model: system, history, user, assistant and tool messages.
    pub(crate) messages: Vec<Message>,
    pub(crate) session: AgentSession,
    pub(crate) user_id: Option<String>,
    pub(crate) tools: Vec<Arc<dyn DynTool>>,
    pub(crate) tool_hooks: Vec<Arc<dyn ToolHook>>,
    pub(crate) tool_call_limit: Option<usize>,
    pub(crate) tool_calls_made: usize,
    pub(crate) session_state: Arc<Mutex<Map<String, Value>>>,
    /// The state when the run started; saving writes only the difference.
    pub(crate) initial_state: Map<String, Value>,
    pub(crate) dependencies: Arc<BTreeMap<String, Value>>,
    pub(crate) schema: Option<OutputSchema>,
    /// Asked before each write; a stale execution writes nothing.
    pub(crate) fence: Option<Arc<dyn crate::RunFence>>,
    /// When this execution started (the run's `duration` adds it to what earlier executions
    /// of a continued run took).
    pub(crate) started: std::time::Instant,
    /// The run's metrics already added to the session's `session_metrics` (by an earlier save
    /// of a paused run), so each token is counted once.
    pub(crate) metrics_counted: Option<agno_core::Metrics>,
    /// False for a run kept inside its parent (a workflow step): its session is not read or
    /// written.
    pub(crate) store: bool,
    /// The session state the client last saw, when it follows the state (see
    /// [`crate::ClientSide::follows_state`]): a tool call that changes it reports the new state.
    pub(crate) reported_state: Option<Map<String, Value>>,
}

impl RunState {
    pub(crate) fn tool(&self, name: &str) -> Option<Arc<dyn DynTool>> {
        self.tools.iter().find(|t| t.name() == name).cloned()
    }

    pub(crate) fn tool_context(&self) -> ToolContext {
        ToolContext {
            run_id: self.output.id().to_owned(),
            session_id: self.session.session_id.clone(),
            user_id: self.user_id.clone(),
            agent_id: self.output.agent_id.clone(),
            tool_call_id: String::new(),
            session_state: Arc::clone(&self.session_state),
            dependencies: Arc::clone(&self.dependencies),
        }
    }

    /// Records a tool execution, replacing an earlier record of the same call.
    pub(crate) fn push_tool(&mut self, exec: ToolExecution) {
        let tools = self.output.tools.get_or_insert_with(Vec::new);
        match tools.iter_mut().find(|t| t.tool_call_id == exec.tool_call_id) {
            Some(existing) => *existing = exec,
            None => tools.push(exec),
        }
    }

    pub(crate) fn add_requirement(&mut self, req: RunRequirement) {
        self.output.requirements.get_or_insert_with(Vec::new).push(req);
    }

    /// The session state when the client follows it and it changed since it last saw it.
    pub(crate) fn changed_state(&mut self) -> Option<Map<String, Value>> {
        let seen = self.reported_state.as_ref()?;
        let now = self.state_snapshot();
        if &now == seen {
            return None;
        }
        self.reported_state = Some(now.clone());
        Some(now)
    }

    /// A snapshot of the session state.
    pub(crate) fn state_snapshot(&self) -> Map<String, Value> {
        self.session_state.lock().map(|s| s.clone()).unwrap_or_default()
    }
}
