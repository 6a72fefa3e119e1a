//! Sessions in MySQL: one row each, never carrying runs (except a legacy v2 blob, read only).

use crate::sql::SqlAdapter;
use agno_core::{AgentSession, DbError, DbErrorKind, DbResult, StateUpdate, now_epoch_secs};
use serde_json::{Map, Value};
use sqlx::mysql::MySqlRow;
use sqlx::{AssertSqlSafe, Row};

use super::{MySqlState, USER_MATCH, db_error, marks};
use crate::codec::{object_column, session_type_of, to_json_text};

const SESSION_COLUMNS: &str = "session_id, session_type, agent_id, team_id, workflow_id, user_id, session_data, \
     agent_data, team_data, workflow_data, metadata, summary, created_at, updated_at";

/// A text or JSON column as text. JSON columns are read unchecked: MySQL reports them as `JSON`,
/// MariaDB as `LONGTEXT`, and both send the JSON text.
pub(crate) fn text_column(row: &MySqlRow, col: &str) -> DbResult<Option<String>> {
    row.try_get_unchecked::<Option<String>, _>(col).map_err(|e| db_error(&format!("cannot read column {col}"), e))
}

fn extra_json(session: &AgentSession, key: &str) -> Option<String> {
    session.extra.get(key).filter(|v| !v.is_null()).map(Value::to_string)
}

fn opt_json<T: serde::Serialize>(v: Option<&T>) -> DbResult<Option<String>> {
    v.map(to_json_text).transpose()
}

#[async_trait::async_trait]
impl crate::sql::sessions::SqlSessions for MySqlState {
    async fn put_session(
        &self,
        conn: &mut sqlx::MySqlConnection,
        session: &AgentSession,
        state: &StateUpdate,
    ) -> DbResult<()> {
        let t = &self.tables().sessions;
        let id = &session.session_id;
        let sql = format!("SELECT user_id, session_data FROM `{t}` WHERE session_id = ? FOR UPDATE");
        let existing = sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(id)
            .fetch_optional(&mut *conn)
            .await
            .map_err(|e| db_error(&format!("cannot read session {id}"), e))?;
        let mut session_data = session.session_data.clone().unwrap_or_default();
        let now = now_epoch_secs();
        let values = [
            Some(session_type_of(session).to_owned()),
            session.agent_id.clone(),
            session.team_id.clone(),
            session.workflow_id.clone(),
            session.user_id.clone(),
        ];
        let json_values = |session_data: &Map<String, Value>| -> DbResult<[Option<String>; 6]> {
            Ok([
                Some(to_json_text(session_data)?),
                opt_json(session.agent_data.as_ref())?,
                extra_json(session, "team_data"),
                extra_json(session, "workflow_data"),
                opt_json(session.metadata.as_ref())?,
                opt_json(session.summary.as_ref())?,
            ])
        };
        match existing {
            Some(row) => {
                let owner = text_column(&row, "user_id")?;
                if owner.is_some() && owner != session.user_id {
                    return Err(DbError::new(DbErrorKind::Conflict, format!("session {id} belongs to another user")));
                }
                if let StateUpdate::Merge { .. } = state {
                    let stored = object_column(text_column(&row, "session_data")?)?;
                    session_data = state.session_data(session_data, stored.as_ref());
                }
                // The owner predicate is part of the write itself, not only of the check above.
                let owner_match = if session.user_id.is_some() {
                    format!("(user_id IS NULL OR {USER_MATCH})")
                } else {
                    "user_id IS NULL".to_owned()
                };
                let sql = format!(
                    "UPDATE `{t}` SET session_type = ?, agent_id = ?, team_id = ?, workflow_id = ?, user_id = ?, \
                     session_data = ?, agent_data = ?, team_data = ?, workflow_data = ?, metadata = ?, summary = ?, \
                     updated_at = ? WHERE session_id = ? AND {owner_match}"
                );
                let mut q = sqlx::query(AssertSqlSafe(sql.as_str()));
                for v in values.iter().chain(json_values(&session_data)?.iter()) {
                    q = q.bind(v.clone());
                }
                q = q.bind(now).bind(id);
                if let Some(u) = &session.user_id {
                    q = q.bind(u).bind(u);
                }
                let done =
                    q.execute(&mut *conn).await.map_err(|e| db_error(&format!("cannot write session {id}"), e))?;
                if done.rows_affected() == 0 {
                    return Err(DbError::new(DbErrorKind::Conflict, format!("session {id} belongs to another user")));
                }
            }
            None => {
                session_data = state.session_data(session_data, None);
                let sql = format!("INSERT INTO `{t}` ({SESSION_COLUMNS}) VALUES ({})", marks(14));
                let mut q = sqlx::query(AssertSqlSafe(sql.as_str())).bind(id);
                for v in values.iter().chain(json_values(&session_data)?.iter()) {
                    q = q.bind(v.clone());
                }
                // A concurrent insert of the same id fails here with a duplicate key: retried.
                q.bind(session.created_at.unwrap_or(now))
                    .bind(now)
                    .execute(&mut *conn)
                    .await
                    .map_err(|e| db_error(&format!("cannot write session {id}"), e))?;
            }
        }
        Ok(())
    }
}
