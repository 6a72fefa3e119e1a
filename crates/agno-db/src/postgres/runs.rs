//! Runs in PostgreSQL: one row per run; `run_index` assigned as `max + 1` per session under a
//! transaction-scoped advisory lock on the session (as Python Agno does), so concurrent writers
//! never collide and saving run N costs the same for any N.

use agno_core::{DbError, DbErrorKind, DbResult, RunOutput, now_epoch_secs};
use sqlx::{AssertSqlSafe, Postgres, Row};

use super::{PostgresDb, db_error};
use crate::sql::runs::{RUN_HEAD, RUN_TAIL, RunCells, bind_cells, write_error};

impl PostgresDb {
    /// `RunStore::upsert_run`: the write in its own transaction.
    pub(crate) async fn save_run(&self, run: &RunOutput, session_id: &str, user_id: Option<&str>) -> DbResult<i64> {
        let mut tx = self.pool().begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
        match self.write_run(&mut tx, run, session_id, user_id).await {
            Ok(index) => {
                tx.commit().await.map_err(|e| db_error(&format!("cannot commit the write of run {}", run.id()), e))?;
                Ok(index)
            }
            Err(e) => {
                // Ends the transaction (and its advisory lock) now, not when the connection is next used.
                tx.rollback().await.map_err(|e| db_error(&format!("cannot end the write of run {}", run.id()), e))?;
                Err(e)
            }
        }
    }
}

crate::sql::runs::run_store!(PostgresDb);

impl PostgresDb {
    /// The write of `upsert_run`, inside the caller's transaction (which holds the run-index lock
    /// taken here until it ends; the caller rolls back on an error).
    pub(super) async fn write_run(
        &self,
        conn: &mut sqlx::PgConnection,
        run: &RunOutput,
        session_id: &str,
        user_id: Option<&str>,
    ) -> DbResult<i64> {
        let t = self.qualified(&self.tables().runs);
        let RunCells { head, tail, facts } = RunCells::of(run, session_id, user_id, now_epoch_secs())?;
        // Same lock key as Python Agno: writers of one session queue here, so `max + 1` is
        // read and written by one of them at a time; the lock goes with the transaction.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('agno_run_index'), hashtext($1))")
            .bind(session_id)
            .execute(&mut *conn)
            .await
            .map_err(|e| db_error(&format!("cannot lock the run index of session {session_id}"), e))?;
        let sql = format!(
            "INSERT INTO {t} AS t ({RUN_HEAD}, run_index, {RUN_TAIL}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, \
             (SELECT COALESCE(MAX(run_index) + 1, 0) FROM {t} WHERE session_id = $2), $10, $11, $12) \
             ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, run_data = excluded.run_data, \
             parent_run_id = excluded.parent_run_id, updated_at = excluded.updated_at, \
             run_index = COALESCE(t.run_index, excluded.run_index) \
             WHERE t.user_id IS NOT DISTINCT FROM excluded.user_id OR t.user_id IS NULL \
             RETURNING run_index"
        );
        // Not a cached prepared statement: a generic plan made while the table was small keeps
        // scanning it whole for `MAX(run_index)`, so saving run N would cost O(N). A fresh plan
        // per call uses the (session_id, run_index) index once the table grows.
        let q =
            bind_cells::<Postgres>(sqlx::query(AssertSqlSafe(sql)).persistent(false), head.into_iter().chain(tail))?;
        let row = q.fetch_optional(&mut *conn).await.map_err(|e| write_error::<Postgres>(run.id(), session_id, e))?;
        let index: Option<Option<i64>> = row
            .map(|r| r.try_get(0))
            .transpose()
            .map_err(|e| db_error(&format!("cannot read the index of run {}", run.id()), e))?;
        let Some(index) = index else {
            return Err(DbError::new(DbErrorKind::Conflict, format!("run {} belongs to another user", run.id())));
        };
        if self.has_run_facts() {
            // What the metrics read of the run, beside it (no JSON to read later).
            let sql = format!(
                "INSERT INTO {} (run_id, model, model_provider) VALUES ($1, $2, $3) ON CONFLICT (run_id) \
                 DO UPDATE SET model = excluded.model, model_provider = excluded.model_provider",
                self.qualified(&self.tables().run_facts())
            );
            bind_cells::<Postgres>(sqlx::query(AssertSqlSafe(sql)), facts)?
                .execute(&mut *conn)
                .await
                .map_err(|e| db_error(&format!("cannot write the facts of run {}", run.id()), e))?;
        }
        Ok(index.unwrap_or(0))
    }
}
