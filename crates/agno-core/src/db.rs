//! Storage traits, split by area. `Db` is their union; code asks for the narrowest trait it uses.
//!
//! Every user-facing read and write takes an optional `user_id`; when given, rows of other users
//! are never returned or touched. Adapters live in `agno-db`.

use async_trait::async_trait;

use crate::error::DbError;
use crate::run::{RunOutput, RunStatus};
use crate::session::AgentSession;

/// Result of a storage call.
pub type DbResult<T> = Result<T, DbError>;

/// Sort direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortOrder {
    /// Oldest first.
    Asc,
    /// Newest first.
    #[default]
    Desc,
}

/// Filters for [`RunStore::get_runs`].
#[derive(Debug, Clone, Default)]
pub struct RunQuery {
    /// Only runs of this session.
    pub session_id: Option<String>,
    /// Only runs of this user.
    pub user_id: Option<String>,
    /// Only runs of this agent.
    pub agent_id: Option<String>,
    /// Only runs with this status.
    pub status: Option<RunStatus>,
    /// At most this many runs.
    pub limit: Option<usize>,
    /// Order by `run_index` / `created_at`.
    pub sort: SortOrder,
}

/// Filters for [`SessionStore::get_sessions`].
#[derive(Debug, Clone, Default)]
pub struct SessionQuery {
    /// Only sessions of this user.
    pub user_id: Option<String>,
    /// Only sessions of this agent.
    pub agent_id: Option<String>,
    /// At most this many sessions.
    pub limit: Option<usize>,
}

/// Sessions: one row each, without their runs.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Reads a session with its runs attached (the latest `runs_limit` when given).
    ///
    /// # Errors
    /// A [`DbError`]; a missing session is `Ok(None)`, never an error and never a fresh session.
    async fn get_session(
        &self,
        session_id: &str,
        user_id: Option<&str>,
        runs_limit: Option<usize>,
    ) -> DbResult<Option<AgentSession>>;

    /// Inserts or updates the session row. Never writes runs.
    ///
    /// # Errors
    /// [`DbErrorKind::Conflict`](crate::DbErrorKind::Conflict) when the session belongs to
    /// another user.
    async fn upsert_session(&self, session: &AgentSession) -> DbResult<()>;

    /// Lists sessions without reading run bodies.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn get_sessions(&self, query: &SessionQuery) -> DbResult<Vec<AgentSession>>;

    /// Deletes a session and its runs; false when nothing matched.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn delete_session(&self, session_id: &str, user_id: Option<&str>) -> DbResult<bool>;
}

/// Runs: one row each, `run_index` assigned per session on first write.
#[async_trait]
pub trait RunStore: Send + Sync {
    /// Inserts or updates one run; returns its `run_index` (kept on update).
    ///
    /// # Errors
    /// A [`DbError`].
    async fn upsert_run(&self, run: &RunOutput, session_id: &str, user_id: Option<&str>) -> DbResult<i64>;

    /// Reads one run.
    ///
    /// # Errors
    /// A [`DbError`]; a missing run is `Ok(None)`.
    async fn get_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<RunOutput>>;

    /// Lists runs.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn get_runs(&self, query: &RunQuery) -> DbResult<Vec<RunOutput>>;

    /// Deletes one run; false when nothing matched.
    ///
    /// # Errors
    /// A [`DbError`].
    async fn delete_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<bool>;
}

/// A complete storage backend.
pub trait Db: SessionStore + RunStore + std::fmt::Debug {}

impl<T: SessionStore + RunStore + std::fmt::Debug> Db for T {}
