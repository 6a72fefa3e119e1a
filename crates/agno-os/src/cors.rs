//! CORS, answered as Python AgentOS answers it (Starlette's `CORSMiddleware` with Agno's
//! settings), so browser clients (Agent UI on `localhost:3000`, the control plane at
//! `os.agno.com`) can call the OS.
//!
//! - Allowed origins: `[os] cors_allowed_origins` (absent or empty: Agno's defaults,
//!   [`DEFAULT_ORIGINS`]) plus `[os] cors_origin_regex`, matched against the whole `Origin`.
//! - A preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered here, before routing
//!   and auth (it carries no token): 200 with the origin echoed, `allow-credentials: true`, every
//!   method, the requested headers and `max-age: 600`; 400 `Disallowed CORS origin` for an origin
//!   not allowed (`null` included) or unreadable request headers.
//! - Other requests go on unchanged (CORS never widens what auth allows); their responses carry
//!   `access-control-allow-origin` only for an allowed origin, plus `allow-credentials` and
//!   `expose-headers: *`. A wildcard origin is never sent.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tower::ServiceExt;
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

/// Agno's default browser origins (`agno.os.settings`): Agent UI in development and Agno's hosted
/// UIs.
pub const DEFAULT_ORIGINS: [&str; 6] = [
    "http://localhost:3000",
    "https://agno.com",
    "https://www.agno.com",
    "https://app.agno.com",
    "https://os-stg.agno.com",
    "https://os.agno.com",
];

/// How long a browser may cache a preflight answer, as Starlette's default.
const MAX_AGE: Duration = Duration::from_secs(600);

/// Which browser origins may call the OS.
#[derive(Debug, Clone)]
pub struct OriginPolicy {
    origins: Arc<[String]>,
    pattern: Option<regex::Regex>,
}

impl OriginPolicy {
    /// The exact `origins` (Agno's defaults when `None` or empty; `*` is ignored, as Agno does) and
    /// an optional regular expression an origin must match whole.
    ///
    /// # Errors
    /// The regular expression does not compile.
    pub fn new(origins: Option<&[String]>, pattern: Option<&str>) -> Result<Self, String> {
        let origins: Vec<String> = match origins {
            Some(list) if !list.is_empty() => list.iter().filter(|o| o.as_str() != "*").cloned().collect(),
            _ => DEFAULT_ORIGINS.iter().map(|o| (*o).to_owned()).collect(),
        };
        let pattern = pattern
            .map(|p| regex::Regex::new(&format!("^(?:{p})$")))
            .transpose()
            .map_err(|e| format!("[os] cors_origin_regex is not a valid regular expression: {e}"))?;
        Ok(Self { origins: origins.into(), pattern })
    }

    /// True when `origin` may call the OS from a browser.
    pub fn allows(&self, origin: &str) -> bool {
        self.origins.iter().any(|o| o == origin) || self.pattern.as_ref().is_some_and(|p| p.is_match(origin))
    }

    /// The tower-http layer answering allowed preflights and decorating responses (with
    /// [`preflight_and_expose`] around it).
    pub fn layer(&self) -> CorsLayer {
        let policy = self.clone();
        let methods = ["DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"].map(|m| {
            // Each is a valid method token.
            Method::from_bytes(m.as_bytes()).unwrap_or(Method::GET)
        });
        CorsLayer::new()
            .allow_origin(AllowOrigin::predicate(move |origin: &HeaderValue, _| {
                origin.to_str().is_ok_and(|o| policy.allows(o))
            }))
            .allow_credentials(true)
            .allow_methods(methods)
            .allow_headers(AllowHeaders::mirror_request())
            .max_age(MAX_AGE)
    }
}

/// Around [`OriginPolicy::layer`], what tower-http does not do as Starlette does: refuses a
/// preflight from an origin that may not call the OS (400, where the layer would answer 200
/// without headers), and adds `access-control-expose-headers: *` to the responses of requests
/// with an `Origin` (tower-http refuses a wildcard next to credentials; Starlette sends it, and a
/// browser reads it as a wildcard for requests without credentials).
pub fn preflight_and_expose<S: crate::app::Wrapped>(policy: OriginPolicy, inner: S) -> impl crate::app::Wrapped {
    // A service of its own rather than `axum::middleware::from_fn`, whose future holds the
    // middleware's state and copies of the request until the response: this one holds only the
    // inner service's future and a flag while the route runs (a long SSE tail included).
    tower::service_fn(move |request: Request| {
        let (expose, refused) = if is_preflight(&request) {
            (false, refusal(&policy, &request))
        } else {
            (request.headers().contains_key(header::ORIGIN), None)
        };
        let inner = inner.clone();
        async move {
            if let Some(refused) = refused {
                return Ok(refused);
            }
            let mut response = inner.oneshot(request).await?;
            if expose {
                response.headers_mut().insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("*"));
            }
            Ok(response)
        }
    })
}

/// Whether `request` is a CORS preflight.
fn is_preflight(request: &Request) -> bool {
    let headers = request.headers();
    request.method() == Method::OPTIONS
        && headers.contains_key(header::ORIGIN)
        && headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
}

/// The 400 answering the preflight `request` when `policy` refuses it; none when it passes.
fn refusal(policy: &OriginPolicy, request: &Request) -> Option<Response> {
    let headers = request.headers();
    let origin_ok = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()).is_some_and(|o| policy.allows(o));
    let method_ok = headers
        .get(header::ACCESS_CONTROL_REQUEST_METHOD)
        .and_then(|m| m.to_str().ok())
        .is_some_and(|m| Method::from_bytes(m.as_bytes()).is_ok());
    let headers_ok =
        headers.get_all(header::ACCESS_CONTROL_REQUEST_HEADERS).iter().all(|h| h.to_str().is_ok_and(valid_header_list));
    let refused = [(!origin_ok, "origin"), (!method_ok, "method"), (!headers_ok, "headers")]
        .into_iter()
        .filter_map(|(bad, what)| bad.then_some(what))
        .collect::<Vec<_>>();
    if refused.is_empty() {
        return None;
    }
    let mut response =
        (StatusCode::BAD_REQUEST, Body::from(format!("Disallowed CORS {}", refused.join(", ")))).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response.headers_mut().insert(header::VARY, HeaderValue::from_static("Origin"));
    Some(response)
}

/// `Access-Control-Request-Headers`: comma-separated header names.
fn valid_header_list(list: &str) -> bool {
    list.split(',').map(str::trim).filter(|h| !h.is_empty()).all(|h| HeaderName::from_bytes(h.as_bytes()).is_ok())
}
