//! `/agents`: list and describe agents, run them (JSON or SSE), read their runs, cancel and
//! continue. Under user isolation the caller's `sub` is the run's user and another user's
//! session or run answers 404.

use std::collections::HashMap;

use agno_core::RunStatus;
use serde_json::{Map, Value, json};

use super::component::Kind;
use super::run_form::fields;
use crate::error::{ApiError, ApiResult};
use crate::form::Form;
use crate::routes::FormField;
use crate::routes::without_nulls;
use crate::state::{AppState, ServedAgent};

/// Agno's `filter_meaningful_config`: the entries that are set and differ from Agno's defaults,
/// or `None` when nothing is left.
fn meaningful(entries: Vec<(&str, Value)>) -> Option<Value> {
    let defaults = json!({
        "add_history_to_context": false, "num_history_runs": 3, "enable_session_summaries": false,
        "search_past_sessions": false, "cache_session": false, "add_references": false,
        "references_format": "json", "enable_agentic_knowledge_filters": false,
        "enable_agentic_memory": false, "update_memory_on_run": false, "read_chat_history": false,
        "search_knowledge": true, "update_knowledge": false, "read_tool_call_history": false,
        "system_message_role": "system", "build_context": true, "markdown": false,
        "add_name_to_context": false, "add_datetime_to_context": false, "add_location_to_context": false,
        "resolve_in_context": true, "user_message_role": "user", "build_user_context": true, "retries": 0,
        "delay_between_retries": 1, "exponential_backoff": false, "parse_response": true,
        "use_json_mode": false, "stream_events": false,
    });
    let kept: Map<String, Value> = entries
        .into_iter()
        .filter(|(k, v)| !v.is_null() && defaults.get(*k) != Some(v))
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    (!kept.is_empty()).then_some(Value::Object(kept))
}

/// An agent as Agno's `AgentResponse.from_agent` describes it (fields that are unset left out).
pub(crate) fn agent_json(state: &AppState, a: &ServedAgent) -> Value {
    let agent = &a.agent;
    let s = agent.settings();
    let model = agent.model();
    let tools: Vec<Value> = agent
        .tools()
        .iter()
        .map(|t| {
            let d = t.definition();
            let flags = t.flags();
            let mut tool = json!({"name": d.name, "description": d.description, "parameters": &*d.parameters});
            if d.strict {
                tool["strict"] = json!(true);
            }
            tool["requires_confirmation"] = json!(flags.requires_confirmation);
            tool["external_execution"] = json!(flags.external_execution);
            without_nulls(tool)
        })
        .collect();
    let has_db = agent.db().is_some();
    let history = s.history;
    let reasoning_model = s.reasoning.reasoning_model.as_ref();
    let mut reasoning = vec![("reasoning", json!(reasoning_model.is_some())), ("reasoning_agent_id", Value::Null)];
    if let Some(m) = reasoning_model {
        reasoning.push(("reasoning_model", json!({"name": m.name(), "model": m.id(), "provider": m.provider()})));
    }
    let instructions = (!s.instructions.is_empty()).then(|| json!(s.instructions));
    let delay = s.retry.delay_between_retries.as_secs_f64();
    without_nulls(json!({
        "id": agent.id(),
        "name": agent.name(),
        "db_id": has_db.then(|| &*state.db_id),
        "filesystem": false,
        "description": agent.description(),
        "role": s.role,
        "is_factory": false,
        "model": {"name": model.name(), "model": model.id(), "provider": model.provider()},
        "tools": meaningful(vec![
            ("tools", if tools.is_empty() { Value::Null } else { Value::Array(tools) }),
            ("tool_call_limit", json!(s.tools.tool_call_limit)),
            ("tool_choice", s.tools.tool_choice.clone().unwrap_or(Value::Null)),
        ]),
        "sessions": meaningful(vec![
            ("session_table", if has_db { json!(agno_db::TableNames::default().sessions) } else { Value::Null }),
            ("add_history_to_context", json!(history.add_history_to_context)),
            ("enable_session_summaries", json!(s.summaries.enable_session_summaries)),
            ("num_history_runs", json!(history.num_history_runs)),
            ("search_past_sessions", json!(s.past_sessions.search_past_sessions)),
            ("num_past_sessions_to_search", json!(s.past_sessions.num_past_sessions_to_search)),
            ("num_past_session_runs_in_search", json!(s.past_sessions.num_past_session_runs_in_search)),
            ("cache_session", json!(false)),
        ]),
        "memory": meaningful(vec![
            ("enable_agentic_memory", json!(s.memory.enable_agentic_memory)),
            ("update_memory_on_run", json!(s.memory.update_memory_on_run)),
            (
                "memory_table",
                if has_db && s.memory.update_memory_on_run {
                    json!(agno_db::TableNames::default().memories)
                } else {
                    Value::Null
                },
            ),
            (
                "model",
                s.memory_model
                    .map_or(Value::Null, |m| json!({"name": m.name(), "model": m.id(), "provider": m.provider()})),
            ),
        ]),
        "reasoning": meaningful(reasoning),
        "system_message": meaningful(vec![
            ("system_message", json!(s.system_message)),
            ("system_message_role", json!("system")),
            ("build_context", json!(true)),
            ("description", json!(agent.description())),
            ("instructions", instructions.unwrap_or(Value::Null)),
            ("expected_output", json!(s.expected_output)),
            ("additional_context", json!(s.additional_context)),
            ("markdown", json!(s.markdown)),
            ("add_name_to_context", json!(s.add_name_to_context)),
            ("add_datetime_to_context", json!(s.add_datetime_to_context)),
        ]),
        "response_settings": meaningful(vec![
            ("retries", json!(s.retry.retries)),
            ("delay_between_retries", if delay.fract() == 0.0 { json!(delay as u64) } else { json!(delay) }),
            ("exponential_backoff", json!(s.retry.exponential_backoff)),
            ("output_schema_name", json!(s.output_schema.map(|o| &o.name))),
        ]),
        "metadata": s.metadata,
        "is_component": false,
        "sandboxed": false,
    }))
}

/// The form of `POST /agents/{agent_id}/runs`.
pub const RUN_FORM: &[FormField] = &[
    fields::MESSAGE,
    fields::STREAM,
    fields::SESSION,
    fields::USER,
    fields::SESSION_STATE,
    FormField::optional("dependencies", "object", "JSON object of dependencies for this run."),
    fields::METADATA,
    FormField::optional("output_schema", "object", "JSON schema the answer must match."),
    FormField::optional("add_history_to_context", "boolean", "Overrides the agent's setting."),
    fields::VERSION,
    fields::BACKGROUND,
    FormField::optional("cancel_on_disconnect", "boolean", "Cancel the run when the client goes away (agno-rs)."),
];

/// The form of `POST /agents/{agent_id}/runs/{run_id}/continue`.
pub const CONTINUE_FORM: &[FormField] = &[
    FormField::optional("tools", "array", "JSON list of the paused tool executions, resolved."),
    FormField::optional(
        "input",
        "string",
        "A user message appended before the run goes on (a follow-up to a completed run).",
    ),
    FormField::optional(
        "continue_from",
        "string",
        "Where the run goes on from: 'end' (default), 'last_user', or a message index (a checkpoint's).",
    ),
    FormField::optional(
        "fork",
        "boolean",
        "Go on as a new sibling run (forked_from_run_id), the original untouched; a completed run always forks.",
    ),
    FormField::optional("regenerate", "boolean", "Make the run's last answer again, as a fork from before it."),
    FormField::optional(
        "replace_original",
        "boolean",
        "With regenerate: mark the original REGENERATED, hidden from history (default true).",
    ),
    FormField::optional("additional_instructions", "string", "With regenerate: guidance appended as a user message."),
    fields::RUN_SESSION,
    fields::USER,
    fields::STREAM,
    fields::CONTINUE_BACKGROUND,
];

/// Applies the caller's decisions (Agno's `tools` form field: the paused tool executions with
/// `confirmed`, `confirmation_note`, `result` or filled `user_input_schema`) to the run's
/// requirements.
fn resolve(run: &agno_core::RunOutput, tools: &[Value]) -> ApiResult<Vec<agno_core::RunRequirement>> {
    let mut by_call: HashMap<&str, &Value> = HashMap::new();
    for t in tools {
        let id = t.get("tool_call_id").and_then(Value::as_str).ok_or_else(|| {
            ApiError::unprocessable("every entry of tools needs its tool_call_id (as in the paused run)")
        })?;
        by_call.insert(id, t);
    }
    let mut out = Vec::new();
    for req in run.requirements.iter().flatten() {
        let mut req = req.clone();
        let Some(t) = req.tool_call_id().and_then(|id| by_call.get(id)).copied() else {
            out.push(req);
            continue;
        };
        if req.needs_confirmation() {
            match t.get("confirmed").and_then(Value::as_bool) {
                Some(true) => req.confirm(),
                Some(false) => req.reject(t.get("confirmation_note").and_then(Value::as_str).map(str::to_owned)),
                None => {}
            }
        }
        if req.needs_user_input()
            && let Some(fields) = t.get("user_input_schema").and_then(Value::as_array)
        {
            let values: Map<String, Value> = fields
                .iter()
                .filter_map(|f| Some((f.get("name")?.as_str()?.to_owned(), f.get("value")?.clone())))
                .filter(|(_, v)| !v.is_null())
                .collect();
            req.provide_user_input(&values);
        }
        if req.needs_external_execution()
            && let Some(result) = t.get("result").filter(|r| !r.is_null())
        {
            let text = result.as_str().map_or_else(|| result.to_string(), str::to_owned);
            req.set_external_execution_result(text);
        }
        out.push(req);
    }
    Ok(out)
}

/// The answers of an agent's continue form (Agno's `tools`: the paused tool executions,
/// resolved) applied to the paused `run`: 409 for a run that is not paused, 422 for a list that
/// is not JSON or leaves a requirement open.
pub(crate) fn answer(run: &agno_core::RunOutput, form: &Form) -> ApiResult<Vec<agno_core::RunRequirement>> {
    if run.status != RunStatus::Paused {
        return Err(ApiError::conflict(format!("Run {} is not paused (status {:?})", run.id(), run.status)));
    }
    let tools: Vec<Value> = match form.text("tools") {
        None => Vec::new(),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| ApiError::unprocessable(format!("tools must be a JSON list of tool executions: {e}")))?,
    };
    let requirements = resolve(run, &tools)?;
    if let Some(open) = requirements.iter().find(|r| !r.is_resolved()) {
        return Err(ApiError::unprocessable(format!(
            "requirement {} (tool call {}) is not resolved: confirm or reject it, supply its input or its result",
            open.id,
            open.tool_call_id().unwrap_or("?")
        )));
    }
    Ok(requirements)
}

/// `/agents/...` as a component kind.
#[derive(Debug)]
pub struct Agents;

impl Kind for Agents {
    type Runner = agno_runtime::Agent;

    fn runner(state: &AppState, id: &str) -> Option<agno_runtime::Agent> {
        state.any_agent(id).map(|served| served.agent)
    }
    async fn at_version(state: &AppState, id: &str, version: i64) -> Result<agno_runtime::Agent, String> {
        crate::queue::Served::agent_version(state, id, version).await
    }
    async fn describe_version(state: &AppState, id: &str, version: i64) -> Option<Value> {
        let served = state.published.as_ref()?.agent_version(id, version).await.ok()?;
        Some(agent_json(state, &served))
    }
    fn ids(state: &AppState) -> Vec<String> {
        let configured = state.agents.iter().map(|a| a.agent.id().to_owned());
        configured.chain(state.published_now().agents.keys().cloned()).collect()
    }
    fn describe(state: &AppState, id: &str) -> Option<Value> {
        if let Some(a) = state.agent(id) {
            return Some(agent_json(state, a));
        }
        let published = state.published.as_ref()?.agent(id)?;
        Some(super::component::from_catalog(agent_json(state, &published.built), published.version))
    }
    // Agno's `AgentSummaryResponse`.
    fn summarise(state: &AppState, id: &str) -> Option<Value> {
        let served = state.any_agent(id)?;
        let agent = &served.agent;
        Some(without_nulls(json!({
            "id": agent.id(),
            "name": agent.name(),
            "description": agent.description(),
            "db_id": state.db.as_ref().map(|_| &*state.db_id),
            "model": super::core::model_json(agent.model().as_ref()),
            "sandboxed": false,
        })))
    }
    async fn answer(
        _: &agno_runtime::Agent,
        run: agno_core::RunOutput,
        form: &Form,
    ) -> ApiResult<(agno_core::RunOutput, Vec<agno_core::RunRequirement>)> {
        let requirements = answer(&run, form)?;
        Ok((run, requirements))
    }
    // Not streamed: no event channel at all.
    fn finish(
        agent: &agno_runtime::Agent,
        spec: &agno_runtime::RunSpec,
    ) -> impl std::future::Future<Output = Result<agno_core::RunOutput, agno_runtime::RunError>> + Send {
        agent.spawn_run(spec.request())
    }
}
