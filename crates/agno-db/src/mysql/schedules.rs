//! Schedules in MySQL and MariaDB (`agno_schedules`), and the [`ScheduleStore`] of the adapter
//! (the runs' half lives in `schedule_runs.rs`).
//!
//! Python Agno 3.1 has no MySQL schedule tables, so these and `agno_schedule_runs` mirror its
//! Postgres columns, indexes and foreign key (`SCHEDULE_TABLE_SCHEMA`,
//! `_get_schedule_runs_table_schema`) with the types its MySQL schemas use for the other tables.
//! Every user-scoped statement carries the owner in SQL, matched byte for byte; the poller's claim
//! and release work across owners.

use std::collections::HashMap;

use agno_core::{
    Cell, DbError, DbErrorKind, DbResult, Schedule, ScheduleQuery, ScheduleRun, ScheduleRunUpdate, ScheduleStore,
    ScheduleUpdate, now_epoch_secs,
};
use async_trait::async_trait;
use serde_json::Value;
use sqlx::mysql::MySqlDatabaseError;
use sqlx::{AssertSqlSafe, Connection, MySql, Row};

use super::evals::exact;
use super::{Arg, MySqlDb, bind_args, code, db_error, error_number, marks, push_user, where_clause, with_retries};
use crate::codec::to_json_text;
use crate::schedules::SCHEDULES_PAGE;
use crate::sql::bind_all;
use crate::sql::schedules::{SCHEDULE_COLUMNS, schedule_cells, schedule_from_row};

/// Due schedules a claim tries, soonest first, before giving up until the next poll.
const CLAIM_CANDIDATES: i64 = 32;

/// The schedules table: Agno's Postgres columns with MySQL types (`VARCHAR` lengths, `TEXT`,
/// `JSON`, `BIGINT`, `BOOL`), the same index names, in one statement.
///
/// MySQL has no partial unique indexes: Postgres's `uq_user_name (user_id, name) WHERE user_id IS
/// NOT NULL` becomes a plain unique key (rows with a `NULL` owner never collide in it), and
/// `uq_unowned_name (name) WHERE user_id IS NULL` a unique key on the stored generated column
/// `unowned_name`, which holds the name only when there is no owner. `name` and `user_id` use the
/// binary collation so both keys compare case-sensitively, as Postgres does (trailing spaces are
/// still ignored by MySQL's `PAD SPACE` collations).
pub(crate) fn schedules_ddl(t: &str) -> String {
    const BIN: &str = "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin";
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\
         \tid VARCHAR(128) NOT NULL, \n\
         \tname VARCHAR(255) {BIN} NOT NULL, \n\
         \tdescription TEXT, \n\
         \tmethod VARCHAR(20) NOT NULL, \n\
         \tendpoint TEXT NOT NULL, \n\
         \tpayload JSON, \n\
         \tcron_expr VARCHAR(128) NOT NULL, \n\
         \ttimezone VARCHAR(64) NOT NULL, \n\
         \ttimeout_seconds BIGINT NOT NULL, \n\
         \tmax_retries BIGINT NOT NULL, \n\
         \tretry_delay_seconds BIGINT NOT NULL, \n\
         \tenabled BOOL NOT NULL, \n\
         \tnext_run_at BIGINT, \n\
         \tlocked_by VARCHAR(128), \n\
         \tlocked_at BIGINT, \n\
         \tuser_id VARCHAR(128) {BIN}, \n\
         \tmanaged_by VARCHAR(50), \n\
         \ttarget_type VARCHAR(50), \n\
         \ttarget_id VARCHAR(128), \n\
         \tcreated_by_run_id VARCHAR(128), \n\
         \tcreated_by_session_id VARCHAR(128), \n\
         \tupdated_by_run_id VARCHAR(128), \n\
         \tupdated_by_session_id VARCHAR(128), \n\
         \tdisabled_reason TEXT, \n\
         \tcreated_at BIGINT NOT NULL, \n\
         \tupdated_at BIGINT, \n\
         \tunowned_name VARCHAR(255) {BIN} AS (CASE WHEN user_id IS NULL THEN name END) STORED, \n\
         \tPRIMARY KEY (id), \n\
         \tCONSTRAINT `{t}_uq_user_name` UNIQUE (user_id, name), \n\
         \tCONSTRAINT `{t}_uq_unowned_name` UNIQUE (unowned_name), \n\
         \tINDEX `idx_{t}_name` (name), \n\
         \tINDEX `idx_{t}_next_run_at` (next_run_at), \n\
         \tINDEX `idx_{t}_user_id` (user_id), \n\
         \tINDEX `idx_{t}_managed_by` (managed_by), \n\
         \tINDEX `idx_{t}_target_id` (target_id), \n\
         \tINDEX `idx_{t}_created_at` (created_at), \n\
         \tINDEX `idx_{t}_enabled_next_run_at` (enabled, next_run_at), \n\
         \tINDEX `idx_{t}_user_id_enabled_next_run_at` (user_id, enabled, next_run_at)\n\
         )"
    )
}

pub(super) fn text_arg(v: &Option<String>) -> Arg {
    v.clone().map_or(Arg::Null, Arg::Str)
}

pub(super) fn int_arg(v: Option<i64>) -> Arg {
    v.map_or(Arg::Null, Arg::Int)
}

/// A JSON column value: SQL `NULL` when absent.
pub(super) fn json_arg(v: &Option<Value>) -> DbResult<Arg> {
    Ok(match v {
        Some(v) => Arg::Str(to_json_text(v)?),
        None => Arg::Null,
    })
}

fn cell_arg(cell: &Cell) -> DbResult<Arg> {
    Ok(match cell {
        Cell::Text(v) => text_arg(v),
        Cell::Int(v) => int_arg(*v),
        Cell::Bool(v) => Arg::Int(i64::from(*v)),
        Cell::Json(v) => json_arg(v)?,
    })
}

/// `SET a = ?, b = ?` and its binds.
pub(super) fn set_clause(cols: &[(&'static str, Cell)]) -> DbResult<(String, Vec<Arg>)> {
    let set = cols.iter().map(|(c, _)| format!("{c} = ?")).collect::<Vec<_>>().join(", ");
    let args = cols.iter().map(|(_, cell)| cell_arg(cell)).collect::<DbResult<Vec<_>>>()?;
    Ok((set, args))
}

/// True when a duplicate-key error names the primary key rather than a unique key.
fn duplicate_primary(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(d) => {
            d.try_downcast_ref::<MySqlDatabaseError>().is_some_and(|m| m.message().contains("PRIMARY"))
        }
        _ => false,
    }
}

/// A conflict error. It carries the driver error's text but not the error itself, so that
/// [`with_retries`] does not take the duplicate key for a lost race.
pub(super) fn conflict(message: &str, e: &sqlx::Error) -> DbError {
    DbError::new(DbErrorKind::Conflict, format!("{message}: {e}"))
}

fn name_conflict(name: &str, e: &sqlx::Error) -> DbError {
    conflict(&format!("a schedule named {name:?} already exists for this owner"), e)
}

impl MySqlDb {
    /// Reads one schedule (only the owner's when `user_id` is given) on an executor.
    async fn read_schedule<'c, E>(&self, executor: E, id: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>>
    where
        E: sqlx::Executor<'c, Database = sqlx::MySql>,
    {
        let t = &self.tables().schedules;
        let mut conditions = vec!["id = ?".to_owned()];
        let mut args = vec![Arg::Str(id.to_owned())];
        push_user(&mut conditions, &mut args, user_id);
        let sql = format!("SELECT {SCHEDULE_COLUMNS} FROM `{t}`{}", where_clause(&conditions));
        let row = bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
            .fetch_optional(executor)
            .await
            .map_err(|e| db_error(&format!("cannot read schedule {id}"), e))?;
        row.as_ref().map(schedule_from_row::<MySql>).transpose()
    }

    /// One attempt at [`ScheduleStore::update_schedule`]: the update and the read back in one
    /// transaction.
    async fn try_update_schedule(
        &self,
        id: &str,
        user_id: Option<&str>,
        update: &ScheduleUpdate,
    ) -> DbResult<Option<Schedule>> {
        let t = &self.tables().schedules;
        let (set, mut args) = set_clause(&update.columns(now_epoch_secs()))?;
        let mut conditions = vec!["id = ?".to_owned()];
        args.push(Arg::Str(id.to_owned()));
        push_user(&mut conditions, &mut args, user_id);
        let sql = format!("UPDATE `{t}` SET {set}{}", where_clause(&conditions));
        let mut conn = self.read_committed_conn().await?;
        let mut tx = conn.begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
        let done = bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args).execute(&mut *tx).await.map_err(|e| {
            match (error_number(&e), &update.name) {
                (Some(code::DUPLICATE_KEY), Some(name)) => name_conflict(name, &e),
                _ => db_error(&format!("cannot update schedule {id}"), e),
            }
        })?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        let updated = self.read_schedule(&mut *tx, id, user_id).await?;
        tx.commit().await.map_err(|e| db_error(&format!("cannot commit the update of schedule {id}"), e))?;
        Ok(updated)
    }

    /// One attempt at [`ScheduleStore::delete_schedule`]: the owner's runs, then the schedule, in
    /// one transaction.
    async fn try_delete_schedule(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        let t = self.tables().clone();
        let mut conditions = vec!["schedule_id = ?".to_owned()];
        let mut args = vec![Arg::Str(id.to_owned())];
        push_user(&mut conditions, &mut args, user_id);
        let runs_sql = format!("DELETE FROM `{}`{}", t.schedule_runs, where_clause(&conditions));
        conditions[0] = "id = ?".to_owned();
        let sql = format!("DELETE FROM `{}`{}", t.schedules, where_clause(&conditions));
        let mut conn = self.read_committed_conn().await?;
        let mut tx = conn.begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
        bind_args(sqlx::query(AssertSqlSafe(runs_sql.as_str())), &args)
            .execute(&mut *tx)
            .await
            .map_err(|e| db_error(&format!("cannot delete the runs of schedule {id}"), e))?;
        let done = bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
            .execute(&mut *tx)
            .await
            .map_err(|e| db_error(&format!("cannot delete schedule {id}"), e))?;
        tx.commit().await.map_err(|e| db_error(&format!("cannot commit the delete of schedule {id}"), e))?;
        Ok(done.rows_affected() > 0)
    }

    /// One attempt at [`ScheduleStore::claim_due_schedule`], in one transaction: list the due
    /// schedules soonest first, then lock the first one no other worker holds (`FOR UPDATE SKIP
    /// LOCKED`, re-checking it is still claimable) and claim it.
    ///
    /// Each candidate is locked by its primary key, so a claim holds one row lock whatever plan
    /// the optimizer picks (a sorted scan under `LIMIT 1 FOR UPDATE` may lock every due row and
    /// starve the other workers). Needs MySQL 8.0 or MariaDB 10.6.
    async fn try_claim_schedule(
        &self,
        worker_id: &str,
        lock_grace_seconds: i64,
        now: i64,
    ) -> DbResult<Option<Schedule>> {
        let t = &self.tables().schedules;
        let due = "enabled AND next_run_at IS NOT NULL AND next_run_at <= ? \
                   AND (locked_by IS NULL OR (locked_at IS NOT NULL AND locked_at <= ?))";
        let stale = now.saturating_sub(lock_grace_seconds);
        let list = format!("SELECT id FROM `{t}` WHERE {due} ORDER BY next_run_at, CAST(id AS BINARY) LIMIT ?");
        let lock = format!("SELECT id FROM `{t}` WHERE id = ? AND {due} FOR UPDATE SKIP LOCKED");
        let claim = format!("UPDATE `{t}` SET locked_by = ?, locked_at = ? WHERE id = ?");
        let mut conn = self.read_committed_conn().await?;
        let mut tx = conn.begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
        let candidates: Vec<String> = sqlx::query_scalar(AssertSqlSafe(list.as_str()))
            .bind(now)
            .bind(stale)
            .bind(CLAIM_CANDIDATES)
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| db_error("cannot list due schedules", e))?;
        for id in candidates {
            let locked = sqlx::query(AssertSqlSafe(lock.as_str()))
                .bind(&id)
                .bind(now)
                .bind(stale)
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| db_error(&format!("cannot lock schedule {id}"), e))?;
            if locked.is_none() {
                continue;
            }
            sqlx::query(AssertSqlSafe(claim.as_str()))
                .bind(worker_id)
                .bind(now)
                .bind(&id)
                .execute(&mut *tx)
                .await
                .map_err(|e| db_error(&format!("cannot claim schedule {id}"), e))?;
            let claimed = self.read_schedule(&mut *tx, &id, None).await?;
            tx.commit().await.map_err(|e| db_error(&format!("cannot commit the claim of schedule {id}"), e))?;
            return Ok(claimed);
        }
        Ok(None)
    }
}

#[async_trait]
impl ScheduleStore for MySqlDb {
    async fn create_schedule(&self, schedule: &Schedule) -> DbResult<Schedule> {
        let t = &self.tables().schedules;
        let sql = format!("INSERT INTO `{t}` ({SCHEDULE_COLUMNS}) VALUES ({})", marks(26));
        let id = &schedule.id;
        bind_all::<MySql>(sqlx::query(AssertSqlSafe(sql.as_str())), schedule_cells::<MySql>(schedule))?
            .execute(self.pool())
            .await
            .map_err(|e| match error_number(&e) {
                Some(code::DUPLICATE_KEY) if duplicate_primary(&e) => {
                    conflict(&format!("schedule {id} already exists"), &e)
                }
                Some(code::DUPLICATE_KEY) => name_conflict(&schedule.name, &e),
                _ => db_error(&format!("cannot create schedule {id}"), e),
            })?;
        Ok(schedule.clone())
    }

    async fn get_schedule(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>> {
        self.read_schedule(self.pool(), id, user_id).await
    }

    async fn get_schedule_by_name(&self, name: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>> {
        let t = &self.tables().schedules;
        let mut conditions = vec![exact("name")];
        let mut args = vec![Arg::Str(name.to_owned()), Arg::Str(name.to_owned())];
        match user_id {
            Some(_) => push_user(&mut conditions, &mut args, user_id),
            None => conditions.push("user_id IS NULL".to_owned()),
        }
        let sql = format!("SELECT {SCHEDULE_COLUMNS} FROM `{t}`{}", where_clause(&conditions));
        let row = bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot read schedule {name:?}"), e))?;
        row.as_ref().map(schedule_from_row::<MySql>).transpose()
    }

    async fn get_schedules(&self, query: &ScheduleQuery) -> DbResult<(Vec<Schedule>, u64)> {
        let t = &self.tables().schedules;
        let mut conditions = Vec::new();
        let mut args = Vec::new();
        if let Some(enabled) = query.enabled {
            conditions.push("enabled = ?".to_owned());
            args.push(Arg::Int(i64::from(enabled)));
        }
        push_user(&mut conditions, &mut args, query.user_id.as_deref());
        let clause = where_clause(&conditions);
        let sql =
            format!("SELECT {SCHEDULE_COLUMNS} FROM `{t}`{clause} ORDER BY created_at DESC, CAST(id AS BINARY) DESC");
        let count_sql = format!("SELECT COUNT(*) AS n FROM `{t}`{clause}");
        let paging = (Some(query.limit.unwrap_or(SCHEDULES_PAGE)), query.page);
        let (rows, total) = self.page_and_count(sql, &count_sql, &args, paging, "schedules").await?;
        let schedules = crate::codec::readable(
            "schedule",
            rows.iter().map(|r| (r.try_get::<String, _>("id").ok(), schedule_from_row::<MySql>(r))),
        );
        Ok((schedules, total))
    }

    async fn update_schedule(
        &self,
        id: &str,
        user_id: Option<&str>,
        update: &ScheduleUpdate,
    ) -> DbResult<Option<Schedule>> {
        with_retries(|| self.try_update_schedule(id, user_id, update)).await
    }

    async fn delete_schedule(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        with_retries(|| self.try_delete_schedule(id, user_id)).await
    }

    async fn claim_due_schedule(
        &self,
        worker_id: &str,
        lock_grace_seconds: i64,
        now: i64,
    ) -> DbResult<Option<Schedule>> {
        with_retries(|| self.try_claim_schedule(worker_id, lock_grace_seconds, now)).await
    }

    async fn release_schedule(
        &self,
        id: &str,
        next_run_at: Option<i64>,
        worker_id: Option<&str>,
        locked_at: Option<i64>,
    ) -> DbResult<bool> {
        let t = &self.tables().schedules;
        // An on-demand schedule (no cron) is never re-armed from the executor's snapshot.
        let mut args = vec![Arg::Int(now_epoch_secs()), int_arg(next_run_at), Arg::Str(id.to_owned())];
        let mut conditions = vec!["id = ?".to_owned()];
        if let Some(w) = worker_id {
            conditions.push(exact("locked_by"));
            args.extend([Arg::Str(w.to_owned()), Arg::Str(w.to_owned())]);
        }
        if let Some(at) = locked_at {
            conditions.push("locked_at = ?".to_owned());
            args.push(Arg::Int(at));
        }
        let sql = format!(
            "UPDATE `{t}` SET locked_by = NULL, locked_at = NULL, updated_at = ?, \
             next_run_at = CASE WHEN cron_expr = '' THEN NULL ELSE COALESCE(?, next_run_at) END{}",
            where_clause(&conditions)
        );
        let done = with_retries(|| async {
            bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
                .execute(self.pool())
                .await
                .map_err(|e| db_error(&format!("cannot release schedule {id}"), e))
        })
        .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn renew_schedule_claim(&self, id: &str, worker_id: &str, now: i64) -> DbResult<bool> {
        let t = &self.tables().schedules;
        let sql = format!("UPDATE `{t}` SET locked_at = ? WHERE id = ? AND {}", exact("locked_by"));
        let args = vec![
            Arg::Int(now),
            Arg::Str(id.to_owned()),
            Arg::Str(worker_id.to_owned()),
            Arg::Str(worker_id.to_owned()),
        ];
        let done = with_retries(|| async {
            bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
                .execute(self.pool())
                .await
                .map_err(|e| db_error(&format!("cannot renew the claim of schedule {id}"), e))
        })
        .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn create_schedule_run(&self, run: &ScheduleRun) -> DbResult<ScheduleRun> {
        with_retries(|| self.try_create_schedule_run(run)).await
    }

    async fn update_schedule_run(&self, id: &str, update: &ScheduleRunUpdate) -> DbResult<Option<ScheduleRun>> {
        with_retries(|| self.try_update_schedule_run(id, update)).await
    }

    async fn get_schedule_run(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<ScheduleRun>> {
        self.read_schedule_run(self.pool(), id, user_id).await
    }

    async fn get_schedule_runs(
        &self,
        schedule_id: &str,
        user_id: Option<&str>,
        limit: Option<usize>,
        page: Option<usize>,
    ) -> DbResult<(Vec<ScheduleRun>, u64)> {
        self.list_schedule_runs(schedule_id, user_id, limit, page).await
    }

    async fn get_latest_schedule_runs(&self, schedule_ids: &[String]) -> DbResult<HashMap<String, ScheduleRun>> {
        self.latest_schedule_runs(schedule_ids).await
    }

    async fn delete_schedule_runs(&self, schedule_id: &str, before: i64) -> DbResult<u64> {
        self.expire_schedule_runs(schedule_id, before).await
    }
}
