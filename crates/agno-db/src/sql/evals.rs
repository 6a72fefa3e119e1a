//! `agno_eval_runs` as every SQL adapter reads it back.

use agno_core::{DbResult, EvalFilterType, EvalQuery, EvalRunRecord, EvalStore, now_epoch_secs};
use sea_query::{Condition, Expr, ExprTrait, Query};
use sea_query_sqlx::SqlxBinder;

use super::listing::Listing;
use super::record::{SqlRecord, get_one, insert_new, readable, sql_record};
use super::{Dialect, SqlDb, SqlFamily, changed, delete_owned, owned_by};

sql_record! {
    /// An eval run: its type as stored (`accuracy`, `agent_as_judge`, ...); a missing input is
    /// stored as JSON `null` (the column is NOT NULL), as SQLAlchemy stores it.
    EvalRunRecord {
        noun: "eval run", table: "agno_eval_runs", key: "run_id",
        columns: [
            run_id: text required, eval_type: text required, eval_data: object required,
            eval_input: object json_null, name: text, agent_id: text, team_id: text, workflow_id: text,
            model_id: text, model_provider: text, evaluated_component_name: text, user_id: text,
            created_at: int, updated_at: int,
        ],
    }
}

/// The conditions of a listing.
fn listing<D: Dialect>(q: &EvalQuery) -> Condition {
    let mut c = owned_by::<D>(q.user_id.as_deref());
    for (column, value) in
        [("agent_id", &q.agent_id), ("team_id", &q.team_id), ("workflow_id", &q.workflow_id), ("model_id", &q.model_id)]
    {
        if let Some(v) = value {
            c = c.add(D::exact(column, v));
        }
    }
    match q.filter_type {
        Some(EvalFilterType::Agent) => c = c.add(Expr::col("agent_id").is_not_null()),
        Some(EvalFilterType::Team) => c = c.add(Expr::col("team_id").is_not_null()),
        Some(EvalFilterType::Workflow) => c = c.add(Expr::col("workflow_id").is_not_null()),
        None => {}
    }
    if let Some(types) = &q.eval_types {
        // An empty list matches nothing (`IN ()` is not SQL everywhere).
        c = c.add(if types.is_empty() {
            Expr::cust("1 = 0")
        } else {
            D::exact_in("eval_type", types.iter().map(|t| t.as_str()))
        });
    }
    c
}

#[async_trait::async_trait]
impl<A: SqlFamily> EvalStore for SqlDb<A> {
    /// The record with its times filled in, or a conflict when the id exists.
    async fn create_eval_run(&self, record: &EvalRunRecord) -> DbResult<EvalRunRecord> {
        let db = &self.0;
        let now = now_epoch_secs();
        let mut row = record.clone();
        row.created_at = Some(row.created_at.unwrap_or(now));
        row.updated_at = Some(row.updated_at.unwrap_or(now));
        insert_new(db, &db.tables().evals, &row).await?;
        Ok(row)
    }

    async fn get_eval_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<EvalRunRecord>> {
        get_one(&self.0, &self.0.tables().evals, run_id, owned_by::<A::D>(user_id)).await
    }

    /// A page of the listing (by `created_at`, NULL oldest, then by the bytes of `run_id`) and the
    /// number of matching runs; a row no reader can decode is left out.
    async fn get_eval_runs(&self, q: &EvalQuery) -> DbResult<(Vec<EvalRunRecord>, u64)> {
        let db = &self.0;
        let (found, total) =
            Listing::<A::D>::of(db.table_ref(&db.tables().evals), EvalRunRecord::names(), listing::<A::D>(q))
                .by(Expr::col("created_at"), q.sort_order)
                .then_by_bytes("run_id", q.sort_order)
                .page(q.limit, q.page)
                .fetch(db, "eval runs")
                .await?;
        let evals = readable::<A::D, EvalRunRecord>(&found);
        Ok((evals, total))
    }

    /// How many of `run_ids` (of `user_id`, when given) were deleted.
    async fn delete_eval_runs(&self, run_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        let db = &self.0;
        if run_ids.is_empty() {
            return Ok(0);
        }
        let delete = delete_owned(db, &db.tables().evals, "run_id", run_ids, user_id);
        changed(db, delete, "cannot delete eval runs").await
    }

    /// The renamed run, or none when it is not the caller's.
    async fn rename_eval_run(
        &self,
        run_id: &str,
        name: &str,
        user_id: Option<&str>,
    ) -> DbResult<Option<EvalRunRecord>> {
        let db = &self.0;
        let update = Query::update()
            .table(db.table_ref(&db.tables().evals))
            .values([("name", Expr::val(name)), ("updated_at", Expr::val(now_epoch_secs()))])
            .and_where(Expr::col("run_id").eq(run_id))
            .cond_where(owned_by::<A::D>(user_id))
            .build_sqlx(A::D::builder());
        if changed(db, update, &format!("cannot rename eval run {run_id}")).await? == 0 {
            return Ok(None);
        }
        self.get_eval_run(run_id, user_id).await
    }
}
