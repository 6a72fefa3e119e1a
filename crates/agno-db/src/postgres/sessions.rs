//! Sessions in PostgreSQL: one row each, never carrying runs (except a legacy v2 `runs` blob,
//! read only and merged with the runs table on read).

use agno_core::{
    AgentSession, DbError, DbErrorKind, DbResult, RunOutput, SessionPage, SessionQuery, SessionSort, SessionStore,
    StateUpdate, now_epoch_secs,
};
use async_trait::async_trait;
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

#[async_trait]
impl SessionStore for PostgresDb {
    async fn get_session(
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

    async fn upsert_session(&self, session: &AgentSession, state: &StateUpdate) -> DbResult<()> {
        let id = &session.session_id;
        let mut tx = self.pool().begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
        if let Err(e) = self.write_session(&mut tx, session, state).await {
            // Ends the transaction (and its locks) now, not when the connection is next used.
            tx.rollback().await.map_err(|e| db_error(&format!("cannot end the write of session {id}"), e))?;
            return Err(e);
        }
        tx.commit().await.map_err(|e| db_error(&format!("cannot commit the write of session {id}"), e))
    }

    async fn get_sessions(&self, query: &SessionQuery) -> DbResult<SessionPage> {
        let t = self.qualified(&self.tables().sessions);
        let filter = "($1::text IS NULL OR session_type = $1) AND ($2::text IS NULL OR user_id = $2) \
             AND ($3::text IS NULL OR agent_id = $3 OR team_id = $3 OR workflow_id = $3) \
             AND ($4::text IS NULL OR COALESCE(session_data ->> 'session_name', '') ILIKE '%' || $4 || '%') \
             AND ($5::bigint IS NULL OR created_at >= $5) AND ($6::bigint IS NULL OR created_at <= $6)";
        let order = match query.sort_by {
            SessionSort::CreatedAt => "created_at",
            SessionSort::UpdatedAt => "updated_at",
        };
        let dir = query.sort_order.sql();
        let limit = query.limit.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        let offset = query.limit.map_or(0, |n| n.saturating_mul(query.page.unwrap_or(1).max(1) - 1));
        let session_type = query.session_type.map(|s| s.as_str());
        macro_rules! bind_filters {
            ($q:expr) => {
                $q.bind(session_type)
                    .bind(&query.user_id)
                    .bind(&query.component_id)
                    .bind(&query.session_name)
                    .bind(query.start_timestamp)
                    .bind(query.end_timestamp)
            };
        }
        // NULL timestamps sort as the oldest, as in SQLite. `created_at` is NOT NULL: no clause,
        // so the created_at index can serve the order.
        let nulls = match (order, dir) {
            ("created_at", _) => "",
            (_, "ASC") => "NULLS FIRST",
            _ => "NULLS LAST",
        };
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM {t} WHERE {filter} \
             ORDER BY {order} {dir} {nulls}, session_id {dir} LIMIT $7 OFFSET $8"
        );
        let rows = bind_filters!(sqlx::query(AssertSqlSafe(sql)))
            .bind(limit)
            .bind(i64::try_from(offset).unwrap_or(i64::MAX))
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot list sessions", e))?;
        let sessions = crate::codec::readable(
            "session",
            rows.iter().map(|r| (r.try_get::<String, _>("session_id").ok(), session_from_row::<Postgres>(r))),
        );
        let count_sql = format!("SELECT COUNT(*) FROM {t} WHERE {filter}");
        let total: i64 = bind_filters!(sqlx::query_scalar(AssertSqlSafe(count_sql)))
            .fetch_one(self.pool())
            .await
            .map_err(|e| db_error("cannot count sessions", e))?;
        Ok(SessionPage { sessions, total: u64::try_from(total).unwrap_or(0) })
    }

    async fn rename_session(
        &self,
        session_id: &str,
        session_name: &str,
        user_id: Option<&str>,
    ) -> DbResult<Option<AgentSession>> {
        let t = self.qualified(&self.tables().sessions);
        let sql = format!(
            "UPDATE {t} SET session_data = jsonb_set(CASE WHEN jsonb_typeof(session_data) = 'object' \
             THEN session_data ELSE '{{}}'::jsonb END, '{{session_name}}', to_jsonb($1::text)), updated_at = $2 \
             WHERE session_id = $3 AND ($4::text IS NULL OR user_id = $4) RETURNING {SESSION_COLUMNS}"
        );
        let mut name = Value::String(session_name.to_owned());
        sanitize(&mut name);
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(name.as_str())
            .bind(now_epoch_secs())
            .bind(session_id)
            .bind(user_id)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot rename session {session_id}"), e))?;
        row.as_ref().map(session_from_row::<Postgres>).transpose()
    }

    async fn delete_session(&self, session_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_sessions(&[session_id.to_owned()], user_id).await? == 1)
    }

    async fn delete_sessions(&self, session_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        if session_ids.is_empty() {
            return Ok(0);
        }
        let t = self.tables().clone();
        let sessions = self.qualified(&t.sessions);
        // Asked before the transaction: it takes a pool connection of its own, and asking while
        // holding the transaction's lets concurrent deletes exhaust the pool and wait on each
        // other until the acquire timeout.
        let has_runs = self.table_exists(&t.runs).await?;
        let mut tx = self.pool().begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
        // The foreign key cascades too; deleting explicitly also covers a runs table created
        // without it.
        if has_runs {
            let sql = format!(
                "DELETE FROM {} WHERE session_id IN (SELECT session_id FROM {sessions} \
                 WHERE session_id = ANY($1) AND ($2::text IS NULL OR user_id = $2))",
                self.qualified(&t.runs)
            );
            sqlx::query(AssertSqlSafe(sql))
                .bind(session_ids)
                .bind(user_id)
                .execute(&mut *tx)
                .await
                .map_err(|e| db_error("cannot delete the runs of the sessions", e))?;
        }
        let sql = format!("DELETE FROM {sessions} WHERE session_id = ANY($1) AND ($2::text IS NULL OR user_id = $2)");
        let done = sqlx::query(AssertSqlSafe(sql))
            .bind(session_ids)
            .bind(user_id)
            .execute(&mut *tx)
            .await
            .map_err(|e| db_error("cannot delete sessions", e))?;
        tx.commit().await.map_err(|e| db_error("cannot commit the delete of sessions", e))?;
        Ok(done.rows_affected())
    }

    async fn first_run_inputs(
        &self,
        session_ids: &[String],
        user_id: Option<&str>,
    ) -> DbResult<std::collections::HashMap<String, Value>> {
        if session_ids.is_empty() {
            return Ok(std::collections::HashMap::new());
        }
        // Only the `input` of each session's first top-level run leaves the database, its text
        // cut to what a session name shows.
        let sql = format!(
            "SELECT DISTINCT ON (session_id) session_id, CASE WHEN jsonb_typeof(run_data->'input'->'input_content') = 'string' \
             THEN jsonb_build_object('input_content', left(run_data->'input'->>'input_content', {keep})) \
             ELSE run_data->'input' END FROM {} \
             WHERE session_id = ANY($1) AND parent_run_id IS NULL \
             AND ($2::text IS NULL OR user_id = $2 OR user_id IS NULL) \
             ORDER BY session_id, run_index ASC",
            self.qualified(&self.tables().runs),
            keep = crate::codec::FIRST_INPUT_CHARS
        );
        let rows: Vec<(String, Option<Value>)> = sqlx::query_as(AssertSqlSafe(sql))
            .bind(session_ids)
            .bind(user_id)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot read the first runs of sessions", e))?;
        Ok(rows.into_iter().filter_map(|(id, input)| Some((id, input.filter(|v| !v.is_null())?))).collect())
    }
}

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
