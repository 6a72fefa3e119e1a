//! [`EventStream`]: the events of a run of any component (an agent's [`RunEvent`]s, a team's or a
//! workflow's stream events) as they happen, and the run's output once it ends. The run executes
//! on its own task: dropping the stream does not stop it, and it is stored as usual.
//!
//! [`RunEvent`]: agno_core::RunEvent

use std::pin::Pin;
use std::task::{Context, Poll};

use agno_core::RunOutput;
use futures::Stream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::error::RunError;

/// The task executing a run.
pub(crate) type RunTask = JoinHandle<Result<RunOutput, RunError>>;

/// Where the events come from: a bounded channel holds the run back when its reader is slow; an
/// unbounded one never does.
enum Events<E> {
    Bounded(mpsc::Receiver<E>),
    Unbounded(mpsc::UnboundedReceiver<E>),
}

impl<E> Events<E> {
    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<E>> {
        match self {
            Events::Bounded(rx) => rx.poll_recv(cx),
            Events::Unbounded(rx) => rx.poll_recv(cx),
        }
    }

    fn close(&mut self) {
        match self {
            Events::Bounded(rx) => rx.close(),
            Events::Unbounded(rx) => rx.close(),
        }
    }

    async fn recv(&mut self) -> Option<E> {
        match self {
            Events::Bounded(rx) => rx.recv().await,
            Events::Unbounded(rx) => rx.recv().await,
        }
    }
}

/// A run's events as they happen; [`EventStream::output`] waits for the run and gives its record.
/// `E` is the component's event type (see [`crate::RunStream`], [`crate::team::TeamStream`],
/// [`crate::workflow::WorkflowStream`]).
pub struct EventStream<E> {
    events: Events<E>,
    task: Option<RunTask>,
}

impl<E> std::fmt::Debug for EventStream<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream").field("running", &self.task.is_some()).finish_non_exhaustive()
    }
}

impl<E> EventStream<E> {
    /// The events of `task` from a bounded channel.
    pub(crate) fn bounded(events: mpsc::Receiver<E>, task: Option<RunTask>) -> Self {
        Self { events: Events::Bounded(events), task }
    }

    /// The events of `task` from an unbounded channel.
    pub(crate) fn unbounded(events: mpsc::UnboundedReceiver<E>, task: Option<RunTask>) -> Self {
        Self { events: Events::Unbounded(events), task }
    }

    /// Waits for the run to end (dropping the events not read) and returns its record.
    ///
    /// # Errors
    /// The run's [`RunError`]; [`RunError::Internal`] when its task could not be started or
    /// panicked.
    pub async fn output(mut self) -> Result<RunOutput, RunError> {
        self.events.close();
        while self.events.recv().await.is_some() {}
        match self.task.take() {
            Some(task) => task.await.map_err(|e| RunError::Internal(e.to_string()))?,
            None => Err(RunError::Internal("the run could not be started".to_owned())),
        }
    }
}

impl<E> Stream for EventStream<E> {
    type Item = E;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<E>> {
        self.events.poll_recv(cx)
    }
}

// Neither field is pinned.
impl<E> Unpin for EventStream<E> {}

/// Spawns a run's future on the current runtime (else the shared one); `None` (logged) when no
/// runtime can take it.
pub(crate) fn spawn_run<F>(what: &str, fut: F) -> Option<RunTask>
where
    F: std::future::Future<Output = Result<RunOutput, RunError>> + Send + 'static,
{
    match crate::blocking::spawn_handle() {
        Ok(handle) => Some(handle.spawn(crate::trace::propagate(fut))),
        Err(e) => {
            tracing::error!(error = %e, "cannot spawn {what}");
            None
        }
    }
}
