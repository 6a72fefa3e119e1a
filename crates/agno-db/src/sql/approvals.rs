//! `agno_approvals` as every SQL adapter writes and reads it: Agno's 25 columns, a resolve that is
//! one compare-and-set from `pending`, and expiry as one conditional update.

use agno_core::{
    APPROVAL_EXPIRED, APPROVAL_PENDING, ApprovalDecision, ApprovalQuery, ApprovalRecord, ApprovalStore, Cell, DbError,
    DbErrorKind, DbResult, Resolved, SortOrder,
};
use sea_query::{Condition, Expr, ExprTrait, Query};
use sea_query_sqlx::SqlxBinder;
use serde_json::Value;
use sqlx::Database;

use super::listing::{Listing, count_of, readable};
use super::{Columns, Dialect, SqlDb, SqlFamily, changed, rows};

/// The columns of the approvals table, in table order.
pub(crate) const APPROVAL_COLUMNS: [&str; 25] = [
    "id",
    "run_id",
    "session_id",
    "status",
    "source_type",
    "approval_type",
    "pause_type",
    "tool_name",
    "tool_args",
    "expires_at",
    "agent_id",
    "team_id",
    "workflow_id",
    "user_id",
    "schedule_id",
    "schedule_run_id",
    "source_name",
    "requirements",
    "context",
    "resolution_data",
    "resolved_by",
    "resolved_at",
    "created_at",
    "updated_at",
    "run_status",
];

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

/// An approval read back from a row of the approvals table.
fn approval_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<ApprovalRecord> {
    let c = Columns::<D>::of(row, "agno_approvals");
    let list = |column: &str| -> DbResult<Option<Vec<Value>>> {
        Ok(match c.json(column)? {
            Some(Value::Array(items)) => Some(items),
            _ => None,
        })
    };
    Ok(ApprovalRecord {
        id: c.text("id")?.unwrap_or_default(),
        run_id: c.text("run_id")?.unwrap_or_default(),
        session_id: c.text("session_id")?.unwrap_or_default(),
        status: c.text("status")?.unwrap_or_default(),
        source_type: c.text("source_type")?.unwrap_or_default(),
        approval_type: c.text("approval_type")?,
        pause_type: c.text("pause_type")?.unwrap_or_default(),
        tool_name: c.text("tool_name")?,
        tool_args: c.object("tool_args")?,
        expires_at: c.int("expires_at")?,
        agent_id: c.text("agent_id")?,
        team_id: c.text("team_id")?,
        workflow_id: c.text("workflow_id")?,
        user_id: c.text("user_id")?,
        schedule_id: c.text("schedule_id")?,
        schedule_run_id: c.text("schedule_run_id")?,
        source_name: c.text("source_name")?,
        requirements: list("requirements")?,
        context: c.object("context")?,
        resolution_data: c.object("resolution_data")?,
        resolved_by: c.text("resolved_by")?,
        resolved_at: c.int("resolved_at")?,
        created_at: c.int("created_at")?.unwrap_or_default(),
        updated_at: c.int("updated_at")?,
        run_status: c.text("run_status")?,
    })
}

/// The values of [`APPROVAL_COLUMNS`] for `a`; its free texts as the database can store them.
fn approval_cells<D: Dialect>(a: &ApprovalRecord) -> [Cell; 25] {
    let text = |s: &str| Cell::Text(Some(s.to_owned()));
    let object = |m: &Option<serde_json::Map<String, Value>>| Cell::Json(m.clone().map(Value::Object));
    [
        text(&a.id),
        text(&a.run_id),
        text(&a.session_id),
        text(&a.status),
        text(&a.source_type),
        Cell::Text(a.approval_type.clone()),
        text(&a.pause_type),
        Cell::Text(a.tool_name.clone()),
        object(&a.tool_args),
        Cell::Int(a.expires_at),
        Cell::Text(a.agent_id.clone()),
        Cell::Text(a.team_id.clone()),
        Cell::Text(a.workflow_id.clone()),
        Cell::Text(a.user_id.clone()),
        Cell::Text(a.schedule_id.clone()),
        Cell::Text(a.schedule_run_id.clone()),
        Cell::Text(D::storable(a.source_name.as_deref())),
        Cell::Json(a.requirements.clone().map(Value::Array)),
        object(&a.context),
        object(&a.resolution_data),
        Cell::Text(D::storable(a.resolved_by.as_deref())),
        Cell::Int(a.resolved_at),
        Cell::Int(Some(a.created_at)),
        Cell::Int(a.updated_at),
        Cell::Text(a.run_status.clone()),
    ]
}

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
        let db = &self.0;
        let values = super::values::<A::D>(approval_cells::<A::D>(approval))?;
        let mut insert = Query::insert();
        insert.into_table(db.table_ref(&db.tables().approvals)).columns(APPROVAL_COLUMNS).values(values).map_err(
            |e| DbError::new(DbErrorKind::Other, format!("cannot build the insert of approval {}: {e}", approval.id)),
        )?;
        let id = &approval.id;
        match changed(db, insert.build_sqlx(A::D::builder()), &format!("cannot write approval {id}")).await {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == DbErrorKind::Conflict => {
                Err(DbError::new(DbErrorKind::Conflict, format!("approval {id} already exists")).with_source(e))
            }
            Err(e) => Err(e),
        }
    }

    async fn get_approval(&self, id: &str) -> DbResult<Option<ApprovalRecord>> {
        let db = &self.0;
        let select = Query::select()
            .columns(APPROVAL_COLUMNS)
            .from(db.table_ref(&db.tables().approvals))
            .and_where(Expr::col("id").eq(id))
            .build_sqlx(A::D::builder());
        let found = rows(db, select, &format!("cannot read approval {id}")).await?;
        found.first().map(approval_from_row::<A::D>).transpose()
    }

    async fn get_approvals(&self, q: &ApprovalQuery) -> DbResult<(Vec<ApprovalRecord>, u64)> {
        let db = &self.0;
        let (found, total) =
            Listing::<A::D>::of(db.table_ref(&db.tables().approvals), APPROVAL_COLUMNS, query_condition::<A::D>(q))
                .by_never_null("created_at", SortOrder::Desc)
                .then_by_bytes("id", SortOrder::Desc)
                .page(q.limit, q.page)
                .fetch(db, "approvals")
                .await?;
        Ok((readable::<A::D, _>(&found, "approval", "id", approval_from_row::<A::D>), total))
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
