//! Reviews: pausing a run for a person (a [`StepRequirement`] or an [`ErrorRequirement`]), what
//! the answer decides when the run continues, and checking an answer before anything changes.
//!
//! A pause is identified by its journal key (kept in the requirement's `agno_rs_key`): `pre:` a
//! confirmation, input or route pick before a node runs; `post:` an output review (numbered by
//! retry); `iter:` a loop iteration review; `error:` a decision after a failure.

use agno_core::{
    ErrorRequirement, RunOutput, RunRequirement, StepOutput, StepRequirement, StepType, WorkflowEventData,
};
use serde_json::{Map, Value, json};

use super::engine::{Ctx, Halt, JOURNAL, Pause, Pos};
use super::primitives::Step;
use super::review::{HumanReview, OnReject};

/// Where in the requirement the journal key is kept.
const KEY: &str = "agno_rs_key";

/// The node a review is about.
pub(super) struct Reviewed<'a> {
    pub(super) kind: StepType,
    pub(super) name: &'a str,
    pub(super) id: Option<&'a str>,
    pub(super) pos: &'a Pos,
    pub(super) review: &'a HumanReview,
}

impl<'a> Reviewed<'a> {
    /// The review of a step or container that has one (`human_review`), else `None`.
    pub(super) fn of(
        kind: StepType,
        name: &'a str,
        id: Option<&'a str>,
        pos: &'a Pos,
        review: Option<&'a HumanReview>,
    ) -> Option<Self> {
        review.map(|review| Self { kind, name, id, pos, review })
    }

    fn node(&self) -> Option<(&str, Option<&str>, &Pos)> {
        Some((self.name, self.id, self.pos))
    }

    /// Pauses the run on the review of an output (`round` retries in; after loop `iteration`
    /// when it is one), announced live as Agno's `StepOutputReview`.
    fn ask_output_review(
        &self,
        ctx: &Ctx,
        key: String,
        message: &Option<String>,
        round: u32,
        output: Option<StepOutput>,
        iteration: Option<u32>,
    ) -> Halt {
        let mut req = self.requirement(key);
        req.requires_output_review = true;
        req.output_review_message.clone_from(message);
        req.is_post_execution = true;
        req.retry_count = round;
        req.step_output = output;
        if let Some(iteration) = iteration {
            req.extra.insert("iteration".to_owned(), json!(iteration));
        }
        ctx.live();
        ctx.emit(
            || WorkflowEventData::StepOutputReview {
                output_review_message: req.output_review_message.clone(),
                requires_output_review: true,
            },
            self.node(),
        );
        Halt::Paused(Box::new(Pause::Step(Box::new(req))))
    }

    fn requirement(&self, key: String) -> StepRequirement {
        let r = self.review;
        let mut req = StepRequirement::new(self.id.unwrap_or(self.name));
        req.step_name = Some(self.name.to_owned());
        req.step_index = Some(self.pos.index.clone());
        req.step_type = Some(self.kind.as_str().to_owned());
        req.on_reject = r.on_reject.as_str().to_owned();
        req.on_timeout = r.on_timeout.as_str().to_owned();
        req.max_retries = Some(r.max_retries);
        req.timeout_at = r.timeout.map(|secs| {
            let at = chrono::Utc::now() + chrono::Duration::seconds(i64::try_from(secs).unwrap_or(i64::MAX / 2));
            at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        });
        req.extra.insert(KEY.to_owned(), Value::String(key));
        req
    }

    /// What a rejection does: the answer's `on_reject` (a timeout may have set it), else the
    /// review's.
    pub(super) fn on_reject(&self, answer: &StepRequirement) -> OnReject {
        OnReject::parse(&answer.on_reject).unwrap_or(self.review.on_reject)
    }

    /// The cancel of a rejected node.
    pub(super) fn rejected(&self) -> Halt {
        Halt::Cancelled(Some(format!("Workflow cancelled: Step '{}' was rejected", self.name)))
    }
}

/// Before a node runs.
pub(super) enum Before {
    /// Run it (with the answer, when there was a review: its input, its picked routes).
    Go(Option<StepRequirement>),
    /// The reviewer said no.
    Rejected(OnReject, StepRequirement),
}

/// Asks (or reads the answer to) the review before a node runs: confirmation, input, or a
/// router's route (`choices`, when the router's reviewer picks).
pub(super) fn before(ctx: &Ctx, node: &Reviewed<'_>, choices: Option<&[&str]>) -> Result<Before, Halt> {
    let r = node.review;
    let picks_route = choices.is_some() && r.requires_user_input;
    if !(r.requires_confirmation || r.requires_user_input) {
        return Ok(Before::Go(None));
    }
    let key = format!("pre:{}", node.pos.key);
    let Some(answer) = ctx.answer(&key) else {
        let mut req = node.requirement(key);
        req.requires_confirmation = r.requires_confirmation;
        req.confirmation_message.clone_from(&r.confirmation_message);
        if picks_route {
            req.requires_route_selection = true;
            req.available_choices = choices.map(|c| c.iter().map(|s| (*s).to_owned()).collect());
            req.allow_multiple_selections = r.allow_multiple_selections;
            req.user_input_message.clone_from(&r.user_input_message);
        } else if r.requires_user_input {
            req.requires_user_input = true;
            req.user_input_message.clone_from(&r.user_input_message);
            req.user_input_schema = (!r.user_input_schema.is_empty()).then(|| r.user_input_schema.clone());
        }
        ctx.live();
        let event = if picks_route {
            WorkflowEventData::RouterPaused {
                available_choices: req.available_choices.clone().unwrap_or_default(),
                user_input_message: req.user_input_message.clone(),
                allow_multiple_selections: req.allow_multiple_selections,
            }
        } else {
            WorkflowEventData::StepPaused {
                requires_confirmation: req.requires_confirmation,
                confirmation_message: req.confirmation_message.clone(),
                requires_user_input: req.requires_user_input,
                user_input_message: req.user_input_message.clone(),
                user_input_schema: req.user_input_schema.as_ref().and_then(|s| serde_json::to_value(s).ok()),
            }
        };
        ctx.emit(|| event, node.node());
        return Err(Halt::Paused(Box::new(Pause::Step(Box::new(req)))));
    };
    ctx.live();
    ctx.emit(|| WorkflowEventData::StepContinued {}, node.node());
    if answer.confirmed == Some(false) {
        return Ok(Before::Rejected(node.on_reject(&answer), answer));
    }
    Ok(Before::Go(Some(answer)))
}

/// After a node ran.
pub(super) enum After {
    /// Keep this output.
    Accept(Box<StepOutput>),
    /// The reviewer rejected the output.
    Rejected(OnReject, Box<StepRequirement>),
}

/// Asks (or reads the answer to) the review of a node's output; `round` counts the retries a
/// reviewer asked for. The output is kept in the journal while it waits, so a continue does not
/// run the node again.
pub(super) fn after(ctx: &Ctx, node: &Reviewed<'_>, output: StepOutput, round: u32) -> Result<After, Halt> {
    let r = node.review;
    if !r.requires_output_review.applies(&output) {
        return Ok(After::Accept(Box::new(output)));
    }
    let key = format!("post:{}:{round}", node.pos.key);
    let Some(answer) = ctx.answer(&key) else {
        ctx.journal_put(pending_key(node.pos, round), serde_json::to_value(&output).unwrap_or_default());
        return Err(node.ask_output_review(ctx, key, &r.output_review_message, round, Some(output), None));
    };
    if answer.confirmed == Some(false) {
        return Ok(After::Rejected(node.on_reject(&answer), Box::new(answer)));
    }
    let mut output = output;
    if let Some(edited) = &answer.edited_output {
        output.content = Some(edited.clone());
    }
    Ok(After::Accept(Box::new(output)))
}

/// The journal key of an output that waits for review.
pub(super) fn pending_key(pos: &Pos, round: u32) -> String {
    format!("pending:{}:{round}", pos.key)
}

/// Asks (or reads the answer to) the review after loop iteration `iteration` (its `round`th
/// attempt). `Ok(None)` when approved.
pub(super) fn iteration(
    ctx: &Ctx,
    node: &Reviewed<'_>,
    iteration: u32,
    round: u32,
    last: Option<&StepOutput>,
) -> Result<Option<(OnReject, StepRequirement)>, Halt> {
    let key = format!("iter:{}#{iteration}r{round}", node.pos.key);
    let Some(answer) = ctx.answer(&key) else {
        let message = &node.review.iteration_review_message;
        return Err(node.ask_output_review(ctx, key, message, round, last.cloned(), Some(iteration)));
    };
    if answer.confirmed == Some(false) {
        return Ok(Some((node.on_reject(&answer), answer)));
    }
    Ok(None)
}

/// The latest paused agent run of the step at `pos` that has an answer and was not continued
/// yet (a later round's paused run means this one was), with the answers to its requirements.
pub(super) fn answered_executor(ctx: &Ctx, pos: &Pos) -> Option<(RunOutput, Vec<RunRequirement>)> {
    let mut round = 0;
    while ctx.journal_get(&format!("agentrun:{}:{}", pos.key, round + 1)).is_some() {
        round += 1;
    }
    let run = serde_json::from_value(ctx.journal_get(&format!("agentrun:{}:{round}", pos.key))?).ok()?;
    let answers = serde_json::from_value(ctx.journal_get(&format!("answer:exec:{}:{round}", pos.key))?).ok()?;
    Some((run, answers))
}

/// A nested workflow step's paused run with the reviewer's answers applied (the latest round),
/// ready to continue.
pub(super) fn answered_nested(ctx: &Ctx, pos: &Pos) -> Option<RunOutput> {
    let mut round = 0;
    while ctx.journal_get(&format!("agentrun:{}:{}", pos.key, round + 1)).is_some() {
        round += 1;
    }
    serde_json::from_value(ctx.journal_get(&format!("answer:exec:{}:{round}", pos.key))?).ok()
}

/// The round of the next executor pause of the step at `pos`.
pub(super) fn executor_round(ctx: &Ctx, pos: &Pos) -> u32 {
    let mut round = 0;
    while ctx.journal_get(&format!("agentrun:{}:{round}", pos.key)).is_some() {
        round += 1;
    }
    round
}

/// Pauses the run because the step's agent (or team) paused (Agno's executor pause): the agent's paused
/// run is journaled, and the requirement carries its requirements (`executor_requirements`) for
/// the reviewer to answer as for an agent run.
pub(super) fn executor(ctx: &Ctx, step: &Step, pos: &Pos, run: &RunOutput, round: u32) -> Halt {
    ctx.journal_put(format!("agentrun:{}:{round}", pos.key), serde_json::to_value(run).unwrap_or_default());
    let mut req = StepRequirement::new(step.step_id.as_deref().unwrap_or(&step.name));
    req.step_name = Some(step.name.clone());
    req.step_index = Some(pos.index.clone());
    req.step_type = Some(StepType::Step.as_str().to_owned());
    // A nested workflow's pause is forwarded whole (its step and error requirements); an agent's
    // or a team's as its active requirements.
    let nested = run.workflow_id.is_some() && run.agent_id.is_none() && !run.extra.contains_key("team_id");
    let pending = if nested {
        run.extra.get("step_requirements").cloned().unwrap_or_else(|| json!([]))
    } else {
        serde_json::to_value(run.active_requirements()).unwrap_or_default()
    };
    if !nested {
        let team = run.extra.contains_key("team_id");
        req.extra.insert("executor_type".to_owned(), json!(if team { "team" } else { "agent" }));
        req.extra
            .insert("executor_id".to_owned(), run.extra.get("team_id").cloned().unwrap_or_else(|| json!(run.agent_id)));
        req.extra.insert(
            "executor_name".to_owned(),
            run.extra.get("team_name").cloned().unwrap_or_else(|| json!(run.agent_name)),
        );
    }
    if nested {
        if let Some(errors) = run.extra.get("error_requirements") {
            req.extra.insert("executor_error_requirements".to_owned(), errors.clone());
        }
        req.extra.insert("executor_type".to_owned(), json!("workflow"));
        req.extra.insert("executor_id".to_owned(), json!(run.workflow_id));
        req.extra.insert("executor_name".to_owned(), run.extra.get("workflow_name").cloned().unwrap_or(Value::Null));
    }
    for (key, value) in [
        ("requires_executor_input", json!(true)),
        ("executor_requirements", pending),
        ("executor_run_id", json!(run.id())),
        ("executor_session_id", json!(run.session_id)),
        (KEY, json!(format!("exec:{}:{round}", pos.key))),
    ] {
        req.extra.insert(key.to_owned(), value);
    }
    ctx.live();
    ctx.emit(|| WorkflowEventData::StepExecutorPaused {}, Some((step.name.as_str(), step.step_id.as_deref(), pos)));
    Halt::Paused(Box::new(Pause::Step(Box::new(req))))
}

/// The answers to an executor pause: the agent's (or team's) requirements, each resolved.
fn executor_answers(
    active: &StepRequirement,
    answer: &StepRequirement,
    name: &str,
) -> Result<Vec<RunRequirement>, String> {
    let stored: Vec<RunRequirement> = active
        .extra
        .get("executor_requirements")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    let given: Vec<RunRequirement> = match answer.extra.get("executor_requirements") {
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|e| format!("executor_requirements of step {name:?} are not the agent's requirements: {e}"))?,
        None => {
            return Err(format!(
                "step {name:?} waits for its agent or team: send executor_requirements, each answered"
            ));
        }
    };
    let mut out = Vec::with_capacity(stored.len());
    for pending in &stored {
        let Some(answer) = given
            .iter()
            .find(|g| g.id == pending.id || (g.tool_call_id().is_some() && g.tool_call_id() == pending.tool_call_id()))
        else {
            return Err(format!(
                "executor_requirements of step {name:?} do not answer tool call {}",
                pending.tool_call_id().unwrap_or(&pending.id)
            ));
        };
        if !answer.is_resolved() {
            return Err(format!(
                "executor_requirements of step {name:?}: tool call {} is not answered (confirm or reject it, give its input or result)",
                pending.tool_call_id().unwrap_or(&pending.id)
            ));
        }
        out.push(answer.clone());
    }
    Ok(out)
}

/// What a reviewer decided after a failure.
pub(super) enum ErrorDecision {
    Retry,
    Skip,
}

/// The decision already taken on the step's failure number `round` (in an earlier walk of this
/// run), with that failure's message.
pub(super) fn decided(ctx: &Ctx, pos: &Pos, round: u32) -> Option<(ErrorDecision, String)> {
    let answer: ErrorRequirement =
        serde_json::from_value(ctx.journal_get(&format!("answer:error:{}:{round}", pos.key))?).ok()?;
    let decision = if answer.decision.as_deref() == Some("retry") { ErrorDecision::Retry } else { ErrorDecision::Skip };
    Some((decision, answer.error_message))
}

/// Pauses (or reads the decision) after a step failed with `on_error = pause`; `round` counts
/// the retries decided so far.
pub(super) fn error(ctx: &Ctx, node: &Reviewed<'_>, message: &str, round: u32) -> Result<ErrorDecision, Halt> {
    let key = format!("error:{}:{round}", node.pos.key);
    let answer: Option<ErrorRequirement> =
        ctx.journal_get(&format!("answer:{key}")).and_then(|v| serde_json::from_value(v).ok());
    match answer.and_then(|a| a.decision) {
        Some(d) if d == "retry" => Ok(ErrorDecision::Retry),
        Some(_) => Ok(ErrorDecision::Skip),
        None => {
            let mut req = ErrorRequirement {
                step_id: node.id.unwrap_or(node.name).to_owned(),
                step_name: Some(node.name.to_owned()),
                step_index: Some(node.pos.index.clone()),
                error_message: message.to_owned(),
                error_type: Some("StepError".to_owned()),
                retry_count: round,
                decision: None,
                extra: Map::new(),
            };
            req.extra.insert(KEY.to_owned(), Value::String(key));
            ctx.live();
            ctx.emit(|| WorkflowEventData::StepError { error: Some(message.to_owned()) }, node.node());
            Err(Halt::Paused(Box::new(Pause::Error(Box::new(req)))))
        }
    }
}

/// Applies a continue's answers to a paused run: the active requirement (the last one) takes the
/// answer's decision (`confirmed`, `rejection_feedback`, `user_input`, `selected_choices`,
/// `edited_output`; or an error's `decision`), a timeout applies `on_timeout`, and the answer is
/// put into the run's journal. Nothing changes when the answer does not fit.
///
/// # Errors
/// A sentence naming the step or field that does not fit.
pub(super) fn resolve(
    run: &mut RunOutput,
    answers: &[StepRequirement],
    errors: &[ErrorRequirement],
) -> Result<(), String> {
    let mut journal = match run.extra.get(JOURNAL) {
        Some(Value::Object(j)) => j.clone(),
        _ => Map::new(),
    };
    let pending_error = last_of::<ErrorRequirement>(run, "error_requirements").filter(|(_, e)| e.decision.is_none());
    if let Some((index, mut active)) = pending_error {
        let name = active.step_name.clone().unwrap_or_else(|| active.step_id.clone());
        let answer = errors.iter().find(|e| e.step_id == active.step_id).ok_or_else(|| {
            let named: Vec<&str> = errors.iter().map(|e| e.step_name.as_deref().unwrap_or(&e.step_id)).collect();
            if named.is_empty() {
                format!("the run waits for a decision on step {name:?}: send error_requirements with decision \"retry\" or \"skip\"")
            } else {
                format!("error_requirements names {}, but the run waits for a decision on step {name:?}", named.join(", "))
            }
        })?;
        match answer.decision.as_deref() {
            Some(d @ ("retry" | "skip")) => active.decision = Some(d.to_owned()),
            other => {
                return Err(format!(
                    "error_requirements[{name}].decision must be \"retry\" or \"skip\", got {other:?}"
                ));
            }
        }
        let key = active.extra.get(KEY).and_then(Value::as_str).unwrap_or_default().to_owned();
        journal.insert(format!("answer:{key}"), serde_json::to_value(&active).unwrap_or_default());
        replace(run, "error_requirements", index, serde_json::to_value(&active).unwrap_or_default());
        run.extra.insert(JOURNAL.to_owned(), Value::Object(journal));
        return Ok(());
    }
    let Some((index, mut active)) = last_of::<StepRequirement>(run, "step_requirements") else {
        return Err("the run has no step requirement to answer".to_owned());
    };
    let name = active.step_name.clone().unwrap_or_else(|| active.step_id.clone());
    let answer = answers.iter().find(|a| a.step_id == active.step_id).ok_or_else(|| {
        let named: Vec<&str> = answers.iter().map(|a| a.step_name.as_deref().unwrap_or(&a.step_id)).collect();
        if named.is_empty() {
            format!("the run waits for step {name:?}: send step_requirements with its answer")
        } else {
            format!("step_requirements names {}, but the run waits for step {name:?}", named.join(", "))
        }
    })?;
    if active.extra.get("requires_executor_input").and_then(Value::as_bool) == Some(true)
        && active.extra.get("executor_type").and_then(Value::as_str) == Some("workflow")
    {
        // The nested run is answered as its own continue would be (checked the same way), and
        // kept answered for the replay.
        let key = active.extra.get(KEY).and_then(Value::as_str).unwrap_or_default().to_owned();
        let paused_key = format!("agentrun:{}", key.strip_prefix("exec:").unwrap_or(&key));
        let mut nested: RunOutput = journal
            .get(&paused_key)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .ok_or_else(|| format!("step {name:?}: the nested workflow's paused run is missing from the journal"))?;
        let list = |field: &str| -> Result<Option<Value>, String> {
            match answer.extra.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(v @ Value::Array(_)) => Ok(Some(v.clone())),
                Some(_) => {
                    Err(format!("{field} of step {name:?} must be a list of the nested workflow's requirements"))
                }
            }
        };
        let steps: Vec<StepRequirement> = match list("executor_requirements")? {
            Some(v) => serde_json::from_value(v).map_err(|e| format!("executor_requirements of step {name:?}: {e}"))?,
            None => Vec::new(),
        };
        let errors: Vec<ErrorRequirement> = match list("executor_error_requirements")? {
            Some(v) => {
                serde_json::from_value(v).map_err(|e| format!("executor_error_requirements of step {name:?}: {e}"))?
            }
            None => Vec::new(),
        };
        resolve(&mut nested, &steps, &errors).map_err(|e| format!("step {name:?} (a nested workflow): {e}"))?;
        active.extra.insert(
            "executor_requirements".to_owned(),
            nested.extra.get("step_requirements").cloned().unwrap_or_default(),
        );
        journal.insert(format!("answer:{key}"), serde_json::to_value(&nested).unwrap_or_default());
        replace(run, "step_requirements", index, serde_json::to_value(&active).unwrap_or_default());
        run.extra.insert(JOURNAL.to_owned(), Value::Object(journal));
        return Ok(());
    }
    if active.extra.get("requires_executor_input").and_then(Value::as_bool) == Some(true) {
        let answers = executor_answers(&active, answer, &name)?;
        active.extra.insert("executor_requirements".to_owned(), serde_json::to_value(&answers).unwrap_or_default());
        let key = active.extra.get(KEY).and_then(Value::as_str).unwrap_or_default().to_owned();
        journal.insert(format!("answer:{key}"), serde_json::to_value(&answers).unwrap_or_default());
        replace(run, "step_requirements", index, serde_json::to_value(&active).unwrap_or_default());
        run.extra.insert(JOURNAL.to_owned(), Value::Object(journal));
        return Ok(());
    }
    let timed_out = active
        .timeout_at
        .as_deref()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .is_some_and(|t| chrono::Utc::now() >= t);
    if timed_out {
        match active.on_timeout.as_str() {
            "approve" => active.confirmed = Some(true),
            "skip" => {
                active.confirmed = Some(false);
                active.on_reject = "skip".to_owned();
            }
            _ => {
                active.confirmed = Some(false);
                active.on_reject = "cancel".to_owned();
            }
        }
        if active.requires_user_input && active.confirmed == Some(true) {
            // Approved by timeout without input: nothing to fill.
            active.requires_user_input = false;
        }
        if active.requires_route_selection && active.confirmed == Some(true) {
            return Err(format!("the review of step {name:?} timed out and a route cannot be approved by default"));
        }
    } else {
        active.confirmed = answer.confirmed.or(active.confirmed);
        if answer.rejection_feedback.is_some() {
            active.rejection_feedback.clone_from(&answer.rejection_feedback);
        }
        if let Some(edited) = &answer.edited_output {
            active.edit(edited.clone());
        }
        if active.requires_user_input {
            let given = answer.user_input.clone().or_else(|| values_of(answer.user_input_schema.as_deref()));
            if let Some(values) = given {
                if let Some(schema) = &active.user_input_schema {
                    for (field, value) in &values {
                        let Some(spec) = schema.iter().find(|f| &f.name == field) else {
                            return Err(format!("user_input.{field}: step {name:?} asks for no such field"));
                        };
                        spec.check(value).map_err(|e| format!("user_input of step {name:?}: {e}"))?;
                    }
                }
                active.set_user_input(values);
            }
        }
        if active.requires_route_selection {
            let picked = answer.selected_choices.clone().unwrap_or_default();
            let choices = active.available_choices.clone().unwrap_or_default();
            if let Some(bad) = picked.iter().find(|p| !choices.contains(p)) {
                return Err(format!(
                    "selected_choices: {bad:?} is not a route of {name:?} (choices: {})",
                    choices.join(", ")
                ));
            }
            if picked.len() > 1 && !active.allow_multiple_selections {
                return Err(format!("selected_choices: router {name:?} takes one route, got {}", picked.len()));
            }
            if !picked.is_empty() {
                active.selected_choices = Some(picked);
            }
        }
        if let Some(missing) = active.missing() {
            return Err(format!("step {name:?} is not answered: {missing}"));
        }
    }
    let key = active.extra.get(KEY).and_then(Value::as_str).unwrap_or_default().to_owned();
    journal.insert(format!("answer:{key}"), serde_json::to_value(&active).unwrap_or_default());
    replace(run, "step_requirements", index, serde_json::to_value(&active).unwrap_or_default());
    run.extra.insert(JOURNAL.to_owned(), Value::Object(journal));
    Ok(())
}

fn values_of(schema: Option<&[agno_core::StepInputField]>) -> Option<Map<String, Value>> {
    let values: Map<String, Value> = schema?.iter().filter_map(|f| Some((f.name.clone(), f.value.clone()?))).collect();
    (!values.is_empty()).then_some(values)
}

fn last_of<T: serde::de::DeserializeOwned>(run: &RunOutput, field: &str) -> Option<(usize, T)> {
    let list = run.extra.get(field)?.as_array()?;
    let index = list.len().checked_sub(1)?;
    serde_json::from_value(list[index].clone()).ok().map(|v| (index, v))
}

fn replace(run: &mut RunOutput, field: &str, index: usize, value: Value) {
    if let Some(Value::Array(list)) = run.extra.get_mut(field)
        && let Some(slot) = list.get_mut(index)
    {
        *slot = value;
    }
}
