//! `agno_compactions` as every SQL adapter writes and reads it: Agno 3.1's 11 columns, a record
//! written once (a second write of the same id changes nothing), read newest first per session.

use agno_core::{Cell, CompactionRecord, CompactionStore, DbError, DbErrorKind, DbResult};
use sea_query::{Condition, Expr, ExprTrait, Func, LikeExpr, OnConflict, Order, Query};
use sea_query_sqlx::SqlxBinder;
use sqlx::Database;

use super::{Columns, Dialect, SqlDb, SqlFamily, changed, rows};

/// The columns of the compactions table, in table order.
pub(crate) const COMPACTION_COLUMNS: [&str; 11] = [
    "compaction_id",
    "session_id",
    "run_id",
    "user_id",
    "first_kept_message_id",
    "summary",
    "archived_messages",
    "messages_compacted",
    "tokens_before",
    "tokens_after",
    "created_at",
];

fn compaction_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<CompactionRecord> {
    let c = Columns::<D>::of(row, "agno_compactions");
    Ok(CompactionRecord {
        compaction_id: c.text("compaction_id")?.unwrap_or_default(),
        session_id: c.text("session_id")?.unwrap_or_default(),
        run_id: c.text("run_id")?,
        user_id: c.text("user_id")?,
        first_kept_message_id: c.text("first_kept_message_id")?,
        summary: c.text("summary")?,
        archived_messages: c.text("archived_messages")?,
        messages_compacted: c.int("messages_compacted")?,
        tokens_before: c.int("tokens_before")?,
        tokens_after: c.int("tokens_after")?,
        created_at: c.int("created_at")?.unwrap_or_default(),
    })
}

fn compaction_cells<D: Dialect>(r: &CompactionRecord) -> [Cell; 11] {
    [
        Cell::Text(Some(r.compaction_id.clone())),
        Cell::Text(Some(r.session_id.clone())),
        Cell::Text(r.run_id.clone()),
        Cell::Text(r.user_id.clone()),
        Cell::Text(r.first_kept_message_id.clone()),
        Cell::Text(D::storable(r.summary.as_deref())),
        Cell::Text(D::storable(r.archived_messages.as_deref())),
        Cell::Int(r.messages_compacted),
        Cell::Int(r.tokens_before),
        Cell::Int(r.tokens_after),
        Cell::Int(Some(r.created_at)),
    ]
}

/// The records of `session_id` matching `filter`, newest first, at most `limit`.
async fn compactions_where<A: SqlFamily>(
    this: &SqlDb<A>,
    session_id: &str,
    filter: Condition,
    limit: Option<usize>,
) -> DbResult<Vec<CompactionRecord>> {
    let db = &this.0;
    let mut select = Query::select();
    select
        .columns(COMPACTION_COLUMNS)
        .from(db.table_ref(&db.tables().compactions))
        .and_where(Expr::col("session_id").eq(session_id))
        .cond_where(filter)
        .order_by("created_at", Order::Desc)
        .order_by("compaction_id", Order::Desc);
    if let Some(n) = limit {
        select.limit(n as u64);
    }
    let found =
        rows(db, select.build_sqlx(A::D::builder()), &format!("cannot read the compactions of session {session_id}"))
            .await?;
    found.iter().map(compaction_from_row::<A::D>).collect()
}

#[async_trait::async_trait]
impl<A: SqlFamily> CompactionStore for SqlDb<A> {
    async fn upsert_compaction(&self, record: &CompactionRecord) -> DbResult<()> {
        let db = &self.0;
        let values = super::values::<A::D>(compaction_cells::<A::D>(record))?;
        let what = format!("cannot write compaction {}", record.compaction_id);
        let mut insert = Query::insert();
        insert
            .into_table(db.table_ref(&db.tables().compactions))
            .columns(COMPACTION_COLUMNS)
            .values(values)
            .map_err(|e| DbError::new(DbErrorKind::Other, format!("{what}: {e}")))?
            .on_conflict(OnConflict::column("compaction_id").do_nothing_on(["compaction_id"]).to_owned());
        changed(db, insert.build_sqlx(A::D::builder()), &what).await?;
        Ok(())
    }

    async fn get_compactions(&self, session_id: &str, limit: Option<usize>) -> DbResult<Vec<CompactionRecord>> {
        compactions_where(self, session_id, Condition::all(), limit).await
    }

    async fn search_compactions(
        &self,
        session_id: &str,
        terms: &[String],
        limit: usize,
    ) -> DbResult<Vec<CompactionRecord>> {
        let terms: Vec<String> = terms.iter().filter(|t| !t.is_empty()).map(|t| t.to_lowercase()).collect();
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        // Bound as values; `%` and `_` in a term only widen the candidates, matched exactly after.
        let any = terms.into_iter().fold(Condition::any(), |any, t| {
            any.add(Expr::expr(Func::lower(Expr::col("archived_messages"))).like(LikeExpr::new(format!("%{t}%"))))
        });
        compactions_where(self, session_id, any, Some(limit)).await
    }

    async fn delete_compactions(&self, session_ids: &[String]) -> DbResult<u64> {
        let db = &self.0;
        if session_ids.is_empty() {
            return Ok(0);
        }
        let delete = Query::delete()
            .from_table(db.table_ref(&db.tables().compactions))
            .and_where(Expr::col("session_id").is_in(session_ids.iter().map(String::as_str)))
            .build_sqlx(A::D::builder());
        changed(db, delete, "cannot delete compactions").await
    }
}
