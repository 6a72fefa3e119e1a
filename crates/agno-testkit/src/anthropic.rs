//! Anthropic's Messages API on the fake server: `POST /v1/messages`, as documented at
//! <https://docs.anthropic.com/en/api/messages> (request and `message` object),
//! <https://docs.anthropic.com/en/docs/build-with-claude/streaming> (the SSE events
//! `message_start`, `content_block_start`, `ping`, `content_block_delta` with `text_delta` /
//! `input_json_delta` / `thinking_delta`, `content_block_stop`, `message_delta`, `message_stop`)
//! and <https://docs.anthropic.com/en/api/errors> (`{"type": "error", "error": {"type",
//! "message"}}`, 529 `overloaded_error`).
//!
//! Requests must carry `x-api-key` (or `Authorization: Bearer`) and `anthropic-version`, a `model`, an integer `max_tokens`
//! and `messages` of roles `user` / `assistant` whose `tool_use` blocks are answered by
//! `tool_result` blocks in the next message, as the API checks.

use std::collections::HashSet;

use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::script::{Completion, EchoContext};
use crate::wire::{
    ARGS_PIECE_CHARS, TEXT_PIECE_CHARS, Wire, json_answer, json_error, maybe_cut, named_event, split_chars,
    sse_response,
};

/// Path of the Messages endpoint.
pub(crate) const MESSAGES_PATH: &str = "/v1/messages";

/// The Messages wire format.
#[derive(Debug, Default)]
pub(crate) struct Messages;

fn error_type(status: u16) -> &'static str {
    match status {
        400 | 413 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

/// Text of a `content` (a string, or the `text` of its text blocks).
fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

fn blocks(message: &Value) -> Vec<Value> {
    match message.get("content") {
        Some(Value::Array(b)) => b.clone(),
        Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
        _ => Vec::new(),
    }
}

fn validate_blocks(i: usize, message: &Value) -> Result<(), String> {
    match message.get("content") {
        Some(Value::String(_)) => return Ok(()),
        Some(Value::Array(_)) => {}
        _ => return Err(format!("messages.{i}.content: Input should be a valid string or list")),
    }
    for (j, block) in blocks(message).iter().enumerate() {
        let at = format!("messages.{i}.content.{j}");
        let field = |key: &str| block.get(key).is_some();
        let ok = match block.get("type").and_then(Value::as_str) {
            Some("text") => block.get("text").is_some_and(Value::is_string),
            Some("image" | "document") => block.pointer("/source/type").is_some(),
            Some("tool_use") => field("id") && field("name") && block.get("input").is_some_and(Value::is_object),
            Some("tool_result") => field("tool_use_id"),
            Some("thinking") => field("thinking"),
            Some(other) => {
                return Err(format!(
                    "{at}.type: Input tag '{other}' found using 'type' does not match any of the expected tags"
                ));
            }
            None => false,
        };
        if !ok {
            return Err(format!("{at}: Field required"));
        }
    }
    Ok(())
}

impl Wire for Messages {
    fn validate(&self, headers: &HeaderMap, body: &Value) -> Result<(), (u16, String)> {
        // `x-api-key`, or (as the SDK of API version 2026-10-21 sends it) a bearer token.
        let bearer =
            headers.get("authorization").and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("Bearer "));
        if headers.get("x-api-key").is_none() && !bearer {
            return Err((401, "x-api-key header is required".into()));
        }
        if headers.get("anthropic-version").is_none() {
            return Err((400, "anthropic-version: header is required".into()));
        }
        let bad = |m: String| (400, m);
        if !body.get("model").is_some_and(Value::is_string) {
            return Err(bad("model: Field required".into()));
        }
        if !body.get("max_tokens").is_some_and(Value::is_u64) {
            return Err(bad("max_tokens: Field required".into()));
        }
        let Some(messages) = body.get("messages").and_then(Value::as_array).filter(|m| !m.is_empty()) else {
            return Err(bad("messages: at least one message is required".into()));
        };
        if let Some(system) = body.get("system").filter(|s| !s.is_string() && !s.is_array()) {
            return Err(bad(format!("system: Input should be a valid string or list, not {system}")));
        }
        for (i, tool) in body.get("tools").and_then(Value::as_array).into_iter().flatten().enumerate() {
            if !tool.get("name").is_some_and(Value::is_string)
                || !tool.get("input_schema").is_some_and(Value::is_object)
            {
                return Err(bad(format!("tools.{i}: name and input_schema are required")));
            }
        }
        let mut pending: Vec<String> = Vec::new();
        for (i, message) in messages.iter().enumerate() {
            let role = message.get("role").and_then(Value::as_str).unwrap_or_default();
            if !matches!(role, "user" | "assistant") {
                return Err(bad(format!("messages.{i}.role: Input should be 'user' or 'assistant'")));
            }
            validate_blocks(i, message).map_err(bad)?;
            let answered: HashSet<String> = blocks(message)
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                .filter_map(|b| b.get("tool_use_id").and_then(Value::as_str).map(str::to_owned))
                .collect();
            if !pending.is_empty() {
                let missing: Vec<&String> = pending.iter().filter(|id| !answered.contains(*id)).collect();
                if !missing.is_empty() {
                    return Err(bad(format!(
                        "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                        missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                    )));
                }
            }
            pending = blocks(message)
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
                .filter_map(|b| b.get("id").and_then(Value::as_str).map(str::to_owned))
                .collect();
        }
        if !pending.is_empty() {
            return Err(bad(format!("the last message has `tool_use` ids without results: {}", pending.join(", "))));
        }
        Ok(())
    }

    fn echo_context(&self, body: &Value) -> EchoContext {
        let messages = body.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let is_user = |m: &Value| m.get("role").and_then(Value::as_str) == Some("user");
        let last_user_text =
            messages.iter().rev().find(|m| is_user(m)).map(|m| text_of(m.get("content"))).unwrap_or_default();
        let plain_user = messages.last().is_some_and(|m| {
            is_user(m) && !blocks(m).iter().any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        });
        let tool_to_call =
            plain_user.then(|| body.pointer("/tools/0/name").and_then(Value::as_str).map(str::to_owned)).flatten();
        EchoContext { last_user_text, tool_to_call }
    }

    fn is_stream(&self, body: &Value) -> bool {
        body.get("stream").and_then(Value::as_bool) == Some(true)
    }

    fn error(&self, status: u16, message: &str) -> Response {
        json_error(status, json!({"type": "error", "error": {"type": error_type(status), "message": message}}))
    }

    fn completion(&self, n: u64, body: &Value, completion: &Completion, stream: bool) -> Response {
        let model = body.get("model").cloned().unwrap_or(Value::Null);
        let prompt_chars: usize = body
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|m| text_of(m.get("content")).chars().count())
            .sum::<usize>()
            + body.get("system").map_or(0, |s| text_of(Some(s)).chars().count());
        let (input, output) = crate::wire::token_counts(prompt_chars, completion);
        let stop_reason = if completion.filtered.is_some() {
            "refusal"
        } else if completion.calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        };
        let id = format!("msg_fake{n:04}");
        let call_id = |i: usize| format!("toolu_{n:04}_{i}");
        let mut content = Vec::new();
        if let Some(thinking) = &completion.reasoning {
            content.push(json!({"type": "thinking", "thinking": thinking, "signature": "fake-signature"}));
        }
        if let Some(text) = &completion.content {
            content.push(json!({"type": "text", "text": text}));
        }
        for (i, (name, args)) in completion.calls.iter().enumerate() {
            // The API sends `input` as an object; arguments that are not one stand as a string.
            let input =
                serde_json::from_str::<Value>(args).ok().filter(Value::is_object).unwrap_or(json!({"raw": args}));
            content.push(json!({"type": "tool_use", "id": call_id(i), "name": name, "input": input}));
        }
        if !stream {
            let message = json!({
                "id": id, "type": "message", "role": "assistant", "model": model, "content": content,
                "stop_reason": stop_reason, "stop_sequence": null,
                "usage": {"input_tokens": input, "output_tokens": output, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
            });
            return json_answer(&message, completion.cut);
        }
        let mut events = vec![named_event(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": input, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
            }}),
        )];
        events.push(named_event("ping", &json!({"type": "ping"})));
        for (index, block) in content.iter().enumerate() {
            let kind = block["type"].as_str().unwrap_or_default();
            let (start, deltas): (Value, Vec<Value>) = match kind {
                "thinking" => (
                    json!({"type": "thinking", "thinking": ""}),
                    split_chars(block["thinking"].as_str().unwrap_or_default(), TEXT_PIECE_CHARS)
                        .into_iter()
                        .map(|p| json!({"type": "thinking_delta", "thinking": p}))
                        .chain(std::iter::once(json!({"type": "signature_delta", "signature": "fake-signature"})))
                        .collect(),
                ),
                "text" => (
                    json!({"type": "text", "text": ""}),
                    split_chars(block["text"].as_str().unwrap_or_default(), TEXT_PIECE_CHARS)
                        .into_iter()
                        .map(|p| json!({"type": "text_delta", "text": p}))
                        .collect(),
                ),
                _ => {
                    let args = block["input"].to_string();
                    (
                        json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                        split_chars(&args, ARGS_PIECE_CHARS)
                            .into_iter()
                            .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                            .collect(),
                    )
                }
            };
            events.push(named_event(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index, "content_block": start}),
            ));
            for delta in deltas {
                events.push(named_event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index, "delta": delta}),
                ));
            }
            events.push(named_event("content_block_stop", &json!({"type": "content_block_stop", "index": index})));
        }
        events.push(named_event(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": output}}),
        ));
        events.push(named_event("message_stop", &json!({"type": "message_stop"})));
        sse_response(maybe_cut(events, completion.cut))
    }

    fn garbage(&self, raw: &str, stream: bool) -> Response {
        if stream {
            sse_response(vec![format!("event: content_block_delta\ndata: {raw}\n\n")])
        } else {
            ([(axum::http::header::CONTENT_TYPE, "application/json")], raw.to_owned()).into_response()
        }
    }
}
