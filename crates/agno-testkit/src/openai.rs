//! OpenAI Chat Completions wire format: request validation, response and SSE chunk rendering, error bodies.

use std::collections::HashSet;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::script::{Completion, EchoContext, Shared};
use crate::wire::{
    ARGS_PIECE_CHARS, TEXT_PIECE_CHARS, Wire, json_answer, json_error, maybe_cut, serve, split_chars, sse_response,
    with_retry_after,
};

/// Path of the chat completions endpoint.
pub(crate) const CHAT_COMPLETIONS_PATH: &str = "/v1/chat/completions";
/// Path of the model listing endpoint.
pub(crate) const MODELS_PATH: &str = "/v1/models";

const CHUNK_OBJECT: &str = "chat.completion.chunk";

const ROLES: [&str; 5] = ["system", "developer", "user", "assistant", "tool"];

/// The Chat Completions wire format.
pub(crate) struct Chat;

impl Wire for Chat {
    fn validate(&self, _headers: &axum::http::HeaderMap, body: &Value) -> Result<(), (u16, String)> {
        validate(body).map_err(|m| (400, m))
    }

    fn echo_context(&self, body: &Value) -> EchoContext {
        echo_context(body)
    }

    fn is_stream(&self, body: &Value) -> bool {
        body.get("stream").and_then(Value::as_bool) == Some(true)
    }

    fn error(&self, status: u16, message: &str) -> Response {
        error_response(status, message, None)
    }

    fn completion(&self, n: u64, body: &Value, completion: &Completion, stream: bool) -> Response {
        let meta = Meta {
            id: format!("chatcmpl-{n}"),
            n,
            created: now_secs(),
            model: body.get("model").and_then(Value::as_str).unwrap_or_default().to_owned(),
        };
        let usage = usage(body, completion);
        if stream {
            let include_usage = body.pointer("/stream_options/include_usage").and_then(Value::as_bool) == Some(true);
            sse_response(maybe_cut(stream_events(&meta, completion, include_usage.then_some(usage)), completion.cut))
        } else {
            json_answer(&completion_json(&meta, completion, usage), completion.cut)
        }
    }
}

/// Answer one `POST /v1/chat/completions` request (already recorded by the server).
pub(crate) async fn chat_completions(shared: &Shared, headers: &axum::http::HeaderMap, body: &Value) -> Response {
    serve(shared, &Chat, headers, body).await
}

/// The `GET /v1/models` answer.
pub(crate) fn models_response() -> Response {
    axum::Json(json!({
        "object": "list",
        "data": [{"id": "fake-model", "object": "model"}],
    }))
    .into_response()
}

/// An error answer with the OpenAI error body and an optional `retry-after` header.
pub(crate) fn error_response(status: u16, message: &str, retry_after: Option<u64>) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    with_retry_after(json_error(code.as_u16(), error_body(code, message)), retry_after)
}

/// The OpenAI error body `{"error":{"message","type","code"}}`.
fn error_body(status: StatusCode, message: &str) -> Value {
    let kind = if status == StatusCode::TOO_MANY_REQUESTS {
        "rate_limit_exceeded"
    } else if status.is_client_error() {
        "invalid_request_error"
    } else {
        "server_error"
    };
    json!({"error": {"message": message, "type": kind, "code": null}})
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Identity of one response, shared by all its chunks.
#[derive(Debug)]
struct Meta {
    id: String,
    n: u64,
    created: u64,
    model: String,
}

impl Meta {
    fn call_id(&self, index: usize) -> String {
        format!("call_{}_{index}", self.n)
    }
}

fn finish_reason(completion: &Completion) -> &'static str {
    if completion.filtered.is_some() {
        "content_filter"
    } else if completion.calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

/// Non-streaming `chat.completion` object.
fn completion_json(meta: &Meta, completion: &Completion, usage: Value) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), "assistant".into());
    message.insert("content".into(), completion.content.as_ref().map_or(Value::Null, |c| Value::String(c.clone())));
    if let Some(reasoning) = &completion.reasoning {
        // DeepSeek's and vLLM's field for reasoning models.
        message.insert("reasoning_content".into(), reasoning.clone().into());
    }
    if !completion.calls.is_empty() {
        let calls: Vec<Value> = completion
            .calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({
                    "id": meta.call_id(i),
                    "type": "function",
                    "function": {"name": name, "arguments": args},
                })
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    let mut choice = Map::new();
    choice.insert("index".into(), 0.into());
    choice.insert("message".into(), Value::Object(message));
    choice.insert("finish_reason".into(), finish_reason(completion).into());
    envelope(meta, "chat.completion", vec![Value::Object(choice)], Some(usage))
}

/// The fields shared by completion objects and chunks.
fn envelope(meta: &Meta, object: &str, choices: Vec<Value>, usage: Option<Value>) -> Value {
    let mut map = Map::new();
    map.insert("id".into(), meta.id.clone().into());
    map.insert("object".into(), object.into());
    map.insert("created".into(), meta.created.into());
    map.insert("model".into(), meta.model.clone().into());
    map.insert("choices".into(), Value::Array(choices));
    if let Some(usage) = usage {
        map.insert("usage".into(), usage);
    }
    Value::Object(map)
}

fn chunk(meta: &Meta, delta: Value, finish_reason: Value) -> Value {
    let mut choice = Map::new();
    choice.insert("index".into(), 0.into());
    choice.insert("delta".into(), delta);
    choice.insert("finish_reason".into(), finish_reason);
    envelope(meta, CHUNK_OBJECT, vec![Value::Object(choice)], None)
}

fn event(value: &Value) -> String {
    format!("data: {value}\n\n")
}

/// All SSE events of a streamed completion, `[DONE]` included.
fn stream_events(meta: &Meta, completion: &Completion, usage: Option<Value>) -> Vec<String> {
    let mut events = vec![event(&chunk(meta, json!({"role": "assistant", "content": ""}), Value::Null))];
    if let Some(reasoning) = &completion.reasoning {
        for piece in split_chars(reasoning, TEXT_PIECE_CHARS) {
            events.push(event(&chunk(meta, json!({"reasoning_content": piece}), Value::Null)));
        }
    }
    if let Some(text) = &completion.content {
        for piece in split_chars(text, TEXT_PIECE_CHARS) {
            events.push(event(&chunk(meta, json!({"content": piece}), Value::Null)));
        }
    }
    for (i, (name, args)) in completion.calls.iter().enumerate() {
        events.push(event(&chunk(
            meta,
            json!({"tool_calls": [{
                "index": i,
                "id": meta.call_id(i),
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }]}),
            Value::Null,
        )));
        for piece in split_chars(args, ARGS_PIECE_CHARS) {
            events.push(event(&chunk(
                meta,
                json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                Value::Null,
            )));
        }
    }
    events.push(event(&chunk(meta, json!({}), Value::String(finish_reason(completion).into()))));
    if let Some(usage) = usage {
        events.push(event(&envelope(meta, CHUNK_OBJECT, Vec::new(), Some(usage))));
    }
    events.push("data: [DONE]\n\n".to_owned());
    events
}

/// Text of a message `content` (a string, or an array of parts with `text` fields).
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect(),
        _ => String::new(),
    }
}

/// Deterministic token usage: characters / 4, at least 1.
fn usage(body: &Value, completion: &Completion) -> Value {
    let prompt_chars: usize = body
        .get("messages")
        .and_then(Value::as_array)
        .map(|messages| messages.iter().map(|m| content_text(m.get("content")).chars().count()).sum())
        .unwrap_or(0);
    let (prompt, completion) = crate::wire::token_counts(prompt_chars, completion);
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    })
}

/// What `Reply::Echo` needs from an OpenAI request.
fn echo_context(body: &Value) -> EchoContext {
    let messages = body.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let role = |m: &Value| m.get("role").and_then(Value::as_str).map(str::to_owned);
    let last_user_text = messages
        .iter()
        .rev()
        .find(|m| role(m).as_deref() == Some("user"))
        .map(|m| content_text(m.get("content")))
        .unwrap_or_default();
    let last_is_user = messages.last().and_then(role).as_deref() == Some("user");
    let tool_to_call = if last_is_user {
        body.get("tools")
            .and_then(Value::as_array)
            .and_then(|tools| tools.first())
            .and_then(|t| t.pointer("/function/name"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    } else {
        None
    };
    EchoContext { last_user_text, tool_to_call }
}

fn is_content(value: &Value) -> bool {
    matches!(value, Value::String(_) | Value::Array(_))
}

fn missing_responses(pending: &[String]) -> String {
    format!(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to \
         each 'tool_call_id'. Missing: {}",
        pending.join(", ")
    )
}

/// Check a request body against the Chat Completions request shape.
///
/// Returns the OpenAI-style error message on the first violation.
pub(crate) fn validate(body: &Value) -> Result<(), String> {
    let Some(obj) = body.as_object() else {
        return Err("We could not parse the JSON body of your request: expected a JSON object.".into());
    };
    if !obj.get("model").is_some_and(Value::is_string) {
        return Err("You must provide a model parameter ('model' must be a string).".into());
    }
    let stream = match obj.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(format!("Invalid type for 'stream': expected a boolean, but got {other}."));
        }
    };
    match obj.get("stream_options") {
        None | Some(Value::Null) => {}
        Some(Value::Object(_)) if stream => {}
        Some(Value::Object(_)) => {
            return Err("The 'stream_options' parameter is only allowed when 'stream' is enabled.".into());
        }
        Some(_) => return Err("Invalid type for 'stream_options': expected an object.".into()),
    }
    validate_tools(obj.get("tools"))?;
    let messages = match obj.get("messages") {
        Some(Value::Array(messages)) if !messages.is_empty() => messages,
        Some(Value::Array(_)) => {
            return Err("Invalid 'messages': empty array. Expected an array with minimum length 1.".into());
        }
        _ => return Err("Missing required parameter: 'messages' (must be an array).".into()),
    };
    validate_messages(messages)
}

fn validate_tools(tools: Option<&Value>) -> Result<(), String> {
    let tools = match tools {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(tools)) if tools.is_empty() => {
            return Err("Invalid 'tools': empty array. Expected an array with minimum length 1.".into());
        }
        Some(Value::Array(tools)) => tools,
        Some(_) => return Err("Invalid type for 'tools': expected an array.".into()),
    };
    for (i, tool) in tools.iter().enumerate() {
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            return Err(format!("Invalid value for 'tools[{i}].type': expected 'function'."));
        }
        let Some(function) = tool.get("function").and_then(Value::as_object) else {
            return Err(format!("Missing required parameter: 'tools[{i}].function' (must be an object)."));
        };
        if function.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(format!(
                "Missing required parameter: 'tools[{i}].function.name' (must be a non-empty string)."
            ));
        }
        if !function.get("parameters").is_some_and(Value::is_object) {
            return Err(format!("Invalid 'tools[{i}].function.parameters': expected a JSON Schema object."));
        }
    }
    Ok(())
}

fn validate_messages(messages: &[Value]) -> Result<(), String> {
    // Ids of every tool call made by an earlier assistant message.
    let mut known_ids: HashSet<String> = HashSet::new();
    // Ids of the latest assistant tool calls not answered yet.
    let mut pending: Vec<String> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let Some(message) = message.as_object() else {
            return Err(format!("Invalid type for 'messages[{i}]': expected an object."));
        };
        let role = match message.get("role").and_then(Value::as_str) {
            Some(role) if ROLES.contains(&role) => role,
            Some(role) => {
                return Err(format!(
                    "Invalid value: '{role}'. Supported values for 'messages[{i}].role' are: \
                     'system', 'developer', 'user', 'assistant', and 'tool'."
                ));
            }
            None => {
                return Err(format!("Missing required parameter: 'messages[{i}].role' (must be a string)."));
            }
        };
        match role {
            "tool" => {
                let Some(id) = message.get("tool_call_id").and_then(Value::as_str) else {
                    return Err(format!("Missing required parameter: 'messages[{i}].tool_call_id'."));
                };
                if !known_ids.contains(id) {
                    return Err(format!(
                        "Invalid parameter: messages with role 'tool' must be a response to a \
                         preceding message with 'tool_calls'. 'messages[{i}].tool_call_id' is \
                         '{id}', which matches no earlier tool call."
                    ));
                }
                pending.retain(|p| p != id);
                if !message.get("content").is_some_and(is_content) {
                    return Err(format!(
                        "Invalid 'messages[{i}].content': expected a string or an array of \
                         content parts."
                    ));
                }
            }
            "assistant" => {
                if !pending.is_empty() {
                    return Err(missing_responses(&pending));
                }
                let has_content = match message.get("content") {
                    None | Some(Value::Null) => false,
                    Some(c) if is_content(c) => true,
                    Some(_) => {
                        return Err(format!(
                            "Invalid 'messages[{i}].content': expected a string, an array of \
                             content parts, or null."
                        ));
                    }
                };
                let calls = match message.get("tool_calls") {
                    None | Some(Value::Null) => &[][..],
                    Some(Value::Array(calls)) if !calls.is_empty() => calls.as_slice(),
                    Some(Value::Array(_)) => {
                        return Err(format!(
                            "Invalid 'messages[{i}].tool_calls': empty array. Expected an array \
                             with minimum length 1."
                        ));
                    }
                    Some(_) => {
                        return Err(format!("Invalid type for 'messages[{i}].tool_calls': expected an array."));
                    }
                };
                if !has_content && calls.is_empty() {
                    return Err(format!(
                        "Invalid 'messages[{i}]': an assistant message must have 'content' or \
                         'tool_calls'."
                    ));
                }
                for (j, call) in calls.iter().enumerate() {
                    let path = format!("messages[{i}].tool_calls[{j}]");
                    let Some(id) = call.get("id").and_then(Value::as_str) else {
                        return Err(format!("Missing required parameter: '{path}.id'."));
                    };
                    if call.get("type").and_then(Value::as_str) != Some("function") {
                        return Err(format!("Invalid value for '{path}.type': expected 'function'."));
                    }
                    if !call.pointer("/function/name").is_some_and(Value::is_string) {
                        return Err(format!("Missing required parameter: '{path}.function.name'."));
                    }
                    if !call.pointer("/function/arguments").is_some_and(Value::is_string) {
                        return Err(format!(
                            "Invalid '{path}.function.arguments': expected a string (JSON-encoded \
                             arguments)."
                        ));
                    }
                    known_ids.insert(id.to_owned());
                    pending.push(id.to_owned());
                }
            }
            // system, developer, user
            _ => {
                if role == "user" && !pending.is_empty() {
                    return Err(missing_responses(&pending));
                }
                if !message.get("content").is_some_and(is_content) {
                    return Err(format!(
                        "Invalid 'messages[{i}].content': expected a string or an array of \
                         content parts."
                    ));
                }
            }
        }
    }
    if !pending.is_empty() {
        return Err(missing_responses(&pending));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn split_respects_char_boundaries() {
        assert_eq!(split_chars("héllo wörld", 4), vec!["héll", "o wö", "rld"]);
        assert_eq!(split_chars("", 4), Vec::<&str>::new());
        assert_eq!(split_chars("abcd", 4), vec!["abcd"]);
        assert_eq!(split_chars("🦀🦀🦀", 2), vec!["🦀🦀", "🦀"]);
    }

    #[test]
    fn validation_accepts_a_full_tool_round_trip() {
        let body = json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "be nice"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}
                ]},
                {"role": "tool", "tool_call_id": "b", "content": "2"},
                {"role": "tool", "tool_call_id": "a", "content": "1"},
                {"role": "assistant", "content": "done"},
                {"role": "user", "content": [{"type": "text", "text": "again"}]}
            ],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
        });
        assert_eq!(validate(&body), Ok(()));
    }

    #[test]
    fn validation_rejects_drift() {
        let base = |messages: Value| json!({"model": "m", "messages": messages});
        let call = json!({"role": "assistant", "tool_calls": [
            {"id": "call_x", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ]});
        let err = validate(&base(json!([{"role": "user", "content": "q"}, call.clone()]))).unwrap_err();
        assert!(err.contains("Missing: call_x"), "{err}");
        let err = validate(&base(json!([
            {"role": "user", "content": "q"},
            call,
            {"role": "user", "content": "q2"}
        ])))
        .unwrap_err();
        assert!(err.contains("Missing: call_x"), "{err}");
        let err = validate(&base(json!([
            {"role": "user", "content": "q"},
            {"role": "tool", "tool_call_id": "nope", "content": "r"}
        ])))
        .unwrap_err();
        assert!(err.contains("nope"), "{err}");
        assert!(validate(&base(json!([]))).is_err());
        assert!(validate(&base(json!([{"role": "bot", "content": "x"}]))).is_err());
        assert!(validate(&json!({"messages": [{"role": "user", "content": "x"}]})).is_err());
        assert!(validate(&Value::Null).is_err());
        let bad_tools = json!({
            "model": "m",
            "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "function", "function": {"name": "f"}}]
        });
        assert!(validate(&bad_tools).is_err());
    }

    #[test]
    fn usage_is_deterministic() {
        let body = json!({"model": "m", "messages": [
            {"role": "user", "content": "12345678"},
            {"role": "assistant", "content": "1234"}
        ]});
        let completion = Completion { content: Some("ab".into()), ..Completion::default() };
        assert_eq!(usage(&body, &completion), json!({"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}));
    }

    #[test]
    fn echo_calls_first_tool_only_after_user_message() {
        let mut body = json!({
            "model": "m",
            "messages": [{"role": "user", "content": "hello"}],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]
        });
        let ctx = echo_context(&body);
        assert_eq!(ctx.tool_to_call.as_deref(), Some("f"));
        body["messages"] = json!([
            {"role": "user", "content": "hello"},
            {"role": "assistant", "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "c", "content": "r"}
        ]);
        let ctx = echo_context(&body);
        assert_eq!(ctx.tool_to_call, None);
        assert_eq!(ctx.last_user_text, "hello");
    }
}
