//! `agno_knowledge` (the contents of knowledge bases) as every SQL adapter reads it back.

use agno_core::{DbError, DbErrorKind, DbResult, KnowledgeQuery, KnowledgeRow, KnowledgeSort, KnowledgeStore};
use sea_query::{Condition, Expr, ExprTrait};

use super::listing::Listing;
use super::record::{SqlRecord, get_one, readable, sql_record};
use super::upsert::upsert_owned;
use super::{Dialect, SqlDb, SqlFamily, changed, delete_owned};

sql_record! {
    KnowledgeRow {
        noun: "knowledge content", table: "agno_knowledge", key: "id",
        columns: [
            id: text, name: text required, description: text required, metadata: object, type: text,
            size: int, linked_to: text, access_count: int, status: text, status_message: text,
            created_at: int, updated_at: int, external_id: text, user_id: text,
        ],
    }
}

/// The rows `user_id` (none: unscoped) may see: its own and the shared ones.
fn visible_to<D: Dialect>(user_id: Option<&str>) -> Condition {
    let mut c = Condition::all();
    if let Some(u) = user_id {
        c = c.add(Condition::any().add(Expr::col("user_id").is_null()).add(D::exact("user_id", u)));
    }
    c
}

/// The conditions of a listing.
fn listing<D: Dialect>(q: &KnowledgeQuery) -> Condition {
    let mut c = visible_to::<D>(q.user_id.as_deref());
    if let Some(l) = &q.linked_to {
        c = c.add(D::exact("linked_to", l));
    }
    c
}

#[async_trait::async_trait]
impl<A: SqlFamily> KnowledgeStore for SqlDb<A> {
    /// The content as stored (`created_at` kept from the stored row). An unscoped writer may
    /// replace any content, a user its own only (not a shared one); the owner is written as given;
    /// another user's content is a conflict and is left as it is.
    async fn upsert_knowledge_content(&self, content: &KnowledgeRow) -> DbResult<KnowledgeRow> {
        let db = &self.0;
        let id = content.id.clone().unwrap_or_else(agno_core::new_id);
        let now = agno_core::now_epoch_secs();
        let row = KnowledgeRow {
            id: Some(id.clone()),
            created_at: Some(content.created_at.unwrap_or(now)),
            updated_at: Some(now),
            ..content.clone()
        };
        let writer = row.user_id.clone();
        let may_replace = |owner: Option<&str>| writer.is_none() || owner == writer.as_deref();
        let what = format!("cannot write knowledge content {id}");
        let table = &db.tables().knowledge;
        match upsert_owned(db, (table, &row), &["id", "created_at"], may_replace, &what).await? {
            Some(stored) => Ok(stored),
            None => Err(DbError::new(DbErrorKind::Conflict, format!("knowledge content {id} belongs to another user"))),
        }
    }

    /// The row, when the caller may see it.
    async fn get_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<KnowledgeRow>> {
        let db = &self.0;
        get_one(db, &db.tables().knowledge, id, visible_to::<A::D>(user_id)).await
    }

    /// A page of the listing (in the query's order, NULL lowest, names and then ids by their bytes)
    /// and the number of matching rows; a row no reader can decode is left out.
    async fn get_knowledge_contents(&self, q: &KnowledgeQuery) -> DbResult<(Vec<KnowledgeRow>, u64)> {
        let db = &self.0;
        let by = match q.sort_by {
            KnowledgeSort::CreatedAt => Expr::col("created_at"),
            KnowledgeSort::UpdatedAt => Expr::col("updated_at"),
            KnowledgeSort::Name => A::D::byte_order("name"),
        };
        let (found, total) =
            Listing::<A::D>::of(db.table_ref(&db.tables().knowledge), KnowledgeRow::names(), listing::<A::D>(q))
                .by(by, q.sort_order)
                .then_by_bytes("id", q.sort_order)
                .page(q.limit, q.page)
                .fetch(db, "knowledge contents")
                .await?;
        let list = readable::<A::D, KnowledgeRow>(&found);
        Ok((list, total))
    }

    /// A scoped caller deletes only its own rows, never shared ones.
    async fn delete_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        let db = &self.0;
        let delete = delete_owned(db, &db.tables().knowledge, "id", &[id.to_owned()], user_id);
        Ok(changed(db, delete, &format!("cannot delete knowledge content {id}")).await? > 0)
    }
}
