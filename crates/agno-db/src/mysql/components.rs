//! DDL of the MySQL component tables: Agno's columns (Agno 3.1's `MySQLDb` keeps no components;
//! these are the tables its SQLite and PostgreSQL adapters create, in MySQL's types).

use crate::sql::components::{COMPONENT_INDEXES, CONFIG_INDEXES, LINK_INDEXES};

fn indexes(t: &str, columns: &[&str]) -> String {
    columns.iter().map(|c| format!(", \n\tINDEX `idx_{t}_{c}` ({c})")).collect()
}

pub(crate) fn components_ddl(t: &str) -> String {
    let indexes = indexes(t, &COMPONENT_INDEXES);
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\tcomponent_id VARCHAR(255) NOT NULL, \n\tcomponent_type VARCHAR(50) NOT NULL, \n\tname VARCHAR(255) NOT NULL, \n\tuser_id VARCHAR(128), \n\tdescription TEXT, \n\tcurrent_version BIGINT, \n\tmetadata JSON, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tdeleted_at BIGINT, \n\tPRIMARY KEY (component_id){indexes}\n)"
    )
}

pub(crate) fn component_configs_ddl(t: &str) -> String {
    let indexes = indexes(t, &CONFIG_INDEXES);
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\tcomponent_id VARCHAR(255) NOT NULL, \n\tversion BIGINT NOT NULL, \n\tlabel VARCHAR(255), \n\tstage VARCHAR(50) NOT NULL, \n\tconfig JSON NOT NULL, \n\tnotes TEXT, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (component_id, version){indexes}\n)"
    )
}

pub(crate) fn component_links_ddl(t: &str) -> String {
    let indexes = indexes(t, &LINK_INDEXES);
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\tparent_component_id VARCHAR(255) NOT NULL, \n\tparent_version BIGINT NOT NULL, \n\tlink_kind VARCHAR(50) NOT NULL, \n\tlink_key VARCHAR(255) NOT NULL, \n\tchild_component_id VARCHAR(255) NOT NULL, \n\tchild_version BIGINT, \n\tposition BIGINT NOT NULL, \n\tmeta JSON, \n\tcreated_at BIGINT, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (parent_component_id, parent_version, link_kind, link_key){indexes}\n)"
    )
}
