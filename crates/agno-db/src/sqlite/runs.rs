//! Runs in SQLite: one row per run; `run_index` assigned inside the insert statement itself, so
//! concurrent writers never collide and saving run N costs the same for any N.

use agno_core::{
    DbError, DbErrorKind, DbResult, RunCursor, RunOutput, RunPage, RunQuery, RunStore, SortOrder, now_epoch_secs,
};
use async_trait::async_trait;
use serde_json::Value;
use sqlx::AssertSqlSafe;

use super::{SqliteDb, db_error};
use crate::codec::{decode_listed_text, decode_run, json_column, run_type, to_json_text};

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

#[async_trait]
impl RunStore for SqliteDb {
    async fn upsert_run(&self, run: &RunOutput, session_id: &str, user_id: Option<&str>) -> DbResult<i64> {
        let _turn = self.write_turn().await;
        let mut conn = self.pool().acquire().await.map_err(|e| db_error("cannot get a connection", e))?;
        self.write_run(&mut conn, run, session_id, user_id).await
    }

    async fn get_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<RunOutput>> {
        if !self.has_runs_table() {
            return Ok(None);
        }
        let t = &self.tables().runs;
        let sql = format!("SELECT run_data FROM {t} WHERE run_id = ? AND (? IS NULL OR user_id = ?)");
        let text: Option<String> = sqlx::query_scalar(AssertSqlSafe(sql.as_str()))
            .bind(run_id)
            .bind(user_id)
            .bind(user_id)
            .fetch_all(self.pool())
            .await
            .map(|rows| rows.into_iter().next())
            .map_err(|e| db_error(&format!("cannot read run {run_id}"), e))?;
        json_column(text)?.map(decode_run).transpose()
    }

    async fn get_runs(&self, query: &RunQuery) -> DbResult<RunPage> {
        if !self.has_runs_table() {
            return Ok(RunPage::default());
        }
        let t = &self.tables().runs;
        let (cmp, order) = match query.sort {
            SortOrder::Asc => (">", "ASC"),
            SortOrder::Desc => ("<", "DESC"),
        };
        let sql = format!(
            "SELECT run_data FROM {t} WHERE (? IS NULL OR session_id = ?) AND (? IS NULL OR user_id = ?) \
             AND (? IS NULL OR agent_id = ?) AND (? IS NULL OR team_id = ?) AND (? IS NULL OR workflow_id = ?) \
             AND (? IS NULL OR status = ?) AND (? IS NULL OR (created_at, run_id) {cmp} (?, ?)) \
             ORDER BY created_at {order}, run_id {order} LIMIT ?"
        );
        let status = query.status.map(|s| s.as_str());
        let cursor_at = query.cursor.as_ref().map(|c| c.created_at);
        let cursor_id = query.cursor.as_ref().map(|c| c.run_id.as_str());
        let limit = query.limit.map_or(-1, |n| i64::try_from(n.saturating_add(1)).unwrap_or(i64::MAX));
        let rows: Vec<String> = sqlx::query_scalar(AssertSqlSafe(sql.as_str()))
            .bind(&query.session_id)
            .bind(&query.session_id)
            .bind(&query.user_id)
            .bind(&query.user_id)
            .bind(&query.agent_id)
            .bind(&query.agent_id)
            .bind(&query.team_id)
            .bind(&query.team_id)
            .bind(&query.workflow_id)
            .bind(&query.workflow_id)
            .bind(status)
            .bind(status)
            .bind(cursor_at)
            .bind(cursor_at)
            .bind(cursor_id)
            .bind(limit)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot list runs", e))?;
        let mut runs = rows.into_iter().filter_map(decode_listed_text).collect::<Vec<_>>();
        let next_cursor = match query.limit {
            Some(n) if runs.len() > n => {
                runs.truncate(n);
                runs.last().map(|r| RunCursor { created_at: r.created_at, run_id: r.id().to_owned() })
            }
            _ => None,
        };
        Ok(RunPage { runs, next_cursor })
    }

    async fn delete_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_runs(&[run_id.to_owned()], user_id).await? == 1)
    }

    async fn delete_runs(&self, run_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        let _turn = self.write_turn().await;
        if run_ids.is_empty() || !self.has_runs_table() {
            return Ok(0);
        }
        let marks = vec!["?"; run_ids.len()].join(", ");
        let sql =
            format!("DELETE FROM {} WHERE run_id IN ({marks}) AND (? IS NULL OR user_id = ?)", self.tables().runs);
        let mut q = sqlx::query(AssertSqlSafe(sql.as_str()));
        for id in run_ids {
            q = q.bind(id);
        }
        let done =
            q.bind(user_id).bind(user_id).execute(self.pool()).await.map_err(|e| db_error("cannot delete runs", e))?;
        Ok(done.rows_affected())
    }
}

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
