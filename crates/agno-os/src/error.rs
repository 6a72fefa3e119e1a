//! Errors as AgentOS answers them: a status code and `{"detail": "...", "error_type": ...}`; a
//! 422 as FastAPI answers it, `{"detail": [{"type", "loc", "msg", "input"}]}`, so clients that
//! read validation errors the FastAPI way (Agno's included) find them where they look. A 429 or
//! 503 (a full queue, a database down) carries `Retry-After`.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The `Retry-After` of a 429 or 503, in seconds: the connection-level refusals
/// (`serve::connections`) answer the same.
pub(crate) const RETRY_AFTER_SECONDS: &str = "1";

/// An error answered to an HTTP caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The status.
    pub status: StatusCode,
    /// Human-readable message.
    pub detail: String,
    /// Category, when the error carries one (for a 422: the validation error's `type`).
    pub error_type: Option<&'static str>,
    /// Where the invalid input is, for a 422: `("body" | "query" | "path" | "header", name)`.
    pub location: Option<(&'static str, String)>,
    /// Pydantic's `ctx` of a validation error (the bound a value broke, the validator's error).
    pub ctx: Option<Box<serde_json::Value>>,
    /// A 422 answered with a plain `detail` string, as a route's own `HTTPException(422)` is.
    pub plain: bool,
    /// The refused input, for a 422 (pydantic's `input`; `null` when absent).
    pub input: Option<Box<serde_json::Value>>,
}

impl ApiError {
    /// An error with a status and message.
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self { status, detail: detail.into(), error_type: None, location: None, ctx: None, plain: false, input: None }
    }

    /// 422 as pydantic reports a body validator's `ValueError` on `field`: `Value error, ...`.
    pub fn value_error(field: &str, message: impl std::fmt::Display) -> Self {
        Self::unprocessable(format!("Value error, {message}"))
            .at("body", field)
            .with_ctx(serde_json::json!({"error": {}}))
    }

    /// 400.
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, detail)
    }

    /// 401.
    pub fn unauthenticated(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, detail)
    }

    /// 403.
    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, detail)
    }

    /// 404.
    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, detail)
    }

    /// 409.
    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, detail)
    }

    /// 422.
    pub fn unprocessable(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, detail)
    }

    /// 500, logging the cause.
    pub fn internal(detail: impl Into<String>) -> Self {
        let detail = detail.into();
        tracing::error!(%detail, "internal error");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, detail)
    }

    /// The same error with a category.
    pub fn with_type(mut self, error_type: &'static str) -> Self {
        self.error_type = Some(error_type);
        self
    }

    /// 422 for a required input that is missing: FastAPI's `missing` at `location` / `name`.
    pub fn missing(location: &'static str, name: &str) -> Self {
        Self::unprocessable("Field required").with_type("missing").at(location, name)
    }

    /// The same 422 with pydantic's `ctx` (e.g. `{"le": 10}`, or `{"error": "..."}` for a
    /// validator's refusal).
    pub fn with_ctx(mut self, ctx: serde_json::Value) -> Self {
        self.ctx = Some(Box::new(ctx));
        self
    }

    /// The same 422 quoting the refused input.
    pub fn with_input(mut self, input: serde_json::Value) -> Self {
        self.input = Some(Box::new(input));
        self
    }

    /// A 422 whose `detail` is the message itself (a route's check rather than the body's
    /// validation, as FastAPI answers an `HTTPException(422, detail)`).
    pub fn unprocessable_plain(detail: impl Into<String>) -> Self {
        Self { plain: true, ..Self::unprocessable(detail) }
    }

    /// The same error pointing at the invalid input (`body`, `query`, `path` or `header`).
    pub fn at(mut self, location: &'static str, name: &str) -> Self {
        self.location = Some((location, name.to_owned()));
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status == StatusCode::UNPROCESSABLE_ENTITY && !self.plain {
            // An empty name points at the whole `place` (pydantic's model validators: `["body"]`).
            let loc = self.location.map_or_else(Vec::new, |(place, name)| {
                if name.is_empty() { vec![place.to_owned()] } else { vec![place.to_owned(), name] }
            });
            let input = self.input.map_or(serde_json::Value::Null, |i| *i);
            let mut error = json!({"type": self.error_type.unwrap_or("value_error"), "loc": loc, "msg": self.detail, "input": input});
            if let Some(ctx) = self.ctx {
                error["ctx"] = *ctx;
            }
            return (self.status, Json(json!({ "detail": [error] }))).into_response();
        }
        let mut body = json!({ "detail": self.detail });
        if let Some(t) = self.error_type {
            body["error_type"] = json!(t);
        }
        let mut response = (self.status, Json(body)).into_response();
        if matches!(self.status, StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE) {
            // Load shed or a dependency down: the client may retry, after a pause.
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECONDS));
        }
        response
    }
}

impl From<agno_core::DbError> for ApiError {
    fn from(e: agno_core::DbError) -> Self {
        use agno_core::DbErrorKind;
        match e.kind() {
            DbErrorKind::NotFound => ApiError::not_found(e.to_string()),
            DbErrorKind::Conflict => ApiError::conflict(e.to_string()),
            DbErrorKind::Unsupported => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
            DbErrorKind::Unavailable => {
                tracing::error!(error = %e, "database unavailable");
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "the database is unavailable, try again later")
            }
            _ => ApiError::internal(format!("storage error: {e}")),
        }
    }
}

/// Result of a handler.
pub type ApiResult<T> = Result<T, ApiError>;

/// `inner` with every error answered in plain text (axum's extractor rejections, the body limit)
/// turned into `{"detail": "..."}`, so every error a client sees has Agno's shape (the control
/// plane's HTML error pages excepted). While the route runs it holds only the route's future (as
/// [`crate::routes::guard::layer`]); an error's body is read in a future of its own.
pub fn json_errors<S: crate::app::Wrapped>(inner: S) -> impl crate::app::Wrapped {
    use tower::ServiceExt as _;
    tower::service_fn(move |request: axum::extract::Request| {
        let inner = inner.clone();
        async move {
            let response = inner.oneshot(request).await?;
            Ok(if plain_text_error(&response) { Box::pin(as_json(response)).await } else { response })
        }
    })
}

/// An error response that is neither JSON nor one of the control plane's HTML pages.
fn plain_text_error(resp: &Response) -> bool {
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json") || ct.starts_with("text/html"));
    (status.is_client_error() || status.is_server_error()) && !is_json
}

/// The plain-text error `resp` as `{"detail": "<its text>"}`.
async fn as_json(resp: Response) -> Response {
    let status = resp.status();
    let (_, body) = resp.into_parts();
    let text = match axum::body::to_bytes(body, 64 * 1024).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        Err(_) => String::new(),
    };
    let detail = if text.is_empty() { status.canonical_reason().unwrap_or("Error").to_owned() } else { text };
    ApiError::new(status, detail).into_response()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn retry_after(error: ApiError) -> (StatusCode, Option<String>) {
        let response = error.into_response();
        let retry = response.headers().get(header::RETRY_AFTER).map(|v| v.to_str().unwrap().to_owned());
        (response.status(), retry)
    }

    #[test]
    fn shed_and_unavailable_answers_say_when_to_retry() {
        let down = agno_core::DbError::new(agno_core::DbErrorKind::Unavailable, "connection refused");
        assert_eq!(retry_after(down.into()), (StatusCode::SERVICE_UNAVAILABLE, Some("1".to_owned())));
        let full = ApiError::new(StatusCode::TOO_MANY_REQUESTS, "the queue is full");
        assert_eq!(retry_after(full), (StatusCode::TOO_MANY_REQUESTS, Some("1".to_owned())));
        // Nothing to wait for in a client's own mistake.
        assert_eq!(retry_after(ApiError::not_found("no such run")), (StatusCode::NOT_FOUND, None));
        assert_eq!(retry_after(ApiError::conflict("key reused")), (StatusCode::CONFLICT, None));
    }
}
