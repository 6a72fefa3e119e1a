//! A claimed run's write on PostgreSQL in the fewest round trips (`SqlRuns::write_claimed`).
//!
//! The generic write is a transaction of five or six statements: `BEGIN`, the lease check, the
//! session (read under its lock when the run's state changes, then written), the run, `COMMIT`.
//! Here the lease check, the session and the run are one statement of data-modifying CTEs, each
//! part conditioned on the one before (the session is written only if the claim holds, the run
//! only if the session was written):
//!
//! - a run's first write (`RUNNING`: its state changes nothing, [`KEEP_STORED_STATE`] keeps the
//!   stored one) is that one statement alone, which PostgreSQL commits as it ends: 1 statement;
//! - a write that merges the run's state reads the stored session (no lock, no transaction),
//!   merges, and writes with the lease check in that one statement only if the stored
//!   `session_data` is still what it read: 2 statements. A session that changed in between is
//!   read again; after a few such rounds (or where the short path cannot write) the merge takes
//!   the session's lock: `BEGIN`, the lease check and the locked read, the write, `COMMIT`.
//!
//! What neither covers (a stored `session_data` that is not a JSON object, another user's session,
//! a run not stored yet, a session gone) is left to the generic write, which writes again
//! whatever the one statement did: the same rows with the same values.

use agno_core::{DbError, DbErrorKind, DbResult, RunWrite, StateUpdate, now_epoch_secs};
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::{AssertSqlSafe, Postgres, Row};

use super::runs::stored_run_update;
use super::sessions::{KEEP_STORED_STATE, KEEPS_ONLY_OBJECTS, params, upsert_sql};
use super::{PostgresState, db_error, value_column};
use crate::sql::SqlAdapter;
use crate::sql::runs::{Claimed, Guard, RunCells, SqlRuns, bind_cells, write_error};
use crate::sql::sessions::session_cells;

/// The transaction of a merging write: READ COMMITTED whatever the server's default, so the
/// locked read sees the latest committed session.
const BEGIN: &str = "BEGIN ISOLATION LEVEL READ COMMITTED";

/// Where each value of the write statement is bound: the session's 14 cells from `$1`, the run's
/// 12 from `$15` (`RUN_HEAD`, then `RUN_TAIL`), its 3 facts from `$27`, the lease check's 4
/// (`now`, job id, worker, attempt) from `$30`.
const RUN: usize = 15;
const FACTS: usize = 27;
const LEASE: usize = 30;
/// Where an optimistic merge binds the `session_data` it read (after the lease check's 4).
const SEEN: usize = 34;

/// Reads and merges of an optimistic merge before it takes the session's lock instead.
const OPTIMISTIC_ATTEMPTS: usize = 3;

impl PostgresState {
    /// The lease check as a CTE named `guard` (one row while the claim holds, the lease refreshed
    /// while the job runs), its values bound from `$first`: `now`, job id, worker, attempt.
    fn guard_cte(&self, first: usize) -> String {
        format!(
            "guard AS (UPDATE {} SET locked_at = CASE WHEN status = 'running' THEN ${first} ELSE locked_at END \
             WHERE {} RETURNING 1)",
            self.qualified(&self.tables().jobs),
            super::jobs::holds(first + 1)
        )
    }

    /// The write statement: the lease check when `guarded`, the session upsert writing
    /// `session_data` as `data` under `only`, the run updated by its key and its facts. One row:
    /// `held` (the claim holds), `session` (the session was written), `run_index` (the run was:
    /// stored, and now updated).
    fn write_sql(&self, guarded: bool, data: &str, only: &str) -> String {
        let sessions = self.qualified(&self.tables().sessions);
        let runs = self.qualified(&self.tables().runs);
        let row = params(1, 14);
        let (with, source, held) = if guarded {
            (
                format!("WITH {}, ", self.guard_cte(LEASE)),
                format!("SELECT {row} FROM guard"),
                "EXISTS (SELECT 1 FROM guard)",
            )
        } else {
            ("WITH ".to_owned(), format!("VALUES ({row})"), "true")
        };
        let upsert = upsert_sql(&sessions, &source, data, only);
        let run = stored_run_update(&runs, RUN, " AND EXISTS (SELECT 1 FROM s)");
        let facts = self.facts_cte(FACTS);
        format!(
            "{with}s AS ({upsert} RETURNING 1), {run}{facts} SELECT {held} AS held, \
             EXISTS (SELECT 1 FROM s) AS session, (SELECT run_index FROM written) AS run_index"
        )
    }

    /// The write statement ([`write_sql`](Self::write_sql)) with `write`'s values bound, the
    /// session's `session_data` as `session_data`.
    fn bind_write<'q>(
        &self,
        sql: String,
        write: RunWrite<'_>,
        session_data: serde_json::Map<String, Value>,
        guard: Option<&Guard>,
    ) -> DbResult<sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments>> {
        let now = now_epoch_secs();
        let session = session_cells(write.session, session_data, now)?;
        let sid = &write.session.session_id;
        let RunCells { head, tail, facts } = RunCells::of(write.run, sid, write.user_id, now)?;
        let cells = session.into_iter().chain(head).chain(tail).chain(facts);
        let q = bind_cells::<Postgres>(sqlx::query(AssertSqlSafe(sql)), cells)?;
        Ok(match guard {
            Some(g) => q.bind(g.now).bind(g.lease.job_id.clone()).bind(g.lease.worker_id.clone()).bind(g.lease.attempt),
            None => q,
        })
    }

    /// A run's first write in one statement, committed as it ends.
    async fn first_write(&self, write: RunWrite<'_>, guard: &Guard) -> DbResult<Claimed> {
        let sql = self.write_sql(true, KEEP_STORED_STATE, KEEPS_ONLY_OBJECTS);
        let base = write.session.session_data.clone().unwrap_or_default();
        let row = self
            .bind_write(sql, write, base, Some(guard))?
            .fetch_one(self.pool())
            .await
            .map_err(|e| write_error::<Postgres>(write.run.id(), &write.session.session_id, e))?;
        let (held, session, index) = written(&row, write)?;
        Ok(match (held, session, index) {
            (false, ..) => Claimed::Refused,
            (true, true, Some(index)) => Claimed::Written(index),
            _ => Claimed::Generic,
        })
    }

    /// A write merging the run's state, optimistically: the stored `session_data` read without a
    /// lock or a transaction, merged, then written with the lease check and the run in one
    /// statement only if the stored one is still what was read (2 statements). A session changed
    /// in between is read and merged again; what this does not cover (no session, a run not
    /// stored yet, another user's session, a stored `session_data` that is not an object, a
    /// session changing on every attempt) takes the locked merge.
    async fn merging_write(&self, write: RunWrite<'_>, guard: &Guard) -> DbResult<Claimed> {
        let sid = &write.session.session_id;
        let read = format!(
            "SELECT session_data, user_id, EXISTS (SELECT 1 FROM {} WHERE run_id = $2) AS run_stored \
             FROM {} WHERE session_id = $1",
            self.qualified(&self.tables().runs),
            self.qualified(&self.tables().sessions)
        );
        let write_sql =
            self.write_sql(true, "excluded.session_data", &format!(" AND t.session_data::jsonb = ${SEEN}::jsonb"));
        for _ in 0..OPTIMISTIC_ATTEMPTS {
            let row = sqlx::query(AssertSqlSafe(read.as_str()))
                .bind(sid)
                .bind(write.run.id())
                .fetch_optional(self.pool())
                .await
                .map_err(|e| db_error(&format!("cannot read session {sid}"), e))?;
            let Some(row) = row else { break };
            let cell = |e: sqlx::Error| db_error(&format!("cannot read session {sid}"), e);
            let owner: Option<String> = row.try_get("user_id").map_err(cell)?;
            let run_stored: bool = row.try_get("run_stored").map_err(cell)?;
            let Some(Value::Object(stored)) = row.try_get::<Option<Value>, _>("session_data").map_err(cell)? else {
                break;
            };
            if !run_stored || owner.is_some_and(|o| Some(o.as_str()) != write.session.user_id.as_deref()) {
                break;
            }
            let base = write.session.session_data.clone().unwrap_or_default();
            let session_data = write.state.session_data(base, Some(&stored));
            let row = self
                .bind_write(write_sql.clone(), write, session_data, Some(guard))?
                .bind(sqlx::types::Json(Value::Object(stored)))
                .fetch_one(self.pool())
                .await
                .map_err(|e| write_error::<Postgres>(write.run.id(), sid, e))?;
            match written(&row, write)? {
                (false, ..) => return Ok(Claimed::Refused),
                (true, true, Some(index)) => return Ok(Claimed::Written(index)),
                (true, true, None) => {
                    return Err(DbError::new(
                        DbErrorKind::Conflict,
                        format!("run {} was deleted while it was written; its session was written", write.run.id()),
                    ));
                }
                // The stored session changed since it was read: read it again.
                (true, false, _) => {}
            }
        }
        self.locked_merge(write, guard).await
    }

    /// A write merging the run's state: the lease check and the session's locked read, then the
    /// session and the run, in one transaction.
    async fn locked_merge(&self, write: RunWrite<'_>, guard: &Guard) -> DbResult<Claimed> {
        let sid = &write.session.session_id;
        let what = format!("cannot write run {}", write.run.id());
        let sessions = self.qualified(&self.tables().sessions);
        let read = format!(
            "WITH {} SELECT g.held, s.found, s.session_data \
             FROM (SELECT EXISTS (SELECT 1 FROM guard) AS held) g LEFT JOIN LATERAL \
             (SELECT true AS found, session_data FROM {sessions} WHERE session_id = $1 AND g.held \
             FOR NO KEY UPDATE) s ON true",
            self.guard_cte(2)
        );
        let mut tx = self.pool().begin_with(BEGIN).await.map_err(|e| db_error(&what, e))?;
        let row = sqlx::query(AssertSqlSafe(read))
            .bind(sid)
            .bind(guard.now)
            .bind(&guard.lease.job_id)
            .bind(&guard.lease.worker_id)
            .bind(guard.lease.attempt)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| db_error(&format!("cannot read session {sid}"), e))?;
        let cell = |e: sqlx::Error| db_error(&format!("cannot read session {sid}"), e);
        let held: bool = row.try_get("held").map_err(cell)?;
        let found: Option<bool> = row.try_get("found").map_err(cell)?;
        if !held || found != Some(true) {
            tx.rollback().await.map_err(|e| db_error(&what, e))?;
            return Ok(if held { Claimed::Generic } else { Claimed::Refused });
        }
        let stored = match value_column(row.try_get("session_data").map_err(cell)?) {
            Some(Value::Object(stored)) => Some(stored),
            _ => None,
        };
        let base = write.session.session_data.clone().unwrap_or_default();
        let session_data = write.state.session_data(base, stored.as_ref());
        let sql = self.write_sql(false, "excluded.session_data", "");
        let row = self
            .bind_write(sql, write, session_data, None)?
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| write_error::<Postgres>(write.run.id(), sid, e))?;
        let index = match written(&row, write)? {
            (_, false, _) => {
                tx.rollback().await.map_err(|e| db_error(&what, e))?;
                return Err(DbError::new(DbErrorKind::Conflict, format!("session {sid} belongs to another user")));
            }
            (_, true, Some(index)) => index,
            // Not stored yet: inserted as any other, under the run-index lock.
            (_, true, None) => match self.put_run(&mut tx, write.run, sid, write.user_id, false).await {
                Ok(index) => index,
                Err(e) => {
                    let _ = tx.rollback().await;
                    return Err(e);
                }
            },
        };
        tx.commit().await.map_err(|e| db_error(&what, e))?;
        Ok(Claimed::Written(index))
    }
}

/// The `held`, `session` and `run_index` columns of the write statement's row.
fn written(row: &PgRow, write: RunWrite<'_>) -> DbResult<(bool, bool, Option<i64>)> {
    let cell = |e: sqlx::Error| db_error(&format!("cannot read the write of run {}", write.run.id()), e);
    Ok((
        row.try_get("held").map_err(cell)?,
        row.try_get("session").map_err(cell)?,
        row.try_get("run_index").map_err(cell)?,
    ))
}

/// `SqlRuns::write_claimed` on PostgreSQL: a first write in one statement, a merge in two (or a
/// transaction of four); a replaced state, and whatever these leave, in the generic transaction.
pub(super) async fn write_claimed(db: &PostgresState, write: RunWrite<'_>, guard: &Guard) -> DbResult<Claimed> {
    crate::sql::retrying::<Postgres, _, _, _>(|| async {
        match write.state {
            s if s.changes_nothing() => db.first_write(write, guard).await,
            StateUpdate::Merge { .. } => db.merging_write(write, guard).await,
            StateUpdate::Replace => Ok(Claimed::Generic),
        }
    })
    .await
}
