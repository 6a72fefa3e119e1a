//! User memories: which a listing shows and in which order, the topics and the per-user
//! counts, over the memories an adapter read.
//!
//! User memories of the document stores, written once for the in-memory store, the JSON files
//! (`agno_memories.json`, `UserMemory.to_dict()` as Python Agno's `JsonDb` writes it) and Redis
//! (`{prefix}:memories:{memory_id}` with every key in its `RedisDb`'s order, and index sets per
//! `user_id`, `agent_id`, `team_id`): reading a stored document (epoch or ISO timestamps, Agno
//! 2.x's shape too), the write rules of an upsert, listing, topics and per-user stats.

use std::collections::{BTreeMap, BTreeSet};

use agno_core::{DbError, DbErrorKind, DbResult, MemoryStore, new_id, now_epoch_secs};
use agno_core::{MemoryPage, MemoryQuery, MemorySort, UserMemory, UserMemoryStats};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::DocDb;
use super::documents::{Doc, DocKind, Documents, Layout};
use super::schema::str_field;
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

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number (days since 1970-01-01).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (if month <= 2 { yoe + era * 400 + 1 } else { yoe + era * 400 }, month, day)
}

/// Epoch seconds as a naive ISO-8601 text in UTC (`1970-01-01T00:01:40`), the form
/// `UserMemory.to_dict()` gives `created_at` and Python Agno reads back as UTC.
pub(crate) fn iso_from_epoch(secs: i64) -> String {
    let (date, time) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(date);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}", time / 3600, time % 3600 / 60, time % 60)
}

/// A run of ASCII digits as a number; `None` when empty or not all digits.
fn digits(text: &str) -> Option<i64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `HH[:MM[:SS[.ffffff]]]` (or `HHMM[SS]`) as seconds; fractions are dropped.
fn clock_secs(text: &str) -> Option<i64> {
    let whole = text.split_once(['.', ',']).map_or(text, |(w, _)| w);
    let parts: Vec<&str> = if whole.contains(':') {
        whole.split(':').collect()
    } else {
        (0..whole.len()).step_by(2).filter_map(|i| whole.get(i..(i + 2).min(whole.len()))).collect()
    };
    if parts.is_empty() || parts.len() > 3 || parts.iter().any(|p| p.len() != 2) {
        return None;
    }
    let mut secs = 0;
    for (i, part) in parts.iter().enumerate() {
        let n = digits(part)?;
        secs += n * [3600, 60, 1][i];
    }
    Some(secs)
}

/// An ISO-8601 text as epoch seconds, as Python's `to_epoch_s` reads it (`datetime.fromisoformat`,
/// a trailing `Z` is UTC, a naive time is UTC).
pub(crate) fn epoch_from_iso(text: &str) -> Option<i64> {
    let s = text.trim();
    let (date, rest) = (s.get(..10)?, s.get(10..)?);
    let mut fields = date.split('-');
    let (y, m, d) = (digits(fields.next()?)?, digits(fields.next()?)?, digits(fields.next()?)?);
    if fields.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let day_secs = days_from_civil(y, m, d) * 86_400;
    if rest.is_empty() {
        return Some(day_secs);
    }
    let rest = rest.strip_prefix(['T', 't', ' '])?;
    let (clock, offset) = if let Some(clock) = rest.strip_suffix(['Z', 'z']) {
        (clock, 0)
    } else if let Some(at) = rest.find(['+', '-']) {
        let (clock, zone) = rest.split_at(at);
        let sign = if zone.starts_with('-') { -1 } else { 1 };
        (clock, sign * clock_secs(&zone[1..])?)
    } else {
        (rest, 0)
    };
    Some(day_secs + clock_secs(clock)? - offset)
}

/// A stored timestamp as epoch seconds: an integer, a float (truncated) or an ISO text.
#[allow(clippy::cast_possible_truncation)]
pub(crate) fn epoch_value(value: Option<&Value>) -> Option<i64> {
    match value? {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(text) => epoch_from_iso(text),
        _ => None,
    }
}

/// A memory from a stored document (either store's shape, or Agno 2.x's `to_dict()` shape).
pub(crate) fn memory_from_doc(doc: &Map<String, Value>) -> UserMemory {
    let text = |key: &str| str_field(doc, key).map(str::to_owned);
    let memory = match doc.get("memory") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    };
    let topics = match doc.get("topics") {
        Some(Value::Array(list)) => Some(list.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()),
        _ => None,
    };
    UserMemory {
        memory_id: text("memory_id"),
        memory,
        topics,
        user_id: text("user_id"),
        input: text("input"),
        agent_id: text("agent_id"),
        team_id: text("team_id"),
        feedback: text("feedback"),
        created_at: epoch_value(doc.get("created_at")),
        updated_at: epoch_value(doc.get("updated_at")),
    }
}

/// An upsert's outcome: the row to store and the memory to return to the caller.
pub(crate) struct MemoryWrite {
    /// The row to store.
    pub(crate) stored: UserMemory,
    /// What the upsert returns.
    pub(crate) returned: UserMemory,
}

/// Applies the upsert rules (those of the SQLite store) to `memory` over the stored `existing`
/// memory of the same id: the id is `id`; a memory owned by another user is a conflict; an update
/// keeps the stored `created_at` and owner; `updated_at` is `now`.
///
/// # Errors
/// [`DbErrorKind::Conflict`] when `existing` belongs to another user.
pub(crate) fn memory_write(
    memory: &UserMemory,
    id: &str,
    existing: Option<&UserMemory>,
    now: i64,
) -> DbResult<MemoryWrite> {
    let mut returned = memory.clone();
    returned.memory_id = Some(id.to_owned());
    let mut stored = returned.clone();
    match existing {
        Some(old) => {
            if old.user_id.is_some() && old.user_id != memory.user_id {
                return Err(DbError::new(DbErrorKind::Conflict, format!("memory {id} belongs to another user")));
            }
            stored.user_id.clone_from(&old.user_id);
            stored.created_at = Some(old.created_at.or(memory.created_at).unwrap_or(now));
        }
        None => stored.created_at = Some(memory.created_at.unwrap_or(now)),
    }
    stored.updated_at = Some(now);
    returned.created_at = stored.created_at;
    returned.updated_at = Some(now);
    Ok(MemoryWrite { stored, returned })
}

/// A memory document as Python Agno's `JsonDb` writes it: `UserMemory.to_dict()` (keys without
/// a value left out, `created_at` as naive ISO text in UTC) with `updated_at` in epoch seconds.
fn json_doc(m: &UserMemory) -> Map<String, Value> {
    let mut doc = Map::new();
    let mut put = |key: &str, value: Option<Value>| {
        if let Some(v) = value {
            doc.insert(key.to_owned(), v);
        }
    };
    let text = |v: &Option<String>| v.clone().map(Value::String);
    put("memory_id", text(&m.memory_id));
    put("memory", Some(Value::String(m.memory.clone())));
    put("topics", m.topics.as_ref().map(|t| Value::Array(t.iter().cloned().map(Value::String).collect())));
    put("created_at", m.created_at.map(|c| Value::String(iso_from_epoch(c))));
    put("updated_at", m.updated_at.map(Value::from));
    put("input", text(&m.input));
    put("user_id", text(&m.user_id));
    put("agent_id", text(&m.agent_id));
    put("team_id", text(&m.team_id));
    put("feedback", text(&m.feedback));
    doc
}

/// Memory documents, with the index sets Python Agno's `RedisDb` keeps for them (`workflow_id`,
/// which memories never carry, included as Agno includes it).
const MEMORIES: DocKind = DocKind {
    name: "memories",
    key: "memory_id",
    table: |t| &t.memories,
    index: &["user_id", "agent_id", "team_id", "workflow_id"],
};

/// A memory document as Python Agno's `RedisDb.upsert_user_memory` writes it: every key, in
/// its order, timestamps in epoch seconds.
fn redis_doc(m: &UserMemory) -> Doc {
    let text = |v: &Option<String>| v.clone().map_or(Value::Null, Value::String);
    let mut doc = Map::new();
    doc.insert("user_id".to_owned(), text(&m.user_id));
    doc.insert("agent_id".to_owned(), text(&m.agent_id));
    doc.insert("team_id".to_owned(), text(&m.team_id));
    doc.insert("memory_id".to_owned(), text(&m.memory_id));
    doc.insert("memory".to_owned(), Value::String(m.memory.clone()));
    doc.insert(
        "topics".to_owned(),
        m.topics.as_ref().map_or(Value::Null, |t| Value::Array(t.iter().cloned().map(Value::String).collect())),
    );
    doc.insert("input".to_owned(), text(&m.input));
    doc.insert("feedback".to_owned(), text(&m.feedback));
    doc.insert("created_at".to_owned(), m.created_at.map_or(Value::Null, Value::from));
    doc.insert("updated_at".to_owned(), m.updated_at.map_or(Value::Null, Value::from));
    doc
}

/// Every stored memory (values that are not documents are skipped).
async fn all_memories(store: &impl Documents) -> DbResult<Vec<UserMemory>> {
    Ok(store.docs(&MEMORIES, None).await?.iter().map(memory_from_doc).collect())
}

#[async_trait]
impl<B> MemoryStore for DocDb<B>
where
    DocDb<B>: Documents,
{
    async fn upsert_user_memory(&self, memory: &UserMemory) -> DbResult<UserMemory> {
        let memory = memory.clone();
        let id = memory.memory_id.clone().unwrap_or_else(new_id);
        let written = self
            .change(&MEMORIES, &id.clone(), "memory", move |current| {
                let existing = current.map(memory_from_doc);
                let write = memory_write(&memory, &id, existing.as_ref(), now_epoch_secs())?;
                let doc = match Self::LAYOUT {
                    Layout::Json => json_doc(&write.stored),
                    Layout::Redis => redis_doc(&write.stored),
                };
                Ok(Some((doc, write.returned)))
            })
            .await?;
        written.ok_or_else(|| DbError::new(DbErrorKind::Other, "memory was not written"))
    }

    async fn get_user_memory(&self, memory_id: &str, user_id: Option<&str>) -> DbResult<Option<UserMemory>> {
        let found = self.doc(&MEMORIES, memory_id, "memory").await?.as_ref().map(memory_from_doc);
        Ok(found.filter(|m| visible(m.user_id.as_deref(), user_id)))
    }

    async fn get_user_memories(&self, query: &MemoryQuery) -> DbResult<MemoryPage> {
        Ok(page_memories(all_memories(self).await?, query))
    }

    async fn delete_user_memory(&self, memory_id: &str, user_id: Option<&str>) -> DbResult<bool> {
        Ok(self.delete_user_memories(&[memory_id.to_owned()], user_id).await? == 1)
    }

    async fn delete_user_memories(&self, memory_ids: &[String], user_id: Option<&str>) -> DbResult<u64> {
        self.delete(&MEMORIES, memory_ids, user_id).await
    }

    async fn get_all_memory_topics(&self, user_id: Option<&str>) -> DbResult<Vec<String>> {
        Ok(memory_topics(&all_memories(self).await?, user_id))
    }

    async fn get_user_memory_stats(
        &self,
        limit: Option<usize>,
        page: Option<usize>,
        user_id: Option<&str>,
    ) -> DbResult<(Vec<UserMemoryStats>, u64)> {
        Ok(memory_stats(&all_memories(self).await?, limit, page, user_id))
    }

    async fn clear_memories(&self) -> DbResult<()> {
        self.clear(&MEMORIES).await
    }
}

#[cfg(test)]
mod tests {
    use super::{epoch_from_iso, iso_from_epoch};

    #[test]
    fn iso_timestamps_round_trip_as_python_reads_them() {
        assert_eq!(iso_from_epoch(100), "1970-01-01T00:01:40");
        assert_eq!(iso_from_epoch(1_735_689_600), "2025-01-01T00:00:00");
        assert_eq!(iso_from_epoch(951_782_400), "2000-02-29T00:00:00");
        for secs in [0, 100, 951_782_399, 1_735_689_600, 1_796_009_009, 4_102_444_800] {
            assert_eq!(epoch_from_iso(&iso_from_epoch(secs)), Some(secs));
        }
        assert_eq!(epoch_from_iso("2025-01-01"), Some(1_735_689_600));
        assert_eq!(epoch_from_iso("2025-01-01 00:00:00.123456"), Some(1_735_689_600));
        assert_eq!(epoch_from_iso("2025-01-01T00:00:00Z"), Some(1_735_689_600));
        assert_eq!(epoch_from_iso("2025-01-01T02:00:00+02:00"), Some(1_735_689_600));
        assert_eq!(epoch_from_iso("2024-12-31T22:30:00-01:30"), Some(1_735_689_600));
        assert_eq!(epoch_from_iso("not a date"), None);
        assert_eq!(epoch_from_iso("2025-13-01"), None);
    }
}
