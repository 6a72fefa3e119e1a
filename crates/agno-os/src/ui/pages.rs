//! The pages that read: the start page (what can be chatted with), sessions and their runs, a
//! run in detail, memories, daily metrics; and the UI's 404.

use axum::extract::{Path, Query};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde_json::{Value, json};

use super::chat::session_type;
use super::format;
use super::layout;
use super::viewer::{UiError, Viewer};
use crate::in_process::path_segment;

/// A page's result: the page, or why it cannot be shown (as a page).
pub(crate) type PageResult = Result<Response, UiError>;

fn rendered(viewer: &Viewer, title: &str, active: &str, body: &Markup) -> PageResult {
    Ok(layout::page(viewer, title, active, body).into_response())
}

/// Query of a paged listing.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct Listing {
    #[serde(default)]
    page: Option<u32>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    q: Option<String>,
    #[serde(default)]
    user_id: Option<String>,
    /// A session filter expression (JSON, as `POST /sessions/search` takes it).
    #[serde(default)]
    filter: Option<String>,
}

impl Listing {
    fn page(&self) -> u32 {
        self.page.unwrap_or(1).max(1)
    }
}

fn query(pairs: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        if !v.is_empty() {
            s.append_pair(k, v);
        }
    }
    s.finish()
}

/// `GET /ui/`: the agents, teams and workflows the viewer may read, each with a chat link.
pub(crate) async fn home(viewer: Viewer) -> PageResult {
    let base = viewer.base().to_owned();
    let mut families = Vec::new();
    for (kind, label, scope) in [
        ("agents", "Agents", "agents:read"),
        ("teams", "Teams", "teams:read"),
        ("workflows", "Workflows", "workflows:read"),
    ] {
        if viewer.may(scope) || viewer.principal.accessible(kind, "read").is_some_and(|ids| !ids.is_empty()) {
            let listed = viewer.get(&format!("/{kind}")).await?;
            families.push((kind, label, listed.as_array().cloned().unwrap_or_default()));
        }
    }
    let body = html! {
        h1 { "Chat" }
        @if families.iter().all(|(_, _, items)| items.is_empty()) {
            p.muted { "Nothing here you may chat with: no agent, team or workflow is served to your token." }
        }
        // Only the kinds this OS serves (to this viewer).
        @for (kind, label, items) in families.iter().filter(|(_, _, items)| !items.is_empty()) {
            section {
                h2 { (label) }
                ul.cards {
                    @for item in items {
                        @let id = format::text(&item["id"]);
                        li.card {
                            a href=(format!("{base}/chat/{kind}/{}", path_segment(&id))) {
                                strong { (item["name"].as_str().filter(|n| !n.is_empty()).unwrap_or(&id)) }
                            }
                            @if let Some(d) = item["description"].as_str() { p.muted { (d) } }
                        }
                    }
                }
            }
        }
    };
    rendered(&viewer, "Chat", "/", &body)
}

/// `GET /ui/sessions?type=agent&q=...&page=N`: the viewer's sessions of a kind, newest first.
pub(crate) async fn sessions(viewer: Viewer, Query(q): Query<Listing>) -> PageResult {
    let base = viewer.base().to_owned();
    let kind = q.kind.clone().unwrap_or_else(|| "agent".to_owned());
    if !matches!(kind.as_str(), "agent" | "team" | "workflow") {
        return Err(UiError::new(&viewer.ui, StatusCode::BAD_REQUEST, format!("There is no session type {kind}.")));
    }
    let name = q.q.clone().unwrap_or_default();
    let filter = q.filter.clone().filter(|f| !f.trim().is_empty());
    let page = q.page().to_string();
    let listed = match &filter {
        // The filter expression over session fields, run by the store (`POST /sessions/search`).
        Some(text) => {
            let expression: Value = serde_json::from_str(text).map_err(|e| {
                UiError::new(&viewer.ui, StatusCode::BAD_REQUEST, format!("The filter is not JSON: {e}"))
            })?;
            let body = json!({"filter": expression, "page": q.page(), "limit": 20, "sort_by": "updated_at"});
            viewer.send(Method::POST, "/sessions/search", Some(body)).await?
        }
        None => {
            viewer
                .get(&format!(
                    "/sessions?{}",
                    query(&[
                        ("type", &kind),
                        ("session_name", &name),
                        ("page", &page),
                        ("limit", "20"),
                        ("sort_by", "updated_at"),
                        ("sort_order", "desc")
                    ])
                ))
                .await?
        }
    };
    let filter_text = filter.clone().unwrap_or_default();
    let link = |p: u64| {
        format!(
            "{base}/sessions?{}",
            query(&[("type", &kind), ("q", &name), ("filter", &filter_text), ("page", &p.to_string())])
        )
    };
    let body = html! {
        h1 { "Sessions" }
        nav.tabs aria-label="Session types" {
            @for t in ["agent", "team", "workflow"] {
                a href=(format!("{base}/sessions?type={t}")) aria-current=[(t == kind).then_some("page")] { (t) "s" }
            }
        }
        details.filter open[filter.is_some()] {
            summary { "Filter expression" }
            form.stacked method="get" {
                input type="hidden" name="type" value=(kind);
                label for="filter" { "A filter over session fields, as " code { "POST /sessions/search" } " takes it" }
                textarea #filter name="filter" rows="3"
                    placeholder=r#"{"op": "CONTAINS", "key": "session_name", "value": "report"}"# { (filter_text) }
                button type="submit" { "Filter" }
            }
        }
        form.search method="get" {
            input type="hidden" name="type" value=(kind);
            label for="q" { "Session name contains" }
            input #q type="search" name="q" value=(name);
            button type="submit" { "Search" }
        }
        (layout::listing(&listed, &["Session", "Component", "User", "Updated"], |s| html! {
            @let sid = format::text(&s["session_id"]);
            tr {
                td { a href=(format!("{base}/sessions/{}?type={kind}", path_segment(&sid))) {
                    (s["session_name"].as_str().filter(|n| !n.is_empty()).unwrap_or(&sid)) } }
                td { (component_of(s)) }
                td { (format::text(&s["user_id"])) }
                td { (format::time(&s["updated_at"])) }
            }
        }, "No sessions.", link))
    };
    rendered(&viewer, "Sessions", "/sessions", &body)
}

/// The component family of a session type (`agent` → `agents`).
fn family(session_type: &str) -> &'static str {
    match session_type {
        "team" => "teams",
        "workflow" => "workflows",
        _ => "agents",
    }
}

fn component_of(run: &Value) -> String {
    ["agent_id", "team_id", "workflow_id"]
        .iter()
        .map(|k| format::text(&run[*k]))
        .find(|s| !s.is_empty())
        .unwrap_or_default()
}

/// `GET /ui/sessions/{session_id}?type=agent`: the session's runs as previews, oldest first.
pub(crate) async fn session(viewer: Viewer, Path(session_id): Path<String>, Query(q): Query<Listing>) -> PageResult {
    let base = viewer.base().to_owned();
    let kind = q.kind.clone().unwrap_or_else(|| "agent".to_owned());
    if session_type(family(&kind)) != Some(kind.as_str()) {
        return Err(UiError::new(&viewer.ui, StatusCode::BAD_REQUEST, format!("There is no session type {kind}.")));
    }
    let sid = path_segment(&session_id);
    // Previews: a session's listing never carries its runs' bodies.
    let runs = viewer.get(&format!("/sessions/{sid}/run-previews?type={kind}")).await?;
    let runs = runs.as_array().cloned().unwrap_or_default();
    let component = runs.first().map(component_of).unwrap_or_default();
    let body = html! {
        h1 { "Session " code { (session_id) } }
        @if !component.is_empty() {
            p { a href=(format!("{base}/chat/{}/{}?session_id={sid}", family(&kind), path_segment(&component))) {
                "Continue this conversation" } }
        }
        table {
            thead { tr { th { "Run" } th { "Status" } th { "Input" } th { "Answer" } th { "Started" } } }
            tbody {
                @for run in &runs {
                    @let rid = format::text(&run["run_id"]);
                    tr {
                        td { a href=(format!("{base}/sessions/{sid}/runs/{}?type={kind}", path_segment(&rid))) { code { (rid) } } }
                        td { (format::text(&run["status"])) }
                        td { (format::short(&run["run_input"], 80)) }
                        td { (format::short(&run["content_preview"], 120)) }
                        td { (format::time(&run["created_at"])) }
                    }
                }
            }
        }
        @if runs.is_empty() { p.muted { "No runs in this session." } }
    };
    rendered(&viewer, "Session", "/sessions", &body)
}

/// `GET /ui/sessions/{session_id}/runs/{run_id}?type=agent`: one run: its messages, tool calls,
/// metrics and events, and a link to its trace when it was traced.
pub(crate) async fn run(
    viewer: Viewer,
    Path((session_id, run_id)): Path<(String, String)>,
    Query(q): Query<Listing>,
) -> PageResult {
    let base = viewer.base().to_owned();
    let kind = q.kind.clone().unwrap_or_else(|| "agent".to_owned());
    let (sid, rid) = (path_segment(&session_id), path_segment(&run_id));
    let run = viewer.get(&format!("/sessions/{sid}/runs/{rid}?type={}", path_segment(&kind))).await?;
    // The trace is optional: an OS without tracing (or a viewer without traces:read) has none.
    let trace = if viewer.may("traces:read") {
        viewer
            .get(&format!("/traces?run_id={rid}&limit=1"))
            .await
            .ok()
            .and_then(|t| t["data"][0]["trace_id"].as_str().map(str::to_owned))
    } else {
        None
    };
    let body = html! {
        h1 { "Run " code { (run_id) } }
        dl.facts {
            dt { "Status" } dd { (format::text(&run["status"])) }
            dt { "Component" } dd { (component_of(&run)) }
            dt { "User" } dd { (format::text(&run["user_id"])) }
            dt { "Session" } dd { a href=(format!("{base}/sessions/{sid}?type={kind}")) { code { (session_id) } } }
            dt { "Started" } dd { (format::time(&run["created_at"])) }
            @if let Some(t) = &trace { dt { "Trace" } dd { a href=(format!("{base}/traces/{}", path_segment(t))) { "Open its trace" } } }
        }
        h2 { "Messages" }
        @for m in run["messages"].as_array().into_iter().flatten() {
            div class=(format!("msg {}", format::text(&m["role"]))) {
                span.role { (format::text(&m["role"])) }
                @if let Some(calls) = m["tool_calls"].as_array() {
                    @for call in calls { pre.call { (format::text(&call["function"]["name"])) "(" (format::text(&call["function"]["arguments"])) ")" } }
                }
                div.content { (format::text(&m["content"])) }
            }
        }
        @if run["messages"].as_array().is_none_or(|m| m.is_empty()) {
            div.msg.user { (format::text(&run["run_input"])) }
            div.msg.assistant { (format::text(&run["content"])) }
        }
        h2 { "Tool calls" }
        @let tools = run["tools"].as_array().cloned().unwrap_or_default();
        @if tools.is_empty() { p.muted { "None." } }
        @for tool in &tools {
            details.tool open {
                summary { code { (format::text(&tool["tool_name"])) } }
                pre { (format::pretty(&tool["tool_args"])) }
                @if !tool["result"].is_null() { pre.result { (format::text(&tool["result"])) } }
            }
        }
        h2 { "Metrics" }
        pre { (format::pretty(&run["metrics"])) }
        h2 { "Events" }
        ol.events {
            @for e in run["events"].as_array().into_iter().flatten() {
                li { code { (format::text(&e["event"])) } " " span.muted { (format::time(&e["created_at"])) } }
            }
        }
    };
    rendered(&viewer, "Run", "/sessions", &body)
}

/// `GET /ui/memories?user_id=...&page=N`: the memories the viewer may read.
pub(crate) async fn memories(viewer: Viewer, Query(q): Query<Listing>) -> PageResult {
    let base = viewer.base().to_owned();
    let user = q.user_id.clone().unwrap_or_default();
    let page = q.page().to_string();
    let listed =
        viewer.get(&format!("/memories?{}", query(&[("user_id", &user), ("page", &page), ("limit", "20")]))).await?;
    let link = |p: u64| format!("{base}/memories?{}", query(&[("user_id", &user), ("page", &p.to_string())]));
    let body = html! {
        h1 { "Memories" }
        form.search method="get" {
            label for="user" { "User" }
            input #user type="search" name="user_id" value=(user);
            button type="submit" { "Show" }
        }
        (layout::listing(&listed, &["Memory", "Topics", "User", "Updated"], |m| html! {
            tr {
                td { (format::text(&m["memory"])) }
                td { (m["topics"].as_array().map(|t| t.iter().map(format::text).collect::<Vec<_>>().join(", ")).unwrap_or_default()) }
                td { (format::text(&m["user_id"])) }
                td { (format::time(&m["updated_at"])) }
            }
        }, "No memories.", link))
    };
    rendered(&viewer, "Memories", "/memories", &body)
}

/// `GET /ui/learnings?user_id=...&page=N`: what the learning machine keeps (profiles, memories,
/// entities) that the viewer may read.
pub(crate) async fn learnings(viewer: Viewer, Query(q): Query<Listing>) -> PageResult {
    let base = viewer.base().to_owned();
    let user = q.user_id.clone().unwrap_or_default();
    let page = q.page().to_string();
    let listed = viewer
        .get_feature(&format!("/learnings?{}", query(&[("user_id", &user), ("page", &page), ("limit", "20")])))
        .await?;
    let link = |p: u64| format!("{base}/learnings?{}", query(&[("user_id", &user), ("page", &p.to_string())]));
    let body = html! {
        h1 { "Learnings" }
        @match &listed {
            Err(reason) => p.muted { (reason) },
            Ok(listed) => {
                form.search method="get" {
                    label for="luser" { "User" }
                    input #luser type="search" name="user_id" value=(user);
                    button type="submit" { "Show" }
                }
                (layout::listing(listed, &["Type", "User", "What was learned", "Updated"], |l| html! {
                    tr {
                        td { (format::text(&l["learning_type"])) }
                        td { (format::text(&l["user_id"])) }
                        td { pre { (format::short(&l["content"], 400)) } }
                        td { (format::time(&l["updated_at"])) }
                    }
                }, "Nothing learned yet.", link))
            }
        }
    };
    rendered(&viewer, "Learnings", "/learnings", &body)
}

/// `GET /ui/evals?page=N`: eval runs, newest first.
pub(crate) async fn evals(viewer: Viewer, Query(q): Query<Listing>) -> PageResult {
    let base = viewer.base().to_owned();
    let page = q.page().to_string();
    let listed = viewer.get(&format!("/eval-runs?{}", query(&[("page", &page), ("limit", "20")]))).await?;
    let link = |p: u64| format!("{base}/evals?page={p}");
    let body = html! {
        h1 { "Evals" }
        (layout::listing(&listed, &["Eval", "Type", "Agent", "Result", "Created"], |e| html! {
            tr {
                td { (format::text(&e["name"])) " " code { (format::text(&e["id"])) } }
                td { (format::text(&e["eval_type"])) }
                td { (component_of(e)) }
                td { pre { (format::short(&e["eval_data"], 300)) } }
                td { (format::time(&e["created_at"])) }
            }
        }, "No eval runs: run one with POST /eval-runs or agno eval.", link))
    };
    rendered(&viewer, "Evals", "/evals", &body)
}

/// `GET /ui/metrics`: daily runs and tokens as bar charts (SVG drawn here).
pub(crate) async fn metrics(viewer: Viewer) -> PageResult {
    let answered = viewer.get("/metrics").await?;
    let days: Vec<Value> = answered["metrics"].as_array().cloned().unwrap_or_default();
    let runs = |d: &Value| {
        ["agent_runs_count", "team_runs_count", "workflow_runs_count"]
            .iter()
            .filter_map(|k| d[*k].as_f64())
            .sum::<f64>()
    };
    let tokens = |d: &Value| d["token_metrics"]["total_tokens"].as_f64().unwrap_or(0.0);
    let body = html! {
        h1 { "Metrics" }
        @if days.is_empty() { p.muted { "No metrics yet: they are computed from stored runs (POST /metrics/refresh)." } }
        h2 { "Runs per day" }
        (bars(&days, runs, "runs"))
        h2 { "Tokens per day" }
        (bars(&days, tokens, "tokens"))
        table {
            thead { tr { th { "Day" } th { "Agent runs" } th { "Team runs" } th { "Workflow runs" } th { "Users" } th { "Tokens" } } }
            tbody {
                @for d in &days {
                    tr {
                        td { (format::text(&d["date"])) }
                        td { (format::text(&d["agent_runs_count"])) }
                        td { (format::text(&d["team_runs_count"])) }
                        td { (format::text(&d["workflow_runs_count"])) }
                        td { (format::text(&d["users_count"])) }
                        td { (tokens(d)) }
                    }
                }
            }
        }
    };
    rendered(&viewer, "Metrics", "/metrics", &body)
}

/// A bar chart of `value` per day, as an SVG with a text alternative.
fn bars(days: &[Value], value: impl Fn(&Value) -> f64, unit: &str) -> Markup {
    let values: Vec<f64> = days.iter().map(&value).collect();
    let max = values.iter().copied().fold(0.0_f64, f64::max).max(1.0);
    let (width, height, gap) = (640.0, 160.0, 4.0);
    let bar = if values.is_empty() { 0.0 } else { (width / values.len() as f64 - gap).max(2.0) };
    let summary = days
        .iter()
        .zip(&values)
        .map(|(d, v)| format!("{}: {v} {unit}", format::text(&d["date"])))
        .collect::<Vec<_>>()
        .join("; ");
    html! {
        svg.chart role="img" aria-label=(summary) viewBox=(format!("0 0 {width} {}", height + 20.0)) {
            @for (i, v) in values.iter().enumerate() {
                @let h = v / max * height;
                @let x = i as f64 * (bar + gap);
                rect x=(x) y=(height - h) width=(bar) height=(h) { title { (format::text(&days[i]["date"])) ": " (v) " " (unit) } }
            }
            text x="0" y=(height + 16.0) { "max " (max) " " (unit) }
        }
    }
}

/// Any other path under `/ui`: the UI's 404 page.
pub(crate) async fn not_found(viewer: Viewer) -> UiError {
    UiError::not_found(&viewer.ui, "There is no such page.")
}
