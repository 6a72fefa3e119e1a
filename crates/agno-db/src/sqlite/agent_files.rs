//! DDL of the SQLite agent files table, as Agno 3.1's `DbFileSystem` creates it.

pub(crate) fn files_ddl(t: &str) -> Vec<String> {
    vec![format!(
        "CREATE TABLE IF NOT EXISTS {t} (\n\tnamespace VARCHAR NOT NULL, \n\tpath VARCHAR NOT NULL, \n\tcontent TEXT NOT NULL, \n\tsize_bytes BIGINT NOT NULL, \n\tversion BIGINT NOT NULL, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tuser_id VARCHAR DEFAULT '' NOT NULL, \n\tCONSTRAINT pk_{t} PRIMARY KEY (namespace, user_id, path)\n)"
    )]
}
