//! Approvals: the record a run writes when it pauses on a tool that needs an admin's decision
//! (Agno's `@approval`, `approval_type = "required"`), or after a person decided on a tool whose
//! decision is only recorded (`"audit"`); Agno's `agno_approvals` row, and its store.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// An approval waits for a decision.
pub const APPROVAL_PENDING: &str = "pending";
/// An approval was granted.
pub const APPROVAL_APPROVED: &str = "approved";
/// An approval was refused.
pub const APPROVAL_REJECTED: &str = "rejected";
/// An approval passed its `expires_at` undecided.
pub const APPROVAL_EXPIRED: &str = "expired";
/// An approval whose run went away.
pub const APPROVAL_CANCELLED: &str = "cancelled";
/// The statuses an approval can have, as Agno lists them.
pub const APPROVAL_STATUSES: [&str; 5] =
    [APPROVAL_PENDING, APPROVAL_APPROVED, APPROVAL_REJECTED, APPROVAL_EXPIRED, APPROVAL_CANCELLED];

/// What a tool's approval asks for (Agno's `ApprovalType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalType {
    /// The run pauses until an admin resolves the approval through `/approvals`.
    Required,
    /// Nothing blocks: the decision a person made on the (paused) call is recorded.
    Audit,
}

impl ApprovalType {
    /// Agno's name: `required` or `audit`.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalType::Required => "required",
            ApprovalType::Audit => "audit",
        }
    }

    /// The type named `name`, if it is one.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "required" => Some(ApprovalType::Required),
            "audit" => Some(ApprovalType::Audit),
            _ => None,
        }
    }
}

/// One row of `agno_approvals`, with Agno's 25 keys (epoch seconds for times).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRecord {
    /// The approval's id.
    pub id: String,
    /// The run that paused (a member's own run when a team member paused).
    pub run_id: String,
    /// The run's session.
    pub session_id: String,
    /// One of [`APPROVAL_STATUSES`].
    pub status: String,
    /// `agent`, `team` or `workflow`.
    pub source_type: String,
    /// `required` or `audit`.
    pub approval_type: Option<String>,
    /// `confirmation`, `user_input` or `external_execution`.
    pub pause_type: String,
    /// The first tool the approval covers.
    pub tool_name: Option<String>,
    /// Its arguments.
    pub tool_args: Option<Map<String, Value>>,
    /// When the approval expires undecided (epoch seconds).
    pub expires_at: Option<i64>,
    /// The agent that paused.
    pub agent_id: Option<String>,
    /// The team that paused.
    pub team_id: Option<String>,
    /// The workflow that paused.
    pub workflow_id: Option<String>,
    /// The user whose run asked.
    pub user_id: Option<String>,
    /// The schedule whose firing started the run.
    pub schedule_id: Option<String>,
    /// That firing.
    pub schedule_run_id: Option<String>,
    /// The component's name.
    pub source_name: Option<String>,
    /// The paused requirements this approval covers (`RunRequirement::to_dict` each).
    pub requirements: Option<Vec<Value>>,
    /// `{"tool_names": [...], "source_name": ...}`.
    pub context: Option<Map<String, Value>>,
    /// What the resolver supplied: `values` for user input, `result` for an external execution.
    pub resolution_data: Option<Map<String, Value>>,
    /// Who resolved it.
    pub resolved_by: Option<String>,
    /// When (epoch seconds).
    pub resolved_at: Option<i64>,
    /// Epoch seconds.
    pub created_at: i64,
    /// Epoch seconds.
    pub updated_at: Option<i64>,
    /// The status of the run it belongs to (`PAUSED`, `COMPLETED`, ...), kept current as the
    /// run is stored.
    pub run_status: Option<String>,
}

impl ApprovalRecord {
    /// Whether it waits for a decision.
    pub fn is_pending(&self) -> bool {
        self.status == APPROVAL_PENDING
    }

    /// Whether it is pending past its `expires_at` at `now` (epoch seconds).
    pub fn expired_at(&self, now: i64) -> bool {
        self.is_pending() && self.expires_at.is_some_and(|at| at <= now)
    }

    /// The tool call ids its requirements name (empty when they name none).
    pub fn tool_call_ids(&self) -> Vec<&str> {
        self.requirements
            .iter()
            .flatten()
            .filter_map(|r| r.get("tool_execution")?.get("tool_call_id")?.as_str())
            .collect()
    }
}

/// Filters and paging for [`ApprovalStore::get_approvals`] (newest `created_at` first).
#[derive(Debug, Clone, Default)]
pub struct ApprovalQuery {
    /// Only approvals with this status.
    pub status: Option<String>,
    /// Only of this source type.
    pub source_type: Option<String>,
    /// Only of this approval type.
    pub approval_type: Option<String>,
    /// Only of this pause type.
    pub pause_type: Option<String>,
    /// Only this agent's.
    pub agent_id: Option<String>,
    /// Only this team's.
    pub team_id: Option<String>,
    /// Only this workflow's.
    pub workflow_id: Option<String>,
    /// Only this user's (a scoped caller's own), compared byte for byte.
    pub user_id: Option<String>,
    /// Only this schedule's.
    pub schedule_id: Option<String>,
    /// Only this run's.
    pub run_id: Option<String>,
    /// Page size.
    pub limit: Option<usize>,
    /// 1-based page.
    pub page: Option<usize>,
}

impl ApprovalQuery {
    /// The columns and values it filters on, in table order.
    pub fn equalities(&self) -> [(&'static str, Option<&str>); 10] {
        [
            ("run_id", self.run_id.as_deref()),
            ("status", self.status.as_deref()),
            ("source_type", self.source_type.as_deref()),
            ("approval_type", self.approval_type.as_deref()),
            ("pause_type", self.pause_type.as_deref()),
            ("agent_id", self.agent_id.as_deref()),
            ("team_id", self.team_id.as_deref()),
            ("workflow_id", self.workflow_id.as_deref()),
            ("user_id", self.user_id.as_deref()),
            ("schedule_id", self.schedule_id.as_deref()),
        ]
    }

    /// Whether `a` passes every filter but the paging.
    pub fn matches(&self, a: &ApprovalRecord) -> bool {
        let field = |column: &str| -> Option<&str> {
            match column {
                "run_id" => Some(&a.run_id),
                "status" => Some(&a.status),
                "source_type" => Some(&a.source_type),
                "approval_type" => a.approval_type.as_deref(),
                "pause_type" => Some(&a.pause_type),
                "agent_id" => a.agent_id.as_deref(),
                "team_id" => a.team_id.as_deref(),
                "workflow_id" => a.workflow_id.as_deref(),
                "user_id" => a.user_id.as_deref(),
                "schedule_id" => a.schedule_id.as_deref(),
                _ => None,
            }
        };
        self.equalities().iter().all(|(column, want)| want.is_none_or(|w| field(column) == Some(w)))
    }
}

/// A decision on a pending approval.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalDecision {
    /// [`APPROVAL_APPROVED`] or [`APPROVAL_REJECTED`].
    pub status: String,
    /// Who decided.
    pub resolved_by: Option<String>,
    /// What they supplied.
    pub resolution_data: Option<Map<String, Value>>,
    /// When (epoch seconds): also the time expiry is judged at.
    pub resolved_at: i64,
}

/// What [`ApprovalStore::resolve_approval`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    /// The approval was pending and now holds the decision.
    Done(Box<ApprovalRecord>),
    /// No approval has that id.
    NotFound,
    /// The approval is no longer pending (its status says why; an approval found past its
    /// `expires_at` is marked `expired` first).
    NotPending(Box<ApprovalRecord>),
}

/// Storage of approvals (`agno_approvals`).
#[async_trait::async_trait]
pub trait ApprovalStore: Send + Sync {
    /// Writes a new approval.
    ///
    /// # Errors
    /// A [`crate::DbError`] (a `Conflict` when the id exists); nothing is written then.
    async fn create_approval(&self, approval: &ApprovalRecord) -> crate::DbResult<()>;

    /// One approval by id.
    ///
    /// # Errors
    /// A [`crate::DbError`]; missing is `Ok(None)`.
    async fn get_approval(&self, id: &str) -> crate::DbResult<Option<ApprovalRecord>>;

    /// A page of approvals, newest first, and how many match.
    ///
    /// # Errors
    /// A [`crate::DbError`] (never an empty page in its place: the continue gate reads this).
    async fn get_approvals(&self, query: &ApprovalQuery) -> crate::DbResult<(Vec<ApprovalRecord>, u64)>;

    /// Records `decision` if the approval is still pending and not past its `expires_at`: one
    /// compare-and-set, so of two concurrent decisions exactly one wins.
    ///
    /// # Errors
    /// A [`crate::DbError`]; nothing changed then.
    async fn resolve_approval(&self, id: &str, decision: &ApprovalDecision) -> crate::DbResult<Resolved>;

    /// Deletes an approval; whether it existed.
    ///
    /// # Errors
    /// A [`crate::DbError`].
    async fn delete_approval(&self, id: &str) -> crate::DbResult<bool>;

    /// How many approvals are pending (of `user_id`, when given).
    ///
    /// # Errors
    /// A [`crate::DbError`].
    async fn count_pending_approvals(&self, user_id: Option<&str>) -> crate::DbResult<u64>;

    /// Sets `run_status` (and `updated_at`) on every approval of `run_id`; how many.
    ///
    /// # Errors
    /// A [`crate::DbError`].
    async fn set_approval_run_status(&self, run_id: &str, run_status: &str, now: i64) -> crate::DbResult<u64>;

    /// Marks `expired` every pending approval whose `expires_at` is at or before `now`; how many.
    ///
    /// # Errors
    /// A [`crate::DbError`].
    async fn expire_approvals(&self, now: i64) -> crate::DbResult<u64>;
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    fn record() -> ApprovalRecord {
        serde_json::from_value(serde_json::json!({
            "id": "a1", "run_id": "r1", "session_id": "s1", "status": "pending", "source_type": "agent",
            "approval_type": "required", "pause_type": "confirmation", "tool_name": "t", "tool_args": {"x": 1},
            "expires_at": 100, "agent_id": "ag", "team_id": null, "workflow_id": null, "user_id": "u",
            "schedule_id": null, "schedule_run_id": null, "source_name": "Ag",
            "requirements": [{"tool_execution": {"tool_call_id": "c1"}}], "context": {"tool_names": ["t"]},
            "resolution_data": null, "resolved_by": null, "resolved_at": null, "created_at": 5,
            "updated_at": null, "run_status": "PAUSED"
        }))
        .expect("an Agno approval dict reads")
    }

    #[test]
    fn reads_and_writes_agnos_25_keys() {
        let a = record();
        let back = serde_json::to_value(&a).expect("serializes");
        assert_eq!(back.as_object().map(Map::len), Some(25));
        assert_eq!(a.tool_call_ids(), ["c1"]);
    }

    #[test]
    fn expiry_and_filters() {
        let a = record();
        assert!(!a.expired_at(99));
        assert!(a.expired_at(100));
        let q = ApprovalQuery { user_id: Some("u".into()), status: Some("pending".into()), ..Default::default() };
        assert!(q.matches(&a));
        let other = ApprovalQuery { user_id: Some("U".into()), ..Default::default() };
        assert!(!other.matches(&a));
    }
}
