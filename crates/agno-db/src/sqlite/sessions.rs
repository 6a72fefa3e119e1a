//! Sessions in SQLite: one row each, never carrying runs (except a legacy v2 blob, read only).

use crate::sql::SqlAdapter;
use agno_core::{AgentSession, DbError, DbErrorKind, DbResult, StateUpdate, now_epoch_secs};
use serde_json::{Map, Value};
use sqlx::{AssertSqlSafe, Sqlite};

use super::{SqliteState, db_error};
use crate::codec::object_column;
use crate::sql::runs::bind_cells;

const SESSION_COLUMNS: &str = "session_id, session_type, agent_id, team_id, workflow_id, user_id, session_data, \
     agent_data, team_data, workflow_data, metadata, summary, created_at, updated_at";

impl SqliteState {
    /// The upsert of a session row writing `session_data` as `data`, where `guard` holds (and the
    /// writer may replace the stored row: its owner, or a row without one).
    pub(super) fn session_upsert(&self, data: &str, guard: &str) -> String {
        let t = &self.tables().sessions;
        format!(
            "INSERT INTO {t} ({SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (session_id) DO UPDATE SET session_type = excluded.session_type, \
             agent_id = excluded.agent_id, team_id = excluded.team_id, workflow_id = excluded.workflow_id, \
             user_id = excluded.user_id, session_data = {data}, agent_data = excluded.agent_data, \
             team_data = excluded.team_data, workflow_data = excluded.workflow_data, \
             metadata = excluded.metadata, summary = excluded.summary, updated_at = excluded.updated_at \
             WHERE ({t}.user_id IS excluded.user_id OR {t}.user_id IS NULL){guard}"
        )
    }

    /// The session upsert of a write that changes nothing of the stored state (a run's first
    /// write): it keeps the stored `session_state` and `session_metrics` itself (in place, as
    /// `StateUpdate::session_data` would), so nothing is read first. A stored `session_data` that
    /// is not a JSON object (Agno 2.x's double-encoded text, corrupt text) is not written here (the
    /// read path takes it), nor is another user's session (the read path refuses it).
    pub(super) fn session_upsert_keeping_state(&self) -> String {
        let t = &self.tables().sessions;
        let stored_object =
            format!("CASE WHEN json_valid({t}.session_data) THEN json_type({t}.session_data) = 'object' ELSE 0 END");
        let kept = format!(
            "CASE WHEN {stored_object} THEN json_set(\
             CASE WHEN json_type({t}.session_data, '$.session_metrics') IS NULL \
             THEN json_remove(excluded.session_data, '$.session_metrics') \
             ELSE json_set(excluded.session_data, '$.session_metrics', {t}.session_data -> '$.session_metrics') END, \
             '$.session_state', \
             CASE WHEN json_type({t}.session_data, '$.session_state') = 'object' \
             THEN {t}.session_data -> '$.session_state' ELSE json('{{}}') END) \
             ELSE excluded.session_data END"
        );
        self.session_upsert(&kept, &format!(" AND {stored_object}"))
    }

    /// The `session_data` a write of `session` stores under `state`: the stored one read (on
    /// `conn`, the caller's transaction) and merged where `state` merges.
    pub(super) async fn session_data_to_store(
        &self,
        conn: &mut sqlx::SqliteConnection,
        session: &AgentSession,
        state: &StateUpdate,
    ) -> DbResult<Map<String, Value>> {
        let base = session.session_data.clone().unwrap_or_default();
        let StateUpdate::Merge { .. } = state else { return Ok(base) };
        let (t, id) = (&self.tables().sessions, &session.session_id);
        let sql = format!("SELECT session_data FROM {t} WHERE session_id = ?");
        let stored: Option<Option<String>> = sqlx::query_scalar(AssertSqlSafe(sql.as_str()))
            .bind(id)
            .fetch_all(&mut *conn)
            .await
            .map(|rows| rows.into_iter().next())
            .map_err(|e| db_error(&format!("cannot read session {id}"), e))?;
        Ok(state.session_data(base, object_column(stored.flatten())?.as_ref()))
    }
}

#[async_trait::async_trait]
impl crate::sql::sessions::SqlSessions for SqliteState {
    async fn put_session(
        &self,
        conn: &mut sqlx::SqliteConnection,
        session: &AgentSession,
        state: &StateUpdate,
    ) -> DbResult<()> {
        let id = &session.session_id;
        let now = now_epoch_secs();
        let write = |session_data: Map<String, Value>, sql: String| {
            let cells = crate::sql::sessions::session_cells(session, session_data, now)?;
            bind_cells::<Sqlite>(sqlx::query(AssertSqlSafe(sql)), cells)
        };
        if state.changes_nothing() {
            // One statement, nothing read; when it writes nothing, the read path below decides.
            let base = session.session_data.clone().unwrap_or_default();
            let written = write(base, self.session_upsert_keeping_state())?
                .execute(&mut *conn)
                .await
                .map_err(|e| db_error(&format!("cannot write session {id}"), e))?;
            if written.rows_affected() == 1 {
                return Ok(());
            }
        }
        let session_data = self.session_data_to_store(conn, session, state).await?;
        let result = write(session_data, self.session_upsert("excluded.session_data", ""))?
            .execute(&mut *conn)
            .await
            .map_err(|e| db_error(&format!("cannot write session {id}"), e))?;
        if result.rows_affected() == 0 {
            return Err(DbError::new(
                DbErrorKind::Conflict,
                format!("session {} belongs to another user", session.session_id),
            ));
        }
        Ok(())
    }
}
