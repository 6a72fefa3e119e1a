//! The `http` toolkit: `fetch_url`, a bounded GET over http and https.
//!
//! Does not render HTML or follow links for the model: it returns the body as text, cut to a
//! size the model can read.

use std::sync::OnceLock;
use std::time::Duration;

use agno_core::ToolErrorKind;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Function, ToolError, Toolkit};

/// Characters of body returned when the model does not say.
const DEFAULT_MAX_CHARS: usize = 20_000;

/// Bytes of body read at most; the rest is never downloaded.
const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// Timeout of a whole request, body included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// Arguments of `fetch_url`.
#[derive(Debug, Deserialize, JsonSchema)]
struct FetchArgs {
    /// The http or https URL to fetch.
    url: String,
    /// Maximum number of characters of the body to return (default 20000).
    max_chars: Option<usize>,
}

/// What `fetch_url` returns.
#[derive(Debug, Serialize)]
struct Fetched {
    status: u16,
    content_type: Option<String>,
    body: String,
    truncated: bool,
}

/// The client shared by every `http` toolkit: one connection pool per process.
pub(super) fn client() -> Result<&'static reqwest::Client, ToolError> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .timeout(REQUEST_TIMEOUT)
                .user_agent(concat!("agno-rs/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| ToolError::execution(format!("http client could not be created: {e}")))
}

/// `text` cut to at most `max_chars` characters, at a character boundary; true when it was cut.
pub(super) fn truncate_chars(text: &mut String, max_chars: usize) -> bool {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => {
            text.truncate(cut);
            true
        }
        None => false,
    }
}

/// Drops an incomplete UTF-8 sequence at the end of `bytes` (left there by a size cut).
fn drop_partial_char(bytes: &mut Vec<u8>) {
    let len = bytes.len();
    for back in 1..=len.min(4) {
        let byte = bytes[len - back];
        if byte & 0b1100_0000 != 0b1000_0000 {
            // A leading byte: its sequence is complete when it spans at most `back` bytes.
            let width = match byte {
                0xF0..=0xFF => 4,
                0xE0..=0xEF => 3,
                0xC0..=0xDF => 2,
                _ => 1,
            };
            if width > back {
                bytes.truncate(len - back);
            }
            return;
        }
    }
}

fn request_error(url: &str, e: &reqwest::Error) -> ToolError {
    if e.is_timeout() {
        ToolError::new(ToolErrorKind::Timeout, format!("fetching {url} timed out: {e}"))
    } else {
        ToolError::execution(format!("fetching {url} failed: {e}"))
    }
}

async fn fetch_url(args: FetchArgs) -> Result<Fetched, ToolError> {
    let url = args.url.trim();
    let parsed =
        reqwest::Url::parse(url).map_err(|e| ToolError::invalid_arguments(format!("url {url:?} is invalid: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ToolError::invalid_arguments(format!(
            "url {url:?} has scheme {:?}; only http and https are allowed",
            parsed.scheme()
        )));
    }
    let mut response = client()?.get(parsed).send().await.map_err(|e| request_error(url, &e))?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());

    let mut bytes = Vec::new();
    let mut cut = false;
    while let Some(chunk) = response.chunk().await.map_err(|e| request_error(url, &e))? {
        let room = MAX_BODY_BYTES - bytes.len();
        if chunk.len() >= room {
            bytes.extend_from_slice(&chunk[..room]);
            // Cut only when something is left unread; a body of exactly the limit is whole.
            cut = chunk.len() > room || response.chunk().await.ok().flatten().is_some_and(|c| !c.is_empty());
            break;
        }
        bytes.extend_from_slice(&chunk);
    }
    if cut {
        drop_partial_char(&mut bytes);
    }
    let mut body = String::from_utf8_lossy(&bytes).into_owned();
    let truncated = truncate_chars(&mut body, args.max_chars.unwrap_or(DEFAULT_MAX_CHARS)) || cut;
    Ok(Fetched { status, content_type, body, truncated })
}

/// The HTTP toolkit (name and id `http`) with one tool, `fetch_url(url, max_chars)`.
///
/// `fetch_url` GETs an http or https URL (other schemes are invalid arguments) with a 20 s
/// timeout and returns JSON text
/// `{"status": 200, "content_type": "text/html", "body": "...", "truncated": false}`. A non-2xx
/// answer is still a result; its status tells. The body is read up to 2 MiB, decoded as UTF-8
/// (invalid bytes replaced) and cut to `max_chars` characters (default 20000); `truncated` says
/// whether anything was left out. A failed connection is a tool error naming the URL.
pub fn http_tools() -> Toolkit {
    Toolkit::new("http").tool(Function::new(
        "fetch_url",
        "Fetch a web page or file over http or https with a GET request. Returns JSON with the HTTP \
         status, the content type, the body as text (cut to max_chars characters) and whether it \
         was truncated.",
        fetch_url,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_whole_characters() {
        let mut s = "héllo".to_owned();
        assert!(truncate_chars(&mut s, 2));
        assert_eq!(s, "hé");
        let mut s = "abc".to_owned();
        assert!(!truncate_chars(&mut s, 3));
        assert_eq!(s, "abc");
    }

    #[test]
    fn partial_sequences_are_dropped() {
        let mut b = "aé".as_bytes().to_vec();
        b.pop();
        drop_partial_char(&mut b);
        assert_eq!(b, b"a");
        let mut b = "a€".as_bytes().to_vec();
        drop_partial_char(&mut b);
        assert_eq!(b, "a€".as_bytes());
        let mut b = vec![0x80, 0x80, 0x80, 0x80, 0x80];
        drop_partial_char(&mut b);
        assert_eq!(b.len(), 5);
    }
}
