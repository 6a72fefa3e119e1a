//! Google's Gemini API on the fake server: `POST /v1beta/models/{model}:generateContent` and
//! `:streamGenerateContent?alt=sse`, as documented at <https://ai.google.dev/api/generate-content>
//! (`GenerateContentRequest`: `contents` of roles `user` / `model` with `text`, `inlineData`,
//! `fileData`, `functionCall`, `functionResponse` parts, `systemInstruction`, `tools`,
//! `generationConfig`; `GenerateContentResponse`: `candidates`, `promptFeedback`,
//! `usageMetadata`, each SSE event one whole response chunk) and
//! <https://ai.google.dev/gemini-api/docs/troubleshooting> (errors `{"error": {"code",
//! "message", "status"}}`). The key comes as `x-goog-api-key` or `?key=`.

use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

use crate::script::{Completion, EchoContext};
use crate::wire::{TEXT_PIECE_CHARS, Wire, json_answer, json_error, maybe_cut, split_chars, sse_response};

/// One Gemini call: the model and whether it streams come from the URL.
#[derive(Debug)]
pub(crate) struct Generate {
    pub(crate) stream: bool,
    pub(crate) keyed_in_query: bool,
}

fn status_of(code: u16) -> &'static str {
    match code {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        _ => "INTERNAL",
    }
}

fn text_of(content: &Value) -> String {
    content
        .get("parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect()
}

fn has_part(content: &Value, key: &str) -> bool {
    content.get("parts").and_then(Value::as_array).into_iter().flatten().any(|p| p.get(key).is_some())
}

impl Wire for Generate {
    fn validate(&self, headers: &HeaderMap, body: &Value) -> Result<(), (u16, String)> {
        if headers.get("x-goog-api-key").is_none() && !self.keyed_in_query {
            return Err((403, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.".into()));
        }
        let bad = |m: String| (400, m);
        let Some(contents) = body.get("contents").and_then(Value::as_array).filter(|c| !c.is_empty()) else {
            return Err(bad("* GenerateContentRequest.contents: contents is not specified".into()));
        };
        let mut pending: Vec<String> = Vec::new();
        for (i, content) in contents.iter().enumerate() {
            let role = content.get("role").and_then(Value::as_str).unwrap_or("user");
            if !matches!(role, "user" | "model") {
                return Err(bad(format!("Please use a valid role: user, model. (contents[{i}].role = {role})")));
            }
            let parts = content.get("parts").and_then(Value::as_array).filter(|p| !p.is_empty());
            let Some(parts) = parts else {
                return Err(bad(format!(
                    "* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty."
                )));
            };
            for (j, part) in parts.iter().enumerate() {
                let known = [
                    "text",
                    "inlineData",
                    "fileData",
                    "functionCall",
                    "functionResponse",
                    "thought",
                    "thoughtSignature",
                ];
                if !part.as_object().is_some_and(|o| !o.is_empty() && o.keys().all(|k| known.contains(&k.as_str()))) {
                    return Err(bad(format!(
                        "Invalid JSON payload received. Unknown name in contents[{i}].parts[{j}]: {part}"
                    )));
                }
                if let Some(call) = part.get("functionCall")
                    && !call.get("args").is_none_or(Value::is_object)
                {
                    return Err(bad(format!("contents[{i}].parts[{j}].functionCall.args must be an object")));
                }
            }
            let responses = parts.iter().filter(|p| p.get("functionResponse").is_some()).count();
            if !pending.is_empty() && responses != pending.len() {
                return Err(bad(format!(
                    "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn (contents[{i}]: {responses} responses for the calls {}).",
                    pending.join(", ")
                )));
            }
            pending = if role == "model" {
                parts
                    .iter()
                    .filter_map(|p| p.get("functionCall"))
                    .map(|c| {
                        c.get("id")
                            .and_then(Value::as_str)
                            .or_else(|| c.get("name").and_then(Value::as_str))
                            .unwrap_or_default()
                            .to_owned()
                    })
                    .collect()
            } else {
                Vec::new()
            };
        }
        for (i, decl) in
            body.pointer("/tools/0/functionDeclarations").and_then(Value::as_array).into_iter().flatten().enumerate()
        {
            if !decl.get("name").is_some_and(Value::is_string) {
                return Err(bad(format!(
                    "* GenerateContentRequest.tools[0].function_declarations[{i}].name: Function name is required"
                )));
            }
        }
        Ok(())
    }

    fn echo_context(&self, body: &Value) -> EchoContext {
        let contents = body.get("contents").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let is_user = |c: &Value| c.get("role").and_then(Value::as_str).unwrap_or("user") == "user";
        let last_user_text = contents.iter().rev().find(|c| is_user(c)).map(text_of).unwrap_or_default();
        let plain = contents.last().is_some_and(|c| is_user(c) && !has_part(c, "functionResponse"));
        let tool_to_call = plain
            .then(|| body.pointer("/tools/0/functionDeclarations/0/name").and_then(Value::as_str).map(str::to_owned))
            .flatten();
        EchoContext { last_user_text, tool_to_call }
    }

    fn is_stream(&self, _body: &Value) -> bool {
        self.stream
    }

    fn error(&self, status: u16, message: &str) -> Response {
        json_error(status, json!({"error": {"code": status, "message": message, "status": status_of(status)}}))
    }

    fn completion(&self, n: u64, body: &Value, completion: &Completion, stream: bool) -> Response {
        let prompt_chars: usize = body
            .get("contents")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| text_of(c).chars().count())
            .sum();
        let (input, output) = crate::wire::token_counts(prompt_chars, completion);
        let usage =
            json!({"promptTokenCount": input, "candidatesTokenCount": output, "totalTokenCount": input + output});
        let id = format!("fake-response-{n}");
        let version = "gemini-fake-001";
        if completion.filtered.is_some() {
            let chunk = json!({
                "candidates": [{"finishReason": "SAFETY", "index": 0, "safetyRatings": [
                    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true}
                ]}],
                "usageMetadata": {"promptTokenCount": input, "totalTokenCount": input},
                "modelVersion": version, "responseId": id,
            });
            return if stream {
                sse_response(vec![format!("data: {chunk}\r\n\r\n")])
            } else {
                json_answer(&chunk, false)
            };
        }
        let calls: Vec<Value> = completion
            .calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                let args = serde_json::from_str::<Value>(args).ok().filter(Value::is_object).unwrap_or(json!({}));
                json!({"functionCall": {"id": format!("call_{n}_{i}"), "name": name, "args": args}})
            })
            .collect();
        let candidate = |parts: Vec<Value>, finish: bool| {
            let mut c = json!({"content": {"role": "model", "parts": parts}, "index": 0});
            if finish {
                c["finishReason"] = json!("STOP");
            }
            c
        };
        if !stream {
            let mut parts = Vec::new();
            if let Some(r) = &completion.reasoning {
                parts.push(json!({"text": r, "thought": true}));
            }
            if let Some(t) = &completion.content {
                parts.push(json!({"text": t}));
            }
            parts.extend(calls);
            let doc = json!({"candidates": [candidate(parts, true)], "usageMetadata": usage, "modelVersion": version, "responseId": id});
            return json_answer(&doc, completion.cut);
        }
        // Each SSE event is a whole GenerateContentResponse; the last carries finishReason and
        // the usage.
        let mut pieces: Vec<Value> = Vec::new();
        if let Some(r) = &completion.reasoning {
            pieces.extend(split_chars(r, TEXT_PIECE_CHARS).into_iter().map(|p| json!({"text": p, "thought": true})));
        }
        if let Some(t) = &completion.content {
            pieces.extend(split_chars(t, TEXT_PIECE_CHARS).into_iter().map(|p| json!({"text": p})));
        }
        pieces.extend(calls);
        if pieces.is_empty() {
            pieces.push(json!({"text": ""}));
        }
        let last = pieces.len() - 1;
        let events = pieces
            .into_iter()
            .enumerate()
            .map(|(i, part)| {
                let mut chunk = json!({"candidates": [candidate(vec![part], i == last)], "modelVersion": version, "responseId": id});
                chunk["usageMetadata"] = if i == last { usage.clone() } else { json!({"promptTokenCount": input, "totalTokenCount": input}) };
                format!("data: {chunk}\r\n\r\n")
            })
            .collect();
        sse_response(maybe_cut(events, completion.cut))
    }
}
