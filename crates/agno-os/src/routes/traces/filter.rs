//! What a trace search filters on: the filter schema, trace fields' values as the expression
//! ([`crate::routes::filter_expr`]) reads them, and times read as Agno reads them.

use agno_core::{FilterField, FilterValue, TraceField};
use serde_json::Value;

use crate::routes::filter_expr::Operand;

/// The filter schema `GET /traces/filter-schema` answers: each field, its type and operators.
pub(super) fn filter_schema() -> Value {
    use crate::routes::filter_expr::{ENUM_OPS, NAME_OPS, TEXT_OPS};
    const TIME_OPS: &[&str] = &["GT", "GTE", "LT", "LTE"];
    crate::routes::filter_expr::filter_schema(&[
        ("status", "Status", "enum", ENUM_OPS, Some(&["OK", "ERROR"])),
        ("user_id", "User ID", "string", TEXT_OPS, None),
        ("agent_id", "Agent ID", "string", TEXT_OPS, None),
        ("team_id", "Team ID", "string", TEXT_OPS, None),
        ("workflow_id", "Workflow ID", "string", TEXT_OPS, None),
        ("session_id", "Session ID", "string", TEXT_OPS, None),
        ("run_id", "Run ID", "string", TEXT_OPS, None),
        ("name", "Trace Name", "string", NAME_OPS, None),
        ("trace_id", "Trace ID", "string", TEXT_OPS, None),
        ("duration_ms", "Duration (ms)", "number", &["EQ", "NEQ", "GT", "GTE", "LT", "LTE"], None),
        ("start_time", "Start Time", "datetime", TIME_OPS, None),
        ("end_time", "End Time", "datetime", TIME_OPS, None),
        ("created_at", "Created At", "datetime", TIME_OPS, None),
    ])
}

/// An ISO-8601 time as Agno reads one (`Z` or an offset; none means UTC; a date alone is its
/// midnight), in UTC as traces store it; the error names `what`.
pub(crate) fn utc_time(text: &str, what: &str) -> Result<String, String> {
    utc_instant(text, what).map(agno_core::trace_time)
}

/// The instant an ISO-8601 time names, read as [`utc_time`] reads it; the error names `what`.
pub(crate) fn utc_instant(text: &str, what: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    let text = text.trim();
    chrono::DateTime::parse_from_rfc3339(&text.replace(' ', "T"))
        .map(|t| t.with_timezone(&chrono::Utc))
        .or_else(|_| {
            chrono::NaiveDateTime::parse_from_str(&text.replace(' ', "T"), "%Y-%m-%dT%H:%M:%S%.f").map(|t| t.and_utc())
        })
        .or_else(|_| {
            chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc())
        })
        .map_err(|_| {
            format!(
                "Invalid {what} format. Use ISO 8601 format (e.g., '2025-11-19T10:00:00Z' or \
                 '2025-11-19T10:00:00+05:30'): {text:?}"
            )
        })
}

/// A value compared with a trace field: a number for `duration_ms`, a UTC time for the times,
/// text for the rest.
impl Operand for TraceField {
    fn operand(self, value: &Value) -> Result<FilterValue, String> {
        let field = self;
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Null => return Err(format!("a value compared with {} must not be null", field.column())),
            other => other.to_string(),
        };
        match field {
            TraceField::DurationMs => match value.as_f64().or_else(|| text.trim().parse().ok()) {
                Some(n) => Ok(FilterValue::Number(n)),
                None => Err(format!("duration_ms is compared with a number, not {value}")),
            },
            TraceField::StartTime | TraceField::EndTime | TraceField::CreatedAt => {
                utc_time(&text, field.column()).map(FilterValue::Text)
            }
            _ => Ok(FilterValue::Text(text)),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use agno_core::{CompareOp, TraceFilter};
    use serde_json::json;

    fn parse(value: &Value) -> Result<TraceFilter, String> {
        crate::routes::filter_expr::parse(value)
    }

    #[test]
    fn reads_every_operator_and_refuses_what_no_store_can_run() {
        let f = parse(&json!({"op": "AND", "conditions": [
            {"op": "EQ", "key": "status", "value": "OK"},
            {"op": "NOT", "condition": {"op": "CONTAINS", "key": "user_id", "value": "adm"}},
            {"op": "IN", "key": "agent_id", "values": ["a", "b"]},
            {"op": "GTE", "key": "duration_ms", "value": "15"},
            {"op": "LT", "key": "start_time", "value": "2025-11-19T10:00:00+05:30"},
        ]}))
        .unwrap();
        let TraceFilter::And(parts) = f else { panic!("an AND") };
        assert_eq!(parts[3], TraceFilter::Compare(TraceField::DurationMs, CompareOp::Gte, FilterValue::Number(15.0)));
        assert_eq!(
            parts[4],
            TraceFilter::Compare(
                TraceField::StartTime,
                CompareOp::Lt,
                FilterValue::Text("2025-11-19T04:30:00.000000+00:00".into())
            )
        );
        for (bad, says) in [
            (json!({"op": "EQ", "key": "password", "value": "x"}), "Invalid filter field: \"password\""),
            (json!({"op": "LIKE", "key": "name", "value": "x"}), "Unknown filter operator: LIKE"),
            (json!({"op": "eq", "key": "name", "value": "x"}), "Unknown filter operator: eq"),
            (json!({"op": "EQ", "key": "name"}), "EQ filter requires 'key' and 'value'"),
            (json!({"op": "OR", "conditions": []}), "OR filter requires 'conditions'"),
            (json!({"op": "GT", "key": "created_at", "value": "yesterday"}), "Invalid created_at format"),
            (json!({"op": "GT", "key": "duration_ms", "value": "long"}), "duration_ms is compared with a number"),
            (json!({"key": "name"}), "must contain 'op' key"),
        ] {
            let err = parse(&bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
        let mut deep = json!({"op": "EQ", "key": "name", "value": "x"});
        for _ in 0..11 {
            deep = json!({"op": "NOT", "condition": deep});
        }
        assert!(parse(&deep).unwrap_err().contains("maximum nesting depth"));
    }

    #[test]
    fn times_read_as_agno_reads_them() {
        assert_eq!(utc_time("2025-11-19T10:00:00Z", "t").unwrap(), "2025-11-19T10:00:00.000000+00:00");
        assert_eq!(utc_time("2025-11-19 10:00:00", "t").unwrap(), "2025-11-19T10:00:00.000000+00:00");
        assert_eq!(utc_time("2025-11-19", "t").unwrap(), "2025-11-19T00:00:00.000000+00:00");
        assert!(utc_time("bad", "start_time").unwrap_err().starts_with("Invalid start_time format"));
    }
}
