//! `agno_knowledge` (the contents of knowledge bases) as every SQL adapter reads it back.

use agno_core::{DbResult, KnowledgeRow};
use sqlx::Database;

use super::{Columns, Dialect};

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
