//! Knowledge contents: who sees a row, which a listing shows and in which order.

use agno_core::{KnowledgeQuery, KnowledgeRow, KnowledgeSort};

/// True when `user_id` (none: unscoped) may see `row`: its own rows and the shared ones.
pub(crate) fn knowledge_visible(row: &KnowledgeRow, user_id: Option<&str>) -> bool {
    user_id.is_none_or(|u| row.user_id.is_none() || row.user_id.as_deref() == Some(u))
}

/// The page of `rows` the listing `q` asks for (visible to its user, linked to its base when it
/// names one, in its order, then by id), with the number of matching rows.
pub(crate) fn page_knowledge(
    rows: impl IntoIterator<Item = KnowledgeRow>,
    q: &KnowledgeQuery,
) -> (Vec<KnowledgeRow>, u64) {
    let list = rows
        .into_iter()
        .filter(|k| knowledge_visible(k, q.user_id.as_deref()))
        .filter(|k| q.linked_to.as_deref().is_none_or(|l| k.linked_to.as_deref() == Some(l)))
        .collect();
    let order = |a: &KnowledgeRow, b: &KnowledgeRow| {
        let primary = match q.sort_by {
            KnowledgeSort::CreatedAt => a.created_at.cmp(&b.created_at),
            KnowledgeSort::UpdatedAt => a.updated_at.cmp(&b.updated_at),
            KnowledgeSort::Name => a.name.cmp(&b.name),
        };
        primary.then_with(|| a.id.cmp(&b.id))
    };
    super::sort_and_page(list, order, q.sort_order, q.limit, q.page)
}
