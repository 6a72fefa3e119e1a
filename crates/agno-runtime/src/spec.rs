//! What a run of any component is asked with: [`RunSpec`].
//!
//! Every entry point builds one (AgentOS's run forms, which the scheduler and the MCP server's
//! tools also go through), a background job stores it as its payload, and the worker that claims
//! the job turns the same value into the request its runner takes ([`RunSpec::request`] for
//! agents and teams, [`RunSpec::workflow_request`] for workflows). A run asked for inline and
//! the same run asked for in the background are therefore built from one value: nothing is
//! re-encoded by hand between the two.

use std::collections::BTreeMap;

use agno_core::{ComponentKind, Job, RunInput};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::config::OutputSchema;
use crate::request::RunRequest;
use crate::workflow::WorkflowRunRequest;

/// The version of [`RunSpec`]'s stored shape. A payload of a newer version is refused (a
/// replica never guesses what a field it does not know meant); a payload without a version is
/// the shape agno-rs wrote before `RunSpec` (message, state, dependencies, metadata) and is read.
pub const RUN_SPEC_VERSION: u64 = 1;

/// One run of an agent, a team or a workflow, as it was asked for: the input (text or
/// structured, with its images and files), the ids, the user, and every option a runner reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// The shape's version ([`RUN_SPEC_VERSION`]).
    pub version: u64,
    /// What kind of component runs it.
    pub kind: ComponentKind,
    /// The agent, team or workflow id.
    pub component_id: String,
    /// The run's id.
    pub run_id: String,
    /// The run's session.
    pub session_id: String,
    /// The run's user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The input: `input_content` (text, or structured JSON) with its `images` and `files`.
    pub input: RunInput,
    /// Merged over the stored session state for this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_state: Option<Map<String, Value>>,
    /// Dependencies for this run, over the component's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependencies: Option<Map<String, Value>>,
    /// Stored on the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// What every workflow step sees in `additional_data`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_data: Option<Map<String, Value>>,
    /// The schema the answer must match, over the component's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<OutputSchema>,
    /// Overrides the component's `add_history_to_context`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_history_to_context: Option<bool>,
    /// Asked for as a stream of events: its events are kept on the stored run (when the
    /// component keeps events); a run asked for without streaming keeps none, as Agno's, even
    /// when a background worker streams it to log its events.
    #[serde(default = "asked_as_stream")]
    pub stream: bool,
    /// What the client brings (agents and teams): tools it executes, whether it follows the
    /// session state.
    #[serde(default, skip_serializing_if = "crate::ClientSide::is_empty")]
    pub client: crate::ClientSide,
    /// The version of the component it was asked of, for a component kept in the database's
    /// catalog: a background run runs that version even when another is published while it
    /// waits. None: whatever is served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component_version: Option<i64>,
}

/// A payload without `stream` was streamed by its worker, as every background run was.
fn asked_as_stream() -> bool {
    true
}

/// Why a stored payload is not a run this replica can start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// A field is missing or has the wrong type.
    #[error("the job's payload is not a run request: `{field}` {reason}")]
    Field {
        /// The field's path in the payload (`input.images[0]`, `session_state`).
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Written by a newer version.
    #[error(
        "the job's payload is a run request of version {found}, newer than this replica reads ({RUN_SPEC_VERSION}): \
         run it on a replica of that version, or requeue it after upgrading"
    )]
    NewerVersion {
        /// The version found.
        found: u64,
    },
    /// The job names a kind of component no version writes.
    #[error("the job runs a component of unknown kind `{0}` (agent, team or workflow)")]
    UnknownKind(String),
}

impl SpecError {
    fn field(field: impl Into<String>, reason: impl Into<String>) -> Self {
        SpecError::Field { field: field.into(), reason: reason.into() }
    }
}

impl RunSpec {
    /// A run of `component_id` on `input`, with a new run id and a new session.
    pub fn new(kind: ComponentKind, component_id: impl Into<String>, input: RunInput) -> Self {
        Self {
            version: RUN_SPEC_VERSION,
            kind,
            component_id: component_id.into(),
            run_id: agno_core::new_id(),
            session_id: agno_core::new_id(),
            user_id: None,
            input,
            session_state: None,
            dependencies: None,
            metadata: None,
            additional_data: None,
            output_schema: None,
            add_history_to_context: None,
            stream: true,
            client: crate::ClientSide::default(),
            component_version: None,
        }
    }

    /// The request an agent or a team runs.
    pub fn request(&self) -> RunRequest {
        RunRequest {
            input: self.input.clone(),
            run_id: Some(self.run_id.clone()),
            session_id: Some(self.session_id.clone()),
            user_id: self.user_id.clone(),
            session_state: self.session_state.clone(),
            dependencies: self.dependencies.as_ref().map(|d| d.clone().into_iter().collect::<BTreeMap<_, _>>()),
            metadata: self.metadata.clone(),
            output_schema: self.output_schema.clone(),
            add_history_to_context: self.add_history_to_context,
            store_events: (!self.stream).then_some(false),
            client: self.client.clone(),
            ..RunRequest::default()
        }
    }

    /// The request a workflow runs (its input is stored bare, as Agno stores it).
    pub fn workflow_request(&self) -> WorkflowRunRequest {
        WorkflowRunRequest {
            input: self.input.content().cloned().unwrap_or(Value::Null),
            run_id: Some(self.run_id.clone()),
            session_id: Some(self.session_id.clone()),
            user_id: self.user_id.clone(),
            session_state: self.session_state.clone(),
            additional_data: self.additional_data.clone(),
            metadata: self.metadata.clone(),
            store_events: (!self.stream).then_some(false),
        }
    }

    /// The payload of the job that runs this in the background.
    pub fn to_payload(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|e| {
            // Every field is JSON already; a failure here is a bug, and the worker reports it.
            tracing::error!(run = %self.run_id, error = %e, "cannot encode a run spec");
            Value::Null
        })
    }

    /// The run a job asks for: its payload read as a `RunSpec` (or as the shape written before
    /// it), checked against the job's own ids. The payload's `continue` (a paused run's answers)
    /// is not part of it.
    ///
    /// # Errors
    /// [`SpecError`] naming the field that is missing or wrong, a newer version, or an unknown
    /// component kind.
    pub fn from_job(job: &Job) -> Result<Self, SpecError> {
        let kind = job.kind().ok_or_else(|| SpecError::UnknownKind(job.component_type.clone()))?;
        let Value::Object(payload) = &job.payload else {
            return Err(SpecError::field("payload", format!("must be an object, not {}", type_name(&job.payload))));
        };
        let mut payload = payload.clone();
        payload.remove("continue");
        let spec = match payload.get("version") {
            None => Self::unversioned(kind, job, &payload)?,
            Some(v) => {
                let found = v.as_u64().ok_or_else(|| SpecError::field("version", "must be a positive integer"))?;
                if found > RUN_SPEC_VERSION {
                    return Err(SpecError::NewerVersion { found });
                }
                let spec: RunSpec = serde_path_to_error::deserialize(Value::Object(payload)).map_err(|e| {
                    let field = e.path().to_string();
                    SpecError::field(
                        if field == "." { "payload".to_owned() } else { field },
                        e.into_inner().to_string(),
                    )
                })?;
                spec
            }
        };
        let checks = [
            ("kind", spec.kind.as_str(), kind.as_str()),
            ("component_id", &spec.component_id, &job.component_id),
            ("run_id", &spec.run_id, &job.id),
            ("session_id", &spec.session_id, &job.session_id),
        ];
        for (field, found, expected) in checks {
            if found != expected {
                return Err(SpecError::field(field, format!("is {found:?} but the job's is {expected:?}")));
            }
        }
        if spec.user_id != job.user_id {
            return Err(SpecError::field("user_id", "differs from the job's user"));
        }
        Ok(spec)
    }

    /// The payload agno-rs wrote before `RunSpec`: `message` (agents, teams) or `input`
    /// (workflows), and `session_state`, `dependencies`, `metadata`, `additional_data`.
    fn unversioned(kind: ComponentKind, job: &Job, payload: &Map<String, Value>) -> Result<Self, SpecError> {
        let input = match (payload.get("message"), payload.get("input")) {
            (Some(Value::String(m)), _) => RunInput::text(m.clone()),
            (Some(other), _) => {
                return Err(SpecError::field("message", format!("must be a string, not {}", type_name(other))));
            }
            (None, Some(input)) => RunInput { input_content: Some(input.clone()), ..RunInput::default() },
            (None, None) => return Err(SpecError::field("message", "is missing (and there is no `input` either)")),
        };
        let object = |field: &str| match payload.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m.clone())),
            Some(other) => Err(SpecError::field(field, format!("must be an object, not {}", type_name(other)))),
        };
        Ok(Self {
            version: RUN_SPEC_VERSION,
            kind,
            component_id: job.component_id.clone(),
            run_id: job.id.clone(),
            session_id: job.session_id.clone(),
            user_id: job.user_id.clone(),
            input,
            session_state: object("session_state")?,
            dependencies: object("dependencies")?,
            metadata: object("metadata")?,
            additional_data: object("additional_data")?,
            output_schema: None,
            add_history_to_context: None,
            stream: true,
            client: crate::ClientSide::default(),
            component_version: None,
        })
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn full_spec(kind: ComponentKind) -> RunSpec {
        let mut input = RunInput::text("hello");
        input.add_image(agno_core::Media::bytes("aGVsbG8=".to_owned(), "image/png"));
        input.add_file(agno_core::Media::bytes("JVBERg==".to_owned(), "application/pdf"));
        let object = |k: &str| json!({ k: 1 }).as_object().cloned();
        RunSpec {
            user_id: Some("ana".into()),
            session_state: object("s"),
            dependencies: object("d"),
            metadata: object("m"),
            additional_data: object("a"),
            output_schema: Some(OutputSchema::new("answer", json!({"type": "object"}))),
            add_history_to_context: Some(false),
            stream: false,
            client: crate::ClientSide { tools: vec![crate::ClientSide::tool("t", None, None)], follows_state: true },
            component_version: Some(3),
            ..RunSpec::new(kind, "c1", input)
        }
    }

    fn job_of(spec: &RunSpec, payload: Value) -> Job {
        let mut job = Job::run(spec.kind, &spec.run_id, &spec.component_id, &spec.session_id, payload);
        job.user_id.clone_from(&spec.user_id);
        job
    }

    #[test]
    fn a_spec_survives_the_job_payload_whole() {
        for kind in ComponentKind::ALL {
            let spec = full_spec(kind);
            let job = job_of(&spec, spec.to_payload());
            assert_eq!(RunSpec::from_job(&job).unwrap(), spec);
            // A continued job carries its answers beside the spec.
            let continued = Job { payload: job.continued_payload(&json!({"requirements": []})), ..job };
            assert_eq!(RunSpec::from_job(&continued).unwrap(), spec);
        }
    }

    #[test]
    fn the_request_carries_every_field() {
        let spec = full_spec(ComponentKind::Agent);
        let req = spec.request();
        assert_eq!(req.input, spec.input);
        assert_eq!(req.run_id.as_deref(), Some(spec.run_id.as_str()));
        assert_eq!(req.dependencies.unwrap().get("d"), Some(&json!(1)));
        assert_eq!(req.output_schema, spec.output_schema);
        assert_eq!(req.add_history_to_context, Some(false));
        assert_eq!(req.store_events, Some(false), "asked without streaming: no events kept");
        let wf = full_spec(ComponentKind::Workflow).workflow_request();
        assert_eq!(wf.input, json!("hello"));
        assert_eq!(wf.additional_data.unwrap().get("a"), Some(&json!(1)));
    }

    #[test]
    fn payloads_written_before_the_spec_are_read() {
        let spec = RunSpec::new(ComponentKind::Agent, "c1", RunInput::text("x"));
        let job = job_of(&spec, json!({"message": "x", "metadata": {"k": "v"}}));
        let read = RunSpec::from_job(&job).unwrap();
        assert_eq!(read.input, RunInput::text("x"));
        assert_eq!(read.metadata, json!({"k": "v"}).as_object().cloned());
        let wf = RunSpec::new(ComponentKind::Workflow, "w", RunInput::text("x"));
        let read = RunSpec::from_job(&job_of(&wf, json!({"input": {"a": 1}}))).unwrap();
        assert_eq!(read.workflow_request().input, json!({"a": 1}));
    }

    #[test]
    fn bad_payloads_name_the_field() {
        let spec = full_spec(ComponentKind::Agent);
        let mut payload = spec.to_payload();
        payload["session_state"] = json!("not an object");
        let err = RunSpec::from_job(&job_of(&spec, payload)).unwrap_err();
        assert!(err.to_string().contains("`session_state`"), "{err}");
        let mut payload = spec.to_payload();
        payload["output_schema"] = json!({"name": 3});
        let err = RunSpec::from_job(&job_of(&spec, payload)).unwrap_err();
        assert!(err.to_string().contains("`output_schema.name`"), "{err}");
        let mut payload = spec.to_payload();
        payload["version"] = json!(RUN_SPEC_VERSION + 1);
        assert_eq!(
            RunSpec::from_job(&job_of(&spec, payload)).unwrap_err(),
            SpecError::NewerVersion { found: RUN_SPEC_VERSION + 1 }
        );
        let mut payload = spec.to_payload();
        payload["run_id"] = json!("another");
        let err = RunSpec::from_job(&job_of(&spec, payload)).unwrap_err();
        assert!(err.to_string().contains("`run_id`"), "{err}");
        let err = RunSpec::from_job(&job_of(&spec, json!([1]))).unwrap_err();
        assert!(err.to_string().contains("`payload` must be an object"), "{err}");
        let err = RunSpec::from_job(&job_of(&spec, json!({"message": 5}))).unwrap_err();
        assert!(err.to_string().contains("`message` must be a string"), "{err}");
        let mut job = job_of(&spec, spec.to_payload());
        job.component_type = "robot".into();
        assert_eq!(RunSpec::from_job(&job).unwrap_err(), SpecError::UnknownKind("robot".into()));
    }
}
