//! Structured output: parse the model's text as JSON and validate it against the output schema.

use agno_core::{Message, Model, ModelError, ModelRequest, ResponseFormat};
use serde_json::Value;

use crate::config::OutputSchema;

/// Asks `model` one question (a system and a user message, no tools) for JSON matching `schema`,
/// as Agno's managers do: native structured output when the model has it, JSON mode plus the
/// JSON prompt otherwise. `Ok(None)` when the answer is not such JSON (Agno logs and moves on).
///
/// # Errors
/// The model's error.
pub(crate) async fn ask_structured(
    model: &dyn Model,
    system: String,
    user: String,
    schema: &OutputSchema,
) -> Result<Option<Value>, ModelError> {
    let capabilities = model.capabilities();
    let (system, response_format) = if capabilities.native_structured_output {
        let format =
            ResponseFormat::JsonSchema { name: schema.name.clone(), schema: schema.schema.clone(), strict: false };
        (system, Some(format))
    } else {
        let prompt = format!("{system}\n{}", crate::messages::json_output_prompt(schema));
        (prompt, capabilities.json_mode.then_some(ResponseFormat::JsonObject))
    };
    let request = ModelRequest {
        messages: vec![Message::system(system), Message::user(user)],
        response_format,
        ..ModelRequest::default()
    };
    let response = model.invoke(request).await?;
    match parse_structured(&response.content, schema) {
        Ok(value) => Ok(Some(value)),
        Err(why) => {
            tracing::warn!(schema = %schema.name, %why, "the model's answer does not match the schema");
            Ok(None)
        }
    }
}

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
