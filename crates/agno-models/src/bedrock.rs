//! `AwsBedrock`: Amazon Bedrock's Converse API (`POST /model/{modelId}/converse`, streamed by
//! `converse-stream` as an AWS event stream; reference
//! <https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html> and
//! <https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html>).
//!
//! Requests are signed with AWS Signature Version 4 (service `bedrock`) from
//! `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`), or carry a Bedrock
//! API key (`AWS_BEARER_TOKEN_BEDROCK`) as a bearer token. Messages are `content` blocks
//! (`text`, `image`, `document`, `toolUse`, `toolResult`, `reasoningContent`); the system
//! message is `system`; tools are `toolConfig.tools[].toolSpec`. The stream is binary
//! (`application/vnd.amazon.eventstream`): each message has a prelude, headers (`:event-type`,
//! `:message-type`) and a JSON payload, each part checked by CRC32.

use std::collections::HashMap;
use std::sync::Arc;

use agno_core::aws_sigv4::{SigV4Request, sign, uri_encode};
use agno_core::{
    Capabilities, Message, Model, ModelChunk, ModelError, ModelErrorKind, ModelRequest, ModelResponse, ModelStream,
    ResponseAssembler, Role, Usage,
};
use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::{Map, Value, json};

use crate::http::{ClientConfig, http_client, invalid, json_body, parse_events, send};
use crate::parts::{Part, ToolChoice, Turns, parts};

pub use agno_core::aws_sigv4::AwsCredentials;

/// How a Bedrock request is authenticated.
#[derive(Debug, Clone)]
pub enum BedrockAuth {
    /// Signature Version 4 with these credentials.
    SigV4(AwsCredentials),
    /// A Bedrock API key, sent as a bearer token.
    ApiKey(String),
}

/// A model on Amazon Bedrock's Converse API (Agno's `AwsBedrock`).
#[derive(Debug, Clone)]
pub struct AwsBedrock {
    id: String,
    region: String,
    auth: BedrockAuth,
    config: Arc<ClientConfig>,
    client: reqwest::Client,
    max_tokens: Option<u32>,
    temperature: Option<f64>,
}

/// Bedrock's runtime endpoint in `region`.
pub fn endpoint(region: &str) -> String {
    format!("https://bedrock-runtime.{region}.amazonaws.com")
}

impl AwsBedrock {
    /// Model `id` (`anthropic.claude-sonnet-4-5-20250929-v1:0`, an inference profile, ...) in
    /// `region`, at the endpoint `config.base_url` names, authenticated by `auth`.
    ///
    /// # Errors
    /// [`ModelErrorKind::Connection`] when the HTTP client cannot be built.
    pub fn new(id: &str, region: &str, auth: BedrockAuth, config: ClientConfig) -> Result<Self, ModelError> {
        Ok(Self {
            id: id.to_owned(),
            region: region.to_owned(),
            auth,
            client: http_client(config.timeout)?,
            config: Arc::new(config),
            max_tokens: None,
            temperature: None,
        })
    }

    /// Most tokens of an answer.
    pub fn with_max_tokens(mut self, max: u32) -> Self {
        self.max_tokens = Some(max);
        self
    }

    /// Sampling temperature.
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    fn label(&self) -> String {
        format!("AwsBedrock model {}", self.id)
    }

    fn body(&self, request: &ModelRequest) -> Value {
        let mut system = Vec::new();
        let mut messages = Turns::default();
        for m in &request.messages {
            let (role, blocks) = match m.role {
                Role::System | Role::Developer => {
                    system.push(json!({"text": crate::parts::text_of(m.content.as_ref())}));
                    continue;
                }
                Role::Assistant => ("assistant", assistant_blocks(m)),
                Role::Tool => {
                    let status = if m.tool_call_error == Some(true) { "error" } else { "success" };
                    (
                        "user",
                        vec![json!({"toolResult": {
                            "toolUseId": m.tool_call_id.clone().unwrap_or_default(),
                            "content": [{"text": crate::parts::text_of(m.content.as_ref())}],
                            "status": status,
                        }})],
                    )
                }
                _ => ("user", content_blocks(m)),
            };
            messages.push(role, blocks);
        }
        let mut body = json!({
            "messages": messages.into_json("content"),
        });
        if !system.is_empty() {
            body["system"] = Value::Array(system);
        }
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    let mut spec = json!({"name": t.name, "inputSchema": {"json": t.parameters.as_ref()}});
                    if let Some(d) = &t.description {
                        spec["description"] = json!(d);
                    }
                    json!({"toolSpec": spec})
                })
                .collect();
            body["toolConfig"] = json!({"tools": tools});
            // Converse has no "none": tools are then offered without a choice.
            let choice = match request.tool_choice.as_ref().and_then(ToolChoice::of) {
                Some(ToolChoice::Required) => Some(json!({"any": {}})),
                Some(ToolChoice::Auto) => Some(json!({"auto": {}})),
                Some(ToolChoice::Tool(name)) => Some(json!({"tool": {"name": name}})),
                Some(ToolChoice::None) | None => None,
            };
            if let Some(choice) = choice {
                body["toolConfig"]["toolChoice"] = choice;
            }
        }
        let mut inference = Map::new();
        if let Some(max) = self.max_tokens {
            inference.insert("maxTokens".into(), json!(max));
        }
        if let Some(t) = self.temperature {
            inference.insert("temperature".into(), json!(t));
        }
        if !inference.is_empty() {
            body["inferenceConfig"] = Value::Object(inference);
        }
        body
    }

    async fn send(&self, body: &Value, stream: bool) -> Result<reqwest::Response, ModelError> {
        let action = if stream { "converse-stream" } else { "converse" };
        let path = format!("/model/{}/{action}", uri_encode(&self.id, false));
        let url = format!("{}{path}", self.config.base());
        let payload = serde_json::to_vec(body).unwrap_or_default();
        let host = host_of(&self.config.base_url);
        send(&self.config, &self.label(), || {
            let mut request = self
                .client
                .post(&url)
                .header("content-type", "application/json")
                .header("accept", if stream { "application/vnd.amazon.eventstream" } else { "application/json" })
                .body(payload.clone());
            match &self.auth {
                BedrockAuth::ApiKey(key) => request = request.bearer_auth(key),
                BedrockAuth::SigV4(creds) => {
                    let now = chrono::Utc::now();
                    let req = SigV4Request {
                        service: "bedrock",
                        region: &self.region,
                        method: "POST",
                        host: &host,
                        path: &path,
                        query: &[],
                        payload: &payload,
                        encode_path_again: true,
                    };
                    for (name, value) in sign(creds, &req, now) {
                        request = request.header(name, value);
                    }
                }
            }
            request
        })
        .await
    }
}

fn host_of(base_url: &str) -> String {
    let rest = base_url.split_once("://").map_or(base_url, |(_, r)| r);
    rest.split('/').next().unwrap_or_default().to_owned()
}

fn format_of(mime: &str) -> String {
    mime.rsplit('/').next().unwrap_or("png").replace("jpg", "jpeg")
}

fn content_blocks(m: &Message) -> Vec<Value> {
    parts(m.content.as_ref())
        .into_iter()
        .filter_map(|p| match p {
            Part::Text(t) if t.is_empty() => None,
            Part::Text(t) => Some(json!({"text": t})),
            Part::ImageData { mime, data } => Some(json!({"image": {"format": format_of(&mime), "source": {"bytes": data}}})),
            Part::File { mime, data, name } => Some(json!({"document": {
                "format": format_of(&mime),
                "name": name.map(|n| n.chars().filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-').collect::<String>()).unwrap_or_else(|| "document".to_owned()),
                "source": {"bytes": data},
            }})),
            // Bedrock takes media as bytes (or from S3): a URL goes as text.
            Part::ImageUrl(url) => Some(json!({"text": format!("Image: {url}")})),
        })
        .collect()
}

fn assistant_blocks(m: &Message) -> Vec<Value> {
    let mut blocks = content_blocks(m);
    for call in m.tool_calls() {
        let input =
            serde_json::from_str::<Value>(&call.function.arguments).ok().filter(Value::is_object).unwrap_or(json!({}));
        blocks.push(json!({"toolUse": {"toolUseId": call.id, "name": call.function.name, "input": input}}));
    }
    blocks
}

fn usage_of(u: &Value) -> Usage {
    let n = |key: &str| u.get(key).and_then(Value::as_u64).unwrap_or(0);
    let (input, output) = (n("inputTokens"), n("outputTokens"));
    Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: u.get("totalTokens").and_then(Value::as_u64).unwrap_or(input + output),
        cache_read_tokens: n("cacheReadInputTokens"),
        ..Usage::default()
    }
}

fn stop(label: &str, reason: &str) -> Result<ModelChunk, ModelError> {
    match reason {
        "guardrail_intervened" | "content_filtered" => {
            Err(ModelError::new(ModelErrorKind::ContentFiltered, format!("{label} stopped the answer ({reason})")))
        }
        "tool_use" => Ok(ModelChunk::Finish("tool_calls".to_owned())),
        "max_tokens" => Ok(ModelChunk::Finish("length".to_owned())),
        _ => Ok(ModelChunk::Finish("stop".to_owned())),
    }
}

fn response_chunks(label: &str, doc: &Value) -> Result<Vec<ModelChunk>, ModelError> {
    let Some(content) = doc.pointer("/output/message/content").and_then(Value::as_array) else {
        return Err(invalid(label, "JSON that is not a Converse response (no output.message)", &doc.to_string()));
    };
    let mut out = Vec::new();
    let mut calls = 0;
    for block in content {
        if let Some(text) = block.get("text").and_then(Value::as_str) {
            out.push(ModelChunk::Content(text.to_owned()));
        } else if let Some(text) = block.pointer("/reasoningContent/reasoningText/text").and_then(Value::as_str) {
            out.push(ModelChunk::Reasoning(text.to_owned()));
        } else if let Some(tool) = block.get("toolUse") {
            out.push(ModelChunk::ToolCallDelta {
                index: calls,
                id: tool["toolUseId"].as_str().map(str::to_owned),
                name: tool["name"].as_str().map(str::to_owned),
                arguments: tool.get("input").map_or_else(|| "{}".to_owned(), Value::to_string),
            });
            calls += 1;
        }
    }
    if let Some(usage) = doc.get("usage") {
        out.push(ModelChunk::Usage(usage_of(usage)));
    }
    out.push(stop(label, doc.get("stopReason").and_then(Value::as_str).unwrap_or("end_turn"))?);
    Ok(out)
}

/// One decoded event-stream message: its string headers and payload.
#[derive(Debug, PartialEq)]
pub(crate) struct EventMessage {
    pub(crate) headers: HashMap<String, String>,
    pub(crate) payload: Vec<u8>,
}

/// Takes one whole message off the front of `buf`, if it holds one; an error for bytes that
/// cannot be an event stream (a bad length or CRC).
pub(crate) fn decode_message(buf: &mut Vec<u8>) -> Result<Option<EventMessage>, String> {
    if buf.len() < 12 {
        return Ok(None);
    }
    let be = |at: usize| u32::from_be_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]) as usize;
    let (total, headers_len) = (be(0), be(4));
    if crc32fast::hash(&buf[..8]) as usize != be(8) {
        return Err("the prelude's checksum does not match".to_owned());
    }
    if total < 16 + headers_len || total > 16 * 1024 * 1024 {
        return Err(format!("a message of {total} bytes cannot hold {headers_len} bytes of headers"));
    }
    if buf.len() < total {
        return Ok(None);
    }
    if crc32fast::hash(&buf[..total - 4]) as usize != be(total - 4) {
        return Err("the message's checksum does not match".to_owned());
    }
    let end = 12 + headers_len;
    let headers = decode_headers(&buf[12..end])?;
    let payload = buf[end..total - 4].to_vec();
    buf.drain(..total);
    Ok(Some(EventMessage { headers, payload }))
}

/// The headers of one message: `name_len`, name, type 7 (string), `u16` length, value, each
/// checked against the end of the header block (a length running past it is an error, not a
/// read beyond it).
fn decode_headers(mut block: &[u8]) -> Result<HashMap<String, String>, String> {
    fn take<'a>(block: &mut &'a [u8], n: usize, what: &str) -> Result<&'a [u8], String> {
        if block.len() < n {
            return Err(format!("the headers end inside {what}"));
        }
        let (taken, rest) = block.split_at(n);
        *block = rest;
        Ok(taken)
    }
    let mut headers = HashMap::new();
    while !block.is_empty() {
        let name_len = take(&mut block, 1, "a header name's length")?[0] as usize;
        let name = String::from_utf8_lossy(take(&mut block, name_len, "a header name")?).into_owned();
        let kind = take(&mut block, 1, "a header type")?[0];
        if kind != 7 {
            return Err(format!("header {name} has type {kind}, not a string"));
        }
        let len = take(&mut block, 2, "a header value's length")?;
        let len = u16::from_be_bytes([len[0], len[1]]) as usize;
        let value = String::from_utf8_lossy(take(&mut block, len, "a header value")?).into_owned();
        headers.insert(name, value);
    }
    Ok(headers)
}

/// The stream's state: which content block is which tool call.
struct StreamState {
    label: String,
    calls: HashMap<u64, usize>,
}

impl crate::http::EventParser<EventMessage> for StreamState {
    fn event(&mut self, message: EventMessage) -> Result<(Vec<ModelChunk>, bool), ModelError> {
        let payload: Value = serde_json::from_slice(&message.payload).map_err(|e| {
            invalid(
                &self.label,
                &format!("an event that is not JSON ({e})"),
                &String::from_utf8_lossy(&message.payload),
            )
        })?;
        let header = |name: &str| message.headers.get(name).map(String::as_str).unwrap_or_default();
        if header(":message-type") == "exception" {
            let kind = header(":exception-type");
            let text = payload.get("message").and_then(Value::as_str).unwrap_or(kind);
            let kind = match kind {
                "throttlingException" | "ThrottlingException" => ModelErrorKind::RateLimited,
                "modelStreamErrorException" | "internalServerException" | "serviceUnavailableException" => {
                    ModelErrorKind::Server
                }
                _ => crate::http::refusal_kind(400, text),
            };
            return Err(ModelError::new(kind, format!("{} reported an error: {text}", self.label)));
        }
        let mut out = Vec::new();
        match header(":event-type") {
            "contentBlockStart" => {
                if let Some(tool) = payload.pointer("/start/toolUse") {
                    let call = self.calls.len();
                    self.calls.insert(payload["contentBlockIndex"].as_u64().unwrap_or(0), call);
                    out.push(ModelChunk::ToolCallDelta {
                        index: call,
                        id: tool["toolUseId"].as_str().map(str::to_owned),
                        name: tool["name"].as_str().map(str::to_owned),
                        arguments: String::new(),
                    });
                }
            }
            "contentBlockDelta" => {
                let delta = &payload["delta"];
                if let Some(text) = delta.get("text").and_then(Value::as_str) {
                    out.push(ModelChunk::Content(text.to_owned()));
                } else if let Some(text) = delta.pointer("/reasoningContent/text").and_then(Value::as_str) {
                    out.push(ModelChunk::Reasoning(text.to_owned()));
                } else if let Some(input) = delta.pointer("/toolUse/input").and_then(Value::as_str) {
                    let Some(call) = self.calls.get(&payload["contentBlockIndex"].as_u64().unwrap_or(u64::MAX)) else {
                        return Err(invalid(
                            &self.label,
                            "tool input for a block that is not a tool call",
                            &payload.to_string(),
                        ));
                    };
                    out.push(ModelChunk::ToolCallDelta {
                        index: *call,
                        id: None,
                        name: None,
                        arguments: input.to_owned(),
                    });
                }
            }
            "messageStop" => out.push(stop(&self.label, payload["stopReason"].as_str().unwrap_or("end_turn"))?),
            "metadata" => {
                if let Some(usage) = payload.get("usage") {
                    out.push(ModelChunk::Usage(usage_of(usage)));
                }
                return Ok((out, true));
            }
            "messageStart" | "contentBlockStop" => {}
            other => return Err(invalid(&self.label, &format!("an unknown event {other:?}"), &payload.to_string())),
        }
        Ok((out, false))
    }
}

/// The messages of an event stream, decoded as their bytes arrive.
fn messages(label: &str, resp: reqwest::Response) -> BoxStream<'static, Result<EventMessage, ModelError>> {
    let label = label.to_owned();
    futures::stream::unfold(
        (resp.bytes_stream().boxed(), Vec::new(), label, false),
        |(mut bytes, mut buf, label, failed)| async move {
            if failed {
                return None;
            }
            loop {
                match decode_message(&mut buf) {
                    Ok(Some(message)) => return Some((Ok(message), (bytes, buf, label, false))),
                    Ok(None) => {}
                    Err(why) => {
                        let err =
                            invalid(&label, &format!("a broken event stream ({why})"), &String::from_utf8_lossy(&buf));
                        return Some((Err(err), (bytes, buf, label, true)));
                    }
                }
                match bytes.next().await {
                    Some(Ok(chunk)) => buf.extend_from_slice(&chunk),
                    Some(Err(e)) => {
                        let err = ModelError::new(ModelErrorKind::Connection, format!("{label} stream broke: {e}"));
                        return Some((Err(err), (bytes, buf, label, true)));
                    }
                    None => return None,
                }
            }
        },
    )
    .boxed()
}

#[async_trait]
impl Model for AwsBedrock {
    fn id(&self) -> &str {
        &self.id
    }

    fn provider(&self) -> &str {
        "AwsBedrock"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { tools: true, native_structured_output: false, json_mode: false, parallel_tool_calls: true }
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let resp = self.send(&self.body(&request), true).await?;
        let state = StreamState { label: self.label(), calls: HashMap::new() };
        Ok(parse_events(self.label(), messages(&self.label(), resp), state))
    }

    async fn invoke(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        let label = self.label();
        let resp = self.send(&self.body(&request), false).await?;
        let doc = json_body(&self.config, &label, resp).await?;
        Ok(ResponseAssembler::assemble(&response_chunks(&label, &doc)?))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A message framed as AWS does: prelude (lengths and their CRC), headers, payload, CRC.
    fn framed(headers: &[u8], payload: &[u8]) -> Vec<u8> {
        let total = (16 + headers.len() + payload.len()) as u32;
        let mut out = total.to_be_bytes().to_vec();
        out.extend_from_slice(&(headers.len() as u32).to_be_bytes());
        out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
        out.extend_from_slice(headers);
        out.extend_from_slice(payload);
        out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
        out
    }

    #[test]
    fn event_stream_messages_decode_and_bad_header_lengths_are_errors() {
        let mut header = vec![11u8];
        header.extend_from_slice(b":event-type");
        header.push(7);
        header.extend_from_slice(&5u16.to_be_bytes());
        header.extend_from_slice(b"hello");
        let mut buf = framed(&header, b"{}");
        let message = decode_message(&mut buf).unwrap().unwrap();
        assert_eq!(message.headers[":event-type"], "hello");
        assert_eq!(message.payload, b"{}");
        assert!(buf.is_empty());

        // Checksums right, but the name's length runs past the header block (and the buffer).
        let mut buf = framed(&[200, b'x'], b"");
        assert_eq!(decode_message(&mut buf).unwrap_err(), "the headers end inside a header name");
        // A value length past the block.
        let mut bad = vec![1u8, b'a', 7];
        bad.extend_from_slice(&u16::MAX.to_be_bytes());
        let mut buf = framed(&bad, b"{}");
        assert_eq!(decode_message(&mut buf).unwrap_err(), "the headers end inside a header value");
    }
}
