//! The request bodies of the session routes, described for the OpenAPI document. Their handlers
//! read the JSON field by field (to name the field that is wrong); these types list the same
//! fields, and a test checks each documented field is accepted.

use schemars::JsonSchema;
use serde_json::{Map, Value};

/// Body of `POST /sessions` (Agno's `CreateSessionRequest`); every field optional.
#[derive(Debug, JsonSchema)]
#[allow(dead_code)]
pub struct CreateSessionRequest {
    /// Id of the new session (generated when absent).
    pub session_id: Option<String>,
    /// Display name.
    pub session_name: Option<String>,
    /// Initial session state.
    pub session_state: Option<Map<String, Value>>,
    /// Metadata.
    pub metadata: Option<Map<String, Value>>,
    /// Owner (the caller's `sub` under user isolation).
    pub user_id: Option<String>,
    /// The agent (for `type=agent`).
    pub agent_id: Option<String>,
    /// The team (for `type=team`).
    pub team_id: Option<String>,
    /// The workflow (for `type=workflow`).
    pub workflow_id: Option<String>,
}

/// Body of `PATCH /sessions/{session_id}` (Agno's `UpdateSessionRequest`).
#[derive(Debug, JsonSchema)]
#[allow(dead_code)]
pub struct UpdateSessionRequest {
    /// New name.
    pub session_name: Option<String>,
    /// Replaces the session state.
    pub session_state: Option<Map<String, Value>>,
    /// Replaces the metadata.
    pub metadata: Option<Map<String, Value>>,
    /// Replaces the summary.
    pub summary: Option<agno_core::SessionSummary>,
}

/// Body of `POST /sessions/{session_id}/rename`.
#[derive(Debug, JsonSchema)]
#[allow(dead_code)]
pub struct RenameSessionRequest {
    /// The new name.
    pub session_name: String,
}

/// Body of `DELETE /sessions` (Agno's `DeleteSessionRequest`).
#[derive(Debug, JsonSchema)]
#[allow(dead_code)]
pub struct DeleteSessionsRequest {
    /// The sessions to delete.
    #[schemars(length(min = 1))]
    pub session_ids: Vec<String>,
    /// Their types (`agent`, `team`, `workflow`), one per id.
    #[schemars(length(min = 1))]
    pub session_types: Vec<SessionTypeName>,
}

/// `agent`, `team` or `workflow`.
#[derive(Debug, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum SessionTypeName {
    /// An agent's session.
    Agent,
    /// A team's session.
    Team,
    /// A workflow's session.
    Workflow,
}
