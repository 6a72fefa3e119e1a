//! The `websearch` toolkit against Tavily, Brave and SearXNG, and the `slack` toolkit against
//! Slack's Web API, all served by the fake provider server in each service's wire format; flags
//! in Agno v3's spelling and the deprecated `enable_` one; errors as tool errors that say what
//! to do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{call, options};

use agno_testkit::FakeProvider;
use agno_tools::Toolkit;
use agno_tools::builtin::{BuiltinError, by_name};
use serde_json::{Value, json};

async fn call_json(toolkit: &Toolkit, tool: &str, args: Value) -> Value {
    let text = call(toolkit, tool, args.clone()).await.unwrap_or_else(|e| panic!("{tool}({args}): {}", e.model_text()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{tool} answered non-JSON {text:?}: {e}"))
}

fn names(toolkit: &Toolkit) -> Vec<String> {
    let mut names: Vec<String> = toolkit.tools().iter().map(|t| t.name().to_owned()).collect();
    names.sort();
    names
}

fn titles(answer: &Value) -> Vec<&str> {
    answer["results"].as_array().unwrap().iter().map(|r| r["title"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn tavily_brave_and_searxng_answer_the_same_shape() {
    let fake = FakeProvider::start().await.unwrap();
    let root = fake.root_url();
    let tavily = by_name(
        "websearch",
        &options(json!({"provider": "tavily", "api_key": "tvly-test", "base_url": format!("{root}/tavily")})),
    )
    .unwrap();
    assert_eq!(
        (tavily.id(), names(&tavily)),
        ("websearch", vec!["web_search".to_owned(), "web_search_news".to_owned()])
    );
    let answer = call_json(&tavily, "web_search", json!({"query": "rust agents", "max_results": 3})).await;
    assert_eq!(titles(&answer), ["Result 1 for rust agents", "Result 2 for rust agents", "Result 3 for rust agents"]);
    assert_eq!(answer["answer"], "In short: rust agents.");
    assert_eq!(answer["results"][0]["url"], "https://example.com/rust-agents/1");
    let request = fake.requests().last().unwrap().clone();
    assert_eq!(request.path, "/tavily/search");
    assert_eq!(request.header("authorization"), Some("Bearer tvly-test"));
    assert_eq!(request.body["max_results"], 3);
    let news = call_json(&tavily, "web_search_news", json!({"query": "agno"})).await;
    assert_eq!(fake.requests().last().unwrap().body["topic"], "news");
    assert_eq!(news["results"].as_array().unwrap().len(), 5, "the default of 5");
    assert!(news["results"][0]["published"].is_string());

    let brave = by_name(
        "websearch",
        &options(json!({"provider": "brave", "api_key": "bsa-test", "base_url": format!("{root}/brave")})),
    )
    .unwrap();
    let answer = call_json(&brave, "web_search", json!({"query": "rust agents", "max_results": 2})).await;
    assert_eq!(titles(&answer), ["Result 1 for rust agents", "Result 2 for rust agents"]);
    let request = fake.requests().last().unwrap().clone();
    assert_eq!(request.header("x-subscription-token"), Some("bsa-test"));
    let news = call_json(&brave, "web_search_news", json!({"query": "agno", "max_results": 1})).await;
    assert_eq!(titles(&news), ["News 1 for agno"]);
    assert_eq!(news["results"][0]["published"], "2 hours ago");

    let searxng = by_name(
        "websearch",
        &options(json!({"provider": "searxng", "host": format!("{root}/searxng"), "engines": ["bing"], "fixed_max_results": 4})),
    )
    .unwrap();
    let answer = call_json(&searxng, "web_search", json!({"query": "rust agents", "max_results": 9})).await;
    assert_eq!(answer["results"].as_array().unwrap().len(), 4, "fixed_max_results wins over the model's");
    let news = call_json(&searxng, "web_search_news", json!({"query": "agno"})).await;
    assert_eq!(titles(&news)[0], "News 1 for agno");
    assert!(fake.requests().last().unwrap().path.ends_with("/searxng/search"));
}

#[tokio::test]
async fn search_errors_say_what_to_fix() {
    let fake = FakeProvider::start().await.unwrap();
    let root = fake.root_url();
    let bad_key = by_name(
        "websearch",
        &options(json!({"provider": "tavily", "api_key": "tvly-bad", "base_url": format!("{root}/tavily")})),
    )
    .unwrap();
    let err = call(&bad_key, "web_search", json!({"query": "x"})).await.unwrap_err();
    assert!(err.model_text().contains("tavily search answered HTTP 401 Unauthorized (check the API key): Unauthorized: missing or invalid API key."), "{}", err.model_text());
    let brave = by_name(
        "websearch",
        &options(json!({"provider": "brave", "api_key": "bad", "base_url": format!("{root}/brave")})),
    )
    .unwrap();
    let err = call(&brave, "web_search", json!({"query": "x"})).await.unwrap_err();
    assert!(err.model_text().contains("The provided subscription token is invalid."), "{}", err.model_text());
    let err = call(&brave, "web_search", json!({"query": "  "})).await.unwrap_err();
    assert!(err.model_text().contains("query is empty"), "{}", err.model_text());
    let err = call(&brave, "web_search", json!({"q": "x"})).await.unwrap_err();
    assert!(err.model_text().contains("query"), "bad arguments name the field: {}", err.model_text());

    let refused = |o: Value| match by_name("websearch", &options(o)) {
        Err(BuiltinError::Option { message, .. }) => message,
        other => panic!("expected an option error, got {other:?}"),
    };
    if ["TAVILY_API_KEY", "BRAVE_API_KEY", "SEARXNG_HOST"].iter().all(|v| std::env::var_os(v).is_none()) {
        assert!(refused(json!({})).contains("give provider"));
    }
    assert!(refused(json!({"provider": "bing"})).contains("tavily, brave or searxng"));
    assert!(refused(json!({"provider": "searxng"})).contains("host"));
    assert!(refused(json!({"provider": "brave", "api_key": "k", "base_url": "ftp://x"})).contains("http(s) URL"));
}

#[tokio::test]
async fn websearch_flags_follow_agno_v3_and_the_old_names_still_work() {
    let opts = |extra: Value| {
        let mut o = options(json!({"provider": "searxng", "host": "http://127.0.0.1:9"}));
        o.extend(options(extra));
        o
    };
    assert_eq!(names(&by_name("websearch", &opts(json!({"search_news": false}))).unwrap()), ["web_search"]);
    assert_eq!(names(&by_name("websearch", &opts(json!({"enable_news": false}))).unwrap()), ["web_search"]);
    assert_eq!(names(&by_name("websearch", &opts(json!({"enable_search": false}))).unwrap()), ["web_search_news"]);
    let err = by_name("websearch", &opts(json!({"search_images": true}))).unwrap_err().to_string();
    assert!(err.contains("no tool named search_images") && err.contains("search_news, search_web"), "{err}");
}

fn slack(root: &str, extra: Value) -> Toolkit {
    let mut o = options(json!({"token": "xoxb-test", "base_url": format!("{root}/slack/api")}));
    o.extend(options(extra));
    by_name("slack", &o).unwrap()
}

#[tokio::test]
async fn slack_posts_reads_back_and_follows_the_cursor() {
    let fake = FakeProvider::start().await.unwrap();
    let root = fake.root_url();
    // Agno v3 defaults: reading the directory on, posting and reading conversations off.
    let default = slack(&root, json!({}));
    assert_eq!(
        names(&default),
        ["get_slack_channel_info", "get_slack_user_info", "list_slack_channels", "list_slack_users"]
    );
    assert!(default.instructions().unwrap().contains("<@USER_ID>"));
    let kit = slack(
        &root,
        json!({"send_message": true, "send_message_thread": true, "get_channel_history": true, "get_thread": true}),
    );

    let sent = call_json(&kit, "send_slack_message", json!({"channel": "general", "text": "hello *team*"})).await;
    assert_eq!((sent["ok"].as_bool(), sent["channel"].as_str()), (Some(true), Some("C0GENERAL")));
    let posted = fake.requests().last().unwrap().clone();
    assert_eq!(posted.path, "/slack/api/chat.postMessage");
    assert_eq!(posted.header("authorization"), Some("Bearer xoxb-test"));
    assert_eq!(posted.body, json!({"channel": "general", "text": "hello *team*", "mrkdwn": true}));
    let parent = sent["ts"].as_str().unwrap().to_owned();
    call_json(
        &kit,
        "send_slack_message_thread",
        json!({"channel": "C0GENERAL", "text": "a reply", "thread_ts": parent}),
    )
    .await;

    // A name is resolved to an id through conversations.list, paged two at a time.
    let history = call_json(&kit, "get_slack_channel_history", json!({"channel": "#general"})).await;
    assert_eq!(history.as_array().unwrap().len(), 1, "the thread reply stays in its thread: {history}");
    assert_eq!(history[0]["text"], "hello *team*");
    assert_eq!(history[0]["user"], "agno-bot", "the author's display name, from users.info");
    assert_eq!(history[0]["channel_name"], "general");
    let thread = call_json(&kit, "get_slack_thread", json!({"channel": "C0GENERAL", "thread_ts": parent})).await;
    assert_eq!(thread["reply_count"], 1);
    assert_eq!(thread["messages"][1]["text"], "a reply");

    let channels = call_json(&kit, "list_slack_channels", json!({"include_private": true})).await;
    let ids: Vec<&str> = channels.as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["C0GENERAL", "C0RANDOM", "G0SECRET", "C0LIMITED"], "every page, in order");
    let public = call_json(&kit, "list_slack_channels", json!({})).await;
    assert!(public.as_array().unwrap().iter().all(|c| c["is_private"] == false));
    let users = call_json(&kit, "list_slack_users", json!({})).await;
    assert_eq!(users["count"], 2);
    let ann = call_json(&kit, "get_slack_user_info", json!({"user_id": "U0ANN"})).await;
    assert_eq!(ann["email"], "ann@example.com");
    let info = call_json(&kit, "get_slack_channel_info", json!({"channel": "random"})).await;
    assert_eq!((info["id"].as_str(), info["topic"].as_str()), (Some("C0RANDOM"), Some("random topic")));
}

#[tokio::test]
async fn slack_errors_name_the_method_the_code_and_the_fix() {
    let fake = FakeProvider::start().await.unwrap();
    let root = fake.root_url();
    let kit = slack(&root, json!({"all": true}));
    let err = call(&kit, "send_slack_message", json!({"channel": "C0NOPE", "text": "x"})).await.unwrap_err();
    assert!(
        err.model_text().contains("slack chat.postMessage failed: channel_not_found. If it is a private channel"),
        "{}",
        err.model_text()
    );
    let err = call(&kit, "send_slack_message", json!({"channel": "secret", "text": "x"})).await.unwrap_err();
    assert!(err.model_text().contains("not_in_channel. Invite the bot"), "{}", err.model_text());
    let err = call(&kit, "get_slack_channel_history", json!({"channel": "nowhere"})).await.unwrap_err();
    assert!(err.model_text().contains("no channel named \"nowhere\""), "{}", err.model_text());
    let err = call(&kit, "send_slack_message", json!({"channel": "C0LIMITED", "text": "x"})).await.unwrap_err();
    assert!(err.model_text().contains("rate limited: retry after 3 s"), "{}", err.model_text());
    let bad =
        by_name("slack", &options(json!({"token": "xoxb-bad", "base_url": format!("{root}/slack/api/")}))).unwrap();
    let err = call(&bad, "list_slack_channels", json!({})).await.unwrap_err();
    assert!(
        err.model_text().contains("invalid_auth. The Slack token is not valid: check SLACK_TOKEN"),
        "{}",
        err.model_text()
    );
    let err = call(&kit, "send_slack_message", json!({"channel": "general"})).await.unwrap_err();
    assert!(err.model_text().contains("text"), "a missing argument is named: {}", err.model_text());
}

#[test]
fn slack_flags_in_both_spellings_and_a_missing_token() {
    let with = |o: Value| by_name("slack", &options(o));
    let kit = with(json!({"token": "xoxb-t", "send_message": true, "list_users": false})).unwrap();
    assert!(kit.is_enabled("send_slack_message") && !kit.is_enabled("list_slack_users"));
    let old = with(json!({"token": "xoxb-t", "enable_send_message": true})).unwrap();
    assert!(old.is_enabled("send_slack_message"), "the v2 flag still works");
    let confirmed =
        with(json!({"token": "xoxb-t", "send_message": true, "requires_confirmation_tools": ["send_slack_message"]}))
            .unwrap();
    let send = confirmed.tools().into_iter().find(|t| t.name() == "send_slack_message").unwrap();
    assert!(send.flags().requires_confirmation, "confirmation flags apply to the toolkit's tools");
    let err = with(json!({"token": "xoxb-t", "send_messages": true})).unwrap_err().to_string();
    assert!(err.contains("no tool named send_messages") && err.contains("send_message,"), "{err}");
    if std::env::var_os("SLACK_TOKEN").is_none() {
        let err = with(json!({})).unwrap_err().to_string();
        assert!(err.contains("SLACK_TOKEN is not set"), "{err}");
    }
}
