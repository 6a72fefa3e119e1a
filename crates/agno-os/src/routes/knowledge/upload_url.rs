//! The `url` part of `POST /knowledge/content`, read as the OpenAPI document's pattern for it
//! describes it (Schemathesis checks both ways: what the pattern admits is accepted, what it
//! refuses is refused).

use crate::error::{ApiError, ApiResult};

/// The URL of an upload's `url` part: a URL, or Agno's JSON list of URLs (one per upload here);
/// 422 naming the field for anything but one http(s) URL. It accepts exactly what the
/// document's pattern for the field admits: one URL on one line, or `["<no quote>"]` (also when
/// that is not strict JSON: whitespace JSON does not know around it, control characters inside
/// the quotes), whitespace around either.
pub(super) fn upload_url(text: &str) -> ApiResult<String> {
    let text = text.trim_matches(is_pattern_space);
    // The scheme is checked on the text as sent: the pattern wants it literally, so a JSON
    // escape spelling it (`\u0068ttps://`) is refused like any other non-http text.
    let (raw, url) = match text.strip_prefix('[') {
        Some(rest) => match one_quoted(rest) {
            // JSON escapes are read as JSON reads them, when it is JSON.
            Some(raw) => match serde_json::from_str::<Vec<String>>(text) {
                Ok(mut list) if list.len() == 1 => (raw, list.swap_remove(0)),
                _ => (raw, raw.to_owned()),
            },
            None => {
                let several = serde_json::from_str::<Vec<String>>(text).is_ok_and(|list| list.len() > 1);
                let why =
                    if several { "send one URL per upload" } else { "url must be a URL or a JSON list of one URL" };
                return Err(ApiError::unprocessable(why).at("body", "url"));
            }
        },
        None if text.contains('\n') => {
            return Err(ApiError::unprocessable("url must be one URL on one line").at("body", "url"));
        }
        None => (text, text.to_owned()),
    };
    if raw.starts_with("http://") || raw.starts_with("https://") {
        Ok(url)
    } else {
        Err(ApiError::unprocessable("url must be an http:// or https:// URL").at("body", "url"))
    }
}

/// The text of `<space>"<no quote>"<space>]`, the rest of a one-URL list after its `[`.
fn one_quoted(rest: &str) -> Option<&str> {
    let inner = rest.trim_start_matches(is_pattern_space).strip_prefix('"')?;
    let (url, tail) = inner.split_once('"')?;
    (tail.trim_matches(is_pattern_space) == "]").then_some(url)
}

/// What `\s` matches in the document's patterns as clients evaluate them (Python's `re`: the
/// Unicode spaces and the separators U+001C..U+001F).
pub(super) fn is_pattern_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::upload_url;

    #[test]
    fn an_upload_url_is_read_as_the_document_describes_it() {
        assert_eq!(upload_url("  https://a.example/x ").unwrap(), "https://a.example/x");
        assert_eq!(upload_url(r#"["https://a.example/x"]"#).unwrap(), "https://a.example/x");
        // Found by Schemathesis: the pattern's `\s` (form feed, CR) around and inside the list,
        // a raw CR inside the quotes. Not JSON, but what the document admits.
        let loose = "\u{c}[ \t\u{c}\r\"https://70\u{a7}r\u{94}|\r\"]";
        assert_eq!(upload_url(loose).unwrap(), "https://70\u{a7}r\u{94}|\r");
        assert_eq!(upload_url("\u{1c}https://a.example\u{1f}").unwrap(), "https://a.example");
        assert_eq!(upload_url(r#"["https://a.example/\u00e9"]"#).unwrap(), "https://a.example/\u{e9}");
        for (bad, why) in [
            (r#"["https://a.example", "https://b.example"]"#, "send one URL per upload"),
            (r#"["https://a.example""#, "url must be a URL or a JSON list of one URL"),
            (r#"["ftp://a.example"]"#, "url must be an http:// or https:// URL"),
            ("a.example", "url must be an http:// or https:// URL"),
            // Found by Schemathesis: the pattern's `.` stops at a line end.
            ("\u{c}\r\n http://\tw\t\u{c} \r\r\n\u{c}*", "url must be one URL on one line"),
            // The scheme as the pattern has it, literally, not spelled by a JSON escape.
            (r#"["\u0068ttps://a.example"]"#, "url must be an http:// or https:// URL"),
            // A quote inside the quotes is outside the pattern, JSON escape or not.
            (r#"["https://a\"b"]"#, "url must be a URL or a JSON list of one URL"),
        ] {
            let e = upload_url(bad).unwrap_err();
            assert_eq!(e.status.as_u16(), 422, "{bad}");
            assert_eq!(e.detail, why, "{bad}");
        }
    }
}
