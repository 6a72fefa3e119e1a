//! The leader's delegation tools (Agno's names and arguments): `delegate_task_to_member(member_id,
//! task)` in coordinate and route mode (route: the member's answer ends the run as the team's),
//! `delegate_task_to_members(task)` in broadcast mode. A member runs on its own task with the
//! team's session, user and state, its `parent_run_id` the team run; if the leader's call is
//! dropped (the team run was cancelled), the member is cancelled too and still records how it
//! ended.

use std::sync::{Arc, LazyLock};

use agno_core::{
    DynTool, RunInput, RunOutput, RunStatus, ToolContext, ToolDefinition, ToolError, ToolErrorKind, ToolFlags,
    ToolOutput,
};
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;

use super::engine::{TeamRun, execute_member, find_member, member_text};
use super::resume::{DelegationPause, PausePart};
use super::{Member, TeamMode};
use crate::error::RunError;
use crate::request::RunRequest;

static ONE_SCHEMA: LazyLock<Arc<Value>> = LazyLock::new(|| {
    Arc::new(json!({
        "type": "object",
        "properties": {
            "member_id": {"type": "string", "description": "(str) The ID of the member to delegate the task to, exactly as it appears in <team_members>."},
            "task": {"type": "string", "description": "(str) A clear and concise description of the task the member should achieve, including what a good result looks like."}
        },
        "required": ["member_id", "task"],
        "additionalProperties": false
    }))
});

static ALL_SCHEMA: LazyLock<Arc<Value>> = LazyLock::new(|| {
    Arc::new(json!({
        "type": "object",
        "properties": {
            "task": {"type": "string", "description": "(str) A clear and concise description of the task to send to member agents, including what a good result looks like."}
        },
        "required": ["task"],
        "additionalProperties": false
    }))
});

/// The delegation tool of `mode`, as the model sees it.
pub(super) fn definition(mode: TeamMode) -> ToolDefinition {
    match mode {
        TeamMode::Broadcast => ToolDefinition {
            name: "delegate_task_to_members".to_owned(),
            description: Some(
                "Use this function to send one task to every member agent and return their responses. One call \
                 reaches all members; do not call it once per member."
                    .to_owned(),
            ),
            parameters: Arc::clone(&ALL_SCHEMA),
            strict: false,
        },
        _ => ToolDefinition {
            name: "delegate_task_to_member".to_owned(),
            description: Some("Use this function to delegate a task to the selected team member.".to_owned()),
            parameters: Arc::clone(&ONE_SCHEMA),
            strict: false,
        },
    }
}

/// The tools of the team's mode, bound to this run.
pub(super) fn tools(run: &Arc<TeamRun>) -> Vec<Arc<dyn DynTool>> {
    let definition = definition(run.team.mode);
    match run.team.mode {
        TeamMode::Broadcast => {
            vec![Arc::new(DelegateAll { run: Arc::clone(run), definition, flags: ToolFlags::default() })]
        }
        mode => vec![Arc::new(DelegateOne {
            run: Arc::clone(run),
            definition,
            // Route mode: the member's answer is the team's (Agno's respond_directly).
            flags: ToolFlags { stop_after_tool_call: mode == TeamMode::Route, ..ToolFlags::default() },
        })],
    }
}

fn text_arg(args: &Map<String, Value>, name: &str) -> Result<String, ToolError> {
    args.get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ToolError::invalid_arguments(format!("`{name}` must be a string")))
}

struct DelegateOne {
    run: Arc<TeamRun>,
    definition: ToolDefinition,
    flags: ToolFlags,
}

impl std::fmt::Debug for DelegateOne {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DelegateOne")
    }
}

#[async_trait]
impl DynTool for DelegateOne {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn flags(&self) -> &ToolFlags {
        &self.flags
    }

    async fn call(&self, args: Map<String, Value>, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let member_id = text_arg(&args, "member_id")?;
        let task = text_arg(&args, "task")?;
        let Some(member) = find_member(&self.run.team.members, &member_id) else {
            let ids: Vec<&str> = self.run.team.members.iter().map(Member::id).collect();
            return Ok(format!(
                "Member with ID {member_id} not found in the team. Please choose the correct member from the list \
                 of members: {}",
                ids.join(", ")
            ));
        };
        let out = delegate(&self.run, member.clone(), task, &ctx).await?;
        if out.status == RunStatus::Paused {
            return Err(pause_on(&self.run, member, &out, &ctx, None));
        }
        Ok(member_text(&out))
    }
}

struct DelegateAll {
    run: Arc<TeamRun>,
    definition: ToolDefinition,
    flags: ToolFlags,
}

impl std::fmt::Debug for DelegateAll {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DelegateAll")
    }
}

#[async_trait]
impl DynTool for DelegateAll {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn flags(&self) -> &ToolFlags {
        &self.flags
    }

    async fn call(&self, args: Map<String, Value>, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let task = text_arg(&args, "task")?;
        let runs = self.run.team.members.iter().map(|m| delegate(&self.run, m.clone(), task.clone(), &ctx));
        let mut parts = Vec::new();
        let mut waiting_names = Vec::new();
        for (member, out) in self.run.team.members.iter().zip(futures::future::join_all(runs).await) {
            let name = member.name().unwrap_or(member.id());
            let prefix = format!("Agent {name}: ");
            parts.push(match out {
                Ok(out) if out.status == RunStatus::Paused => {
                    waiting_names.push(name.to_owned());
                    waiting(member, &out, prefix)
                }
                Ok(out) => PausePart { prefix, text: Some(member_text(&out)), ..PausePart::default() },
                Err(e) => PausePart { prefix, text: Some(e.model_text()), ..PausePart::default() },
            });
        }
        if !waiting_names.is_empty() {
            self.run.pause(DelegationPause { tool_call_id: ctx.tool_call_id.clone(), parts, task_id: None });
            return Err(paused(&waiting_names));
        }
        let lines: Vec<String> =
            parts.into_iter().map(|p| format!("{}{}", p.prefix, p.text.unwrap_or_default())).collect();
        Ok(lines.join("\n"))
    }
}

/// Records that the leader's call waits on `member`'s paused run `out`, and returns the error
/// that pauses the leader on that call.
pub(super) fn pause_on(
    run: &TeamRun,
    member: &Member,
    out: &RunOutput,
    ctx: &ToolContext,
    task_id: Option<String>,
) -> ToolError {
    let name = member.name().unwrap_or(member.id()).to_owned();
    run.pause(DelegationPause {
        tool_call_id: ctx.tool_call_id.clone(),
        parts: vec![waiting(member, out, String::new())],
        task_id,
    });
    paused(&[name])
}

/// A member's share of a delegation while its run waits for a person.
fn waiting(member: &Member, out: &RunOutput, prefix: String) -> PausePart {
    PausePart {
        prefix,
        text: None,
        member_id: Some(member.id().to_owned()),
        member_name: member.name().map(str::to_owned),
        member_run_id: Some(out.id().to_owned()),
        failed: false,
    }
}

/// The error that pauses the leader on its delegation call (Agno's wording).
fn paused(names: &[String]) -> ToolError {
    ToolError::new(
        ToolErrorKind::Paused,
        format!("Member {} requires human input before continuing.", names.join(", ")),
    )
}

/// Cancels the member run when the leader's call is dropped before the member answered.
struct CancelOnDrop {
    run_id: String,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.armed {
            crate::cancel::cancel_run(&self.run_id);
        }
    }
}

/// Runs `member` on `task` on its own task (so a cancelled leader still gets it stored) and
/// waits for it.
pub(super) async fn delegate(
    run: &Arc<TeamRun>,
    member: Member,
    task: String,
    ctx: &ToolContext,
) -> Result<RunOutput, ToolError> {
    let member_run_id = agno_core::new_id();
    let request = RunRequest {
        input: RunInput::text(task),
        run_id: Some(member_run_id.clone()),
        session_id: Some(run.session_id.clone()),
        user_id: run.user_id.clone(),
        session_state: ctx.session_state.lock().ok().map(|s| s.clone()),
        parent_run_id: Some(run.run_id.clone()),
        store: Some(false),
        ..RunRequest::default()
    };
    // Registered before the task starts, so a cancel racing the start is not lost.
    let mut guard = CancelOnDrop { run_id: member_run_id.clone(), armed: true };
    let (done, answer) = oneshot::channel();
    let shared = Arc::clone(run);
    let handle = tokio::spawn(crate::trace::propagate(async move {
        let result = match member {
            Member::Agent(agent) if shared.streaming() => {
                let mut stream = agent.run_stream(request);
                while let Some(event) = stream.next().await {
                    shared.forward_member(event);
                }
                stream.output().await
            }
            Member::Agent(agent) => agent.spawn_run(request).await,
            Member::Team(team) => execute_member(Arc::clone(&team.inner), request, Arc::clone(&shared)).await,
        };
        let out = match &result {
            Ok(out) => Some(out.clone()),
            Err(e) => e.run().cloned(),
        };
        if let (Some(out), Ok(mut members)) = (out, shared.members_out.lock()) {
            members.push(out);
        }
        let _ = done.send(result);
    }));
    if let Ok(mut in_flight) = run.in_flight.lock() {
        in_flight.push(handle);
    }
    let result = answer.await.map_err(|_| ToolError::execution("the member's run ended without an answer"))?;
    guard.armed = false;
    result.map_err(|e: RunError| ToolError::execution(format!("the member failed: {e}")))
}
