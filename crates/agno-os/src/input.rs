//! What a request may carry, and the checks made where input enters the OS, once for every route
//! (the route table says which routes take JSON; forms are read by `form.rs`):
//!
//! - **Origin.** A state-changing request (`POST`, `PUT`, `PATCH`, `DELETE`) sent from a browser
//!   page carries `Origin`; one from a page the OS does not allow (the CORS origins, or the OS's
//!   own address) is refused with 403 before anything runs, whatever the auth mode. Without this,
//!   any web page could make a visitor's browser create memories or schedules on a server
//!   without auth (forms and `text/plain` bodies are sent cross-site without a preflight).
//! - **JSON bodies.** A route whose body is JSON takes it only as `application/json` (or a
//!   `+json` type): anything else answers 422 as FastAPI does, so such a body can never be a
//!   cross-site "simple" request.
//! - **Depth.** Every JSON text (a body, or a form field holding JSON) nests at most
//!   [`Limits::json_depth`] levels (`[os] max_json_depth`, 24 by default): what is stored must be
//!   readable back by every backend (MariaDB's JSON holds 31 levels; a value is stored up to a
//!   few levels inside its record). Deeper is 422 naming the limit.
//! - **Schemas.** An `output_schema` whose example would exceed [`Limits::schema`] is 422 naming
//!   the limit: nothing ever builds a value larger than that from a schema.

use agno_core::SchemaLimits;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};
use serde_json::Value;

use crate::error::ApiError;

/// The per-request limits of `[os]`.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest text field of a form (`[os] max_form_field_bytes`).
    pub form_field_bytes: usize,
    /// Deepest nesting of a JSON text (`[os] max_json_depth`).
    pub json_depth: usize,
    /// How large an example of an `output_schema` may be (`[os] max_schema_values`, and
    /// `max_json_depth` for its depth).
    pub schema: SchemaLimits,
    /// Bytes of events a stream may hold for a client that does not read them
    /// (`[os] sse_buffer_bytes`).
    pub sse_buffer_bytes: usize,
}

impl Limits {
    /// The limits of an `[os]` section.
    pub fn from_config(os: &crate::config::OsSection) -> Self {
        Self {
            form_field_bytes: os.max_form_field_bytes,
            json_depth: os.max_json_depth,
            schema: SchemaLimits { max_values: os.max_schema_values, max_depth: os.max_json_depth },
            sse_buffer_bytes: os.sse_buffer_bytes,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::from_config(&crate::config::OsSection::default())
    }
}

/// How deeply `text` nests JSON arrays and objects, counting up to `stop` (brackets inside
/// strings do not count). Works on any bytes, JSON or not, in one pass without recursion.
pub fn nesting_depth(text: &[u8], stop: usize) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in text {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
                if deepest > stop {
                    return deepest;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The 422 of a JSON text nesting deeper than the limit; `at` says where (`("body", "")` or
/// `("body", field)`).
pub fn too_deep(at: (&'static str, &str), limit: usize) -> ApiError {
    let what = if at.1.is_empty() { "the JSON body".to_owned() } else { format!("form field {}", at.1) };
    ApiError::unprocessable(format!(
        "{what} nests deeper than {limit} levels, the most this server stores ([os] max_json_depth raises it)"
    ))
    .with_type("json_too_deep")
    .with_ctx(serde_json::json!({"max_depth": limit}))
    .at(at.0, at.1)
}

/// Checks a form field: a text that reads as JSON (an object or array, which the routes parse)
/// may nest at most `limit` levels. Other text (a message that happens to start with `[`) is not
/// JSON and is taken as it is.
///
/// # Errors
/// [`too_deep`].
pub fn check_form_json(name: &str, text: &str, limit: usize) -> Result<(), ApiError> {
    let trimmed = text.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) || nesting_depth(text.as_bytes(), limit) <= limit {
        return Ok(());
    }
    // Deeper than allowed: refused if it is JSON. A syntax error before the parser's own depth
    // limit means it is plain text; reaching that limit means JSON too deep to read.
    match serde_json::from_str::<serde::de::IgnoredAny>(text) {
        Err(e) if e.is_syntax() && !e.to_string().contains("recursion limit") => Ok(()),
        _ => Err(too_deep(("body", name), limit)),
    }
}

/// Checks an `output_schema`: its example must fit `limits`.
///
/// # Errors
/// 422 naming the limit and the setting that raises it.
pub fn check_output_schema(schema: &Value, limits: SchemaLimits) -> Result<(), ApiError> {
    agno_core::check_schema(schema, limits).map_err(|e| {
        let setting = match e {
            agno_core::SchemaTooLarge::Values { .. } => "[os] max_schema_values",
            agno_core::SchemaTooLarge::Depth { .. } => "[os] max_json_depth",
        };
        ApiError::unprocessable(format!("output_schema is too large: {e} ({setting} raises the limit)"))
            .with_type("schema_too_large")
            .at("body", "output_schema")
    })
}

/// True for the methods that change state (a browser sends them cross-site without asking first
/// only as forms or `text/plain`).
fn changes_state(method: &Method) -> bool {
    matches!(*method, Method::POST | Method::PUT | Method::PATCH | Method::DELETE)
}

/// Refuses a state-changing request from a browser page on an origin the OS does not allow.
/// Requests without `Origin` (curl, SDKs, servers) and from the OS's own address pass.
///
/// # Errors
/// 403 naming the origin and the setting that allows it.
pub fn check_origin(method: &Method, headers: &HeaderMap, policy: &crate::cors::OriginPolicy) -> Result<(), ApiError> {
    if !changes_state(method) {
        return Ok(());
    }
    let Some(origin) = headers.get(header::ORIGIN) else { return Ok(()) };
    let origin = origin.to_str().unwrap_or("(unreadable)");
    if policy.allows(origin) || same_origin(origin, headers) {
        return Ok(());
    }
    tracing::warn!(origin, %method, "refused a state-changing request from an origin that is not allowed");
    Err(ApiError::forbidden(format!(
        "requests from origin {origin} may not change this server's data: add it to [os] cors_allowed_origins \
         (or cors_origin_regex) if it is one of your pages"
    )))
}

/// True when `origin` is the address the request was sent to (the OS's own pages, such as
/// `/docs`), whatever the scheme a proxy in front may have used.
fn same_origin(origin: &str, headers: &HeaderMap) -> bool {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let authority = origin.split_once("://").map(|(_, rest)| rest);
    matches!((host, authority), (Some(h), Some(a)) if !h.is_empty() && h.eq_ignore_ascii_case(a))
}

/// True for `application/json` and `application/<...>+json`.
fn is_json_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else { return false };
    let essence = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// For a route taking JSON: reads the body (within the body limit), refuses it unless it is
/// sent as JSON (when not empty) and nests within the depth limit, and puts it back for the
/// handler.
///
/// # Errors
/// 422 as FastAPI answers a body of another type; [`too_deep`]; the read errors of
/// [`read_error`].
pub async fn check_json_body(req: Request, limits: &Limits) -> Result<Request, ApiError> {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.map_err(|e| read_error(&e))?;
    if !bytes.iter().all(u8::is_ascii_whitespace) {
        if !is_json_type(&parts.headers) {
            return Err(not_a_json_body(&bytes));
        }
        if nesting_depth(&bytes, limits.json_depth) > limits.json_depth {
            return Err(too_deep(("body", ""), limits.json_depth));
        }
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// FastAPI's answer to a JSON route's body sent as another content type (or none): the body is
/// taken as bytes, which the model refuses.
fn not_a_json_body(bytes: &Bytes) -> ApiError {
    const SHOWN: usize = 1024;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(SHOWN)]).into_owned();
    ApiError::unprocessable("Input should be a valid dictionary or object to extract fields from")
        .with_type("model_attributes_type")
        .with_input(Value::String(text))
        .at("body", "")
}

/// The error answered for a body that could not be read, by what went wrong: 413 over the body
/// limit, 408 for a client too slow, 400 for a malformed body.
pub fn read_error(e: &axum::Error) -> ApiError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if err.is::<http_body_util::LengthLimitError>() {
            return ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "the request body is larger than [os] max_body_bytes");
        }
        if let Some(slow) = err.downcast_ref::<crate::serve::body::BodyTooSlow>() {
            return ApiError::new(StatusCode::REQUEST_TIMEOUT, slow.to_string());
        }
        source = err.source();
    }
    ApiError::bad_request(format!("cannot read the request body: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_brackets_outside_strings() {
        assert_eq!(nesting_depth(br#"{"a": [1, {"b": "[[[["}]}"#, 100), 3);
        assert_eq!(nesting_depth(br#"{"a": "\"[[[", "b": {}}"#, 100), 2);
        assert_eq!(nesting_depth(b"plain text", 100), 0);
        let deep = format!("{}1{}", "[".repeat(500), "]".repeat(500));
        assert_eq!(nesting_depth(deep.as_bytes(), 24), 25, "stops counting past the limit");
    }

    #[test]
    fn form_fields_deeper_than_the_limit_are_refused_only_when_json() {
        let deep = format!("{}1{}", "{\"a\":".repeat(30), "}".repeat(30));
        assert!(check_form_json("session_state", &deep, 24).is_err());
        let beyond_the_parser = format!("{}1{}", "[".repeat(300), "]".repeat(300));
        assert!(check_form_json("session_state", &beyond_the_parser, 24).is_err());
        let text = format!("{} and then some words", "[".repeat(30));
        assert!(check_form_json("message", &text, 24).is_ok());
        assert!(check_form_json("session_state", r#"{"a": {"b": 1}}"#, 24).is_ok());
    }
}
