//! `/sessions`: list, create, read, update, rename and delete sessions, and read their runs, as
//! Agno 3.1's session router answers them (`SessionSchema`, `AgentSessionDetailSchema`,
//! `RunSchema`, ...).
//!
//! Every storage call is scoped with [`Principal::user_scope`]: under user isolation another
//! user's session answers 404 exactly like a missing one, and listings only hold the caller's
//! sessions. Listing never reads run bodies (`get_sessions`).

use std::sync::Arc;
use std::time::Instant;

use agno_core::{
    AgentSession, Db, RunStatus, SessionQuery as StoreQuery, SessionSort, SessionSummary, SessionType, SortOrder,
    StateUpdate,
};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Metadata keys the runtime owns; Agno strips them from caller-supplied session metadata.
const RESERVED_METADATA_KEYS: [&str; 3] = ["agno_component_version", "agno_dispatch_chain", "agno_dispatch_depth"];

/// Length of the `run_input` and `content_preview` texts of a run preview.
const PREVIEW_CHARS: usize = 280;

// ---------------------------------------------------------------------------------------------
// Query parameters
// ---------------------------------------------------------------------------------------------

/// The query string as `(name, value)` pairs; repeated names are kept (`status=A&status=B`).
struct Params(Vec<(String, String)>);

type RawQuery = Result<Query<Vec<(String, String)>>, QueryRejection>;

impl Params {
    fn read(query: RawQuery) -> ApiResult<Self> {
        query.map(|Query(pairs)| Self(pairs)).map_err(|e| ApiError::unprocessable(format!("invalid query string: {e}")))
    }

    /// The last value given for `name` (FastAPI's rule for a scalar parameter).
    fn raw(&self, name: &str) -> Option<&str> {
        self.0.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// A text parameter; an empty value counts as absent.
    fn text(&self, name: &str) -> Option<String> {
        self.raw(name).filter(|v| !v.is_empty()).map(str::to_owned)
    }

    /// Every value given for `name`.
    fn all(&self, name: &str) -> Vec<&str> {
        self.0.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect()
    }

    fn int(&self, name: &str) -> ApiResult<Option<i64>> {
        self.raw(name)
            .map(|v| {
                v.trim()
                    .parse::<i64>()
                    .map_err(|_| ApiError::unprocessable(format!("{name} must be an integer, got {v:?}")))
            })
            .transpose()
    }

    /// A positive integer (`>= 1`), or `default`.
    fn positive(&self, name: &str, default: usize) -> ApiResult<usize> {
        match self.int(name)? {
            None => Ok(default),
            Some(n) if n >= 1 => {
                usize::try_from(n).map_err(|_| ApiError::unprocessable(format!("{name} is too large")))
            }
            Some(n) => Err(ApiError::unprocessable(format!("{name} must be greater than or equal to 1, got {n}"))),
        }
    }

    fn bool(&self, name: &str) -> ApiResult<bool> {
        match self.raw(name).map(str::to_ascii_lowercase).as_deref() {
            None => Ok(false),
            Some("true" | "1" | "yes" | "on" | "t" | "y") => Ok(true),
            Some("false" | "0" | "no" | "off" | "f" | "n") => Ok(false),
            Some(other) => Err(ApiError::unprocessable(format!("{name} must be a boolean, got {other:?}"))),
        }
    }

    /// `type`: `agent`, `team` or `workflow`.
    fn session_type(&self) -> ApiResult<Option<SessionType>> {
        self.raw("type").map(parse_session_type).transpose()
    }
}

fn parse_session_type(text: &str) -> ApiResult<SessionType> {
    match text {
        "agent" => Ok(SessionType::Agent),
        "team" => Ok(SessionType::Team),
        "workflow" => Ok(SessionType::Workflow),
        other => Err(ApiError::unprocessable(format!("type must be 'agent', 'team' or 'workflow', got {other:?}"))),
    }
}

/// The database a request addresses (`db_id`, `table` as Agno's `get_db`): the OS has one.
fn database<'a>(state: &'a AppState, params: &Params) -> ApiResult<&'a Arc<dyn Db>> {
    let db_id = params.text("db_id");
    if params.text("table").is_some() && db_id.is_none() {
        return Err(ApiError::bad_request("The db_id query parameter is required when passing a table"));
    }
    if let Some(id) = db_id
        && (state.db.is_none() || id != *state.db_id)
    {
        return Err(ApiError::not_found(format!("No database found with id '{id}'")));
    }
    state.require_db()
}

// ---------------------------------------------------------------------------------------------
// JSON bodies
// ---------------------------------------------------------------------------------------------

/// The body as a JSON object; an empty body is `None`.
fn json_object(body: &Bytes) -> ApiResult<Option<Map<String, Value>>> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(_) => Err(ApiError::unprocessable("the body must be a JSON object")),
        Err(e) => Err(ApiError::unprocessable(format!("the body is not valid JSON: {e}"))),
    }
}

fn body_text(body: &Map<String, Value>, field: &str) -> ApiResult<Option<String>> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::unprocessable(format!("{field} must be a string"))),
    }
}

fn body_object(body: &Map<String, Value>, field: &str) -> ApiResult<Option<Map<String, Value>>> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m.clone())),
        Some(_) => Err(ApiError::unprocessable(format!("{field} must be a JSON object"))),
    }
}

/// A non-empty list of `T` parsed from each item.
fn body_list<T>(
    body: &Map<String, Value>,
    field: &str,
    item: impl Fn(&Value) -> Option<T>,
    what: &str,
) -> ApiResult<Vec<T>> {
    let Some(Value::Array(items)) = body.get(field) else {
        return Err(ApiError::unprocessable(format!("{field} is required: a list of {what}")));
    };
    if items.is_empty() {
        return Err(ApiError::unprocessable(format!("{field} must hold at least 1 item")));
    }
    items
        .iter()
        .map(|v| item(v).ok_or_else(|| ApiError::unprocessable(format!("every item of {field} must be {what}"))))
        .collect()
}

/// Caller metadata without the keys the runtime owns; `None` when nothing is left of it.
fn sanitize_metadata(metadata: Option<Map<String, Value>>) -> Option<Map<String, Value>> {
    let mut m = metadata?;
    if !RESERVED_METADATA_KEYS.iter().any(|k| m.contains_key(*k)) {
        return Some(m);
    }
    for k in RESERVED_METADATA_KEYS {
        m.remove(k);
    }
    (!m.is_empty()).then_some(m)
}

// ---------------------------------------------------------------------------------------------
// Response shapes (Agno's schema.py, built from the stored dicts as Agno builds them)
// ---------------------------------------------------------------------------------------------

/// Python truthiness of a JSON value.
fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

/// `dict.get(key, default)`: the stored value (even `null`), else the default.
fn get_or(d: &Map<String, Value>, key: &str, default: Value) -> Value {
    d.get(key).cloned().unwrap_or(default)
}

/// `dict.get(key)`.
fn get(d: &Map<String, Value>, key: &str) -> Value {
    get_or(d, key, Value::Null)
}

/// An epoch timestamp (or ISO text) as the UTC datetime pydantic writes: `2025-09-05T16:02:09Z`.
fn iso(v: &Value) -> Value {
    let secs = match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f.floor() as i64)),
        Value::String(s) => return Value::String(s.clone()),
        _ => None,
    };
    secs.and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .map_or(Value::Null, |t| Value::String(t.format("%Y-%m-%dT%H:%M:%SZ").to_string()))
}

/// Drops the top-level `null` fields (pydantic's `exclude_none` on a response model).
fn without_nulls(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.into_iter().filter(|(_, v)| !v.is_null()).collect()),
        other => other,
    }
}

fn to_map<T: serde::Serialize>(value: &T) -> ApiResult<Map<String, Value>> {
    match serde_json::to_value(value) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::internal("a stored record did not serialize to an object")),
        Err(e) => Err(ApiError::internal(format!("cannot serialize a stored record: {e}"))),
    }
}

/// The type of a session: `agent` when it has an agent id, then team, then workflow, else agent
/// (as the session table's `session_type` column is written).
fn session_type_of(d: &Map<String, Value>) -> SessionType {
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
fn run_input(run: &Map<String, Value>, workflow: bool) -> String {
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

/// Agno's `get_session_name`: the stored name, else (from the runs, when read) the first user
/// message or input; workflows fall back to `New <name> Session`.
fn session_name(d: &Map<String, Value>, kind: SessionType) -> String {
    if let Some(name) = d.get("session_data").and_then(|s| s.get("session_name")).filter(|n| !n.is_null()) {
        return text_of(name);
    }
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
fn agent_metadata(metadata: &Value, agent_data: &Value) -> Value {
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
fn session_schema(d: &Map<String, Value>) -> Value {
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
fn session_detail(d: &Map<String, Value>, kind: SessionType) -> Value {
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
fn agent_run_schema(run: &Map<String, Value>, session: Option<&Map<String, Value>>) -> Value {
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
fn team_run_schema(run: &Map<String, Value>) -> Value {
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
fn workflow_run_schema(run: &Map<String, Value>) -> Value {
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
fn classify_run(run: &Map<String, Value>, kind: SessionType, session: &Map<String, Value>) -> Option<Value> {
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
fn run_preview(schema: &Value) -> Value {
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

// ---------------------------------------------------------------------------------------------
// Storage helpers
// ---------------------------------------------------------------------------------------------

fn not_found(session_id: &str) -> ApiError {
    ApiError::not_found(format!("Session with id '{session_id}' not found"))
}

/// The session visible to the caller (with its runs when `runs_limit` is `None`), or 404.
async fn visible_session(
    db: &Arc<dyn Db>,
    session_id: &str,
    user_id: Option<&str>,
    runs_limit: Option<usize>,
    missing: impl FnOnce() -> ApiError,
) -> ApiResult<AgentSession> {
    db.get_session(session_id, user_id, runs_limit).await?.ok_or_else(missing)
}

/// The detail answer of a session: the type asked for, else the session's own.
fn detail_of(session: &AgentSession, kind: Option<SessionType>) -> ApiResult<Value> {
    let d = to_map(session)?;
    let kind = kind.unwrap_or_else(|| session_type_of(&d));
    Ok(session_detail(&d, kind))
}

// ---------------------------------------------------------------------------------------------
// Handlers
// ---------------------------------------------------------------------------------------------

/// `GET /sessions`: `type`, `component_id`, `user_id`, `session_name` (contains), `limit` (20),
/// `page` (1), `sort_by` (`created_at` | `updated_at`), `sort_order` (`desc`); paginated
/// `SessionSchema` rows.
pub async fn list_sessions(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    let params = Params::read(query)?;
    let session_type = params.session_type()?;
    let limit = params.positive("limit", 20)?;
    let page = params.positive("page", 1)?;
    let sort_by = match params.raw("sort_by").unwrap_or("created_at") {
        "created_at" => SessionSort::CreatedAt,
        "updated_at" => SessionSort::UpdatedAt,
        other => {
            return Err(ApiError::unprocessable(format!(
                "sort_by must be 'created_at' or 'updated_at', got {other:?}"
            )));
        }
    };
    let sort_order = match params.raw("sort_order").unwrap_or("desc") {
        "asc" => SortOrder::Asc,
        "desc" => SortOrder::Desc,
        other => return Err(ApiError::unprocessable(format!("sort_order must be 'asc' or 'desc', got {other:?}"))),
    };
    let db = database(&state, &params)?;
    let started = Instant::now();
    let found = db
        .get_sessions(&StoreQuery {
            session_type,
            user_id: principal.user_scope(params.text("user_id")),
            component_id: params.text("component_id"),
            session_name: params.text("session_name"),
            limit: Some(limit),
            page: Some(page),
            sort_by,
            sort_order,
            ..StoreQuery::default()
        })
        .await?;
    let elapsed_ms = (started.elapsed().as_secs_f64() * 100_000.0).round() / 100.0;
    let data = found.sessions.iter().map(|s| to_map(s).map(|d| session_schema(&d))).collect::<ApiResult<Vec<_>>>()?;
    let limit_u64 = u64::try_from(limit).unwrap_or(u64::MAX);
    Ok(Json(json!({
        "data": data,
        "meta": {
            "page": page,
            "limit": limit,
            "total_pages": found.total.div_ceil(limit_u64),
            "total_count": found.total,
            "search_time_ms": elapsed_ms,
        },
    })))
}

/// `POST /sessions?type=agent`: body `CreateSessionRequest` (`session_id`, `session_name`,
/// `session_state`, `metadata`, `user_id`, `agent_id`, `team_id`, `workflow_id`; all optional).
/// 201 with the detail; 409 when the id is taken.
pub async fn create_session(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    query: RawQuery,
    body: Bytes,
) -> ApiResult<Response> {
    let params = Params::read(query)?;
    let kind = params.session_type()?.unwrap_or(SessionType::Agent);
    let body = json_object(&body)?.unwrap_or_default();
    let requested_id = body_text(&body, "session_id")?;
    let session_name = body_text(&body, "session_name")?;
    let session_state = body_object(&body, "session_state")?;
    let metadata = sanitize_metadata(body_object(&body, "metadata")?);
    let user_id = principal.user_scope(body_text(&body, "user_id")?);
    let component_id = body_text(&body, &format!("{}_id", kind.as_str()))?;
    for other in ["agent_id", "team_id", "workflow_id"] {
        body_text(&body, other)?;
    }
    let db = database(&state, &params)?;

    let session_id = requested_id.clone().unwrap_or_else(agno_core::new_id);
    if requested_id.is_some() {
        let scoped = principal.user_scope(None);
        if db.get_session(&session_id, scoped.as_deref(), Some(0)).await?.is_some() {
            return Err(ApiError::conflict(format!(
                "Session with id '{session_id}' already exists. Use PATCH /sessions/{session_id} to update it."
            )));
        }
        if scoped.is_some() && db.get_session(&session_id, None, Some(0)).await?.is_some() {
            return Err(ApiError::conflict(
                "Could not create a session with the supplied session_id. \
                 Omit session_id to have one generated, or choose a different one.",
            ));
        }
    }

    let mut session = AgentSession::new(session_id.clone());
    session.user_id = user_id.clone();
    match kind {
        SessionType::Agent => session.agent_id = component_id,
        SessionType::Team => session.team_id = component_id,
        SessionType::Workflow => session.workflow_id = component_id,
    }
    let mut data = Map::new();
    if let Some(s) = session_state {
        data.insert("session_state".to_owned(), Value::Object(s));
    }
    if let Some(n) = session_name {
        data.insert("session_name".to_owned(), Value::String(n));
    }
    session.session_data = (!data.is_empty()).then_some(data);
    session.metadata = metadata;
    db.upsert_session(&session, &StateUpdate::Replace).await?;
    let stored = db.get_session(&session_id, user_id.as_deref(), Some(0)).await?.unwrap_or(session);
    Ok((StatusCode::CREATED, Json(without_nulls(detail_of(&stored, Some(kind))?))).into_response())
}

/// `GET /sessions/{session_id}?type=&user_id=`: the session's detail with its chat history.
pub async fn get_session(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(session_id): Path<String>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    let params = Params::read(query)?;
    let kind = params.session_type()?;
    let db = database(&state, &params)?;
    let user_id = principal.user_scope(params.text("user_id"));
    let missing = || {
        let title = match kind {
            Some(SessionType::Agent) => "Agent ",
            Some(SessionType::Team) => "Team ",
            Some(SessionType::Workflow) => "Workflow ",
            None => return not_found(&session_id),
        };
        ApiError::not_found(format!("{title}Session with id '{session_id}' not found"))
    };
    let session = visible_session(db, &session_id, user_id.as_deref(), None, missing).await?;
    Ok(Json(without_nulls(detail_of(&session, kind)?)))
}

/// `PATCH /sessions/{session_id}`: body `UpdateSessionRequest` (`session_name`, `session_state`,
/// `metadata`, `summary`). An explicit `session_state` replaces the stored one; without it the
/// stored state is kept (runs may be changing it meanwhile).
pub async fn update_session(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(session_id): Path<String>,
    query: RawQuery,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let params = Params::read(query)?;
    let kind = params.session_type()?;
    let body = json_object(&body)?.ok_or_else(|| ApiError::unprocessable("a JSON body is required"))?;
    let name = body_text(&body, "session_name")?;
    let session_state = body_object(&body, "session_state")?;
    let metadata = body_object(&body, "metadata")?;
    let summary =
        match body_object(&body, "summary")? {
            Some(s) => Some(serde_json::from_value::<SessionSummary>(Value::Object(s)).map_err(|e| {
                ApiError::unprocessable(format!("summary must be an object with a `summary` text: {e}"))
            })?),
            None => None,
        };
    let db = database(&state, &params)?;
    let user_id = principal.user_scope(params.text("user_id"));
    let mut session = visible_session(db, &session_id, user_id.as_deref(), None, || not_found(&session_id)).await?;

    let update = match session_state {
        Some(s) => {
            session.set_session_state(s);
            StateUpdate::Replace
        }
        None => StateUpdate::Merge { set: Map::new(), removed: Vec::new() },
    };
    if let Some(n) = name {
        session.session_data.get_or_insert_with(Map::new).insert("session_name".to_owned(), Value::String(n));
    }
    if metadata.is_some() {
        session.metadata = sanitize_metadata(metadata);
    }
    if summary.is_some() {
        session.summary = summary;
    }
    if principal.isolated {
        session.user_id = principal.user_scope(None);
    }
    db.upsert_session(&session, &update).await?;
    session.updated_at = Some(agno_core::now_epoch_secs());
    Ok(Json(detail_of(&session, kind)?))
}

/// `DELETE /sessions/{session_id}`: 204; 404 when the caller has no such session.
pub async fn delete_session(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(session_id): Path<String>,
    query: RawQuery,
) -> ApiResult<StatusCode> {
    let params = Params::read(query)?;
    let delete_media = params.bool("delete_media")?;
    let db = database(&state, &params)?;
    if delete_media {
        return Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "Media storage is not configured on AgentOS"));
    }
    let user_id = principal.user_scope(params.text("user_id"));
    if db.delete_session(&session_id, user_id.as_deref()).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found(&session_id))
    }
}

/// `DELETE /sessions`: body `DeleteSessionRequest` (`session_ids`, `session_types`, same
/// length); deletes those of the caller's sessions; 204.
pub async fn delete_sessions(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    query: RawQuery,
    body: Bytes,
) -> ApiResult<StatusCode> {
    let params = Params::read(query)?;
    let delete_media = params.bool("delete_media")?;
    let body = json_object(&body)?.ok_or_else(|| ApiError::unprocessable("a JSON body is required"))?;
    let ids = body_list(&body, "session_ids", |v| v.as_str().map(str::to_owned), "a session id (string)")?;
    let types = body_list(
        &body,
        "session_types",
        |v| v.as_str().and_then(|t| parse_session_type(t).ok()),
        "'agent', 'team' or 'workflow'",
    )?;
    if ids.len() != types.len() {
        return Err(ApiError::bad_request("Session IDs and session types must have the same length"));
    }
    let db = database(&state, &params)?;
    if delete_media {
        return Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "Media storage is not configured on AgentOS"));
    }
    let user_id = principal.user_scope(params.text("user_id"));
    db.delete_sessions(&ids, user_id.as_deref()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /sessions/{session_id}/rename`: body `{"session_name": "..."}`; the renamed detail.
pub async fn rename_session(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(session_id): Path<String>,
    query: RawQuery,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let params = Params::read(query)?;
    let kind = params.session_type()?;
    let body = json_object(&body)?.ok_or_else(|| ApiError::unprocessable("a JSON body is required"))?;
    let name = body_text(&body, "session_name")?.ok_or_else(|| ApiError::unprocessable("session_name is required"))?;
    let db = database(&state, &params)?;
    let user_id = principal.user_scope(params.text("user_id"));
    if db.rename_session(&session_id, &name, user_id.as_deref()).await?.is_none() {
        return Err(not_found(&session_id));
    }
    let session = visible_session(db, &session_id, user_id.as_deref(), None, || not_found(&session_id)).await?;
    Ok(Json(detail_of(&session, kind)?))
}

/// Every status a run can have, sorted (for the error of an unknown one).
const RUN_STATUSES: [RunStatus; 7] = [
    RunStatus::Cancelled,
    RunStatus::Completed,
    RunStatus::Error,
    RunStatus::Paused,
    RunStatus::Pending,
    RunStatus::Regenerated,
    RunStatus::Running,
];

fn python_list(items: &[&str]) -> String {
    format!("[{}]", items.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", "))
}

/// The runs of a session (`type`, `user_id`, `created_after`, `created_before`, repeatable
/// `status`), each as the schema of its kind, oldest first.
async fn session_runs(
    state: &AppState,
    principal: &Principal,
    session_id: &str,
    query: RawQuery,
) -> ApiResult<Vec<Value>> {
    let params = Params::read(query)?;
    let kind = params.session_type()?;
    let created_after = params.int("created_after")?;
    let created_before = params.int("created_before")?;
    let wanted: Vec<String> = params.all("status").iter().map(|s| s.to_uppercase()).collect();
    let mut unknown: Vec<&str> =
        wanted.iter().map(String::as_str).filter(|w| !RUN_STATUSES.iter().any(|s| s.as_str() == *w)).collect();
    if !unknown.is_empty() {
        unknown.sort_unstable();
        unknown.dedup();
        let valid: Vec<&str> = RUN_STATUSES.iter().map(|s| s.as_str()).collect();
        return Err(ApiError::bad_request(format!(
            "Invalid status value(s) {}; expected one of {}",
            python_list(&unknown),
            python_list(&valid)
        )));
    }
    let db = database(state, &params)?;
    let user_id = principal.user_scope(params.text("user_id"));
    let session = visible_session(db, session_id, user_id.as_deref(), None, || {
        ApiError::not_found(format!("Session with ID {session_id} not found"))
    })
    .await?;
    let d = to_map(&session)?;
    let kind = kind.unwrap_or_else(|| session_type_of(&d));
    let mut out = Vec::new();
    for run in session.runs() {
        let created = run.created_at;
        if created_after.is_some_and(|t| created < t) || created_before.is_some_and(|t| created > t) {
            continue;
        }
        if !wanted.is_empty() && !wanted.iter().any(|w| w == run.status.as_str()) {
            continue;
        }
        if let Some(schema) = classify_run(&to_map(run)?, kind, &d) {
            out.push(without_nulls(schema));
        }
    }
    Ok(out)
}

/// `GET /sessions/{session_id}/runs`.
pub async fn list_session_runs(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(session_id): Path<String>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    Ok(Json(Value::Array(session_runs(&state, &principal, &session_id, query).await?)))
}

/// `GET /sessions/{session_id}/run-previews`: the same runs, as short previews.
pub async fn list_run_previews(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(session_id): Path<String>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    let runs = session_runs(&state, &principal, &session_id, query).await?;
    Ok(Json(Value::Array(runs.iter().map(run_preview).collect())))
}

/// `GET /sessions/{session_id}/runs/{run_id}`: the run as the schema of its kind.
pub async fn get_session_run(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((session_id, run_id)): Path<(String, String)>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    let params = Params::read(query)?;
    params.session_type()?;
    let db = database(&state, &params)?;
    let user_id = principal.user_scope(params.text("user_id"));
    let session_missing = || ApiError::not_found(format!("Session with ID {session_id} not found"));
    let mut session = visible_session(db, &session_id, user_id.as_deref(), Some(0), session_missing).await?;
    // The run table first; a run only in a legacy session blob is found by reading the session.
    let mut run =
        db.get_run(&run_id, user_id.as_deref()).await?.filter(|r| r.session_id.as_deref() == Some(session_id.as_str()));
    if run.is_none() {
        session = visible_session(db, &session_id, user_id.as_deref(), None, session_missing).await?;
        run = session.runs().iter().find(|r| r.id() == run_id).cloned();
    }
    let run =
        run.ok_or_else(|| ApiError::not_found(format!("Run with ID {run_id} not found in session {session_id}")))?;
    let r = to_map(&run)?;
    let has = |k: &str| r.get(k).is_some_and(|v| !v.is_null());
    let schema = if has("workflow_id") {
        workflow_run_schema(&r)
    } else if has("team_id") {
        team_run_schema(&r)
    } else {
        agent_run_schema(&r, Some(&to_map(&session)?))
    };
    Ok(Json(schema))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn timestamps_are_utc_iso() {
        assert_eq!(iso(&json!(1757088129)), json!("2025-09-05T16:02:09Z"));
        assert_eq!(iso(&Value::Null), Value::Null);
    }

    #[test]
    fn the_name_falls_back_to_the_first_user_message() {
        let d = obj(
            json!({"runs": [{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]}]}),
        );
        assert_eq!(session_name(&d, SessionType::Agent), "hi");
        let d = obj(json!({"session_data": {"session_name": "named"}, "runs": []}));
        assert_eq!(session_name(&d, SessionType::Agent), "named");
        let d = obj(json!({"workflow_data": {"name": "flow"}, "runs": [{"input": 3}]}));
        assert_eq!(session_name(&d, SessionType::Workflow), "New flow Session");
        assert_eq!(session_name(&obj(json!({})), SessionType::Team), "");
    }

    #[test]
    fn reserved_metadata_keys_are_stripped() {
        assert_eq!(sanitize_metadata(Some(obj(json!({"agno_dispatch_depth": 1})))), None);
        assert_eq!(
            sanitize_metadata(Some(obj(json!({"a": 1, "agno_dispatch_chain": []})))),
            Some(obj(json!({"a": 1})))
        );
    }

    #[test]
    fn the_sdk_of_the_agent_data_is_exposed_in_metadata() {
        assert_eq!(agent_metadata(&json!({"a": 1}), &json!({"sdk": "x"})), json!({"a": 1, "sdk": "x"}));
        assert_eq!(agent_metadata(&Value::Null, &json!({"name": "n"})), Value::Null);
    }

    #[test]
    fn run_input_prefers_the_stored_input() {
        let run = obj(json!({"input": {"input_content": "q"}, "messages": [{"role": "user", "content": "m"}]}));
        assert_eq!(run_input(&run, false), "q");
        let run = obj(json!({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}));
        assert_eq!(run_input(&run, false), "b");
    }
}
