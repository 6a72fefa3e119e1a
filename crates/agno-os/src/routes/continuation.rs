//! `POST /{agents|teams|workflows}/{id}/runs/{run_id}/continue`, written once for the three
//! kinds: a paused run carries on with the caller's answers (what each kind's form holds and how
//! it is checked is [`Kind::answer`]), inline or, for a run started in the background, on the
//! durable queue under the same run id.

use crate::routes::guard::Caller;
use agno_core::{BranchError, BranchOptions, ComponentKind, RunOutput, RunRequirement, RunStatus};
use agno_runtime::{CarryOn, ClientSide, Component, Durable, EventStream};
use axum::Json;
use axum::extract::{Path, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::component::{Kind, answer, find};
use super::run_form::COMPONENT_VERSION_KEY;
use super::run_records::stored_run;
use crate::error::{ApiError, ApiResult};
use crate::form::Form;
use crate::queue::Queue;
use crate::sse::DisconnectPolicy;
use crate::state::AppState;

/// `POST /{kind}s/{id}/runs/{run_id}/continue`: the kind's answers, `session_id` (required for a
/// team, as Agno), `user_id`, `stream` (default true) and `background`. The answers are checked
/// before anything changes: 404 for an unknown run (or another user's), 409 for a run that is not
/// paused, 400 or 422 for answers that do not fit. A paused background run keeps its job: its
/// continuation is queued under the same run id (also without `background=true`), 202 or its
/// events tailed. Inline, the continued run's events as SSE or the run once it ends; the run goes
/// on when the client leaves.
pub async fn continue_run<K: Kind>(
    Caller { state, principal }: Caller,
    Path((id, run_id)): Path<(String, String)>,
    request: Request,
) -> ApiResult<Response> {
    let found = find::<K>(&state, &principal, &id).await?;
    let mut form = Form::read(request, &state.limits).await?;
    let session_id = form.text("session_id").filter(|s| !s.is_empty());
    if K::CONTINUE_NEEDS_SESSION && session_id.is_none() {
        return Err(ApiError::bad_request("session_id is required for this action"));
    }
    // Ownership first: another user's run is not found, whatever the answers.
    let run = stored_run::<K>(&state, &principal, &id, &run_id, session_id).await?;
    // A run asked of a catalog version goes on at that version (the stamp in its metadata).
    let stamp = run.metadata.as_ref().and_then(|m| m.get(COMPONENT_VERSION_KEY)).and_then(Value::as_i64);
    let runner = found.at::<K>(&state, &principal, &id, stamp).await?;
    super::approvals::gate_continue(&state, &principal, &run).await?;
    let answered = ["tools", "requirements", "step_requirements"]
        .iter()
        .any(|field| form.text(field).is_some_and(|t| !matches!(t.trim(), "" | "[]")));
    let options = branch_options(&form)?;
    if !options.is_plain() || (K::KIND != ComponentKind::Workflow && run.status != RunStatus::Paused) {
        return branch_run::<K>(&state, &principal, &runner, run, &options, &form, answered).await;
    }
    // The decisions of resolved approvals answer their calls: the form need not repeat them.
    let (decided, approval) = approved_answers(&state, &principal, &run, answered).await?;
    if K::KIND == ComponentKind::Workflow && !answered {
        step_answers_from_approvals(&state, &run, &mut form).await?;
    }
    let (mut run, requirements) = take_answers::<K>(&state, &runner, run, &form, decided).await?;
    // As Agno: the resolved approval the continue acts on is the run's `metadata["approval"]`.
    if let Some(approval) = approval.and_then(|a| serde_json::to_value(a).ok()) {
        run.metadata.get_or_insert_default().insert("approval".to_owned(), approval);
    }

    let stream = form.bool("stream")?.unwrap_or(true);
    let background = form.bool("background")?.unwrap_or(false);
    let user_id = super::run_form::form_user(&principal, &form);
    let carried = carry_on::<K>(&state, &runner, run, requirements, user_id, ClientSide::default(), background).await?;
    match carried {
        Carried::Queued { queue, run, after } if stream => {
            super::background::tail_response(&state, queue, run.id().to_owned(), after)
        }
        Carried::Queued { run, .. } => Ok((
            StatusCode::ACCEPTED,
            Json(json!({"run_id": run.id(), "session_id": run.session_id, "status": "PENDING"})),
        )
            .into_response()),
        Carried::Here(events) if stream => {
            Ok(crate::sse::run_events(events, DisconnectPolicy::KeepRunning, state.streaming()))
        }
        // On its own task: the run completes and is stored even if the client goes away.
        Carried::Here(events) => Ok(answer(events.output().await)),
    }
}

/// The answers `form` gives the paused `run`, checked as the kind's continue checks them
/// ([`Kind::answer`]), and the audits of what they decided. `decided` are answers that resolved
/// approvals gave already: the kind reads the form with those calls still pending, and their
/// decisions go in beside the form's. What each caller does first is its own: the approvals gate
/// ([`super::approvals::gate_continue`]) and reading its protocol's answers into the form.
pub(crate) async fn take_answers<K: Kind>(
    state: &AppState,
    runner: &K::Runner,
    mut run: RunOutput,
    form: &Form,
    decided: Vec<RunRequirement>,
) -> ApiResult<(RunOutput, Vec<RunRequirement>)> {
    let mut pending = Vec::new();
    for answer in &decided {
        if let Some(req) = run.requirements.iter_mut().flatten().find(|r| r.id == answer.id) {
            pending.push(std::mem::replace(req, answer.clone()));
        }
    }
    let (mut run, mut requirements) = K::answer(runner, run, form).await?;
    for original in pending {
        if let Some(req) = run.requirements.iter_mut().flatten().find(|r| r.id == original.id) {
            *req = original;
        }
    }
    for answer in decided {
        if !requirements.iter().any(|r| r.id == answer.id) {
            requirements.push(answer);
        }
    }
    if let Some(db) = &state.db {
        agno_runtime::approvals::record_audits(db.as_ref(), &run, &requirements).await;
    }
    Ok((run, requirements))
}

/// Where an answered run goes on ([`carry_on`]).
pub(crate) enum Carried<'a, E> {
    /// On the durable queue, under its own id, on whichever replica claims it: `run` as stored
    /// (`PENDING`), its events in the queue's log after index `after`.
    Queued { queue: &'a Queue, run: Box<RunOutput>, after: i64 },
    /// Here, on its own task: its events as they come.
    Here(EventStream<E>),
}

/// Carries on with the answered paused `run` of every continue (REST, A2A, AG-UI): a run whose
/// job is on the durable queue (a run started in the background), or any run when `background`,
/// is queued again under its id with its answers and the `client`'s tools; otherwise it goes on
/// here, for `user_id` (the run's own user when none is named).
pub(crate) async fn carry_on<'a, K: Kind>(
    state: &'a AppState,
    runner: &K::Runner,
    mut run: RunOutput,
    requirements: Vec<RunRequirement>,
    user_id: Option<String>,
    client: ClientSide,
    background: bool,
) -> ApiResult<Carried<'a, <K::Runner as Component>::Event>> {
    let queue = match super::background::queue_holding(state, run.id()).await? {
        Some(queue) => Some(queue),
        None if background => Some(super::background::queue_of(state)?),
        None => None,
    };
    if let Some(queue) = queue {
        let mut continuation = json!({ "requirements": requirements });
        if !client.is_empty() {
            continuation["client"] = json!(client);
        }
        let after = super::background::requeue_paused(state, queue, &mut run, &continuation).await?;
        return Ok(Carried::Queued { queue, run: Box::new(run), after });
    }
    let user_id = user_id.or_else(|| run.user_id.clone());
    Ok(Carried::Here(runner.carry_on(CarryOn { run, requirements, user_id, client }, Durable::default())))
}

/// The answers resolved approvals give the paused run's `required` calls (none without a
/// database). A caller who may resolve approvals continues past a pending one with answers of
/// their own (`answered`), as Agno's admin does; without, a pending approval is 400 (Agno's
/// words).
async fn approved_answers(
    state: &crate::state::AppState,
    principal: &crate::auth::Principal,
    run: &agno_core::RunOutput,
    answered: bool,
) -> ApiResult<(Vec<agno_core::RunRequirement>, Option<agno_core::ApprovalRecord>)> {
    let Some(db) = &state.db else { return Ok((Vec::new(), None)) };
    if run.status != agno_core::RunStatus::Paused {
        return Ok((Vec::new(), None));
    }
    match agno_runtime::approvals::answers_from_approvals(db.as_ref(), run, &[]).await {
        Ok(found) => Ok(found),
        Err(agno_runtime::RunError::Approval(_)) if answered && principal.holds("approvals:write") => {
            Ok((Vec::new(), None))
        }
        Err(agno_runtime::RunError::Approval(gate)) => Err(ApiError::bad_request(format!(
            "Run has unresolved HITL requirements. Provide the `requirements` parameter (or resolve an admin \
             approval first): {gate}"
        ))),
        Err(agno_runtime::RunError::Storage(e)) => Err(e.into()),
        Err(e) => Err(ApiError::internal(e.to_string())),
    }
}

/// The branch a continue form asks for (Agno's `input`, `continue_from`, `fork`, `regenerate`,
/// `replace_original`, `additional_instructions`).
fn branch_options(form: &Form) -> ApiResult<BranchOptions> {
    let text = |name: &str| form.text(name).filter(|t| !t.is_empty()).map(str::to_owned);
    Ok(BranchOptions {
        input: text("input"),
        boundary: agno_core::Boundary::parse(form.text("continue_from").unwrap_or_default()).map_err(branch_error)?,
        fork: form.bool("fork")?.unwrap_or(false),
        regenerate: form.bool("regenerate")?.unwrap_or(false),
        replace_original: form.bool("replace_original")?,
        additional_instructions: text("additional_instructions"),
    })
}

fn branch_error(e: BranchError) -> ApiError {
    match e {
        BranchError::NotContinuable(why) => ApiError::conflict(why),
        other => ApiError::bad_request(other.to_string()),
    }
}

/// Continues a stored agent or team run from a boundary of its transcript (`agno_core::branch`):
/// a completed run as a fork (a new sibling run), a regenerate replacing the original's answer,
/// an errored or interrupted one as itself; inline, as a continue of a paused run answers.
async fn branch_run<K: Kind>(
    state: &crate::state::AppState,
    principal: &crate::auth::Principal,
    runner: &K::Runner,
    run: agno_core::RunOutput,
    options: &BranchOptions,
    form: &Form,
    answered: bool,
) -> ApiResult<Response> {
    if K::KIND == ComponentKind::Workflow {
        return Err(ApiError::bad_request(
            "input, continue_from, fork and regenerate continue agent and team runs; a workflow run continues from its pause",
        ));
    }
    if matches!(run.status, RunStatus::Running | RunStatus::Pending) {
        return Err(ApiError::conflict(format!(
            "Run {} is {}: wait for it to end (or cancel it) before continuing it",
            run.id(),
            run.status.as_str()
        )));
    }
    if answered && run.status != RunStatus::Paused {
        return Err(ApiError::bad_request(format!(
            "Run {} is {} and waits for no answers: continue it without tools or requirements",
            run.id(),
            run.status.as_str()
        )));
    }
    if !run.active_requirements().is_empty() {
        return Err(ApiError::bad_request(format!(
            "Run {} waits for its requirements: continue it with its answers first, without fork, regenerate, \
             continue_from or input",
            run.id()
        )));
    }
    let branch = agno_core::branch(&run, options, agno_core::now_epoch_secs()).map_err(branch_error)?;
    let db = state.require_db()?;
    let session_id = run.session_id.clone().unwrap_or_default();
    if let Some(original) = &branch.replaced {
        db.upsert_run(original, &session_id, original.user_id.as_deref()).await?;
    }
    let stream = form.bool("stream")?.unwrap_or(true);
    let user_id = super::run_form::form_user(principal, form).or_else(|| run.user_id.clone());
    let events = runner.carry_on(
        CarryOn { run: branch.run, requirements: Vec::new(), user_id, client: ClientSide::default() },
        Durable::default(),
    );
    if stream {
        return Ok(crate::sse::run_events(events, DisconnectPolicy::KeepRunning, state.streaming()));
    }
    Ok(answer(events.output().await))
}

/// A workflow paused on a step whose agent (or team) waits only on approved or refused calls:
/// the step's answers, from the records, written into the form as the caller would send them.
async fn step_answers_from_approvals(
    state: &crate::state::AppState,
    run: &agno_core::RunOutput,
    form: &mut Form,
) -> ApiResult<()> {
    let Some(db) = &state.db else { return Ok(()) };
    let Some(mut step) = run
        .extra
        .get("step_requirements")
        .and_then(serde_json::Value::as_array)
        .and_then(|steps| steps.last())
        .filter(|s| s.get("executor_requirements").is_some())
        .cloned()
    else {
        return Ok(());
    };
    let Ok(pending) = serde_json::from_value::<Vec<agno_core::RunRequirement>>(step["executor_requirements"].clone())
    else {
        return Ok(());
    };
    let answers = agno_runtime::approvals::answers_for(db.as_ref(), &pending).await.map_err(|e| match e {
        agno_runtime::RunError::Storage(db) => db.into(),
        other => ApiError::bad_request(format!(
            "Run has unresolved HITL requirements. Provide the `step_requirements` parameter (or resolve an admin \
             approval first): {other}"
        )),
    })?;
    if let Some(answers) = answers {
        step["executor_requirements"] = serde_json::to_value(answers).unwrap_or_default();
        form.set_text("step_requirements", serde_json::Value::Array(vec![step]).to_string());
    }
    Ok(())
}

/// The continue form carrying resolved `requirements` (an interface's answers: A2A's, AG-UI's):
/// an agent's `tools` and a team's `requirements` (Agno's two spellings), so each kind reads and
/// checks them as its route does ([`Kind::answer`]).
pub(crate) fn answers_form(requirements: &[RunRequirement]) -> Form {
    let tools: Vec<Value> = requirements
        .iter()
        .filter_map(|r| {
            let mut tool = json!({"tool_call_id": r.tool_call_id()?});
            if let Some(confirmed) = r.confirmation {
                tool["confirmed"] = json!(confirmed);
            }
            if let Some(note) = &r.confirmation_note {
                tool["confirmation_note"] = json!(note);
            }
            if let Some(fields) = &r.user_input_schema {
                tool["user_input_schema"] = json!(fields);
            }
            if let Some(result) = &r.external_execution_result {
                tool["result"] = json!(result);
            }
            Some(tool)
        })
        .collect();
    let mut form = Form::default();
    form.set_text("tools", Value::Array(tools).to_string());
    form.set_text("requirements", json!(requirements).to_string());
    form
}
