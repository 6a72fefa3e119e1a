//! A component's config as the catalog stores it (`agno_component_configs.config`), read as the
//! `[[agents]]` or `[[teams]]` table `agentos.toml` would hold: one schema for both. A config may
//! use `agentos.toml`'s keys as they are, or Agno's `to_dict` spellings, which are translated:
//! `model` as `{"id", "provider", "name"}`, `tools` as Agno's function dicts (grouped by their
//! `toolkit`), `knowledge` as `{"name": ...}`, a team's `members` as `{"type", "agent_id" |
//! "team_id"}`. Keys of Agno's that change nothing agno-rs builds (ids the catalog row gives,
//! per-run and debugging switches) are dropped; any other key this OS does not know is refused,
//! naming it, so a published config never silently loses a setting.

use serde_json::{Map, Value};

use super::{AgentSpec, TeamSpec, WorkflowSpec};

/// A stored config that does not describe a component this OS can build.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config.{field}: {message}")]
pub struct StoredConfigError {
    /// The field, as a path (`tools[1]`, `model.provider`).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

fn error(field: impl Into<String>, message: impl Into<String>) -> StoredConfigError {
    StoredConfigError { field: field.into(), message: message.into() }
}

/// Keys of Agno's `to_dict` that say nothing agno-rs builds differently.
const IGNORED: [&str; 16] = [
    "id",
    "db",
    "user_id",
    "session_id",
    "team_id",
    "workflow_id",
    "telemetry",
    "debug_mode",
    "debug_level",
    "stream",
    "stream_events",
    "store_events",
    "metadata",
    "metadata_authored",
    "role",
    "cache_session",
];

/// Agno's model dict (or `agentos.toml`'s model) as a model setting.
fn model(value: &Value) -> Result<Value, StoredConfigError> {
    let Value::Object(m) = value else {
        return match value {
            Value::String(_) => Ok(value.clone()),
            _ => Err(error("model", "must be \"provider:id\" or an object with provider and id")),
        };
    };
    let provider = m.get("provider").and_then(Value::as_str).ok_or_else(|| error("model.provider", "is required"))?;
    // Agno's OpenAI classes share the provider name; the class says which API.
    let provider = match m.get("name").and_then(Value::as_str) {
        Some("OpenAIChat") => "openai-chat".to_owned(),
        Some("OpenAIResponses") => "openai-responses".to_owned(),
        _ => provider.to_ascii_lowercase(),
    };
    let mut out = Map::new();
    out.insert("provider".into(), Value::String(provider));
    for (key, v) in m {
        match key.as_str() {
            "provider" | "name" => {}
            "id" | "base_url" | "api_key_env" | "api_key" => {
                out.insert(key.clone(), v.clone());
            }
            other => return Err(error(format!("model.{other}"), "is not a model setting this OS knows")),
        }
    }
    Ok(Value::Object(out))
}

/// `tools`: names and tables as `agentos.toml` has them, and Agno's function dicts grouped by
/// their toolkit into `{ toolkit, include_tools }` tables.
fn tools(value: &Value) -> Result<Value, StoredConfigError> {
    let Value::Array(items) = value else { return Err(error("tools", "must be a list")) };
    let mut out: Vec<Value> = Vec::new();
    let mut functions: Vec<(String, Vec<Value>)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item {
            Value::String(_) => out.push(item.clone()),
            Value::Object(t) if t.contains_key("toolkit") && !t.contains_key("name") => out.push(item.clone()),
            Value::Object(f) => {
                let name = f
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| error(format!("tools[{i}]"), "names no tool"))?;
                let Some(toolkit) = f.get("toolkit").and_then(Value::as_str) else {
                    return Err(error(
                        format!("tools[{i}]"),
                        format!(
                            "function {name:?} names no toolkit; this OS builds tools from its toolkits (see /registry)"
                        ),
                    ));
                };
                match functions.iter_mut().find(|(k, _)| k == toolkit) {
                    Some((_, names)) => names.push(Value::String(name.to_owned())),
                    None => functions.push((toolkit.to_owned(), vec![Value::String(name.to_owned())])),
                }
            }
            _ => return Err(error(format!("tools[{i}]"), "must be a toolkit name, a toolkit table or a function")),
        }
    }
    for (toolkit, names) in functions {
        out.push(serde_json::json!({"toolkit": toolkit, "include_tools": names}));
    }
    Ok(Value::Array(out))
}

/// `config` with Agno's spellings translated and its ignored keys dropped, as `id`'s table.
fn table(id: &str, config: &Map<String, Value>) -> Result<Map<String, Value>, StoredConfigError> {
    let mut t = Map::new();
    for (key, value) in config {
        if IGNORED.contains(&key.as_str()) || value.is_null() {
            continue;
        }
        let value = match key.as_str() {
            "model" => model(value)?,
            "tools" => tools(value)?,
            "knowledge" => match value {
                Value::Object(k) => {
                    k.get("name").cloned().ok_or_else(|| error("knowledge.name", "names no knowledge base"))?
                }
                other => other.clone(),
            },
            "members" => members(value)?,
            _ => value.clone(),
        };
        t.insert(key.clone(), value);
    }
    t.insert("id".into(), Value::String(id.to_owned()));
    Ok(t)
}

/// A team's `members`: ids, or Agno's `{"type", "agent_id" | "team_id"}`.
fn members(value: &Value) -> Result<Value, StoredConfigError> {
    let Value::Array(items) = value else { return Err(error("members", "must be a list")) };
    items
        .iter()
        .enumerate()
        .map(|(i, m)| match m {
            Value::String(_) => Ok(m.clone()),
            Value::Object(o) => o
                .get("agent_id")
                .or_else(|| o.get("team_id"))
                .filter(|v| v.is_string())
                .cloned()
                .ok_or_else(|| error(format!("members[{i}]"), "names no agent_id or team_id")),
            _ => Err(error(format!("members[{i}]"), "must be an id or {\"type\", \"agent_id\"}")),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// Keys of Agno's step dicts that change nothing agno-rs runs differently.
const STEP_IGNORED: [&str; 2] = ["step_id", "strict_input_validation"];

/// Agno's step dict (or `agentos.toml`'s step table) as a step table, at `at` (`steps[1]`).
fn step(value: &Value, at: &str) -> Result<Value, StoredConfigError> {
    let Value::Object(s) = value else { return Err(error(at, "must be a step table")) };
    let mut out = Map::new();
    for (key, v) in s {
        if STEP_IGNORED.contains(&key.as_str()) || v.is_null() {
            continue;
        }
        let (key, v) = match key.as_str() {
            "type" => match v.as_str().map(str::to_ascii_lowercase).as_deref() {
                Some("step") => continue,
                Some(kind) => ("type".to_owned(), Value::String(kind.to_owned())),
                None => return Err(error(format!("{at}.type"), "must be a step type")),
            },
            "agent_id" => ("agent".to_owned(), v.clone()),
            "team_id" => ("team".to_owned(), v.clone()),
            "workflow_id" => ("workflow".to_owned(), v.clone()),
            "steps" | "else_steps" | "choices" => {
                let Value::Array(items) = v else { return Err(error(format!("{at}.{key}"), "must be a list")) };
                let inner = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| step(item, &format!("{at}.{key}[{i}]")))
                    .collect::<Result<Vec<_>, _>>()?;
                let key = if key == "choices" { "steps" } else { key.as_str() };
                (key.to_owned(), Value::Array(inner))
            }
            // A condition's evaluator: a CEL expression or a constant (a Python function cannot run here).
            "evaluator" => match v {
                Value::String(cel) if s.get("evaluator_type").and_then(Value::as_str) != Some("function") => {
                    ("condition".to_owned(), Value::String(cel.clone()))
                }
                Value::Bool(b) => ("condition".to_owned(), Value::String(b.to_string())),
                _ => {
                    return Err(error(format!("{at}.evaluator"), "is a Python function; this OS runs CEL expressions"));
                }
            },
            "evaluator_type" => continue,
            _ => (key.clone(), v.clone()),
        };
        out.insert(key, v);
    }
    Ok(Value::Object(out))
}

/// `t` read as `T`, an error naming the field that does not fit.
fn read<T: serde::de::DeserializeOwned>(t: Map<String, Value>) -> Result<T, StoredConfigError> {
    serde_path_to_error::deserialize(Value::Object(t)).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        // An unknown key is reported at the table's level: name it.
        match message.strip_prefix("unknown field `").and_then(|rest| rest.split_once('`')) {
            Some((field, _)) => error(field, "is not a setting this OS knows"),
            None => error(if path == "." { String::new() } else { path }, message),
        }
    })
}

/// The `[[agents]]` table agent `id`'s stored `config` is.
///
/// # Errors
/// The field that does not describe an agent this OS can build.
pub fn agent_spec(id: &str, config: &Map<String, Value>) -> Result<AgentSpec, StoredConfigError> {
    let spec: AgentSpec = read(table(id, config)?)?;
    if spec.model.is_none() && spec.a2a_url.is_none() {
        return Err(error("model", "is required (\"provider:id\", or {\"provider\", \"id\"})"));
    }
    Ok(spec)
}

/// The `[[teams]]` table team `id`'s stored `config` is.
///
/// # Errors
/// The field that does not describe a team this OS can build.
pub fn team_spec(id: &str, config: &Map<String, Value>) -> Result<TeamSpec, StoredConfigError> {
    let mut t = table(id, config)?;
    if !t.contains_key("model") {
        return Err(error("model", "is required (the team leader's model)"));
    }
    t.entry("members").or_insert_with(|| Value::Array(Vec::new()));
    read(t)
}

/// The `[[workflows]]` table workflow `id`'s stored `config` is.
///
/// # Errors
/// The field that does not describe a workflow this OS can build.
pub fn workflow_spec(id: &str, config: &Map<String, Value>) -> Result<WorkflowSpec, StoredConfigError> {
    let mut t = table(id, config)?;
    if let Some(steps) = t.remove("steps") {
        let Value::Array(items) = steps else { return Err(error("steps", "must be a list")) };
        let steps =
            items.iter().enumerate().map(|(i, s)| step(s, &format!("steps[{i}]"))).collect::<Result<Vec<_>, _>>()?;
        t.insert("steps".into(), Value::Array(steps));
    }
    // Agno's workflow keys that change nothing here.
    for key in ["stream_executor_events", "store_executor_outputs", "add_workflow_history_to_steps"] {
        t.remove(key);
    }
    read(t)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn agnos_to_dict_and_agentos_toml_spellings_are_read_alike() {
        let agno = agent_spec(
            "a",
            &object(json!({"name": "A", "id": "ignored", "model": {"id": "gpt-4o-mini", "provider": "OpenAI", "name": "OpenAIChat"},
                           "instructions": "Be kind.", "knowledge": {"name": "docs"}, "telemetry": false,
                           "tools": [{"name": "add", "toolkit": "calculator", "parameters": {}}, {"name": "multiply", "toolkit": "calculator"}]})),
        )
        .unwrap();
        assert_eq!(agno.id, "a");
        assert_eq!(agno.knowledge.as_deref(), Some("docs"));
        assert!(
            matches!(&agno.model, Some(crate::config::ModelSpec::Full { provider, id, .. }) if provider == "openai-chat" && id.as_deref() == Some("gpt-4o-mini"))
        );
        assert!(
            matches!(&agno.tools[..], [crate::config::ToolSpec::Table(t)] if t["include_tools"] == json!(["add", "multiply"]))
        );
        let toml =
            agent_spec("a", &object(json!({"model": "test", "tools": ["calculator"], "add_history_to_context": true})))
                .unwrap();
        assert_eq!(toml.add_history_to_context, Some(true));
    }

    #[test]
    fn what_cannot_be_built_is_refused_naming_the_field() {
        let err = |config: Value| agent_spec("a", &object(config)).unwrap_err().to_string();
        assert_eq!(err(json!({"name": "A"})), "config.model: is required (\"provider:id\", or {\"provider\", \"id\"})");
        assert_eq!(
            err(json!({"model": "test", "respond_in_haiku": true})),
            "config.respond_in_haiku: is not a setting this OS knows"
        );
        assert!(
            err(json!({"model": "test", "tools": [{"name": "now"}]}))
                .starts_with("config.tools[0]: function \"now\" names no toolkit")
        );
        assert!(err(json!({"model": "test", "num_history_runs": "three"})).starts_with("config.num_history_runs: "));
        let team =
            team_spec("t", &object(json!({"model": "test", "members": [{"type": "agent", "agent_id": "a"}, "b"]})))
                .unwrap();
        assert_eq!(team.members, ["a", "b"]);
        assert_eq!(team_spec("t", &object(json!({"members": []}))).unwrap_err().field, "model");
    }

    #[test]
    fn agnos_workflow_steps_are_read_as_agentos_toml_steps() {
        let wf = workflow_spec(
            "w",
            &object(json!({"name": "Flow", "steps": [
                {"type": "Step", "name": "triage", "step_id": "s1", "agent_id": "a"},
                {"type": "Condition", "name": "c", "evaluator": "input.contains(\"x\")", "evaluator_type": "cel",
                 "steps": [{"name": "yes", "team_id": "t"}], "else_steps": [{"name": "no", "agent_id": "a"}]},
                {"type": "Router", "name": "r", "choices": [{"name": "one", "workflow_id": "w2"}]}
            ]})),
        )
        .unwrap();
        assert_eq!(wf.steps[0].agent.as_deref(), Some("a"));
        assert_eq!(
            (wf.steps[1].kind.as_deref(), wf.steps[1].condition.as_deref()),
            (Some("condition"), Some("input.contains(\"x\")"))
        );
        assert_eq!(wf.steps[1].steps[0].team.as_deref(), Some("t"));
        assert_eq!(wf.steps[1].else_steps[0].name, "no");
        assert_eq!(wf.steps[2].steps[0].workflow.as_deref(), Some("w2"));
        let err = workflow_spec(
            "w",
            &object(
                json!({"steps": [{"type": "Condition", "name": "c", "evaluator": "is_urgent", "evaluator_type": "function"}]}),
            ),
        );
        assert_eq!(err.unwrap_err().field, "steps[0].evaluator");
    }
}
