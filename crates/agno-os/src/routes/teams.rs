//! `/teams`: list and describe the configured teams, run them (JSON or SSE), read their runs
//! and cancel them. Under user isolation the caller's `sub` is the run's user and another user's
//! session or run answers 404.

use agno_core::RunRequirement;
use agno_runtime::RunError;
use agno_runtime::team::{Member, Team};
use axum::Json;
use axum::extract::{Extension, Path, State};
use serde_json::{Value, json};

use super::component::{self, Kind};
use super::run_form::fields;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::form::Form;
use crate::routes::FormField;
use crate::state::AppState;

/// The teams the caller may read, in declaration order.
fn visible<'a>(state: &'a AppState, principal: &Principal) -> impl Iterator<Item = &'a Team> {
    let allowed = principal.accessible("teams", "read");
    state.teams.iter().filter(move |t| allowed.as_ref().is_none_or(|ids| ids.iter().any(|id| id == t.id())))
}

/// Agno's `TeamResponse`: the team, its model, the leader's delegation tools, and its members
/// (each agent as `GET /agents/{id}` describes it).
pub(crate) fn team_json(state: &AppState, team: &Team) -> Value {
    let model = team.model();
    let tools: Vec<Value> = team
        .leader_tools()
        .into_iter()
        .map(|t| json!({"name": t.name, "description": t.description, "parameters": *t.parameters}))
        .collect();
    let members: Vec<Value> = team
        .members()
        .iter()
        .map(|m| match m {
            Member::Agent(a) => state.agent(a.id()).map_or_else(
                || json!({"id": a.id(), "name": a.name()}),
                |served| super::agents::agent_json(state, served),
            ),
            Member::Team(t) => team_json(state, t),
            _ => json!({"id": m.id()}),
        })
        .collect();
    let mut out = json!({
        "id": team.id(),
        "name": team.name(),
        "db_id": team.db().map(|_| &*state.db_id),
        "description": team.description(),
        "mode": team.mode().as_str(),
        "model": {"name": model.name(), "model": model.id(), "provider": model.provider()},
        "tools": {"tools": tools},
        "sessions": team.db().map(|_| json!({"session_table": agno_db::TableNames::default().sessions})),
        "reasoning": {"reasoning": false},
        "system_message": team.description().map(|d| json!({"description": d})),
        "streaming": {"stream_member_events": true},
        "members": members,
        "is_factory": false,
        "is_component": false,
        "sandboxed": false,
    });
    if let Value::Object(m) = &mut out {
        m.retain(|_, v| !v.is_null());
    }
    out
}

/// The teams the caller may read, described (`GET /teams`).
pub(crate) fn teams_json(state: &AppState, principal: &Principal) -> Vec<Value> {
    visible(state, principal).map(|t| team_json(state, t)).collect()
}

/// The teams the caller may read as `/config` lists them (Agno's `TeamSummaryResponse`).
pub(crate) fn summaries(state: &AppState, principal: &Principal) -> Vec<Value> {
    visible(state, principal)
        .map(|team| {
            let model = team.model();
            let mut out = json!({
                "id": team.id(),
                "name": team.name(),
                "description": team.description(),
                "db_id": team.db().map(|_| &*state.db_id),
                "mode": team.mode().as_str(),
                "model": {"id": model.id(), "provider": model.provider()},
                "sandboxed": false,
            });
            if let Value::Object(m) = &mut out {
                m.retain(|_, v| !v.is_null());
            }
            out
        })
        .collect()
}

/// `GET /teams`.
pub async fn list_teams(State(state): State<AppState>, Extension(principal): Extension<Principal>) -> Json<Value> {
    Json(Value::Array(teams_json(&state, &principal)))
}

/// `GET /teams/{team_id}`.
pub async fn get_team(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(team_id): Path<String>,
) -> ApiResult<Json<Value>> {
    let team = &component::served::<Teams>(&state, &principal, &team_id)?;
    Ok(Json(team_json(&state, team)))
}

/// The form of `POST /teams/{team_id}/runs`.
pub const RUN_FORM: &[FormField] = &[
    fields::MESSAGE,
    fields::STREAM,
    fields::SESSION,
    fields::USER,
    fields::SESSION_STATE,
    fields::METADATA,
    fields::BACKGROUND,
];

/// The form of `POST /teams/{team_id}/runs/{run_id}/continue`.
pub const CONTINUE_FORM: &[FormField] = &[
    FormField::optional(
        "requirements",
        "array",
        "JSON list of the paused run's requirements, answered (each by its id).",
    ),
    FormField::required("session_id", "string", "The run's session."),
    fields::USER,
    fields::STREAM,
    fields::CONTINUE_BACKGROUND,
];

/// The answers of a team's continue form (`requirements`: the run's requirements, answered; a
/// member's carry `member_agent_id`) checked against the paused `run`: 400 for answers that are
/// not JSON, 409 for a run that is not paused, 422 for answers that do not fit.
pub(crate) fn answer(team: &Team, run: &agno_core::RunOutput, form: &Form) -> ApiResult<Vec<RunRequirement>> {
    let requirements: Vec<RunRequirement> = match form.text("requirements").map(str::trim) {
        None | Some("") => Vec::new(),
        Some(text) => {
            let value: Value = serde_json::from_str(text)
                .map_err(|e| ApiError::bad_request(format!("Invalid JSON in requirements field: {e}")))?;
            serde_json::from_value(value)
                .map_err(|e| ApiError::bad_request(format!("Invalid structure or content for requirements: {e}")))?
        }
    };
    team.check_continue(run, &requirements).map_err(|e| match e {
        RunError::RunNotFound(id) => ApiError::not_found(format!("Run {id} not found")),
        RunError::NotPaused { .. } => ApiError::conflict(e.to_string()),
        other => ApiError::unprocessable(other.to_string()),
    })?;
    Ok(requirements)
}

/// `/teams/...` as a component kind.
#[derive(Debug)]
pub struct Teams;

impl Kind for Teams {
    type Runner = Team;

    const CONTINUE_NEEDS_SESSION: bool = true;

    fn runner(state: &AppState, id: &str) -> Option<Team> {
        state.team(id).cloned()
    }
    async fn answer(
        team: &Team,
        run: agno_core::RunOutput,
        form: &Form,
    ) -> ApiResult<(agno_core::RunOutput, Vec<RunRequirement>)> {
        let requirements = answer(team, &run, form)?;
        Ok((run, requirements))
    }
}
