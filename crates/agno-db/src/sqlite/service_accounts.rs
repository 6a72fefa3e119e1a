//! DDL of the SQLite service accounts table, as Python Agno 3.1 creates it: the token hash
//! unique, and the name unique among the accounts not revoked (a partial unique index).

pub(crate) fn service_accounts_ddl(t: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {t} (\n\tid VARCHAR NOT NULL, \n\tname VARCHAR NOT NULL, \n\tuser_id VARCHAR, \n\ttoken_hash VARCHAR NOT NULL, \n\ttoken_prefix VARCHAR NOT NULL, \n\tscopes JSON NOT NULL, \n\tcreated_at BIGINT NOT NULL, \n\texpires_at BIGINT, \n\tlast_used_at BIGINT, \n\trevoked_at BIGINT, \n\tcreated_by VARCHAR, \n\tPRIMARY KEY (id), \n\tUNIQUE (token_hash)\n)"
        ),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_token_hash ON {t} (token_hash)"),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_created_at ON {t} (created_at)"),
        format!("CREATE UNIQUE INDEX IF NOT EXISTS {t}_uq_active_name ON {t} (name) WHERE revoked_at IS NULL"),
    ]
}
