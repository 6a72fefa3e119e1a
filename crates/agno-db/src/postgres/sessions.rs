//! Sessions in PostgreSQL: one row each, never carrying runs (except a legacy v2 `runs` blob,
//! read only and merged with the runs table on read).

use crate::sql::SqlAdapter;
use agno_core::{AgentSession, DbError, DbErrorKind, DbResult, StateUpdate, now_epoch_secs};
use serde_json::{Map, Value};
use sqlx::{AssertSqlSafe, Postgres};

use super::{PostgresState, db_error, value_column};
use crate::sql::runs::bind_cells;

const SESSION_COLUMNS: &str = "session_id, session_type, agent_id, team_id, workflow_id, user_id, session_data, \
     agent_data, team_data, workflow_data, metadata, summary, created_at, updated_at";

/// `$from, $from + 1, ..., $from + n - 1`: the placeholders of `n` values bound in order.
pub(super) fn params(from: usize, n: usize) -> String {
    (from..from + n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
}

/// The `session_data` a run's first write stores ([`StateUpdate::changes_nothing`]): the
/// session's own (`excluded`), keeping the stored `session_state` and `session_metrics` (what the
/// read of a merge and `StateUpdate::session_data` would keep), stated in the upsert so that
/// nothing is read first.
pub(super) const KEEP_STORED_STATE: &str = "CASE WHEN jsonb_typeof(t.session_data) = 'object' THEN \
     (excluded.session_data - 'session_state' - 'session_metrics') \
     || jsonb_build_object('session_state', \
     CASE WHEN jsonb_typeof(t.session_data -> 'session_state') = 'object' \
     THEN t.session_data -> 'session_state' ELSE '{}'::jsonb END) \
     || CASE WHEN t.session_data ? 'session_metrics' \
     THEN jsonb_build_object('session_metrics', t.session_data -> 'session_metrics') \
     ELSE '{}'::jsonb END \
     ELSE excluded.session_data END";

/// The condition [`KEEP_STORED_STATE`] is written under: a stored `session_data` that is a JSON
/// string (text a client double-encoded) is left to the read of a merge.
pub(super) const KEEPS_ONLY_OBJECTS: &str = " AND jsonb_typeof(t.session_data) IS DISTINCT FROM 'string'";

/// The session upsert into `t` (qualified) of the row `source` gives (the session's cells in
/// `session_cells` order: a `VALUES` list or a `SELECT`), writing `session_data` as `data`;
/// a stored row is replaced only when it is the same user's (or nobody's) and `guard` holds. It
/// changes no row otherwise.
pub(super) fn upsert_sql(t: &str, source: &str, data: &str, guard: &str) -> String {
    format!(
        "INSERT INTO {t} AS t ({SESSION_COLUMNS}) {source} ON CONFLICT (session_id) DO UPDATE SET \
         session_type = excluded.session_type, agent_id = excluded.agent_id, team_id = excluded.team_id, \
         workflow_id = excluded.workflow_id, user_id = excluded.user_id, session_data = {data}, \
         agent_data = excluded.agent_data, team_data = excluded.team_data, \
         workflow_data = excluded.workflow_data, metadata = excluded.metadata, summary = excluded.summary, \
         updated_at = excluded.updated_at \
         WHERE (t.user_id IS NOT DISTINCT FROM excluded.user_id OR t.user_id IS NULL){guard}"
    )
}

#[async_trait::async_trait]
impl crate::sql::sessions::SqlSessions for PostgresState {
    async fn put_session(
        &self,
        conn: &mut sqlx::PgConnection,
        session: &AgentSession,
        state: &StateUpdate,
    ) -> DbResult<()> {
        let t = self.qualified(&self.tables().sessions);
        let id = &session.session_id;
        // The session's own `session_data`, copied where a write takes it.
        let base = || session.session_data.clone().unwrap_or_default();
        let now = now_epoch_secs();
        let values = format!("VALUES ({})", params(1, 14));
        let columns = format!("INSERT INTO {t} AS t ({SESSION_COLUMNS}) {values}");
        let write = |session_data: Map<String, Value>, sql: String| {
            let cells = crate::sql::sessions::session_cells(session, session_data, now)?;
            bind_cells::<Postgres>(sqlx::query(AssertSqlSafe(sql)), cells)
        };
        let upsert_with = |data: &str, guard: &str| upsert_sql(&t, &values, data, guard);
        let upsert = upsert_with("excluded.session_data", "");
        if state.changes_nothing() {
            // A run's first write: nothing of the stored state changes, so nothing is read. The
            // upsert keeps the stored `session_state` and `session_metrics` itself (what the read
            // below and `StateUpdate::session_data` would keep), one statement under the row's
            // lock. A stored `session_data` that is a JSON string (text a client double-encoded)
            // is left to the read below, as is another user's session (nothing written here:
            // the read path refuses it).
            let sql = upsert_with(KEEP_STORED_STATE, KEEPS_ONLY_OBJECTS);
            let written = write(base(), sql)?
                .execute(&mut *conn)
                .await
                .map_err(|e| db_error(&format!("cannot write session {id}"), e))?;
            if written.rows_affected() == 1 {
                return Ok(());
            }
        }
        let session_data = match state {
            StateUpdate::Replace => base(),
            StateUpdate::Merge { .. } => {
                // A merge reads the stored state under the row's lock, then writes it back. A session
                // not stored yet is inserted only if nobody inserted it meanwhile (ON CONFLICT DO
                // NOTHING waits for a concurrent insert to end); otherwise the stored row is read
                // again, now under its lock. So merges of one session take turns without an
                // advisory lock, and a new session costs two statements, as a stored one does.
                //
                // FOR NO KEY UPDATE, not FOR UPDATE: it still holds off other writers of the row,
                // but not the KEY SHARE lock a run insert's foreign key check takes on its session.
                // With FOR UPDATE, a worker saving a run (this lock, then the run-index lock) and
                // another request writing a run of the same session (the run-index lock, then the
                // key check) deadlocked, and PostgreSQL aborted one of them.
                let select = format!("SELECT session_data FROM {t} WHERE session_id = $1 FOR NO KEY UPDATE");
                let mut tries = 0;
                loop {
                    let stored: Option<Option<Value>> = sqlx::query_scalar(AssertSqlSafe(select.clone()))
                        .bind(id)
                        .fetch_optional(&mut *conn)
                        .await
                        .map_err(|e| db_error(&format!("cannot read session {id}"), e))?;
                    if let Some(stored) = stored {
                        let stored = match value_column(stored) {
                            Some(Value::Object(stored)) => Some(stored),
                            _ => None,
                        };
                        break state.session_data(base(), stored.as_ref());
                    }
                    let inserted =
                        write(state.session_data(base(), None), format!("{columns} ON CONFLICT DO NOTHING"))?
                            .execute(&mut *conn)
                            .await
                            .map_err(|e| db_error(&format!("cannot write session {id}"), e))?;
                    if inserted.rows_affected() == 1 {
                        return Ok(());
                    }
                    tries += 1;
                    if tries == 3 {
                        // Created and deleted again under us, three times over.
                        return Err(DbError::new(
                            DbErrorKind::Conflict,
                            format!("session {id} keeps changing under this write; try again"),
                        ));
                    }
                }
            }
        };
        let result = write(session_data, upsert)?
            .execute(&mut *conn)
            .await
            .map_err(|e| db_error(&format!("cannot write session {id}"), e))?;
        if result.rows_affected() == 0 {
            return Err(DbError::new(DbErrorKind::Conflict, format!("session {id} belongs to another user")));
        }
        Ok(())
    }
}
