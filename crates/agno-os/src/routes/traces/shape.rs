//! Traces as Python AgentOS answers them: `TraceSummary` (the list), `TraceDetail` (a trace with
//! its span tree of `TraceNode`s), a lone `TraceNode`, and `TraceSessionStats`; unset fields left
//! out, as its trace routes answer (`response_model_exclude_none`).

use agno_core::{SpanNode, SpanRecord, TraceRecord, TraceSessionStats, span_tree};
use serde_json::{Map, Value, json};

/// A duration as Agno shows one: `999ms`, `1.23s`.
pub(super) fn duration(ms: i64) -> String {
    if ms < 1000 { format!("{ms}ms") } else { format!("{:.2}s", ms as f64 / 1000.0) }
}

/// A stored time as Agno answers one: UTC with `Z`, microseconds only when there are some.
pub(super) fn time(stored: &str) -> Value {
    match chrono::DateTime::parse_from_rfc3339(stored) {
        Ok(t) => {
            let t = t.with_timezone(&chrono::Utc);
            let format = if t.timestamp_subsec_micros() == 0 { "%Y-%m-%dT%H:%M:%SZ" } else { "%Y-%m-%dT%H:%M:%S%.6fZ" };
            Value::String(t.format(format).to_string())
        }
        Err(_) => Value::String(stored.to_owned()),
    }
}

/// `object` without its null fields.
fn compact(object: Value) -> Value {
    match object {
        Value::Object(m) => Value::Object(m.into_iter().filter(|(_, v)| !v.is_null()).collect()),
        other => other,
    }
}

/// The fields a trace's summary and detail share, up to `created_at`.
fn trace_fields(t: &TraceRecord) -> Map<String, Value> {
    let json = json!({
        "trace_id": t.trace_id,
        "name": t.name,
        "status": t.status,
        "duration": duration(t.duration_ms),
        "start_time": time(&t.start_time),
        "end_time": time(&t.end_time),
        "total_spans": t.total_spans,
        "error_count": t.error_count,
    });
    match json {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn ids(m: &mut Map<String, Value>, t: &TraceRecord) {
    for (key, value) in [
        ("run_id", &t.run_id),
        ("session_id", &t.session_id),
        ("user_id", &t.user_id),
        ("agent_id", &t.agent_id),
        ("team_id", &t.team_id),
        ("workflow_id", &t.workflow_id),
    ] {
        m.insert(key.to_owned(), value.clone().map_or(Value::Null, Value::String));
    }
    m.insert("created_at".to_owned(), time(&t.created_at));
}

/// The root span of `spans`: the first without a parent.
fn root(spans: &[SpanRecord]) -> Option<&SpanRecord> {
    spans.iter().find(|s| s.parent_span_id.as_deref().is_none_or(str::is_empty))
}

/// `TraceSummary`: a trace of the list, with its root span's input.
pub(super) fn summary(t: &TraceRecord, spans: &[SpanRecord]) -> Value {
    let mut m = trace_fields(t);
    m.insert(
        "input".to_owned(),
        root(spans).and_then(|r| r.attributes.get("input.value")).cloned().unwrap_or(Value::Null),
    );
    ids(&mut m, t);
    compact(Value::Object(m))
}

/// `TraceSessionStats`.
pub(super) fn session_stats(s: &TraceSessionStats) -> Value {
    compact(json!({
        "session_id": s.session_id,
        "user_id": s.user_id,
        "agent_id": s.agent_id,
        "team_id": s.team_id,
        "workflow_id": s.workflow_id,
        "total_traces": s.total_traces,
        "first_trace_at": time(&s.first_trace_at),
        "last_trace_at": time(&s.last_trace_at),
    }))
}

/// An attribute of `span` when it is truthy (as Agno's `if value := attributes.get(key)`).
fn attr<'a>(span: &'a SpanRecord, key: &str) -> Option<&'a Value> {
    span.attributes.get(key).filter(|v| agno_core::truthy(Some(v)))
}

fn kind(span: &SpanRecord) -> &str {
    span.attribute("openinference.span.kind").unwrap_or("UNKNOWN")
}

/// The node type Agno shows: CHAIN is a WORKFLOW, an AGENT with a team id a TEAM.
fn node_type(span: &SpanRecord) -> String {
    match kind(span) {
        "CHAIN" => "WORKFLOW".to_owned(),
        "AGENT" if attr(span, "agno.team.id").is_some() || attr(span, "team.id").is_some() => "TEAM".to_owned(),
        other => other.to_owned(),
    }
}

/// The error of a failed span: its status message, else its `exception.message`.
fn error_of(span: &SpanRecord) -> Value {
    span.status_message
        .clone()
        .filter(|m| !m.is_empty())
        .map(Value::String)
        .or_else(|| attr(span, "exception.message").cloned())
        .unwrap_or(Value::Null)
}

/// The workflow keys of a CHAIN span's metadata.
fn workflow_metadata(span: &SpanRecord, m: &mut Map<String, Value>) {
    for (key, from) in [
        ("description", "agno.workflow.description"),
        ("steps_count", "agno.workflow.steps_count"),
        ("steps", "agno.workflow.steps"),
        ("step_types", "agno.workflow.step_types"),
    ] {
        if let Some(v) = attr(span, from) {
            m.insert(key.to_owned(), v.clone());
        }
    }
}

/// `TraceNode.from_span`: a span on its own, with the metadata of its kind.
pub(super) fn node(span: &SpanRecord, children: Option<Vec<Value>>, step_type: Option<&Value>) -> Value {
    let failed = span.failed();
    let mut metadata = Map::new();
    let mut put = |key: &str, from: &str| {
        if let Some(v) = attr(span, from) {
            metadata.insert(key.to_owned(), v.clone());
        }
    };
    match kind(span) {
        "AGENT" => put("run_id", "agno.run.id"),
        "LLM" => {
            put("model", "llm.model_name");
            put("input_tokens", "llm.token_count.prompt");
            put("output_tokens", "llm.token_count.completion");
        }
        "TOOL" => {
            put("tool_name", "tool.name");
            put("parameters", "tool.parameters");
        }
        _ => {}
    }
    put("session_id", "session.id");
    put("user_id", "user.id");
    if kind(span) == "CHAIN" {
        workflow_metadata(span, &mut metadata);
    }
    compact(json!({
        "id": span.span_id,
        "name": span.name,
        "type": node_type(span),
        "duration": duration(span.duration_ms),
        "start_time": time(&span.start_time),
        "end_time": time(&span.end_time),
        "status": span.status_code,
        "input": span.attributes.get("input.value"),
        "output": if failed { None } else { span.attributes.get("output.value") },
        "error": if failed { error_of(span) } else { Value::Null },
        "spans": children.map(Value::Array),
        "step_type": step_type,
        "metadata": (!metadata.is_empty()).then_some(Value::Object(metadata)),
    }))
}

/// `TraceDetail`: the trace, its root's input, output or error, and its span tree.
pub(super) fn detail(t: &TraceRecord, spans: &[SpanRecord]) -> Value {
    let root_span = root(spans);
    let (mut input, mut output, mut error) = (Value::Null, Value::Null, Value::Null);
    if let Some(r) = root_span {
        input = r.attributes.get("input.value").cloned().unwrap_or(Value::Null);
        if t.status == "ERROR" || r.failed() {
            error = error_of(r);
        } else {
            output = r.attributes.get("output.value").cloned().unwrap_or(Value::Null);
        }
        let empty = match &output {
            Value::Null => true,
            Value::String(s) => s.is_empty() || s.trim() == "None",
            _ => false,
        };
        if kind(r) == "CHAIN" && empty && t.status != "ERROR" {
            // A workflow's output is its last step's.
            let last = spans
                .iter()
                .filter(|s| s.parent_span_id.as_deref() == Some(r.span_id.as_str()))
                .max_by(|a, b| a.end_time.cmp(&b.end_time));
            if let Some(last) = last {
                output = last.attributes.get("output.value").cloned().unwrap_or(Value::Null);
            }
        }
    }
    let mut m = trace_fields(t);
    m.insert("input".to_owned(), input);
    m.insert("output".to_owned(), output);
    m.insert("error".to_owned(), error);
    ids(&mut m, t);
    m.insert("tree".to_owned(), Value::Array(tree(t, spans)));
    compact(Value::Object(m))
}

/// The span tree ([`span_tree`]): the root shown with the trace's times and the token totals of
/// its model calls, its direct children (a workflow's steps) with their step types.
fn tree(t: &TraceRecord, spans: &[SpanRecord]) -> Vec<Value> {
    fn below(n: &SpanNode<'_>) -> Option<Vec<Value>> {
        (!n.children.is_empty()).then(|| n.children.iter().map(|c| node(c.span, below(c), None)).collect())
    }
    let tokens = |key: &str| -> i64 {
        spans.iter().filter(|s| kind(s) == "LLM").filter_map(|s| s.attributes.get(key).and_then(Value::as_i64)).sum()
    };
    let (input_tokens, output_tokens) = (tokens("llm.token_count.prompt"), tokens("llm.token_count.completion"));
    let roots = span_tree(spans);
    let step_types: Vec<Value> = roots
        .iter()
        .find(|r| kind(r.span) == "CHAIN")
        .and_then(|r| attr(r.span, "agno.workflow.step_types"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    roots
        .iter()
        .map(|r| {
            let steps: Vec<Value> =
                r.children.iter().enumerate().map(|(i, c)| node(c.span, below(c), step_types.get(i))).collect();
            let mut metadata = Map::new();
            if input_tokens > 0 {
                metadata.insert("total_input_tokens".to_owned(), input_tokens.into());
            }
            if output_tokens > 0 {
                metadata.insert("total_output_tokens".to_owned(), output_tokens.into());
            }
            if kind(r.span) == "CHAIN" {
                workflow_metadata(r.span, &mut metadata);
            }
            compact(json!({
                "id": r.span.span_id,
                "name": r.span.name,
                "type": node_type(r.span),
                "duration": duration(t.duration_ms),
                "start_time": time(&t.start_time),
                "end_time": time(&t.end_time),
                "status": r.span.status_code,
                "spans": (!steps.is_empty()).then_some(steps),
                "metadata": (!metadata.is_empty()).then_some(Value::Object(metadata)),
            }))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_times_read_as_agno_shows_them() {
        assert_eq!(duration(0), "0ms");
        assert_eq!(duration(999), "999ms");
        assert_eq!(duration(1000), "1.00s");
        assert_eq!(duration(1234), "1.23s");
        assert_eq!(time("2025-11-19T10:30:00.123456+00:00"), json!("2025-11-19T10:30:00.123456Z"));
        assert_eq!(time("2025-11-19T10:30:00+00:00"), json!("2025-11-19T10:30:00Z"));
        assert_eq!(time("2025-11-19T12:30:00.000000+02:00"), json!("2025-11-19T10:30:00Z"));
    }
}
