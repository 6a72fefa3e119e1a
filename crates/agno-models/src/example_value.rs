//! Generates a JSON value that satisfies a JSON schema, for `TestModel` tool arguments and
//! structured output.

use serde_json::{Map, Value, json};

/// A deterministic value valid for `schema` (objects get every property, arrays one item).
pub fn example_value(schema: &Value) -> Value {
    example(schema, schema, 0)
}

fn example(schema: &Value, root: &Value, depth: usize) -> Value {
    if depth > 12 {
        return Value::Null;
    }
    let Some(obj) = schema.as_object() else {
        return Value::Null;
    };
    if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
        return resolve(reference, root).map_or(Value::Null, |s| example(s, root, depth + 1));
    }
    if let Some(v) = obj.get("const") {
        return v.clone();
    }
    if let Some(v) = obj.get("default") {
        return v.clone();
    }
    if let Some(first) = obj.get("enum").and_then(Value::as_array).and_then(|a| a.first()) {
        return first.clone();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = obj.get(key).and_then(Value::as_array) {
            let pick = options
                .iter()
                .find(|o| o.get("type").and_then(Value::as_str) != Some("null"))
                .or_else(|| options.first());
            return pick.map_or(Value::Null, |o| example(o, root, depth + 1));
        }
    }
    if let Some(all) = obj.get("allOf").and_then(Value::as_array) {
        let mut merged = Map::new();
        for part in all {
            if let Value::Object(o) = example(part, root, depth + 1) {
                merged.extend(o);
            }
        }
        return Value::Object(merged);
    }
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null"),
        _ if obj.contains_key("properties") => "object",
        _ => "string",
    };
    match ty {
        "object" => {
            let mut out = Map::new();
            if let Some(props) = obj.get("properties").and_then(Value::as_object) {
                for (name, prop) in props {
                    out.insert(name.clone(), example(prop, root, depth + 1));
                }
            }
            Value::Object(out)
        }
        "array" => {
            let item = obj.get("items").map_or(json!("test"), |i| example(i, root, depth + 1));
            let min = obj.get("minItems").and_then(Value::as_u64).unwrap_or(1).max(1);
            Value::Array(std::iter::repeat_n(item, usize::try_from(min).unwrap_or(1)).collect())
        }
        "integer" => json!(obj.get("minimum").and_then(Value::as_i64).unwrap_or(1).max(1)),
        "number" => json!(obj.get("minimum").and_then(Value::as_f64).unwrap_or(1.0).max(1.0)),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => json!("test"),
    }
}

fn resolve<'a>(reference: &str, root: &'a Value) -> Option<&'a Value> {
    let path = reference.strip_prefix("#/")?;
    path.split('/').try_fold(root, |node, part| node.get(part))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_refs_enums_and_optionals() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "age": {"type": ["integer", "null"]},
                "kind": {"enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "inner": {"$ref": "#/$defs/Inner"}
            },
            "$defs": {"Inner": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}
        });
        let v = example_value(&schema);
        assert_eq!(v, json!({"name": "test", "age": 1, "kind": "a", "tags": ["test"], "inner": {"ok": true}}));
    }
}
