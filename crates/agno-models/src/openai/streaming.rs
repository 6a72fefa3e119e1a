//! Turns OpenAI Chat Completions JSON (streamed chunks or a whole response) into
//! [`ModelChunk`]s. One parser serves both paths.

use agno_core::{ModelChunk, ModelError, ModelErrorKind, Usage};
use serde_json::Value;

use super::wire::{ChatResponse, Delta, WireUsage};
use crate::http::EventParser;

/// Chunks of one parsed JSON document (a stream chunk or a full response).
pub(crate) fn chunks_of(label: &str, doc: ChatResponse, out: &mut Vec<ModelChunk>) -> Result<(), ModelError> {
    if let Some(err) = doc.error {
        let msg = err.message.unwrap_or_else(|| "unknown error".to_owned());
        let kind = match err.kind.as_deref() {
            Some(k) if k.contains("rate_limit") => ModelErrorKind::RateLimited,
            Some(k) if k.contains("invalid_request") => ModelErrorKind::BadRequest,
            _ => ModelErrorKind::Server,
        };
        return Err(ModelError::new(kind, format!("{label} reported an error: {msg}")));
    }
    if let Some(id) = doc.id.filter(|id| !id.is_empty()) {
        out.push(ModelChunk::ProviderData(serde_json::Map::from_iter([("id".to_owned(), Value::String(id))])));
    }
    for choice in doc.choices {
        if let Some(delta) = choice.delta.or(choice.message) {
            delta_chunks(delta, out);
        }
        if let Some(reason) = choice.finish_reason {
            if reason == "content_filter" {
                return Err(ModelError::new(
                    ModelErrorKind::ContentFiltered,
                    format!("{label} withheld the answer (finish reason content_filter)"),
                ));
            }
            out.push(ModelChunk::Finish(reason));
        }
    }
    if let Some(usage) = doc.usage {
        out.push(ModelChunk::Usage(usage_of(&usage)));
    }
    Ok(())
}

fn delta_chunks(delta: Delta, out: &mut Vec<ModelChunk>) {
    if let Some(reasoning) = delta.reasoning_content.or(delta.reasoning).filter(|s| !s.is_empty()) {
        out.push(ModelChunk::Reasoning(reasoning));
    }
    match delta.content {
        Some(Value::String(s)) if !s.is_empty() => out.push(ModelChunk::Content(s)),
        // Some servers send content parts: [{"type":"text","text":"..."}].
        Some(Value::Array(parts)) => {
            let text: String = parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect();
            if !text.is_empty() {
                out.push(ModelChunk::Content(text));
            }
        }
        _ => {}
    }
    if let Some(refusal) = delta.refusal.filter(|s| !s.is_empty()) {
        out.push(ModelChunk::Content(refusal));
    }
    for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
        let function = call.function.unwrap_or_default();
        // Arguments are a string on the wire; some servers send an object instead.
        let arguments = match function.arguments {
            Some(Value::String(s)) => s,
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        out.push(ModelChunk::ToolCallDelta {
            index: call.index.unwrap_or(position),
            id: call.id,
            name: function.name,
            arguments,
        });
    }
}

fn usage_of(u: &WireUsage) -> Usage {
    let input = u.prompt_tokens.unwrap_or(0);
    let output = u.completion_tokens.unwrap_or(0);
    let nested =
        |v: &Option<Value>, key: &str| v.as_ref().and_then(|d| d.get(key)).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: u.total_tokens.unwrap_or(input + output),
        cache_read_tokens: nested(&u.prompt_tokens_details, "cached_tokens"),
        reasoning_tokens: nested(&u.completion_tokens_details, "reasoning_tokens"),
    }
}

/// The events of a streamed chat completion: JSON chunks, then `[DONE]`. The response is whole
/// once a finish reason arrived (usage may follow it, and some servers never send `[DONE]`).
pub(crate) struct ChatEvents {
    label: String,
    finished: bool,
    /// Every chunk repeats the response id: it is passed on once.
    seen_id: bool,
}

impl ChatEvents {
    pub(crate) fn new(label: String) -> Self {
        Self { label, finished: false, seen_id: false }
    }
}

impl EventParser for ChatEvents {
    fn event(&mut self, data: String) -> Result<(Vec<ModelChunk>, bool), ModelError> {
        if data == "[DONE]" {
            return Ok((Vec::new(), true));
        }
        let parsed: Result<ChatResponse, String> = match serde_json::from_str::<Value>(&data) {
            // A chunk names at least one of these keys; anything else is not this wire format.
            Ok(v) if ["choices", "error", "usage"].iter().any(|k| v.get(k).is_some()) => {
                serde_json::from_value(v).map_err(|e| e.to_string())
            }
            Ok(_) => Err("not a chat completion chunk".to_owned()),
            Err(e) => Err(e.to_string()),
        };
        let doc = parsed.map_err(|e| {
            ModelError::new(
                ModelErrorKind::InvalidResponse,
                format!(
                    "{} sent an invalid stream chunk ({e}): {}",
                    self.label,
                    data.chars().take(200).collect::<String>()
                ),
            )
        })?;
        let mut out = Vec::new();
        chunks_of(&self.label, doc, &mut out)?;
        out.retain(|c| !matches!(c, ModelChunk::ProviderData(_)) || !std::mem::replace(&mut self.seen_id, true));
        self.finished |= out.iter().any(|c| matches!(c, ModelChunk::Finish(_)));
        Ok((out, false))
    }

    fn complete(&self) -> bool {
        self.finished
    }
}
