//! The bounds a request's query and JSON body must keep, declared once on the Rust type
//! (`schemars` attributes: `range`, `length`, `regex`, enums, formats) and enforced from the same
//! JSON schema the OpenAPI document shows: a value the document refuses is refused (422 in
//! pydantic's words, naming the field), and a value it allows is never refused for its shape.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use schemars::JsonSchema;
use serde_json::{Map, Number, Value};

use crate::error::{ApiError, ApiResult};

/// What is kept once per request type, by type name.
type PerType<T> = OnceLock<Mutex<HashMap<&'static str, T>>>;

/// The compiled schema of `T` (compiled once per type).
fn validator<T: JsonSchema>() -> Option<Arc<jsonschema::Validator>> {
    static CACHE: PerType<Option<Arc<jsonschema::Validator>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = std::any::type_name::<T>();
    let mut cache = cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    cache
        .entry(key)
        .or_insert_with(|| {
            let schema = schemars::schema_for!(T).to_value();
            match jsonschema::options().should_validate_formats(true).build(&schema) {
                Ok(v) => Some(Arc::new(v)),
                Err(e) => {
                    tracing::error!(type_name = key, error = %e, "a request type's schema does not compile");
                    None
                }
            }
        })
        .clone()
}

/// Checks `value` (a query as JSON, or a JSON body) against `T`'s schema; `place` is `query` or
/// `body`.
///
/// # Errors
/// 422 for the first bound broken, naming the field.
pub(crate) fn check<T: JsonSchema>(value: &Value, place: &'static str) -> ApiResult<()> {
    let Some(validator) = validator::<T>() else { return Ok(()) };
    let Some(error) = validator.iter_errors(value).next() else { return Ok(()) };
    let path = error.instance_path().to_string();
    let field = path.trim_start_matches('/').split('/').next().unwrap_or_default().to_owned();
    let (mut kind, mut msg, mut ctx) = describe(&error);
    let input = value.pointer(&path).cloned().unwrap_or(Value::Null);
    // A field may word its own refusal of a value of the right type that does not fit its form
    // (`x-message`, with `{value}` for what was sent).
    let misshapen = matches!(
        error.kind(),
        jsonschema::error::ValidationErrorKind::Pattern { .. } | jsonschema::error::ValidationErrorKind::Enum { .. }
    );
    if let Some(own) = own_message::<T>(&field).filter(|_| misshapen) {
        let shown = match &input {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        msg = own.replace("{value}", &shown);
        // As a pydantic validator's refusal.
        kind = "value_error";
        ctx = Some(serde_json::json!({"error": {}}));
        // Answered as a plain `detail`, as Agno answers that field's own check (`x-plain`).
        if properties::<T>().get(&field).and_then(|p| p.get("x-plain")).is_some_and(|p| p == &Value::Bool(true)) {
            return Err(ApiError::unprocessable_plain(msg));
        }
    }
    let mut e = ApiError::unprocessable(msg).with_type(kind).at(place, &field);
    if let Some(ctx) = ctx {
        e = e.with_ctx(ctx);
    }
    Err(e.with_input(input))
}

/// The `x-message` a top-level field of `T` declares for its refusals.
fn own_message<T: JsonSchema>(field: &str) -> Option<String> {
    properties::<T>().get(field)?.get("x-message")?.as_str().map(str::to_owned)
}

/// Pydantic's type, message and context for a broken bound.
fn describe(error: &jsonschema::ValidationError<'_>) -> (&'static str, String, Option<Value>) {
    use jsonschema::error::ValidationErrorKind as K;
    match error.kind() {
        K::Minimum { limit } => (
            "greater_than_equal",
            format!("Input should be greater than or equal to {limit}"),
            Some(serde_json::json!({"ge": limit})),
        ),
        K::Maximum { limit } => (
            "less_than_equal",
            format!("Input should be less than or equal to {limit}"),
            Some(serde_json::json!({"le": limit})),
        ),
        K::MinLength { limit } => (
            "string_too_short",
            format!("String should have at least {limit} character{}", if *limit == 1 { "" } else { "s" }),
            Some(serde_json::json!({"min_length": limit})),
        ),
        K::MaxLength { limit } => (
            "string_too_long",
            format!("String should have at most {limit} characters"),
            Some(serde_json::json!({"max_length": limit})),
        ),
        K::MinItems { limit } => (
            "too_short",
            format!("List should have at least {limit} item{}", if *limit == 1 { "" } else { "s" }),
            Some(serde_json::json!({"min_length": limit})),
        ),
        K::Enum { options } => {
            let names: Vec<String> = options
                .as_array()
                .into_iter()
                .flatten()
                .map(|o| o.as_str().map_or_else(|| o.to_string(), |s| format!("'{s}'")))
                .collect();
            let listed = match names.split_last() {
                Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
                _ => names.join(""),
            };
            ("enum", format!("Input should be {listed}"), Some(serde_json::json!({"expected": listed})))
        }
        K::Type { kind } => {
            use jsonschema::error::TypeKind;
            use jsonschema::types::JsonType;
            let wanted = match kind {
                TypeKind::Single(t) => Some(*t),
                TypeKind::Multiple(ts) => ts.into_iter().find(|t| *t != JsonType::Null),
            };
            let (kind, what) = match wanted {
                Some(JsonType::Object) => ("dict_type", "a valid dictionary"),
                Some(JsonType::Array) => ("list_type", "a valid list"),
                Some(JsonType::Integer) => ("int_type", "a valid integer"),
                Some(JsonType::Number) => ("float_type", "a valid number"),
                Some(JsonType::Boolean) => ("bool_type", "a valid boolean"),
                _ => ("string_type", "a valid string"),
            };
            (kind, format!("Input should be {what}"), None)
        }
        K::Pattern { pattern } => (
            "string_pattern_mismatch",
            format!("String should match pattern '{pattern}'"),
            Some(serde_json::json!({"pattern": pattern})),
        ),
        K::Format { format } => ("value_error", format!("Input should be a valid {format}"), None),
        K::Required { property } => ("missing", format!("Field required: {property}"), None),
        _ => ("value_error", error.to_string(), None),
    }
}

/// Turns integral floats (`1348.0`) into integers in the top-level fields `T` declares as
/// integers, as pydantic takes them.
pub(crate) fn integers<T: JsonSchema>(value: &mut Value) {
    let Some(object) = value.as_object_mut() else { return };
    let properties = properties::<T>();
    for (name, field) in object.iter_mut() {
        let integer = properties.get(name).is_some_and(|s| declares(s, "integer"));
        if let (true, Some(f)) = (integer, field.as_f64())
            && field.is_f64()
            && f.fract() == 0.0
            && f.abs() < 9.0e15
        {
            #[allow(clippy::cast_possible_truncation)]
            let whole = f as i64;
            *field = Value::from(whole);
        }
    }
}

/// The top-level properties of `T`'s schema (computed once per type).
fn properties<T: JsonSchema>() -> Arc<Map<String, Value>> {
    static TYPES: PerType<Arc<Map<String, Value>>> = OnceLock::new();
    let types = TYPES.get_or_init(Default::default);
    types
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entry(std::any::type_name::<T>())
        .or_insert_with(|| {
            let schema = schemars::schema_for!(T).to_value();
            Arc::new(schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default())
        })
        .clone()
}

/// A query's parameters as JSON typed by `T`'s schema (integers, numbers and booleans parsed,
/// lists for array parameters), for [`check`]. Values that do not parse stay text (the
/// deserializer has refused them already).
pub(crate) fn query_value<T: JsonSchema>(values: &[(String, Vec<String>)]) -> Value {
    let properties = properties::<T>();
    let mut out = Map::new();
    for (name, texts) in values {
        let schema = properties.get(name).cloned().unwrap_or(Value::Null);
        let value = if declares(&schema, "array") {
            let items = schema.get("items").cloned().unwrap_or(Value::Null);
            Value::Array(texts.iter().map(|t| typed(&items, t)).collect())
        } else {
            texts.last().map_or(Value::Null, |t| typed(&schema, t))
        };
        out.insert(name.clone(), value);
    }
    Value::Object(out)
}

/// True when `schema` (or one of its `anyOf` options) allows `ty`.
fn declares(schema: &Value, ty: &str) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == ty,
        Some(Value::Array(ts)) => ts.iter().any(|t| t == ty),
        _ => schema.get("anyOf").and_then(Value::as_array).is_some_and(|o| o.iter().any(|s| declares(s, ty))),
    }
}

fn typed(schema: &Value, text: &str) -> Value {
    let t = text.trim();
    if declares(schema, "integer")
        && let Some(n) = t.parse::<i64>().ok().map(Number::from).or_else(|| t.parse::<u64>().ok().map(Number::from))
    {
        return Value::Number(n);
    }
    if declares(schema, "number")
        && let Some(n) = t.parse::<f64>().ok().and_then(Number::from_f64)
    {
        return Value::Number(n);
    }
    if declares(schema, "boolean") {
        match t.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" | "t" | "y" => return Value::Bool(true),
            "false" | "0" | "no" | "off" | "f" | "n" => return Value::Bool(false),
            _ => {}
        }
    }
    Value::String(text.to_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Q {
        #[schemars(range(min = 1, max = 1000))]
        limit: Option<u64>,
        #[schemars(length(min = 1))]
        name: Option<String>,
        tags: Option<Vec<String>>,
    }

    #[test]
    fn bounds_declared_on_the_type_are_enforced() {
        let ok = query_value::<Q>(&[("limit".into(), vec!["5".into()]), ("tags".into(), vec!["a".into(), "b".into()])]);
        assert_eq!(ok, serde_json::json!({"limit": 5, "tags": ["a", "b"]}));
        assert!(check::<Q>(&ok, "query").is_ok());
        let e = check::<Q>(&serde_json::json!({"limit": 1001}), "query").unwrap_err();
        assert_eq!(e.location, Some(("query", "limit".to_owned())));
        assert_eq!(e.error_type, Some("less_than_equal"));
        let e = check::<Q>(&serde_json::json!({"name": ""}), "body").unwrap_err();
        assert_eq!(e.error_type, Some("string_too_short"));
    }
}
