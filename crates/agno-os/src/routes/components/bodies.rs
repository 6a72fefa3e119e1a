//! The bodies and answers of `/components`, as Agno 3.1's `ComponentCreate`, `ComponentUpdate`,
//! `ConfigCreate`, `ConfigUpdate`, `ComponentGuard` and `Component*Response`; component ids as
//! Agno mints and checks them; explicit links as Agno normalises them.

use agno_core::{ComponentConfig, ComponentRecord, LinkSpec};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::error::{ApiError, ApiResult};
use crate::routes::without_nulls;

/// The component types, as FastAPI's enum errors list them.
const COMPONENT_TYPES_MESSAGE: &str = "'agent', 'team' or 'workflow'";

/// Agno's `ComponentGuard`: the version the writer expects.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct Guard {
    /// The latest (visible) version expected (the config routes check it).
    pub latest_version: Option<i64>,
    /// The current (served) version expected; `0`: none published (the component routes and
    /// set-current check it).
    pub current_version: Option<i64>,
}

impl Guard {
    /// The current version a component route expects; 400 when the guard names the latest one,
    /// which these routes do not check.
    pub(crate) fn current_only(&self) -> ApiResult<Option<i64>> {
        if self.latest_version.is_some() {
            return Err(ApiError::bad_request(
                "This route checks guard.current_version only; guard.latest_version is not honoured here. Remove it, \
                 or use the route that enforces it.",
            ));
        }
        Ok(self.current_version)
    }

    /// The latest version a config route expects; 400 when the guard names the current one.
    pub(crate) fn latest_only(&self) -> ApiResult<Option<i64>> {
        if self.current_version.is_some() {
            return Err(ApiError::bad_request(
                "This route checks guard.latest_version only; guard.current_version is not honoured here. Remove it, \
                 or use the route that enforces it.",
            ));
        }
        Ok(self.latest_version)
    }
}

/// Body of `POST /components` (Agno's `ComponentCreate`).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ComponentCreate {
    /// Display name (the id is made from it when none is given).
    pub name: String,
    /// The id (default: made from the name).
    pub component_id: Option<String>,
    /// `agent`, `team` or `workflow`.
    pub component_type: String,
    /// Description.
    pub description: Option<String>,
    /// Metadata.
    pub metadata: Option<Map<String, Value>>,
    /// Version 1's config (default `{}`).
    pub config: Option<Map<String, Value>>,
    /// Version 1's label.
    pub label: Option<String>,
    /// `draft` (default) or `published`.
    pub stage: Option<String>,
    /// Version 1's notes.
    pub notes: Option<String>,
    /// Accepted and ignored, as Agno does (a published version 1 is current).
    pub set_current: Option<bool>,
}

/// Body of `PATCH /components/{component_id}` (Agno's `ComponentUpdate`).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct ComponentUpdate {
    /// Display name.
    pub name: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Must be the component's own.
    pub component_type: Option<String>,
    /// Metadata.
    pub metadata: Option<Map<String, Value>>,
    /// A published version to serve (a rollback).
    pub current_version: Option<i64>,
    /// The current version expected.
    pub guard: Option<Guard>,
}

/// Body of `POST /components/{component_id}/configs` (Agno's `ConfigCreate`).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ConfigCreate {
    /// The config.
    pub config: Map<String, Value>,
    /// Accepted and ignored, as Agno does (a new version is numbered by the store).
    pub version: Option<i64>,
    /// A label unique among the component's versions.
    pub label: Option<String>,
    /// `draft` (default) or `published` (publishes it at once).
    pub stage: Option<String>,
    /// Notes.
    pub notes: Option<String>,
    /// The version's links (default: derived from a team's members or a workflow's steps).
    pub links: Option<Vec<Value>>,
    /// Accepted and ignored, as Agno does.
    pub set_current: Option<bool>,
    /// The latest version expected.
    pub guard: Option<Guard>,
}

/// Body of `PATCH /components/{component_id}/configs/{version}` (Agno's `ConfigUpdate`).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct ConfigUpdate {
    /// The config.
    pub config: Option<Map<String, Value>>,
    /// A label.
    pub label: Option<String>,
    /// `published` publishes the draft.
    pub stage: Option<String>,
    /// Notes.
    pub notes: Option<String>,
    /// The version's links (default: derived again when the config changes).
    pub links: Option<Vec<Value>>,
    /// The latest version expected.
    pub guard: Option<Guard>,
}

/// Body of `DELETE /components/{id}` and `POST .../set-current` (both optional).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct GuardOnly {
    /// The current version expected.
    pub guard: Option<Guard>,
}

/// A component as Agno answers it (`ComponentResponse`).
pub(crate) fn component_json(c: &ComponentRecord) -> Value {
    without_nulls(serde_json::to_value(c).unwrap_or(Value::Null))
}

/// A config version as Agno answers it (`ComponentConfigResponse`); without `config` when not
/// asked for.
pub(crate) fn config_json(c: &ComponentConfig, with_config: bool) -> Value {
    let mut v = without_nulls(serde_json::to_value(c).unwrap_or(Value::Null));
    if !with_config && let Value::Object(m) = &mut v {
        m.remove("config");
    }
    v
}

/// 422 for a `component_type` that is not one, as FastAPI's enum validation answers it.
pub(crate) fn check_component_type(value: &str, location: &'static str) -> ApiResult<()> {
    if agno_core::components::COMPONENT_TYPES.contains(&value) {
        return Ok(());
    }
    Err(ApiError::unprocessable(format!("Input should be {COMPONENT_TYPES_MESSAGE}"))
        .with_type("enum")
        .at(location, "component_type")
        .with_input(json!(value))
        .with_ctx(json!({"expected": COMPONENT_TYPES_MESSAGE})))
}

/// An id made from `name` as Agno's `generate_component_id_from_name` makes it (lowercase
/// letters and digits, `-` between words), with the creator's hash appended for a scoped
/// caller (so two users' "Support Agent"s do not collide).
pub(crate) fn id_from_name(name: &str, scope: Option<&str>) -> String {
    let mut id = String::new();
    for ch in name.trim().chars() {
        if ch.is_alphanumeric() {
            id.extend(ch.to_lowercase());
        } else if !id.ends_with('-') {
            id.push('-');
        }
    }
    let id = id.trim_matches('-');
    let mut id = if id.is_empty() { "component".to_owned() } else { id.to_owned() };
    if let Some(user) = scope {
        let digest = Sha256::digest(user.as_bytes());
        let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
        id = format!("{id}-{hash}");
    }
    id
}

/// 400 for an id Agno refuses (empty, whitespace, `/`, `\`, `?`, `#`, `%`, control characters,
/// `.` or `..`).
pub(crate) fn check_id(id: &str) -> ApiResult<()> {
    if id.is_empty() {
        return Err(ApiError::bad_request("component_id must not be empty"));
    }
    if id.chars().any(char::is_whitespace) {
        return Err(ApiError::bad_request("component_id must not contain whitespace"));
    }
    if let Some(bad) = id.chars().find(|c| matches!(c, '/' | '\\' | '?' | '#' | '%') || c.is_control()) {
        return Err(ApiError::bad_request(format!("component_id must not contain {}", python_repr_char(bad))));
    }
    if id == "." || id == ".." {
        return Err(ApiError::bad_request("component_id must not be a path segment"));
    }
    Ok(())
}

/// Python's `repr` of a one-character string.
fn python_repr_char(c: char) -> String {
    match c {
        '\\' => "'\\\\'".to_owned(),
        c if c.is_control() => format!("'\\x{:02x}'", u32::from(c)),
        c => format!("'{c}'"),
    }
}

/// Python's `repr` of a JSON value, as Agno's link messages print it.
fn python_repr(v: &Value) -> String {
    match v {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::String(s) => format!("'{s}'"),
        other => other.to_string(),
    }
}

/// Explicit links as Agno's routes normalise them: `child_version` an integer (or an integral
/// number, or a numeric string) in 1..2^31-1; 400 naming what is wrong.
pub(crate) fn links_from_body(raw: &[Value]) -> ApiResult<Vec<LinkSpec>> {
    raw.iter()
        .map(|link| {
            let text = |key: &str| -> ApiResult<String> {
                link.get(key)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .ok_or_else(|| ApiError::bad_request(format!("Link {key} is required and must be a string")))
            };
            let raw_version = link.get("child_version").unwrap_or(&Value::Null);
            let version = match raw_version {
                Value::Number(n) => n.as_i64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
                Value::String(s) => s.trim().parse::<i64>().ok(),
                _ => None,
            }
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "Link child_version {} is not an integer version number",
                    python_repr(raw_version)
                ))
            })?;
            if !(1..=i64::from(i32::MAX)).contains(&version) {
                return Err(ApiError::bad_request(format!("Link child_version {version} is out of range")));
            }
            Ok(LinkSpec {
                link_kind: text("link_kind")?,
                link_key: text("link_key")?,
                child_component_id: text("child_component_id")?,
                child_version: version,
                position: link.get("position").and_then(Value::as_i64).unwrap_or(0),
                meta: link.get("meta").filter(|m| !m.is_null()).cloned(),
            })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_made_and_checked_as_agno_does() {
        assert_eq!(id_from_name("My First Agent!", None), "my-first-agent");
        assert_eq!(id_from_name("  ¡Ünïcode  Bot! ", None), "ünïcode-bot");
        assert_eq!(id_from_name("!!!", None), "component");
        assert!(id_from_name("Support", Some("ann")).starts_with("support-"));
        assert_eq!(id_from_name("Support", Some("ann")).len(), "support-".len() + 8);
        assert!(check_id("a/b").is_err() && check_id("a b").is_err() && check_id("..").is_err());
        assert_eq!(check_id("a/b").unwrap_err().detail, "component_id must not contain '/'");
        assert!(check_id("agent-1.v2").is_ok());
    }

    #[test]
    fn link_versions_are_integers_in_range() {
        let link =
            |v: Value| json!({"link_kind": "member", "link_key": "m", "child_component_id": "a", "child_version": v});
        assert_eq!(links_from_body(&[link(json!(2.0))]).unwrap()[0].child_version, 2);
        assert_eq!(links_from_body(&[link(json!("3"))]).unwrap()[0].child_version, 3);
        let err = |v: Value| links_from_body(&[link(v)]).unwrap_err().detail;
        assert_eq!(err(json!(2.5)), "Link child_version 2.5 is not an integer version number");
        assert_eq!(err(json!(true)), "Link child_version True is not an integer version number");
        assert_eq!(err(json!(0)), "Link child_version 0 is out of range");
    }
}
