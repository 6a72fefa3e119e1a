//! The pages that act: approvals (pending ones, resolved from the page) and schedules (created,
//! enabled or disabled, triggered, with their runs). Each action is a same-origin form post
//! answered by the OS route it names, as the viewer, then a redirect back to the page.

use axum::extract::{Form, Path, Query};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde_json::{Value, json};

use super::format;
use super::layout::{self, pager};
use super::pages::PageResult;
use super::viewer::{UiError, Viewer};
use crate::in_process::path_segment;

/// Query of the approvals page.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct ApprovalsQuery {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    page: Option<u32>,
}

/// `GET /ui/approvals?status=pending`: approvals newest first; pending ones can be resolved by a
/// viewer who may (`approvals:write`).
pub(crate) async fn approvals(viewer: Viewer, Query(q): Query<ApprovalsQuery>) -> PageResult {
    let base = viewer.base().to_owned();
    let status = q.status.clone().unwrap_or_else(|| "pending".to_owned());
    let page = q.page.unwrap_or(1).max(1);
    let filter = if status == "all" { String::new() } else { format!("status={}&", path_segment(&status)) };
    let listed = viewer.get(&format!("/approvals?{filter}limit=20&page={page}")).await?;
    let may_resolve = viewer.may("approvals:write");
    let link = |p: u64| format!("{base}/approvals?status={}&page={p}", path_segment(&status));
    let body = html! {
        h1 { "Approvals" }
        nav.tabs aria-label="Approval states" {
            @for s in ["pending", "approved", "rejected", "all"] {
                a href=(format!("{base}/approvals?status={s}")) aria-current=[(s == status).then_some("page")] { (s) }
            }
        }
        @let items = listed["data"].as_array().cloned().unwrap_or_default();
        @if items.is_empty() { p.muted { "No " (status) " approvals." } }
        ul.cards {
            @for a in &items {
                @let id = format::text(&a["id"]);
                li.card.approval data-approval=(id) {
                    h2 { code { (format::text(&a["tool_name"])) } " · " (format::text(&a["status"])) }
                    dl.facts {
                        dt { "Asked by" } dd { (format::text(&a["agent_id"])) (format::text(&a["team_id"])) (format::text(&a["workflow_id"])) }
                        dt { "User" } dd { (format::text(&a["user_id"])) }
                        dt { "Run" } dd { code { (format::text(&a["run_id"])) } }
                        dt { "Created" } dd { (format::time(&a["created_at"])) }
                        @if !a["resolved_by"].is_null() { dt { "Resolved by" } dd { (format::text(&a["resolved_by"])) } }
                    }
                    pre { (format::pretty(&a["tool_args"])) }
                    @if may_resolve && a["status"] == "pending" {
                        form.inline method="post" action=(format!("{base}/approvals/{}/resolve", path_segment(&id))) {
                            button type="submit" name="status" value="approved" { "Approve" }
                            button.secondary type="submit" name="status" value="rejected" { "Reject" }
                        }
                    }
                }
            }
        }
        (pager(link, &listed["meta"]))
    };
    Ok(layout::page(&viewer, "Approvals", "/approvals", &body).into_response())
}

/// The resolve form: `approved` or `rejected`.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct Resolution {
    status: String,
}

/// `POST /ui/approvals/{id}/resolve`: `POST /approvals/{id}/resolve` as the viewer.
pub(crate) async fn resolve_approval(
    viewer: Viewer,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<Resolution>,
) -> Result<Response, UiError> {
    let by = viewer.principal.subject.clone().unwrap_or_else(|| "admin".to_owned());
    let body = json!({"status": form.status, "resolved_by": by});
    viewer
        .act(&headers, Method::POST, &format!("/approvals/{}/resolve", path_segment(&id)), Some(body), "/approvals")
        .await
}

/// `GET /ui/schedules`: the viewer's schedules, and a form to create one.
pub(crate) async fn schedules(viewer: Viewer, Query(q): Query<ApprovalsQuery>) -> PageResult {
    let base = viewer.base().to_owned();
    let page = q.page.unwrap_or(1).max(1);
    let listed = viewer.get(&format!("/schedules?limit=20&page={page}")).await?;
    let link = |p: u64| format!("{base}/schedules?page={p}");
    let body = html! {
        h1 { "Schedules" }
        (layout::listing(&listed, &["Schedule", "When", "Calls", "Enabled", "Next run"], |s| html! {
            @let id = format::text(&s["id"]);
            tr {
                td { a href=(format!("{base}/schedules/{}", path_segment(&id))) { (format::text(&s["name"])) } }
                td { code { (format::text(&s["cron_expr"])) } " " (format::text(&s["timezone"])) }
                td { code { (format::text(&s["method"])) " " (format::text(&s["endpoint"])) } }
                td { (if s["enabled"] == true { "yes" } else { "no" }) }
                td { (format::time(&s["next_run_at"])) }
            }
        }, "No schedules.", link))
        @if viewer.may("schedules:write") {
            h2 { "New schedule" }
            form.stacked method="post" action=(format!("{base}/schedules")) {
                label for="s-name" { "Name" } input #s-name name="name" required;
                label for="s-cron" { "Cron expression" } input #s-cron name="cron_expr" value="0 * * * *" required;
                label for="s-endpoint" { "Endpoint (an agent's run route)" }
                input #s-endpoint name="endpoint" placeholder="/agents/assistant/runs" required;
                label for="s-message" { "Message" } input #s-message name="message";
                button type="submit" { "Create" }
            }
        }
    };
    Ok(layout::page(&viewer, "Schedules", "/schedules", &body).into_response())
}

/// The new-schedule form.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct NewSchedule {
    name: String,
    cron_expr: String,
    endpoint: String,
    #[serde(default)]
    message: String,
}

/// `POST /ui/schedules`: `POST /schedules` as the viewer, then the new schedule's page.
pub(crate) async fn create_schedule(
    viewer: Viewer,
    headers: HeaderMap,
    Form(form): Form<NewSchedule>,
) -> Result<Response, UiError> {
    viewer.check_own_page(&headers)?;
    let mut body = json!({"name": form.name, "cron_expr": form.cron_expr, "endpoint": form.endpoint, "method": "POST"});
    if !form.message.is_empty() {
        body["payload"] = json!({"message": form.message});
    }
    let created = viewer.send(Method::POST, "/schedules", Some(body)).await?;
    let id = format::text(&created["id"]);
    Ok(Redirect::to(&format!("{}/schedules/{}", viewer.base(), path_segment(&id))).into_response())
}

/// `GET /ui/schedules/{id}`: one schedule, its actions and its runs.
pub(crate) async fn schedule(viewer: Viewer, Path(id): Path<String>) -> PageResult {
    let base = viewer.base().to_owned();
    let sid = path_segment(&id);
    let s = viewer.get(&format!("/schedules/{sid}")).await?;
    let runs = viewer.get(&format!("/schedules/{sid}/runs?limit=20")).await?;
    let enabled = s["enabled"] == true;
    let body = html! {
        h1 { "Schedule " (format::text(&s["name"])) }
        dl.facts {
            dt { "When" } dd { code { (format::text(&s["cron_expr"])) } " " (format::text(&s["timezone"])) }
            dt { "Calls" } dd { code { (format::text(&s["method"])) " " (format::text(&s["endpoint"])) } }
            dt { "Payload" } dd { pre { (format::pretty(&s["payload"])) } }
            dt { "Enabled" } dd { (if enabled { "yes" } else { "no" }) @if !s["disabled_reason"].is_null() { " (" (format::text(&s["disabled_reason"])) ")" } }
            dt { "Next run" } dd { (format::time(&s["next_run_at"])) }
        }
        @if viewer.may("schedules:write") {
            div.actions {
                form.inline method="post" action=(format!("{base}/schedules/{sid}/trigger")) { button type="submit" { "Run now" } }
                form.inline method="post" action=(format!("{base}/schedules/{sid}/toggle")) {
                    button.secondary type="submit" { (if enabled { "Disable" } else { "Enable" }) }
                }
            }
        }
        h2 { "Runs" }
        table.schedule-runs {
            thead { tr { th { "Triggered" } th { "Attempt" } th { "Status" } th { "Run" } th { "Error" } } }
            tbody {
                @for r in runs["data"].as_array().into_iter().flatten() {
                    tr {
                        td { (format::time(&r["triggered_at"])) }
                        td { (format::text(&r["attempt"])) }
                        td.status { (format::text(&r["status"])) }
                        td { @if let (Some(rid), Some(ses)) = (r["run_id"].as_str(), r["session_id"].as_str()) {
                            a href=(format!("{base}/sessions/{}/runs/{}?type={}", path_segment(ses), path_segment(rid), target_type(&s))) { code { (rid) } }
                        } }
                        td { (format::text(&r["error"])) }
                    }
                }
            }
        }
        @if runs["data"].as_array().is_none_or(|r| r.is_empty()) { p.muted { "Not run yet." } }
    };
    Ok(layout::page(&viewer, "Schedule", "/schedules", &body).into_response())
}

/// The session type of what a schedule runs (`agent` when it names none).
fn target_type(s: &Value) -> &str {
    match s["target_type"].as_str() {
        Some("team") => "team",
        Some("workflow") => "workflow",
        _ => "agent",
    }
}

/// `POST /ui/schedules/{id}/trigger`: `POST /schedules/{id}/trigger` as the viewer.
pub(crate) async fn trigger_schedule(
    viewer: Viewer,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, UiError> {
    let sid = path_segment(&id);
    viewer.act(&headers, Method::POST, &format!("/schedules/{sid}/trigger"), None, &format!("/schedules/{sid}")).await
}

/// `POST /ui/schedules/{id}/toggle`: enables a disabled schedule, disables an enabled one.
pub(crate) async fn toggle_schedule(
    viewer: Viewer,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, UiError> {
    viewer.check_own_page(&headers)?;
    let sid = path_segment(&id);
    let s = viewer.get(&format!("/schedules/{sid}")).await?;
    let action = if s["enabled"] == true { "disable" } else { "enable" };
    viewer.act(&headers, Method::POST, &format!("/schedules/{sid}/{action}"), None, &format!("/schedules/{sid}")).await
}
