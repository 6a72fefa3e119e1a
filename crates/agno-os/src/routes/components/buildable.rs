//! What a published config must be: a component this OS can build, with the same builders as
//! `agentos.toml` (`crate::config::stored` reads the config as its table). A draft is stored as
//! sent (it may be work in progress, as in Agno); publishing a config that does not build is
//! refused with 422 naming the field, so a served component is never replaced by one that
//! cannot run. A missing API key is not a reason (the key is the environment's).

use serde_json::{Map, Value};

use crate::config::ModelSpec;
use crate::config::stored::{agent_spec, team_spec};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

fn refused(message: impl std::fmt::Display) -> ApiError {
    ApiError::unprocessable_plain(format!("Cannot publish this config: {message}"))
}

/// 422 unless `config` of a `component_type` component `id` builds here.
pub(crate) fn check(state: &AppState, component_type: &str, id: &str, config: &Map<String, Value>) -> ApiResult<()> {
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
            crate::build::build_agent(&spec, state.db.clone(), &state.knowledge, &mcp, None)
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
        // A workflow's steps are checked when its links are derived (every step's agent, team or
        // workflow must exist); its options are read when it is served.
        _ => Ok(()),
    }
}
