//! A run's events (of any component kind, read as the JSON Agno streams) turned into A2A
//! `message/stream` frames: a `TaskStatusUpdateEvent` (`working`) when the run starts, a
//! `working` status update with `metadata.agno_event_type` per tool call, reasoning, memory and
//! workflow step event (as Python AgentOS 3.1.10 sends them), the answer's deltas as
//! `TaskArtifactUpdateEvent`s appending to one artifact, and a final status update (`final:
//! true`) whose status message is the whole answer.
//!
//! Python AgentOS sends the deltas as `Message`s and a `Task` after the final status update;
//! A2A's SDK clients refuse both (a streamed message after the first event, a second task), so
//! the deltas are artifact updates (which Agno's own `A2AClient` reads as content too) and the
//! answer rides the final status update. A failed run ends `failed` with its error, a paused one
//! `input-required` with what it waits for.

use serde_json::{Map, Value, json};

use super::jsonrpc::Version;
use super::task::{agent_message, state_of, text_part, waiting_for};
use crate::sse::Frame;

/// One stream frame answering the request `request_id` with `result` (v0.3's spelling; `name`
/// its A2A type, v0.3's `event:`): v0.3 as Python AgentOS frames it, v1.0 `data:` only with
/// the result respelled (see [`super::v1`]).
pub(super) fn frame(version: Version, request_id: &Value, name: &str, result: Value) -> Frame {
    match version {
        Version::V0_3 => Frame::json(name, &super::jsonrpc::envelope(request_id, result), None),
        Version::V1_0 => Frame::data(&super::jsonrpc::envelope(request_id, super::v1::one_of(&result)).to_string()),
    }
}

/// How a run ended, by the event that ended it.
#[derive(Debug)]
enum Ending {
    Completed(Value),
    Cancelled(Value),
    Failed(String),
    Paused,
}

/// Turns one run's events into A2A frames. The task is the run (`task_id`), its context the
/// session; only the run's own terminal event ends the task (a member's or a step agent's does
/// not).
#[derive(Debug)]
pub(super) struct Translator {
    request_id: Value,
    task_id: String,
    context_id: String,
    message_id: String,
    artifact_id: String,
    accumulated: String,
    ending: Option<Ending>,
    /// The protocol version of the request: v1.0's frames are `data:` only, their results
    /// one-ofs (see [`super::v1`]).
    version: Version,
}

/// An event's Agno name without a team's `Team` prefix (`TeamRunContent` is `RunContent`).
fn base_name(name: &str) -> &str {
    name.strip_prefix("Team").unwrap_or(name)
}

/// The workflow events Python forwards as `working` status updates, with the fields it copies.
const WORKFLOW_EVENTS: &[(&str, &str, &[&str])] = &[
    ("StepStarted", "workflow_step_started", &["step_name"]),
    ("StepCompleted", "workflow_step_completed", &["step_name"]),
    ("StepError", "workflow_step_error", &["step_name", "error"]),
    ("LoopExecutionStarted", "loop_execution_started", &["step_name", "max_iterations"]),
    ("LoopIterationStarted", "loop_iteration_started", &["step_name", "iteration", "max_iterations"]),
    ("LoopIterationCompleted", "loop_iteration_completed", &["step_name", "iteration", "should_continue"]),
    ("LoopExecutionCompleted", "loop_execution_completed", &["step_name", "total_iterations"]),
    ("ParallelExecutionStarted", "parallel_execution_started", &["step_name", "parallel_step_count"]),
    ("ParallelExecutionCompleted", "parallel_execution_completed", &["step_name", "parallel_step_count"]),
    ("ConditionExecutionStarted", "condition_execution_started", &["step_name", "condition_result"]),
    (
        "ConditionExecutionCompleted",
        "condition_execution_completed",
        &["step_name", "condition_result", "executed_steps"],
    ),
    ("RouterExecutionStarted", "router_execution_started", &["step_name", "selected_steps"]),
    ("RouterExecutionCompleted", "router_execution_completed", &["step_name", "selected_steps", "executed_steps"]),
    ("StepsExecutionStarted", "steps_execution_started", &["step_name", "steps_count"]),
    ("StepsExecutionCompleted", "steps_execution_completed", &["step_name", "steps_count", "executed_steps"]),
];

impl Translator {
    /// A translator for the run `task_id` in the session `context_id`, answering the JSON-RPC
    /// request `request_id`.
    pub(super) fn new(request_id: Value, task_id: &str, context_id: &str, version: Version) -> Self {
        Self {
            request_id,
            task_id: task_id.to_owned(),
            context_id: context_id.to_owned(),
            message_id: agno_core::new_id(),
            artifact_id: agno_core::new_id(),
            accumulated: String::new(),
            ending: None,
            version,
        }
    }

    fn frame(&self, name: &str, result: Value) -> Frame {
        frame(self.version, &self.request_id, name, result)
    }

    fn status(&self, state: &str, is_final: bool, metadata: Option<Map<String, Value>>) -> Frame {
        let mut update = json!({
            "contextId": self.context_id,
            "final": is_final,
            "kind": "status-update",
            "status": {"state": state},
            "taskId": self.task_id,
        });
        if let Some(metadata) = metadata.filter(|m| !m.is_empty()) {
            update["metadata"] = Value::Object(metadata);
        }
        self.frame("TaskStatusUpdateEvent", update)
    }

    fn working(&self, event_type: &str, event: &Value, fields: &[&str]) -> Frame {
        let mut metadata = Map::new();
        metadata.insert("agno_event_type".into(), json!(event_type));
        for field in fields {
            if let Some(v) = event.get(*field).filter(|v| !v.is_null()) {
                metadata.insert((*field).to_owned(), v.clone());
            }
        }
        self.status("working", false, Some(metadata))
    }

    fn tool_call(&self, event_type: &str, event: &Value) -> Frame {
        let mut metadata = Map::new();
        metadata.insert("agno_event_type".into(), json!(event_type));
        if let Some(tool) = event.get("tool").filter(|t| t.is_object()) {
            let name = tool.get("tool_name").and_then(Value::as_str).unwrap_or("tool");
            metadata.insert("tool_name".into(), json!(name));
            if let Some(id) = tool.get("tool_call_id").and_then(Value::as_str) {
                metadata.insert("tool_call_id".into(), json!(id));
            }
            if let Some(args) = tool.get("tool_args").filter(|a| a.as_object().is_some_and(|m| !m.is_empty())) {
                metadata.insert("tool_args".into(), json!(args.to_string()));
            }
        }
        self.status("working", false, Some(metadata))
    }

    /// A delta of the answer, appended to the task's one answer artifact.
    fn content_delta(&self, text: &str, first: bool) -> Frame {
        let update = json!({
            "append": !first,
            "artifact": {
                "artifactId": self.artifact_id,
                "metadata": {"agno_content_category": "content"},
                "name": "response",
                "parts": [text_part(text)],
            },
            "contextId": self.context_id,
            "kind": "artifact-update",
            "lastChunk": false,
            "taskId": self.task_id,
        });
        self.frame("TaskArtifactUpdateEvent", update)
    }

    /// A reasoning step: a `working` status update whose message is the step.
    fn reasoning(&self, text: &str) -> Frame {
        let mut metadata = Map::new();
        metadata.insert("agno_content_category".into(), json!("reasoning"));
        metadata.insert("agno_event_type".into(), json!("reasoning_step"));
        let message = agent_message(
            &agno_core::new_id(),
            vec![text_part(text)],
            &self.context_id,
            &self.task_id,
            Some(metadata.clone()),
        );
        let update = json!({
            "contextId": self.context_id,
            "final": false,
            "kind": "status-update",
            "metadata": metadata,
            "status": {"state": "working", "message": message},
            "taskId": self.task_id,
        });
        self.frame("TaskStatusUpdateEvent", update)
    }

    /// The frame of one event (`None` for events A2A does not carry).
    pub(super) fn event(&mut self, name: &str, event: &Value) -> Option<Frame> {
        let own = event.get("run_id").and_then(Value::as_str) == Some(self.task_id.as_str());
        match base_name(name) {
            "RunStarted" | "WorkflowStarted" | "RunContinued" => Some(self.status("working", false, None)),
            "RunContent" => {
                let text = match event.get("content") {
                    None | Some(Value::Null) => return None,
                    Some(Value::String(s)) if s.is_empty() => return None,
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                };
                let first = self.accumulated.is_empty();
                self.accumulated.push_str(&text);
                Some(self.content_delta(&text, first))
            }
            "ToolCallStarted" => Some(self.tool_call("tool_call_started", event)),
            "ToolCallCompleted" => Some(self.tool_call("tool_call_completed", event)),
            "ReasoningStarted" => Some(self.working("reasoning_started", event, &[])),
            "ReasoningCompleted" => Some(self.working("reasoning_completed", event, &[])),
            "ReasoningStep" | "ReasoningContentDelta" => {
                let text = event.get("reasoning_content").and_then(Value::as_str).filter(|s| !s.is_empty())?;
                Some(self.reasoning(text))
            }
            "MemoryUpdateStarted" => Some(self.working("memory_update_started", event, &[])),
            "MemoryUpdateCompleted" => Some(self.working("memory_update_completed", event, &[])),
            "RunCompleted" | "WorkflowCompleted" if own => {
                self.ending = Some(Ending::Completed(event.clone()));
                None
            }
            "RunCancelled" | "WorkflowCancelled" if own => {
                self.ending = Some(Ending::Cancelled(event.clone()));
                None
            }
            "RunError" | "WorkflowError" if own => {
                let error = event.get("content").or_else(|| event.get("error")).and_then(Value::as_str);
                self.ending = Some(Ending::Failed(error.unwrap_or("the run failed").to_owned()));
                None
            }
            "RunPaused" | "WorkflowPaused" if own => {
                self.ending = Some(Ending::Paused);
                None
            }
            other => WORKFLOW_EVENTS
                .iter()
                .find(|(n, _, _)| *n == other)
                .map(|(_, event_type, fields)| self.working(event_type, event, fields)),
        }
    }

    /// The last frames once the run's events ended: the media of a completed run as artifacts,
    /// then the final status update carrying the answer. `paused_run` is the stored run of a
    /// paused task (what it waits for).
    pub(super) fn finish(self, paused_run: Option<&agno_core::RunOutput>) -> Vec<Frame> {
        let ending = self.ending.as_ref();
        let mut frames = Vec::new();
        let (state, parts, mut metadata) = match ending {
            Some(Ending::Completed(event)) => {
                let text = match event.get("content") {
                    Some(Value::String(s)) if !s.is_empty() => s.clone(),
                    Some(v) if !v.is_null() && !v.is_string() => v.to_string(),
                    _ => self.accumulated.clone(),
                };
                let mut metadata = Map::new();
                if let Some(metrics) = event.get("metrics").filter(|m| !m.is_null()) {
                    metadata.insert("metrics".into(), metrics.clone());
                }
                if let Some(Value::Object(m)) = event.get("metadata") {
                    metadata.extend(m.clone());
                }
                for artifact in completed_artifacts(event) {
                    let update = json!({
                        "artifact": artifact,
                        "contextId": self.context_id,
                        "kind": "artifact-update",
                        "lastChunk": true,
                        "taskId": self.task_id,
                    });
                    frames.push(self.frame("TaskArtifactUpdateEvent", update));
                }
                let parts = if text.is_empty() { Vec::new() } else { vec![text_part(&text)] };
                ("completed", parts, metadata)
            }
            Some(Ending::Cancelled(event)) => {
                let reason = event.get("reason").and_then(Value::as_str);
                let note = reason.map_or_else(|| "Run was cancelled".to_owned(), |r| format!("Run was cancelled: {r}"));
                let mut parts = Vec::new();
                if !self.accumulated.is_empty() {
                    parts.push(text_part(&self.accumulated));
                }
                parts.push(text_part(&note));
                let mut metadata = Map::new();
                metadata.insert("agno_event_type".into(), json!("run_cancelled"));
                if let Some(reason) = event.get("reason").filter(|r| !r.is_null()) {
                    metadata.insert("reason".into(), reason.clone());
                }
                ("canceled", parts, metadata)
            }
            Some(Ending::Failed(error)) => ("failed", vec![text_part(&format!("Error: {error}"))], Map::new()),
            Some(Ending::Paused) => {
                let parts = if self.accumulated.is_empty() { Vec::new() } else { vec![text_part(&self.accumulated)] };
                (state_of(agno_core::RunStatus::Paused), parts, Map::new())
            }
            // The stream ended without its run's end (the run failed before it started).
            None => ("failed", vec![text_part("Error: the run ended without finishing")], Map::new()),
        };
        let message = match paused_run.filter(|_| matches!(ending, Some(Ending::Paused))) {
            Some(run) => waiting_for(run),
            None => agent_message(&self.message_id, parts, &self.context_id, &self.task_id, None),
        };
        let mut update = json!({
            "contextId": self.context_id,
            "final": true,
            "kind": "status-update",
            "status": {"state": state, "message": message},
            "taskId": self.task_id,
        });
        // The run's metrics ride the message only; the rest (the run's metadata) also the update.
        if let Some(metrics) = metadata.remove("metrics") {
            update["status"]["message"]["metadata"] = json!({"metrics": metrics});
        }
        if !metadata.is_empty() {
            update["metadata"] = Value::Object(metadata);
        }
        frames.push(self.frame("TaskStatusUpdateEvent", update));
        frames
    }

    /// Whether the run paused (its stored run says what it waits for).
    pub(super) fn paused(&self) -> bool {
        matches!(self.ending, Some(Ending::Paused))
    }
}

/// The media of a completed run's event with a URL, as Python names them (`image-0`, ...).
fn completed_artifacts(event: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for (field, name, mime) in
        [("images", "image", "image/*"), ("videos", "video", "video/*"), ("audio", "audio", "audio/*")]
    {
        for (i, item) in event.get(field).and_then(Value::as_array).into_iter().flatten().enumerate() {
            let parts: Vec<Value> = item
                .get("url")
                .and_then(Value::as_str)
                .map(|url| json!({"kind": "file", "file": {"uri": url, "mimeType": mime}}))
                .into_iter()
                .collect();
            out.push(json!({
                "artifactId": format!("{name}-{i}"),
                "name": item.get("name").and_then(Value::as_str).map_or_else(|| format!("{name}-{i}"), str::to_owned),
                "description": format!("{} generated during task", capitalised(name)),
                "parts": parts,
            }));
        }
    }
    out
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn data(frame: &Frame) -> (String, Value) {
        let text = String::from_utf8(frame.bytes().to_vec()).unwrap();
        let name = text.lines().next().unwrap().trim_start_matches("event: ").to_owned();
        let data = text.lines().nth(1).unwrap().trim_start_matches("data: ");
        (name, serde_json::from_str(data).unwrap())
    }

    #[test]
    fn a_completed_run_streams_its_deltas_as_one_artifact_and_ends_with_its_answer() {
        let mut t = Translator::new(json!("r1"), "run", "ctx", Version::V0_3);
        let mut frames = Vec::new();
        frames.extend(t.event("TeamRunStarted", &json!({"run_id": "run"})));
        frames.extend(t.event("TeamRunContent", &json!({"run_id": "run", "content": "Hel"})));
        frames.extend(t.event("RunContent", &json!({"run_id": "member", "content": "lo"})));
        frames.extend(t.event("ToolCallStarted", &json!({"tool": {"tool_name": "add", "tool_args": {"a": 1}}})));
        frames.extend(t.event("RunCompleted", &json!({"run_id": "member", "content": "member answer"})));
        frames.extend(t.event("LoopIterationStarted", &json!({"step_name": "l", "iteration": 1})));
        frames.extend(t.event("ReasoningContentDelta", &json!({"reasoning_content": "think"})));
        frames.extend(t.event("TeamRunCompleted", &json!({"run_id": "run", "content": "Hello", "metrics": {"a": 1}})));
        frames.extend(t.finish(None));
        let frames: Vec<(String, Value)> = frames.iter().map(data).collect();
        let kinds: Vec<&str> = frames.iter().map(|(_, d)| d["result"]["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "status-update",
                "artifact-update",
                "artifact-update",
                "status-update",
                "status-update",
                "status-update",
                "status-update"
            ]
        );
        assert_eq!(frames[0].1["result"]["taskId"], "run");
        assert_eq!(frames[0].1["id"], "r1");
        let (first, second) = (&frames[1].1["result"], &frames[2].1["result"]);
        assert_eq!((first["append"].as_bool(), second["append"].as_bool()), (Some(false), Some(true)));
        assert_eq!(first["artifact"]["artifactId"], second["artifact"]["artifactId"]);
        assert_eq!(first["artifact"]["parts"][0]["text"], "Hel");
        assert_eq!(frames[3].1["result"]["metadata"]["tool_args"], "{\"a\":1}");
        assert_eq!(frames[4].1["result"]["metadata"]["iteration"], 1);
        assert_eq!(frames[5].1["result"]["status"]["message"]["parts"][0]["text"], "think");
        let last = &frames[6].1["result"];
        assert_eq!((last["final"].as_bool(), last["status"]["state"].as_str()), (Some(true), Some("completed")));
        assert_eq!(last["status"]["message"]["parts"][0]["text"], "Hello");
        assert_eq!(last["status"]["message"]["metadata"]["metrics"]["a"], 1);
    }

    #[test]
    fn failed_cancelled_and_cut_runs_end_their_task_so() {
        let mut t = Translator::new(json!(1), "run", "ctx", Version::V0_3);
        t.event("RunError", &json!({"run_id": "run", "content": "model exploded"}));
        let frames: Vec<(String, Value)> = t.finish(None).iter().map(data).collect();
        assert_eq!(frames[0].1["result"]["status"]["state"], "failed");
        assert_eq!(frames[0].1["result"]["status"]["message"]["parts"][0]["text"], "Error: model exploded");

        let mut t = Translator::new(json!(1), "run", "ctx", Version::V0_3);
        t.event("RunContent", &json!({"run_id": "run", "content": "part"}));
        t.event("RunCancelled", &json!({"run_id": "run", "reason": "asked"}));
        let frames: Vec<(String, Value)> = t.finish(None).iter().map(data).collect();
        assert_eq!(frames[0].1["result"]["metadata"]["reason"], "asked");
        assert_eq!(frames[0].1["result"]["status"]["state"], "canceled");
        assert_eq!(frames[0].1["result"]["status"]["message"]["parts"][1]["text"], "Run was cancelled: asked");

        let frames: Vec<(String, Value)> =
            Translator::new(json!(1), "run", "ctx", Version::V0_3).finish(None).iter().map(data).collect();
        assert_eq!(frames[0].1["result"]["status"]["state"], "failed");
    }
}
