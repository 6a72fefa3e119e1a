//! DDL of the PostgreSQL learnings table, as Python Agno 3.1 creates it (on first use).

use super::schema::index_ddl;

pub(crate) fn learnings_ddl(q: &str, t: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {q} (\n\tlearning_id VARCHAR NOT NULL, \n\tlearning_type VARCHAR NOT NULL, \n\tnamespace VARCHAR, \n\tuser_id VARCHAR, \n\tagent_id VARCHAR, \n\tteam_id VARCHAR, \n\tworkflow_id VARCHAR, \n\tsession_id VARCHAR, \n\tentity_id VARCHAR, \n\tentity_type VARCHAR, \n\tcontent JSONB NOT NULL, \n\tmetadata JSONB, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (learning_id)\n)"
    )];
    ddl.extend(crate::sql::learnings::indexed().map(|c| index_ddl(q, t, &[c])));
    ddl
}
