//! Structured output: parse the model's text as JSON and validate it against the output schema.

use serde_json::Value;

use crate::config::OutputSchema;

/// Parses `text` (tolerating Markdown code fences and prose around one JSON object) and validates
/// it against the schema.
pub(crate) fn parse_structured(text: &str, schema: &OutputSchema) -> Result<Value, String> {
    let value = extract_json(text)
        .ok_or_else(|| format!("the answer is not JSON: {}", text.chars().take(120).collect::<String>()))?;
    let validator = jsonschema::validator_for(&schema.schema)
        .map_err(|e| format!("the output schema {} is not a valid JSON schema: {e}", schema.name))?;
    let errors: Vec<String> =
        validator.iter_errors(&value).take(5).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    if errors.is_empty() { Ok(value) } else { Err(errors.join("; ")) }
}

fn extract_json(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if let Ok(v) = serde_json::from_str::<Value>(trimmed) {
        return Some(v);
    }
    let unfenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|s| s.strip_suffix("```"))
        .map(str::trim);
    if let Some(inner) = unfenced
        && let Ok(v) = serde_json::from_str::<Value>(inner)
    {
        return Some(v);
    }
    let start = trimmed.find('{')?;
    let end = trimmed.rfind('}')?;
    serde_json::from_str(trimmed.get(start..=end)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> OutputSchema {
        OutputSchema::new("City", json!({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}))
    }

    #[test]
    fn fenced_json_is_accepted() {
        assert_eq!(parse_structured("```json\n{\"name\":\"Paris\"}\n```", &schema()), Ok(json!({"name":"Paris"})));
    }

    #[test]
    fn schema_violation_is_reported() {
        let err = parse_structured("{\"name\": 3}", &schema()).err().unwrap_or_default();
        assert!(err.contains("name"), "{err}");
    }

    #[test]
    fn prose_is_not_json() {
        assert!(parse_structured("Paris is nice", &schema()).is_err());
    }
}
