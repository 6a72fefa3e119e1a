//! What a caller asks for: a new run ([`RunRequest`]) or the continuation of a paused one
//! ([`ContinueRequest`]).

use std::collections::BTreeMap;

use agno_core::{RunInput, RunOutput, RunRequirement};
use serde_json::{Map, Value};

use crate::config::OutputSchema;

/// A request for one run.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// The input.
    pub input: RunInput,
    /// Run id (default: a new id).
    pub run_id: Option<String>,
    /// Session id (default: the agent's, else a new session).
    pub session_id: Option<String>,
    /// User id (default: the agent's).
    pub user_id: Option<String>,
    /// Session state merged over the stored state for this run.
    pub session_state: Option<Map<String, Value>>,
    /// Dependencies for this run, over the agent's.
    pub dependencies: Option<BTreeMap<String, Value>>,
    /// Metadata stored on the run.
    pub metadata: Option<Map<String, Value>>,
    /// Output schema for this run, over the agent's.
    pub output_schema: Option<OutputSchema>,
    /// Overrides the agent's `add_history_to_context`.
    pub add_history_to_context: Option<bool>,
    /// Under a worker's claim (background runs): its writes refused once this execution no
    /// longer owns the run, its events numbered after those an earlier attempt logged (a retried
    /// run continues its event log instead of reusing indexes a client may have seen).
    pub durable: crate::Durable,
    /// The run this one is part of (a workflow step's agent run names its workflow run).
    pub parent_run_id: Option<String>,
    /// The workflow this run is a step of.
    pub workflow_id: Option<String>,
    /// `Some(false)`: neither read nor write the agent's session. A workflow step's agent run is
    /// kept inside the workflow run (`step_executor_runs`), as Agno keeps it.
    pub store: Option<bool>,
    /// `Some(false)`: keep none of this run's events on the stored run, even when it is streamed
    /// and the agent keeps events (a run asked for without streaming keeps none, as Agno's; a
    /// background worker streams every run to log its events).
    pub store_events: Option<bool>,
    /// History messages to send before the input, in place of the stored session's (a team's
    /// leader reads its team's history this way).
    pub history: Option<Vec<agno_core::Message>>,
    /// What the client brings: tools it executes, whether it follows the session state.
    pub client: crate::ClientSide,
}

impl RunRequest {
    /// A run on a text message.
    pub fn new(message: impl Into<String>) -> Self {
        Self { input: RunInput::text(message), ..Self::default() }
    }

    /// A run on structured input.
    pub fn json(input: Value) -> Self {
        Self { input: RunInput { input_content: Some(input), ..RunInput::default() }, ..Self::default() }
    }

    /// Attaches an image (bytes or URL) to the input.
    pub fn image(mut self, media: agno_core::Media) -> Self {
        self.input.add_image(media);
        self
    }

    /// Attaches a file (a PDF, a document) to the input.
    pub fn file(mut self, media: agno_core::Media) -> Self {
        self.input.add_file(media);
        self
    }

    setters! {
        /// Sets the session id.
        session_id(id: impl Into<String>) => session_id = Some(id.into());

        /// Sets the user id.
        user_id(id: impl Into<String>) => user_id = Some(id.into());

        /// Sets the run id.
        run_id(id: impl Into<String>) => run_id = Some(id.into());

        /// Session state for this run.
        session_state(state: Map<String, Value>) => session_state = Some(state);
    }

    /// Adds a dependency.
    pub fn dependency(mut self, key: &str, value: Value) -> Self {
        self.dependencies.get_or_insert_with(BTreeMap::new).insert(key.to_owned(), value);
        self
    }

    setters! {
        /// Metadata for this run.
        metadata(metadata: Map<String, Value>) => metadata = Some(metadata);

        /// Runs under a worker's claim (see [`crate::Durable`]): its writes fenced, its events
        /// numbered after an earlier attempt's.
        durable(durable: crate::Durable) => durable = durable;
    }

    /// Sets the output schema for this run.
    pub fn output_schema(mut self, schema: OutputSchema) -> Self {
        self.output_schema = Some(schema);
        self
    }
}

impl From<&str> for RunRequest {
    fn from(s: &str) -> Self {
        RunRequest::new(s)
    }
}

impl From<String> for RunRequest {
    fn from(s: String) -> Self {
        RunRequest::new(s)
    }
}

/// Which paused run to continue.
#[derive(Debug, Clone)]
pub enum ContinueFrom {
    /// Load the run from the agent's db.
    RunId(String),
    /// The paused run output itself (works without a db).
    Output(Box<RunOutput>),
}

/// A request to continue a paused run with the user's decisions.
#[derive(Debug, Clone)]
pub struct ContinueRequest {
    /// The paused run.
    pub from: ContinueFrom,
    /// The resolved requirements (confirmed, rejected, input supplied or external result set).
    pub requirements: Vec<RunRequirement>,
    /// The user continuing; must own the run.
    pub user_id: Option<String>,
    /// Under a worker's claim: writes fenced, events numbered after this index (beyond those
    /// stored on the run).
    pub durable: crate::Durable,
    /// `Some(false)`: neither read nor write the agent's session (a workflow step's agent run,
    /// kept inside the workflow run).
    pub store: Option<bool>,
    /// What the client brings to the rest of the run (its tools again, as AG-UI clients send
    /// them with every request).
    pub client: crate::ClientSide,
}

impl ContinueRequest {
    fn new(from: ContinueFrom, requirements: Vec<RunRequirement>) -> Self {
        Self {
            from,
            requirements,
            user_id: None,
            durable: crate::Durable::default(),
            store: None,
            client: crate::ClientSide::default(),
        }
    }

    /// Continue the stored run `run_id`.
    pub fn run_id(run_id: impl Into<String>, requirements: Vec<RunRequirement>) -> Self {
        Self::new(ContinueFrom::RunId(run_id.into()), requirements)
    }

    /// The id of the run this continues.
    pub fn target_run_id(&self) -> &str {
        match &self.from {
            ContinueFrom::RunId(id) => id,
            ContinueFrom::Output(output) => output.id(),
        }
    }

    /// Continue from the paused output itself.
    pub fn output(output: RunOutput, requirements: Vec<RunRequirement>) -> Self {
        Self::new(ContinueFrom::Output(Box::new(output)), requirements)
    }

    /// Continue from the paused output, using its own requirements (resolved in place).
    pub fn from_paused(output: RunOutput) -> Self {
        let requirements = output.requirements.clone().unwrap_or_default();
        Self::output(output, requirements)
    }

    setters! {
        /// Sets the user id.
        user_id(id: impl Into<String>) => user_id = Some(id.into());

        /// Runs under a worker's claim (see [`crate::Durable`]): its writes fenced, its events
        /// numbered after an earlier attempt's.
        durable(durable: crate::Durable) => durable = durable;
    }

    /// `false`: the continued run is not stored (nor its session read), as a workflow step's.
    pub fn store(mut self, on: bool) -> Self {
        self.store = Some(on);
        self
    }
}
