//! A remote content source on S3 or any S3-compatible server (MinIO, moto, R2...): its objects
//! listed (`ListObjectsV2`, every page) and read (`GetObject`), over path-style URLs signed with
//! AWS Signature Version 4 (`agno_core::aws_sigv4`). Credentials come from the source's settings (read from the
//! environment by whoever builds it); none: unsigned requests (a public bucket).

use agno_core::aws_sigv4::{AwsCredentials, SigV4Request, canonical_query, sign, uri_encode};

/// One S3 source (Agno's `S3Config`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Source {
    /// Its id (`config_id` / `source_id` of the routes).
    pub id: String,
    /// Its display name.
    pub name: String,
    /// The bucket.
    pub bucket: String,
    /// The key prefix listed and ingested by default.
    pub prefix: Option<String>,
    /// The server (`https://s3.<region>.amazonaws.com` by default).
    pub endpoint: String,
    /// The signing region.
    pub region: String,
    /// Its credentials; none: unsigned requests.
    pub credentials: Option<AwsCredentials>,
    /// Free metadata shown with the source.
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
}

/// An object of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Object {
    /// Its key.
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
    /// When it last changed (ISO 8601, as the server says it).
    pub last_modified: Option<String>,
    /// Its entity tag (quotes removed): what changes when its bytes change.
    pub etag: Option<String>,
}

/// A listing: the objects under a prefix and, with a delimiter, the "folders" (common prefixes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct S3Listing {
    /// The objects, in key order.
    pub objects: Vec<S3Object>,
    /// The common prefixes, in order.
    pub folders: Vec<String>,
}

/// Why a request to the source failed.
#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    /// The bucket does not exist.
    #[error("Bucket '{0}' does not exist")]
    NoSuchBucket(String),
    /// The object does not exist.
    #[error("object '{0}' does not exist")]
    NoSuchKey(String),
    /// The credentials were refused (unknown key id, wrong secret, no access).
    #[error("the S3 server refused the credentials: {0}")]
    Credentials(String),
    /// The server could not be reached or answered something else.
    #[error("S3 request failed: {0}")]
    Other(String),
}

/// The HTTP client of every source (its connections pooled), with a 60 s timeout per request.
fn client() -> Result<&'static reqwest::Client, S3Error> {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    if let Some(c) = CLIENT.get() {
        return Ok(c);
    }
    let built = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .map_err(|e| S3Error::Other(format!("cannot build an HTTP client: {e}")))?;
    Ok(CLIENT.get_or_init(|| built))
}

/// Most objects one listing reads (a guard against an unbounded bucket).
const MAX_LISTED: usize = 100_000;

fn xml_text<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(i) = rest.find(&open) {
        let after = &rest[i + open.len()..];
        let Some(j) = after.find(&close) else { break };
        out.push(&after[..j]);
        rest = &after[j + close.len()..];
    }
    out
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

impl S3Source {
    /// A signed GET of `path` (already encoded, starting with `/`) with `query` pairs.
    async fn get(&self, path: &str, query: &[(&str, &str)]) -> Result<reqwest::Response, S3Error> {
        let client = client()?;
        let pairs: Vec<(String, String)> =
            query.iter().map(|(k, v)| (uri_encode(k, false), uri_encode(v, false))).collect();
        let canonical = canonical_query(&pairs);
        let base = self.endpoint.trim_end_matches('/');
        let url = if canonical.is_empty() { format!("{base}{path}") } else { format!("{base}{path}?{canonical}") };
        let parsed = reqwest::Url::parse(&url).map_err(|e| S3Error::Other(format!("bad endpoint {base}: {e}")))?;
        let host = match (parsed.host_str(), parsed.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            (None, _) => return Err(S3Error::Other(format!("endpoint {base} has no host"))),
        };
        let mut request = client.get(parsed);
        if let Some(creds) = &self.credentials {
            let req = SigV4Request {
                service: "s3",
                region: &self.region,
                method: "GET",
                host: &host,
                path,
                query: &pairs,
                payload: b"",
                encode_path_again: false,
            };
            for (name, value) in sign(creds, &req, chrono::Utc::now()) {
                request = request.header(name, value);
            }
        }
        let response = request.send().await.map_err(|e| S3Error::Other(format!("{base}: {e}")))?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        let code = xml_text(&body, "Code").first().map(|c| (*c).to_owned()).unwrap_or_default();
        let message = xml_text(&body, "Message").first().map(|m| unescape(m)).unwrap_or_default();
        Err(match code.as_str() {
            "NoSuchBucket" => S3Error::NoSuchBucket(self.bucket.clone()),
            "NoSuchKey" => S3Error::NoSuchKey(path.to_owned()),
            "InvalidAccessKeyId" | "SignatureDoesNotMatch" | "AccessDenied" | "InvalidClientTokenId" => {
                S3Error::Credentials(format!("{code}: {message}"))
            }
            _ if status.as_u16() == 403 => S3Error::Credentials(format!("HTTP 403 {code} {message}")),
            _ => S3Error::Other(format!("HTTP {status} {code} {message}")),
        })
    }

    /// Every object under `prefix` (the source's own when none), and the folders one level down
    /// when `delimiter` is given.
    ///
    /// # Errors
    /// The bucket does not exist, the credentials are refused, the server fails.
    pub async fn list(&self, prefix: Option<&str>, delimiter: &str) -> Result<S3Listing, S3Error> {
        let prefix = prefix.or(self.prefix.as_deref()).unwrap_or("");
        let path = format!("/{}", uri_encode(&self.bucket, false));
        let mut listing = S3Listing::default();
        let mut token: Option<String> = None;
        loop {
            let mut query = vec![("list-type", "2"), ("prefix", prefix)];
            if !delimiter.is_empty() {
                query.push(("delimiter", delimiter));
            }
            if let Some(t) = &token {
                query.push(("continuation-token", t));
            }
            let body = self.get(&path, &query).await?.text().await.map_err(|e| S3Error::Other(e.to_string()))?;
            for item in xml_text(&body, "Contents") {
                let field = |t: &str| xml_text(item, t).first().map(|v| unescape(v));
                let Some(key) = field("Key") else { continue };
                listing.objects.push(S3Object {
                    key,
                    size: field("Size").and_then(|s| s.parse().ok()).unwrap_or(0),
                    last_modified: field("LastModified"),
                    etag: field("ETag").map(|e| e.trim_matches('"').to_owned()),
                });
            }
            for p in xml_text(&body, "CommonPrefixes") {
                listing.folders.extend(xml_text(p, "Prefix").into_iter().map(unescape));
            }
            let truncated = xml_text(&body, "IsTruncated").first().is_some_and(|t| *t == "true");
            token = xml_text(&body, "NextContinuationToken").first().map(|t| unescape(t));
            if !truncated || token.is_none() || listing.objects.len() >= MAX_LISTED {
                break;
            }
        }
        Ok(listing)
    }

    /// The bytes of object `key` and its entity tag.
    ///
    /// # Errors
    /// No such object or bucket, credentials refused, the server fails.
    pub async fn read(&self, key: &str) -> Result<(Vec<u8>, Option<String>), S3Error> {
        let path = format!("/{}/{}", uri_encode(&self.bucket, false), uri_encode(key, true));
        let response = self.get(&path, &[]).await.map_err(|e| match e {
            S3Error::NoSuchKey(_) => S3Error::NoSuchKey(key.to_owned()),
            other => other,
        })?;
        let etag = response.headers().get("etag").and_then(|v| v.to_str().ok()).map(|e| e.trim_matches('"').to_owned());
        let bytes = response.bytes().await.map_err(|e| S3Error::Other(e.to_string()))?;
        Ok((bytes.to_vec(), etag))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn xml_is_read_as_s3_writes_it() {
        assert_eq!(xml_text("<a><b>1</b><b>2</b></a>", "b"), ["1", "2"]);
        assert_eq!(unescape("a&amp;b&lt;"), "a&b<");
    }
}
