//! Components of the document stores: `agno_components.json` (one document per component),
//! `agno_component_configs.json` (per version) and `agno_component_links.json` (per link), with
//! Agno's keys. A catalog write runs its plan (the rules of `agno_core::components::catalog`)
//! under the store's exclusive lock. The listing rules here serve Redis too.

use agno_core::components::catalog::{Catalog, CatalogChange, CatalogPlan, Written};
use agno_core::{
    ComponentConfig, ComponentError, ComponentLink, ComponentQuery, ComponentRecord, ComponentStore, DbResult,
    SortOrder,
};
use async_trait::async_trait;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{DocBackend, DocDb, Docs};

/// The records of a table (documents that are not such records are left out).
pub(crate) fn records<T: DeserializeOwned>(docs: &[Value]) -> Vec<T> {
    docs.iter().filter_map(|d| serde_json::from_value(d.clone()).ok()).collect()
}

/// The document of a record.
pub(crate) fn doc<T: Serialize>(record: &T) -> DbResult<Value> {
    crate::codec::to_doc(record).map(Value::Object)
}

/// The page of `components` the listing `q` asks for (newest first, then by id), with the
/// number that match.
pub(crate) fn page_components(
    components: impl IntoIterator<Item = ComponentRecord>,
    q: &ComponentQuery,
) -> (Vec<ComponentRecord>, u64) {
    let list = components.into_iter().filter(|c| q.matches(c)).collect();
    let order = |a: &ComponentRecord, b: &ComponentRecord| {
        b.created_at.cmp(&a.created_at).then_with(|| a.component_id.cmp(&b.component_id))
    };
    super::sort_and_page(list, order, SortOrder::Asc, q.limit, q.page)
}

/// `id`'s config versions among `configs`, newest first (tombstones only with
/// `include_deleted`).
pub(crate) fn configs_of(
    configs: impl IntoIterator<Item = ComponentConfig>,
    id: &str,
    include_deleted: bool,
) -> Vec<ComponentConfig> {
    let mut mine: Vec<_> =
        configs.into_iter().filter(|c| c.component_id == id && (include_deleted || !c.deleted())).collect();
    mine.sort_by_key(|c| std::cmp::Reverse(c.version));
    mine
}

/// The links of `id`'s `version` among `links`, by position.
pub(crate) fn links_of(links: impl IntoIterator<Item = ComponentLink>, id: &str, version: i64) -> Vec<ComponentLink> {
    let mut mine: Vec<_> =
        links.into_iter().filter(|l| l.parent_component_id == id && l.parent_version == version).collect();
    mine.sort_by_key(|l| l.position);
    mine
}

fn read_catalog(files: &dyn Docs) -> DbResult<Catalog> {
    let t = files.tables();
    Ok(Catalog::from_rows(
        records::<ComponentRecord>(&files.read(&t.components)?),
        records::<ComponentConfig>(&files.read(&t.component_configs)?),
        records::<ComponentLink>(&files.read(&t.component_links)?),
    ))
}

/// Replaces in `docs` the document whose key (`key`) is `row`'s, or appends it.
fn put(docs: &mut Vec<Value>, row: Value, key: impl Fn(&Value) -> Option<(String, Option<i64>)>) {
    let wanted = key(&row);
    match docs.iter().position(|d| key(d) == wanted) {
        Some(at) => docs[at] = row,
        None => docs.push(row),
    }
}

fn component_key(d: &Value) -> Option<(String, Option<i64>)> {
    Some((d.get("component_id")?.as_str()?.to_owned(), None))
}

fn config_key(d: &Value) -> Option<(String, Option<i64>)> {
    Some((d.get("component_id")?.as_str()?.to_owned(), d.get("version")?.as_i64()))
}

fn apply(files: &mut dyn Docs, change: &CatalogChange) -> DbResult<()> {
    let t = files.tables().clone();
    if !change.components.is_empty() {
        let mut docs = files.read(&t.components)?.into_owned();
        for p in &change.components {
            put(&mut docs, doc(&p.row)?, component_key);
        }
        files.write(&t.components, docs)?;
    }
    if !change.configs.is_empty() {
        let mut docs = files.read(&t.component_configs)?.into_owned();
        for p in &change.configs {
            put(&mut docs, doc(&p.row)?, config_key);
        }
        files.write(&t.component_configs, docs)?;
    }
    if !change.links.is_empty() {
        let mut docs = files.read(&t.component_links)?.into_owned();
        for set in &change.links {
            docs.retain(|d| {
                let parent = d.get("parent_component_id").and_then(Value::as_str);
                let version = d.get("parent_version").and_then(Value::as_i64);
                !(parent == Some(set.parent.as_str()) && version == Some(set.version))
            });
            for link in &set.links {
                docs.push(doc(link)?);
            }
        }
        files.write(&t.component_links, docs)?;
    }
    Ok(())
}

#[async_trait]
impl<B: DocBackend> ComponentStore for DocDb<B> {
    async fn change_catalog(&self, _target: &str, plan: CatalogPlan) -> Result<Written, ComponentError> {
        self.write(move |files| {
            let catalog = read_catalog(files)?;
            match plan(&catalog) {
                Ok((change, written)) => apply(files, &change).map(|()| Ok(written)),
                Err(ComponentError::Db(e)) => Err(e),
                Err(refusal) => Ok(Err(refusal)),
            }
        })
        .await?
    }

    async fn get_component(
        &self,
        id: &str,
        viewer: Option<&str>,
        include_deleted: bool,
    ) -> DbResult<Option<ComponentRecord>> {
        let (id, viewer) = (id.to_owned(), viewer.map(str::to_owned));
        self.read(move |files| {
            let all = records::<ComponentRecord>(&files.read(&files.tables().components)?);
            Ok(all.into_iter().find(|c| c.component_id == id && c.readable(viewer.as_deref(), include_deleted)))
        })
        .await
    }

    async fn list_components(&self, query: &ComponentQuery) -> DbResult<(Vec<ComponentRecord>, u64)> {
        let query = query.clone();
        self.read(move |files| {
            Ok(page_components(records::<ComponentRecord>(&files.read(&files.tables().components)?), &query))
        })
        .await
    }

    async fn component_configs(&self, id: &str, include_deleted: bool) -> DbResult<Vec<ComponentConfig>> {
        let id = id.to_owned();
        self.read(move |files| {
            let all = records::<ComponentConfig>(&files.read(&files.tables().component_configs)?);
            Ok(configs_of(all, &id, include_deleted))
        })
        .await
    }

    async fn component_links(&self, id: &str, version: i64) -> DbResult<Vec<ComponentLink>> {
        let id = id.to_owned();
        self.read(move |files| {
            Ok(links_of(records::<ComponentLink>(&files.read(&files.tables().component_links)?), &id, version))
        })
        .await
    }
}
