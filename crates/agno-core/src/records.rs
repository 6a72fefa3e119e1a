//! Eval runs and knowledge contents, as Agno stores them (`agno_eval_runs`, `agno_knowledge`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Kind of evaluation (`EvalType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum EvalType {
    /// Accuracy eval.
    Accuracy,
    /// LLM-as-judge eval.
    AgentAsJudge,
    /// Performance eval.
    Performance,
    /// Reliability eval.
    Reliability,
}

impl EvalType {
    /// The stored value.
    pub fn as_str(self) -> &'static str {
        match self {
            EvalType::Accuracy => "accuracy",
            EvalType::AgentAsJudge => "agent_as_judge",
            EvalType::Performance => "performance",
            EvalType::Reliability => "reliability",
        }
    }
}

/// Which kind of component an eval listing is restricted to (`EvalFilterType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvalFilterType {
    /// Evals of agents (`agent_id` set).
    Agent,
    /// Evals of teams (`team_id` set).
    Team,
    /// Evals of workflows (`workflow_id` set).
    Workflow,
}

/// One evaluation run (`EvalRunRecord`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalRunRecord {
    /// Eval run id.
    pub run_id: String,
    /// Kind of eval.
    pub eval_type: EvalType,
    /// Results.
    pub eval_data: Map<String, Value>,
    /// Inputs.
    #[serde(default)]
    pub eval_input: Option<Map<String, Value>>,
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
    /// Evaluated agent.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Evaluated team.
    #[serde(default)]
    pub team_id: Option<String>,
    /// Evaluated workflow.
    #[serde(default)]
    pub workflow_id: Option<String>,
    /// Model id.
    #[serde(default)]
    pub model_id: Option<String>,
    /// Model provider.
    #[serde(default)]
    pub model_provider: Option<String>,
    /// Name of the evaluated component.
    #[serde(default)]
    pub evaluated_component_name: Option<String>,
    /// Owner (v3).
    #[serde(default)]
    pub user_id: Option<String>,
    /// Epoch seconds.
    #[serde(default)]
    pub created_at: Option<i64>,
    /// Epoch seconds.
    #[serde(default)]
    pub updated_at: Option<i64>,
}

/// A knowledge content row (`KnowledgeRow`). `user_id = None` means shared with every user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeRow {
    /// Content id (generated when missing on write).
    #[serde(default)]
    pub id: Option<String>,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// Content type (`pdf`, `url`, ...).
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// Size in bytes.
    #[serde(default)]
    pub size: Option<i64>,
    /// The knowledge instance it belongs to.
    #[serde(default)]
    pub linked_to: Option<String>,
    /// How often it was read.
    #[serde(default)]
    pub access_count: Option<i64>,
    /// Processing status.
    #[serde(default)]
    pub status: Option<String>,
    /// Status details.
    #[serde(default)]
    pub status_message: Option<String>,
    /// Uploader; `None` = shared.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Epoch seconds.
    #[serde(default)]
    pub created_at: Option<i64>,
    /// Epoch seconds.
    #[serde(default)]
    pub updated_at: Option<i64>,
    /// Id in an external system.
    #[serde(default)]
    pub external_id: Option<String>,
}
