//! Agno's tasks mode: the leader works from a shared task list kept in the team's session state
//! (`_team_tasks`, Agno's key and shape). It creates tasks (with dependencies), has members
//! execute them (one, or several at once), updates and annotates them, and marks the goal
//! complete; after each answer the run goes on with the task list as the next message until the
//! goal is complete, every task completed, or `max_iterations` is reached.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

use agno_core::{DynTool, EventData, ToolContext, ToolDefinition, ToolError, ToolFlags, ToolOutput};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::Member;
use super::engine::{TeamRun, find_member, member_text};
use crate::agent::FollowUp;

/// Where the task list lives in the session state (Agno's key).
pub(super) const TASK_LIST_KEY: &str = "_team_tasks";

/// A task's status (Agno's `TaskStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum TaskStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
    Blocked,
}

impl TaskStatus {
    fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Blocked => "blocked",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        serde_json::from_value(Value::String(text.to_owned())).ok()
    }

    fn terminal(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed)
    }
}

/// One task (Agno's `Task.to_dict()` shape).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Task {
    id: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: String,
    status: TaskStatus,
    #[serde(default)]
    assignee: Option<String>,
    #[serde(default)]
    parent_id: Option<String>,
    #[serde(default)]
    dependencies: Vec<String>,
    #[serde(default)]
    result: Option<String>,
    #[serde(default)]
    notes: Vec<String>,
    #[serde(default)]
    created_at: f64,
}

impl Task {
    /// The task as Agno's `TaskData` (what UIs render).
    fn data(&self) -> Value {
        json!({
            "id": self.id, "title": self.title, "description": self.description,
            "status": self.status.as_str(), "assignee": self.assignee,
            "dependencies": self.dependencies, "result": self.result,
        })
    }
}

/// The shared task list (Agno's `TaskList.to_dict()` shape).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct TaskList {
    #[serde(default)]
    tasks: Vec<Task>,
    #[serde(default)]
    goal_complete: bool,
    #[serde(default)]
    completion_summary: Option<String>,
}

impl TaskList {
    /// The list kept in `state` (empty when there is none or it cannot be read).
    fn load(state: &Map<String, Value>) -> Self {
        let mut list: TaskList =
            state.get(TASK_LIST_KEY).and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default();
        list.update_blocked();
        list
    }

    fn save(&self, state: &mut Map<String, Value>) {
        state.insert(TASK_LIST_KEY.to_owned(), serde_json::to_value(self).unwrap_or_default());
    }

    fn get(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    fn get_mut(&mut self, id: &str) -> Option<&mut Task> {
        self.tasks.iter_mut().find(|t| t.id == id)
    }

    /// Unknown or unfinished dependencies block a task (fail closed, as Agno).
    fn is_blocked(&self, task: &Task) -> bool {
        task.dependencies.iter().any(|d| self.get(d).is_none_or(|dep| dep.status != TaskStatus::Completed))
    }

    fn has_failed_dependency(&self, task: &Task) -> bool {
        task.dependencies.iter().any(|d| self.get(d).is_some_and(|dep| dep.status == TaskStatus::Failed))
    }

    /// Blocked tasks whose dependencies completed become pending; those with a failed one fail.
    fn update_blocked(&mut self) {
        for i in 0..self.tasks.len() {
            let task = &self.tasks[i];
            let next = match task.status {
                TaskStatus::Blocked if self.has_failed_dependency(task) => Some(TaskStatus::Failed),
                TaskStatus::Blocked if !self.is_blocked(task) => Some(TaskStatus::Pending),
                TaskStatus::Pending if self.is_blocked(task) => Some(TaskStatus::Blocked),
                _ => None,
            };
            if let Some(status) = next {
                let task = &mut self.tasks[i];
                if status == TaskStatus::Failed {
                    task.result = Some("Automatically failed: a dependency failed.".to_owned());
                }
                task.status = status;
            }
        }
    }

    fn all_terminal(&self) -> bool {
        !self.tasks.is_empty() && self.tasks.iter().all(|t| t.status.terminal())
    }

    /// The list as the leader reads it (Agno's wording).
    fn summary(&self) -> String {
        if self.tasks.is_empty() {
            return "No tasks created yet.".to_owned();
        }
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for t in &self.tasks {
            match counts.iter_mut().find(|(s, _)| *s == t.status.as_str()) {
                Some((_, n)) => *n += 1,
                None => counts.push((t.status.as_str(), 1)),
            }
        }
        let parts: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
        let mut lines = vec![format!("Tasks ({} total: {}):", self.tasks.len(), parts.join(", "))];
        for t in &self.tasks {
            let assignee = t.assignee.as_deref().map_or(" (unassigned)".to_owned(), |a| format!(" (assigned: {a})"));
            lines.push(format!("  [{}] {} - {}{assignee}", t.id, t.title, t.status.as_str().to_uppercase()));
            if !t.dependencies.is_empty() {
                lines.push(format!("      Depends on: {:?}", t.dependencies));
            }
            if let Some(result) = &t.result {
                let preview: String = result.chars().take(200).collect();
                let more = if result.chars().count() > 200 { "..." } else { "" };
                lines.push(format!("      Result: {preview}{more}"));
            }
            for note in t.notes.iter().rev().take(3).rev() {
                lines.push(format!("      Note: {note}"));
            }
        }
        if self.goal_complete
            && let Some(summary) = &self.completion_summary
        {
            lines.push(format!("\nGoal marked complete: {summary}"));
        }
        lines.join("\n")
    }
}

/// Ends task `id` in the task list kept in `state` (a task whose member waited for a person
/// and has now answered).
pub(super) fn end_task(state: &mut Map<String, Value>, id: &str, completed: bool, result: String) {
    let mut list = TaskList::load(state);
    if let Some(task) = list.get_mut(id) {
        task.status = if completed { TaskStatus::Completed } else { TaskStatus::Failed };
        task.result = Some(result);
    }
    list.update_blocked();
    list.save(state);
}

/// Reads and changes the task list in the run's session state.
fn with_list<T>(ctx: &ToolContext, f: impl FnOnce(&mut TaskList) -> T) -> Result<T, ToolError> {
    let mut state = ctx.session_state.lock().map_err(|_| ToolError::execution("the session state is unavailable"))?;
    let mut list = TaskList::load(&state);
    let out = f(&mut list);
    list.update_blocked();
    list.save(&mut state);
    Ok(out)
}

fn text_arg(args: &Map<String, Value>, name: &str) -> Result<String, ToolError> {
    args.get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ToolError::invalid_arguments(format!("`{name}` must be a string")))
}

fn optional_text(args: &Map<String, Value>, name: &str) -> Result<Option<String>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ToolError::invalid_arguments(format!("`{name}` must be a string"))),
    }
}

fn text_list(args: &Map<String, Value>, name: &str) -> Result<Vec<String>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| ToolError::invalid_arguments(format!("`{name}` must be a list of task ids")))
            })
            .collect(),
        Some(_) => Err(ToolError::invalid_arguments(format!("`{name}` must be a list of task ids"))),
    }
}

/// A short id, as Agno's (the first 8 characters of a UUID).
fn short_id() -> String {
    agno_core::new_id().chars().take(8).collect()
}

/// Which task tool.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Create,
    Update,
    List,
    Note,
    Complete,
    Execute,
    ExecuteParallel,
}

static DEFINITIONS: LazyLock<Vec<(Kind, ToolDefinition)>> = LazyLock::new(|| {
    let def = |name: &str, description: &str, parameters: Value| ToolDefinition {
        name: name.to_owned(),
        description: Some(description.to_owned()),
        parameters: Arc::new(parameters),
        strict: false,
    };
    vec![
        (
            Kind::Create,
            def(
                "create_task",
                "Create a new task for the team to work on.",
                json!({"type": "object", "properties": {
                    "title": {"type": "string", "description": "(str) A short, actionable title for the task."},
                    "description": {"type": "string", "description": "(str) Detailed description of what needs to be done."},
                    "assignee": {"type": "string", "description": "(str) The member_id to assign this task to. Must be a valid member_id."},
                    "depends_on": {"type": "array", "items": {"type": "string"}, "description": "(list, optional) List of task IDs that must complete before this task can start."}
                }, "required": ["title"]}),
            ),
        ),
        (
            Kind::Update,
            def(
                "update_task_status",
                "Update the status of a task. Use this to mark tasks you handle yourself as completed.",
                json!({"type": "object", "properties": {
                    "task_id": {"type": "string", "description": "(str) The ID of the task to update."},
                    "status": {"type": "string", "description": "(str) New status. One of: pending, in_progress, completed, failed."},
                    "result": {"type": "string", "description": "(str, optional) The result or outcome of the task (when completing)."}
                }, "required": ["task_id", "status"]}),
            ),
        ),
        (
            Kind::List,
            def(
                "list_tasks",
                "List all tasks with their current status, assignees, and dependencies.",
                json!({"type": "object", "properties": {}}),
            ),
        ),
        (
            Kind::Note,
            def(
                "add_task_note",
                "Add a note to a task for tracking progress or communicating context.",
                json!({"type": "object", "properties": {
                    "task_id": {"type": "string", "description": "(str) The ID of the task."},
                    "note": {"type": "string", "description": "(str) The note to add."}
                }, "required": ["task_id", "note"]}),
            ),
        ),
        (
            Kind::Complete,
            def(
                "mark_all_complete",
                "Signal that the overall goal has been achieved. Call this when all tasks are done.",
                json!({"type": "object", "properties": {
                    "summary": {"type": "string", "description": "(str) A summary of the work done and the final outcome."}
                }, "required": ["summary"]}),
            ),
        ),
        (
            Kind::Execute,
            def(
                "execute_task",
                "Execute a task by delegating it to a team member. The member will receive the task description and return a result.",
                json!({"type": "object", "properties": {
                    "task_id": {"type": "string", "description": "(str) The ID of the task to execute."},
                    "member_id": {"type": "string", "description": "(str) The ID of the member to execute the task."}
                }, "required": ["task_id", "member_id"]}),
            ),
        ),
        (
            Kind::ExecuteParallel,
            def(
                "execute_tasks_parallel",
                "Execute multiple independent tasks in parallel by delegating each to its assigned member.",
                json!({"type": "object", "properties": {
                    "task_ids": {"type": "array", "items": {"type": "string"}, "description": "(list) IDs of tasks to execute in parallel. Each task must have an assignee and be pending with its dependencies completed."}
                }, "required": ["task_ids"]}),
            ),
        ),
    ]
});

/// The task tools as the model sees them.
pub(super) fn definitions() -> Vec<ToolDefinition> {
    DEFINITIONS.iter().map(|(_, d)| d.clone()).collect()
}

/// The task tools, bound to this run.
pub(super) fn tools(run: &Arc<TeamRun>) -> Vec<Arc<dyn DynTool>> {
    DEFINITIONS
        .iter()
        .map(|(kind, definition)| {
            Arc::new(TaskTool { run: Arc::clone(run), kind: *kind, definition: definition.clone() }) as Arc<dyn DynTool>
        })
        .collect()
}

struct TaskTool {
    run: Arc<TeamRun>,
    kind: Kind,
    definition: ToolDefinition,
}

impl std::fmt::Debug for TaskTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskTool").field("name", &self.definition.name).finish()
    }
}

static NO_FLAGS: LazyLock<ToolFlags> = LazyLock::new(ToolFlags::default);

#[async_trait]
impl DynTool for TaskTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn flags(&self) -> &ToolFlags {
        &NO_FLAGS
    }

    async fn call(&self, args: Map<String, Value>, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        match self.kind {
            Kind::Create => self.create(&args, &ctx),
            Kind::Update => self.update(&args, &ctx),
            Kind::List => with_list(&ctx, |list| list.summary()),
            Kind::Note => {
                let (id, note) = (text_arg(&args, "task_id")?, text_arg(&args, "note")?);
                with_list(&ctx, |list| match list.get_mut(&id) {
                    Some(task) => {
                        task.notes.push(note);
                        format!("Note added to task [{id}].")
                    }
                    None => format!("Task with ID '{id}' not found."),
                })
            }
            Kind::Complete => {
                let summary = text_arg(&args, "summary")?;
                with_list(&ctx, |list| {
                    list.goal_complete = true;
                    list.completion_summary = Some(summary.clone());
                })?;
                Ok(format!("Goal marked as complete. Summary: {summary}"))
            }
            Kind::Execute => {
                let (id, member_id) = (text_arg(&args, "task_id")?, text_arg(&args, "member_id")?);
                self.execute(&ctx, &id, &member_id, true).await
            }
            Kind::ExecuteParallel => {
                let ids = text_list(&args, "task_ids")?;
                if ids.is_empty() {
                    return Ok("No task IDs provided.".to_owned());
                }
                let ctx = &ctx;
                let runs = ids.iter().map(|id| async move {
                    let assignee = with_list(ctx, |list| list.get(id).and_then(|t| t.assignee.clone()))
                        .ok()
                        .flatten()
                        .filter(|a| !a.is_empty());
                    match assignee {
                        Some(member_id) => {
                            self.execute(ctx, id, &member_id, false).await.unwrap_or_else(|e| e.model_text())
                        }
                        None => format!("Task [{id}] has no assignee; create it with one or use execute_task."),
                    }
                });
                Ok(futures::future::join_all(runs).await.join("\n\n"))
            }
        }
    }
}

impl TaskTool {
    fn create(&self, args: &Map<String, Value>, ctx: &ToolContext) -> Result<String, ToolError> {
        let title = text_arg(args, "title")?;
        let description = optional_text(args, "description")?.unwrap_or_default();
        let assignee = optional_text(args, "assignee")?.filter(|a| !a.is_empty());
        let dependencies = text_list(args, "depends_on")?;
        let created = with_list(ctx, |list| {
            let wanted = title.trim().to_lowercase();
            if let Some(existing) = list.tasks.iter().find(|t| t.title.trim().to_lowercase() == wanted) {
                return Err(format!(
                    "Task already exists: [{}] {} (status: {}). Use this task instead of creating a duplicate.",
                    existing.id,
                    existing.title,
                    existing.status.as_str()
                ));
            }
            let created_at = chrono::Utc::now().timestamp_micros() as f64 / 1e6;
            list.tasks.push(Task {
                id: short_id(),
                title: title.clone(),
                description: description.clone(),
                status: TaskStatus::Pending,
                assignee: assignee.clone(),
                parent_id: None,
                dependencies: dependencies.clone(),
                result: None,
                notes: Vec::new(),
                created_at,
            });
            list.update_blocked();
            Ok(list.tasks.last().cloned())
        })?;
        let task = match created {
            Err(duplicate) => return Ok(duplicate),
            Ok(None) => return Err(ToolError::execution("the task list did not keep the task")),
            Ok(Some(task)) => task,
        };
        self.run.emit(EventData::TaskCreated {
            task_id: task.id.clone(),
            title: task.title.clone(),
            description: task.description.clone(),
            assignee: task.assignee.clone(),
            status: task.status.as_str().to_owned(),
            dependencies: task.dependencies.clone(),
        });
        Ok(format!("Task created: [{}] {} (status: {})", task.id, task.title, task.status.as_str()))
    }

    fn update(&self, args: &Map<String, Value>, ctx: &ToolContext) -> Result<String, ToolError> {
        let id = text_arg(args, "task_id")?;
        let status_text = text_arg(args, "status")?;
        let result = optional_text(args, "result")?;
        let Some(status) = TaskStatus::parse(&status_text) else {
            return Ok(format!(
                "Invalid status '{status_text}'. Must be one of: pending, in_progress, completed, failed."
            ));
        };
        if status == TaskStatus::Blocked {
            return Ok("Cannot manually set status to 'blocked'. Blocked status is managed automatically based on \
                       task dependencies."
                .to_owned());
        }
        let changed = with_list(ctx, |list| {
            let task = list.get_mut(&id)?;
            let previous = task.status;
            task.status = status;
            if result.is_some() {
                task.result.clone_from(&result);
            }
            Some((task.clone(), previous))
        })?;
        let Some((task, previous)) = changed else { return Ok(format!("Task with ID '{id}' not found.")) };
        self.updated(&task, previous);
        Ok(format!("Task [{}] '{}' updated to {}.", task.id, task.title, task.status.as_str()))
    }

    /// Sends `TeamTaskUpdated` for a task that was `previous`.
    fn updated(&self, task: &Task, previous: TaskStatus) {
        self.run.emit(EventData::TaskUpdated {
            task_id: task.id.clone(),
            title: task.title.clone(),
            status: task.status.as_str().to_owned(),
            previous_status: Some(previous.as_str().to_owned()),
            result: task.result.clone().filter(|_| task.status.terminal()),
            assignee: task.assignee.clone(),
        });
    }

    /// Runs task `id` on `member_id`: in progress while the member works, then completed with its
    /// answer (failed with its error). Whatever goes wrong is told to the leader as text. A member
    /// that pauses for a person pauses the team when `may_pause` (the task stays in progress and
    /// the leader gets the member's answer after the continue); otherwise the task fails saying
    /// so.
    async fn execute(
        &self,
        ctx: &ToolContext,
        id: &str,
        member_id: &str,
        may_pause: bool,
    ) -> Result<String, ToolError> {
        let Some(member) = find_member(&self.run.team.members, member_id).cloned() else {
            let ids: Vec<&str> = self.run.team.members.iter().map(Member::id).collect();
            return Ok(format!("Member with ID {member_id} not found. Available members: {}", ids.join(", ")));
        };
        let started = with_list(ctx, |list| {
            let blocked = list.get(id).is_some_and(|t| list.is_blocked(t));
            let task = list.get_mut(id).ok_or_else(|| format!("Task with ID '{id}' not found."))?;
            if !matches!(task.status, TaskStatus::Pending | TaskStatus::InProgress) || blocked {
                return Err(format!("Task [{id}] is {} and cannot be executed.", task.status.as_str()));
            }
            let previous = task.status;
            task.status = TaskStatus::InProgress;
            task.assignee = Some(member_id.to_owned());
            Ok((task.clone(), previous))
        })?;
        let (task, previous) = match started {
            Ok(started) => started,
            Err(refused) => return Ok(refused),
        };
        self.updated(&task, previous);
        let description = if task.description.is_empty() { task.title.clone() } else { task.description.clone() };
        let outcome = super::delegate::delegate(&self.run, member.clone(), description, ctx).await;
        if let Ok(out) = &outcome
            && out.status == agno_core::RunStatus::Paused
            && may_pause
        {
            return Err(super::delegate::pause_on(&self.run, &member, out, ctx, Some(id.to_owned())));
        }
        let (status, result) = match &outcome {
            Ok(out) if out.status == agno_core::RunStatus::Completed => (TaskStatus::Completed, member_text(out)),
            Ok(out) if out.status == agno_core::RunStatus::Paused => (
                TaskStatus::Failed,
                format!(
                    "Member {member_id} waits for human input; run this task alone with execute_task so the team \
                     can pause for it."
                ),
            ),
            Ok(out) => (TaskStatus::Failed, format!("The member's run ended {}: {}", out.status, member_text(out))),
            Err(e) => (TaskStatus::Failed, e.model_text()),
        };
        let ended = with_list(ctx, |list| {
            let task = list.get_mut(id)?;
            task.status = status;
            task.result = Some(result.clone());
            Some(task.clone())
        })?;
        if let Some(task) = ended {
            self.updated(&task, TaskStatus::InProgress);
        }
        Ok(match status {
            TaskStatus::Completed => format!("Task [{id}] completed by {member_id}:\n{result}"),
            _ => format!("Task [{id}] failed: {result}"),
        })
    }
}

/// Keeps the leader working until the goal is complete, every task completed, or the bound is
/// reached (Agno's iteration loop): each answer without a tool call ends an iteration, and the
/// next starts with the task list as a user message. A request that needs no tasks ends on the
/// second answer in a row with no tool call.
pub(super) struct Iterations {
    run: Arc<TeamRun>,
    max_iterations: u32,
    iteration: AtomicU32,
    tool_calls: AtomicUsize,
    idle_turns: AtomicU32,
}

impl std::fmt::Debug for Iterations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iterations")
            .field("run_id", &self.run.run_id)
            .field("iteration", &self.iteration)
            .field("max_iterations", &self.max_iterations)
            .finish()
    }
}

impl Iterations {
    pub(super) fn new(run: &Arc<TeamRun>, max_iterations: u32) -> Arc<Self> {
        let it = Arc::new(Self {
            run: Arc::clone(run),
            max_iterations: max_iterations.max(1),
            iteration: AtomicU32::new(1),
            tool_calls: AtomicUsize::new(0),
            idle_turns: AtomicU32::new(0),
        });
        it.run.emit(EventData::TaskIterationStarted { iteration: 1, max_iterations: it.max_iterations });
        it
    }
}

impl FollowUp for Iterations {
    fn next(&self, state: &Map<String, Value>, tool_calls: usize) -> Option<String> {
        let iteration = self.iteration.load(Ordering::SeqCst);
        let list = TaskList::load(state);
        let summary = list.summary();
        self.run.emit(EventData::TaskIterationCompleted {
            iteration,
            max_iterations: self.max_iterations,
            task_summary: Some(summary.clone()),
        });
        self.run.emit(EventData::TaskStateUpdated {
            task_summary: Some(summary.clone()),
            goal_complete: list.goal_complete,
            tasks: list.tasks.iter().map(Task::data).collect(),
            completion_summary: list.completion_summary.clone(),
        });
        let before = self.tool_calls.swap(tool_calls, Ordering::SeqCst);
        // With no tasks, a second answer in a row without a tool call is final.
        let idle = if list.tasks.is_empty() && tool_calls == before {
            self.idle_turns.fetch_add(1, Ordering::SeqCst) + 1
        } else {
            self.idle_turns.store(0, Ordering::SeqCst);
            0
        };
        let done = list.goal_complete
            || (list.all_terminal() && !list.tasks.iter().any(|t| t.status == TaskStatus::Failed))
            || idle >= 2;
        if done {
            return None;
        }
        if iteration >= self.max_iterations {
            tracing::warn!(
                run_id = self.run.run_id,
                max_iterations = self.max_iterations,
                "tasks mode reached max_iterations without completing all tasks"
            );
            return None;
        }
        self.iteration.store(iteration + 1, Ordering::SeqCst);
        self.run
            .emit(EventData::TaskIterationStarted { iteration: iteration + 1, max_iterations: self.max_iterations });
        Some(format!(
            "<current_task_state>\n{summary}\n</current_task_state>\n\nContinue working on the tasks. Create, \
             execute, or update tasks as needed. When the goal is met, write your answer and call \
             `mark_all_complete`."
        ))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn task(id: &str, status: TaskStatus, deps: &[&str]) -> Task {
        Task {
            id: id.to_owned(),
            title: format!("task {id}"),
            description: String::new(),
            status,
            assignee: None,
            parent_id: None,
            dependencies: deps.iter().map(|d| (*d).to_owned()).collect(),
            result: None,
            notes: Vec::new(),
            created_at: 0.0,
        }
    }

    #[test]
    fn dependencies_block_unblock_and_fail_tasks_as_agno_does() {
        let mut list = TaskList {
            tasks: vec![
                task("a", TaskStatus::Pending, &[]),
                task("b", TaskStatus::Pending, &["a"]),
                task("c", TaskStatus::Pending, &["ghost"]),
            ],
            ..TaskList::default()
        };
        list.update_blocked();
        let statuses = |l: &TaskList| l.tasks.iter().map(|t| t.status).collect::<Vec<_>>();
        assert_eq!(statuses(&list), [TaskStatus::Pending, TaskStatus::Blocked, TaskStatus::Blocked]);
        list.tasks[0].status = TaskStatus::Completed;
        list.update_blocked();
        assert_eq!(statuses(&list), [TaskStatus::Completed, TaskStatus::Pending, TaskStatus::Blocked]);
        list.tasks[1].status = TaskStatus::Failed;
        list.tasks.push(task("d", TaskStatus::Blocked, &["b"]));
        list.update_blocked();
        assert_eq!(list.tasks[3].status, TaskStatus::Failed, "a failed dependency fails the task");
        assert_eq!(list.tasks[3].result.as_deref(), Some("Automatically failed: a dependency failed."));
        assert!(!list.all_terminal(), "c still waits for an unknown task");
    }

    #[test]
    fn the_summary_reads_as_agnos() {
        let mut list = TaskList { tasks: vec![task("a1", TaskStatus::Completed, &[])], ..TaskList::default() };
        list.tasks[0].assignee = Some("writer".to_owned());
        list.tasks[0].result = Some("done".to_owned());
        assert_eq!(
            list.summary(),
            "Tasks (1 total: 1 completed):\n  [a1] task a1 - COMPLETED (assigned: writer)\n      Result: done"
        );
        assert_eq!(TaskList::default().summary(), "No tasks created yet.");
        // The stored shape is Agno's `TaskList.to_dict()`.
        let stored = serde_json::to_value(&list).unwrap();
        assert_eq!(stored["tasks"][0]["status"], "completed");
        assert_eq!(stored["goal_complete"], false);
        assert!(stored["tasks"][0].get("notes").is_some() && stored["tasks"][0].get("parent_id").is_some());
    }
}
