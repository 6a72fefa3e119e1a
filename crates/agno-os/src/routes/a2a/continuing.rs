//! A message naming the `taskId` of an `input-required` task: the answers it carries are applied
//! to the paused run's open requirements, checked as the REST continue checks them
//! ([`Kind::answer`], with the form it would have been sent), and the run carries on under its
//! own id, inline (answered or streamed as a new message would be) or, for a background run, on
//! the durable queue (a stream follows it there), as every continue does
//! ([`continuation::carry_on`]).
//!
//! Answers, from the message's parts: a data part `{"requirements": [{"id", "confirmed",
//! "note", "values", "result"}]}` per requirement (by requirement id or tool call id); or one
//! data part `{"confirmed": bool, "note"?}`, `{"values": {...}}` or `{"result": ...}` for every
//! open requirement of that kind; or the text `yes` / `no` confirming or rejecting every open
//! confirmation. A paused workflow's step (Agno's `HumanReview`) takes the same answers, plus
//! `{"choices": [...]}` for a router's routes; the calls its agent waits on, as an agent's.

use agno_core::{ComponentKind, RunOutput, RunRequirement, RunStatus, StepRequirement};
use agno_runtime::ClientSide;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::jsonrpc::{Failure, RpcError};
use super::reply::{Target, finished_task};
use super::task::{self, Incoming};
use crate::routes::component::Kind;
use crate::routes::continuation::{self, Carried};

/// What an answer says of one requirement.
#[derive(Debug, Default)]
struct Answer {
    confirmed: Option<bool>,
    note: Option<String>,
    values: Option<Map<String, Value>>,
    result: Option<Value>,
    choices: Option<Vec<String>>,
}

impl Answer {
    fn from_json(value: &Map<String, Value>) -> Self {
        Self {
            confirmed: value.get("confirmed").and_then(Value::as_bool),
            note: value.get("note").and_then(Value::as_str).map(str::to_owned),
            values: value.get("values").and_then(Value::as_object).cloned(),
            result: value.get("result").filter(|r| !r.is_null()).cloned(),
            choices: value
                .get("choices")
                .and_then(Value::as_array)
                .map(|c| c.iter().filter_map(Value::as_str).map(str::to_owned).collect()),
        }
    }

    fn is_empty(&self) -> bool {
        self.confirmed.is_none() && self.values.is_none() && self.result.is_none() && self.choices.is_none()
    }

    /// Applies the answer to a workflow step's review.
    fn apply_to_step(&self, step: &mut StepRequirement) {
        if step.requires_confirmation || step.requires_output_review {
            match self.confirmed {
                Some(true) => step.confirm(),
                Some(false) => step.reject(self.note.clone()),
                None => {}
            }
        }
        if step.requires_user_input
            && let Some(values) = &self.values
        {
            step.set_user_input(values.clone());
        }
        if step.requires_route_selection
            && let Some(choices) = &self.choices
        {
            step.select(&choices.iter().map(String::as_str).collect::<Vec<_>>());
        }
    }

    fn apply(&self, req: &mut RunRequirement) {
        if req.needs_confirmation() {
            match self.confirmed {
                Some(true) => req.confirm(),
                Some(false) => req.reject(self.note.clone()),
                None => {}
            }
        }
        if req.needs_user_input()
            && let Some(values) = &self.values
        {
            req.provide_user_input(values);
        }
        if req.needs_external_execution()
            && let Some(result) = &self.result
        {
            req.set_external_execution_result(result.as_str().map_or_else(|| result.to_string(), str::to_owned));
        }
    }
}

/// A yes or a no, as a person types it.
fn yes_or_no(text: &str) -> Option<bool> {
    match text.trim().trim_end_matches(['.', '!']).to_lowercase().as_str() {
        "yes" | "y" | "approve" | "approved" | "confirm" | "confirmed" | "ok" => Some(true),
        "no" | "n" | "reject" | "rejected" | "deny" | "denied" => Some(false),
        _ => None,
    }
}

/// The one answer a message gives every open requirement: its first data part that answers
/// anything, else its text's yes or no.
fn single_answer(incoming: &Incoming) -> Result<Answer, RpcError> {
    let mut answer = incoming
        .data
        .iter()
        .filter_map(Value::as_object)
        .map(Answer::from_json)
        .find(|a| !a.is_empty())
        .unwrap_or_default();
    if answer.is_empty() {
        answer.confirmed = incoming.texts.iter().find_map(|t| yes_or_no(t));
    }
    if answer.is_empty() {
        return Err(RpcError::invalid_params(
            "the task waits for an answer: send a data part {\"confirmed\": true|false}, {\"values\": {...}}, \
             {\"choices\": [...]} or {\"result\": ...}, or the text yes or no",
        ));
    }
    Ok(answer)
}

/// The continue form of a paused workflow: its waiting step's review answered (and the calls
/// its agent waits on, as an agent's are), as `step_requirements` (what the REST continue takes).
fn step_form(run: &RunOutput, incoming: &Incoming) -> Result<crate::form::Form, RpcError> {
    let Some(Value::Object(last)) = run.extra.get("step_requirements").and_then(Value::as_array).and_then(|s| s.last())
    else {
        return Err(RpcError::invalid_params("the workflow waits on no step review: nothing to answer"));
    };
    let mut step_json = last.clone();
    let mut step: StepRequirement = serde_json::from_value(Value::Object(last.clone()))
        .map_err(|e| RpcError::invalid_params(format!("the stored step review cannot be read: {e}")))?;
    if let Some(Value::Array(waiting)) = last.get("executor_requirements") {
        let calls: Vec<RunRequirement> = serde_json::from_value(Value::Array(waiting.clone()))
            .map_err(|e| RpcError::invalid_params(format!("the step's waiting calls cannot be read: {e}")))?;
        let mut executor = RunOutput::new(run.id(), run.session_id.as_deref().unwrap_or_default());
        executor.requirements = Some(calls);
        let answers = answered(&executor, incoming)?;
        step_json.insert("executor_requirements".into(), json!(answers));
    } else {
        single_answer(incoming)?.apply_to_step(&mut step);
        if let Some(missing) = step.missing() {
            return Err(RpcError::invalid_params(format!(
                "step {} still waits: {missing}",
                step.step_name.as_deref().unwrap_or(&step.step_id)
            )));
        }
        if let Value::Object(answered) = serde_json::to_value(&step).unwrap_or_default() {
            step_json.extend(answered);
        }
    }
    let mut form = crate::form::Form::default();
    form.set_text("step_requirements", Value::Array(vec![Value::Object(step_json)]).to_string());
    Ok(form)
}

/// The paused run's requirements with the message's answers applied.
fn answered(run: &RunOutput, incoming: &Incoming) -> Result<Vec<RunRequirement>, RpcError> {
    let mut requirements: Vec<RunRequirement> = run.requirements.clone().unwrap_or_default();
    let per_requirement = incoming.data.iter().find_map(|d| d.get("requirements").and_then(Value::as_array));
    if let Some(entries) = per_requirement {
        for entry in entries {
            let Some(entry) = entry.as_object() else {
                return Err(RpcError::invalid_params("every entry of requirements must be an object"));
            };
            let id = entry.get("id").or_else(|| entry.get("tool_call_id")).and_then(Value::as_str).unwrap_or_default();
            let req = requirements
                .iter_mut()
                .find(|r| r.id == id || r.tool_call_id() == Some(id))
                .ok_or_else(|| RpcError::invalid_params(format!("the task has no requirement {id:?}")))?;
            Answer::from_json(entry).apply(req);
        }
    } else {
        let answer = single_answer(incoming)?;
        requirements.iter_mut().for_each(|r| answer.apply(r));
    }
    if let Some(open) = requirements.iter().find(|r| !r.is_resolved()) {
        return Err(RpcError::invalid_params(format!(
            "requirement {} (tool call {}) is still open: confirm or reject it, give its values or its result",
            open.id,
            open.tool_call_id().unwrap_or("?")
        ))
        .with_data(json!({"requirement_id": open.id})));
    }
    Ok(requirements)
}

/// Carries on with the paused `run` the message's `taskId` names.
pub(super) async fn continue_task<K: Kind>(
    target: &Target<'_>,
    runner: &K::Runner,
    run: RunOutput,
    incoming: &Incoming,
    user_id: Option<String>,
    request_id: Value,
    stream: bool,
) -> Result<Response, Failure> {
    let task_id = run.id().to_owned();
    if run.status != RunStatus::Paused {
        return Err(RpcError::invalid_params(format!(
            "task {task_id} is {}: only an input-required task takes an answer; send a message without taskId to \
             start a new task in its context",
            task::state_of(run.status)
        ))
        .into());
    }
    crate::routes::approvals::gate_continue(target.state, target.principal, &run).await?;
    let form = if K::KIND == ComponentKind::Workflow {
        step_form(&run, incoming)?
    } else {
        continuation::answers_form(&answered(&run, incoming)?)
    };
    // The kind checks the answers as its REST continue does; what it refuses is the request's
    // fault (invalid params), nothing changed.
    let (run, requirements) = continuation::take_answers::<K>(target.state, runner, run, &form, Vec::new())
        .await
        .map_err(|e| match e.status {
            StatusCode::UNPROCESSABLE_ENTITY | StatusCode::CONFLICT => {
                Failure::from(RpcError::invalid_params(e.detail))
            }
            _ => Failure::from(e),
        })?;
    let session_id = run.session_id.clone().unwrap_or_default();
    let carried =
        continuation::carry_on::<K>(target.state, runner, run, requirements, user_id, ClientSide::default(), false)
            .await?;
    Ok(match carried {
        // A background task goes on on the durable queue: a stream follows its log from where it
        // stopped.
        Carried::Queued { queue, run, after } if stream => {
            let frames = crate::routes::background::tail_frames(target.state, queue, task_id, after)?;
            target.follow(frames, request_id, task::task_of(&run))
        }
        Carried::Queued { run, .. } => target.sent(&request_id, &task::task_of(&run), StatusCode::ACCEPTED),
        Carried::Here(events) if stream => target.stream(events, request_id, (&task_id, &session_id), "working"),
        Carried::Here(events) => {
            target.sent(&request_id, &finished_task(events.output().await, &task_id, &session_id), StatusCode::OK)
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn people_answer_yes_and_no_in_several_ways() {
        assert_eq!(yes_or_no(" Yes. "), Some(true));
        assert_eq!(yes_or_no("APPROVE"), Some(true));
        assert_eq!(yes_or_no("no!"), Some(false));
        assert_eq!(yes_or_no("maybe"), None);
    }
}
