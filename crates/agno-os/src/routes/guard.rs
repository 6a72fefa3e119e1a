//! The one authorisation layer ([`authorize`]): every routed request passes here. It finds the
//! route's declared access in [`super::ROUTES`], refuses state-changing requests from browser
//! origins the OS does not allow, authenticates the caller ([`crate::auth`]), checks the scopes,
//! checks a JSON body as the route declares it ([`crate::input`]), and hands the handler a
//! [`Principal`].

use axum::extract::{FromRequestParts, MatchedPath, Request};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use tower::ServiceExt;

use super::{Access, ROUTES, RequestBody, served_route};
use crate::auth::{InternalCaller, Principal, authenticate, bearer, scopes};
use crate::error::ApiError;
use crate::state::AppState;

/// The authorisation layer around `route`: [`authorize`] runs in a future of its own, dropped
/// before the route runs, so a request waiting in its handler (a long SSE tail, a model call)
/// holds only the route's future (`axum::middleware::from_fn` kept the checks' state and copies
/// of the request alive until the response).
pub fn layer(state: AppState, route: axum::routing::Route) -> impl crate::app::Wrapped {
    tower::service_fn(move |req: Request| {
        let checked = Box::pin(authorize(state.clone(), req));
        let route = route.clone();
        async move {
            let checked = checked.await;
            match checked {
                Ok(req) => route.oneshot(req).await,
                Err(refused) => Ok(refused),
            }
        }
    })
}

/// The checks of every routed request, before its handler: `Ok` with the request carrying the
/// caller's [`Principal`], else the refusal. A route missing from the route table is refused
/// (500) rather than served unchecked.
pub async fn authorize(state: AppState, mut req: Request) -> Result<Request, Response> {
    let Some(path) = req.extensions().get::<MatchedPath>().map(|m| m.as_str().to_owned()) else {
        return Err(ApiError::not_found("Not Found").into_response());
    };
    let Some(route) = served_route(&state, req.method(), &path) else {
        if ROUTES.iter().any(|r| super::served_path(&state, r) == path) {
            return Err(ApiError::new(axum::http::StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed").into_response());
        }
        return Err(ApiError::internal(format!("route {} {path} has no access rule", req.method())).into_response());
    };
    let auth = &state.auth;
    if let Some(internal) = req.extensions().get::<InternalCaller>().cloned() {
        req.extensions_mut().insert(Principal::internal(internal.owner, auth));
        return Ok(req);
    }
    if let Err(e) = crate::input::check_origin(req.method(), req.headers(), &state.origins) {
        return Err(e.into_response());
    }
    let principal = match route.access {
        Access::Public => Principal::admin(&auth.admin_scope),
        Access::Authenticated | Access::Scope(_) => {
            let peer = req.extensions().get::<crate::serve::Peer>().map(|p| p.0);
            let principal = match identify(&state, req.headers(), peer).await {
                Ok(p) => p,
                Err(e) => return Err(e.into_response()),
            };
            if let Access::Scope(required) = route.access {
                let target = scopes::target_of(req.uri().path());
                if !principal.admin && !scopes::has_required(&principal.scopes, &[required], target, &auth.admin_scope)
                {
                    return Err(ApiError::forbidden(format!("Insufficient permissions: {required} is required"))
                        .into_response());
                }
            }
            principal
        }
    };
    req.extensions_mut().insert(principal);
    if matches!(route.body, RequestBody::Json(_) | RequestBody::OptionalJson(_)) {
        req = match crate::input::check_json_body(req, &state.limits).await {
            Ok(req) => req,
            Err(e) => return Err(e.into_response()),
        };
    }
    Ok(req)
}

/// Who `req` authenticates as: a service account's token (on an OS that requires
/// authentication) by its record, any other credential as `[auth]` says ([`authenticate`]). The
/// control plane's pages ask the same question of the token they hold.
///
/// # Errors
/// 401 for a missing or refused credential (429/503 when service-account tokens cannot be checked).
pub(crate) async fn identify(
    state: &AppState,
    headers: &HeaderMap,
    peer: Option<std::net::IpAddr>,
) -> Result<Principal, ApiError> {
    let auth = &state.auth;
    match bearer(headers).filter(|t| auth.required() && t.starts_with(crate::auth::service_accounts::TOKEN_PREFIX)) {
        Some(token) => service_account(state, token, peer).await,
        None => authenticate(auth, headers),
    }
}

/// The caller bearing the service-account token `token` (`agno_pat_...`): its account, if the
/// token is known, not revoked and not expired.
async fn service_account(state: &AppState, token: &str, peer: Option<std::net::IpAddr>) -> Result<Principal, ApiError> {
    use crate::auth::service_accounts::Refusal;
    let auth = &state.auth;
    let Some(db) = &state.db else {
        return Err(ApiError::unauthenticated("Service accounts are not enabled on this AgentOS instance"));
    };
    match auth.tokens.verify(db.as_ref(), token, agno_core::now_epoch_secs(), peer).await {
        Ok(account) => Ok(Principal::service_account(&account, auth)),
        Err(Refusal::Invalid) => Err(ApiError::unauthenticated("Invalid or expired service account token")),
        Err(Refusal::Throttled) => {
            Err(ApiError::new(axum::http::StatusCode::TOO_MANY_REQUESTS, "Too many failed authentication attempts"))
        }
        Err(Refusal::Unavailable) => {
            Err(ApiError::new(axum::http::StatusCode::SERVICE_UNAVAILABLE, "Authentication is temporarily unavailable"))
        }
    }
}

/// What every guarded handler starts from: the OS's state and the caller [`authorize`] let in.
///
/// Taken as `Caller { state, principal }: Caller`. A handler reached without passing
/// [`authorize`] (a route wired outside the route table) gets 500 instead of running unchecked.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The OS's state.
    pub state: AppState,
    /// Who calls, with their scopes and isolation.
    pub principal: Principal,
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let principal =
            parts.extensions.get::<Principal>().cloned().ok_or_else(|| {
                ApiError::internal(format!("{} was routed without its access check", parts.uri.path()))
            })?;
        Ok(Self { state: state.clone(), principal })
    }
}
