//! DDL of the PostgreSQL agent files table, as Agno 3.1's `DbFileSystem` creates it: in a schema
//! of its own (`fs`), apart from the platform tables.

/// The schema Agno keeps agent files in.
pub(crate) const FILES_SCHEMA: &str = "fs";

pub(crate) fn files_ddl(t: &str) -> Vec<String> {
    vec![
        format!("CREATE SCHEMA IF NOT EXISTS \"{FILES_SCHEMA}\""),
        format!(
            "CREATE TABLE IF NOT EXISTS \"{FILES_SCHEMA}\".\"{t}\" (\n\tnamespace VARCHAR NOT NULL, \n\tpath VARCHAR NOT NULL, \n\tcontent TEXT NOT NULL, \n\tsize_bytes BIGINT NOT NULL, \n\tversion BIGINT NOT NULL, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tuser_id VARCHAR DEFAULT '' NOT NULL, \n\tCONSTRAINT pk_{t} PRIMARY KEY (namespace, user_id, path)\n)"
        ),
    ]
}
