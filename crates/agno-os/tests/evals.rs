//! `POST /eval-runs` against a real server: an accuracy eval of an agent (on the fake provider,
//! which also plays the judge) is run as the caller and stored as theirs; another user cannot
//! see it; bad requests say what is wrong.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use agno_testkit::{FakeProvider, Reply};
use common::{SECRET, TestOs, config, detail, token};
use serde_json::json;

const SCOPES: &[&str] = &["evals:read", "evals:write", "agents:run"];

#[tokio::test]
async fn an_eval_runs_as_the_caller_and_only_they_see_it() {
    let provider = FakeProvider::start().await.unwrap();
    let os = TestOs::start(config(&format!(
        "[db]\nurl = \"memory://\"\n[auth]\nmode = \"jwt\"\nverification_keys = [\"{SECRET}\"]\nuser_isolation = true\n\
         [[agents]]\nid = \"geo\"\nname = \"Geo\"\n\
         model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
        provider.base_url()
    )))
    .await;
    let (ann, bob) = (token("ann", SCOPES), token("bob", SCOPES));
    // The agent's answer, then the judge's verdict (the judge is the agent's model by default).
    provider.push(Reply::text("Paris"));
    provider.push(Reply::text(r#"{"accuracy_score": 8, "accuracy_reason": "the same city"}"#));
    let body = json!({"agent_id": "geo", "eval_type": "accuracy", "input": "Capital of France?",
                      "expected_output": "Paris", "name": "capitals"});
    let r = os.post_json("/eval-runs", &body, Some(&ann)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        (&r.body["eval_type"], &r.body["agent_id"], &r.body["user_id"], &r.body["name"]),
        (&json!("accuracy"), &json!("geo"), &json!("ann"), &json!("capitals"))
    );
    assert_eq!(r.body["eval_data"]["avg_score"], 8.0);
    assert_eq!(r.body["eval_data"]["results"][0]["output"], "Paris");
    assert_eq!(r.body["model_id"], "gpt-4o-mini");
    let id = r.body["id"].as_str().unwrap().to_owned();
    let judged = provider.requests().last().unwrap().body.clone();
    assert!(judged["response_format"].is_object(), "the judge was asked for JSON: {judged}");

    assert_eq!(os.get(&format!("/eval-runs/{id}"), Some(&ann)).await.status, 200);
    assert_eq!(os.get(&format!("/eval-runs/{id}"), Some(&bob)).await.status, 404);
    assert_eq!(os.get("/eval-runs", Some(&bob)).await.body["meta"]["total_count"], 0);

    // Bad requests: nothing runs, the reason is named.
    for (body, status, reason) in [
        (json!({"agent_id": "geo", "eval_type": "reliability", "input": "x"}), 422, "expected_tool_calls"),
        (json!({"agent_id": "geo", "eval_type": "accuracy", "input": "x"}), 422, "expected_output"),
        (json!({"agent_id": "geo", "eval_type": "guess", "input": "x"}), 422, "Input should be 'accuracy'"),
        (
            json!({"agent_id": "nope", "eval_type": "accuracy", "input": "x", "expected_output": "y"}),
            404,
            "Agent nope not found",
        ),
        (json!({"agent_id": "geo", "eval_type": "accuracy", "input": "x", "num_iterations": 0}), 422, "num_iterations"),
        (json!({"eval_type": "accuracy", "input": "x"}), 422, "agent_id"),
    ] {
        let before = provider.request_count();
        let r = os.post_json("/eval-runs", &body, Some(&ann)).await;
        assert_eq!(r.status, status, "{body}: {}", r.body);
        assert!(detail(&r.body).contains(reason), "{body}: {}", r.body);
        assert_eq!(provider.request_count(), before, "{body}: nothing ran");
    }
}
