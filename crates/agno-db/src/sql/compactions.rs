//! `agno_compactions` as every SQL adapter writes and reads it: Agno 3.1's 11 columns, a record
//! written once (a second write of the same id changes nothing), read newest first per session.

use agno_core::{CompactionRecord, CompactionStore, DbResult};
use sea_query::{Condition, Expr, ExprTrait, Func, LikeExpr, OnConflict, Order, Query};
use sea_query_sqlx::SqlxBinder;

use super::record::{SqlRecord, insert_of, sql_record};
use super::{Dialect, SqlDb, SqlFamily, changed, rows};

sql_record! {
    CompactionRecord {
        noun: "compaction", table: "agno_compactions", key: "compaction_id",
        columns: [
            compaction_id: text required, session_id: text required, run_id: text, user_id: text,
            first_kept_message_id: text, summary: free_text, archived_messages: free_text,
            messages_compacted: int, tokens_before: int, tokens_after: int, created_at: int required,
        ],
    }
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
        .columns(CompactionRecord::names())
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
    found.iter().map(CompactionRecord::from_row::<A::D>).collect()
}

#[async_trait::async_trait]
impl<A: SqlFamily> CompactionStore for SqlDb<A> {
    async fn upsert_compaction(&self, record: &CompactionRecord) -> DbResult<()> {
        let db = &self.0;
        let (id, mut insert) = insert_of(db, &db.tables().compactions, record)?;
        insert.on_conflict(OnConflict::column("compaction_id").do_nothing_on(["compaction_id"]).to_owned());
        let what = format!("cannot write compaction {id}");
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
