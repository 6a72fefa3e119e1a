//! Knowledge ingestion as a job of the durable queue. `POST /knowledge/content` commits the
//! content's `processing` row and an `ingest` job whose payload is an [`IngestSpec`]; a worker on
//! any replica reads, chunks, embeds and stores it, bounded by the queue's concurrency like a run.
//! A later attempt (its worker died) starts the content over; deleting the content cancels its
//! ingestion; a content whose attempts ran out (or whose payload cannot be read) ends `failed`
//! with the reason, never `processing` for good.

use std::sync::Arc;
use std::time::Duration;

use agno_core::{Db, Job, JobOutcome, JobStatus, KnowledgeRow, now_epoch_secs};
use agno_knowledge::{Chunking, ChunkingError, Content, ContentKind, Knowledge, status};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::Queue;
use super::Served;

/// The version of [`IngestSpec`] this build writes (and the only one it reads).
pub const INGEST_SPEC_VERSION: u32 = 1;

/// The fewest claims an ingestion gets, whatever `[queue] max_attempts` says: reading a content
/// again has no effect beyond the content itself, so the replica that takes over after a crash
/// simply starts it over.
pub const INGEST_ATTEMPTS: i64 = 3;

/// How often a worker ingesting a content checks that the content still exists.
const DELETE_POLL: Duration = Duration::from_millis(500);

/// Why a content whose replica died mid-ingestion, with no attempt left, failed.
pub const LOST_INGESTION: &str = "the replica ingesting this content stopped before it finished and no attempt \
     is left; upload it again";

/// Why an ingestion ended without storing anything.
const DELETED: &str = "the content was deleted while it was being ingested";

/// The chunker an upload asked for (`chunker`, `chunk_size`, `chunk_overlap`), as sent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChunkingSpec {
    /// Agno's chunker name (`FixedSizeChunker` when absent).
    #[serde(default)]
    pub chunker: Option<String>,
    /// Characters per chunk.
    #[serde(default)]
    pub chunk_size: Option<usize>,
    /// Characters shared by neighbouring chunks.
    #[serde(default)]
    pub chunk_overlap: Option<usize>,
}

impl ChunkingSpec {
    /// The chunking it names.
    ///
    /// # Errors
    /// An unknown chunker or sizes it refuses, with the reason.
    pub fn chunking(&self) -> Result<Chunking, ChunkingError> {
        Chunking::by_name(self.chunker.as_deref().unwrap_or("FixedSizeChunker"), self.chunk_size, self.chunk_overlap)
    }
}

/// Everything an ingestion needs, as the job's payload: the content as it was accepted and how to
/// chunk it. Serialised with its version; the bytes travel as base64.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngestSpec {
    /// [`INGEST_SPEC_VERSION`].
    pub version: u32,
    /// The knowledge base (`[[knowledge]] id`).
    pub knowledge_id: String,
    /// The content's id (its row).
    pub content_id: String,
    /// The content's name (a file's name picks its reader).
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// The bytes (empty for a URL).
    #[serde(default, with = "base64_bytes")]
    pub bytes: Vec<u8>,
    /// The reader (`txt`, `md`, ...), when not the name's.
    #[serde(default)]
    pub kind: Option<String>,
    /// Metadata, copied to every chunk.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// Where it came from.
    #[serde(default)]
    pub source: Option<String>,
    /// Owner (`None`: shared).
    #[serde(default)]
    pub user_id: Option<String>,
    /// The row's `type` when not the reader's.
    #[serde(default)]
    pub type_label: Option<String>,
    /// A URL to download instead of `bytes`.
    #[serde(default)]
    pub url: Option<String>,
    /// The upload's chunker, when it chose one.
    #[serde(default)]
    pub chunking: Option<ChunkingSpec>,
}

impl IngestSpec {
    /// The spec of `content`, accepted as row `content_id` of base `knowledge_id`.
    pub fn new(knowledge_id: &str, content_id: &str, content: &Content, chunking: Option<ChunkingSpec>) -> Self {
        Self {
            version: INGEST_SPEC_VERSION,
            knowledge_id: knowledge_id.to_owned(),
            content_id: content_id.to_owned(),
            name: content.name.clone(),
            description: content.description.clone(),
            bytes: content.bytes.clone(),
            kind: content.kind.map(|k| k.as_str().to_owned()),
            metadata: content.metadata.clone(),
            source: content.source.clone(),
            user_id: content.user_id.clone(),
            type_label: content.type_label.clone(),
            url: content.url.clone(),
            chunking,
        }
    }

    /// The job that ingests it, with `attempts` claims.
    pub fn job(&self, attempts: i64) -> Job {
        let payload = serde_json::to_value(self).unwrap_or(Value::Null);
        let mut job = Job::ingest(&self.knowledge_id, &self.content_id, payload);
        job.user_id.clone_from(&self.user_id);
        job.max_attempts = attempts.max(INGEST_ATTEMPTS);
        job
    }

    /// The spec a job carries.
    ///
    /// # Errors
    /// The reason, naming the field, for a payload this version did not write.
    pub fn from_job(job: &Job) -> Result<Self, String> {
        let spec: Self = serde_path_to_error::deserialize(&job.payload)
            .map_err(|e| format!("the ingestion job's payload cannot be read: `{}` {}", e.path(), e.inner()))?;
        if spec.version != INGEST_SPEC_VERSION {
            return Err(format!(
                "the ingestion job's payload is version {} and this build reads version {INGEST_SPEC_VERSION}",
                spec.version
            ));
        }
        Ok(spec)
    }

    /// The content to ingest.
    ///
    /// # Errors
    /// A reader kind no version wrote.
    pub fn content(&self) -> Result<Content, String> {
        let kind = match &self.kind {
            None => None,
            Some(k) => Some(ContentKind::from_name(&format!(".{k}")).map_err(|e| e.to_string())?),
        };
        Ok(Content {
            name: self.name.clone(),
            description: self.description.clone(),
            bytes: self.bytes.clone(),
            kind,
            metadata: self.metadata.clone(),
            source: self.source.clone(),
            user_id: self.user_id.clone(),
            type_label: self.type_label.clone(),
            url: self.url.clone(),
        })
    }

    /// The base it goes into, served here, with the upload's chunker.
    ///
    /// # Errors
    /// A base not served here, or a chunker it refuses.
    pub fn knowledge(&self, state: &dyn Served) -> Result<Arc<Knowledge>, String> {
        let k = state
            .knowledge_of(&self.knowledge_id)
            .ok_or_else(|| format!("knowledge base {} is not served here", self.knowledge_id))?;
        Ok(match &self.chunking {
            None => Arc::clone(k),
            Some(c) => Arc::new(k.as_ref().clone().chunking(c.chunking().map_err(|e| e.to_string())?)),
        })
    }
}

/// One attempt at an ingestion job: the content is read, chunked, embedded and stored, and its row
/// ends `completed` or `failed`. A deleted content stops the attempt (its chunks are removed); a
/// lost lease (`lost`) or the queue's `timeout_seconds` stops it too.
pub(super) async fn attempt(state: &dyn Served, queue: &Queue, job: &Job, lost: &CancellationToken) -> JobOutcome {
    let failed = |reason: String| JobOutcome::Settled(JobStatus::Failed, Some(reason));
    let prepared = IngestSpec::from_job(job).and_then(|spec| Ok((spec.knowledge(state)?, spec.content()?, spec)));
    let (k, content, spec) = match prepared {
        Ok(p) => p,
        Err(reason) => {
            tracing::error!(job = %job.id, %reason, "unreadable ingestion job");
            if let Some(db) = state.database() {
                end_content(db.as_ref(), &job.session_id, &reason).await;
            }
            return failed(reason);
        }
    };
    let Some(db) = k.contents().cloned() else {
        return failed(format!("knowledge base {} has no contents database", spec.knowledge_id));
    };
    let row = match db.get_knowledge_content(&spec.content_id, None).await {
        Ok(Some(row)) => row,
        Ok(None) => return JobOutcome::Settled(JobStatus::Cancelled, Some(DELETED.to_owned())),
        Err(e) => {
            return JobOutcome::Retry {
                error: e.to_string(),
                available_at: now_epoch_secs() + queue.settings.backoff(job.attempt),
            };
        }
    };
    let timeout = Duration::from_secs(queue.settings.timeout_seconds);
    tokio::select! {
        processed = k.process(&content, row) => match processed {
            Ok(row) if row.status.as_deref() == Some(status::FAILED) => failed(row.status_message.unwrap_or_default()),
            Ok(_) => JobOutcome::Settled(JobStatus::Completed, None),
            Err(e) => JobOutcome::Retry {
                error: e.to_string(),
                available_at: now_epoch_secs() + queue.settings.backoff(job.attempt),
            },
        },
        () = deleted(db.as_ref(), &spec.content_id) => {
            // The route removed the chunks stored so far; those written since go too.
            if let Err(e) = k.vector_db().delete_by_content_id(&spec.content_id).await {
                tracing::warn!(content = %spec.content_id, error = %e, "cannot remove a deleted content's chunks");
            }
            JobOutcome::Settled(JobStatus::Cancelled, Some(DELETED.to_owned()))
        }
        () = lost.cancelled() => failed("the lease was lost (another worker took the ingestion over)".to_owned()),
        () = tokio::time::sleep(timeout) => {
            let reason = format!("ingestion timed out after {} s (timeout_seconds)", queue.settings.timeout_seconds);
            end_content(db.as_ref(), &spec.content_id, &reason).await;
            failed(reason)
        }
    }
}

/// Resolves once content `id` no longer exists.
async fn deleted(db: &dyn Db, id: &str) {
    loop {
        tokio::time::sleep(DELETE_POLL).await;
        if let Ok(None) = db.get_knowledge_content(id, None).await {
            return;
        }
    }
}

/// Marks content `id` `failed` with `reason` if it is still `processing` (an ingestion that ended
/// without its worker writing the outcome).
pub(crate) async fn end_content(db: &dyn Db, id: &str, reason: &str) {
    set_status(db, id, status::PROCESSING, status::FAILED, Some(reason)).await;
}

/// Puts a failed content back to `processing` (its ingestion was requeued).
pub(super) async fn reopen_content(db: &dyn Db, id: &str) {
    set_status(db, id, status::FAILED, status::PROCESSING, None).await;
}

async fn set_status(db: &dyn Db, id: &str, from: &str, to: &str, message: Option<&str>) {
    let row: KnowledgeRow = match db.get_knowledge_content(id, None).await {
        Ok(Some(row)) if row.status.as_deref() == Some(from) => row,
        Ok(_) => return,
        Err(e) => {
            tracing::error!(content = %id, error = %e, "cannot read a content to end its ingestion");
            return;
        }
    };
    let row = KnowledgeRow {
        status: Some(to.to_owned()),
        status_message: message.map(str::to_owned),
        updated_at: Some(now_epoch_secs()),
        ..row
    };
    if let Err(e) = db.upsert_knowledge_content(&row).await {
        tracing::error!(content = %id, error = %e, "cannot write a content's status");
    }
}

/// Base64 (standard alphabet, padded) for the bytes of a payload.
mod base64_bytes {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text.as_bytes()).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A spec survives its payload unchanged, bytes included; a payload of another version or
    /// with a bad field is refused naming it.
    #[test]
    fn a_spec_round_trips_through_its_job_and_bad_payloads_name_the_field() {
        let mut content = Content::file("notes.md", b"# Title\n\n\xc3\xa9t\xc3\xa9 \x00 bytes".to_vec());
        content.kind = Some(ContentKind::Markdown);
        content.metadata.insert("team".to_owned(), Value::from("core"));
        content.user_id = Some("ann".to_owned());
        let chunking =
            ChunkingSpec { chunker: Some("MarkdownChunker".to_owned()), chunk_size: Some(300), chunk_overlap: None };
        let spec = IngestSpec::new("docs", "c1", &content, Some(chunking));
        let job = spec.job(1);
        assert_eq!(
            (job.job_type(), job.session_id.as_str(), job.max_attempts),
            (Some(agno_core::JobType::Ingest), "c1", INGEST_ATTEMPTS)
        );
        assert_eq!(job.user_id.as_deref(), Some("ann"));
        let back = IngestSpec::from_job(&job).unwrap();
        assert_eq!(back, spec);
        let again = back.content().unwrap();
        assert_eq!((again.bytes, again.kind, again.metadata), (content.bytes, content.kind, content.metadata));

        let mut bad = job.clone();
        bad.payload["bytes"] = Value::from("not base64!");
        let err = IngestSpec::from_job(&bad).unwrap_err();
        assert!(err.contains("`bytes`"), "{err}");
        bad.payload = serde_json::json!({"version": 2, "knowledge_id": "docs", "content_id": "c1", "name": "x"});
        let err = IngestSpec::from_job(&bad).unwrap_err();
        assert!(err.contains("version 2"), "{err}");
        bad.payload = serde_json::json!({"message": "a run's payload"});
        assert!(IngestSpec::from_job(&bad).is_err());
    }
}
