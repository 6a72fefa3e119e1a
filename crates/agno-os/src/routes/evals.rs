//! `/eval-runs`: run an eval on an agent (`POST`), and list, read, rename and delete stored
//! evaluation runs, as Agno's eval router serves them. Under user isolation only the caller's own
//! eval runs exist, and an eval the caller runs is theirs.

use crate::routes::guard::Caller;
use crate::routes::query::Query;
use agno_core::{EvalFilterType, EvalQuery, EvalRunRecord, EvalType, SortOrder};
use axum::Json;
use axum::body::Bytes;
use axum::extract::Path;
use serde::Deserialize;
use serde_json::{Value, json};

use super::databases::select_db;
use super::params::{DbParams, NoContent, Paging, iso, json_body, sort_order};
use crate::error::{ApiError, ApiResult};

const EVAL_TYPES: [EvalType; 4] =
    [EvalType::Accuracy, EvalType::AgentAsJudge, EvalType::Performance, EvalType::Reliability];

/// An eval run as Agno's `EvalSchema`.
fn eval_json(r: &EvalRunRecord) -> Value {
    json!({
        "id": r.run_id,
        "agent_id": r.agent_id,
        "model_id": r.model_id,
        "model_provider": r.model_provider,
        "team_id": r.team_id,
        "workflow_id": r.workflow_id,
        "name": r.name,
        "evaluated_component_name": r.evaluated_component_name,
        "user_id": r.user_id,
        "eval_type": r.eval_type.as_str(),
        "eval_data": r.eval_data,
        "eval_input": r.eval_input,
        "created_at": iso(r.created_at),
        "updated_at": iso(r.updated_at),
    })
}

fn not_found(eval_run_id: &str) -> ApiError {
    ApiError::not_found(format!("Eval run with id '{eval_run_id}' not found"))
}

/// Query of `GET /eval-runs`. Agno names the component filter `type` on the wire.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListEvalsParams {
    agent_id: Option<String>,
    team_id: Option<String>,
    workflow_id: Option<String>,
    model_id: Option<String>,
    #[serde(rename = "type", alias = "filter_type")]
    #[schemars(extend("enum" = ["agent", "team", "workflow"]))]
    filter_type: Option<String>,
    /// Comma-separated eval types.
    #[schemars(
        regex(pattern = r"^(?:\s*(?:accuracy|agent_as_judge|performance|reliability)\s*(?:,\s*(?:accuracy|agent_as_judge|performance|reliability)\s*)*)?$"),
        extend("x-message" = "Invalid eval_type in {value}. Valid types: accuracy, agent_as_judge, performance, reliability")
    )]
    eval_types: Option<String>,
    #[schemars(range(min = 1, max = i64::MAX))]
    limit: Option<usize>,
    #[schemars(range(min = 1, max = i64::MAX))]
    page: Option<usize>,
    #[schemars(extend("enum" = ["created_at"]))]
    sort_by: Option<String>,
    #[schemars(extend("enum" = ["asc", "desc"]))]
    sort_order: Option<String>,
    db_id: Option<String>,
    table: Option<String>,
}

fn filter_type(value: Option<&str>) -> ApiResult<Option<EvalFilterType>> {
    match value.filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some("agent") => Ok(Some(EvalFilterType::Agent)),
        Some("team") => Ok(Some(EvalFilterType::Team)),
        Some("workflow") => Ok(Some(EvalFilterType::Workflow)),
        Some(other) => {
            Err(ApiError::unprocessable(format!("type must be 'agent', 'team' or 'workflow', not {other:?}")))
        }
    }
}

/// Comma-separated eval types; 422 naming the valid ones.
fn eval_types(value: Option<&str>) -> ApiResult<Option<Vec<EvalType>>> {
    let Some(value) = value.filter(|v| !v.is_empty()) else { return Ok(None) };
    value
        .split(',')
        .map(|item| {
            let item = item.trim();
            EVAL_TYPES.into_iter().find(|t| t.as_str() == item).ok_or_else(|| {
                let valid: Vec<&str> = EVAL_TYPES.iter().map(|t| t.as_str()).collect();
                ApiError::unprocessable(format!(
                    "Invalid eval_type: {item:?} is not a valid EvalType. Valid types: {}",
                    valid.join(", ")
                ))
            })
        })
        .collect::<ApiResult<Vec<_>>>()
        .map(Some)
}

/// `GET /eval-runs`: a page of eval runs, newest first by default.
pub async fn list_eval_runs(
    Caller { state, principal }: Caller,
    Query(q): Query<ListEvalsParams>,
) -> ApiResult<Json<Value>> {
    let paging = Paging::new(q.limit, q.page)?;
    let db = select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    if let Some(other) = q.sort_by.as_deref().filter(|s| *s != "created_at") {
        return Err(ApiError::unprocessable(format!("eval runs can be sorted by 'created_at' only, not {other:?}")));
    }
    let sort: SortOrder = sort_order(q.sort_order.as_deref())?;
    let (runs, total) = db
        .get_eval_runs(&EvalQuery {
            user_id: principal.user_scope(None),
            agent_id: q.agent_id,
            team_id: q.team_id,
            workflow_id: q.workflow_id,
            model_id: q.model_id,
            filter_type: filter_type(q.filter_type.as_deref())?,
            eval_types: eval_types(q.eval_types.as_deref())?,
            limit: Some(paging.limit),
            page: Some(paging.page),
            sort_order: sort,
        })
        .await?;
    Ok(paging.respond(runs.iter().map(eval_json).collect(), total))
}

/// `GET /eval-runs/{eval_run_id}`.
pub async fn get_eval_run(
    Caller { state, principal }: Caller,
    Path(eval_run_id): Path<String>,
    Query(q): Query<DbParams>,
) -> ApiResult<Json<Value>> {
    let db = select_db(&state, q.db_id(), q.table())?;
    let run = db.get_eval_run(&eval_run_id, principal.user_scope(None).as_deref()).await?;
    run.map(|r| Json(eval_json(&r))).ok_or_else(|| not_found(&eval_run_id))
}

/// Body of `PATCH /eval-runs/{eval_run_id}` (Agno's `UpdateEvalRunRequest`).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct RenameRequest {
    /// The new name (1 to 255 characters).
    #[schemars(length(min = 1, max = 255))]
    name: String,
}

/// `PATCH /eval-runs/{eval_run_id}`: renames an eval run (`{"name"}`, 1 to 255 characters).
pub async fn rename_eval_run(
    Caller { state, principal }: Caller,
    Path(eval_run_id): Path<String>,
    Query(q): Query<DbParams>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let db = select_db(&state, q.db_id(), q.table())?;
    let req: RenameRequest = json_body(&body)?;
    let chars = req.name.chars().count();
    if chars == 0 || chars > 255 {
        return Err(ApiError::unprocessable("name must have between 1 and 255 characters"));
    }
    let run = db.rename_eval_run(&eval_run_id, &req.name, principal.user_scope(None).as_deref()).await?;
    run.map(|r| Json(eval_json(&r))).ok_or_else(|| not_found(&eval_run_id))
}

/// Body of `DELETE /eval-runs` (Agno's `DeleteEvalRunsRequest`).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct DeleteEvalRunsRequest {
    /// The eval runs to delete.
    #[schemars(length(min = 1))]
    eval_run_ids: Vec<String>,
}

/// `DELETE /eval-runs`: deletes the listed eval runs the caller can see; 204.
pub async fn delete_eval_runs(
    Caller { state, principal }: Caller,
    Query(q): Query<DbParams>,
    body: Bytes,
) -> ApiResult<NoContent> {
    let db = select_db(&state, q.db_id(), q.table())?;
    let req: DeleteEvalRunsRequest = json_body(&body)?;
    if req.eval_run_ids.is_empty() {
        return Err(ApiError::unprocessable("eval_run_ids must list at least 1 eval run id"));
    }
    db.delete_eval_runs(&req.eval_run_ids, principal.user_scope(None).as_deref()).await?;
    Ok(NoContent)
}

/// Body of `POST /eval-runs` (Agno's `EvalRunInput`). Each eval type needs its own field: an
/// accuracy eval its `expected_output`, a judge its `criteria`, a reliability eval its
/// `expected_tool_calls`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(extend("allOf" = [
    {"if": {"properties": {"eval_type": {"const": "accuracy"}}},
     "then": {"required": ["expected_output"], "properties": {"expected_output": {"type": "string", "minLength": 1}}}},
    {"if": {"properties": {"eval_type": {"const": "agent_as_judge"}}},
     "then": {"required": ["criteria"], "properties": {"criteria": {"type": "string", "minLength": 1, "pattern": "\\S"}}}},
    {"if": {"properties": {"eval_type": {"const": "reliability"}}},
     "then": {"required": ["expected_tool_calls"], "properties": {"expected_tool_calls": {"type": "array", "minItems": 1}}}}
]))]
pub(crate) struct EvalRunInput {
    /// The agent evaluated.
    #[schemars(required, length(min = 1))]
    agent_id: Option<String>,
    /// A team evaluated (not built yet: refused).
    team_id: Option<String>,
    /// The judge's model id (default: the agent's model).
    model_id: Option<String>,
    /// The judge's model provider (`openai`, ...).
    model_provider: Option<String>,
    /// `accuracy`, `agent_as_judge`, `performance` or `reliability`.
    #[schemars(extend("enum" = ["accuracy", "agent_as_judge", "performance", "reliability"]))]
    eval_type: String,
    /// What the agent is asked (not only whitespace).
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    input: String,
    additional_guidelines: Option<String>,
    additional_context: Option<String>,
    /// 1 to 100 (default 1).
    #[schemars(range(min = 1, max = 100))]
    num_iterations: Option<usize>,
    name: Option<String>,
    expected_output: Option<String>,
    criteria: Option<String>,
    /// `binary` (default) or `numeric`.
    #[schemars(extend("enum" = ["numeric", "binary"]))]
    scoring_strategy: Option<String>,
    /// 1 to 10 (default 7).
    #[schemars(range(min = 1, max = 10))]
    threshold: Option<i64>,
    /// 0 to 10 (default 0).
    #[schemars(range(min = 0, max = 10))]
    warmup_runs: Option<usize>,
    expected_tool_calls: Option<Vec<String>>,
    #[serde(default)]
    allow_additional_tool_calls: bool,
    #[schemars(with = "Option<Value>")]
    expected_tool_call_arguments: Option<std::collections::BTreeMap<String, serde_json::Map<String, Value>>>,
}

/// `POST /eval-runs`: runs one eval on an agent now (its runs and the record belong to the
/// caller) and answers with the stored eval run.
pub async fn run_eval(
    Caller { state, principal }: Caller,
    Query(q): Query<DbParams>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    use agno_runtime::eval::{EvalError, EvalSink, EvalSpec, ScoringStrategy};
    let db = select_db(&state, q.db_id(), q.table())?;
    let req: EvalRunInput = json_body(&body)?;
    let eval_type = EVAL_TYPES.into_iter().find(|t| t.as_str() == req.eval_type).ok_or_else(|| {
        let expected = "'accuracy', 'agent_as_judge', 'performance' or 'reliability'";
        ApiError::unprocessable(format!("Input should be {expected} (eval_type)"))
            .with_type("enum")
            .at("body", "eval_type")
            .with_ctx(json!({ "expected": expected }))
    })?;
    if req.team_id.is_some() && req.agent_id.is_none() {
        return Err(ApiError::bad_request("team evals are not available yet: evaluate an agent (agent_id)"));
    }
    let agent_id = req.agent_id.as_deref().ok_or_else(|| ApiError::bad_request("Provide agent_id"))?;
    if principal.accessible("agents", "run").is_some_and(|ids| !ids.iter().any(|i| i == agent_id)) {
        return Err(ApiError::forbidden("Insufficient permissions: agents:run is required"));
    }
    let agent = &state.agent(agent_id).ok_or_else(|| ApiError::not_found(format!("Agent {agent_id} not found")))?.agent;
    let bounded = |name: &str, value: Option<usize>, default: usize, min: usize, max: usize| -> ApiResult<usize> {
        let v = value.unwrap_or(default);
        if v < min || v > max {
            return Err(ApiError::unprocessable(format!("{name} must be between {min} and {max}")).at("body", name));
        }
        Ok(v)
    };
    let mut spec = EvalSpec::new(eval_type, req.input);
    spec.num_iterations = bounded("num_iterations", req.num_iterations, 1, 1, 100)?;
    spec.warmup_runs = bounded("warmup_runs", req.warmup_runs, 0, 0, 10)?;
    spec.threshold = req.threshold.unwrap_or(7);
    if !(1..=10).contains(&spec.threshold) {
        return Err(ApiError::unprocessable("threshold must be between 1 and 10").at("body", "threshold"));
    }
    spec.scoring_strategy = ScoringStrategy::parse(req.scoring_strategy.as_deref().unwrap_or("binary"))
        .map_err(|e| ApiError::unprocessable(e).at("body", "scoring_strategy"))?;
    spec.expected_output = req.expected_output;
    spec.criteria = req.criteria;
    spec.additional_guidelines = req.additional_guidelines.into_iter().collect();
    spec.additional_context = req.additional_context;
    spec.expected_tool_calls = req.expected_tool_calls.unwrap_or_default();
    spec.allow_additional_tool_calls = req.allow_additional_tool_calls;
    spec.expected_tool_call_arguments = req.expected_tool_call_arguments.unwrap_or_default();
    let judge = match req.model_id.as_deref().filter(|m| !m.is_empty()) {
        None => std::sync::Arc::clone(agent.model()),
        Some(model) => match state.served_model(model, req.model_provider.as_deref()) {
            Some(served) => served,
            None => {
                let provider = req.model_provider.as_deref().unwrap_or("openai").to_ascii_lowercase();
                agno_models::model_from_str(&format!("{provider}:{model}"))
                    .map_err(|e| ApiError::bad_request(format!("cannot use the judge model {provider}:{model}: {e}")))?
            }
        },
    };
    let sink = EvalSink {
        db: Some(db.clone()),
        user_id: principal.user_scope(None).or_else(|| principal.subject.clone()),
        name: req.name,
    };
    let outcome = spec.run(agent, judge, &sink).await.map_err(|e| match e {
        EvalError::Config(m) => ApiError::bad_request(m),
        EvalError::Db(db) => ApiError::from(db),
        other => ApiError::internal(format!("the eval failed: {other}")),
    })?;
    Ok(Json(eval_json(&outcome.record)))
}
