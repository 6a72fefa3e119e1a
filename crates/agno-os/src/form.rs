//! Run and continue routes take form data, as Agno's: `multipart/form-data` or
//! `application/x-www-form-urlencoded`. Parsed into text fields (files are noted, not read).

use std::collections::HashMap;

use axum::extract::{FromRequest, Multipart, Request};
use axum::http::header::CONTENT_TYPE;

use crate::error::{ApiError, ApiResult};

/// The text fields of a form (the last value wins for a repeated field).
#[derive(Debug, Default)]
pub struct Form {
    fields: HashMap<String, String>,
    files: usize,
}

impl Form {
    /// Reads the request body as a form.
    ///
    /// # Errors
    /// 415-like 422 for another content type; 400 for a malformed body; 413 when over the body
    /// limit.
    pub async fn read(req: Request) -> ApiResult<Self> {
        let content_type =
            req.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_ascii_lowercase();
        let mut form = Form::default();
        // An empty body (or a multipart body holding only its closing delimiter, as some clients
        // send an empty form) is an empty form.
        let (parts, body) = req.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX).await.map_err(|e| {
            ApiError::new(axum::http::StatusCode::PAYLOAD_TOO_LARGE, format!("cannot read the body: {e}"))
        })?;
        let trimmed = bytes.trim_ascii();
        if trimmed.is_empty() || (trimmed.starts_with(b"--") && trimmed.ends_with(b"--") && !trimmed.contains(&b'\n')) {
            return Ok(form);
        }
        if content_type.starts_with("multipart/form-data") {
            let req = Request::from_parts(parts, axum::body::Body::from(bytes));
            let mut multipart =
                Multipart::from_request(req, &()).await.map_err(|e| ApiError::bad_request(e.body_text()))?;
            loop {
                let field = match multipart.next_field().await {
                    Ok(Some(f)) => f,
                    Ok(None) => break,
                    Err(e) => {
                        return Err(ApiError::new(e.status(), format!("malformed multipart body: {}", e.body_text())));
                    }
                };
                let name = field.name().unwrap_or_default().to_owned();
                if field.file_name().is_some() {
                    form.files += 1;
                    continue;
                }
                let text = field.text().await.map_err(|e| {
                    ApiError::new(e.status(), format!("cannot read form field {name}: {}", e.body_text()))
                })?;
                form.fields.insert(name, text);
            }
        } else if content_type.starts_with("application/x-www-form-urlencoded") {
            let pairs: Vec<(String, String)> = serde_urlencoded_pairs(&bytes)?;
            form.fields.extend(pairs);
        } else {
            return Err(ApiError::unprocessable(
                "send the fields as multipart/form-data or application/x-www-form-urlencoded",
            ));
        }
        Ok(form)
    }

    /// A text field.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }

    /// A required, non-empty text field; 422 in FastAPI's shape when missing.
    ///
    /// # Errors
    /// 422 naming the field.
    pub fn required(&self, name: &str) -> ApiResult<String> {
        self.text(name).filter(|t| !t.is_empty()).map(str::to_owned).ok_or_else(|| ApiError::missing("body", name))
    }

    /// A boolean field (`true`/`false`/`1`/`0`/`yes`/`no`).
    ///
    /// # Errors
    /// 422 for another value.
    pub fn bool(&self, name: &str) -> ApiResult<Option<bool>> {
        match self.text(name).map(|t| t.trim().to_ascii_lowercase()) {
            None => Ok(None),
            Some(t) if t.is_empty() => Ok(None),
            Some(t) => match t.as_str() {
                "true" | "1" | "yes" | "on" => Ok(Some(true)),
                "false" | "0" | "no" | "off" => Ok(Some(false)),
                _ => Err(ApiError::unprocessable(format!("{name} must be true or false, not {t:?}"))),
            },
        }
    }

    /// True when the form carried file parts.
    pub fn has_files(&self) -> bool {
        self.files > 0
    }
}

/// Decodes `a=1&b=two+words` pairs.
fn serde_urlencoded_pairs(bytes: &[u8]) -> ApiResult<Vec<(String, String)>> {
    let text = std::str::from_utf8(bytes).map_err(|_| ApiError::bad_request("the form body is not UTF-8"))?;
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            Ok((decode(k)?, decode(v)?))
        })
        .collect()
}

fn decode(s: &str) -> ApiResult<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
                let byte = hex
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| ApiError::bad_request("malformed percent-encoding in the form body"))?;
                out.push(byte);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| ApiError::bad_request("the form body is not UTF-8"))
}
