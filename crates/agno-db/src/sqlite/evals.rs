//! Eval runs in SQLite (`agno_eval_runs`, as Python Agno 3.x shapes it): filters, paging and
//! counts run in SQL, and a given `user_id` is part of every statement.

use agno_core::{DbError, DbErrorKind, DbResult, EvalFilterType, EvalQuery, EvalRunRecord, EvalStore, now_epoch_secs};
use async_trait::async_trait;
use sqlx::Sqlite;
use sqlx::{AssertSqlSafe, Row};

use super::{SqliteDb, db_error};
use crate::codec::to_json_text;
use crate::sql::evals::eval_from_row;

const COLUMNS: &str = "run_id, eval_type, eval_data, eval_input, name, agent_id, team_id, workflow_id, model_id, \
     model_provider, evaluated_component_name, user_id, created_at, updated_at";

/// The eval runs table as Python Agno 3.1 creates it (column order, types, indexes).
pub(crate) fn evals_ddl(t: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {t} (\n\trun_id VARCHAR NOT NULL, \n\teval_type VARCHAR NOT NULL, \n\teval_data JSON NOT NULL, \n\teval_input JSON NOT NULL, \n\tname VARCHAR, \n\tagent_id VARCHAR, \n\tteam_id VARCHAR, \n\tworkflow_id VARCHAR, \n\tmodel_id VARCHAR, \n\tmodel_provider VARCHAR, \n\tevaluated_component_name VARCHAR, \n\tuser_id VARCHAR, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (run_id)\n)"
        ),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_created_at ON {t} (created_at)"),
        format!("CREATE INDEX IF NOT EXISTS idx_{t}_user_id ON {t} (user_id)"),
    ]
}

/// The WHERE clause of an eval listing and its binds, in order.
fn filter(q: &EvalQuery) -> (String, Vec<Option<String>>) {
    let mut sql = String::from(
        "(? IS NULL OR user_id = ?) AND (? IS NULL OR agent_id = ?) AND (? IS NULL OR team_id = ?) \
         AND (? IS NULL OR workflow_id = ?) AND (? IS NULL OR model_id = ?)",
    );
    let mut binds = Vec::new();
    for v in [&q.user_id, &q.agent_id, &q.team_id, &q.workflow_id, &q.model_id] {
        binds.push(v.clone());
        binds.push(v.clone());
    }
    match q.filter_type {
        Some(EvalFilterType::Agent) => sql.push_str(" AND agent_id IS NOT NULL"),
        Some(EvalFilterType::Team) => sql.push_str(" AND team_id IS NOT NULL"),
        Some(EvalFilterType::Workflow) => sql.push_str(" AND workflow_id IS NOT NULL"),
        None => {}
    }
    if let Some(types) = &q.eval_types {
        if types.is_empty() {
            sql.push_str(" AND 1 = 0");
        } else {
            let marks = vec!["?"; types.len()].join(", ");
            sql.push_str(&format!(" AND eval_type IN ({marks})"));
            binds.extend(types.iter().map(|t| Some(t.as_str().to_owned())));
        }
    }
    (sql, binds)
}

#[async_trait]
impl EvalStore for SqliteDb {
    async fn create_eval_run(&self, record: &EvalRunRecord) -> DbResult<EvalRunRecord> {
        let _turn = self.write_turn().await;
        let id = &record.run_id;
        let now = now_epoch_secs();
        let mut row = record.clone();
        row.created_at = Some(row.created_at.unwrap_or(now));
        row.updated_at = Some(row.updated_at.unwrap_or(now));
        let sql = format!(
            "INSERT INTO {} ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            self.tables().evals
        );
        let done = sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(id)
            .bind(row.eval_type.as_str())
            .bind(to_json_text(&row.eval_data)?)
            .bind(to_json_text(&row.eval_input)?)
            .bind(&row.name)
            .bind(&row.agent_id)
            .bind(&row.team_id)
            .bind(&row.workflow_id)
            .bind(&row.model_id)
            .bind(&row.model_provider)
            .bind(&row.evaluated_component_name)
            .bind(&row.user_id)
            .bind(row.created_at)
            .bind(row.updated_at)
            .execute(self.pool())
            .await;
        match done {
            Ok(_) => Ok(row),
            Err(sqlx::Error::Database(d)) if d.is_unique_violation() => {
                Err(DbError::new(DbErrorKind::Conflict, format!("eval run {id} already exists"))
                    .with_source(sqlx::Error::Database(d)))
            }
            Err(e) => Err(db_error(&format!("cannot write eval run {id}"), e)),
        }
    }

    async fn get_eval_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<EvalRunRecord>> {
        let sql =
            format!("SELECT {COLUMNS} FROM {} WHERE run_id = ? AND (? IS NULL OR user_id = ?)", self.tables().evals);
        let row = sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(run_id)
            .bind(user_id)
            .bind(user_id)
            .fetch_all(self.pool())
            .await
            .map(|rows| rows.into_iter().next())
            .map_err(|e| db_error(&format!("cannot read eval run {run_id}"), e))?;
        row.as_ref().map(eval_from_row::<Sqlite>).transpose()
    }

    async fn get_eval_runs(&self, query: &EvalQuery) -> DbResult<(Vec<EvalRunRecord>, u64)> {
        let t = &self.tables().evals;
        let (clause, binds) = filter(query);
        let dir = query.sort_order.sql();
        let select = format!("SELECT {COLUMNS} FROM {t} WHERE {clause} ORDER BY created_at {dir}, run_id {dir}");
        let count = format!("SELECT COUNT(*) FROM {t} WHERE {clause}");
        let (rows, total) =
            self.page_and_count(&select, &count, &binds, (query.limit, query.page), "eval runs").await?;
        let evals = crate::codec::readable(
            "eval run",
            rows.iter().map(|r| (r.try_get::<String, _>("run_id").ok(), eval_from_row::<Sqlite>(r))),
        );
        Ok((evals, total))
    }

    async fn delete_eval_runs(&self, run_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        if run_ids.is_empty() {
            return Ok(0);
        }
        let _turn = self.write_turn().await;
        let marks = vec!["?"; run_ids.len()].join(", ");
        let sql =
            format!("DELETE FROM {} WHERE run_id IN ({marks}) AND (? IS NULL OR user_id = ?)", self.tables().evals);
        let mut q = sqlx::query(AssertSqlSafe(sql.as_str()));
        for id in run_ids {
            q = q.bind(id);
        }
        let done = q
            .bind(user_id)
            .bind(user_id)
            .execute(self.pool())
            .await
            .map_err(|e| db_error("cannot delete eval runs", e))?;
        Ok(done.rows_affected())
    }

    async fn rename_eval_run(
        &self,
        run_id: &str,
        name: &str,
        user_id: Option<&str>,
    ) -> DbResult<Option<EvalRunRecord>> {
        let _turn = self.write_turn().await;
        let sql = format!(
            "UPDATE {} SET name = ?, updated_at = ? WHERE run_id = ? AND (? IS NULL OR user_id = ?) RETURNING {COLUMNS}",
            self.tables().evals
        );
        let row = sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(name)
            .bind(now_epoch_secs())
            .bind(run_id)
            .bind(user_id)
            .bind(user_id)
            .fetch_all(self.pool())
            .await
            .map(|rows| rows.into_iter().next())
            .map_err(|e| db_error(&format!("cannot rename eval run {run_id}"), e))?;
        row.as_ref().map(eval_from_row::<Sqlite>).transpose()
    }
}
