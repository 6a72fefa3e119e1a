//! Write fencing for runs executed on behalf of a lease (a background job claimed by a worker):
//! before each write of the run, the fence is asked whether this execution still owns it, and a
//! stale one writes nothing.

use async_trait::async_trait;

/// Decides whether an execution may still write its run.
#[async_trait]
pub trait RunFence: Send + Sync + std::fmt::Debug {
    /// True while this execution owns the run (e.g. its worker still holds the job's lease).
    async fn still_owner(&self) -> bool;
}
