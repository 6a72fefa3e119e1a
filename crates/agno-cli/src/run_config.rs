//! `agno run --config agentos.toml --agent-id ID | --team ID | --workflow ID "message"`: one run
//! of a configured component, printed; a run that pauses (a workflow's review, also inside a
//! nested workflow; an agent's or a team member's tool call) asks at the terminal and continues
//! with the answers.

use std::io::{BufRead, Write};
use std::path::Path;

use agno::core::{ComponentKind, ErrorRequirement, RunInput, RunOutput, RunRequirement, RunStatus, StepRequirement};
use agno::runtime::workflow::{Workflow, WorkflowContinueRequest};
use agno::runtime::{ContinueRequest, RunSpec};
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
        let mut run = wf.arun(spec(ComponentKind::Workflow, id, message, session).workflow_request()).await?;
        while run.status == RunStatus::Paused {
            run = review(wf, &run)?.await?;
        }
        run
    } else if let Some(id) = &args.team {
        let team = state.team(id).with_context(|| not_found("team", id, state.teams.iter().map(|t| t.id())))?;
        let mut run = team.arun(spec(ComponentKind::Team, id, message, session).request()).await?;
        while run.status == RunStatus::Paused {
            let mut answers = run.requirements.clone().unwrap_or_default();
            answer_tools(&mut Terminal::new(), &format!("team {id:?}"), &mut answers)?;
            run = team.acontinue_run(ContinueRequest::output(run, answers)).await?;
        }
        run
    } else if let Some(id) = &args.agent_id {
        let served =
            state.agent(id).with_context(|| not_found("agent", id, state.agents.iter().map(|a| a.agent.id())))?;
        let mut run = served.agent.arun(spec(ComponentKind::Agent, id, message, session).request()).await?;
        while run.status == RunStatus::Paused {
            let mut answers = run.requirements.clone().unwrap_or_default();
            answer_tools(&mut Terminal::new(), &format!("agent {id:?}"), &mut answers)?;
            run = served.agent.acontinue_run(ContinueRequest::output(run, answers)).await?;
        }
        run
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

/// The run asked for on the command line: `message` to `id`, in `session` (else a new one).
fn spec(kind: ComponentKind, id: &str, message: String, session: Option<String>) -> RunSpec {
    let mut spec = RunSpec::new(kind, id, RunInput::text(message));
    if let Some(session) = session {
        spec.session_id = session;
    }
    spec
}

fn not_found<'a>(kind: &str, id: &str, known: impl Iterator<Item = &'a str>) -> String {
    let known: Vec<&str> = known.collect();
    format!(
        "the config has no {kind} {id:?} (it has: {})",
        if known.is_empty() { "none".to_owned() } else { known.join(", ") }
    )
}

/// Questions at the terminal (stdin), prompts on stderr.
struct Terminal {
    input: std::io::StdinLock<'static>,
    out: std::io::Stderr,
}

impl Terminal {
    fn new() -> Self {
        Self { input: std::io::stdin().lock(), out: std::io::stderr() }
    }

    fn ask(&mut self, question: &str) -> Result<String> {
        write!(self.out, "{question} ")?;
        self.out.flush()?;
        let mut line = String::new();
        if self.input.read_line(&mut line)? == 0 {
            bail!("the run paused for review and the terminal gave no answer (stdin is closed)");
        }
        Ok(line.trim().to_owned())
    }

    fn yes(&mut self, question: &str) -> Result<bool> {
        let answer = self.ask(question)?;
        Ok(answer.eq_ignore_ascii_case("y") || answer.eq_ignore_ascii_case("yes"))
    }
}

/// Asks the reviewer at the terminal what the paused workflow run waits for, and continues it.
fn review<'a>(
    wf: &'a Workflow,
    run: &RunOutput,
) -> Result<impl Future<Output = Result<RunOutput, agno::runtime::RunError>> + 'a> {
    let (step_requirements, error_requirements) = answer_workflow(&mut Terminal::new(), &run.extra)?;
    let request = WorkflowContinueRequest {
        run_id: run.id().to_owned(),
        run: Some(Box::new(run.clone())),
        step_requirements,
        error_requirements,
        ..Default::default()
    };
    Ok(wf.continue_run(request))
}

/// Asks what a paused agent or team run waits for (each tool call: confirm, input or result)
/// and answers its requirements in place. `label` names where the call comes from.
fn answer_tools(term: &mut Terminal, label: &str, pending: &mut [RunRequirement]) -> Result<()> {
    for r in pending.iter_mut().filter(|r| !r.is_resolved()) {
        let (name, args) = r
            .tool_execution
            .as_ref()
            .map(|t| (t.name().to_owned(), t.tool_args.clone().map(Value::Object).unwrap_or_default()))
            .unwrap_or_default();
        let label = match &r.member_agent_name {
            Some(member) => format!("{label} (member {member})"),
            None => label.to_owned(),
        };
        if r.needs_external_execution() {
            let result = term.ask(&format!("{label}: result of {name}({args})?"))?;
            r.set_external_execution_result(result);
        } else if r.needs_user_input() {
            let mut values = Map::new();
            for field in r.user_input_schema.clone().unwrap_or_default() {
                values.insert(field.name.clone(), Value::String(term.ask(&format!("{name}: {}?", field.name))?));
            }
            r.provide_user_input(&values);
        } else if term.yes(&format!("{label}: run {name}({args})? [y/n]"))? {
            r.confirm();
        } else {
            r.reject(None);
        }
    }
    Ok(())
}

/// The answers to a paused workflow run (`extra`: its `step_requirements` and
/// `error_requirements`): the active one, asked at the terminal. A nested workflow's pause is
/// answered the same way, one level down.
fn answer_workflow(
    term: &mut Terminal,
    extra: &Map<String, Value>,
) -> Result<(Vec<StepRequirement>, Vec<ErrorRequirement>)> {
    if let Some(err) = extra.get("error_requirements").and_then(Value::as_array).and_then(|l| l.last())
        && err.get("decision").is_none_or(Value::is_null)
    {
        let mut answer: ErrorRequirement = serde_json::from_value(err.clone())?;
        let step = answer.step_name.clone().unwrap_or_default();
        let decision = term.ask(&format!("step {step:?} failed: {}\nretry or skip? [r/s]", answer.error_message))?;
        answer.decision = Some(if decision.starts_with('r') { "retry" } else { "skip" }.to_owned());
        return Ok((Vec::new(), vec![answer]));
    }
    let last = extra.get("step_requirements").and_then(Value::as_array).and_then(|l| l.last()).cloned();
    let mut req: StepRequirement = serde_json::from_value(last.context("the paused run has no requirement")?)?;
    let step = req.step_name.clone().unwrap_or_default();
    if req.extra.get("requires_executor_input").and_then(Value::as_bool) == Some(true) {
        if req.extra.get("executor_type").and_then(Value::as_str) == Some("workflow") {
            // A review inside the nested workflow: answer it as that workflow's own.
            let mut nested = Map::new();
            for (from, to) in
                [("executor_requirements", "step_requirements"), ("executor_error_requirements", "error_requirements")]
            {
                if let Some(v) = req.extra.get(from) {
                    nested.insert(to.to_owned(), v.clone());
                }
            }
            let (steps, errors) = answer_workflow(term, &nested)?;
            req.extra.insert("executor_requirements".to_owned(), serde_json::to_value(&steps)?);
            req.extra.insert("executor_error_requirements".to_owned(), serde_json::to_value(&errors)?);
        } else {
            // The step's agent or team paused: answer each of its tool calls as for an agent run.
            let mut pending: Vec<RunRequirement> =
                serde_json::from_value(req.extra.get("executor_requirements").cloned().unwrap_or(Value::Null))
                    .unwrap_or_default();
            answer_tools(term, &format!("step {step:?}"), &mut pending)?;
            req.extra.insert("executor_requirements".to_owned(), serde_json::to_value(&pending)?);
        }
        return Ok((vec![req], Vec::new()));
    }
    if req.requires_route_selection {
        let choices = req.available_choices.clone().unwrap_or_default();
        let message = req.user_input_message.clone().unwrap_or_else(|| format!("route of {step:?}"));
        let picked = term.ask(&format!("{message} [{}]", choices.join(", ")))?;
        req.selected_choices = Some(picked.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect());
    } else if req.requires_user_input {
        let mut values = Map::new();
        for field in req.user_input_schema.clone().unwrap_or_default() {
            let text = term.ask(&format!("{} ({})?", field.name, field.field_type))?;
            let value = match field.field_type.as_str() {
                "str" => Value::String(text),
                _ => serde_json::from_str(&text).unwrap_or(Value::String(text)),
            };
            values.insert(field.name.clone(), value);
        }
        if values.is_empty() {
            let text = term.ask(&req.user_input_message.clone().unwrap_or_else(|| format!("input for {step:?}?")))?;
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
        if term.yes(&format!("{question} [y/n]"))? {
            req.confirm();
        } else {
            req.reject(None);
        }
    }
    Ok((vec![req], Vec::new()))
}
