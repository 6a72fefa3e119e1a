//! The pages of what the OS keeps running: the durable queue (jobs by state, a failed or
//! cancelled one requeued; admins only, as its routes) and the components registry (the catalog's
//! components, their config versions, a draft published and the served version rolled back).

use axum::extract::{Form, Path, Query};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use maud::html;
use serde_json::json;

use super::format;
use super::layout;
use super::pages::PageResult;
use super::viewer::{UiError, Viewer};
use crate::in_process::path_segment;

/// Query of the queue and components lists.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct ListQuery {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    page: Option<u32>,
}

const JOB_STATES: [&str; 6] = ["queued", "running", "paused", "completed", "failed", "cancelled"];

/// `GET /ui/queue?status=failed`: jobs per state and a page of them, newest first.
pub(crate) async fn queue(viewer: Viewer, Query(q): Query<ListQuery>) -> PageResult {
    let base = viewer.base().to_owned();
    let stats = viewer.get_feature("/queue/stats").await?;
    let status = q.status.clone().filter(|s| JOB_STATES.contains(&s.as_str()));
    let page = q.page.unwrap_or(1).max(1);
    let filter = status.as_deref().map(|s| format!("&status={s}")).unwrap_or_default();
    let jobs = match &stats {
        Ok(_) => viewer.get(&format!("/queue/jobs?limit=20&page={page}{filter}")).await?,
        Err(_) => serde_json::Value::Null,
    };
    let link = |p: u64| format!("{base}/queue?page={p}{filter}");
    let body = html! {
        h1 { "Queue" }
        @match &stats {
            Err(reason) => p.muted { (reason) },
            Ok(stats) => {
                nav.tabs aria-label="Job states" {
                    a href=(format!("{base}/queue")) aria-current=[status.is_none().then_some("page")] { "all" }
                    @for s in JOB_STATES {
                        a href=(format!("{base}/queue?status={s}")) aria-current=[(status.as_deref() == Some(s)).then_some("page")] {
                            (s) " (" (stats["jobs"][s].as_i64().unwrap_or(0)) ")"
                        }
                    }
                }
                p.muted { "This replica: " code { (format::text(&stats["worker_id"])) } ", at most "
                    (format::text(&stats["max_concurrency"])) " runs at once, " (format::text(&stats["max_queue_depth"])) " waiting." }
                (layout::listing(&jobs, &["Job", "Component", "State", "Attempt", "User", "Error", ""], |j| html! {
                    @let id = format::text(&j["id"]);
                    tr {
                        td { code { (id) } }
                        td { (format::text(&j["component_type"])) " " (format::text(&j["component_id"])) }
                        td.status { (format::text(&j["status"])) }
                        td { (format::text(&j["attempt"])) " / " (format::text(&j["max_attempts"])) }
                        td { (format::text(&j["user_id"])) }
                        td { (format::short(&j["error"], 160)) }
                        td { @if matches!(j["status"].as_str(), Some("failed" | "cancelled")) {
                            form.inline method="post" action=(format!("{base}/queue/{}/requeue", path_segment(&id))) {
                                button.secondary type="submit" { "Requeue" }
                            }
                        } }
                    }
                }, "No jobs.", link))
            }
        }
    };
    Ok(layout::page(&viewer, "Queue", "/queue", &body).into_response())
}

/// `POST /ui/queue/{id}/requeue`.
pub(crate) async fn requeue(viewer: Viewer, headers: HeaderMap, Path(id): Path<String>) -> Result<Response, UiError> {
    viewer.act(&headers, Method::POST, &format!("/queue/jobs/{}/requeue", path_segment(&id)), None, "/queue").await
}

/// `GET /ui/components`: the catalog's components, newest first.
pub(crate) async fn components(viewer: Viewer, Query(q): Query<ListQuery>) -> PageResult {
    let base = viewer.base().to_owned();
    let page = q.page.unwrap_or(1).max(1);
    let listed = viewer.get_feature(&format!("/components?limit=20&page={page}")).await?;
    let link = |p: u64| format!("{base}/components?page={p}");
    let body = html! {
        h1 { "Components" }
        @match &listed {
            Err(reason) => p.muted { (reason) },
            Ok(listed) => {
                (layout::listing(listed, &["Component", "Type", "Serving", "Updated"], |c| html! {
                    @let id = format::text(&c["component_id"]);
                    tr {
                        td { a href=(format!("{base}/components/{}", path_segment(&id))) { (format::text(&c["name"])) } " " code { (id) } }
                        td { (format::text(&c["component_type"])) }
                        td { "version " (format::text(&c["current_version"])) }
                        td { (format::time(&c["updated_at"])) }
                    }
                }, "No components in the catalog: publish one with POST /components or agno component publish.", link))
            }
        }
    };
    Ok(layout::page(&viewer, "Components", "/components", &body).into_response())
}

/// `GET /ui/components/{id}`: a component and its config versions, with the actions its owner
/// (or an admin) may take.
pub(crate) async fn component(viewer: Viewer, Path(id): Path<String>) -> PageResult {
    let base = viewer.base().to_owned();
    let cid = path_segment(&id);
    let c = viewer.get(&format!("/components/{cid}")).await?;
    let versions = viewer.get(&format!("/components/{cid}/configs?limit=50")).await?;
    let current = c["current_version"].as_i64();
    let may_write = viewer.may("components:write");
    let body = html! {
        h1 { "Component " (format::text(&c["name"])) }
        dl.facts {
            dt { "Id" } dd { code { (id) } }
            dt { "Type" } dd { (format::text(&c["component_type"])) }
            dt { "Serving" } dd { "version " (format::text(&c["current_version"])) }
            dt { "Description" } dd { (format::text(&c["description"])) }
        }
        h2 { "Versions" }
        table.versions {
            thead { tr { th { "Version" } th { "Stage" } th { "Label" } th { "Created" } th {} } }
            tbody {
                @for v in versions["data"].as_array().or(versions.as_array()).into_iter().flatten() {
                    @let n = v["version"].as_i64().unwrap_or_default();
                    tr {
                        td { (n) @if Some(n) == current { " (serving)" } }
                        td.stage { (format::text(&v["stage"])) }
                        td { (format::text(&v["label"])) }
                        td { (format::time(&v["created_at"])) }
                        td { @if may_write {
                            @if v["stage"] == "draft" {
                                form.inline method="post" action=(format!("{base}/components/{cid}/publish")) {
                                    input type="hidden" name="version" value=(n);
                                    button type="submit" { "Publish" }
                                }
                            } @else if Some(n) != current {
                                form.inline method="post" action=(format!("{base}/components/{cid}/serve")) {
                                    input type="hidden" name="version" value=(n);
                                    button.secondary type="submit" { "Serve this version" }
                                }
                            }
                        } }
                    }
                }
            }
        }
        h2 { "Serving config" }
        pre { (format::pretty(&viewer.get(&format!("/components/{cid}/configs/current")).await.map(|v| v["config"].clone()).unwrap_or_default())) }
    };
    Ok(layout::page(&viewer, "Component", "/components", &body).into_response())
}

/// A version named by a form.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct VersionForm {
    version: i64,
}

/// `POST /ui/components/{id}/publish`: a draft version published (and served, as Agno does).
pub(crate) async fn publish(
    viewer: Viewer,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<VersionForm>,
) -> Result<Response, UiError> {
    let cid = path_segment(&id);
    let uri = format!("/components/{cid}/configs/{}", form.version);
    viewer.act(&headers, Method::PATCH, &uri, Some(json!({"stage": "published"})), &format!("/components/{cid}")).await
}

/// `POST /ui/components/{id}/serve`: an earlier published version served again (a rollback).
pub(crate) async fn serve(
    viewer: Viewer,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<VersionForm>,
) -> Result<Response, UiError> {
    let cid = path_segment(&id);
    let uri = format!("/components/{cid}/configs/{}/set-current", form.version);
    viewer.act(&headers, Method::POST, &uri, None, &format!("/components/{cid}")).await
}
