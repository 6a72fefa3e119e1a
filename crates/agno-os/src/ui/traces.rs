//! Traces: the list (by run, or by session through `/trace_session_stats`) and one trace as a
//! tree of its spans beside a waterfall of their times, durations, tokens and errors, drawn on
//! the server (HTML and CSS widths, no script).

use axum::extract::{Path, Query};
use axum::response::IntoResponse;
use maud::{Markup, html};
use serde_json::Value;

use super::format;
use super::layout;
use super::pages::PageResult;
use super::viewer::Viewer;
use crate::in_process::path_segment;

/// Query of the traces list.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct TracesQuery {
    #[serde(default)]
    page: Option<u32>,
    #[serde(default)]
    by: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
}

/// `GET /ui/traces?by=run|session&session_id=...&page=N`.
pub(crate) async fn list(viewer: Viewer, Query(q): Query<TracesQuery>) -> PageResult {
    let base = viewer.base().to_owned();
    let page = q.page.unwrap_or(1).max(1);
    let by_session = q.by.as_deref() == Some("session") && q.session_id.is_none();
    let session = q.session_id.clone().unwrap_or_default();
    let session_filter =
        if session.is_empty() { String::new() } else { format!("&session_id={}", path_segment(&session)) };
    let listed = if by_session {
        viewer.get(&format!("/trace_session_stats?limit=20&page={page}")).await?
    } else {
        viewer.get(&format!("/traces?limit=20&page={page}{session_filter}")).await?
    };
    let by = if by_session { "session" } else { "run" };
    let link = |p: u64| format!("{base}/traces?by={by}&page={p}{session_filter}");
    let body = html! {
        h1 { "Traces" }
        nav.tabs aria-label="Trace lists" {
            a href=(format!("{base}/traces?by=run")) aria-current=[(!by_session).then_some("page")] { "By run" }
            a href=(format!("{base}/traces?by=session")) aria-current=[by_session.then_some("page")] { "By session" }
        }
        @if !session.is_empty() { p { "Traces of session " code { (session) } } }
        @if by_session {
            (layout::listing(&listed, &["Session", "Traces", "First", "Last"], |s| html! {
                @let sid = format::text(&s["session_id"]);
                tr {
                    td { a href=(format!("{base}/traces?session_id={}", path_segment(&sid))) { code { (sid) } } }
                    td { (format::text(&s["total_traces"])) }
                    td { (format::time(&s["first_trace_at"])) }
                    td { (format::time(&s["last_trace_at"])) }
                }
            }, "No traces.", link))
        } @else {
            (layout::listing(&listed, &["Trace", "Status", "Duration", "Spans", "Errors", "Started"], |t| html! {
                @let tid = format::text(&t["trace_id"]);
                tr class=[(t["status"] == "ERROR").then_some("failed")] {
                    td { a href=(format!("{base}/traces/{}", path_segment(&tid))) { (format::text(&t["name"])) } }
                    td { (format::text(&t["status"])) }
                    td { (format::text(&t["duration"])) }
                    td { (format::text(&t["total_spans"])) }
                    td { (format::text(&t["error_count"])) }
                    td { (format::time(&t["start_time"])) }
                }
            }, "No traces.", link))
        }
    };
    Ok(layout::page(&viewer, "Traces", "/traces", &body).into_response())
}

/// A span laid out on the waterfall.
struct Row<'a> {
    node: &'a Value,
    depth: usize,
    start: Option<i64>,
    end: Option<i64>,
}

/// The spans of `nodes` depth first, with their depth.
fn flatten<'a>(nodes: &'a [Value], depth: usize, rows: &mut Vec<Row<'a>>) {
    for node in nodes {
        rows.push(Row {
            node,
            depth,
            start: format::millis(&node["start_time"]),
            end: format::millis(&node["end_time"]),
        });
        if let Some(children) = node["spans"].as_array() {
            flatten(children, depth + 1, rows);
        }
    }
}

/// The tokens a span counted (its metadata's numeric `*tokens*` keys): `tokens in 19 · out 7`.
fn tokens(node: &Value) -> String {
    let Some(meta) = node["metadata"].as_object() else { return String::new() };
    let count = |side: &str| {
        meta.iter().find(|(k, v)| k.contains("tokens") && k.contains(side) && v.is_number()).map(|(_, v)| v.to_string())
    };
    match (count("input"), count("output")) {
        (Some(i), Some(o)) => format!("tokens in {i} · out {o}"),
        (Some(i), None) => format!("tokens in {i}"),
        (None, Some(o)) => format!("tokens out {o}"),
        (None, None) => String::new(),
    }
}

fn waterfall(tree: &[Value]) -> Markup {
    let mut rows = Vec::new();
    flatten(tree, 0, &mut rows);
    let first = rows.iter().filter_map(|r| r.start).min().unwrap_or(0);
    let last = rows.iter().filter_map(|r| r.end.or(r.start)).max().unwrap_or(first);
    let total = (last - first).max(1) as f64;
    html! {
        div.waterfall role="table" aria-label="Spans over time" {
            div.wf-row.wf-head role="row" {
                span role="columnheader" { "Span" } span role="columnheader" { "Duration" } span role="columnheader" { "Timeline (" (last - first) " ms)" }
            }
            @for row in &rows {
                @let (left, width) = match (row.start, row.end) {
                    (Some(s), Some(e)) => ((s - first) as f64 / total * 100.0, ((e - s) as f64 / total * 100.0).max(0.5)),
                    (Some(s), None) => ((s - first) as f64 / total * 100.0, 0.5),
                    _ => (0.0, 0.5),
                };
                @let failed = row.node["status"] == "ERROR" || !row.node["error"].is_null();
                div.wf-row.failed[failed] role="row" {
                    span.wf-name role="cell" style=(format!("padding-left: {}rem", row.depth as f64 * 1.2)) {
                        span.kind { (format::text(&row.node["type"])) } " " (format::text(&row.node["name"]))
                        @let t = tokens(row.node);
                        @if !t.is_empty() { span.tokens { " · " (t) } }
                        @if failed { span.err { " · " (format::short(&row.node["error"], 120)) } }
                    }
                    span.wf-dur role="cell" { (format::text(&row.node["duration"])) }
                    span.wf-track role="cell" {
                        span.wf-bar style=(format!("left: {left:.2}%; width: {width:.2}%")) title=(format::text(&row.node["duration"])) {}
                    }
                }
            }
        }
    }
}

fn tree_list(nodes: &[Value]) -> Markup {
    html! {
        ul.tree {
            @for n in nodes {
                li {
                    details open {
                        summary { span.kind { (format::text(&n["type"])) } " " (format::text(&n["name"])) " · " (format::text(&n["duration"])) }
                        @if !n["input"].is_null() { p { "Input: " } pre { (format::pretty(&n["input"])) } }
                        @if !n["output"].is_null() { p { "Output: " } pre { (format::pretty(&n["output"])) } }
                        @if !n["error"].is_null() { p.error { (format::text(&n["error"])) } }
                        @if let Some(children) = n["spans"].as_array() { (tree_list(children)) }
                    }
                }
            }
        }
    }
}

/// `GET /ui/traces/{trace_id}`.
pub(crate) async fn detail(viewer: Viewer, Path(trace_id): Path<String>) -> PageResult {
    let base = viewer.base().to_owned();
    let t = viewer.get(&format!("/traces/{}", path_segment(&trace_id))).await?;
    let tree = t["tree"].as_array().cloned().unwrap_or_default();
    let body = html! {
        h1 { "Trace " (format::text(&t["name"])) }
        dl.facts {
            dt { "Status" } dd { (format::text(&t["status"])) }
            dt { "Duration" } dd { (format::text(&t["duration"])) }
            dt { "Spans" } dd { (format::text(&t["total_spans"])) " (" (format::text(&t["error_count"])) " errors)" }
            dt { "Started" } dd { (format::time(&t["start_time"])) }
            @if let (Some(rid), Some(sid)) = (t["run_id"].as_str(), t["session_id"].as_str()) {
                dt { "Run" } dd { a href=(format!("{base}/sessions/{}/runs/{}?type={}", path_segment(sid), path_segment(rid),
                    if t["team_id"].is_string() { "team" } else if t["workflow_id"].is_string() { "workflow" } else { "agent" })) { code { (rid) } } }
            }
            @if !t["error"].is_null() { dt { "Error" } dd.error { (format::text(&t["error"])) } }
        }
        h2 { "Waterfall" }
        (waterfall(&tree))
        h2 { "Spans" }
        (tree_list(&tree))
    };
    Ok(layout::page(&viewer, "Trace", "/traces", &body).into_response())
}
