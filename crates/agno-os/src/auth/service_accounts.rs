//! Service-account tokens, as Python AgentOS 3.1 mints and checks them: `agno_pat_<base62>`
//! (32 random bytes), of which only the SHA-256 hex is stored, the first 16 characters kept for
//! display. A request bearing one runs as `sa:<name>` with the account's scopes, enforced
//! whatever the OS's auth mode (they are the OS's own ACL, not a client's claim).
//!
//! Verifications are kept per replica for a short time (`[auth] service_account_cache_ms`, 500 ms
//! by default; 0 reads the database on every request), so a token revoked through any replica is
//! refused by every replica within that time; the replica that revokes forgets it at once. As
//! Agno's verifier: a use is recorded (`last_used_at`) at most once a minute per account, and a
//! client whose lookups failed 20 times within a minute is answered 429 instead of 401 (a valid
//! token is always looked up first, so a flood of bad ones never locks out its holder).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use agno_core::{Db, ServiceAccount};
use sha2::{Digest, Sha256};

/// What every token starts with (greppable by secret scanners).
pub const TOKEN_PREFIX: &str = "agno_pat_";

/// How many characters of a token are kept for display.
const DISPLAY_PREFIX: usize = 16;

/// How many verifications (and clients with failed lookups, and accounts' last use) are kept
/// at most.
const CACHE_ENTRIES: usize = 2048;

/// Failed lookups a client may make within [`FAILURE_WINDOW`] before it is answered 429.
const MAX_FAILURES: usize = 20;

/// The window failed lookups are counted in.
const FAILURE_WINDOW: Duration = Duration::from_secs(60);

/// The least time between two writes of an account's `last_used_at`.
const LAST_USED_EVERY: Duration = Duration::from_secs(60);

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `bytes` as one big-endian number written in base 62 (as Agno encodes its tokens).
fn base62(bytes: &[u8]) -> String {
    let mut digits: Vec<u8> = bytes.to_vec();
    let mut out = Vec::new();
    while digits.iter().any(|d| *d != 0) {
        let mut rem = 0u32;
        for d in &mut digits {
            let acc = (rem << 8) | u32::from(*d);
            *d = u8::try_from(acc / 62).unwrap_or(0);
            rem = acc % 62;
        }
        out.push(BASE62[rem as usize]);
    }
    if out.is_empty() {
        out.push(BASE62[0]);
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// The SHA-256 hex digest of `token`: the only form of it ever stored.
pub fn hash_token(token: &str) -> String {
    Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// A new token: (plaintext, its hash, its display prefix). The plaintext is answered once and
/// never stored. Its 32 random bytes come from the operating system's generator (by way of two
/// version-4 UUIDs: 244 random bits).
pub fn generate_token() -> (String, String, String) {
    let mut bytes = Vec::with_capacity(32);
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    let token = format!("{TOKEN_PREFIX}{}", base62(&bytes));
    let prefix: String = token.chars().take(DISPLAY_PREFIX).collect();
    (token.clone(), hash_token(&token), prefix)
}

/// Why a token does not authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Unknown, revoked or expired (one answer for all three, as Agno's).
    Invalid,
    /// The database does not keep service accounts, or cannot be reached.
    Unavailable,
    /// Too many failed lookups from this client lately.
    Throttled,
}

/// Verifications of tokens, kept briefly.
#[derive(Debug)]
pub struct TokenCache {
    ttl: Duration,
    entries: Mutex<HashMap<String, (ServiceAccount, Instant)>>,
    failures: Mutex<HashMap<Option<IpAddr>, Vec<Instant>>>,
    used: Mutex<HashMap<String, Instant>>,
}

impl TokenCache {
    /// A cache keeping a verification for `ttl` (zero: none kept).
    pub fn new(ttl: Duration) -> Self {
        Self { ttl, entries: Mutex::default(), failures: Mutex::default(), used: Mutex::default() }
    }

    fn cached(&self, hash: &str) -> Option<ServiceAccount> {
        let entries = self.entries.lock().ok()?;
        let (account, at) = entries.get(hash)?;
        (at.elapsed() < self.ttl).then(|| account.clone())
    }

    fn keep(&self, hash: String, account: ServiceAccount) {
        if self.ttl.is_zero() {
            return;
        }
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= CACHE_ENTRIES {
                entries.retain(|_, (_, at)| at.elapsed() < self.ttl);
                if entries.len() >= CACHE_ENTRIES {
                    entries.clear();
                }
            }
            entries.insert(hash, (account, Instant::now()));
        }
    }

    /// Forgets the verification of the token hashing to `hash` (a revoke on this replica).
    pub fn forget(&self, hash: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(hash);
        }
    }

    /// The account `token` authenticates at `now` (epoch seconds) for a request from `client`:
    /// from the cache while its entry is fresh (expiry is checked on every use), else from `db`.
    ///
    /// # Errors
    /// [`Refusal`].
    pub async fn verify(
        &self,
        db: &dyn Db,
        token: &str,
        now: i64,
        client: Option<IpAddr>,
    ) -> Result<ServiceAccount, Refusal> {
        let hash = hash_token(token);
        if let Some(account) = self.cached(&hash).filter(|a| a.usable_at(now)) {
            self.record_use(db, &account, now).await;
            return Ok(account);
        }
        match db.service_account_by_token(&hash).await {
            Ok(Some(account)) if account.usable_at(now) => {
                self.keep(hash, account.clone());
                self.record_use(db, &account, now).await;
                Ok(account)
            }
            Ok(_) => {
                self.forget(&hash);
                Err(self.failed(client))
            }
            Err(e) => {
                // Never counted as a failure: a database blip must not lock clients out.
                tracing::warn!(error = %e, "a service-account token could not be verified");
                Err(Refusal::Unavailable)
            }
        }
    }

    /// A failed lookup by `client`: [`Refusal::Invalid`], or [`Refusal::Throttled`] once it
    /// failed [`MAX_FAILURES`] times within [`FAILURE_WINDOW`].
    fn failed(&self, client: Option<IpAddr>) -> Refusal {
        let Ok(mut failures) = self.failures.lock() else { return Refusal::Invalid };
        if failures.len() >= CACHE_ENTRIES && !failures.contains_key(&client) {
            failures.retain(|_, at| at.iter().any(|t| t.elapsed() < FAILURE_WINDOW));
            if failures.len() >= CACHE_ENTRIES {
                failures.clear();
            }
        }
        let recent = failures.entry(client).or_default();
        recent.retain(|t| t.elapsed() < FAILURE_WINDOW);
        if recent.len() >= MAX_FAILURES {
            return Refusal::Throttled;
        }
        recent.push(Instant::now());
        Refusal::Invalid
    }

    /// Records `account`'s use at `now`, at most once per [`LAST_USED_EVERY`] (a failed write is
    /// logged: it never refuses the request).
    async fn record_use(&self, db: &dyn Db, account: &ServiceAccount, now: i64) {
        {
            let Ok(mut used) = self.used.lock() else { return };
            if used.get(&account.id).is_some_and(|at| at.elapsed() < LAST_USED_EVERY) {
                return;
            }
            if used.len() >= CACHE_ENTRIES {
                used.clear();
            }
            used.insert(account.id.clone(), Instant::now());
        }
        if let Err(e) = db.touch_service_account(&account.id, now).await {
            tracing::warn!(error = %e, account = %account.name, "cannot record a service account's use");
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_base62_after_the_prefix_and_hash_as_agno_hashes_them() {
        assert_eq!(base62(&[0]), "0");
        assert_eq!(base62(&[61]), "z");
        assert_eq!(base62(&[1, 0]), "48"); // 256 = 4 * 62 + 8
        let (token, hash, prefix) = generate_token();
        assert!(token.starts_with(TOKEN_PREFIX) && token.len() > 50, "{token}");
        assert!(token[TOKEN_PREFIX.len()..].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!((prefix.len(), token.starts_with(&prefix)), (16, true));
        assert_eq!(hash, hash_token(&token));
        assert_eq!(hash_token("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_ne!(generate_token().0, token);
    }
}
