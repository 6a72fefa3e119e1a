//! DDL of the SQLite tables, identical to what Python Agno 3.1 creates, and the schema-version
//! table.

use agno_core::{DbResult, SchemaStore};
use async_trait::async_trait;
use sqlx::AssertSqlSafe;

use super::{SqliteDb, db_error};
use crate::migration::LATEST_VERSION;

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

pub(crate) fn now_iso() -> String {
    // Python Agno stamps `datetime.now().isoformat()`; keep the same shape in UTC.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = i64::try_from(now.as_secs()).unwrap_or(0);
    let micros = now.subsec_micros();
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}", rem / 3600, (rem % 3600) / 60, rem % 60)
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (if m <= 2 { y + 1 } else { y }, m, d)
}

impl SqliteDb {
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

    /// Creates any missing table (sessions, runs, memories, eval runs, knowledge, metrics, schedules,
    /// schedule runs, schema versions) at
    /// the latest schema and stamps it. Existing tables are left alone: use the migrations for those.
    ///
    /// # Errors
    /// A storage error.
    pub async fn create_tables(&self) -> DbResult<()> {
        let t = self.tables().clone();
        self.exec_all(&versions_ddl(&t.versions)).await?;
        for (name, ddl) in [
            (&t.sessions, sessions_ddl(&t.sessions)),
            (&t.runs, runs_ddl(&t.runs, &t.sessions)),
            (&t.memories, super::memories::memories_ddl(&t.memories)),
            (&t.evals, super::evals::evals_ddl(&t.evals)),
            (&t.knowledge, super::knowledge::knowledge_ddl(&t.knowledge)),
            (&t.metrics, super::metrics::metrics_ddl(&t.metrics)),
            (&t.schedules, super::schedules::schedules_ddl(&t.schedules)),
            (&t.schedule_runs, super::schedules::schedule_runs_ddl(&t.schedule_runs, &t.schedules)),
            (&t.jobs, super::jobs::jobs_ddl(&t.jobs)),
            (&t.events, super::jobs::events_ddl(&t.events)),
        ] {
            if !self.table_exists(name).await? {
                self.exec_all(&ddl).await?;
                self.upsert_schema_version(name, LATEST_VERSION).await?;
            }
        }
        // The runs table only ever exists in its v3 shape (the 3.0.0 step may have created it).
        if self.get_latest_schema_version(&t.runs).await?.is_none() {
            self.upsert_schema_version(&t.runs, LATEST_VERSION).await?;
        }
        self.refresh_legacy_flag().await
    }
}

#[async_trait]
impl SchemaStore for SqliteDb {
    async fn get_latest_schema_version(&self, table_name: &str) -> DbResult<Option<String>> {
        if !self.table_exists(&self.tables().versions).await? {
            return Ok(None);
        }
        let sql = format!("SELECT version FROM {} WHERE table_name = ?", self.tables().versions);
        sqlx::query_scalar(AssertSqlSafe(sql.as_str()))
            .bind(table_name)
            .fetch_all(self.pool())
            .await
            .map(|rows| rows.into_iter().next())
            .map_err(|e| db_error("cannot read schema versions", e))
    }

    async fn upsert_schema_version(&self, table_name: &str, version: &str) -> DbResult<()> {
        self.exec_all(&versions_ddl(&self.tables().versions)).await?;
        let _turn = self.write_turn().await;
        let sql = format!(
            "INSERT INTO {} (table_name, version, created_at, updated_at) VALUES (?, ?, ?, ?) \
             ON CONFLICT (table_name) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at",
            self.tables().versions
        );
        let now = now_iso();
        sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(table_name)
            .bind(version)
            .bind(&now)
            .bind(&now)
            .execute(self.pool())
            .await
            .map_err(|e| db_error("cannot stamp schema version", e))?;
        Ok(())
    }
}
