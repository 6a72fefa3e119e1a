//! JSON schemas for tool arguments, generated from Rust types with `schemars`.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use schemars::JsonSchema;
use serde_json::{Map, Value, json};

/// The JSON schema of `T` as a tool `parameters` object: always `"type": "object"` with
/// `properties` and `required`, without the `$schema` and `title` keys providers reject.
///
/// Schemas are generated once per type and cached: building many agents over the same tools
/// does not regenerate them.
pub fn parameters_schema<T: JsonSchema + 'static>() -> Arc<Value> {
    static CACHE: OnceLock<Mutex<HashMap<TypeId, Arc<Value>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(&TypeId::of::<T>()).cloned()) {
        return hit;
    }
    let schema = schemars::schema_for!(T);
    let mut value = schema.to_value();
    normalize(&mut value);
    let value = Arc::new(value);
    if let Ok(mut c) = cache.lock() {
        c.insert(TypeId::of::<T>(), Arc::clone(&value));
    }
    value
}

fn normalize(value: &mut Value) {
    let Some(obj) = value.as_object_mut() else {
        *value = empty_object_schema();
        return;
    };
    obj.remove("$schema");
    obj.remove("title");
    // A unit or null argument type (no arguments) becomes an empty object schema.
    let is_object = obj.get("type").and_then(Value::as_str) == Some("object");
    if !is_object {
        *value = empty_object_schema();
        return;
    }
    obj.entry("properties").or_insert_with(|| Value::Object(Map::new()));
    obj.entry("required").or_insert_with(|| Value::Array(Vec::new()));
}

/// `{"type":"object","properties":{},"required":[]}`, Agno's default `parameters`.
pub fn empty_object_schema() -> Value {
    json!({"type": "object", "properties": {}, "required": []})
}

/// Argument type for tools that take no arguments.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, JsonSchema)]
pub struct NoArgs {}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        /// First number.
        a: f64,
        b: Option<i64>,
    }

    #[test]
    fn object_schema_has_properties_required_and_no_title() {
        let s = parameters_schema::<Args>();
        assert_eq!(s["type"], "object");
        assert_eq!(s["properties"]["a"]["description"], "First number.");
        assert_eq!(s["required"], json!(["a"]));
        assert!(s.get("title").is_none());
        assert!(s.get("$schema").is_none());
    }

    #[test]
    fn no_args_is_an_empty_object_schema() {
        let s = parameters_schema::<NoArgs>();
        assert_eq!(s["type"], "object");
        assert_eq!(s["properties"], json!({}));
    }
}
