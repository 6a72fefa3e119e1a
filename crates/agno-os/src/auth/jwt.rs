//! JWT verification with a list of keys (`verification_keys`), as Agno v3: HMAC secrets and PEM
//! public keys (RSA, EC) tried in turn, JWKS keys tried first and matched by `kid`. A token is
//! accepted only with an algorithm of its key's family (no HS/RS confusion, no `alg: none`).
//!
//! Time claims are read as PyJWT reads them for Agno (10 s of leeway): `exp` is optional (a token
//! without one does not expire) and, when present, a number of seconds (`1e30` is far in the
//! future); `nbf` and `iat` in the future make a token not yet valid; a claim that is not a
//! number is refused as such.

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

/// Why a token was refused; each answers 401.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not a JWT, or an unsupported algorithm (`none` included).
    #[error("Invalid token: {0}")]
    Malformed(String),
    /// `exp` is in the past.
    #[error("Token has expired")]
    Expired,
    /// `nbf` (or `iat`) is in the future.
    #[error("Invalid token: The token is not yet valid ({0})")]
    NotYetValid(&'static str),
    /// `aud` does not match.
    #[error("Invalid token audience")]
    Audience,
    /// No key verifies it.
    #[error("Invalid token signature")]
    Signature,
}

/// A key usable to verify tokens.
struct Key {
    kid: Option<String>,
    key: DecodingKey,
    algorithms: Vec<Algorithm>,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key").field("kid", &self.kid).field("algorithms", &self.algorithms).finish_non_exhaustive()
    }
}

const HMAC: [Algorithm; 3] = [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512];
const RSA: [Algorithm; 6] =
    [Algorithm::RS256, Algorithm::RS384, Algorithm::RS512, Algorithm::PS256, Algorithm::PS384, Algorithm::PS512];

/// The verified claims of a token.
#[derive(Debug, Clone)]
pub struct Claims(pub Value);

impl Claims {
    /// `sub`.
    pub fn subject(&self) -> Option<String> {
        self.0.get("sub").and_then(Value::as_str).map(str::to_owned)
    }

    /// `scopes` (a list, or a space-separated string).
    pub fn scopes(&self) -> Vec<String> {
        match self.0.get("scopes").or_else(|| self.0.get("scope")) {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
            _ => Vec::new(),
        }
    }
}

/// Verifies tokens against the configured keys.
#[derive(Debug)]
pub struct Verifier {
    jwks: Vec<Key>,
    keys: Vec<Key>,
    audience: Option<Vec<String>>,
}

fn parse_algorithm(name: &str) -> Result<Algorithm, String> {
    name.parse::<Algorithm>().map_err(|_| format!("unknown JWT algorithm {name:?} (use HS256, RS256, ES256, ...)"))
}

fn static_key(text: &str, only: Option<Algorithm>) -> Result<Key, String> {
    let text = text.trim();
    let (key, family): (DecodingKey, Vec<Algorithm>) = if text.starts_with("-----BEGIN") {
        let bytes = text.as_bytes();
        if let Ok(k) = DecodingKey::from_rsa_pem(bytes) {
            (k, RSA.to_vec())
        } else if let Ok(k) = DecodingKey::from_ec_pem(bytes) {
            (k, vec![Algorithm::ES256, Algorithm::ES384])
        } else if let Ok(k) = DecodingKey::from_ed_pem(bytes) {
            (k, vec![Algorithm::EdDSA])
        } else {
            return Err("a verification key looks like PEM but is not an RSA, EC or Ed25519 public key".to_owned());
        }
    } else {
        if text.is_empty() {
            return Err("a verification key is empty".to_owned());
        }
        (DecodingKey::from_secret(text.as_bytes()).map_err(|e| format!("unusable HMAC key: {e}"))?, HMAC.to_vec())
    };
    let algorithms = match only {
        Some(alg) if family.contains(&alg) => vec![alg],
        Some(alg) => {
            return Err(format!("a verification key cannot verify {alg:?} tokens (it is for {:?})", family[0]));
        }
        None => family,
    };
    Ok(Key { kid: None, key, algorithms })
}

impl Verifier {
    /// Builds a verifier. `algorithm` restricts every key to that one algorithm.
    ///
    /// # Errors
    /// A message naming the unusable key, file or algorithm.
    pub fn new(
        verification_keys: &[String],
        jwks_file: Option<&str>,
        algorithm: Option<&str>,
        audience: Option<Vec<String>>,
    ) -> Result<Self, String> {
        let only = algorithm.map(parse_algorithm).transpose()?;
        let keys = verification_keys.iter().map(|k| static_key(k, only)).collect::<Result<Vec<_>, _>>()?;
        let mut jwks = Vec::new();
        if let Some(path) = jwks_file {
            let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read jwks_file {path}: {e}"))?;
            let set: JwkSet = serde_json::from_str(&text).map_err(|e| format!("invalid JWKS in {path}: {e}"))?;
            for jwk in &set.keys {
                let key = DecodingKey::from_jwk(jwk).map_err(|e| format!("unusable key in {path}: {e}"))?;
                let alg = jwk
                    .common
                    .key_algorithm
                    .and_then(|a| a.to_string().parse::<Algorithm>().ok())
                    .or(only)
                    .unwrap_or(Algorithm::RS256);
                if only.is_some_and(|o| o != alg) {
                    continue;
                }
                jwks.push(Key { kid: jwk.common.key_id.clone(), key, algorithms: vec![alg] });
            }
        }
        if keys.is_empty() && jwks.is_empty() {
            return Err("JWT auth needs at least one verification key".to_owned());
        }
        Ok(Self { jwks, keys, audience })
    }

    /// Verifies a token: signature (by the `kid`-matching JWKS key, then each key in turn), `exp`
    /// and, when configured, `aud`.
    ///
    /// # Errors
    /// The [`TokenError`] of the most telling failure.
    pub fn verify(&self, token: &str) -> Result<Claims, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| TokenError::Malformed(e.to_string()))?;
        let by_kid = self.jwks.iter().filter(|k| header.kid.is_some() && k.kid == header.kid);
        let others = self.jwks.iter().filter(|k| header.kid.is_none() || k.kid != header.kid);
        let mut last = TokenError::Signature;
        for key in by_kid.chain(others).chain(self.keys.iter()) {
            if !key.algorithms.contains(&header.alg) {
                continue;
            }
            let mut validation = Validation::new(header.alg);
            // Time claims are checked below, as PyJWT checks them.
            validation.validate_exp = false;
            validation.validate_nbf = false;
            match &self.audience {
                Some(aud) => {
                    validation.set_audience(aud);
                    // A token without `aud` must not pass an audience check.
                    validation.set_required_spec_claims(&["aud"]);
                }
                None => {
                    validation.validate_aud = false;
                    validation.set_required_spec_claims::<&str>(&[]);
                }
            }
            match jsonwebtoken::decode::<Value>(token, &key.key, &validation) {
                Ok(data) => {
                    check_times(&data.claims, agno_core::now_epoch_secs())?;
                    return Ok(Claims(data.claims));
                }
                Err(e) => {
                    use jsonwebtoken::errors::ErrorKind;
                    match e.kind() {
                        ErrorKind::InvalidSignature => {}
                        ErrorKind::ExpiredSignature => return Err(TokenError::Expired),
                        ErrorKind::InvalidAudience => return Err(TokenError::Audience),
                        ErrorKind::MissingRequiredClaim(c) if c == "aud" => return Err(TokenError::Audience),
                        _ => last = TokenError::Malformed(e.to_string()),
                    }
                }
            }
        }
        Err(last)
    }
}

/// Seconds of clock skew allowed on time claims (PyJWT's leeway in Agno's middleware).
pub const LEEWAY_SECONDS: i64 = 10;

/// A time claim as PyJWT reads it (`int(value)`): a number (truncated) or a numeral.
fn seconds(claims: &Value, name: &'static str, what: &str) -> Result<Option<i64>, TokenError> {
    let Some(value) = claims.get(name) else { return Ok(None) };
    let parsed = match value {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().filter(|f| f.is_finite()).map(saturate)),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    parsed.map(Some).ok_or_else(|| TokenError::Malformed(format!("{what} claim ({name}) must be an integer.")))
}

/// A float as whole seconds, saturating far past the range of dates.
#[allow(clippy::cast_possible_truncation)]
fn saturate(f: f64) -> i64 {
    f.clamp(i64::MIN as f64, i64::MAX as f64) as i64
}

/// `exp` (optional), `nbf` and `iat` against `now`, with [`LEEWAY_SECONDS`].
///
/// # Errors
/// [`TokenError::Expired`], [`TokenError::NotYetValid`], or [`TokenError::Malformed`] for a
/// claim that is not a number.
pub fn check_times(claims: &Value, now: i64) -> Result<(), TokenError> {
    if let Some(exp) = seconds(claims, "exp", "Expiration Time")?
        && exp <= now.saturating_sub(LEEWAY_SECONDS)
    {
        return Err(TokenError::Expired);
    }
    if let Some(iat) = seconds(claims, "iat", "Issued At")?
        && iat > now.saturating_add(LEEWAY_SECONDS)
    {
        return Err(TokenError::NotYetValid("iat"));
    }
    if let Some(nbf) = seconds(claims, "nbf", "Not Before")?
        && nbf > now.saturating_add(LEEWAY_SECONDS)
    {
        return Err(TokenError::NotYetValid("nbf"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn time_claims_are_read_as_pyjwt_reads_them() {
        let now = 1_800_000_000;
        assert_eq!(check_times(&json!({}), now), Ok(()), "no exp: does not expire");
        assert_eq!(check_times(&json!({"exp": 1e30}), now), Ok(()), "far future");
        assert_eq!(check_times(&json!({"exp": now - 5}), now), Ok(()), "within the leeway");
        assert_eq!(check_times(&json!({"exp": now - 60}), now), Err(TokenError::Expired));
        assert_eq!(check_times(&json!({"exp": (now + 60).to_string()}), now), Ok(()), "a numeral");
        assert!(
            matches!(check_times(&json!({"exp": "soon"}), now), Err(TokenError::Malformed(m)) if m.contains("(exp)"))
        );
        assert_eq!(check_times(&json!({"nbf": now + 60}), now), Err(TokenError::NotYetValid("nbf")));
        assert_eq!(check_times(&json!({"iat": now + 60}), now), Err(TokenError::NotYetValid("iat")));
        assert_eq!(check_times(&json!({"nbf": now - 60, "iat": now - 60, "exp": now + 60}), now), Ok(()));
    }
}
