//! Sessions in PostgreSQL: one row each, never carrying runs (except a legacy v2 `runs` blob,
//! read only and merged with the runs table on read).

use agno_core::{AgentSession, DbError, DbErrorKind, DbResult, RunOutput, StateUpdate, now_epoch_secs};
use serde_json::Value;
use sqlx::Postgres;
use sqlx::{AssertSqlSafe, Row};

use super::{PostgresDb, db_error, sanitize, value_column};
use crate::codec::{decode_listed_run, keep_latest, merge_legacy_runs, session_type_of};
use crate::sql::sessions::session_from_row;

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

fn decode_runs(rows: Vec<Option<Value>>) -> DbResult<Vec<RunOutput>> {
    Ok(rows.into_iter().filter_map(value_column).filter_map(decode_listed_run).collect())
}

impl PostgresDb {
    /// The latest `limit` runs of a session (all when `None`), oldest first. The session must
    /// belong to `user_id` when given.
    async fn read_runs(
        &self,
        session_id: &str,
        user_id: Option<&str>,
        limit: Option<usize>,
    ) -> DbResult<Vec<RunOutput>> {
        let t = self.tables();
        let sql = format!(
            "SELECT r.run_data FROM {runs} r WHERE r.session_id = $1 AND EXISTS (SELECT 1 FROM {sessions} s \
             WHERE s.session_id = $1 AND ($2::text IS NULL OR s.user_id = $2)) \
             ORDER BY r.run_index DESC, r.created_at DESC LIMIT $3",
            runs = self.qualified(&t.runs),
            sessions = self.qualified(&t.sessions)
        );
        let limit = limit.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        // Not a cached prepared statement (as `upsert_run`): a generic plan made while the table
        // was small sorts every run of the session to return the newest few, so run N of a
        // session would cost O(N).
        let rows: Vec<Option<Value>> = sqlx::query_scalar(AssertSqlSafe(sql))
            .persistent(false)
            .bind(session_id)
            .bind(user_id)
            .bind(limit)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot read the runs of session {session_id}"), e))?;
        let mut runs = decode_runs(rows)?;
        runs.reverse();
        Ok(runs)
    }

    /// The session row (without runs) and, with `with_blob`, its legacy `runs` blob if the
    /// column exists.
    async fn session_row(
        &self,
        session_id: &str,
        user_id: Option<&str>,
        with_blob: bool,
    ) -> DbResult<Option<(AgentSession, Option<Value>)>> {
        match self.session_row_once(session_id, user_id, with_blob).await {
            // The legacy column was dropped by another process since we looked: look again.
            Err(e) if self.has_legacy_runs() && e.kind() == DbErrorKind::SchemaTooOld => {
                self.refresh_legacy_flag().await?;
                self.session_row_once(session_id, user_id, with_blob).await
            }
            other => other,
        }
    }

    async fn session_row_once(
        &self,
        session_id: &str,
        user_id: Option<&str>,
        with_blob: bool,
    ) -> DbResult<Option<(AgentSession, Option<Value>)>> {
        let legacy = with_blob && self.has_legacy_runs();
        let sql = format!(
            "SELECT {SESSION_COLUMNS}{} FROM {} WHERE session_id = $1 AND ($2::text IS NULL OR user_id = $2)",
            if legacy { ", runs" } else { "" },
            self.qualified(&self.tables().sessions)
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(session_id)
            .bind(user_id)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot read session {session_id}"), e))?;
        let Some(row) = row else { return Ok(None) };
        let blob = if legacy {
            value_column(
                row.try_get::<Option<Value>, _>("runs")
                    .map_err(|e| db_error(&format!("cannot read the legacy runs of session {session_id}"), e))?,
            )
        } else {
            None
        };
        Ok(Some((session_from_row::<Postgres>(&row)?, blob)))
    }
}

impl PostgresDb {
    /// `SessionStore::get_session`: the row, and its runs as this database reads them.
    pub(crate) async fn read_session(
        &self,
        session_id: &str,
        user_id: Option<&str>,
        runs_limit: Option<usize>,
    ) -> DbResult<Option<AgentSession>> {
        let Some((mut session, blob)) = self.session_row(session_id, user_id, runs_limit != Some(0)).await? else {
            return Ok(None);
        };
        let runs = if runs_limit == Some(0) {
            Vec::new()
        } else if self.has_legacy_runs() && !self.table_exists(&self.tables().runs).await? {
            // A v2 database not migrated yet has no runs table: the blob is all there is.
            keep_latest(merge_legacy_runs(Vec::new(), blob)?, runs_limit)
        } else if blob.is_some() {
            // Merge first, then bound: blob-only runs count towards the latest N.
            keep_latest(merge_legacy_runs(self.read_runs(session_id, user_id, None).await?, blob)?, runs_limit)
        } else {
            self.read_runs(session_id, user_id, runs_limit).await?
        };
        session.runs = Some(runs);
        Ok(Some(session))
    }

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
