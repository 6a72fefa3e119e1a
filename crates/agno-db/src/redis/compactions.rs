//! Compaction records in Redis: `{prefix}:compactions:{compaction_id}` holds the document
//! (Agno's 11 columns as keys; Agno 3.1's `RedisDb` stores no compactions, so the layout follows
//! its other document kinds), with an index set per `session_id`. Order and search are the
//! document family's (`doc::compactions`).

use agno_core::{CompactionRecord, CompactionStore, DbResult};
use async_trait::async_trait;

use super::RedisDb;
use super::docs::DocKind;
use crate::doc::compactions::{archive_mentions, compaction_from_doc, newest_first};

/// Compaction documents, indexed by session.
pub(super) const COMPACTIONS: DocKind = DocKind { name: "compactions", index: &["session_id"] };

impl RedisDb {
    async fn compactions_of(&self, session_id: &str) -> DbResult<Vec<CompactionRecord>> {
        let docs = self.indexed_docs(COMPACTIONS, "session_id", session_id).await?;
        Ok(docs.iter().filter_map(compaction_from_doc).collect())
    }
}

#[async_trait]
impl CompactionStore for RedisDb {
    async fn upsert_compaction(&self, record: &CompactionRecord) -> DbResult<()> {
        // Written only when absent: a record is a fact, a second write of it changes nothing.
        self.put_doc(COMPACTIONS, &record.compaction_id, None, &crate::codec::to_doc(record)?).await?;
        Ok(())
    }

    async fn get_compactions(&self, session_id: &str, limit: Option<usize>) -> DbResult<Vec<CompactionRecord>> {
        Ok(newest_first(self.compactions_of(session_id).await?, session_id, |_| true, limit))
    }

    async fn search_compactions(
        &self,
        session_id: &str,
        terms: &[String],
        limit: usize,
    ) -> DbResult<Vec<CompactionRecord>> {
        let all = self.compactions_of(session_id).await?;
        Ok(newest_first(all, session_id, |r| archive_mentions(r, terms), Some(limit)))
    }

    async fn delete_compactions(&self, session_ids: &[String]) -> DbResult<u64> {
        let mut n = 0;
        for session_id in session_ids {
            let ids = self.indexed_ids(COMPACTIONS, "session_id", session_id).await?;
            n += self.delete_docs(COMPACTIONS, &ids, None).await?;
        }
        Ok(n)
    }
}
