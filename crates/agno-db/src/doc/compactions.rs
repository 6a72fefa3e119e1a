//! Compaction records of the document stores, written once for the in-memory store, the JSON
//! files (`agno_compactions.json`) and Redis (`{prefix}:compactions:{compaction_id}`, with an
//! index set per `session_id`): one document per fold, Agno's 11 columns as keys.

use agno_core::{CompactionRecord, CompactionStore, DbResult};
use async_trait::async_trait;

use super::DocDb;
use super::documents::{DocKind, Documents, records};

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

/// Compaction documents, indexed by session (Agno 3.1's `RedisDb` stores no compactions: the
/// layout follows its other document kinds).
const COMPACTIONS: DocKind =
    DocKind { name: "compactions", key: "compaction_id", table: |t| &t.compactions, index: &["session_id"] };

async fn compactions_of(store: &impl Documents, session_id: &str) -> DbResult<Vec<CompactionRecord>> {
    let docs = store.docs(&COMPACTIONS, Some(("session_id", &[session_id]))).await?;
    Ok(records(docs))
}

#[async_trait]
impl<B> CompactionStore for DocDb<B>
where
    DocDb<B>: Documents,
{
    async fn upsert_compaction(&self, record: &CompactionRecord) -> DbResult<()> {
        // Written only when absent: a record is a fact, a second write of it changes nothing.
        let doc = crate::codec::to_doc(record)?;
        self.insert_absent(&COMPACTIONS, vec![(record.compaction_id.clone(), doc)]).await?;
        Ok(())
    }

    async fn get_compactions(&self, session_id: &str, limit: Option<usize>) -> DbResult<Vec<CompactionRecord>> {
        Ok(newest_first(compactions_of(self, session_id).await?, session_id, |_| true, limit))
    }

    async fn search_compactions(
        &self,
        session_id: &str,
        terms: &[String],
        limit: usize,
    ) -> DbResult<Vec<CompactionRecord>> {
        let all = compactions_of(self, session_id).await?;
        Ok(newest_first(all, session_id, |r| archive_mentions(r, terms), Some(limit)))
    }

    async fn delete_compactions(&self, session_ids: &[String]) -> DbResult<u64> {
        let mut ids = Vec::new();
        for session_id in session_ids {
            ids.extend(compactions_of(self, session_id).await?.into_iter().map(|r| r.compaction_id));
        }
        self.delete(&COMPACTIONS, &ids, None).await
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
