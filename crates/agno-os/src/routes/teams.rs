//! `/teams`: list and describe the configured teams, run them (JSON or SSE), read their runs
//! and cancel them. Under user isolation the caller's `sub` is the run's user and another user's
//! session or run answers 404.

use agno_core::RunRequirement;
use agno_runtime::RunError;
use agno_runtime::team::{Member, Team};
use serde_json::{Value, json};

use super::component::Kind;
use super::run_form::fields;
use crate::error::{ApiError, ApiResult};
use crate::form::Form;
use crate::routes::FormField;
use crate::routes::without_nulls;
use crate::state::AppState;

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
    without_nulls(json!({
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
    }))
}

/// The form of `POST /teams/{team_id}/runs`.
pub const RUN_FORM: &[FormField] = &[
    fields::MESSAGE,
    fields::STREAM,
    fields::SESSION,
    fields::USER,
    fields::SESSION_STATE,
    fields::METADATA,
    fields::VERSION,
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
        state.any_team(id)
    }
    async fn at_version(state: &AppState, id: &str, version: i64) -> Result<Team, String> {
        crate::queue::Served::team_version(state, id, version).await
    }
    async fn describe_version(state: &AppState, id: &str, version: i64) -> Option<Value> {
        let served = state.published.as_ref()?.team_version(id, version).await.ok()?;
        Some(team_json(state, &served))
    }
    fn ids(state: &AppState) -> Vec<String> {
        let configured = state.teams.iter().map(|t| t.id().to_owned());
        configured.chain(state.published_now().teams.keys().cloned()).collect()
    }
    fn describe(state: &AppState, id: &str) -> Option<Value> {
        if let Some(team) = state.team(id) {
            return Some(team_json(state, team));
        }
        let published = state.published.as_ref()?.team(id)?;
        Some(super::component::from_catalog(team_json(state, &published.built), published.version))
    }
    // Agno's `TeamSummaryResponse`.
    fn summarise(state: &AppState, id: &str) -> Option<Value> {
        let team = &state.any_team(id)?;
        Some(without_nulls(json!({
            "id": team.id(),
            "name": team.name(),
            "description": team.description(),
            "db_id": team.db().map(|_| &*state.db_id),
            "mode": team.mode().as_str(),
            "model": super::core::model_json(team.model().as_ref()),
            "sandboxed": false,
        })))
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
