//! Response shapes of the session routes, as Agno 3.1's `schema.py` builds them from the stored
//! dicts: `SessionSchema`, the agent/team/workflow session details, `RunSchema`,
//! `TeamRunSchema`, `WorkflowRunSchema` and run previews.

use agno_core::SessionType;
use serde_json::{Map, Value, json};

use super::{PREVIEW_CHARS, parse_session_type};
use crate::error::{ApiError, ApiResult};
use agno_core::truthy;

/// `dict.get(key, default)`: the stored value (even `null`), else the default.
fn get_or(d: &Map<String, Value>, key: &str, default: Value) -> Value {
    d.get(key).cloned().unwrap_or(default)
}

/// `dict.get(key)`.
fn get(d: &Map<String, Value>, key: &str) -> Value {
    get_or(d, key, Value::Null)
}

/// An epoch timestamp (or ISO text) as the UTC datetime pydantic writes: `2025-09-05T16:02:09Z`.
pub(super) fn iso(v: &Value) -> Value {
    match v {
        Value::Number(n) => crate::routes::params::iso(n.as_i64().or_else(|| n.as_f64().map(|f| f.floor() as i64))),
        Value::String(s) => Value::String(s.clone()),
        _ => Value::Null,
    }
}

pub(super) use crate::routes::without_nulls;

pub(crate) fn to_map<T: serde::Serialize>(value: &T) -> ApiResult<Map<String, Value>> {
    match serde_json::to_value(value) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::internal("a stored record did not serialize to an object")),
        Err(e) => Err(ApiError::internal(format!("cannot serialize a stored record: {e}"))),
    }
}

/// The type of a session: `agent` when it has an agent id, then team, then workflow, else agent
/// (as the session table's `session_type` column is written).
pub(super) fn session_type_of(d: &Map<String, Value>) -> SessionType {
    if let Some(t) = d.get("session_type").and_then(Value::as_str).and_then(|t| parse_session_type(t).ok()) {
        return t;
    }
    if truthy(d.get("agent_id")) {
        SessionType::Agent
    } else if truthy(d.get("team_id")) {
        SessionType::Team
    } else if truthy(d.get("workflow_id")) {
        SessionType::Workflow
    } else {
        SessionType::Agent
    }
}

/// Agno's `stringify_input_content`.
fn stringify_input(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(_) => serde_json::to_string_pretty(v).unwrap_or_default(),
        Value::Array(items) => match items.first() {
            Some(Value::Object(first)) if first.get("role").and_then(Value::as_str) == Some("user") => {
                first.get("content").map(text_of).unwrap_or_default()
            }
            _ => v.to_string(),
        },
        other => other.to_string(),
    }
}

/// A value as text: the string itself, else its JSON.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Agno's `get_run_input`.
pub(super) fn run_input(run: &Map<String, Value>, workflow: bool) -> String {
    let input = run.get("input").filter(|v| !v.is_null());
    if !workflow && let Some(content) = input.and_then(|i| i.get("input_content")).filter(|c| !c.is_null()) {
        return stringify_input(content);
    }
    if workflow {
        if let Some(input) = input {
            return stringify_input(input);
        }
        let first_executor = run.get("step_executor_runs").and_then(Value::as_array).and_then(|r| r.first());
        let messages = first_executor.and_then(|r| r.get("messages")).and_then(Value::as_array);
        if let Some(m) = messages.and_then(|m| last_user_message(m)) {
            return m;
        }
    }
    run.get("messages").and_then(Value::as_array).and_then(|m| last_user_message(m)).unwrap_or_default()
}

fn last_user_message(messages: &[Value]) -> Option<String> {
    messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .map(|m| m.get("content").map(text_of).unwrap_or_default())
}

/// Most characters of a session name taken from its first message (a display field: a 9 MB
/// first message must not make every listing 9 MB per session).
pub(crate) const DERIVED_NAME_CHARS: usize = 200;

/// Agno's `get_session_name`: the stored name, else (from the runs, when read) the first user
/// message or input, at most [`DERIVED_NAME_CHARS`] characters; workflows fall back to
/// `New <name> Session`.
pub(super) fn session_name(d: &Map<String, Value>, kind: SessionType) -> String {
    if let Some(name) = d.get("session_data").and_then(|s| s.get("session_name")).filter(|n| !n.is_null()) {
        return text_of(name);
    }
    let mut name = derived_name(d, kind);
    if let Some((cut, _)) = name.char_indices().nth(DERIVED_NAME_CHARS) {
        name.truncate(cut);
        name.push('…');
    }
    name
}

/// The name a session without one takes from its runs.
fn derived_name(d: &Map<String, Value>, kind: SessionType) -> String {
    let runs: &[Value] = d.get("runs").and_then(Value::as_array).map_or(&[], Vec::as_slice);
    if kind == SessionType::Workflow {
        let Some(first) = runs.first() else { return String::new() };
        match first.get("input") {
            Some(Value::String(s)) => return s.clone(),
            Some(v @ Value::Object(_)) => return v.to_string(),
            _ => {}
        }
        return match d.get("workflow_data").and_then(|w| w.get("name")).filter(|n| truthy(Some(n))) {
            Some(name) => format!("New {} Session", text_of(name)),
            None => String::new(),
        };
    }
    for run in runs.iter().filter(|r| kind != SessionType::Team || !truthy(r.get("agent_id"))) {
        let messages = run.get("messages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        if let Some(m) =
            messages.iter().find(|m| m.get("role").and_then(Value::as_str) == Some("user") && truthy(m.get("content")))
        {
            return m.get("content").map(text_of).unwrap_or_default();
        }
        if let Some(input) = run.get("input").filter(|v| !v.is_null()) {
            return stringify_input(input);
        }
    }
    String::new()
}

/// `_agent_metadata`: the metadata plus `sdk` when the agent data names an adapter.
pub(super) fn agent_metadata(metadata: &Value, agent_data: &Value) -> Value {
    let sdk = agent_data.get("sdk").filter(|v| truthy(Some(v))).or_else(|| agent_data.get("framework"));
    match (sdk.and_then(Value::as_str).filter(|s| !s.is_empty()), metadata) {
        (Some(sdk), Value::Object(m)) => {
            let mut m = m.clone();
            m.insert("sdk".to_owned(), json!(sdk));
            Value::Object(m)
        }
        (Some(sdk), _) => json!({"sdk": sdk}),
        (None, m) => m.clone(),
    }
}

/// `get_chat_history`: user and assistant messages of the top-level runs, without history copies.
fn chat_history(d: &Map<String, Value>) -> Value {
    let runs = d.get("runs").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let messages = runs
        .iter()
        .filter(|r| r.get("parent_run_id").is_none_or(Value::is_null))
        .flat_map(|r| r.get("messages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice))
        .filter(|m| !m.get("from_history").and_then(Value::as_bool).unwrap_or(false))
        .filter(|m| !matches!(m.get("role").and_then(Value::as_str), Some("system" | "tool")))
        .cloned()
        .collect();
    Value::Array(messages)
}

/// One row of `GET /sessions` (`SessionSchema`, nulls dropped).
pub(super) fn session_schema(d: &Map<String, Value>) -> Value {
    let kind = session_type_of(d);
    let data = d.get("session_data").and_then(Value::as_object);
    let metrics = data.and_then(|s| s.get("session_metrics")).cloned().unwrap_or(Value::Null);
    let created_at = iso(&get_or(d, "created_at", json!(0)));
    let updated_at = match d.get("updated_at") {
        Some(v) => iso(v),
        None => created_at.clone(),
    };
    let metadata = match kind {
        SessionType::Agent => agent_metadata(&get(d, "metadata"), &get(d, "agent_data")),
        _ => get(d, "metadata"),
    };
    without_nulls(json!({
        "session_id": get_or(d, "session_id", json!("")),
        "session_name": session_name(d, kind),
        "session_state": data.and_then(|s| s.get("session_state")).cloned(),
        "created_at": created_at,
        "updated_at": updated_at,
        "session_type": kind.as_str(),
        "user_id": get(d, "user_id"),
        "agent_id": get(d, "agent_id"),
        "team_id": get(d, "team_id"),
        "workflow_id": get(d, "workflow_id"),
        "session_summary": get(d, "summary"),
        "total_tokens": metrics.get("total_tokens"),
        "metrics": metrics,
        "metadata": metadata,
    }))
}

/// The detail of a session by type (`AgentSessionDetailSchema`, `TeamSessionDetailSchema`,
/// `WorkflowSessionDetailSchema`), every field present (nulls included).
pub(super) fn session_detail(d: &Map<String, Value>, kind: SessionType) -> Value {
    let name = session_name(d, kind);
    let data = d.get("session_data").and_then(Value::as_object).filter(|m| !m.is_empty());
    let created_at = match d.get("created_at") {
        Some(v) if truthy(Some(v)) => iso(v),
        _ => Value::Null,
    };
    let updated_at = match d.get("updated_at") {
        Some(v) if truthy(Some(v)) => iso(v),
        _ => created_at.clone(),
    };
    let state = data.map_or(Value::Null, |s| get(s, "session_state"));
    let metrics = data.map_or(Value::Null, |s| get_or(s, "session_metrics", json!({})));
    let total_tokens = metrics.get("total_tokens").cloned().unwrap_or(Value::Null);
    let summary = d.get("summary").filter(|s| truthy(Some(s))).cloned().unwrap_or(Value::Null);
    match kind {
        SessionType::Agent => json!({
            "user_id": get(d, "user_id"),
            "agent_session_id": get_or(d, "session_id", json!("")),
            "session_id": get_or(d, "session_id", json!("")),
            "session_name": name,
            "session_summary": summary,
            "session_state": state,
            "agent_id": d.get("agent_id").filter(|a| truthy(Some(a))).cloned(),
            "total_tokens": total_tokens,
            "agent_data": get(d, "agent_data"),
            "metrics": metrics,
            "metadata": agent_metadata(&get(d, "metadata"), &get(d, "agent_data")),
            "chat_history": chat_history(d),
            "created_at": created_at,
            "updated_at": updated_at,
        }),
        SessionType::Team => json!({
            "session_id": get_or(d, "session_id", json!("")),
            "session_name": name,
            "user_id": get(d, "user_id"),
            "team_id": get(d, "team_id"),
            "session_summary": summary,
            "session_state": state,
            "metrics": metrics,
            "team_data": get(d, "team_data"),
            "metadata": get(d, "metadata"),
            "chat_history": chat_history(d),
            "created_at": created_at,
            "updated_at": updated_at,
            "total_tokens": total_tokens,
        }),
        SessionType::Workflow => json!({
            "user_id": get(d, "user_id"),
            "workflow_id": get(d, "workflow_id"),
            "workflow_name": get(d, "workflow_name"),
            "session_id": get_or(d, "session_id", json!("")),
            "session_name": name,
            "session_data": get(d, "session_data"),
            "session_state": state,
            "workflow_data": get(d, "workflow_data"),
            "metadata": get(d, "metadata"),
            "created_at": created_at,
            "updated_at": updated_at,
        }),
    }
}

/// `extract_input_media`.
fn input_media(run: &Map<String, Value>) -> Value {
    let input = run.get("input").and_then(Value::as_object);
    let list = |k: &str| input.and_then(|i| i.get(k)).filter(|v| v.is_array()).cloned().unwrap_or_else(|| json!([]));
    json!({"images": list("images"), "videos": list("videos"), "audios": list("audios"), "files": list("files")})
}

/// A list field of a run, or `null` when absent or empty.
fn non_empty(run: &Map<String, Value>, key: &str) -> Value {
    run.get(key).filter(|v| truthy(Some(v))).cloned().unwrap_or(Value::Null)
}

/// `RunSchema.from_dict` (every field; nulls included).
pub(crate) fn agent_run_schema(run: &Map<String, Value>, session: Option<&Map<String, Value>>) -> Value {
    let agent_data = session
        .filter(|s| session_type_of(s) == SessionType::Agent)
        .filter(|s| run.get("agent_id").is_none_or(|a| a.is_null() || Some(a) == s.get("agent_id")))
        .map_or(Value::Null, |s| get(s, "agent_data"));
    json!({
        "run_id": get_or(run, "run_id", json!("")),
        "parent_run_id": get_or(run, "parent_run_id", json!("")),
        "agent_id": get_or(run, "agent_id", json!("")),
        "user_id": get_or(run, "user_id", json!("")),
        "status": get(run, "status"),
        "cancellation_stage": get(run, "cancellation_stage"),
        "run_input": run_input(run, false),
        "content": get_or(run, "content", json!("")),
        "run_response_format": response_format(run),
        "reasoning_content": get_or(run, "reasoning_content", json!("")),
        "reasoning_steps": get_or(run, "reasoning_steps", json!([])),
        "metrics": get_or(run, "metrics", json!({})),
        "metadata": agent_metadata(&get(run, "metadata"), &agent_data),
        "messages": non_empty(run, "messages"),
        "tools": non_empty(run, "tools"),
        "events": non_empty(run, "events"),
        "created_at": iso(&get(run, "created_at")),
        "references": get_or(run, "references", json!([])),
        "citations": get(run, "citations"),
        "reasoning_messages": get_or(run, "reasoning_messages", json!([])),
        "session_state": get(run, "session_state"),
        "images": get_or(run, "images", json!([])),
        "videos": get_or(run, "videos", json!([])),
        "audio": get_or(run, "audio", json!([])),
        "files": get_or(run, "files", json!([])),
        "response_audio": get(run, "response_audio"),
        "input_media": input_media(run),
        "followups": get(run, "followups"),
        "forked_from_run_id": get(run, "forked_from_run_id"),
        "forked_from_message_index": get(run, "forked_from_message_index"),
        "forked_from_session_id": get(run, "forked_from_session_id"),
        "regenerated_from": get(run, "regenerated_from"),
        "last_checkpoint_at_message_index": get(run, "last_checkpoint_at_message_index"),
    })
}

fn response_format(run: &Map<String, Value>) -> &'static str {
    if run.get("content_type").and_then(Value::as_str).unwrap_or("str") == "str" { "text" } else { "json" }
}

/// `TeamRunSchema.from_dict`.
pub(crate) fn team_run_schema(run: &Map<String, Value>) -> Value {
    json!({
        "run_id": get_or(run, "run_id", json!("")),
        "parent_run_id": get_or(run, "parent_run_id", json!("")),
        "team_id": get_or(run, "team_id", json!("")),
        "user_id": get(run, "user_id"),
        "status": get(run, "status"),
        "cancellation_stage": get(run, "cancellation_stage"),
        "content": get_or(run, "content", json!("")),
        "reasoning_content": get_or(run, "reasoning_content", json!("")),
        "reasoning_steps": get_or(run, "reasoning_steps", json!([])),
        "run_input": run_input(run, false),
        "run_response_format": response_format(run),
        "metrics": get_or(run, "metrics", json!({})),
        "tools": non_empty(run, "tools"),
        "messages": non_empty(run, "messages"),
        "events": non_empty(run, "events"),
        "created_at": iso(&get(run, "created_at")),
        "references": get_or(run, "references", json!([])),
        "citations": get(run, "citations"),
        "reasoning_messages": get_or(run, "reasoning_messages", json!([])),
        "session_state": get(run, "session_state"),
        "input_media": input_media(run),
        "images": get_or(run, "images", json!([])),
        "videos": get_or(run, "videos", json!([])),
        "audio": get_or(run, "audio", json!([])),
        "files": get_or(run, "files", json!([])),
        "response_audio": get(run, "response_audio"),
        "followups": get(run, "followups"),
        "forked_from_run_id": get(run, "forked_from_run_id"),
        "forked_from_message_index": get(run, "forked_from_message_index"),
        "forked_from_session_id": get(run, "forked_from_session_id"),
        "regenerated_from": get(run, "regenerated_from"),
        "last_checkpoint_at_message_index": get(run, "last_checkpoint_at_message_index"),
    })
}

/// `WorkflowRunSchema.from_dict`.
pub(crate) fn workflow_run_schema(run: &Map<String, Value>) -> Value {
    json!({
        "run_id": get_or(run, "run_id", json!("")),
        "run_input": run_input(run, true),
        "events": get_or(run, "events", json!([])),
        "workflow_id": get_or(run, "workflow_id", json!("")),
        "user_id": get_or(run, "user_id", json!("")),
        "content": get_or(run, "content", json!("")),
        "content_type": get_or(run, "content_type", json!("")),
        "status": get_or(run, "status", json!("")),
        "cancellation_stage": get(run, "cancellation_stage"),
        "step_results": get_or(run, "step_results", json!([])),
        "step_executor_runs": get_or(run, "step_executor_runs", json!([])),
        "step_requirements": get(run, "step_requirements"),
        "pause_kind": get(run, "pause_kind"),
        "paused_step_name": get(run, "paused_step_name"),
        "paused_step_index": get(run, "paused_step_index"),
        "metrics": get_or(run, "metrics", json!({})),
        "created_at": iso(&get(run, "created_at")),
        "reasoning_content": get_or(run, "reasoning_content", json!("")),
        "reasoning_steps": get_or(run, "reasoning_steps", json!([])),
        "references": get_or(run, "references", json!([])),
        "citations": get(run, "citations"),
        "reasoning_messages": get_or(run, "reasoning_messages", json!([])),
        "images": get_or(run, "images", json!([])),
        "videos": get_or(run, "videos", json!([])),
        "audio": get_or(run, "audio", json!([])),
        "files": get_or(run, "files", json!([])),
        "response_audio": get(run, "response_audio"),
    })
}

/// `classify_session_run`: the schema matching a run of a session of this type; team sessions
/// drop runs with neither an agent nor a team id.
pub(super) fn classify_run(run: &Map<String, Value>, kind: SessionType, session: &Map<String, Value>) -> Option<Value> {
    let has = |k: &str| run.get(k).is_some_and(|v| !v.is_null());
    match kind {
        SessionType::Agent => Some(agent_run_schema(run, Some(session))),
        SessionType::Team if has("agent_id") => Some(agent_run_schema(run, None)),
        SessionType::Team if has("team_id") => Some(team_run_schema(run)),
        SessionType::Team => None,
        SessionType::Workflow if has("workflow_id") => Some(workflow_run_schema(run)),
        SessionType::Workflow if has("team_id") => Some(team_run_schema(run)),
        SessionType::Workflow => Some(agent_run_schema(run, None)),
    }
}

/// `SessionRunPreviewSchema.from_run`, from a run schema.
pub(super) fn run_preview(schema: &Value) -> Value {
    let preview = |v: Option<&Value>| match v {
        None | Some(Value::Null) => Value::Null,
        Some(v) => Value::String(text_of(v).chars().take(PREVIEW_CHARS).collect()),
    };
    without_nulls(json!({
        "run_id": schema.get("run_id"),
        "parent_run_id": schema.get("parent_run_id"),
        "agent_id": schema.get("agent_id"),
        "team_id": schema.get("team_id"),
        "workflow_id": schema.get("workflow_id"),
        "user_id": schema.get("user_id"),
        "status": schema.get("status"),
        "run_input": preview(schema.get("run_input")),
        "content_preview": preview(schema.get("content")),
        "created_at": schema.get("created_at"),
    }))
}
