//! Azure OpenAI (`OpenAIChat::azure`) against the fake server's deployment route: the shared
//! scenarios over Azure's URL shape (`/openai/deployments/{deployment}/chat/completions?api-version=`)
//! and `api-key` header, then Azure's content filter as a clear error and the request options.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod scenarios;

use std::sync::Arc;

use agno_core::{Model, ModelErrorKind};
use agno_models::{ClientConfig, OpenAIChat, RetryPolicy};
use agno_testkit::{FakeProvider, RecordedRequest, Reply};
use scenarios::{Harness, Mode, WireRequest, ask, run_err, run_ok};
use serde_json::json;

#[derive(Debug)]
struct Azure {
    server: FakeProvider,
}

impl Harness for Azure {
    const MODEL_ID: &'static str = "my-gpt4o-deployment";

    async fn start() -> Self {
        Self { server: FakeProvider::start().await.expect("fake server starts") }
    }

    fn server(&self) -> &FakeProvider {
        &self.server
    }

    fn base_url(&self) -> String {
        self.server.root_url()
    }

    fn model_at(&self, base_url: &str, retry: RetryPolicy) -> Arc<dyn Model> {
        let mut cfg = ClientConfig::new(base_url);
        cfg.api_key = Some("az-test".into());
        cfg.retry = retry;
        Arc::new(OpenAIChat::azure(Self::MODEL_ID, "2024-10-21", cfg).expect("client builds"))
    }

    fn auth_header(&self) -> (&'static str, String) {
        ("api-key", "az-test".to_owned())
    }

    fn inspect(&self, request: &RecordedRequest) -> WireRequest {
        assert_eq!(request.path, "/openai/deployments/my-gpt4o-deployment/chat/completions", "Azure's deployment URL");
        assert_eq!(request.query, "api-version=2024-10-21");
        assert_eq!(request.header("authorization"), None, "the key goes as api-key, not a bearer token");
        scenarios::chat_completions_wire(request)
    }
}

scenarios::provider_suite!(Azure);

#[tokio::test]
async fn azures_content_filter_is_a_clear_error() {
    let h = Azure::start().await;
    h.push(Reply::Error {
        status: 400,
        message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy."
            .into(),
        retry_after: None,
    });
    let err = run_err(&*h.model(), ask("..."), Mode::Invoke).await;
    assert_eq!(err.kind, ModelErrorKind::ContentFiltered, "{}", err.message);
    assert_eq!(err.kind.id(), "model_content_filtered_error");
    for mode in [Mode::Stream, Mode::Invoke] {
        h.push(Reply::Filtered("violence".into()));
        let err = run_err(&*h.model(), ask("..."), mode).await;
        assert_eq!(err.kind, ModelErrorKind::ContentFiltered, "{}", err.message);
        assert!(err.message.contains("content_filter"), "{}", err.message);
    }
}

#[tokio::test]
async fn o_series_and_gpt5_take_max_completion_tokens_and_options_go_as_given() {
    for (model, field) in
        [("o3-mini", "max_completion_tokens"), ("gpt-5", "max_completion_tokens"), ("gpt-4o", "max_tokens")]
    {
        let h = Azure::start().await;
        h.push(Reply::text("ok"));
        let mut cfg = ClientConfig::new(h.base_url());
        cfg.api_key = Some("az-test".into());
        let m = OpenAIChat::azure(model, "2024-10-21", cfg)
            .unwrap()
            .with_max_tokens(256)
            .with_option("seed", json!(7))
            .with_option("reasoning_effort", json!("low"));
        run_ok(&m, ask("hi"), Mode::Invoke).await;
        let body = &h.server().requests()[0].body;
        assert_eq!(body[field], 256, "{model}: {body}");
        let other = if field == "max_tokens" { "max_completion_tokens" } else { "max_tokens" };
        assert!(body.get(other).is_none(), "{model}: {body}");
        assert_eq!((body["seed"].as_u64(), body["reasoning_effort"].as_str()), (Some(7), Some("low")));
    }
}
