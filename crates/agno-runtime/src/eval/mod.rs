//! Evals, as Agno's `agno.eval`: accuracy (an LLM judge compares an agent's answer with the
//! expected one), agent-as-judge (a judge grades an answer against criteria, numeric or pass /
//! fail; usable as a post-hook), performance (run time and memory over iterations) and
//! reliability (the tools a run called, and with which arguments). Each produces an
//! [`EvalRunRecord`] in Agno's `eval_data` shape, stored in `agno_eval_runs` when a database is
//! given, owned by the given user.

mod accuracy;
mod judge;
mod performance;
mod reliability;

use std::sync::Arc;

use agno_core::{Db, EvalRunRecord, EvalType, Model, RunOutput};
use serde_json::{Map, Value, json};

pub use accuracy::AccuracyEval;
pub use judge::{AgentAsJudgeEval, JudgeHook, ScoringStrategy, Verdict};
pub use performance::{Measured, PerformanceEval};
pub use reliability::ReliabilityEval;

use crate::Agent;
use crate::config::OutputSchema;

/// Why an eval could not run (a failing check is not an error: it is a result that did not
/// pass).
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The evaluated run failed.
    #[error("the evaluated run failed: {0}")]
    Run(#[from] crate::RunError),
    /// The judge's answer was not the JSON the eval asked for.
    #[error("the judge's answer is not usable: {0}")]
    Judge(String),
    /// The eval is set up wrongly.
    #[error("{0}")]
    Config(String),
    /// Storing the result failed.
    #[error("cannot store the eval run: {0}")]
    Db(#[from] agno_core::DbError),
}

/// The result of an eval: Agno's record (also what is stored) and whether it passed.
#[derive(Debug, Clone)]
pub struct EvalOutcome {
    /// The stored (or storable) record; `eval_data` is Agno's result shape.
    pub record: EvalRunRecord,
    /// Whether every check passed.
    pub passed: bool,
}

/// Where an eval's result goes and whom it belongs to.
#[derive(Debug, Clone, Default)]
pub struct EvalSink {
    /// Database to store the record in.
    pub db: Option<Arc<dyn Db>>,
    /// Owner of the record (and of the evaluated runs).
    pub user_id: Option<String>,
    /// The record's name.
    pub name: Option<String>,
}

impl EvalSink {
    /// Builds the record of an eval of `agent` (if any) and stores it when a database is set.
    async fn store(
        &self,
        eval_type: EvalType,
        eval_data: Value,
        eval_input: Value,
        agent: Option<&Agent>,
    ) -> Result<EvalRunRecord, EvalError> {
        let now = agno_core::now_epoch_secs();
        let object = |v: Value| match v {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let record = EvalRunRecord {
            run_id: eval_data.get("run_id").and_then(Value::as_str).map_or_else(agno_core::new_id, str::to_owned),
            eval_type,
            eval_data: object(eval_data),
            eval_input: Some(object(eval_input)),
            name: self.name.clone(),
            agent_id: agent.map(|a| a.id().to_owned()),
            team_id: None,
            workflow_id: None,
            model_id: agent.map(|a| a.model().id().to_owned()),
            model_provider: agent.map(|a| a.model().provider().to_owned()),
            evaluated_component_name: agent.and_then(|a| a.name().map(str::to_owned)),
            user_id: self.user_id.clone(),
            created_at: Some(now),
            updated_at: Some(now),
        };
        match &self.db {
            Some(db) => Ok(db.create_eval_run(&record).await?),
            None => Ok(record),
        }
    }
}

/// Runs `agent` on `input` as `user_id`, for an eval.
async fn run_agent(agent: &Agent, input: &str, user_id: Option<&str>) -> Result<RunOutput, EvalError> {
    let mut request = crate::RunRequest::from(input);
    request.user_id = user_id.map(str::to_owned);
    Ok(agent.arun(request).await?)
}

/// Asks `model` (with `instructions`) for a JSON object of `schema` about `prompt`, as Agno's
/// judge agents do (one question, structured output); returns it.
///
/// # Errors
/// [`EvalError::Judge`] when the model fails or its answer is not such an object.
async fn ask_judge(
    model: &Arc<dyn Model>,
    instructions: Vec<String>,
    prompt: String,
    schema: Value,
) -> Result<Map<String, Value>, EvalError> {
    let schema = OutputSchema::new("JudgeResponse", schema);
    let answer = crate::structured::ask_structured(model.as_ref(), instructions.join("\n"), prompt, &schema)
        .await
        .map_err(|e| EvalError::Judge(format!("the judge model failed: {e}")))?;
    match answer {
        Some(Value::Object(m)) => Ok(m),
        _ => Err(EvalError::Judge("the judge did not answer with JSON matching its schema".to_owned())),
    }
}

/// Mean, min, max and population standard deviation of `values` (`None` when empty).
fn stats(values: &[f64]) -> (Option<f64>, Option<f64>, Option<f64>, Option<f64>) {
    if values.is_empty() {
        return (None, None, None, None);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    (Some(mean), Some(min), Some(max), Some(var.sqrt()))
}

/// Agno's "Additional Guidelines" section, or nothing.
fn guidelines_section(guidelines: &[String]) -> String {
    if guidelines.is_empty() {
        return String::new();
    }
    format!("\n## Additional Guidelines\n- {}\n", guidelines.join("\n- "))
}

/// `json!` of a list of strings.
fn strings(v: &[String]) -> Value {
    json!(v)
}

/// One eval to run on an agent, as `POST /eval-runs` describes it (Agno's `EvalRunInput`).
#[derive(Debug, Clone)]
pub struct EvalSpec {
    /// Which eval.
    pub eval_type: EvalType,
    /// What the agent is asked.
    pub input: String,
    /// Accuracy: the correct answer.
    pub expected_output: Option<String>,
    /// Agent-as-judge: what a good answer does.
    pub criteria: Option<String>,
    /// Agent-as-judge: pass / fail or a score.
    pub scoring_strategy: ScoringStrategy,
    /// Agent-as-judge (numeric): the pass mark, 1 to 10.
    pub threshold: i64,
    /// Runs to judge or measure (1 to 100).
    pub num_iterations: usize,
    /// Performance: unmeasured runs first.
    pub warmup_runs: usize,
    /// Extra rules for a judge.
    pub additional_guidelines: Vec<String>,
    /// Extra context for the accuracy judge.
    pub additional_context: Option<String>,
    /// Reliability: the tools the run must call.
    pub expected_tool_calls: Vec<String>,
    /// Reliability: whether other tools may be called.
    pub allow_additional_tool_calls: bool,
    /// Reliability: arguments the tools' calls must have.
    pub expected_tool_call_arguments: std::collections::BTreeMap<String, Map<String, Value>>,
}

impl EvalSpec {
    /// A spec of `eval_type` on `input` with Agno's defaults.
    pub fn new(eval_type: EvalType, input: impl Into<String>) -> Self {
        Self {
            eval_type,
            input: input.into(),
            expected_output: None,
            criteria: None,
            scoring_strategy: ScoringStrategy::Binary,
            threshold: 7,
            num_iterations: 1,
            warmup_runs: 0,
            additional_guidelines: Vec::new(),
            additional_context: None,
            expected_tool_calls: Vec::new(),
            allow_additional_tool_calls: false,
            expected_tool_call_arguments: std::collections::BTreeMap::new(),
        }
    }

    /// Runs the spec on `agent` with `judge` (accuracy, agent-as-judge) and stores the record
    /// through `sink`.
    ///
    /// # Errors
    /// [`EvalError::Config`] naming what the eval type needs, or a run, judge or store error.
    pub async fn run(&self, agent: &Agent, judge: Arc<dyn Model>, sink: &EvalSink) -> Result<EvalOutcome, EvalError> {
        if self.input.trim().is_empty() {
            return Err(EvalError::Config("input must not be empty".to_owned()));
        }
        match self.eval_type {
            EvalType::Accuracy => {
                let expected = self
                    .expected_output
                    .clone()
                    .ok_or_else(|| EvalError::Config("an accuracy eval needs expected_output".to_owned()))?;
                let mut eval = AccuracyEval::new(agent.clone(), self.input.clone(), expected, judge);
                eval.num_iterations = self.num_iterations;
                eval.additional_guidelines.clone_from(&self.additional_guidelines);
                eval.additional_context.clone_from(&self.additional_context);
                eval.run(sink).await
            }
            EvalType::AgentAsJudge => {
                let criteria = self
                    .criteria
                    .clone()
                    .filter(|c| !c.trim().is_empty())
                    .ok_or_else(|| EvalError::Config("an agent_as_judge eval needs criteria".to_owned()))?;
                let mut eval = AgentAsJudgeEval::new(criteria, judge);
                eval.scoring_strategy = self.scoring_strategy;
                eval.threshold = self.threshold;
                eval.additional_guidelines.clone_from(&self.additional_guidelines);
                eval.run(agent, &self.input, self.num_iterations, sink).await
            }
            EvalType::Performance => {
                let mut eval = PerformanceEval::of_agent(agent.clone(), self.input.clone(), sink.user_id.clone());
                eval.warmup_runs = self.warmup_runs;
                eval.num_iterations = self.num_iterations;
                eval.run(sink).await
            }
            EvalType::Reliability => {
                if self.expected_tool_calls.is_empty() {
                    return Err(EvalError::Config("a reliability eval needs expected_tool_calls".to_owned()));
                }
                let run = run_agent(agent, &self.input, sink.user_id.as_deref()).await?;
                let eval = ReliabilityEval {
                    expected_tool_calls: self.expected_tool_calls.clone(),
                    allow_additional_tool_calls: self.allow_additional_tool_calls,
                    expected_tool_call_arguments: self.expected_tool_call_arguments.clone(),
                };
                eval.check(&run, Some(agent), sink).await
            }
            other => Err(EvalError::Config(format!("{} evals cannot run here", other.as_str()))),
        }
    }
}
