//! Runs in SQLite: one row per run; `run_index` assigned inside the insert statement itself, so
//! concurrent writers never collide and saving run N costs the same for any N.

use agno_core::{DbError, DbErrorKind, DbResult, RunOutput, now_epoch_secs};
use serde_json::Value;
use sqlx::AssertSqlSafe;

use super::{SqliteDb, db_error};
use crate::codec::{run_type, to_json_text};

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

impl SqliteDb {
    /// `RunStore::upsert_run`: the write on a connection of its own.
    pub(crate) async fn save_run(&self, run: &RunOutput, session_id: &str, user_id: Option<&str>) -> DbResult<i64> {
        let _turn = self.write_turn().await;
        let mut conn = self.pool().acquire().await.map_err(|e| db_error("cannot get a connection", e))?;
        self.write_run(&mut conn, run, session_id, user_id).await
    }
}

crate::sql::runs::run_store!(SqliteDb);

impl SqliteDb {
    /// The write of `upsert_run` on `conn` (a connection, or the caller's transaction).
    pub(super) async fn write_run(
        &self,
        conn: &mut sqlx::SqliteConnection,
        run: &RunOutput,
        session_id: &str,
        user_id: Option<&str>,
    ) -> DbResult<i64> {
        let t = &self.tables().runs;
        let data = serde_json::to_value(run)
            .map_err(|e| DbError::new(DbErrorKind::Other, format!("cannot encode run {}: {e}", run.id())))?;
        let now = now_epoch_secs();
        let sql = format!(
            "INSERT INTO {t} (run_id, session_id, run_type, agent_id, team_id, workflow_id, user_id, parent_run_id, \
             status, run_index, run_data, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(run_index) + 1, 0) FROM {t} WHERE session_id = ?), ?, ?, ?) \
             ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, run_data = excluded.run_data, \
             parent_run_id = excluded.parent_run_id, updated_at = excluded.updated_at, \
             run_index = COALESCE({t}.run_index, excluded.run_index) \
             WHERE {t}.user_id IS excluded.user_id OR {t}.user_id IS NULL \
             RETURNING run_index"
        );
        let index: Vec<Option<i64>> = sqlx::query_scalar(AssertSqlSafe(sql.as_str()))
            .bind(run.id())
            .bind(session_id)
            .bind(run_type(&data))
            .bind(str_field(&data, "agent_id"))
            .bind(str_field(&data, "team_id"))
            .bind(str_field(&data, "workflow_id"))
            .bind(user_id)
            .bind(str_field(&data, "parent_run_id"))
            .bind(run.status.as_str())
            .bind(session_id)
            .bind(to_json_text(&data)?)
            .bind(run.created_at)
            .bind(now)
            .fetch_all(&mut *conn)
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
        let Some(index) = index.into_iter().next() else {
            return Err(DbError::new(DbErrorKind::Conflict, format!("run {} belongs to another user", run.id())));
        };
        if !self.has_run_facts() {
            return Ok(index.unwrap_or(0));
        }
        // What the metrics read of the run, beside it (no JSON to parse later).
        let facts = self.tables().run_facts();
        let sql = format!(
            "INSERT INTO {facts} (run_id, model, model_provider) VALUES (?, ?, ?) \
             ON CONFLICT (run_id) DO UPDATE SET model = excluded.model, model_provider = excluded.model_provider"
        );
        sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(run.id())
            .bind(str_field(&data, "model"))
            .bind(str_field(&data, "model_provider"))
            .execute(&mut *conn)
            .await
            .map_err(|e| db_error(&format!("cannot write the facts of run {}", run.id()), e))?;
        Ok(index.unwrap_or(0))
    }
}
