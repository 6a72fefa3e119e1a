//! Runs in SQLite: one row per run; `run_index` assigned inside the insert statement itself, so
//! concurrent writers never collide and saving run N costs the same for any N.

use crate::sql::SqlAdapter;
use agno_core::{Cell, DbError, DbErrorKind, DbResult, RunOutput, now_epoch_secs};
use sqlx::{AssertSqlSafe, Row, Sqlite};

use super::{SqliteState, db_error};
use crate::sql::runs::{RUN_HEAD, RUN_TAIL, RunCells, bind_cells, write_error};

#[async_trait::async_trait]
impl crate::sql::runs::SqlRuns for SqliteState {
    async fn save_run(&self, run: &RunOutput, session_id: &str, user_id: Option<&str>) -> DbResult<i64> {
        // One statement, no transaction: the run's row is written whole by its insert.
        let _turn = self.write_turn().await;
        let mut conn = self.pool().acquire().await.map_err(|e| db_error("cannot get a connection", e))?;
        self.put_run(&mut conn, run, session_id, user_id, false).await
    }
    async fn put_run(
        &self,
        conn: &mut sqlx::SqliteConnection,
        run: &RunOutput,
        session_id: &str,
        user_id: Option<&str>,
        _stored: bool,
    ) -> DbResult<i64> {
        let t = &self.tables().runs;
        let RunCells { head, tail, facts } = RunCells::of(run, session_id, user_id, now_epoch_secs())?;
        let mut sql = format!(
            "INSERT INTO {t} ({RUN_HEAD}, run_index, {RUN_TAIL}) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(run_index) + 1, 0) FROM {t} WHERE session_id = ?), ?, ?, ?) \
             ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, run_data = excluded.run_data, \
             parent_run_id = excluded.parent_run_id, updated_at = excluded.updated_at, \
             run_index = COALESCE({t}.run_index, excluded.run_index) \
             WHERE {t}.user_id IS excluded.user_id OR {t}.user_id IS NULL \
             RETURNING run_index"
        );
        let facts = self.has_run_facts().then_some(facts);
        if facts.is_some() {
            // What the metrics read of the run, beside it (no JSON to parse later), in the same
            // call to the connection's thread: sqlx runs the two statements one after the other,
            // binding the values in order. Only when the run was written (`changes()` counts the
            // rows of the statement before).
            sql.push_str(&format!(
                "; INSERT INTO {} (run_id, model, model_provider) SELECT ?, ?, ? WHERE changes() > 0 \
                 ON CONFLICT (run_id) DO UPDATE SET model = excluded.model, model_provider = excluded.model_provider",
                self.tables().run_facts()
            ));
        }
        let session = Cell::Text(Some(session_id.to_owned()));
        let q = bind_cells::<Sqlite>(
            sqlx::query(AssertSqlSafe(sql.as_str())),
            head.into_iter().chain([session]).chain(tail).chain(facts.into_iter().flatten()),
        )?;
        let index: Vec<Option<i64>> = q
            .fetch_all(&mut *conn)
            .await
            .map_err(|e| write_error::<Sqlite>(run.id(), session_id, e))?
            .iter()
            .map(|row| row.try_get(0))
            .collect::<Result<_, _>>()
            .map_err(|e| db_error(&format!("cannot read the index of run {}", run.id()), e))?;
        let Some(index) = index.into_iter().next() else {
            return Err(DbError::new(DbErrorKind::Conflict, format!("run {} belongs to another user", run.id())));
        };
        Ok(index.unwrap_or(0))
    }
}
