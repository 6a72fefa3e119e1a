//! Learnings (`agno_learnings`), as Python Agno 3.1 keeps what its `LearningMachine` learns: one
//! row per record, its `content` a JSON object whose shape depends on `learning_type`
//! (`user_profile`, `user_memory`, `session_context`, `entity_memory`, `decision_log`, or any
//! other name). Records of the identity-keyed types have deterministic ids
//! ([`learning_id`]), so an agent's store and the REST API address the same row.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{DbError, DbErrorKind, DbResult, SortOrder};

/// One row of `agno_learnings` (Agno's 14 columns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LearningRecord {
    /// Its id: deterministic for identity-keyed types, a UUID otherwise.
    pub learning_id: String,
    /// What it is (`user_profile`, `entity_memory`, ...; free text).
    pub learning_type: String,
    /// Its namespace (entity memory: `global`, `user` or another name).
    pub namespace: Option<String>,
    /// The user it belongs to; none for an ownerless (shared) record.
    pub user_id: Option<String>,
    /// The agent that wrote it.
    pub agent_id: Option<String>,
    /// The team that wrote it.
    pub team_id: Option<String>,
    /// The workflow (never written by Agno 3.1).
    pub workflow_id: Option<String>,
    /// The session it is about (session context, decisions).
    pub session_id: Option<String>,
    /// The entity it is about (entity memory).
    pub entity_id: Option<String>,
    /// The entity's type.
    pub entity_type: Option<String>,
    /// What was learned.
    pub content: Map<String, Value>,
    /// Free metadata (written through the API).
    pub metadata: Option<Map<String, Value>>,
    /// When it was written first (epoch seconds).
    pub created_at: i64,
    /// When it last changed.
    pub updated_at: Option<i64>,
}

/// The types whose ids derive from their identity fields.
pub const IDENTITY_KEYED_LEARNING_TYPES: [&str; 4] =
    ["user_profile", "user_memory", "session_context", "entity_memory"];

/// The namespace of entity memory when none is given.
pub const DEFAULT_LEARNING_NAMESPACE: &str = "global";

fn hex_sha256(text: &str) -> String {
    use sha2::Digest;
    use std::fmt::Write;
    sha2::Sha256::digest(text.as_bytes()).iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The identity fields a learning id may derive from.
#[derive(Debug, Clone, Copy, Default)]
pub struct LearningIdentity<'a> {
    /// The owner.
    pub user_id: Option<&'a str>,
    /// The session.
    pub session_id: Option<&'a str>,
    /// The namespace (entity memory).
    pub namespace: Option<&'a str>,
    /// The entity.
    pub entity_id: Option<&'a str>,
    /// The entity's type.
    pub entity_type: Option<&'a str>,
}

/// Agno's `build_learning_id`: the deterministic id of an identity-keyed record, `None` when its
/// identity fields are missing (or the type is not identity-keyed: a UUID is used then).
pub fn learning_id(learning_type: &str, id: LearningIdentity<'_>) -> Option<String> {
    let some = |v: Option<&str>| v.filter(|s| !s.is_empty()).map(str::to_owned);
    match learning_type {
        "user_profile" => some(id.user_id).map(|u| format!("user_profile_{u}")),
        "user_memory" => some(id.user_id).map(|u| format!("memories_{u}")),
        "session_context" => some(id.session_id).map(|s| format!("session_context_{s}")),
        "entity_memory" => {
            let (entity, kind) = (some(id.entity_id)?, some(id.entity_type)?);
            let ns = some(id.namespace).unwrap_or_else(|| DEFAULT_LEARNING_NAMESPACE.to_owned());
            if ns == "user" {
                let user = some(id.user_id)?;
                Some(format!("entity_user_{}_{kind}_{entity}", &hex_sha256(&user)[..16]))
            } else {
                Some(format!("entity_{ns}_{kind}_{entity}"))
            }
        }
        _ => None,
    }
}

/// A listing of learnings (`GET /learnings`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LearningQuery {
    /// Exact-match filters.
    pub learning_type: Option<String>,
    /// The owner; with `include_global`, ownerless records too.
    pub user_id: Option<String>,
    /// Ownerless records beside the user's own.
    pub include_global: bool,
    /// Exact-match filters.
    pub agent_id: Option<String>,
    /// Exact-match filters.
    pub team_id: Option<String>,
    /// Exact-match filters.
    pub session_id: Option<String>,
    /// Exact-match filters.
    pub namespace: Option<String>,
    /// Exact-match filters.
    pub entity_id: Option<String>,
    /// Exact-match filters.
    pub entity_type: Option<String>,
    /// Page size.
    pub limit: u64,
    /// Page, from 1.
    pub page: u64,
    /// A column of [`LearningRecord`] (`updated_at` by default: `updated_at`, else `created_at`).
    pub sort_by: Option<&'static str>,
    /// Direction.
    pub sort_order: SortOrder,
}

/// The columns a learning listing may be sorted by.
pub const LEARNING_SORTABLE: [&str; 11] = [
    "learning_id",
    "learning_type",
    "namespace",
    "user_id",
    "agent_id",
    "team_id",
    "session_id",
    "entity_id",
    "entity_type",
    "created_at",
    "updated_at",
];

/// One user holding learnings (`GET /learnings/users`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LearningUser {
    /// The user.
    pub user_id: String,
    /// When their newest learning changed.
    pub last_learning_updated_at: Option<i64>,
}

fn unsupported() -> DbError {
    DbError::new(DbErrorKind::Unsupported, "Learnings not supported by the configured database")
}

/// Where learnings are kept. The SQL databases keep them; the document databases and Redis
/// answer [`DbErrorKind::Unsupported`] (Agno's 501), as Python Agno's do.
#[async_trait::async_trait]
pub trait LearningStore: Send + Sync {
    /// Writes `record`: a new row, or the existing one's `content`, `metadata` and `updated_at`
    /// (its identity and `created_at` unchanged).
    ///
    /// # Errors
    /// A storage error.
    async fn upsert_learning(&self, record: &LearningRecord) -> DbResult<()> {
        let _ = record;
        Err(unsupported())
    }

    /// The record `id`.
    ///
    /// # Errors
    /// A storage error.
    async fn get_learning_by_id(&self, id: &str) -> DbResult<Option<LearningRecord>> {
        let _ = id;
        Err(unsupported())
    }

    /// A page of records and how many match.
    ///
    /// # Errors
    /// A storage error.
    async fn list_learnings(&self, q: &LearningQuery) -> DbResult<(Vec<LearningRecord>, u64)> {
        let _ = q;
        Err(unsupported())
    }

    /// Replaces the `content` and `metadata` of record `id` at `now`; whether it exists.
    ///
    /// # Errors
    /// A storage error.
    async fn update_learning(
        &self,
        id: &str,
        content: &Map<String, Value>,
        metadata: Option<&Map<String, Value>>,
        now: i64,
    ) -> DbResult<bool> {
        let _ = (id, content, metadata, now);
        Err(unsupported())
    }

    /// Deletes record `id`; whether it existed.
    ///
    /// # Errors
    /// A storage error.
    async fn delete_learning(&self, id: &str) -> DbResult<bool> {
        let _ = id;
        Err(unsupported())
    }

    /// Deletes `user_id`'s records (of `learning_type` only, when given); how many.
    ///
    /// # Errors
    /// A storage error.
    async fn delete_user_learnings(&self, user_id: &str, learning_type: Option<&str>) -> DbResult<u64> {
        let _ = (user_id, learning_type);
        Err(unsupported())
    }

    /// The users holding records (of `learning_type`; only `user_id` when given) with their
    /// newest change, a page of them sorted by `user_id` or `last_learning_updated_at`, and how
    /// many there are.
    ///
    /// # Errors
    /// A storage error.
    async fn learning_users(
        &self,
        learning_type: Option<&str>,
        user_id: Option<&str>,
        by_user: bool,
        order: SortOrder,
        limit: u64,
        page: u64,
    ) -> DbResult<(Vec<LearningUser>, u64)> {
        let _ = (learning_type, user_id, by_user, order, limit, page);
        Err(unsupported())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_agnos() {
        let ann = LearningIdentity { user_id: Some("ann"), ..Default::default() };
        assert_eq!(learning_id("user_profile", ann).unwrap(), "user_profile_ann");
        assert_eq!(learning_id("user_memory", ann).unwrap(), "memories_ann");
        let entity = LearningIdentity {
            user_id: Some("ann"),
            namespace: Some("user"),
            entity_id: Some("acme_corp"),
            entity_type: Some("company"),
            ..Default::default()
        };
        // As Python Agno 3.1 computes it (sha256("ann")[:16]).
        assert_eq!(learning_id("entity_memory", entity).unwrap(), "entity_user_49915e0d7d4b402e_company_acme_corp");
        let global = LearningIdentity { namespace: None, ..entity };
        assert_eq!(learning_id("entity_memory", global).unwrap(), "entity_global_company_acme_corp");
        assert!(learning_id("user_profile", LearningIdentity::default()).is_none());
        assert!(learning_id("decision_log", ann).is_none());
        assert_eq!(hex_sha256(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
