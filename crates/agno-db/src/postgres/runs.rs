//! Runs in PostgreSQL: one row per run; `run_index` assigned as `max + 1` per session under a
//! transaction-scoped advisory lock on the session (as Python Agno does), so concurrent writers
//! never collide and saving run N costs the same for any N.

use agno_core::{DbError, DbErrorKind, DbResult, RunOutput, now_epoch_secs};
use serde_json::Value;
use sqlx::AssertSqlSafe;

use super::{PostgresDb, db_error, sanitize};
use crate::codec::run_type;

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

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
        let mut data = serde_json::to_value(run)
            .map_err(|e| DbError::new(DbErrorKind::Other, format!("cannot encode run {}: {e}", run.id())))?;
        sanitize(&mut data);
        // Same lock key as Python Agno: writers of one session queue here, so `max + 1` is
        // read and written by one of them at a time; the lock goes with the transaction.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('agno_run_index'), hashtext($1))")
            .bind(session_id)
            .execute(&mut *conn)
            .await
            .map_err(|e| db_error(&format!("cannot lock the run index of session {session_id}"), e))?;
        let sql = format!(
            "INSERT INTO {t} AS t (run_id, session_id, run_type, agent_id, team_id, workflow_id, user_id, \
             parent_run_id, status, run_index, run_data, created_at, updated_at) \
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
        let index: Option<Option<i64>> = sqlx::query_scalar(AssertSqlSafe(sql))
            .persistent(false)
            .bind(run.id())
            .bind(session_id)
            .bind(run_type(&data))
            .bind(str_field(&data, "agent_id"))
            .bind(str_field(&data, "team_id"))
            .bind(str_field(&data, "workflow_id"))
            .bind(user_id)
            .bind(str_field(&data, "parent_run_id"))
            .bind(run.status.as_str())
            .bind(&data)
            .bind(run.created_at)
            .bind(now_epoch_secs())
            .fetch_optional(&mut *conn)
            .await
            .map_err(|e| match &e {
                sqlx::Error::Database(d) if d.is_foreign_key_violation() => DbError::new(
                    DbErrorKind::Conflict,
                    format!(
                        "cannot write run {}: session {session_id} does not exist; save the session first",
                        run.id()
                    ),
                )
                .with_source(e),
                _ => db_error(&format!("cannot write run {}", run.id()), e),
            })?;
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
            sqlx::query(AssertSqlSafe(sql))
                .bind(run.id())
                .bind(str_field(&data, "model"))
                .bind(str_field(&data, "model_provider"))
                .execute(&mut *conn)
                .await
                .map_err(|e| db_error(&format!("cannot write the facts of run {}", run.id()), e))?;
        }
        Ok(index.unwrap_or(0))
    }
}
