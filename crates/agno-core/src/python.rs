//! Python semantics of JSON values that Agno's behaviour rests on.

use serde_json::Value;

/// Python's truthiness of a JSON value (`None`: absent): `null`, `false`, `0`, `""`, `[]` and
/// `{}` are false, everything else true, as Agno's `if value:` tests it.
pub fn truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}
