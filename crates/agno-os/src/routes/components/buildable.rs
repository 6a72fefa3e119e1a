//! What a published config must be: a component this OS can build, with the same builders as
//! `agentos.toml` (`crate::config::stored` reads the config as its table). A draft is stored as
//! sent (it may be work in progress, as in Agno); publishing a config that does not build is
//! refused with 422 naming the field, so a served component is never replaced by one that
//! cannot run. A missing API key is not a reason (the key is the environment's).

use serde_json::{Map, Value};

use crate::config::ModelSpec;
use crate::config::StepSpec;
use crate::config::stored::{agent_spec, team_spec, workflow_spec};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

fn refused(message: impl std::fmt::Display) -> ApiError {
    ApiError::unprocessable_plain(format!("Cannot publish this config: {message}"))
}

/// Every (field, kind, id) a workflow's steps name, depth first.
fn named(steps: &[StepSpec], at: &str, out: &mut Vec<(String, &'static str, String)>) {
    for (i, s) in steps.iter().enumerate() {
        let here = format!("{at}[{i}]");
        for (kind, id) in [("agent", &s.agent), ("team", &s.team), ("workflow", &s.workflow)] {
            if let Some(id) = id {
                out.push((here.clone(), kind, id.clone()));
            }
        }
        named(&s.steps, &format!("{here}.steps"), out);
        named(&s.else_steps, &format!("{here}.else_steps"), out);
    }
}

/// 422 unless `config` of a `component_type` component `id` builds here.
pub(crate) async fn check(
    state: &AppState,
    component_type: &str,
    id: &str,
    config: &Map<String, Value>,
) -> ApiResult<()> {
    match component_type {
        "agent" => {
            let mut spec = agent_spec(id, config).map_err(refused)?;
            if let Some(model) = &spec.model {
                crate::build::check_model(model).map_err(|e| refused(format!("config.model: {e}")))?;
            }
            // The rest (toolkits, knowledge, options) as the OS builds it, on a model that
            // needs no key.
            spec.model = Some(ModelSpec::Short("test".to_owned()));
            spec.a2a_url = None;
            let mcp = crate::build::mcp::McpToolkits::default();
            crate::build::build_agent(&spec, state.db.clone(), &state.knowledge, &mcp, None, state.auth.user_isolation)
                .map(|_| ())
                .map_err(refused)
        }
        "team" => {
            let spec = team_spec(id, config).map_err(refused)?;
            crate::build::check_model(&spec.model).map_err(|e| refused(format!("config.model: {e}")))?;
            if let Some(mode) =
                spec.mode.as_deref().filter(|m| !["coordinate", "route", "broadcast", "tasks"].contains(m))
            {
                return Err(refused(format!(
                    "config.mode: {mode:?} is not one of coordinate, route, broadcast, tasks"
                )));
            }
            Ok(())
        }
        // A workflow's steps must name what this OS serves or the catalog holds.
        "workflow" => {
            let spec = workflow_spec(id, config).map_err(refused)?;
            let mut names = Vec::new();
            named(&spec.steps, "config.steps", &mut names);
            for (field, kind, child) in names {
                let served = match kind {
                    "agent" => state.agent(&child).is_some(),
                    "team" => state.team(&child).is_some(),
                    _ => state.workflow(&child).is_some(),
                };
                let stored = match &state.db {
                    Some(db) if !served => {
                        db.get_component(&child, None, false).await?.is_some_and(|c| c.component_type == kind)
                    }
                    _ => false,
                };
                if !served && !stored {
                    return Err(refused(format!("{field}: {kind} {child:?} is neither served here nor a component")));
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}
