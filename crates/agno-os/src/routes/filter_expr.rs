//! Agno's filter expression (`{"op": "AND", "conditions": [...]}`) read into an
//! [`agno_core::FilterExpr`] over any searched record's fields (traces, sessions). Anything the
//! stores could not run (an unknown field or operator, a missing value, a value the field cannot
//! be compared with) is refused here with a message naming it, before anything runs.

use agno_core::{CompareOp, FilterExpr, FilterField, FilterValue};
use serde_json::Value;

/// How deep an expression may nest (Agno's `MAX_FILTER_DEPTH`).
const MAX_DEPTH: usize = 10;

/// How a field reads the value it is compared with (a number, a time, text).
pub(crate) trait Operand: FilterField {
    /// `value` as the field compares it; an error naming what is wrong.
    ///
    /// # Errors
    /// A message naming the field and the value.
    fn operand(self, value: &Value) -> Result<FilterValue, String>;
}

/// Operators of a text field.
pub(crate) const TEXT_OPS: &[&str] = &["EQ", "NEQ", "CONTAINS", "STARTSWITH", "IN"];
/// Operators of a name (no `IN`).
pub(crate) const NAME_OPS: &[&str] = &["EQ", "NEQ", "CONTAINS", "STARTSWITH"];
/// Operators of an enum.
pub(crate) const ENUM_OPS: &[&str] = &["EQ", "NEQ", "IN"];

/// One field of a filter schema: key, label, type, operators, and the values of an enum.
pub(crate) type SchemaField =
    (&'static str, &'static str, &'static str, &'static [&'static str], Option<&'static [&'static str]>);

/// A filter schema (`GET /{traces|sessions}/filter-schema`, Agno's `FilterSchemaResponse`):
/// each field with its type and operators, and the logical operators.
pub(crate) fn filter_schema(fields: &[SchemaField]) -> Value {
    let fields: Vec<Value> = fields
        .iter()
        .map(|(key, label, kind, ops, values)| {
            serde_json::json!({"key": key, "label": label, "type": kind, "operators": ops, "values": values})
        })
        .collect();
    serde_json::json!({"fields": fields, "logical_operators": ["AND", "OR"]})
}

/// The expression `value`; an error naming what is wrong.
pub(crate) fn parse<F: Operand>(value: &Value) -> Result<FilterExpr<F>, String> {
    parse_at(value, 0)
}

fn parse_at<F: Operand>(value: &Value, depth: usize) -> Result<FilterExpr<F>, String> {
    if depth > MAX_DEPTH {
        return Err(format!("Filter expression exceeds maximum nesting depth of {MAX_DEPTH}"));
    }
    let Some(op) = value.get("op").and_then(Value::as_str) else {
        return Err(format!("Invalid filter dictionary: must contain 'op' key. Got: {value}"));
    };
    let compare = match op {
        "EQ" => Some(CompareOp::Eq),
        "NEQ" => Some(CompareOp::Neq),
        "GT" => Some(CompareOp::Gt),
        "GTE" => Some(CompareOp::Gte),
        "LT" => Some(CompareOp::Lt),
        "LTE" => Some(CompareOp::Lte),
        "CONTAINS" => Some(CompareOp::Contains),
        "STARTSWITH" => Some(CompareOp::StartsWith),
        _ => None,
    };
    if let Some(cmp) = compare {
        let (Some(key), Some(v)) = (value.get("key"), value.get("value").filter(|v| !v.is_null())) else {
            return Err(format!("{op} filter requires 'key' and 'value' fields. Got: {value}"));
        };
        let field: F = field(key)?;
        return Ok(FilterExpr::Compare(field, cmp, field.operand(v)?));
    }
    match op {
        "IN" => {
            let (Some(key), Some(Value::Array(values))) = (value.get("key"), value.get("values")) else {
                return Err(format!("IN filter requires 'key' and 'values' fields. Got: {value}"));
            };
            let field: F = field(key)?;
            Ok(FilterExpr::In(field, values.iter().map(|v| field.operand(v)).collect::<Result<_, _>>()?))
        }
        "AND" | "OR" => {
            let Some(Value::Array(conditions)) =
                value.get("conditions").filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
            else {
                return Err(format!("{op} filter requires 'conditions' field. Got: {value}"));
            };
            let parts = conditions.iter().map(|c| parse_at(c, depth + 1)).collect::<Result<Vec<_>, _>>()?;
            Ok(if op == "AND" { FilterExpr::And(parts) } else { FilterExpr::Or(parts) })
        }
        "NOT" => {
            let Some(inner) = value.get("condition").filter(|c| c.is_object()) else {
                return Err(format!("NOT filter requires 'condition' field. Got: {value}"));
            };
            Ok(FilterExpr::Not(Box::new(parse_at(inner, depth + 1)?)))
        }
        other => Err(format!("Unknown filter operator: {other}")),
    }
}

fn field<F: FilterField>(key: &Value) -> Result<F, String> {
    let name = key.as_str().unwrap_or_default();
    F::from_column(name).ok_or_else(|| format!("Invalid filter field: {key}. Allowed: {:?}", F::allowed()))
}
