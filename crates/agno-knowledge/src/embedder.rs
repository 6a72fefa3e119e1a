//! Embedders: text to vectors. [`OpenAiEmbedder`] speaks OpenAI's `/embeddings` (OpenAI,
//! Mistral, vLLM, Together and every OpenAI-compatible server); [`ProviderEmbedder`] speaks
//! Ollama's, Cohere's, Gemini's and Voyage's APIs; [`HashEmbedder`] is a
//! deterministic offline embedder (bag of words) for tests and keyword-ish similarity.
//!
//! Texts are embedded in batches: at most `ceil(texts / batch_size)` provider calls.

use std::time::Duration;

use agno_core::KnowledgeError;
use async_trait::async_trait;
use serde_json::{Value, json};

/// Turns texts into vectors of [`Embedder::dimensions`] floats.
#[async_trait]
pub trait Embedder: Send + Sync + std::fmt::Debug {
    /// Length of every vector.
    fn dimensions(&self) -> usize;

    /// Embeds `texts`, one vector each, in order.
    ///
    /// # Errors
    /// [`KnowledgeError::Embed`] when the provider fails or answers vectors of another length or
    /// count.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, KnowledgeError>;
}

/// Checks a provider's answer: one vector per text, each of `dims` floats.
pub(crate) fn check_vectors(vectors: &[Vec<f32>], texts: usize, dims: usize) -> Result<(), KnowledgeError> {
    if vectors.len() != texts {
        return Err(KnowledgeError::Embed(format!("asked for {texts} embeddings, got {}", vectors.len())));
    }
    if let Some(bad) = vectors.iter().find(|v| v.len() != dims) {
        return Err(KnowledgeError::Embed(format!(
            "the embedder answered a vector of {} dimensions, expected {dims}: check the embedder's dimensions setting",
            bad.len()
        )));
    }
    Ok(())
}

/// A deterministic offline embedder: each word adds weight at a hashed position, normalized.
/// Texts sharing words are similar; nothing else is understood.
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    dims: usize,
}

impl HashEmbedder {
    /// An embedder of `dims` dimensions (at least 1).
    pub fn new(dims: usize) -> Self {
        Self { dims: dims.max(1) }
    }

    /// The vector of one text.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dims];
        for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for b in word.to_lowercase().bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
            let slot = usize::try_from(h % self.dims as u64).unwrap_or(0);
            v[slot] += 1.0;
        }
        crate::store::unit(v)
    }
}

#[async_trait]
impl Embedder for HashEmbedder {
    fn dimensions(&self) -> usize {
        self.dims
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, KnowledgeError> {
        Ok(texts.iter().map(|t| self.vector(t)).collect())
    }
}

/// OpenAI's embeddings API (`POST {base_url}/embeddings`), or any server speaking it.
#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    model: String,
    dims: usize,
    batch_size: usize,
    send_dimensions: bool,
}

impl OpenAiEmbedder {
    /// `text-embedding-3-small` (1536 dimensions) at `base_url` (e.g. `https://api.openai.com/v1`).
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            client: reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap_or_default(),
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key: None,
            model: "text-embedding-3-small".to_owned(),
            dims: 1536,
            batch_size: 100,
            send_dimensions: true,
        }
    }

    /// OpenAI itself: `OPENAI_BASE_URL` (default `https://api.openai.com/v1`) and
    /// `OPENAI_API_KEY`, as the official SDK reads them.
    pub fn from_env() -> Self {
        let base = std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| "https://api.openai.com/v1".to_owned());
        let mut e = Self::new(base);
        e.api_key = std::env::var("OPENAI_API_KEY").ok().filter(|k| !k.is_empty());
        e
    }

    /// The API key (sent as a bearer token).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The model id.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// The vectors' length; sent as `dimensions` unless [`Self::send_dimensions`] is off.
    pub fn dimensions(mut self, dims: usize) -> Self {
        self.dims = dims.max(1);
        self
    }

    /// Whether to send `dimensions` (servers of fixed-size models may refuse it).
    pub fn send_dimensions(mut self, on: bool) -> Self {
        self.send_dimensions = on;
        self
    }

    /// Texts per request (Agno's `batch_size`, default 100).
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n.max(1);
        self
    }

    async fn call(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, KnowledgeError> {
        let mut body = json!({"model": self.model, "input": texts, "encoding_format": "float"});
        if self.send_dimensions {
            body["dimensions"] = json!(self.dims);
        }
        let mut req = self.client.post(format!("{}/embeddings", self.base_url)).json(&body);
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let fail = |what: String| KnowledgeError::Embed(format!("{} ({}): {what}", self.base_url, self.model));
        let resp = req.send().await.map_err(|e| fail(format!("request failed: {e}")))?;
        let status = resp.status();
        let value: Value = resp.json().await.map_err(|e| fail(format!("unreadable answer ({status}): {e}")))?;
        if !status.is_success() {
            let message = value.pointer("/error/message").and_then(Value::as_str).unwrap_or("no message");
            return Err(fail(format!("HTTP {status}: {message}")));
        }
        let mut data: Vec<(u64, Vec<f32>)> = value
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| fail("the answer has no data".to_owned()))?
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let index = item.get("index").and_then(Value::as_u64).unwrap_or(i as u64);
                let vector = item
                    .get("embedding")
                    .and_then(Value::as_array)
                    .map(|xs| xs.iter().filter_map(Value::as_f64).map(|x| x as f32).collect())
                    .unwrap_or_default();
                (index, vector)
            })
            .collect();
        data.sort_by_key(|(i, _)| *i);
        let vectors: Vec<Vec<f32>> = data.into_iter().map(|(_, v)| v).collect();
        check_vectors(&vectors, texts.len(), self.dims)?;
        Ok(vectors)
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn dimensions(&self) -> usize {
        self.dims
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, KnowledgeError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch_size) {
            out.extend(self.call(batch).await?);
        }
        Ok(out)
    }
}

/// The wire format of an embeddings provider that does not speak OpenAI's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EmbeddingApi {
    /// Ollama: `POST {base}/api/embed` with `{model, input}`.
    Ollama,
    /// Cohere v2: `POST {base}/v2/embed` with `{model, texts, input_type, embedding_types}`.
    Cohere,
    /// Gemini: `POST {base}/v1beta/models/{model}:batchEmbedContents` (key in `x-goog-api-key`).
    Gemini,
    /// Voyage: `POST {base}/v1/embeddings` with `{model, input, output_dimension}`.
    Voyage,
}

/// An embedder over Ollama's, Cohere's, Gemini's or Voyage's HTTP API (OpenAI and every
/// OpenAI-compatible server, Mistral included, use [`OpenAiEmbedder`]).
#[derive(Debug, Clone)]
pub struct ProviderEmbedder {
    api: EmbeddingApi,
    client: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    model: String,
    dims: usize,
    batch_size: usize,
}

impl ProviderEmbedder {
    /// An embedder of `model` (vectors of `dims`) at `base_url` (e.g. `http://localhost:11434`
    /// for Ollama, `https://api.cohere.com`, `https://generativelanguage.googleapis.com`,
    /// `https://api.voyageai.com`).
    pub fn new(api: EmbeddingApi, base_url: impl Into<String>, model: impl Into<String>, dims: usize) -> Self {
        Self {
            api,
            client: reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap_or_default(),
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key: None,
            model: model.into(),
            dims: dims.max(1),
            batch_size: 96,
        }
    }

    /// The API key (a bearer token; Gemini: the `x-goog-api-key` header).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Texts per request (default 96, Cohere's limit).
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n.max(1);
        self
    }

    async fn call(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, KnowledgeError> {
        let (url, body) = match self.api {
            EmbeddingApi::Ollama => {
                (format!("{}/api/embed", self.base_url), json!({"model": self.model, "input": texts}))
            }
            EmbeddingApi::Cohere => (
                format!("{}/v2/embed", self.base_url),
                json!({"model": self.model, "texts": texts, "input_type": "search_document", "embedding_types": ["float"]}),
            ),
            EmbeddingApi::Gemini => {
                let requests: Vec<Value> = texts
                    .iter()
                    .map(|t| {
                        json!({"model": format!("models/{}", self.model), "content": {"parts": [{"text": t}]},
                               "outputDimensionality": self.dims})
                    })
                    .collect();
                (
                    format!("{}/v1beta/models/{}:batchEmbedContents", self.base_url, self.model),
                    json!({"requests": requests}),
                )
            }
            EmbeddingApi::Voyage => (
                format!("{}/v1/embeddings", self.base_url),
                json!({"model": self.model, "input": texts, "output_dimension": self.dims}),
            ),
        };
        let mut req = self.client.post(url).json(&body);
        if let Some(key) = &self.api_key {
            req =
                if self.api == EmbeddingApi::Gemini { req.header("x-goog-api-key", key) } else { req.bearer_auth(key) };
        }
        let fail = |what: String| KnowledgeError::Embed(format!("{} ({}): {what}", self.base_url, self.model));
        let resp = req.send().await.map_err(|e| fail(format!("request failed: {e}")))?;
        let status = resp.status();
        let value: Value = resp.json().await.map_err(|e| fail(format!("unreadable answer ({status}): {e}")))?;
        if !status.is_success() {
            let message = value
                .pointer("/error/message")
                .or_else(|| value.get("message"))
                .or_else(|| value.get("error"))
                .map_or_else(|| "no message".to_owned(), |m| m.as_str().map_or_else(|| m.to_string(), str::to_owned));
            return Err(fail(format!("HTTP {status}: {message}")));
        }
        let floats = |v: &Value| -> Vec<f32> {
            v.as_array().map(|xs| xs.iter().filter_map(Value::as_f64).map(|x| x as f32).collect()).unwrap_or_default()
        };
        let vectors: Vec<Vec<f32>> = match self.api {
            EmbeddingApi::Ollama => {
                value.get("embeddings").and_then(Value::as_array).map(|a| a.iter().map(floats).collect())
            }
            EmbeddingApi::Cohere => {
                value.pointer("/embeddings/float").and_then(Value::as_array).map(|a| a.iter().map(floats).collect())
            }
            EmbeddingApi::Gemini => value
                .get("embeddings")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(|e| floats(e.get("values").unwrap_or(&Value::Null))).collect()),
            EmbeddingApi::Voyage => value.get("data").and_then(Value::as_array).map(|a| {
                let mut items: Vec<(u64, Vec<f32>)> = a
                    .iter()
                    .enumerate()
                    .map(|(i, d)| {
                        (
                            d.get("index").and_then(Value::as_u64).unwrap_or(i as u64),
                            floats(d.get("embedding").unwrap_or(&Value::Null)),
                        )
                    })
                    .collect();
                items.sort_by_key(|(i, _)| *i);
                items.into_iter().map(|(_, v)| v).collect()
            }),
        }
        .ok_or_else(|| fail("the answer has no embeddings".to_owned()))?;
        check_vectors(&vectors, texts.len(), self.dims)?;
        Ok(vectors)
    }
}

#[async_trait]
impl Embedder for ProviderEmbedder {
    fn dimensions(&self) -> usize {
        self.dims
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, KnowledgeError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch_size) {
            out.extend(self.call(batch).await?);
        }
        Ok(out)
    }
}
