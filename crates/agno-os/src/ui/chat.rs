//! `GET /ui/chat/{agents|teams|workflows}/{id}`: a conversation with one component. The page shows
//! the session's earlier turns (rendered here); `ui.js` sends each message to the component's run
//! route through `/ui/api` and shows the answer as it streams: content, reasoning, tool calls
//! with their arguments and results, workflow steps, and a paused run's confirmations, answered
//! in the page (its continue route).

use axum::extract::{Path, Query};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde_json::Value;

use super::format;
use super::layout;
use super::viewer::{UiError, Viewer};
use crate::in_process::path_segment;

/// The chat page's query: the session to continue (a new one when absent).
#[derive(Debug, serde::Deserialize)]
pub(crate) struct ChatQuery {
    session_id: Option<String>,
}

/// The session type of a component family (`agents` → `agent`).
pub(crate) fn session_type(kind: &str) -> Option<&'static str> {
    match kind {
        "agents" => Some("agent"),
        "teams" => Some("team"),
        "workflows" => Some("workflow"),
        _ => None,
    }
}

/// One earlier turn of the session: what was asked and what was answered.
fn turn(run: &Value) -> Markup {
    let input = run.get("run_input").filter(|v| !v.is_null()).unwrap_or(&Value::Null);
    html! {
        @if !input.is_null() { div.msg.user { (format::text(input)) } }
        div.msg.assistant {
            @if let Some(tools) = run["tools"].as_array() {
                @for tool in tools {
                    details.tool { summary { "Tool call " code { (format::text(&tool["tool_name"])) } }
                        pre { (format::pretty(&tool["tool_args"])) }
                        @if !tool["result"].is_null() { pre.result { (format::text(&tool["result"])) } }
                    }
                }
            }
            div.content { (format::text(&run["content"])) }
        }
    }
}

/// `GET /ui/chat/{kind}/{id}`.
pub(crate) async fn page(
    viewer: Viewer,
    Path((kind, id)): Path<(String, String)>,
    Query(q): Query<ChatQuery>,
) -> Result<Response, UiError> {
    let Some(session_type) = session_type(&kind) else {
        return Err(UiError::not_found(&viewer.ui, format!("There is no component family {kind}.")));
    };
    let component = viewer.get(&format!("/{kind}/{}", path_segment(&id))).await?;
    let name = component["name"].as_str().filter(|n| !n.is_empty()).unwrap_or(&id).to_owned();
    let session_id = q.session_id.clone().filter(|s| !s.is_empty());
    let earlier = match &session_id {
        Some(sid) => {
            let runs = viewer.get(&format!("/sessions/{}/runs?type={session_type}", path_segment(sid))).await;
            match runs {
                Ok(Value::Array(runs)) => runs,
                Ok(_) => Vec::new(),
                Err(e) => return Err(e),
            }
        }
        None => Vec::new(),
    };
    let base = viewer.base().to_owned();
    let new_session = uuid::Uuid::new_v4().to_string();
    let body = html! {
        h1 { "Chat with " (name) }
        @if let Some(d) = component["description"].as_str() { p.muted { (d) } }
        p.muted {
            @if let Some(sid) = &session_id {
                "Session " code { (sid) } " · "
                a href=(format!("{base}/sessions/{}?type={session_type}", path_segment(sid))) { "its runs" } " · "
            }
            a href=(format!("{base}/chat/{kind}/{}", path_segment(&id))) { "New conversation" }
        }
        section #transcript aria-live="polite" aria-label="Conversation" {
            @for run in &earlier { (turn(run)) }
        }
        form #chat-form data-kind=(kind) data-id=(id)
            data-session=(session_id.clone().unwrap_or(new_session)) {
            label for="message" .visually-hidden { "Message" }
            textarea #message name="message" rows="3" required placeholder="Write a message…" {}
            button type="submit" { "Send" }
        }
    };
    Ok(layout::page(&viewer, &format!("Chat with {name}"), "/", &body).into_response())
}
