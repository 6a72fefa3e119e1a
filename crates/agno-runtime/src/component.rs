//! What agents, teams and workflows are to whoever drives their runs (the HTTP routes, the
//! durable queue's worker): [`Component`], so that each of those is written once for the three
//! kinds.

use agno_core::{ComponentKind, RunOutput, RunRequirement, RunStatus, StreamEvent};

use crate::team::Team;
use crate::workflow::Workflow;
use crate::{Agent, ContinueRequest, Durable, EventStream, RunSpec};

/// A component whose runs can be started from a [`RunSpec`] and carried on once stored.
pub trait Component: Clone + Send + Sync + 'static {
    /// The kind.
    const KIND: ComponentKind;
    /// The events of its runs.
    type Event: StreamEvent;
    /// Whether a run interrupted mid-way (its worker died) is carried on from what it stored
    /// rather than started over: a workflow keeps a journal of its completed steps, an agent's
    /// or a team's run starts again.
    const CARRIES_ON_INTERRUPTED: bool = false;

    /// Starts the run `spec` asks for on its own task, streaming its events. `durable` fences
    /// its writes by a worker's claim and numbers its events after an earlier attempt's (the
    /// default for a run that is not on the queue).
    fn start(&self, spec: &RunSpec, durable: Durable) -> EventStream<Self::Event>;

    /// Carries on with the stored `run` of `user_id` on its own task: a paused run with its
    /// answered `requirements` (a workflow's answers are in its journal already, so it gets
    /// none), or an interrupted one when [`Self::CARRIES_ON_INTERRUPTED`].
    fn carry_on(&self, stored: CarryOn, durable: Durable) -> EventStream<Self::Event>;
}

/// A stored run to carry on with, and what it is carried on with.
#[derive(Debug, Clone)]
pub struct CarryOn {
    /// The run as stored.
    pub run: RunOutput,
    /// The answered requirements of a paused run (none for an interrupted one).
    pub requirements: Vec<RunRequirement>,
    /// The user the run goes on for.
    pub user_id: Option<String>,
    /// What the client brings to the rest of the run.
    pub client: crate::ClientSide,
}

impl CarryOn {
    /// The continuation of the paused run (whatever status it was stored with while queued).
    fn continuation(self, durable: Durable) -> ContinueRequest {
        let mut run = self.run;
        run.status = RunStatus::Paused;
        let mut request = ContinueRequest::output(run, self.requirements).durable(durable);
        request.client = self.client;
        match self.user_id {
            Some(user) => request.user_id(user),
            None => request,
        }
    }
}

/// Agents and teams take the same requests: a [`crate::RunRequest`] built from the spec, and a
/// [`ContinueRequest`] for a paused run.
macro_rules! request_driven {
    ($runner:ty, $kind:ident, $event:ty) => {
        impl Component for $runner {
            const KIND: ComponentKind = ComponentKind::$kind;
            type Event = $event;

            fn start(&self, spec: &RunSpec, durable: Durable) -> EventStream<Self::Event> {
                self.run_stream(spec.request().durable(durable))
            }
            fn carry_on(&self, stored: CarryOn, durable: Durable) -> EventStream<Self::Event> {
                self.continue_run_stream(stored.continuation(durable))
            }
        }
    };
}

request_driven!(Agent, Agent, agno_core::RunEvent);
request_driven!(Team, Team, agno_core::TeamStreamEvent);

impl Component for Workflow {
    const KIND: ComponentKind = ComponentKind::Workflow;
    type Event = agno_core::WorkflowStreamEvent;
    const CARRIES_ON_INTERRUPTED: bool = true;

    fn start(&self, spec: &RunSpec, durable: Durable) -> EventStream<Self::Event> {
        self.run_stream_durable(spec.workflow_request(), durable)
    }
    // The answers were applied to the journal when the continue was asked for; the run's own
    // user is its user.
    fn carry_on(&self, stored: CarryOn, durable: Durable) -> EventStream<Self::Event> {
        self.resume_stream(stored.run, durable)
    }
}
