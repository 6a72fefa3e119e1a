//! AWS Signature Version 4, written once for every AWS service agno-rs calls (Bedrock's models,
//! S3 knowledge sources): the canonical request, the string to sign, the derived key and the
//! headers that carry the signature.

use sha2::{Digest, Sha256};

/// AWS credentials for Signature Version 4.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    /// `AWS_ACCESS_KEY_ID`.
    pub access_key_id: String,
    /// `AWS_SECRET_ACCESS_KEY`.
    pub secret_access_key: String,
    /// `AWS_SESSION_TOKEN`, for temporary credentials.
    pub session_token: Option<String>,
}

impl std::fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsCredentials").field("access_key_id", &self.access_key_id).finish_non_exhaustive()
    }
}

impl AwsCredentials {
    /// The credentials of the usual environment variables, if set.
    pub fn from_env() -> Option<Self> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Some(Self {
            access_key_id: var("AWS_ACCESS_KEY_ID")?,
            secret_access_key: var("AWS_SECRET_ACCESS_KEY")?,
            session_token: var("AWS_SESSION_TOKEN"),
        })
    }
}

/// A request to sign.
#[derive(Debug, Clone, Copy)]
pub struct SigV4Request<'a> {
    /// The service (`bedrock`, `s3`).
    pub service: &'a str,
    /// The region.
    pub region: &'a str,
    /// `GET`, `POST`, ...
    pub method: &'a str,
    /// The `host` header (with the port when not the scheme's).
    pub host: &'a str,
    /// The path as sent (its segments percent-encoded).
    pub path: &'a str,
    /// The query as sent: pairs already percent-encoded with [`uri_encode`].
    pub query: &'a [(String, String)],
    /// The body.
    pub payload: &'a [u8],
    /// Whether the canonical URI encodes the path once more, as AWS asks of every service but S3.
    pub encode_path_again: bool,
}

/// RFC 3986 percent-encoding as AWS wants it: unreserved characters kept, `/` kept when
/// `keep_slash` (a path), everything else `%XX`.
pub fn uri_encode(value: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') || (keep_slash && b == b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// HMAC-SHA256 (RFC 2104).
pub fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let inner = Sha256::new().chain_update(block.map(|b| b ^ 0x36)).chain_update(data).finalize();
    Sha256::new().chain_update(block.map(|b| b ^ 0x5c)).chain_update(inner).finalize().into()
}

/// The canonical query string: pairs sorted, `k=v` joined by `&`.
pub fn canonical_query(query: &[(String, String)]) -> String {
    let mut pairs: Vec<&(String, String)> = query.iter().collect();
    pairs.sort();
    pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&")
}

/// The headers that sign `req` at `now`: `x-amz-date`, `x-amz-content-sha256`,
/// `x-amz-security-token` (temporary credentials) and `authorization` (`host` is signed and left
/// to the HTTP client).
pub fn sign(
    creds: &AwsCredentials,
    req: &SigV4Request<'_>,
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<(String, String)> {
    let amz_date = now.format("%Y%m%dT%H%M%SZ").to_string();
    let date = &amz_date[..8];
    let payload_hash = hex(&Sha256::digest(req.payload));
    let mut headers = vec![
        ("host".to_owned(), req.host.to_owned()),
        ("x-amz-content-sha256".to_owned(), payload_hash.clone()),
        ("x-amz-date".to_owned(), amz_date.clone()),
    ];
    if let Some(token) = &creds.session_token {
        headers.push(("x-amz-security-token".to_owned(), token.clone()));
    }
    headers.sort();
    let canonical_uri = if req.encode_path_again {
        req.path.split('/').map(|s| uri_encode(s, false)).collect::<Vec<_>>().join("/")
    } else if req.path.is_empty() {
        "/".to_owned()
    } else {
        req.path.to_owned()
    };
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{}\n", v.trim())).collect();
    let signed_headers = headers.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(";");
    let canonical = format!(
        "{}\n{canonical_uri}\n{}\n{canonical_headers}\n{signed_headers}\n{payload_hash}",
        req.method,
        canonical_query(req.query)
    );
    let scope = format!("{date}/{}/{}/aws4_request", req.region, req.service);
    let to_sign = format!("AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}", hex(&Sha256::digest(canonical.as_bytes())));
    let key = [date, req.region, req.service, "aws4_request"]
        .iter()
        .fold(format!("AWS4{}", creds.secret_access_key).into_bytes(), |key, part| {
            hmac_sha256(&key, part.as_bytes()).to_vec()
        });
    let signature = hex(&hmac_sha256(&key, to_sign.as_bytes()));
    let mut out: Vec<(String, String)> = headers.into_iter().filter(|(k, _)| k != "host").collect();
    out.push((
        "authorization".to_owned(),
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
            creds.access_key_id
        ),
    ));
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// RFC 4231's HMAC vector, and the example of AWS's SigV4 documentation ("Signature Version 4
    /// test suite", get-vanilla): `GET /` on `example.amazonaws.com`, service `service`, region
    /// `us-east-1`, 20150830T123600Z, signed with `x-amz-content-sha256` too (as AWS's SDKs send
    /// it).
    #[test]
    fn hmac_matches_rfc_4231_and_the_signature_follows_aws_example() {
        // RFC 4231, test case 2.
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let creds = AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        };
        let now = chrono::DateTime::parse_from_rfc3339("2015-08-30T12:36:00Z").unwrap().with_timezone(&chrono::Utc);
        let req = SigV4Request {
            service: "service",
            region: "us-east-1",
            method: "GET",
            host: "example.amazonaws.com",
            path: "/",
            query: &[],
            payload: b"",
            encode_path_again: true,
        };
        let headers = sign(&creds, &req, now);
        let auth = &headers.iter().find(|(k, _)| k == "authorization").unwrap().1;
        assert!(
            auth.starts_with(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
                 SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature="
            ),
            "{auth}"
        );
        assert_eq!(uri_encode("anthropic.claude-v2:1", false), "anthropic.claude-v2%3A1");
        assert_eq!(uri_encode("docs/é.md", true), "docs/%C3%A9.md");
        let q = [("prefix".to_owned(), "a".to_owned()), ("list-type".to_owned(), "2".to_owned())];
        assert_eq!(canonical_query(&q), "list-type=2&prefix=a");
    }
}
