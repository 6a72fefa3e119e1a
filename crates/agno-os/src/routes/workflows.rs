//! `/workflows`: list and describe the configured workflows, run them (JSON or SSE), read their
//! runs and cancel them. Under user isolation the caller's `sub` is the run's user and another
//! user's session or run answers 404.

use crate::routes::query::{Query, QueryRejection};
use agno_core::{ComponentKind, RunOutput, RunQuery, SortOrder, WorkflowStreamEvent};
use agno_runtime::RunError;
use agno_runtime::workflow::{Executor, StepNode, Workflow, WorkflowContinueRequest, WorkflowStream};
use axum::Json;
use axum::extract::{Extension, Path, Request, State};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::form::Form;
use crate::routes::FormField;
use crate::state::AppState;

/// The workflows the caller may read, in declaration order.
fn visible<'a>(state: &'a AppState, principal: &Principal) -> impl Iterator<Item = &'a Workflow> {
    let allowed = principal.accessible("workflows", "read");
    state.workflows.iter().filter(move |w| allowed.as_ref().is_none_or(|ids| ids.iter().any(|id| id == w.id())))
}

/// A workflow the caller may address, or 404 (never 403, so ids do not leak).
fn served<'a>(state: &'a AppState, principal: &Principal, id: &str) -> ApiResult<&'a Workflow> {
    let allowed = principal.accessible("workflows", "read").is_none_or(|ids| ids.iter().any(|i| i == id))
        || principal.accessible("workflows", "run").is_none_or(|ids| ids.iter().any(|i| i == id));
    state.workflow(id).filter(|_| allowed).ok_or_else(|| ApiError::not_found("Workflow not found"))
}

/// Agno also requires run access to a workflow (`workflows:run`, `workflows:<id>:run`) to run it
/// or read its runs.
fn require_run_access(principal: &Principal, workflow_id: &str) -> ApiResult<()> {
    match principal.accessible("workflows", "run") {
        Some(ids) if !ids.iter().any(|i| i == workflow_id) => {
            Err(ApiError::forbidden(format!("Access denied to run workflow {workflow_id}")))
        }
        _ => Ok(()),
    }
}

/// Agno's `WorkflowSummaryResponse`.
fn summary(state: &AppState, wf: &Workflow) -> Value {
    json!({
        "id": wf.id(),
        "name": wf.name(),
        "description": wf.description(),
        "db_id": wf.db().map(|_| &*state.db_id),
        "is_factory": false,
        "is_component": false,
        "sandboxed": false,
    })
}

/// A step as Agno's workflow detail lists it: `name`, `type`, an agent step's `agent` (as
/// `GET /agents/{id}` describes it), and a container's inner `steps`.
fn step_json(state: &AppState, node: &StepNode) -> Value {
    let mut out = json!({"name": node.name(), "type": node.step_type().as_str()});
    if let StepNode::Step(step) = node
        && let Executor::Agent(agent) = &step.executor
        && let Some(served) = state.agent(agent.id())
    {
        out["agent"] = super::agents::agent_json(state, served);
    }
    let inner: &[StepNode] = match node {
        StepNode::Steps(s) => &s.steps,
        StepNode::Loop(l) => &l.steps,
        StepNode::Condition(c) => &c.steps,
        StepNode::Router(r) => &r.choices,
        StepNode::Parallel(p) => &p.steps,
        _ => &[],
    };
    if !inner.is_empty() {
        out["steps"] = Value::Array(inner.iter().map(|n| step_json(state, n)).collect());
    }
    if let StepNode::Condition(c) = node
        && !c.else_steps.is_empty()
    {
        out["else_steps"] = Value::Array(c.else_steps.iter().map(|n| step_json(state, n)).collect());
    }
    out
}

/// The summaries of the workflows the caller may read (`GET /workflows`, `/config`).
pub(crate) fn summaries(state: &AppState, principal: &Principal) -> Vec<Value> {
    visible(state, principal).map(|w| summary(state, w)).collect()
}

/// `GET /workflows`.
pub async fn list_workflows(State(state): State<AppState>, Extension(principal): Extension<Principal>) -> Json<Value> {
    Json(Value::Array(summaries(&state, &principal)))
}

/// `GET /workflows/{workflow_id}`: Agno's `WorkflowResponse` (`steps` as names and types).
pub async fn get_workflow(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(workflow_id): Path<String>,
) -> ApiResult<Json<Value>> {
    let wf = served(&state, &principal, &workflow_id)?;
    let mut body = json!({
        "id": wf.id(),
        "name": wf.name(),
        "db_id": wf.db().map(|_| &*state.db_id),
        "description": wf.description(),
        "steps": wf.steps().iter().map(|n| step_json(&state, n)).collect::<Vec<_>>(),
        "workflow_agent": false,
        "is_factory": false,
        "is_component": false,
        "sandboxed": false,
    });
    if let Value::Object(m) = &mut body {
        m.retain(|_, v| !v.is_null());
    }
    Ok(Json(body))
}

/// The form of `POST /workflows/{workflow_id}/runs`.
pub const RUN_FORM: &[FormField] = &[
    FormField { name: "message", kind: "string", required: true, description: "The input (text or JSON)." },
    FormField { name: "stream", kind: "boolean", required: false, description: "Answer as SSE (default true)." },
    FormField {
        name: "session_id",
        kind: "string",
        required: false,
        description: "Session to run in (new when absent).",
    },
    FormField { name: "user_id", kind: "string", required: false, description: "The user (a token's sub wins)." },
    FormField {
        name: "session_state",
        kind: "object",
        required: false,
        description: "JSON object merged into the session state.",
    },
    FormField {
        name: "additional_data",
        kind: "object",
        required: false,
        description: "JSON object every step sees as additional_data.",
    },
    FormField { name: "metadata", kind: "object", required: false, description: "JSON object stored on the run." },
    FormField {
        name: "background",
        kind: "boolean",
        required: false,
        description: "Run on the durable queue (202, or SSE tail with stream=true).",
    },
];

/// One event as an SSE frame (`event: <Name>`, `data: <JSON>`, `id: <event_index>`).
fn frame(event: &WorkflowStreamEvent) -> crate::sse::Frame {
    crate::sse::Frame::json(event.name(), event, event.event_index())
}

/// The run's events as SSE; the run goes on (and is stored) if the client leaves.
fn stream_response(stream: WorkflowStream, streaming: crate::sse::Streaming) -> Response {
    crate::sse::live(stream.map(|e| frame(&e)), crate::sse::DisconnectPolicy::KeepRunning, streaming)
}

fn run_response(result: Result<RunOutput, RunError>) -> ApiResult<Response> {
    match result {
        Ok(run) => Ok(Json(run).into_response()),
        Err(e) => match e.run() {
            // The failed run is stored with status ERROR; answer it as Agno does.
            Some(run) => Ok(Json(run.clone()).into_response()),
            None => match e {
                RunError::Storage(db) => Err(db.into()),
                other => Err(ApiError::internal(other.to_string())),
            },
        },
    }
}

/// `POST /workflows/{workflow_id}/runs`: form fields `message` (required; JSON object or list
/// input when it parses as one, else text), `stream` (default true), `session_id`, `user_id`,
/// `session_state`, `additional_data`, `metadata`.
pub async fn create_run(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(workflow_id): Path<String>,
    request: Request,
) -> ApiResult<Response> {
    let wf = served(&state, &principal, &workflow_id)?.clone();
    require_run_access(&principal, &workflow_id)?;
    let form = super::run_form::read(&state, &principal, ComponentKind::Workflow, &workflow_id, request).await?;
    let request = form.spec.workflow_request();
    if form.background {
        return super::background::submit(&state, &form.spec, form.stream, form.idempotency_key).await;
    }
    if form.stream {
        return Ok(stream_response(wf.run_stream(request), state.streaming()));
    }
    // On its own task: the run completes and is stored even if the client goes away.
    let stream = wf.run_stream(request);
    run_response(stream.output().await)
}

/// Query of `GET /workflows/{workflow_id}/runs`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RunsQuery {
    /// The session whose runs are listed (required, as in Agno).
    #[schemars(required, length(min = 1))]
    session_id: Option<String>,
}

/// Query carrying an optional `session_id`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SessionQuery {
    session_id: Option<String>,
}

/// `GET /workflows/{workflow_id}/runs?session_id=`: the workflow's runs in one session, oldest
/// first, as Agno's `WorkflowRunSchema`. `session_id` is required; a session the caller cannot
/// see answers 404.
pub async fn list_runs(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(workflow_id): Path<String>,
    q: Result<Query<RunsQuery>, QueryRejection>,
) -> ApiResult<Json<Value>> {
    served(&state, &principal, &workflow_id)?;
    let q = super::params::query(q)?;
    require_run_access(&principal, &workflow_id)?;
    let db = state.require_db()?;
    let session_id = q.session_id.filter(|s| !s.is_empty()).ok_or_else(|| ApiError::missing("query", "session_id"))?;
    let user = principal.user_scope(None);
    if db.get_session(&session_id, user.as_deref(), Some(0)).await?.is_none() {
        return Err(ApiError::not_found(format!("Session {session_id} not found")));
    }
    let mut runs = Vec::new();
    let mut cursor = None;
    loop {
        let page = db
            .get_runs(&RunQuery {
                session_id: Some(session_id.clone()),
                user_id: user.clone(),
                workflow_id: Some(workflow_id.clone()),
                limit: Some(500),
                cursor,
                sort: SortOrder::Asc,
                ..RunQuery::default()
            })
            .await?;
        runs.extend(page.runs.into_iter().filter(|r| r.agent_id.is_none()));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let runs = runs
        .iter()
        .map(|run| super::sessions::schema::to_map(run).map(|r| super::sessions::schema::workflow_run_schema(&r)))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(Json(Value::Array(runs)))
}

/// The stored run of this workflow visible to the caller, or 404.
async fn stored_run(
    state: &AppState,
    principal: &Principal,
    workflow_id: &str,
    run_id: &str,
    session_id: Option<&str>,
) -> ApiResult<RunOutput> {
    let db = state.require_db()?;
    let run = db.get_run(run_id, principal.user_scope(None).as_deref()).await?;
    run.filter(|r| r.workflow_id.as_deref() == Some(workflow_id) && r.agent_id.is_none())
        .filter(|r| session_id.filter(|s| !s.is_empty()).is_none_or(|s| r.session_id.as_deref() == Some(s)))
        .ok_or_else(|| ApiError::not_found(format!("Run {run_id} not found")))
}

/// `GET /workflows/{workflow_id}/runs/{run_id}?session_id=`: the stored run.
pub async fn get_run(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((workflow_id, run_id)): Path<(String, String)>,
    q: Result<Query<SessionQuery>, QueryRejection>,
) -> ApiResult<Json<RunOutput>> {
    served(&state, &principal, &workflow_id)?;
    let q = super::params::query(q)?;
    require_run_access(&principal, &workflow_id)?;
    let session_id = q.session_id.filter(|s| !s.is_empty());
    Ok(Json(stored_run(&state, &principal, &workflow_id, &run_id, session_id.as_deref()).await?))
}

/// `POST /workflows/{workflow_id}/runs/{run_id}/cancel`: 200 `{}` when the run was running here,
/// and (as Agno answers) for a run that already ended, which stays as it ended; 404 for an
/// unknown run (or another user's); 409 for a run running in no process that answers for it.
pub async fn cancel_run(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((workflow_id, run_id)): Path<(String, String)>,
    q: Result<Query<SessionQuery>, QueryRejection>,
) -> ApiResult<Response> {
    served(&state, &principal, &workflow_id)?;
    require_run_access(&principal, &workflow_id)?;
    let q = super::params::query(q)?;
    let session_id = q.session_id.filter(|s| !s.is_empty());
    let stored = match &state.db {
        Some(_) => Some(stored_run(&state, &principal, &workflow_id, &run_id, session_id.as_deref()).await?),
        None => None,
    };
    super::background::cancel(&state, &run_id, stored).await
}

/// The form of `POST /workflows/{workflow_id}/runs/{run_id}/continue`.
pub const CONTINUE_FORM: &[FormField] = &[
    FormField {
        name: "step_requirements",
        kind: "array",
        required: false,
        description: "JSON list of the paused run's step requirements, answered.",
    },
    FormField {
        name: "error_requirements",
        kind: "array",
        required: false,
        description: "JSON list of error requirements with decision retry or skip (agno-rs).",
    },
    FormField { name: "session_id", kind: "string", required: false, description: "The run's session." },
    FormField { name: "user_id", kind: "string", required: false, description: "The user (a token's sub wins)." },
    FormField { name: "stream", kind: "boolean", required: false, description: "Answer as SSE (default true)." },
    FormField {
        name: "background",
        kind: "boolean",
        required: false,
        description: "Continue on the durable queue (a run started in the background).",
    },
];

fn json_list<T: serde::de::DeserializeOwned>(form: &Form, field: &str) -> ApiResult<Vec<T>> {
    match form.text(field).map(str::trim) {
        None | Some("") => Ok(Vec::new()),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| ApiError::unprocessable(format!("{field} must be a JSON list of requirements: {e}"))),
    }
}

/// `POST /workflows/{workflow_id}/runs/{run_id}/continue`: form fields `step_requirements` (JSON
/// list: the active requirement answered), `error_requirements` (agno-rs: a failed step's
/// `decision`), `session_id`, `user_id`, `stream` (default true). The run continues from the step
/// that paused, on any replica. 404 for an unknown run (or another user's), 409 for a run that is
/// not paused, 422 for answers that do not fit (nothing changes).
pub async fn continue_run(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((workflow_id, run_id)): Path<(String, String)>,
    request: Request,
) -> ApiResult<Response> {
    let wf = served(&state, &principal, &workflow_id)?.clone();
    require_run_access(&principal, &workflow_id)?;
    let form = Form::read(request, &state.limits).await?;
    let session_id = form.text("session_id").filter(|s| !s.is_empty()).map(str::to_owned);
    // Ownership first: another user's run is not found.
    stored_run(&state, &principal, &workflow_id, &run_id, session_id.as_deref()).await?;
    let continue_request = WorkflowContinueRequest {
        run_id: run_id.clone(),
        session_id,
        user_id: principal.user_scope(None),
        run: None,
        step_requirements: json_list(&form, "step_requirements")?,
        error_requirements: json_list(&form, "error_requirements")?,
    };
    let continue_error = |e: RunError| match e {
        RunError::RunNotFound(id) => ApiError::not_found(format!("Run {id} not found")),
        RunError::NotPaused { .. } => ApiError::conflict(e.to_string()),
        RunError::InvalidContinue(why) => ApiError::unprocessable(why),
        RunError::Storage(db) => db.into(),
        other => ApiError::internal(other.to_string()),
    };
    let stream = form.bool("stream")?.unwrap_or(true);
    if form.bool("background")?.unwrap_or(false) {
        return background_continue(&state, &wf, continue_request, stream).await.map_err(|e| match e {
            Failure::Run(e) => continue_error(e),
            Failure::Api(e) => e,
        });
    }
    if stream {
        let stream = wf.continue_run_stream(continue_request).await.map_err(continue_error)?;
        return Ok(stream_response(stream, state.streaming()));
    }
    match wf.continue_run(continue_request).await {
        Err(e @ (RunError::RunNotFound(_) | RunError::NotPaused { .. } | RunError::InvalidContinue(_))) => {
            Err(continue_error(e))
        }
        result => run_response(result),
    }
}

/// Why a background continue was refused.
enum Failure {
    Run(RunError),
    Api(ApiError),
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        Failure::Api(e)
    }
}

impl From<agno_core::DbError> for Failure {
    fn from(e: agno_core::DbError) -> Self {
        Failure::Api(e.into())
    }
}

/// A background continue: the answers are checked and applied now (a misfit answers 422 and
/// changes nothing), the answered run is stored, and its job is queued again under the same
/// `run_id`; a worker resumes it from the step that paused.
async fn background_continue(
    state: &AppState,
    wf: &Workflow,
    request: WorkflowContinueRequest,
    stream: bool,
) -> Result<Response, Failure> {
    let queue = super::background::queue_of(state)?;
    let run = wf.answered(request).await.map_err(Failure::Run)?;
    Ok(super::background::requeue_paused(state, queue, run, &json!({ "continue": true }), stream).await?)
}

/// The form of `POST /workflows/{workflow_id}/runs/{run_id}/resume`.
pub const RESUME_FORM: &[FormField] = &[
    FormField {
        name: "last_event_index",
        kind: "integer",
        required: false,
        description: "Replay after this event_index (or the Last-Event-ID header).",
    },
    FormField { name: "session_id", kind: "string", required: false, description: "The run's session." },
];

/// `POST /workflows/{workflow_id}/runs/{run_id}/resume`: a background run's logged events after
/// `last_event_index` (or `Last-Event-ID`), then live ones until it ends, from any replica. A run
/// that did not run in the background answers 404 here (its events were not logged).
pub async fn resume_run(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((workflow_id, run_id)): Path<(String, String)>,
    request: Request,
) -> ApiResult<Response> {
    served(&state, &principal, &workflow_id)?;
    require_run_access(&principal, &workflow_id)?;
    let headers = request.headers().clone();
    let form = Form::read(request, &state.limits).await?;
    let after = super::agents::resume_index(&form, &headers)?;
    stored_run(&state, &principal, &workflow_id, &run_id, form.text("session_id").filter(|s| !s.is_empty())).await?;
    super::background::resume(&state, run_id, after).await
}
