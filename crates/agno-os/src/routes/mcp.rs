//! `/mcp`: the MCP streamable HTTP endpoint ([`crate::mcp_server`]), when `[mcp_server]` is on.

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// `/mcp` (POST, GET, DELETE): the MCP streamable HTTP endpoint.
pub async fn mcp(State(state): State<AppState>, request: Request) -> Response {
    match state.mcp.as_ref() {
        Some(service) => service.handle(request).await,
        None => ApiError::not_found("the MCP server is off: set [mcp_server] enabled = true in agentos.toml")
            .into_response(),
    }
}
