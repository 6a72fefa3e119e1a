//! Executing one schedule: call its endpoint on this OS, in process, as the schedule's owner;
//! follow a run endpoint's background run to its end; record every attempt as a schedule run.
//!
//! A run endpoint (`POST /agents|teams|workflows/{id}/runs`) is called as Agno's executor calls
//! it: the payload as form fields with `stream=false`, `background=true` and `user_id` set to
//! the owner; then `GET .../runs/{run_id}?session_id=` until the run is `COMPLETED` (success),
//! `PAUSED` (paused, with its requirements), `ERROR` or `CANCELLED` (failed), or
//! `timeout_seconds` pass (failed). Any other endpoint gets the payload as JSON; a 2xx answer
//! is success. A failed attempt is retried `max_retries` times, `retry_delay_seconds` apart.

use std::sync::LazyLock;
use std::time::Duration;

use agno_core::{DbResult, Schedule, ScheduleRun, ScheduleRunUpdate, now_epoch_secs};
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::auth::InternalCaller;
use crate::in_process::Loopback;
use crate::state::AppState;

/// Agno's `_RUN_ENDPOINT_RE`.
static RUN_ENDPOINT: LazyLock<regex::Regex> = LazyLock::new(|| {
    #[allow(clippy::unwrap_used)] // a constant pattern
    regex::Regex::new(r"^/(agents|teams|workflows)/([^/]+)/runs/?$").unwrap()
});

/// Largest response body read from an internal call.
const BODY_LIMIT: usize = 16 * 1024 * 1024;

/// Calls endpoints of one OS as schedules' owners.
#[derive(Clone)]
pub struct Executor {
    state: AppState,
    routes: Loopback,
    run_poll: Duration,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor").field("run_poll", &self.run_poll).finish_non_exhaustive()
    }
}

/// What one attempt ended with.
#[derive(Debug, Default)]
struct Outcome {
    status: &'static str,
    status_code: Option<i64>,
    error: Option<String>,
    run_id: Option<String>,
    session_id: Option<String>,
    output: Option<Value>,
    requirements: Option<Value>,
}

impl Outcome {
    fn failed(status_code: Option<StatusCode>, error: impl Into<String>) -> Self {
        Self {
            status: "failed",
            status_code: status_code.map(|s| i64::from(s.as_u16())),
            error: Some(error.into()),
            ..Self::default()
        }
    }
}

/// A payload value as a form field (Agno's `_to_form_value`).
fn form_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "None".to_owned(),
        other => other.to_string(),
    }
}

impl Executor {
    /// An executor over `state`'s routes (with the authorisation layer, which lets internal
    /// calls through as their owner). `run_poll` is how often a background run is looked at.
    pub fn new(state: &AppState, run_poll: Duration) -> Self {
        Self {
            state: state.clone(),
            routes: crate::routes::loopback(state),
            run_poll: run_poll.max(Duration::from_millis(10)),
        }
    }

    /// Runs `schedule` now: up to `max_retries + 1` attempts, each recorded as a schedule run
    /// (`running`, then its outcome). Returns the last attempt's row.
    ///
    /// # Errors
    /// When a schedule run cannot be stored.
    pub async fn execute(&self, schedule: &Schedule, cancel: &CancellationToken) -> DbResult<ScheduleRun> {
        let db = self.state.db.as_ref().ok_or_else(|| {
            agno_core::DbError::new(agno_core::DbErrorKind::Other, "schedules need a database: configure [db]")
        })?;
        let attempts = schedule.max_retries.clamp(0, 10) + 1;
        let mut last = None;
        for attempt in 1..=attempts {
            let mut run = ScheduleRun::new(&schedule.id);
            run.attempt = attempt;
            run.triggered_at = Some(now_epoch_secs());
            run.user_id.clone_from(&schedule.user_id);
            let run = db.create_schedule_run(&run).await?;
            let outcome = tokio::select! {
                outcome = self.attempt(schedule) => outcome,
                () = cancel.cancelled() => {
                    // The replica is stopping: the run (durable) goes on, this follower does not.
                    let update = ScheduleRunUpdate {
                        status: Some("cancelled".to_owned()),
                        completed_at: Some(Some(now_epoch_secs())),
                        error: Some(Some("Execution cancelled during shutdown".to_owned())),
                        ..ScheduleRunUpdate::default()
                    };
                    return Ok(db.update_schedule_run(&run.id, &update).await?.unwrap_or(run));
                }
            };
            tracing::info!(
                schedule = %schedule.name, schedule_id = %schedule.id, attempt, status = outcome.status,
                run_id = outcome.run_id.as_deref().unwrap_or(""), "schedule fired"
            );
            let update = ScheduleRunUpdate {
                status: Some(outcome.status.to_owned()),
                completed_at: Some(Some(now_epoch_secs())),
                status_code: Some(outcome.status_code),
                run_id: Some(outcome.run_id),
                session_id: Some(outcome.session_id),
                error: Some(outcome.error),
                output: Some(outcome.output),
                requirements: Some(outcome.requirements),
                ..ScheduleRunUpdate::default()
            };
            let stored = db.update_schedule_run(&run.id, &update).await?.unwrap_or(run);
            let done = matches!(outcome.status, "success" | "paused");
            last = Some(stored);
            if done {
                break;
            }
            if attempt < attempts {
                let delay = u64::try_from(schedule.retry_delay_seconds.max(0)).unwrap_or(0);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(delay)) => {}
                    () = cancel.cancelled() => break,
                }
            }
        }
        // At least one attempt ran.
        last.ok_or_else(|| agno_core::DbError::new(agno_core::DbErrorKind::Other, "no attempt ran"))
    }

    async fn attempt(&self, schedule: &Schedule) -> Outcome {
        let method = Method::from_bytes(schedule.method.to_ascii_uppercase().as_bytes()).unwrap_or(Method::POST);
        let payload = schedule.payload.as_ref().and_then(Value::as_object).cloned().unwrap_or_default();
        let timeout = Duration::from_secs(u64::try_from(schedule.timeout_seconds.max(1)).unwrap_or(3600));
        if method == Method::POST
            && let Some((family, id)) = run_target(&schedule.endpoint)
        {
            return self.background_run(schedule, family, id, payload, timeout).await;
        }
        let body = (!payload.is_empty()).then(|| Value::Object(payload));
        let owner = schedule.user_id.as_deref();
        match tokio::time::timeout(timeout, self.request(&method, &schedule.endpoint, body, owner)).await {
            Err(_) => Outcome::failed(
                None,
                format!("{} {} took longer than {}s", method, schedule.endpoint, timeout.as_secs()),
            ),
            Ok(Err(e)) => Outcome::failed(None, e),
            Ok(Ok((status, _))) if status.is_success() => {
                Outcome { status: "success", status_code: Some(i64::from(status.as_u16())), ..Outcome::default() }
            }
            Ok(Ok((status, text))) => Outcome::failed(Some(status), text),
        }
    }

    /// One request to this OS, in process, as `owner` (an admin when `None`; see
    /// [`crate::auth::Principal::internal`]) with an optional JSON body: the status and the body
    /// as text. `agno schedule` manages schedules through it, with the routes' own checks.
    ///
    /// # Errors
    /// When the request cannot be built or its body read.
    pub async fn request(
        &self,
        method: &Method,
        uri: &str,
        body: Option<Value>,
        owner: Option<&str>,
    ) -> Result<(StatusCode, String), String> {
        let mut builder = Request::builder().method(method).uri(uri);
        let body = match body {
            Some(json) => {
                builder = builder.header(header::CONTENT_TYPE, "application/json");
                Body::from(json.to_string())
            }
            None => Body::empty(),
        };
        self.send(builder, body, owner).await
    }

    /// Sends a request to this OS's router as `owner`; the status and the body as text.
    async fn send(
        &self,
        builder: axum::http::request::Builder,
        body: Body,
        owner: Option<&str>,
    ) -> Result<(StatusCode, String), String> {
        let uri = builder.uri_ref().map(ToString::to_string).unwrap_or_default();
        let mut request = builder.body(body).map_err(|e| format!("bad request for {uri}: {e}"))?;
        request.extensions_mut().insert(InternalCaller { owner: owner.map(str::to_owned) });
        let (status, bytes) = self.routes.send(request, BODY_LIMIT).await?;
        Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
    }

    async fn background_run(
        &self,
        schedule: &Schedule,
        family: &str,
        id: &str,
        payload: Map<String, Value>,
        timeout: Duration,
    ) -> Outcome {
        let form = {
            let mut form = form_urlencoded::Serializer::new(String::new());
            for (key, value) in &payload {
                if !matches!(key.as_str(), "stream" | "background" | "user_id" | "version" | "agno_component_version") {
                    form.append_pair(key, &form_value(value));
                }
            }
            form.append_pair("stream", "false").append_pair("background", "true");
            if let Some(owner) = &schedule.user_id {
                form.append_pair("user_id", owner);
            }
            form.finish()
        };
        let builder = Request::builder()
            .method(Method::POST)
            .uri(&schedule.endpoint)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        let (status, text) = match self.send(builder, Body::from(form), schedule.user_id.as_deref()).await {
            Ok(answer) => answer,
            Err(e) => return Outcome::failed(None, e),
        };
        if !status.is_success() {
            return Outcome::failed(Some(status), text);
        }
        let body: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(_) => {
                return Outcome::failed(Some(status), format!("Invalid JSON in background run response: {text:.500}"));
            }
        };
        let field = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_owned);
        let (Some(run_id), Some(session_id)) = (field("run_id"), field("session_id")) else {
            return Outcome::failed(
                Some(status),
                format!("Missing run_id or session_id in background run response: {body}"),
            );
        };
        let poll_uri = format!("/{family}/{id}/runs/{run_id}?session_id={}", urlencode(&session_id));
        let deadline = tokio::time::Instant::now() + timeout;
        let mut outcome = loop {
            if tokio::time::Instant::now() >= deadline {
                break Outcome::failed(
                    None,
                    format!("Polling timed out after {}s for run {run_id}", timeout.as_secs()),
                );
            }
            match self.request(&Method::GET, &poll_uri, None, schedule.user_id.as_deref()).await {
                Err(e) => tracing::warn!(error = %e, run_id, "cannot read a scheduled run"),
                // Not stored yet.
                Ok((StatusCode::NOT_FOUND, _)) => {}
                Ok((status, text)) if !status.is_success() => break Outcome::failed(Some(status), text),
                Ok((status, text)) => {
                    let data: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                    if let Some(done) = terminal(&data, status) {
                        break done;
                    }
                }
            }
            tokio::time::sleep(self.run_poll).await;
        };
        outcome.run_id = Some(run_id);
        outcome.session_id = Some(session_id);
        outcome
    }
}

/// The outcome of a run whose status is terminal, else `None`.
fn terminal(data: &Value, status: StatusCode) -> Option<Outcome> {
    let run_status = data.get("status").and_then(Value::as_str)?;
    let error = || data.get("error").and_then(Value::as_str).map(str::to_owned);
    let (status_text, error) = match run_status {
        "COMPLETED" => ("success", None),
        "PAUSED" => ("paused", None),
        "CANCELLED" => ("failed", Some(error().unwrap_or_else(|| "Run was cancelled".to_owned()))),
        "ERROR" => ("failed", Some(error().unwrap_or_else(|| format!("Run failed with status {run_status}")))),
        _ => return None,
    };
    let output = data
        .get("content")
        .filter(|c| !c.is_null())
        .map(|c| serde_json::json!({"content": c, "content_type": data.get("content_type")}));
    let requirements =
        (run_status == "PAUSED").then(|| data.get("requirements").filter(|r| r.is_array()).cloned()).flatten();
    Some(Outcome {
        status: status_text,
        status_code: Some(i64::from(status.as_u16())),
        error,
        output,
        requirements,
        ..Outcome::default()
    })
}

fn urlencode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The `(family, id)` a run endpoint (`/agents/{id}/runs`, ...) addresses, else `None`.
pub fn run_target(endpoint: &str) -> Option<(&str, &str)> {
    let found = RUN_ENDPOINT.captures(endpoint)?;
    Some((found.get(1)?.as_str(), found.get(2)?.as_str()))
}

/// Whether `endpoint` (a path, no query) names a route of this OS for `method`.
pub fn is_os_route(method: &str, endpoint: &str) -> bool {
    let Ok(method) = Method::from_bytes(method.as_bytes()) else { return false };
    let path = endpoint.split('?').next().unwrap_or_default().trim_end_matches('/');
    let segments: Vec<&str> = path.split('/').collect();
    crate::routes::ROUTES.iter().any(|route| {
        route.method == method && {
            let template: Vec<&str> = route.path.split('/').collect();
            template.len() == segments.len()
                && template.iter().zip(&segments).all(|(t, s)| {
                    (t.starts_with('{') && t.ends_with('}') && !s.is_empty() && !t.starts_with("{*")) || t == s
                })
        }
    })
}
