//! What a component kind is to the routes ([`Kind`]: its runner and how a run of it starts and
//! ends), and `POST /{agents|teams|workflows}/{id}/runs`, written once for the three kinds.
//! Every way a run starts goes through the same [`RunSpec`] (read by [`super::run_form`]); the
//! kinds differ only in the runner that takes it.

use std::future::Future;

use agno_core::{ComponentKind, RunOutput, StreamEvent};
use agno_runtime::team::Team;
use agno_runtime::workflow::Workflow;
use agno_runtime::{Agent, EventStream, RunError, RunSpec};
use axum::extract::{Extension, Path, Request, State};
use axum::response::Response;

use super::run_records::{answer, may_address, not_found, require_run_access};
use crate::auth::Principal;
use crate::error::ApiResult;
use crate::sse::{DisconnectGuard, DisconnectPolicy};
use crate::state::AppState;

/// A component kind as a type, so that one handler serves each kind's routes
/// (`create_run::<Agents>`).
pub trait Kind: Send + Sync + 'static {
    /// The kind.
    const KIND: ComponentKind;
    /// What runs a component of the kind.
    type Runner: Clone + Send + Sync + 'static;
    /// The events of its runs.
    type Event: StreamEvent;

    /// The runner of the component `id` served here.
    fn runner(state: &AppState, id: &str) -> Option<Self::Runner>;

    /// Starts the run `spec` describes on its own task, streaming its events.
    fn start(runner: &Self::Runner, spec: &RunSpec) -> EventStream<Self::Event>;

    /// Runs `spec` on its own task to its end (it completes and is stored even if the caller goes
    /// away), without streaming.
    fn finish(runner: &Self::Runner, spec: &RunSpec) -> impl Future<Output = Result<RunOutput, RunError>> + Send {
        Self::start(runner, spec).output()
    }
}

/// `/agents/...`.
#[derive(Debug)]
pub struct Agents;
/// `/teams/...`.
#[derive(Debug)]
pub struct Teams;
/// `/workflows/...`.
#[derive(Debug)]
pub struct Workflows;

impl Kind for Agents {
    const KIND: ComponentKind = ComponentKind::Agent;
    type Runner = Agent;
    type Event = agno_core::RunEvent;

    fn runner(state: &AppState, id: &str) -> Option<Agent> {
        state.agent(id).map(|served| served.agent.clone())
    }
    fn start(agent: &Agent, spec: &RunSpec) -> EventStream<Self::Event> {
        agent.run_stream(spec.request())
    }
    // Not streamed: no event channel at all.
    fn finish(agent: &Agent, spec: &RunSpec) -> impl Future<Output = Result<RunOutput, RunError>> + Send {
        agent.spawn_run(spec.request())
    }
}

impl Kind for Teams {
    const KIND: ComponentKind = ComponentKind::Team;
    type Runner = Team;
    type Event = agno_core::TeamStreamEvent;

    fn runner(state: &AppState, id: &str) -> Option<Team> {
        state.team(id).cloned()
    }
    fn start(team: &Team, spec: &RunSpec) -> EventStream<Self::Event> {
        team.run_stream(spec.request())
    }
}

impl Kind for Workflows {
    const KIND: ComponentKind = ComponentKind::Workflow;
    type Runner = Workflow;
    type Event = agno_core::WorkflowStreamEvent;

    fn runner(state: &AppState, id: &str) -> Option<Workflow> {
        state.workflow(id).cloned()
    }
    fn start(wf: &Workflow, spec: &RunSpec) -> EventStream<Self::Event> {
        wf.run_stream(spec.workflow_request())
    }
}

/// The runner of the component `id`, served here and addressable by the caller (who may read or
/// run it), or Agno's 404 (never 403, so ids do not leak).
pub(crate) fn served<K: Kind>(state: &AppState, principal: &Principal, id: &str) -> ApiResult<K::Runner> {
    K::runner(state, id).filter(|_| may_address(principal, K::KIND, id)).ok_or_else(|| not_found(K::KIND, id))
}

/// `POST /{kind}s/{id}/runs`: the run form of the kind (see [`super::run_form::read`]). Inline,
/// the run's events as SSE (`stream=true`, the default) or the run once it ends; with
/// `background=true`, a durable job (202, or its events tailed with `stream=true`). The run goes
/// on when the client leaves, unless it asked `cancel_on_disconnect`.
pub async fn create_run<K: Kind>(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
    request: Request,
) -> ApiResult<Response> {
    let kind = K::KIND;
    let runner = served::<K>(&state, &principal, &id)?;
    require_run_access(&principal, kind, &id)?;
    let form = super::run_form::read(&state, &principal, kind, &id, request).await?;
    if form.background {
        return super::background::submit(&state, &form.spec, form.stream, form.idempotency_key).await;
    }
    let policy = if form.cancel_on_disconnect {
        DisconnectPolicy::Cancel(form.spec.run_id.clone())
    } else {
        DisconnectPolicy::KeepRunning
    };
    if form.stream {
        return Ok(crate::sse::run_events(K::start(&runner, &form.spec), policy, state.streaming()));
    }
    let mut guard = DisconnectGuard::new(policy);
    let result = K::finish(&runner, &form.spec).await;
    guard.finish();
    Ok(answer(result))
}
