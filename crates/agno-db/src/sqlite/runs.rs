//! Runs in SQLite: one row per run; `run_index` assigned inside the insert statement itself, so
//! concurrent writers never collide and saving run N costs the same for any N.

use crate::sql::SqlAdapter;
use crate::sql::sessions::SqlSessions;
use agno_core::{Cell, DbError, DbErrorKind, DbResult, RunOutput, RunWrite, now_epoch_secs};
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
        let (sql, cells) = self.run_insert(run, session_id, user_id, false)?;
        let q = bind_cells::<Sqlite>(sqlx::query(AssertSqlSafe(sql.as_str())), cells)?;
        let rows = q.fetch_all(&mut *conn).await.map_err(|e| write_error::<Sqlite>(run.id(), session_id, e))?;
        match returned_index(run, &rows)? {
            Some(index) => Ok(index),
            None => Err(DbError::new(DbErrorKind::Conflict, format!("run {} belongs to another user", run.id()))),
        }
    }

    /// The session's upsert and the run's insert in one call to the connection's thread (sqlx runs
    /// the statements one after the other, binding the values in order), the run written only when
    /// the session was (`changes()` counts the rows of the statement before). When the two wrote
    /// nothing (another user's session or run, a stored `session_data` that is not an object), the
    /// statements one by one decide, in the same transaction.
    async fn put_session_and_run(
        &self,
        conn: &mut sqlx::SqliteConnection,
        write: RunWrite<'_>,
        stored: bool,
    ) -> DbResult<i64> {
        let (session, run) = (write.session, write.run);
        let session_id = &session.session_id;
        let now = now_epoch_secs();
        let (session_sql, session_data) = if write.state.changes_nothing() {
            (self.session_upsert_keeping_state(), session.session_data.clone().unwrap_or_default())
        } else {
            let data = self.session_data_to_store(conn, session, write.state).await?;
            (self.session_upsert("excluded.session_data", ""), data)
        };
        let (run_sql, run_cells) = self.run_insert(run, session_id, write.user_id, true)?;
        let sql = format!("{session_sql}; {run_sql}");
        let cells = crate::sql::sessions::session_cells(session, session_data, now)?.into_iter().chain(run_cells);
        let q = bind_cells::<Sqlite>(sqlx::query(AssertSqlSafe(sql.as_str())), cells)?;
        let rows = q.fetch_all(&mut *conn).await.map_err(|e| write_error::<Sqlite>(run.id(), session_id, e))?;
        if let Some(index) = returned_index(run, &rows)? {
            return Ok(index);
        }
        self.put_session(&mut *conn, session, write.state).await?;
        self.put_run(&mut *conn, run, session_id, write.user_id, stored).await
    }
}

impl SqliteState {
    /// The run's upsert (`run_index` assigned inside it, `RETURNING` it) with, where the table
    /// exists, its run-facts row (what the metrics read of the run, beside it: no JSON to parse
    /// later) written only when the run was; and their values in order. `after_write`: the run is
    /// written only when the statement before it changed a row.
    fn run_insert(
        &self,
        run: &RunOutput,
        session_id: &str,
        user_id: Option<&str>,
        after_write: bool,
    ) -> DbResult<(String, Vec<Cell>)> {
        let t = &self.tables().runs;
        let RunCells { head, tail, facts } = RunCells::of(run, session_id, user_id, now_epoch_secs())?;
        let index = format!("(SELECT COALESCE(MAX(run_index) + 1, 0) FROM {t} WHERE session_id = ?)");
        let values = format!("?, ?, ?, ?, ?, ?, ?, ?, ?, {index}, ?, ?, ?");
        // `INSERT ... SELECT` needs its `WHERE` before `ON CONFLICT` (SQLite's parsing rule).
        let source =
            if after_write { format!("SELECT {values} WHERE changes() > 0") } else { format!("VALUES ({values})") };
        let mut sql = format!(
            "INSERT INTO {t} ({RUN_HEAD}, run_index, {RUN_TAIL}) {source} \
             ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, run_data = excluded.run_data, \
             parent_run_id = excluded.parent_run_id, updated_at = excluded.updated_at, \
             run_index = COALESCE({t}.run_index, excluded.run_index) \
             WHERE {t}.user_id IS excluded.user_id OR {t}.user_id IS NULL \
             RETURNING run_index"
        );
        let facts = self.has_run_facts().then_some(facts);
        if facts.is_some() {
            sql.push_str(&format!(
                "; INSERT INTO {} (run_id, model, model_provider) SELECT ?, ?, ? WHERE changes() > 0 \
                 ON CONFLICT (run_id) DO UPDATE SET model = excluded.model, model_provider = excluded.model_provider",
                self.tables().run_facts()
            ));
        }
        let session = Cell::Text(Some(session_id.to_owned()));
        let cells = head.into_iter().chain([session]).chain(tail).chain(facts.into_iter().flatten()).collect();
        Ok((sql, cells))
    }
}

/// The `run_index` a run's upsert returned; none when it wrote nothing.
fn returned_index(run: &RunOutput, rows: &[sqlx::sqlite::SqliteRow]) -> DbResult<Option<i64>> {
    let Some(row) = rows.first() else { return Ok(None) };
    let index: Option<i64> =
        row.try_get(0).map_err(|e| db_error(&format!("cannot read the index of run {}", run.id()), e))?;
    Ok(Some(index.unwrap_or(0)))
}
