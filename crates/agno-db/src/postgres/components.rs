//! DDL of the PostgreSQL component tables, as Python Agno 3.1 creates them: `INTEGER` versions,
//! foreign keys from the configs to their component and from the links to their parent version
//! and child component.

use super::schema::index_ddl;
use crate::sql::components::{COMPONENT_INDEXES, CONFIG_INDEXES, LINK_INDEXES};

fn with_indexes(create: String, q: &str, t: &str, columns: &[&str]) -> Vec<String> {
    let mut ddl = vec![create];
    ddl.extend(columns.iter().map(|c| index_ddl(q, t, &[c])));
    ddl
}

pub(crate) fn components_ddl(q: &str, t: &str) -> Vec<String> {
    let create = format!(
        "CREATE TABLE IF NOT EXISTS {q} (\n\tcomponent_id VARCHAR NOT NULL, \n\tcomponent_type VARCHAR NOT NULL, \n\tname VARCHAR, \n\tuser_id VARCHAR, \n\tdescription TEXT, \n\tcurrent_version INTEGER, \n\tmetadata JSONB, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tdeleted_at BIGINT, \n\tPRIMARY KEY (component_id)\n)"
    );
    with_indexes(create, q, t, &COMPONENT_INDEXES)
}

/// `components`: the components table, qualified.
pub(crate) fn component_configs_ddl(q: &str, t: &str, components: &str) -> Vec<String> {
    let create = format!(
        "CREATE TABLE IF NOT EXISTS {q} (\n\tcomponent_id VARCHAR NOT NULL, \n\tversion INTEGER NOT NULL, \n\tlabel VARCHAR, \n\tstage VARCHAR NOT NULL, \n\tconfig JSONB NOT NULL, \n\tnotes TEXT, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tdeleted_at BIGINT, \n\tPRIMARY KEY (component_id, version), \n\tFOREIGN KEY(component_id) REFERENCES {components} (component_id)\n)"
    );
    with_indexes(create, q, t, &CONFIG_INDEXES)
}

/// `components`, `configs`: those tables, qualified.
pub(crate) fn component_links_ddl(q: &str, t: &str, components: &str, configs: &str) -> Vec<String> {
    let create = format!(
        "CREATE TABLE IF NOT EXISTS {q} (\n\tparent_component_id VARCHAR NOT NULL, \n\tparent_version INTEGER NOT NULL, \n\tlink_kind VARCHAR NOT NULL, \n\tlink_key VARCHAR NOT NULL, \n\tchild_component_id VARCHAR NOT NULL, \n\tchild_version INTEGER, \n\tposition INTEGER NOT NULL, \n\tmeta JSONB, \n\tcreated_at BIGINT, \n\tupdated_at BIGINT, \n\tCONSTRAINT \"{t}_pkey\" PRIMARY KEY (parent_component_id, parent_version, link_kind, link_key), \n\tFOREIGN KEY(child_component_id) REFERENCES {components} (component_id), \n\tCONSTRAINT \"{t}_parent_component_id_parent_version_fkey\" FOREIGN KEY(parent_component_id, parent_version) REFERENCES {configs} (component_id, version)\n)"
    );
    with_indexes(create, q, t, &LINK_INDEXES)
}
