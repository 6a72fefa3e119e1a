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

#[async_trait::async_trait]
impl crate::sql::sessions::SqlSessions for SqliteState {
    async fn put_session(
        &self,
        conn: &mut sqlx::SqliteConnection,
        session: &AgentSession,
        state: &StateUpdate,
    ) -> DbResult<()> {
        let t = &self.tables().sessions;
        let id = &session.session_id;
        let now = now_epoch_secs();
        // The upsert writing `session_data` as `data`, where `guard` holds (and the writer may
        // replace the stored row).
        let upsert_with = |data: &str, guard: &str| {
            format!(
                "INSERT INTO {t} ({SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
                 ON CONFLICT (session_id) DO UPDATE SET session_type = excluded.session_type, \
                 agent_id = excluded.agent_id, team_id = excluded.team_id, workflow_id = excluded.workflow_id, \
                 user_id = excluded.user_id, session_data = {data}, agent_data = excluded.agent_data, \
                 team_data = excluded.team_data, workflow_data = excluded.workflow_data, \
                 metadata = excluded.metadata, summary = excluded.summary, updated_at = excluded.updated_at \
                 WHERE ({t}.user_id IS excluded.user_id OR {t}.user_id IS NULL){guard}"
            )
        };
        let write = |session_data: Map<String, Value>, sql: String| {
            let cells = crate::sql::sessions::session_cells(session, session_data, now)?;
            bind_cells::<Sqlite>(sqlx::query(AssertSqlSafe(sql)), cells)
        };
        // The session's own `session_data`, copied where a write takes it.
        let base = || session.session_data.clone().unwrap_or_default();
        if state.changes_nothing() {
            // A run's first write: nothing of the stored state changes, so nothing is read. The
            // upsert keeps the stored `session_state` and `session_metrics` itself (in place, as
            // `StateUpdate::session_data` would), one statement. A stored `session_data` that is
            // not a JSON object (Agno 2.x's double-encoded text, corrupt text) is left to the read
            // below, as is another user's session (nothing written here: the read path refuses
            // it).
            let stored_object = format!(
                "CASE WHEN json_valid({t}.session_data) THEN json_type({t}.session_data) = 'object' ELSE 0 END"
            );
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
            let written = write(base(), upsert_with(&kept, &format!(" AND {stored_object}")))?
                .execute(&mut *conn)
                .await
                .map_err(|e| db_error(&format!("cannot write session {id}"), e))?;
            if written.rows_affected() == 1 {
                return Ok(());
            }
        }
        let mut session_data = base();
        if let StateUpdate::Merge { .. } = state {
            let sql = format!("SELECT session_data FROM {t} WHERE session_id = ?");
            let stored: Option<Option<String>> = sqlx::query_scalar(AssertSqlSafe(sql.as_str()))
                .bind(id)
                .fetch_all(&mut *conn)
                .await
                .map(|rows| rows.into_iter().next())
                .map_err(|e| db_error(&format!("cannot read session {id}"), e))?;
            session_data = state.session_data(session_data, object_column(stored.flatten())?.as_ref());
        }
        let result = write(session_data, upsert_with("excluded.session_data", ""))?
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
