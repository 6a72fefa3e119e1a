//! End-to-end tests of the fake provider over real HTTP (OpenAI Chat Completions wire format).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use agno_testkit::{FakeProvider, Reply};
use serde_json::{Value, json};

fn chat(messages: Value) -> Value {
    let mut body = json!({"model": "gpt-test"});
    body["messages"] = messages;
    body
}

fn user(text: &str) -> Value {
    chat(json!([{"role": "user", "content": text}]))
}

fn streaming(mut body: Value) -> Value {
    body["stream"] = json!(true);
    body
}

async fn post(provider: &FakeProvider, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}/chat/completions", provider.base_url()))
        .bearer_auth("sk-test")
        .json(body)
        .send()
        .await
        .unwrap()
}

/// Read an SSE body and return the `data:` payloads in order.
async fn sse_data(response: reqwest::Response) -> Vec<String> {
    assert_eq!(response.headers()["content-type"].to_str().unwrap(), "text/event-stream");
    let text = response.text().await.unwrap();
    assert!(text.ends_with("\n\n"), "events end with a blank line: {text:?}");
    text.split("\n\n").filter(|e| !e.is_empty()).map(|e| e.strip_prefix("data: ").unwrap().to_owned()).collect()
}

/// Parse every chunk except the final `[DONE]` (which must be present).
fn chunks(data: &[String]) -> Vec<Value> {
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    data[..data.len() - 1].iter().map(|d| serde_json::from_str(d).unwrap()).collect()
}

#[tokio::test]
async fn non_streaming_text() {
    let provider = FakeProvider::start().await.unwrap();
    assert!(provider.base_url().starts_with("http://127.0.0.1:"));
    assert!(provider.base_url().ends_with("/v1"));
    provider.push(Reply::text("Hello there, world!"));

    let response = post(&provider, &user("abcdefgh")).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["object"], "chat.completion");
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert!(body["created"].is_u64());
    assert_eq!(body["model"], "gpt-test");
    let choice = &body["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["finish_reason"], "stop");
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "Hello there, world!");
    assert!(choice["message"].get("tool_calls").is_none());
    assert_eq!(body["usage"], json!({"prompt_tokens": 2, "completion_tokens": 4, "total_tokens": 6}));

    let requests = provider.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].header("Authorization"), Some("Bearer sk-test"));
    assert_eq!(requests[0].body["messages"][0]["content"], "abcdefgh");
    assert!(!requests[0].is_stream());
}

#[tokio::test]
async fn non_streaming_tool_calls() {
    let provider = FakeProvider::start().await.unwrap();
    provider.push(Reply::ToolCalls {
        content: Some("Let me check.".into()),
        calls: vec![("get_weather".into(), r#"{"city":"Paris"}"#.into()), ("get_time".into(), "not json".into())],
    });
    let body: Value = post(&provider, &user("weather?")).await.json().await.unwrap();
    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], "Let me check.");
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"]["name"], "get_weather");
    assert_eq!(calls[0]["function"]["arguments"], r#"{"city":"Paris"}"#);
    assert_eq!(calls[1]["function"]["arguments"], "not json");
    assert_ne!(calls[0]["id"], calls[1]["id"]);
    assert!(calls[0]["id"].as_str().unwrap().starts_with("call_"));

    provider.push(Reply::tool_call("f", "{}"));
    let body: Value = post(&provider, &user("again")).await.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], Value::Null);
}

#[tokio::test]
async fn streaming_text_reassembles_and_ends_with_done() {
    let provider = FakeProvider::start().await.unwrap();
    let text = "Héllo, wörld! 🦀 streaming works.";
    provider.push(Reply::text(text));

    let data = sse_data(post(&provider, &streaming(user("hi"))).await).await;
    let chunks = chunks(&data);
    assert_eq!(chunks[0]["choices"][0]["delta"], json!({"role": "assistant", "content": ""}));
    let mut assembled = String::new();
    for chunk in &chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], "gpt-test");
        assert_eq!(chunk["id"], chunks[0]["id"]);
        if let Some(piece) = chunk["choices"][0]["delta"]["content"].as_str() {
            assert!(piece.chars().count() <= 4);
            assembled.push_str(piece);
        }
    }
    assert_eq!(assembled, text);
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["delta"], json!({}));
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert!(chunks[..chunks.len() - 1].iter().all(|c| c["choices"][0]["finish_reason"].is_null()));
    assert!(provider.requests()[0].is_stream());
}

#[tokio::test]
async fn streamed_tool_call_arguments_are_split_and_reassemble() {
    let provider = FakeProvider::start().await.unwrap();
    let args_a = r#"{"city":"Paris","unit":"celsius"}"#;
    let args_b = r#"{"tz":"Europe/Paris"}"#;
    provider.push(Reply::ToolCalls {
        content: None,
        calls: vec![("get_weather".into(), args_a.into()), ("get_time".into(), args_b.into())],
    });
    let data = sse_data(post(&provider, &streaming(user("hi"))).await).await;
    let chunks = chunks(&data);

    let mut names = [String::new(), String::new()];
    let mut ids = [String::new(), String::new()];
    let mut args = [String::new(), String::new()];
    let mut arg_chunks = [0usize; 2];
    for chunk in &chunks {
        let Some(calls) = chunk["choices"][0]["delta"]["tool_calls"].as_array() else {
            continue;
        };
        assert_eq!(calls.len(), 1);
        let call = &calls[0];
        let i = call["index"].as_u64().unwrap() as usize;
        if let Some(id) = call["id"].as_str() {
            assert_eq!(call["type"], "function");
            assert_eq!(call["function"]["arguments"], "");
            ids[i] = id.to_owned();
            names[i] = call["function"]["name"].as_str().unwrap().to_owned();
        } else {
            let piece = call["function"]["arguments"].as_str().unwrap();
            assert!(piece.chars().count() <= 5);
            args[i].push_str(piece);
            arg_chunks[i] += 1;
        }
    }
    assert_eq!(names, ["get_weather", "get_time"]);
    assert!(ids.iter().all(|id| id.starts_with("call_")));
    assert_ne!(ids[0], ids[1]);
    assert_eq!(args, [args_a, args_b]);
    assert!(arg_chunks[0] > 1 && arg_chunks[1] > 1, "{arg_chunks:?}");
    assert_eq!(chunks.last().unwrap()["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn include_usage_sends_a_usage_chunk_before_done() {
    let provider = FakeProvider::start().await.unwrap();
    provider.push_all([Reply::text("12345678"), Reply::text("x")]);

    let mut body = streaming(user("abcdefgh"));
    body["stream_options"] = json!({"include_usage": true});
    let data = sse_data(post(&provider, &body).await).await;
    let chunks = chunks(&data);
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"], json!([]));
    assert_eq!(last["usage"], json!({"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4}));
    assert_eq!(chunks[chunks.len() - 2]["choices"][0]["finish_reason"], "stop");

    // Without include_usage, no usage chunk.
    let data = sse_data(post(&provider, &streaming(user("abcdefgh"))).await).await;
    assert!(chunks_without_usage(&data));
}

fn chunks_without_usage(data: &[String]) -> bool {
    chunks(data).iter().all(|c| c.get("usage").is_none())
}

#[tokio::test]
async fn rate_limit_error_with_retry_after() {
    let provider = FakeProvider::start().await.unwrap();
    provider.push(Reply::Error { status: 429, message: "slow down".into(), retry_after: Some(7) });
    provider.push(Reply::Error { status: 503, message: "overloaded".into(), retry_after: None });

    let response = post(&provider, &user("hi")).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "7");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body, json!({"error": {"message": "slow down", "type": "rate_limit_exceeded", "code": null}}));

    // Errors are plain HTTP errors for streaming requests too.
    let response = post(&provider, &streaming(user("hi"))).await;
    assert_eq!(response.status(), 503);
    assert!(response.headers().get("retry-after").is_none());
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "server_error");
    assert_eq!(body["error"]["message"], "overloaded");
}

#[tokio::test]
async fn garbage_bodies() {
    let provider = FakeProvider::start().await.unwrap();
    provider.push_all([Reply::Garbage("not json{".into()), Reply::Garbage("{\"broken\":".into())]);

    let response = post(&provider, &user("hi")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "not json{");

    let response = post(&provider, &streaming(user("hi"))).await;
    assert_eq!(response.status(), 200);
    let data = sse_data(response).await;
    assert_eq!(data, vec!["{\"broken\":".to_owned()]);
}

#[tokio::test]
async fn unanswered_tool_call_is_rejected_without_consuming_the_script() {
    let provider = FakeProvider::start().await.unwrap();
    provider.push(Reply::text("scripted"));

    let invalid = chat(json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_x", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ]},
        {"role": "user", "content": "and?"}
    ]));
    let response = post(&provider, &invalid).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("tool_calls"), "{message}");
    assert!(message.contains("call_x"), "{message}");

    // A tool answer for an unknown id is rejected too.
    let invalid = chat(json!([
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "call_unknown", "content": "42"}
    ]));
    assert_eq!(post(&provider, &invalid).await.status(), 400);

    // A body that is not JSON at all is rejected and recorded with a null body.
    let response = reqwest::Client::new()
        .post(format!("{}/chat/completions", provider.base_url()))
        .body("nope")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);

    // The script was not consumed.
    let valid = chat(json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_x", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ]},
        {"role": "tool", "tool_call_id": "call_x", "content": "42"}
    ]));
    let body: Value = post(&provider, &valid).await.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "scripted");

    let requests = provider.requests();
    assert_eq!(provider.request_count(), 4);
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[2].body, Value::Null);
}

#[tokio::test]
async fn latency_is_applied() {
    let provider = FakeProvider::start().await.unwrap();
    let latency = Duration::from_millis(150);
    provider.set_latency(latency);
    provider.push_all([
        Reply::text("slow"),
        Reply::text("slow stream"),
        Reply::Delayed(Duration::from_millis(100), Box::new(Reply::text("slower"))),
    ]);

    let start = Instant::now();
    let body: Value = post(&provider, &user("hi")).await.json().await.unwrap();
    assert!(start.elapsed() >= latency);
    assert_eq!(body["choices"][0]["message"]["content"], "slow");

    let start = Instant::now();
    let data = sse_data(post(&provider, &streaming(user("hi"))).await).await;
    assert!(start.elapsed() >= latency);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));

    let start = Instant::now();
    let body: Value = post(&provider, &user("hi")).await.json().await.unwrap();
    assert!(start.elapsed() >= latency + Duration::from_millis(100));
    assert_eq!(body["choices"][0]["message"]["content"], "slower");
}

#[tokio::test]
async fn replies_are_consumed_in_fifo_order() {
    let provider = FakeProvider::start().await.unwrap();
    provider.push(Reply::text("one"));
    provider.push_all([Reply::text("two"), Reply::tool_call("f", "{}")]);
    provider.push(Reply::text("three"));

    let mut seen = Vec::new();
    for _ in 0..4 {
        let body: Value = post(&provider, &user("hi")).await.json().await.unwrap();
        let message = &body["choices"][0]["message"];
        seen.push(match message["content"].as_str() {
            Some(text) => text.to_owned(),
            None => format!("call:{}", message["tool_calls"][0]["function"]["name"]),
        });
    }
    assert_eq!(seen, ["one", "two", "call:\"f\"", "three"]);

    // Script exhausted, no fallback: 500 with an explanatory error.
    let response = post(&provider, &user("hi")).await;
    assert_eq!(response.status(), 500);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["message"], "fake provider: no scripted reply left");
    assert_eq!(body["error"]["type"], "server_error");
}

#[tokio::test]
async fn fallback_is_used_when_the_script_is_empty() {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::text("fallback")));
    provider.push(Reply::text("scripted"));

    for expected in ["scripted", "fallback", "fallback"] {
        let body: Value = post(&provider, &user("hi")).await.json().await.unwrap();
        assert_eq!(body["choices"][0]["message"]["content"], expected);
    }

    provider.set_fallback(None);
    assert_eq!(post(&provider, &user("hi")).await.status(), 500);
}

#[tokio::test]
async fn echo_answers_text_or_calls_the_first_tool() {
    let provider = FakeProvider::start().await.unwrap();
    provider.set_fallback(Some(Reply::Echo));

    let body: Value = post(&provider, &user("ping")).await.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "echo: ping");

    let tools = json!([
        {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}},
        {"type": "function", "function": {"name": "other", "parameters": {"type": "object"}}}
    ]);
    let mut request = user("find it");
    request["tools"] = tools.clone();
    let body: Value = post(&provider, &request).await.json().await.unwrap();
    let message = &body["choices"][0]["message"];
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(message["tool_calls"][0]["function"]["name"], "lookup");
    assert_eq!(message["tool_calls"][0]["function"]["arguments"], "{}");
    let call_id = message["tool_calls"][0]["id"].clone();

    let mut request = chat(json!([
        {"role": "user", "content": "find it"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
        ]},
        {"role": "tool", "tool_call_id": call_id, "content": "found"}
    ]));
    request["tools"] = tools;
    let body: Value = post(&provider, &request).await.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "echo: find it");
}

#[tokio::test]
async fn models_endpoint() {
    let provider = FakeProvider::start().await.unwrap();
    let body: Value = reqwest::get(format!("{}/models", provider.base_url())).await.unwrap().json().await.unwrap();
    assert_eq!(body, json!({"object": "list", "data": [{"id": "fake-model", "object": "model"}]}));
    assert_eq!(provider.requests()[0].path, "/v1/models");
}

/// Waits (bounded) until `url` no longer answers.
async fn wait_refused(url: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while reqwest::get(url).await.is_ok() {
        assert!(std::time::Instant::now() < deadline, "{url} still answers");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn shutdown_and_drop_stop_the_server() {
    let provider = FakeProvider::start().await.unwrap();
    let url = format!("{}/models", provider.base_url());
    let clone = provider.clone();
    clone.shutdown();
    wait_refused(&url).await;

    let provider = FakeProvider::start().await.unwrap();
    let url = format!("{}/models", provider.base_url());
    let clone = provider.clone();
    drop(provider);
    assert!(reqwest::get(&url).await.is_ok(), "a clone keeps it alive");
    drop(clone);
    wait_refused(&url).await;
}
