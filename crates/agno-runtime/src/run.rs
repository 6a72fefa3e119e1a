//! The public run API of [`Agent`]: `run` / `arun`, `run_stream`, `continue_run` /
//! `acontinue_run`, `continue_run_stream` and `cancel_run`.
//!
//! Which to use:
//! - `arun` from async code, `run` from synchronous code (it blocks; async tools still work).
//! - `run_stream` to receive [`RunEvent`]s (content deltas, tool calls, ...) as they happen; the
//!   run goes on even if the stream is dropped, and is stored as usual.
//! - `spawn_run` to start a run on its own task and await it later (a server answering a
//!   request with it: the run completes and is stored even if the request goes away).
//! - `continue_run` after a run returned `PAUSED`: resolve its requirements (confirm, reject,
//!   supply input or an external result) and pass them back.
//! - `cancel_run` from anywhere in the process, by run id.

use std::pin::Pin;
use std::task::{Context, Poll};

use agno_core::{EventData, Message, RunEvent, RunOutput, RunStatus};
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::agent::{Agent, AgentInner};
use crate::blocking::block_on;
use crate::cancel::{self, Registration};
use crate::emitter::Emitter;
use crate::error::RunError;
use crate::event_stream::{EventStream, spawn_run};
use crate::persist::load_session;
use crate::request::{ContinueFrom, ContinueRequest, RunRequest};
use crate::run_loop::{drive_new, finish, model_loop, prepare};
use crate::run_state::RunState;
use crate::tool_batch::resolve_requirement;
use crate::trace::{RunSpan, Runner};

/// An agent run's [`RunEvent`]s as they happen, and its output via [`EventStream::output`]. The
/// channel is bounded: a reader that falls behind holds the run back.
pub type RunStream = EventStream<RunEvent>;

/// A run started with [`Agent::spawn_run`] or [`Agent::spawn_continue_run`], executing on its
/// own task. Await it for the output; dropping it detaches the run, which goes on and is stored
/// as usual (cancel it by id with [`Agent::cancel_run`]).
#[derive(Debug)]
pub struct RunHandle {
    run_id: String,
    task: Option<JoinHandle<Result<RunOutput, RunError>>>,
}

impl RunHandle {
    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }
}

impl std::future::Future for RunHandle {
    type Output = Result<RunOutput, RunError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(task) = self.task.as_mut() else {
            return Poll::Ready(Err(RunError::Internal("the run could not be started".to_owned())));
        };
        match Pin::new(task).poll(cx) {
            Poll::Ready(result) => {
                self.task = None;
                Poll::Ready(result.map_err(|e| RunError::Internal(e.to_string())).and_then(|r| r))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Spawns a streamed run; with `store_events`, its events (but content deltas) are kept on the
/// stored run, as Agno does for streamed runs.
fn spawn_stream<F>(store_events: bool, make: impl FnOnce(Emitter) -> F) -> RunStream
where
    F: std::future::Future<Output = Result<RunOutput, RunError>> + Send + 'static,
{
    let (tx, rx) = crate::emitter::channel();
    let task = spawn_run("run", make(Emitter::new(Some(tx), store_events)));
    EventStream::bounded(rx, task)
}

/// Emits a `RunError` for failures that happened before the run could emit one itself.
fn close_with_error(em: &mut Emitter, result: &Result<RunOutput, RunError>) {
    if let Err(err) = result
        && !em.ended()
    {
        em.emit(EventData::RunError {
            content: Some(Value::String(err.to_string())),
            error_type: Some("AgentRunException".to_owned()),
            error_id: Some(err.error_id().to_owned()),
            additional_data: None,
        });
    }
}

/// Gives the request a run id (when it has none) and registers the run at once, so it counts
/// as running (and can be cancelled) from this moment, before its task is first polled.
fn register(request: &mut RunRequest) -> Registration {
    let run_id = request.run_id.get_or_insert_with(agno_core::new_id);
    Registration::new(run_id)
}

impl Agent {
    /// The root span of a run of this agent (none for a team's leader: its runs are the team's).
    fn run_span(
        &self,
        method: &str,
        input: impl FnOnce() -> String,
        ids: (Option<&str>, Option<&str>, Option<&str>),
    ) -> Option<RunSpan> {
        if self.inner.leads_team {
            return None;
        }
        RunSpan::start(
            Runner::Agent,
            self.inner.tracing.as_ref(),
            (&self.inner.id, self.inner.name.as_deref()),
            method,
            input,
            ids,
        )
    }

    async fn execute(self, request: RunRequest, mut em: Emitter, run: Registration) -> Result<RunOutput, RunError> {
        em.resume_after(request.durable.after_event_index);
        let ids = (request.run_id.as_deref(), request.session_id.as_deref(), request.user_id.as_deref());
        let span = self.run_span("run", || request.input.as_text(), ids);
        let work = async {
            match prepare(&self.inner, request).await {
                Ok(st) => drive_new(&self.inner, st, &mut em, run.token()).await,
                Err(e) => Err(e),
            }
        };
        let result = RunSpan::around(span, work).await;
        close_with_error(&mut em, &result);
        result
    }

    /// Runs the agent on `request` and returns the run's output (`COMPLETED`, `PAUSED` or
    /// `CANCELLED`).
    ///
    /// # Errors
    /// A [`RunError`] when the run fails; the failed run is stored with status `ERROR` and is
    /// available through [`RunError::run`].
    pub async fn arun(&self, request: impl Into<RunRequest>) -> Result<RunOutput, RunError> {
        let mut request = request.into();
        let run = register(&mut request);
        let em = Emitter::new(None, false);
        self.clone().execute(request, em, run).await
    }

    /// Starts a run on its own task, as [`Agent::arun`] would run it, and returns at once. The
    /// run is registered (visible to [`crate::running_runs`], cancellable) before this returns,
    /// and goes on even if the handle is dropped.
    pub fn spawn_run(&self, request: impl Into<RunRequest>) -> RunHandle {
        let mut request = request.into();
        let run = register(&mut request);
        let run_id = request.run_id.clone().unwrap_or_default();
        let em = Emitter::new(None, false);
        RunHandle { run_id, task: spawn_run("run", self.clone().execute(request, em, run)) }
    }

    /// Blocking version of [`Agent::arun`]. Sync and async tools both work.
    ///
    /// # Errors
    /// As [`Agent::arun`].
    pub fn run(&self, request: impl Into<RunRequest>) -> Result<RunOutput, RunError> {
        let request = request.into();
        block_on(self.arun(request)).map_err(RunError::Internal)?
    }

    /// Starts a run and streams its events; each carries a strictly increasing `event_index`.
    pub fn run_stream(&self, request: impl Into<RunRequest>) -> RunStream {
        let agent = self.clone();
        let mut request = request.into();
        let run = register(&mut request);
        let store_events = self.inner.store_events && request.store_events != Some(false);
        spawn_stream(store_events, move |em| agent.execute(request, em, run))
    }

    /// Continues a paused run with resolved requirements.
    ///
    /// # Errors
    /// [`RunError::RunNotFound`], [`RunError::NotPaused`] or
    /// [`RunError::UnresolvedRequirement`] before anything runs; otherwise as [`Agent::arun`].
    pub async fn acontinue_run(&self, request: ContinueRequest) -> Result<RunOutput, RunError> {
        let run = Registration::new(request.target_run_id());
        let em = Emitter::new(None, false);
        self.clone().execute_continue(request, em, run).await
    }

    /// Continues a paused run on its own task (see [`Agent::spawn_run`]).
    pub fn spawn_continue_run(&self, request: ContinueRequest) -> RunHandle {
        let run_id = request.target_run_id().to_owned();
        let run = Registration::new(&run_id);
        let em = Emitter::new(None, false);
        RunHandle { run_id, task: spawn_run("continuation", self.clone().execute_continue(request, em, run)) }
    }

    /// Blocking version of [`Agent::acontinue_run`].
    ///
    /// # Errors
    /// As [`Agent::acontinue_run`].
    pub fn continue_run(&self, request: ContinueRequest) -> Result<RunOutput, RunError> {
        block_on(self.acontinue_run(request)).map_err(RunError::Internal)?
    }

    /// Continues a paused run and streams its events.
    pub fn continue_run_stream(&self, request: ContinueRequest) -> RunStream {
        let agent = self.clone();
        let run = Registration::new(request.target_run_id());
        spawn_stream(self.inner.store_events, move |em| agent.execute_continue(request, em, run))
    }

    /// Requests cancellation of a run by id (see [`crate::cancel_run`]).
    pub fn cancel_run(run_id: &str) -> bool {
        cancel::cancel_run(run_id)
    }

    async fn execute_continue(
        self,
        request: ContinueRequest,
        mut em: Emitter,
        run: Registration,
    ) -> Result<RunOutput, RunError> {
        let ids = (Some(request.target_run_id()), None, request.user_id.as_deref());
        let span = self.run_span("continue_run", String::new, ids);
        let result = RunSpan::around(span, continue_inner(&self.inner, request, &mut em, run.token())).await;
        close_with_error(&mut em, &result);
        result
    }
}

async fn continue_inner(
    agent: &AgentInner,
    request: ContinueRequest,
    em: &mut Emitter,
    token: &tokio_util::sync::CancellationToken,
) -> Result<RunOutput, RunError> {
    let output = match request.from {
        ContinueFrom::Output(output) => *output,
        ContinueFrom::RunId(run_id) => {
            let Some(db) = &agent.db else {
                return Err(RunError::RunNotFound(run_id));
            };
            db.get_run(&run_id, request.user_id.as_deref()).await?.ok_or(RunError::RunNotFound(run_id))?
        }
    };
    if output.status != RunStatus::Paused {
        return Err(RunError::NotPaused { run_id: output.id().to_owned(), status: output.status });
    }
    // Every pending requirement must be answered before anything runs.
    let mut answers = Vec::new();
    for pending in output.active_requirements() {
        let answer = request
            .requirements
            .iter()
            .find(|r| r.id == pending.id || (r.tool_call_id().is_some() && r.tool_call_id() == pending.tool_call_id()));
        let call_id = pending.tool_call_id().unwrap_or_default().to_owned();
        let Some(answer) = answer else {
            return Err(RunError::UnresolvedRequirement { tool_call_id: call_id, what: "no answer was given" });
        };
        if answer.needs_confirmation() {
            return Err(RunError::UnresolvedRequirement { tool_call_id: call_id, what: "confirm or reject it" });
        }
        if answer.needs_user_input() {
            return Err(RunError::UnresolvedRequirement { tool_call_id: call_id, what: "provide the user input" });
        }
        if answer.needs_external_execution() {
            return Err(RunError::UnresolvedRequirement { tool_call_id: call_id, what: "set the external result" });
        }
        answers.push(answer.clone());
    }

    let session_id = output.session_id.clone().unwrap_or_default();
    let user_id = request.user_id.clone().or_else(|| output.user_id.clone());
    let store = request.store.unwrap_or(true);
    let (session, fold) = if store {
        load_session(agent, &session_id, user_id.as_deref(), agent.history.add_history_to_context).await?
    } else {
        (crate::persist::new_session(agent, &session_id, user_id.as_deref()), None)
    };
    let state = output.session_state.clone().or_else(|| session.session_state().cloned()).unwrap_or_default();
    let mut messages: Vec<Message> = Vec::new();
    let stored = output.messages().to_vec();
    let split = stored.iter().take_while(|m| m.role == agno_core::Role::System).count();
    messages.extend_from_slice(&stored[..split]);
    match &agent.compaction {
        Some(c) if agent.history.add_history_to_context && store => {
            messages.extend(crate::compaction::history_for_continue(agent, c, &session, fold.as_ref()));
        }
        _ if agent.history.add_history_to_context && store => {
            messages.extend(session.history_messages(agent.history.runs_limit(), agent.history.num_history_messages));
        }
        _ => {}
    }
    messages.extend_from_slice(&stored[split..]);

    let client = request.client.clone();
    // The run's user, so that the tools bound to a user (memories, learning) are the same as
    // before the pause.
    let again = RunRequest { store: Some(store), client, user_id: user_id.clone(), ..RunRequest::new("") };
    let mut prepared = prepare(agent, again.session_id(&session_id)).await?;
    prepared.output = output;
    prepared.output.status = RunStatus::Running;
    prepared.messages = messages;
    prepared.session = session;
    prepared.user_id = user_id;
    prepared.initial_state = state.clone();
    prepared.reported_state = request.client.follows_state.then(|| state.clone());
    prepared.session_state = std::sync::Arc::new(std::sync::Mutex::new(state));
    prepared.tool_calls_made = prepared.output.tools.iter().flatten().count();
    prepared.fence = request.durable.fence.clone();
    // What the paused save already added to the session's metrics.
    prepared.metrics_counted.clone_from(&prepared.output.metrics);
    let mut st: RunState = prepared;

    em.bind(&agent.id, agent.name.as_deref().unwrap_or_default(), st.output.id(), &st.session.session_id);
    em.resume_after(st.output.events.iter().flatten().filter_map(|e| e.event_index).max());
    em.resume_after(request.durable.after_event_index);
    em.emit(EventData::RunContinued {});
    for answer in &answers {
        resolve_requirement(&mut st, answer, em, token).await;
    }
    // Record the answers on the run.
    if let Some(reqs) = st.output.requirements.as_mut() {
        for req in reqs.iter_mut() {
            if let Some(answer) = answers.iter().find(|a| a.id == req.id || a.tool_call_id() == req.tool_call_id()) {
                *req = answer.clone();
            }
        }
    }
    let stop = answers.iter().filter_map(|a| a.tool_execution.as_ref()).any(|t| t.stop_after_tool_call);
    let end = if stop {
        // As a run that stops after a tool call: the tool's result is the answer.
        let last = st.messages.last().and_then(Message::content_text).unwrap_or_default().to_owned();
        st.output.content = Some(serde_json::Value::String(last));
        crate::run_loop::LoopEnd::Completed
    } else {
        model_loop(agent, &mut st, em, token).await
    };
    finish(agent, &mut st, em, end).await
}
