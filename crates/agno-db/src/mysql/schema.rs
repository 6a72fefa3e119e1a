//! DDL of the MySQL tables, identical to what Python Agno 3.1's `MySQLDb` creates (column types
//! and lengths, index and foreign key names), and the schema-version table.
//!
//! `JSON` columns become `LONGTEXT ... CHECK (json_valid(...))` on MariaDB, as they do for Agno.
//! Indexes are declared inside `CREATE TABLE` so creation is one statement on MySQL and MariaDB.

use agno_core::{DbResult, SchemaStore};
use async_trait::async_trait;
use sqlx::AssertSqlSafe;

use super::{MySqlDb, db_error};
use crate::migration::LATEST_VERSION;

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

impl MySqlDb {
    /// Creates the runs table (next to an existing sessions table) when missing, stamped at the
    /// latest version, as Agno does when it first needs it.
    pub(crate) async fn ensure_runs_table(&self) -> DbResult<()> {
        let t = self.tables().clone();
        if !self.table_exists(&t.runs).await? {
            self.exec(&runs_ddl(&t.runs, &t.sessions), &format!("cannot create table {}", t.runs)).await?;
            self.upsert_schema_version(&t.runs, LATEST_VERSION).await?;
        }
        Ok(())
    }

    /// Creates any missing table (sessions, runs, memories, eval runs, knowledge, metrics,
    /// schedules, schedule runs, schema versions) at the latest schema and stamps it. Existing
    /// tables are left alone: use the migrations for those.
    ///
    /// # Errors
    /// A storage error.
    pub async fn create_tables(&self) -> DbResult<()> {
        let t = self.tables().clone();
        self.exec(&versions_ddl(&t.versions), &format!("cannot create table {}", t.versions)).await?;
        if !self.table_exists(&t.sessions).await? {
            self.exec(&sessions_ddl(&t.sessions), &format!("cannot create table {}", t.sessions)).await?;
            self.upsert_schema_version(&t.sessions, LATEST_VERSION).await?;
        }
        self.ensure_runs_table().await?;
        if !self.table_exists(&t.memories).await? {
            let ddl = super::memories::memories_ddl(&t.memories);
            self.exec(&ddl, &format!("cannot create table {}", t.memories)).await?;
            self.upsert_schema_version(&t.memories, LATEST_VERSION).await?;
        }
        if !self.table_exists(&t.evals).await? {
            let ddl = super::evals::evals_ddl(&t.evals);
            self.exec(&ddl, &format!("cannot create table {}", t.evals)).await?;
            self.upsert_schema_version(&t.evals, LATEST_VERSION).await?;
        }
        if !self.table_exists(&t.knowledge).await? {
            let ddl = super::knowledge::knowledge_ddl(&t.knowledge);
            self.exec(&ddl, &format!("cannot create table {}", t.knowledge)).await?;
            self.upsert_schema_version(&t.knowledge, LATEST_VERSION).await?;
        }
        if !self.table_exists(&t.metrics).await? {
            let ddl = super::metrics::metrics_ddl(&t.metrics);
            self.exec(&ddl, &format!("cannot create table {}", t.metrics)).await?;
            self.upsert_schema_version(&t.metrics, LATEST_VERSION).await?;
        }
        // Schedules first: the runs table's foreign key refers to it.
        if !self.table_exists(&t.schedules).await? {
            let ddl = super::schedules::schedules_ddl(&t.schedules);
            self.exec(&ddl, &format!("cannot create table {}", t.schedules)).await?;
            self.upsert_schema_version(&t.schedules, LATEST_VERSION).await?;
        }
        if !self.table_exists(&t.schedule_runs).await? {
            let ddl = super::schedules::schedule_runs_ddl(&t.schedule_runs, &t.schedules);
            self.exec(&ddl, &format!("cannot create table {}", t.schedule_runs)).await?;
            self.upsert_schema_version(&t.schedule_runs, LATEST_VERSION).await?;
        }
        // The background-run queue and its event log (agno-rs's; Agno's MySQLDb has no queue).
        // The jobs table's version row is also the lock of depth-bounded enqueues.
        for (name, ddl) in [(&t.jobs, super::jobs::jobs_ddl(&t.jobs)), (&t.events, super::jobs::events_ddl(&t.events))]
        {
            if !self.table_exists(name).await? {
                self.exec(&ddl, &format!("cannot create table {name}")).await?;
                self.upsert_schema_version(name, LATEST_VERSION).await?;
            }
        }
        Ok(())
    }
}

#[async_trait]
impl SchemaStore for MySqlDb {
    async fn get_latest_schema_version(&self, table_name: &str) -> DbResult<Option<String>> {
        if !self.table_exists(&self.tables().versions).await? {
            return Ok(None);
        }
        let sql = format!("SELECT version FROM `{}` WHERE table_name = ?", self.tables().versions);
        sqlx::query_scalar(AssertSqlSafe(sql.as_str()))
            .bind(table_name)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot read the schema version of {table_name}"), e))
    }

    async fn upsert_schema_version(&self, table_name: &str, version: &str) -> DbResult<()> {
        let t = &self.tables().versions;
        self.exec(&versions_ddl(t), &format!("cannot create table {t}")).await?;
        let sql = format!(
            "INSERT INTO `{t}` (table_name, version, created_at, updated_at) VALUES (?, ?, ?, ?) \
             ON DUPLICATE KEY UPDATE version = VALUES(version), updated_at = VALUES(updated_at)"
        );
        let now = now_iso();
        sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(table_name)
            .bind(version)
            .bind(&now)
            .bind(&now)
            .execute(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot stamp {table_name} at version {version}"), e))?;
        Ok(())
    }
}
