//! `/databases/{db_id}/migrate` and `/databases/all/migrate`: schema migrations on demand, as
//! Agno's database router answers them. Also [`select_db`], the `db_id`/`table` query
//! parameters every record route accepts.

use crate::routes::query::Query;
use std::collections::BTreeMap;
use std::sync::Arc;

use agno_core::{Db, DbErrorKind};
use agno_db::{Migrate, MigrationManager, VERSIONS};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// The database a record route reads: the OS's one, addressed by `db_id` or implied. A `table`
/// needs a `db_id` (400, as Agno); an unknown `db_id` is 404; no database at all is 400.
pub(crate) fn select_db<'a>(
    state: &'a AppState,
    db_id: Option<&str>,
    table: Option<&str>,
) -> ApiResult<&'a Arc<dyn Db>> {
    // Python asks for `db_id` next to `table` to know which database is meant; this OS serves one,
    // and its tables are fixed, so `table` alone is taken (and, as `table`, ignored).
    let _ = table;
    if let Some(id) = db_id.filter(|id| !id.is_empty())
        && (state.db.is_none() || id != &*state.db_id)
    {
        return Err(unknown_db(id));
    }
    state.require_db()
}

fn unknown_db(db_id: &str) -> ApiError {
    ApiError::not_found(format!("No database found with id '{db_id}'"))
}

/// Query of the migrate routes.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct MigrateParams {
    /// A schema version (default: the latest).
    #[schemars(extend("enum" = ["2.0.0", "2.3.0", "2.5.0", "2.5.6", "3.0.0", ""]))]
    target_version: Option<String>,
}

impl MigrateParams {
    /// The requested version, checked against the known ones (422 otherwise).
    fn target(&self) -> ApiResult<Option<&str>> {
        match self.target_version.as_deref().filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) if VERSIONS.contains(&v) => Ok(Some(v)),
            Some(v) => Err(ApiError::unprocessable(format!(
                "unknown target_version {v:?}; known versions: {}",
                VERSIONS.join(", ")
            ))),
        }
    }
}

fn version_message(target: Option<&str>) -> String {
    target.map_or_else(|| "latest version".to_owned(), |v| format!("version {v}"))
}

fn version_rank(version: &str) -> usize {
    // An unknown version is one newer than this code knows.
    VERSIONS.iter().position(|v| *v == version).unwrap_or(VERSIONS.len())
}

/// Migrates one database up to `target` (default latest). Going down is refused: agno-rs has no
/// down migrations.
async fn migrate(db: &dyn Migrate, target: Option<&str>) -> ApiResult<()> {
    let manager = MigrationManager::new(db);
    if let Some(target) = target {
        let status = manager.status(Some(target)).await?;
        let newer: Vec<String> = status
            .tables
            .iter()
            .filter_map(|t| t.version.as_deref().filter(|v| version_rank(v) > version_rank(target)).map(|v| (t, v)))
            .map(|(t, v)| format!("{} is at {v}", t.table))
            .collect();
        if !newer.is_empty() {
            return Err(ApiError::conflict(format!(
                "cannot migrate down to {target}: {}; agno-rs only migrates up",
                newer.join(", ")
            )));
        }
    }
    manager.up(target, &|_: u64, _: u64| {}).await.map_err(|e| match e.kind() {
        DbErrorKind::Unavailable => ApiError::from(e),
        _ => ApiError::internal(format!("Failed to migrate database: {e}")),
    })?;
    Ok(())
}

/// `POST /databases/{db_id}/migrate?target_version=`: 200 `{"message"}`; 404 for an unknown
/// database.
pub async fn migrate_database(
    State(state): State<AppState>,
    Path(db_id): Path<String>,
    Query(q): Query<MigrateParams>,
) -> ApiResult<Json<Value>> {
    let target = q.target()?;
    let db = state.migrate.as_ref().filter(|_| db_id == *state.db_id).ok_or_else(|| unknown_db(&db_id))?;
    migrate(db.as_ref(), target).await?;
    Ok(Json(json!({"message": format!("Database migrated successfully to {}", version_message(target))})))
}

/// `POST /databases/all/migrate?target_version=`: 200 `{"message"}` when every database
/// migrated, 207 with `failed: {db_id: error}` otherwise.
pub async fn migrate_all_databases(
    State(state): State<AppState>,
    Query(q): Query<MigrateParams>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let target = q.target()?;
    let mut failed = BTreeMap::new();
    let dbs: Vec<(&str, &Arc<dyn Migrate>)> = state.migrate.iter().map(|m| (&*state.db_id, m)).collect();
    for (db_id, db) in &dbs {
        if let Err(e) = migrate(db.as_ref(), target).await {
            failed.insert((*db_id).to_owned(), e.detail);
        }
    }
    let version = version_message(target);
    if failed.is_empty() {
        return Ok((
            StatusCode::OK,
            Json(json!({"message": format!("All databases migrated successfully to {version}")})),
        ));
    }
    let migrated = dbs.len() - failed.len();
    Ok((
        StatusCode::MULTI_STATUS,
        Json(json!({"message": format!("Migrated {migrated}/{} databases to {version}", dbs.len()), "failed": failed})),
    ))
}
