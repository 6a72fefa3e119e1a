//! `/components`: agents, teams and workflows kept in the database with versioned configs, as
//! Python AgentOS 3.1 serves them (its routes, shapes, statuses and messages). The rules of every
//! write are the store's (`agno_core::components`); these routes check who may do what and turn
//! a request into one store call, which applies whole or changes nothing.
//!
//! Who sees what (Agno's catalog rules): a caller scoped by user isolation sees their own
//! components, shared ones (no owner) and every published live one; only the owner changes a
//! component (403 for a shared one or another user's visible one, 404 for an invisible one), and
//! only the owner (or an admin) reads another owner's drafts. Unscoped callers (no auth, no
//! isolation, admins) see and change everything.

mod bodies;
mod buildable;
mod links;

use std::sync::Arc;

use agno_core::{
    ComponentChange, ComponentError, ComponentQuery, ComponentRecord, ConfigChoice, ConfigWrite, Db, NewComponent,
    now_epoch_secs,
};
use axum::Json;
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Map, Value, json};

pub use bodies::{ComponentCreate, ComponentUpdate, ConfigCreate, ConfigUpdate, Guard, GuardOnly};
use bodies::{check_component_type, check_id, component_json, config_json, id_from_name, links_from_body};

use super::params::{NoContent, Paging, json_body};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::routes::guard::Caller;
use crate::routes::query::Query;

/// Query of `GET /components`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListQuery {
    /// `agent`, `team` or `workflow`.
    component_type: Option<String>,
    /// 1-based page.
    #[schemars(range(min = 1))]
    page: Option<usize>,
    /// Page size (1..100, default 20).
    #[schemars(range(min = 1, max = 100))]
    limit: Option<usize>,
    /// Include archived components.
    include_deleted: Option<bool>,
}

/// Query of `GET /components/{component_id}`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct GetQuery {
    /// Answer an archived component too.
    include_deleted: Option<bool>,
}

/// Query of `GET /components/{component_id}/configs`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ConfigsQuery {
    /// Include each version's config (default true).
    include_config: Option<bool>,
}

/// Query of `DELETE /components/{component_id}`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct DeleteQuery {
    /// The current version expected (`0`: none published).
    expected_current_version: Option<i64>,
}

/// The caller as the catalog sees them.
struct Viewer {
    /// The user they are confined to (none: unscoped, sees everything).
    scope: Option<String>,
    /// Whether they read every draft (an admin; everyone when auth is off).
    privileged: bool,
}

impl Viewer {
    fn of(principal: &Principal) -> ApiResult<Self> {
        if principal.isolated && principal.subject.is_none() {
            return Err(ApiError::forbidden("User isolation is on and the token names no user (no `sub` claim)"));
        }
        Ok(Self { scope: principal.user_scope(None), privileged: principal.admin })
    }

    fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// Whether they read `c`'s drafts: privileged, unscoped, or its owner.
    fn reads_drafts(&self, c: &ComponentRecord) -> bool {
        self.privileged || self.scope.is_none() || (c.user_id.is_some() && c.user_id == self.scope)
    }

    /// 403 unless they may change `c` (`verb`: what Agno's message says they tried).
    fn may_change(&self, c: &ComponentRecord, verb: &str) -> ApiResult<()> {
        match (&self.scope, &c.user_id) {
            (None, _) => Ok(()),
            (Some(_), None) => Err(ApiError::forbidden(format!("Cannot {verb} shared component"))),
            (Some(me), Some(owner)) if me == owner => Ok(()),
            (Some(_), Some(_)) => Err(ApiError::forbidden(format!("Cannot {verb} component owned by another user"))),
        }
    }
}

/// A refused or failed store call as Agno answers it.
fn refused(e: ComponentError) -> ApiError {
    match e {
        ComponentError::Refused(kind, message) => {
            let status = StatusCode::from_u16(kind.status()).unwrap_or(StatusCode::BAD_REQUEST);
            ApiError::new(status, message)
        }
        ComponentError::Db(e) => e.into(),
    }
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("Component {id} not found"))
}

/// Component `id` as `viewer` may see it.
async fn visible(db: &Arc<dyn Db>, viewer: &Viewer, id: &str, include_deleted: bool) -> ApiResult<ComponentRecord> {
    db.get_component(id, viewer.scope(), include_deleted).await?.ok_or_else(|| not_found(id))
}

/// Component `id` as a caller about to change it sees it (archived ones too with
/// `include_deleted`), with the caller and the database: 404 when they cannot see it, 403 when
/// it is not theirs (`verb`: what Agno's message says they tried).
async fn changeable<'a>(
    state: &'a crate::state::AppState,
    principal: &Principal,
    id: &str,
    verb: &str,
    include_deleted: bool,
) -> ApiResult<(Viewer, &'a Arc<dyn Db>, ComponentRecord)> {
    let viewer = Viewer::of(principal)?;
    let db = state.require_db()?;
    let c = visible(db, &viewer, id, include_deleted).await?;
    viewer.may_change(&c, verb)?;
    Ok((viewer, db, c))
}

/// Whether the caller may run catalog component `id` (a `kind`) at `version`, as Agno's
/// `allow_draft_preview` decides: a published version whoever sees the component may; a draft
/// only its owner (the token's `sub`) or an admin (everyone when auth is off). False also
/// when the caller does not see the component or the version is not stored (each answered as
/// the component's 404 by the run route).
///
/// # Errors
/// No database (400); a storage error; isolation on with a token naming no user (403).
pub(crate) async fn may_run_version(
    state: &crate::state::AppState,
    principal: &Principal,
    kind: agno_core::ComponentKind,
    id: &str,
    version: i64,
) -> ApiResult<bool> {
    let viewer = Viewer::of(principal)?;
    let db = state.require_db()?;
    let Some(c) = db.get_component(id, viewer.scope(), false).await? else { return Ok(false) };
    if c.component_type != kind.as_str() {
        return Ok(false);
    }
    let configs = db.component_configs(id, false).await?;
    let Some(config) = configs.iter().find(|cfg| cfg.version == version) else { return Ok(false) };
    let owner = principal.subject.is_some() && c.user_id == principal.subject;
    Ok(config.published() || principal.admin || owner)
}

/// The catalog components of `kind` with nothing published whose drafts the caller sees (owned,
/// or shared, or any for a privileged or unscoped caller), not defined by `agentos.toml`, each
/// with its latest version and whether that version names a model; `only`: just that id.
/// Nothing without a database.
///
/// # Errors
/// A storage error; isolation on with a token naming no user (403).
pub(crate) async fn draft_only(
    state: &crate::state::AppState,
    principal: &Principal,
    kind: agno_core::ComponentKind,
    only: Option<&str>,
) -> ApiResult<Vec<(String, i64, bool)>> {
    let (Some(db), Some(_)) = (&state.db, &state.published) else { return Ok(Vec::new()) };
    let viewer = Viewer::of(principal)?;
    let query = ComponentQuery {
        component_type: Some(kind.as_str().to_owned()),
        viewer: viewer.scope.clone(),
        ..ComponentQuery::default()
    };
    let (found, _) = db.list_components(&query).await?;
    let mut out = Vec::new();
    for c in found {
        let id = &c.component_id;
        if c.current_version.is_some() || state.configured(kind, id) || only.is_some_and(|o| o != id) {
            continue;
        }
        if !viewer.reads_drafts(&c) {
            continue;
        }
        let configs = db.component_configs(id, false).await?;
        if let Some(latest) = configs.iter().max_by_key(|cfg| cfg.version) {
            out.push((c.component_id.clone(), latest.version, latest.config.contains_key("model")));
        }
    }
    Ok(out)
}

/// An optional JSON body (empty: the default).
fn optional_body<T: Default + serde::de::DeserializeOwned + schemars::JsonSchema>(body: &Bytes) -> ApiResult<T> {
    if body.iter().all(u8::is_ascii_whitespace) { Ok(T::default()) } else { json_body(body) }
}

/// A `{version}` path segment, as FastAPI's int parsing answers one that is not.
fn version_of(raw: &str) -> ApiResult<i64> {
    raw.parse::<i64>().map_err(|_| {
        ApiError::unprocessable("Input should be a valid integer, unable to parse string as an integer")
            .with_type("int_parsing")
            .at("path", "version")
            .with_input(json!(raw))
    })
}

/// `config` as a caller who is not `c`'s owner may read it: its `db` reduced to its id, type and
/// table names (a scoped caller never learns another owner's database settings).
fn redacted(mut config: Value, viewer: &Viewer, c: &ComponentRecord) -> Value {
    if viewer.scope.is_none() || c.user_id == viewer.scope {
        return config;
    }
    if let Some(Value::Object(db)) = config.get_mut("config").and_then(|c| c.get_mut("db")) {
        db.retain(|k, _| k == "id" || k == "type" || k.ends_with("_table"));
    }
    config
}

/// A config as sent, with `"db": null` dropped (Agno removes it).
fn stored_config(mut config: Map<String, Value>) -> Map<String, Value> {
    if config.get("db").is_some_and(Value::is_null) {
        config.remove("db");
    }
    config
}

/// The ids of the components the OS serves from its configuration (of `kind`, or all): the
/// catalog leaves them out of its listing, as Agno leaves out its code-defined ones.
fn served_ids(state: &crate::state::AppState, kind: Option<&str>) -> Vec<String> {
    let mut ids = Vec::new();
    if kind.is_none_or(|k| k == "agent") {
        ids.extend(state.agents.iter().map(|a| a.agent.id().to_owned()));
    }
    if kind.is_none_or(|k| k == "team") {
        ids.extend(state.teams.iter().map(|t| t.id().to_owned()));
    }
    if kind.is_none_or(|k| k == "workflow") {
        ids.extend(state.workflows.iter().map(|w| w.id().to_owned()));
    }
    ids
}

/// After a catalog write: this replica serves what changed at once (others within their poll).
async fn serve_changes(state: &crate::state::AppState) {
    if let Some(published) = &state.published
        && let Err(e) = published.refresh().await
    {
        tracing::warn!(error = %e, "cannot read the component catalog after a write; the poll will pick it up");
    }
}

/// After an archive: every enabled schedule of any owner aimed at the component (its
/// `target_type`/`target_id`, or its run endpoint) is disabled with Agno's reason
/// (`target_archived:{type}:{id}`), since it could only fail. Agno does this in the archive's
/// transaction; here it follows it, and a failure is logged (the schedules would fail visibly).
async fn disable_schedules_of(db: &Arc<dyn Db>, component_type: &str, id: &str) {
    let endpoint = format!("/{component_type}s/{id}/runs");
    let query = agno_core::ScheduleQuery { enabled: Some(true), ..Default::default() };
    let schedules = match db.get_schedules(&query).await {
        Ok((schedules, _)) => schedules,
        Err(e) => {
            tracing::warn!(error = %e, component = %id, "cannot read the schedules of an archived component");
            return;
        }
    };
    let aimed = schedules.into_iter().filter(|s| {
        (s.target_type.as_deref() == Some(component_type) && s.target_id.as_deref() == Some(id))
            || s.endpoint.trim_end_matches('/') == endpoint
    });
    for s in aimed {
        let update = agno_core::ScheduleUpdate {
            enabled: Some(false),
            disabled_reason: Some(Some(format!("target_archived:{component_type}:{id}"))),
            ..Default::default()
        };
        if let Err(e) = db.update_schedule(&s.id, None, &update).await {
            tracing::warn!(error = %e, schedule = %s.id, "cannot disable a schedule of an archived component");
        }
    }
}

/// `GET /components`: a page of components, newest first.
pub async fn list_components(
    Caller { state, principal }: Caller,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<Value>> {
    if let Some(t) = &q.component_type {
        check_component_type(t, "query")?;
    }
    let paging = Paging::new(q.limit, q.page)?.at_most(100)?;
    let viewer = Viewer::of(&principal)?;
    let db = state.require_db()?;
    let query = ComponentQuery {
        exclude: served_ids(&state, q.component_type.as_deref()),
        component_type: q.component_type,
        include_deleted: q.include_deleted.unwrap_or(false),
        viewer: viewer.scope.clone(),
        name: None,
        limit: Some(paging.limit),
        page: Some(paging.page),
    };
    let (found, total) = db.list_components(&query).await?;
    Ok(paging.respond(found.iter().map(component_json).collect(), total))
}

/// `POST /components`: a component with its config version 1 (201).
pub async fn create_component(
    Caller { state, principal }: Caller,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let body: ComponentCreate = json_body(&body)?;
    check_component_type(&body.component_type, "body")?;
    let viewer = Viewer::of(&principal)?;
    let db = state.require_db()?;
    let id = match body.component_id {
        Some(id) => {
            check_id(&id)?;
            id
        }
        None => id_from_name(&body.name, viewer.scope()),
    };
    let config = stored_config(body.config.unwrap_or_default());
    let stage = body.stage.unwrap_or_else(|| "draft".to_owned());
    if stage == "published" {
        buildable::check(&state, &body.component_type, &id, &config).await?;
    }
    let target = links::Target { component_type: &body.component_type, id: &id, name: &body.name };
    let links = links::derive(&state, db, &target, &config, viewer.scope()).await?;
    let new = NewComponent {
        component_id: id,
        component_type: body.component_type,
        name: Some(body.name),
        description: body.description,
        metadata: body.metadata,
        user_id: viewer.scope.clone().or_else(|| principal.subject.clone()),
        config: ConfigWrite {
            config: Some(config),
            label: body.label,
            stage: Some(stage),
            notes: body.notes,
            links,
            ..Default::default()
        },
    };
    let (component, _) = db.create_component(&new, now_epoch_secs()).await.map_err(refused)?;
    serve_changes(&state).await;
    Ok((StatusCode::CREATED, Json(component_json(&component))))
}

/// `GET /components/{component_id}`.
pub async fn get_component(
    Caller { state, principal }: Caller,
    Path(id): Path<String>,
    Query(q): Query<GetQuery>,
) -> ApiResult<Json<Value>> {
    let viewer = Viewer::of(&principal)?;
    let c = visible(state.require_db()?, &viewer, &id, q.include_deleted.unwrap_or(false)).await?;
    Ok(Json(component_json(&c)))
}

/// `PATCH /components/{component_id}`: its name, description or metadata, or the version it
/// serves (a rollback).
pub async fn update_component(
    Caller { state, principal }: Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let body: ComponentUpdate = json_body(&body)?;
    let (viewer, db, _) = changeable(&state, &principal, &id, "modify", false).await?;
    let expected = body.guard.as_ref().map(Guard::current_only).transpose()?.flatten();
    let change = ComponentChange {
        name: body.name,
        description: body.description,
        metadata: body.metadata,
        component_type: body.component_type,
        current_version: body.current_version,
        expected_current_version: expected,
    };
    let c = db.update_component(&id, &change, viewer.scope(), now_epoch_secs()).await.map_err(refused)?;
    serve_changes(&state).await;
    Ok(Json(component_json(&c)))
}

/// `DELETE /components/{component_id}`: archives it (204), unless a live team or workflow links
/// to it.
pub async fn delete_component(
    Caller { state, principal }: Caller,
    Path(id): Path<String>,
    Query(q): Query<DeleteQuery>,
    body: Bytes,
) -> ApiResult<NoContent> {
    let body: GuardOnly = optional_body(&body)?;
    let from_body = body.guard.as_ref().map(Guard::current_only).transpose()?.flatten();
    let expected = match (q.expected_current_version, from_body) {
        (Some(a), Some(b)) if a != b => {
            return Err(ApiError::bad_request(
                "Conflicting guards: expected_current_version query param and guard.current_version disagree. Send \
                 one.",
            ));
        }
        (a, b) => a.or(b),
    };
    let (viewer, db, c) = changeable(&state, &principal, &id, "delete", false).await?;
    db.archive_component(&id, expected, viewer.scope(), now_epoch_secs()).await.map_err(refused)?;
    serve_changes(&state).await;
    disable_schedules_of(db, &c.component_type, &id).await;
    Ok(NoContent)
}

/// `POST /components/{component_id}/restore`.
pub async fn restore_component(Caller { state, principal }: Caller, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let (viewer, db, _) = changeable(&state, &principal, &id, "modify", true).await?;
    let c = db.restore_component(&id, viewer.scope(), now_epoch_secs()).await.map_err(refused)?;
    serve_changes(&state).await;
    Ok(Json(component_json(&c)))
}

/// `GET /components/{component_id}/configs`: its versions, newest first (another owner's
/// drafts left out).
pub async fn list_configs(
    Caller { state, principal }: Caller,
    Path(id): Path<String>,
    Query(q): Query<ConfigsQuery>,
) -> ApiResult<Json<Value>> {
    let viewer = Viewer::of(&principal)?;
    let db = state.require_db()?;
    let c = visible(db, &viewer, &id, false).await?;
    let drafts = viewer.reads_drafts(&c);
    let configs = db.component_configs(&id, false).await?;
    let with_config = q.include_config.unwrap_or(true);
    Ok(Json(Value::Array(
        configs
            .iter()
            .filter(|v| drafts || v.published())
            .map(|v| redacted(config_json(v, with_config), &viewer, &c))
            .collect(),
    )))
}

/// The links of a config write: the body's, else derived from a team's or workflow's config
/// (none when the write carries no config: the version keeps its links).
async fn write_links(
    state: &crate::state::AppState,
    db: &Arc<dyn Db>,
    c: &ComponentRecord,
    explicit: Option<&[Value]>,
    config: Option<&Map<String, Value>>,
    viewer: &Viewer,
) -> ApiResult<Option<Vec<agno_core::LinkSpec>>> {
    if let Some(raw) = explicit {
        let links = links_from_body(raw)?;
        for link in &links {
            if let Some(child) = db.get_component(&link.child_component_id, None, false).await?
                && !child.visible_to(viewer.scope())
            {
                return Err(not_found(&link.child_component_id));
            }
        }
        return Ok(Some(links));
    }
    match config {
        Some(config) => {
            let name = c.name.as_deref().unwrap_or(&c.component_id);
            let target = links::Target { component_type: &c.component_type, id: &c.component_id, name };
            links::derive(state, db, &target, config, viewer.scope()).await
        }
        None => Ok(None),
    }
}

/// `POST /components/{component_id}/configs`: a new version (201); `stage: "published"`
/// publishes it at once.
pub async fn create_config(
    Caller { state, principal }: Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let body: ConfigCreate = json_body(&body)?;
    let (viewer, db, c) = changeable(&state, &principal, &id, "modify", false).await?;
    let expected = body.guard.as_ref().map(Guard::latest_only).transpose()?.flatten();
    let config = stored_config(body.config);
    let stage = body.stage.unwrap_or_else(|| "draft".to_owned());
    if stage == "published" {
        buildable::check(&state, &c.component_type, &id, &config).await?;
    }
    let links = write_links(&state, db, &c, body.links.as_deref(), Some(&config), &viewer).await?;
    let write = ConfigWrite {
        version: None,
        config: Some(config),
        label: body.label,
        stage: Some(stage),
        notes: body.notes,
        links,
        expected_latest_version: expected,
    };
    let written = db.write_config(&id, &write, viewer.scope(), now_epoch_secs()).await.map_err(refused)?;
    serve_changes(&state).await;
    Ok((StatusCode::CREATED, Json(config_json(&written, true))))
}

/// `PATCH /components/{component_id}/configs/{version}`: edits a draft; `stage: "published"`
/// publishes it.
pub async fn update_config(
    Caller { state, principal }: Caller,
    Path((id, version)): Path<(String, String)>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let version = version_of(&version)?;
    let body: ConfigUpdate = json_body(&body)?;
    let (viewer, db, c) = changeable(&state, &principal, &id, "modify", false).await?;
    let expected = body.guard.as_ref().map(Guard::latest_only).transpose()?.flatten();
    let config = body.config.map(stored_config);
    if body.stage.as_deref() == Some("published") {
        let stored = match &config {
            Some(config) => Some(config.clone()),
            None => {
                db.component_configs(&id, false).await?.into_iter().find(|v| v.version == version).map(|v| v.config)
            }
        };
        // A version that does not exist is the store's to refuse.
        if let Some(stored) = stored {
            buildable::check(&state, &c.component_type, &id, &stored).await?;
        }
    }
    let links = write_links(&state, db, &c, body.links.as_deref(), config.as_ref(), &viewer).await?;
    let write = ConfigWrite {
        version: Some(version),
        config,
        label: body.label,
        stage: body.stage,
        notes: body.notes,
        links,
        expected_latest_version: expected,
    };
    // A version that does not exist is a 400 here, as Agno answers it (its store raises a
    // ValueError).
    let written = db.write_config(&id, &write, viewer.scope(), now_epoch_secs()).await.map_err(|e| match e {
        ComponentError::Refused(agno_core::ComponentErrorKind::NotFound, message) => ApiError::bad_request(message),
        other => refused(other),
    })?;
    serve_changes(&state).await;
    Ok(Json(config_json(&written, true)))
}

/// `GET /components/{component_id}/configs/current`: the served version, else the latest draft.
pub async fn get_current_config(Caller { state, principal }: Caller, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let viewer = Viewer::of(&principal)?;
    let db = state.require_db()?;
    let c = visible(db, &viewer, &id, false).await?;
    let configs = db.component_configs(&id, false).await?;
    let current = ConfigChoice::CurrentOrLatest
        .pick(&configs, c.current_version)
        .ok_or_else(|| ApiError::not_found(format!("No current config for {id}")))?;
    Ok(Json(redacted(config_json(current, true), &viewer, &c)))
}

/// `GET /components/{component_id}/configs/{version}`.
pub async fn get_config(
    Caller { state, principal }: Caller,
    Path((id, version)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let version = version_of(&version)?;
    let viewer = Viewer::of(&principal)?;
    let db = state.require_db()?;
    let c = visible(db, &viewer, &id, false).await?;
    let configs = db.component_configs(&id, false).await?;
    let found = ConfigChoice::Version(version)
        .pick(&configs, c.current_version)
        .filter(|v| v.published() || viewer.reads_drafts(&c))
        .ok_or_else(|| ApiError::not_found(format!("Config {id} v{version} not found")))?;
    Ok(Json(redacted(config_json(found, true), &viewer, &c)))
}

/// `DELETE /components/{component_id}/configs/{version}`: deletes a draft (204).
pub async fn delete_config(
    Caller { state, principal }: Caller,
    Path((id, version)): Path<(String, String)>,
) -> ApiResult<NoContent> {
    let version = version_of(&version)?;
    let (viewer, db, _) = changeable(&state, &principal, &id, "delete", false).await?;
    db.delete_config(&id, version, viewer.scope(), now_epoch_secs()).await.map_err(refused)?;
    Ok(NoContent)
}

/// `POST /components/{component_id}/configs/{version}/set-current`: serves that published
/// version (a rollback to an older one).
pub async fn set_current_config(
    Caller { state, principal }: Caller,
    Path((id, version)): Path<(String, String)>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let version = version_of(&version)?;
    let body: GuardOnly = optional_body(&body)?;
    let expected = body.guard.as_ref().map(Guard::current_only).transpose()?.flatten();
    let (viewer, db, _) = changeable(&state, &principal, &id, "modify", false).await?;
    let c = db.set_current_config(&id, version, expected, viewer.scope(), now_epoch_secs()).await.map_err(refused)?;
    serve_changes(&state).await;
    Ok(Json(component_json(&c)))
}
