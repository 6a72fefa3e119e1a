//! How values of the routes' JSON read on a page: times, durations, content.

use serde_json::Value;

/// A time the routes give as epoch seconds (or an ISO 8601 string) as `2026-12-07 10:04:05 UTC`.
pub(crate) fn time(value: &Value) -> String {
    let parsed = match value {
        Value::Number(n) => n.as_i64().and_then(|s| chrono::DateTime::from_timestamp(s, 0)),
        Value::String(s) => chrono::DateTime::parse_from_rfc3339(s).ok().map(|t| t.to_utc()),
        _ => None,
    };
    match (parsed, value) {
        (Some(t), _) => t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        (None, Value::String(s)) => s.clone(),
        (None, Value::Null) => String::new(),
        (None, other) => other.to_string(),
    }
}

/// A time as milliseconds since the epoch (ISO 8601 or epoch seconds), for drawing.
pub(crate) fn millis(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64().map(|s| s * 1000),
        Value::String(s) => chrono::DateTime::parse_from_rfc3339(s).ok().map(|t| t.timestamp_millis()),
        _ => None,
    }
}

/// A JSON value as a line of text: a string as itself, nothing as nothing, else its JSON.
pub(crate) fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `text` cut to `max` characters (with an ellipsis), for lists.
pub(crate) fn short(value: &Value, max: usize) -> String {
    let t = text(value);
    if t.chars().count() <= max {
        return t;
    }
    let mut cut: String = t.chars().take(max).collect();
    cut.push('…');
    cut
}

/// A JSON value laid out for reading (`pre`); a string holding a JSON object or list (as spans
/// keep their inputs) is laid out as that JSON.
pub(crate) fn pretty(value: &Value) -> String {
    match value {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(inner @ (Value::Object(_) | Value::Array(_))) => {
                serde_json::to_string_pretty(&inner).unwrap_or_default()
            }
            _ => s.clone(),
        },
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn times_read_from_seconds_and_iso_strings() {
        assert_eq!(time(&json!(0)), "1970-01-01 00:00:00 UTC");
        assert_eq!(time(&json!("2026-12-07T10:00:01.5+00:00")), "2026-12-07 10:00:01 UTC");
        assert_eq!(time(&json!("yesterday")), "yesterday");
        assert_eq!(millis(&json!("1970-01-01T00:00:01.250Z")), Some(1250));
        assert_eq!(millis(&json!(2)), Some(2000));
    }

    #[test]
    fn long_text_is_cut_on_characters() {
        assert_eq!(short(&json!("héllo wörld"), 5), "héllo…");
        assert_eq!(short(&json!({"a": 1}), 50), "{\"a\":1}");
        assert_eq!(short(&Value::Null, 5), "");
    }

    #[test]
    fn json_held_in_a_string_is_laid_out() {
        assert_eq!(pretty(&json!("{\"a\":1}")), "{\n  \"a\": 1\n}");
        assert_eq!(pretty(&json!("plain \"text\"")), "plain \"text\"");
        assert_eq!(pretty(&json!("42")), "42");
    }
}
