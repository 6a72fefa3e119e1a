//! Runs in MySQL: one row per run. A new run's `run_index` is `max + 1` for its session, read
//! while holding the session row's lock, so concurrent writers never collide and saving run N
//! costs one indexed lookup for any N.

use crate::sql::SqlAdapter;
use agno_core::{Cell, DbError, DbErrorKind, DbResult, RunOutput, now_epoch_secs};
use sqlx::MySql;
use sqlx::{AssertSqlSafe, Row};

use super::sessions::text_column;
use super::{MySqlState, USER_MATCH, db_error, marks};
use crate::sql::runs::{RUN_HEAD, RUN_TAIL, RunCells, bind_cells};

#[async_trait::async_trait]
impl crate::sql::runs::SqlRuns for MySqlState {
    async fn put_run(
        &self,
        conn: &mut sqlx::MySqlConnection,
        run: &RunOutput,
        session_id: &str,
        user_id: Option<&str>,
        _stored: bool,
    ) -> DbResult<i64> {
        let t = self.tables().clone();
        let run_id = run.id();
        let now = now_epoch_secs();
        let RunCells { head, tail, .. } = RunCells::of(run, session_id, user_id, now)?;

        let sql = format!("SELECT user_id, run_index FROM `{}` WHERE run_id = ? FOR UPDATE", t.runs);
        let existing = sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(run_id)
            .fetch_optional(&mut *conn)
            .await
            .map_err(|e| db_error(&format!("cannot read run {run_id}"), e))?;
        let (exists, kept_index) = match &existing {
            Some(row) => {
                let owner = text_column(row, "user_id")?;
                if owner.is_some() && owner.as_deref() != user_id {
                    return Err(DbError::new(DbErrorKind::Conflict, format!("run {run_id} belongs to another user")));
                }
                let index: Option<i64> =
                    row.try_get("run_index").map_err(|e| db_error(&format!("cannot read run {run_id}"), e))?;
                (true, index)
            }
            None => (false, None),
        };

        let index = match kept_index {
            Some(index) => index,
            None => {
                // Lock the session row: writers of one session take their index one at a time,
                // and each reads the maximum only once the previous writer has committed.
                let sql = format!("SELECT session_id FROM `{}` WHERE session_id = ? FOR UPDATE", t.sessions);
                let session = sqlx::query(AssertSqlSafe(sql.as_str()))
                    .bind(session_id)
                    .fetch_optional(&mut *conn)
                    .await
                    .map_err(|e| db_error(&format!("cannot lock session {session_id}"), e))?;
                if session.is_none() && !exists {
                    return Err(DbError::new(
                        DbErrorKind::Conflict,
                        format!(
                            "cannot write run {run_id}: session {session_id} does not exist; save the session first"
                        ),
                    ));
                }
                let sql = format!("SELECT MAX(run_index) AS m FROM `{}` WHERE session_id = ?", t.runs);
                let row = sqlx::query(AssertSqlSafe(sql.as_str()))
                    .bind(session_id)
                    .fetch_one(&mut *conn)
                    .await
                    .map_err(|e| db_error(&format!("cannot read the run index of session {session_id}"), e))?;
                let max: Option<i64> =
                    row.try_get("m").map_err(|e| db_error(&format!("cannot read the run index of {session_id}"), e))?;
                max.map_or(0, |m| m + 1)
            }
        };

        if exists {
            let owner_match = if user_id.is_some() {
                format!("(user_id IS NULL OR {USER_MATCH})")
            } else {
                "user_id IS NULL".to_owned()
            };
            let sql = format!(
                "UPDATE `{}` SET status = ?, run_data = ?, parent_run_id = ?, updated_at = ?, \
                 run_index = COALESCE(run_index, ?) WHERE run_id = ? AND {owner_match}",
                t.runs
            );
            let [.., parent_run_id, status] = head;
            let [run_data, ..] = tail;
            let changes = [status, run_data, parent_run_id, Cell::Int(Some(now)), Cell::Int(Some(index))];
            let mut q = bind_cells::<MySql>(sqlx::query(AssertSqlSafe(sql.as_str())), changes)?.bind(run_id);
            if let Some(u) = user_id {
                q = q.bind(u).bind(u);
            }
            let done = q.execute(&mut *conn).await.map_err(|e| db_error(&format!("cannot write run {run_id}"), e))?;
            if done.rows_affected() == 0 {
                return Err(DbError::new(DbErrorKind::Conflict, format!("run {run_id} belongs to another user")));
            }
        } else {
            let sql = format!("INSERT INTO `{}` ({RUN_HEAD}, run_index, {RUN_TAIL}) VALUES ({})", t.runs, marks(13));
            // A concurrent insert of the same run id fails here with a duplicate key: retried.
            let cells = head.into_iter().chain([Cell::Int(Some(index))]).chain(tail);
            bind_cells::<MySql>(sqlx::query(AssertSqlSafe(sql.as_str())), cells)?
                .execute(&mut *conn)
                .await
                .map_err(|e| db_error(&format!("cannot write run {run_id}"), e))?;
        }
        Ok(index)
    }
}
