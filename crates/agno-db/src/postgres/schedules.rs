//! Schedules and schedule runs in PostgreSQL (`agno_schedules`, `agno_schedule_runs`, as Python
//! Agno 3.x's `PostgresDb` shapes them): JSONB payloads, names unique per owner through two
//! partial unique indexes, runs cascading from their schedule. The poller's claim is one
//! `UPDATE ... WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED) RETURNING`.

use std::collections::HashMap;

use agno_core::{
    Cell, DbError, DbErrorKind, DbResult, Schedule, ScheduleQuery, ScheduleRun, ScheduleRunUpdate, ScheduleStore,
    ScheduleUpdate, now_epoch_secs,
};
use async_trait::async_trait;
use serde_json::Value;
use sqlx::postgres::PgArguments;
use sqlx::query::Query;
use sqlx::{AssertSqlSafe, Postgres, Row};

use super::schema::index_ddl;
use super::{PostgresDb, db_error, sanitize};
use crate::schedules::SCHEDULE_RUN_COLUMNS as RUN_COLUMNS;
use crate::schedules::{schedule_page, schedule_run_page};
use crate::sql::bind_all;
use crate::sql::schedules::{
    SCHEDULE_COLUMNS, schedule_cells, schedule_from_row, schedule_placeholders, schedule_run_from_row,
};

/// The schedules table as Python Agno 3.1 creates it: columns, the single-column and composite
/// indexes, and the partial unique indexes `{table}_uq_user_name` / `{table}_uq_unowned_name`
/// that keep names unique per owner (NULL owners included).
pub(crate) fn schedules_ddl(q: &str, t: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {q} (\n\tid VARCHAR NOT NULL, \n\tname VARCHAR NOT NULL, \n\tdescription TEXT, \n\tmethod VARCHAR NOT NULL, \n\tendpoint VARCHAR NOT NULL, \n\tpayload JSONB, \n\tcron_expr VARCHAR NOT NULL, \n\ttimezone VARCHAR NOT NULL, \n\ttimeout_seconds BIGINT NOT NULL, \n\tmax_retries BIGINT NOT NULL, \n\tretry_delay_seconds BIGINT NOT NULL, \n\tenabled BOOLEAN NOT NULL, \n\tnext_run_at BIGINT, \n\tlocked_by VARCHAR, \n\tlocked_at BIGINT, \n\tuser_id VARCHAR, \n\tmanaged_by VARCHAR, \n\ttarget_type VARCHAR, \n\ttarget_id VARCHAR, \n\tcreated_by_run_id VARCHAR, \n\tcreated_by_session_id VARCHAR, \n\tupdated_by_run_id VARCHAR, \n\tupdated_by_session_id VARCHAR, \n\tdisabled_reason VARCHAR, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (id)\n)"
    )];
    for columns in [
        &["name"][..],
        &["next_run_at"],
        &["user_id"],
        &["managed_by"],
        &["target_id"],
        &["created_at"],
        &["enabled", "next_run_at"],
        &["user_id", "enabled", "next_run_at"],
    ] {
        ddl.push(index_ddl(q, t, columns));
    }
    ddl.extend(name_backstop_ddl(q, t).into_iter().map(|(_, sql)| sql));
    ddl
}

/// `(index name, DDL)` of the two partial unique indexes backing per-owner schedule names.
pub(crate) fn name_backstop_ddl(q: &str, t: &str) -> [(String, String); 2] {
    let user = format!("{t}_uq_user_name");
    let unowned = format!("{t}_uq_unowned_name");
    [
        (
            user.clone(),
            format!("CREATE UNIQUE INDEX IF NOT EXISTS \"{user}\" ON {q} (user_id, name) WHERE user_id IS NOT NULL"),
        ),
        (
            unowned.clone(),
            format!("CREATE UNIQUE INDEX IF NOT EXISTS \"{unowned}\" ON {q} (name) WHERE user_id IS NULL"),
        ),
    ]
}

/// The schedule runs table as Python Agno 3.1 creates it, its `schedule_id` a foreign key to the
/// schedules table with `ON DELETE CASCADE`.
pub(crate) fn schedule_runs_ddl(q: &str, t: &str, schedules_q: &str) -> Vec<String> {
    let mut ddl = vec![format!(
        "CREATE TABLE IF NOT EXISTS {q} (\n\tid VARCHAR NOT NULL, \n\tschedule_id VARCHAR NOT NULL, \n\tattempt BIGINT NOT NULL, \n\ttriggered_at BIGINT, \n\tcompleted_at BIGINT, \n\tstatus VARCHAR NOT NULL, \n\tstatus_code BIGINT, \n\trun_id VARCHAR, \n\tsession_id VARCHAR, \n\terror TEXT, \n\tinput JSONB, \n\toutput JSONB, \n\trequirements JSONB, \n\tuser_id VARCHAR, \n\tcreated_at BIGINT NOT NULL, \n\tPRIMARY KEY (id), \n\tFOREIGN KEY(schedule_id) REFERENCES {schedules_q} (id) ON DELETE CASCADE\n)"
    )];
    for col in ["schedule_id", "status", "user_id", "created_at"] {
        ddl.push(index_ddl(q, t, &[col]));
    }
    ddl
}

/// A JSON column value with the characters PostgreSQL cannot store removed.
pub(crate) fn clean_json(value: Option<&Value>) -> Option<Value> {
    value.map(|v| {
        let mut v = v.clone();
        sanitize(&mut v);
        v
    })
}

/// Text with the characters PostgreSQL cannot store removed.
pub(crate) fn clean_text(text: Option<&str>) -> Option<String> {
    text.map(|t| {
        let mut v = Value::String(t.to_owned());
        sanitize(&mut v);
        match v {
            Value::String(s) => s,
            _ => String::new(),
        }
    })
}

/// Binds one patch cell.
fn bind_cell<'q>(query: Query<'q, Postgres, PgArguments>, cell: Cell) -> Query<'q, Postgres, PgArguments> {
    match cell {
        Cell::Text(v) => query.bind(clean_text(v.as_deref())),
        Cell::Int(v) => query.bind(v),
        Cell::Bool(v) => query.bind(v),
        Cell::Json(v) => query.bind(clean_json(v.as_ref())),
    }
}

/// `col = $n, ...` for a patch, numbering from `$1`; returns the clause and the next number.
fn set_clause(columns: &[(&'static str, Cell)]) -> (String, usize) {
    let set: Vec<String> = columns.iter().enumerate().map(|(i, (col, _))| format!("{col} = ${}", i + 1)).collect();
    (set.join(", "), columns.len() + 1)
}

/// A unique violation on one of the name indexes is a name conflict; on the key, an id conflict.
fn write_error(what: &str, id: &str, name: &str, e: sqlx::Error) -> DbError {
    if let sqlx::Error::Database(d) = &e
        && d.is_unique_violation()
    {
        let message = if d.constraint().is_some_and(|c| c.ends_with("_pkey")) {
            format!("schedule {id} already exists")
        } else {
            format!("a schedule named {name:?} already exists for this owner")
        };
        return DbError::new(DbErrorKind::Conflict, message).with_source(e);
    }
    db_error(&format!("cannot {what} schedule {id}"), e)
}

/// A count or offset as a bind parameter (saturating).
pub(crate) fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[async_trait]
impl ScheduleStore for PostgresDb {
    async fn create_schedule(&self, schedule: &Schedule) -> DbResult<Schedule> {
        let s = schedule;
        let sql = format!(
            "INSERT INTO {} ({SCHEDULE_COLUMNS}) VALUES ({}) RETURNING {SCHEDULE_COLUMNS}",
            self.qualified(&self.tables().schedules),
            schedule_placeholders::<Postgres>()
        );
        let row = bind_all::<Postgres>(sqlx::query(AssertSqlSafe(sql)), schedule_cells::<Postgres>(s))?
            .fetch_one(self.pool())
            .await
            .map_err(|e| write_error("create", &s.id, &s.name, e))?;
        schedule_from_row::<Postgres>(&row)
    }

    async fn get_schedule(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>> {
        let sql = format!(
            "SELECT {SCHEDULE_COLUMNS} FROM {} WHERE id = $1 AND ($2::text IS NULL OR user_id = $2)",
            self.qualified(&self.tables().schedules)
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(id)
            .bind(user_id)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot read schedule {id}"), e))?;
        row.as_ref().map(schedule_from_row::<Postgres>).transpose()
    }

    async fn get_schedule_by_name(&self, name: &str, user_id: Option<&str>) -> DbResult<Option<Schedule>> {
        // `None` is the unowned bucket (`user_id IS NULL`), never any owner's.
        let sql = format!(
            "SELECT {SCHEDULE_COLUMNS} FROM {} WHERE name = $1 \
             AND (($2::text IS NULL AND user_id IS NULL) OR user_id = $2) LIMIT 1",
            self.qualified(&self.tables().schedules)
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(name)
            .bind(user_id)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot read schedule {name:?}"), e))?;
        row.as_ref().map(schedule_from_row::<Postgres>).transpose()
    }

    async fn get_schedules(&self, query: &ScheduleQuery) -> DbResult<(Vec<Schedule>, u64)> {
        let t = self.qualified(&self.tables().schedules);
        let clause = "($1::boolean IS NULL OR enabled = $1) AND ($2::text IS NULL OR user_id = $2)";
        let (offset, limit) = schedule_page(query);
        let sql = format!(
            "SELECT {SCHEDULE_COLUMNS} FROM {t} WHERE {clause} \
             ORDER BY created_at DESC, id COLLATE \"C\" DESC LIMIT $3 OFFSET $4"
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(query.enabled)
            .bind(&query.user_id)
            .bind(to_i64(limit))
            .bind(to_i64(offset))
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot list schedules", e))?;
        let schedules = crate::codec::readable(
            "schedule",
            rows.iter().map(|r| (r.try_get::<String, _>("id").ok(), schedule_from_row::<Postgres>(r))),
        );
        let total: i64 = sqlx::query_scalar(AssertSqlSafe(format!("SELECT COUNT(*) FROM {t} WHERE {clause}")))
            .bind(query.enabled)
            .bind(&query.user_id)
            .fetch_one(self.pool())
            .await
            .map_err(|e| db_error("cannot count schedules", e))?;
        Ok((schedules, u64::try_from(total).unwrap_or(0)))
    }

    async fn update_schedule(
        &self,
        id: &str,
        user_id: Option<&str>,
        update: &ScheduleUpdate,
    ) -> DbResult<Option<Schedule>> {
        let columns = update.columns(now_epoch_secs());
        let (set, n) = set_clause(&columns);
        let sql = format!(
            "UPDATE {} SET {set} WHERE id = ${n} AND (${}::text IS NULL OR user_id = ${}) RETURNING {SCHEDULE_COLUMNS}",
            self.qualified(&self.tables().schedules),
            n + 1,
            n + 1
        );
        let name = update.name.clone().unwrap_or_default();
        let mut query = sqlx::query(AssertSqlSafe(sql));
        for (_, cell) in columns {
            query = bind_cell(query, cell);
        }
        let row = query
            .bind(id)
            .bind(user_id)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| write_error("update", id, &name, e))?;
        row.as_ref().map(schedule_from_row::<Postgres>).transpose()
    }

    async fn delete_schedule(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        let what = format!("cannot delete schedule {id}");
        let mut tx = self.pool().begin().await.map_err(|e| db_error(&what, e))?;
        // As Python Agno: the cascade carries the owner guard, so another user's runs are kept.
        let runs = format!(
            "DELETE FROM {} WHERE schedule_id = $1 AND ($2::text IS NULL OR user_id = $2)",
            self.qualified(&self.tables().schedule_runs)
        );
        sqlx::query(AssertSqlSafe(runs))
            .bind(id)
            .bind(user_id)
            .execute(&mut *tx)
            .await
            .map_err(|e| db_error(&what, e))?;
        let schedule = format!(
            "DELETE FROM {} WHERE id = $1 AND ($2::text IS NULL OR user_id = $2)",
            self.qualified(&self.tables().schedules)
        );
        let done = sqlx::query(AssertSqlSafe(schedule))
            .bind(id)
            .bind(user_id)
            .execute(&mut *tx)
            .await
            .map_err(|e| db_error(&what, e))?;
        tx.commit().await.map_err(|e| db_error(&what, e))?;
        Ok(done.rows_affected() > 0)
    }

    async fn claim_due_schedule(
        &self,
        worker_id: &str,
        lock_grace_seconds: i64,
        now: i64,
    ) -> DbResult<Option<Schedule>> {
        let t = self.qualified(&self.tables().schedules);
        // SKIP LOCKED passes over a row another worker is claiming; a row claimed and committed
        // since this statement's snapshot is re-checked against the predicate and skipped too.
        let sql = format!(
            "UPDATE {t} SET locked_by = $1, locked_at = $2 WHERE id = (\
             SELECT id FROM {t} WHERE enabled = true AND next_run_at <= $2 \
             AND (locked_by IS NULL OR locked_at <= $3) \
             ORDER BY next_run_at ASC, id COLLATE \"C\" ASC LIMIT 1 FOR UPDATE SKIP LOCKED) \
             RETURNING {SCHEDULE_COLUMNS}"
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(worker_id)
            .bind(now)
            .bind(now.saturating_sub(lock_grace_seconds))
            .fetch_optional(self.pool())
            .await
            .map_err(|e| db_error("cannot claim a due schedule", e))?;
        row.as_ref().map(schedule_from_row::<Postgres>).transpose()
    }

    async fn release_schedule(
        &self,
        id: &str,
        next_run_at: Option<i64>,
        worker_id: Option<&str>,
        locked_at: Option<i64>,
    ) -> DbResult<bool> {
        // An on-demand schedule (no cron) is never re-armed from the executor's snapshot.
        let sql = format!(
            "UPDATE {} SET locked_by = NULL, locked_at = NULL, updated_at = $2, \
             next_run_at = CASE WHEN cron_expr = '' THEN NULL ELSE COALESCE($3, next_run_at) END \
             WHERE id = $1 AND ($4::text IS NULL OR locked_by = $4) AND ($5::bigint IS NULL OR locked_at = $5)",
            self.qualified(&self.tables().schedules)
        );
        let done = sqlx::query(AssertSqlSafe(sql))
            .bind(id)
            .bind(now_epoch_secs())
            .bind(next_run_at)
            .bind(worker_id)
            .bind(locked_at)
            .execute(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot release schedule {id}"), e))?;
        Ok(done.rows_affected() > 0)
    }

    async fn renew_schedule_claim(&self, id: &str, worker_id: &str, now: i64) -> DbResult<bool> {
        let sql = format!(
            "UPDATE {} SET locked_at = $3 WHERE id = $1 AND locked_by = $2",
            self.qualified(&self.tables().schedules)
        );
        let done = sqlx::query(AssertSqlSafe(sql))
            .bind(id)
            .bind(worker_id)
            .bind(now)
            .execute(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot renew the claim of schedule {id}"), e))?;
        Ok(done.rows_affected() > 0)
    }

    async fn create_schedule_run(&self, run: &ScheduleRun) -> DbResult<ScheduleRun> {
        // The owner is copied from the schedule in the same statement; no schedule, no row.
        let sql = format!(
            "INSERT INTO {} ({RUN_COLUMNS}) \
             SELECT $1, s.id, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, s.user_id, $13 \
             FROM {} s WHERE s.id = $14 RETURNING {RUN_COLUMNS}",
            self.qualified(&self.tables().schedule_runs),
            self.qualified(&self.tables().schedules)
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(&run.id)
            .bind(run.attempt)
            .bind(run.triggered_at)
            .bind(run.completed_at)
            .bind(&run.status)
            .bind(run.status_code)
            .bind(&run.run_id)
            .bind(&run.session_id)
            .bind(clean_text(run.error.as_deref()))
            .bind(clean_json(run.input.as_ref()))
            .bind(clean_json(run.output.as_ref()))
            .bind(clean_json(run.requirements.as_ref()))
            .bind(run.created_at)
            .bind(&run.schedule_id)
            .fetch_optional(self.pool())
            .await;
        let missing = || DbError::new(DbErrorKind::NotFound, format!("schedule {} does not exist", run.schedule_id));
        match row {
            Ok(Some(row)) => schedule_run_from_row::<Postgres>(&row),
            Ok(None) => Err(missing()),
            Err(sqlx::Error::Database(d)) if d.is_unique_violation() => {
                Err(DbError::new(DbErrorKind::Conflict, format!("schedule run {} already exists", run.id))
                    .with_source(sqlx::Error::Database(d)))
            }
            // The schedule was deleted between the read and the insert.
            Err(sqlx::Error::Database(d)) if d.is_foreign_key_violation() => {
                Err(missing().with_source(sqlx::Error::Database(d)))
            }
            Err(e) => Err(db_error(&format!("cannot create schedule run {}", run.id), e)),
        }
    }

    async fn update_schedule_run(&self, id: &str, update: &ScheduleRunUpdate) -> DbResult<Option<ScheduleRun>> {
        let columns = update.columns();
        if columns.is_empty() {
            return self.get_schedule_run(id, None).await;
        }
        let (set, n) = set_clause(&columns);
        let sql = format!(
            "UPDATE {} SET {set} WHERE id = ${n} RETURNING {RUN_COLUMNS}",
            self.qualified(&self.tables().schedule_runs)
        );
        let mut query = sqlx::query(AssertSqlSafe(sql));
        for (_, cell) in columns {
            query = bind_cell(query, cell);
        }
        let row = query
            .bind(id)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot update schedule run {id}"), e))?;
        row.as_ref().map(schedule_run_from_row::<Postgres>).transpose()
    }

    async fn get_schedule_run(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<ScheduleRun>> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM {} WHERE id = $1 AND ($2::text IS NULL OR user_id = $2)",
            self.qualified(&self.tables().schedule_runs)
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(id)
            .bind(user_id)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot read schedule run {id}"), e))?;
        row.as_ref().map(schedule_run_from_row::<Postgres>).transpose()
    }

    async fn get_schedule_runs(
        &self,
        schedule_id: &str,
        user_id: Option<&str>,
        limit: Option<usize>,
        page: Option<usize>,
    ) -> DbResult<(Vec<ScheduleRun>, u64)> {
        let t = self.qualified(&self.tables().schedule_runs);
        let clause = "schedule_id = $1 AND ($2::text IS NULL OR user_id = $2)";
        let (offset, limit) = schedule_run_page(limit, page);
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM {t} WHERE {clause} ORDER BY created_at DESC, id COLLATE \"C\" DESC \
             LIMIT $3 OFFSET $4"
        );
        let what = format!("cannot list the runs of schedule {schedule_id}");
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(schedule_id)
            .bind(user_id)
            .bind(to_i64(limit))
            .bind(to_i64(offset))
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error(&what, e))?;
        let runs = crate::codec::readable(
            "schedule run",
            rows.iter().map(|r| (r.try_get::<String, _>("id").ok(), schedule_run_from_row::<Postgres>(r))),
        );
        let total: i64 = sqlx::query_scalar(AssertSqlSafe(format!("SELECT COUNT(*) FROM {t} WHERE {clause}")))
            .bind(schedule_id)
            .bind(user_id)
            .fetch_one(self.pool())
            .await
            .map_err(|e| db_error(&what, e))?;
        Ok((runs, u64::try_from(total).unwrap_or(0)))
    }

    async fn get_latest_schedule_runs(&self, schedule_ids: &[String]) -> DbResult<HashMap<String, ScheduleRun>> {
        if schedule_ids.is_empty() {
            return Ok(HashMap::new());
        }
        // A run never triggered counts as the oldest (Python's DESC would put its NULL first).
        let sql = format!(
            "SELECT DISTINCT ON (schedule_id) {RUN_COLUMNS} FROM {} WHERE schedule_id = ANY($1) \
             ORDER BY schedule_id, triggered_at DESC NULLS LAST, created_at DESC, id COLLATE \"C\" DESC",
            self.qualified(&self.tables().schedule_runs)
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(schedule_ids)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot read the latest schedule runs", e))?;
        rows.iter().map(|row| schedule_run_from_row::<Postgres>(row).map(|r| (r.schedule_id.clone(), r))).collect()
    }

    async fn delete_schedule_runs(&self, schedule_id: &str, before: i64) -> DbResult<u64> {
        let sql = format!(
            "DELETE FROM {} WHERE schedule_id = $1 AND completed_at < $2",
            self.qualified(&self.tables().schedule_runs)
        );
        let done = sqlx::query(AssertSqlSafe(sql))
            .bind(schedule_id)
            .bind(before)
            .execute(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot expire the runs of schedule {schedule_id}"), e))?;
        Ok(done.rows_affected())
    }
}
