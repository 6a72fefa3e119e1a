//! `agno_eval_runs` as every SQL adapter reads it back.

use agno_core::{
    Cell, DbError, DbErrorKind, DbResult, EvalFilterType, EvalQuery, EvalRunRecord, EvalStore, EvalType, now_epoch_secs,
};
use sea_query::{Condition, Expr, ExprTrait, Query};
use sea_query_sqlx::SqlxBinder;
use serde_json::Value;
use sqlx::Database;

use super::listing::Listing;
use super::{Columns, Dialect, SqlDb, SqlFamily, changed, delete_owned, owned_by, rows};

/// An eval type as stored (`accuracy`, `agent_as_judge`, ...).
///
/// # Errors
/// The text names no eval type.
pub(crate) fn parse_eval_type(text: &str, run_id: &str) -> DbResult<EvalType> {
    serde_json::from_value(Value::String(text.to_owned())).map_err(|e| {
        DbError::new(DbErrorKind::Other, format!("eval run {run_id} has an unknown eval_type {text:?}")).with_source(e)
    })
}

/// An eval run read back from a row of the eval runs table.
///
/// # Errors
/// A column cannot be read, the eval type is unknown, or a JSON column is not JSON.
pub(crate) fn eval_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<EvalRunRecord> {
    let c = Columns::<D>::of(row, "agno_eval_runs");
    let run_id = c.text("run_id")?.unwrap_or_default();
    Ok(EvalRunRecord {
        eval_type: parse_eval_type(&c.text("eval_type")?.unwrap_or_default(), &run_id)?,
        eval_data: c.object("eval_data")?.unwrap_or_default(),
        eval_input: c.object("eval_input")?,
        name: c.text("name")?,
        agent_id: c.text("agent_id")?,
        team_id: c.text("team_id")?,
        workflow_id: c.text("workflow_id")?,
        model_id: c.text("model_id")?,
        model_provider: c.text("model_provider")?,
        evaluated_component_name: c.text("evaluated_component_name")?,
        user_id: c.text("user_id")?,
        created_at: c.int("created_at")?,
        updated_at: c.int("updated_at")?,
        run_id,
    })
}

/// The columns of the eval runs table, in table order.
const COLUMNS: [&str; 14] = [
    "run_id",
    "eval_type",
    "eval_data",
    "eval_input",
    "name",
    "agent_id",
    "team_id",
    "workflow_id",
    "model_id",
    "model_provider",
    "evaluated_component_name",
    "user_id",
    "created_at",
    "updated_at",
];

/// The values of [`COLUMNS`] for `e`. A missing input is stored as JSON `null` (the column is
/// NOT NULL), as SQLAlchemy stores it.
fn eval_cells(e: &EvalRunRecord) -> [Cell; 14] {
    let text = |v: &Option<String>| Cell::Text(v.clone());
    [
        Cell::Text(Some(e.run_id.clone())),
        Cell::Text(Some(e.eval_type.as_str().to_owned())),
        Cell::Json(Some(Value::Object(e.eval_data.clone()))),
        Cell::Json(Some(e.eval_input.clone().map_or(Value::Null, Value::Object))),
        text(&e.name),
        text(&e.agent_id),
        text(&e.team_id),
        text(&e.workflow_id),
        text(&e.model_id),
        text(&e.model_provider),
        text(&e.evaluated_component_name),
        text(&e.user_id),
        Cell::Int(e.created_at),
        Cell::Int(e.updated_at),
    ]
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
        let values = super::values::<A::D>(eval_cells(&row))?;
        let mut insert = Query::insert();
        insert
            .into_table(db.table_ref(&db.tables().evals))
            .columns(COLUMNS)
            .values(values)
            .map_err(|e| DbError::new(DbErrorKind::Other, format!("cannot build the insert of eval run: {e}")))?;
        let id = &row.run_id;
        match changed(db, insert.build_sqlx(A::D::builder()), &format!("cannot write eval run {id}")).await {
            Ok(_) => Ok(row),
            Err(e) if e.kind() == DbErrorKind::Conflict => {
                Err(DbError::new(DbErrorKind::Conflict, format!("eval run {id} already exists")).with_source(e))
            }
            Err(e) => Err(e),
        }
    }

    async fn get_eval_run(&self, run_id: &str, user_id: Option<&str>) -> DbResult<Option<EvalRunRecord>> {
        let db = &self.0;
        let select = Query::select()
            .columns(COLUMNS)
            .from(db.table_ref(&db.tables().evals))
            .and_where(Expr::col("run_id").eq(run_id))
            .cond_where(owned_by::<A::D>(user_id))
            .build_sqlx(A::D::builder());
        let found = rows(db, select, &format!("cannot read eval run {run_id}")).await?;
        found.first().map(eval_from_row::<A::D>).transpose()
    }

    /// A page of the listing (by `created_at`, NULL oldest, then by the bytes of `run_id`) and the
    /// number of matching runs; a row no reader can decode is left out.
    async fn get_eval_runs(&self, q: &EvalQuery) -> DbResult<(Vec<EvalRunRecord>, u64)> {
        let db = &self.0;
        let (found, total) = Listing::<A::D>::of(db.table_ref(&db.tables().evals), COLUMNS, listing::<A::D>(q))
            .by(Expr::col("created_at"), q.sort_order)
            .then_by_bytes("run_id", q.sort_order)
            .page(q.limit, q.page)
            .fetch(db, "eval runs")
            .await?;
        let evals = super::listing::readable::<A::D, _>(&found, "eval run", "run_id", eval_from_row::<A::D>);
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
