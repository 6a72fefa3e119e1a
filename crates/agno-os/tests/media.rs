//! Media uploads to `POST /agents/{id}/runs` (`files`, as Python AgentOS takes them): images
//! and documents reach the model as its own media blocks (Anthropic's, here, on the fake
//! server), the stored run keeps them in Agno's `images` / `files`, and what cannot be sent is
//! refused with the file's name.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use agno_testkit::{FakeProvider, Reply};
use base64::Engine as _;
use common::{TestOs, config};
use serde_json::{Value, json};

async fn post(os: &TestOs, files: Vec<(&str, &str, Vec<u8>)>) -> (u16, Value) {
    let mut form = reqwest::multipart::Form::new().text("message", "What is in these?").text("stream", "false");
    for (name, mime, bytes) in files {
        form = form
            .part("files", reqwest::multipart::Part::bytes(bytes).file_name(name.to_owned()).mime_str(mime).unwrap());
    }
    let r =
        reqwest::Client::new().post(format!("{}/agents/looker/runs", os.base)).multipart(form).send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploaded_images_and_documents_reach_the_model_and_the_stored_run() {
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&format!(
        "[db]\nurl = \"memory://\"\n[[agents]]\nid = \"looker\"\n\
         model = {{ provider = \"anthropic\", id = \"claude-sonnet-4-5\", base_url = \"{}\", api_key = \"k\" }}\n",
        provider.root_url()
    )))
    .await;
    provider.push(Reply::text("a chart and a memo"));
    let png = b"\x89PNG\r\n\x1a\nchart".to_vec();
    let pdf = b"%PDF-1.7 memo".to_vec();
    let (status, body) =
        post(&os, vec![("chart.png", "image/png", png.clone()), ("memo.pdf", "application/pdf", pdf.clone())]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["content"], "a chart and a memo");
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let content = provider.requests()[0].body["messages"][0]["content"].clone();
    let kinds: Vec<&str> = content.as_array().unwrap().iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["text", "image", "document"]);
    assert_eq!(content[1]["source"]["data"], b64(&png));
    assert_eq!(content[2]["source"]["data"], b64(&pdf));
    // Stored as Agno stores them.
    let input = &body["input"];
    assert_eq!(input["input_content"], "What is in these?");
    assert_eq!(input["images"][0]["mime_type"], "image/png");
    assert_eq!(input["images"][0]["content"], b64(&png));
    assert_eq!(
        (input["files"][0]["filename"].as_str(), input["files"][0]["format"].as_str()),
        (Some("memo.pdf"), Some("pdf"))
    );

    for (file, reason) in [
        (("clip.mp4", "video/mp4", b"x".to_vec()), "audio and video inputs are not supported"),
        (("empty.png", "image/png", Vec::new()), "Empty file: empty.png"),
        (("data.bin", "application/octet-stream", b"x".to_vec()), "Unsupported file type: data.bin"),
    ] {
        let before = provider.request_count();
        let (status, body) = post(&os, vec![file]).await;
        assert_eq!(status, 400, "{body}");
        assert!(common::detail(&body).contains(reason), "{body}");
        assert_eq!(provider.request_count(), before, "nothing reached the model");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_lists_the_models_in_use_with_their_providers() {
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&format!(
        "[[agents]]\nid = \"a\"\nmodel = {{ provider = \"anthropic\", id = \"claude-sonnet-4-5\", base_url = \"{0}\", api_key = \"k\" }}\n\
         [[agents]]\nid = \"b\"\nmodel = {{ provider = \"google\", id = \"gemini-2.5-flash\", base_url = \"{0}\", api_key = \"k\" }}\n\
         [[agents]]\nid = \"c\"\nmodel = {{ provider = \"ollama\", id = \"llama3.2\", base_url = \"{0}\" }}\n",
        provider.root_url()
    )))
    .await;
    let r = os.get("/config", None).await;
    assert_eq!(r.status, 200);
    let models = r.body["available_models"].as_array().unwrap().clone();
    for expected in [
        json!({"id": "claude-sonnet-4-5", "provider": "Anthropic"}),
        json!({"id": "gemini-2.5-flash", "provider": "Google"}),
        json!({"id": "llama3.2", "provider": "Ollama"}),
    ] {
        assert!(models.contains(&expected), "{expected} in {models:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_providers_refusal_ends_the_run_with_a_run_error_naming_its_cause() {
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&format!(
        "[db]\nurl = \"memory://\"\n[[agents]]\nid = \"looker\"\n\
         model = {{ provider = \"anthropic\", id = \"claude-sonnet-4-5\", base_url = \"{}\", api_key = \"k\" }}\n",
        provider.root_url()
    )))
    .await;
    for (status, message, error_id) in [
        (400, "prompt is too long: 210000 tokens > 200000 maximum", "context_window_exceeded_error"),
        (401, "invalid x-api-key", "model_authentication_error"),
        (404, "model: claude-sonnet-4-5 not found", "model_not_found_error"),
    ] {
        provider.push(Reply::Error { status, message: message.into(), retry_after: None });
        let (reply, events) = os.post_sse("/agents/looker/runs", &[("message", "hi"), ("stream", "true")], None).await;
        assert_eq!(reply.status, 200);
        let (name, error) = events.last().unwrap();
        assert_eq!(name, "RunError", "{events:?}");
        assert_eq!(error["error_id"], error_id, "{error}");
        let text = error["content"].as_str().unwrap();
        assert_eq!(text.matches(message).count(), 1, "the provider's words, once: {text}");
    }
}
