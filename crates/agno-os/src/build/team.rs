//! Builds the `[[teams]]` of `agentos.toml`: members are the served agents and other teams, by
//! id. A missing member, an unknown mode or a cycle of teams is refused at start, naming it.

use std::sync::Arc;

use agno_core::Db;
use agno_runtime::team::{Member, Team, TeamMode};

use crate::build::StartError;
use crate::config::TeamSpec;
use crate::state::ServedAgent;

/// Builds every configured team (nested ones first).
///
/// # Errors
/// [`StartError::Team`] for the first team that cannot be built.
pub fn build_teams(
    specs: &[TeamSpec],
    agents: &[ServedAgent],
    db: Option<&Arc<dyn Db>>,
    tracing: Option<&agno_runtime::Tracing>,
) -> Result<Vec<Team>, StartError> {
    let mut built: Vec<Team> = Vec::new();
    for spec in specs {
        build(spec, specs, agents, (db, tracing), &mut built, &mut Vec::new())?;
    }
    Ok(specs.iter().filter_map(|s| built.iter().find(|t| t.id() == s.id).cloned()).collect())
}

fn build(
    spec: &TeamSpec,
    specs: &[TeamSpec],
    agents: &[ServedAgent],
    (db, tracing): (Option<&Arc<dyn Db>>, Option<&agno_runtime::Tracing>),
    built: &mut Vec<Team>,
    stack: &mut Vec<String>,
) -> Result<Team, StartError> {
    if let Some(done) = built.iter().find(|t| t.id() == spec.id) {
        return Ok(done.clone());
    }
    let fail = |message: String| StartError::Team { id: spec.id.clone(), message };
    stack.push(spec.id.clone());
    let mode = match spec.mode.as_deref().unwrap_or("coordinate") {
        "coordinate" => TeamMode::Coordinate,
        "route" => TeamMode::Route,
        "broadcast" => TeamMode::Broadcast,
        "tasks" => TeamMode::Tasks,
        other => return Err(fail(format!("mode {other:?} is not one of coordinate, route, broadcast, tasks"))),
    };
    let (model, _) = crate::build::model(&spec.model).map_err(|e| fail(format!("model: {e}")))?;
    let mut builder = Team::builder().id(spec.id.clone()).mode(mode).model(model);
    if let Some(name) = &spec.name {
        builder = builder.name(name.clone());
    }
    if let Some(d) = &spec.description {
        builder = builder.description(d.clone());
    }
    if let Some(lines) = spec.instructions.clone() {
        builder = builder.instructions(lines.into_vec());
    }
    if let Some(db) = db {
        builder = builder.db(Arc::clone(db)).add_history_to_context(spec.add_history_to_context.unwrap_or(false));
    }
    if let Some(n) = spec.num_history_runs {
        builder = builder.num_history_runs(n);
    }
    if let Some(n) = spec.max_iterations {
        builder = builder.max_iterations(n);
    }
    for (i, id) in spec.members.iter().enumerate() {
        let member: Member = if let Some(agent) = agents.iter().find(|a| a.agent.id() == id) {
            agent.agent.clone().into()
        } else if let Some(team) = specs.iter().find(|t| &t.id == id) {
            if stack.contains(id) {
                return Err(fail(format!(
                    "members[{i}]: {id:?} would contain itself ({} -> {id})",
                    stack.join(" -> ")
                )));
            }
            build(team, specs, agents, (db, tracing), built, stack)?.into()
        } else {
            return Err(fail(format!("members[{i}]: no agent or team has the id {id:?}")));
        };
        builder = builder.member(member);
    }
    stack.pop();
    if let Some(tracing) = tracing {
        builder = builder.tracing(tracing.clone());
    }
    let team = builder.build().map_err(|e| fail(e.to_string()))?;
    built.push(team.clone());
    Ok(team)
}
