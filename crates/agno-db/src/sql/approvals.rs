//! `agno_approvals` as every SQL adapter writes and reads it: Agno's 25 columns, a resolve that is
//! one compare-and-set from `pending`, and expiry as one conditional update.

use agno_core::{
    APPROVAL_EXPIRED, APPROVAL_PENDING, ApprovalDecision, ApprovalQuery, ApprovalRecord, ApprovalStore, Cell, DbError,
    DbErrorKind, DbResult, Resolved, SortOrder,
};
use sea_query::{Condition, Expr, ExprTrait, Query};
use sea_query_sqlx::SqlxBinder;
use serde_json::Value;

use super::listing::{Listing, count_of};
use super::record::{SqlRecord, get_one, insert_new, readable, sql_record};
use super::{Dialect, SqlDb, SqlFamily, changed};

sql_record! {
    ApprovalRecord {
        noun: "approval", table: "agno_approvals", key: "id",
        columns: [
            id: text required, run_id: text required, session_id: text required, status: text required,
            source_type: text required, approval_type: text, pause_type: text required, tool_name: text,
            tool_args: object, expires_at: int, agent_id: text, team_id: text, workflow_id: text,
            user_id: text, schedule_id: text, schedule_run_id: text, source_name: free_text,
            requirements: list, context: object, resolution_data: object, resolved_by: free_text,
            resolved_at: int, created_at: int required, updated_at: int, run_status: text,
        ],
    }
}

/// The indexed columns of the approvals table, as Agno indexes them (each alone).
pub(crate) const APPROVAL_INDEXES: [&str; 14] = [
    "run_id",
    "session_id",
    "status",
    "source_type",
    "approval_type",
    "pause_type",
    "agent_id",
    "team_id",
    "workflow_id",
    "user_id",
    "schedule_id",
    "schedule_run_id",
    "created_at",
    "run_status",
];

/// The approvals a listing asks for (every filter, byte for byte).
fn query_condition<D: Dialect>(q: &ApprovalQuery) -> Condition {
    q.equalities()
        .into_iter()
        .filter_map(|(column, v)| Some(D::exact(column, v?)))
        .fold(Condition::all(), Condition::add)
}

/// Pending, with an `expires_at` at or before `now`.
fn lapsed(now: i64) -> Condition {
    Condition::all()
        .add(Expr::col("status").eq(APPROVAL_PENDING))
        .add(Expr::col("expires_at").is_not_null())
        .add(Expr::col("expires_at").lte(now))
}

#[async_trait::async_trait]
impl<A: SqlFamily> ApprovalStore for SqlDb<A> {
    async fn create_approval(&self, approval: &ApprovalRecord) -> DbResult<()> {
        insert_new(&self.0, &self.0.tables().approvals, approval).await
    }

    async fn get_approval(&self, id: &str) -> DbResult<Option<ApprovalRecord>> {
        get_one(&self.0, &self.0.tables().approvals, id, Condition::all()).await
    }

    async fn get_approvals(&self, q: &ApprovalQuery) -> DbResult<(Vec<ApprovalRecord>, u64)> {
        let db = &self.0;
        let (found, total) = Listing::<A::D>::of(
            db.table_ref(&db.tables().approvals),
            ApprovalRecord::names(),
            query_condition::<A::D>(q),
        )
        .by_never_null("created_at", SortOrder::Desc)
        .then_by_bytes("id", SortOrder::Desc)
        .page(q.limit, q.page)
        .fetch(db, "approvals")
        .await?;
        Ok((readable::<A::D, ApprovalRecord>(&found), total))
    }

    /// One conditional update (pending, not lapsed); when it changes nothing, the row says why
    /// (a lapsed one is marked expired first).
    async fn resolve_approval(&self, id: &str, d: &ApprovalDecision) -> DbResult<Resolved> {
        let db = &self.0;
        let now = d.resolved_at;
        let data = d.resolution_data.clone().map(Value::Object);
        let mut update = Query::update();
        update
            .table(db.table_ref(&db.tables().approvals))
            .value("status", d.status.as_str())
            .value("resolved_by", A::D::storable(d.resolved_by.as_deref()))
            .value("resolved_at", now)
            .value("updated_at", now);
        if data.is_some() {
            let [cell] = super::values::<A::D>([Cell::Json(data)])?
                .try_into()
                .map_err(|_| DbError::new(DbErrorKind::Other, "cannot bind resolution_data".to_owned()))?;
            update.value("resolution_data", cell);
        }
        update
            .and_where(Expr::col("id").eq(id))
            .and_where(Expr::col("status").eq(APPROVAL_PENDING))
            .cond_where(Condition::any().add(Expr::col("expires_at").is_null()).add(Expr::col("expires_at").gt(now)));
        let what = format!("cannot resolve approval {id}");
        let won = changed(db, update.build_sqlx(A::D::builder()), &what).await? == 1;
        let Some(row) = self.get_approval(id).await? else { return Ok(Resolved::NotFound) };
        if won {
            return Ok(Resolved::Done(Box::new(row)));
        }
        if row.expired_at(now) {
            self.expire_approvals(now).await?;
            let row = self.get_approval(id).await?.unwrap_or(row);
            return Ok(Resolved::NotPending(Box::new(row)));
        }
        Ok(Resolved::NotPending(Box::new(row)))
    }

    async fn delete_approval(&self, id: &str) -> DbResult<bool> {
        let db = &self.0;
        let delete = Query::delete()
            .from_table(db.table_ref(&db.tables().approvals))
            .and_where(Expr::col("id").eq(id))
            .build_sqlx(A::D::builder());
        Ok(changed(db, delete, &format!("cannot delete approval {id}")).await? > 0)
    }

    async fn count_pending_approvals(&self, user_id: Option<&str>) -> DbResult<u64> {
        let db = &self.0;
        let mut filter = Condition::all().add(Expr::col("status").eq(APPROVAL_PENDING));
        if let Some(u) = user_id {
            filter = filter.add(A::D::exact("user_id", u));
        }
        let count = Query::select()
            .expr_as(Expr::col("id").count(), "total")
            .from(db.table_ref(&db.tables().approvals))
            .cond_where(filter)
            .build_sqlx(A::D::builder());
        count_of(db, count, "cannot count pending approvals").await
    }

    async fn set_approval_run_status(&self, run_id: &str, run_status: &str, now: i64) -> DbResult<u64> {
        let db = &self.0;
        let update = Query::update()
            .table(db.table_ref(&db.tables().approvals))
            .values([("run_status", Expr::val(run_status)), ("updated_at", Expr::val(now))])
            .and_where(Expr::col("run_id").eq(run_id))
            .build_sqlx(A::D::builder());
        changed(db, update, &format!("cannot set the run status of the approvals of run {run_id}")).await
    }

    async fn expire_approvals(&self, now: i64) -> DbResult<u64> {
        let db = &self.0;
        let update = Query::update()
            .table(db.table_ref(&db.tables().approvals))
            .values([("status", Expr::val(APPROVAL_EXPIRED)), ("updated_at", Expr::val(now))])
            .cond_where(lapsed(now))
            .build_sqlx(A::D::builder());
        changed(db, update, "cannot expire approvals").await
    }
}
