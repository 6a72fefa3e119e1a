//! DDL of the MySQL service accounts table (Agno's MySQLDb keeps none; its columns as the other
//! databases have them). MySQL has no partial index: a generated column holding the name of an
//! account not revoked (NULL once revoked) carries the unique key instead.

pub(crate) fn service_accounts_ddl(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\tid VARCHAR(128) NOT NULL, \n\tname VARCHAR(63) NOT NULL, \n\tuser_id VARCHAR(128), \n\ttoken_hash VARCHAR(64) NOT NULL, \n\ttoken_prefix VARCHAR(32) NOT NULL, \n\tscopes JSON NOT NULL, \n\tcreated_at BIGINT NOT NULL, \n\texpires_at BIGINT, \n\tlast_used_at BIGINT, \n\trevoked_at BIGINT, \n\tcreated_by VARCHAR(255), \n\tactive_name VARCHAR(63) AS (IF(revoked_at IS NULL, name, NULL)) STORED, \n\tPRIMARY KEY (id), \n\tUNIQUE KEY `uq_{t}_token_hash` (token_hash), \n\tUNIQUE KEY `{t}_uq_active_name` (active_name), \n\tINDEX `idx_{t}_created_at` (created_at)\n)"
    )
}
