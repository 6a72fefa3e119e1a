//! Values built from a JSON schema (the offline test model's tool arguments and structured
//! answers), and the limits that keep any such value small.
//!
//! A schema is a few hundred bytes, but the smallest value valid for it need not be: `minItems`
//! of a billion, or a `$ref` cycle fanning out at every level, describes values no machine holds.
//! Building one therefore counts every value it makes against [`SchemaLimits::max_values`] and
//! every level it descends against [`SchemaLimits::max_depth`], and gives up (an
//! [`SchemaTooLarge`] naming the limit) instead of going past them. The same walk is the check
//! a server makes when a schema arrives ([`check_schema`]), so a schema accepted there is one
//! whose example fits.

use serde_json::{Map, Value, json};

/// How large a value built from a schema may get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaLimits {
    /// Most values (objects, arrays, strings, numbers, ...) in the value, counted as built.
    pub max_values: usize,
    /// Deepest nesting of the value (and of the `$ref` / `anyOf` / `allOf` chain that leads to
    /// it).
    pub max_depth: usize,
}

impl SchemaLimits {
    /// 10,000 values, 24 levels (the JSON depth every backend stores): far more than any answer a model gives, far less than memory.
    pub const DEFAULT: SchemaLimits = SchemaLimits { max_values: 10_000, max_depth: 24 };
}

impl Default for SchemaLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A schema whose smallest example goes past a [`SchemaLimits`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaTooLarge {
    /// It needs more values than allowed.
    #[error("a value valid for this schema needs more than {limit} values")]
    Values {
        /// The limit.
        limit: usize,
    },
    /// It nests deeper than allowed.
    #[error("a value valid for this schema nests deeper than {limit} levels")]
    Depth {
        /// The limit.
        limit: usize,
    },
}

/// Below this depth optional properties and one array item are filled in; deeper, only what the
/// schema requires, so a recursive schema (a tree of nodes) ends.
const FULL_DEPTH: usize = 6;

/// A deterministic value valid for `schema` (objects get every property and arrays one item near
/// the top, only required ones deeper), within [`SchemaLimits::DEFAULT`]; beyond them, the part
/// built so far (which the schema may then refuse).
pub fn example_value(schema: &Value) -> Value {
    let mut walk = Walk { root: schema, left: SchemaLimits::DEFAULT.max_values, limits: SchemaLimits::DEFAULT };
    walk.example(schema, 0).unwrap_or(Value::Null)
}

/// [`example_value`] within `limits`.
///
/// # Errors
/// [`SchemaTooLarge`] naming the limit the example would pass; nothing larger is built.
pub fn example_within(schema: &Value, limits: SchemaLimits) -> Result<Value, SchemaTooLarge> {
    let mut walk = Walk { root: schema, left: limits.max_values, limits };
    walk.example(schema, 0)
}

/// Checks that an example of `schema` fits `limits` (builds it, bounded, and drops it).
///
/// # Errors
/// [`SchemaTooLarge`].
pub fn check_schema(schema: &Value, limits: SchemaLimits) -> Result<(), SchemaTooLarge> {
    example_within(schema, limits).map(drop)
}

struct Walk<'a> {
    root: &'a Value,
    left: usize,
    limits: SchemaLimits,
}

impl Walk<'_> {
    /// Counts one value (or one step through a reference or combinator) against the budget.
    fn spend(&mut self, depth: usize) -> Result<(), SchemaTooLarge> {
        if depth > self.limits.max_depth {
            return Err(SchemaTooLarge::Depth { limit: self.limits.max_depth });
        }
        self.left = self.left.checked_sub(1).ok_or(SchemaTooLarge::Values { limit: self.limits.max_values })?;
        Ok(())
    }

    fn example(&mut self, schema: &Value, depth: usize) -> Result<Value, SchemaTooLarge> {
        self.spend(depth)?;
        let Some(obj) = schema.as_object() else {
            return Ok(Value::Null);
        };
        if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
            return match resolve(reference, self.root) {
                Some(target) => self.example(target, depth + 1),
                None => Ok(Value::Null),
            };
        }
        if let Some(v) = obj.get("const").or_else(|| obj.get("default")) {
            return self.copy(v, depth);
        }
        if let Some(first) = obj.get("enum").and_then(Value::as_array).and_then(|a| a.first()) {
            return self.copy(first, depth);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(options) = obj.get(key).and_then(Value::as_array) {
                let pick = options
                    .iter()
                    .find(|o| o.get("type").and_then(Value::as_str) != Some("null"))
                    .or_else(|| options.first());
                return match pick {
                    Some(o) => self.example(o, depth + 1),
                    None => Ok(Value::Null),
                };
            }
        }
        if let Some(all) = obj.get("allOf").and_then(Value::as_array) {
            let mut merged = Map::new();
            for part in all {
                if let Value::Object(o) = self.example(part, depth + 1)? {
                    merged.extend(o);
                }
            }
            return Ok(Value::Object(merged));
        }
        let ty = match obj.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(types)) => {
                types.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null")
            }
            _ if obj.contains_key("properties") => "object",
            _ => "string",
        };
        let full = depth < FULL_DEPTH;
        Ok(match ty {
            "object" => {
                let required: Vec<&str> = obj
                    .get("required")
                    .and_then(Value::as_array)
                    .map_or_else(Vec::new, |r| r.iter().filter_map(Value::as_str).collect());
                let mut out = Map::new();
                if let Some(props) = obj.get("properties").and_then(Value::as_object) {
                    for (name, prop) in props.iter().filter(|(name, _)| full || required.contains(&name.as_str())) {
                        out.insert(name.clone(), self.example(prop, depth + 1)?);
                    }
                }
                Value::Object(out)
            }
            "array" => {
                let min = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0);
                let count = if full { min.max(1) } else { min };
                let mut items = Vec::new();
                for _ in 0..count {
                    // Each item is built (and counted) on its own: a copy costs as much memory.
                    let item = match obj.get("items") {
                        Some(schema) => self.example(schema, depth + 1)?,
                        None => {
                            self.spend(depth + 1)?;
                            json!("test")
                        }
                    };
                    items.push(item);
                }
                Value::Array(items)
            }
            "integer" => json!(obj.get("minimum").and_then(Value::as_i64).unwrap_or(1).max(1)),
            "number" => json!(obj.get("minimum").and_then(Value::as_f64).unwrap_or(1.0).max(1.0)),
            "boolean" => json!(true),
            "null" => Value::Null,
            _ => json!("test"),
        })
    }

    /// A copy of a literal from the schema (`const`, `default`, `enum`), counted value by value.
    fn copy(&mut self, value: &Value, depth: usize) -> Result<Value, SchemaTooLarge> {
        let mut stack = vec![(value, depth)];
        while let Some((v, d)) = stack.pop() {
            if d > depth {
                self.spend(d)?;
            }
            match v {
                Value::Array(items) => stack.extend(items.iter().map(|i| (i, d + 1))),
                Value::Object(map) => stack.extend(map.values().map(|i| (i, d + 1))),
                _ => {}
            }
        }
        Ok(value.clone())
    }
}

fn resolve<'a>(reference: &str, root: &'a Value) -> Option<&'a Value> {
    let path = reference.strip_prefix("#/")?;
    path.split('/').try_fold(root, |node, part| node.get(part))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
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

    #[test]
    fn a_billion_items_are_refused_not_built() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"},
            "minItems": 1_000_000_000u64}}, "required": ["a"]});
        assert_eq!(check_schema(&schema, SchemaLimits::DEFAULT), Err(SchemaTooLarge::Values { limit: 10_000 }));
        // Three levels of 1,000 (a 300-byte schema, a billion strings).
        let level = |inner: Value| json!({"type": "array", "minItems": 1000, "items": inner});
        let schema = level(level(level(json!({"type": "string"}))));
        assert_eq!(check_schema(&schema, SchemaLimits::DEFAULT), Err(SchemaTooLarge::Values { limit: 10_000 }));
        // What fits is built whole.
        let fits = json!({"type": "array", "minItems": 500, "items": {"type": "integer"}});
        assert_eq!(example_within(&fits, SchemaLimits::DEFAULT).unwrap().as_array().map(Vec::len), Some(500));
    }

    #[test]
    fn reference_cycles_fanning_out_stop_at_the_budget() {
        // Every node refers to itself four times: 4^depth nodes if followed blindly.
        let schema = json!({"$ref": "#/$defs/N", "$defs": {"N": {"type": "object",
            "properties": {"a": {"$ref": "#/$defs/N"}, "b": {"$ref": "#/$defs/N"},
                           "c": {"$ref": "#/$defs/N"}, "d": {"$ref": "#/$defs/N"}},
            "required": ["a", "b", "c", "d"]}}});
        assert!(check_schema(&schema, SchemaLimits::DEFAULT).is_err());
        // A recursive tree whose children are optional ends once only required parts are built.
        let tree = json!({"$ref": "#/$defs/Node", "$defs": {"Node": {"type": "object",
            "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            "required": ["name"]}}});
        let v = example_within(&tree, SchemaLimits::DEFAULT).unwrap();
        assert_eq!(v["name"], "test");
    }

    #[test]
    fn depth_and_large_literals_count() {
        let mut deep = json!({"type": "string"});
        for _ in 0..40 {
            deep = json!({"type": "object", "properties": {"x": deep}, "required": ["x"]});
        }
        assert_eq!(check_schema(&deep, SchemaLimits::DEFAULT), Err(SchemaTooLarge::Depth { limit: 24 }));
        let big_default = json!({"type": "array", "default": vec![1; 20_000]});
        assert!(check_schema(&big_default, SchemaLimits::DEFAULT).is_err());
    }
}
