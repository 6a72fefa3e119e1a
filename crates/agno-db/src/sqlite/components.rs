//! DDL of the SQLite component tables, as Python Agno 3.1 creates them (no foreign keys).

use crate::sql::components::{COMPONENT_INDEXES, CONFIG_INDEXES, LINK_INDEXES};

fn indexes(t: &str, columns: &[&str]) -> impl Iterator<Item = String> {
    columns.iter().map(move |c| format!("CREATE INDEX IF NOT EXISTS idx_{t}_{c} ON {t} ({c})"))
}

pub(crate) fn components_ddl(t: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {t} (\n\tcomponent_id VARCHAR NOT NULL, \n\tcomponent_type VARCHAR NOT NULL, \n\tname VARCHAR NOT NULL, \n\tuser_id VARCHAR, \n\tdescription VARCHAR, \n\tcurrent_version BIGINT, \n\tmetadata JSON, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tdeleted_at BIGINT, \n\tPRIMARY KEY (component_id)\n)"
    )];
    ddl.extend(indexes(t, &COMPONENT_INDEXES));
    ddl
}

pub(crate) fn component_configs_ddl(t: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {t} (\n\tcomponent_id VARCHAR NOT NULL, \n\tversion BIGINT NOT NULL, \n\tlabel VARCHAR, \n\tstage VARCHAR NOT NULL, \n\tconfig JSON NOT NULL, \n\tnotes VARCHAR, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (component_id, version)\n)"
    )];
    ddl.extend(indexes(t, &CONFIG_INDEXES));
    ddl
}

pub(crate) fn component_links_ddl(t: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {t} (\n\tparent_component_id VARCHAR NOT NULL, \n\tparent_version BIGINT NOT NULL, \n\tlink_kind VARCHAR NOT NULL, \n\tlink_key VARCHAR NOT NULL, \n\tchild_component_id VARCHAR NOT NULL, \n\tchild_version BIGINT, \n\tposition BIGINT NOT NULL, \n\tmeta JSON, \n\tcreated_at BIGINT, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (parent_component_id, parent_version, link_kind, link_key)\n)"
    )];
    ddl.extend(indexes(t, &LINK_INDEXES));
    ddl
}
