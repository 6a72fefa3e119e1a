//! Write fencing for runs executed on behalf of a lease (a background job claimed by a worker):
//! each write of the run goes through the fence, which stores it only while this execution still
//! owns the run, checking ownership and writing in one atomic step; a stale execution writes
//! nothing.

use agno_core::{DbError, RunWrite};
use async_trait::async_trait;

/// Stores a run's writes only while the execution owns the run.
#[async_trait]
pub trait RunFence: Send + Sync + std::fmt::Debug {
    /// Stores the run's session and run if, and only if, this execution still owns the run (e.g.
    /// its worker still holds the job's lease), with the check and the writes in one transaction.
    /// `Ok(false)`: it no longer does, and nothing was written.
    ///
    /// # Errors
    /// A [`DbError`] from the store; nothing is written then either.
    async fn save(&self, write: RunWrite<'_>) -> Result<bool, DbError>;
}
