//! `agno_learnings` as every SQL adapter reads and writes it (Agno 3.1's 14 columns, created on
//! first use as Agno creates it): an upsert that changes only what Agno's does (content, metadata,
//! `updated_at`), listings with Agno's filters, order (`updated_at` falling back to
//! `created_at`) and ownerless records beside a user's, and the users holding records.

use agno_core::{
    Cell, DbError, DbErrorKind, DbResult, LearningQuery, LearningRecord, LearningStore, LearningUser, SortOrder,
};
use sea_query::{Alias, Condition, Expr, ExprTrait, Func, Query};
use sea_query_sqlx::SqlxBinder;
use serde_json::{Map, Value};

use super::listing::Listing;
use super::record::{SqlRecord, get_one, insert_of, readable, sql_record};
use super::{Columns, Dialect, LazyTable, SqlDb, SqlFamily, changed, ensure, rows};

sql_record! {
    LearningRecord {
        noun: "learning", table: "agno_learnings", key: "learning_id",
        columns: [
            learning_id: text required, learning_type: text required, namespace: text, user_id: text,
            agent_id: text, team_id: text, workflow_id: text, session_id: text, entity_id: text,
            entity_type: text, content: object required, metadata: object, created_at: int required,
            updated_at: int,
        ],
    }
}

/// The columns with an index of their own, as Agno 3.1 creates them: all but the key, the JSON
/// columns and `updated_at`.
pub(crate) fn indexed() -> impl Iterator<Item = &'static str> {
    LearningRecord::names().filter(|c| !["learning_id", "content", "metadata", "updated_at"].contains(c))
}

fn json_cell<D: Dialect>(v: Option<Value>) -> DbResult<Expr> {
    D::value(Cell::Json(v)).map(Expr::val)
}

/// Sets `content`, `metadata` and `updated_at` of record `id`; how many rows changed.
async fn rewrite<A: SqlFamily>(
    db: &A,
    id: &str,
    content: &Map<String, Value>,
    metadata: Option<&Map<String, Value>>,
    now: i64,
) -> DbResult<u64> {
    let update = Query::update()
        .table(db.table_ref(&db.tables().learnings))
        .value("content", json_cell::<A::D>(Some(Value::Object(content.clone())))?)
        .value("metadata", json_cell::<A::D>(metadata.cloned().map(Value::Object))?)
        .value("updated_at", now)
        .and_where(Expr::col("learning_id").eq(id))
        .build_sqlx(A::D::builder());
    changed(db, update, &format!("cannot update learning {id}")).await
}

fn filters<D: Dialect>(q: &LearningQuery) -> Condition {
    let mut filter = Condition::all();
    for (column, value) in [
        ("learning_type", &q.learning_type),
        ("agent_id", &q.agent_id),
        ("team_id", &q.team_id),
        ("session_id", &q.session_id),
        ("namespace", &q.namespace),
        ("entity_id", &q.entity_id),
        ("entity_type", &q.entity_type),
    ] {
        if let Some(v) = value {
            filter = filter.add(D::exact(column, v));
        }
    }
    if let Some(user) = &q.user_id {
        let own = D::exact("user_id", user);
        filter = filter.add(if q.include_global {
            Condition::any().add(own).add(Expr::col("user_id").is_null())
        } else {
            Condition::all().add(own)
        });
    }
    filter
}

#[async_trait::async_trait]
impl<A: SqlFamily> LearningStore for SqlDb<A> {
    async fn upsert_learning(&self, r: &LearningRecord) -> DbResult<()> {
        let db = &self.0;
        ensure(db, LazyTable::Learnings).await?;
        let now = r.updated_at.unwrap_or(r.created_at);
        for _ in 0..2 {
            if rewrite(db, &r.learning_id, &r.content, r.metadata.as_ref(), now).await? > 0 {
                return Ok(());
            }
            let (id, insert) = insert_of(db, &db.tables().learnings, r)?;
            match changed(db, insert.build_sqlx(A::D::builder()), &format!("cannot write learning {id}")).await {
                Ok(_) => return Ok(()),
                // Written meanwhile by another writer: update it instead.
                Err(e) if e.kind() == DbErrorKind::Conflict => {}
                Err(e) => return Err(e),
            }
        }
        Err(DbError::new(
            DbErrorKind::Conflict,
            format!("learning {} kept changing while being written", r.learning_id),
        ))
    }

    async fn get_learning_by_id(&self, id: &str) -> DbResult<Option<LearningRecord>> {
        let db = &self.0;
        ensure(db, LazyTable::Learnings).await?;
        get_one(db, &db.tables().learnings, id, Condition::all()).await
    }

    async fn list_learnings(&self, q: &LearningQuery) -> DbResult<(Vec<LearningRecord>, u64)> {
        let db = &self.0;
        ensure(db, LazyTable::Learnings).await?;
        let order = match q.sort_by.unwrap_or("updated_at") {
            "updated_at" => Expr::expr(Func::coalesce([Expr::col("updated_at"), Expr::col("created_at")])),
            column => Expr::col(Alias::new(column)),
        };
        let table = db.table_ref(&db.tables().learnings);
        let (found, total) = Listing::<A::D>::of(table, LearningRecord::names(), filters::<A::D>(q))
            .by(order, q.sort_order)
            .then_by_bytes("learning_id", q.sort_order)
            .page(usize::try_from(q.limit).ok(), usize::try_from(q.page).ok())
            .fetch(db, "learnings")
            .await?;
        Ok((readable::<A::D, LearningRecord>(&found), total))
    }

    async fn update_learning(
        &self,
        id: &str,
        content: &Map<String, Value>,
        metadata: Option<&Map<String, Value>>,
        now: i64,
    ) -> DbResult<bool> {
        let db = &self.0;
        ensure(db, LazyTable::Learnings).await?;
        Ok(rewrite(db, id, content, metadata, now).await? > 0)
    }

    async fn delete_learning(&self, id: &str) -> DbResult<bool> {
        let db = &self.0;
        ensure(db, LazyTable::Learnings).await?;
        let delete = Query::delete()
            .from_table(db.table_ref(&db.tables().learnings))
            .and_where(Expr::col("learning_id").eq(id))
            .build_sqlx(A::D::builder());
        Ok(changed(db, delete, &format!("cannot delete learning {id}")).await? > 0)
    }

    async fn delete_user_learnings(&self, user_id: &str, learning_type: Option<&str>) -> DbResult<u64> {
        let db = &self.0;
        ensure(db, LazyTable::Learnings).await?;
        let mut filter = Condition::all().add(A::D::exact("user_id", user_id));
        if let Some(t) = learning_type {
            filter = filter.add(A::D::exact("learning_type", t));
        }
        let delete = Query::delete()
            .from_table(db.table_ref(&db.tables().learnings))
            .cond_where(filter)
            .build_sqlx(A::D::builder());
        changed(db, delete, &format!("cannot delete the learnings of {user_id}")).await
    }

    async fn learning_users(
        &self,
        learning_type: Option<&str>,
        user_id: Option<&str>,
        by_user: bool,
        order: SortOrder,
        limit: u64,
        page: u64,
    ) -> DbResult<(Vec<LearningUser>, u64)> {
        let db = &self.0;
        ensure(db, LazyTable::Learnings).await?;
        let mut filter = Condition::all().add(Expr::col("user_id").is_not_null());
        if let Some(u) = user_id {
            filter = filter.add(A::D::exact("user_id", u));
        }
        if let Some(t) = learning_type {
            filter = filter.add(A::D::exact("learning_type", t));
        }
        let table = db.table_ref(&db.tables().learnings);
        let mut select = Query::select();
        select
            .column("user_id")
            .expr_as(Expr::col("updated_at").max(), "last_learning_updated_at")
            .from(table.clone())
            .cond_where(filter.clone())
            .group_by_col("user_id");
        let (dir, _) = super::listing::direction(order);
        if by_user {
            select.order_by("user_id", dir);
        } else {
            select.order_by_expr(Expr::col("updated_at").max(), dir.clone()).order_by("user_id", dir);
        }
        super::listing::limit_to(&mut select, usize::try_from(limit).ok(), usize::try_from(page).ok());
        let found = rows(db, select.build_sqlx(A::D::builder()), "cannot list the users of learnings").await?;
        let users = found
            .iter()
            .map(|r| {
                let c = Columns::<A::D>::of(r, "agno_learnings");
                Ok(LearningUser {
                    user_id: c.text("user_id")?.unwrap_or_default(),
                    last_learning_updated_at: c.int("last_learning_updated_at")?,
                })
            })
            .collect::<DbResult<Vec<_>>>()?;
        let count = Query::select()
            .expr_as(Expr::col("user_id").count_distinct(), "total")
            .from(table)
            .cond_where(filter)
            .build_sqlx(A::D::builder());
        let total = rows(db, count, "cannot count the users of learnings").await?;
        let total = total.first().map(|r| Columns::<A::D>::of(r, "agno_learnings").int("total")).transpose()?.flatten();
        Ok((users, u64::try_from(total.unwrap_or(0)).unwrap_or(0)))
    }
}
