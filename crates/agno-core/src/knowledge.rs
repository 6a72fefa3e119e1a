//! What agents need from a knowledge base: documents, Agno's metadata filters and search types,
//! and the [`KnowledgeBase`] trait (implemented by `agno-knowledge`).

use std::cmp::Ordering;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A piece of content, as Agno's `Document`: a whole read document or one of its chunks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// The text.
    pub content: String,
    /// Chunk id (`<content id>_<chunk number>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Name of the content it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Metadata: the content's own, plus `chunk` and `chunk_size` for chunks.
    #[serde(default)]
    pub meta_data: Map<String, Value>,
    /// Id of the content row (`agno_knowledge.id`) it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_id: Option<String>,
    /// Relevance given by the search (higher is better), or by a reranker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reranking_score: Option<f64>,
}

impl Document {
    /// A document with this text.
    pub fn new(content: impl Into<String>) -> Self {
        Self { content: content.into(), ..Self::default() }
    }
}

/// How a store ranks documents for a query (Agno's `SearchType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchType {
    /// Similarity of embeddings.
    #[default]
    Vector,
    /// Full-text match.
    Keyword,
    /// A weighted mix of both.
    Hybrid,
}

impl SearchType {
    /// Agno's name (`vector`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            SearchType::Vector => "vector",
            SearchType::Keyword => "keyword",
            SearchType::Hybrid => "hybrid",
        }
    }
}

/// A metadata filter, as Agno's `FilterExpr` serializes it (`{"op": "EQ", "key", "value"}`,
/// `{"op": "AND", "conditions": [...]}`, ...). Evaluated against a document's `meta_data`;
/// never turned into query text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "UPPERCASE")]
pub enum Filter {
    /// `key == value`.
    Eq {
        /// Metadata key.
        key: String,
        /// Value.
        value: Value,
    },
    /// `key != value`.
    Neq {
        /// Metadata key.
        key: String,
        /// Value.
        value: Value,
    },
    /// `key` is one of `values`.
    In {
        /// Metadata key.
        key: String,
        /// Accepted values.
        values: Vec<Value>,
    },
    /// `key > value` (numbers, or strings compared as text).
    Gt {
        /// Metadata key.
        key: String,
        /// Bound.
        value: Value,
    },
    /// `key >= value`.
    Gte {
        /// Metadata key.
        key: String,
        /// Bound.
        value: Value,
    },
    /// `key < value`.
    Lt {
        /// Metadata key.
        key: String,
        /// Bound.
        value: Value,
    },
    /// `key <= value`.
    Lte {
        /// Metadata key.
        key: String,
        /// Bound.
        value: Value,
    },
    /// The string `key` contains `value`, or the list `key` has `value` as an element.
    Contains {
        /// Metadata key.
        key: String,
        /// Searched value.
        value: Value,
    },
    /// The string `key` starts with `value`.
    Startswith {
        /// Metadata key.
        key: String,
        /// Prefix.
        value: Value,
    },
    /// Every condition holds.
    And {
        /// Conditions.
        conditions: Vec<Filter>,
    },
    /// Some condition holds.
    Or {
        /// Conditions.
        conditions: Vec<Filter>,
    },
    /// The condition does not hold.
    Not {
        /// Condition.
        condition: Box<Filter>,
    },
}

impl Filter {
    /// A filter from Agno's forms: a `FilterExpr` object (`{"op": ...}`), a list of them (all
    /// must hold), or a plain `{key: value}` map (every key equal; a list value means "one of").
    ///
    /// # Errors
    /// A message naming what is wrong.
    pub fn from_json(value: &Value) -> Result<Filter, String> {
        match value {
            Value::Object(map) if map.contains_key("op") => {
                serde_json::from_value(value.clone()).map_err(|e| format!("invalid filter {value}: {e}"))
            }
            Value::Object(map) => Ok(Filter::And {
                conditions: map
                    .iter()
                    .map(|(k, v)| match v {
                        Value::Array(values) => Filter::In { key: k.clone(), values: values.clone() },
                        v => Filter::Eq { key: k.clone(), value: v.clone() },
                    })
                    .collect(),
            }),
            Value::Array(items) => {
                Ok(Filter::And { conditions: items.iter().map(Filter::from_json).collect::<Result<_, _>>()? })
            }
            other => Err(format!("a filter is an object or a list of filters, not {other}")),
        }
    }

    /// Whether `meta` satisfies the filter. A missing key satisfies only `NEQ` and `NOT`s of
    /// conditions on it.
    pub fn matches(&self, meta: &Map<String, Value>) -> bool {
        let cmp = |key: &str, bound: &Value| meta.get(key).and_then(|v| compare(v, bound));
        match self {
            Filter::Eq { key, value } => meta.get(key).is_some_and(|v| loosely_equal(v, value)),
            Filter::Neq { key, value } => !meta.get(key).is_some_and(|v| loosely_equal(v, value)),
            Filter::In { key, values } => meta.get(key).is_some_and(|v| values.iter().any(|x| loosely_equal(v, x))),
            Filter::Gt { key, value } => cmp(key, value) == Some(Ordering::Greater),
            Filter::Gte { key, value } => matches!(cmp(key, value), Some(Ordering::Greater | Ordering::Equal)),
            Filter::Lt { key, value } => cmp(key, value) == Some(Ordering::Less),
            Filter::Lte { key, value } => matches!(cmp(key, value), Some(Ordering::Less | Ordering::Equal)),
            Filter::Contains { key, value } => match (meta.get(key), value) {
                (Some(Value::String(s)), Value::String(needle)) => s.contains(needle.as_str()),
                (Some(Value::Array(items)), needle) => items.iter().any(|i| loosely_equal(i, needle)),
                _ => false,
            },
            Filter::Startswith { key, value } => match (meta.get(key), value) {
                (Some(Value::String(s)), Value::String(prefix)) => s.starts_with(prefix.as_str()),
                _ => false,
            },
            Filter::And { conditions } => conditions.iter().all(|c| c.matches(meta)),
            Filter::Or { conditions } => conditions.iter().any(|c| c.matches(meta)),
            Filter::Not { condition } => !condition.matches(meta),
        }
    }
}

/// Equal as JSON, with numbers compared by value (`1` equals `1.0`).
fn loosely_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

/// Why a knowledge operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KnowledgeError {
    /// The content cannot be read (unsupported type, empty, too large, unparsable).
    #[error("cannot read the content: {0}")]
    Read(String),
    /// The embedder failed or answered something unusable (wrong dimension, ...).
    #[error("embedding failed: {0}")]
    Embed(String),
    /// The vector store failed.
    #[error("vector store error: {0}")]
    Store(String),
    /// A search with a `user_id` on a store created before v3 (no `user_id` column): it must be
    /// migrated first, or it would silently find nothing.
    #[error(
        "the vector table {table} was created before agno v3 and has no user_id column, so it cannot be searched \
         per user: run the vector database migration (`agno db migrate-vectors`) first"
    )]
    NeedsMigration {
        /// The table.
        table: String,
    },
    /// The search type is not supported by this store or setup (vector search without an
    /// embedder, ...).
    #[error("{0}")]
    Unsupported(String),
    /// A filter is invalid.
    #[error("invalid filter: {0}")]
    Filter(String),
    /// Reading or writing the contents database failed.
    #[error("contents database error: {0}")]
    Db(#[from] crate::DbError),
}

/// A searchable knowledge base, as agents use it (`search_knowledge_base`,
/// `add_knowledge_to_context`).
#[async_trait]
pub trait KnowledgeBase: Send + Sync + std::fmt::Debug {
    /// The knowledge base's name (its id in AgentOS).
    fn name(&self) -> &str;

    /// The documents most relevant to `query`: at most `max_results` (the base's default when
    /// `None`), matching `filter`, visible to `user_id` (theirs plus shared ones; every document
    /// when `None` and the base is not isolated).
    ///
    /// # Errors
    /// A [`KnowledgeError`].
    async fn search(
        &self,
        query: &str,
        max_results: Option<usize>,
        filter: Option<&Filter>,
        user_id: Option<&str>,
    ) -> Result<Vec<Document>, KnowledgeError>;
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(v: &Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn agnos_filter_forms_parse_and_match() {
        let m = meta(&json!({"kind": "guide", "year": 2024, "tags": ["rust", "db"], "title": "Tuning sqlite"}));
        let expr = json!({"op": "AND", "conditions": [
            {"op": "EQ", "key": "kind", "value": "guide"},
            {"op": "OR", "conditions": [{"op": "GT", "key": "year", "value": 2023}, {"op": "IN", "key": "kind", "values": ["x"]}]},
            {"op": "NOT", "condition": {"op": "CONTAINS", "key": "tags", "value": "python"}},
            {"op": "STARTSWITH", "key": "title", "value": "Tuning"},
            {"op": "LTE", "key": "year", "value": 2024.0}
        ]});
        assert!(Filter::from_json(&expr).unwrap().matches(&m));
        assert!(!Filter::from_json(&json!({"op": "LT", "key": "year", "value": 2024})).unwrap().matches(&m));
        assert!(Filter::from_json(&json!({"kind": ["guide", "faq"], "year": 2024})).unwrap().matches(&m));
        assert!(!Filter::from_json(&json!({"missing": 1})).unwrap().matches(&m));
        assert!(Filter::from_json(&json!({"op": "NEQ", "key": "missing", "value": 1})).unwrap().matches(&m));
        assert!(Filter::from_json(&json!({"op": "DROP TABLE", "key": "x"})).is_err());
        assert!(Filter::from_json(&json!("kind = 'guide'")).is_err());
    }
}
