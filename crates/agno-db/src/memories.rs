//! What every adapter's memory store shares: filter semantics and paging.

use agno_core::{MemoryQuery, UserMemory};

/// True when `m` passes the query's filters (used by the adapters that filter in process).
pub(crate) fn matches_query(m: &UserMemory, q: &MemoryQuery) -> bool {
    q.user_id.as_deref().is_none_or(|u| m.user_id.as_deref() == Some(u))
        && q.agent_id.as_deref().is_none_or(|a| m.agent_id.as_deref() == Some(a))
        && q.team_id.as_deref().is_none_or(|t| m.team_id.as_deref() == Some(t))
        && q.topics
            .as_ref()
            .is_none_or(|wanted| m.topics.as_ref().is_some_and(|have| have.iter().any(|t| wanted.contains(t))))
        && q.search_content.as_deref().is_none_or(|needle| m.memory.to_lowercase().contains(&needle.to_lowercase()))
}

/// (offset, limit) of a 1-based page; no limit reads everything.
pub(crate) fn page_bounds(limit: Option<usize>, page: Option<usize>) -> (usize, usize) {
    match limit {
        Some(limit) => (limit.saturating_mul(page.unwrap_or(1).max(1) - 1), limit),
        None => (0, usize::MAX),
    }
}
