//! DDL of the MySQL agent files table (Agno's `DbFileSystem` supports SQLite and PostgreSQL
//! only; the same columns and key here). Keys compare bytes (`_bin` collations), so `A.md` and
//! `a.md` are two files as elsewhere; the namespace is ASCII (canonical namespaces always are),
//! which keeps the key within InnoDB's 3072 bytes.

pub(crate) fn files_ddl(t: &str) -> Vec<String> {
    vec![format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\tnamespace VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, \n\tpath VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, \n\tcontent LONGTEXT NOT NULL, \n\tsize_bytes BIGINT NOT NULL, \n\tversion BIGINT NOT NULL, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tuser_id VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT '' NOT NULL, \n\tCONSTRAINT pk_{t} PRIMARY KEY (namespace, user_id, path)\n)"
    )]
}
