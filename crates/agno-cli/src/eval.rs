//! `agno eval run FILE`: runs eval cases against a config's agents, as Agno's `agno.eval.suite`
//! does: each case runs its agent once on its input, then its checks grade that run (a judge
//! against `criteria`, and/or the tools it called against `expected_tool_calls`). Prints a table;
//! any failing case fails the command.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use agno_os::app::AgentOs;
use agno_os::config::OsConfig;
use agno_runtime::eval::{AgentAsJudgeEval, EvalSink, ReliabilityEval, ScoringStrategy};
use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::cli::{EvalArgs, EvalCommand};

/// A cases file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Suite {
    /// The judge's model (`provider:model`); default: each case's agent's model.
    judge_model: Option<String>,
    cases: Vec<Case>,
}

/// One case (Agno's `Case`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    agent: String,
    input: String,
    criteria: Option<String>,
    #[serde(default = "binary")]
    judge_mode: String,
    #[serde(default = "seven")]
    judge_threshold: i64,
    judge_model: Option<String>,
    expected_tool_calls: Option<Vec<String>>,
    #[serde(default = "yes")]
    allow_additional_tool_calls: bool,
    user_id: Option<String>,
}

fn binary() -> String {
    "binary".to_owned()
}
fn seven() -> i64 {
    7
}
fn yes() -> bool {
    true
}

/// Reads a cases file; errors name the field and the line.
fn read_suite(path: &Path) -> Result<Suite> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
    let suite: Suite = if yaml {
        yaml_serde::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
    } else {
        toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
    };
    if suite.cases.is_empty() {
        bail!("{} has no cases: add [[cases]] with name, agent, input and a check", path.display());
    }
    for case in &suite.cases {
        if case.criteria.as_deref().is_none_or(|c| c.trim().is_empty())
            && case.expected_tool_calls.as_ref().is_none_or(Vec::is_empty)
        {
            bail!("case {:?} has no checks: set criteria and/or expected_tool_calls", case.name);
        }
        ScoringStrategy::parse(&case.judge_mode).map_err(|e| anyhow::anyhow!("case {:?}: {e}", case.name))?;
        if !(1..=10).contains(&case.judge_threshold) {
            bail!("case {:?}: judge_threshold must be 1-10, got {}", case.name, case.judge_threshold);
        }
    }
    Ok(suite)
}

pub(crate) async fn eval(args: EvalArgs) -> Result<()> {
    let EvalCommand::Run { config, file } = args.command;
    let suite = read_suite(&file)?;
    let os_config = OsConfig::load(&config).with_context(|| format!("cannot load {}", config.display()))?;
    let os = AgentOs::from_config(&os_config).await?;
    let mut failed = 0;
    println!("{:<28}  {:<12}  {:<12}  {:<6}  {:>8}  DETAIL", "CASE", "JUDGE", "RELIABILITY", "RESULT", "SECONDS");
    for case in &suite.cases {
        let started = Instant::now();
        let (judge_cell, reliability_cell, detail) = match run_case(&os, &suite, case).await {
            Ok(cells) => cells,
            Err(e) => ("error".to_owned(), "error".to_owned(), format!("{e:#}")),
        };
        let passed = ![&judge_cell, &reliability_cell].iter().any(|c| c.starts_with("fail") || c.as_str() == "error");
        if !passed {
            failed += 1;
        }
        println!(
            "{:<28}  {:<12}  {:<12}  {:<6}  {:>8.2}  {}",
            case.name,
            judge_cell,
            reliability_cell,
            if passed { "pass" } else { "FAIL" },
            started.elapsed().as_secs_f64(),
            detail.chars().take(160).collect::<String>()
        );
    }
    let total = suite.cases.len();
    println!("\n{} of {total} cases passed", total - failed);
    if failed > 0 {
        bail!("{failed} of {total} eval cases failed");
    }
    Ok(())
}

/// Runs one case: its agent once, then its checks. Returns the judge and reliability cells and
/// a detail (the judge's reason, the missing tools).
async fn run_case(os: &AgentOs, suite: &Suite, case: &Case) -> Result<(String, String, String)> {
    let served = os.state.agent(&case.agent).with_context(|| {
        let known: Vec<&str> = os.state.agents.iter().map(|a| a.agent.id()).collect();
        format!("no agent {:?} in the config (agents: {})", case.agent, known.join(", "))
    })?;
    let agent = &served.agent;
    let sink = EvalSink { db: os.state.db.clone(), user_id: case.user_id.clone(), name: Some(case.name.clone()) };
    let mut request = agno_runtime::RunRequest::from(case.input.as_str());
    request.user_id.clone_from(&case.user_id);
    let run = agent.arun(request).await.with_context(|| format!("the agent {} failed", case.agent))?;
    let mut details = Vec::new();
    let judge_cell = match case.criteria.as_deref().filter(|c| !c.trim().is_empty()) {
        None => "-".to_owned(),
        Some(criteria) => {
            let model = match case.judge_model.as_deref().or(suite.judge_model.as_deref()) {
                Some(spec) => agno::models::model_from_str(spec).with_context(|| format!("judge_model {spec:?}"))?,
                None => Arc::clone(agent.model()),
            };
            let mut judge = AgentAsJudgeEval::new(criteria, model);
            judge.scoring_strategy = ScoringStrategy::parse(&case.judge_mode).map_err(anyhow::Error::msg)?;
            judge.threshold = case.judge_threshold;
            let outcome = judge.evaluate(&case.input, &run.content_text(), &sink).await?;
            let result = &outcome.record.eval_data["results"][0];
            details.push(result["reason"].as_str().unwrap_or_default().to_owned());
            match (outcome.passed, result["score"].as_i64()) {
                (true, Some(s)) => format!("pass ({s})"),
                (false, Some(s)) => format!("fail ({s})"),
                (true, None) => "pass".to_owned(),
                (false, None) => "fail".to_owned(),
            }
        }
    };
    let reliability_cell = match &case.expected_tool_calls {
        None => "-".to_owned(),
        Some(tools) => {
            let check = ReliabilityEval {
                expected_tool_calls: tools.clone(),
                allow_additional_tool_calls: case.allow_additional_tool_calls,
                ..ReliabilityEval::default()
            };
            let outcome = check.check(&run, Some(agent), &sink).await?;
            if !outcome.passed {
                let data = &outcome.record.eval_data;
                details
                    .push(format!("missing {} unexpected {}", data["missing_tool_calls"], data["failed_tool_calls"]));
            }
            if outcome.passed { "pass" } else { "fail" }.to_owned()
        }
    };
    Ok((judge_cell, reliability_cell, details.join("; ")))
}
