//! DDL of the PostgreSQL tables, identical to what Python Agno 3.1's `PostgresDb` creates (as
//! `pg_dump --schema-only` shows it), and the schema-version table.

use crate::sql::SqlAdapter;
use agno_core::DbResult;
use sqlx::AssertSqlSafe;

use super::{PostgresState, db_error};

/// `CREATE INDEX IF NOT EXISTS "idx_{table}_{cols joined by _}" ON {qualified} (cols)`.
pub(crate) fn index_ddl(qualified: &str, table: &str, columns: &[&str]) -> String {
    format!("CREATE INDEX IF NOT EXISTS \"idx_{table}_{}\" ON {qualified} ({})", columns.join("_"), columns.join(", "))
}

/// A table as Python Agno 3.1 creates it: `create` (its `CREATE TABLE`, naming it `{q}`
/// qualified and `{t}` bare), then one index per entry of `indexes`.
pub(crate) fn table_ddl(q: &str, t: &str, create: &str, indexes: &[&[&str]]) -> Vec<String> {
    let mut ddl = vec![create.replace("{q}", q).replace("{t}", t)];
    ddl.extend(indexes.iter().map(|columns| index_ddl(q, t, columns)));
    ddl
}

/// The sessions table (v3: no `runs` column).
pub(crate) fn sessions_ddl(q: &str, t: &str) -> Vec<String> {
    table_ddl(
        q,
        t,
        "CREATE TABLE IF NOT EXISTS {q} (\n\tsession_id VARCHAR NOT NULL, \n\tsession_type VARCHAR NOT NULL, \n\tagent_id VARCHAR, \n\tteam_id VARCHAR, \n\tworkflow_id VARCHAR, \n\tuser_id VARCHAR, \n\tsession_data JSONB, \n\tagent_data JSONB, \n\tteam_data JSONB, \n\tworkflow_data JSONB, \n\tmetadata JSONB, \n\tsummary JSONB, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (session_id)\n)",
        &[&["session_type"], &["created_at"]],
    )
}

/// The runs table, its foreign key to the sessions table (`ON DELETE CASCADE`) and indexes.
pub(crate) fn runs_ddl(q: &str, t: &str, sessions_q: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {q} (\n\trun_id VARCHAR NOT NULL, \n\tsession_id VARCHAR NOT NULL, \n\trun_type VARCHAR NOT NULL, \n\tagent_id VARCHAR, \n\tteam_id VARCHAR, \n\tworkflow_id VARCHAR, \n\tuser_id VARCHAR, \n\tparent_run_id VARCHAR, \n\tstatus VARCHAR, \n\trun_index BIGINT, \n\trun_data JSONB NOT NULL, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (run_id), \n\tFOREIGN KEY(session_id) REFERENCES {sessions_q} (session_id) ON DELETE CASCADE\n)"
    )];
    for col in ["session_id", "run_type", "agent_id", "team_id", "workflow_id", "user_id", "status", "created_at"] {
        ddl.push(index_ddl(q, t, &[col]));
    }
    ddl.push(index_ddl(q, t, &["session_id", "run_index"]));
    ddl
}

/// The run facts table ([`crate::TableNames::run_facts`]): gone with its run.
pub(crate) fn run_facts_ddl(facts_q: &str, runs_q: &str) -> Vec<String> {
    vec![format!(
        "CREATE TABLE IF NOT EXISTS {facts_q} (run_id VARCHAR NOT NULL PRIMARY KEY REFERENCES {runs_q} (run_id) \
         ON DELETE CASCADE, model VARCHAR, model_provider VARCHAR)"
    )]
}

/// The schema-versions table.
pub(crate) fn versions_ddl(q: &str, t: &str) -> Vec<String> {
    table_ddl(
        q,
        t,
        "CREATE TABLE IF NOT EXISTS {q} (\n\ttable_name VARCHAR NOT NULL, \n\tversion VARCHAR NOT NULL, \n\tcreated_at VARCHAR NOT NULL, \n\tupdated_at VARCHAR, \n\tPRIMARY KEY (table_name)\n)",
        &[&["created_at"]],
    )
}

impl PostgresState {
    /// Runs DDL statements in order, in one transaction.
    pub(crate) async fn exec_ddl(&self, what: &str, statements: &[String]) -> DbResult<()> {
        let mut tx = self.pool().begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
        for sql in statements {
            sqlx::query(AssertSqlSafe(sql.as_str())).execute(&mut *tx).await.map_err(|e| db_error(what, e))?;
        }
        tx.commit().await.map_err(|e| db_error(what, e))
    }

    /// Creates a table with its indexes unless it exists. Returns true when this call created
    /// it. A concurrent creator winning the race is not an error.
    pub(crate) async fn create_table_if_missing(&self, table: &str, ddl: &[String]) -> DbResult<bool> {
        if self.table_exists(table).await? {
            return Ok(false);
        }
        match self.exec_ddl(&format!("cannot create table {}.{table}", self.schema), ddl).await {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == agno_core::DbErrorKind::Conflict && self.table_exists(table).await? => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// The jobs table as Python Agno 3.1 creates it: columns, the single-column and
/// `(status, available_at)` indexes, and the partial unique indexes
/// `{table}_uq_jobs_idempotency_key` (`idempotency_key, user_id`) and
/// `{table}_uq_jobs_idempotency_key_anon` (`idempotency_key` where `user_id IS NULL`) that keep an
/// idempotency key unique per user, anonymous submitters included.
pub(crate) fn jobs_ddl(q: &str, t: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {q} (\n\tid VARCHAR NOT NULL, \n\tcomponent_type VARCHAR NOT NULL, \n\tjob_type VARCHAR NOT NULL, \n\tdeployment_id VARCHAR, \n\tcomponent_id VARCHAR NOT NULL, \n\tsession_id VARCHAR NOT NULL, \n\tuser_id VARCHAR, \n\tpayload JSONB NOT NULL, \n\tstatus VARCHAR NOT NULL, \n\tattempt BIGINT NOT NULL, \n\tmax_attempts BIGINT NOT NULL, \n\tidempotency_key VARCHAR, \n\tavailable_at BIGINT NOT NULL, \n\tlocked_by VARCHAR, \n\tlocked_at BIGINT, \n\terror TEXT, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tcompleted_at BIGINT, \n\tPRIMARY KEY (id)\n)"
    )];
    for columns in [&["component_id"][..], &["session_id"], &["status"], &["created_at"], &["status", "available_at"]] {
        ddl.push(index_ddl(q, t, columns));
    }
    ddl.push(format!(
        "CREATE UNIQUE INDEX IF NOT EXISTS \"{t}_uq_jobs_idempotency_key\" ON {q} (idempotency_key, user_id) \
         WHERE idempotency_key IS NOT NULL"
    ));
    ddl.push(format!(
        "CREATE UNIQUE INDEX IF NOT EXISTS \"{t}_uq_jobs_idempotency_key_anon\" ON {q} (idempotency_key) \
         WHERE idempotency_key IS NOT NULL AND user_id IS NULL"
    ));
    ddl
}

/// The durable event log of background runs: one row per event, keyed by run and index; the
/// event's JSON is kept as text so a replay sends exactly the bytes first streamed.
pub(crate) fn events_ddl(q: &str) -> Vec<String> {
    vec![format!(
        "CREATE TABLE IF NOT EXISTS {q} (run_id VARCHAR NOT NULL, event_index BIGINT NOT NULL, \
         attempt BIGINT NOT NULL, event VARCHAR NOT NULL, data TEXT NOT NULL, created_at BIGINT NOT NULL, \
         PRIMARY KEY (run_id, event_index))"
    )]
}
