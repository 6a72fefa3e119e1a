//! Ollama's native chat API on the fake server: `POST /api/chat`, as documented at
//! <https://github.com/ollama/ollama/blob/main/docs/api.md#generate-a-chat-completion>:
//! `messages` of roles `system`, `user`, `assistant`, `tool` (with `images` as base64,
//! `tool_calls` whose `arguments` are objects, `tool_name` on results), `tools`, `format`,
//! `options`, `keep_alive`, `think`; `stream` defaults to true and streams NDJSON (one response
//! object per line, the last `done: true` with `done_reason`, `prompt_eval_count`,
//! `eval_count`); errors are `{"error": "..."}` (404 `model "x" not found, try pulling it
//! first`).

use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::script::{Completion, EchoContext};
use crate::wire::{TEXT_PIECE_CHARS, Wire, json_answer, json_error, maybe_cut, split_chars, stream_response};

/// Path of the chat endpoint.
pub(crate) const CHAT_PATH: &str = "/api/chat";

/// The native chat wire format.
#[derive(Debug, Default)]
pub(crate) struct Chat;

impl Wire for Chat {
    fn validate(&self, _headers: &HeaderMap, body: &Value) -> Result<(), (u16, String)> {
        let bad = |m: String| (400, m);
        let Some(model) = body.get("model").and_then(Value::as_str) else {
            return Err(bad("model is required".into()));
        };
        if model.starts_with("missing") {
            return Err((404, format!("model \"{model}\" not found, try pulling it first")));
        }
        let Some(messages) = body.get("messages").and_then(Value::as_array) else {
            return Err(bad("messages is required".into()));
        };
        for (i, m) in messages.iter().enumerate() {
            let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
            if !matches!(role, "system" | "user" | "assistant" | "tool") {
                return Err(bad(format!("invalid role {role:?} in messages[{i}]")));
            }
            if m.get("content").is_some_and(|c| !c.is_string()) {
                return Err(bad(format!(
                    "json: cannot unmarshal {} into Go struct field Message.messages.content of type string",
                    m["content"]
                )));
            }
            for call in m.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                if !call.pointer("/function/arguments").is_some_and(Value::is_object) {
                    return Err(bad(format!(
                        "json: cannot unmarshal into Go struct field ToolCallFunction.messages.tool_calls.function.arguments of type api.ToolCallFunctionArguments (messages[{i}])"
                    )));
                }
            }
            if m.get("images").is_some_and(|imgs| !imgs.as_array().is_some_and(|a| a.iter().all(Value::is_string))) {
                return Err(bad(format!("messages[{i}].images must be base64 strings")));
            }
        }
        if let Some(format) =
            body.get("format").filter(|f| !(f.is_object() || f.as_str().is_some_and(|s| s == "json" || s.is_empty())))
        {
            return Err(bad(format!("invalid format: {format}")));
        }
        Ok(())
    }

    fn echo_context(&self, body: &Value) -> EchoContext {
        let messages = body.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let role = |m: &Value| m.get("role").and_then(Value::as_str).map(str::to_owned);
        let last_user_text = messages
            .iter()
            .rev()
            .find(|m| role(m).as_deref() == Some("user"))
            .and_then(|m| m.get("content").and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned();
        let tool_to_call = (messages.last().and_then(role).as_deref() == Some("user"))
            .then(|| body.pointer("/tools/0/function/name").and_then(Value::as_str).map(str::to_owned))
            .flatten();
        EchoContext { last_user_text, tool_to_call }
    }

    fn is_stream(&self, body: &Value) -> bool {
        body.get("stream").and_then(Value::as_bool) != Some(false)
    }

    fn error(&self, status: u16, message: &str) -> Response {
        json_error(status, json!({"error": message}))
    }

    fn completion(&self, _n: u64, body: &Value, completion: &Completion, stream: bool) -> Response {
        let model = body.get("model").cloned().unwrap_or(Value::Null);
        let created = "2026-12-01T12:00:00.000000Z";
        let prompt_chars: usize = body
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|m| m.get("content").and_then(Value::as_str).map_or(0, |c| c.chars().count()))
            .sum();
        let (input, output) = crate::wire::token_counts(prompt_chars, completion);
        let calls: Vec<Value> = completion
            .calls
            .iter()
            .map(|(name, args)| {
                let args = serde_json::from_str::<Value>(args).ok().filter(Value::is_object).unwrap_or(json!({}));
                json!({"function": {"name": name, "arguments": args}})
            })
            .collect();
        let last = |message: Value| {
            json!({
                "model": model, "created_at": created, "message": message, "done": true, "done_reason": "stop",
                "total_duration": 1_000_000, "load_duration": 1000, "prompt_eval_count": input,
                "prompt_eval_duration": 1000, "eval_count": output, "eval_duration": 1000,
            })
        };
        if !stream {
            let mut message = json!({"role": "assistant", "content": completion.content.clone().unwrap_or_default()});
            if let Some(r) = &completion.reasoning {
                message["thinking"] = json!(r);
            }
            if !calls.is_empty() {
                message["tool_calls"] = Value::Array(calls);
            }
            return json_answer(&last(message), completion.cut);
        }
        let line = |message: Value| {
            format!("{}\n", json!({"model": model, "created_at": created, "message": message, "done": false}))
        };
        let mut lines = Vec::new();
        if let Some(r) = &completion.reasoning {
            lines.extend(
                split_chars(r, TEXT_PIECE_CHARS)
                    .into_iter()
                    .map(|p| line(json!({"role": "assistant", "content": "", "thinking": p}))),
            );
        }
        if let Some(t) = &completion.content {
            lines.extend(
                split_chars(t, TEXT_PIECE_CHARS).into_iter().map(|p| line(json!({"role": "assistant", "content": p}))),
            );
        }
        if !calls.is_empty() {
            lines.push(line(json!({"role": "assistant", "content": "", "tool_calls": calls})));
        }
        lines.push(format!("{}\n", last(json!({"role": "assistant", "content": ""}))));
        stream_response("application/x-ndjson", maybe_cut(lines, completion.cut))
    }

    fn garbage(&self, raw: &str, stream: bool) -> Response {
        let body = if stream { format!("{raw}\n") } else { raw.to_owned() };
        ([(axum::http::header::CONTENT_TYPE, if stream { "application/x-ndjson" } else { "application/json" })], body)
            .into_response()
    }
}
