//! The control plane at `/ui`: pages to chat with the OS's agents, teams and workflows and to look
//! at and act on what they did (sessions and runs, traces, approvals, schedules, knowledge,
//! memories, learnings, evals, metrics, the components registry and, for admins, the durable
//! queue), served by the binary itself, offline.
//!
//! Every page is rendered on the server from the OS's own routes, called in process with the
//! signed-in viewer's credentials ([`viewer::Viewer`]): a page shows what the REST API answers
//! that token and nothing else, so authentication, scopes and user isolation are the REST
//! routes' own. The token is kept in an `HttpOnly`, `SameSite=Strict` cookie scoped to the UI's
//! path; the pages' scripts never see it. The chat page streams through `/ui/api/...`, which
//! forwards a same-origin request to the route of the same path with the viewer's credentials.
//!
//! HTML is built with `maud`, which escapes every value it is given: text from runs (model
//! output, tool arguments, user messages) always renders as text.

mod assets;
mod chat;
mod format;
mod knowledge;
mod layout;
mod pages;
mod registry;
mod traces;
mod viewer;
mod work;

use std::sync::Arc;

use axum::Router;
use axum::routing::{any, get, post};

use crate::in_process::Loopback;
use crate::state::AppState;

/// What the UI's handlers share: the OS's routes to call in process, and where the UI is mounted.
#[derive(Clone)]
pub(crate) struct Ui {
    routes: Loopback,
    /// The path the pages are served under (`/ui`).
    base: Arc<str>,
}

/// The UI's routes under `base` (`[ui] path`, `/ui` by default), to merge beside the OS's.
pub(crate) fn router(state: &AppState, base: &str) -> Router<AppState> {
    let ui = Ui { routes: crate::routes::loopback(state), base: base.into() };
    let path = |p: &str| format!("{base}{p}");
    Router::new()
        .route(&path(""), get(pages::home))
        .route(&path("/"), get(pages::home))
        .route(&path("/sign-in"), get(viewer::sign_in_page).post(viewer::sign_in))
        .route(&path("/sign-out"), post(viewer::sign_out))
        .route(&path("/assets/{name}"), get(assets::serve))
        .route(&path("/chat/{kind}/{id}"), get(chat::page))
        .route(&path("/sessions"), get(pages::sessions))
        .route(&path("/sessions/{session_id}"), get(pages::session))
        .route(&path("/sessions/{session_id}/runs/{run_id}"), get(pages::run))
        .route(&path("/traces"), get(traces::list))
        .route(&path("/traces/{trace_id}"), get(traces::detail))
        .route(&path("/approvals"), get(work::approvals))
        .route(&path("/approvals/{id}/resolve"), post(work::resolve_approval))
        .route(&path("/schedules"), get(work::schedules).post(work::create_schedule))
        .route(&path("/schedules/{id}"), get(work::schedule))
        .route(&path("/schedules/{id}/trigger"), post(work::trigger_schedule))
        .route(&path("/schedules/{id}/toggle"), post(work::toggle_schedule))
        .route(&path("/memories"), get(pages::memories))
        .route(&path("/metrics"), get(pages::metrics))
        .route(&path("/learnings"), get(pages::learnings))
        .route(&path("/evals"), get(pages::evals))
        .route(&path("/knowledge"), get(knowledge::page))
        .route(&path("/knowledge/upload"), post(knowledge::upload))
        .route(&path("/queue"), get(registry::queue))
        .route(&path("/queue/{id}/requeue"), post(registry::requeue))
        .route(&path("/components"), get(registry::components))
        .route(&path("/components/{id}"), get(registry::component))
        .route(&path("/components/{id}/publish"), post(registry::publish))
        .route(&path("/components/{id}/serve"), post(registry::serve))
        .route(&path("/api/{*path}"), any(viewer::forward))
        .route(&path("/{*rest}"), get(pages::not_found))
        .layer(axum::Extension(ui))
}
