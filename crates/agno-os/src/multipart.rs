//! `multipart/form-data` bodies (RFC 7578), read as leniently as the Python servers Agno's
//! clients talk to: a part's headers are bytes (a field name may hold any character but the
//! quote), `name` and `filename` are read from `Content-Disposition` with or without quotes, and
//! the parts are slices of the body (no copy). Only a body without its delimiters is malformed.

use axum::body::Bytes;
use memchr::memmem;

/// One part of a form.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    /// The field's name (`Content-Disposition: form-data; name=...`).
    pub(crate) name: String,
    /// The file name, for a file part.
    pub(crate) file_name: Option<String>,
    /// The part's `Content-Type`, when sent.
    pub(crate) content_type: Option<String>,
    /// Its bytes.
    pub(crate) body: Bytes,
}

/// The boundary of a `multipart/form-data` content type (its case kept).
pub(crate) fn boundary(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|param| {
        let (key, value) = param.split_once('=')?;
        key.trim().eq_ignore_ascii_case("boundary").then(|| value.trim().trim_matches('"').to_owned())
    })
}

/// The parts of `body`.
///
/// # Errors
/// A message saying what is missing (the first delimiter, a part's end).
pub(crate) fn parts(body: &Bytes, boundary: &str) -> Result<Vec<Part>, String> {
    if boundary.is_empty() || boundary.len() > 200 {
        return Err("the multipart boundary is empty or too long".to_owned());
    }
    let delimiter = format!("--{boundary}");
    let next_delimiter = format!("\r\n--{boundary}");
    let finder = memmem::Finder::new(next_delimiter.as_bytes());
    let start = memmem::find(body, delimiter.as_bytes()).ok_or("no multipart delimiter in the body")?;
    let mut pos = start + delimiter.len();
    let mut out = Vec::new();
    loop {
        if body[pos..].starts_with(b"--") {
            return Ok(out);
        }
        // The rest of the delimiter's line (transport padding), then the part.
        let line_end = memchr::memchr(b'\n', &body[pos..]).ok_or("a multipart delimiter line does not end")?;
        pos += line_end + 1;
        let len = finder.find(&body[pos..]).ok_or("a multipart part does not end (no closing delimiter)")?;
        let part = body.slice(pos..pos + len);
        out.push(read_part(&part));
        pos += len + next_delimiter.len();
    }
}

/// Splits a part into its headers and body and reads the headers that matter.
fn read_part(part: &Bytes) -> Part {
    let (head, body) = match memmem::find(part, b"\r\n\r\n") {
        Some(i) => (part.slice(..i), part.slice(i + 4..)),
        None if part.starts_with(b"\r\n") => (Bytes::new(), part.slice(2..)),
        None => (part.clone(), Bytes::new()),
    };
    let mut out = Part { name: String::new(), file_name: None, content_type: None, body };
    for line in head.split(|b| *b == b'\n') {
        let line = String::from_utf8_lossy(line.strip_suffix(b"\r").unwrap_or(line)).into_owned();
        let Some((key, value)) = line.split_once(':') else { continue };
        if key.trim().eq_ignore_ascii_case("content-disposition") {
            out.name = parameter(value, "name").unwrap_or_default();
            out.file_name = parameter(value, "filename");
        } else if key.trim().eq_ignore_ascii_case("content-type") {
            out.content_type = Some(value.trim().to_owned()).filter(|v| !v.is_empty());
        }
    }
    out
}

/// A parameter of a header value: `name="value"` (backslash escapes kept as sent by browsers,
/// which percent-encode quotes instead) or `name=value`.
fn parameter(header: &str, name: &str) -> Option<String> {
    let mut rest = header;
    while let Some(i) = rest.find('=') {
        let key = rest[..i].rsplit([';', ' ', '\t']).next().unwrap_or_default().trim();
        let after = &rest[i + 1..];
        let (value, tail) = match after.strip_prefix('"') {
            Some(quoted) => {
                let end = quoted.find('"').unwrap_or(quoted.len());
                (quoted[..end].to_owned(), quoted.get(end + 1..).unwrap_or_default())
            }
            None => {
                let end = after.find(';').unwrap_or(after.len());
                (after[..end].trim().to_owned(), &after[end..])
            }
        };
        if key.eq_ignore_ascii_case(name) {
            return Some(value);
        }
        rest = tail;
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_files_are_read_with_any_name() {
        let body = Bytes::from_static(
            b"--XyZ\r\nContent-Disposition: form-data; name=\"message\"\r\n\r\nhello\r\n\
              --XyZ\r\nContent-Disposition: form-data; name=\"\x17odd \xc3\xa9\"\r\n\r\nx\r\n\
              --XyZ\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n\x89PNG\r\n\
              --XyZ--\r\n",
        );
        let parts = parts(&body, "XyZ").unwrap();
        assert_eq!(parts.len(), 3);
        assert_eq!((parts[0].name.as_str(), parts[0].body.as_ref()), ("message", &b"hello"[..]));
        assert_eq!(parts[1].name, "\u{17}odd é");
        assert_eq!(parts[2].file_name.as_deref(), Some("a.png"));
        assert_eq!(parts[2].content_type.as_deref(), Some("image/png"));
        assert_eq!(parts[2].body.as_ref(), b"\x89PNG");
        assert_eq!(boundary("multipart/form-data; boundary=\"XyZ\""), Some("XyZ".to_owned()));
    }

    #[test]
    fn a_body_without_its_delimiters_is_malformed() {
        assert!(parts(&Bytes::from_static(b"message=hi"), "b").is_err());
        assert!(
            parts(&Bytes::from_static(b"--b\r\nContent-Disposition: form-data; name=\"m\"\r\n\r\nno end"), "b")
                .is_err()
        );
    }
}
