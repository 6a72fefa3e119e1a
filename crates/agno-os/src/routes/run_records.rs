//! The stored-run routes, written once for every component kind: `GET /{agents|teams|workflows}
//! /{id}/runs` (a session's runs), `GET .../runs/{run_id}` and `POST .../runs/{run_id}/cancel`.
//! A handler is instantiated per kind (`list_runs::<Agents>`, see [`Kind`]); what differs
//! between kinds (Agno's messages, which runs belong to a component, the shape of a listed run)
//! is decided here by [`ComponentKind`], nowhere else.

use crate::routes::guard::Caller;
use agno_core::{ComponentKind, RunOutput, RunQuery, RunStatus, SortOrder};
use axum::Json;
use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::component::{Kind, runnable};
use super::sessions::schema;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::routes::query::Query;
use crate::state::AppState;

/// Whether `run` is a run of the component (a team's or a workflow's own run, not one of its
/// members').
pub(crate) fn belongs(run: &RunOutput, kind: ComponentKind, id: &str) -> bool {
    match kind {
        ComponentKind::Agent => run.agent_id.as_deref() == Some(id),
        ComponentKind::Team => run.agent_id.is_none() && run.extra.get("team_id").and_then(Value::as_str) == Some(id),
        ComponentKind::Workflow => run.agent_id.is_none() && run.workflow_id.as_deref() == Some(id),
    }
}

/// Narrows `query` to the runs of the component `id` of `kind` (as stored: an agent's
/// `agent_id`, a team's `team_id`, a workflow's `workflow_id`; [`belongs`] says which rows truly are).
pub(crate) fn only_component(query: &mut RunQuery, kind: ComponentKind, id: &str) {
    let id = Some(id.to_owned());
    match kind {
        ComponentKind::Agent => query.agent_id = id,
        ComponentKind::Team => query.team_id = id,
        ComponentKind::Workflow => query.workflow_id = id,
    }
}

/// Query of `GET /{kind}s/{id}/runs`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RunsQuery {
    /// The session whose runs are listed (required, as in Agno).
    #[schemars(required, length(min = 1))]
    session_id: Option<String>,
    /// Only runs of this status (any case).
    #[schemars(regex(
        pattern = r"^(?:[Pp][Ee][Nn][Dd][Ii][Nn][Gg]|[Rr][Uu][Nn][Nn][Ii][Nn][Gg]|[Cc][Oo][Mm][Pp][Ll][Ee][Tt][Ee][Dd]|[Pp][Aa][Uu][Ss][Ee][Dd]|[Cc][Aa][Nn][Cc][Ee][Ll][Ll][Ee][Dd]|[Ee][Rr][Rr][Oo][Rr]|[Rr][Ee][Gg][Ee][Nn][Ee][Rr][Aa][Tt][Ee][Dd])$"
    ))]
    status: Option<String>,
    /// At most this many runs (the oldest).
    #[schemars(range(min = 1, max = i64::MAX))]
    limit: Option<usize>,
}

/// Query carrying an optional `session_id`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SessionQuery {
    session_id: Option<String>,
}

fn parse_status(text: &str) -> ApiResult<RunStatus> {
    serde_json::from_value(Value::String(text.to_uppercase()))
        .map_err(|_| ApiError::unprocessable(format!("unknown run status {text:?}")))
}

/// The caller's stored run `run_id` of the component (in `session_id` when given), or 404.
pub(crate) async fn stored_run<K: Kind>(
    state: &AppState,
    principal: &Principal,
    id: &str,
    run_id: &str,
    session_id: Option<&str>,
) -> ApiResult<RunOutput> {
    let db = state.require_db()?;
    let run = db.get_run(run_id, principal.user_scope(None).as_deref()).await?;
    run.filter(|r| belongs(r, K::KIND, id))
        .filter(|r| session_id.filter(|s| !s.is_empty()).is_none_or(|s| r.session_id.as_deref() == Some(s)))
        .ok_or_else(|| ApiError::not_found(format!("Run {run_id} not found")))
}

/// `GET /{kind}s/{id}/runs?session_id=&status=&limit=`: the component's own runs in one of the
/// caller's sessions, oldest first, each as Agno's run schema of the kind. `session_id` is
/// required; a session the caller cannot see answers 404.
pub async fn list_runs<K: Kind>(
    Caller { state, principal }: Caller,
    Path(id): Path<String>,
    Query(q): Query<RunsQuery>,
) -> ApiResult<Json<Value>> {
    let kind = K::KIND;
    runnable::<K>(&state, &principal, &id)?;
    let db = state.require_db()?;
    let session_id = q.session_id.filter(|s| !s.is_empty()).ok_or_else(|| ApiError::missing("query", "session_id"))?;
    let user = principal.user_scope(None);
    if db.get_session(&session_id, user.as_deref(), Some(0)).await?.is_none() {
        return Err(ApiError::not_found(format!("Session {session_id} not found")));
    }
    let status = q.status.as_deref().map(parse_status).transpose()?;
    let mut query = RunQuery {
        session_id: Some(session_id),
        user_id: user,
        status,
        limit: Some(500),
        sort: SortOrder::Asc,
        ..RunQuery::default()
    };
    only_component(&mut query, kind, &id);
    let mut runs = Vec::new();
    loop {
        let page = db.get_runs(&query).await?;
        let own = page.runs.into_iter().filter(|r| belongs(r, kind, &id));
        // A team's own runs only: not those of a nested team with its id.
        runs.extend(own.filter(|r| kind != ComponentKind::Team || r.parent_run_id.is_none()));
        match page.next_cursor {
            Some(next) if q.limit.is_none_or(|l| runs.len() < l) => query.cursor = Some(next),
            _ => break,
        }
    }
    if let Some(limit) = q.limit {
        runs.truncate(limit);
    }
    let runs = runs
        .iter()
        .map(|run| {
            schema::to_map(run).map(|r| match kind {
                ComponentKind::Agent => schema::agent_run_schema(&r, None),
                ComponentKind::Team => schema::team_run_schema(&r),
                ComponentKind::Workflow => schema::workflow_run_schema(&r),
            })
        })
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(Json(Value::Array(runs)))
}

/// `GET /{kind}s/{id}/runs/{run_id}?session_id=`: the stored run. An agent's run answers as Agno
/// answers it (`events` always a list, `tools` only when some ran).
pub async fn get_run<K: Kind>(
    Caller { state, principal }: Caller,
    Path((id, run_id)): Path<(String, String)>,
    Query(q): Query<SessionQuery>,
) -> ApiResult<Response> {
    runnable::<K>(&state, &principal, &id)?;
    let run = stored_run::<K>(&state, &principal, &id, &run_id, q.session_id.as_deref()).await?;
    if K::KIND != ComponentKind::Agent {
        return Ok(Json(run).into_response());
    }
    let mut run = schema::to_map(&run)?;
    if run.get("tools").and_then(Value::as_array).is_some_and(Vec::is_empty) {
        run.remove("tools");
    }
    run.entry("events").or_insert_with(|| json!([]));
    Ok(Json(Value::Object(run)).into_response())
}

/// `POST /{kind}s/{id}/runs/{run_id}/cancel`: 200 `{}` when the run was running here (a team's
/// running members are cancelled with it), for a background run (the cancel is recorded, so it
/// holds from any replica) and (as Agno answers) for a run that already ended, which stays as it
/// ended; 404 for an unknown run (or another user's); 409 for a run running in no process that
/// answers for it.
pub async fn cancel_run<K: Kind>(
    Caller { state, principal }: Caller,
    Path((id, run_id)): Path<(String, String)>,
    Query(q): Query<SessionQuery>,
) -> ApiResult<Response> {
    runnable::<K>(&state, &principal, &id)?;
    // Ownership first: the stored run must be the caller's (it is written when the run starts).
    let stored = match &state.db {
        Some(_) => Some(stored_run::<K>(&state, &principal, &id, &run_id, q.session_id.as_deref()).await?),
        None => None,
    };
    super::background::cancel(&state, &run_id, stored).await
}
