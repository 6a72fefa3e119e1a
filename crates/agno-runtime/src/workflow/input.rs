//! What a step receives ([`StepInput`], Agno's fields) and the workflow session state it can read
//! and change ([`SessionState`]).

use std::sync::{Arc, Mutex};

use agno_core::StepOutput;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

/// The workflow session state, shared by every step of a run (parallel branches included) and
/// saved on the workflow session when the run ends.
#[derive(Debug, Clone, Default)]
pub struct SessionState(Arc<Mutex<Map<String, Value>>>);

impl SessionState {
    pub(crate) fn new(state: Map<String, Value>) -> Self {
        Self(Arc::new(Mutex::new(state)))
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.0.lock().ok().and_then(|s| s.get(key).cloned())
    }

    /// Sets `key`.
    pub fn set(&self, key: impl Into<String>, value: Value) {
        if let Ok(mut s) = self.0.lock() {
            s.insert(key.into(), value);
        }
    }

    /// Changes the state in place.
    pub fn update<R>(&self, f: impl FnOnce(&mut Map<String, Value>) -> R) -> Option<R> {
        self.0.lock().ok().map(|mut s| f(&mut s))
    }

    /// A copy of the whole state.
    pub fn snapshot(&self) -> Map<String, Value> {
        self.0.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// The input of one step (Agno's `StepInput`).
#[derive(Debug, Clone)]
pub struct StepInput {
    /// The workflow run's input.
    pub input: Option<Value>,
    /// Content of the step before this one (the innermost last output of a container).
    pub previous_step_content: Option<Value>,
    /// Outputs of the steps completed so far in this run, by step name, in completion order.
    pub previous_step_outputs: Arc<Vec<(String, StepOutput)>>,
    /// Extra data the caller passed with the run.
    pub additional_data: Option<Map<String, Value>>,
    /// The workflow session state.
    pub session_state: SessionState,
    /// Workflow run id.
    pub run_id: String,
    /// Session id.
    pub session_id: String,
    /// User id.
    pub user_id: Option<String>,
    pub(crate) cancel: CancellationToken,
}

impl StepInput {
    /// The workflow input as text (compact JSON when structured, `""` when none).
    pub fn input_text(&self) -> String {
        text(self.input.as_ref())
    }

    /// The previous step's content as text.
    pub fn previous_step_text(&self) -> String {
        text(self.previous_step_content.as_ref())
    }

    /// The output of the step named `name` (the latest, when it ran more than once).
    pub fn get_step_output(&self, name: &str) -> Option<&StepOutput> {
        self.previous_step_outputs.iter().rev().find(|(n, _)| n == name).map(|(_, o)| o)
    }

    /// The content of the step named `name`.
    pub fn get_step_content(&self, name: &str) -> Option<&Value> {
        self.get_step_output(name).and_then(|o| o.content.as_ref())
    }

    /// The content of the last completed step.
    pub fn get_last_step_content(&self) -> Option<&Value> {
        self.previous_step_outputs.last().and_then(|(_, o)| o.deepest_content())
    }

    /// Resolves when the workflow run is cancelled: a long step function can race its work
    /// against it. (A step that ignores it is dropped at its next await point.)
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }

    /// True once the workflow run is cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

fn text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}
