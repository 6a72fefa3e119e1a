//! The OpenAI embeddings endpoint (`POST /v1/embeddings`) of the fake provider, and the
//! deterministic bag-of-words vectors it answers with: texts sharing words get similar vectors,
//! so vector search can be tested without a model.

use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::openai::error_response;

/// Path of the embeddings endpoint.
pub(crate) const EMBEDDINGS_PATH: &str = "/v1/embeddings";

/// Dimensions when the request names none (OpenAI's `text-embedding-3-small`).
const DEFAULT_DIMENSIONS: usize = 1536;

/// A unit vector of `dims` dimensions: each lowercase alphanumeric word of `text` adds 1 at a
/// position chosen by a hash of the word (FNV-1a), then the vector is L2-normalized. Empty text
/// gives the zero vector.
pub fn bag_of_words_embedding(text: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![0.0f32; dims.max(1)];
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in word.to_lowercase().bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        let slot = usize::try_from(h % v.len() as u64).unwrap_or(0);
        v[slot] += 1.0;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// Answers one embeddings request. A model whose name contains `wrong-dimensions` answers one
/// dimension more than asked (for testing dimension checks).
pub(crate) fn embeddings(body: &Value) -> Response {
    let inputs: Vec<String> = match body.get("input") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) if !items.is_empty() => {
            match items.iter().map(|i| i.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>() {
                Some(texts) => texts,
                None => return error_response(400, "fake provider: 'input' must be strings", None),
            }
        }
        _ => return error_response(400, "fake provider: 'input' is required (a string or a list of strings)", None),
    };
    let Some(model) = body.get("model").and_then(Value::as_str) else {
        return error_response(400, "fake provider: 'model' is required", None);
    };
    let mut dims = body
        .get("dimensions")
        .and_then(Value::as_u64)
        .and_then(|d| usize::try_from(d).ok())
        .unwrap_or(DEFAULT_DIMENSIONS);
    if model.contains("wrong-dimensions") {
        dims += 1;
    }
    let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count()).sum();
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": bag_of_words_embedding(t, dims)}))
        .collect();
    axum::Json(json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }))
    .into_response()
}
