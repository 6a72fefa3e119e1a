//! Components kept in the database (Agno's "Studio" catalog): agents, teams and workflows whose
//! configs are versioned rows, as Python Agno 3.1 stores them in `agno_components`,
//! `agno_component_configs` and `agno_component_links`, with its rules.
//!
//! A component has config versions numbered from 1 (never reused: a deleted draft is a tombstone,
//! stage `_deleted`). A version is a `draft` (editable) or `published` (immutable); the
//! component's `current_version` is the published version that is served. A team's or a
//! workflow's version pins its members' and steps' versions in links, so publishing a new
//! version of a member changes nothing for its parents until they are republished. Archiving
//! (`deleted_at`) is soft and keeps the id reserved; `restore` undoes it.
//!
//! Every write is one [`ComponentStore`] call that either applies whole or changes nothing, and
//! its refusals are [`ComponentError`]s of the kinds Agno raises.

pub mod catalog;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use catalog::{CatalogPlan, Written};

/// A config version that can still be edited.
pub const STAGE_DRAFT: &str = "draft";
/// A config version that is immutable and may be served.
pub const STAGE_PUBLISHED: &str = "published";
/// The stage of a deleted config version (a tombstone: its number is never reused).
pub const STAGE_DELETED: &str = "_deleted";
/// The link kinds that pin a child's version (Agno's `PIN_LINK_KINDS`).
pub const PIN_LINK_KINDS: [&str; 4] = ["member", "step_agent", "step_team", "step_workflow"];

/// The kinds of components (Agno's `ComponentType`).
pub const COMPONENT_TYPES: [&str; 3] = ["agent", "team", "workflow"];

/// One row of `agno_components`, with Agno's keys (epoch seconds for times).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentRecord {
    /// The component's id (its agent, team or workflow id when served).
    pub component_id: String,
    /// `agent`, `team` or `workflow` (fixed at creation).
    pub component_type: String,
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
    /// The owner (none: shared with every user).
    #[serde(default)]
    pub user_id: Option<String>,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// The published version served (none: nothing published yet).
    #[serde(default)]
    pub current_version: Option<i64>,
    /// Free metadata.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// Creation time.
    pub created_at: i64,
    /// Last change.
    #[serde(default)]
    pub updated_at: Option<i64>,
    /// When it was archived (none: live).
    #[serde(default)]
    pub deleted_at: Option<i64>,
}

impl ComponentRecord {
    /// Whether the component is archived.
    pub fn archived(&self) -> bool {
        self.deleted_at.is_some()
    }

    /// Whether a caller scoped to `viewer` (none: unscoped, sees everything) may read it: their
    /// own, an unowned (shared) one, or one that is published and live (Agno's catalog
    /// visibility).
    pub fn visible_to(&self, viewer: Option<&str>) -> bool {
        let Some(viewer) = viewer else { return true };
        match self.user_id.as_deref() {
            None => true,
            Some(owner) if owner == viewer => true,
            Some(_) => self.current_version.is_some() && !self.archived(),
        }
    }

    /// Whether a reader scoped to `viewer` gets it: visible to them, and live unless
    /// `include_deleted`.
    pub fn readable(&self, viewer: Option<&str>, include_deleted: bool) -> bool {
        self.visible_to(viewer) && (include_deleted || !self.archived())
    }

    /// Whether a caller scoped to `owner` (none: unscoped) may change it: only its owner.
    pub fn writable_by(&self, owner: Option<&str>) -> bool {
        owner.is_none_or(|o| self.user_id.as_deref() == Some(o))
    }
}

/// One row of `agno_component_configs`: a version of a component's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentConfig {
    /// The component.
    pub component_id: String,
    /// The version, from 1.
    pub version: i64,
    /// A label unique among the component's versions (`stable`, `v1.2.0`).
    #[serde(default)]
    pub label: Option<String>,
    /// [`STAGE_DRAFT`], [`STAGE_PUBLISHED`] or [`STAGE_DELETED`].
    pub stage: String,
    /// The config (an agent's, team's or workflow's settings, as Agno's `to_dict` writes them).
    pub config: Map<String, Value>,
    /// Notes.
    #[serde(default)]
    pub notes: Option<String>,
    /// Creation time.
    pub created_at: i64,
    /// Last change.
    #[serde(default)]
    pub updated_at: Option<i64>,
}

impl ComponentConfig {
    /// Whether the version is published.
    pub fn published(&self) -> bool {
        self.stage == STAGE_PUBLISHED
    }

    /// Whether the version was deleted (a tombstone).
    pub fn deleted(&self) -> bool {
        self.stage == STAGE_DELETED
    }
}

/// One row of `agno_component_links`: a version of a team or workflow pinning a child component
/// at a version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentLink {
    /// The team or workflow.
    pub parent_component_id: String,
    /// Its version that holds the link.
    pub parent_version: i64,
    /// `member`, `step_agent`, `step_team`, `step_workflow` (others pass through).
    pub link_kind: String,
    /// The link's key within the parent version (`member_0`, a step's id or name).
    pub link_key: String,
    /// The child component.
    pub child_component_id: String,
    /// The child's pinned version.
    #[serde(default)]
    pub child_version: Option<i64>,
    /// Order among the parent version's links.
    pub position: i64,
    /// Free data (`{"type": "agent"}` for a team member).
    #[serde(default)]
    pub meta: Option<Value>,
    /// Creation time.
    #[serde(default)]
    pub created_at: Option<i64>,
    /// Last change.
    #[serde(default)]
    pub updated_at: Option<i64>,
}

impl ComponentLink {
    /// Whether the link pins its child's version ([`PIN_LINK_KINDS`]).
    pub fn pins(&self) -> bool {
        PIN_LINK_KINDS.contains(&self.link_kind.as_str())
    }
}

/// A link as a write gives it (the parent is the version being written).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkSpec {
    /// See [`ComponentLink::link_kind`].
    pub link_kind: String,
    /// See [`ComponentLink::link_key`].
    pub link_key: String,
    /// See [`ComponentLink::child_component_id`].
    pub child_component_id: String,
    /// See [`ComponentLink::child_version`].
    pub child_version: i64,
    /// See [`ComponentLink::position`].
    pub position: i64,
    /// See [`ComponentLink::meta`].
    #[serde(default)]
    pub meta: Option<Value>,
}

/// A component created with its first config version (`POST /components`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewComponent {
    /// Its id (free: even an archived component's id stays taken).
    pub component_id: String,
    /// `agent`, `team` or `workflow`.
    pub component_type: String,
    /// Display name (default: the id).
    pub name: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Metadata.
    pub metadata: Option<Map<String, Value>>,
    /// The owner (none: shared).
    pub user_id: Option<String>,
    /// Version 1.
    pub config: ConfigWrite,
}

/// A config version written: appended (`version` none) or a draft edited.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigWrite {
    /// The draft to edit (none: append a new version).
    pub version: Option<i64>,
    /// The config (required to append; none leaves an edited draft's as it is).
    pub config: Option<Map<String, Value>>,
    /// A label.
    pub label: Option<String>,
    /// `draft` (default for a new version) or `published` (publishes it: it becomes current).
    pub stage: Option<String>,
    /// Notes.
    pub notes: Option<String>,
    /// The version's links (none: an appended version has none, an edited one keeps its own).
    pub links: Option<Vec<LinkSpec>>,
    /// The version the writer expects to be the latest (a stale writer is refused).
    pub expected_latest_version: Option<i64>,
}

/// A change of a component's row (`PATCH /components/{id}`); none leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ComponentChange {
    /// Display name.
    pub name: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Metadata.
    pub metadata: Option<Map<String, Value>>,
    /// Must be the component's own (a type never changes).
    pub component_type: Option<String>,
    /// A published version to serve (a rollback); the row then takes that version's identity
    /// (name, description, metadata) where this change does not set them.
    pub current_version: Option<i64>,
    /// The version the writer expects to be current (`Some(0)`: none published).
    pub expected_current_version: Option<i64>,
}

/// What a listing of components asks for (`GET /components`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ComponentQuery {
    /// Only this type.
    pub component_type: Option<String>,
    /// Include archived components.
    pub include_deleted: bool,
    /// The caller's scope: only what they may see (see [`ComponentRecord::visible_to`]).
    pub viewer: Option<String>,
    /// Ids to leave out (components the OS serves from its own configuration).
    pub exclude: Vec<String>,
    /// Only components with exactly this name.
    pub name: Option<String>,
    /// Page size.
    pub limit: Option<usize>,
    /// Page, from 1.
    pub page: Option<usize>,
}

impl ComponentQuery {
    /// Whether `c` is listed.
    pub fn matches(&self, c: &ComponentRecord) -> bool {
        self.component_type.as_ref().is_none_or(|t| &c.component_type == t)
            && (self.include_deleted || !c.archived())
            && c.visible_to(self.viewer.as_deref())
            && !self.exclude.contains(&c.component_id)
            && self.name.as_ref().is_none_or(|n| c.name.as_ref() == Some(n))
    }
}

/// Why a component write was refused (Agno's `Component*Error`s and `ValueError`s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComponentErrorKind {
    /// The component or version does not exist (or the caller may not see it).
    NotFound,
    /// The write is invalid (a bad stage, a label taken, a published version edited, ...).
    Invalid,
    /// Only a draft may be deleted (`ComponentDraftRequiredError`).
    DraftRequired,
    /// A guard saw another version, or a concurrent append took the number
    /// (`ComponentVersionConflictError`).
    VersionConflict,
    /// The component is archived (`ComponentArchivedError`).
    Archived,
    /// Another component depends on it, or it pins a child that is not publishable
    /// (`ComponentDependencyError`).
    Dependency,
    /// The links would close a cycle (`ComponentCycleError`).
    Cycle,
    /// The last config of a component cannot be deleted (`ComponentLastConfigError`).
    LastConfig,
    /// Restoring a component that is not archived.
    NotArchived,
}

impl ComponentErrorKind {
    /// The HTTP status Agno answers with.
    pub fn status(self) -> u16 {
        match self {
            Self::NotFound => 404,
            Self::Invalid | Self::DraftRequired => 400,
            _ => 409,
        }
    }
}

/// A refused or failed component write.
#[derive(Debug, thiserror::Error)]
pub enum ComponentError {
    /// A rule refused it; nothing changed.
    #[error("{1}")]
    Refused(ComponentErrorKind, String),
    /// The storage failed; nothing changed.
    #[error(transparent)]
    Db(#[from] crate::DbError),
}

impl ComponentError {
    /// A refusal of `kind`.
    pub fn refused(kind: ComponentErrorKind, message: impl Into<String>) -> Self {
        Self::Refused(kind, message.into())
    }

    /// The refusal's kind (none: a storage failure).
    pub fn kind(&self) -> Option<ComponentErrorKind> {
        match self {
            Self::Refused(kind, _) => Some(*kind),
            Self::Db(_) => None,
        }
    }
}

/// The row fields a config version sets on its component when it becomes the served one
/// (Agno's `project_config_identity`): `name` when the config has one, `description` when it has
/// the key (empty when null), `metadata` when it is an object, unless it only holds Studio's
/// provenance stamp (`studio`) and the config does not say it authored it.
pub fn config_identity(config: &Map<String, Value>) -> ComponentChange {
    let mut change = ComponentChange::default();
    if let Some(name) = config.get("name").filter(|v| !v.is_null()) {
        change.name = Some(name.as_str().map_or_else(|| name.to_string(), str::to_owned));
    }
    if let Some(description) = config.get("description") {
        change.description = Some(match description {
            Value::Null => String::new(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    }
    if let Some(Value::Object(metadata)) = config.get("metadata") {
        let stamp_only = !metadata.is_empty() && metadata.keys().all(|k| k == "studio");
        let authored = config.get("metadata_authored").is_some_and(truthy);
        if authored || !stamp_only {
            change.metadata = Some(metadata.clone());
        }
    }
    change
}

/// Python's truthiness of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Which version of a component's configs a reader wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigChoice {
    /// That version (not a tombstone).
    Version(i64),
    /// The version with that label.
    Label(String),
    /// The published current version only.
    Current,
    /// The current version, else the latest version (a draft), as Agno's `get_config` without
    /// arguments.
    CurrentOrLatest,
}

impl ConfigChoice {
    /// The version `configs` (a component's, any order) hold for this choice, given the
    /// component's current version.
    pub fn pick<'a>(&self, configs: &'a [ComponentConfig], current: Option<i64>) -> Option<&'a ComponentConfig> {
        let live = || configs.iter().filter(|c| !c.deleted());
        let at = |v: i64| live().find(|c| c.version == v);
        match self {
            Self::Version(v) => at(*v),
            Self::Label(l) => live().find(|c| c.label.as_deref() == Some(l.as_str())),
            Self::Current => current.and_then(at),
            Self::CurrentOrLatest => current.and_then(at).or_else(|| live().max_by_key(|c| c.version)),
        }
    }
}

/// Where components, their config versions and their links are kept.
///
/// An adapter implements one write, [`ComponentStore::change_catalog`], and four reads; every
/// write's rules are [`catalog`]'s, planned once for every adapter.
#[async_trait::async_trait]
pub trait ComponentStore: Send + Sync {
    /// Reads the catalog as one transaction sees it (`target`'s config versions whole, the
    /// others' at least with their stage), runs `plan` over it, and applies the change it returns
    /// in that transaction, serialised with every other catalog write of any process sharing the
    /// database. What `plan` answers, or its refusal (nothing applied then).
    ///
    /// # Errors
    /// The plan's [`ComponentError`], or a storage failure (nothing applied).
    async fn change_catalog(&self, target: &str, plan: CatalogPlan) -> Result<Written, ComponentError>;

    /// A component, if `viewer` may see it (see [`ComponentRecord::visible_to`]); an archived one
    /// only with `include_deleted`.
    ///
    /// # Errors
    /// A [`crate::DbError`].
    async fn get_component(
        &self,
        id: &str,
        viewer: Option<&str>,
        include_deleted: bool,
    ) -> crate::DbResult<Option<ComponentRecord>>;

    /// A page of components, newest first (then by id), and how many match.
    ///
    /// # Errors
    /// A [`crate::DbError`].
    async fn list_components(&self, query: &ComponentQuery) -> crate::DbResult<(Vec<ComponentRecord>, u64)>;

    /// A component's config versions, newest first (tombstones only with `include_deleted`).
    ///
    /// # Errors
    /// A [`crate::DbError`].
    async fn component_configs(&self, id: &str, include_deleted: bool) -> crate::DbResult<Vec<ComponentConfig>>;

    /// The links of a component's version, by position.
    ///
    /// # Errors
    /// A [`crate::DbError`].
    async fn component_links(&self, id: &str, version: i64) -> crate::DbResult<Vec<ComponentLink>>;

    /// Push notifications of catalog writes (the id each write was about), for stores that have
    /// them (PostgreSQL `LISTEN`): a hint to read the catalog again, sent when the write commits.
    /// `None`: readers rely on polling.
    ///
    /// # Errors
    /// A [`crate::DbError`] when the subscription cannot be made.
    async fn catalog_changes(&self) -> crate::DbResult<Option<futures::stream::BoxStream<'static, String>>> {
        Ok(None)
    }

    /// Creates a component with its config version 1 (and that version's links); a `published`
    /// version 1 is current at once.
    ///
    /// # Errors
    /// A [`ComponentError`]: the id taken (even by an archived component), a bad stage or type,
    /// links that close a cycle or pin an unpublished child of a published version; nothing
    /// written.
    async fn create_component(
        &self,
        new: &NewComponent,
        now: i64,
    ) -> Result<(ComponentRecord, ComponentConfig), ComponentError> {
        let new = new.clone();
        let id = new.component_id.clone();
        match self.change_catalog(&id, Arc::new(move |c| catalog::create(c, &new, now))).await? {
            Written::Created(component, config) => Ok((component, config)),
            other => Err(unexpected(&other)),
        }
    }

    /// Changes a component's row (and, with `current_version`, what it serves). `owner`: the
    /// caller's scope (only the owner may write; none: unscoped).
    ///
    /// # Errors
    /// A [`ComponentError`]; nothing changed then.
    async fn update_component(
        &self,
        id: &str,
        change: &ComponentChange,
        owner: Option<&str>,
        now: i64,
    ) -> Result<ComponentRecord, ComponentError> {
        let (key, change, owner) = (id.to_owned(), change.clone(), owner.map(str::to_owned));
        component(
            self.change_catalog(id, Arc::new(move |c| catalog::update(c, &key, &change, owner.as_deref(), now)))
                .await?,
        )
    }

    /// Archives a component (soft: its configs and links stay, its id stays taken), unless a live
    /// team or workflow still links to it.
    ///
    /// # Errors
    /// A [`ComponentError`] (`NotFound` when missing or archived already); nothing changed then.
    async fn archive_component(
        &self,
        id: &str,
        expected_current_version: Option<i64>,
        owner: Option<&str>,
        now: i64,
    ) -> Result<ComponentRecord, ComponentError> {
        let (key, owner) = (id.to_owned(), owner.map(str::to_owned));
        let plan =
            move |c: &catalog::Catalog| catalog::archive(c, &key, expected_current_version, owner.as_deref(), now);
        component(self.change_catalog(id, Arc::new(plan)).await?)
    }

    /// Restores an archived component.
    ///
    /// # Errors
    /// A [`ComponentError`] (`NotArchived` when it is live); nothing changed then.
    async fn restore_component(
        &self,
        id: &str,
        owner: Option<&str>,
        now: i64,
    ) -> Result<ComponentRecord, ComponentError> {
        let (key, owner) = (id.to_owned(), owner.map(str::to_owned));
        component(self.change_catalog(id, Arc::new(move |c| catalog::restore(c, &key, owner.as_deref(), now))).await?)
    }

    /// Appends a config version or edits a draft; a write whose stage is `published` publishes
    /// the version (it becomes current and gives the component its identity).
    ///
    /// # Errors
    /// A [`ComponentError`]; nothing changed then.
    async fn write_config(
        &self,
        id: &str,
        write: &ConfigWrite,
        owner: Option<&str>,
        now: i64,
    ) -> Result<ComponentConfig, ComponentError> {
        let (key, write, owner) = (id.to_owned(), write.clone(), owner.map(str::to_owned));
        let plan = move |c: &catalog::Catalog| catalog::write_config(c, &key, &write, owner.as_deref(), now);
        match self.change_catalog(id, Arc::new(plan)).await? {
            Written::Config(config) => Ok(config),
            other => Err(unexpected(&other)),
        }
    }

    /// Deletes a draft version (a tombstone: its number is never reused, its label is freed).
    ///
    /// # Errors
    /// A [`ComponentError`]: published, the last one, pinned by a live parent; nothing changed.
    async fn delete_config(&self, id: &str, version: i64, owner: Option<&str>, now: i64) -> Result<(), ComponentError> {
        let (key, owner) = (id.to_owned(), owner.map(str::to_owned));
        let plan = move |c: &catalog::Catalog| catalog::delete_config(c, &key, version, owner.as_deref(), now);
        self.change_catalog(id, Arc::new(plan)).await.map(|_| ())
    }

    /// Serves published `version` (a publish of an older one is a rollback); the component takes
    /// its identity.
    ///
    /// # Errors
    /// A [`ComponentError`]; nothing changed then.
    async fn set_current_config(
        &self,
        id: &str,
        version: i64,
        expected_current_version: Option<i64>,
        owner: Option<&str>,
        now: i64,
    ) -> Result<ComponentRecord, ComponentError> {
        let (key, owner) = (id.to_owned(), owner.map(str::to_owned));
        let plan = move |c: &catalog::Catalog| {
            catalog::set_current(c, &key, version, expected_current_version, owner.as_deref(), now)
        };
        component(self.change_catalog(id, Arc::new(plan)).await?)
    }
}

/// The component row a write answered with.
fn component(written: Written) -> Result<ComponentRecord, ComponentError> {
    match written {
        Written::Component(c) => Ok(c),
        other => Err(unexpected(&other)),
    }
}

/// An adapter answered a plan with another plan's answer.
fn unexpected(written: &Written) -> ComponentError {
    ComponentError::Db(crate::DbError::new(
        crate::DbErrorKind::Other,
        format!("the catalog write answered {written:?}, not what its plan answers"),
    ))
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn the_identity_of_a_config_follows_agnos_projection() {
        let full = config_identity(&object(json!({"name": "A", "description": null, "metadata": {"k": 1}})));
        assert_eq!(full.name.as_deref(), Some("A"));
        assert_eq!(full.description.as_deref(), Some(""));
        assert_eq!(full.metadata, Some(object(json!({"k": 1}))));
        let stamp = config_identity(&object(json!({"metadata": {"studio": {"by": "u"}}})));
        assert_eq!((stamp.name, stamp.description, stamp.metadata), (None, None, None));
        let authored = config_identity(&object(json!({"metadata": {"studio": {}}, "metadata_authored": true})));
        assert!(authored.metadata.is_some());
        assert_eq!(config_identity(&object(json!({"metadata": {}}))).metadata, Some(Map::new()));
        assert_eq!(config_identity(&object(json!({"metadata": [1]}))).metadata, None);
    }

    #[test]
    fn visibility_is_own_shared_or_published_and_live() {
        let mut c = ComponentRecord {
            component_id: "a".into(),
            component_type: "agent".into(),
            name: None,
            user_id: Some("ann".into()),
            description: None,
            current_version: None,
            metadata: None,
            created_at: 1,
            updated_at: None,
            deleted_at: None,
        };
        assert!(c.visible_to(None) && c.visible_to(Some("ann")) && !c.visible_to(Some("bob")));
        c.current_version = Some(1);
        assert!(c.visible_to(Some("bob")) && !c.writable_by(Some("bob")));
        c.deleted_at = Some(2);
        assert!(!c.visible_to(Some("bob")) && c.visible_to(Some("ann")));
        c.user_id = None;
        assert!(c.visible_to(Some("bob")) && !c.writable_by(Some("bob")) && c.writable_by(None));
    }

    #[test]
    fn a_choice_picks_current_label_version_or_the_latest_draft() {
        let config = |version, stage: &str, label: Option<&str>| ComponentConfig {
            component_id: "a".into(),
            version,
            label: label.map(str::to_owned),
            stage: stage.into(),
            config: Map::new(),
            notes: None,
            created_at: 1,
            updated_at: None,
        };
        let configs =
            [config(1, STAGE_PUBLISHED, Some("stable")), config(2, STAGE_DRAFT, None), config(3, STAGE_DELETED, None)];
        let version = |c: Option<&ComponentConfig>| c.map(|c| c.version);
        assert_eq!(version(ConfigChoice::Current.pick(&configs, Some(1))), Some(1));
        assert_eq!(version(ConfigChoice::Current.pick(&configs, None)), None);
        assert_eq!(version(ConfigChoice::CurrentOrLatest.pick(&configs, None)), Some(2));
        assert_eq!(version(ConfigChoice::Label("stable".into()).pick(&configs, None)), Some(1));
        assert_eq!(version(ConfigChoice::Version(3).pick(&configs, None)), None);
    }
}
