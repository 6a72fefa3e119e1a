//! `agno_knowledge` (the contents of knowledge bases) as every SQL adapter reads it back.

use agno_core::{Cell, DbError, DbErrorKind, DbResult, KnowledgeQuery, KnowledgeRow, KnowledgeSort, KnowledgeStore};
use sea_query::{Condition, Expr, ExprTrait, Query};
use sea_query_sqlx::SqlxBinder;
use sqlx::Database;

use super::listing::Listing;
use super::upsert::{Owned, upsert_owned};
use super::{Columns, Dialect, SqlDb, SqlFamily, changed, delete_owned, rows};

/// A content row read back from a row of the knowledge table.
///
/// # Errors
/// A column cannot be read, or `metadata` holds text that is not JSON.
pub(crate) fn knowledge_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<KnowledgeRow> {
    let c = Columns::<D>::of(row, "agno_knowledge");
    Ok(KnowledgeRow {
        id: c.text("id")?,
        name: c.text("name")?.unwrap_or_default(),
        description: c.text("description")?.unwrap_or_default(),
        metadata: c.object("metadata")?,
        kind: c.text("type")?,
        size: c.int("size")?,
        linked_to: c.text("linked_to")?,
        access_count: c.int("access_count")?,
        status: c.text("status")?,
        status_message: c.text("status_message")?,
        user_id: c.text("user_id")?,
        created_at: c.int("created_at")?,
        updated_at: c.int("updated_at")?,
        external_id: c.text("external_id")?,
    })
}

/// The columns of the knowledge table, in table order.
const COLUMNS: [&str; 14] = [
    "id",
    "name",
    "description",
    "metadata",
    "type",
    "size",
    "linked_to",
    "access_count",
    "status",
    "status_message",
    "created_at",
    "updated_at",
    "external_id",
    "user_id",
];

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
        let row = content;
        let id = row.id.clone().unwrap_or_else(agno_core::new_id);
        let now = agno_core::now_epoch_secs();
        let record = Owned {
            table: &db.tables().knowledge,
            key: ("id", &id),
            cells: vec![
                ("id", Cell::Text(Some(id.clone()))),
                ("name", Cell::Text(Some(row.name.clone()))),
                ("description", Cell::Text(Some(row.description.clone()))),
                ("metadata", Cell::Json(row.metadata.clone().map(serde_json::Value::Object))),
                ("type", Cell::Text(row.kind.clone())),
                ("size", Cell::Int(row.size)),
                ("linked_to", Cell::Text(row.linked_to.clone())),
                ("access_count", Cell::Int(row.access_count)),
                ("status", Cell::Text(row.status.clone())),
                ("status_message", Cell::Text(row.status_message.clone())),
                ("created_at", Cell::Int(Some(row.created_at.unwrap_or(now)))),
                ("updated_at", Cell::Int(Some(now))),
                ("external_id", Cell::Text(row.external_id.clone())),
                ("user_id", Cell::Text(row.user_id.clone())),
            ],
            kept: &["id", "created_at"],
            read_back: &COLUMNS,
        };
        let writer = row.user_id.clone();
        let may_replace = |owner: Option<&str>| writer.is_none() || owner == writer.as_deref();
        let what = format!("cannot write knowledge content {id}");
        match upsert_owned(db, &record, may_replace, &what).await? {
            Some(stored) => knowledge_from_row::<A::D>(&stored),
            None => Err(DbError::new(DbErrorKind::Conflict, format!("knowledge content {id} belongs to another user"))),
        }
    }

    /// The row, when the caller may see it.
    async fn get_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<KnowledgeRow>> {
        let db = &self.0;
        let select = Query::select()
            .columns(COLUMNS)
            .from(db.table_ref(&db.tables().knowledge))
            .and_where(Expr::col("id").eq(id))
            .cond_where(visible_to::<A::D>(user_id))
            .build_sqlx(A::D::builder());
        let found = rows(db, select, &format!("cannot read knowledge content {id}")).await?;
        found.first().map(knowledge_from_row::<A::D>).transpose()
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
        let (found, total) = Listing::<A::D>::of(db.table_ref(&db.tables().knowledge), COLUMNS, listing::<A::D>(q))
            .by(by, q.sort_order)
            .then_by_bytes("id", q.sort_order)
            .page(q.limit, q.page)
            .fetch(db, "knowledge contents")
            .await?;
        let list = super::listing::readable::<A::D, _>(&found, "knowledge content", "id", knowledge_from_row::<A::D>);
        Ok((list, total))
    }

    /// A scoped caller deletes only its own rows, never shared ones.
    async fn delete_knowledge_content(&self, id: &str, user_id: Option<&str>) -> DbResult<bool> {
        let db = &self.0;
        let delete = delete_owned(db, &db.tables().knowledge, "id", &[id.to_owned()], user_id);
        Ok(changed(db, delete, &format!("cannot delete knowledge content {id}")).await? > 0)
    }
}
