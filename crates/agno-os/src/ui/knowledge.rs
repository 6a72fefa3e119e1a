//! Knowledge: a base's contents with their processing status, a search over it, and an upload
//! (a file or a text) that the OS ingests in the background.

use axum::extract::{Query, Request};
use axum::http::Method;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde_json::json;

use super::format;
use super::layout;
use super::pages::PageResult;
use super::viewer::{UiError, Viewer};
use crate::in_process::path_segment;

/// Query of the knowledge page.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct KnowledgeQuery {
    #[serde(default)]
    knowledge_id: Option<String>,
    #[serde(default)]
    page: Option<u32>,
    /// A search of the base.
    #[serde(default)]
    q: Option<String>,
}

/// `GET /ui/knowledge?knowledge_id=&q=&page=`.
pub(crate) async fn page(viewer: Viewer, Query(q): Query<KnowledgeQuery>) -> PageResult {
    let base = viewer.base().to_owned();
    let kid = q.knowledge_id.clone().unwrap_or_default();
    let kid_param = if kid.is_empty() { String::new() } else { format!("&knowledge_id={}", path_segment(&kid)) };
    let page = q.page.unwrap_or(1).max(1);
    let listed = viewer.get_feature(&format!("/knowledge/content?limit=20&page={page}{kid_param}")).await?;
    let query = q.q.clone().filter(|s| !s.trim().is_empty());
    let found = match &query {
        Some(text) => {
            let mut body = json!({"query": text, "max_results": 10});
            if !kid.is_empty() {
                body["knowledge_id"] = json!(kid);
            }
            Some(viewer.send(Method::POST, "/knowledge/search", Some(body)).await?)
        }
        None => None,
    };
    let link = |p: u64| format!("{base}/knowledge?page={p}{kid_param}");
    let body = html! {
        h1 { "Knowledge" }
        @match &listed {
            Err(reason) => p.muted { (reason) },
            Ok(listed) => {
                form.search method="get" role="search" {
                    @if !kid.is_empty() { input type="hidden" name="knowledge_id" value=(kid); }
                    label for="kq" { "Search" }
                    input #kq type="search" name="q" value=(query.clone().unwrap_or_default());
                    button type="submit" { "Search" }
                }
                @if let Some(found) = &found {
                    h2 { "Results" }
                    @let hits = found["data"].as_array().cloned().unwrap_or_default();
                    @if hits.is_empty() { p.muted { "Nothing found." } }
                    ol.results {
                        @for hit in &hits {
                            li { strong { (format::text(&hit["name"])) } pre { (format::short(&hit["content"], 600)) } }
                        }
                    }
                }
                h2 { "Contents" }
                (layout::listing(listed, &["Name", "Type", "Status", "Updated"], |c| html! {
                    tr class=[(c["status"] == "failed").then_some("failed")] {
                        td { (format::text(&c["name"])) }
                        td { (format::text(&c["type"])) }
                        td.status { (format::text(&c["status"])) @if let Some(m) = c["status_message"].as_str().filter(|m| !m.is_empty()) { " · " (m) } }
                        td { (format::time(&c["updated_at"])) }
                    }
                }, "No contents yet.", link))
                @if viewer.may("knowledge:write") {
                    h2 { "Add content" }
                    form.stacked method="post" enctype="multipart/form-data"
                        action=(format!("{base}/knowledge/upload{}", if kid.is_empty() { String::new() } else { format!("?knowledge_id={}", path_segment(&kid)) })) {
                        label for="k-name" { "Name" } input #k-name name="name";
                        label for="k-file" { "File" } input #k-file type="file" name="file";
                        label for="k-text" { "…or text" } textarea #k-text name="text_content" rows="4" {}
                        button type="submit" { "Upload" }
                    }
                }
            }
        }
    };
    Ok(layout::page(&viewer, "Knowledge", "/knowledge", &body).into_response())
}

/// `POST /ui/knowledge/upload?knowledge_id=`: the page's multipart form, as
/// `POST /knowledge/content`; back to the contents, where its status shows.
pub(crate) async fn upload(
    viewer: Viewer,
    Query(q): Query<KnowledgeQuery>,
    request: Request,
) -> Result<Response, UiError> {
    viewer.check_own_page(request.headers())?;
    let kid = q.knowledge_id.clone().unwrap_or_default();
    let suffix = if kid.is_empty() { String::new() } else { format!("?knowledge_id={}", path_segment(&kid)) };
    viewer.send_raw(Method::POST, &format!("/knowledge/content{suffix}"), request).await?;
    Ok(Redirect::to(&format!("{}/knowledge{suffix}", viewer.base())).into_response())
}
