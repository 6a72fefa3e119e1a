//! Knowledge for agno-rs: read contents (text, Markdown, CSV, JSON), chunk them, embed them and
//! keep them in a vector store, then search them by keyword, vector or both, per user.
//!
//! ```no_run
//! # async fn demo() -> Result<(), agno_core::KnowledgeError> {
//! use std::sync::Arc;
//! use agno_knowledge::{Content, Knowledge, SqliteVectorDb};
//!
//! let store = SqliteVectorDb::connect("sqlite://agno.db", "agno_vectors").await?;
//! let knowledge = Knowledge::new("docs", Arc::new(store));
//! knowledge.create().await?;
//! knowledge.insert(Content::text("greeting", "Hello from the docs")).await?;
//! let found = knowledge.search_with("hello", None, None, None, None).await?;
//! # Ok(()) }
//! ```
//!
//! The pieces: [`reader`] (bytes to documents), [`Chunking`] (documents to chunks),
//! [`Embedder`]s ([`OpenAiEmbedder`] over HTTP, [`HashEmbedder`] offline), [`VectorDb`] (the
//! store interface) with [`SqliteVectorDb`] (embedded: FTS5 plus exact cosine) and [`PgVectorDb`]
//! (PostgreSQL with pgvector, sharing tables with Python Agno's `PgVector`), and
//! [`Knowledge`], which ties them to content rows in `agno_knowledge` and implements
//! [`agno_core::KnowledgeBase`] for agents.

mod chunking;
mod embedder;
mod knowledge;
mod pgvector;
pub mod reader;
mod s3;
mod sqlite;
mod store;

pub use chunking::{Chunking, ChunkingError, DEFAULT_CHUNK_SIZE, TooManyChunks, non_whitespace_chars};
pub use embedder::{Embedder, EmbeddingApi, HashEmbedder, OpenAiEmbedder, ProviderEmbedder};
pub use knowledge::{
    Content, ContentPatch, DEFAULT_MAX_CHUNKS, DEFAULT_MAX_CONTENT_BYTES, Knowledge, Reranker, status,
};
pub use pgvector::{PgVectorDb, VectorIndex};
pub use reader::ContentKind;
pub use s3::{S3Error, S3Listing, S3Object, S3Source};
pub use sqlite::SqliteVectorDb;
pub use store::{VECTOR_SCORE_WEIGHT, VectorDb, VectorQuery, VectorRow, hybrid_score, query_words};
