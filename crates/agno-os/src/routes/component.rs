//! What a component kind is to the routes ([`Kind`]: its runner and how a run of it starts and
//! ends), and `POST /{agents|teams|workflows}/{id}/runs`, written once for the three kinds.
//! Every way a run starts goes through the same [`RunSpec`] (read by [`super::run_form`]); the
//! kinds differ only in the runner that takes it.

use std::future::Future;

use agno_core::{ComponentKind, RunOutput, RunRequirement};
use agno_runtime::team::Team;
use agno_runtime::workflow::Workflow;
use agno_runtime::{Agent, Component, Durable, RunError, RunSpec};
use axum::extract::{Extension, Path, Request, State};
use axum::response::Response;

use super::run_records::{answer, may_address, not_found, require_run_access};
use crate::auth::Principal;
use crate::error::ApiResult;
use crate::form::Form;
use crate::sse::{DisconnectGuard, DisconnectPolicy};
use crate::state::AppState;

/// A component kind as a type, so that one handler serves each kind's routes
/// (`create_run::<Agents>`): where its runner ([`Component`]) is found.
pub trait Kind: Send + Sync + 'static {
    /// What runs a component of the kind.
    type Runner: Component;
    /// The kind.
    const KIND: ComponentKind = <Self::Runner as Component>::KIND;

    /// The runner of the component `id` served here.
    fn runner(state: &AppState, id: &str) -> Option<Self::Runner>;

    /// Whether a continue must name the run's session (Agno's team route requires it: 400).
    const CONTINUE_NEEDS_SESSION: bool = false;

    /// Reads the answers of a continue form and checks them against the stored `run` (nothing
    /// changes when they do not fit): the run to carry on (a workflow's with the answers in its
    /// journal) and the requirements it carries on with.
    fn answer(
        runner: &Self::Runner,
        run: RunOutput,
        form: &Form,
    ) -> impl Future<Output = ApiResult<(RunOutput, Vec<RunRequirement>)>> + Send;

    /// Runs `spec` on its own task to its end (it completes and is stored even if the caller goes
    /// away), without streaming.
    fn finish(runner: &Self::Runner, spec: &RunSpec) -> impl Future<Output = Result<RunOutput, RunError>> + Send {
        runner.start(spec, Durable::default()).output()
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
    type Runner = Agent;

    fn runner(state: &AppState, id: &str) -> Option<Agent> {
        state.agent(id).map(|served| served.agent.clone())
    }
    async fn answer(_: &Agent, run: RunOutput, form: &Form) -> ApiResult<(RunOutput, Vec<RunRequirement>)> {
        let requirements = super::agents::answer(&run, form)?;
        Ok((run, requirements))
    }
    // Not streamed: no event channel at all.
    fn finish(agent: &Agent, spec: &RunSpec) -> impl Future<Output = Result<RunOutput, RunError>> + Send {
        agent.spawn_run(spec.request())
    }
}

impl Kind for Teams {
    type Runner = Team;

    const CONTINUE_NEEDS_SESSION: bool = true;

    fn runner(state: &AppState, id: &str) -> Option<Team> {
        state.team(id).cloned()
    }
    async fn answer(team: &Team, run: RunOutput, form: &Form) -> ApiResult<(RunOutput, Vec<RunRequirement>)> {
        let requirements = super::teams::answer(team, &run, form)?;
        Ok((run, requirements))
    }
}

impl Kind for Workflows {
    type Runner = Workflow;

    fn runner(state: &AppState, id: &str) -> Option<Workflow> {
        state.workflow(id).cloned()
    }
    // The answers go into the run's journal.
    async fn answer(wf: &Workflow, run: RunOutput, form: &Form) -> ApiResult<(RunOutput, Vec<RunRequirement>)> {
        Ok((super::workflows::answer(wf, &run, form).await?, Vec::new()))
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
        return Ok(crate::sse::run_events(runner.start(&form.spec, Durable::default()), policy, state.streaming()));
    }
    let mut guard = DisconnectGuard::new(policy);
    let result = K::finish(&runner, &form.spec).await;
    guard.finish();
    Ok(answer(result))
}
