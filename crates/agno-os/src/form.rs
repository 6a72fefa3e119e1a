//! Run and continue routes take form data, as Agno's: `multipart/form-data` or
//! `application/x-www-form-urlencoded`. Parsed into text fields and file parts (kept in memory:
//! the body limit bounds them).
//!
//! One size limit holds for every encoding: the body limit (`[os] max_body_bytes`, enforced
//! around the router), and each text field at most `[os] max_form_field_bytes` (413 beyond). A
//! field holding JSON nests at most `[os] max_json_depth` levels (422 beyond), checked here for
//! every field, so no route can take deeper JSON than the OS can store and read back.
//! Reading errors answer precisely: 413 for size, 408 for a client that stalls, 400 for a
//! malformed body.

use std::collections::HashMap;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;

use crate::error::{ApiError, ApiResult};
use crate::input::{Limits, check_form_json, read_error};

/// The text fields of a form (the last value of a repeated one) and its files.
#[derive(Debug, Default)]
pub struct Form {
    fields: HashMap<String, String>,
    files: Vec<FormFile>,
}

/// A file part of a multipart form.
#[derive(Debug, Clone)]
pub struct FormFile {
    /// The form field's name.
    pub field: String,
    /// The file's name as sent.
    pub file_name: String,
    /// Its content type as sent.
    pub content_type: Option<String>,
    /// Its bytes.
    pub bytes: axum::body::Bytes,
}

impl Form {
    /// Reads the request body as a form; text fields longer than `limits.form_field_bytes` bytes,
    /// or holding JSON deeper than `limits.json_depth`, are refused.
    ///
    /// # Errors
    /// 422 for another content type or JSON too deep; 400 for a malformed body; 408 for a body
    /// that stalls or trickles; 413 when over the body or field limit.
    pub async fn read(req: Request, limits: &Limits) -> ApiResult<Self> {
        let field_limit = limits.form_field_bytes;
        // The boundary is case-sensitive (browsers send mixed-case ones): keep the header as sent
        // and compare the media type without case.
        let header = req.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        let content_type = header.to_ascii_lowercase();
        let mut form = Form::default();
        let bytes = axum::body::to_bytes(req.into_body(), usize::MAX).await.map_err(|e| read_error(&e))?;
        // An empty body (or a multipart body holding only its closing delimiter, as some clients
        // send an empty form) is an empty form.
        let trimmed = bytes.trim_ascii();
        if trimmed.is_empty() || (trimmed.starts_with(b"--") && trimmed.ends_with(b"--") && !trimmed.contains(&b'\n')) {
            return Ok(form);
        }
        let too_long = |name: &str| {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("form field {name} is larger than [os] max_form_field_bytes ({field_limit} bytes)"),
            )
        };
        if content_type.starts_with("multipart/form-data") {
            let boundary = crate::multipart::boundary(&header)
                .ok_or_else(|| ApiError::bad_request("malformed multipart body: the content type names no boundary"))?;
            let parts = crate::multipart::parts(&bytes, &boundary)
                .map_err(|e| ApiError::bad_request(format!("malformed multipart body: {e}")))?;
            for part in parts {
                let name = part.name;
                if let Some(file_name) = part.file_name {
                    // A file input left empty: browsers send a part without a name or bytes.
                    if file_name.is_empty() && part.body.is_empty() {
                        continue;
                    }
                    form.files.push(FormFile {
                        field: name,
                        file_name,
                        content_type: part.content_type,
                        bytes: part.body,
                    });
                    continue;
                }
                let text = String::from_utf8(part.body.to_vec())
                    .map_err(|_| ApiError::bad_request(format!("form field {name} is not UTF-8 text")))?;
                if text.len() > field_limit {
                    return Err(too_long(&name));
                }
                check_form_json(&name, &text, limits.json_depth)?;
                // A repeated field keeps its last value, as Starlette reads it.
                form.fields.insert(name, text);
            }
        } else if content_type.starts_with("application/x-www-form-urlencoded") {
            for (name, value) in serde_urlencoded_pairs(&bytes)? {
                if value.len() > field_limit {
                    return Err(too_long(&name));
                }
                check_form_json(&name, &value, limits.json_depth)?;
                form.fields.insert(name, value);
            }
        } else {
            return Err(ApiError::unprocessable(
                "send the fields as multipart/form-data or application/x-www-form-urlencoded",
            ));
        }
        Ok(form)
    }

    /// Takes a required, non-empty text field out of the form (no copy of a large message).
    ///
    /// # Errors
    /// 422 in FastAPI's shape when missing.
    pub fn take_required(&mut self, name: &str) -> ApiResult<String> {
        self.fields.remove(name).filter(|t| !t.is_empty()).ok_or_else(|| ApiError::missing("body", name))
    }

    /// Sets a text field (an answer the server fills in for the caller).
    pub fn set_text(&mut self, name: &str, value: String) {
        self.fields.insert(name.to_owned(), value);
    }

    /// A text field.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }

    /// The texts [`Form::bool`] reads, in any case (pydantic's words for a boolean), and the
    /// empty text (absent): the pattern `/openapi.json` states for a boolean form field.
    pub const BOOL_PATTERN: &'static str =
        "^(?:[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|[Yy][Ee][Ss]|[Nn][Oo]|[Oo][Nn]|[Oo][Ff][Ff]|[TtFfYyNn01])?$";

    /// A boolean field: `true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off`, `t`/`f`, `y`/`n`, in
    /// any case, as pydantic reads them; empty is absent.
    ///
    /// # Errors
    /// 422 for another value.
    pub fn bool(&self, name: &str) -> ApiResult<Option<bool>> {
        match self.text(name).map(str::to_ascii_lowercase) {
            None => Ok(None),
            Some(t) if t.is_empty() => Ok(None),
            Some(t) => match t.as_str() {
                "true" | "1" | "yes" | "on" | "t" | "y" => Ok(Some(true)),
                "false" | "0" | "no" | "off" | "f" | "n" => Ok(Some(false)),
                _ => Err(ApiError::unprocessable(format!("{name} must be true or false, not {t:?}"))),
            },
        }
    }

    /// An integer field, as pydantic reads one (surrounding spaces allowed); empty is absent.
    ///
    /// # Errors
    /// 422 for another value, as FastAPI answers it (`int_parsing`, naming the field).
    pub fn int(&self, name: &str) -> ApiResult<Option<i64>> {
        match self.text(name).map(str::trim) {
            None | Some("") => Ok(None),
            Some(t) => t.parse::<i64>().map(Some).map_err(|_| {
                ApiError::unprocessable("Input should be a valid integer, unable to parse string as an integer")
                    .with_type("int_parsing")
                    .at("body", name)
                    .with_input(serde_json::Value::from(t))
            }),
        }
    }

    /// True when the form carried file parts.
    pub fn has_files(&self) -> bool {
        !self.files.is_empty()
    }

    /// Takes every file sent in field `name`, in order.
    pub fn take_files(&mut self, name: &str) -> Vec<FormFile> {
        let (taken, kept) = std::mem::take(&mut self.files).into_iter().partition(|f| f.field == name);
        self.files = kept;
        taken
    }

    /// Takes the (first) file sent in field `name`.
    pub fn take_file(&mut self, name: &str) -> Option<FormFile> {
        let i = self.files.iter().position(|f| f.field == name)?;
        Some(self.files.remove(i))
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
