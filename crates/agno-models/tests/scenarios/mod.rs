//! Provider-neutral model scenarios, run against the fake provider server of `agno-testkit`.
//!
//! A provider suite implements [`Harness`]: start a fake server, build an `Arc<dyn Model>`
//! pointing at it, and read a recorded request of that provider's wire format back into a
//! provider-neutral [`WireRequest`]. [`provider_suite!`] then instantiates every scenario as a
//! `#[tokio::test]`, once per [`Mode`] (`Model::stream` collected with `ResponseAssembler`, and
//! `Model::invoke`, which makes a non-streaming request).
//!
//! Scenarios assert what a caller sees (content, tool calls, usage, error kinds) and what the
//! server received (through [`Harness::inspect`]), never timings.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// A provider suite may instantiate only part of the scenarios.
#![allow(dead_code)]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use agno_core::{
    Message, Model, ModelChunk, ModelError, ModelErrorKind, ModelRequest, ModelResponse, ResponseAssembler,
    ResponseFormat, Role, ToolCall, ToolDefinition, Usage,
};
use agno_models::{FallbackModel, RetryPolicy};
use agno_testkit::{FakeProvider, RecordedRequest, Reply};
use futures::StreamExt;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// The retry policy scenario models use unless a scenario says otherwise: two quick retries.
pub(crate) fn test_retry() -> RetryPolicy {
    RetryPolicy { max_retries: 2, base_delay: Duration::from_millis(10), max_delay: Duration::from_millis(50) }
}

/// What a provider suite supplies so the scenarios can run against its wire format.
pub(crate) trait Harness: Sized {
    /// The model id the harness's models are built with.
    const MODEL_ID: &'static str;

    /// Whether the wire format names a structured-output schema (Anthropic's does not).
    const SCHEMA_NAMES: bool = true;

    /// Whether tool-call arguments stream in pieces (Gemini sends each call whole).
    const STREAMS_TOOL_ARGUMENTS: bool = true;

    /// Whether tool calls carry ids on the wire (Ollama's do not: results go by tool name).
    const TOOL_CALL_IDS: bool = true;

    /// Starts a fresh fake server (each scenario gets its own).
    fn start() -> impl Future<Output = Self>;

    /// The fake server.
    fn server(&self) -> &FakeProvider;

    /// A model pointing at `base_url` with the harness's API key and `retry`.
    fn model_at(&self, base_url: &str, retry: RetryPolicy) -> Arc<dyn Model>;

    /// The header (lower-case name, value) that carries the API key on this wire format.
    fn auth_header(&self) -> (&'static str, String);

    /// Reads a recorded request back into the neutral view, asserting the provider's wire shape
    /// along the way (panics on a malformed request).
    fn inspect(&self, request: &RecordedRequest) -> WireRequest;

    /// Base URL of the fake server for this wire format.
    fn base_url(&self) -> String {
        self.server().base_url()
    }

    /// A model pointing at the harness's server, with [`test_retry`].
    fn model(&self) -> Arc<dyn Model> {
        self.model_at(&self.base_url(), test_retry())
    }

    /// A model pointing at the harness's server, with `retry`.
    fn model_with_retry(&self, retry: RetryPolicy) -> Arc<dyn Model> {
        self.model_at(&self.base_url(), retry)
    }

    /// Appends a scripted reply.
    fn push(&self, reply: Reply) {
        self.server().push(reply);
    }

    /// Reply served whenever the script is empty.
    fn set_fallback(&self, reply: Reply) {
        self.server().set_fallback(Some(reply));
    }

    /// Number of requests the server received.
    fn request_count(&self) -> usize {
        self.server().request_count()
    }

    /// Every request, inspected.
    fn wire_requests(&self) -> Vec<WireRequest> {
        self.server().requests().iter().map(|r| self.inspect(r)).collect()
    }

    /// The only request the server received, inspected; also checks it carried the API key.
    fn single_request(&self) -> WireRequest {
        let requests = self.server().requests();
        assert_eq!(requests.len(), 1, "expected exactly one request, got {requests:#?}");
        let (name, value) = self.auth_header();
        assert_eq!(requests[0].header(name), Some(value.as_str()), "api key header {name}");
        self.inspect(&requests[0])
    }
}

/// A provider-neutral view of one request the fake server received.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WireRequest {
    /// The model id the request named.
    pub(crate) model: Option<String>,
    /// Whether a streamed answer was asked for.
    pub(crate) stream: bool,
    /// The conversation, in order (system instructions included, as a `system` message).
    pub(crate) messages: Vec<WireMessage>,
    /// Tool definitions, in order.
    pub(crate) tools: Vec<ToolDefinition>,
    /// The structured-output request.
    pub(crate) structured: Structured,
    /// Whether the request asked for token usage to be reported.
    pub(crate) usage_requested: bool,
}

/// One message of a [`WireRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WireMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub(crate) role: String,
    /// Text content (empty when there is none).
    pub(crate) text: String,
    /// Ids of the tool calls of an assistant message.
    pub(crate) tool_call_ids: Vec<String>,
    /// The call a tool result answers.
    pub(crate) tool_call_id: Option<String>,
}

impl WireMessage {
    /// A plain text message.
    pub(crate) fn text(role: &str, text: &str) -> Self {
        Self { role: role.to_owned(), text: text.to_owned(), tool_call_ids: Vec::new(), tool_call_id: None }
    }
}

/// The structured-output part of a [`WireRequest`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Structured {
    /// No structured output asked for.
    None,
    /// Native JSON-schema output.
    JsonSchema {
        /// Schema name.
        name: String,
        /// The schema.
        schema: Value,
        /// Strict mode.
        strict: bool,
    },
    /// JSON mode.
    JsonObject,
}

/// Reads a Chat Completions request body, asserting its OpenAI shape (whatever its path: OpenAI's
/// `/v1/chat/completions`, an Azure deployment's).
pub(crate) fn chat_completions_wire(request: &RecordedRequest) -> WireRequest {
    assert_eq!(request.header("content-type"), Some("application/json"));
    let body = &request.body;
    assert!(body.is_object(), "the body is a JSON object: {body}");
    let stream = body.get("stream").map(|s| s.as_bool().expect("`stream` is a boolean")).unwrap_or(false);
    if !stream {
        assert!(body.get("stream_options").is_none(), "stream_options only with stream: {body}");
    }
    let messages = body["messages"]
        .as_array()
        .expect("`messages` is an array")
        .iter()
        .map(|m| {
            let role = m["role"].as_str().expect("`role` is a string").to_owned();
            let text = match m.get("content") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
                Some(other) => panic!("content must be a string, parts or null: {other}"),
            };
            let tool_call_ids = m
                .get("tool_calls")
                .map(|calls| {
                    calls
                        .as_array()
                        .expect("`tool_calls` is an array")
                        .iter()
                        .map(|c| {
                            assert_eq!(c["type"], "function", "tool call shape: {c}");
                            assert!(c["function"]["name"].is_string(), "tool call shape: {c}");
                            assert!(c["function"]["arguments"].is_string(), "arguments are a JSON string: {c}");
                            c["id"].as_str().expect("tool call id").to_owned()
                        })
                        .collect()
                })
                .unwrap_or_default();
            let tool_call_id =
                m.get("tool_call_id").map(|id| id.as_str().expect("tool_call_id is a string").to_owned());
            WireMessage { role, text, tool_call_ids, tool_call_id }
        })
        .collect();
    let tools = body
        .get("tools")
        .map(|tools| {
            tools
                .as_array()
                .expect("`tools` is an array")
                .iter()
                .map(|t| {
                    assert_eq!(t["type"], "function", "OpenAI tool shape: {t}");
                    let f = &t["function"];
                    assert!(f["parameters"].is_object(), "function.parameters is a schema object: {t}");
                    ToolDefinition {
                        name: f["name"].as_str().expect("function.name").to_owned(),
                        description: f.get("description").map(|d| d.as_str().expect("description").to_owned()),
                        parameters: f["parameters"].clone().into(),
                        strict: f.get("strict").is_some_and(|s| s.as_bool().expect("strict is a boolean")),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let structured = match body.get("response_format") {
        None => Structured::None,
        Some(rf) => match rf["type"].as_str() {
            Some("json_schema") => {
                let js = &rf["json_schema"];
                Structured::JsonSchema {
                    name: js["name"].as_str().expect("json_schema.name").to_owned(),
                    schema: js["schema"].clone(),
                    strict: js["strict"].as_bool().unwrap_or(false),
                }
            }
            Some("json_object") => {
                assert_eq!(rf, &json!({"type": "json_object"}));
                Structured::JsonObject
            }
            _ => panic!("unknown response_format: {rf}"),
        },
    };
    WireRequest {
        model: body["model"].as_str().map(str::to_owned),
        stream,
        messages,
        tools,
        structured,
        usage_requested: body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true)),
    }
}

// ---------------------------------------------------------------------------------------------
// Running a request
// ---------------------------------------------------------------------------------------------

/// How a scenario calls the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `Model::stream`, collected with `ResponseAssembler`.
    Stream,
    /// `Model::invoke`.
    Invoke,
}

impl Mode {
    /// True for [`Mode::Stream`].
    pub(crate) fn is_stream(self) -> bool {
        self == Mode::Stream
    }
}

/// What one call produced.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// The assembled response.
    pub(crate) response: ModelResponse,
    /// Every streamed chunk, in order (empty for [`Mode::Invoke`]).
    pub(crate) chunks: Vec<ModelChunk>,
}

impl Outcome {
    /// The content deltas, in order.
    pub(crate) fn content_chunks(&self) -> Vec<&str> {
        self.chunks
            .iter()
            .filter_map(|c| match c {
                ModelChunk::Content(text) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// `(id, name, arguments)` of every tool-call delta of call `index`, in order.
    pub(crate) fn tool_deltas(&self, index: usize) -> Vec<(Option<&str>, Option<&str>, &str)> {
        self.chunks
            .iter()
            .filter_map(|c| match c {
                ModelChunk::ToolCallDelta { index: i, id, name, arguments } if *i == index => {
                    Some((id.as_deref(), name.as_deref(), arguments.as_str()))
                }
                _ => None,
            })
            .collect()
    }

    /// Every usage chunk.
    pub(crate) fn usage_chunks(&self) -> Vec<Usage> {
        self.chunks
            .iter()
            .filter_map(|c| match c {
                ModelChunk::Usage(u) => Some(*u),
                _ => None,
            })
            .collect()
    }
}

/// Calls `model` in `mode`; the first error (of the call or of the stream) is returned.
pub(crate) async fn run(model: &dyn Model, request: ModelRequest, mode: Mode) -> Result<Outcome, ModelError> {
    match mode {
        Mode::Stream => {
            let mut stream = model.stream(request).await?;
            let mut assembler = ResponseAssembler::new();
            let mut chunks = Vec::new();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk?;
                assembler.push(&chunk);
                chunks.push(chunk);
            }
            Ok(Outcome { response: assembler.finish(), chunks })
        }
        Mode::Invoke => Ok(Outcome { response: model.invoke(request).await?, chunks: Vec::new() }),
    }
}

/// Like [`run`], expecting success.
pub(crate) async fn run_ok(model: &dyn Model, request: ModelRequest, mode: Mode) -> Outcome {
    match run(model, request, mode).await {
        Ok(outcome) => outcome,
        Err(e) => panic!("{mode:?} call failed: {:?}: {e}", e.kind),
    }
}

/// Like [`run`], expecting failure.
pub(crate) async fn run_err(model: &dyn Model, request: ModelRequest, mode: Mode) -> ModelError {
    match run(model, request, mode).await {
        Ok(outcome) => panic!("{mode:?} call unexpectedly succeeded: {:?}", outcome.response),
        Err(e) => e,
    }
}

/// A request with one user message.
pub(crate) fn ask(text: &str) -> ModelRequest {
    ModelRequest { messages: vec![Message::user(text)], ..ModelRequest::default() }
}

/// A tool definition with an object schema.
pub(crate) fn tool(name: &str, description: &str, parameters: Value) -> ToolDefinition {
    ToolDefinition {
        name: name.to_owned(),
        description: Some(description.to_owned()),
        parameters: parameters.into(),
        strict: false,
    }
}

/// The `get_weather` tool used by several scenarios.
pub(crate) fn weather_tool() -> ToolDefinition {
    tool(
        "get_weather",
        "Current weather for a city.",
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
            },
            "required": ["city"]
        }),
    )
}

/// The `get_time` tool used by the parallel-call scenario.
pub(crate) fn time_tool() -> ToolDefinition {
    tool(
        "get_time",
        "Current local time in a time zone.",
        json!({"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}),
    )
}

fn parse_args(call: &ToolCall) -> Value {
    serde_json::from_str(&call.function.arguments).unwrap_or_else(|e| {
        panic!("arguments of {} are not JSON ({e}): {:?}", call.function.name, call.function.arguments)
    })
}

fn assert_error(err: &ModelError, kind: ModelErrorKind, status: Option<u16>) {
    assert_eq!(err.kind, kind, "unexpected error kind; message: {}", err.message);
    assert_eq!(err.status, status, "unexpected status; message: {}", err.message);
    assert!(!err.message.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------

/// 1. A plain answer: content, the request's model, messages, stream flag and API key.
pub(crate) async fn plain_answer<H: Harness>(h: &H, mode: Mode) {
    let text = "Hello from the fake provider.";
    h.push(Reply::text(text));
    let model = h.model();
    assert_eq!(model.id(), H::MODEL_ID);
    let request = ModelRequest {
        messages: vec![Message::system("Answer briefly."), Message::user("Say hello.")],
        ..ModelRequest::default()
    };

    let out = run_ok(&*model, request, mode).await;

    assert_eq!(out.response.content, text);
    assert!(out.response.tool_calls.is_empty(), "{:?}", out.response.tool_calls);
    assert!(out.response.reasoning.is_none());
    assert!(out.response.finish_reason.is_some(), "a finished answer has a finish reason");
    if mode.is_stream() {
        assert_eq!(out.content_chunks().concat(), text);
        assert!(out.response.time_to_first_token.is_some());
    }
    let wire = h.single_request();
    assert_eq!(wire.model.as_deref(), Some(H::MODEL_ID));
    assert_eq!(wire.stream, mode.is_stream(), "stream flag of a {mode:?} call");
    assert_eq!(
        wire.messages,
        vec![WireMessage::text("system", "Answer briefly."), WireMessage::text("user", "Say hello.")]
    );
    assert!(wire.tools.is_empty());
    assert_eq!(wire.structured, Structured::None);
}

/// 2. A longer, non-ASCII answer: streamed in several content chunks that concatenate to it.
pub(crate) async fn streamed_answer<H: Harness>(h: &H, mode: Mode) {
    let text = "Streaming works: héllo wörld 🦀, ünïcode survives chunking — every byte of it.";
    h.push(Reply::text(text));

    let out = run_ok(&*h.model(), ask("Tell me something long."), mode).await;

    assert_eq!(out.response.content, text);
    if mode.is_stream() {
        let pieces = out.content_chunks();
        assert!(pieces.len() > 1, "expected several content chunks, got {pieces:?}");
        assert!(pieces.iter().all(|p| !p.is_empty()), "empty content chunk in {pieces:?}");
        assert_eq!(pieces.concat(), text);
    } else {
        assert!(out.chunks.is_empty());
    }
    assert_eq!(h.single_request().stream, mode.is_stream());
}

/// 3. One tool call: name, id, parsed arguments; the request carried the tool definition.
pub(crate) async fn one_tool_call<H: Harness>(h: &H, mode: Mode) {
    let args = json!({"city": "Paris", "unit": "celsius"});
    h.push(Reply::tool_call("get_weather", args.to_string()));
    let request = ModelRequest { tools: vec![weather_tool()], ..ask("What is the weather in Paris?") };

    let out = run_ok(&*h.model(), request, mode).await;

    let calls = &out.response.tool_calls;
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].function.name, "get_weather");
    assert_eq!(calls[0].kind, "function");
    assert!(!calls[0].id.is_empty());
    assert_eq!(parse_args(&calls[0]), args);
    assert_eq!(out.response.content, "");
    assert!(out.response.finish_reason.is_some());
    let wire = h.single_request();
    assert_eq!(wire.tools, vec![weather_tool()]);
    assert_eq!(wire.stream, mode.is_stream());
}

/// 4. Two tool calls in one turn (after some text): order kept, ids distinct.
pub(crate) async fn parallel_tool_calls<H: Harness>(h: &H, mode: Mode) {
    let weather = json!({"city": "Paris"});
    let time = json!({"zone": "Asia/Tokyo"});
    h.push(Reply::ToolCalls {
        content: Some("Checking both.".to_owned()),
        calls: vec![("get_weather".to_owned(), weather.to_string()), ("get_time".to_owned(), time.to_string())],
    });
    let request =
        ModelRequest { tools: vec![weather_tool(), time_tool()], ..ask("Weather in Paris and time in Tokyo?") };

    let out = run_ok(&*h.model(), request, mode).await;

    assert_eq!(out.response.content, "Checking both.");
    let calls = &out.response.tool_calls;
    let names: Vec<&str> = calls.iter().map(|c| c.function.name.as_str()).collect();
    assert_eq!(names, ["get_weather", "get_time"]);
    assert!(calls.iter().all(|c| !c.id.is_empty()), "{calls:?}");
    assert_ne!(calls[0].id, calls[1].id);
    assert_eq!(parse_args(&calls[0]), weather);
    assert_eq!(parse_args(&calls[1]), time);
    if mode.is_stream() {
        assert!(!out.tool_deltas(0).is_empty() && !out.tool_deltas(1).is_empty());
    }
    assert_eq!(h.single_request().tools, vec![weather_tool(), time_tool()]);
}

/// 5. Long tool-call arguments: streamed in several deltas of one call, reassembled exactly.
pub(crate) async fn split_tool_arguments<H: Harness>(h: &H, mode: Mode) {
    let args = r#"{"query":"rust async streaming parsers","limit":10,"filters":{"lang":"en","since":"2024-01-01"}}"#;
    let search = tool(
        "search",
        "Search the web.",
        json!({"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}}),
    );
    h.push(Reply::tool_call("search", args));
    let request = ModelRequest { tools: vec![search], ..ask("Search for rust parsers.") };

    let out = run_ok(&*h.model(), request, mode).await;

    let calls = &out.response.tool_calls;
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].function.name, "search");
    assert_eq!(calls[0].function.arguments, args, "arguments are reassembled byte for byte");
    if mode.is_stream() && H::STREAMS_TOOL_ARGUMENTS {
        let deltas = out.tool_deltas(0);
        assert!(deltas.len() > 1, "expected the arguments in several deltas, got {deltas:?}");
        assert_eq!(deltas.iter().map(|d| d.2).collect::<String>(), args);
        assert_eq!(deltas[0].1, Some("search"), "the first delta names the function");
        assert!(deltas[0].0.is_some_and(|id| !id.is_empty()), "the first delta carries the id");
        assert_eq!(deltas.iter().filter(|d| d.1.is_some()).count(), 1, "the name is sent once");
    }
}

/// 6a. Structured output with a JSON schema: native models send the schema.
pub(crate) async fn structured_output<H: Harness>(h: &H, mode: Mode) {
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}},
        "required": ["city", "temperature"],
        "additionalProperties": false
    });
    let answer = json!({"city": "Paris", "temperature": 21});
    h.push(Reply::text(answer.to_string()));
    let model = h.model();
    let request = ModelRequest {
        response_format: Some(ResponseFormat::JsonSchema {
            name: "weather_report".to_owned(),
            schema: schema.clone(),
            strict: true,
        }),
        ..ask("Weather in Paris as JSON.")
    };

    let out = run_ok(&*model, request, mode).await;

    let parsed: Value = serde_json::from_str(&out.response.content).expect("structured answer is JSON");
    assert_eq!(parsed, answer);
    let expected = if model.capabilities().native_structured_output {
        let name = if H::SCHEMA_NAMES { "weather_report" } else { "" };
        Structured::JsonSchema { name: name.to_owned(), schema, strict: H::SCHEMA_NAMES }
    } else if model.capabilities().json_mode {
        Structured::JsonObject
    } else {
        // Neither: the runtime asks for JSON in the prompt and parses the answer.
        Structured::None
    };
    assert_eq!(h.single_request().structured, expected);
}

/// 6c. Structured output asked for while tools are offered: the tools and the schema both go,
///     and a tool call still comes back as one.
pub(crate) async fn structured_output_with_tools<H: Harness>(h: &H, mode: Mode) {
    let schema = json!({
        "type": "object",
        "properties": {"summary": {"type": "string"}},
        "required": ["summary"],
        "additionalProperties": false
    });
    h.push(Reply::tool_call("get_weather", r#"{"city":"Oslo"}"#));
    let model = h.model();
    let request = ModelRequest {
        tools: vec![weather_tool()],
        response_format: Some(ResponseFormat::JsonSchema {
            name: "report".to_owned(),
            schema: schema.clone(),
            strict: true,
        }),
        ..ask("Report on the weather in Oslo.")
    };

    let out = run_ok(&*model, request, mode).await;

    assert_eq!(out.response.tool_calls.len(), 1);
    assert_eq!(parse_args(&out.response.tool_calls[0]), json!({"city": "Oslo"}));
    let wire = h.single_request();
    assert_eq!(wire.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["get_weather"]);
    if model.capabilities().native_structured_output {
        assert!(
            matches!(wire.structured, Structured::JsonSchema { schema: ref s, .. } if *s == schema),
            "{:?}",
            wire.structured
        );
    }
}

/// 12. A stream cut off before the provider's end marker (a whole answer cut halfway): an
///     error, never a silently short answer.
pub(crate) async fn cut_stream_is_an_error<H: Harness>(h: &H, mode: Mode) {
    h.push(Reply::Cut(Box::new(Reply::text("This answer will never be finished by the server."))));
    h.set_fallback(Reply::text("a retry must not happen"));

    let err = run_err(&*h.model(), ask("Hi"), mode).await;

    if mode.is_stream() {
        assert_eq!(err.kind, ModelErrorKind::Connection, "{}", err.message);
        assert!(err.message.contains("ended before the response was complete"), "{}", err.message);
    } else {
        assert_eq!(err.kind, ModelErrorKind::InvalidResponse, "{}", err.message);
    }
    assert_eq!(h.request_count(), 1, "a broken answer is not retried (it may have cost tokens)");
}

/// 6b. JSON mode.
pub(crate) async fn json_mode<H: Harness>(h: &H, mode: Mode) {
    h.push(Reply::text(r#"{"ok":true}"#));
    let request = ModelRequest { response_format: Some(ResponseFormat::JsonObject), ..ask("Reply with JSON.") };

    let out = run_ok(&*h.model(), request, mode).await;

    assert_eq!(serde_json::from_str::<Value>(&out.response.content).unwrap(), json!({"ok": true}));
    // A provider without a JSON mode is asked plainly (the runtime then parses the answer).
    let expected = if h.model().capabilities().json_mode { Structured::JsonObject } else { Structured::None };
    assert_eq!(h.single_request().structured, expected);
}

/// 7. Usage accounting: tokens reported and consistent; streams ask for usage.
pub(crate) async fn usage_accounting<H: Harness>(h: &H, mode: Mode) {
    h.push(Reply::text("Paris is the capital of France."));

    let out = run_ok(&*h.model(), ask("What is the capital of France?"), mode).await;

    let usage = out.response.usage.expect("the response reports usage");
    assert!(usage.input_tokens > 0, "{usage:?}");
    assert!(usage.output_tokens > 0, "{usage:?}");
    assert_eq!(usage.total_tokens, usage.input_tokens + usage.output_tokens, "{usage:?}");
    let wire = h.single_request();
    if mode.is_stream() {
        assert_eq!(out.usage_chunks(), vec![usage], "exactly one usage chunk");
        assert!(wire.usage_requested, "a streaming request must ask for usage");
    }
}

/// 8. 429 (retry-after 0) then success: the retry succeeds with the same request.
pub(crate) async fn rate_limited_then_success<H: Harness>(h: &H, mode: Mode) {
    h.push(Reply::Error { status: 429, message: "Rate limit reached".to_owned(), retry_after: Some(0) });
    h.push(Reply::text("Worth the wait."));

    let out = run_ok(&*h.model(), ask("Hi"), mode).await;

    assert_eq!(out.response.content, "Worth the wait.");
    let requests = h.wire_requests();
    assert_eq!(requests.len(), 2, "one refused request, one retry");
    assert_eq!(requests[0], requests[1], "the retry resends the same request");
}

/// 9a. 500 forever: retried, then a `Server` error that says it gave up.
pub(crate) async fn server_error_gives_up<H: Harness>(h: &H, mode: Mode) {
    h.set_fallback(Reply::Error { status: 500, message: "upstream exploded".to_owned(), retry_after: None });

    let err = run_err(&*h.model(), ask("Hi"), mode).await;

    assert_error(&err, ModelErrorKind::Server, Some(500));
    assert!(err.is_retryable());
    assert!(err.message.contains("500"), "{}", err.message);
    assert!(err.message.contains("upstream exploded"), "{}", err.message);
    assert!(err.message.contains("gave up"), "{}", err.message);
    assert_eq!(h.request_count(), 1 + test_retry().max_retries as usize, "first attempt plus every retry");
}

/// 9b. 400 is not retried (a retry would have succeeded).
pub(crate) async fn bad_request_not_retried<H: Harness>(h: &H, mode: Mode) {
    h.push(Reply::Error { status: 400, message: "Invalid value for 'temperature'".to_owned(), retry_after: None });
    h.set_fallback(Reply::text("a retry must not happen"));

    let err = run_err(&*h.model(), ask("Hi"), mode).await;

    assert_error(&err, ModelErrorKind::BadRequest, Some(400));
    assert!(!err.is_retryable());
    assert!(err.message.contains("Invalid value for 'temperature'"), "{}", err.message);
    assert!(!err.message.contains("gave up"), "{}", err.message);
    assert_eq!(h.request_count(), 1);
}

/// 9c. 401 and 403 are `Auth` errors, not retried.
pub(crate) async fn auth_error_not_retried<H: Harness>(h: &H, mode: Mode) {
    h.push(Reply::Error { status: 401, message: "Incorrect API key provided".to_owned(), retry_after: None });
    h.push(Reply::Error { status: 403, message: "Project has no access".to_owned(), retry_after: None });
    h.set_fallback(Reply::text("a retry must not happen"));
    let model = h.model();

    let err = run_err(&*model, ask("Hi"), mode).await;
    assert_error(&err, ModelErrorKind::Auth, Some(401));
    assert!(err.message.contains("Incorrect API key provided"), "{}", err.message);
    assert_eq!(h.request_count(), 1);

    let err = run_err(&*model, ask("Hi"), mode).await;
    assert_error(&err, ModelErrorKind::Auth, Some(403));
    assert_eq!(h.request_count(), 2);
}

/// 10. A 200 answer that is not JSON: `InvalidResponse` quoting it, not retried.
pub(crate) async fn garbage_is_invalid_response<H: Harness>(h: &H, mode: Mode) {
    let raw = "this is not json{";
    h.push(Reply::Garbage(raw.to_owned()));
    h.set_fallback(Reply::text("a retry must not happen"));

    let err = run_err(&*h.model(), ask("Hi"), mode).await;

    assert_error(&err, ModelErrorKind::InvalidResponse, None);
    assert!(err.message.to_lowercase().contains("json"), "{}", err.message);
    assert!(err.message.contains(raw), "the message quotes what was received: {}", err.message);
    assert!(err.message.contains(H::MODEL_ID), "the message names the model: {}", err.message);
    assert_eq!(h.request_count(), 1);
}

/// 11. Nothing listens at the base URL: `Connection`, naming the URL.
pub(crate) async fn unreachable_base_url<H: Harness>(h: &H, mode: Mode) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let url = format!("http://127.0.0.1:{port}/v1");
    let model = h.model_at(&url, test_retry());

    let err = run_err(&*model, ask("Hi"), mode).await;

    assert_error(&err, ModelErrorKind::Connection, None);
    assert!(err.is_retryable());
    assert!(err.message.contains(&url), "the message names the URL: {}", err.message);
    assert_eq!(h.request_count(), 0);
}

/// 13a. Fallback: the primary fails (500, no retries), a broken fallback fails, the next answers.
pub(crate) async fn fallback_to_secondary<H: Harness>(h: &H, mode: Mode) {
    h.set_fallback(Reply::Error { status: 500, message: "primary down".to_owned(), retry_after: None });
    let broken = H::start().await;
    broken.set_fallback(Reply::Error { status: 401, message: "bad key".to_owned(), retry_after: None });
    let good = H::start().await;
    good.push(Reply::text("answer from the secondary"));
    let primary = h.model_with_retry(RetryPolicy::none());
    let model = FallbackModel::new(Arc::clone(&primary), vec![broken.model(), good.model()]);
    assert_eq!(model.id(), primary.id());
    assert_eq!(model.provider(), primary.provider());

    let out = run_ok(&model, ask("Hi"), mode).await;

    assert_eq!(out.response.content, "answer from the secondary");
    assert_eq!(h.request_count(), 1, "no retries on the primary");
    assert_eq!(broken.request_count(), 1);
    let wire = good.single_request();
    assert_eq!(wire.messages, vec![WireMessage::text("user", "Hi")], "the fallback got the same conversation");
}

/// 13b. Fallback: when every model fails, the last error is returned.
pub(crate) async fn fallback_all_fail<H: Harness>(h: &H, mode: Mode) {
    h.set_fallback(Reply::Error { status: 500, message: "primary down".to_owned(), retry_after: None });
    let secondary = H::start().await;
    secondary.set_fallback(Reply::Error { status: 400, message: "secondary refuses".to_owned(), retry_after: None });
    let model = FallbackModel::new(h.model_with_retry(RetryPolicy::none()), vec![secondary.model()]);

    let err = run_err(&model, ask("Hi"), mode).await;

    assert_error(&err, ModelErrorKind::BadRequest, Some(400));
    assert!(err.message.contains("secondary refuses"), "{}", err.message);
    assert_eq!(h.request_count(), 1);
    assert_eq!(secondary.request_count(), 1);
}

/// 14a. The fake server checks request shape: an assistant tool call without its result is
/// refused with 400 (`BadRequest`, naming the call), not retried.
pub(crate) async fn unpaired_tool_call_rejected<H: Harness>(h: &H, mode: Mode) {
    if !H::TOOL_CALL_IDS {
        // Without ids on the wire a provider cannot tell an answered call from an orphan.
        return;
    }
    h.set_fallback(Reply::text("must not be served"));
    let request = ModelRequest {
        messages: vec![
            Message::user("What is the weather in Paris?"),
            Message::assistant("", vec![ToolCall::new("call_orphan", "get_weather", r#"{"city":"Paris"}"#)]),
            Message::user("Well?"),
        ],
        tools: vec![weather_tool()],
        ..ModelRequest::default()
    };

    let err = run_err(&*h.model(), request, mode).await;

    assert_error(&err, ModelErrorKind::BadRequest, Some(400));
    assert!(err.message.contains("call_orphan"), "{}", err.message);
    let wire = h.single_request();
    let roles: Vec<&str> = wire.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "user"], "the conversation was sent as given");
    assert_eq!(wire.messages[1].tool_call_ids, ["call_orphan"]);
}

/// 14b. A full tool round trip: the call the model made, then its result, is accepted and
/// answered; the ids the model returned are the ones the server expects back.
pub(crate) async fn tool_result_round_trip<H: Harness>(h: &H, mode: Mode) {
    h.push(Reply::tool_call("get_weather", r#"{"city":"Paris"}"#));
    h.push(Reply::text("It is 21°C and sunny in Paris."));
    let model = h.model();
    let mut messages = vec![Message::user("What is the weather in Paris?")];

    let first = run_ok(
        &*model,
        ModelRequest { messages: messages.clone(), tools: vec![weather_tool()], ..ModelRequest::default() },
        mode,
    )
    .await;
    let call = first.response.tool_calls.first().expect("a tool call").clone();
    messages.push(Message::assistant(first.response.content.clone(), first.response.tool_calls.clone()));
    messages.push(Message::tool_result(call.id.clone(), "get_weather", "21°C, sunny", false));
    assert!(agno_core::tool_calls_paired(&messages));
    let second =
        run_ok(&*model, ModelRequest { messages, tools: vec![weather_tool()], ..ModelRequest::default() }, mode).await;

    assert_eq!(second.response.content, "It is 21°C and sunny in Paris.");
    assert!(second.response.tool_calls.is_empty());
    let requests = h.wire_requests();
    assert_eq!(requests.len(), 2);
    let sent = &requests[1].messages;
    let roles: Vec<&str> = sent.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, [Role::User.as_str(), Role::Assistant.as_str(), Role::Tool.as_str()]);
    if H::TOOL_CALL_IDS {
        assert_eq!(sent[1].tool_call_ids, vec![call.id.clone()]);
        assert_eq!(sent[2].tool_call_id.as_deref(), Some(call.id.as_str()));
    }
    assert_eq!(sent[2].text, "21°C, sunny");
}

// ---------------------------------------------------------------------------------------------
// Instantiation
// ---------------------------------------------------------------------------------------------

/// Instantiates every scenario for a harness type, as `<scenario>::stream` and
/// `<scenario>::invoke` tests. Invoke at the root of a test crate that declares `mod scenarios;`
/// and has the harness type in scope.
macro_rules! provider_suite {
    ($harness:ty) => {
        $crate::scenarios::provider_suite!(
            @each $harness;
            plain_answer,
            streamed_answer,
            one_tool_call,
            parallel_tool_calls,
            split_tool_arguments,
            structured_output,
            structured_output_with_tools,
            json_mode,
            usage_accounting,
            rate_limited_then_success,
            server_error_gives_up,
            bad_request_not_retried,
            auth_error_not_retried,
            garbage_is_invalid_response,
            cut_stream_is_an_error,
            unreachable_base_url,
            fallback_to_secondary,
            fallback_all_fail,
            unpaired_tool_call_rejected,
            tool_result_round_trip,
        );
    };
    (@each $harness:ty; $($scenario:ident),+ $(,)?) => {
        $(
            mod $scenario {
                #[allow(unused_imports)]
                use super::*;

                #[tokio::test]
                async fn stream() {
                    let harness = <$harness as $crate::scenarios::Harness>::start().await;
                    $crate::scenarios::$scenario(&harness, $crate::scenarios::Mode::Stream).await;
                }

                #[tokio::test]
                async fn invoke() {
                    let harness = <$harness as $crate::scenarios::Harness>::start().await;
                    $crate::scenarios::$scenario(&harness, $crate::scenarios::Mode::Invoke).await;
                }
            }
        )+
    };
}
pub(crate) use provider_suite;
