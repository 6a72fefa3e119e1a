//! DDL of the PostgreSQL service accounts table, as Python Agno 3.1 creates it: the token hash
//! unique, and the name unique among the accounts not revoked (a partial unique index).

use super::schema::index_ddl;

pub(crate) fn service_accounts_ddl(q: &str, t: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {q} (\n\tid VARCHAR NOT NULL, \n\tname VARCHAR NOT NULL, \n\tuser_id VARCHAR, \n\ttoken_hash VARCHAR NOT NULL, \n\ttoken_prefix VARCHAR NOT NULL, \n\tscopes JSONB NOT NULL, \n\tcreated_at BIGINT NOT NULL, \n\texpires_at BIGINT, \n\tlast_used_at BIGINT, \n\trevoked_at BIGINT, \n\tcreated_by VARCHAR, \n\tPRIMARY KEY (id), \n\tUNIQUE (token_hash)\n)"
        ),
        index_ddl(q, t, &["token_hash"]),
        index_ddl(q, t, &["created_at"]),
        format!("CREATE UNIQUE INDEX IF NOT EXISTS \"{t}_uq_active_name\" ON {q} (name) WHERE revoked_at IS NULL"),
    ]
}
