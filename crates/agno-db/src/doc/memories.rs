//! User memories: which a listing shows and in which order, the topics and the per-user
//! counts, over the memories an adapter read.

use std::collections::{BTreeMap, BTreeSet};

use agno_core::{MemoryPage, MemoryQuery, MemorySort, UserMemory, UserMemoryStats};

use crate::doc::visible;
use crate::memories::matches_query;

/// Filters, sorts (by the query's column, then `memory_id`) and pages memories.
pub(crate) fn page_memories(memories: impl IntoIterator<Item = UserMemory>, query: &MemoryQuery) -> MemoryPage {
    let list = memories.into_iter().filter(|m| matches_query(m, query)).collect();
    let key = |m: &UserMemory| match query.sort_by {
        MemorySort::UpdatedAt => m.updated_at,
        MemorySort::CreatedAt => m.created_at,
    };
    let order = |a: &UserMemory, b: &UserMemory| key(a).cmp(&key(b)).then_with(|| a.memory_id.cmp(&b.memory_id));
    let (memories, total) = super::sort_and_page(list, order, query.sort_order, query.limit, query.page);
    MemoryPage { memories, total }
}

/// The distinct topics of the memories visible to `user_id`, sorted.
pub(crate) fn memory_topics<'a>(
    memories: impl IntoIterator<Item = &'a UserMemory>,
    user_id: Option<&str>,
) -> Vec<String> {
    let topics: BTreeSet<&String> = memories
        .into_iter()
        .filter(|m| visible(m.user_id.as_deref(), user_id))
        .flat_map(|m| m.topics.iter().flatten())
        .collect();
    topics.into_iter().cloned().collect()
}

/// Per-user counts (memories without an owner form one group), most recently updated first
/// (then by user), paged; and the number of groups.
pub(crate) fn memory_stats<'a>(
    memories: impl IntoIterator<Item = &'a UserMemory>,
    limit: Option<usize>,
    page: Option<usize>,
    user_id: Option<&str>,
) -> (Vec<UserMemoryStats>, u64) {
    let mut by_user: BTreeMap<Option<&str>, UserMemoryStats> = BTreeMap::new();
    for m in memories.into_iter().filter(|m| visible(m.user_id.as_deref(), user_id)) {
        let entry = by_user.entry(m.user_id.as_deref()).or_insert_with(|| UserMemoryStats {
            user_id: m.user_id.clone(),
            total_memories: 0,
            last_memory_updated_at: None,
        });
        entry.total_memories += 1;
        entry.last_memory_updated_at = entry.last_memory_updated_at.max(m.updated_at);
    }
    let mut stats: Vec<UserMemoryStats> = by_user.into_values().collect();
    stats.sort_by(|a, b| {
        b.last_memory_updated_at.cmp(&a.last_memory_updated_at).then_with(|| a.user_id.cmp(&b.user_id))
    });
    let total = stats.len() as u64;
    let (offset, limit) = crate::memories::page_bounds(limit, page);
    (stats.into_iter().skip(offset).take(limit).collect(), total)
}
