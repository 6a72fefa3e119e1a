//! Agno's `ReliabilityEval`: did a run call the expected tools (cleanly: an execution without a
//! tool error), only those unless `allow_additional_tool_calls`, and with the expected arguments?

use std::collections::{BTreeMap, BTreeSet};

use agno_core::{EvalType, RunOutput};
use serde_json::{Map, Value, json};

use super::{EvalError, EvalOutcome, EvalSink, strings};
use crate::Agent;

/// A reliability check of one run.
#[derive(Debug, Clone, Default)]
pub struct ReliabilityEval {
    /// Tools the run must have called.
    pub expected_tool_calls: Vec<String>,
    /// Whether other tools may be called too (Agno: true in suites).
    pub allow_additional_tool_calls: bool,
    /// Arguments a tool's call must have (a subset: these keys with these values).
    pub expected_tool_call_arguments: BTreeMap<String, Map<String, Value>>,
}

impl ReliabilityEval {
    /// Checks `run` (of `agent`, for the record) and stores the result through `sink`.
    ///
    /// # Errors
    /// [`EvalError::Db`] when storing fails.
    pub async fn check(
        &self,
        run: &RunOutput,
        agent: Option<&Agent>,
        sink: &EvalSink,
    ) -> Result<EvalOutcome, EvalError> {
        let executions = run.tools.as_deref().unwrap_or_default();
        let expected: BTreeSet<&str> = self.expected_tool_calls.iter().map(String::as_str).collect();
        let (mut passed, mut failed, mut additional, mut missing) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut args_passed, mut args_failed) = (Vec::new(), Vec::new());
        let clean =
            |t: &agno_core::ToolExecution| t.tool_call_error != Some(true) && t.requires_confirmation != Some(true);
        for tool in executions {
            let Some(name) = tool.tool_name.as_deref() else { continue };
            if !expected.contains(name) {
                if self.allow_additional_tool_calls {
                    additional.push(name.to_owned());
                } else {
                    failed.push(name.to_owned());
                }
            } else if clean(tool) {
                passed.push(name.to_owned());
            }
        }
        for name in &expected {
            let attempts: Vec<_> = executions.iter().filter(|t| t.tool_name.as_deref() == Some(*name)).collect();
            if !attempts.iter().any(|t| clean(t)) {
                missing.push(if attempts.is_empty() {
                    (*name).to_owned()
                } else {
                    format!("{name} (called, but every call failed)")
                });
            }
        }
        for (name, want) in &self.expected_tool_call_arguments {
            let matches =
                executions.iter().filter(|t| t.tool_name.as_deref() == Some(name.as_str()) && clean(t)).any(|t| {
                    let got = t.tool_args.clone().unwrap_or_default();
                    want.iter().all(|(k, v)| got.get(k) == Some(v))
                });
            if matches {
                args_passed.push(name.clone());
            } else {
                args_failed.push(format!("{name}: expected arguments {}", Value::Object(want.clone())));
            }
        }
        let ok = failed.is_empty() && missing.is_empty() && args_failed.is_empty();
        let eval_data = json!({
            "run_id": agno_core::new_id(), "eval_status": if ok { "PASSED" } else { "FAILED" },
            "failed_tool_calls": failed, "passed_tool_calls": passed, "additional_tool_calls": additional,
            "missing_tool_calls": missing, "failed_argument_checks": args_failed,
            "passed_argument_checks": args_passed,
        });
        let eval_input = json!({
            "expected_tool_calls": strings(&self.expected_tool_calls),
            "allow_additional_tool_calls": self.allow_additional_tool_calls,
            "expected_tool_call_arguments": self.expected_tool_call_arguments,
        });
        let record = sink.store(EvalType::Reliability, eval_data, eval_input, agent).await?;
        Ok(EvalOutcome { passed: ok, record })
    }
}
