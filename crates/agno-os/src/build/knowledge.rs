//! Builds the `[[knowledge]]` bases of a config: the embedded vector store, the embedder, the
//! chunking, with their contents rows in the OS database.

use std::sync::Arc;

use agno_core::{Db, SearchType};
use agno_knowledge::{
    Chunking, EmbeddingApi, HashEmbedder, Knowledge, OpenAiEmbedder, PgVectorDb, ProviderEmbedder, SqliteVectorDb,
    VectorDb,
};

use crate::build::StartError;
use crate::config::KnowledgeSpec;

fn fail(id: &str, why: impl std::fmt::Display) -> StartError {
    StartError::Config(format!("[[knowledge]] {id}: {why}"))
}

/// Where the embedded store of a knowledge base lives, given the OS database URL.
fn store_url(spec: &KnowledgeSpec, db_url: Option<&str>) -> Result<String, StartError> {
    match spec.vector_db.as_deref().unwrap_or("embedded") {
        "embedded" => match db_url {
            Some(url) if url.starts_with("sqlite:") => Ok(url.to_owned()),
            None => Ok("sqlite::memory:".to_owned()),
            Some(url) if url.starts_with("memory:") => Ok("sqlite::memory:".to_owned()),
            Some(_) => Err(fail(
                &spec.id,
                "vector_db = \"embedded\" keeps chunks in the OS's SQLite file, but the OS database is not \
                 SQLite: set vector_db = \"sqlite://knowledge.db\"",
            )),
        },
        url if url.starts_with("sqlite:") || url.starts_with("postgres") => Ok(url.to_owned()),
        other => Err(fail(
            &spec.id,
            format!(
                "unsupported vector_db {other:?}: use \"embedded\", a sqlite:// URL or a postgresql:// URL (PgVector)"
            ),
        )),
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn env_or(name: &str, default: &str) -> String {
    env(name).unwrap_or_else(|| default.to_owned())
}

fn embedder(spec: &KnowledgeSpec) -> Result<Option<Arc<dyn agno_knowledge::Embedder>>, StartError> {
    let choice = spec.embedder.as_deref().unwrap_or("none");
    let (provider, model) = choice.split_once(':').unwrap_or((choice, ""));
    match provider {
        "none" => Ok(None),
        "hash" => {
            let dims = if model.is_empty() {
                spec.dimensions.unwrap_or(256)
            } else {
                model.parse().map_err(|_| fail(&spec.id, format!("hash:{model}: dimensions must be a number")))?
            };
            Ok(Some(Arc::new(HashEmbedder::new(dims))))
        }
        "openai" | "openai-like" => {
            let model = if model.is_empty() { "text-embedding-3-small" } else { model };
            let e = OpenAiEmbedder::from_env().model(model).dimensions(spec.dimensions.unwrap_or(1536));
            Ok(Some(Arc::new(e)))
        }
        "mistral" => {
            // OpenAI's wire format; mistral-embed has a fixed size, so no `dimensions` is sent.
            let base = env_or("MISTRAL_BASE_URL", "https://api.mistral.ai/v1");
            let mut e = OpenAiEmbedder::new(base)
                .model(if model.is_empty() { "mistral-embed" } else { model })
                .dimensions(spec.dimensions.unwrap_or(1024))
                .send_dimensions(false);
            if let Some(key) = env("MISTRAL_API_KEY") {
                e = e.api_key(key);
            }
            Ok(Some(Arc::new(e)))
        }
        "ollama" | "cohere" | "gemini" | "google" | "voyage" => {
            let (api, base, key_var, default_model, default_dims) = match provider {
                "ollama" => (
                    EmbeddingApi::Ollama,
                    env_or("OLLAMA_HOST", "http://localhost:11434"),
                    None,
                    "nomic-embed-text",
                    768,
                ),
                "cohere" => (
                    EmbeddingApi::Cohere,
                    env_or("COHERE_BASE_URL", "https://api.cohere.com"),
                    Some("COHERE_API_KEY"),
                    "embed-v4.0",
                    1536,
                ),
                "voyage" => (
                    EmbeddingApi::Voyage,
                    env_or("VOYAGE_BASE_URL", "https://api.voyageai.com"),
                    Some("VOYAGE_API_KEY"),
                    "voyage-3.5",
                    1024,
                ),
                _ => (
                    EmbeddingApi::Gemini,
                    env_or("GEMINI_BASE_URL", "https://generativelanguage.googleapis.com"),
                    Some("GOOGLE_API_KEY"),
                    "gemini-embedding-001",
                    1536,
                ),
            };
            let model = if model.is_empty() { default_model } else { model };
            let mut e = ProviderEmbedder::new(api, base, model, spec.dimensions.unwrap_or(default_dims));
            if let Some(key) = key_var.and_then(env) {
                e = e.api_key(key);
            }
            Ok(Some(Arc::new(e)))
        }
        other => {
            Err(fail(&spec.id, format!("unknown embedder {other:?}: use none, hash:<dimensions> or openai:<model>")))
        }
    }
}

/// Builds every knowledge base of the config (tables created).
///
/// # Errors
/// [`StartError::Config`] naming the base and the setting to fix.
pub async fn build_knowledge(
    specs: &[KnowledgeSpec],
    db: Option<&Arc<dyn Db>>,
    db_url: Option<&str>,
) -> Result<Vec<Arc<Knowledge>>, StartError> {
    let mut out: Vec<Arc<Knowledge>> = Vec::new();
    for spec in specs {
        if out.iter().any(|k| k.name() == spec.id) {
            return Err(fail(&spec.id, "duplicate knowledge id"));
        }
        let table = spec.table.clone().unwrap_or_else(|| format!("agno_vectors_{}", spec.id.replace('-', "_")));
        let url = store_url(spec, db_url)?;
        let embedder = embedder(spec)?;
        let store: Arc<dyn VectorDb> = if url.starts_with("postgres") {
            // PgVector: Python Agno's table shape; `?schema=` picks the schema (default `ai`).
            let (base, schema) = split_schema(&url);
            let Some(dims) = embedder.as_ref().map(|e| e.dimensions()) else {
                return Err(fail(&spec.id, "PgVector stores embeddings: set embedder (and dimensions)"));
            };
            Arc::new(PgVectorDb::connect(&base, &schema, &table, dims).await.map_err(|e| fail(&spec.id, e))?)
        } else {
            Arc::new(SqliteVectorDb::connect(&url, &table).await.map_err(|e| fail(&spec.id, e))?)
        };
        let mut k = Knowledge::new(spec.id.clone(), store)
            .description(spec.description.clone().unwrap_or_default())
            .private_urls(spec.allow_private_urls.unwrap_or(false));
        if let Some(db) = db {
            k = k.contents_db(Arc::clone(db));
        }
        let sources =
            spec.sources.iter().map(|s| s.source()).collect::<Result<Vec<_>, _>>().map_err(|e| fail(&spec.id, e))?;
        if let Some(dup) = sources.iter().enumerate().find(|(i, s)| sources[..*i].iter().any(|o| o.id == s.id)) {
            return Err(fail(&spec.id, format!("duplicate source id {}", dup.1.id)));
        }
        k = k.with_sources(sources);
        if let Some(e) = embedder {
            k = k.embedder(e);
        }
        if spec.chunker.is_some() || spec.chunk_size.is_some() || spec.chunk_overlap.is_some() {
            let chunking =
                Chunking::by_name(spec.chunker.as_deref().unwrap_or("fixed"), spec.chunk_size, spec.chunk_overlap)
                    .map_err(|e| fail(&spec.id, e))?;
            k = k.chunking(chunking);
        }
        if let Some(n) = spec.max_results {
            k = k.max_results(n);
        }
        if let Some(n) = spec.max_chunks_per_content {
            k = k.max_chunks_per_content(n);
        }
        if let Some(t) = &spec.search_type {
            k = k.search_type(parse_search_type(t).map_err(|e| fail(&spec.id, e))?);
        }
        if matches!(k.default_search_type(), SearchType::Vector | SearchType::Hybrid) && !k.has_embedder() {
            return Err(fail(
                &spec.id,
                "vector and hybrid search need an embedder: set embedder, or search_type = \"keyword\"",
            ));
        }
        k.create().await.map_err(|e| fail(&spec.id, e))?;
        out.push(Arc::new(k));
    }
    Ok(out)
}

/// A PostgreSQL URL without its `schema` query parameter, and that schema (default `ai`).
pub fn split_schema(url: &str) -> (String, String) {
    let Some((base, query)) = url.split_once('?') else { return (url.to_owned(), "ai".to_owned()) };
    let mut schema = "ai".to_owned();
    let rest: Vec<&str> = query
        .split('&')
        .filter(|kv| match kv.strip_prefix("schema=") {
            Some(s) => {
                schema = s.to_owned();
                false
            }
            None => true,
        })
        .collect();
    let base = if rest.is_empty() { base.to_owned() } else { format!("{base}?{}", rest.join("&")) };
    (base, schema)
}

/// `vector`, `keyword` or `hybrid`.
pub fn parse_search_type(text: &str) -> Result<SearchType, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "vector" => Ok(SearchType::Vector),
        "keyword" => Ok(SearchType::Keyword),
        "hybrid" => Ok(SearchType::Hybrid),
        other => Err(format!("unknown search_type {other:?}: use vector, keyword or hybrid")),
    }
}
