//! `GET /sessions/{session_id}/media/{storage_key}` (Agno 3.1.10's `get_session_media`): the bytes
//! of media a run of the session offloaded to the configured media storage
//! ([`crate::media::LocalMediaStorage`], `[media_storage]` in `agentos.toml`), as Python AgentOS
//! serves them. The key must belong to the session (owning one session gives no access to
//! another's media) and to this storage; the caller must be able to read the session (another
//! user's, under isolation, is 404). The stored MIME type is sent only when it is one and cannot
//! run in a browser; everything goes out with `X-Content-Type-Options: nosniff`.

use axum::extract::Path;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::media::MediaError;
use crate::routes::guard::Caller;
use crate::routes::query::Query;

/// Types a browser can execute on the API's origin: served as `application/octet-stream`, as an
/// attachment (Agno's `_ACTIVE_CONTENT_TYPES`).
const ACTIVE_CONTENT_TYPES: [&str; 8] = [
    "text/html",
    "application/xhtml+xml",
    "image/svg+xml",
    "text/javascript",
    "application/javascript",
    "application/x-javascript",
    "text/xml",
    "application/xml",
];

/// Query of the media route.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct MediaQuery {
    /// Session type (`agent`, `team` or `workflow`), validated; as in Python AgentOS 3.1.10 it
    /// does not narrow the lookup (a session of another type is served all the same).
    #[serde(rename = "type")]
    #[schemars(rename = "type", extend("enum" = ["agent", "team", "workflow"]))]
    session_type: Option<String>,
    /// Whose session (a scoped caller's own, whatever is asked).
    user_id: Option<String>,
    /// The database to read the session from.
    db_id: Option<String>,
    /// The sessions table to read it from.
    table: Option<String>,
    /// Redirect to a signed URL instead of streaming (local storage has none: the bytes are sent).
    redirect: Option<bool>,
}

/// A MIME type as RFC 9110 writes one (`type/subtype` of tokens), lower case.
fn clean_mime(mime: &str) -> Option<String> {
    let mime = mime.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    let token =
        |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+.^_`|~-".contains(c));
    let (kind, sub) = mime.split_once('/')?;
    (token(kind) && token(sub)).then_some(mime)
}

/// `GET /sessions/{session_id}/media/{storage_key}`: the media's bytes.
pub async fn get_session_media(
    Caller { state, principal }: Caller,
    Path((session_id, storage_key)): Path<(String, String)>,
    Query(q): Query<MediaQuery>,
) -> ApiResult<Response> {
    let Some(storage) = state.media_storage.as_ref() else {
        return Err(ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "Media storage is not configured on AgentOS",
        ));
    };
    let db = crate::routes::databases::select_db(&state, q.db_id.as_deref(), q.table.as_deref())?;
    let user = principal.user_scope(q.user_id.filter(|u| !u.is_empty()));
    let session = db
        .get_session(&session_id, user.as_deref(), None)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Session '{session_id}' not found")))?;
    let runs: Vec<Value> = session.runs().iter().filter_map(|r| serde_json::to_value(r).ok()).collect();
    let reference = runs
        .iter()
        .find_map(|run| crate::media::find_reference(run, &storage_key))
        .ok_or_else(|| ApiError::not_found("Media not found in this session"))?;
    if !storage.serves(reference) {
        return Err(ApiError::not_found("Media is not served by the configured storage backend"));
    }
    // `redirect`: a local file has no URL a browser could follow, so the bytes are streamed.
    // `type` is only validated (by the query's schema): like Python, it does not narrow the lookup.
    let _ = (q.redirect, q.session_type);
    let bytes = storage.download(&storage_key).await.map_err(|e| match e {
        MediaError::NotFound => ApiError::not_found("Media object not found"),
        MediaError::Io(err) => {
            tracing::warn!(storage_key = %storage_key, error = %err, "failed to fetch media");
            ApiError::new(axum::http::StatusCode::INTERNAL_SERVER_ERROR, "Failed to fetch media from storage")
        }
    })?;
    let stored = reference.get("mime_type").and_then(Value::as_str).filter(|m| !m.is_empty());
    let guessed = || mime_guess::from_path(&storage_key).first_raw().map(str::to_owned);
    let mut mime = stored.map(str::to_owned).or_else(guessed).and_then(|m| clean_mime(&m));
    let mut response = bytes.into_response();
    let headers = response.headers_mut();
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    if mime.as_deref().is_some_and(|m| ACTIVE_CONTENT_TYPES.contains(&m)) {
        headers.insert(header::CONTENT_DISPOSITION, HeaderValue::from_static("attachment"));
        mime = None;
    }
    let mime = mime.unwrap_or_else(|| "application/octet-stream".to_owned());
    if let Ok(value) = HeaderValue::from_str(&mime) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    Ok(response)
}
