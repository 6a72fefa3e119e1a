//! What the document adapters (in memory, JSON files, Redis) share: each area's filter, order
//! and page rules, written once. An adapter only reads its documents into records and writes
//! them back; which records a listing shows, in which order, is decided here.

pub(crate) mod evals;
pub(crate) mod knowledge;
pub(crate) mod memories;

use agno_core::SortOrder;

/// True when a record owned by `owner` is visible to a caller filtering on `user_id` (none:
/// unscoped, sees everything).
pub(crate) fn visible(owner: Option<&str>, user_id: Option<&str>) -> bool {
    user_id.is_none_or(|u| owner == Some(u))
}

/// Sorts `list` ascending by `key`, reverses it for [`SortOrder::Desc`], and pages it as
/// `limit`/`page` ask; with the count before paging.
pub(crate) fn sort_and_page<T>(
    mut list: Vec<T>,
    key: impl FnMut(&T, &T) -> std::cmp::Ordering,
    order: SortOrder,
    limit: Option<usize>,
    page: Option<usize>,
) -> (Vec<T>, u64) {
    list.sort_by(key);
    if order == SortOrder::Desc {
        list.reverse();
    }
    let total = list.len() as u64;
    let (offset, limit) = crate::memories::page_bounds(limit, page);
    (list.into_iter().skip(offset).take(limit).collect(), total)
}
