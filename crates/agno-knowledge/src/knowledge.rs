//! [`Knowledge`]: contents (rows of `agno_knowledge` with a status) read, chunked, embedded and
//! stored in a vector store, and searched per user.
//!
//! Ingestion of one content: its row is written `processing`; it is read, chunked and embedded;
//! its chunks replace the content's previous ones in one transaction; the row ends `completed`,
//! or `failed` with the reason, and then nothing of it is searchable (the previous version of
//! the same content, if any, stays as it was).

use std::sync::Arc;

use agno_core::{Db, Document, Filter, KnowledgeBase, KnowledgeError, KnowledgeQuery, KnowledgeRow, SearchType};
use async_trait::async_trait;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::chunking::Chunking;
use crate::embedder::{Embedder, check_vectors};
use crate::reader::{ContentKind, read};
use crate::store::{VectorDb, VectorQuery, VectorRow};

/// Agno's `ContentStatus` values.
pub mod status {
    /// Being read, chunked and embedded.
    pub const PROCESSING: &str = "processing";
    /// Searchable.
    pub const COMPLETED: &str = "completed";
    /// Not searchable; `status_message` says why.
    pub const FAILED: &str = "failed";
}

/// Largest content accepted by default (bytes).
pub const DEFAULT_MAX_CONTENT_BYTES: usize = 50 * 1024 * 1024;

/// Most chunks one content may be cut into, unless set otherwise: a 10 MB text at chunk size
/// 200 fits; a chunk size of 1 on the same text (ten million chunks) does not.
pub const DEFAULT_MAX_CHUNKS: usize = 50_000;

/// Reorders (or trims) search results, e.g. with a cross-encoder (Agno's `reranker`).
#[async_trait]
pub trait Reranker: Send + Sync + std::fmt::Debug {
    /// The documents in their new order; may set `reranking_score`.
    ///
    /// # Errors
    /// A [`KnowledgeError`].
    async fn rerank(&self, query: &str, documents: Vec<Document>) -> Result<Vec<Document>, KnowledgeError>;
}

/// Agno's reserved metadata key (source details it records), never copied to chunks.
const AGNO_KEY: &str = "_agno";

/// `metadata` without Agno's reserved key: what chunks carry and filters see.
fn user_metadata(metadata: &Map<String, Value>) -> Map<String, Value> {
    metadata.iter().filter(|(k, _)| k.as_str() != AGNO_KEY).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// What [`Knowledge::update_content`] changes; `None` fields stay as they are.
#[derive(Debug, Clone, Default)]
pub struct ContentPatch {
    /// New name.
    pub name: Option<String>,
    /// New description.
    pub description: Option<String>,
    /// Metadata merged into the content's (top-level keys replace).
    pub metadata: Option<Map<String, Value>>,
}

/// One content to insert.
#[derive(Debug, Clone, Default)]
pub struct Content {
    /// Name (for a file, its file name: the extension picks the reader).
    pub name: String,
    /// Description.
    pub description: String,
    /// The bytes (text, or a file's contents).
    pub bytes: Vec<u8>,
    /// The reader; by `name`'s extension when `None`.
    pub kind: Option<ContentKind>,
    /// Metadata, copied to every chunk (filters apply to it).
    pub metadata: Map<String, Value>,
    /// Where it came from (a path or URL), part of its identity.
    pub source: Option<String>,
    /// Owner; `None` = shared.
    pub user_id: Option<String>,
    /// The row's `type` when not the reader's (AgentOS stores `manual` for typed text, or the
    /// uploaded file's media type, as Python AgentOS does).
    pub type_label: Option<String>,
    /// A URL to download the bytes from when the content is processed (`bytes` stays empty).
    pub url: Option<String>,
}

impl Content {
    /// A text content.
    pub fn text(name: impl Into<String>, text: impl Into<String>) -> Self {
        Self { name: name.into(), bytes: text.into().into_bytes(), kind: Some(ContentKind::Text), ..Self::default() }
    }

    /// A file's bytes; the reader follows `file_name`'s extension.
    pub fn file(file_name: impl Into<String>, bytes: Vec<u8>) -> Self {
        Self { name: file_name.into(), bytes, ..Self::default() }
    }

    /// The document at `url` (http or https), downloaded when the content is processed; the
    /// reader follows the URL's extension, else the answer's media type.
    pub fn url(url: impl Into<String>) -> Self {
        let url = url.into();
        let name = url
            .split(['?', '#'])
            .next()
            .and_then(|u| u.trim_end_matches('/').rsplit('/').next())
            .filter(|n| !n.is_empty() && !n.contains(':'))
            .map_or_else(|| url.clone(), str::to_owned);
        Self { name, source: Some(url.clone()), url: Some(url), ..Self::default() }
    }

    /// With this metadata.
    pub fn metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = metadata;
        self
    }

    /// Owned by this user.
    pub fn user(mut self, user_id: impl Into<String>) -> Self {
        self.user_id = Some(user_id.into());
        self
    }

    /// The content's identity: a hash of its name, description, metadata (keys sorted), source,
    /// owner and bytes, so different documents (or one document of two users) never share an id.
    pub fn content_hash(&self) -> String {
        let mut h = Sha256::new();
        for part in [self.name.as_bytes(), self.description.as_bytes()] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part);
        }
        let meta = sorted_json(&Value::Object(self.metadata.clone()));
        h.update((meta.len() as u64).to_le_bytes());
        h.update(meta.as_bytes());
        // The owner too: two users adding the same file get two contents (and chunks).
        for part in [self.source.as_deref().unwrap_or_default(), self.user_id.as_deref().unwrap_or_default()] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        h.update(&self.bytes);
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// JSON with object keys sorted (serde_json keeps insertion order here).
fn sorted_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let inner: Vec<String> =
                keys.iter().map(|k| format!("{}:{}", Value::String((*k).clone()), sorted_json(&m[*k]))).collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(sorted_json).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// A content id from its hash, shaped as a UUID.
fn content_id(hash: &str) -> String {
    let h = hash.get(..32).unwrap_or(hash);
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

/// Refuses a URL whose host is, or resolves to, an address that is not public.
async fn refuse_internal(url: &str) -> Result<(), String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let (host, port) = match host_port.strip_prefix('[') {
        Some(v6) => {
            let (h, p) = v6.split_once(']').unwrap_or((v6, ""));
            (h.to_owned(), p.trim_start_matches(':').parse().unwrap_or(0))
        }
        None => match host_port.rsplit_once(':') {
            Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => (h.to_owned(), p.parse().unwrap_or(0)),
            _ => (host_port.to_owned(), 0),
        },
    };
    let port = if port == 0 { if url.starts_with("https") { 443 } else { 80 } } else { port };
    let addrs = tokio::net::lookup_host((host.as_str(), port)).await.map_err(|e| e.to_string())?;
    for addr in addrs {
        let ip = addr.ip();
        let internal = match ip {
            std::net::IpAddr::V4(v4) => {
                v4.is_loopback()
                    || v4.is_private()
                    || v4.is_link_local()
                    || v4.is_unspecified()
                    || v4.is_broadcast()
                    || v4.is_multicast()
                    || v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64
            }
            std::net::IpAddr::V6(v6) => {
                v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
                    || (v6.segments()[0] & 0xfe00) == 0xfc00
                    || (v6.segments()[0] & 0xffc0) == 0xfe80
                    || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback() || v4.is_private() || v4.is_link_local())
            }
        };
        if internal {
            return Err(format!(
                "{host} is an internal address ({ip}); this server reads only public URLs (allow_private_urls to change)"
            ));
        }
    }
    Ok(())
}

/// A knowledge base.
#[derive(Debug, Clone)]
pub struct Knowledge {
    name: String,
    description: String,
    vector_db: Arc<dyn VectorDb>,
    contents_db: Option<Arc<dyn Db>>,
    embedder: Option<Arc<dyn Embedder>>,
    chunking: Chunking,
    max_results: usize,
    search_type: SearchType,
    reranker: Option<Arc<dyn Reranker>>,
    max_content_bytes: usize,
    max_chunks: usize,
    private_urls: bool,
    /// The remote sources content may be read from (Agno's `content_sources`).
    sources: Vec<Arc<crate::S3Source>>,
}

impl Knowledge {
    /// A knowledge base `name` over `vector_db`: fixed-size chunks of 5,000 characters, 10
    /// results, keyword search until an embedder is set (then vector search).
    pub fn new(name: impl Into<String>, vector_db: Arc<dyn VectorDb>) -> Self {
        Self {
            name: name.into(),
            description: String::new(),
            vector_db,
            contents_db: None,
            embedder: None,
            chunking: Chunking::default(),
            max_results: 10,
            search_type: SearchType::Keyword,
            reranker: None,
            max_content_bytes: DEFAULT_MAX_CONTENT_BYTES,
            max_chunks: DEFAULT_MAX_CHUNKS,
            private_urls: true,
            sources: Vec::new(),
        }
    }

    /// Description.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = text.into();
        self
    }

    /// Where content rows (`agno_knowledge`) are kept.
    pub fn contents_db(mut self, db: Arc<dyn Db>) -> Self {
        self.contents_db = Some(db);
        self
    }

    /// The embedder; also makes vector search the default search type.
    pub fn embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self.search_type = SearchType::Vector;
        self
    }

    /// The chunking strategy.
    pub fn chunking(mut self, chunking: Chunking) -> Self {
        self.chunking = chunking;
        self
    }

    /// Results per search when the caller names no number (Agno's `max_results`, default 10).
    pub fn max_results(mut self, n: usize) -> Self {
        self.max_results = n.max(1);
        self
    }

    /// The default search type.
    pub fn search_type(mut self, search_type: SearchType) -> Self {
        self.search_type = search_type;
        self
    }

    /// A reranker applied to every search's results.
    pub fn reranker(mut self, reranker: Arc<dyn Reranker>) -> Self {
        self.reranker = Some(reranker);
        self
    }

    /// Largest content accepted, in bytes.
    pub fn max_content_bytes(mut self, n: usize) -> Self {
        self.max_content_bytes = n;
        self
    }

    /// Most chunks one content may be cut into ([`DEFAULT_MAX_CHUNKS`] by default); a content
    /// that would make more fails with the reason, before any chunk is embedded or stored.
    pub fn max_chunks_per_content(mut self, n: usize) -> Self {
        self.max_chunks = n.max(1);
        self
    }

    /// Refuses a content whose parameters cannot work, before it is accepted: a text whose
    /// length alone means more chunks than [`Knowledge::max_chunks_per_content`] at this base's
    /// chunk size (contents read from PDF, Word, HTML or a URL are checked when read).
    ///
    /// # Errors
    /// The reason, naming the limit and what to change.
    pub fn check_content(&self, content: &Content) -> Result<(), String> {
        let kind = content.kind.or_else(|| ContentKind::from_name(&content.name).ok());
        if content.url.is_some() || !matches!(kind, Some(ContentKind::Text | ContentKind::Markdown | ContentKind::Csv))
        {
            return Ok(());
        }
        let chars = crate::chunking::non_whitespace_chars(&content.bytes);
        let least = self.chunking.min_chunks(chars);
        if least > self.max_chunks {
            return Err(format!(
                "{} would be cut into at least {least} chunks of {} characters, more than the limit of {} per \
                 content: use a larger chunk_size (or raise [[knowledge]] max_chunks_per_content)",
                content.name,
                self.chunking.size(),
                self.max_chunks
            ));
        }
        Ok(())
    }

    /// The remote sources content may be read from (`s3://<source id>/<key>` contents).
    pub fn with_sources(mut self, sources: Vec<crate::S3Source>) -> Self {
        self.sources = sources.into_iter().map(Arc::new).collect();
        self
    }

    /// The remote sources (Agno's `content_sources`), in configured order.
    pub fn sources(&self) -> &[Arc<crate::S3Source>] {
        &self.sources
    }

    /// The remote source `id`.
    pub fn source(&self, id: &str) -> Option<&Arc<crate::S3Source>> {
        self.sources.iter().find(|s| s.id == id)
    }

    /// Whether URL contents may point at loopback, private, link-local or otherwise internal
    /// addresses (default: yes, for a library user's own code). A server taking URLs from its
    /// users turns this off, so they cannot make it read internal services.
    pub fn private_urls(mut self, allowed: bool) -> Self {
        self.private_urls = allowed;
        self
    }

    /// The vector store.
    pub fn vector_db(&self) -> &Arc<dyn VectorDb> {
        &self.vector_db
    }

    /// Creates the vector store's tables.
    ///
    /// # Errors
    /// [`KnowledgeError::Store`].
    pub async fn create(&self) -> Result<(), KnowledgeError> {
        self.vector_db.create().await
    }

    /// Inserts (or, for the same content, replaces) one content. Returns its row: `completed`,
    /// or `failed` with the reason in `status_message` (a failed content is not searchable;
    /// the error is in the row, not returned).
    ///
    /// # Errors
    /// Only when the content row itself cannot be written.
    pub async fn insert(&self, content: Content) -> Result<KnowledgeRow, KnowledgeError> {
        let row = self.accept(&content).await?;
        self.process(&content, row).await
    }

    /// The first half of [`Knowledge::insert`]: writes the content's row as `processing` and
    /// returns it (AgentOS answers with it, then processes in the background).
    ///
    /// # Errors
    /// When the row cannot be written.
    pub async fn accept(&self, content: &Content) -> Result<KnowledgeRow, KnowledgeError> {
        let hash = content.content_hash();
        let now = agno_core::now_epoch_secs();
        let row = KnowledgeRow {
            id: Some(content_id(&hash)),
            name: content.name.clone(),
            description: content.description.clone(),
            metadata: (!content.metadata.is_empty()).then(|| content.metadata.clone()),
            kind: content.type_label.clone().or_else(|| {
                content.kind.or_else(|| ContentKind::from_name(&content.name).ok()).map(|k| k.as_str().to_owned())
            }),
            size: i64::try_from(content.bytes.len()).ok(),
            linked_to: Some(self.name.clone()),
            access_count: Some(0),
            status: Some(status::PROCESSING.to_owned()),
            status_message: None,
            user_id: content.user_id.clone(),
            created_at: Some(now),
            updated_at: Some(now),
            external_id: None,
        };
        self.save_row(&row).await?;
        Ok(row)
    }

    /// The second half of [`Knowledge::insert`]: reads, chunks, embeds and stores the content
    /// accepted as `row`, and writes the row's final status.
    ///
    /// # Errors
    /// When the row cannot be written.
    pub async fn process(&self, content: &Content, mut row: KnowledgeRow) -> Result<KnowledgeRow, KnowledgeError> {
        let hash = content.content_hash();
        // The row's own id: a content ingested again (a source's object changed) keeps its row.
        let id = row.id.clone().unwrap_or_else(|| content_id(&hash));
        match self.ingest(content, &hash, &id).await {
            Ok(chunks) => {
                row.status = Some(status::COMPLETED.to_owned());
                row.status_message = None;
                tracing::debug!(content_id = %id, chunks, "content indexed");
            }
            Err(e) => {
                row.status = Some(status::FAILED.to_owned());
                row.status_message = Some(e.to_string());
                tracing::warn!(content_id = %id, error = %e, "content failed");
            }
        }
        row.updated_at = Some(agno_core::now_epoch_secs());
        // The row may have been patched or deleted while the content was processed: keep the
        // patch (and give the new chunks its metadata), and leave no chunks behind a deleted row.
        if let Some(db) = &self.contents_db {
            match db.get_knowledge_content(&id, None).await? {
                None => {
                    self.vector_db.delete_by_content_id(&id).await?;
                    return Ok(row);
                }
                Some(current) => {
                    if let Some(meta) = current.metadata.as_ref().filter(|m| Some(*m) != row.metadata.as_ref()) {
                        self.vector_db.update_metadata(&id, &user_metadata(meta)).await?;
                    }
                    row.name = current.name;
                    row.description = current.description;
                    row.metadata = current.metadata;
                }
            }
        }
        self.save_row(&row).await?;
        Ok(row)
    }

    /// Patches a content's name, description and metadata (Agno's `patch_content`): the
    /// metadata is merged into the row's and into every chunk's, so filters see it at once.
    /// Under `user_id`, only that user's own content; `None` when there is no such content.
    ///
    /// # Errors
    /// A [`KnowledgeError`]; the row is unchanged when the chunks could not be updated.
    pub async fn update_content(
        &self,
        content_id: &str,
        user_id: Option<&str>,
        patch: ContentPatch,
    ) -> Result<Option<KnowledgeRow>, KnowledgeError> {
        let Some(db) = &self.contents_db else { return Ok(None) };
        let Some(mut row) = db.get_knowledge_content(content_id, user_id).await? else { return Ok(None) };
        if user_id.is_some() && row.user_id.as_deref() != user_id {
            return Ok(None);
        }
        if let Some(meta) = &patch.metadata {
            let mut merged = row.metadata.take().unwrap_or_default();
            for (key, value) in meta {
                match (key.as_str(), merged.get_mut(key), value) {
                    // Agno's `_agno` key is merged key by key.
                    (AGNO_KEY, Some(Value::Object(old)), Value::Object(new)) => {
                        old.extend(new.iter().map(|(k, v)| (k.clone(), v.clone())));
                    }
                    _ => {
                        merged.insert(key.clone(), value.clone());
                    }
                }
            }
            row.metadata = Some(merged);
            self.vector_db.update_metadata(content_id, &user_metadata(meta)).await?;
        }
        if let Some(name) = patch.name {
            row.name = name;
        }
        if let Some(description) = patch.description {
            row.description = description;
        }
        row.updated_at = Some(agno_core::now_epoch_secs());
        db.upsert_knowledge_content(&row).await?;
        Ok(Some(row))
    }

    /// Deletes every content of this base the caller may delete (under `user_id`, that user's
    /// own); returns how many.
    ///
    /// # Errors
    /// A [`KnowledgeError`]; contents deleted before it stay deleted.
    pub async fn remove_all_content(&self, user_id: Option<&str>) -> Result<usize, KnowledgeError> {
        let Some(db) = &self.contents_db else { return Ok(0) };
        let query = KnowledgeQuery {
            user_id: user_id.map(str::to_owned),
            linked_to: Some(self.name.clone()),
            ..KnowledgeQuery::default()
        };
        let (rows, _) = db.get_knowledge_contents(&query).await?;
        let mut removed = 0;
        for id in rows.iter().filter_map(|r| r.id.as_deref()) {
            if self.remove_content(id, user_id).await? {
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// An id for the vector store of this base (`/knowledge/config`).
    pub fn vector_db_id(&self) -> String {
        format!("{}-vectors", self.name)
    }

    /// The knowledge base's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its description.
    pub fn description_text(&self) -> &str {
        &self.description
    }

    /// The contents database, if any.
    pub fn contents(&self) -> Option<&Arc<dyn Db>> {
        self.contents_db.as_ref()
    }

    /// The default search type.
    pub fn default_search_type(&self) -> SearchType {
        self.search_type
    }

    /// Whether an embedder is configured (vector and hybrid search need one).
    pub fn has_embedder(&self) -> bool {
        self.embedder.is_some()
    }

    async fn save_row(&self, row: &KnowledgeRow) -> Result<(), KnowledgeError> {
        if let Some(db) = &self.contents_db {
            db.upsert_knowledge_content(row).await?;
        }
        Ok(())
    }

    /// Reads, chunks, embeds and stores one content; returns the number of chunks.
    async fn ingest(&self, content: &Content, hash: &str, id: &str) -> Result<usize, KnowledgeError> {
        if let Some((source, key)) = content.url.as_deref().and_then(Self::remote_object) {
            let fail =
                |why: String| KnowledgeError::Read(format!("cannot read s3 object {key} of source {source}: {why}"));
            let s3 = self.source(source).ok_or_else(|| fail("the source is not configured".to_owned()))?;
            let (bytes, _) = s3.read(key).await.map_err(|e| fail(e.to_string()))?;
            let kind = match content.kind {
                Some(k) => Some(k),
                None => Some(ContentKind::from_name(key)?),
            };
            let fetched = Content { bytes, kind, url: None, ..content.clone() };
            return Box::pin(self.ingest(&fetched, hash, id)).await;
        }
        if let Some(url) = &content.url {
            let (bytes, kind) = self.download(url, &content.name).await?;
            let fetched = Content { bytes, kind: content.kind.or(kind), url: None, ..content.clone() };
            return Box::pin(self.ingest(&fetched, hash, id)).await;
        }
        if content.bytes.len() > self.max_content_bytes {
            return Err(KnowledgeError::Read(format!(
                "{} is {} bytes, more than the limit of {} bytes",
                content.name,
                content.bytes.len(),
                self.max_content_bytes
            )));
        }
        let kind = match content.kind {
            Some(k) => k,
            None => ContentKind::from_name(&content.name)?,
        };
        let mut chunks = Vec::new();
        let too_many = |e: crate::chunking::TooManyChunks| {
            KnowledgeError::Read(format!(
                "{} would be cut into more than {} chunks of {} characters: use a larger chunk_size (or raise \
                 [[knowledge]] max_chunks_per_content)",
                content.name, e.max, e.size
            ))
        };
        for (i, mut doc) in read(kind, &content.name, &content.bytes)?.into_iter().enumerate() {
            let mut meta = content.metadata.clone();
            meta.extend(std::mem::take(&mut doc.meta_data));
            // As Agno: every chunk names its knowledge base (filters can select it).
            meta.insert("linked_to".to_owned(), Value::String(self.name.clone()));
            doc.meta_data = meta;
            doc.content_id = Some(id.to_owned());
            let prefix = if i == 0 { id.to_owned() } else { format!("{id}_{i}") };
            let left = self.max_chunks.saturating_sub(chunks.len());
            let more = self
                .chunking
                .chunk_within(&doc, &prefix, left)
                .map_err(|e| too_many(crate::chunking::TooManyChunks { max: self.max_chunks, ..e }))?;
            chunks.extend(more);
        }
        if chunks.is_empty() {
            return Err(KnowledgeError::Read(format!("{} has no text to index", content.name)));
        }
        let embeddings = match &self.embedder {
            Some(embedder) => {
                let texts: Vec<String> = chunks.iter().map(|c| c.content.clone()).collect();
                let vectors = embedder.embed(&texts).await?;
                check_vectors(&vectors, texts.len(), embedder.dimensions())?;
                vectors.into_iter().map(Some).collect()
            }
            None => vec![None; chunks.len()],
        };
        let rows: Vec<VectorRow> = chunks
            .into_iter()
            .zip(embeddings)
            .map(|(c, embedding)| VectorRow {
                id: c.id.unwrap_or_default(),
                name: c.name,
                meta_data: c.meta_data,
                content: c.content,
                embedding,
                content_hash: hash.to_owned(),
                content_id: id.to_owned(),
                user_id: content.user_id.clone(),
            })
            .collect();
        let n = rows.len();
        self.vector_db.replace_content(id, &rows).await?;
        Ok(n)
    }

    /// `s3://<source id>/<key>`: an object of a remote source, read when the content is processed.
    pub fn remote_object(url: &str) -> Option<(&str, &str)> {
        url.strip_prefix("s3://")?.split_once('/').filter(|(s, k)| !s.is_empty() && !k.is_empty())
    }

    /// Downloads `url` (at most `max_content_bytes`, 30 s): its bytes, and the reader its media
    /// type names when the name has no known extension.
    async fn download(&self, url: &str, name: &str) -> Result<(Vec<u8>, Option<ContentKind>), KnowledgeError> {
        let fail = |why: String| KnowledgeError::Read(format!("cannot download {url}: {why}"));
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(fail("only http and https URLs are read".to_owned()));
        }
        if !self.private_urls {
            refuse_internal(url).await.map_err(fail)?;
        }
        let client = reqwest::Client::builder()
            // Redirects could lead to an internal address: followed only when internal ones are allowed.
            .redirect(if self.private_urls {
                reqwest::redirect::Policy::limited(5)
            } else {
                reqwest::redirect::Policy::none()
            })
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| fail(e.to_string()))?;
        let mut resp = client.get(url).send().await.map_err(|e| fail(e.to_string()))?;
        if !resp.status().is_success() {
            return Err(fail(format!("HTTP {}", resp.status())));
        }
        let media = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or_default().trim().to_ascii_lowercase());
        let mut bytes = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| fail(e.to_string()))? {
            if bytes.len() + chunk.len() > self.max_content_bytes {
                return Err(KnowledgeError::Read(format!(
                    "{url} is more than the limit of {} bytes",
                    self.max_content_bytes
                )));
            }
            bytes.extend_from_slice(&chunk);
        }
        let by_media = match media.as_deref() {
            Some("text/html" | "application/xhtml+xml") => Some(ContentKind::Html),
            Some("application/pdf") => Some(ContentKind::Pdf),
            Some("application/json") => Some(ContentKind::Json),
            Some("text/markdown") => Some(ContentKind::Markdown),
            Some("text/csv") => Some(ContentKind::Csv),
            Some(m) if m.starts_with("text/") => Some(ContentKind::Text),
            _ => None,
        };
        let kind = ContentKind::from_name(name).ok().filter(|_| name.contains('.')).or(by_media);
        Ok((bytes, kind))
    }

    /// Deletes a content: its chunks, then its row. Under a user, only that user's (or an
    /// unscoped caller's) content.
    ///
    /// # Errors
    /// A [`KnowledgeError`].
    pub async fn remove_content(&self, content_id: &str, user_id: Option<&str>) -> Result<bool, KnowledgeError> {
        if let Some(db) = &self.contents_db {
            let Some(row) = db.get_knowledge_content(content_id, user_id).await? else { return Ok(false) };
            if user_id.is_some() && row.user_id.as_deref() != user_id {
                return Ok(false);
            }
        }
        self.vector_db.delete_by_content_id(content_id).await?;
        if let Some(db) = &self.contents_db {
            db.delete_knowledge_content(content_id, user_id).await?;
        }
        Ok(true)
    }

    /// Searches with an explicit search type (see [`KnowledgeBase::search`]).
    ///
    /// # Errors
    /// A [`KnowledgeError`].
    pub async fn search_with(
        &self,
        query: &str,
        max_results: Option<usize>,
        filter: Option<&Filter>,
        user_id: Option<&str>,
        search_type: Option<SearchType>,
    ) -> Result<Vec<Document>, KnowledgeError> {
        let search_type = search_type.unwrap_or(self.search_type);
        let embedding = match (&self.embedder, search_type) {
            (Some(embedder), SearchType::Vector | SearchType::Hybrid) => {
                let mut vectors = embedder.embed(&[query.to_owned()]).await?;
                check_vectors(&vectors, 1, embedder.dimensions())?;
                vectors.pop()
            }
            _ => None,
        };
        let found = self
            .vector_db
            .search(VectorQuery {
                text: query,
                embedding: embedding.as_deref(),
                limit: max_results.unwrap_or(self.max_results).max(1),
                filter,
                user_id,
                search_type,
            })
            .await?;
        match &self.reranker {
            Some(r) => r.rerank(query, found).await,
            None => Ok(found),
        }
    }
}

#[async_trait]
impl KnowledgeBase for Knowledge {
    fn name(&self) -> &str {
        &self.name
    }

    async fn search(
        &self,
        query: &str,
        max_results: Option<usize>,
        filter: Option<&Filter>,
        user_id: Option<&str>,
    ) -> Result<Vec<Document>, KnowledgeError> {
        self.search_with(query, max_results, filter, user_id, None).await
    }
}
