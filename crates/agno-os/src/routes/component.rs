//! What a component kind is to the routes ([`Kind`]: its runner, how it is described, how a run
//! of it starts and ends), and `GET /{agents|teams|workflows}`, `GET /{kind}s/{id}` and
//! `POST /{kind}s/{id}/runs`, written once for the three kinds.
//! Every way a run starts goes through the same [`RunSpec`] (read by [`super::run_form`]); the
//! kinds differ only in the runner that takes it.

use crate::routes::guard::Caller;
use std::future::Future;

use agno_core::{ComponentKind, RunOutput, RunRequirement};
use agno_runtime::{Component, Durable, RunError, RunSpec};
use axum::Json;
use axum::extract::{Path, Request};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
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

    /// The component `id` at catalog `version` (a run asked of it), see
    /// [`crate::queue::Served::agent_version`]; the configuration's component whatever the version.
    fn at_version(
        state: &AppState,
        id: &str,
        version: i64,
    ) -> impl Future<Output = Result<Self::Runner, String>> + Send;

    /// The ids of the components of the kind served here: the configuration's in configured
    /// order, then the catalog's published ones.
    fn ids(state: &AppState) -> Vec<String>;

    /// The component `id` as `GET /{kind}s/{id}` describes it (Agno's `AgentResponse`,
    /// `TeamResponse`, `WorkflowResponse`).
    fn describe(state: &AppState, id: &str) -> Option<Value>;

    /// The component `id` as `GET /{kind}s` lists it: described in full, unless the kind lists
    /// summaries (as Agno's workflows).
    fn listed(state: &AppState, id: &str) -> Option<Value> {
        Self::describe(state, id)
    }

    /// The component `id` at catalog `version` (a draft too) as `GET /{kind}s/{id}` describes
    /// it; none when the kind does not describe drafts or the version does not build.
    fn describe_version(state: &AppState, id: &str, version: i64) -> impl Future<Output = Option<Value>> + Send {
        let _ = (state, id, version);
        std::future::ready(None)
    }

    /// The component `id` as `/config` summarises it (Agno's `...SummaryResponse`).
    fn summarise(state: &AppState, id: &str) -> Option<Value>;

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

/// The runner of the component `id`, served here and addressable by the caller (who may read or
/// run it), or Agno's 404 (never 403, so ids do not leak).
pub(crate) fn served<K: Kind>(state: &AppState, principal: &Principal, id: &str) -> ApiResult<K::Runner> {
    K::runner(state, id).filter(|_| may_address(principal, K::KIND, id)).ok_or_else(|| not_found(K::KIND, id))
}

/// The ids of the components of the kind that the caller may read, in configured order.
fn readable<K: Kind>(state: &AppState, principal: &Principal) -> Vec<String> {
    let allowed = principal.accessible(family(K::KIND), "read");
    K::ids(state).into_iter().filter(|id| allowed.as_ref().is_none_or(|ids| ids.iter().any(|i| i == id))).collect()
}

/// `described` of a component served from the catalog, marked as Agno marks it
/// (`is_component`, the `current_version` served, `stage`).
pub(crate) fn from_catalog(mut described: Value, version: i64) -> Value {
    if let Value::Object(m) = &mut described {
        m.insert("is_component".into(), Value::Bool(true));
        m.insert("current_version".into(), Value::from(version));
        m.insert("stage".into(), Value::from("published"));
    }
    described
}

/// `described` of a catalog component with nothing published, at its latest (draft) version, as
/// Agno describes one: `is_component`, no current version, `stage: draft` in listings, and no
/// model when the draft names none (it would run on Agno's default).
fn from_draft(mut described: Value, listed: bool, names_model: bool) -> Value {
    if let Value::Object(m) = &mut described {
        m.insert("is_component".into(), Value::Bool(true));
        if listed {
            m.insert("stage".into(), Value::from("draft"));
        }
        if !names_model {
            m.remove("model");
        }
    }
    described
}

/// The catalog components of the kind with nothing published yet that the caller may read and
/// see the drafts of (their owner, an admin, an unscoped caller), each described at its latest
/// version; `only`: just that id (described as `GET /{kind}s/{id}` does, else as listed). A
/// draft that does not build is left out (logged).
async fn drafts<K: Kind>(state: &AppState, principal: &Principal, only: Option<&str>) -> ApiResult<Vec<Value>> {
    let allowed = principal.accessible(family(K::KIND), "read");
    let mut out = Vec::new();
    for (id, version, names_model) in super::components::draft_only(state, principal, K::KIND, only).await? {
        if allowed.as_ref().is_some_and(|ids| !ids.contains(&id)) {
            continue;
        }
        if let Some(described) = K::describe_version(state, &id, version).await {
            out.push(from_draft(described, only.is_none(), names_model));
        }
    }
    Ok(out)
}

/// `GET /{kind}s`: the components of the kind the caller may read: the configuration's, the
/// catalog's published ones, then (as Agno) the catalog's draft-only ones the caller may see.
pub async fn list<K: Kind>(Caller { state, principal }: Caller) -> ApiResult<Json<Value>> {
    let mut listed: Vec<Value> =
        readable::<K>(&state, &principal).iter().filter_map(|id| K::listed(&state, id)).collect();
    listed.extend(drafts::<K>(&state, &principal, None).await?);
    Ok(Json(Value::Array(listed)))
}

/// `GET /{kind}s/{id}`: the component, described, when it is served here (or is a catalog draft
/// the caller may see) and the caller may address it (Agno's 404 otherwise, as [`served`]
/// answers).
pub async fn get<K: Kind>(Caller { state, principal }: Caller, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    if !may_address(&principal, K::KIND, &id) {
        return Err(not_found(K::KIND, &id));
    }
    if let Some(described) = K::describe(&state, &id) {
        return Ok(Json(described));
    }
    let draft = drafts::<K>(&state, &principal, Some(&id)).await?.into_iter().next();
    draft.map(Json).ok_or_else(|| not_found(K::KIND, &id))
}

/// The summaries of the components of the kind the caller may read (`/config`).
pub(crate) fn summaries<K: Kind>(state: &AppState, principal: &Principal) -> Vec<Value> {
    readable::<K>(state, principal).iter().filter_map(|id| K::summarise(state, id)).collect()
}

/// The runner of the component `id`, which the caller may run (or whose runs it may read): 404
/// as [`served`] answers, then 403 as [`require_run_access`] does.
pub(crate) fn runnable<K: Kind>(state: &AppState, principal: &Principal, id: &str) -> ApiResult<K::Runner> {
    let runner = served::<K>(state, principal, id)?;
    require_run_access(principal, K::KIND, id)?;
    Ok(runner)
}

/// `POST /{kind}s/{id}/runs`: the run form of the kind (see [`super::run_form::read`]). Inline,
/// the run's events as SSE (`stream=true`, the default) or the run once it ends; with
/// `background=true`, a durable job (202, or its events tailed with `stream=true`). The run goes
/// on when the client leaves, unless it asked `cancel_on_disconnect`.
pub async fn create_run<K: Kind>(
    Caller { state, principal }: Caller,
    Path(id): Path<String>,
    request: Request,
) -> ApiResult<Response> {
    let kind = K::KIND;
    let found = find::<K>(&state, &principal, &id).await?;
    let mut form = super::run_form::read(&state, &principal, kind, &id, request).await?;
    if found.catalog {
        form.spec.component_version = form.version;
    }
    let runner = found.at::<K>(&state, &principal, &id, form.version).await?;
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

/// What a run route finds of component `id` before it reads its form: the runner served here
/// (or why there is none), and whether the catalog may give a version of it instead.
pub(crate) struct Found<R> {
    served: ApiResult<R>,
    /// A catalog component (`agentos.toml` does not define it) the caller may address.
    pub catalog: bool,
}

/// [`Found`] of `id`: [`runnable`]'s error at once, unless it is the 404 of a component the
/// catalog holds (one with nothing published may still be run at a version of its own) and the
/// caller may address.
pub(crate) async fn find<K: Kind>(state: &AppState, principal: &Principal, id: &str) -> ApiResult<Found<K::Runner>> {
    let served = runnable::<K>(state, principal, id);
    let catalog = state.published.is_some() && !state.configured(K::KIND, id) && may_address(principal, K::KIND, id);
    let Err(e) = served else { return Ok(Found { served, catalog }) };
    if !catalog || e.status != axum::http::StatusCode::NOT_FOUND {
        return Err(e);
    }
    let db = state.require_db()?;
    match db.get_component(id, None, false).await? {
        Some(c) if c.component_type == K::KIND.as_str() => Ok(Found { served: Err(e), catalog }),
        _ => Err(e),
    }
}

impl<R> Found<R> {
    /// The runner of a run asked of `version` (none: the one served); see [`version_runner`].
    pub(crate) async fn at<K: Kind<Runner = R>>(
        self,
        state: &AppState,
        principal: &Principal,
        id: &str,
        version: Option<i64>,
    ) -> ApiResult<R> {
        match version {
            Some(version) if self.catalog => version_runner::<K>(state, principal, id, version).await,
            _ => self.served,
        }
    }
}

/// The runner of catalog component `id` at `version`, for a caller who may address it (as
/// [`Found::catalog`] says): Agno's rules of a run asked of a version (a published version for
/// whoever may run the component, a draft for its owner or an admin; anything else the
/// component's 404, so drafts are not disclosed), then 422 when that version does not build.
async fn version_runner<K: Kind>(
    state: &AppState,
    principal: &Principal,
    id: &str,
    version: i64,
) -> ApiResult<K::Runner> {
    require_run_access(principal, K::KIND, id)?;
    if !super::components::may_run_version(state, principal, K::KIND, id, version).await? {
        return Err(not_found(K::KIND, id));
    }
    K::at_version(state, id, version).await.map_err(|e| {
        ApiError::unprocessable(format!("{} {id} version {version} cannot be run: {e}", K::KIND)).at("body", "version")
    })
}

/// The scope family of a kind (`agents`, `teams`, `workflows`).
pub(crate) fn family(kind: ComponentKind) -> &'static str {
    match kind {
        ComponentKind::Agent => "agents",
        ComponentKind::Team => "teams",
        ComponentKind::Workflow => "workflows",
    }
}

/// Whether the caller may address the component `id` (read or run it).
pub(crate) fn may_address(principal: &Principal, kind: ComponentKind, id: &str) -> bool {
    let may = |action| principal.accessible(family(kind), action).is_none_or(|ids| ids.iter().any(|i| i == id));
    may("read") || may("run")
}

/// Agno's 404 for a component that is not served here or that the caller may not address (never
/// 403, so ids do not leak).
pub(crate) fn not_found(kind: ComponentKind, id: &str) -> ApiError {
    ApiError::not_found(match kind {
        ComponentKind::Agent => format!("Agent {id} not found"),
        ComponentKind::Team => format!("Team not found: {id}"),
        ComponentKind::Workflow => "Workflow not found".to_owned(),
    })
}

/// Agno also requires run access to a component (`agents:run`, `agents:<id>:run`, ...) to run it
/// or read its runs: 403 naming it otherwise.
pub(crate) fn require_run_access(principal: &Principal, kind: ComponentKind, id: &str) -> ApiResult<()> {
    match principal.accessible(family(kind), "run") {
        Some(ids) if !ids.iter().any(|i| i == id) => {
            Err(ApiError::forbidden(format!("Access denied to run {kind} {id}")))
        }
        _ => Ok(()),
    }
}

/// The answer to a run that was awaited (`stream=false`): the run as stored, also when it failed
/// (stored with status `ERROR`, as Agno answers it); an error only when there is no run to show.
pub(crate) fn answer(result: Result<RunOutput, RunError>) -> Response {
    match result {
        Ok(run) => Json(run).into_response(),
        Err(e) => match e.run() {
            Some(run) => Json(run.clone()).into_response(),
            None => run_error(e).into_response(),
        },
    }
}

/// The HTTP error of a run that could not be started or continued.
pub(crate) fn run_error(e: RunError) -> ApiError {
    match e {
        RunError::RunNotFound(id) => ApiError::not_found(format!("Run {id} not found")),
        RunError::NotPaused { .. } => ApiError::conflict(e.to_string()),
        RunError::Approval(_) | RunError::UnresolvedRequirement { .. } => ApiError::bad_request(e.to_string()),
        RunError::Storage(db) => db.into(),
        other => ApiError::internal(other.to_string()),
    }
}
