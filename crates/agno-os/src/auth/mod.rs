//! Who is calling and what they may do: the caller authenticated from a request (security key or
//! JWT, [`authenticate`]) as a [`Principal`], and Agno's scopes ([`scopes`]). The layer that
//! applies it to every route, by the route's declared access, is [`crate::routes::guard`].

pub mod jwt;
pub mod scopes;
pub mod service_accounts;

use std::sync::Arc;

use axum::http::HeaderMap;

use crate::config::{AuthMode, AuthSection};
use crate::error::ApiError;
use jwt::Verifier;

/// How requests are authenticated, built from `[auth]`.
#[derive(Debug)]
pub enum Authenticator {
    /// Everyone is admin.
    Open,
    /// `Bearer <key>`; the holder is admin.
    Key(String),
    /// Signed JWTs.
    Jwt(Verifier),
}

/// The auth settings in force.
#[derive(Debug)]
pub struct AuthSettings {
    /// How callers authenticate.
    pub authenticator: Authenticator,
    /// The scope granting everything.
    pub admin_scope: String,
    /// Force non-admin callers' `sub` as `user_id`.
    pub user_isolation: bool,
    /// Service-account verifications, kept briefly.
    pub tokens: service_accounts::TokenCache,
}

impl AuthSettings {
    /// From the config section (`None`: no auth). `OS_SECURITY_KEY` supplies a missing key.
    ///
    /// # Errors
    /// A message saying what to fix.
    pub fn from_config(section: Option<&AuthSection>) -> Result<Self, String> {
        let Some(section) = section else {
            return Ok(Self::open());
        };
        let authenticator = match section.mode {
            AuthMode::None => Authenticator::Open,
            AuthMode::Key => {
                let key = section
                    .security_key
                    .clone()
                    .or_else(|| std::env::var("OS_SECURITY_KEY").ok())
                    .filter(|k| !k.is_empty())
                    .ok_or("[auth] mode = \"key\" needs security_key (or OS_SECURITY_KEY in the environment)")?;
                Authenticator::Key(key)
            }
            AuthMode::Jwt => {
                let audience =
                    (section.verify_audience || !section.audience.is_empty()).then(|| section.audience.clone());
                if audience.as_ref().is_some_and(Vec::is_empty) {
                    return Err("[auth] verify_audience = true needs audience = [\"...\"]".to_owned());
                }
                Authenticator::Jwt(Verifier::new(
                    &section.verification_keys,
                    section.jwks_file.as_deref(),
                    section.algorithm.as_deref(),
                    audience,
                )?)
            }
        };
        Ok(Self {
            authenticator,
            admin_scope: section.admin_scope.clone().unwrap_or_else(|| scopes::DEFAULT_ADMIN_SCOPE.to_owned()),
            user_isolation: section.user_isolation,
            tokens: service_accounts::TokenCache::new(std::time::Duration::from_millis(
                section.service_account_cache_ms,
            )),
        })
    }

    /// No auth.
    pub fn open() -> Self {
        Self {
            authenticator: Authenticator::Open,
            admin_scope: scopes::DEFAULT_ADMIN_SCOPE.to_owned(),
            user_isolation: false,
            tokens: service_accounts::TokenCache::new(std::time::Duration::ZERO),
        }
    }

    /// `none`, `key` or `jwt`, as `/info` reports it.
    pub fn mode_name(&self) -> &'static str {
        match self.authenticator {
            Authenticator::Open => "none",
            Authenticator::Key(_) => "security_key",
            Authenticator::Jwt(_) => "jwt",
        }
    }

    /// True when callers must authenticate.
    pub fn required(&self) -> bool {
        !matches!(self.authenticator, Authenticator::Open)
    }
}

/// The caller of a request, as handlers see it.
#[derive(Debug, Clone)]
pub struct Principal {
    /// `sub` of the token.
    pub subject: Option<String>,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// Holds the admin scope (or auth is off, or the security key was used).
    pub admin: bool,
    /// Whether `user_isolation` applies to this caller.
    pub isolated: bool,
    admin_scope: Arc<str>,
}

/// Marks a request the OS sends to itself (the scheduler's calls) on behalf of a schedule's
/// owner. Only code in this process can put it in a request's extensions; [`authorize`] then
/// skips authentication and hands the route [`Principal::internal`].
#[derive(Debug, Clone)]
pub struct InternalCaller {
    /// The schedule's owner; `None` for a schedule without one (created by an admin).
    pub owner: Option<String>,
}

impl Principal {
    /// The caller of an [`InternalCaller`] request: the owner, confined to their own data (as
    /// under user isolation, whatever the OS's setting: a schedule acts for its owner, never for
    /// others) and allowed to read and run every agent, team and workflow (the owner could
    /// schedule the call, so the schedule may make it); an admin for a schedule without an owner.
    pub fn internal(owner: Option<String>, auth: &AuthSettings) -> Self {
        let admin = owner.is_none();
        let scopes = ["agents", "teams", "workflows"]
            .iter()
            .flat_map(|family| [format!("{family}:read"), format!("{family}:run")])
            .collect();
        Self { isolated: !admin, subject: owner, scopes, admin, admin_scope: auth.admin_scope.as_str().into() }
    }

    /// The caller of a public route: no subject, every right.
    pub fn admin(admin_scope: &str) -> Self {
        Self { subject: None, scopes: Vec::new(), admin: true, isolated: false, admin_scope: admin_scope.into() }
    }

    /// The caller holding service account `account`'s token: `sa:<name>` with the account's
    /// scopes (an admin only if they include the admin scope), isolated as users are.
    pub fn service_account(account: &agno_core::ServiceAccount, auth: &AuthSettings) -> Self {
        let admin = account.scopes.contains(&auth.admin_scope);
        Self {
            subject: Some(account.principal()),
            scopes: account.scopes.clone(),
            admin,
            isolated: auth.user_isolation && !admin,
            admin_scope: auth.admin_scope.as_str().into(),
        }
    }

    /// Whether the caller authenticated with the OS's security key (an admin without scopes or
    /// subject, on an OS that requires authentication).
    pub fn is_root(&self, auth: &AuthSettings) -> bool {
        auth.required() && self.admin && self.subject.is_none() && self.scopes.is_empty()
    }

    /// The `user_id` a read or write is scoped to: the caller's own `sub` under user isolation
    /// (whatever was requested), else what the request asked for.
    pub fn user_scope(&self, requested: Option<String>) -> Option<String> {
        if self.isolated { self.subject.clone() } else { requested }
    }

    /// The user a run is for, as Agno's run routes and interfaces resolve it
    /// (`resolve_run_user_id`): the token's `sub` over the user the client names (`claimed`: a
    /// form's `user_id`, a header, forwarded props), forced under isolation.
    pub fn run_user(&self, claimed: Option<String>) -> Option<String> {
        self.user_scope(self.subject.clone().or(claimed))
    }

    /// Whether the caller holds `scope` (an admin holds every scope; so does everyone when
    /// auth is off or the security key was used).
    pub fn holds(&self, scope: &str) -> bool {
        self.admin || scopes::has_required(&self.scopes, &[scope], None, &self.admin_scope)
    }

    /// Which ids of `family` (`agents`, ...) the caller may `action`; `None` means all.
    pub fn accessible(&self, family: &str, action: &str) -> Option<Vec<String>> {
        if self.admin { None } else { scopes::accessible_ids(&self.scopes, family, action, &self.admin_scope) }
    }
}

/// Prefixes of the subjects Agno reserves for its own identities (`sa:` service accounts, the
/// scheduler, `__oauth__:` clients).
const RESERVED_SUBJECTS: [&str; 3] = ["sa:", "__scheduler__", "__oauth__:"];

/// The bearer token of a request's `headers`, if it carries one.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

/// Constant-time comparison of a presented key with the configured one.
fn same_key(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The caller of a request with `headers`, by the `Authorization` header as `[auth]` says: everyone is admin when
/// auth is open; otherwise 401 without valid credentials.
///
/// # Errors
/// 401 (`ApiError`) for a missing, malformed, expired or wrongly signed credential.
pub fn authenticate(auth: &AuthSettings, req: &HeaderMap) -> Result<Principal, ApiError> {
    let admin_scope = auth.admin_scope.as_str();
    match &auth.authenticator {
        Authenticator::Open => Ok(Principal::admin(admin_scope)),
        Authenticator::Key(key) => {
            let token = bearer(req).ok_or_else(|| ApiError::unauthenticated("Authorization header missing"))?;
            if same_key(token, key) {
                Ok(Principal::admin(admin_scope))
            } else {
                Err(ApiError::unauthenticated("Invalid authentication token"))
            }
        }
        Authenticator::Jwt(verifier) => {
            let token = bearer(req).ok_or_else(|| ApiError::unauthenticated("Authorization header missing"))?;
            let claims = verifier.verify(token).map_err(|e| ApiError::unauthenticated(e.to_string()))?;
            // As Agno: a subject naming a system identity (a service account, the scheduler, an
            // OAuth client), or naming nobody, is refused rather than used.
            if claims.subject().is_some_and(|s| s.is_empty() || RESERVED_SUBJECTS.iter().any(|p| s.starts_with(p)))
                || claims.0.get("sub").is_some_and(|s| !s.is_string() && !s.is_null())
            {
                return Err(ApiError::unauthenticated("Invalid token subject"));
            }
            let scopes = claims.scopes();
            let admin = scopes.iter().any(|s| s == admin_scope);
            if auth.user_isolation && !admin && claims.subject().is_none() {
                return Err(ApiError::unauthenticated("Token has no sub claim, which user isolation needs"));
            }
            Ok(Principal {
                subject: claims.subject(),
                admin,
                isolated: auth.user_isolation && !admin,
                scopes,
                admin_scope: admin_scope.into(),
            })
        }
    }
}
