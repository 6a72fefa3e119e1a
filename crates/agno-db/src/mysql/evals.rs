//! Eval runs in MySQL and MariaDB (`agno_eval_runs`, as Python Agno 3.1's `MySQLDb` shapes it):
//! `eval_data` and `eval_input` are JSON texts; filters, sort, paging and counts run in SQL. A
//! given `user_id` (and every other id filter) is matched byte for byte.

use agno_core::{DbError, DbErrorKind, DbResult, EvalFilterType, EvalQuery, EvalRunRecord, EvalStore, now_epoch_secs};
use async_trait::async_trait;
use sqlx::MySql;
use sqlx::{AssertSqlSafe, Connection, Row};

use super::{Arg, MySqlDb, bind_args, code, db_error, error_number, marks, push_user, where_clause, with_retries};
use crate::codec::to_json_text;
use crate::sql::evals::eval_from_row;

const COLUMNS: &str = "run_id, eval_type, eval_data, eval_input, name, agent_id, team_id, workflow_id, model_id, \
                       model_provider, evaluated_component_name, created_at, updated_at, user_id";

/// The eval runs table as Python Agno 3.1 creates it (column types and lengths, index names), in
/// one statement. `JSON` becomes `LONGTEXT ... CHECK (json_valid(...))` on MariaDB, as for Agno.
pub(crate) fn evals_ddl(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS `{t}` (\n\
         \trun_id VARCHAR(128) NOT NULL, \n\
         \teval_type VARCHAR(50) NOT NULL, \n\
         \teval_data JSON NOT NULL, \n\
         \teval_input JSON NOT NULL, \n\
         \tname VARCHAR(255), \n\
         \tagent_id VARCHAR(128), \n\
         \tteam_id VARCHAR(128), \n\
         \tworkflow_id VARCHAR(128), \n\
         \tmodel_id VARCHAR(128), \n\
         \tmodel_provider VARCHAR(128), \n\
         \tevaluated_component_name VARCHAR(255), \n\
         \tcreated_at BIGINT NOT NULL, \n\
         \tupdated_at BIGINT, \n\
         \tuser_id VARCHAR(128), \n\
         \tPRIMARY KEY (run_id), \n\
         \tINDEX `idx_{t}_created_at` (created_at), \n\
         \tINDEX `idx_{t}_user_id` (user_id)\n\
         )"
    )
}

/// `col` equal to a bound value byte for byte (the column collation ignores case); binds twice.
pub(crate) fn exact(col: &str) -> String {
    format!("({col} = ? AND CAST({col} AS BINARY) = CAST(? AS BINARY))")
}

/// The conditions of an eval listing and their binds, in order.
fn filter(q: &EvalQuery) -> (Vec<String>, Vec<Arg>) {
    let mut conditions = Vec::new();
    let mut args = Vec::new();
    push_user(&mut conditions, &mut args, q.user_id.as_deref());
    for (col, value) in
        [("agent_id", &q.agent_id), ("team_id", &q.team_id), ("workflow_id", &q.workflow_id), ("model_id", &q.model_id)]
    {
        if let Some(v) = value {
            conditions.push(exact(col));
            args.extend([Arg::Str(v.clone()), Arg::Str(v.clone())]);
        }
    }
    if let Some(f) = q.filter_type {
        conditions.push(
            match f {
                EvalFilterType::Agent => "agent_id IS NOT NULL",
                EvalFilterType::Team => "team_id IS NOT NULL",
                EvalFilterType::Workflow => "workflow_id IS NOT NULL",
            }
            .to_owned(),
        );
    }
    if let Some(types) = &q.eval_types {
        if types.is_empty() {
            conditions.push("1 = 0".to_owned());
        } else {
            conditions.push(format!("CAST(eval_type AS BINARY) IN ({})", marks(types.len())));
            args.extend(types.iter().map(|t| Arg::Str(t.as_str().to_owned())));
        }
    }
    (conditions, args)
}

impl MySqlDb {
    /// Reads one eval run with the given predicate on an executor.
    async fn read_eval<'c, E>(
        &self,
        executor: E,
        run_id: &str,
        user_id: Option<&str>,
    ) -> DbResult<Option<EvalRunRecord>>
    where
        E: sqlx::Executor<'c, Database = sqlx::MySql>,
    {
        let t = &self.tables().evals;
        let mut conditions = vec!["run_id = ?".to_owned()];
        let mut args = vec![Arg::Str(run_id.to_owned())];
        push_user(&mut conditions, &mut args, user_id);
        let sql = format!("SELECT {COLUMNS} FROM `{t}`{}", where_clause(&conditions));
        let row = bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
            .fetch_optional(executor)
            .await
            .map_err(|e| db_error(&format!("cannot read eval run {run_id}"), e))?;
        row.as_ref().map(eval_from_row::<MySql>).transpose()
    }

    /// One attempt at [`EvalStore::rename_eval_run`]: the update and the read back in one
    /// transaction.
    async fn try_rename_eval(
        &self,
        run_id: &str,
        name: &str,
        user_id: Option<&str>,
    ) -> DbResult<Option<EvalRunRecord>> {
        let t = &self.tables().evals;
        let mut conditions = vec!["run_id = ?".to_owned()];
        let mut args = vec![Arg::Str(name.to_owned()), Arg::Int(now_epoch_secs()), Arg::Str(run_id.to_owned())];
        push_user(&mut conditions, &mut args, user_id);
        let sql = format!("UPDATE `{t}` SET name = ?, updated_at = ?{}", where_clause(&conditions));
        let mut conn = self.read_committed_conn().await?;
        let mut tx = conn.begin().await.map_err(|e| db_error("cannot start a transaction", e))?;
        bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
            .execute(&mut *tx)
            .await
            .map_err(|e| db_error(&format!("cannot rename eval run {run_id}"), e))?;
        let renamed = self.read_eval(&mut *tx, run_id, user_id).await?;
        tx.commit().await.map_err(|e| db_error(&format!("cannot commit the rename of eval run {run_id}"), e))?;
        Ok(renamed)
    }
}

#[async_trait]
impl EvalStore for MySqlDb {
    async fn create_eval_run(&self, record: &EvalRunRecord) -> DbResult<EvalRunRecord> {
        let t = &self.tables().evals;
        let now = now_epoch_secs();
        let mut row = record.clone();
        row.created_at = Some(row.created_at.unwrap_or(now));
        row.updated_at = Some(row.updated_at.unwrap_or(now));
        let id = &row.run_id;
        let sql = format!("INSERT INTO `{t}` ({COLUMNS}) VALUES ({})", marks(14));
        sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(id)
            .bind(row.eval_type.as_str())
            .bind(to_json_text(&row.eval_data)?)
            // The column is NOT NULL: a missing input is stored as JSON `null`, as SQLAlchemy does.
            .bind(to_json_text(&row.eval_input)?)
            .bind(&row.name)
            .bind(&row.agent_id)
            .bind(&row.team_id)
            .bind(&row.workflow_id)
            .bind(&row.model_id)
            .bind(&row.model_provider)
            .bind(&row.evaluated_component_name)
            .bind(row.created_at)
            .bind(row.updated_at)
            .bind(&row.user_id)
            .execute(self.pool())
            .await
            .map_err(|e| {
                if error_number(&e) == Some(code::DUPLICATE_KEY) {
                    DbError::new(DbErrorKind::Conflict, format!("eval run {id} already exists")).with_source(e)
                } else {
                    db_error(&format!("cannot create eval run {id}"), e)
                }
            })?;
        Ok(row)
    }

    async fn get_eval_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<EvalRunRecord>> {
        self.read_eval(self.pool(), run_id, user_id).await
    }

    async fn get_eval_runs(&self, query: &EvalQuery) -> DbResult<(Vec<EvalRunRecord>, u64)> {
        let t = &self.tables().evals;
        let (conditions, args) = filter(query);
        let clause = where_clause(&conditions);
        let dir = query.sort_order.sql();
        let sql =
            format!("SELECT {COLUMNS} FROM `{t}`{clause} ORDER BY created_at {dir}, CAST(run_id AS BINARY) {dir}");
        let count_sql = format!("SELECT COUNT(*) AS n FROM `{t}`{clause}");
        let (rows, total) = self.page_and_count(sql, &count_sql, &args, (query.limit, query.page), "eval runs").await?;
        let evals = crate::codec::readable(
            "eval run",
            rows.iter().map(|r| (r.try_get::<String, _>("run_id").ok(), eval_from_row::<MySql>(r))),
        );
        Ok((evals, total))
    }

    async fn delete_eval_runs(&self, run_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        if run_ids.is_empty() {
            return Ok(0);
        }
        let t = &self.tables().evals;
        let mut conditions = vec![format!("run_id IN ({})", marks(run_ids.len()))];
        let mut args: Vec<Arg> = run_ids.iter().map(|id| Arg::Str(id.clone())).collect();
        push_user(&mut conditions, &mut args, user_id);
        let sql = format!("DELETE FROM `{t}`{}", where_clause(&conditions));
        let done = with_retries(|| async {
            bind_args(sqlx::query(AssertSqlSafe(sql.as_str())), &args)
                .execute(self.pool())
                .await
                .map_err(|e| db_error("cannot delete eval runs", e))
        })
        .await?;
        Ok(done.rows_affected())
    }

    async fn rename_eval_run(
        &self,
        run_id: &str,
        name: &str,
        user_id: Option<&str>,
    ) -> DbResult<Option<EvalRunRecord>> {
        with_retries(|| self.try_rename_eval(run_id, name, user_id)).await
    }
}
