//! Runs in PostgreSQL: one row per run; `run_index` assigned as `max + 1` per session under a
//! transaction-scoped advisory lock on the session (as Python Agno does), so concurrent writers
//! never collide and saving run N costs the same for any N.

use crate::sql::SqlAdapter;
use agno_core::{DbError, DbErrorKind, DbResult, RunOutput, now_epoch_secs};
use sqlx::{AssertSqlSafe, Postgres, Row};

use super::{PostgresState, db_error};
use crate::sql::runs::{RUN_HEAD, RUN_TAIL, RunCells, bind_cells, write_error};

#[async_trait::async_trait]
impl crate::sql::runs::SqlRuns for PostgresState {
    async fn write_claimed(
        &self,
        write: agno_core::RunWrite<'_>,
        guard: &crate::sql::runs::Guard,
    ) -> DbResult<crate::sql::runs::Claimed> {
        super::claimed::write_claimed(self, write, guard).await
    }

    // Inside the caller's transaction, which holds the run-index lock taken here until it ends.
    // A `stored` run is updated first, without that lock; one not there after all is inserted
    // as any other.
    async fn put_run(
        &self,
        conn: &mut sqlx::PgConnection,
        run: &RunOutput,
        session_id: &str,
        user_id: Option<&str>,
        stored: bool,
    ) -> DbResult<i64> {
        let t = self.qualified(&self.tables().runs);
        let RunCells { head, tail, facts } = RunCells::of(run, session_id, user_id, now_epoch_secs())?;
        // The run and its facts in one statement: its cells are $1-$12 (RUN_HEAD, RUN_TAIL), its
        // facts $13-$15 (bound also when there is no facts table, to keep the numbering).
        let facts_cte = self.facts_cte(13);
        let bind = |sql: String, persistent: bool| {
            let q = sqlx::query(AssertSqlSafe(sql)).persistent(persistent);
            bind_cells::<Postgres>(q, head.clone().into_iter().chain(tail.clone()).chain(facts.clone()))
        };
        let read_index = |row: Option<sqlx::postgres::PgRow>| -> DbResult<Option<Option<i64>>> {
            row.map(|r| r.try_get(0))
                .transpose()
                .map_err(|e| db_error(&format!("cannot read the index of run {}", run.id()), e))
        };
        if stored {
            // What the upsert below does to a stored row, by its key (an indexed row: no index
            // left to assign). Every cell is bound, the unused ones too, to keep the numbering.
            let sql = format!("WITH {}{facts_cte} SELECT run_index FROM written", stored_run_update(&t, 1, ""));
            let row = bind(sql, true)?
                .fetch_optional(&mut *conn)
                .await
                .map_err(|e| write_error::<Postgres>(run.id(), session_id, e))?;
            if let Some(Some(index)) = read_index(row)? {
                return Ok(index);
            }
        }
        self.lock_run_index(conn, session_id).await?;
        self.insert_run(conn, run, session_id, user_id, None).await
    }
}

/// The update of a stored run in `t` by its key (an indexed row: no index left to assign), as the
/// run upsert changes a stored row, as a CTE named `written` returning the run's `run_index`;
/// the run's cells bound from `$first` in `RunCells` order (`RUN_HEAD`, then `RUN_TAIL`; the
/// unused ones too, to keep the numbering); `only`: a further condition.
pub(super) fn stored_run_update(t: &str, first: usize, only: &str) -> String {
    let [run_id, user_id, parent, status, run_data, updated] = [0, 6, 7, 8, 9, 11].map(|i| first + i);
    format!(
        "written AS (UPDATE {t} AS r SET status = ${status}, run_data = ${run_data}, \
         parent_run_id = ${parent}, updated_at = ${updated} WHERE r.run_id = ${run_id} \
         AND r.run_index IS NOT NULL AND (r.user_id IS NOT DISTINCT FROM ${user_id} OR r.user_id IS NULL){only} \
         RETURNING r.run_index)"
    )
}

/// The statement taking the run-index lock of the session bound at `$n`.
pub(super) fn run_index_lock(n: usize) -> String {
    // Same lock key as Python Agno.
    format!("pg_advisory_xact_lock(hashtext('agno_run_index'), hashtext(${n}))")
}

impl PostgresState {
    /// Takes the run-index lock of `session_id` in the caller's transaction: writers of one
    /// session queue here, so `max + 1` is read and written by one of them at a time; the lock
    /// goes with the transaction. The insert reading `max` must be a later statement (its
    /// snapshot taken once the lock is held).
    async fn lock_run_index(&self, conn: &mut sqlx::PgConnection, session_id: &str) -> DbResult<()> {
        sqlx::query(AssertSqlSafe(format!("SELECT {}", run_index_lock(1))))
            .bind(session_id)
            .execute(&mut *conn)
            .await
            .map_err(|e| db_error(&format!("cannot lock the run index of session {session_id}"), e))?;
        Ok(())
    }

    /// Inserts (or updates, keeping its index) `run` at `max + 1` of its session, under the
    /// run-index lock the caller holds; its `run_index`. `then`: a transaction-scoped advisory
    /// lock (its key) to take in the same statement once the run is written (an enqueue's depth
    /// turn).
    pub(super) async fn insert_run(
        &self,
        conn: &mut sqlx::PgConnection,
        run: &RunOutput,
        session_id: &str,
        user_id: Option<&str>,
        then: Option<&str>,
    ) -> DbResult<i64> {
        let t = self.qualified(&self.tables().runs);
        let RunCells { head, tail, facts } = RunCells::of(run, session_id, user_id, now_epoch_secs())?;
        let facts_cte = self.facts_cte(13);
        let turn = if then.is_some() { ", pg_advisory_xact_lock(hashtextextended($16, 0)) AS turn" } else { "" };
        let sql = format!(
            "WITH written AS (INSERT INTO {t} AS t ({RUN_HEAD}, run_index, {RUN_TAIL}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, \
             (SELECT COALESCE(MAX(run_index) + 1, 0) FROM {t} WHERE session_id = $2), $10, $11, $12) \
             ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, run_data = excluded.run_data, \
             parent_run_id = excluded.parent_run_id, updated_at = excluded.updated_at, \
             run_index = COALESCE(t.run_index, excluded.run_index) \
             WHERE t.user_id IS NOT DISTINCT FROM excluded.user_id OR t.user_id IS NULL \
             RETURNING run_index){facts_cte} SELECT run_index{turn} FROM written"
        );
        // Not a cached prepared statement: a generic plan made while the table was small keeps
        // scanning it whole for `MAX(run_index)`, so saving run N would cost O(N). A fresh plan
        // per call uses the (session_id, run_index) index once the table grows.
        let q = sqlx::query(AssertSqlSafe(sql)).persistent(false);
        let mut q = bind_cells::<Postgres>(q, head.into_iter().chain(tail).chain(facts))?;
        if let Some(key) = then {
            q = q.bind(key.to_owned());
        }
        let row = q.fetch_optional(&mut *conn).await.map_err(|e| write_error::<Postgres>(run.id(), session_id, e))?;
        let index: Option<Option<i64>> = row
            .map(|r| r.try_get(0))
            .transpose()
            .map_err(|e| db_error(&format!("cannot read the index of run {}", run.id()), e))?;
        let Some(index) = index else {
            return Err(DbError::new(DbErrorKind::Conflict, format!("run {} belongs to another user", run.id())));
        };
        Ok(index.unwrap_or(0))
    }

    /// The CTE writing the facts of the run a CTE named `written` wrote (bound from `$first`:
    /// run id, model, provider), after a comma, when the facts table exists: what the metrics read
    /// of a run (its model), no JSON to read later; a run refused by the owner check writes no
    /// facts either.
    pub(super) fn facts_cte(&self, first: usize) -> String {
        if self.has_run_facts() {
            let [id, model, provider] = [first, first + 1, first + 2];
            format!(
                ", facts AS (INSERT INTO {} (run_id, model, model_provider) SELECT ${id}, ${model}, ${provider} \
                 FROM written ON CONFLICT (run_id) DO UPDATE SET model = excluded.model, \
                 model_provider = excluded.model_provider)",
                self.qualified(&self.tables().run_facts())
            )
        } else {
            String::new()
        }
    }
}
