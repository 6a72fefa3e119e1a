//! Who looks at the pages, and how a page asks the OS for what it shows.
//!
//! Signing in keeps the token the viewer pastes (a security key, a JWT, a service account's
//! token) in a cookie only the UI's own requests carry (`HttpOnly`, `SameSite=Strict`, the UI's
//! path); a proxy in front may instead send `Authorization` itself, which wins. Each page call is
//! the OS route of that path, called in process with that credential ([`Viewer::get`]), so the
//! page meets the route's own authentication, scopes and isolation. A token the OS refuses sends
//! the viewer back to the sign-in page with the route's reason.

use axum::body::Body;
use axum::extract::{Extension, FromRequestParts, Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde_json::Value;

use super::Ui;
use super::layout;
use crate::auth::Principal;
use crate::state::AppState;

/// The cookie that holds the viewer's token.
const COOKIE_NAME: &str = "agno_ui_token";
/// The largest answer a page reads from a route.
const ANSWER_LIMIT: usize = 32 << 20;

/// The viewer of a page: their credential (if the OS asks for one) and who the OS takes them for.
pub(crate) struct Viewer {
    pub ui: Ui,
    credential: Option<String>,
    /// Who the OS takes the viewer for, as the routes will.
    pub principal: Principal,
    /// Whether the OS asks for credentials (a sign-out button is shown).
    pub signed_in: bool,
}

/// Why a page cannot be shown: rendered as a page of its own (or, for a refused credential, a
/// redirect to the sign-in page saying why).
#[derive(Debug)]
pub(crate) struct UiError {
    status: StatusCode,
    detail: String,
    base: String,
}

impl UiError {
    pub(crate) fn new(ui: &Ui, status: StatusCode, detail: impl Into<String>) -> Self {
        Self { status, detail: detail.into(), base: ui.base.to_string() }
    }

    pub(crate) fn not_found(ui: &Ui, what: impl Into<String>) -> Self {
        Self::new(ui, StatusCode::NOT_FOUND, what)
    }
}

impl IntoResponse for UiError {
    fn into_response(self) -> Response {
        if self.status == StatusCode::UNAUTHORIZED {
            return sign_in_redirect(&self.base, &self.detail);
        }
        let title = match self.status {
            StatusCode::NOT_FOUND => "Not found",
            StatusCode::FORBIDDEN => "Not allowed",
            s if s.is_client_error() => "Cannot do that",
            _ => "Something went wrong",
        };
        let body = html! {
            h1 { (title) }
            p.error role="alert" { (self.detail) }
            p { a href=(format!("{}/", self.base)) { "Back to the start page" } }
        };
        (self.status, layout::bare(&self.base, title, &body)).into_response()
    }
}

fn sign_in_redirect(base: &str, reason: &str) -> Response {
    let query: String = form_urlencoded::Serializer::new(String::new()).append_pair("reason", reason).finish();
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("{base}/sign-in?{query}")) {
        response.headers_mut().insert(LOCATION, location);
    }
    response
}

fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE_NAME)
        .map(|(_, value)| value.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// The credential of a request: the proxy's `Authorization` header, else the UI's cookie.
fn credential_of(headers: &HeaderMap) -> Option<String> {
    crate::auth::bearer(headers).map(str::to_owned).or_else(|| cookie_token(headers))
}

/// Makes `headers`' `Authorization` the bearer `credential` (and nothing else: a header the page's
/// request brought is dropped).
fn set_bearer(headers: &mut HeaderMap, credential: Option<&str>) {
    headers.remove(AUTHORIZATION);
    if let Some(value) = credential.and_then(|c| HeaderValue::from_str(&format!("Bearer {c}")).ok()) {
        headers.insert(AUTHORIZATION, value);
    }
}

fn bearer_headers(credential: Option<&str>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    set_bearer(&mut headers, credential);
    headers
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let Some(ui) = parts.extensions.get::<Ui>().cloned() else {
            return Err(StatusCode::INTERNAL_SERVER_ERROR.into_response());
        };
        let credential = credential_of(&parts.headers);
        let signed_in = state.auth.required();
        if signed_in && credential.is_none() {
            return Err(sign_in_redirect(&ui.base, ""));
        }
        let peer = parts.extensions.get::<crate::serve::Peer>().map(|p| p.0);
        match crate::routes::guard::identify(state, &bearer_headers(credential.as_deref()), peer).await {
            Ok(principal) => Ok(Self { ui, credential, principal, signed_in }),
            Err(refused) => Err(sign_in_redirect(&ui.base, &format!("The OS refused your token: {}", refused.detail))),
        }
    }
}

impl Viewer {
    /// The UI's base path (`/ui`).
    pub(crate) fn base(&self) -> &str {
        &self.ui.base
    }

    /// A request to the OS's routes as the viewer: `method uri` with `body` of `content_type`.
    fn request(
        &self,
        method: Method,
        uri: &str,
        content_type: Option<HeaderValue>,
        body: Body,
    ) -> Result<Request, UiError> {
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .body(body)
            .map_err(|e| UiError::new(&self.ui, StatusCode::BAD_REQUEST, e.to_string()))?;
        if let Some(kind) = content_type {
            request.headers_mut().insert(CONTENT_TYPE, kind);
        }
        set_bearer(request.headers_mut(), self.credential.as_deref());
        Ok(request)
    }

    /// `GET uri` of the OS as the viewer: the answer's JSON, or the route's refusal as a page.
    pub(crate) async fn get(&self, uri: &str) -> Result<Value, UiError> {
        self.send(Method::GET, uri, None).await
    }

    /// `method uri` of the OS with a JSON `body` as the viewer.
    pub(crate) async fn send(&self, method: Method, uri: &str, body: Option<Value>) -> Result<Value, UiError> {
        let request = match body {
            Some(v) => {
                self.request(method, uri, Some(HeaderValue::from_static("application/json")), Body::from(v.to_string()))
            }
            None => self.request(method, uri, None, Body::empty()),
        }?;
        self.answer(request).await
    }

    /// Sends `request` to the OS's routes: the answer's JSON, or the route's refusal.
    async fn answer(&self, request: Request) -> Result<Value, UiError> {
        let (status, bytes) = self
            .ui
            .routes
            .send(request, ANSWER_LIMIT)
            .await
            .map_err(|e| UiError::new(&self.ui, StatusCode::INTERNAL_SERVER_ERROR, e))?;
        let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(value);
        }
        Err(UiError::new(&self.ui, status, detail_of(&value).unwrap_or_else(|| status.to_string())))
    }

    /// `GET uri` for a page whose feature this OS may not have: the route's reason as `Err` when it
    /// answers 501 or 503 (no knowledge base, a database without that store), to show in the page.
    pub(crate) async fn get_feature(&self, uri: &str) -> Result<Result<Value, String>, UiError> {
        match self.get(uri).await {
            Ok(v) => Ok(Ok(v)),
            Err(e) if matches!(e.status, StatusCode::NOT_IMPLEMENTED | StatusCode::SERVICE_UNAVAILABLE) => {
                Ok(Err(e.detail))
            }
            Err(e) => Err(e),
        }
    }

    /// `method uri` with the body and content type of a form the page posted (an upload), as the
    /// viewer.
    pub(crate) async fn send_raw(&self, method: Method, uri: &str, request: Request) -> Result<Value, UiError> {
        let (parts, body) = request.into_parts();
        let request = self.request(method, uri, parts.headers.get(CONTENT_TYPE).cloned(), body)?;
        self.answer(request).await
    }

    /// An action of a page: refused unless posted from the UI's own pages, then `method uri` with
    /// `body` as the viewer, then a redirect to `back` (a path under the UI).
    pub(crate) async fn act(
        &self,
        headers: &HeaderMap,
        method: Method,
        uri: &str,
        body: Option<Value>,
        back: &str,
    ) -> Result<Response, UiError> {
        self.check_own_page(headers)?;
        self.send(method, uri, body).await?;
        Ok(axum::response::Redirect::to(&format!("{}{back}", self.ui.base)).into_response())
    }

    /// Refuses an action (a form post) that does not come from the UI's own pages ([`same_origin`]).
    pub(crate) fn check_own_page(&self, headers: &HeaderMap) -> Result<(), UiError> {
        if same_origin(headers) {
            return Ok(());
        }
        Err(UiError::new(&self.ui, StatusCode::FORBIDDEN, "This action is taken from the OS's own pages only."))
    }

    /// Whether the viewer holds `scope` (to offer an action the route would refuse otherwise).
    pub(crate) fn may(&self, scope: &str) -> bool {
        self.principal.holds(scope)
    }
}

/// The reason a route's JSON error gives (`detail`, a string or a list of `msg`s).
pub(crate) fn detail_of(value: &Value) -> Option<String> {
    match value.get("detail")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => Some(items.iter().filter_map(|i| i["msg"].as_str()).collect::<Vec<_>>().join("; ")),
        other => Some(other.to_string()),
    }
}

/// Whether a request that changes something comes from the UI's own pages: a browser's
/// `Sec-Fetch-Site` (or `Origin`) must name this site. With the `SameSite=Strict` cookie this
/// keeps other sites from acting for the viewer.
pub(crate) fn same_origin(headers: &HeaderMap) -> bool {
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        return matches!(site, "same-origin" | "none");
    }
    match (headers.get("origin").and_then(|v| v.to_str().ok()), headers.get("host").and_then(|v| v.to_str().ok())) {
        (Some(origin), Some(host)) => origin.split_once("://").is_some_and(|(_, h)| h == host),
        (Some(_), None) => false,
        (None, _) => true,
    }
}

/// `ANY /ui/api/{path}`: the OS route `/{path}` (with its query) called as the viewer, its answer
/// (a stream too) passed back as it comes. Only the UI's own pages may call it: a same-origin
/// request carrying `X-Agno-UI`.
pub(crate) async fn forward(viewer: Viewer, request: Request) -> Response {
    if !same_origin(request.headers()) || !request.headers().contains_key("x-agno-ui") {
        return crate::error::ApiError::forbidden("only the control plane's own pages call /ui/api").into_response();
    }
    let (mut parts, body) = request.into_parts();
    let prefix = format!("{}/api", viewer.base());
    let Some(path) = parts.uri.path_and_query().map(|p| p.as_str().to_owned()) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let Some(rest) = path.strip_prefix(&prefix) else { return StatusCode::BAD_REQUEST.into_response() };
    let Ok(uri) = rest.parse() else { return StatusCode::BAD_REQUEST.into_response() };
    parts.uri = uri;
    // A new request to the OS's routes: none of this route's matching goes with it.
    let peer = parts.extensions.get::<crate::serve::Peer>().copied();
    parts.extensions = axum::http::Extensions::new();
    if let Some(peer) = peer {
        parts.extensions.insert(peer);
    }
    parts.headers.remove(COOKIE);
    parts.headers.remove("x-agno-ui");
    set_bearer(&mut parts.headers, viewer.credential.as_deref());
    viewer.ui.routes.call(Request::from_parts(parts, body)).await
}

/// Query of the sign-in page: why the viewer is asked to sign in.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct SignInQuery {
    #[serde(default)]
    reason: String,
}

/// `GET /ui/sign-in`: the form, with the reason the viewer was sent here.
pub(crate) async fn sign_in_page(
    Extension(ui): Extension<Ui>,
    State(state): State<AppState>,
    axum::extract::Query(q): axum::extract::Query<SignInQuery>,
) -> Markup {
    sign_in_form(&ui, &state, &q.reason)
}

fn sign_in_form(ui: &Ui, state: &AppState, reason: &str) -> Markup {
    let mode = state.auth.mode_name();
    let body = html! {
        h1 { "Sign in" }
        @if !reason.is_empty() { p.error role="alert" { (reason) } }
        @if state.auth.required() {
            p { "This AgentOS asks for a token (" (mode) "): its security key, a JWT or a service account's token." }
        } @else {
            p { "This AgentOS asks for no token: " a href=(format!("{}/", ui.base)) { "go to the start page" } "." }
        }
        form method="post" action=(format!("{}/sign-in", ui.base)) {
            label for="token" { "Token" }
            input #token type="password" name="token" autocomplete="off" required autofocus;
            button type="submit" { "Sign in" }
        }
    };
    layout::bare(&ui.base, "Sign in", &body)
}

/// The sign-in form's fields.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct SignInForm {
    token: String,
}

/// `POST /ui/sign-in`: checks the token as the routes will and keeps it in the cookie; a refused
/// one shows the form again with the OS's reason.
pub(crate) async fn sign_in(
    Extension(ui): Extension<Ui>,
    State(state): State<AppState>,
    headers: HeaderMap,
    axum::extract::Form(form): axum::extract::Form<SignInForm>,
) -> Response {
    if !same_origin(&headers) {
        return (StatusCode::FORBIDDEN, sign_in_form(&ui, &state, "Sign in from this OS's own page.")).into_response();
    }
    let token = form.token.trim();
    if token.is_empty() || token.contains(|c: char| c.is_control() || c == ';' || c == ',' || c.is_whitespace()) {
        return (StatusCode::BAD_REQUEST, sign_in_form(&ui, &state, "A token is one word without spaces."))
            .into_response();
    }
    if let Err(refused) = crate::routes::guard::identify(&state, &bearer_headers(Some(token)), None).await {
        let reason = format!("The OS refused this token: {}", refused.detail);
        return (StatusCode::UNAUTHORIZED, sign_in_form(&ui, &state, &reason)).into_response();
    }
    let cookie = format!("{COOKIE_NAME}={token}; Path={}; HttpOnly; SameSite=Strict", ui.base);
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let (Ok(cookie), Ok(home)) = (HeaderValue::from_str(&cookie), HeaderValue::from_str(&format!("{}/", ui.base))) {
        response.headers_mut().insert(SET_COOKIE, cookie);
        response.headers_mut().insert(LOCATION, home);
    }
    response
}

/// `POST /ui/sign-out`: forgets the token (from the UI's own pages only, as every action).
pub(crate) async fn sign_out(Extension(ui): Extension<Ui>, headers: HeaderMap) -> Response {
    if !same_origin(&headers) {
        return UiError::new(&ui, StatusCode::FORBIDDEN, "This action is taken from the OS's own pages only.")
            .into_response();
    }
    let cookie = format!("{COOKIE_NAME}=; Path={}; HttpOnly; SameSite=Strict; Max-Age=0", ui.base);
    let mut response = sign_in_redirect(&ui.base, "Signed out.");
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(SET_COOKIE, cookie);
    }
    response
}
