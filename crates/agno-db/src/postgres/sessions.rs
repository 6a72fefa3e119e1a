//! Sessions in PostgreSQL: one row each, never carrying runs (except a legacy v2 `runs` blob,
//! read only and merged with the runs table on read).

use agno_core::{AgentSession, DbError, DbErrorKind, DbResult, StateUpdate, now_epoch_secs};
use serde_json::Value;
use sqlx::AssertSqlSafe;

use super::{PostgresDb, db_error, sanitize, value_column};
use crate::codec::session_type_of;

const SESSION_COLUMNS: &str = "session_id, session_type, agent_id, team_id, workflow_id, user_id, session_data, \
     agent_data, team_data, workflow_data, metadata, summary, created_at, updated_at";

/// A JSONB column value to write: `None` stays SQL NULL.
fn json_param<T: serde::Serialize>(value: Option<&T>, what: &str) -> DbResult<Option<Value>> {
    value
        .map(|v| {
            serde_json::to_value(v)
                .map(|mut v| {
                    sanitize(&mut v);
                    v
                })
                .map_err(|e| DbError::new(DbErrorKind::Other, format!("cannot encode {what} as JSON: {e}")))
        })
        .transpose()
        .map(|v| v.filter(|v| !v.is_null()))
}

impl PostgresDb {}

impl PostgresDb {
    /// `SessionStore::upsert_session`: the write in its own transaction.
    pub(crate) async fn save_session(&self, session: &AgentSession, state: &StateUpdate) -> DbResult<()> {
        let id = &session.session_id;
        let mut tx = self.pool().begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
        if let Err(e) = self.write_session(&mut tx, session, state).await {
            // Ends the transaction (and its locks) now, not when the connection is next used.
            tx.rollback().await.map_err(|e| db_error(&format!("cannot end the write of session {id}"), e))?;
            return Err(e);
        }
        tx.commit().await.map_err(|e| db_error(&format!("cannot commit the write of session {id}"), e))
    }
}

crate::sql::sessions::session_store!(PostgresDb);

impl PostgresDb {
    /// The writes of `upsert_session`, inside the caller's transaction (which the caller rolls
    /// back on an error: the locks taken here are the transaction's).
    pub(super) async fn write_session(
        &self,
        conn: &mut sqlx::PgConnection,
        session: &AgentSession,
        state: &StateUpdate,
    ) -> DbResult<()> {
        let t = self.qualified(&self.tables().sessions);
        let id = &session.session_id;
        let mut session_data = session.session_data.clone().unwrap_or_default();
        if let StateUpdate::Merge { .. } = state {
            // Serialises merges of one session even before its row exists; the row lock then
            // holds off plain writers until this merge commits.
            sqlx::query("SELECT pg_advisory_xact_lock(hashtext('agno_session_state'), hashtext($1))")
                .bind(id)
                .execute(&mut *conn)
                .await
                .map_err(|e| db_error(&format!("cannot lock session {id}"), e))?;
            // FOR NO KEY UPDATE, not FOR UPDATE: it still holds off other writers of the row, but
            // not the KEY SHARE lock a run insert's foreign key check takes on its session. With
            // FOR UPDATE, a worker saving a run (this lock, then the run-index lock) and another
            // request writing a run of the same session (the run-index lock, then the key check)
            // deadlocked, and PostgreSQL aborted one of them.
            let sql = format!("SELECT session_data FROM {t} WHERE session_id = $1 FOR NO KEY UPDATE");
            let stored: Option<Option<Value>> = sqlx::query_scalar(AssertSqlSafe(sql))
                .bind(id)
                .fetch_optional(&mut *conn)
                .await
                .map_err(|e| db_error(&format!("cannot read session {id}"), e))?;
            let stored = match stored.and_then(value_column) {
                Some(Value::Object(stored)) => Some(stored),
                _ => None,
            };
            session_data = state.session_data(session_data, stored.as_ref());
        }
        let now = now_epoch_secs();
        let sql = format!(
            "INSERT INTO {t} AS t ({SESSION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
             ON CONFLICT (session_id) DO UPDATE SET session_type = excluded.session_type, agent_id = excluded.agent_id, \
             team_id = excluded.team_id, workflow_id = excluded.workflow_id, user_id = excluded.user_id, \
             session_data = excluded.session_data, agent_data = excluded.agent_data, team_data = excluded.team_data, \
             workflow_data = excluded.workflow_data, metadata = excluded.metadata, summary = excluded.summary, \
             updated_at = excluded.updated_at \
             WHERE t.user_id IS NOT DISTINCT FROM excluded.user_id OR t.user_id IS NULL"
        );
        let result = sqlx::query(AssertSqlSafe(sql))
            .bind(id)
            .bind(session_type_of(session))
            .bind(&session.agent_id)
            .bind(&session.team_id)
            .bind(&session.workflow_id)
            .bind(&session.user_id)
            .bind(json_param(Some(&session_data), "session_data")?)
            .bind(json_param(session.agent_data.as_ref(), "agent_data")?)
            .bind(json_param(session.extra.get("team_data"), "team_data")?)
            .bind(json_param(session.extra.get("workflow_data"), "workflow_data")?)
            .bind(json_param(session.metadata.as_ref(), "metadata")?)
            .bind(json_param(session.summary.as_ref(), "summary")?)
            .bind(session.created_at.unwrap_or(now))
            .bind(now)
            .execute(&mut *conn)
            .await
            .map_err(|e| db_error(&format!("cannot write session {id}"), e))?;
        if result.rows_affected() == 0 {
            return Err(DbError::new(DbErrorKind::Conflict, format!("session {id} belongs to another user")));
        }
        Ok(())
    }
}
