//! [`StreamEvent`]: what every component's run events have in common (an agent's [`RunEvent`], a
//! team's [`TeamStreamEvent`], a workflow's [`WorkflowStreamEvent`]), so that streaming them as
//! SSE, logging them durably and replaying them is written once.

use std::borrow::Cow;

use crate::{RunEvent, TeamStreamEvent, WorkflowStreamEvent};

/// An event of a run's stream, of any component kind.
pub trait StreamEvent: serde::Serialize + Send + 'static {
    /// Agno's name for the event (`RunContent`, `TeamRunContent`, `StepStarted`, ...): the SSE
    /// frame's `event:` line and the logged event's name.
    fn stream_name(&self) -> Cow<'static, str>;
    /// Its position in the run's stream (the SSE frame's `id:`).
    fn stream_index(&self) -> Option<u64>;
    /// When it happened, in epoch seconds.
    fn created_at(&self) -> i64;
    /// Whether it ends the run (completed, errored, cancelled or paused).
    fn ends_run(&self) -> bool;
}

impl StreamEvent for RunEvent {
    fn stream_name(&self) -> Cow<'static, str> {
        self.name().into()
    }
    fn stream_index(&self) -> Option<u64> {
        self.event_index
    }
    fn created_at(&self) -> i64 {
        self.created_at
    }
    fn ends_run(&self) -> bool {
        self.data.is_terminal()
    }
}

impl StreamEvent for TeamStreamEvent {
    fn stream_name(&self) -> Cow<'static, str> {
        self.name().into()
    }
    fn stream_index(&self) -> Option<u64> {
        self.event_index()
    }
    fn created_at(&self) -> i64 {
        self.inner().created_at
    }
    fn ends_run(&self) -> bool {
        self.is_terminal()
    }
}

impl StreamEvent for WorkflowStreamEvent {
    fn stream_name(&self) -> Cow<'static, str> {
        self.name().into()
    }
    fn stream_index(&self) -> Option<u64> {
        self.event_index()
    }
    fn created_at(&self) -> i64 {
        match self {
            WorkflowStreamEvent::Workflow(e) => e.created_at,
            WorkflowStreamEvent::Agent(e) | WorkflowStreamEvent::Team(e) => e.created_at,
        }
    }
    fn ends_run(&self) -> bool {
        self.is_terminal()
    }
}
