//! `agno run --config agentos.toml --agent-id ID | --team ID | --workflow ID "message"`: one run
//! of a configured component, printed; a workflow that pauses for review asks at the terminal
//! and continues with the answers.

use std::io::{BufRead, Write};
use std::path::Path;

use agno::core::{RunOutput, RunStatus, StepRequirement};
use agno::runtime::RunRequest;
use agno::runtime::workflow::{Workflow, WorkflowContinueRequest, WorkflowRunRequest};
use agno_os::app::AgentOs;
use agno_os::config::OsConfig;
use anyhow::{Context, Result, bail};
use serde_json::{Map, Value};

use crate::cli::RunArgs;

pub(crate) async fn run(config: &Path, args: &RunArgs) -> Result<()> {
    let parsed = OsConfig::load(config).with_context(|| format!("cannot read {}", config.display()))?;
    let os = AgentOs::from_config(&parsed).await.with_context(|| format!("cannot start {}", config.display()))?;
    let state = &os.state;
    let message = args.message.join(" ");
    let session = args.agent.session_id.clone();
    let output = if let Some(id) = &args.workflow {
        let wf =
            state.workflow(id).with_context(|| not_found("workflow", id, state.workflows.iter().map(Workflow::id)))?;
        let request = WorkflowRunRequest { session_id: session, ..WorkflowRunRequest::from(message) };
        let mut run = wf.arun(request).await?;
        while run.status == RunStatus::Paused {
            run = review(wf, &run)?.await?;
        }
        run
    } else if let Some(id) = &args.team {
        let team = state.team(id).with_context(|| not_found("team", id, state.teams.iter().map(|t| t.id())))?;
        team.arun(request(message, session)).await?
    } else if let Some(id) = &args.agent_id {
        let served =
            state.agent(id).with_context(|| not_found("agent", id, state.agents.iter().map(|a| a.agent.id())))?;
        served.agent.arun(request(message, session)).await?
    } else {
        bail!("--config needs the component to run: --agent-id ID, --team ID or --workflow ID");
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&output)?);
    } else {
        println!("{}", output.content_text());
    }
    match output.status {
        RunStatus::Completed => Ok(()),
        other => bail!("the run ended {other}"),
    }
}

fn request(message: String, session: Option<String>) -> RunRequest {
    let request = RunRequest::new(message);
    match session {
        Some(id) => request.session_id(id),
        None => request,
    }
}

fn not_found<'a>(kind: &str, id: &str, known: impl Iterator<Item = &'a str>) -> String {
    let known: Vec<&str> = known.collect();
    format!(
        "the config has no {kind} {id:?} (it has: {})",
        if known.is_empty() { "none".to_owned() } else { known.join(", ") }
    )
}

/// Asks the reviewer at the terminal what the paused run waits for, and continues it.
fn review<'a>(
    wf: &'a Workflow,
    run: &RunOutput,
) -> Result<impl Future<Output = Result<RunOutput, agno::runtime::RunError>> + 'a> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut out = std::io::stderr();
    let mut ask = |question: &str| -> Result<String> {
        write!(out, "{question} ")?;
        out.flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            bail!("the run paused for review and the terminal gave no answer (stdin is closed)");
        }
        Ok(line.trim().to_owned())
    };
    let mut request =
        WorkflowContinueRequest { run_id: run.id().to_owned(), run: Some(Box::new(run.clone())), ..Default::default() };
    if let Some(err) = run.extra.get("error_requirements").and_then(Value::as_array).and_then(|l| l.last())
        && err.get("decision").is_none_or(Value::is_null)
    {
        let mut answer: agno::core::ErrorRequirement = serde_json::from_value(err.clone())?;
        let step = answer.step_name.clone().unwrap_or_default();
        let decision = ask(&format!("step {step:?} failed: {}\nretry or skip? [r/s]", answer.error_message))?;
        answer.decision = Some(if decision.starts_with('r') { "retry" } else { "skip" }.to_owned());
        request.error_requirements.push(answer);
        return Ok(wf.continue_run(request));
    }
    let last = run.extra.get("step_requirements").and_then(Value::as_array).and_then(|l| l.last()).cloned();
    let mut req: StepRequirement = serde_json::from_value(last.context("the paused run has no requirement")?)?;
    let step = req.step_name.clone().unwrap_or_default();
    if req.extra.get("requires_executor_input").and_then(Value::as_bool) == Some(true) {
        // The step's agent paused: answer each of its tool calls as for an agent run.
        let mut pending: Vec<agno::core::RunRequirement> =
            serde_json::from_value(req.extra.get("executor_requirements").cloned().unwrap_or(Value::Null))
                .unwrap_or_default();
        for r in &mut pending {
            let (name, args) = r
                .tool_execution
                .as_ref()
                .map(|t| (t.name().to_owned(), t.tool_args.clone().map(Value::Object).unwrap_or_default()))
                .unwrap_or_default();
            if r.needs_external_execution() {
                let result = ask(&format!("step {step:?}: result of {name}({args})?"))?;
                r.set_external_execution_result(result);
            } else if r.needs_user_input() {
                let mut values = Map::new();
                for field in r.user_input_schema.clone().unwrap_or_default() {
                    values.insert(field.name.clone(), Value::String(ask(&format!("{name}: {}?", field.name))?));
                }
                r.provide_user_input(&values);
            } else {
                let yes = ask(&format!("step {step:?}: run {name}({args})? [y/n]"))?;
                if yes.eq_ignore_ascii_case("y") || yes.eq_ignore_ascii_case("yes") {
                    r.confirm();
                } else {
                    r.reject(None);
                }
            }
        }
        req.extra.insert("executor_requirements".to_owned(), serde_json::to_value(&pending)?);
        request.step_requirements.push(req);
        return Ok(wf.continue_run(request));
    }
    if req.requires_route_selection {
        let choices = req.available_choices.clone().unwrap_or_default();
        let message = req.user_input_message.clone().unwrap_or_else(|| format!("route of {step:?}"));
        let picked = ask(&format!("{message} [{}]", choices.join(", ")))?;
        req.selected_choices = Some(picked.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect());
    } else if req.requires_user_input {
        let mut values = Map::new();
        for field in req.user_input_schema.clone().unwrap_or_default() {
            let text = ask(&format!("{} ({})?", field.name, field.field_type))?;
            let value = match field.field_type.as_str() {
                "str" => Value::String(text),
                _ => serde_json::from_str(&text).unwrap_or(Value::String(text)),
            };
            values.insert(field.name.clone(), value);
        }
        if values.is_empty() {
            let text = ask(&req.user_input_message.clone().unwrap_or_else(|| format!("input for {step:?}?")))?;
            values.insert("input".to_owned(), Value::String(text));
        }
        req.set_user_input(values);
    }
    if req.requires_confirmation || req.requires_output_review {
        if let Some(output) = &req.step_output {
            eprintln!("output of {step:?}:\n{}", output.content_text());
        }
        let question = req
            .confirmation_message
            .clone()
            .or_else(|| req.output_review_message.clone())
            .unwrap_or_else(|| format!("go on with {step:?}?"));
        let yes = ask(&format!("{question} [y/n]"))?;
        if yes.eq_ignore_ascii_case("y") || yes.eq_ignore_ascii_case("yes") {
            req.confirm();
        } else {
            req.reject(None);
        }
    }
    request.step_requirements.push(req);
    Ok(wf.continue_run(request))
}
