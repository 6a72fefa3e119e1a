//! Write fencing for runs executed on behalf of a lease (a background job claimed by a worker):
//! each write of the run goes through the fence, which stores it only while this execution still
//! owns the run, checking ownership and writing in one atomic step; a stale execution writes
//! nothing.

use std::sync::Arc;

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

/// What guards a background run: the worker's claim, which every write of the run goes through
/// (a worker that lost it writes nothing and stops), and the last `event_index` an earlier
/// attempt logged (this one numbers its events after it).
#[derive(Default, Clone)]
pub struct Durable {
    /// The claim.
    pub fence: Option<Arc<dyn RunFence>>,
    /// The last logged `event_index`.
    pub after_event_index: Option<u64>,
}

impl std::fmt::Debug for Durable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Durable")
            .field("fenced", &self.fence.is_some())
            .field("after_event_index", &self.after_event_index)
            .finish()
    }
}
