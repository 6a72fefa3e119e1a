//! Runs in MySQL: one row per run. A new run's `run_index` is `max + 1` for its session, read
//! while holding the session row's lock, so concurrent writers never collide and saving run N
//! costs one indexed lookup for any N.

use agno_core::{
    DbError, DbErrorKind, DbResult, RunCursor, RunOutput, RunPage, RunQuery, RunStore, SortOrder, now_epoch_secs,
};
use async_trait::async_trait;
use serde_json::Value;
use sqlx::{AssertSqlSafe, Connection, Row};

use super::sessions::{decode_one_run, decode_runs, text_column};
use super::{Arg, MySqlDb, USER_MATCH, bind_args, db_error, marks, push_user, where_clause, with_retries};
use crate::codec::{run_type, to_json_text};

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

impl MySqlDb {
    /// One attempt at [`RunStore::upsert_run`], in one transaction.
    async fn try_upsert_run(&self, run: &RunOutput, session_id: &str, user_id: Option<&str>) -> DbResult<i64> {
        let run_id = run.id();
        let mut conn = self.read_committed_conn().await?;
        let mut tx = conn.begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
        let index = self.write_run(&mut tx, run, session_id, user_id).await?;
        tx.commit().await.map_err(|e| db_error(&format!("cannot commit the write of run {run_id}"), e))?;
        Ok(index)
    }

    /// The write of `upsert_run` inside the caller's (`READ COMMITTED`) transaction, which the
    /// caller rolls back on an error.
    pub(crate) async fn write_run(
        &self,
        conn: &mut sqlx::MySqlConnection,
        run: &RunOutput,
        session_id: &str,
        user_id: Option<&str>,
    ) -> DbResult<i64> {
        let t = self.tables().clone();
        let run_id = run.id();
        let data = serde_json::to_value(run)
            .map_err(|e| DbError::new(DbErrorKind::Other, format!("cannot encode run {run_id}: {e}")))?;
        let run_data = to_json_text(&data)?;
        let now = now_epoch_secs();

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
            let mut q = sqlx::query(AssertSqlSafe(sql.as_str()))
                .bind(run.status.as_str())
                .bind(&run_data)
                .bind(str_field(&data, "parent_run_id"))
                .bind(now)
                .bind(index)
                .bind(run_id);
            if let Some(u) = user_id {
                q = q.bind(u).bind(u);
            }
            let done = q.execute(&mut *conn).await.map_err(|e| db_error(&format!("cannot write run {run_id}"), e))?;
            if done.rows_affected() == 0 {
                return Err(DbError::new(DbErrorKind::Conflict, format!("run {run_id} belongs to another user")));
            }
        } else {
            let sql = format!(
                "INSERT INTO `{}` (run_id, session_id, run_type, agent_id, team_id, workflow_id, user_id, parent_run_id, \
                 status, run_index, run_data, created_at, updated_at) VALUES ({})",
                t.runs,
                marks(13)
            );
            // A concurrent insert of the same run id fails here with a duplicate key: retried.
            sqlx::query(AssertSqlSafe(sql.as_str()))
                .bind(run_id)
                .bind(session_id)
                .bind(run_type(&data))
                .bind(str_field(&data, "agent_id"))
                .bind(str_field(&data, "team_id"))
                .bind(str_field(&data, "workflow_id"))
                .bind(user_id)
                .bind(str_field(&data, "parent_run_id"))
                .bind(run.status.as_str())
                .bind(index)
                .bind(&run_data)
                .bind(run.created_at)
                .bind(now)
                .execute(&mut *conn)
                .await
                .map_err(|e| db_error(&format!("cannot write run {run_id}"), e))?;
        }
        Ok(index)
    }
}

#[async_trait]
impl RunStore for MySqlDb {
    async fn upsert_run(&self, run: &RunOutput, session_id: &str, user_id: Option<&str>) -> DbResult<i64> {
        with_retries(|| self.try_upsert_run(run, session_id, user_id)).await
    }

    async fn get_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<RunOutput>> {
        let mut conditions = vec!["run_id = ?".to_owned()];
        let mut args = vec![Arg::Str(run_id.to_owned())];
        push_user(&mut conditions, &mut args, user_id);
        let sql = format!("SELECT run_data FROM `{}`{}", self.tables().runs, where_clause(&conditions));
        let row = bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot read run {run_id}"), e))?;
        Ok(match row {
            Some(row) => decode_one_run(&row)?,
            None => None,
        })
    }

    async fn get_runs(&self, query: &RunQuery) -> DbResult<RunPage> {
        let mut conditions = Vec::new();
        let mut args = Vec::new();
        for (col, value) in [
            ("session_id", &query.session_id),
            ("agent_id", &query.agent_id),
            ("team_id", &query.team_id),
            ("workflow_id", &query.workflow_id),
        ] {
            if let Some(v) = value {
                conditions.push(format!("{col} = ?"));
                args.push(Arg::Str(v.clone()));
            }
        }
        push_user(&mut conditions, &mut args, query.user_id.as_deref());
        if let Some(status) = query.status {
            conditions.push("status = ?".to_owned());
            args.push(Arg::Str(status.as_str().to_owned()));
        }
        let (cmp, order) = match query.sort {
            SortOrder::Asc => (">", "ASC"),
            SortOrder::Desc => ("<", "DESC"),
        };
        // Ties on created_at are broken by the run id's bytes, as every adapter does.
        if let Some(cursor) = &query.cursor {
            conditions.push(format!(
                "(created_at {cmp} ? OR (created_at = ? AND CAST(run_id AS BINARY) {cmp} CAST(? AS BINARY)))"
            ));
            args.extend([Arg::Int(cursor.created_at), Arg::Int(cursor.created_at), Arg::Str(cursor.run_id.clone())]);
        }
        let mut sql = format!(
            "SELECT run_data FROM `{}`{} ORDER BY created_at {order}, CAST(run_id AS BINARY) {order}",
            self.tables().runs,
            where_clause(&conditions)
        );
        if let Some(n) = query.limit {
            sql.push_str(" LIMIT ?");
            args.push(Arg::Int(i64::try_from(n.saturating_add(1)).unwrap_or(i64::MAX)));
        }
        let rows = bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot list runs", e))?;
        let mut runs = decode_runs(&rows)?;
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
        if run_ids.is_empty() {
            return Ok(0);
        }
        let mut conditions = vec![format!("run_id IN ({})", marks(run_ids.len()))];
        let mut args: Vec<Arg> = run_ids.iter().map(|id| Arg::Str(id.clone())).collect();
        push_user(&mut conditions, &mut args, user_id);
        let sql = format!("DELETE FROM `{}`{}", self.tables().runs, where_clause(&conditions));
        let done = with_retries(|| async {
            bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
                .execute(self.pool())
                .await
                .map_err(|e| db_error("cannot delete runs", e))
        })
        .await?;
        Ok(done.rows_affected())
    }
}
