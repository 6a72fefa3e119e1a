//! Eval runs in PostgreSQL (`agno_eval_runs`, as Python Agno 3.x's `PostgresDb` shapes it):
//! `eval_data` and `eval_input` are JSONB; filters, paging and counts run in SQL, and a given
//! `user_id` is part of every statement.

use agno_core::{DbError, DbErrorKind, DbResult, EvalFilterType, EvalQuery, EvalRunRecord, EvalStore, now_epoch_secs};
use async_trait::async_trait;
use serde_json::Value;
use sqlx::Postgres;
use sqlx::{AssertSqlSafe, Row};

use super::schema::index_ddl;
use super::{PostgresDb, db_error, sanitize};
use crate::memories::page_bounds;
use crate::sql::evals::eval_from_row;

const COLUMNS: &str = "run_id, eval_type, eval_data, eval_input, name, agent_id, team_id, workflow_id, model_id, \
     model_provider, evaluated_component_name, user_id, created_at, updated_at";

/// The eval runs table as Python Agno 3.1 creates it (column order, types, indexes).
pub(crate) fn evals_ddl(q: &str, t: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {q} (\n\trun_id VARCHAR NOT NULL, \n\teval_type VARCHAR NOT NULL, \n\teval_data JSONB NOT NULL, \n\teval_input JSONB NOT NULL, \n\tname VARCHAR, \n\tagent_id VARCHAR, \n\tteam_id VARCHAR, \n\tworkflow_id VARCHAR, \n\tmodel_id VARCHAR, \n\tmodel_provider VARCHAR, \n\tevaluated_component_name VARCHAR, \n\tuser_id VARCHAR, \n\tcreated_at BIGINT NOT NULL, \n\tupdated_at BIGINT, \n\tPRIMARY KEY (run_id)\n)"
        ),
        index_ddl(q, t, &["created_at"]),
        index_ddl(q, t, &["user_id"]),
    ]
}

/// The WHERE clause of an eval listing; binds `$1` user, `$2` agent, `$3` team, `$4` workflow,
/// `$5` model, `$6` eval types (`text[]`, NULL for no type filter).
fn filter(q: &EvalQuery) -> String {
    let mut sql = String::from(
        "($1::text IS NULL OR user_id = $1) AND ($2::text IS NULL OR agent_id = $2) \
         AND ($3::text IS NULL OR team_id = $3) AND ($4::text IS NULL OR workflow_id = $4) \
         AND ($5::text IS NULL OR model_id = $5) AND ($6::text[] IS NULL OR eval_type = ANY($6::text[]))",
    );
    match q.filter_type {
        Some(EvalFilterType::Agent) => sql.push_str(" AND agent_id IS NOT NULL"),
        Some(EvalFilterType::Team) => sql.push_str(" AND team_id IS NOT NULL"),
        Some(EvalFilterType::Workflow) => sql.push_str(" AND workflow_id IS NOT NULL"),
        None => {}
    }
    sql
}

#[async_trait]
impl EvalStore for PostgresDb {
    async fn create_eval_run(&self, record: &EvalRunRecord) -> DbResult<EvalRunRecord> {
        let id = &record.run_id;
        let now = now_epoch_secs();
        let mut row = record.clone();
        row.created_at = Some(row.created_at.unwrap_or(now));
        row.updated_at = Some(row.updated_at.unwrap_or(now));
        let mut data = Value::Object(row.eval_data.clone());
        sanitize(&mut data);
        let mut input = row.eval_input.clone().map_or(Value::Null, Value::Object);
        sanitize(&mut input);
        let sql = format!(
            "INSERT INTO {} ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
            self.qualified(&self.tables().evals)
        );
        let done = sqlx::query(AssertSqlSafe(sql))
            .bind(id)
            .bind(row.eval_type.as_str())
            .bind(&data)
            .bind(&input)
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
        let sql = format!(
            "SELECT {COLUMNS} FROM {} WHERE run_id = $1 AND ($2::text IS NULL OR user_id = $2)",
            self.qualified(&self.tables().evals)
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(run_id)
            .bind(user_id)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot read eval run {run_id}"), e))?;
        row.as_ref().map(eval_from_row::<Postgres>).transpose()
    }

    async fn get_eval_runs(&self, query: &EvalQuery) -> DbResult<(Vec<EvalRunRecord>, u64)> {
        let t = self.qualified(&self.tables().evals);
        let clause = filter(query);
        let dir = query.sort_order.sql();
        // NULL timestamps sort as the oldest, as in SQLite; ids in byte order.
        let nulls = if dir == "ASC" { "NULLS FIRST" } else { "NULLS LAST" };
        let (offset, _) = page_bounds(query.limit, query.page);
        let limit = query.limit.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        let types: Option<Vec<String>> =
            query.eval_types.as_ref().map(|list| list.iter().map(|t| t.as_str().to_owned()).collect());
        macro_rules! bind_filters {
            ($q:expr) => {
                $q.bind(&query.user_id)
                    .bind(&query.agent_id)
                    .bind(&query.team_id)
                    .bind(&query.workflow_id)
                    .bind(&query.model_id)
                    .bind(&types)
            };
        }
        let sql = format!(
            "SELECT {COLUMNS} FROM {t} WHERE {clause} \
             ORDER BY created_at {dir} {nulls}, run_id COLLATE \"C\" {dir} LIMIT $7 OFFSET $8"
        );
        let rows = bind_filters!(sqlx::query(AssertSqlSafe(sql)))
            .bind(limit)
            .bind(i64::try_from(offset).unwrap_or(i64::MAX))
            .fetch_all(self.pool())
            .await
            .map_err(|e| db_error("cannot list eval runs", e))?;
        let evals = crate::codec::readable(
            "eval run",
            rows.iter().map(|r| (r.try_get::<String, _>("run_id").ok(), eval_from_row::<Postgres>(r))),
        );
        let count_sql = format!("SELECT COUNT(*) FROM {t} WHERE {clause}");
        let total: i64 = bind_filters!(sqlx::query_scalar(AssertSqlSafe(count_sql)))
            .fetch_one(self.pool())
            .await
            .map_err(|e| db_error("cannot count eval runs", e))?;
        Ok((evals, u64::try_from(total).unwrap_or(0)))
    }

    async fn delete_eval_runs(&self, run_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        if run_ids.is_empty() {
            return Ok(0);
        }
        let sql = format!(
            "DELETE FROM {} WHERE run_id = ANY($1) AND ($2::text IS NULL OR user_id = $2)",
            self.qualified(&self.tables().evals)
        );
        let done = sqlx::query(AssertSqlSafe(sql))
            .bind(run_ids)
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
        let mut clean = Value::String(name.to_owned());
        sanitize(&mut clean);
        let name = clean.as_str().unwrap_or_default();
        let sql = format!(
            "UPDATE {} SET name = $1, updated_at = $2 WHERE run_id = $3 AND ($4::text IS NULL OR user_id = $4) \
             RETURNING {COLUMNS}",
            self.qualified(&self.tables().evals)
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(name)
            .bind(now_epoch_secs())
            .bind(run_id)
            .bind(user_id)
            .fetch_optional(self.pool())
            .await
            .map_err(|e| db_error(&format!("cannot rename eval run {run_id}"), e))?;
        row.as_ref().map(eval_from_row::<Postgres>).transpose()
    }
}
