//! `agno_memories` as every SQL adapter reads it back.

use agno_core::{
    DbError, DbErrorKind, DbResult, MemoryPage, MemoryQuery, MemorySort, MemoryStore, UserMemory, UserMemoryStats,
};
use sea_query::{Asterisk, Condition, Expr, ExprTrait, NullOrdering, Order, Query};
use sea_query_sqlx::SqlxBinder;
use serde_json::Value;

use super::listing::{Listing, count_of, limit_to};
use super::record::{Column, SqlRecord, get_one, readable};
use super::upsert::upsert_owned;
use super::{Columns, Dialect, Row, SqlAdapter, SqlDb, SqlFamily, changed, delete_owned, owned_by, rows};

/// What a database reads its own way in the memories table.
#[async_trait::async_trait]
pub(crate) trait SqlMemories: SqlAdapter {
    /// `MemoryStore::get_all_memory_topics`, read with the database's JSON functions.
    async fn memory_topics(&self, user_id: Option<&str>) -> DbResult<Vec<String>>;
}

impl SqlRecord for UserMemory {
    const NOUN: &'static str = "memory";
    const TABLE: &'static str = "agno_memories";
    const KEY: &'static str = "memory_id";
    const COLUMNS: &'static [Column] = &[
        Column::text("memory_id"),
        Column::json("memory"),
        Column::text("input"),
        Column::text("agent_id"),
        Column::text("team_id"),
        Column::text("user_id"),
        Column::list("topics"),
        Column::text("feedback"),
        Column::int("created_at"),
        Column::int("updated_at"),
    ];

    /// `memory` is a JSON column holding the text (anything else reads as its JSON text),
    /// `topics` a JSON list of texts (anything else in it is left out).
    fn from_row<D: Dialect>(row: &Row<D>) -> DbResult<Self> {
        let c = Columns::<D>::of(row, "agno_memories");
        let memory = match c.json("memory")? {
            Some(Value::String(s)) => s,
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let topics = match c.json("topics")? {
            Some(Value::Array(list)) => Some(list.into_iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()),
            _ => None,
        };
        Ok(UserMemory {
            memory_id: c.text("memory_id")?,
            memory,
            topics,
            user_id: c.text("user_id")?,
            input: c.text("input")?,
            agent_id: c.text("agent_id")?,
            team_id: c.text("team_id")?,
            feedback: c.text("feedback")?,
            created_at: c.int("created_at")?,
            updated_at: c.int("updated_at")?,
        })
    }
}

/// The conditions of a listing.
fn listing<D: Dialect>(q: &MemoryQuery) -> Condition {
    let mut c = owned_by::<D>(q.user_id.as_deref());
    for (column, value) in [("agent_id", &q.agent_id), ("team_id", &q.team_id)] {
        if let Some(v) = value {
            c = c.add(D::exact(column, v));
        }
    }
    if let Some(topics) = q.topics.as_ref().filter(|t| !t.is_empty()) {
        c = c.add(D::any_topic(topics));
    }
    if let Some(needle) = &q.search_content {
        c = c.add(D::memory_contains(needle));
    }
    c
}

#[async_trait::async_trait]
impl<A: SqlFamily> MemoryStore for SqlDb<A> {
    /// The memory as stored (`created_at` kept from the stored row). A memory may be replaced by
    /// its owner, or by anyone while it has none; its owner never changes; another user's memory is
    /// a conflict and is left as it is.
    async fn upsert_user_memory(&self, memory: &UserMemory) -> DbResult<UserMemory> {
        let db = &self.0;
        let id = memory.memory_id.clone().unwrap_or_else(agno_core::new_id);
        let now = agno_core::now_epoch_secs();
        let row = UserMemory {
            memory_id: Some(id.clone()),
            created_at: Some(memory.created_at.unwrap_or(now)),
            updated_at: Some(now),
            ..memory.clone()
        };
        let writer = row.user_id.clone();
        let may_replace = |owner: Option<&str>| owner.is_none() || owner == writer.as_deref();
        let (table, kept) = (&db.tables().memories, &["memory_id", "user_id", "created_at"]);
        match upsert_owned(db, (table, &row), kept, may_replace, &format!("cannot write memory {id}")).await? {
            Some(stored) => Ok(stored),
            None => Err(DbError::new(DbErrorKind::Conflict, format!("memory {id} belongs to another user"))),
        }
    }

    async fn get_user_memory(&self, memory_id: &str, user_id: Option<&str>) -> DbResult<Option<UserMemory>> {
        let db = &self.0;
        get_one(db, &db.tables().memories, memory_id, owned_by::<A::D>(user_id)).await
    }

    /// A page of the listing (by the query's time column, NULL oldest, then by the bytes of
    /// `memory_id`) and the number of matching memories; a row no reader can decode is left out.
    async fn get_user_memories(&self, q: &MemoryQuery) -> DbResult<MemoryPage> {
        let db = &self.0;
        let by = match q.sort_by {
            MemorySort::UpdatedAt => "updated_at",
            MemorySort::CreatedAt => "created_at",
        };
        let (found, total) =
            Listing::<A::D>::of(db.table_ref(&db.tables().memories), UserMemory::names(), listing::<A::D>(q))
                .by(Expr::col(by), q.sort_order)
                .then_by_bytes("memory_id", q.sort_order)
                .page(q.limit, q.page)
                .fetch(db, "memories")
                .await?;
        let memories = readable::<A::D, UserMemory>(&found);
        Ok(MemoryPage { memories, total })
    }

    async fn delete_user_memory(&self, memory_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_user_memories(&[memory_id.to_owned()], user_id).await? == 1)
    }

    /// How many of `memory_ids` (of `user_id`, when given) were deleted.
    async fn delete_user_memories(&self, memory_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        let db = &self.0;
        if memory_ids.is_empty() {
            return Ok(0);
        }
        let delete = delete_owned(db, &db.tables().memories, "memory_id", memory_ids, user_id);
        changed(db, delete, "cannot delete memories").await
    }

    async fn get_all_memory_topics(&self, user_id: Option<&str>) -> DbResult<Vec<String>> {
        self.0.memory_topics(user_id).await
    }

    /// Memory counts per user (users grouped byte for byte; memories without an owner form one more
    /// group), most recently updated first, then by user, paged; and the number of groups.
    async fn get_user_memory_stats(
        &self,
        limit: Option<usize>,
        page_number: Option<usize>,
        user_id: Option<&str>,
    ) -> DbResult<(Vec<UserMemoryStats>, u64)> {
        let db = &self.0;
        let table = db.table_ref(&db.tables().memories);
        let group = A::D::byte_order("user_id");
        let mut select = Query::select();
        select
            .expr_as(Expr::cust("MIN(user_id)"), "user_id")
            .expr_as(Expr::col(Asterisk).count(), "total")
            .expr_as(Expr::cust("MAX(updated_at)"), "last")
            .from(table.clone())
            .cond_where(owned_by::<A::D>(user_id))
            .add_group_by([group.clone()]);
        let (newest, user) = (Expr::cust("MAX(updated_at)"), A::D::byte_order("MIN(user_id)"));
        if A::D::NULLS_LOW {
            select.order_by_expr(newest, Order::Desc).order_by_expr(user, Order::Asc);
        } else {
            select.order_by_expr_with_nulls(newest, Order::Desc, NullOrdering::Last).order_by_expr_with_nulls(
                user,
                Order::Asc,
                NullOrdering::First,
            );
        }
        limit_to(&mut select, limit, page_number);
        let found = rows(db, select.build_sqlx(A::D::builder()), "cannot read memory stats").await?;
        let stats = found
            .iter()
            .map(|r| {
                let c = Columns::<A::D>::of(r, "agno_memories");
                Ok(UserMemoryStats {
                    user_id: c.text("user_id")?,
                    total_memories: u64::try_from(c.int("total")?.unwrap_or_default()).unwrap_or(0),
                    last_memory_updated_at: c.int("last")?,
                })
            })
            .collect::<DbResult<Vec<_>>>()?;
        let groups = Query::select()
            .expr_as(Expr::cust("1"), "one")
            .from(table)
            .cond_where(owned_by::<A::D>(user_id))
            .add_group_by([group])
            .take();
        let count = Query::select()
            .expr_as(Expr::col(Asterisk).count(), "total")
            .from_subquery(groups, "g")
            .build_sqlx(A::D::builder());
        Ok((stats, count_of(db, count, "cannot count memory users").await?))
    }

    async fn clear_memories(&self) -> DbResult<()> {
        let db = &self.0;
        let delete = Query::delete().from_table(db.table_ref(&db.tables().memories)).build_sqlx(A::D::builder());
        changed(db, delete, "cannot clear memories").await.map(|_| ())
    }
}
