//! Sessions in SQLite: one row each, never carrying runs (except a legacy v2 blob, read only).

use agno_core::{
    AgentSession, DbError, DbErrorKind, DbResult, RunOutput, SessionPage, SessionQuery, SessionSort, SessionStore,
    StateUpdate, now_epoch_secs,
};
use async_trait::async_trait;
use serde_json::Value;
use sqlx::AssertSqlSafe;
use sqlx::Row;
use sqlx::Sqlite;

use super::{SqliteDb, db_error};
use crate::codec::{
    decode_listed_text, json_column, keep_latest, merge_legacy_runs, object_column, session_type_of, to_json_text,
};
use crate::sql::sessions::session_from_row;

const SESSION_COLUMNS: &str = "session_id, session_type, agent_id, team_id, workflow_id, user_id, session_data, \
     agent_data, team_data, workflow_data, metadata, summary, created_at, updated_at";

fn extra_json(session: &AgentSession, key: &str) -> Option<String> {
    session.extra.get(key).filter(|v| !v.is_null()).map(Value::to_string)
}

fn opt_json<T: serde::Serialize>(v: Option<&T>) -> DbResult<Option<String>> {
    v.map(to_json_text).transpose()
}

impl SqliteDb {
    async fn read_runs(&self, session_id: &str, limit: Option<usize>) -> DbResult<Vec<RunOutput>> {
        if !self.has_runs_table() {
            return Ok(Vec::new());
        }
        let t = &self.tables().runs;
        let sql =
            format!("SELECT run_data FROM {t} WHERE session_id = ? ORDER BY run_index DESC, created_at DESC LIMIT ?");
        let limit = limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let rows: Vec<String> = sqlx::query_scalar(AssertSqlSafe(sql.as_str()))
            .bind(session_id)
            .bind(limit)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot read runs of session {session_id}"), e))?;
        let mut runs = rows.into_iter().filter_map(decode_listed_text).collect::<Vec<_>>();
        runs.reverse();
        Ok(runs)
    }

    /// The session row and, with `with_blob`, its legacy `runs` blob when the column exists.
    pub(crate) async fn session_row(
        &self,
        session_id: &str,
        user_id: Option<&str>,
        with_blob: bool,
    ) -> DbResult<Option<(AgentSession, Option<Value>)>> {
        let t = &self.tables().sessions;
        let with_blob = with_blob && self.has_legacy_runs();
        let legacy = if with_blob { ", runs" } else { "" };
        let sql =
            format!("SELECT {SESSION_COLUMNS}{legacy} FROM {t} WHERE session_id = ? AND (? IS NULL OR user_id = ?)");
        let row = sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(session_id)
            .bind(user_id)
            .bind(user_id)
            .fetch_all(self.pool())
            .await
            .map(|rows| rows.into_iter().next())
            .map_err(|e| db_error(&format!("cannot read session {session_id}"), e))?;
        let Some(row) = row else { return Ok(None) };
        let blob = if with_blob {
            json_column(
                row.try_get::<Option<String>, _>("runs").map_err(|e| db_error("cannot read sessions.runs", e))?,
            )?
        } else {
            None
        };
        Ok(Some((session_from_row::<Sqlite>(&row)?, blob)))
    }
}

#[async_trait]
impl SessionStore for SqliteDb {
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
        } else if blob.is_some() {
            // Merge first, then bound: blob-only runs count towards the latest N.
            keep_latest(merge_legacy_runs(self.read_runs(session_id, None).await?, blob)?, runs_limit)
        } else {
            self.read_runs(session_id, runs_limit).await?
        };
        session.runs = Some(runs);
        Ok(Some(session))
    }

    async fn upsert_session(&self, session: &AgentSession, state: &StateUpdate) -> DbResult<()> {
        let _turn = self.write_turn().await;
        let mut tx =
            self.pool().begin_with("BEGIN IMMEDIATE").await.map_err(|e| db_error("cannot start a transaction", e))?;
        self.write_session(&mut tx, session, state).await?;
        tx.commit().await.map_err(|e| db_error("cannot commit session write", e))
    }

    async fn get_sessions(&self, query: &SessionQuery) -> DbResult<SessionPage> {
        let t = &self.tables().sessions;
        let filter = "(? IS NULL OR session_type = ?) AND (? IS NULL OR user_id = ?) \
             AND (? IS NULL OR agent_id = ? OR team_id = ? OR workflow_id = ?) \
             AND (? IS NULL OR json_extract(session_data, '$.session_name') LIKE '%' || ? || '%') \
             AND (? IS NULL OR created_at >= ?) AND (? IS NULL OR created_at <= ?)";
        let order = match query.sort_by {
            SessionSort::CreatedAt => "created_at",
            SessionSort::UpdatedAt => "updated_at",
        };
        let limit = query.limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let offset = query.limit.map_or(0, |n| n.saturating_mul(query.page.unwrap_or(1).max(1) - 1));
        let session_type = query.session_type.map(|s| s.as_str());
        macro_rules! bind_filters {
            ($q:expr) => {
                $q.bind(session_type)
                    .bind(session_type)
                    .bind(&query.user_id)
                    .bind(&query.user_id)
                    .bind(&query.component_id)
                    .bind(&query.component_id)
                    .bind(&query.component_id)
                    .bind(&query.component_id)
                    .bind(&query.session_name)
                    .bind(&query.session_name)
                    .bind(query.start_timestamp)
                    .bind(query.start_timestamp)
                    .bind(query.end_timestamp)
                    .bind(query.end_timestamp)
            };
        }
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM {t} WHERE {filter} ORDER BY {order} {}, session_id {} LIMIT ? OFFSET ?",
            query.sort_order.sql(),
            query.sort_order.sql()
        );
        let rows = bind_filters!(sqlx::query(AssertSqlSafe(sql.as_str())))
            .bind(limit)
            .bind(i64::try_from(offset).unwrap_or(i64::MAX))
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot list sessions", e))?;
        let sessions = crate::codec::readable(
            "session",
            rows.iter().map(|r| (r.try_get::<String, _>("session_id").ok(), session_from_row::<Sqlite>(r))),
        );
        let count_sql = format!("SELECT COUNT(*) FROM {t} WHERE {filter}");
        let total: i64 = bind_filters!(sqlx::query_scalar(AssertSqlSafe(count_sql.as_str())))
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
        let _turn = self.write_turn().await;
        let t = &self.tables().sessions;
        let sql = format!(
            "UPDATE {t} SET session_data = json_set(COALESCE(NULLIF(session_data, 'null'), '{{}}'), '$.session_name', ?), \
             updated_at = ? WHERE session_id = ? AND (? IS NULL OR user_id = ?)"
        );
        let done = sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(session_name)
            .bind(now_epoch_secs())
            .bind(session_id)
            .bind(user_id)
            .bind(user_id)
            .execute(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot rename session {session_id}"), e))?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        Ok(self.session_row(session_id, user_id, false).await?.map(|(s, _)| s))
    }

    async fn delete_session(&self, session_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_sessions(&[session_id.to_owned()], user_id).await? == 1)
    }

    async fn delete_sessions(&self, session_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        let _turn = self.write_turn().await;
        if session_ids.is_empty() {
            return Ok(0);
        }
        let t = self.tables().clone();
        let marks = vec!["?"; session_ids.len()].join(", ");
        let mut tx = self.pool().begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
        let runs_sql = format!(
            "DELETE FROM {} WHERE session_id IN (SELECT session_id FROM {} WHERE session_id IN ({marks}) AND (? IS NULL OR user_id = ?))",
            t.runs, t.sessions
        );
        let mut q = sqlx::query(AssertSqlSafe(runs_sql.as_str()));
        for id in session_ids {
            q = q.bind(id);
        }
        if self.table_exists(&t.runs).await? {
            q.bind(user_id).bind(user_id).execute(&mut *tx).await.map_err(|e| db_error("cannot delete runs", e))?;
        }
        let sql = format!("DELETE FROM {} WHERE session_id IN ({marks}) AND (? IS NULL OR user_id = ?)", t.sessions);
        let mut q = sqlx::query(AssertSqlSafe(sql.as_str()));
        for id in session_ids {
            q = q.bind(id);
        }
        let done =
            q.bind(user_id).bind(user_id).execute(&mut *tx).await.map_err(|e| db_error("cannot delete sessions", e))?;
        tx.commit().await.map_err(|e| db_error("cannot commit delete", e))?;
        Ok(done.rows_affected())
    }

    async fn first_run_inputs(
        &self,
        session_ids: &[String],
        user_id: Option<&str>,
    ) -> DbResult<std::collections::HashMap<String, Value>> {
        if !self.has_runs_table() || session_ids.is_empty() {
            return Ok(std::collections::HashMap::new());
        }
        let t = &self.tables().runs;
        // Only the `input` of each session's first top-level run leaves the database, its text
        // cut to what a session name shows.
        let sql = format!(
            "SELECT r.session_id, CASE WHEN json_type(r.run_data, '$.input.input_content') = 'text' \
             THEN json_object('input_content', substr(json_extract(r.run_data, '$.input.input_content'), 1, {keep})) \
             ELSE r.run_data -> '$.input' END FROM {t} r \
             WHERE r.session_id IN (SELECT value FROM json_each(?)) AND r.parent_run_id IS NULL \
             AND (? IS NULL OR r.user_id = ? OR r.user_id IS NULL) \
             AND r.run_index = (SELECT MIN(r2.run_index) FROM {t} r2 \
                                WHERE r2.session_id = r.session_id AND r2.parent_run_id IS NULL)",
            keep = crate::codec::FIRST_INPUT_CHARS
        );
        let ids = serde_json::to_string(session_ids)
            .map_err(|e| DbError::new(DbErrorKind::Other, format!("cannot encode session ids: {e}")))?;
        let rows: Vec<(String, Option<String>)> = sqlx::query_as(AssertSqlSafe(sql.as_str()))
            .bind(ids)
            .bind(user_id)
            .bind(user_id)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot read the first runs of sessions", e))?;
        Ok(rows.into_iter().filter_map(|(id, input)| Some((id, serde_json::from_str(&input?).ok()?))).collect())
    }
}

impl SqliteDb {
    /// The writes of `upsert_session`, inside the caller's `BEGIN IMMEDIATE` transaction (which
    /// the caller rolls back on an error).
    pub(super) async fn write_session(
        &self,
        conn: &mut sqlx::SqliteConnection,
        session: &AgentSession,
        state: &StateUpdate,
    ) -> DbResult<()> {
        let t = &self.tables().sessions;
        let mut session_data = session.session_data.clone().unwrap_or_default();
        if let StateUpdate::Merge { .. } = state {
            let sql = format!("SELECT session_data FROM {t} WHERE session_id = ?");
            let stored: Option<Option<String>> = sqlx::query_scalar(AssertSqlSafe(sql.as_str()))
                .bind(&session.session_id)
                .fetch_all(&mut *conn)
                .await
                .map(|rows| rows.into_iter().next())
                .map_err(|e| db_error(&format!("cannot read session {}", session.session_id), e))?;
            session_data = state.session_data(session_data, object_column(stored.flatten())?.as_ref());
        }
        let now = now_epoch_secs();
        let sql = format!(
            "INSERT INTO {t} ({SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (session_id) DO UPDATE SET session_type = excluded.session_type, agent_id = excluded.agent_id, \
             team_id = excluded.team_id, workflow_id = excluded.workflow_id, user_id = excluded.user_id, \
             session_data = excluded.session_data, agent_data = excluded.agent_data, team_data = excluded.team_data, \
             workflow_data = excluded.workflow_data, metadata = excluded.metadata, summary = excluded.summary, \
             updated_at = excluded.updated_at \
             WHERE {t}.user_id IS excluded.user_id OR {t}.user_id IS NULL"
        );
        let result = sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(&session.session_id)
            .bind(session_type_of(session))
            .bind(&session.agent_id)
            .bind(&session.team_id)
            .bind(&session.workflow_id)
            .bind(&session.user_id)
            .bind(to_json_text(&session_data)?)
            .bind(opt_json(session.agent_data.as_ref())?)
            .bind(extra_json(session, "team_data"))
            .bind(extra_json(session, "workflow_data"))
            .bind(opt_json(session.metadata.as_ref())?)
            .bind(opt_json(session.summary.as_ref())?)
            .bind(session.created_at.unwrap_or(now))
            .bind(now)
            .execute(&mut *conn)
            .await
            .map_err(|e| db_error(&format!("cannot write session {}", session.session_id), e))?;
        if result.rows_affected() == 0 {
            return Err(DbError::new(
                DbErrorKind::Conflict,
                format!("session {} belongs to another user", session.session_id),
            ));
        }
        Ok(())
    }
}
