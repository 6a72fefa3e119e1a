//! A run's events (of an agent or a team, read as the JSON Agno streams) as AG-UI events, as
//! Python AgentOS 3.1.10's AG-UI interface maps them (`agui/handlers.py`): text deltas inside one
//! open `TEXT_MESSAGE_START` .. `END`, each tool call as `TOOL_CALL_START` / `ARGS` / `END` (and
//! `RESULT` once it ran) under the assistant message that asked for it, reasoning as
//! `REASONING_*`, every other Agno event as `RAW`, and at the end `RUN_FINISHED` (a paused run's
//! waiting tool calls first, then the final state) or `RUN_ERROR`. Nothing follows the terminal
//! event, and no span is left open before it.

use serde_json::{Map, Value, json};

/// The AG-UI event stream of one run.
#[derive(Debug)]
pub(super) struct Translator {
    /// AG-UI's ids of the run (the client's).
    thread_id: String,
    run_id: String,
    /// The Agno run whose terminal event ends the stream (a member's does not).
    agno_run_id: String,
    text_message: Option<String>,
    tool_parent: Option<String>,
    open_tools: Vec<String>,
    reasoning: Option<String>,
    /// The session state as the client last saw it: the state it sent, then as each
    /// `STATE_DELTA` changed it (none when it sent none: no deltas, no final snapshot).
    client_state: Option<Value>,
    terminal: Option<(String, Value)>,
}

fn base_name(name: &str) -> &str {
    name.strip_prefix("Team").unwrap_or(name)
}

impl Translator {
    /// The translator of the Agno run `agno_run_id`, answering the client's `run_id` in
    /// `thread_id`.
    pub(super) fn new(thread_id: &str, run_id: &str, agno_run_id: &str, state: Option<&Map<String, Value>>) -> Self {
        Self {
            thread_id: thread_id.to_owned(),
            run_id: run_id.to_owned(),
            agno_run_id: agno_run_id.to_owned(),
            text_message: None,
            tool_parent: None,
            open_tools: Vec::new(),
            reasoning: None,
            client_state: state.map(|s| Value::Object(s.clone())),
            terminal: None,
        }
    }

    /// `RUN_STARTED`, and the client's state as the first snapshot.
    pub(super) fn started(&self, state: Option<&Map<String, Value>>) -> Vec<Value> {
        let mut out = vec![json!({"type": "RUN_STARTED", "threadId": self.thread_id, "runId": self.run_id})];
        if let Some(state) = state {
            out.push(json!({"type": "STATE_SNAPSHOT", "snapshot": state}));
        }
        out
    }

    /// `RUN_ERROR` naming `message`: the end of a run refused before it started.
    pub(super) fn refused(message: &str) -> Value {
        json!({"type": "RUN_ERROR", "message": message})
    }

    fn close_text(&mut self, out: &mut Vec<Value>) {
        if let Some(id) = self.text_message.take() {
            out.push(json!({"type": "TEXT_MESSAGE_END", "messageId": id}));
        }
    }

    fn close_reasoning(&mut self, out: &mut Vec<Value>) {
        if let Some(id) = self.reasoning.take() {
            out.push(json!({"type": "REASONING_MESSAGE_END", "messageId": id}));
            out.push(json!({"type": "REASONING_END", "messageId": id}));
        }
    }

    fn close_all(&mut self, out: &mut Vec<Value>) {
        self.close_reasoning(out);
        for id in std::mem::take(&mut self.open_tools) {
            out.push(json!({"type": "TOOL_CALL_END", "toolCallId": id}));
        }
        self.close_text(out);
    }

    fn open_reasoning(&mut self, out: &mut Vec<Value>) -> String {
        if let Some(id) = &self.reasoning {
            return id.clone();
        }
        self.close_text(out);
        let id = agno_core::new_id();
        out.push(json!({"type": "REASONING_START", "messageId": id}));
        out.push(json!({"type": "REASONING_MESSAGE_START", "messageId": id, "role": "reasoning"}));
        self.reasoning = Some(id.clone());
        id
    }

    /// The tool calls `tools` under a new assistant message (a paused run's waiting calls).
    fn waiting_calls(&self, tools: &[&Value], content: Option<&str>, out: &mut Vec<Value>) {
        let id = agno_core::new_id();
        out.push(json!({"type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant"}));
        if let Some(content) = content.filter(|c| !c.is_empty()) {
            out.push(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": content}));
        }
        out.push(json!({"type": "TEXT_MESSAGE_END", "messageId": id}));
        for tool in tools {
            let (Some(call), Some(name)) =
                (tool.get("tool_call_id").and_then(Value::as_str), tool.get("tool_name").and_then(Value::as_str))
            else {
                continue;
            };
            out.push(
                json!({"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": name, "parentMessageId": id}),
            );
            out.push(json!({"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": args_text(tool)}));
            out.push(json!({"type": "TOOL_CALL_END", "toolCallId": call}));
        }
    }

    /// The AG-UI events of one Agno event.
    pub(super) fn event(&mut self, name: &str, event: &Value) -> Vec<Value> {
        let mut out = Vec::new();
        let own = event.get("run_id").and_then(Value::as_str) == Some(self.agno_run_id.as_str());
        match base_name(name) {
            "RunCompleted" | "RunError" | "RunPaused" | "RunCancelled" if own => {
                self.terminal = Some((base_name(name).to_owned(), event.clone()));
            }
            "RunContent" => {
                let text = match event.get("content") {
                    Some(Value::String(s)) => s.clone(),
                    None | Some(Value::Null) => String::new(),
                    Some(other) => other.to_string(),
                };
                self.close_reasoning(&mut out);
                let id = match &self.text_message {
                    Some(id) => id.clone(),
                    None => {
                        let id = agno_core::new_id();
                        self.tool_parent = None;
                        out.push(json!({"type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant"}));
                        self.text_message = Some(id.clone());
                        id
                    }
                };
                if !text.is_empty() {
                    out.push(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": text}));
                }
            }
            "ToolCallStarted" => {
                let Some(tool) = event.get("tool").filter(|t| t.is_object()) else { return out };
                let Some(call) = tool.get("tool_call_id").and_then(Value::as_str) else { return out };
                self.close_reasoning(&mut out);
                if let Some(id) = self.text_message.take() {
                    out.push(json!({"type": "TEXT_MESSAGE_END", "messageId": id}));
                    self.tool_parent = Some(id);
                }
                let parent = match &self.tool_parent {
                    Some(parent) => parent.clone(),
                    None => {
                        let id = agno_core::new_id();
                        out.push(json!({"type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant"}));
                        out.push(json!({"type": "TEXT_MESSAGE_END", "messageId": id}));
                        self.tool_parent = Some(id.clone());
                        id
                    }
                };
                let name = tool.get("tool_name").and_then(Value::as_str).unwrap_or("tool");
                out.push(json!({"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": name, "parentMessageId": parent}));
                out.push(json!({"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": args_text(tool)}));
                self.open_tools.push(call.to_owned());
            }
            "ToolCallCompleted" => {
                let Some(tool) = event.get("tool").filter(|t| t.is_object()) else { return out };
                let Some(call) = tool.get("tool_call_id").and_then(Value::as_str) else { return out };
                let Some(at) = self.open_tools.iter().position(|t| t == call) else { return out };
                self.open_tools.remove(at);
                out.push(json!({"type": "TOOL_CALL_END", "toolCallId": call}));
                if let Some(result) = tool.get("result").filter(|r| !r.is_null()) {
                    let content = result.as_str().map_or_else(|| result.to_string(), str::to_owned);
                    out.push(json!({"type": "TOOL_CALL_RESULT", "messageId": call, "toolCallId": call, "content": content, "role": "tool"}));
                }
                // The state the call left (agno-rs reports it on the completion when the client
                // follows the state), as the patch from what the client saw last.
                if let (Some(seen), Some(now)) =
                    (self.client_state.as_mut(), event.get("session_state").filter(|s| s.is_object()))
                {
                    let delta = super::patch::diff(seen, now);
                    if !delta.is_empty() {
                        out.push(json!({"type": "STATE_DELTA", "delta": delta}));
                        *seen = now.clone();
                    }
                }
            }
            "ReasoningStarted" => {
                self.open_reasoning(&mut out);
            }
            "ReasoningContentDelta" | "ReasoningStep" => {
                let text = event.get("reasoning_content").and_then(Value::as_str).unwrap_or_default().to_owned();
                let id = self.open_reasoning(&mut out);
                if !text.is_empty() {
                    out.push(json!({"type": "REASONING_MESSAGE_CONTENT", "messageId": id, "delta": text}));
                }
            }
            "ReasoningCompleted" => self.close_reasoning(&mut out),
            _ => out.push(json!({"type": "RAW", "event": event, "source": "agno"})),
        }
        out
    }

    /// The last events once the run's events ended: `RUN_ERROR`, or the paused run's waiting
    /// calls, the final state and `RUN_FINISHED`.
    pub(super) fn finish(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        self.close_all(&mut out);
        let Some((name, event)) = self.terminal.take() else {
            out.push(Self::refused("the run ended without finishing"));
            return out;
        };
        if name == "RunError" {
            let message =
                event.get("content").and_then(Value::as_str).filter(|m| !m.is_empty()).unwrap_or("Run failed");
            let mut error = json!({"type": "RUN_ERROR", "message": message, "rawEvent": event});
            if let Some(code) = event.get("error_type").filter(|c| c.is_string()) {
                error["code"] = code.clone();
            }
            out.push(error);
            return out;
        }
        if name == "RunPaused" {
            let waiting: Vec<&Value> = event
                .get("requirements")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|r| !requirement_resolved(r))
                .filter_map(|r| r.get("tool_execution"))
                .collect();
            let content = event.get("content").and_then(Value::as_str);
            self.waiting_calls(&waiting, content, &mut out);
        }
        // The final state: the run's own when its end carries it, else the state as the
        // client's deltas left it (as Agno falls back to the state it tracked).
        if let Some(seen) = &self.client_state {
            let state = event.get("session_state").filter(|s| s.is_object()).unwrap_or(seen);
            out.push(json!({"type": "STATE_SNAPSHOT", "snapshot": state}));
        }
        out.push(json!({"type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self.run_id}));
        out
    }
}

/// A tool call's arguments as the JSON text AG-UI streams (`{}` without any).
fn args_text(tool: &Value) -> String {
    match tool.get("tool_args") {
        Some(args) if !args.is_null() => args.to_string(),
        _ => "{}".to_owned(),
    }
}

/// Whether a requirement (as a paused event carries it) is answered already.
fn requirement_resolved(requirement: &Value) -> bool {
    serde_json::from_value::<agno_core::RunRequirement>(requirement.clone()).is_ok_and(|r| r.is_resolved())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn types(events: &[Value]) -> Vec<&str> {
        events.iter().map(|e| e["type"].as_str().unwrap()).collect()
    }

    #[test]
    fn a_tool_call_between_two_texts_keeps_every_span_closed() {
        let mut t = Translator::new("th", "r", "agno", None);
        let mut all = t.started(None);
        all.extend(t.event("RunStarted", &json!({"run_id": "agno"})));
        all.extend(t.event("RunContent", &json!({"run_id": "agno", "content": "Let me add"})));
        let tool = json!({"tool_call_id": "c1", "tool_name": "add", "tool_args": {"a": 1}, "result": "3"});
        all.extend(t.event("ToolCallStarted", &json!({"run_id": "agno", "tool": tool})));
        all.extend(t.event("ToolCallCompleted", &json!({"run_id": "agno", "tool": tool})));
        all.extend(t.event("RunContent", &json!({"run_id": "agno", "content": "It is 3"})));
        all.extend(t.event("RunCompleted", &json!({"run_id": "member"})));
        all.extend(t.event("RunCompleted", &json!({"run_id": "agno", "content": "It is 3"})));
        all.extend(t.finish());
        assert_eq!(
            types(&all),
            [
                "RUN_STARTED",
                "RAW",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "TOOL_CALL_START",
                "TOOL_CALL_ARGS",
                "TOOL_CALL_END",
                "TOOL_CALL_RESULT",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "RAW",
                "TEXT_MESSAGE_END",
                "RUN_FINISHED"
            ]
        );
        assert_eq!(all[5]["parentMessageId"], all[2]["messageId"]);
        assert_eq!(all[6]["delta"], "{\"a\":1}");
        assert_eq!((all[13]["threadId"].as_str(), all[13]["runId"].as_str()), (Some("th"), Some("r")));
    }

    #[test]
    fn a_paused_run_shows_its_waiting_calls_and_a_failed_one_ends_in_run_error() {
        let mut t = Translator::new("th", "r", "agno", Some(&Map::new()));
        let waiting = json!({"id": "q", "tool_execution": {"tool_call_id": "c9", "tool_name": "add", "tool_args": {}, "requires_confirmation": true}});
        t.event("RunPaused", &json!({"run_id": "agno", "requirements": [waiting], "session_state": {"n": 1}}));
        let end = t.finish();
        assert_eq!(
            types(&end),
            [
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_END",
                "TOOL_CALL_START",
                "TOOL_CALL_ARGS",
                "TOOL_CALL_END",
                "STATE_SNAPSHOT",
                "RUN_FINISHED"
            ]
        );
        assert_eq!(end[2]["toolCallId"], "c9");

        let mut t = Translator::new("th", "r", "agno", None);
        t.event("RunContent", &json!({"run_id": "agno", "content": "half"}));
        t.event("RunError", &json!({"run_id": "agno", "content": "boom", "error_type": "model_error"}));
        let end = t.finish();
        assert_eq!(types(&end), ["TEXT_MESSAGE_END", "RUN_ERROR"]);
        assert_eq!((end[1]["message"].as_str(), end[1]["code"].as_str()), (Some("boom"), Some("model_error")));
        assert_eq!(types(&Translator::new("th", "r", "agno", None).finish()), ["RUN_ERROR"]);
    }

    #[test]
    fn a_tool_call_that_changes_the_state_is_followed_by_its_delta() {
        let sent = json!({"theme": "dark", "n": 1});
        let mut t = Translator::new("th", "r", "agno", sent.as_object());
        let tool = json!({"tool_call_id": "c1", "tool_name": "set_theme", "tool_args": {}});
        t.event("ToolCallStarted", &json!({"run_id": "agno", "tool": tool}));
        let mut done = tool.clone();
        done["result"] = json!("ok");
        let changed = json!({"run_id": "agno", "tool": done, "session_state": {"theme": "light", "n": 1}});
        let out = t.event("ToolCallCompleted", &changed);
        assert_eq!(types(&out), ["TOOL_CALL_END", "TOOL_CALL_RESULT", "STATE_DELTA"]);
        assert_eq!(out[2]["delta"], json!([{"op": "replace", "path": "/theme", "value": "light"}]));
        // A completion without a state (the call changed nothing) says nothing of it.
        t.event("ToolCallStarted", &json!({"run_id": "agno", "tool": {"tool_call_id": "c2", "tool_name": "x"}}));
        let out =
            t.event("ToolCallCompleted", &json!({"run_id": "agno", "tool": {"tool_call_id": "c2", "result": "1"}}));
        assert_eq!(types(&out), ["TOOL_CALL_END", "TOOL_CALL_RESULT"]);
        // Without a state from the client, no deltas.
        let mut t = Translator::new("th", "r", "agno", None);
        t.event("ToolCallStarted", &json!({"run_id": "agno", "tool": tool}));
        assert_eq!(types(&t.event("ToolCallCompleted", &changed)), ["TOOL_CALL_END", "TOOL_CALL_RESULT"]);
    }
}
