//! The links a team's or a workflow's config version pins, derived from its config as Agno's
//! routes derive them: a team's `members`, a workflow's `steps` (containers walked, `#else` keys
//! for else-branches). A member or step that is a component of the catalog with a published
//! version is pinned at that version; one served from the OS's configuration, or a catalog
//! component with nothing published, is not pinned. A team member that is neither is refused.

use std::sync::Arc;

use agno_core::{Db, LinkSpec};
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// What a child id is to the catalog.
enum Child {
    /// A catalog component with a published version (the one to pin).
    Published(i64),
    /// A catalog component with nothing published, or one the OS serves from its configuration:
    /// not pinned.
    Unpinned,
    /// Neither.
    Unknown,
}

/// Looks up `id` of `kind` (`agent`, `team`, `workflow`) for a caller scoped to `scope`: a
/// catalog component the caller cannot see is "not found".
async fn child(state: &AppState, db: &Arc<dyn Db>, kind: &str, id: &str, scope: Option<&str>) -> ApiResult<Child> {
    if let Some(c) = db.get_component(id, None, false).await? {
        if !c.visible_to(scope) {
            return Err(ApiError::not_found(format!("Component {id} not found")));
        }
        return Ok(c.current_version.map_or(Child::Unpinned, Child::Published));
    }
    let served = match kind {
        "agent" => state.agent(id).is_some(),
        "team" => state.team(id).is_some(),
        _ => state.workflow(id).is_some(),
    };
    Ok(if served { Child::Unpinned } else { Child::Unknown })
}

/// Which component a config version is written for.
pub(crate) struct Target<'a> {
    /// `agent`, `team` or `workflow`.
    pub(crate) component_type: &'a str,
    /// Its id.
    pub(crate) id: &'a str,
    /// Its display name (errors name the team by it, as Agno's do).
    pub(crate) name: &'a str,
}

/// The links of a config version of `target`: none for an agent (its links, if any, are left as
/// they are).
pub(crate) async fn derive(
    state: &AppState,
    db: &Arc<dyn Db>,
    target: &Target<'_>,
    config: &Map<String, Value>,
    scope: Option<&str>,
) -> ApiResult<Option<Vec<LinkSpec>>> {
    match target.component_type {
        "team" => members(state, db, target.name, config, scope).await.map(Some),
        "workflow" => steps(state, db, target.id, config, scope).await.map(Some),
        _ => Ok(None),
    }
}

async fn members(
    state: &AppState,
    db: &Arc<dyn Db>,
    name: &str,
    config: &Map<String, Value>,
    scope: Option<&str>,
) -> ApiResult<Vec<LinkSpec>> {
    let mut links = Vec::new();
    let mut unresolved = Vec::new();
    let members = config.get("members").and_then(Value::as_array).cloned().unwrap_or_default();
    for (position, member) in members.iter().enumerate() {
        let (kind, id) = match (member.get("agent_id"), member.get("team_id")) {
            (Some(Value::String(id)), _) => ("agent", id),
            (_, Some(Value::String(id))) => ("team", id),
            _ => continue,
        };
        match child(state, db, kind, id, scope).await? {
            Child::Published(version) => links.push(LinkSpec {
                link_kind: "member".to_owned(),
                link_key: format!("member_{position}"),
                child_component_id: id.clone(),
                child_version: version,
                position: position as i64,
                meta: Some(json!({"type": kind})),
            }),
            Child::Unpinned => {}
            Child::Unknown => unresolved.push(id.clone()),
        }
    }
    if !unresolved.is_empty() {
        return Err(ApiError::bad_request(format!(
            "Cannot create team '{name}': the following members could not be resolved: {}. Referenced agents/teams \
             must exist as components or be registered with the AgentOS instance.",
            unresolved.join(", ")
        )));
    }
    Ok(links)
}

/// A leaf step's unpinned links, with its position in its container and its key's suffix.
struct StepRef {
    kind: &'static str,
    child: String,
    key: String,
    position: usize,
}

/// Walks `steps` (one container's), collecting the leaf steps' references.
fn walk(steps: &[Value], suffix: &str, out: &mut Vec<StepRef>) {
    for (position, step) in steps.iter().enumerate() {
        let step_type = step.get("type").and_then(Value::as_str).unwrap_or("Step").trim().to_lowercase();
        let list = |key: &str| step.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
        match step_type.as_str() {
            "router" => walk(&list("choices"), suffix, out),
            "parallel" | "loop" | "steps" | "condition" => {
                walk(&list("steps"), suffix, out);
                walk(&list("else_steps"), &format!("{suffix}#else"), out);
            }
            _ => {
                let key = step
                    .get("step_id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .or_else(|| step.get("name").and_then(Value::as_str))
                    .unwrap_or_default();
                for (field, kind) in
                    [("agent_id", "step_agent"), ("team_id", "step_team"), ("workflow_id", "step_workflow")]
                {
                    if let Some(child) = step.get(field).and_then(Value::as_str).filter(|s| !s.is_empty()) {
                        out.push(StepRef { kind, child: child.to_owned(), key: format!("{key}{suffix}"), position });
                    }
                }
            }
        }
    }
}

async fn steps(
    state: &AppState,
    db: &Arc<dyn Db>,
    workflow_id: &str,
    config: &Map<String, Value>,
    scope: Option<&str>,
) -> ApiResult<Vec<LinkSpec>> {
    let mut refs = Vec::new();
    walk(config.get("steps").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default(), "", &mut refs);
    let mut links: Vec<LinkSpec> = Vec::new();
    for r in refs {
        let kind = r.kind.trim_start_matches("step_");
        let Child::Published(version) = child(state, db, kind, &r.child, scope).await? else { continue };
        let link = LinkSpec {
            link_kind: r.kind.to_owned(),
            link_key: r.key,
            child_component_id: r.child,
            child_version: version,
            position: r.position as i64,
            meta: None,
        };
        match links.iter().find(|l| l.link_kind == link.link_kind && l.link_key == link.link_key) {
            None => links.push(link),
            Some(same)
                if same.child_component_id == link.child_component_id && same.child_version == link.child_version => {}
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "Workflow '{workflow_id}' produces two different links for key '{}' ('{}' v{} and '{}' v{}); give \
                     steps distinct names so every pin is kept.",
                    link.link_key,
                    other.child_component_id,
                    other.child_version,
                    link.child_component_id,
                    link.child_version
                )));
            }
        }
    }
    Ok(links)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_walked_through_containers_with_else_keys() {
        let steps = json!([
            {"type": "Step", "name": "triage", "agent_id": "a"},
            {"type": "Condition", "name": "c", "steps": [{"name": "yes", "team_id": "t"}],
             "else_steps": [{"name": "yes", "agent_id": "b"}]},
            {"type": "Router", "name": "r", "choices": [{"step_id": "pick", "name": "ignored", "workflow_id": "w"}]}
        ]);
        let mut refs = Vec::new();
        walk(steps.as_array().unwrap(), "", &mut refs);
        let got: Vec<(&str, &str, &str, usize)> =
            refs.iter().map(|r| (r.kind, r.child.as_str(), r.key.as_str(), r.position)).collect();
        assert_eq!(
            got,
            [
                ("step_agent", "a", "triage", 0),
                ("step_team", "t", "yes", 0),
                ("step_agent", "b", "yes#else", 0),
                ("step_workflow", "w", "pick", 0)
            ]
        );
    }
}
