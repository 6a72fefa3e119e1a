//! `/service-accounts`: machine identities with `agno_pat_...` tokens, as Python AgentOS 3.1
//! serves them. Minting answers the token once (only its hash is stored); a caller grants only
//! scopes it holds (an admin or the security key any), privileged scopes (write, delete, admin,
//! service accounts) only when asked for explicitly, and nobody mints on an OS without
//! authentication. Revoking is one way and reaches every replica within the token cache's time
//! (`[auth] service_account_cache_ms`); the replica that revokes refuses the token at once.

use agno_core::{ServiceAccount, ServiceAccountQuery, SortOrder, now_epoch_secs};
use axum::Json;
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::params::{NoContent, Paging, json_body};
use crate::auth::service_accounts::generate_token;
use crate::auth::{Principal, scopes};
use crate::error::{ApiError, ApiResult};
use crate::routes::guard::Caller;
use crate::routes::query::Query;
use crate::state::AppState;

/// What a token grants when the request names no scopes: run and read, nothing else.
const DEFAULT_SCOPES: [&str; 5] = ["agents:run", "teams:run", "workflows:run", "sessions:read", "config:read"];

/// Days a token lives unless asked otherwise.
const DEFAULT_EXPIRY_DAYS: i64 = 90;

/// One scope of a mint request (Agno's `ScopeItem`).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ScopeItem {
    /// The scope, e.g. `agents:*:run`.
    scope: String,
    /// `allow` (a token's scopes are grants: `deny` is refused).
    #[schemars(extend("enum" = ["allow", "deny"]))]
    #[serde(default = "allow")]
    effect: String,
}

fn allow() -> String {
    "allow".to_owned()
}

/// Body of `POST /service-accounts` (Agno's `ServiceAccountCreate`).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CreateRequest {
    /// A lowercase slug: a letter or digit, then letters, digits, `_` or `-` (at most 63).
    #[schemars(length(max = 63))]
    name: String,
    /// The scopes granted (default: run and read).
    scopes: Option<Vec<ScopeItem>>,
    /// Days until the token expires (1 to 3650, default 90).
    #[schemars(range(min = 1, max = 3650))]
    expires_in_days: Option<i64>,
    /// A token that never expires (overrides `expires_in_days`).
    #[serde(default)]
    never_expires: bool,
    /// Required to grant write, delete, admin or service-account scopes.
    #[serde(default)]
    allow_privileged_scopes: bool,
}

/// Query of `GET /service-accounts`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListQuery {
    /// Include revoked accounts (default true).
    include_revoked: Option<bool>,
    /// Page size (1 to 100, default 20).
    #[schemars(range(min = 1, max = 100))]
    limit: Option<usize>,
    /// 1-based page.
    #[schemars(range(min = 1))]
    page: Option<usize>,
    /// `created_at` (default), `name`, `last_used_at` or `expires_at`.
    sort_by: Option<String>,
    /// `asc` or `desc` (default).
    sort_order: Option<String>,
}

/// Agno's slug: `^[a-z0-9][a-z0-9_-]{0,62}$`.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 63
        && chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// An account as Agno answers it (`ServiceAccountResponse`): never its hash.
fn shape(a: &ServiceAccount) -> Value {
    let scopes: Vec<Value> = a.scopes.iter().map(|s| scope_shape(s)).collect();
    json!({
        "id": a.id,
        "name": a.name,
        "principal": a.principal(),
        "user_id": a.user_id,
        "token_prefix": a.token_prefix,
        "scopes": scopes,
        "created_at": a.created_at,
        "expires_at": a.expires_at,
        "last_used_at": a.last_used_at,
        "revoked_at": a.revoked_at,
        "created_by": a.created_by,
    })
}

/// A scope in the RBAC read shape (`ScopeSchema.from_raw`).
fn scope_shape(raw: &str) -> Value {
    let (namespace, sub_namespace, permission) = scopes::split(raw);
    json!({"id": null, "raw": raw, "namespace": namespace, "sub_namespace": sub_namespace, "permission": permission, "value": "allow"})
}

/// 400 for scopes that are not scopes, or privileged ones not asked for explicitly; 401 on an
/// OS without authentication; 403 for scopes the caller does not hold (an admin and the security
/// key hold every one).
fn check_grants(state: &AppState, principal: &Principal, scopes: &[String], privileged_ok: bool) -> ApiResult<()> {
    let admin_scope = state.auth.admin_scope.as_str();
    let bad: Vec<&str> = scopes.iter().filter(|s| !scopes::is_scope(s, admin_scope)).map(String::as_str).collect();
    if !bad.is_empty() {
        return Err(ApiError::bad_request(format!("Invalid scope(s): {}", bad.join(", "))));
    }
    let privileged: Vec<&str> = scopes
        .iter()
        .filter(|s| {
            let (resource, _, action) = scopes::split(s);
            *s == admin_scope
                || *s == scopes::DEFAULT_ADMIN_SCOPE
                || matches!(action, "write" | "delete")
                || resource == "service_accounts"
        })
        .map(String::as_str)
        .collect();
    if !privileged.is_empty() && !privileged_ok {
        return Err(ApiError::bad_request(format!(
            "Privileged scope(s) require allow_privileged_scopes=true: {}. Privileged tokens must be deliberate, never \
             accidental.",
            privileged.join(", ")
        )));
    }
    if !state.auth.required() {
        return Err(ApiError::unauthenticated("JWT authentication is required to mint a service account."));
    }
    if principal.admin {
        return Ok(());
    }
    let not_held: Vec<&str> =
        scopes.iter().filter(|s| !holds(&principal.scopes, s, admin_scope)).map(String::as_str).collect();
    if not_held.is_empty() {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!("Cannot grant scope(s) you do not hold: {}", not_held.join(", "))))
    }
}

/// Whether `held` covers `scope`: a per-resource scope on its resource, any other as itself.
fn holds(held: &[String], scope: &str, admin_scope: &str) -> bool {
    match scopes::split(scope) {
        (family, Some(id), action) => {
            scopes::has_required(held, &[&format!("{family}:{action}")], Some((family, id)), admin_scope)
        }
        _ => scopes::has_required(held, &[scope], None, admin_scope),
    }
}

/// `POST /service-accounts`: 201 with the account and its token, shown this once.
pub async fn create_service_account(Caller { state, principal }: Caller, body: Bytes) -> ApiResult<Response> {
    let body: CreateRequest = json_body(&body)?;
    if !valid_name(&body.name) {
        return Err(ApiError::value_error(
            "name",
            "Name must be a lowercase slug: start with a letter or digit, then letters, digits, '_' or '-' (max 63 \
             chars)",
        ));
    }
    if let Some(item) = body.scopes.iter().flatten().find(|i| i.effect != "allow") {
        return Err(ApiError::value_error(
            "scopes",
            format!("Token scopes are grants: effect must be 'allow' (got '{}' for '{}')", item.effect, item.scope),
        ));
    }
    let scopes: Vec<String> = match body.scopes {
        Some(items) => items.into_iter().map(|i| i.scope).collect(),
        None => DEFAULT_SCOPES.iter().map(|s| (*s).to_owned()).collect(),
    };
    check_grants(&state, &principal, &scopes, body.allow_privileged_scopes)?;
    let db = state.require_db()?;
    let taken = || {
        ApiError::conflict(format!(
            "An active service account named '{}' already exists. Revoke it first to rotate.",
            body.name
        ))
    };
    if db.get_active_service_account(&body.name).await?.is_some() {
        return Err(taken());
    }
    let now = now_epoch_secs();
    let expires_at = (!body.never_expires).then(|| now + body.expires_in_days.unwrap_or(DEFAULT_EXPIRY_DAYS) * 86_400);
    let (token, token_hash, token_prefix) = generate_token();
    let account = ServiceAccount {
        id: agno_core::new_id(),
        name: body.name.clone(),
        user_id: principal.subject.clone(),
        token_hash,
        token_prefix,
        scopes,
        created_at: now,
        expires_at,
        last_used_at: None,
        revoked_at: None,
        created_by: principal.subject.clone(),
    };
    match db.create_service_account(&account).await {
        Ok(()) => {}
        Err(e) if e.kind() == agno_core::DbErrorKind::Conflict => return Err(taken()),
        Err(e) => return Err(e.into()),
    }
    let mut answer = shape(&account);
    answer["token"] = Value::String(token);
    Ok((StatusCode::CREATED, Json(answer)).into_response())
}

/// `GET /service-accounts`: a page of accounts (under isolation, the caller's own and the
/// workspace-level ones), never their hashes or tokens.
pub async fn list_service_accounts(
    Caller { state, principal }: Caller,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<Value>> {
    let paging = Paging::new(q.limit, q.page)?.at_most(100)?;
    let db = state.require_db()?;
    let query = ServiceAccountQuery {
        include_revoked: q.include_revoked.unwrap_or(true),
        limit: paging.limit as u64,
        page: paging.page as u64,
        sort_by: ServiceAccountQuery::sort_column(q.sort_by.as_deref().unwrap_or("created_at")),
        sort_order: if q.sort_order.as_deref() == Some("asc") { SortOrder::Asc } else { SortOrder::Desc },
        user_id: principal.user_scope(None),
    };
    let (accounts, total) = db.get_service_accounts(&query).await?;
    Ok(paging.respond(accounts.iter().map(shape).collect(), total))
}

/// `DELETE /service-accounts/{id}`: revokes it (again: nothing changes), 204. Under isolation,
/// another user's account is 404 and a workspace-level one 403.
pub async fn revoke_service_account(
    Caller { state, principal }: Caller,
    Path(id): Path<String>,
) -> ApiResult<NoContent> {
    let db = state.require_db()?;
    let scope = principal.user_scope(None);
    let account = db
        .get_service_account(&id, scope.as_deref())
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Service account '{id}' not found")))?;
    if scope.is_some() && account.user_id.is_none() {
        return Err(ApiError::forbidden("Cannot revoke a workspace-level service account"));
    }
    if account.revoked_at.is_none() {
        db.revoke_service_account(&id, now_epoch_secs()).await?;
    }
    state.auth.tokens.forget(&account.token_hash);
    Ok(NoContent)
}
