//! Token and timing metrics, shaped as Agno's `RunMetrics.to_dict()`: zero and empty values are
//! omitted from the JSON.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

/// Token usage and timings of a model call or of a whole run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Prompt tokens.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub input_tokens: u64,
    /// Completion tokens.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub output_tokens: u64,
    /// Input plus output tokens.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub total_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cache_write_tokens: u64,
    /// Tokens spent on hidden reasoning.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub reasoning_tokens: u64,
    /// Cost reported by the provider, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Seconds from the request to the first content token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_to_first_token: Option<f64>,
    /// Seconds the run or call took.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub duration: f64,
    /// Per model type (`"model"`, `"reasoning_model"`, ...) usage lists.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub details: Map<String, Value>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Token usage reported by one provider response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Total tokens as reported (input + output when the provider omits it).
    pub total_tokens: u64,
    /// Cached prompt tokens.
    pub cache_read_tokens: u64,
    /// Reasoning tokens.
    pub reasoning_tokens: u64,
}

impl Metrics {
    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        *self == Metrics::default()
    }

    /// Adds one provider response's usage.
    pub fn add_usage(&mut self, usage: &Usage) {
        self.input_tokens += usage.input_tokens;
        self.output_tokens += usage.output_tokens;
        self.total_tokens +=
            if usage.total_tokens == 0 { usage.input_tokens + usage.output_tokens } else { usage.total_tokens };
        self.cache_read_tokens += usage.cache_read_tokens;
        self.reasoning_tokens += usage.reasoning_tokens;
    }

    /// Records usage under `details[model_type]` with the model's id and provider, as Agno does.
    pub fn add_detail(&mut self, model_type: &str, model_id: &str, provider: &str, usage: &Usage) {
        let entry = self.details.entry(model_type.to_owned()).or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = entry {
            list.push(serde_json::json!({
                "id": model_id,
                "provider": provider,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "total_tokens": usage.total_tokens.max(usage.input_tokens + usage.output_tokens),
            }));
        }
    }
}
