//! Agno's `AgentAsJudgeEval`: a judge grades an answer against `criteria`, either pass / fail
//! (`binary`, the default) or 1 to 10 passing at `threshold` (`numeric`). As a post-hook
//! ([`JudgeHook`]) it grades every answer of the agent it is attached to.

use std::sync::Arc;

use agno_core::{EvalType, Model, RunOutput};
use async_trait::async_trait;
use serde_json::{Value, json};

use super::{EvalError, EvalOutcome, EvalSink, ask_judge, guidelines_section, run_agent, stats};
use crate::Agent;
use crate::hooks::{HookError, PostHook};

/// How the judge grades.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScoringStrategy {
    /// Pass or fail.
    Binary,
    /// A score from 1 to 10, passing at the threshold.
    Numeric,
}

impl ScoringStrategy {
    /// Agno's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Binary => "binary",
            Self::Numeric => "numeric",
        }
    }

    /// From Agno's spelling.
    ///
    /// # Errors
    /// A message naming the two strategies.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "binary" => Ok(Self::Binary),
            "numeric" => Ok(Self::Numeric),
            other => Err(format!("scoring_strategy must be \"binary\" or \"numeric\", not {other:?}")),
        }
    }
}

/// A judge of answers against criteria.
#[derive(Debug, Clone)]
pub struct AgentAsJudgeEval {
    /// What a good answer does.
    pub criteria: String,
    /// Pass / fail or a score.
    pub scoring_strategy: ScoringStrategy,
    /// Pass mark of a numeric score (1 to 10; Agno: 7).
    pub threshold: i64,
    /// The judge's model.
    pub judge: Arc<dyn Model>,
    /// Extra rules for the judge.
    pub additional_guidelines: Vec<String>,
}

/// One graded answer (Agno's `AgentAsJudgeEvaluation`).
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The score (numeric strategy).
    pub score: Option<i64>,
    /// The judge's reason.
    pub reason: String,
    /// Whether the answer passed.
    pub passed: bool,
}

impl AgentAsJudgeEval {
    /// A binary judge of `criteria`.
    pub fn new(criteria: impl Into<String>, judge: Arc<dyn Model>) -> Self {
        Self {
            criteria: criteria.into(),
            scoring_strategy: ScoringStrategy::Binary,
            threshold: 7,
            judge,
            additional_guidelines: Vec::new(),
        }
    }

    /// Grades one answer.
    ///
    /// # Errors
    /// [`EvalError::Judge`] when the judge's answer is not the JSON asked for.
    pub async fn grade(&self, input: &str, output: &str) -> Result<Verdict, EvalError> {
        if self.criteria.trim().is_empty() {
            return Err(EvalError::Config("criteria must not be empty".to_owned()));
        }
        if !(1..=10).contains(&self.threshold) {
            return Err(EvalError::Config(format!("threshold must be 1-10, got {}", self.threshold)));
        }
        let (how, schema) = match self.scoring_strategy {
            ScoringStrategy::Numeric => (
                "Score the output from 1 to 10 (whole numbers): 1 fails the criteria completely, 10 meets them fully.",
                json!({"type": "object", "properties": {
                    "score": {"type": "integer", "minimum": 1, "maximum": 10, "description": "Score between 1 and 10."},
                    "reason": {"type": "string", "description": "Detailed reasoning for the evaluation."}},
                    "required": ["score", "reason"], "additionalProperties": false}),
            ),
            ScoringStrategy::Binary => (
                "Decide whether the output meets the criteria: passed is true or false.",
                json!({"type": "object", "properties": {
                    "passed": {"type": "boolean", "description": "Pass/fail result."},
                    "reason": {"type": "string", "description": "Detailed reasoning for the evaluation."}},
                    "required": ["passed", "reason"], "additionalProperties": false}),
            ),
        };
        let instructions = vec![format!(
            "You are an expert judge. Evaluate the output against the criteria.\n\n## Criteria\n{}\n\n## Scoring\n{how}\n{}",
            self.criteria,
            guidelines_section(&self.additional_guidelines)
        )];
        let prompt = format!("<input>\n{input}\n</input>\n\n<output>\n{output}\n</output>");
        let answer = ask_judge(&self.judge, instructions, prompt, schema).await?;
        let reason = answer.get("reason").and_then(Value::as_str).unwrap_or_default().to_owned();
        Ok(match self.scoring_strategy {
            ScoringStrategy::Numeric => {
                let score =
                    answer.get("score").and_then(Value::as_i64).filter(|s| (1..=10).contains(s)).ok_or_else(|| {
                        EvalError::Judge(format!("score must be a whole number from 1 to 10: {answer:?}"))
                    })?;
                Verdict { score: Some(score), reason, passed: score >= self.threshold }
            }
            ScoringStrategy::Binary => {
                let passed = answer
                    .get("passed")
                    .and_then(Value::as_bool)
                    .ok_or_else(|| EvalError::Judge(format!("passed must be true or false: {answer:?}")))?;
                Verdict { score: None, reason, passed }
            }
        })
    }

    /// The record of graded answers `(input, output, verdict)`, stored through `sink`.
    async fn record(
        &self,
        graded: &[(String, String, Verdict)],
        agent: Option<&Agent>,
        sink: &EvalSink,
    ) -> Result<EvalOutcome, EvalError> {
        let scores: Vec<f64> = graded.iter().filter_map(|(_, _, v)| v.score.map(|s| s as f64)).collect();
        let (avg, min, max, std_dev) = stats(&scores);
        let passed = graded.iter().filter(|(_, _, v)| v.passed).count();
        let pass_rate = if graded.is_empty() { 0.0 } else { passed as f64 * 100.0 / graded.len() as f64 };
        let results: Vec<Value> = graded
            .iter()
            .map(|(input, output, v)| {
                json!({"input": input, "output": output, "criteria": self.criteria, "score": v.score,
                       "reason": v.reason, "passed": v.passed})
            })
            .collect();
        let eval_data = json!({
            "run_id": agno_core::new_id(), "results": results, "avg_score": avg, "min_score": min,
            "max_score": max, "std_dev_score": std_dev, "pass_rate": pass_rate,
        });
        let eval_input = json!({
            "criteria": self.criteria, "scoring_strategy": self.scoring_strategy.as_str(),
            "threshold": self.threshold, "additional_guidelines": self.additional_guidelines,
        });
        let record = sink.store(EvalType::AgentAsJudge, eval_data, eval_input, agent).await?;
        Ok(EvalOutcome { passed: !graded.is_empty() && passed == graded.len(), record })
    }

    /// Runs `agent` on `input` `iterations` times and grades each answer.
    ///
    /// # Errors
    /// An [`EvalError`] when a run, the judge or the store fails.
    pub async fn run(
        &self,
        agent: &Agent,
        input: &str,
        iterations: usize,
        sink: &EvalSink,
    ) -> Result<EvalOutcome, EvalError> {
        if !(1..=100).contains(&iterations) {
            return Err(EvalError::Config("num_iterations must be between 1 and 100".to_owned()));
        }
        let mut graded = Vec::new();
        for _ in 0..iterations {
            let out = run_agent(agent, input, sink.user_id.as_deref()).await?;
            let output = out.content_text();
            let verdict = self.grade(input, &output).await?;
            graded.push((input.to_owned(), output, verdict));
        }
        self.record(&graded, Some(agent), sink).await
    }

    /// Grades one answer already given and stores the record.
    ///
    /// # Errors
    /// As [`AgentAsJudgeEval::run`].
    pub async fn evaluate(&self, input: &str, output: &str, sink: &EvalSink) -> Result<EvalOutcome, EvalError> {
        let verdict = self.grade(input, output).await?;
        self.record(&[(input.to_owned(), output.to_owned(), verdict)], None, sink).await
    }
}

/// [`AgentAsJudgeEval`] as a post-hook: every answer of the agent is graded and the record
/// stored (as the run's user); with `fail_run`, an answer that fails the criteria fails the run.
#[derive(Debug, Clone)]
pub struct JudgeHook {
    /// The judge.
    pub eval: AgentAsJudgeEval,
    /// Where records go (the run's user owns each one).
    pub sink: EvalSink,
    /// Fail the run when the answer fails the criteria.
    pub fail_run: bool,
}

#[async_trait]
impl PostHook for JudgeHook {
    fn name(&self) -> &str {
        "agent_as_judge"
    }

    async fn run(&self, output: &mut RunOutput) -> Result<(), HookError> {
        let input = output
            .input
            .as_ref()
            .and_then(|i| i.input_content.as_ref())
            .map_or_else(String::new, |c| c.as_str().map_or_else(|| c.to_string(), str::to_owned));
        let sink =
            EvalSink { user_id: output.user_id.clone().or_else(|| self.sink.user_id.clone()), ..self.sink.clone() };
        let outcome = self
            .eval
            .evaluate(&input, &output.content_text(), &sink)
            .await
            .map_err(|e| HookError(format!("agent_as_judge: {e}")))?;
        if self.fail_run && !outcome.passed {
            let reason = outcome.record.eval_data["results"][0]["reason"].as_str().unwrap_or_default().to_owned();
            return Err(HookError(format!("the answer failed the criteria: {reason}")));
        }
        Ok(())
    }
}
