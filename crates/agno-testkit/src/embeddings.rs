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

/// The texts of a request in another provider's shape, and the vectors (`dims` each).
fn vectors(texts: &[String], dims: usize) -> Vec<Vec<f32>> {
    texts.iter().map(|t| bag_of_words_embedding(t, dims)).collect()
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    match v? {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(items) if !items.is_empty() => items.iter().map(|i| i.as_str().map(str::to_owned)).collect(),
        _ => None,
    }
}

/// Dimensions of the fake models of the other providers (fixed per model, as theirs are).
const PROVIDER_DIMENSIONS: usize = 32;

/// Ollama's `POST /api/embed` (`{"model", "input"}` -> `{"embeddings": [[...]]}`).
pub(crate) fn ollama(body: &Value) -> Response {
    let Some(texts) = strings(body.get("input")) else {
        return error_response(400, "fake ollama: 'input' is required", None);
    };
    let model = body.get("model").and_then(Value::as_str).unwrap_or_default();
    axum::Json(json!({"model": model, "embeddings": vectors(&texts, PROVIDER_DIMENSIONS)})).into_response()
}

/// Cohere's `POST /v2/embed` (`{"model", "texts", "input_type", "embedding_types": ["float"]}`
/// -> `{"embeddings": {"float": [[...]]}}`).
pub(crate) fn cohere(body: &Value) -> Response {
    let Some(texts) = strings(body.get("texts")) else {
        return error_response(400, "fake cohere: 'texts' is required", None);
    };
    if body.get("input_type").and_then(Value::as_str).is_none() {
        return error_response(400, "fake cohere: 'input_type' is required for v3 models", None);
    }
    axum::Json(json!({"id": "fake", "texts": texts, "embeddings": {"float": vectors(&texts, PROVIDER_DIMENSIONS)}}))
        .into_response()
}

/// Gemini's `POST /v1beta/models/{model}:batchEmbedContents`
/// (`{"requests": [{"model", "content": {"parts": [{"text"}]}}]}` -> `{"embeddings": [{"values"}]}`).
pub(crate) fn gemini(path_spec: &str, body: &Value) -> Response {
    if !path_spec.ends_with(":batchEmbedContents") {
        return error_response(404, &format!("fake gemini: unknown method {path_spec}"), None);
    }
    let texts: Option<Vec<String>> = body.get("requests").and_then(Value::as_array).map(|rs| {
        rs.iter()
            .filter_map(|r| r.pointer("/content/parts/0/text").and_then(Value::as_str).map(str::to_owned))
            .collect()
    });
    let Some(texts) = texts.filter(|t| !t.is_empty()) else {
        return error_response(400, "fake gemini: 'requests' with content parts is required", None);
    };
    let dims = body
        .pointer("/requests/0/outputDimensionality")
        .and_then(Value::as_u64)
        .and_then(|d| usize::try_from(d).ok())
        .unwrap_or(PROVIDER_DIMENSIONS);
    let embeddings: Vec<Value> = vectors(&texts, dims).into_iter().map(|v| json!({"values": v})).collect();
    axum::Json(json!({"embeddings": embeddings})).into_response()
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
    // `dimensions` (OpenAI) or `output_dimension` (Voyage).
    let mut dims = body
        .get("dimensions")
        .or_else(|| body.get("output_dimension"))
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
