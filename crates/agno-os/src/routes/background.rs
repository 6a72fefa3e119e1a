//! What every component's `background=true` shares: the queue (or why there is none), committing
//! a job behind its `PENDING` run, and queueing a paused run's continuation under its run id; and
//! committing a knowledge upload's ingestion job behind its `processing` row.

use agno_core::{Job, RunOutput, RunStatus};
use agno_runtime::RunSpec;
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::queue::Queue;
use crate::queue::ingest::IngestSpec;
use crate::state::AppState;

/// The job queue, or 400 naming the databases that have one.
pub(crate) fn queue_of(state: &AppState) -> ApiResult<&Queue> {
    if state.db.is_none() {
        return Err(ApiError::bad_request(
            "background runs need a database: configure [db] url (sqlite://, postgresql://) in agentos.toml",
        ));
    }
    state.queue.as_ref().ok_or_else(|| {
        ApiError::bad_request(
            "this database (JSON files) has no job queue; use sqlite://, postgresql://, mysql://, redis:// or memory:// for background runs",
        )
    })
}

/// 202 `{run_id, session_id, status}`, or (with `stream`) a tail of the run's events from the
/// start.
fn accepted(state: &AppState, queue: &Queue, job: &Job, status: &str, stream: bool) -> ApiResult<Response> {
    if stream {
        return tail_response(state, queue, job.id.clone(), -1);
    }
    Ok((StatusCode::ACCEPTED, Json(json!({"run_id": job.id, "session_id": job.session_id, "status": status})))
        .into_response())
}

/// `background=true` for a run of any kind: commits the job whose payload is `spec` behind the
/// `PENDING` record of its run (and its session, when new), then answers 202 `{run_id,
/// session_id, status}` or (with `stream`) tails the run's events. A worker on any replica runs
/// the same spec, writing through its claim and logging its events (`/resume`).
pub(crate) async fn submit(
    state: &AppState,
    spec: &RunSpec,
    stream: bool,
    idempotency_key: Option<String>,
) -> ApiResult<Response> {
    let committed = commit(state, spec, idempotency_key).await?;
    accepted(state, queue_of(state)?, &committed.job, committed.status.as_str(), stream)
}

/// A background run's committed job: the one just accepted, or the original of a repeated
/// `Idempotency-Key`, with its run's status.
#[derive(Debug)]
pub(crate) struct Committed {
    /// The job.
    pub job: Job,
    /// Its run's status (`PENDING` when just accepted).
    pub status: RunStatus,
}

/// Commits the job whose payload is `spec` together with its `PENDING` run (and its session,
/// when new), so a worker never sees the job before its run and its `RUNNING` write can never be
/// overwritten by it. The same idempotency key from the same user answers the original run (409
/// when it was for another component); a full queue answers 429. A job that is not accepted
/// leaves neither run nor session behind (one transaction on the SQL databases).
pub(crate) async fn commit(state: &AppState, spec: &RunSpec, idempotency_key: Option<String>) -> ApiResult<Committed> {
    let queue = queue_of(state)?;
    // A catalog component's run names the version it was asked of: a publish while it waits
    // does not change what it runs.
    let pinned;
    let spec = match (spec.component_version, state.published_version(spec.kind, &spec.component_id)) {
        (None, Some(version)) => {
            pinned = RunSpec { component_version: Some(version), ..spec.clone() };
            &pinned
        }
        _ => spec,
    };
    let mut job = Job::run(spec.kind, &spec.run_id, &spec.component_id, &spec.session_id, spec.to_payload());
    job.user_id.clone_from(&spec.user_id);
    job.idempotency_key = idempotency_key;
    job.max_attempts = queue.settings.max_attempts.max(1);
    let (session, run) = crate::queue::pending_parts(state, &job, spec)
        .await
        .ok_or_else(|| ApiError::not_found(format!("{} {} not found", spec.kind, spec.component_id)))?;
    let pending = agno_core::PendingRun { session: &session, run: &run };
    let db = state.require_db()?;
    match queue.store.enqueue_run(&job, queue.settings.max_queue_depth, pending).await? {
        agno_core::Enqueued::Accepted(job) => {
            queue.signal(agno_core::JobSignal::Claimable(job.id.clone()));
            Ok(Committed { job, status: RunStatus::Pending })
        }
        agno_core::Enqueued::Duplicate(original) if original.component_id == job.component_id => {
            let status = db.get_run(&original.id, None).await?.map_or(RunStatus::Pending, |run| run.status);
            Ok(Committed { job: original, status })
        }
        agno_core::Enqueued::Duplicate(_) => {
            Err(ApiError::conflict("this Idempotency-Key was already used for another component"))
        }
        agno_core::Enqueued::QueueFull => Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            format!("the queue is full ({} runs waiting); retry later", queue.settings.max_queue_depth),
        )),
    }
}

/// Queues the continuation of the paused background run `run` under its run id (the run is
/// `PENDING` again, and stored so, until a worker picks it up); a continuation already queued is
/// attached to. Answers the index of the run's last logged event before the continuation, where a tail of
/// the continued run starts.
pub(crate) async fn requeue_paused(
    state: &AppState,
    queue: &Queue,
    run: &mut RunOutput,
    continuation: &Value,
) -> ApiResult<i64> {
    let run_id = run.id().to_owned();
    let run_id = run_id.as_str();
    // Read before the continuation is queued: a worker may claim it and log (even finish) it
    // before this request reads on.
    let after = queue.store.last_event_index(run_id).await?.unwrap_or(-1);
    match queue.store.continue_job(run_id, continuation, agno_core::now_epoch_secs()).await? {
        agno_core::Continued::Queued(job) => {
            run.status = RunStatus::Pending;
            state.require_db()?.upsert_run(run, &job.session_id, job.user_id.as_deref()).await?;
            queue.signal(agno_core::JobSignal::Claimable(run_id.to_owned()));
        }
        agno_core::Continued::Attach(_) => run.status = RunStatus::Pending,
        agno_core::Continued::Conflict(job) => {
            let status = job.map_or("missing (the run was not started in the background)", |j| j.status.as_str());
            return Err(ApiError::conflict(format!(
                "Run {run_id} cannot be continued in the background: its job is {status}"
            )));
        }
    }
    Ok(after)
}

/// The end of `POST .../runs/{run_id}/cancel` once the caller's access to the run is checked
/// (`stored`: the run, when there is a database): a queued or running background run is
/// cancelled through its job (from any replica), a run executing here directly; 200 `{}` also
/// for a run that already ended (as Agno answers), 409 for a run that runs in no process that
/// answers for it, 404 for none.
pub(crate) async fn cancel(state: &AppState, run_id: &str, stored: Option<RunOutput>) -> ApiResult<Response> {
    let ok = || Ok((StatusCode::OK, Json(json!({}))).into_response());
    if let Some(run) = &stored
        && let Some(answer) = cancel_queued(state, run).await?
    {
        return Ok(answer);
    }
    if agno_runtime::cancel_run(run_id) {
        return ok();
    }
    match stored {
        Some(run) if run.status.is_terminal() => ok(),
        Some(_) => Err(ApiError::conflict(format!("Run {run_id} is not running in this process"))),
        None => Err(ApiError::not_found(format!("Run {run_id} not found"))),
    }
}

/// The cancel of a background run (`None` when the run has no job): recorded in the database, so
/// it holds from any replica and even before the run starts. A queued or paused run ends here;
/// a running one is stopped by its worker (at once here or through the notification, else at its
/// next heartbeat), which records the partial output and `RunCancelled`; an ended one stays as it
/// ended (Agno answers 200).
pub(crate) async fn cancel_queued(state: &AppState, run: &agno_core::RunOutput) -> ApiResult<Option<Response>> {
    let Some(queue) = &state.queue else { return Ok(None) };
    let run_id = run.id().to_owned();
    let Some(job) = queue.store.get_job(&run_id, None).await? else { return Ok(None) };
    match queue.store.cancel_job(&run_id, agno_core::now_epoch_secs()).await? {
        Some(agno_core::JobStatus::Queued | agno_core::JobStatus::Paused) => {
            let mut run = run.clone();
            run.status = RunStatus::Cancelled;
            let session_id = run.session_id.clone().unwrap_or_default();
            state.require_db()?.upsert_run(&run, &session_id, run.user_id.as_deref()).await?;
            queue.signal(agno_core::JobSignal::Events(run_id.clone()));
        }
        Some(_) => queue.signal(agno_core::JobSignal::Cancelled(run_id.clone())),
        None => tracing::debug!(run = %run_id, status = job.status.as_str(), "cancel of an ended background run"),
    }
    Ok(Some((StatusCode::OK, Json(json!({}))).into_response()))
}

/// Commits the ingestion job of `spec`, whose `processing` row is stored. A full queue answers
/// 429 and a storage error its status; either way the row ends `failed` with the reason rather
/// than `processing` for good.
pub(crate) async fn enqueue_ingestion(
    state: &AppState,
    queue: &Queue,
    spec: &IngestSpec,
    job_id: Option<String>,
) -> ApiResult<()> {
    let mut job = spec.job(queue.settings.max_attempts);
    if let Some(id) = job_id {
        job.id = id;
    }
    let refused = match queue.store.enqueue_job(&job, queue.settings.max_queue_depth).await {
        Ok(agno_core::Enqueued::Accepted(job) | agno_core::Enqueued::Duplicate(job)) => {
            queue.signal(agno_core::JobSignal::Claimable(job.id));
            return Ok(());
        }
        Ok(agno_core::Enqueued::QueueFull) => ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            format!("the queue is full ({} jobs waiting); upload again later", queue.settings.max_queue_depth),
        ),
        Err(e) => ApiError::from(e),
    };
    if let Some(db) = &state.db {
        crate::queue::ingest::end_content(db.as_ref(), &spec.content_id, &refused.detail).await;
    }
    Err(refused)
}

/// An SSE response tailing a background run's event log after index `after`, until the run ends.
pub(crate) fn tail_response(state: &AppState, queue: &Queue, run_id: String, after: i64) -> ApiResult<Response> {
    Ok(crate::sse::replay(tail_frames(state, queue, run_id, after)?, state.streaming()))
}

/// The queue that holds `run_id`'s job: a run started (or continued) in the background, on any
/// replica; `None` for a run that is not on the queue, or without one.
pub(crate) async fn queue_holding<'a>(state: &'a AppState, run_id: &str) -> ApiResult<Option<&'a Queue>> {
    let Some(queue) = &state.queue else { return Ok(None) };
    Ok(queue.store.get_job(run_id, None).await?.is_some().then_some(queue))
}

/// The frames of a background run's event log after index `after`, as they are logged, until the
/// run ends (what [`tail_response`] sends; an interface translates them).
pub(crate) fn tail_frames(
    state: &AppState,
    queue: &Queue,
    run_id: String,
    after: i64,
) -> ApiResult<impl futures::Stream<Item = crate::sse::Frame> + Send + 'static> {
    let source = crate::tail::TailSource {
        jobs: queue.store.clone(),
        db: state.require_db()?.clone(),
        waiters: queue.waiters.clone(),
        poll: std::time::Duration::from_millis(queue.settings.poll_interval_ms.max(50)),
        stop: state.stopping.clone(),
    };
    Ok(crate::tail::tail(source, run_id, after))
}
