//! The vector store interface (Agno's `VectorDb`, v3 with `user_id`) and the ranking helpers the
//! stores share.

use agno_core::{Document, Filter, KnowledgeError, SearchType};
use async_trait::async_trait;
use serde_json::{Map, Value};

/// One stored chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorRow {
    /// Chunk id (primary key).
    pub id: String,
    /// Content name.
    pub name: Option<String>,
    /// Metadata (filters apply to it).
    pub meta_data: Map<String, Value>,
    /// The chunk's text.
    pub content: String,
    /// Its embedding, when an embedder is configured.
    pub embedding: Option<Vec<f32>>,
    /// Hash of the content it came from.
    pub content_hash: String,
    /// Id of the content row.
    pub content_id: String,
    /// Owner; `None` = shared.
    pub user_id: Option<String>,
}

/// A search of a store.
#[derive(Debug, Clone, Copy)]
pub struct VectorQuery<'a> {
    /// The query text (keyword and hybrid search).
    pub text: &'a str,
    /// The query's embedding (vector and hybrid search).
    pub embedding: Option<&'a [f32]>,
    /// Most results.
    pub limit: usize,
    /// Metadata filter.
    pub filter: Option<&'a Filter>,
    /// `Some(user)`: the user's rows plus shared ones; `None`: every row.
    pub user_id: Option<&'a str>,
    /// How to rank.
    pub search_type: SearchType,
}

/// A store of embedded chunks.
#[async_trait]
pub trait VectorDb: Send + Sync + std::fmt::Debug {
    /// Creates the table and indexes if missing.
    ///
    /// # Errors
    /// [`KnowledgeError::Store`].
    async fn create(&self) -> Result<(), KnowledgeError>;

    /// Replaces every chunk of `content_id` with `rows`, atomically: readers see the old chunks
    /// or all new ones, never a part.
    ///
    /// # Errors
    /// [`KnowledgeError::Store`]; nothing is changed then.
    async fn replace_content(&self, content_id: &str, rows: &[VectorRow]) -> Result<(), KnowledgeError>;

    /// Deletes the chunks of `content_id`; returns how many.
    ///
    /// # Errors
    /// [`KnowledgeError::Store`].
    async fn delete_by_content_id(&self, content_id: &str) -> Result<u64, KnowledgeError>;

    /// Merges `metadata` into the metadata of every chunk of `content_id` (top-level keys of
    /// `metadata` replace the chunk's); returns how many chunks changed. Agno's
    /// `update_metadata`, used when a content's metadata is patched.
    ///
    /// # Errors
    /// [`KnowledgeError::Store`]; nothing is changed then.
    async fn update_metadata(&self, content_id: &str, metadata: &Map<String, Value>) -> Result<u64, KnowledgeError>;

    /// Whether chunks of this content hash exist (for this user, or shared).
    ///
    /// # Errors
    /// [`KnowledgeError::Store`].
    async fn content_hash_exists(&self, content_hash: &str, user_id: Option<&str>) -> Result<bool, KnowledgeError>;

    /// The best chunks for `query`, best first, with `reranking_score` set to the score.
    ///
    /// # Errors
    /// [`KnowledgeError::NeedsMigration`] for a per-user search of a pre-v3 table;
    /// [`KnowledgeError::Unsupported`] for vector ranking without a query embedding.
    async fn search(&self, query: VectorQuery<'_>) -> Result<Vec<Document>, KnowledgeError>;

    /// Adds the v3 `user_id` column (and index) to a table created before v3; returns whether it
    /// changed anything. Existing rows stay shared.
    ///
    /// # Errors
    /// [`KnowledgeError::Store`].
    async fn migrate_user_id(&self) -> Result<bool, KnowledgeError>;

    /// Builds (or rebuilds) the store's approximate index over what it holds (Agno's
    /// `optimize()`); a no-op for stores that search exactly.
    ///
    /// # Errors
    /// [`KnowledgeError::Store`].
    async fn optimize(&self) -> Result<(), KnowledgeError> {
        Ok(())
    }
}

/// Checks a SQL identifier (a table or schema name cannot be a bound parameter): ASCII letters,
/// digits and `_`, not starting with a digit, at most 63 characters. `what` names it in the error.
pub(crate) fn check_identifier(name: &str, what: &str) -> Result<(), KnowledgeError> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if ok { Ok(()) } else { Err(KnowledgeError::Store(format!("invalid {what} {name:?}: use letters, digits and _"))) }
}

/// A storage failure as the stores report it.
pub(crate) fn store_err(e: impl std::fmt::Display) -> KnowledgeError {
    KnowledgeError::Store(e.to_string())
}

/// `v` scaled to length 1 (the zero vector stays zero).
pub(crate) fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// Whether a table has the v3 `user_id` column, remembered once seen: a column is never dropped,
/// while its absence is asked again each time, so a migration made elsewhere is noticed.
#[derive(Debug, Clone, Default)]
pub(crate) struct UserColumn(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl UserColumn {
    /// True when the column was seen before (no need to ask the database).
    pub(crate) fn known(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Records what the database said; returns it.
    pub(crate) fn seen(&self, present: bool) -> bool {
        if present {
            self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        present
    }
}

/// A statement built from checked identifiers (see [`check_identifier`]); every value in it is
/// a bound parameter.
pub(crate) fn sql(text: String) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(text)
}

/// Weight of the vector score in hybrid search (Agno's `vector_score_weight`).
pub const VECTOR_SCORE_WEIGHT: f64 = 0.5;

/// Agno's hybrid score: `w * max(0, cosine) + (1 - w) * r / (r + k)` where `r` is the text
/// rank (0 when the text does not match) and `k` the rank's half-saturation point.
pub fn hybrid_score(cosine: Option<f32>, text_rank: f64, k: f64) -> f64 {
    let vector = f64::from(cosine.unwrap_or(0.0)).max(0.0);
    let text = if text_rank > 0.0 { text_rank / (text_rank + k) } else { 0.0 };
    VECTOR_SCORE_WEIGHT * vector + (1.0 - VECTOR_SCORE_WEIGHT) * text
}

/// The words of a query, for full-text matching (letters and digits only: no query syntax
/// reaches the index).
pub fn query_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}
