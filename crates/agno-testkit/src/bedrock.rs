//! Amazon Bedrock's Converse API on the fake server: `POST /model/{modelId}/converse` and
//! `/converse-stream`, as documented at
//! <https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html> and
//! <https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html>
//! (`messages` of `content` blocks, `system`, `toolConfig`; the answer's `output.message`,
//! `stopReason`, `usage`; the stream's `messageStart`, `contentBlockStart`,
//! `contentBlockDelta`, `contentBlockStop`, `messageStop`, `metadata` events), errors as
//! `{"message"}` with `x-amzn-ErrorType`.
//!
//! Every request is authenticated: a Bedrock API key (`Authorization: Bearer`), or AWS
//! Signature Version 4 (<https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html>)
//! with the test credentials [`ACCESS_KEY_ID`] / [`SECRET_ACCESS_KEY`], verified here: the
//! canonical request is rebuilt from what arrived and the signature recomputed. The stream is
//! `application/vnd.amazon.eventstream` (<https://docs.aws.amazon.com/transcribe/latest/dg/streaming-setting-up.html#streaming-event-stream>):
//! a prelude (total and headers length, CRC32), string headers, the JSON payload and a CRC32.

use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::script::{Completion, EchoContext};
use crate::wire::{ARGS_PIECE_CHARS, TEXT_PIECE_CHARS, Wire, json_answer, maybe_cut, split_chars};

/// The access key id the fake accepts for SigV4.
pub const ACCESS_KEY_ID: &str = "AKIDFAKEBEDROCK";
/// Its secret.
pub const SECRET_ACCESS_KEY: &str = "fake/Secret+Key/For/The/Test/Kit";

/// One Converse call: the model and whether it streams come from the path; the signature is
/// checked against what arrived.
#[derive(Debug)]
pub(crate) struct Converse {
    pub(crate) stream: bool,
    pub(crate) method: Method,
    pub(crate) path: String,
    pub(crate) raw_body: Vec<u8>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let ipad: Vec<u8> = block.iter().map(|b| b ^ 0x36).collect();
    let opad: Vec<u8> = block.iter().map(|b| b ^ 0x5c).collect();
    let inner = Sha256::new().chain_update(&ipad).chain_update(data).finalize();
    Sha256::new().chain_update(&opad).chain_update(inner).finalize().to_vec()
}

/// RFC 3986 encoding of a path segment, as SigV4's canonical URI asks.
fn uri_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn error(status: u16, kind: &str, message: &str) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        code,
        [("x-amzn-errortype", format!("{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"))],
        axum::Json(json!({"message": message})),
    )
        .into_response()
}

impl Converse {
    /// Checks the SigV4 signature (or accepts a bearer API key).
    fn check_auth(&self, headers: &HeaderMap) -> Result<(), (u16, String)> {
        let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        let auth = get("authorization");
        if auth.starts_with("Bearer ") {
            return Ok(());
        }
        let Some(fields) = auth.strip_prefix("AWS4-HMAC-SHA256 ") else {
            return Err((403, "MissingAuthenticationTokenException: Missing Authentication Token".into()));
        };
        let field = |name: &str| {
            fields.split(", ").find_map(|f| f.strip_prefix(&format!("{name}="))).unwrap_or_default().to_owned()
        };
        let credential = field("Credential");
        let mut scope = credential.splitn(2, '/');
        let (key_id, scope) = (scope.next().unwrap_or_default(), scope.next().unwrap_or_default());
        if key_id != ACCESS_KEY_ID {
            return Err((
                403,
                "UnrecognizedClientException: The security token included in the request is invalid.".into(),
            ));
        }
        let parts: Vec<&str> = scope.split('/').collect();
        let [date, region, service, "aws4_request"] = parts.as_slice() else {
            return Err((403, format!("IncompleteSignatureException: bad credential scope {scope}")));
        };
        if *service != "bedrock" {
            return Err((
                403,
                format!(
                    "InvalidSignatureException: credential should be scoped to correct service: 'bedrock', not {service}"
                ),
            ));
        }
        let payload_hash = hex(&Sha256::digest(&self.raw_body));
        let sent_hash = get("x-amz-content-sha256");
        if !sent_hash.is_empty() && sent_hash != payload_hash {
            return Err((400, "XAmzContentSHA256Mismatch: The provided 'x-amz-content-sha256' header does not match what was computed.".into()));
        }
        let signed = field("SignedHeaders");
        let canonical_headers: String = signed.split(';').map(|h| format!("{h}:{}\n", get(h).trim())).collect();
        let canonical_uri: String = self.path.split('/').map(uri_encode).collect::<Vec<_>>().join("/");
        let canonical = format!("{}\n{canonical_uri}\n\n{canonical_headers}\n{signed}\n{payload_hash}", self.method);
        let amz_date = get("x-amz-date");
        let to_sign = format!("AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}", hex(&Sha256::digest(canonical.as_bytes())));
        let key = [*date, *region, *service, "aws4_request"]
            .iter()
            .fold(format!("AWS4{SECRET_ACCESS_KEY}").into_bytes(), |k, part| hmac(&k, part.as_bytes()));
        if hex(&hmac(&key, to_sign.as_bytes())) != field("Signature") {
            return Err((403, "InvalidSignatureException: The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.".into()));
        }
        Ok(())
    }
}

fn blocks(message: &Value) -> &[Value] {
    message.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

fn text_of(message: &Value) -> String {
    blocks(message).iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect()
}

/// One event-stream message: string headers and a payload, with both CRCs.
pub(crate) fn encode_event(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut head = Vec::new();
    for (name, value) in headers {
        head.push(name.len() as u8);
        head.extend_from_slice(name.as_bytes());
        head.push(7);
        head.extend_from_slice(&(value.len() as u16).to_be_bytes());
        head.extend_from_slice(value.as_bytes());
    }
    let total = 12 + head.len() + payload.len() + 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(total as u32).to_be_bytes());
    out.extend_from_slice(&(head.len() as u32).to_be_bytes());
    let prelude_crc = crc32fast::hash(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

fn event(kind: &str, payload: &Value) -> Vec<u8> {
    encode_event(
        &[(":event-type", kind), (":content-type", "application/json"), (":message-type", "event")],
        payload.to_string().as_bytes(),
    )
}

fn binary_response(messages: Vec<Vec<u8>>) -> Response {
    let stream = futures::stream::iter(
        messages.into_iter().map(|m| Ok::<bytes::Bytes, std::convert::Infallible>(bytes::Bytes::from(m))),
    );
    ([(axum::http::header::CONTENT_TYPE, "application/vnd.amazon.eventstream")], axum::body::Body::from_stream(stream))
        .into_response()
}

impl Wire for Converse {
    fn validate(&self, headers: &HeaderMap, body: &Value) -> Result<(), (u16, String)> {
        self.check_auth(headers)?;
        let bad = |m: String| (400, m);
        let Some(messages) = body.get("messages").and_then(Value::as_array).filter(|m| !m.is_empty()) else {
            return Err(bad("ValidationException: A conversation must start with a user message.".into()));
        };
        let mut pending: Vec<String> = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
            if !matches!(role, "user" | "assistant") {
                return Err(bad(format!("ValidationException: messages.{i}.role must be user or assistant")));
            }
            if blocks(m).is_empty() {
                return Err(bad(format!("ValidationException: messages.{i}.content must not be empty")));
            }
            let results: Vec<&str> =
                blocks(m).iter().filter_map(|b| b.pointer("/toolResult/toolUseId").and_then(Value::as_str)).collect();
            let missing: Vec<&String> = pending.iter().filter(|id| !results.contains(&id.as_str())).collect();
            if !missing.is_empty() {
                return Err(bad(format!(
                    "ValidationException: Expected toolResult blocks at messages.{i}.content for the following Ids: {}",
                    missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                )));
            }
            for b in blocks(m) {
                if let Some(tool) = b.get("toolUse")
                    && !tool.get("input").is_some_and(Value::is_object)
                {
                    return Err(bad(format!("ValidationException: messages.{i}: toolUse.input must be an object")));
                }
            }
            pending = blocks(m)
                .iter()
                .filter_map(|b| b.pointer("/toolUse/toolUseId").and_then(Value::as_str).map(str::to_owned))
                .collect();
        }
        if !pending.is_empty() {
            return Err(bad(format!(
                "ValidationException: the final message has toolUse ids without results: {}",
                pending.join(", ")
            )));
        }
        Ok(())
    }

    fn echo_context(&self, body: &Value) -> EchoContext {
        let messages = body.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let is_user = |m: &Value| m.get("role").and_then(Value::as_str) == Some("user");
        let last_user_text = messages.iter().rev().find(|m| is_user(m)).map(text_of).unwrap_or_default();
        let plain =
            messages.last().is_some_and(|m| is_user(m) && !blocks(m).iter().any(|b| b.get("toolResult").is_some()));
        let tool_to_call = plain
            .then(|| body.pointer("/toolConfig/tools/0/toolSpec/name").and_then(Value::as_str).map(str::to_owned))
            .flatten();
        EchoContext { last_user_text, tool_to_call }
    }

    fn is_stream(&self, _body: &Value) -> bool {
        self.stream
    }

    fn error(&self, status: u16, message: &str) -> Response {
        // "Kind: message" from validation; the scripted ones get the status's kind.
        let (kind, text) = match message.split_once(": ") {
            Some((k, t)) if k.ends_with("Exception") => (k.to_owned(), t.to_owned()),
            _ => (
                match status {
                    400 => "ValidationException",
                    403 => "AccessDeniedException",
                    404 => "ResourceNotFoundException",
                    429 => "ThrottlingException",
                    503 => "ServiceUnavailableException",
                    _ => "InternalServerException",
                }
                .to_owned(),
                message.to_owned(),
            ),
        };
        error(status, &kind, &text)
    }

    fn completion(&self, _n: u64, body: &Value, completion: &Completion, stream: bool) -> Response {
        let prompt_chars: usize = body
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|m| text_of(m).chars().count())
            .sum();
        let (input, output) = crate::wire::token_counts(prompt_chars, completion);
        let usage = json!({"inputTokens": input, "outputTokens": output, "totalTokens": input + output});
        let stop_reason = if completion.filtered.is_some() {
            "guardrail_intervened"
        } else if completion.calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        };
        let mut content = Vec::new();
        if let Some(r) = &completion.reasoning {
            content.push(json!({"reasoningContent": {"reasoningText": {"text": r, "signature": "fake"}}}));
        }
        if let Some(t) = &completion.content {
            content.push(json!({"text": t}));
        }
        for (i, (name, args)) in completion.calls.iter().enumerate() {
            let input = serde_json::from_str::<Value>(args).ok().filter(Value::is_object).unwrap_or(json!({}));
            content.push(
                json!({"toolUse": {"toolUseId": format!("tooluse_{i}_{}", args.len()), "name": name, "input": input}}),
            );
        }
        if !stream {
            let doc = json!({"output": {"message": {"role": "assistant", "content": content}}, "stopReason": stop_reason, "usage": usage, "metrics": {"latencyMs": 12}});
            return json_answer(&doc, completion.cut);
        }
        let mut events = vec![event("messageStart", &json!({"role": "assistant"}))];
        for (index, block) in content.iter().enumerate() {
            if let Some(tool) = block.get("toolUse") {
                events.push(event("contentBlockStart", &json!({"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": tool["toolUseId"], "name": tool["name"]}}})));
                for piece in split_chars(&tool["input"].to_string(), ARGS_PIECE_CHARS) {
                    events.push(event(
                        "contentBlockDelta",
                        &json!({"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}}),
                    ));
                }
            } else if let Some(text) = block.get("text").and_then(Value::as_str) {
                for piece in split_chars(text, TEXT_PIECE_CHARS) {
                    events.push(event(
                        "contentBlockDelta",
                        &json!({"contentBlockIndex": index, "delta": {"text": piece}}),
                    ));
                }
            } else if let Some(text) = block.pointer("/reasoningContent/reasoningText/text").and_then(Value::as_str) {
                for piece in split_chars(text, TEXT_PIECE_CHARS) {
                    events.push(event(
                        "contentBlockDelta",
                        &json!({"contentBlockIndex": index, "delta": {"reasoningContent": {"text": piece}}}),
                    ));
                }
            }
            events.push(event("contentBlockStop", &json!({"contentBlockIndex": index})));
        }
        events.push(event("messageStop", &json!({"stopReason": stop_reason})));
        events.push(event("metadata", &json!({"usage": usage, "metrics": {"latencyMs": 12}})));
        binary_response(maybe_cut(events, completion.cut))
    }

    fn garbage(&self, raw: &str, stream: bool) -> Response {
        if stream {
            binary_response(vec![raw.as_bytes().to_vec()])
        } else {
            ([(axum::http::header::CONTENT_TYPE, "application/json")], raw.to_owned()).into_response()
        }
    }
}
