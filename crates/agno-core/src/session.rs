//! Agent sessions, shaped as Agno's `AgentSession.to_dict()` (one `agno_sessions` row).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::clock::now_epoch_secs;
use crate::message::Message;
use crate::run::RunOutput;

/// The kind of component a session belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionType {
    /// An agent session.
    Agent,
    /// A team session.
    Team,
    /// A workflow session.
    Workflow,
}

impl SessionType {
    /// The stored value (`"agent"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            SessionType::Agent => "agent",
            SessionType::Team => "team",
            SessionType::Workflow => "workflow",
        }
    }
}

/// A summary of a session, written by the session summary manager.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionSummary {
    /// The summary text.
    pub summary: String,
    /// Topics discussed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topics: Option<Vec<String>>,
    /// When it was written (ISO-8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

/// A conversation with an agent: its state, metadata and runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSession {
    /// Session id.
    pub session_id: String,
    /// Agent id.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Team id, for sessions of team members.
    #[serde(default)]
    pub team_id: Option<String>,
    /// User id.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Workflow id, for sessions of workflow steps.
    #[serde(default)]
    pub workflow_id: Option<String>,
    /// `session_name`, `session_state`, `session_metrics`, ...
    #[serde(default)]
    pub session_data: Option<Map<String, Value>>,
    /// Metadata.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// `{"name", "agent_id", "model": {"name","id","provider"}}`.
    #[serde(default)]
    pub agent_data: Option<Map<String, Value>>,
    /// The runs, oldest first. Not stored in the session row: runs live in the runs table.
    #[serde(default)]
    pub runs: Option<Vec<RunOutput>>,
    /// Summary.
    #[serde(default)]
    pub summary: Option<SessionSummary>,
    /// Epoch seconds.
    #[serde(default)]
    pub created_at: Option<i64>,
    /// Epoch seconds.
    #[serde(default)]
    pub updated_at: Option<i64>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AgentSession {
    /// A new, empty session.
    pub fn new(session_id: impl Into<String>) -> Self {
        let now = now_epoch_secs();
        Self {
            session_id: session_id.into(),
            agent_id: None,
            team_id: None,
            user_id: None,
            workflow_id: None,
            session_data: None,
            metadata: None,
            agent_data: None,
            runs: None,
            summary: None,
            created_at: Some(now),
            updated_at: Some(now),
            extra: Map::new(),
        }
    }

    /// The kind of component the session belongs to: an agent when it has an `agent_id` (a
    /// team member's session too), else a team, else a workflow; an agent when it has no ids.
    pub fn session_type(&self) -> SessionType {
        if self.agent_id.is_some() {
            SessionType::Agent
        } else if self.team_id.is_some() {
            SessionType::Team
        } else if self.workflow_id.is_some() {
            SessionType::Workflow
        } else {
            SessionType::Agent
        }
    }

    /// The persisted `session_state`, if any.
    pub fn session_state(&self) -> Option<&Map<String, Value>> {
        self.session_data.as_ref()?.get("session_state")?.as_object()
    }

    /// Replaces the persisted `session_state`.
    pub fn set_session_state(&mut self, state: Map<String, Value>) {
        self.session_data.get_or_insert_with(Map::new).insert("session_state".to_owned(), Value::Object(state));
    }

    /// The session name, if set.
    pub fn session_name(&self) -> Option<&str> {
        self.session_data.as_ref()?.get("session_name")?.as_str()
    }

    /// The runs, or an empty slice.
    pub fn runs(&self) -> &[RunOutput] {
        self.runs.as_deref().unwrap_or_default()
    }

    /// Messages of the last `last_n_runs` runs for history, as Agno's `get_messages`: skips runs
    /// whose status is skipped in history, system messages and messages that were themselves
    /// history; keeps at most `limit` messages (the most recent).
    pub fn history_messages(&self, last_n_runs: Option<usize>, limit: Option<usize>) -> Vec<Message> {
        let runs: Vec<&RunOutput> =
            self.runs().iter().filter(|r| !r.status.skipped_in_history() && r.parent_run_id.is_none()).collect();
        let start = last_n_runs.map_or(0, |n| runs.len().saturating_sub(n));
        let mut out: Vec<Message> = runs[start..]
            .iter()
            .flat_map(|r| r.messages().iter())
            .filter(|m| m.role != crate::message::Role::System && !m.from_history)
            .cloned()
            .collect();
        if let Some(limit) = limit {
            let skip = out.len().saturating_sub(limit);
            out.drain(..skip);
        }
        // A cut may separate a call from its result: never send an unmatched call or result.
        crate::message::pair_tool_calls(&mut out);
        for m in &mut out {
            m.from_history = true;
        }
        out
    }
}

/// A field of a session that a search filters on (`POST /sessions/search`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionField {
    /// `session_id`.
    SessionId,
    /// `session_name` (in `session_data`).
    SessionName,
    /// `session_type`: `agent`, `team` or `workflow`.
    SessionType,
    /// `user_id`.
    UserId,
    /// `agent_id`.
    AgentId,
    /// `team_id`.
    TeamId,
    /// `workflow_id`.
    WorkflowId,
    /// `created_at` (epoch seconds).
    CreatedAt,
    /// `updated_at` (epoch seconds).
    UpdatedAt,
}

impl crate::FilterField for SessionField {
    const ALL: &'static [SessionField] = &[
        SessionField::SessionType,
        SessionField::UserId,
        SessionField::AgentId,
        SessionField::TeamId,
        SessionField::WorkflowId,
        SessionField::SessionId,
        SessionField::SessionName,
        SessionField::CreatedAt,
        SessionField::UpdatedAt,
    ];

    fn column(self) -> &'static str {
        match self {
            SessionField::SessionId => "session_id",
            SessionField::SessionName => "session_name",
            SessionField::SessionType => "session_type",
            SessionField::UserId => "user_id",
            SessionField::AgentId => "agent_id",
            SessionField::TeamId => "team_id",
            SessionField::WorkflowId => "workflow_id",
            SessionField::CreatedAt => "created_at",
            SessionField::UpdatedAt => "updated_at",
        }
    }
}

impl SessionField {
    /// True for the times (compared as epoch seconds).
    pub fn is_time(self) -> bool {
        matches!(self, SessionField::CreatedAt | SessionField::UpdatedAt)
    }

    /// The field's value in `session` (times as numbers, the rest as text).
    pub fn value_in(self, session: &AgentSession) -> Option<crate::FilterValue> {
        use crate::FilterValue::{Number, Text};
        let text = |s: &Option<String>| s.clone().map(Text);
        #[allow(clippy::cast_precision_loss)]
        let time = |t: Option<i64>| t.map(|t| Number(t as f64));
        match self {
            SessionField::SessionId => Some(Text(session.session_id.clone())),
            SessionField::SessionName => session.session_name().map(|n| Text(n.to_owned())),
            SessionField::SessionType => Some(Text(session.session_type().as_str().to_owned())),
            SessionField::UserId => text(&session.user_id),
            SessionField::AgentId => text(&session.agent_id),
            SessionField::TeamId => text(&session.team_id),
            SessionField::WorkflowId => text(&session.workflow_id),
            SessionField::CreatedAt => time(session.created_at),
            SessionField::UpdatedAt => time(session.updated_at),
        }
    }
}
