//! Components in Redis (Agno 3.1's `RedisDb` keeps none, so the layout follows its other
//! document kinds): `{prefix}:components:{component_id}`, `{prefix}:component_configs:{id}:{version}`
//! and `{prefix}:component_links:{link}` hold the documents (Agno's keys), and
//! `{prefix}:catalog:revision` counts catalog writes. A write reads the catalog and the revision,
//! plans (the rules of `agno_core::components::catalog`), and applies its documents in one
//! compare-and-set on the revision, so of two concurrent writes one is planned again over what
//! the other wrote. The listing rules are the document family's (`doc::components`).

use agno_core::components::catalog::{Catalog, CatalogChange, CatalogPlan, Written};
use agno_core::{
    ComponentConfig, ComponentError, ComponentLink, ComponentQuery, ComponentRecord, ComponentStore, DbResult,
};
use async_trait::async_trait;
use serde_json::Value;

use super::RedisDb;
use super::cas::{Applied, Cas};
use super::docs::{CAS_ATTEMPTS, too_busy};
use crate::codec::to_json_text;
use crate::doc::components::{configs_of, doc, links_of, page_components};
use crate::doc::documents::records;

const COMPONENTS: &str = "components";
const CONFIGS: &str = "component_configs";
const LINKS: &str = "component_links";

fn config_id(c: &ComponentConfig) -> String {
    format!("{}:{}", c.component_id, c.version)
}

/// A link's id: its key's four parts, as a JSON array (ids may hold any character).
fn link_id(l: &ComponentLink) -> String {
    serde_json::json!([l.parent_component_id, l.parent_version, l.link_kind, l.link_key]).to_string()
}

impl RedisDb {
    fn revision_key(&self) -> String {
        format!("{}:catalog:revision", self.backend.prefix)
    }

    async fn components(&self) -> DbResult<Vec<ComponentRecord>> {
        Ok(records(self.docs_of(COMPONENTS).await?))
    }

    async fn configs(&self) -> DbResult<Vec<ComponentConfig>> {
        Ok(records(self.docs_of(CONFIGS).await?))
    }

    async fn links(&self) -> DbResult<Vec<ComponentLink>> {
        Ok(records(self.docs_of(LINKS).await?))
    }

    /// The compare-and-set writing `change` over `catalog`'s `links` if the revision is still
    /// `revision`.
    fn catalog_cas(&self, revision: Option<&str>, links: &[ComponentLink], change: &CatalogChange) -> DbResult<Cas> {
        let mut cas = Cas::default();
        let key = self.revision_key();
        let next = revision.and_then(|r| r.parse::<u64>().ok()).unwrap_or(0) + 1;
        cas.unchanged(&key, revision).set(&key, &next.to_string());
        for p in &change.components {
            cas.set(&self.doc_key(COMPONENTS, &p.row.component_id), &to_json_text(&doc(&p.row)?)?);
        }
        for p in &change.configs {
            cas.set(&self.doc_key(CONFIGS, &config_id(&p.row)), &to_json_text(&doc(&p.row)?)?);
        }
        for set in &change.links {
            for old in links.iter().filter(|l| l.parent_component_id == set.parent && l.parent_version == set.version) {
                cas.del(&self.doc_key(LINKS, &link_id(old)));
            }
            for link in &set.links {
                cas.set(&self.doc_key(LINKS, &link_id(link)), &to_json_text(&doc(link)?)?);
            }
        }
        Ok(cas)
    }
}

#[async_trait]
impl ComponentStore for RedisDb {
    async fn change_catalog(&self, _target: &str, plan: CatalogPlan) -> Result<Written, ComponentError> {
        for _ in 0..CAS_ATTEMPTS {
            let revision = self.get(&self.revision_key()).await?;
            let links = self.links().await?;
            let catalog = Catalog::from_rows(self.components().await?, self.configs().await?, links.clone());
            let (change, written) = plan(&catalog)?;
            let cas = self.catalog_cas(revision.as_deref(), &links, &change)?;
            if cas.apply(self, "cannot write the component catalog").await? == Applied::Yes {
                return Ok(written);
            }
        }
        Err(too_busy("the component catalog").into())
    }

    async fn get_component(
        &self,
        id: &str,
        viewer: Option<&str>,
        include_deleted: bool,
    ) -> DbResult<Option<ComponentRecord>> {
        let found = self.doc_at(COMPONENTS, id, "component").await?;
        let component: Option<ComponentRecord> = found.and_then(|(_, d)| serde_json::from_value(Value::Object(d)).ok());
        Ok(component.filter(|c| c.readable(viewer, include_deleted)))
    }

    async fn list_components(&self, query: &ComponentQuery) -> DbResult<(Vec<ComponentRecord>, u64)> {
        Ok(page_components(self.components().await?, query))
    }

    async fn component_configs(&self, id: &str, include_deleted: bool) -> DbResult<Vec<ComponentConfig>> {
        Ok(configs_of(self.configs().await?, id, include_deleted))
    }

    async fn component_links(&self, id: &str, version: i64) -> DbResult<Vec<ComponentLink>> {
        Ok(links_of(self.links().await?, id, version))
    }
}
