//! Schedules and schedule runs in SQLite (`agno_schedules`, `agno_schedule_runs`, as Python Agno
//! 3.x shapes them). Owner checks are part of each statement; names are unique per owner through
//! Agno's two partial unique indexes; a claim is one conditional `UPDATE ... RETURNING`, so two
//! workers never hold the same schedule.

use std::collections::HashMap;

use agno_core::{
    DbError, DbErrorKind, DbResult, Schedule, ScheduleQuery, ScheduleRun, ScheduleRunUpdate, ScheduleStore,
    ScheduleUpdate, now_epoch_secs,
};
use async_trait::async_trait;
use sqlx::sqlite::{SqliteArguments, SqliteRow};
use sqlx::{AssertSqlSafe, Row, Sqlite};

use super::{SqliteDb, db_error};
use crate::codec::to_json_text;
use crate::schedules::SCHEDULE_RUN_COLUMNS as RUN_COLUMNS;
use crate::schedules::{SCHEDULE_RUNS_PAGE, SCHEDULES_PAGE};
use crate::sql::schedules::{
    SCHEDULE_COLUMNS, schedule_cells, schedule_from_row, schedule_placeholders, schedule_run_from_row,
};
use crate::sql::{Dialect, bind_all};

/// The schedules table as Python Agno 3.1 creates it (columns, indexes, the per-owner unique
/// names as two partial indexes).
pub(crate) fn schedules_ddl(t: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {t} (\n\tid VARCHAR NOT NULL, \n\tname VARCHAR NOT NULL, \n\tdescription VARCHAR, \n\tmethod VARCHAR NOT NULL, \n\tendpoint VARCHAR NOT NULL, \n\tpayload JSON, \n\tcron_expr VARCHAR NOT NULL, \n\ttimezone VARCHAR NOT NULL, \n\ttimeout_seconds BIGINT NOT NULL, \n\tmax_retries BIGINT NOT NULL, \n\tretry_delay_seconds BIGINT NOT NULL, \n\tenabled BOOLEAN NOT NULL, \n\tnext_run_at BIGINT, \n\tlocked_by VARCHAR, \n\tlocked_at BIGINT, \n\tuser_id VARCHAR, \n\tmanaged_by VARCHAR, \n\ttarget_type VARCHAR, \n\ttarget_id VARCHAR, \n\tcreated_by_run_id VARCHAR, \n\tcreated_by_session_id VARCHAR, \n\tupdated_by_run_id VARCHAR, \n\tupdated_by_session_id VARCHAR, \n\tdisabled_reason VARCHAR, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (id)\n)"
    )];
    for col in ["user_id", "target_id", "next_run_at", "created_at", "name", "managed_by"] {
        ddl.push(format!("CREATE INDEX IF NOT EXISTS idx_{t}_{col} ON {t} ({col})"));
    }
    ddl.push(format!("CREATE INDEX IF NOT EXISTS idx_{t}_enabled_next_run_at ON {t} (enabled, next_run_at)"));
    ddl.push(format!(
        "CREATE INDEX IF NOT EXISTS idx_{t}_user_id_enabled_next_run_at ON {t} (user_id, enabled, next_run_at)"
    ));
    ddl.push(format!("CREATE UNIQUE INDEX IF NOT EXISTS {t}_uq_unowned_name ON {t} (name) WHERE user_id IS NULL"));
    ddl.push(format!(
        "CREATE UNIQUE INDEX IF NOT EXISTS {t}_uq_user_name ON {t} (user_id, name) WHERE user_id IS NOT NULL"
    ));
    ddl
}

/// The schedule runs table as Python Agno 3.1 creates it (cascading foreign key to schedules).
pub(crate) fn schedule_runs_ddl(t: &str, schedules: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {t} (\n\tid VARCHAR NOT NULL, \n\tschedule_id VARCHAR NOT NULL, \n\tattempt BIGINT NOT NULL, \n\ttriggered_at BIGINT, \n\tcompleted_at BIGINT, \n\tstatus VARCHAR NOT NULL, \n\tstatus_code BIGINT, \n\trun_id VARCHAR, \n\tsession_id VARCHAR, \n\terror VARCHAR, \n\tinput JSON, \n\toutput JSON, \n\trequirements JSON, \n\tuser_id VARCHAR, \n\tcreated_at BIGINT NOT NULL, \n\tPRIMARY KEY (id), \n\tFOREIGN KEY(schedule_id) REFERENCES {schedules} (id) ON DELETE CASCADE\n)"
    )];
    for col in ["schedule_id", "status", "user_id", "created_at"] {
        ddl.push(format!("CREATE INDEX IF NOT EXISTS idx_{t}_{col} ON {t} ({col})"));
    }
    ddl
}

type Query<'q> = sqlx::query::Query<'q, Sqlite, SqliteArguments>;

fn name_conflict(e: sqlx::Error, name: &str, id: &str) -> DbError {
    match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => {
            let what = if d.message().contains(".id") {
                format!("schedule {id} already exists")
            } else {
                format!("a schedule named {name:?} already exists for this owner")
            };
            DbError::new(DbErrorKind::Conflict, what).with_source(e)
        }
        _ => db_error(&format!("cannot write schedule {id}"), e),
    }
}

impl SqliteDb {
    async fn first_row(&self, q: Query<'_>, what: &str) -> DbResult<Option<SqliteRow>> {
        q.fetch_all(self.pool()).await.map(|rows| rows.into_iter().next()).map_err(|e| db_error(what, e))
    }
}

#[async_trait]
impl ScheduleStore for SqliteDb {
    async fn create_schedule(&self, s: &Schedule) -> DbResult<Schedule> {
        let _turn = self.write_turn().await;
        let marks = schedule_placeholders::<Sqlite>();
        let sql = format!("INSERT INTO {} ({SCHEDULE_COLUMNS}) VALUES ({marks})", self.tables().schedules);
        bind_all::<Sqlite>(sqlx::query(AssertSqlSafe(sql.as_str())), schedule_cells::<Sqlite>(s))?
            .execute(self.pool())
            .await
            .map_err(|e| name_conflict(e, &s.name, &s.id))?;
        Ok(s.clone())
    }

    async fn get_schedule(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>> {
        let sql = format!(
            "SELECT {SCHEDULE_COLUMNS} FROM {} WHERE id = ? AND (? IS NULL OR user_id = ?)",
            self.tables().schedules
        );
        let q = sqlx::query(AssertSqlSafe(sql)).bind(id).bind(user_id).bind(user_id);
        self.first_row(q, &format!("cannot read schedule {id}"))
            .await?
            .as_ref()
            .map(schedule_from_row::<Sqlite>)
            .transpose()
    }

    async fn get_schedule_by_name(&self, name: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>> {
        // `IS` matches NULL to NULL: no owner addresses the unowned bucket only.
        let sql = format!("SELECT {SCHEDULE_COLUMNS} FROM {} WHERE name = ? AND user_id IS ?", self.tables().schedules);
        let q = sqlx::query(AssertSqlSafe(sql)).bind(name).bind(user_id);
        self.first_row(q, &format!("cannot read schedule {name:?}"))
            .await?
            .as_ref()
            .map(schedule_from_row::<Sqlite>)
            .transpose()
    }

    async fn get_schedules(&self, query: &ScheduleQuery) -> DbResult<(Vec<Schedule>, u64)> {
        let t = &self.tables().schedules;
        let clause = "(? IS NULL OR enabled = ?) AND (? IS NULL OR user_id = ?)";
        let select = format!("SELECT {SCHEDULE_COLUMNS} FROM {t} WHERE {clause} ORDER BY created_at DESC, id DESC");
        let count = format!("SELECT COUNT(*) FROM {t} WHERE {clause}");
        let enabled = query.enabled.map(|e| i64::from(e).to_string());
        let binds = [enabled.clone(), enabled, query.user_id.clone(), query.user_id.clone()];
        let paging = (Some(query.limit.unwrap_or(SCHEDULES_PAGE)), query.page);
        let (rows, total) = self.page_and_count(&select, &count, &binds, paging, "schedules").await?;
        Ok((
            crate::codec::readable(
                "schedule",
                rows.iter().map(|r| (r.try_get::<String, _>("id").ok(), schedule_from_row::<Sqlite>(r))),
            ),
            total,
        ))
    }

    async fn update_schedule(
        &self,
        id: &str,
        user_id: Option<&str>,
        update: &ScheduleUpdate,
    ) -> DbResult<Option<Schedule>> {
        let cols = update.columns(now_epoch_secs());
        let set = cols.iter().map(|(c, _)| format!("{c} = ?")).collect::<Vec<_>>().join(", ");
        let sql = format!(
            "UPDATE {} SET {set} WHERE id = ? AND (? IS NULL OR user_id = ?) RETURNING {SCHEDULE_COLUMNS}",
            self.tables().schedules
        );
        let name = update.name.clone().unwrap_or_default();
        let _turn = self.write_turn().await;
        let mut q = sqlx::query(AssertSqlSafe(sql));
        for (_, cell) in cols {
            q = Sqlite::bind(q, cell)?;
        }
        let rows = q
            .bind(id)
            .bind(user_id)
            .bind(user_id)
            .fetch_all(self.pool())
            .await
            .map_err(|e| name_conflict(e, &name, id))?;
        rows.first().map(schedule_from_row::<Sqlite>).transpose()
    }

    async fn delete_schedule(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        let t = self.tables();
        let _turn = self.write_turn().await;
        let mut tx = self.pool().begin().await.map_err(|e| db_error("cannot begin a schedule delete", e))?;
        // The cascade carries the owner guard too, so another user's runs are kept.
        let runs = format!("DELETE FROM {} WHERE schedule_id = ? AND (? IS NULL OR user_id = ?)", t.schedule_runs);
        sqlx::query(AssertSqlSafe(runs))
            .bind(id)
            .bind(user_id)
            .bind(user_id)
            .execute(&mut *tx)
            .await
            .map_err(|e| db_error(&format!("cannot delete the runs of schedule {id}"), e))?;
        let sql = format!("DELETE FROM {} WHERE id = ? AND (? IS NULL OR user_id = ?)", t.schedules);
        let done = sqlx::query(AssertSqlSafe(sql))
            .bind(id)
            .bind(user_id)
            .bind(user_id)
            .execute(&mut *tx)
            .await
            .map_err(|e| db_error(&format!("cannot delete schedule {id}"), e))?;
        tx.commit().await.map_err(|e| db_error(&format!("cannot delete schedule {id}"), e))?;
        Ok(done.rows_affected() > 0)
    }

    async fn claim_due_schedule(
        &self,
        worker_id: &str,
        lock_grace_seconds: i64,
        now: i64,
    ) -> DbResult<Option<Schedule>> {
        let t = &self.tables().schedules;
        let due = "enabled AND next_run_at <= ? AND (locked_by IS NULL OR locked_at <= ?)";
        // One statement: SQLite's single writer makes the pick and the claim atomic.
        let sql = format!(
            "UPDATE {t} SET locked_by = ?, locked_at = ? WHERE id = \
             (SELECT id FROM {t} WHERE {due} ORDER BY next_run_at, id LIMIT 1) AND {due} \
             RETURNING {SCHEDULE_COLUMNS}"
        );
        let stale = now - lock_grace_seconds;
        let _turn = self.write_turn().await;
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(worker_id)
            .bind(now)
            .bind(now)
            .bind(stale)
            .bind(now)
            .bind(stale)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot claim a due schedule", e))?;
        rows.first().map(schedule_from_row::<Sqlite>).transpose()
    }

    async fn release_schedule(
        &self,
        id: &str,
        next_run_at: Option<i64>,
        worker_id: Option<&str>,
        locked_at: Option<i64>,
    ) -> DbResult<bool> {
        let sql = format!(
            "UPDATE {} SET locked_by = NULL, locked_at = NULL, updated_at = ?, \
             next_run_at = CASE WHEN cron_expr = '' THEN NULL ELSE COALESCE(?, next_run_at) END \
             WHERE id = ? AND (? IS NULL OR locked_by = ?) AND (? IS NULL OR locked_at = ?)",
            self.tables().schedules
        );
        let _turn = self.write_turn().await;
        let done = sqlx::query(AssertSqlSafe(sql))
            .bind(now_epoch_secs())
            .bind(next_run_at)
            .bind(id)
            .bind(worker_id)
            .bind(worker_id)
            .bind(locked_at)
            .bind(locked_at)
            .execute(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot release schedule {id}"), e))?;
        Ok(done.rows_affected() > 0)
    }

    async fn renew_schedule_claim(&self, id: &str, worker_id: &str, now: i64) -> DbResult<bool> {
        let sql = format!("UPDATE {} SET locked_at = ? WHERE id = ? AND locked_by = ?", self.tables().schedules);
        let _turn = self.write_turn().await;
        let done = sqlx::query(AssertSqlSafe(sql))
            .bind(now)
            .bind(id)
            .bind(worker_id)
            .execute(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot renew the claim of schedule {id}"), e))?;
        Ok(done.rows_affected() > 0)
    }

    async fn create_schedule_run(&self, run: &ScheduleRun) -> DbResult<ScheduleRun> {
        let t = self.tables();
        // The owner is copied from the schedule in the same statement.
        let sql = format!(
            "INSERT INTO {} ({RUN_COLUMNS}) SELECT ?, id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, user_id, ? FROM {} \
             WHERE id = ? RETURNING {RUN_COLUMNS}",
            t.schedule_runs, t.schedules
        );
        let _turn = self.write_turn().await;
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(&run.id)
            .bind(run.attempt)
            .bind(run.triggered_at)
            .bind(run.completed_at)
            .bind(&run.status)
            .bind(run.status_code)
            .bind(&run.run_id)
            .bind(&run.session_id)
            .bind(&run.error)
            .bind(run.input.as_ref().map(to_json_text).transpose()?)
            .bind(run.output.as_ref().map(to_json_text).transpose()?)
            .bind(run.requirements.as_ref().map(to_json_text).transpose()?)
            .bind(run.created_at)
            .bind(&run.schedule_id)
            .fetch_all(self.pool())
            .await
            .map_err(|e| match &e {
                sqlx::Error::Database(d) if d.is_unique_violation() => {
                    DbError::new(DbErrorKind::Conflict, format!("schedule run {} already exists", run.id))
                        .with_source(e)
                }
                _ => db_error(&format!("cannot write schedule run {}", run.id), e),
            })?;
        match rows.first() {
            Some(row) => schedule_run_from_row::<Sqlite>(row),
            None => Err(DbError::new(DbErrorKind::NotFound, format!("schedule {} does not exist", run.schedule_id))),
        }
    }

    async fn update_schedule_run(&self, id: &str, update: &ScheduleRunUpdate) -> DbResult<Option<ScheduleRun>> {
        let cols = update.columns();
        if cols.is_empty() {
            return self.get_schedule_run(id, None).await;
        }
        let set = cols.iter().map(|(c, _)| format!("{c} = ?")).collect::<Vec<_>>().join(", ");
        let sql = format!("UPDATE {} SET {set} WHERE id = ? RETURNING {RUN_COLUMNS}", self.tables().schedule_runs);
        let _turn = self.write_turn().await;
        let mut q = sqlx::query(AssertSqlSafe(sql));
        for (_, cell) in cols {
            q = Sqlite::bind(q, cell)?;
        }
        let rows =
            q.bind(id).fetch_all(self.pool()).await.map_err(|e| db_error(&format!("cannot update run {id}"), e))?;
        rows.first().map(schedule_run_from_row::<Sqlite>).transpose()
    }

    async fn get_schedule_run(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<ScheduleRun>> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM {} WHERE id = ? AND (? IS NULL OR user_id = ?)",
            self.tables().schedule_runs
        );
        let q = sqlx::query(AssertSqlSafe(sql)).bind(id).bind(user_id).bind(user_id);
        self.first_row(q, &format!("cannot read schedule run {id}"))
            .await?
            .as_ref()
            .map(schedule_run_from_row::<Sqlite>)
            .transpose()
    }

    async fn get_schedule_runs(
        &self,
        schedule_id: &str,
        user_id: Option<&str>,
        limit: Option<usize>,
        page: Option<usize>,
    ) -> DbResult<(Vec<ScheduleRun>, u64)> {
        let t = &self.tables().schedule_runs;
        let clause = "schedule_id = ? AND (? IS NULL OR user_id = ?)";
        let select = format!("SELECT {RUN_COLUMNS} FROM {t} WHERE {clause} ORDER BY created_at DESC, id DESC");
        let count = format!("SELECT COUNT(*) FROM {t} WHERE {clause}");
        let user = user_id.map(str::to_owned);
        let binds = [Some(schedule_id.to_owned()), user.clone(), user];
        let paging = (Some(limit.unwrap_or(SCHEDULE_RUNS_PAGE)), page);
        let (rows, total) = self.page_and_count(&select, &count, &binds, paging, "schedule runs").await?;
        Ok((
            crate::codec::readable(
                "schedule run",
                rows.iter().map(|r| (r.try_get::<String, _>("id").ok(), schedule_run_from_row::<Sqlite>(r))),
            ),
            total,
        ))
    }

    async fn get_latest_schedule_runs(&self, schedule_ids: &[String]) -> DbResult<HashMap<String, ScheduleRun>> {
        if schedule_ids.is_empty() {
            return Ok(HashMap::new());
        }
        let marks = vec!["?"; schedule_ids.len()].join(", ");
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM (SELECT {RUN_COLUMNS}, ROW_NUMBER() OVER (PARTITION BY schedule_id \
             ORDER BY triggered_at DESC, created_at DESC, id DESC) AS position FROM {} \
             WHERE schedule_id IN ({marks})) WHERE position = 1",
            self.tables().schedule_runs
        );
        let mut q = sqlx::query(AssertSqlSafe(sql));
        for id in schedule_ids {
            q = q.bind(id);
        }
        let rows = q.fetch_all(self.pool()).await.map_err(|e| db_error("cannot read the latest schedule runs", e))?;
        rows.iter().map(schedule_run_from_row::<Sqlite>).map(|r| r.map(|r| (r.schedule_id.clone(), r))).collect()
    }

    async fn delete_schedule_runs(&self, schedule_id: &str, before: i64) -> DbResult<u64> {
        let sql = format!("DELETE FROM {} WHERE schedule_id = ? AND completed_at < ?", self.tables().schedule_runs);
        let _turn = self.write_turn().await;
        let done = sqlx::query(AssertSqlSafe(sql))
            .bind(schedule_id)
            .bind(before)
            .execute(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot expire the runs of schedule {schedule_id}"), e))?;
        Ok(done.rows_affected())
    }
}
