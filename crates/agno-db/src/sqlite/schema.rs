//! DDL of the SQLite tables, identical to what Python Agno 3.1 creates, and the schema-version
//! table.

use crate::sql::SqlAdapter;
use agno_core::DbResult;
use sqlx::AssertSqlSafe;

use super::{SqliteState, db_error};

pub(crate) fn sessions_ddl(t: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {t} (\n\tsession_id VARCHAR NOT NULL, \n\tsession_type VARCHAR NOT NULL, \n\tagent_id VARCHAR, \n\tteam_id VARCHAR, \n\tworkflow_id VARCHAR, \n\tuser_id VARCHAR, \n\tsession_data JSON, \n\tagent_data JSON, \n\tteam_data JSON, \n\tworkflow_data JSON, \n\tmetadata JSON, \n\tsummary JSON, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (session_id)\n)"
        ),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_session_type ON {t} (session_type)"),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_created_at ON {t} (created_at)"),
    ]
}

pub(crate) fn runs_ddl(t: &str, sessions: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {t} (\n\trun_id VARCHAR NOT NULL, \n\tsession_id VARCHAR NOT NULL, \n\trun_type VARCHAR NOT NULL, \n\tagent_id VARCHAR, \n\tteam_id VARCHAR, \n\tworkflow_id VARCHAR, \n\tuser_id VARCHAR, \n\tparent_run_id VARCHAR, \n\tstatus VARCHAR, \n\trun_index BIGINT, \n\trun_data JSON NOT NULL, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (run_id), \n\tFOREIGN KEY(session_id) REFERENCES {sessions} (session_id) ON DELETE CASCADE\n)"
    )];
    for col in ["run_type", "team_id", "status", "workflow_id", "created_at", "user_id", "session_id", "agent_id"] {
        ddl.push(format!("CREATE INDEX IF NOT EXISTS idx_{t}_{col} ON {t} ({col})"));
    }
    ddl.push(format!("CREATE INDEX IF NOT EXISTS idx_{t}_session_id_run_index ON {t} (session_id, run_index)"));
    ddl
}

/// The run facts table ([`crate::TableNames::run_facts`]): gone with its run.
pub(crate) fn run_facts_ddl(facts: &str, runs: &str) -> Vec<String> {
    vec![format!(
        "CREATE TABLE IF NOT EXISTS {facts} (run_id VARCHAR NOT NULL PRIMARY KEY REFERENCES {runs} (run_id) \
         ON DELETE CASCADE, model VARCHAR, model_provider VARCHAR)"
    )]
}

pub(crate) fn versions_ddl(t: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {t} (\n\ttable_name VARCHAR NOT NULL, \n\tversion VARCHAR NOT NULL, \n\tcreated_at VARCHAR NOT NULL, \n\tupdated_at VARCHAR, \n\tPRIMARY KEY (table_name)\n)"
        ),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_created_at ON {t} (created_at)"),
    ]
}

impl SqliteState {
    pub(crate) async fn exec_all(&self, statements: &[String]) -> DbResult<()> {
        let _turn = self.write_turn().await;
        for sql in statements {
            sqlx::query(AssertSqlSafe(sql.as_str()))
                .execute(self.pool())
                .await
                .map_err(|e| db_error("cannot create table", e))?;
        }
        Ok(())
    }
}
