//! Checkpoints of a run: the message boundaries a client may continue a run from, derived from
//! the stored run alone (no table), as Agno 3.1 derives them (`agno/os/checkpoints.py`): the
//! run's last checkpoint (`last_checkpoint_at_message_index`), every message marked with a
//! `checkpoint_status` (a model turn persisted with `checkpoint = "tool-batch"`), and the end of
//! its transcript.

use serde_json::{Map, Value, json};

use crate::{Message, RunOutput};

/// The run field holding the message count at its last checkpoint.
pub const LAST_CHECKPOINT_FIELD: &str = "last_checkpoint_at_message_index";
/// The message field holding the run's status when the message was checkpointed.
pub const CHECKPOINT_STATUS_FIELD: &str = "checkpoint_status";
/// The message field holding when it was checkpointed (epoch seconds).
pub const CHECKPOINT_CREATED_AT_FIELD: &str = "checkpoint_created_at";

impl RunOutput {
    /// How many messages the run had at its last checkpoint, if it has one.
    pub fn last_checkpoint(&self) -> Option<usize> {
        self.extra.get(LAST_CHECKPOINT_FIELD).and_then(Value::as_u64).and_then(|n| usize::try_from(n).ok())
    }

    /// Records a checkpoint at `message_count` messages.
    pub fn set_last_checkpoint(&mut self, message_count: usize) {
        self.extra.insert(LAST_CHECKPOINT_FIELD.to_owned(), json!(message_count));
    }
}

impl Message {
    /// The run's status when this message was checkpointed (`RUNNING`, ...), if it was.
    pub fn checkpoint_status(&self) -> Option<&str> {
        self.extra.get(CHECKPOINT_STATUS_FIELD).and_then(Value::as_str)
    }

    /// Marks this message as a checkpoint of a run in `status`, at `at` (epoch seconds).
    pub fn mark_checkpoint(&mut self, status: &str, at: i64) {
        self.extra.insert(CHECKPOINT_STATUS_FIELD.to_owned(), json!(status));
        self.extra.insert(CHECKPOINT_CREATED_AT_FIELD.to_owned(), json!(at));
    }
}

/// Why a boundary is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reason {
    Checkpoint,
    End,
    Snapshot,
}

impl Reason {
    fn as_str(self) -> &'static str {
        match self {
            Reason::Checkpoint => "checkpoint",
            Reason::End => "end",
            Reason::Snapshot => "snapshot",
        }
    }
}

/// A message's content for a listing: one line, at most 120 characters (`...` when cut).
fn preview(content: &Value) -> String {
    let text = match content {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let line = text.replace('\n', " ");
    let line = line.trim();
    if line.chars().count() <= 120 {
        return line.to_owned();
    }
    let cut: String = line.chars().take(119).collect();
    format!("{cut}...")
}

/// The entry of the boundary after `index` messages (1-based: the message it ends at).
fn entry(run: &RunOutput, messages: &[Message], index: usize, reason: Reason) -> Map<String, Value> {
    let message = index.checked_sub(1).and_then(|i| messages.get(i));
    let status =
        message.and_then(Message::checkpoint_status).map_or_else(|| run.status.as_str().to_owned(), str::to_owned);
    let created_at = message
        .and_then(|m| m.extra.get(CHECKPOINT_CREATED_AT_FIELD).cloned())
        .filter(|v| !v.is_null())
        .unwrap_or_else(|| json!(run.created_at));
    let fields = json!({
        "checkpoint_id": null,
        "run_id": run.run_id,
        "session_id": run.session_id,
        "message_index": index,
        "continue_from": index,
        "status": status,
        "reason": reason.as_str(),
        "created_at": created_at,
        "message_id": message.map(|m| m.id.clone()),
        "message_role": message.map(|m| m.role),
        "message_preview": message.and_then(|m| m.content.as_ref()).map(preview),
        "is_latest": index == messages.len(),
    });
    match fields {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The run's checkpoints, in message order, numbered `"1"`, `"2"`, ... for display (Agno's
/// `list_run_checkpoints`; `message_index` is what a continue takes as `continue_from`).
pub fn run_checkpoints(run: &RunOutput) -> Vec<Map<String, Value>> {
    let messages = run.messages();
    let mut at: std::collections::BTreeMap<usize, Map<String, Value>> = std::collections::BTreeMap::new();
    if let Some(last) = run.last_checkpoint().filter(|i| *i <= messages.len()) {
        at.insert(last, entry(run, messages, last, Reason::Checkpoint));
    }
    for (i, m) in messages.iter().enumerate() {
        if m.checkpoint_status().is_some() {
            at.insert(i + 1, entry(run, messages, i + 1, Reason::Checkpoint));
        }
    }
    if !messages.is_empty() {
        at.insert(messages.len(), entry(run, messages, messages.len(), Reason::End));
    }
    let mut list: Vec<Map<String, Value>> = at.into_values().collect();
    for (n, e) in list.iter_mut().enumerate() {
        e.insert("checkpoint_id".to_owned(), json!((n + 1).to_string()));
    }
    list
}

/// The largest boundary at or before `index` that splits no tool exchange: every tool call kept
/// has its result kept (Agno's `safe_truncation_index`).
pub fn safe_truncation_index(messages: &[Message], index: usize) -> usize {
    if index == 0 || index >= messages.len() {
        return index;
    }
    let answered: std::collections::HashMap<&str, usize> =
        messages.iter().enumerate().filter_map(|(i, m)| Some((m.tool_call_id.as_deref()?, i))).collect();
    for (i, m) in messages[..index].iter().enumerate() {
        for call in m.tool_calls.iter().flatten() {
            if call.id.is_empty() {
                continue;
            }
            if answered.get(call.id.as_str()).is_none_or(|at| *at >= index) {
                return i;
            }
        }
    }
    index
}

/// Keeps the first `count` messages of `run` (a boundary [`safe_truncation_index`] gave), with
/// the tools and requirements those messages name, and records the cut as its last checkpoint:
/// what a snapshot shows and what a continue from a boundary goes on from.
pub(crate) fn keep_messages(run: &mut RunOutput, count: usize) {
    let kept: Vec<Message> = run.messages().iter().take(count).cloned().collect();
    let ids: std::collections::HashSet<&str> = kept
        .iter()
        .flat_map(|m| m.tool_call_id.as_deref().into_iter().chain(m.tool_calls.iter().flatten().map(|c| c.id.as_str())))
        .collect();
    let named = |id: Option<&str>| id.is_some_and(|id| ids.contains(id));
    run.tools = run.tools.take().map(|t| t.into_iter().filter(|t| named(t.tool_call_id.as_deref())).collect());
    run.requirements = run.requirements.take().map(|r| r.into_iter().filter(|r| named(r.tool_call_id())).collect());
    let count = kept.len();
    run.messages = Some(kept);
    run.set_last_checkpoint(count);
}

/// Why a snapshot cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("message_index must be between 0 and {count}")]
pub struct CheckpointOutOfRange {
    /// How many messages the run has.
    pub count: usize,
}

/// The run as it stood after `index` messages (snapped down so no tool call is left without its
/// result; its tools and requirements those messages name), with the checkpoint's entry: Agno's
/// `build_run_checkpoint_snapshot`, `{"checkpoint": ..., "snapshot": ...}`.
///
/// # Errors
/// [`CheckpointOutOfRange`] for an index outside `0..=messages`.
pub fn checkpoint_snapshot(run: &RunOutput, index: i64) -> Result<Value, CheckpointOutOfRange> {
    let messages = run.messages();
    let index = usize::try_from(index)
        .ok()
        .filter(|i| *i <= messages.len())
        .ok_or(CheckpointOutOfRange { count: messages.len() })?;
    let mut snapshot = run.clone();
    keep_messages(&mut snapshot, safe_truncation_index(messages, index));
    let mut checkpoint = entry(run, messages, index, Reason::Snapshot);
    if let Some(known) = run_checkpoints(run).into_iter().find(|e| e.get("message_index") == Some(&json!(index))) {
        checkpoint.insert("checkpoint_id".to_owned(), known.get("checkpoint_id").cloned().unwrap_or(Value::Null));
    }
    Ok(json!({ "checkpoint": checkpoint, "snapshot": snapshot }))
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{FunctionCall, Role, RunStatus, ToolCall};

    fn run_with(messages: Vec<Message>) -> RunOutput {
        let mut run = RunOutput::new("r1", "s1");
        run.status = RunStatus::Completed;
        run.messages = Some(messages);
        run
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            kind: "function".into(),
            function: FunctionCall { name: "add".into(), arguments: "{}".into() },
        }
    }

    #[test]
    fn a_run_lists_its_marked_turns_and_its_end() {
        let mut turn = Message::tool_result("c1", "add", "5", false);
        turn.mark_checkpoint("RUNNING", 42);
        let long = "x\n".repeat(100);
        let mut run = run_with(vec![
            Message::user(long),
            Message::assistant("", vec![call("c1")]),
            turn,
            Message::assistant("five", vec![]),
        ]);
        run.set_last_checkpoint(3);
        let list = run_checkpoints(&run);
        let ids: Vec<_> = list.iter().map(|e| (e["checkpoint_id"].clone(), e["message_index"].clone())).collect();
        assert_eq!(ids, [(json!("1"), json!(3)), (json!("2"), json!(4))]);
        assert_eq!(list[0]["status"], "RUNNING");
        assert_eq!(list[0]["created_at"], 42);
        assert_eq!(list[0]["message_role"], "tool");
        assert_eq!(list[1]["reason"], "end");
        assert_eq!(list[1]["is_latest"], true);
        assert_eq!(list[1]["status"], "COMPLETED");
        let first = entry(&run, run.messages(), 1, Reason::Snapshot);
        assert_eq!(first["message_preview"].as_str().map(|p| p.chars().count()), Some(122));
        assert_eq!(first["message_role"], json!(Role::User));
    }

    #[test]
    fn a_snapshot_never_ends_inside_a_tool_exchange() {
        let run = run_with(vec![
            Message::user("hi"),
            Message::assistant("", vec![call("c1"), call("c2")]),
            Message::tool_result("c1", "add", "1", false),
            Message::tool_result("c2", "add", "2", false),
            Message::assistant("done", vec![]),
        ]);
        assert_eq!(safe_truncation_index(run.messages(), 3), 1, "c2's result is cut off: back to before the call");
        assert_eq!(safe_truncation_index(run.messages(), 4), 4);
        let snap = checkpoint_snapshot(&run, 3).expect("in range");
        assert_eq!(snap["snapshot"]["messages"].as_array().map(Vec::len), Some(1));
        assert_eq!(snap["snapshot"][LAST_CHECKPOINT_FIELD], 1);
        assert_eq!(snap["checkpoint"]["reason"], "snapshot");
        assert!(snap["checkpoint"]["checkpoint_id"].is_null(), "3 is no listed boundary");
        assert_eq!(checkpoint_snapshot(&run, 5).expect("the end")["checkpoint"]["checkpoint_id"], "1");
        assert_eq!(checkpoint_snapshot(&run, 6), Err(CheckpointOutOfRange { count: 5 }));
        assert_eq!(checkpoint_snapshot(&run, -1), Err(CheckpointOutOfRange { count: 5 }));
    }
}
