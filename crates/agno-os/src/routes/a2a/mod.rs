//! The A2A interface (`[a2a] enabled`): every agent, team and workflow over the Agent2Agent
//! protocol, v0.3 as Python AgentOS 3.1.10's `a2a_interface=True` serves them and v1.0 beside it
//! on the same endpoints (as Agno 3.2), written once for the three kinds (`card::<Agents>`, ...)
//! and for both versions: answers are made in v0.3's shape and respelled for a v1.0 request
//! ([`v1`]); the request's method says its version (`message/send` or `SendMessage`, the latter
//! needing the `A2A-Version: 1.0` header).
//!
//! - `GET /a2a/{kind}s/{id}/.well-known/agent-card.json`: the agent card (its `url` the
//!   component's `message:stream` endpoint, as Agno's).
//! - `POST /a2a/{kind}s/{id}/v1/message:send`, `message:stream`, and (agents, teams)
//!   `tasks:get`, `tasks:cancel`: JSON-RPC 2.0. Each endpoint serves its own method when the
//!   request names none (as Agno) and any A2A method a request names, so a client that posts
//!   every method to the card's URL (the A2A SDKs do) is answered.
//!
//! A task is a run (`taskId` = run id) and its `contextId` the session: another user's context is
//! refused as the REST run form refuses another user's session, and `tasks/get` and
//! `tasks/cancel` reach only the caller's runs of that component. `configuration.blocking =
//! false` commits the run to the durable queue (`submitted`, 202). A paused run is an
//! `input-required` task saying what it waits for, continued by a message naming its `taskId`.
//! Malformed requests are JSON-RPC errors (`-32700`, `-32600`, `-32601`, `-32602`) and unknown
//! tasks A2A's `TaskNotFoundError` (`-32001`); authentication and scopes are the REST routes'.

mod continuing;
mod frames;
mod jsonrpc;
mod reply;
mod task;
mod v1;

use agno_core::RunStatus;
use agno_runtime::{Component, Durable, RunSpec};
use axum::Json;
use axum::extract::{Path, Request};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use self::jsonrpc::{Call, Failure, Method, RpcError, Version, result_response};
use self::reply::{Target, finished_task};
use super::component::{Kind, served};
use crate::error::{ApiError, ApiResult};
use crate::routes::guard::Caller;
use crate::state::AppState;

/// Where the interface is mounted (Agno's default prefix).
pub const PREFIX: &str = "/a2a";

fn enabled(state: &AppState) -> ApiResult<()> {
    if state.a2a {
        Ok(())
    } else {
        Err(ApiError::not_found("the A2A interface is off: set [a2a] enabled = true in agentos.toml"))
    }
}

/// The URL the server was reached at (`http://` and the `Host` header, as Starlette's
/// `request.base_url`; `X-Forwarded-Proto` names the scheme behind a proxy).
fn base_url(headers: &HeaderMap) -> String {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty());
    let scheme = header("x-forwarded-proto").filter(|p| matches!(*p, "http" | "https")).unwrap_or("http");
    format!("{scheme}://{}", header("host").unwrap_or("localhost"))
}

/// `GET /a2a/{kind}s/{id}/.well-known/agent-card.json`: the component's A2A agent card, as Agno
/// 3.1.10 builds it (one skill, the component itself; streaming for agents and teams), plus
/// v1.0's `supportedInterfaces`: the same JSON-RPC endpoint speaking 1.0 and 0.3 (a 1.x client
/// takes the 1.0 entry, a 0.3 client the top-level `url`).
pub async fn card<K: Kind>(
    Caller { state, principal }: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Json<Value>> {
    enabled(&state)?;
    served::<K>(&state, &principal, &id)?;
    let described = K::describe(&state, &id).unwrap_or_default();
    let text = |key: &str| described.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let (name, description) = (text("name"), text("description"));
    let family = super::component::family(K::KIND);
    let streaming = K::KIND != agno_core::ComponentKind::Workflow;
    let url = format!("{}{PREFIX}/{family}/{id}/v1/message:stream", base_url(&headers));
    Ok(Json(json!({
        "additionalInterfaces": null,
        "capabilities": {
            "extensions": null,
            "pushNotifications": false,
            "stateTransitionHistory": false,
            "streaming": streaming,
        },
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "description": description,
        "documentationUrl": null,
        "iconUrl": null,
        "name": name,
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
        "provider": null,
        "security": null,
        "securitySchemes": null,
        "signatures": null,
        "skills": [{
            "description": description,
            "examples": ["search", "ok"],
            "id": id,
            "inputModes": null,
            "name": name,
            "outputModes": ["application/json"],
            "security": null,
            "tags": ["agno"],
        }],
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "supportsAuthenticatedExtendedCard": false,
        "url": url,
        "version": "1.0.0",
    })))
}

/// `POST /a2a/{kind}s/{id}/v1/message:send`.
pub async fn message_send<K: Kind>(caller: Caller, Path(id): Path<String>, request: Request) -> Response {
    rpc::<K>(caller, id, request, Method::Send).await
}

/// `POST /a2a/{kind}s/{id}/v1/message:stream`.
pub async fn message_stream<K: Kind>(caller: Caller, Path(id): Path<String>, request: Request) -> Response {
    rpc::<K>(caller, id, request, Method::Stream).await
}

/// `POST /a2a/{kind}s/{id}/v1/tasks:get`.
pub async fn tasks_get<K: Kind>(caller: Caller, Path(id): Path<String>, request: Request) -> Response {
    rpc::<K>(caller, id, request, Method::GetTask).await
}

/// `POST /a2a/{kind}s/{id}/v1/tasks:cancel`.
pub async fn tasks_cancel<K: Kind>(caller: Caller, Path(id): Path<String>, request: Request) -> Response {
    rpc::<K>(caller, id, request, Method::CancelTask).await
}

/// One JSON-RPC request to the component `id`: the component first (404, 403 as REST), then
/// the envelope, then the method.
async fn rpc<K: Kind>(Caller { state, principal }: Caller, id: String, request: Request, default: Method) -> Response {
    if let Err(e) = enabled(&state) {
        return e.into_response();
    }
    let runner = match served::<K>(&state, &principal, &id) {
        Ok(runner) => runner,
        Err(e) => return e.into_response(),
    };
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(body) => body,
        Err(e) => return crate::input::read_error(&e).into_response(),
    };
    let header = parts.headers.get("a2a-version").and_then(|v| v.to_str().ok());
    let call = match Call::read(&body, default, header) {
        Ok(call) => call,
        Err(refused) => return refused.into_response(),
    };
    let (request_id, version) = (call.id.clone(), call.version);
    // Reading a task needs the component's read scope (the route's, as Agno's); anything else
    // needs run access to it, as its REST routes do.
    if !matches!(call.method, Method::GetTask | Method::ListTasks)
        && let Err(e) = super::component::require_run_access(&principal, K::KIND, &id)
    {
        return e.into_response();
    }
    let target = Target { state: &state, principal: &principal, component_id: &id, headers: &parts.headers, version };
    let answered = match call.method {
        Method::Send => send::<K>(&target, &runner, call, false).await,
        Method::Stream => send::<K>(&target, &runner, call, true).await,
        Method::GetTask => get_task::<K>(&target, &call).await,
        Method::CancelTask => cancel_task::<K>(&target, &call).await,
        Method::ListTasks => list_tasks::<K>(&target, &call).await,
        Method::Subscribe => subscribe::<K>(&target, &call).await,
    };
    answered.unwrap_or_else(|failure| failure.into_response(&request_id, version))
}

/// The `params.id` of a task method (`-32602` without).
fn task_id(call: &Call) -> Result<&str, RpcError> {
    call.params
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| RpcError::invalid_params("Task ID (params.id) is required"))
}

/// The caller's stored run `task_id` of the component (A2A's `TaskNotFoundError` for an unknown
/// one, another user's, another component's, or one outside the `contextId` given).
async fn stored_task<K: Kind>(
    target: &Target<'_>,
    task_id: &str,
    call: &Call,
) -> Result<agno_core::RunOutput, Failure> {
    let context = call.params.get("contextId").and_then(Value::as_str);
    match super::run_records::stored_run::<K>(target.state, target.principal, target.component_id, task_id, context)
        .await
    {
        Ok(run) => Ok(run),
        Err(e) if e.status == StatusCode::NOT_FOUND => Err(RpcError::task_not_found(task_id).into()),
        Err(e) => Err(e.into()),
    }
}

/// `message/send` and `message/stream`: a new run in the message's context, or the continue of
/// the paused run its `taskId` names.
async fn send<K: Kind>(target: &Target<'_>, runner: &K::Runner, call: Call, stream: bool) -> Result<Response, Failure> {
    let incoming = task::incoming(&call.params)?;
    let user_id = target.user(incoming.user_id.clone());
    if let Some(task_id) = incoming.task_id.clone() {
        let run = stored_task::<K>(target, &task_id, &call).await?;
        return continuing::continue_task::<K>(target, runner, run, &incoming, user_id, call.id, stream).await;
    }
    let mut spec = RunSpec::new(K::KIND, target.component_id, incoming.input);
    spec.user_id = user_id;
    if let Some(context_id) = incoming.context_id {
        super::run_form::check_session_owner(target.state, &context_id, spec.user_id.as_deref()).await?;
        spec.session_id = context_id;
    }
    spec.stream = stream;
    if stream {
        let events = runner.start(&spec, Durable::default());
        return Ok(target.stream(events, call.id, (&spec.run_id, &spec.session_id), "submitted"));
    }
    // v0.3's `blocking: false`, v1.0's `returnImmediately: true`: answered once queued.
    let configuration = call.params.get("configuration");
    let blocking = configuration.and_then(|c| c.get("blocking")).and_then(Value::as_bool);
    let immediately = configuration.and_then(|c| c.get("returnImmediately")).and_then(Value::as_bool);
    if blocking == Some(false) || immediately == Some(true) {
        let idempotency_key = super::run_form::idempotency_key(target.headers)?;
        let committed = super::background::commit(target.state, &spec, idempotency_key).await?;
        let mut run = agno_core::RunOutput::new(&committed.job.id, &committed.job.session_id);
        run.status = committed.status;
        run.user_id.clone_from(&committed.job.user_id);
        return Ok(target.sent(&call.id, &task::task_of(&run), StatusCode::ACCEPTED));
    }
    let finished = K::finish(runner, &spec).await;
    Ok(target.sent(&call.id, &finished_task(finished, &spec.run_id, &spec.session_id), StatusCode::OK))
}

/// `tasks/get`: the caller's stored run as a task, its unset fields `null` (as Python AgentOS
/// answers this method, unlike `message/send`).
async fn get_task<K: Kind>(target: &Target<'_>, call: &Call) -> Result<Response, Failure> {
    let run = stored_task::<K>(target, task_id(call)?, call).await?;
    let mut found = task::task_of(&run);
    if let Some(n) = history_length(call)? {
        keep_last(&mut found, "history", n);
    }
    match target.version {
        Version::V0_3 => Ok(result_response(&call.id, task::with_nulls(found), StatusCode::OK)),
        Version::V1_0 => Ok(target.task(&call.id, &found)),
    }
}

/// `tasks/cancel`: cancels the caller's run (a background one from any replica, through its
/// job; a paused one is ended `CANCELLED`); a run that already ended otherwise is A2A's
/// `TaskNotCancelableError`.
async fn cancel_task<K: Kind>(target: &Target<'_>, call: &Call) -> Result<Response, Failure> {
    let task_id = task_id(call)?;
    let mut run = stored_task::<K>(target, task_id, call).await?;
    let not_cancelable =
        |run: &agno_core::RunOutput| RpcError::task_not_cancelable(task_id, task::state_of(run.status));
    if run.status.is_terminal() && run.status != RunStatus::Cancelled {
        return Err(not_cancelable(&run).into());
    }
    let queued = super::background::queue_holding(target.state, task_id).await?.is_some();
    if run.status == RunStatus::Paused && !queued {
        run.status = RunStatus::Cancelled;
        let session_id = run.session_id.clone().unwrap_or_default();
        target.state.require_db()?.upsert_run(&run, &session_id, run.user_id.as_deref()).await?;
    } else if run.status != RunStatus::Cancelled {
        match super::background::cancel(target.state, task_id, Some(run.clone())).await {
            Ok(_) => {}
            Err(e) if e.status == StatusCode::CONFLICT => return Err(not_cancelable(&run).into()),
            Err(e) => return Err(e.into()),
        }
    }
    let context_id = run.session_id.as_deref().unwrap_or_default();
    Ok(target.task(&call.id, &task::task(task_id, context_id, "canceled", None, Vec::new(), Vec::new())))
}

/// `params.historyLength`: how many history messages a task keeps (`-32602` when not a
/// non-negative integer).
fn history_length(call: &Call) -> Result<Option<usize>, RpcError> {
    match call.params.get("historyLength") {
        None | Some(Value::Null) => Ok(None),
        Some(n) => n
            .as_u64()
            .map(|n| Some(usize::try_from(n).unwrap_or(usize::MAX)))
            .ok_or_else(|| RpcError::invalid_params("historyLength must be a non-negative integer")),
    }
}

/// Keeps the last `n` entries of the task's list `key`.
fn keep_last(task: &mut Value, key: &str, n: usize) {
    if let Some(list) = task.get_mut(key).and_then(Value::as_array_mut) {
        let cut = list.len().saturating_sub(n);
        list.drain(..cut);
    }
}

/// Most tasks a `ListTasks` page holds (A2A's limit), and its default.
const MAX_PAGE: u64 = 100;
const DEFAULT_PAGE: u64 = 50;

/// `ListTasks` (v1.0): the caller's tasks of the component, newest first, in pages of
/// `pageSize` (at most 100) continued by `nextPageToken`; filtered by `contextId` and `status`
/// (a `TASK_STATE_*`); artifacts only with `includeArtifacts`, history cut to `historyLength`.
/// Tasks are the runs the component was asked for (a team member's or a step's runs are not).
/// `totalSize` is given when the listing started at its beginning and fits in the page.
async fn list_tasks<K: Kind>(target: &Target<'_>, call: &Call) -> Result<Response, Failure> {
    let db = target.state.require_db()?;
    let params = &call.params;
    let text = |key: &str| params.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    let page_size = match params.get("pageSize") {
        None | Some(Value::Null) => DEFAULT_PAGE,
        Some(n) => match n.as_u64() {
            Some(n @ 1..=MAX_PAGE) => n,
            _ => return Err(RpcError::invalid_params(format!("pageSize must be between 1 and {MAX_PAGE}")).into()),
        },
    };
    let page_size = usize::try_from(page_size).unwrap_or(50);
    let status = match text("status") {
        None => None,
        Some(state) => Some(task::status_of_state(state).ok_or_else(|| {
            RpcError::invalid_params(format!("status {state:?} is not a task state (TASK_STATE_COMPLETED, ...)"))
        })?),
    };
    let cursor = text("pageToken").map(task::read_page_token).transpose()?;
    let include_artifacts = params.get("includeArtifacts").and_then(Value::as_bool).unwrap_or(false);
    let history = history_length(call)?;
    let started_at_beginning = cursor.is_none();
    let mut query = agno_core::RunQuery {
        session_id: text("contextId").map(str::to_owned),
        user_id: target.principal.user_scope(None),
        status,
        limit: Some(page_size + 1),
        cursor,
        sort: agno_core::SortOrder::Desc,
        ..agno_core::RunQuery::default()
    };
    let id = target.component_id;
    super::run_records::only_component(&mut query, K::KIND, id);
    let mut runs = Vec::new();
    let mut more = false;
    loop {
        let page = db.get_runs(&query).await?;
        let own = page.runs.into_iter().filter(|r| super::run_records::belongs(r, K::KIND, id));
        runs.extend(own.filter(|r| r.parent_run_id.is_none()));
        if runs.len() > page_size {
            more = true;
            break;
        }
        match page.next_cursor {
            Some(next) => query.cursor = Some(next),
            None => break,
        }
    }
    runs.truncate(page_size);
    let next_page_token = match runs.last() {
        Some(last) if more => task::page_token(last),
        _ => String::new(),
    };
    let tasks: Vec<Value> = runs
        .iter()
        .map(|run| {
            let mut found = task::task_of(run);
            if !include_artifacts && let Value::Object(t) = &mut found {
                t.remove("artifacts");
            }
            if let Some(n) = history {
                keep_last(&mut found, "history", n);
            }
            v1::task(&found)
        })
        .collect();
    let total = (started_at_beginning && !more).then_some(tasks.len());
    let mut listed = serde_json::json!({"tasks": tasks, "nextPageToken": next_page_token, "pageSize": page_size});
    if let Some(total) = total {
        listed["totalSize"] = Value::from(total);
    }
    Ok(result_response(&call.id, listed, StatusCode::OK))
}

/// `SubscribeToTask` (`tasks/resubscribe` in v0.3): the task as it stands, then its events as
/// they come, from whichever replica runs it, for a task on the durable queue that has not
/// ended (one sent with `returnImmediately` / `blocking: false`). A paused task is answered with
/// itself; an ended task, or one running outside the queue, is `UnsupportedOperationError`.
async fn subscribe<K: Kind>(target: &Target<'_>, call: &Call) -> Result<Response, Failure> {
    let task_id = task_id(call)?;
    let run = stored_task::<K>(target, task_id, call).await?;
    let state = task::state_of(run.status);
    if run.status.is_terminal() {
        return Err(RpcError::unsupported(format!("task {task_id} is {state}: read it with GetTask")).into());
    }
    let current = task::task_of(&run);
    if run.status == RunStatus::Paused {
        return Ok(target.stream_of_task(&call.id, &current));
    }
    let Some(queue) = super::background::queue_holding(target.state, task_id).await? else {
        return Err(RpcError::unsupported(format!(
            "task {task_id} runs outside the durable queue and cannot be followed: read it with GetTask"
        ))
        .into());
    };
    let frames = super::background::tail_frames(target.state, queue, task_id.to_owned(), -1)?;
    Ok(target.follow(frames, call.id.clone(), current))
}
