//! Slack's Web API on the fake server, `/slack/api/{method}`, as documented at
//! <https://api.slack.com/methods> (and `https://api.slack.com/web` for the conventions): a bot
//! token as `Authorization: Bearer xoxb-...`; HTTP 200 with `{"ok": true, ...}` or `{"ok": false,
//! "error": "<code>"}`; reads as GET with query parameters, `chat.postMessage` as a JSON POST;
//! paging by `response_metadata.next_cursor`; HTTP 429 with `Retry-After` when rate limited
//! (<https://api.slack.com/docs/rate-limits>).
//!
//! The workspace: channels `C0GENERAL` (general), `C0RANDOM` (random), `G0SECRET` (secret,
//! private; the bot is not in it) and `C0LIMITED` (every call on it is rate limited); users
//! `U0ANN` (ann) and `U0BOB` (bob). Messages posted are kept, so history and threads read them
//! back. The token `xoxb-bad` is `invalid_auth`. `conversations.list` pages two channels at a time
//! whatever the `limit`, so clients must follow the cursor.

use std::sync::Mutex;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// One posted message.
#[derive(Debug, Clone)]
struct Posted {
    channel: String,
    ts: String,
    text: String,
    user: String,
    thread_ts: Option<String>,
}

/// The workspace's state: the messages posted so far.
#[derive(Debug, Default)]
pub(crate) struct Workspace {
    posted: Mutex<Vec<Posted>>,
}

const CHANNELS: &[(&str, &str, bool)] = &[
    ("C0GENERAL", "general", false),
    ("C0RANDOM", "random", false),
    ("G0SECRET", "secret", true),
    ("C0LIMITED", "limited", false),
];

fn ok(mut body: Value) -> Response {
    body["ok"] = json!(true);
    axum::Json(body).into_response()
}

fn fail(code: &str) -> Response {
    axum::Json(json!({"ok": false, "error": code})).into_response()
}

fn channel_json(id: &str, name: &str, private: bool) -> Value {
    json!({
        "id": id, "name": name, "is_channel": !private, "is_private": private, "is_archived": false,
        "created": 1_700_000_000, "creator": "U0ANN", "num_members": 2,
        "topic": {"value": format!("{name} topic")}, "purpose": {"value": format!("{name} purpose")},
    })
}

fn user_json(id: &str, name: &str) -> Value {
    json!({
        "id": id, "name": name, "real_name": format!("{name} real"), "deleted": false, "is_bot": false, "tz": "Europe/Berlin",
        "profile": {"display_name": name, "email": format!("{name}@example.com"), "title": "engineer"},
    })
}

fn find_channel(key: &str) -> Option<(&'static str, &'static str, bool)> {
    CHANNELS.iter().copied().find(|(id, name, _)| *id == key || *name == key.trim_start_matches('#'))
}

impl Workspace {
    /// Answers `method` with the request's query (GET) or JSON body (POST).
    pub(crate) fn call(&self, method: &str, headers: &HeaderMap, query: Option<&str>, body: &Value) -> Response {
        let token = headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        match token {
            None => return fail("not_authed"),
            Some("xoxb-bad") => return fail("invalid_auth"),
            Some(_) => {}
        }
        let params: Vec<(String, String)> = crate::search::form_pairs(query.unwrap_or_default());
        let arg = |key: &str| -> Option<String> {
            params.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).or_else(|| {
                body.get(key).and_then(|v| {
                    v.as_str().map(str::to_owned).or_else(|| Some(v.to_string()).filter(|_| !v.is_null()))
                })
            })
        };
        if arg("channel").is_some_and(|c| c == "C0LIMITED" || c == "limited") {
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", "3")],
                axum::Json(json!({"ok": false, "error": "ratelimited"})),
            )
                .into_response();
        }
        let mut posted = self.posted.lock().unwrap_or_else(|e| e.into_inner());
        match method {
            "chat.postMessage" => {
                let Some(channel) = arg("channel") else { return fail("channel_not_found") };
                let Some((id, _, private)) = find_channel(&channel) else { return fail("channel_not_found") };
                if private {
                    return fail("not_in_channel");
                }
                let text = arg("text").unwrap_or_default();
                if text.is_empty() {
                    return fail("no_text");
                }
                let ts = format!("1764590000.{:06}", posted.len() + 1);
                let message = Posted {
                    channel: id.to_owned(),
                    ts: ts.clone(),
                    text: text.clone(),
                    user: "U0BOT".into(),
                    thread_ts: arg("thread_ts"),
                };
                posted.push(message);
                ok(json!({"channel": id, "ts": ts, "message": {
                    "type": "message", "subtype": "bot_message", "text": text, "ts": ts, "bot_id": "B0BOT", "username": "agno",
                }}))
            }
            "conversations.list" => {
                let private = arg("types").is_some_and(|t| t.contains("private_channel"));
                let listed: Vec<Value> = CHANNELS
                    .iter()
                    .filter(|(_, _, p)| private || !p)
                    .map(|(id, name, p)| channel_json(id, name, *p))
                    .collect();
                let start: usize =
                    arg("cursor").and_then(|c| c.strip_prefix("page:").and_then(|n| n.parse().ok())).unwrap_or(0);
                let page: Vec<Value> = listed.iter().skip(start).take(2).cloned().collect();
                let next = if start + 2 < listed.len() { format!("page:{}", start + 2) } else { String::new() };
                ok(json!({"channels": page, "response_metadata": {"next_cursor": next}}))
            }
            "conversations.history" | "conversations.replies" | "conversations.info" => {
                let Some(channel) = arg("channel") else { return fail("channel_not_found") };
                let Some((id, name, private)) = find_channel(&channel).filter(|(id, _, _)| *id == channel) else {
                    return fail("channel_not_found");
                };
                if method == "conversations.info" {
                    return ok(json!({"channel": channel_json(id, name, private)}));
                }
                if private {
                    return fail("not_in_channel");
                }
                let as_json = |m: &Posted| {
                    let mut v = json!({"type": "message", "user": m.user, "text": m.text, "ts": m.ts});
                    if let Some(t) = &m.thread_ts {
                        v["thread_ts"] = json!(t);
                    }
                    v
                };
                let limit: usize = arg("limit").and_then(|l| l.parse().ok()).unwrap_or(100);
                if method == "conversations.history" {
                    // Newest first; thread replies stay in their thread.
                    let messages: Vec<Value> = posted
                        .iter()
                        .rev()
                        .filter(|m| m.channel == id && m.thread_ts.is_none())
                        .take(limit)
                        .map(as_json)
                        .collect();
                    return ok(json!({"messages": messages, "has_more": false, "pin_count": 0}));
                }
                let Some(parent) = arg("ts") else { return fail("thread_not_found") };
                let thread: Vec<Value> = posted
                    .iter()
                    .filter(|m| m.channel == id && (m.ts == parent || m.thread_ts.as_deref() == Some(parent.as_str())))
                    .take(limit)
                    .map(as_json)
                    .collect();
                if thread.is_empty() {
                    fail("thread_not_found")
                } else {
                    ok(json!({"messages": thread, "has_more": false}))
                }
            }
            "users.list" => ok(json!({"members": [user_json("U0ANN", "ann"), user_json("U0BOB", "bob")]})),
            "users.info" => match arg("user").as_deref() {
                Some("U0ANN") => ok(json!({"user": user_json("U0ANN", "ann")})),
                Some("U0BOB") => ok(json!({"user": user_json("U0BOB", "bob")})),
                Some("U0BOT") => ok(json!({"user": user_json("U0BOT", "agno-bot")})),
                _ => fail("user_not_found"),
            },
            _ => fail("unknown_method"),
        }
    }
}
