//! Compaction records of the document stores (`agno_compactions.json`: one document per fold,
//! Agno's 11 columns as keys). The order and the search rule here serve Redis too.

use agno_core::{CompactionRecord, CompactionStore, DbResult};
use async_trait::async_trait;
use serde_json::Value;

use super::{DocBackend, DocDb};

/// A record from its document; `None` for one that is not a record.
pub(crate) fn compaction_from_doc(doc: &Value) -> Option<CompactionRecord> {
    serde_json::from_value(doc.clone()).ok()
}

/// The records of `session_id` among `all` that `keep` keeps, newest first, at most `limit`.
pub(crate) fn newest_first(
    all: impl IntoIterator<Item = CompactionRecord>,
    session_id: &str,
    keep: impl Fn(&CompactionRecord) -> bool,
    limit: Option<usize>,
) -> Vec<CompactionRecord> {
    let mut found: Vec<CompactionRecord> = all.into_iter().filter(|r| r.session_id == session_id && keep(r)).collect();
    found.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.compaction_id.cmp(&a.compaction_id)));
    found.truncate(limit.unwrap_or(usize::MAX));
    found
}

/// True when `r`'s archived messages contain one of `terms` (case-insensitive).
pub(crate) fn archive_mentions(r: &CompactionRecord, terms: &[String]) -> bool {
    let Some(archive) = r.archived_messages.as_deref() else { return false };
    let archive = archive.to_lowercase();
    terms.iter().filter(|t| !t.is_empty()).any(|t| archive.contains(&t.to_lowercase()))
}

fn records_in(docs: &[Value]) -> Vec<CompactionRecord> {
    docs.iter().filter_map(compaction_from_doc).collect()
}

#[async_trait]
impl<B: DocBackend> CompactionStore for DocDb<B> {
    async fn upsert_compaction(&self, record: &CompactionRecord) -> DbResult<()> {
        let record = record.clone();
        self.write(move |files| {
            let t = files.tables().compactions.clone();
            let mut docs = files.read(&t)?.into_owned();
            if docs.iter().any(|d| super::key_of(d, "compaction_id") == Some(&record.compaction_id)) {
                return Ok(());
            }
            docs.push(Value::Object(crate::codec::to_doc(&record)?));
            files.write(&t, docs)
        })
        .await
    }

    async fn get_compactions(&self, session_id: &str, limit: Option<usize>) -> DbResult<Vec<CompactionRecord>> {
        let session_id = session_id.to_owned();
        self.read(move |files| {
            let t = files.tables().compactions.clone();
            Ok(newest_first(records_in(&files.read(&t)?), &session_id, |_| true, limit))
        })
        .await
    }

    async fn search_compactions(
        &self,
        session_id: &str,
        terms: &[String],
        limit: usize,
    ) -> DbResult<Vec<CompactionRecord>> {
        let (session_id, terms) = (session_id.to_owned(), terms.to_vec());
        self.read(move |files| {
            let t = files.tables().compactions.clone();
            Ok(newest_first(records_in(&files.read(&t)?), &session_id, |r| archive_mentions(r, &terms), Some(limit)))
        })
        .await
    }

    async fn delete_compactions(&self, session_ids: &[String]) -> DbResult<u64> {
        let ids = session_ids.to_vec();
        self.write(move |files| delete_in(files, &ids)).await
    }
}

/// Deletes the records of `session_ids` under the lock already held; how many.
pub(super) fn delete_in(files: &mut dyn super::Docs, session_ids: &[String]) -> DbResult<u64> {
    let t = files.tables().compactions.clone();
    if !files.exists(&t) {
        return Ok(0);
    }
    let mut docs = files.read(&t)?.into_owned();
    let before = docs.len();
    docs.retain(|d| !super::key_of(d, "session_id").is_some_and(|s| session_ids.iter().any(|x| x == s)));
    let n = (before - docs.len()) as u64;
    if n > 0 {
        files.write(&t, docs)?;
    }
    Ok(n)
}
