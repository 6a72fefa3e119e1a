//! Agno's `AccuracyEval`: the agent answers `input` (`num_iterations` times); a judge scores each
//! answer from 1 to 10 against `expected_output`, which it must take as correct.

use std::sync::Arc;

use agno_core::{EvalType, Model};
use serde_json::{Value, json};

use super::{EvalError, EvalOutcome, EvalSink, ask_judge, guidelines_section, run_agent, stats};
use crate::Agent;

/// An accuracy eval of one agent on one input.
#[derive(Debug, Clone)]
pub struct AccuracyEval {
    /// The evaluated agent.
    pub agent: Agent,
    /// What the agent is asked.
    pub input: String,
    /// The correct answer.
    pub expected_output: String,
    /// The judge's model.
    pub judge: Arc<dyn Model>,
    /// Answers to judge (Agno: 1 to 100).
    pub num_iterations: usize,
    /// Extra rules for the judge.
    pub additional_guidelines: Vec<String>,
    /// Extra context for the judge.
    pub additional_context: Option<String>,
    /// Average score (1 to 10) at which the eval passes (an agno-rs addition for CI; Agno
    /// reports the scores only). Default 7.
    pub threshold: f64,
}

const JUDGE: &str = "You are an expert judge tasked with comparing the quality of an AI Agent's output to a \
user-provided expected output. You must assume the expected_output is correct - even if you personally disagree.\n\n\
## Evaluation Criteria\n- Accuracy: How closely does the agent_output match the expected_output?\n\
- Completeness: Does the agent_output include all the key elements of the expected_output?\n\n\
## Instructions\n1. Compare the agent_output only to the expected_output, not what you think the expected_output \
should be.\n2. Do not judge the correctness of the expected_output itself.\n3. Follow the additional guidelines if \
provided.\n4. Assign a score from 1 to 10 (whole numbers only): 1-2 completely incorrect or irrelevant, 3-4 major \
inaccuracies or missing key information, 5-6 partially correct with significant issues, 7-8 mostly accurate and \
complete with minor issues, 9-10 highly accurate and complete.";

impl AccuracyEval {
    /// An eval with Agno's defaults (one iteration) and a pass mark of 7.
    pub fn new(
        agent: Agent,
        input: impl Into<String>,
        expected_output: impl Into<String>,
        judge: Arc<dyn Model>,
    ) -> Self {
        Self {
            agent,
            input: input.into(),
            expected_output: expected_output.into(),
            judge,
            num_iterations: 1,
            additional_guidelines: Vec::new(),
            additional_context: None,
            threshold: 7.0,
        }
    }

    /// Runs the eval; stores its record through `sink`.
    ///
    /// # Errors
    /// An [`EvalError`] when a run, the judge or the store fails.
    pub async fn run(&self, sink: &EvalSink) -> Result<EvalOutcome, EvalError> {
        if !(1..=100).contains(&self.num_iterations) {
            return Err(EvalError::Config("num_iterations must be between 1 and 100".to_owned()));
        }
        let run_id = agno_core::new_id();
        let mut results = Vec::new();
        let mut scores = Vec::new();
        for _ in 0..self.num_iterations {
            let out = run_agent(&self.agent, &self.input, sink.user_id.as_deref()).await?;
            let output = out.content_text();
            let context = self
                .additional_context
                .as_deref()
                .filter(|c| !c.is_empty())
                .map(|c| format!("\n## Additional Context\n{c}\n"))
                .unwrap_or_default();
            let instructions = vec![format!("{JUDGE}{}{context}", guidelines_section(&self.additional_guidelines))];
            let prompt = format!(
                "<agent_input>\n{}\n</agent_input>\n\n<expected_output>\n{}\n</expected_output>\n\n<agent_output>\n{output}\n</agent_output>",
                self.input, self.expected_output
            );
            let schema = json!({
                "type": "object",
                "properties": {
                    "accuracy_score": {"type": "integer", "minimum": 1, "maximum": 10,
                        "description": "Accuracy Score between 1 and 10 assigned to the Agent's answer."},
                    "accuracy_reason": {"type": "string", "description": "Detailed reasoning for the accuracy score."}
                },
                "required": ["accuracy_score", "accuracy_reason"],
                "additionalProperties": false
            });
            let verdict = ask_judge(&self.judge, instructions, prompt, schema).await?;
            let score =
                verdict.get("accuracy_score").and_then(Value::as_i64).filter(|s| (1..=10).contains(s)).ok_or_else(
                    || EvalError::Judge(format!("accuracy_score must be a whole number from 1 to 10: {verdict:?}")),
                )?;
            let reason = verdict.get("accuracy_reason").and_then(Value::as_str).unwrap_or_default().to_owned();
            scores.push(score as f64);
            results.push(json!({
                "input": self.input, "output": output, "expected_output": self.expected_output,
                "score": score, "reason": reason,
            }));
        }
        let (avg, min, max, std_dev) = stats(&scores);
        let eval_data = json!({
            "run_id": run_id, "results": results, "avg_score": avg, "mean_score": avg,
            "min_score": min, "max_score": max, "std_dev_score": std_dev,
        });
        let eval_input = json!({
            "input": self.input, "expected_output": self.expected_output, "num_iterations": self.num_iterations,
            "additional_guidelines": self.additional_guidelines, "additional_context": self.additional_context,
        });
        let record = sink.store(EvalType::Accuracy, eval_data, eval_input, Some(&self.agent)).await?;
        Ok(EvalOutcome { passed: avg.is_some_and(|a| a >= self.threshold), record })
    }
}
