//! DDL of the MySQL tables, identical to what Python Agno 3.1's `MySQLDb` creates (column types
//! and lengths, index and foreign key names), and the schema-version table.
//!
//! `JSON` columns become `LONGTEXT ... CHECK (json_valid(...))` on MariaDB, as they do for Agno.
//! Indexes are declared inside `CREATE TABLE` so creation is one statement on MySQL and MariaDB.

use crate::sql::SqlAdapter;
use agno_core::DbResult;

use super::MySqlState;
use crate::migration::LATEST_VERSION;
use crate::sql::migrate::{SqlSchema, Table};

pub(crate) fn sessions_ddl(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\
         \tsession_id VARCHAR(128) NOT NULL, \n\
         \tsession_type VARCHAR(20) NOT NULL, \n\
         \tagent_id VARCHAR(128), \n\
         \tteam_id VARCHAR(128), \n\
         \tworkflow_id VARCHAR(128), \n\
         \tuser_id VARCHAR(128), \n\
         \tsession_data JSON, \n\
         \tagent_data JSON, \n\
         \tteam_data JSON, \n\
         \tworkflow_data JSON, \n\
         \tmetadata JSON, \n\
         \tsummary JSON, \n\
         \tcreated_at BIGINT NOT NULL, \n\
         \tupdated_at BIGINT, \n\
         \tPRIMARY KEY (session_id), \n\
         \tINDEX `idx_{t}_session_type` (session_type), \n\
         \tINDEX `idx_{t}_created_at` (created_at)\n\
         )"
    )
}

pub(crate) fn runs_ddl(t: &str, sessions: &str) -> String {
    let mut indexes = String::new();
    for col in ["session_id", "run_type", "agent_id", "team_id", "workflow_id", "user_id", "status", "created_at"] {
        indexes.push_str(&format!("\tINDEX `idx_{t}_{col}` ({col}), \n"));
    }
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\
         \trun_id VARCHAR(128) NOT NULL, \n\
         \tsession_id VARCHAR(128) NOT NULL, \n\
         \trun_type VARCHAR(20) NOT NULL, \n\
         \tagent_id VARCHAR(128), \n\
         \tteam_id VARCHAR(128), \n\
         \tworkflow_id VARCHAR(128), \n\
         \tuser_id VARCHAR(128), \n\
         \tparent_run_id VARCHAR(128), \n\
         \tstatus VARCHAR(50), \n\
         \trun_index BIGINT, \n\
         \trun_data JSON NOT NULL, \n\
         \tcreated_at BIGINT NOT NULL, \n\
         \tupdated_at BIGINT, \n\
         \tPRIMARY KEY (run_id), \n\
         {indexes}\
         \tINDEX `{t}_runs_session_id_run_index` (session_id, run_index), \n\
         \tFOREIGN KEY(session_id) REFERENCES `{sessions}` (session_id) ON DELETE CASCADE\n\
         )"
    )
}

pub(crate) fn versions_ddl(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\
         \ttable_name VARCHAR(128) NOT NULL, \n\
         \tversion VARCHAR(10) NOT NULL, \n\
         \tcreated_at VARCHAR(128) NOT NULL, \n\
         \tupdated_at VARCHAR(128), \n\
         \tPRIMARY KEY (table_name), \n\
         \tINDEX `idx_{t}_created_at` (created_at)\n\
         )"
    )
}

impl MySqlState {
    /// Creates the runs table (next to an existing sessions table) when missing, stamped at the
    /// latest version, as Agno does when it first needs it.
    pub(crate) async fn ensure_runs_table(&self) -> DbResult<()> {
        let runs = &self.tables().runs;
        if self.create_missing(runs, &self.ddl(Table::Runs)).await? {
            crate::sql::versions::stamp_version(self, runs, LATEST_VERSION).await?;
        }
        Ok(())
    }
}
