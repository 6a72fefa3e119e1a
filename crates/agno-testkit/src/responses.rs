//! OpenAI's Responses API on the fake server: `POST /v1/responses`, as documented at
//! <https://platform.openai.com/docs/api-reference/responses/create> (`input` items: messages,
//! `function_call`, `function_call_output`; `tools` of type `function`; `text.format`) and
//! <https://platform.openai.com/docs/api-reference/responses-streaming> (typed events with
//! `sequence_number`: `response.created`, `response.output_item.added`,
//! `response.output_text.delta`, `response.function_call_arguments.delta`,
//! `response.reasoning_summary_text.delta`, `response.output_item.done`, `response.completed`).
//! Errors use Chat Completions' `{"error": {"message", "type", "code"}}`.

use std::collections::HashSet;

use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

use crate::script::{Completion, EchoContext};
use crate::wire::{
    ARGS_PIECE_CHARS, TEXT_PIECE_CHARS, Wire, json_answer, maybe_cut, named_event, split_chars, sse_response,
};

/// Path of the Responses endpoint.
pub(crate) const RESPONSES_PATH: &str = "/v1/responses";

/// The Responses wire format.
#[derive(Debug, Default)]
pub(crate) struct Responses;

fn items(body: &Value) -> Vec<Value> {
    match body.get("input") {
        Some(Value::String(s)) => vec![json!({"role": "user", "content": s})],
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    }
}

fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect(),
        _ => String::new(),
    }
}

impl Wire for Responses {
    fn validate(&self, headers: &HeaderMap, body: &Value) -> Result<(), (u16, String)> {
        if headers.get("authorization").is_none() {
            return Err((401, "You didn't provide an API key.".into()));
        }
        let bad = |m: String| (400, m);
        if !body.get("model").is_some_and(Value::is_string) {
            return Err(bad("Missing required parameter: 'model'.".into()));
        }
        if !body.get("input").is_some_and(|i| i.is_string() || i.is_array()) {
            return Err(bad("Missing required parameter: 'input'.".into()));
        }
        let mut calls: Vec<String> = Vec::new();
        let mut answered = HashSet::new();
        for (i, item) in items(body).iter().enumerate() {
            match item.get("type").and_then(Value::as_str) {
                Some("function_call") => {
                    let Some(id) = item.get("call_id").and_then(Value::as_str) else {
                        return Err(bad(format!("Missing required parameter: 'input[{i}].call_id'.")));
                    };
                    if !item.get("arguments").is_some_and(Value::is_string) {
                        return Err(bad(format!("Invalid type for 'input[{i}].arguments': expected a string.")));
                    }
                    calls.push(id.to_owned());
                }
                Some("function_call_output") => {
                    let id = item.get("call_id").and_then(Value::as_str).unwrap_or_default();
                    if !calls.iter().any(|c| c == id) {
                        return Err(bad(format!("No tool call found for function call output with call_id {id}.")));
                    }
                    answered.insert(id.to_owned());
                }
                Some("message") | None => {
                    let role = item.get("role").and_then(Value::as_str).unwrap_or_default();
                    if !matches!(role, "system" | "developer" | "user" | "assistant") {
                        return Err(bad(format!(
                            "Invalid value: '{role}'. Supported values are: 'assistant', 'system', 'developer', and 'user'."
                        )));
                    }
                    if let Some(orphan) = calls.iter().find(|c| !answered.contains(*c)) {
                        return Err(bad(format!("No tool output found for function call {orphan}.")));
                    }
                }
                Some(other) => return Err(bad(format!("Invalid value: '{other}' for 'input[{i}].type'."))),
            }
        }
        if let Some(orphan) = calls.iter().find(|c| !answered.contains(*c)) {
            return Err(bad(format!("No tool output found for function call {orphan}.")));
        }
        for (i, tool) in body.get("tools").and_then(Value::as_array).into_iter().flatten().enumerate() {
            if tool.get("type").and_then(Value::as_str) == Some("function")
                && !tool.get("name").is_some_and(Value::is_string)
            {
                return Err(bad(format!("Missing required parameter: 'tools[{i}].name'.")));
            }
        }
        Ok(())
    }

    fn echo_context(&self, body: &Value) -> EchoContext {
        let items = items(body);
        let is_user = |i: &Value| i.get("role").and_then(Value::as_str) == Some("user");
        let last_user_text =
            items.iter().rev().find(|i| is_user(i)).map(|i| text_of(i.get("content"))).unwrap_or_default();
        let tool_to_call = items
            .last()
            .filter(|i| is_user(i))
            .and_then(|_| body.pointer("/tools/0/name").and_then(Value::as_str).map(str::to_owned));
        EchoContext { last_user_text, tool_to_call }
    }

    fn is_stream(&self, body: &Value) -> bool {
        body.get("stream").and_then(Value::as_bool) == Some(true)
    }

    fn error(&self, status: u16, message: &str) -> Response {
        crate::openai::error_response(status, message, None)
    }

    fn completion(&self, n: u64, body: &Value, completion: &Completion, stream: bool) -> Response {
        let prompt_chars: usize = items(body).iter().map(|i| text_of(i.get("content")).chars().count()).sum();
        let (input, output) = crate::wire::token_counts(prompt_chars, completion);
        let id = format!("resp_fake{n:04}");
        let model = body.get("model").cloned().unwrap_or(Value::Null);
        let usage = json!({
            "input_tokens": input, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output, "output_tokens_details": {"reasoning_tokens": completion.reasoning.as_ref().map_or(0, |_| 1)},
            "total_tokens": input + output,
        });
        let mut output_items = Vec::new();
        if let Some(r) = &completion.reasoning {
            output_items.push(
                json!({"type": "reasoning", "id": format!("rs_{n}"), "summary": [{"type": "summary_text", "text": r}]}),
            );
        }
        if let Some(reason) = &completion.filtered {
            output_items
                .push(json!({"type": "message", "id": format!("msg_{n}"), "role": "assistant", "status": "completed",
                "content": [{"type": "refusal", "refusal": format!("I can't help with that ({reason}).")}]}));
        } else if let Some(t) = &completion.content {
            output_items
                .push(json!({"type": "message", "id": format!("msg_{n}"), "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": t, "annotations": []}]}));
        }
        for (i, (name, args)) in completion.calls.iter().enumerate() {
            output_items
                .push(json!({"type": "function_call", "id": format!("fc_{n}_{i}"), "call_id": format!("call_{n}_{i}"),
                "name": name, "arguments": args, "status": "completed"}));
        }
        let response = |status: &str, output: Vec<Value>, usage: Value| {
            json!({"id": id, "object": "response", "created_at": 1_764_590_000, "status": status, "model": model,
                "output": output, "usage": usage, "error": null, "incomplete_details": null})
        };
        if !stream {
            return json_answer(&response("completed", output_items, usage), completion.cut);
        }
        let mut seq = 0u64;
        let mut events = Vec::new();
        let mut push = |name: &str, mut data: Value| {
            data["type"] = json!(name);
            data["sequence_number"] = json!(seq);
            seq += 1;
            events.push(named_event(name, &data));
        };
        push("response.created", json!({"response": response("in_progress", Vec::new(), Value::Null)}));
        for (index, item) in output_items.iter().enumerate() {
            match item["type"].as_str() {
                Some("reasoning") => {
                    push(
                        "response.output_item.added",
                        json!({"output_index": index, "item": {"type": "reasoning", "id": item["id"], "summary": []}}),
                    );
                    for piece in split_chars(item["summary"][0]["text"].as_str().unwrap_or_default(), TEXT_PIECE_CHARS)
                    {
                        push(
                            "response.reasoning_summary_text.delta",
                            json!({"item_id": item["id"], "output_index": index, "summary_index": 0, "delta": piece}),
                        );
                    }
                }
                Some("message") => {
                    let part = &item["content"][0];
                    push(
                        "response.output_item.added",
                        json!({"output_index": index, "item": {"type": "message", "id": item["id"], "role": "assistant", "status": "in_progress", "content": []}}),
                    );
                    if part["type"] == "refusal" {
                        push(
                            "response.refusal.delta",
                            json!({"item_id": item["id"], "output_index": index, "content_index": 0, "delta": part["refusal"]}),
                        );
                    } else {
                        push(
                            "response.content_part.added",
                            json!({"item_id": item["id"], "output_index": index, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
                        );
                        for piece in split_chars(part["text"].as_str().unwrap_or_default(), TEXT_PIECE_CHARS) {
                            push(
                                "response.output_text.delta",
                                json!({"item_id": item["id"], "output_index": index, "content_index": 0, "delta": piece}),
                            );
                        }
                        push(
                            "response.output_text.done",
                            json!({"item_id": item["id"], "output_index": index, "content_index": 0, "text": part["text"]}),
                        );
                    }
                }
                _ => {
                    let mut added = item.clone();
                    added["arguments"] = json!("");
                    added["status"] = json!("in_progress");
                    push("response.output_item.added", json!({"output_index": index, "item": added}));
                    for piece in split_chars(item["arguments"].as_str().unwrap_or_default(), ARGS_PIECE_CHARS) {
                        push(
                            "response.function_call_arguments.delta",
                            json!({"item_id": item["id"], "output_index": index, "delta": piece}),
                        );
                    }
                    push(
                        "response.function_call_arguments.done",
                        json!({"item_id": item["id"], "output_index": index, "arguments": item["arguments"]}),
                    );
                }
            }
            push("response.output_item.done", json!({"output_index": index, "item": item}));
        }
        push("response.completed", json!({"response": response("completed", output_items.clone(), usage)}));
        sse_response(maybe_cut(events, completion.cut))
    }
}
