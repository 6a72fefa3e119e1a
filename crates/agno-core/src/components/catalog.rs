//! The rules of every catalog write, written once: each write is planned over a [`Catalog`] (the
//! rows as one transaction sees them) into a [`CatalogChange`] (the rows to put), which an
//! adapter applies in the same transaction. Messages are Agno's, word for word.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::{
    COMPONENT_TYPES, ComponentChange, ComponentConfig, ComponentError, ComponentErrorKind as Kind, ComponentLink,
    ComponentRecord, ConfigWrite, LinkSpec, NewComponent, STAGE_DELETED, STAGE_DRAFT, STAGE_PUBLISHED, config_identity,
};

/// The catalog as a write sees it: every component, every config version (the written
/// component's whole; the others' may come without their `config`, which no rule reads), and
/// every link.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    components: BTreeMap<String, ComponentRecord>,
    configs: BTreeMap<(String, i64), ComponentConfig>,
    links: Vec<ComponentLink>,
}

/// A row to write: inserted when `new`, else replacing the row with its key.
#[derive(Debug, Clone, PartialEq)]
pub struct Put<T> {
    /// The row.
    pub row: T,
    /// Whether the row is new (an insert: a row with its key is a lost race).
    pub new: bool,
}

/// The links of one parent version, replacing what it had.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSet {
    /// The parent component.
    pub parent: String,
    /// Its version.
    pub version: i64,
    /// Its links now (none: it has none left).
    pub links: Vec<ComponentLink>,
}

/// What a catalog write changes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CatalogChange {
    /// Component rows.
    pub components: Vec<Put<ComponentRecord>>,
    /// Config rows.
    pub configs: Vec<Put<ComponentConfig>>,
    /// Link sets replaced.
    pub links: Vec<LinkSet>,
}

/// What a catalog write answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Written {
    /// A component row, as written.
    Component(ComponentRecord),
    /// A config version, as written.
    Config(ComponentConfig),
    /// A new component and its first version.
    Created(ComponentRecord, ComponentConfig),
    /// Nothing to answer.
    Nothing,
}

/// A planned catalog write, run by [`super::ComponentStore::change_catalog`] over the catalog as
/// its transaction sees it (an adapter that retries a lost race runs it again).
pub type CatalogPlan = Arc<dyn Fn(&Catalog) -> Result<(CatalogChange, Written), ComponentError> + Send + Sync>;

impl Catalog {
    /// The catalog holding these rows.
    pub fn from_rows(
        components: impl IntoIterator<Item = ComponentRecord>,
        configs: impl IntoIterator<Item = ComponentConfig>,
        links: impl IntoIterator<Item = ComponentLink>,
    ) -> Self {
        Self {
            components: components.into_iter().map(|c| (c.component_id.clone(), c)).collect(),
            configs: configs.into_iter().map(|c| ((c.component_id.clone(), c.version), c)).collect(),
            links: links.into_iter().collect(),
        }
    }

    /// The component `id`.
    pub fn component(&self, id: &str) -> Option<&ComponentRecord> {
        self.components.get(id)
    }

    /// Config version `version` of `id`, tombstones included.
    pub fn config(&self, id: &str, version: i64) -> Option<&ComponentConfig> {
        self.configs.get(&(id.to_owned(), version))
    }

    fn configs_of<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a ComponentConfig> + 'a {
        self.configs.values().filter(move |c| c.component_id == id)
    }

    fn latest_visible(&self, id: &str) -> Option<i64> {
        self.configs_of(id).filter(|c| !c.deleted()).map(|c| c.version).max()
    }

    fn links_of(&self, parent: &str, version: i64) -> Vec<&ComponentLink> {
        let mut links: Vec<_> =
            self.links.iter().filter(|l| l.parent_component_id == parent && l.parent_version == version).collect();
        links.sort_by_key(|l| l.position);
        links
    }

    /// Whether `link`'s parent is live: its component not archived, its version not deleted.
    fn parent_active(&self, link: &ComponentLink) -> bool {
        self.component(&link.parent_component_id).is_some_and(|p| !p.archived())
            && self.config(&link.parent_component_id, link.parent_version).is_some_and(|c| !c.deleted())
    }

    /// The live parents pinning `id` (at `version`, when given), sorted, once each; with `owner`,
    /// only the parents it owns or that are shared.
    fn active_parents(&self, id: &str, version: Option<i64>, owner: Option<&str>) -> Vec<String> {
        let parents: BTreeSet<String> = self
            .links
            .iter()
            .filter(|l| l.child_component_id == id && version.is_none_or(|v| l.child_version == Some(v)))
            .filter(|l| self.parent_active(l))
            .filter(|l| {
                owner.is_none_or(|o| {
                    self.component(&l.parent_component_id).is_some_and(|p| p.user_id.as_deref().is_none_or(|u| u == o))
                })
            })
            .map(|l| l.parent_component_id.clone())
            .collect();
        parents.into_iter().collect()
    }

    /// The archived children linked from `id`'s `version`, sorted, once each.
    fn archived_children(&self, id: &str, version: i64) -> Vec<String> {
        let children: BTreeSet<String> = self
            .links_of(id, version)
            .into_iter()
            .filter(|l| self.component(&l.child_component_id).is_some_and(ComponentRecord::archived))
            .map(|l| l.child_component_id.clone())
            .collect();
        children.into_iter().collect()
    }
}

/// Python's `str()` of an optional version.
fn py(v: Option<i64>) -> String {
    v.map_or_else(|| "None".to_owned(), |v| v.to_string())
}

fn refused<T>(kind: Kind, message: String) -> Result<T, ComponentError> {
    Err(ComponentError::Refused(kind, message))
}

fn not_found(id: &str) -> ComponentError {
    ComponentError::Refused(Kind::NotFound, format!("Component {id} not found"))
}

/// The component `id` that `owner` may write: live and theirs.
fn writable<'a>(cat: &'a Catalog, id: &str, owner: Option<&str>) -> Result<&'a ComponentRecord, ComponentError> {
    let c = cat.component(id).filter(|c| c.writable_by(owner)).ok_or_else(|| not_found(id))?;
    if c.archived() {
        return refused(
            Kind::Archived,
            format!("Component {id} is archived; restore it explicitly before writing to it"),
        );
    }
    Ok(c)
}

fn check_stage(stage: &str) -> Result<(), ComponentError> {
    if stage == STAGE_DRAFT || stage == STAGE_PUBLISHED {
        return Ok(());
    }
    refused(Kind::Invalid, format!("Invalid stage: {stage}"))
}

fn check_type(t: &str) -> Result<(), ComponentError> {
    if COMPONENT_TYPES.contains(&t) {
        return Ok(());
    }
    refused(Kind::Invalid, format!("'{t}' is not a valid ComponentType"))
}

/// Agno's current-version guard: `0` expects nothing published.
fn check_current(c: &ComponentRecord, expected: Option<i64>) -> Result<(), ComponentError> {
    let Some(expected) = expected else { return Ok(()) };
    let matches = if expected == 0 { c.current_version.is_none() } else { c.current_version == Some(expected) };
    if matches {
        return Ok(());
    }
    refused(
        Kind::VersionConflict,
        format!("Component {} current version is {}, expected {expected}", c.component_id, py(c.current_version)),
    )
}

/// Refuses links to itself, to archived components, and links that would close a cycle.
fn check_links(cat: &Catalog, parent: &str, links: &[LinkSpec]) -> Result<(), ComponentError> {
    let children: BTreeSet<&str> = links.iter().map(|l| l.child_component_id.as_str()).collect();
    if children.contains(parent) {
        return refused(Kind::Cycle, format!("Component {parent} cannot reference itself"));
    }
    for child in &children {
        if cat.component(child).is_some_and(ComponentRecord::archived) {
            return refused(Kind::Archived, format!("Cannot link {parent} to archived component {child}"));
        }
    }
    let mut seen = BTreeSet::new();
    let mut frontier: Vec<&str> = children.into_iter().collect();
    while let Some(node) = frontier.pop() {
        if !seen.insert(node) {
            continue;
        }
        for link in cat.links.iter().filter(|l| l.parent_component_id == node) {
            if link.child_component_id == parent {
                return refused(Kind::Cycle, format!("Linking {parent} -> {node} would close a reference cycle"));
            }
            frontier.push(&link.child_component_id);
        }
    }
    Ok(())
}

/// Refuses to make `version` of `id` live while a child it pins is unpublished or archived.
/// `what`: `"publish {id} v{n}"` or `"create {id} as published"`.
fn check_publishable<'a>(
    cat: &Catalog,
    what: &str,
    links: impl IntoIterator<Item = (&'a str, &'a str, Option<i64>)>,
) -> Result<(), ComponentError> {
    for (kind, child, version) in links {
        if !super::PIN_LINK_KINDS.contains(&kind) {
            continue;
        }
        let stage = version.and_then(|v| cat.config(child, v)).map(|c| c.stage.as_str());
        if stage != Some(STAGE_PUBLISHED) {
            return refused(
                Kind::Dependency,
                format!(
                    "Cannot {what}: pinned {kind} '{child}' v{} is {}; publish the child first.",
                    py(version),
                    stage.unwrap_or("missing")
                ),
            );
        }
        if cat.component(child).is_some_and(ComponentRecord::archived) {
            return refused(
                Kind::Dependency,
                format!("Cannot {what}: pinned {kind} '{child}' is archived; restore it first."),
            );
        }
    }
    Ok(())
}

fn link_rows(parent: &str, version: i64, links: &[LinkSpec], now: i64) -> Vec<ComponentLink> {
    links
        .iter()
        .map(|l| ComponentLink {
            parent_component_id: parent.to_owned(),
            parent_version: version,
            link_kind: l.link_kind.clone(),
            link_key: l.link_key.clone(),
            child_component_id: l.child_component_id.clone(),
            child_version: Some(l.child_version),
            position: l.position,
            meta: l.meta.clone(),
            created_at: Some(now),
            updated_at: None,
        })
        .collect()
}

/// `c` serving `version` (a published config), with that version's identity.
fn serving(mut c: ComponentRecord, config: &ComponentConfig, now: i64) -> ComponentRecord {
    let identity = config_identity(&config.config);
    c.current_version = Some(config.version);
    c.updated_at = Some(now);
    if identity.name.is_some() {
        c.name = identity.name;
    }
    if identity.description.is_some() {
        c.description = identity.description;
    }
    if identity.metadata.is_some() {
        c.metadata = identity.metadata;
    }
    c
}

/// Plans a new component with its version 1.
///
/// # Errors
/// The rule refusing it.
pub fn create(cat: &Catalog, new: &NewComponent, now: i64) -> Result<(CatalogChange, Written), ComponentError> {
    let id = &new.component_id;
    let stage = new.config.stage.as_deref().unwrap_or(STAGE_DRAFT);
    check_stage(stage)?;
    check_type(&new.component_type)?;
    if cat.component(id).is_some() {
        return refused(Kind::Invalid, format!("Component ID {id} is not available"));
    }
    let links = new.config.links.clone().unwrap_or_default();
    check_links(cat, id, &links)?;
    let published = stage == STAGE_PUBLISHED;
    if published {
        let pins = links.iter().map(|l| (l.link_kind.as_str(), l.child_component_id.as_str(), Some(l.child_version)));
        check_publishable(cat, &format!("create {id} as published"), pins)?;
    }
    let component = ComponentRecord {
        component_id: id.clone(),
        component_type: new.component_type.clone(),
        name: Some(new.name.clone().unwrap_or_else(|| id.clone())),
        user_id: new.user_id.clone(),
        description: new.description.clone(),
        current_version: published.then_some(1),
        metadata: new.metadata.clone(),
        created_at: now,
        updated_at: None,
        deleted_at: None,
    };
    let config = ComponentConfig {
        component_id: id.clone(),
        version: 1,
        label: new.config.label.clone(),
        stage: stage.to_owned(),
        config: new.config.config.clone().unwrap_or_default(),
        notes: new.config.notes.clone(),
        created_at: now,
        updated_at: None,
    };
    let change = CatalogChange {
        components: vec![Put { row: component.clone(), new: true }],
        configs: vec![Put { row: config.clone(), new: true }],
        links: vec![LinkSet { parent: id.clone(), version: 1, links: link_rows(id, 1, &links, now) }],
    };
    Ok((change, Written::Created(component, config)))
}

/// Plans a change of a component's row (a rollback when it names a `current_version`).
///
/// # Errors
/// The rule refusing it.
pub fn update(
    cat: &Catalog,
    id: &str,
    change: &ComponentChange,
    owner: Option<&str>,
    now: i64,
) -> Result<(CatalogChange, Written), ComponentError> {
    let c = writable(cat, id, owner)?;
    check_current(c, change.expected_current_version)?;
    if let Some(t) = &change.component_type {
        check_type(t)?;
        if *t != c.component_type {
            return refused(
                Kind::Invalid,
                format!(
                    "Cannot change component {id} from {} to {t}; a component's type is fixed at creation.",
                    c.component_type
                ),
            );
        }
    }
    let mut row = c.clone();
    if let Some(version) = change.current_version {
        let config = live_config(cat, id, version)?;
        row = serving(row, config, now);
    }
    if let Some(name) = &change.name {
        row.name = Some(name.clone());
    }
    if let Some(description) = &change.description {
        row.description = Some(description.clone());
    }
    if let Some(metadata) = &change.metadata {
        row.metadata = Some(metadata.clone());
    }
    row.updated_at = Some(now);
    Ok((
        CatalogChange { components: vec![Put { row: row.clone(), new: false }], ..Default::default() },
        Written::Component(row),
    ))
}

/// The published version `version` of `id`, which may become current.
fn live_config<'a>(cat: &'a Catalog, id: &str, version: i64) -> Result<&'a ComponentConfig, ComponentError> {
    let config = cat
        .config(id, version)
        .filter(|c| !c.deleted())
        .ok_or_else(|| ComponentError::Refused(Kind::NotFound, format!("Config {id} v{version} not found")))?;
    if !config.published() {
        return refused(
            Kind::Invalid,
            format!("Cannot set draft config {id} v{version} as current. Only published configs can be current."),
        );
    }
    let archived = cat.archived_children(id, version);
    if !archived.is_empty() {
        return refused(
            Kind::Dependency,
            format!(
                "Cannot make {id} v{version} current: pinned child(ren) {} are archived. Restore them first.",
                archived.join(", ")
            ),
        );
    }
    Ok(config)
}

/// Plans archiving a component.
///
/// # Errors
/// The rule refusing it.
pub fn archive(
    cat: &Catalog,
    id: &str,
    expected_current_version: Option<i64>,
    owner: Option<&str>,
    now: i64,
) -> Result<(CatalogChange, Written), ComponentError> {
    let c = cat.component(id).filter(|c| c.writable_by(owner) && !c.archived()).ok_or_else(|| not_found(id))?;
    check_current(c, expected_current_version)?;
    let parents = cat.active_parents(id, None, owner);
    if !parents.is_empty() {
        return refused(Kind::Dependency, format!("Cannot delete {id}: referenced by {}", parents.join(", ")));
    }
    let row = ComponentRecord { deleted_at: Some(now), updated_at: Some(now), ..c.clone() };
    Ok((
        CatalogChange { components: vec![Put { row: row.clone(), new: false }], ..Default::default() },
        Written::Component(row),
    ))
}

/// Plans restoring an archived component.
///
/// # Errors
/// The rule refusing it.
pub fn restore(
    cat: &Catalog,
    id: &str,
    owner: Option<&str>,
    now: i64,
) -> Result<(CatalogChange, Written), ComponentError> {
    let c = cat.component(id).filter(|c| c.writable_by(owner)).ok_or_else(|| not_found(id))?;
    if !c.archived() {
        return refused(Kind::NotArchived, "Component is not archived".to_owned());
    }
    if let Some(version) = c.current_version {
        let archived = cat.archived_children(id, version);
        if !archived.is_empty() {
            return refused(
                Kind::Dependency,
                format!(
                    "Cannot restore {id}: pinned child(ren) {} are archived. Restore them first.",
                    archived.join(", ")
                ),
            );
        }
    }
    let row = ComponentRecord { deleted_at: None, updated_at: Some(now), ..c.clone() };
    Ok((
        CatalogChange { components: vec![Put { row: row.clone(), new: false }], ..Default::default() },
        Written::Component(row),
    ))
}

/// Plans a config write: a new version appended, or a draft edited; published when its stage
/// says so.
///
/// # Errors
/// The rule refusing it.
pub fn write_config(
    cat: &Catalog,
    id: &str,
    w: &ConfigWrite,
    owner: Option<&str>,
    now: i64,
) -> Result<(CatalogChange, Written), ComponentError> {
    if let Some(stage) = &w.stage {
        check_stage(stage)?;
    }
    let c = writable(cat, id, owner)?;
    if let Some(expected) = w.expected_latest_version {
        let latest = cat.latest_visible(id);
        if latest != Some(expected) {
            return refused(
                Kind::VersionConflict,
                format!("Component {id} latest version is {}, expected {expected}", py(latest)),
            );
        }
    }
    if let Some(links) = &w.links {
        check_links(cat, id, links)?;
    }
    if let Some(label) = &w.label {
        let taken = cat
            .configs_of(id)
            .any(|other| !other.deleted() && other.label.as_ref() == Some(label) && Some(other.version) != w.version);
        if taken {
            return refused(Kind::Invalid, format!("Label '{label}' already exists for {id}"));
        }
    }
    let (config, new) = match w.version {
        None => {
            let Some(body) = &w.config else {
                return refused(Kind::Invalid, "config is required when creating a new version".to_owned());
            };
            let version = cat.configs_of(id).map(|c| c.version).max().unwrap_or(0) + 1;
            let config = ComponentConfig {
                component_id: id.to_owned(),
                version,
                label: w.label.clone(),
                stage: w.stage.clone().unwrap_or_else(|| STAGE_DRAFT.to_owned()),
                config: body.clone(),
                notes: w.notes.clone(),
                created_at: now,
                updated_at: None,
            };
            (config, true)
        }
        Some(version) => {
            let Some(old) = cat.config(id, version).filter(|c| !c.deleted()) else {
                return refused(Kind::NotFound, format!("Config {id} v{version} not found"));
            };
            if old.published() {
                return refused(Kind::Invalid, format!("Cannot update published config {id} v{version}"));
            }
            let mut config = old.clone();
            if let Some(body) = &w.config {
                config.config = body.clone();
            }
            if let Some(label) = &w.label {
                config.label = Some(label.clone());
            }
            if let Some(stage) = &w.stage {
                config.stage = stage.clone();
            }
            if let Some(notes) = &w.notes {
                config.notes = Some(notes.clone());
            }
            config.updated_at = Some(now);
            (config, false)
        }
    };
    let version = config.version;
    let mut change = CatalogChange::default();
    let links: Vec<(String, String, Option<i64>)> = match &w.links {
        Some(links) => {
            change.links.push(LinkSet { parent: id.to_owned(), version, links: link_rows(id, version, links, now) });
            links.iter().map(|l| (l.link_kind.clone(), l.child_component_id.clone(), Some(l.child_version))).collect()
        }
        None if new => Vec::new(),
        None => cat
            .links_of(id, version)
            .into_iter()
            .map(|l| (l.link_kind.clone(), l.child_component_id.clone(), l.child_version))
            .collect(),
    };
    if config.published() {
        let pins = links.iter().map(|(kind, child, v)| (kind.as_str(), child.as_str(), *v));
        check_publishable(cat, &format!("publish {id} v{version}"), pins)?;
        change.components.push(Put { row: serving(c.clone(), &config, now), new: false });
    }
    change.configs.push(Put { row: config.clone(), new });
    Ok((change, Written::Config(config)))
}

/// Plans deleting a draft version (a tombstone).
///
/// # Errors
/// The rule refusing it.
pub fn delete_config(
    cat: &Catalog,
    id: &str,
    version: i64,
    owner: Option<&str>,
    now: i64,
) -> Result<(CatalogChange, Written), ComponentError> {
    let c = writable(cat, id, owner)?;
    let Some(config) = cat.config(id, version).filter(|c| !c.deleted()) else {
        return refused(Kind::NotFound, format!("Config {id} v{version} not found"));
    };
    if config.published() {
        return refused(
            Kind::DraftRequired,
            format!("Cannot delete published config {id} v{version}; only drafts are deletable"),
        );
    }
    if c.current_version == Some(version) {
        return refused(Kind::Invalid, format!("Cannot delete current config {id} v{version}"));
    }
    if cat.configs_of(id).filter(|c| !c.deleted()).count() <= 1 {
        return refused(Kind::LastConfig, format!("Cannot delete the last visible config of {id}"));
    }
    let parents = cat.active_parents(id, Some(version), None);
    if !parents.is_empty() {
        return refused(Kind::Dependency, format!("Cannot delete {id} v{version}: pinned by {}", parents.join(", ")));
    }
    let tombstone =
        ComponentConfig { stage: STAGE_DELETED.to_owned(), label: None, updated_at: Some(now), ..config.clone() };
    let change = CatalogChange {
        configs: vec![Put { row: tombstone, new: false }],
        links: vec![LinkSet { parent: id.to_owned(), version, links: Vec::new() }],
        ..Default::default()
    };
    Ok((change, Written::Nothing))
}

/// Plans serving published `version` of `id` (a rollback to an older one).
///
/// # Errors
/// The rule refusing it.
pub fn set_current(
    cat: &Catalog,
    id: &str,
    version: i64,
    expected_current_version: Option<i64>,
    owner: Option<&str>,
    now: i64,
) -> Result<(CatalogChange, Written), ComponentError> {
    let missing =
        || ComponentError::Refused(Kind::NotFound, format!("Component {id} or config version {version} not found"));
    let c = cat.component(id).filter(|c| c.writable_by(owner) && !c.archived()).ok_or_else(missing)?;
    if cat.config(id, version).is_none_or(ComponentConfig::deleted) {
        return Err(missing());
    }
    let config = live_config(cat, id, version)?;
    check_current(c, expected_current_version)?;
    let row = serving(c.clone(), config, now);
    Ok((
        CatalogChange { components: vec![Put { row: row.clone(), new: false }], ..Default::default() },
        Written::Component(row),
    ))
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::{Map, json};

    fn apply(cat: &Catalog, change: CatalogChange) -> Catalog {
        let mut next = cat.clone();
        for p in change.components {
            next.components.insert(p.row.component_id.clone(), p.row);
        }
        for p in change.configs {
            next.configs.insert((p.row.component_id.clone(), p.row.version), p.row);
        }
        for set in change.links {
            next.links.retain(|l| !(l.parent_component_id == set.parent && l.parent_version == set.version));
            next.links.extend(set.links);
        }
        next
    }

    fn agent(id: &str, stage: &str) -> NewComponent {
        NewComponent {
            component_id: id.into(),
            component_type: "agent".into(),
            config: ConfigWrite {
                config: Some(Map::from_iter([("name".to_owned(), json!(format!("{id} v1")))])),
                stage: Some(stage.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn pin(child: &str, version: i64) -> LinkSpec {
        LinkSpec {
            link_kind: "member".into(),
            link_key: "member_0".into(),
            child_component_id: child.into(),
            child_version: version,
            position: 0,
            meta: None,
        }
    }

    fn kind(r: Result<(CatalogChange, Written), ComponentError>) -> Kind {
        r.err().and_then(|e| e.kind()).expect("a refusal")
    }

    #[test]
    fn versions_publish_pin_and_refuse_what_agno_refuses() {
        let cat = Catalog::default();
        let (change, _) = create(&cat, &agent("a", STAGE_PUBLISHED), 10).unwrap();
        let cat = apply(&cat, change);
        assert_eq!(cat.component("a").unwrap().current_version, Some(1));
        assert_eq!(cat.component("a").unwrap().name.as_deref(), Some("a"));
        assert_eq!(kind(create(&cat, &agent("a", STAGE_DRAFT), 11)), Kind::Invalid);

        // A team pinning a draft cannot be created published; pinning v1 it can.
        let mut team = agent("t", STAGE_PUBLISHED);
        team.component_type = "team".into();
        team.config.links = Some(vec![pin("a", 2)]);
        assert_eq!(kind(create(&cat, &team, 11)), Kind::Dependency);
        team.config.links = Some(vec![pin("a", 1)]);
        let cat = apply(&cat, create(&cat, &team, 11).unwrap().0);

        // The agent publishes v2: the team keeps v1; the agent cannot be archived while pinned.
        let v2 = ConfigWrite {
            config: Some(Map::from_iter([("name".to_owned(), json!("A two"))])),
            stage: Some(STAGE_PUBLISHED.into()),
            expected_latest_version: Some(1),
            ..Default::default()
        };
        let cat = apply(&cat, write_config(&cat, "a", &v2, None, 12).unwrap().0);
        assert_eq!(cat.component("a").unwrap().current_version, Some(2));
        assert_eq!(cat.component("a").unwrap().name.as_deref(), Some("A two"));
        assert_eq!(cat.links_of("t", 1)[0].child_version, Some(1));
        assert_eq!(kind(write_config(&cat, "a", &v2, None, 13)), Kind::VersionConflict);
        assert_eq!(kind(archive(&cat, "a", None, None, 13)), Kind::Dependency);

        // A link back from the agent to the team is a cycle; to itself too.
        let back = ConfigWrite { config: Some(Map::new()), links: Some(vec![pin("t", 1)]), ..Default::default() };
        assert_eq!(kind(write_config(&cat, "a", &back, None, 13)), Kind::Cycle);
        let own = ConfigWrite { config: Some(Map::new()), links: Some(vec![pin("a", 1)]), ..Default::default() };
        assert_eq!(kind(write_config(&cat, "a", &own, None, 13)), Kind::Cycle);

        // Rollback to v1 takes v1's name; a stale guard is refused; published versions are frozen.
        assert_eq!(kind(set_current(&cat, "a", 1, Some(1), None, 14)), Kind::VersionConflict);
        let cat = apply(&cat, set_current(&cat, "a", 1, Some(2), None, 14).unwrap().0);
        assert_eq!(cat.component("a").unwrap().name.as_deref(), Some("a v1"));
        let edit = ConfigWrite { version: Some(1), notes: Some("n".into()), ..Default::default() };
        assert_eq!(kind(write_config(&cat, "a", &edit, None, 15)), Kind::Invalid);

        // Drafts are deleted as tombstones, never the last one, and numbers are not reused.
        let draft = ConfigWrite { config: Some(Map::new()), label: Some("x".into()), ..Default::default() };
        let cat = apply(&cat, write_config(&cat, "a", &draft, None, 16).unwrap().0);
        assert_eq!(kind(write_config(&cat, "a", &draft, None, 16)), Kind::Invalid, "the label is taken");
        assert_eq!(kind(delete_config(&cat, "a", 1, None, 17)), Kind::DraftRequired);
        let cat = apply(&cat, delete_config(&cat, "a", 3, None, 17).unwrap().0);
        assert_eq!(cat.config("a", 3).unwrap().stage, STAGE_DELETED);
        let (change, written) = write_config(&cat, "a", &draft, None, 18).unwrap();
        assert!(matches!(written, Written::Config(c) if c.version == 4), "{change:?}");

        // Another user may not write; archive and restore; an archived component refuses writes.
        assert_eq!(kind(update(&cat, "a", &ComponentChange::default(), Some("bob"), 19)), Kind::NotFound);
        let cat = apply(&cat, archive(&cat, "t", None, None, 19).unwrap().0);
        let cat = apply(&cat, archive(&cat, "a", None, None, 19).unwrap().0);
        assert_eq!(kind(write_config(&cat, "a", &draft, None, 20)), Kind::Archived);
        assert_eq!(kind(restore(&cat, "t", None, 20)), Kind::Dependency, "its pinned member is archived");
        let cat = apply(&cat, restore(&cat, "a", None, 20).unwrap().0);
        assert_eq!(kind(restore(&cat, "a", None, 21)), Kind::NotArchived);
    }

    #[test]
    fn a_last_config_and_a_pinned_draft_cannot_be_deleted() {
        let cat = apply(&Catalog::default(), create(&Catalog::default(), &agent("a", STAGE_DRAFT), 1).unwrap().0);
        assert_eq!(kind(delete_config(&cat, "a", 1, None, 2)), Kind::LastConfig);
        let mut team = agent("t", STAGE_DRAFT);
        team.component_type = "team".into();
        team.config.links = Some(vec![pin("a", 1)]);
        let cat = apply(&cat, create(&cat, &team, 2).unwrap().0);
        let cat = apply(
            &cat,
            write_config(&cat, "a", &ConfigWrite { config: Some(Map::new()), ..Default::default() }, None, 3)
                .unwrap()
                .0,
        );
        assert_eq!(kind(delete_config(&cat, "a", 1, None, 4)), Kind::Dependency);
        assert!(delete_config(&cat, "a", 2, None, 4).is_ok());
    }
}
