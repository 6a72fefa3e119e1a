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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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

    /// Adds one provider response's usage to the `details` entry of `model_type` for this model
    /// (`provider` as Agno's `get_provider()` names it, e.g. `OpenAI Chat`), creating the entry on
    /// the model's first call: one entry per (provider, id), as Agno accumulates them.
    pub fn add_detail(&mut self, model_type: &str, model_id: &str, provider: &str, usage: &Usage) {
        let call = Metrics {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            total_tokens: usage.total_tokens.max(usage.input_tokens + usage.output_tokens),
            cache_read_tokens: usage.cache_read_tokens,
            reasoning_tokens: usage.reasoning_tokens,
            ..Metrics::default()
        };
        add_detail_entry(&mut self.details, model_type, model_id, provider, &call, 1);
    }

    /// Adds another record's token counts, cost and per-model `details` (entries merged by
    /// model type, provider and id), as Agno's `SessionMetrics.accumulate_from_run`. Timings are
    /// not summed (a session has none).
    pub fn accumulate(&mut self, other: &Metrics) {
        self.combine(other, 1);
    }

    /// What this record holds beyond `earlier` (token counts, cost, details), for counting a run
    /// that was saved before (paused, then continued) only once.
    pub fn since(&self, earlier: &Metrics) -> Metrics {
        let mut out = Metrics { details: self.details.clone(), cost: self.cost, ..self.token_counts() };
        out.combine(earlier, -1);
        out.details.retain(|_, v| v.as_array().is_some_and(|a| !a.is_empty()));
        out
    }

    fn token_counts(&self) -> Metrics {
        Metrics {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            total_tokens: self.total_tokens,
            cache_read_tokens: self.cache_read_tokens,
            cache_write_tokens: self.cache_write_tokens,
            reasoning_tokens: self.reasoning_tokens,
            ..Metrics::default()
        }
    }

    /// `self += sign * other` for counts, cost and details.
    fn combine(&mut self, other: &Metrics, sign: i64) {
        let add = |a: u64, b: u64| if sign >= 0 { a + b } else { a.saturating_sub(b) };
        self.input_tokens = add(self.input_tokens, other.input_tokens);
        self.output_tokens = add(self.output_tokens, other.output_tokens);
        self.total_tokens = add(self.total_tokens, other.total_tokens);
        self.cache_read_tokens = add(self.cache_read_tokens, other.cache_read_tokens);
        self.cache_write_tokens = add(self.cache_write_tokens, other.cache_write_tokens);
        self.reasoning_tokens = add(self.reasoning_tokens, other.reasoning_tokens);
        if let Some(c) = other.cost {
            let c = if sign >= 0 { c } else { -c };
            self.cost = Some(self.cost.unwrap_or(0.0) + c).filter(|v| v.abs() > f64::EPSILON);
        }
        for (model_type, entries) in &other.details {
            for entry in entries.as_array().map_or(&[][..], Vec::as_slice) {
                let Ok(counts) = serde_json::from_value::<Metrics>(entry.clone()) else { continue };
                let id = entry.get("id").and_then(Value::as_str).unwrap_or_default();
                let provider = entry.get("provider").and_then(Value::as_str).unwrap_or_default();
                add_detail_entry(&mut self.details, model_type, id, provider, &counts, sign);
            }
        }
    }
}

/// Adds (or, with a negative `sign`, removes) `counts` to the entry of `details[model_type]` for
/// (`provider`, `id`); an entry whose tokens all reach zero is dropped when removing.
fn add_detail_entry(
    details: &mut Map<String, Value>,
    model_type: &str,
    id: &str,
    provider: &str,
    counts: &Metrics,
    sign: i64,
) {
    let list = details.entry(model_type.to_owned()).or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(list) = list else { return };
    let found = list.iter_mut().find(|e| {
        e.get("id").and_then(Value::as_str) == Some(id) && e.get("provider").and_then(Value::as_str) == Some(provider)
    });
    let fields = [
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
    ];
    let value = |m: &Metrics, f: &str| match f {
        "input_tokens" => m.input_tokens,
        "output_tokens" => m.output_tokens,
        "total_tokens" => m.total_tokens,
        "cache_read_tokens" => m.cache_read_tokens,
        "cache_write_tokens" => m.cache_write_tokens,
        _ => m.reasoning_tokens,
    };
    match found {
        Some(entry) => {
            for f in fields {
                let old = entry.get(f).and_then(Value::as_u64).unwrap_or(0);
                let new = if sign >= 0 { old + value(counts, f) } else { old.saturating_sub(value(counts, f)) };
                if new > 0 || entry.get(f).is_some() || matches!(f, "input_tokens" | "output_tokens" | "total_tokens") {
                    entry[f] = Value::from(new);
                }
            }
            if sign < 0 && fields.iter().all(|f| entry.get(*f).and_then(Value::as_u64).unwrap_or(0) == 0) {
                list.retain(|e| {
                    !(e.get("id").and_then(Value::as_str) == Some(id)
                        && e.get("provider").and_then(Value::as_str) == Some(provider))
                });
            }
        }
        None if sign >= 0 => {
            let mut entry = Map::new();
            for f in fields {
                let v = value(counts, f);
                if v > 0 || matches!(f, "input_tokens" | "output_tokens" | "total_tokens") {
                    entry.insert(f.to_owned(), Value::from(v));
                }
            }
            entry.insert("id".to_owned(), Value::from(id));
            entry.insert("provider".to_owned(), Value::from(provider));
            list.push(Value::Object(entry));
        }
        None => {}
    }
}
