//! The `slack` toolkit (Agno's `SlackTools`, v3 names): messages, channels, threads and users
//! through Slack's Web API (`https://slack.com/api/<method>`, a bot token as
//! `Authorization: Bearer xoxb-...`).
//!
//! Flags are Agno v3's: `send_message`, `send_message_thread`, `get_channel_history` and
//! `get_thread` are off by default (they post, or read conversations); `list_channels`,
//! `list_users`, `get_user_info` and `get_channel_info` are on. The v2 spelling
//! (`enable_send_message = true`) still works and logs a deprecation warning.
//!
//! Slack answers errors with HTTP 200 and `{"ok": false, "error": "channel_not_found"}`: each is a
//! tool error naming the method, the code and what to do; HTTP 429 says when to retry
//! (`Retry-After`). Agno's file upload, download and search tools are not built.

use std::collections::HashMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{BuiltinError, Options};
use crate::{Function, ToolError, Toolkit};

/// Slack's Web API.
const DEFAULT_BASE_URL: &str = "https://slack.com/api/";

/// A Slack workspace as the bot sees it.
#[derive(Debug)]
struct Slack {
    token: String,
    base: String,
    markdown: bool,
}

/// What to do about a Slack error code.
fn hint(code: &str) -> &'static str {
    match code {
        "channel_not_found" => {
            " If it is a private channel, invite the bot to it, or pass the channel's id (C...) directly."
        }
        "not_in_channel" => " Invite the bot to the channel (/invite @your-bot), then try again.",
        "is_archived" => " The channel is archived; pick another.",
        "invalid_auth" | "not_authed" | "token_revoked" | "account_inactive" => {
            " The Slack token is not valid: check SLACK_TOKEN (a bot token, xoxb-...)."
        }
        "missing_scope" => " The token lacks a scope this method needs: add it to the Slack app and reinstall it.",
        "msg_too_long" => " Send a shorter message (Slack takes 40,000 characters at most).",
        "no_text" => " Give the message some text.",
        "thread_not_found" => " Check the thread's ts (the parent message's timestamp).",
        "user_not_found" => " Check the user's id (U...).",
        _ => "",
    }
}

impl Slack {
    fn url(&self, method: &str) -> String {
        format!("{}{method}", self.base)
    }

    async fn answer(&self, method: &str, request: reqwest::RequestBuilder) -> Result<Value, ToolError> {
        let response = request
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|e| ToolError::execution(format!("slack {method} failed: {e}")))?;
        let status = response.status();
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            let wait = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).unwrap_or("a few");
            return Err(ToolError::execution(format!("slack {method} is rate limited: retry after {wait} s")));
        }
        let body: Value = response
            .json()
            .await
            .map_err(|e| ToolError::execution(format!("slack {method} answered HTTP {status} without JSON: {e}")))?;
        if body.get("ok").and_then(Value::as_bool) == Some(true) {
            return Ok(body);
        }
        let code = body.get("error").and_then(Value::as_str).unwrap_or("unknown_error");
        let needed = body.get("needed").and_then(Value::as_str).map(|n| format!(" (needs {n})")).unwrap_or_default();
        Err(ToolError::execution(format!("slack {method} failed: {code}{needed}.{}", hint(code))))
    }

    async fn get(&self, method: &str, query: &[(&str, String)]) -> Result<Value, ToolError> {
        let request = super::http::client()?.get(self.url(method)).query(query);
        self.answer(method, request).await
    }

    async fn post(&self, method: &str, body: Value) -> Result<Value, ToolError> {
        let request = super::http::client()?.post(self.url(method)).json(&body);
        self.answer(method, request).await
    }

    /// Every channel (paged by `next_cursor`), as `(id, name, is_private)`.
    async fn channels(&self, include_private: bool) -> Result<Vec<Value>, ToolError> {
        let types = if include_private { "public_channel,private_channel" } else { "public_channel" };
        let mut out = Vec::new();
        let mut cursor = String::new();
        loop {
            let mut query = vec![
                ("types", types.to_owned()),
                ("limit", "1000".to_owned()),
                ("exclude_archived", "true".to_owned()),
            ];
            if !cursor.is_empty() {
                query.push(("cursor", cursor.clone()));
            }
            let page = self.get("conversations.list", &query).await?;
            for c in page.get("channels").and_then(Value::as_array).into_iter().flatten() {
                out.push(
                    json!({"id": c["id"], "name": c["name"], "is_private": c["is_private"].as_bool().unwrap_or(false)}),
                );
            }
            cursor =
                page.pointer("/response_metadata/next_cursor").and_then(Value::as_str).unwrap_or_default().to_owned();
            if cursor.is_empty() {
                return Ok(out);
            }
        }
    }

    /// A channel's id from an id (`C...`, `G...`, `D...`) or a name (`general`, `#general`).
    async fn channel_id(&self, channel: &str) -> Result<(String, Option<String>), ToolError> {
        let channel = channel.trim();
        if channel.is_empty() {
            return Err(ToolError::invalid_arguments("channel is required: a channel id (C...) or name"));
        }
        let is_id = channel.len() > 1
            && channel.starts_with(['C', 'G', 'D'])
            && channel[1..].chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
        if is_id {
            return Ok((channel.to_owned(), None));
        }
        let name = channel.trim_start_matches('#');
        let found = self
            .channels(true)
            .await?
            .into_iter()
            .find(|c| c["name"].as_str() == Some(name))
            .and_then(|c| c["id"].as_str().map(str::to_owned));
        match found {
            Some(id) => Ok((id, Some(name.to_owned()))),
            None => Err(ToolError::execution(format!(
                "slack has no channel named {name:?} that the bot can see.{}",
                hint("channel_not_found")
            ))),
        }
    }

    /// Display names of users, one `users.info` per user, remembered for the call.
    async fn user_name(&self, cache: &mut HashMap<String, String>, id: &str) -> String {
        if let Some(name) = cache.get(id) {
            return name.clone();
        }
        let name = match self.get("users.info", &[("user", id.to_owned())]).await {
            Ok(info) => ["/user/profile/display_name", "/user/real_name", "/user/name"]
                .iter()
                .find_map(|p| info.pointer(p).and_then(Value::as_str).filter(|s| !s.is_empty()))
                .unwrap_or(id)
                .to_owned(),
            Err(_) => id.to_owned(),
        };
        cache.insert(id.to_owned(), name.clone());
        name
    }

    /// Messages as Agno's history entries.
    async fn entries(&self, messages: &[Value], channel_id: &str, channel_name: Option<&str>) -> Vec<Value> {
        let mut names = HashMap::new();
        let mut out = Vec::new();
        for m in messages {
            let user = match (m.get("username").and_then(Value::as_str), m.get("user").and_then(Value::as_str)) {
                (Some(name), _) => name.to_owned(),
                (None, Some(id)) => self.user_name(&mut names, id).await,
                (None, None) => "unknown".to_owned(),
            };
            let mut entry = Map::new();
            entry.insert("text".into(), m.get("text").cloned().unwrap_or(json!("")));
            entry.insert("user".into(), json!(user));
            entry.insert("ts".into(), m.get("ts").cloned().unwrap_or(Value::Null));
            entry.insert("channel_id".into(), json!(channel_id));
            if let Some(name) = channel_name {
                entry.insert("channel_name".into(), json!(name));
            }
            for key in ["attachments", "thread_ts", "reply_count"] {
                if let Some(v) = m.get(key) {
                    entry.insert(key.into(), v.clone());
                }
            }
            out.push(Value::Object(entry));
        }
        out
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
struct SendArgs {
    /// The channel's id (C...) or name.
    channel: String,
    /// The message (Slack mrkdwn).
    text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct SendThreadArgs {
    /// The channel's id (C...) or name.
    channel: String,
    /// The reply (Slack mrkdwn).
    text: String,
    /// The parent message's ts.
    thread_ts: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ListChannelsArgs {
    /// Include private channels the bot is in (default false).
    #[serde(default)]
    include_private: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct HistoryArgs {
    /// The channel's id (C...) or name.
    channel: String,
    /// How many messages, newest first (default 100).
    limit: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ThreadArgs {
    /// The channel's id (C...) or name.
    channel: String,
    /// The parent message's ts.
    thread_ts: String,
    /// How many messages (default 20).
    limit: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ListUsersArgs {
    /// How many users (default 100).
    limit: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct UserArgs {
    /// The user's id (U...).
    user_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ChannelArgs {
    /// The channel's id (C...) or name.
    channel: String,
}

const INSTRUCTIONS: &str = "You can use Slack. Prefer channel ids (C...) when you have them; a channel name works too. \
Mention people as <@USER_ID> (look the id up with list_slack_users), never by plain name. \
Reply inside a thread with send_slack_message_thread and the parent message's ts.";

/// Options of the `slack` toolkit read here (the rest are flags and Toolkit options).
pub(super) const OPTIONS: &[&str] = &["token", "base_url", "markdown"];

/// The Slack toolkit (name and id `slack`). `token` (default: the `SLACK_TOKEN` environment
/// variable), `base_url` (default Slack's Web API) and `markdown` (default true) come from
/// `options`.
///
/// # Errors
/// [`BuiltinError::Option`] when there is no token or an option has the wrong type.
pub fn slack_tools(options: &Map<String, Value>) -> Result<Toolkit, BuiltinError> {
    let read = Options::new("slack", options);
    let token = match read.string("token")? {
        Some(t) => t,
        None => std::env::var("SLACK_TOKEN").map_err(|_| {
            read.error("SLACK_TOKEN is not set: set it, or give token = \"${SLACK_TOKEN}\" (a bot token, xoxb-...)")
        })?,
    };
    let mut base = read.string("base_url")?.unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
    if !base.ends_with('/') {
        base.push('/');
    }
    let markdown = read.flag("markdown", true)?;
    let slack = Arc::new(Slack { token, base, markdown });

    let send = Function::with_state(
        "send_slack_message",
        "Send a message to a Slack channel. Returns Slack's answer as JSON.",
        &slack,
        |slack, a: SendArgs| async move {
            slack
                .post("chat.postMessage", json!({"channel": a.channel, "text": a.text, "mrkdwn": slack.markdown}))
                .await
        },
    );
    let send_thread = Function::with_state(
        "send_slack_message_thread",
        "Reply in a Slack thread (thread_ts is the parent message's ts). Returns Slack's answer as JSON.",
        &slack,
        |slack, a: SendThreadArgs| async move {
            let body =
                json!({"channel": a.channel, "text": a.text, "thread_ts": a.thread_ts, "mrkdwn": slack.markdown});
            slack.post("chat.postMessage", body).await
        },
    );
    let list_channels = Function::with_state(
        "list_slack_channels",
        "List the Slack channels: a JSON array of {id, name, is_private}.",
        &slack,
        |slack, a: ListChannelsArgs| async move { slack.channels(a.include_private).await },
    );
    let history = Function::with_state(
        "get_slack_channel_history",
        "Read a Slack channel's latest messages: a JSON array of {text, user, ts, channel_id, ...}, newest first.",
        &slack,
        |slack, a: HistoryArgs| async move {
            let (id, name) = slack.channel_id(&a.channel).await?;
            let limit = a.limit.unwrap_or(100).clamp(1, 1000).to_string();
            let page = slack.get("conversations.history", &[("channel", id.clone()), ("limit", limit)]).await?;
            let messages = page.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
            Ok::<_, ToolError>(slack.entries(&messages, &id, name.as_deref()).await)
        },
    );
    let thread = Function::with_state(
        "get_slack_thread",
        "Read a Slack thread: {channel_id, thread_ts, reply_count, messages}.",
        &slack,
        |slack, a: ThreadArgs| async move {
            let (id, name) = slack.channel_id(&a.channel).await?;
            let limit = a.limit.unwrap_or(20).clamp(1, 1000).to_string();
            let query = [("channel", id.clone()), ("ts", a.thread_ts.clone()), ("limit", limit)];
            let page = slack.get("conversations.replies", &query).await?;
            let messages = page.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
            let entries = slack.entries(&messages, &id, name.as_deref()).await;
            Ok::<_, ToolError>(json!({
                "channel_id": id,
                "channel_name": name,
                "thread_ts": a.thread_ts,
                "reply_count": entries.len().saturating_sub(1),
                "messages": entries,
            }))
        },
    );
    let list_users = Function::with_state(
        "list_slack_users",
        "List the workspace's users: {count, users: [{id, name, real_name, title, is_bot}]}.",
        &slack,
        |slack, a: ListUsersArgs| async move {
            let limit = a.limit.unwrap_or(100).clamp(1, 1000).to_string();
            let page = slack.get("users.list", &[("limit", limit)]).await?;
            let users: Vec<Value> = page
                .get("members")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|u| u.get("deleted").and_then(Value::as_bool) != Some(true))
                .map(|u| {
                    json!({
                        "id": u["id"], "name": u["name"], "real_name": u["real_name"],
                        "title": u.pointer("/profile/title").cloned().unwrap_or(json!("")),
                        "is_bot": u["is_bot"].as_bool().unwrap_or(false),
                    })
                })
                .collect();
            Ok::<_, ToolError>(json!({"count": users.len(), "users": users}))
        },
    );
    let user_info = Function::with_state(
        "get_slack_user_info",
        "Look up a Slack user: {id, name, real_name, email, title, tz, is_bot}.",
        &slack,
        |slack, a: UserArgs| async move {
            let info = slack.get("users.info", &[("user", a.user_id)]).await?;
            let u = &info["user"];
            Ok::<_, ToolError>(json!({
                "id": u["id"], "name": u["name"], "real_name": u["real_name"],
                "email": u.pointer("/profile/email").cloned().unwrap_or(Value::Null),
                "title": u.pointer("/profile/title").cloned().unwrap_or(Value::Null),
                "tz": u["tz"], "is_bot": u["is_bot"].as_bool().unwrap_or(false),
            }))
        },
    );
    let channel_info = Function::with_state(
        "get_slack_channel_info",
        "Look up a Slack channel: {id, name, topic, purpose, num_members, is_private, is_archived, created, creator}.",
        &slack,
        |slack, a: ChannelArgs| async move {
            let (id, _) = slack.channel_id(&a.channel).await?;
            let info =
                slack.get("conversations.info", &[("channel", id), ("include_num_members", "true".into())]).await?;
            let c = &info["channel"];
            Ok::<_, ToolError>(json!({
                "id": c["id"], "name": c["name"],
                "topic": c.pointer("/topic/value").cloned().unwrap_or(json!("")),
                "purpose": c.pointer("/purpose/value").cloned().unwrap_or(json!("")),
                "num_members": c["num_members"], "is_private": c["is_private"], "is_archived": c["is_archived"],
                "created": c["created"], "creator": c["creator"],
            }))
        },
    );
    Ok(Toolkit::new("slack")
        .with_instructions(INSTRUCTIONS)
        .flagged_tool("send_message", false, send)
        .flagged_tool("send_message_thread", false, send_thread)
        .flagged_tool("list_channels", true, list_channels)
        .flagged_tool("get_channel_history", false, history)
        .flagged_tool("get_thread", false, thread)
        .flagged_tool("list_users", true, list_users)
        .flagged_tool("get_user_info", true, user_info)
        .flagged_tool("get_channel_info", true, channel_info))
}
