//! The query strings of `/sessions` routes, read as Agno reads them.

use std::sync::Arc;

use agno_core::{Db, SessionType};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// The query string as `(name, value)` pairs; repeated names are kept (`status=A&status=B`).
pub(super) struct Params(Vec<(String, String)>);

pub(super) type RawQuery = axum::extract::RawQuery;

/// Query of `GET /sessions` (documents and bounds the parameters [`list_sessions`] reads).
#[derive(Debug, schemars::JsonSchema)]
#[allow(dead_code)]
pub struct ListQuery {
    /// `agent`, `team` or `workflow`.
    #[schemars(rename = "type", extend("enum" = ["agent", "team", "workflow"]))]
    kind: Option<String>,
    /// Sessions of this agent, team or workflow.
    component_id: Option<String>,
    /// Sessions of this user (the caller's own under user isolation).
    user_id: Option<String>,
    /// Sessions whose name contains this.
    session_name: Option<String>,
    /// Page size (default 20).
    #[schemars(range(min = 1, max = i64::MAX))]
    limit: Option<u64>,
    /// 1-based page.
    #[schemars(range(min = 1, max = i64::MAX))]
    page: Option<u64>,
    #[schemars(extend("enum" = ["created_at", "updated_at"]))]
    sort_by: Option<String>,
    #[schemars(extend("enum" = ["asc", "desc"]))]
    sort_order: Option<String>,
    db_id: Option<String>,
    table: Option<String>,
}

/// Query of `POST /sessions`.
#[derive(Debug, schemars::JsonSchema)]
#[allow(dead_code)]
pub struct CreateQuery {
    /// `agent` (default), `team` or `workflow`.
    #[schemars(rename = "type", extend("enum" = ["agent", "team", "workflow"]))]
    kind: Option<String>,
    db_id: Option<String>,
}

/// Query of the routes reading or changing one session.
#[derive(Debug, schemars::JsonSchema)]
#[allow(dead_code)]
pub struct SessionParams {
    /// `agent`, `team` or `workflow`.
    #[schemars(rename = "type", extend("enum" = ["agent", "team", "workflow"]))]
    kind: Option<String>,
    user_id: Option<String>,
    db_id: Option<String>,
    table: Option<String>,
}

/// Query of the session deletes.
#[derive(Debug, schemars::JsonSchema)]
#[allow(dead_code)]
pub struct DeleteQuery {
    user_id: Option<String>,
    /// Also delete the media the runs stored.
    delete_media: Option<bool>,
    db_id: Option<String>,
    table: Option<String>,
}

/// Query of a session's runs and run previews.
#[derive(Debug, schemars::JsonSchema)]
#[allow(dead_code)]
pub struct RunsQuery {
    #[schemars(rename = "type", extend("enum" = ["agent", "team", "workflow"]))]
    kind: Option<String>,
    user_id: Option<String>,
    /// Runs created at or after this epoch second.
    created_after: Option<i64>,
    /// Runs created at or before this epoch second.
    created_before: Option<i64>,
    /// Runs in these statuses (repeat the parameter; any case).
    #[schemars(
        inner(regex(pattern = r"^(?:[Pp][Ee][Nn][Dd][Ii][Nn][Gg]|[Rr][Uu][Nn][Nn][Ii][Nn][Gg]|[Cc][Oo][Mm][Pp][Ll][Ee][Tt][Ee][Dd]|[Pp][Aa][Uu][Ss][Ee][Dd]|[Cc][Aa][Nn][Cc][Ee][Ll][Ll][Ee][Dd]|[Ee][Rr][Rr][Oo][Rr]|[Rr][Ee][Gg][Ee][Nn][Ee][Rr][Aa][Tt][Ee][Dd])$")),
        extend("x-message" = "Invalid status value {value}: expected one of CANCELLED, COMPLETED, ERROR, PAUSED, PENDING, REGENERATED, RUNNING")
    )]
    status: Option<Vec<String>>,
    db_id: Option<String>,
    table: Option<String>,
}

impl Params {
    /// The query's pairs, once they keep the bounds `T` (the route's documented query) declares.
    pub(super) fn read<T: schemars::JsonSchema>(query: RawQuery) -> ApiResult<Self> {
        let text = query.0.unwrap_or_default();
        let pairs: Vec<(String, String)> =
            form_urlencoded::parse(text.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        let mut grouped: Vec<(String, Vec<String>)> = Vec::new();
        for (k, v) in &pairs {
            match grouped.iter_mut().find(|(name, _)| name == k) {
                Some((_, values)) => values.push(v.clone()),
                None => grouped.push((k.clone(), vec![v.clone()])),
            }
        }
        crate::routes::validate::check::<T>(&crate::routes::validate::query_value::<T>(&grouped), "query")?;
        Ok(Self(pairs))
    }

    /// The last value given for `name` (FastAPI's rule for a scalar parameter).
    pub(super) fn raw(&self, name: &str) -> Option<&str> {
        self.0.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// A text parameter; an empty value counts as absent.
    pub(super) fn text(&self, name: &str) -> Option<String> {
        self.raw(name).filter(|v| !v.is_empty()).map(str::to_owned)
    }

    /// Every value given for `name`.
    pub(super) fn all(&self, name: &str) -> Vec<&str> {
        self.0.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect()
    }

    pub(super) fn int(&self, name: &str) -> ApiResult<Option<i64>> {
        self.raw(name)
            .map(|v| {
                v.trim()
                    .parse::<i64>()
                    .map_err(|_| ApiError::unprocessable(format!("{name} must be an integer, got {v:?}")))
            })
            .transpose()
    }

    /// A positive integer (`>= 1`), or `default`.
    pub(super) fn positive(&self, name: &str, default: usize) -> ApiResult<usize> {
        match self.int(name)? {
            None => Ok(default),
            Some(n) if n >= 1 => {
                usize::try_from(n).map_err(|_| ApiError::unprocessable(format!("{name} is too large")))
            }
            Some(n) => Err(ApiError::unprocessable(format!("{name} must be greater than or equal to 1, got {n}"))),
        }
    }

    pub(super) fn bool(&self, name: &str) -> ApiResult<bool> {
        match self.raw(name).map(str::to_ascii_lowercase).as_deref() {
            None => Ok(false),
            Some("true" | "1" | "yes" | "on" | "t" | "y") => Ok(true),
            Some("false" | "0" | "no" | "off" | "f" | "n") => Ok(false),
            Some(other) => Err(ApiError::unprocessable(format!("{name} must be a boolean, got {other:?}"))),
        }
    }

    /// `type`: `agent`, `team` or `workflow`.
    pub(super) fn session_type(&self) -> ApiResult<Option<SessionType>> {
        self.raw("type").map(parse_session_type).transpose()
    }
}

pub(super) fn parse_session_type(text: &str) -> ApiResult<SessionType> {
    match text {
        "agent" => Ok(SessionType::Agent),
        "team" => Ok(SessionType::Team),
        "workflow" => Ok(SessionType::Workflow),
        other => Err(ApiError::unprocessable(format!("type must be 'agent', 'team' or 'workflow', got {other:?}"))),
    }
}

/// The database the query names and the user whose sessions the caller reaches: the query's
/// `user_id` for an admin without isolation, the caller's own under it.
pub(super) fn scoped<'a>(
    state: &'a AppState,
    principal: &Principal,
    params: &Params,
) -> ApiResult<(&'a Arc<dyn Db>, Option<String>)> {
    Ok((database(state, params)?, principal.user_scope(params.text("user_id"))))
}

/// The database a request addresses (`db_id`, `table` as Agno's `get_db`): the OS has one.
pub(super) fn database<'a>(state: &'a AppState, params: &Params) -> ApiResult<&'a Arc<dyn Db>> {
    crate::routes::databases::select_db(state, params.text("db_id").as_deref(), params.text("table").as_deref())
}
