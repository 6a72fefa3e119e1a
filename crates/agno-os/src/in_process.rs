//! Calling this OS's own routes in process, as the scheduler's executor and the MCP server's
//! tools do: the route table behind the same authorisation layer and JSON errors as the served
//! app, so an internal call meets exactly the checks and answers an HTTP call meets.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{Request, StatusCode};
use tower::ServiceExt;

/// The OS's routes, callable in process.
#[derive(Clone)]
pub(crate) struct Loopback {
    router: Router,
}

impl Loopback {
    /// Calls into `router`: the OS's routes behind their authorisation layer
    /// ([`crate::routes::loopback`] builds it).
    pub(crate) fn new(router: Router) -> Self {
        Self { router }
    }

    /// Sends `request`: the answer as the route gives it (a stream stays a stream).
    pub(crate) async fn call(&self, request: Request<Body>) -> axum::response::Response {
        match self.router.clone().oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }

    /// Sends `request`: the answer's status and body (at most `body_limit` bytes).
    ///
    /// # Errors
    /// When the answer's body cannot be read (or is over the limit).
    pub(crate) async fn send(&self, request: Request<Body>, body_limit: usize) -> Result<(StatusCode, Bytes), String> {
        let response = self.router.clone().oneshot(request).await.map_err(|e| e.to_string())?;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), body_limit).await.map_err(|e| e.to_string())?;
        Ok((status, bytes))
    }
}

/// `s` as one segment of a path: RFC 3986's unreserved characters kept, every other byte
/// percent-encoded (a space is `%20`; a query's `+` would be a literal plus in a path).
pub(crate) fn path_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_are_percent_encoded() {
        assert_eq!(path_segment("agent-1_a.b~"), "agent-1_a.b~");
        assert_eq!(path_segment("my agent/x+y"), "my%20agent%2Fx%2By");
        assert_eq!(path_segment("é"), "%C3%A9");
    }
}
