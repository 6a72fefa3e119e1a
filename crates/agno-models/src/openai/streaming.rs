//! Turns OpenAI Chat Completions JSON (streamed chunks or a whole response) into
//! [`ModelChunk`]s. One parser serves both paths.

use agno_core::{ModelChunk, ModelError, ModelErrorKind, Usage};
use futures::{Stream, StreamExt};
use serde_json::Value;

use super::wire::{ChatResponse, Delta, WireUsage};

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
    for choice in doc.choices {
        if let Some(delta) = choice.delta.or(choice.message) {
            delta_chunks(delta, out);
        }
        if let Some(reason) = choice.finish_reason {
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

/// Parses an SSE byte stream of chat completion chunks.
pub(crate) fn sse_chunks<S, B, E>(label: String, bytes: S) -> impl Stream<Item = Result<ModelChunk, ModelError>> + Send
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send,
    E: std::error::Error + Send + Sync + 'static,
{
    use eventsource_stream::Eventsource;
    let events = Box::pin(bytes.eventsource());
    futures::stream::unfold((events, label, false), |(mut events, label, done)| async move {
        if done {
            return None;
        }
        loop {
            match events.next().await {
                None => return None,
                Some(Err(e)) => {
                    let err = ModelError::new(ModelErrorKind::Connection, format!("{label} stream broke: {e}"));
                    return Some((vec![Err(err)], (events, label, true)));
                }
                Some(Ok(event)) => {
                    let data = event.data.trim();
                    if data.is_empty() {
                        continue;
                    }
                    if data == "[DONE]" {
                        return None;
                    }
                    let parsed: Result<ChatResponse, _> = serde_json::from_str(data);
                    let mut out = Vec::new();
                    let item = match parsed {
                        Ok(doc) => chunks_of(&label, doc, &mut out).map(|()| out),
                        Err(e) => Err(ModelError::new(
                            ModelErrorKind::InvalidResponse,
                            format!(
                                "{label} sent a stream chunk that is not valid JSON ({e}): {}",
                                data.chars().take(200).collect::<String>()
                            ),
                        )),
                    };
                    return match item {
                        Ok(chunks) => Some((chunks.into_iter().map(Ok).collect(), (events, label, false))),
                        Err(err) => Some((vec![Err(err)], (events, label, true))),
                    };
                }
            }
        }
    })
    .flat_map(futures::stream::iter)
}
