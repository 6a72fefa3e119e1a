//! Schedule runs in MySQL and MariaDB (`agno_schedule_runs`): each run takes its owner from its
//! schedule when created; the owner scopes the user-facing reads. See `mysql/schedules.rs` for
//! how the table mirrors Python Agno's Postgres one.

use std::collections::HashMap;

use agno_core::{DbError, DbErrorKind, DbResult, ScheduleRun, ScheduleRunUpdate};
use sqlx::{AssertSqlSafe, Connection, MySql, Row};

use super::schedules::{conflict, int_arg, json_arg, set_clause, text_arg};
use super::{Arg, MySqlDb, bind_args, code, db_error, error_number, marks, push_user, where_clause, with_retries};
use crate::schedules::SCHEDULE_RUN_COLUMNS as RUN_COLUMNS;
use crate::schedules::SCHEDULE_RUNS_PAGE;
use crate::sql::schedules::schedule_run_from_row;

/// The schedule runs table: Agno's Postgres columns with MySQL types, the same index names, and
/// the foreign key to the schedules table with `ON DELETE CASCADE`, in one statement.
pub(crate) fn schedule_runs_ddl(t: &str, schedules: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\
         \tid VARCHAR(128) NOT NULL, \n\
         \tschedule_id VARCHAR(128) NOT NULL, \n\
         \tattempt BIGINT NOT NULL, \n\
         \ttriggered_at BIGINT, \n\
         \tcompleted_at BIGINT, \n\
         \tstatus VARCHAR(50) NOT NULL, \n\
         \tstatus_code BIGINT, \n\
         \trun_id VARCHAR(128), \n\
         \tsession_id VARCHAR(128), \n\
         \terror TEXT, \n\
         \tinput JSON, \n\
         \toutput JSON, \n\
         \trequirements JSON, \n\
         \tuser_id VARCHAR(128), \n\
         \tcreated_at BIGINT NOT NULL, \n\
         \tPRIMARY KEY (id), \n\
         \tINDEX `idx_{t}_schedule_id` (schedule_id), \n\
         \tINDEX `idx_{t}_status` (status), \n\
         \tINDEX `idx_{t}_user_id` (user_id), \n\
         \tINDEX `idx_{t}_created_at` (created_at), \n\
         \tFOREIGN KEY(schedule_id) REFERENCES `{schedules}` (id) ON DELETE CASCADE\n\
         )"
    )
}

impl MySqlDb {
    /// Reads one schedule run (only the owner's when `user_id` is given) on an executor.
    pub(super) async fn read_schedule_run<'c, E>(
        &self,
        executor: E,
        id: &str,
        user_id: Option<&str>,
    ) -> DbResult<Option<ScheduleRun>>
    where
        E: sqlx::Executor<'c, Database = sqlx::MySql>,
    {
        let t = &self.tables().schedule_runs;
        let mut conditions = vec!["id = ?".to_owned()];
        let mut args = vec![Arg::Str(id.to_owned())];
        push_user(&mut conditions, &mut args, user_id);
        let sql = format!("SELECT {RUN_COLUMNS} FROM `{t}`{}", where_clause(&conditions));
        let row = bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
            .fetch_optional(executor)
            .await
            .map_err(|e| db_error(&format!("cannot read schedule run {id}"), e))?;
        row.as_ref().map(schedule_run_from_row::<MySql>).transpose()
    }

    /// One attempt at [`create_schedule_run`](agno_core::ScheduleStore::create_schedule_run): an
    /// insert that takes the owner from the schedule row, and the read back, in one transaction.
    pub(super) async fn try_create_schedule_run(&self, run: &ScheduleRun) -> DbResult<ScheduleRun> {
        let t = self.tables().clone();
        let id = &run.id;
        let sql = format!(
            "INSERT INTO `{}` ({RUN_COLUMNS}) SELECT {}, user_id, ? FROM `{}` WHERE id = ?",
            t.schedule_runs,
            marks(13),
            t.schedules
        );
        let args = vec![
            Arg::Str(id.clone()),
            Arg::Str(run.schedule_id.clone()),
            Arg::Int(run.attempt),
            int_arg(run.triggered_at),
            int_arg(run.completed_at),
            Arg::Str(run.status.clone()),
            int_arg(run.status_code),
            text_arg(&run.run_id),
            text_arg(&run.session_id),
            text_arg(&run.error),
            json_arg(&run.input)?,
            json_arg(&run.output)?,
            json_arg(&run.requirements)?,
            Arg::Int(run.created_at),
            Arg::Str(run.schedule_id.clone()),
        ];
        let missing = || DbError::new(DbErrorKind::NotFound, format!("schedule {} does not exist", run.schedule_id));
        let mut conn = self.read_committed_conn().await?;
        let mut tx = conn.begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
        let done = bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args).execute(&mut *tx).await.map_err(|e| {
            match error_number(&e) {
                Some(code::DUPLICATE_KEY) => conflict(&format!("schedule run {id} already exists"), &e),
                // The schedule went between the read and the foreign key check.
                Some(code::FK_PARENT_MISSING) => missing(),
                _ => db_error(&format!("cannot create schedule run {id}"), e),
            }
        })?;
        if done.rows_affected() == 0 {
            return Err(missing());
        }
        let stored = self.read_schedule_run(&mut *tx, id, None).await?;
        tx.commit().await.map_err(|e| db_error(&format!("cannot commit schedule run {id}"), e))?;
        stored.ok_or_else(|| DbError::new(DbErrorKind::Other, format!("schedule run {id} vanished after its insert")))
    }

    /// One attempt at [`update_schedule_run`](agno_core::ScheduleStore::update_schedule_run): the
    /// update and the read back in one transaction.
    pub(super) async fn try_update_schedule_run(
        &self,
        id: &str,
        update: &ScheduleRunUpdate,
    ) -> DbResult<Option<ScheduleRun>> {
        let cols = update.columns();
        if cols.is_empty() {
            return self.read_schedule_run(self.pool(), id, None).await;
        }
        let t = &self.tables().schedule_runs;
        let (set, mut args) = set_clause(&cols)?;
        args.push(Arg::Str(id.to_owned()));
        let sql = format!("UPDATE `{t}` SET {set} WHERE id = ?");
        let mut conn = self.read_committed_conn().await?;
        let mut tx = conn.begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
        let done = bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
            .execute(&mut *tx)
            .await
            .map_err(|e| db_error(&format!("cannot update schedule run {id}"), e))?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        let updated = self.read_schedule_run(&mut *tx, id, None).await?;
        tx.commit().await.map_err(|e| db_error(&format!("cannot commit the update of schedule run {id}"), e))?;
        Ok(updated)
    }

    /// [`get_schedule_runs`](agno_core::ScheduleStore::get_schedule_runs): a schedule's runs, newest
    /// first, one page of them and their count.
    pub(super) async fn list_schedule_runs(
        &self,
        schedule_id: &str,
        user_id: Option<&str>,
        limit: Option<usize>,
        page: Option<usize>,
    ) -> DbResult<(Vec<ScheduleRun>, u64)> {
        let t = &self.tables().schedule_runs;
        let mut conditions = vec!["schedule_id = ?".to_owned()];
        let mut args = vec![Arg::Str(schedule_id.to_owned())];
        push_user(&mut conditions, &mut args, user_id);
        let clause = where_clause(&conditions);
        let sql = format!("SELECT {RUN_COLUMNS} FROM `{t}`{clause} ORDER BY created_at DESC, CAST(id AS BINARY) DESC");
        let count_sql = format!("SELECT COUNT(*) AS n FROM `{t}`{clause}");
        let paging = (Some(limit.unwrap_or(SCHEDULE_RUNS_PAGE)), page);
        let (rows, total) = self.page_and_count(sql, &count_sql, &args, paging, "schedule runs").await?;
        let runs = crate::codec::readable(
            "schedule run",
            rows.iter().map(|r| (r.try_get::<String, _>("id").ok(), schedule_run_from_row::<MySql>(r))),
        );
        Ok((runs, total))
    }

    /// [`get_latest_schedule_runs`](agno_core::ScheduleStore::get_latest_schedule_runs): one window
    /// query over the given schedules.
    pub(super) async fn latest_schedule_runs(&self, schedule_ids: &[String]) -> DbResult<HashMap<String, ScheduleRun>> {
        if schedule_ids.is_empty() {
            return Ok(HashMap::new());
        }
        let t = &self.tables().schedule_runs;
        // A missing triggered_at sorts last under DESC: it counts lowest.
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM (SELECT {RUN_COLUMNS}, ROW_NUMBER() OVER (PARTITION BY schedule_id \
             ORDER BY triggered_at DESC, created_at DESC, CAST(id AS BINARY) DESC) AS rn FROM `{t}` \
             WHERE schedule_id IN ({})) latest WHERE rn = 1",
            marks(schedule_ids.len())
        );
        let args: Vec<Arg> = schedule_ids.iter().map(|id| Arg::Str(id.clone())).collect();
        let rows = bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot read the latest schedule runs", e))?;
        rows.iter().map(schedule_run_from_row::<MySql>).map(|r| r.map(|r| (r.schedule_id.clone(), r))).collect()
    }

    /// [`delete_schedule_runs`](agno_core::ScheduleStore::delete_schedule_runs): completed runs
    /// older than `before`.
    pub(super) async fn expire_schedule_runs(&self, schedule_id: &str, before: i64) -> DbResult<u64> {
        let t = &self.tables().schedule_runs;
        let sql = format!("DELETE FROM `{t}` WHERE schedule_id = ? AND completed_at IS NOT NULL AND completed_at < ?");
        let done = with_retries(|| async {
            sqlx::query(AssertSqlSafe(sql.as_str()))
                .bind(schedule_id)
                .bind(before)
                .execute(self.pool())
                .await
                .map_err(|e| db_error(&format!("cannot delete the runs of schedule {schedule_id}"), e))
        })
        .await?;
        Ok(done.rows_affected())
    }
}
