//! `/queue`: the operator's view of the durable queue (admin only): list jobs, read one, requeue
//! a failed or cancelled one, and per-status counts.

use crate::routes::query::Query;
use agno_core::JobStatus;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use super::params::Paging;
use crate::error::{ApiError, ApiResult};
use crate::queue::{Queue, Requeued};
use crate::state::AppState;

fn queue(state: &AppState) -> ApiResult<&Queue> {
    state.queue.as_ref().ok_or_else(|| {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "this AgentOS has no durable queue: configure [db] url")
    })
}

fn parse_status(text: &str) -> ApiResult<JobStatus> {
    JobStatus::parse(text).ok_or_else(|| {
        ApiError::unprocessable(format!(
            "unknown job status {text:?}: use queued, running, paused, completed, failed or cancelled"
        ))
    })
}

/// Query of `GET /queue/jobs`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct JobsQuery {
    #[schemars(extend("enum" = ["queued", "running", "paused", "completed", "failed", "cancelled"]))]
    status: Option<String>,
    #[schemars(range(min = 1, max = 1000))]
    limit: Option<usize>,
    #[schemars(range(min = 1, max = i64::MAX))]
    page: Option<usize>,
}

/// `GET /queue/jobs?status=&limit=&page=`: jobs, newest first.
pub async fn list_jobs(State(state): State<AppState>, Query(q): Query<JobsQuery>) -> ApiResult<Json<Value>> {
    let queue = queue(&state)?;
    let paging = Paging::new(q.limit, q.page)?;
    let status = q.status.as_deref().map(parse_status).transpose()?;
    let (jobs, total) = queue.store.list_jobs(status, Some(paging.limit), Some(paging.page.max(1))).await?;
    let data = jobs.iter().map(job_json).collect();
    Ok(paging.respond(data, total))
}

/// `GET /queue/jobs/{job_id}`.
pub async fn get_job(State(state): State<AppState>, Path(job_id): Path<String>) -> ApiResult<Json<Value>> {
    let job = queue(&state)?.store.get_job(&job_id, None).await?;
    let job = job.ok_or_else(|| ApiError::not_found(format!("Job {job_id} not found")))?;
    Ok(Json(job_json(&job)))
}

/// A job as JSON; an ingestion's payload shows the size of its content's bytes rather than the
/// bytes (up to the upload limit, base64).
fn job_json(job: &agno_core::Job) -> Value {
    let mut value = serde_json::to_value(job).unwrap_or(Value::Null);
    if job.job_type() == Some(agno_core::JobType::Ingest)
        && let Some(payload) = value.get_mut("payload").and_then(Value::as_object_mut)
        && let Some(Value::String(bytes)) = payload.remove("bytes")
    {
        payload.insert("bytes_base64_length".to_owned(), json!(bytes.len()));
    }
    value
}

/// `POST /queue/jobs/{job_id}/requeue`: a failed or cancelled job runs again (its run goes back
/// to `PENDING`); 409 for a job in another state.
pub async fn requeue_job(State(state): State<AppState>, Path(job_id): Path<String>) -> ApiResult<Json<Value>> {
    let queue = queue(&state)?;
    match crate::queue::requeue(queue.store.as_ref(), state.require_db()?.as_ref(), &job_id).await? {
        Requeued::Missing => Err(ApiError::not_found(format!("Job {job_id} not found"))),
        Requeued::Refused(status) => Err(ApiError::conflict(format!(
            "job {job_id} is {}: only failed or cancelled jobs are requeued",
            status.as_str()
        ))),
        Requeued::Done(job) => {
            queue.signal(agno_core::JobSignal::Claimable(job.id.clone()));
            Ok(Json(job_json(&job)))
        }
    }
}

/// `GET /queue/stats`: jobs per status and this replica's limits.
pub async fn stats(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    let queue = queue(&state)?;
    let counts: serde_json::Map<String, Value> = crate::queue::counts(queue.store.as_ref())
        .await?
        .into_iter()
        .map(|(status, total)| (status.as_str().to_owned(), json!(total)))
        .collect();
    Ok(Json(json!({
        "jobs": counts,
        "worker_id": &*queue.worker_id,
        "max_concurrency": queue.settings.max_concurrency,
        "max_queue_depth": queue.settings.max_queue_depth,
        "max_attempts": queue.settings.max_attempts,
        "lock_grace_seconds": queue.settings.lock_grace_seconds,
        "claim_latency_ms": queue.claims.percentiles().map(|(p50, p99, samples)| json!({
            "p50": p50, "p99": p99, "samples": samples,
        })),
    })))
}
