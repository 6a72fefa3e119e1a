//! Agno's RBAC scopes: `agent_os:admin`, `resource:action`, `resource:<id>:action` and
//! `resource:*:action`, with the same matching rules as `agno.os.scopes`.

/// The scope that grants everything unless configured otherwise.
pub const DEFAULT_ADMIN_SCOPE: &str = "agent_os:admin";

/// Families whose routes carry a resource id (`/agents/{id}/...`), for per-resource scopes.
const RESOURCE_FAMILIES: [&str; 3] = ["agents", "teams", "workflows"];

/// Legacy scope names and what they stand for.
fn canonical(scope: &str) -> &str {
    match scope {
        "system:read" => "config:read",
        "system:write" => "config:write",
        other => other,
    }
}

/// True when a caller holding `held` may perform `required` (a `resource:action` template) on
/// the resource `(family, id)` the route addresses, if any.
fn grants(held: &str, required: &str, target: Option<(&str, &str)>) -> bool {
    let held = canonical(held);
    let required = canonical(required);
    let mut h = held.split(':');
    let (Some(h_res), Some(h_mid)) = (h.next(), h.next()) else { return false };
    let h_last = h.next();
    if h.next().is_some() {
        return false;
    }
    let Some((r_res, r_action)) = required.split_once(':') else { return held == required };
    if h_res != r_res {
        return false;
    }
    match h_last {
        // `resource:action` grants the action on every resource of the family.
        None => h_mid == r_action,
        // `resource:<id|*>:action` grants it on that resource (or all) of the family, and only on
        // routes of that family: it never stands in for a global scope elsewhere.
        Some(h_action) => {
            if h_action != r_action {
                return false;
            }
            match target {
                Some((family, id)) if family == r_res => h_mid == "*" || h_mid == id,
                // A family-level route (`GET /agents`) accepts any per-resource grant; the
                // handler then filters to the ids granted.
                None if RESOURCE_FAMILIES.contains(&r_res) => true,
                _ => false,
            }
        }
    }
}

/// Agno's legacy resource names (`LEGACY_RESOURCE_ALIASES`): `system` stands for `config`.
fn resource_name(resource: &str) -> &str {
    match resource {
        "system" => "config",
        other => other,
    }
}

/// `raw` split as Agno's `split_scope` splits a scope: its resource (legacy names mapped), the
/// resource id of a per-resource scope (`agents:<id>:run`), and its action. What is not
/// `resource:...:action` is `(raw, None, "unknown")`.
pub fn split(raw: &str) -> (&str, Option<&str>, &str) {
    let Some((resource, rest)) = raw.split_once(':') else { return (raw, None, "unknown") };
    match rest.rsplit_once(':') {
        None => (resource_name(resource), None, rest),
        Some((id, action)) => (resource_name(resource), Some(id), action),
    }
}

/// Whether Agno's `parse_scope` reads `raw` as a scope: the admin scope, `resource:action` or
/// `resource:<id>:action`.
pub fn is_scope(raw: &str, admin_scope: &str) -> bool {
    raw == admin_scope || matches!(raw.split(':').count(), 2 | 3)
}

/// True when `scopes` satisfy every scope in `required` on the route's target resource.
pub fn has_required(scopes: &[String], required: &[&str], target: Option<(&str, &str)>, admin_scope: &str) -> bool {
    if scopes.iter().any(|s| s == admin_scope) {
        return true;
    }
    required.iter().all(|r| scopes.iter().any(|s| grants(s, r, target)))
}

/// Which ids of `family` the scopes allow for `action`: `None` means all of them.
pub fn accessible_ids(scopes: &[String], family: &str, action: &str, admin_scope: &str) -> Option<Vec<String>> {
    if scopes.iter().any(|s| s == admin_scope) {
        return None;
    }
    let mut ids = Vec::new();
    for s in scopes {
        let parts: Vec<&str> = s.split(':').collect();
        match parts.as_slice() {
            [res, act] if *res == family && *act == action => return None,
            [res, "*", act] if *res == family && *act == action => return None,
            [res, id, act] if *res == family && *act == action => ids.push((*id).to_owned()),
            _ => {}
        }
    }
    Some(ids)
}

/// The resource family and id a path addresses (`/agents/a1/runs` -> `("agents", "a1")`).
pub fn target_of(path: &str) -> Option<(&str, &str)> {
    let path = path.trim_start_matches('/');
    // The A2A interface's routes name their component after its prefix, as Agno reads them.
    let mut parts = path.strip_prefix("a2a/").unwrap_or(path).split('/');
    let family = parts.next()?;
    let id = parts.next().filter(|s| !s.is_empty())?;
    RESOURCE_FAMILIES.contains(&family).then_some((family, id))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn matching_follows_agno() {
        let admin = DEFAULT_ADMIN_SCOPE;
        assert!(has_required(&s(&["agents:run"]), &["agents:run"], Some(("agents", "a1")), admin));
        assert!(has_required(&s(&["agents:a1:run"]), &["agents:run"], Some(("agents", "a1")), admin));
        assert!(!has_required(&s(&["agents:a2:run"]), &["agents:run"], Some(("agents", "a1")), admin));
        assert!(has_required(&s(&["agents:*:run"]), &["agents:run"], Some(("agents", "a9")), admin));
        assert!(!has_required(&s(&["agents:read"]), &["agents:run"], Some(("agents", "a1")), admin));
        assert!(has_required(&s(&["agent_os:admin"]), &["config:write"], None, admin));
        assert!(has_required(&s(&["system:read"]), &["config:read"], None, admin));
        assert!(!has_required(&s(&["agents:a1:read"]), &["sessions:read"], Some(("agents", "a1")), admin));
        assert!(has_required(&s(&["agents:a1:read"]), &["agents:read"], None, admin));
        assert!(!has_required(&s(&[]), &["sessions:read"], None, admin));
        assert!(has_required(&s(&[]), &[], None, admin));
        assert_eq!(accessible_ids(&s(&["agents:a1:read", "agents:a2:run"]), "agents", "read", admin), Some(s(&["a1"])));
        assert_eq!(accessible_ids(&s(&["agents:read"]), "agents", "read", admin), None);
        assert_eq!(target_of("/agents/a1/runs"), Some(("agents", "a1")));
        assert_eq!(target_of("/agents"), None);
        assert_eq!(target_of("/sessions/x"), None);
        assert_eq!(split("agents:read"), ("agents", None, "read"));
        assert_eq!(split("agents:*:run"), ("agents", Some("*"), "run"));
        assert_eq!(split("system:read"), ("config", None, "read"));
        assert_eq!(split("a:b:c:d"), ("a", Some("b:c"), "d"));
        assert_eq!(split("root"), ("root", None, "unknown"));
        assert!(is_scope("root", "root") && is_scope("agents:a1:run", admin) && !is_scope("a:b:c:d", admin));
    }
}
