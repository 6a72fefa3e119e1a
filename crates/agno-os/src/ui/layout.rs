//! The frame every page shares: the head (the UI's own stylesheet and script, nothing from
//! elsewhere), the navigation (admin pages only for admins) and the main region.

use maud::{DOCTYPE, Markup, html};

use super::viewer::Viewer;

/// The sections of the navigation: (path under the UI, label, scope the section's route needs).
const SECTIONS: [(&str, &str, &str); 12] = [
    ("/", "Chat", "agents:read"),
    ("/sessions", "Sessions", "sessions:read"),
    ("/traces", "Traces", "traces:read"),
    ("/approvals", "Approvals", "approvals:read"),
    ("/schedules", "Schedules", "schedules:read"),
    ("/knowledge", "Knowledge", "knowledge:read"),
    ("/memories", "Memories", "memories:read"),
    ("/learnings", "Learnings", "learnings:read"),
    ("/evals", "Evals", "evals:read"),
    ("/metrics", "Metrics", "metrics:read"),
    ("/components", "Components", "components:read"),
    ("/queue", "Queue", "agent_os:admin"),
];

fn head(base: &str, title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · AgentOS" }
            link rel="stylesheet" href=(format!("{base}/assets/ui.css"));
            script src=(format!("{base}/assets/ui.js")) defer {}
        }
    }
}

/// A page with the navigation; `active` is the section's path (`/sessions`).
pub(crate) fn page(viewer: &Viewer, title: &str, active: &str, body: &Markup) -> Markup {
    let base = viewer.base();
    let who = viewer
        .principal
        .subject
        .clone()
        .unwrap_or_else(|| if viewer.principal.admin { "admin".to_owned() } else { "anonymous".to_owned() });
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(base, title))
            body data-base=(base) {
                a.skip href="#main" { "Skip to content" }
                header {
                    nav aria-label="Sections" {
                        span.brand { "AgentOS" }
                        ul {
                            @for (path, label, scope) in SECTIONS {
                                @if viewer.may(scope) {
                                    li {
                                        a href=(format!("{base}{path}"))
                                            aria-current=[(path == active).then_some("page")] { (label) }
                                    }
                                }
                            }
                        }
                        span.who { (who) @if viewer.principal.admin { " · admin" } }
                        @if viewer.signed_in {
                            form.inline method="post" action=(format!("{base}/sign-out")) {
                                button type="submit" { "Sign out" }
                            }
                        }
                    }
                }
                main #main { (body) }
            }
        }
    }
}

/// A page without the navigation (sign-in, errors before the viewer is known).
pub(crate) fn bare(base: &str, title: &str, body: &Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(base, title))
            body data-base=(base) {
                main #main.narrow { (body) }
            }
        }
    }
}

/// Previous / next links of a paged listing (`meta` as the routes answer it).
pub(crate) fn pager(link: impl Fn(u64) -> String, meta: &serde_json::Value) -> Markup {
    let page = meta["page"].as_u64().unwrap_or(1);
    let pages = meta["total_pages"].as_u64().unwrap_or(1);
    let total = meta["total_count"].as_u64();
    html! {
        nav.pager aria-label="Pages" {
            @if page > 1 { a rel="prev" href=(link(page - 1)) { "← Newer" } }
            span { "Page " (page) " of " (pages.max(1)) @if let Some(t) = total { " · " (t) " in all" } }
            @if page < pages { a rel="next" href=(link(page + 1)) { "Older →" } }
        }
    }
}

/// A paged listing of a route's answer (`{data, meta}`): a table of one `row` per item under
/// `headers`, `empty` when there is none, then the pager.
pub(crate) fn listing(
    answer: &serde_json::Value,
    headers: &[&str],
    row: impl Fn(&serde_json::Value) -> Markup,
    empty: &str,
    link: impl Fn(u64) -> String,
) -> Markup {
    let items = answer["data"].as_array().map(Vec::as_slice).unwrap_or_default();
    html! {
        table {
            thead { tr { @for h in headers { th { (h) } } } }
            tbody { @for item in items { (row(item)) } }
        }
        @if items.is_empty() { p.muted { (empty) } }
        (pager(link, &answer["meta"]))
    }
}
