//! The stream of a team run: the leader's events named as Agno's `TeamRunEvent`s, and the
//! members' own events.

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::event::RunEvent;

/// One item of a team run's stream, numbered in one `event_index` sequence.
#[derive(Debug, Clone, PartialEq)]
pub enum TeamStreamEvent {
    /// A leader event. It serializes as Agno's team event: `TeamRunStarted`, `TeamRunContent`,
    /// `TeamToolCallStarted`, ... (`CustomEvent` keeps its name), with `team_id` and `team_name`.
    Team(Box<RunEvent>),
    /// A member's own event (its `parent_run_id` is the team run).
    Member(Box<RunEvent>),
}

impl TeamStreamEvent {
    /// Agno's name for the event (`TeamRunContent`, or a member's `RunContent`).
    pub fn name(&self) -> String {
        match self {
            TeamStreamEvent::Team(e) => team_name(e.name()),
            TeamStreamEvent::Member(e) => e.name().to_owned(),
        }
    }

    /// The event's position in the team run's stream.
    pub fn event_index(&self) -> Option<u64> {
        match self {
            TeamStreamEvent::Team(e) | TeamStreamEvent::Member(e) => e.event_index,
        }
    }

    /// The event as it was emitted.
    pub fn inner(&self) -> &RunEvent {
        match self {
            TeamStreamEvent::Team(e) | TeamStreamEvent::Member(e) => e,
        }
    }

    /// True for the leader's terminal events (the end of the team run's stream).
    pub fn is_terminal(&self) -> bool {
        matches!(self, TeamStreamEvent::Team(e) if e.data.is_terminal())
    }
}

/// `TeamRunStarted` for `RunStarted`; `CustomEvent` is not prefixed.
fn team_name(name: &str) -> String {
    if name == "CustomEvent" { name.to_owned() } else { format!("Team{name}") }
}

/// Agno's team name of a leader event (`TeamRunStarted` for `RunStarted`, ...), as a static
/// string.
pub(crate) fn team_event_name(event: &RunEvent) -> &'static str {
    match event.name() {
        "RunStarted" => "TeamRunStarted",
        "RunContent" => "TeamRunContent",
        "RunIntermediateContent" => "TeamRunIntermediateContent",
        "RunContentCompleted" => "TeamRunContentCompleted",
        "RunCompleted" => "TeamRunCompleted",
        "RunPaused" => "TeamRunPaused",
        "RunContinued" => "TeamRunContinued",
        "RunError" => "TeamRunError",
        "RunCancelled" => "TeamRunCancelled",
        "PreHookStarted" => "TeamPreHookStarted",
        "PreHookCompleted" => "TeamPreHookCompleted",
        "PostHookStarted" => "TeamPostHookStarted",
        "PostHookCompleted" => "TeamPostHookCompleted",
        "ToolCallStarted" => "TeamToolCallStarted",
        "ToolCallCompleted" => "TeamToolCallCompleted",
        "ToolCallError" => "TeamToolCallError",
        "ModelRequestStarted" => "TeamModelRequestStarted",
        "ModelRequestCompleted" => "TeamModelRequestCompleted",
        "TaskIterationStarted" => "TeamTaskIterationStarted",
        "TaskIterationCompleted" => "TeamTaskIterationCompleted",
        "TaskStateUpdated" => "TeamTaskStateUpdated",
        "TaskCreated" => "TeamTaskCreated",
        "TaskUpdated" => "TeamTaskUpdated",
        other => other,
    }
}

/// A leader event as Agno's team event JSON: the team name, `team_id`/`team_name` for the
/// agent's.
pub(crate) fn team_event_value(e: &RunEvent) -> Result<Value, serde_json::Error> {
    let mut value = serde_json::to_value(e)?;
    if let Value::Object(map) = &mut value {
        map.insert("event".to_owned(), Value::String(team_name(e.name())));
        let id = map.remove("agent_id").unwrap_or(Value::Null);
        let name = map.remove("agent_name").unwrap_or(Value::Null);
        map.insert("team_id".to_owned(), id);
        map.insert("team_name".to_owned(), name);
        // Agno's team content events have no `workflow_agent` flag, and no state when the session
        // has none.
        map.remove("workflow_agent");
        if map.get("session_state").and_then(Value::as_object).is_some_and(serde_json::Map::is_empty) {
            map.remove("session_state");
        }
    }
    Ok(value)
}

/// Reads a leader event back from Agno's team event JSON.
pub(crate) fn team_event_from_value(mut value: Value) -> Result<RunEvent, serde_json::Error> {
    if let Value::Object(map) = &mut value {
        let name = map.get("event").and_then(Value::as_str).map(|n| n.strip_prefix("Team").unwrap_or(n).to_owned());
        match name {
            Some(name) => map.insert("event".to_owned(), Value::String(name)),
            None => None,
        };
        let id = map.remove("team_id").unwrap_or(Value::Null);
        let team = map.remove("team_name").unwrap_or(Value::Null);
        map.insert("agent_id".to_owned(), id);
        map.insert("agent_name".to_owned(), team);
    }
    serde_json::from_value(value)
}

impl Serialize for TeamStreamEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            TeamStreamEvent::Member(e) => e.serialize(serializer),
            TeamStreamEvent::Team(e) => team_event_value(e).map_err(serde::ser::Error::custom)?.serialize(serializer),
        }
    }
}
